"""TCCL and the traffic predictor on a fabric with detours: a spine that lost every link to a
leaf, so the other leaves route that leaf's prefixes to a detour group
(:mod:`controller.fabric.detours`). Every planned port is checked with
:func:`p4src.hashmodel.predict_member` on the group the leaf's routes pick for the flow
(:func:`p4src.hashmodel.route_group`), not on the group the planner used."""
from __future__ import annotations

from collections import Counter

from controller.fabric import fabric_hash_model, plan_fabric
from host.tccl.ports import LEAF_UPLINK_GROUP, FlowPlan, PortPlanner, flows_from_fabric
from testbed.traffic.flows import predict_uplink, uplink_port_of
from p4src.hashmodel import FabricHashModel, predict_member, route_group
from topo.model import Fabric, build_fabric
from topo.spec import FabricSpec

CUT = {("s1", 1), ("b0r0l0", 4)}          # the cable b0r0l0:4 - s1:1


def nics_of(fab: Fabric, leaf: str) -> list[str]:
    return [n.ip for h in fab.hosts for n in h.nics if n.leaf == leaf]


def routed_uplink(model: FabricHashModel, leaf: str, f: FlowPlan) -> str:
    """The uplink member the leaf really picks for the planned port (its route's group)."""
    sw = model.switch(leaf)
    gid = route_group(sw, f.dst, LEAF_UPLINK_GROUP)
    assert gid is not None
    return predict_member(sw, gid, f.src, f.dst, 17, f.sport, f.dport)


def test_flows_into_the_cut_leaf_take_the_detour_and_the_rest_still_spread() -> None:
    fab = build_fabric()
    model = fabric_hash_model(fab, CUT)
    src, into, other = nics_of(fab, "b1r0l0"), nics_of(fab, "b0r0l0"), nics_of(fab, "b0r1l0")
    detoured = [(s, d) for s, d in zip(src, into)]                 # 2 flows b1r0l0 -> b0r0l0
    spread = [(s, d) for s in src for d in other]                   # 4 flows b1r0l0 -> b0r1l0
    plan = PortPlanner(model).plan(flows_from_fabric(fab, detoured + spread))
    sw = model.switch("b1r0l0")
    for f in plan.flows[:2]:
        assert route_group(sw, f.dst, LEAF_UPLINK_GROUP) == 2
        assert f.hops[0] == ("b1r0l0", 2)
        assert routed_uplink(model, "b1r0l0", f) == f.path[0] == "s0"
    for f in plan.flows[2:]:
        assert f.hops[0] == ("b1r0l0", LEAF_UPLINK_GROUP)
        assert routed_uplink(model, "b1r0l0", f) == f.path[0]
    uplinks = Counter(routed_uplink(model, "b1r0l0", f) for f in plan.flows)
    assert uplinks == {"s0": 3, "s1": 3}                            # 6 flows, 2 uplinks
    assert Counter(routed_uplink(model, "b1r0l0", f) for f in plan.flows[2:]) == {"s0": 1, "s1": 3}
    assert plan.max_link_load == 3          # the optimum: 6 flows on 2 uplinks


def test_a_detour_over_two_spines_is_planned_on_its_own_hash() -> None:
    """Three spines, s2 cut from b0r0l0: b1r0l0's detour group is (s0, s1) at other member
    indexes than its uplink group, so a port solved on the uplink group lands elsewhere."""
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=4, rails=1, spines=3))
    port = next(p for p in fab.switch("b0r0l0").ports.values() if p.peer_node == "s2")
    model = fabric_hash_model(fab, {("b0r0l0", port.port), ("s2", port.peer_port)})
    sw = model.switch("b1r0l0")
    assert sw.groups[2].members == ("s0", "s1") and sw.groups[2].base == 3
    pairs = [(s, d) for s in nics_of(fab, "b1r0l0") for d in nics_of(fab, "b0r0l0")]   # 16 flows
    plan = PortPlanner(model).plan(flows_from_fabric(fab, pairs))
    got = [routed_uplink(model, "b1r0l0", f) for f in plan.flows]
    assert got == [f.path[0] for f in plan.flows]
    assert Counter(got) == {"s0": 8, "s1": 8} and plan.max_link_load == 8
    assert not plan.balanced                # s2 unusable: above the even share (16 / 3)


def test_replan_after_the_cable_is_mended_moves_only_the_flows_it_must() -> None:
    fab = build_fabric()
    pairs = [(s, d) for s in nics_of(fab, "b1r0l0") for d in nics_of(fab, "b0r0l0")]
    planner = PortPlanner(fabric_hash_model(fab, CUT))
    before = planner.plan(flows_from_fabric(fab, pairs))
    assert all(f.path[0] == "s0" for f in before.flows)
    after = planner.replan(fabric_hash_model(fab))             # detour withdrawn
    assert all(f.hops[0] == ("b1r0l0", LEAF_UPLINK_GROUP) for f in after.flows)
    assert Counter(f.path[0] for f in after.flows) == {"s0": 2, "s1": 2} and after.balanced
    assert len(after.moved) == 2          # ports were chosen on s0 in the uplink group too


def test_predicted_uplinks_follow_the_detour() -> None:
    fab = build_fabric()
    plans = plan_fabric(fab)                 # programmed before the cut: no group 2 there

    def member_ports(switch: str, group_id: int) -> dict[str, int]:
        g = plans[switch].groups[group_id]
        return dict(zip(g.members, g.ports))

    whole, cut = fabric_hash_model(fab), fabric_hash_model(fab, CUT)
    src, dst = nics_of(fab, "b1r0l0")[0], nics_of(fab, "b0r0l0")[0]
    sports = range(49152, 49152 + 32)
    assert {predict_uplink(fab, whole, member_ports, src, dst, p) for p in sports} == {
        "b1r0l0->s0", "b1r0l0->s1"}
    assert {predict_uplink(fab, cut, member_ports, src, dst, p) for p in sports} == {"b1r0l0->s0"}
    other = nics_of(fab, "b0r1l0")[0]        # not detoured: same prediction as before the cut
    assert all(predict_uplink(fab, cut, member_ports, src, other, p)
               == predict_uplink(fab, whole, member_ports, src, other, p) for p in sports)


def test_uplink_ports_of_members_come_from_the_topology() -> None:
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1, spines=2,
                                  uplinks_per_spine=2))
    leaf = fab.switch("b1r0l0")
    s0 = sorted(p for p, i in leaf.ports.items() if i.peer_node == "s0")
    assert [uplink_port_of(leaf, f"s0#{p}") for p in s0] == s0
    one = build_fabric().switch("b1r0l0")
    assert uplink_port_of(one, "s1") == 4
