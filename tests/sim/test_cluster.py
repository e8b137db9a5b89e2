"""The cluster (issue 18, item 3): the cluster file refused field by field, the address
plan, routes across pods equal to the published hash model at every hop (leaf, spine's
core group, core), the closed-form step equal to the event loop, TCCL's colouring of the
leaf and spine hops, GOR's core overrides under the 75 % rule, the hierarchical AllReduce
and its command line."""
from __future__ import annotations

import numpy as np
import pytest

from p4src.hashmodel import predict_member
from sim.cli import main
from sim.cluster.allreduce import cluster_allreduce
from sim.cluster.fabric import SPINE_CORE_GROUP, SimCluster, leaf_uplink_member
from sim.cluster.ports import gor_core, tccl_cluster_ports
from sim.cluster.spec import cluster_from_dict, load_cluster
from sim.engine import FlowSet, equal_flows_makespan, simulate
from sim.policies import GorOptions
from sim.ports import random_ports
from sim.routing import ROCE_DPORT
from sim.topology import LEAF_UPLINK_GROUP, SimInputError

POD = {"blocks": 2, "servers_per_block": 4, "rails": 2, "spines": 4, "leaf_ports": 32, "spine_ports": 32}
SMALL = {"pod": POD, "pods": 4, "cores_per_plane": 2, "spine_core_uplinks": 8}


@pytest.fixture(scope="module")
def sc() -> SimCluster:
    return SimCluster.build(cluster_from_dict(SMALL, "small"))


def _ring(sc: SimCluster) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    n = sc.pod.nic_ip.shape[0]
    P = sc.spec.pods
    sp = np.repeat(np.arange(P), n)
    nic = np.tile(np.arange(n), P)
    return sp, nic, (sp + 1) % P, nic


@pytest.mark.parametrize("data, message", [
    ({**SMALL, "podz": 2}, "small: podz: unknown field (known: name, pod,"),
    ({**SMALL, "pods": 0}, "small: pods: must be an integer of at least 1, got 0"),
    ({**SMALL, "cores_per_plane": 3}, "small: cores_per_plane: 8 core uplinks per spine do not split evenly"),
    ({**SMALL, "spine_ports": 10}, "small: spine_ports: impossible topology: a spine needs 12 ports"),
    ({**SMALL, "core_ports": 8}, "small: core_ports: impossible topology: a core switch needs 16 ports"),
    ({**SMALL, "pods": 200}, "small: pods: 200 pods x 2 rails do not fit the address plan"),
    ({**SMALL, "core_hash": "xor"}, "small: core_hash: must be one of crc16, crc32, got 'xor'"),
    ({**SMALL, "core_oversubscription": 2}, "small: core_oversubscription: give spine_core_uplinks or"),
    ({"pod": {**POD, "spines": 0}}, "small: pod: spines: must be at least 1, got 0"),
    ({"pod": "topo/specs/nope.yaml"}, "small: pod: /"),
    ({"pod": "topo/specs/nope.yaml"}, "topo/specs/nope.yaml: (file): cannot read"),
])
def test_bad_cluster_is_refused_naming_the_field(data: dict, message: str) -> None:
    with pytest.raises(SimInputError) as err:
        cluster_from_dict(data, "small")
    assert message in str(err.value)


