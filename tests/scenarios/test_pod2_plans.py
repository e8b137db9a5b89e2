"""The incast and all-to-all scenarios' flows on the two-pod, dual-port spec (issue 29),
planned without a testbed: the all-to-all pairs the two pods and, in TCCL mode, leaves
every leaf uplink and spine → core link as even as whole flows allow; the incast's flows
all arrive by the receiver's one leaf port although the spines spread a dual-port
receiver's prefix over both of its leaves."""
from __future__ import annotations

from controller.fabric.detours import fabric_hash_model
from controller.fabric.tiers import TierModel
from controller.fabric_setup import plan_fabric
from scenarios.alltoall import (alltoall_pairs, core_uplinks, even_floor, predicted_core_load,
                                predicted_load, spread)
from scenarios.gor_session import source_uplinks
from scenarios.incast import (arrival, incast_flows, incast_pairs, ingress_groups, pin_to_leaf,
                              receiver_port)
from testbed.traffic import build_flows, choose_ports, plan_ports
from testbed.traffic.flows import hashed_nic_ports
from topo.model import build_fabric
from topo.spec import load_spec

POD2 = "topo/specs/pod2-dualport.yaml"


def _a2a(fab, mode: str, seed: int):
    model = fabric_hash_model(fab)
    pairs = alltoall_pairs(fab)
    chosen = plan_ports(fab, pairs, mode, seed, model)
    return build_flows(fab, pairs, chosen.sports, model, None, chosen.nic_ports)


def test_the_alltoall_pairs_the_two_pods_and_tccl_spreads_every_tier() -> None:
    fab = build_fabric(load_spec(POD2))
    pod = {n.ip: h.pod for h in fab.hosts for n in h.nics}
    pairs = alltoall_pairs(fab)
    assert len(pairs) == 8 and all(pod[s] != pod[d] for s, d in pairs)
    tccl = _a2a(fab, "tccl", 7)
    cores = core_uplinks(fab, tccl)
    assert len(cores) == 16 and len(source_uplinks(fab, tccl)) == 8
    core_load = predicted_core_load(fab, tccl, sorted(cores))
    assert sum(core_load.values()) == 8 and max(core_load.values()) == 1
    assert spread({k: float(v) for k, v in core_load.items()}) == even_floor(core_load) == 2.0
    # TierModel's leaf uplink per flow: every one of the 8 uplinks carries one flow
    nics = {n.ip: n for h in fab.hosts for n in h.nics}
    tiers = TierModel.of(fab)
    up = [tiers.path(nics[f.src_ip], f.nic_port, f.dst_ip, f.sport).hops[0] for f in tccl]
    assert len(set(up)) == 8
    for seed in (7, 8, 9):                    # random ports: every QP on port 0, collisions
        rnd = _a2a(fab, "random", seed)
        rload = predicted_core_load(fab, rnd, sorted(cores))
        assert max(rload.values()) >= max(core_load.values())


def test_the_default_fabric_keeps_its_alltoall() -> None:
    fab = build_fabric()
    assert alltoall_pairs(fab)[:2] == [("10.0.0.1", "10.1.0.1"), ("10.0.0.1", "10.1.0.2")]
    assert alltoall_pairs(fab, blocks=(1, 0))[0] == ("10.1.0.1", "10.0.0.1")
    flows = _a2a(fab, "tccl", 7)
    assert core_uplinks(fab, flows) == {}
    # with the groups' member ports every flow is predicted on a listed uplink (before,
    # without them, every prediction was None and a dict of zeros passed as truthy)
    plans = plan_fabric(fab)
    predicted = build_flows(fab, [(f.src_ip, f.dst_ip) for f in flows], [f.sport for f in flows],
                            fabric_hash_model(fab),
                            lambda sw, g: dict(zip(plans[sw].groups[g].members, plans[sw].groups[g].ports)))
    ups = sorted(source_uplinks(fab, predicted))
    load = predicted_load(predicted, ups)
    assert sorted(load) == ups and sum(load.values()) == len(flows) > 0, load


def test_the_incast_arrives_by_the_receivers_one_leaf_port() -> None:
    fab = build_fabric(load_spec(POD2))
    model, tiers = fabric_hash_model(fab), TierModel.of(fab)
    pairs, recv = incast_pairs(fab, 0, 8)
    leaf, port, host = receiver_port(fab, recv)
    assert (leaf, port, host) == ("b0r0l0", 1, "b0s0")
    drawn = choose_ports(fab, pairs, "random", 7, model)
    before = {arrival(tiers, f)[0] for f in build_flows(fab, pairs, drawn)}
    assert before == {"b0r0l0", "b0r0l1"}          # the spines spread the /24 over both leaves
    pinned = pin_to_leaf(fab, tiers, pairs, drawn, leaf, 7)
    flows = build_flows(fab, pairs, pinned, nic_ports=hashed_nic_ports(fab, pairs, pinned))
    assert {arrival(tiers, f)[0] for f in flows} == {leaf} and len(set(pinned)) == 8
    kept = [a == b for a, b in zip(drawn, pinned)]
    bonded = build_flows(fab, pairs, drawn, nic_ports=hashed_nic_ports(fab, pairs, drawn))
    assert all(kept[i] for i, f in enumerate(bonded)
               if arrival(tiers, f)[0] == leaf)   # ports that already arrive are kept
    assert ingress_groups(flows, leaf, tiers) == ["host b0s1", "spine s0", "spine s1"]


def test_a_single_homed_receivers_ports_are_untouched() -> None:
    fab = build_fabric()
    model, tiers = fabric_hash_model(fab), TierModel.of(fab)
    pairs, recv = incast_pairs(fab, 0, 8)
    leaf = receiver_port(fab, recv)[0]
    drawn = choose_ports(fab, pairs, "random", 7, model)
    assert pin_to_leaf(fab, tiers, pairs, drawn, leaf, 7) == drawn


def test_the_incasts_qps_sit_where_the_senders_bond_hashes_them() -> None:
    """``plan_ports(..., "random")`` binds each QP as the bond's layer3+4 hash does, so the
    incast leaves by both of the senders' leaves; after :func:`pin_to_leaf` every flow,
    on its hashed port, still arrives by the receiver's one leaf."""
    fab = build_fabric(load_spec(POD2))
    model, tiers = fabric_hash_model(fab), TierModel.of(fab)
    pairs, recv = incast_pairs(fab, 0, 8)
    leaf = receiver_port(fab, recv)[0]
    left_by: set[str] = set()
    for seed in (7, 1, 885677274):
        flows = incast_flows(fab, tiers, pairs, leaf, seed, model)
        sports = [f.sport for f in flows]
        assert [f.nic_port for f in flows] == hashed_nic_ports(fab, pairs, sports)
        assert {f.nic_port for f in flows} == {0, 1}              # not every QP on port 0
        left_by |= {f.leaf for f in flows}
        assert {arrival(tiers, f)[0] for f in flows} == {leaf} and len(set(sports)) == 8
        chosen = plan_ports(fab, pairs, "random", seed, model)
        for f, s0, p0 in zip(flows, chosen.sports, chosen.nic_ports):
            assert f.nic_port == p0 or f.sport != s0              # a kept port keeps its NIC port
    # pod 1's senders leave by both of their leaves; b0s1 shares the receiver's leaf pair, and
    # its port 1 reaches the receiver's port 1 on b0r0l1 directly: pinned to port 0
    assert left_by == {"b0r0l0", "p1.b0r0l0", "p1.b0r0l1"}
