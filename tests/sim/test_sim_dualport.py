"""The simulator on topo's description (sim/dualport.py, sim/cluster/spec.py): QPs on NIC
ports by the NIC's affinity hash or TCCL's dual-port plan, paths over every tier from
controller.fabric.tiers, and three-tier topo specs read as clusters."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from controller.fabric.tiers import TierModel
from host.nic.affinity import FlowKey, TxAffinity
from host.tccl.dualport import dualport_loads, plan_dualport
from controller.fabric.detours import fabric_hash_model
from sim.cli import main
from sim.cluster.fabric import SimCluster
from sim.cluster.spec import cluster_from_topo, load_cluster
from sim.dualport import cross_pairs, place, simulate_step
from sim.topology import SimInputError
from topo.model import build_fabric
from topo.spec import FabricSpec, load_spec, spec_from_dict

REPO = Path(__file__).resolve().parents[2]
DUAL = FabricSpec(blocks=2, servers_per_block=2, rails=1, ports_per_nic=2, leaves_per_rail=2, spines=2)


def test_random_qps_sit_on_the_port_the_nics_affinity_hash_gives() -> None:
    fab = build_fabric(DUAL)
    pairs = cross_pairs(fab, 4)
    flows = place(fab, TierModel.of(fab), pairs, "random", seed=3)
    aff = TxAffinity()
    assert [f.nic_port for f in flows] == [aff.port_of(FlowKey.of(f.src, f.dst, f.sport)) for f in flows]
    # and the path leaves from that port's leaf
    nics = {n.ip: n for h in fab.hosts for n in h.nics}
    tiers = TierModel.of(fab)
    for f in flows:
        assert tiers.path(nics[f.src], f.nic_port, f.dst, f.sport).switches[0] == nics[f.src].ports[f.nic_port].leaf


def test_tccls_dual_port_plan_balances_ports_and_uplinks_and_halves_the_step() -> None:
    fab = build_fabric(DUAL)
    pairs = cross_pairs(fab, 4)
    tc = simulate_step(fab, pairs, "tccl", 1e6)
    rnd = simulate_step(fab, pairs, "random", 1e6, seed=1)
    assert tc.max_over_mean["nic_port"] == tc.max_over_mean["leaf_up"] == 1.0
    assert rnd.max_over_mean["nic_port"] > 1.0 and rnd.time_s > tc.time_s
    # a flow's rate: one 100G port shared by ceil(4 QPs / 2 ports) = 2 flows
    assert tc.time_s == pytest.approx(1e6 / (100e9 / 8 / 2))
    # the simulator counts the flows on NIC ports as host.tccl.dualport does
    loads = dualport_loads(fab, fabric_hash_model(fab), plan_dualport(fab, fabric_hash_model(fab), pairs).flows)
    assert sorted(loads.nic_ports.values()) == sorted(tc.tier_loads["nic_port"].values())


def test_a_two_pod_spec_routes_over_the_cores() -> None:
    fab = build_fabric(load_spec(REPO / "topo" / "specs" / "pod2-dualport.yaml"))
    r = simulate_step(fab, cross_pairs(fab, 2), "random", 1e6)
    assert r.flows == 16 and "spine_up" in r.max_over_mean and r.time_s > 0
    t = simulate_step(fab, cross_pairs(fab, 2), "tccl", 1e6)      # planned over the cores
    assert t.flows == 16 and t.max_over_mean == {"nic_port": 1.0, "leaf_up": 1.0, "spine_up": 1.0}
    assert t.time_s < r.time_s


def test_a_three_tier_topo_spec_is_the_cluster_file_it_describes(tmp_path: Path) -> None:
    # cluster512k.yaml written as a topo spec: the same cluster
    topo = load_spec(REPO / "topo" / "specs" / "pod64k.yaml").to_dict()
    topo.update(pods=8, cores=128 * 8, spine_ports=1024, core_ports=512, core_hash="crc16")
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({k: v for k, v in topo.items() if v is not None}))
    a, b = load_cluster(f), load_cluster(REPO / "sim" / "clusters" / "cluster512k.yaml")
    # the pod's own spine radix is the cluster's spine_ports here (topo counts the core links in it)
    assert a.pod == dataclasses.replace(b.pod, spine_ports=a.spine_ports)
    assert (a.pods, a.cores_per_plane, a.spine_core_uplinks, a.core_link_gbps, a.spine_ports,
            a.core_ports, a.core_hash, a.ecmp_seed) == \
           (b.pods, b.cores_per_plane, b.spine_core_uplinks, b.core_link_gbps, b.spine_ports,
            b.core_ports, b.core_hash, b.ecmp_seed)


def test_a_small_three_tier_spec_builds_the_same_core_tier_in_both() -> None:
    spec = spec_from_dict({"pods": 2, "cores": 4, "blocks": 2, "rails": 2})
    fab = build_fabric(spec)
    sc = SimCluster.build(cluster_from_topo(spec))
    c = cluster_from_topo(spec)
    assert c.cores == len(fab.cores) and c.links_per_core == spec.links_per_core
    topo_core_links = sum(1 for sw in fab.cores for p in sw.ports.values() if p.kind == "downlink")
    assert topo_core_links == c.pods * c.cores * c.links_per_core and sc.num_links > 0


def test_dual_port_or_two_tier_specs_are_refused_as_clusters_with_the_field(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SimInputError, match="ports_per_nic"):
        load_cluster(REPO / "topo" / "specs" / "pod2-dualport.yaml")
    with pytest.raises(SimInputError, match="pods"):
        cluster_from_topo(FabricSpec())
    assert main(["dualport", "--policies", "ecmp"]) == 2
    assert "--policies" in capsys.readouterr().err