def test_yaml_syntax_error_names_line_and_column(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "c.yaml"
    p.write_text("pods: 8\ncores_per_plane: [1\n")
    with pytest.raises(SimInputError, match=r"c\.yaml:3:1: not valid YAML"):
        load_cluster(p)


def test_the_512k_cluster_file() -> None:
    spec = load_cluster("sim/clusters/cluster512k.yaml")
    assert (spec.gpus, spec.pods, spec.cores, spec.links_per_core, spec.oversubscription) == \
        (524288, 8, 1024, 64, 1.0)


def test_address_plan_extends_the_pod_plan(sc: SimCluster) -> None:
    host = sc.pod.fabric.host("b1s3")
    nic = sc.pod.nic_id("b1s3", 1)
    assert sc.address(0, nic) == host.nics[1].ip == "10.1.1.4"
    assert [sc.address(p, nic) for p in (1, 3)] == ["10.1.3.4", "10.1.7.4"]
    assert len(np.unique(sc.nic_ip)) == sc.nic_ip.size


def test_routes_across_pods_are_the_hash_model_at_every_hop() -> None:
    pod = {**POD, "uplinks_per_spine": 2, "leaf_ports": 32, "spine_ports": 32}
    sc = SimCluster.build(cluster_from_dict({**SMALL, "pod": pod, "spine_core_uplinks": 4}))
    rng = np.random.default_rng(3)
    n = 300
    sp = rng.integers(0, 4, n)
    dp = (sp + rng.integers(1, 4, n)) % 4
    s, d = rng.integers(0, sc.pod.nic_ip.shape[0], n), rng.integers(0, sc.pod.nic_ip.shape[0], n)
    sport = random_ports(n, 5)
    links = sc.route(sp, s, dp, d, sport)
    J = sc.spec.links_per_core
    for f in range(n):
        src, dst = int(sc.nic_ip[sp[f], s[f]]), int(sc.nic_ip[dp[f], d[f]])
        args = (src, dst, 17, int(sport[f]), ROCE_DPORT)
        leaf = int(sc.pod.nic_leaf[s[f]])
        lname = sc.pod.leaf_names[leaf] if sp[f] == 0 else f"p{sp[f]}.{sc.pod.leaf_names[leaf]}"
        assert predict_member(sc.switch_model(lname), LEAF_UPLINK_GROUP, *args) == \
            leaf_uplink_member(sc, leaf, int(links[f, 1]))
        k = int(sc.pod.link_spine[links[f, 1] % sc.pod_links])
        sname = sc.pod.spine_names[k] if sp[f] == 0 else f"p{sp[f]}.{sc.pod.spine_names[k]}"
        spine = sc.switch_model(sname)
        m = spine.groups[SPINE_CORE_GROUP].members.index(predict_member(spine, SPINE_CORE_GROUP, *args))
        assert int(links[f, 2]) == int(sc.spine_up(sp[f], k, m))
        core = sc.switch_model(f"c{k}.{m // J}")
        i = core.groups[int(dp[f]) + 1].members.index(predict_member(core, int(dp[f]) + 1, *args))
        assert int(links[f, 3]) == int(sc.core_down(k, m // J, dp[f], i))
    assert {sc.tier_name(int(x)) for x in links[:, 4]} == {"spine_down"}


def test_closed_form_step_equals_the_event_loop(sc: SimCluster) -> None:
    sp, s, dp, d = _ring(sc)
    for seed in range(4):
        links = sc.route(sp, s, dp, d, random_ports(len(s), seed))
        used, inv = np.unique(links, return_inverse=True)
        local = inv.reshape(links.shape)
        cap = sc.capacity_Bps[used]
        sim = simulate(FlowSet(local, np.full(len(s), 1e6), np.zeros(len(s)), np.full(len(s), np.inf)), cap)
        step, worst = equal_flows_makespan(links, sc.capacity_Bps, 1e6)
        assert step == pytest.approx(sim.makespan_s, rel=1e-9)
        assert worst in set(links.ravel().tolist())


def test_tccl_colours_leaf_and_spine_hops_and_gor_fixes_the_core(sc: SimCluster) -> None:
    sp, s, dp, d = _ring(sc)
    ports = tccl_cluster_ports(sc, sp, s, dp, d)
    links = sc.route(sp, s, dp, d, ports)
    assert np.bincount(links[:, 1]).max() == 1 and np.bincount(links[:, 2]).max() == 1
    assert np.bincount(links[:, 4]).max() == 1                       # each destination leaf once per spine
    ideal, _ = equal_flows_makespan(sc.ideal(sp, s, dp, d), sc.capacity_Bps, 1e6)
    tccl, worst = equal_flows_makespan(links, sc.capacity_Bps, 1e6)
    rand, _ = equal_flows_makespan(sc.route(sp, s, dp, d, random_ports(len(s), 1)), sc.capacity_Bps, 1e6)
    assert sc.tier_name(worst) == "core_down" and rand >= tccl > ideal
    alone = sc.capacity_Bps[links[:, 0]]
    g = gor_core(sc, links, sc.capacity_Bps, alone, rounds=8, top_n=10_000)
    assert g.overrides > 0
    assert links[:, :3].tolist() == sc.route(sp, s, dp, d, ports)[:, :3].tolist()   # only the core hop moved
    assert equal_flows_makespan(links, sc.capacity_Bps, 1e6)[0] == pytest.approx(ideal)


def test_gor_refuses_moves_above_the_safety_threshold(sc: SimCluster) -> None:
    sp, s, dp, d = _ring(sc)
    links = sc.route(sp, s, dp, d, tccl_cluster_ports(sc, sp, s, dp, d))
    before = links.copy()
    g = gor_core(sc, links, sc.capacity_Bps, sc.capacity_Bps[links[:, 0]], rounds=4, top_n=10_000,
                 safety=0.2)
    assert g.overrides == 0 and g.rejected > 0 and (links == before).all()


def test_hierarchical_allreduce(sc: SimCluster) -> None:
    res = {p: cluster_allreduce(sc, sc.spec.gpus, 256 << 20, p, gor=GorOptions(8, 10_000))
           for p in ("random_ecmp", "tccl", "tccl_gor", "ideal")}
    r = res["tccl"]
    n = sc.spec.pod_gpus
    assert [p.name for p in r.phases] == ["reducescatter-in-pod", "allreduce-across-pods", "allgather-in-pod"]
    assert [p.repeat for p in r.phases] == [n - 1, 2 * (sc.spec.pods - 1), n - 1]
    assert r.phases[1].flows == sc.spec.gpus and r.phases[1].bottleneck_tier == "core_down"
    assert res["ideal"].time_s <= res["tccl_gor"].time_s <= res["tccl"].time_s <= res["random_ecmp"].time_s
    assert res["tccl_gor"].phases[1].step_s == pytest.approx(res["ideal"].phases[1].step_s)
    assert r.busbw_GBps == pytest.approx(256 * 2**20 * 2 * (r.gpus - 1) / r.gpus / r.time_s / 1e9)
    one = cluster_allreduce(sc, n, 256 << 20, "tccl")
    assert one.pods == 1 and len(one.phases) == 2
    with pytest.raises(SimInputError, match="--gpus: 40: a DP job over whole pods"):
        cluster_allreduce(sc, 40, 1e6)
    with pytest.raises(SimInputError, match="--policy: unknown policy 'ecmp'"):
        cluster_allreduce(sc, n, 1e6, "ecmp")


def test_cli_allreduce(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "c.yaml"
    p.write_text("pod: {blocks: 2, servers_per_block: 4, rails: 2, spines: 4, leaf_ports: 32, "
                 "spine_ports: 32}\npods: 2\ncores_per_plane: 2\nspine_core_uplinks: 8\n")
    assert main(["allreduce", "--cluster", str(p), "--bytes", "64MiB", "--policy", "random_ecmp"]) == 0
    out = capsys.readouterr().out
    assert "32 GPUs (2 pods)" in out and "bus bandwidth" in out and "allreduce-across-pods" in out
    assert main(["allreduce", "--cluster", str(p), "--bytes", "lots"]) == 2
    assert "--bytes: 'lots'" in capsys.readouterr().err
    p.write_text("pods: 2\ncores_per_plane: 3\n")
    assert main(["allreduce", "--cluster", str(p)]) == 2
    assert f"{p}: cores_per_plane:" in capsys.readouterr().err


def test_every_pod_simulated_on_its_own(sc: SimCluster) -> None:
    view = sc.pod_view(2)
    assert view.hash_model.switch("b0r0l0").seed == sc.switch_model("p2.b0r0l0").seed != \
        sc.pod.hash_model.switch("b0r0l0").seed
    assert sc.address(2, 5) == str(__import__("ipaddress").IPv4Address(int(view.nic_ip[5])))
    size = 256 << 20
    for policy in ("tccl", "ideal"):          # balanced alike in every pod: pod 0 stands for all, exactly
        one = cluster_allreduce(sc, sc.spec.gpus, size, policy, order="rank")
        every = cluster_allreduce(sc, sc.spec.gpus, size, policy, order="rank", all_pods=True)
        assert every.phases[0].step_s == pytest.approx(one.phases[0].step_s)
        assert every.phases[0].flows == sc.spec.pods * one.phases[0].flows and every.phases[0].copies == 1
    one = cluster_allreduce(sc, sc.spec.gpus, size, "random_ecmp", order="rank")
    every = cluster_allreduce(sc, sc.spec.gpus, size, "random_ecmp", order="rank", all_pods=True)
    assert every.phases[0].step_s >= one.phases[0].step_s and "slowest pod" in every.phases[0].gor
    gor = cluster_allreduce(sc, sc.spec.gpus, size, "tccl_gor", order="rank", all_pods=True)
    assert "moves" in gor.phases[0].gor and "mismatch" not in gor.phases[0].gor
