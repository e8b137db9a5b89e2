"""The simulator follows the leaves' detour routes (``controller.fabric.detours``): after a
spine lost every link to a leaf, the other leaves hash that leaf's traffic over their
uplinks whose spine still reaches it (``p4src.hashmodel.route_group``), in routing, in
TCCL's ports and in GOR's moves."""
from __future__ import annotations

import dataclasses
import ipaddress

import numpy as np
import pytest

from controller.gor.decisions import FlowKey
from controller.gor.paths import LinkState, PathEngine
from host.tccl.ports import PortPlanner, flows_from_fabric
from p4src.hashmodel import Flow, RouteModel, predict_path, route_group
from sim.detours import RouteSplitError, dst_leaf_groups
from sim.policies import run_phase
from sim.ports import random_ports, tccl_ports
from sim.routing import route_flows
from sim.topology import LEAF_UPLINK_GROUP, SimFabric, member_port
from sim.workloads import Phase
from sim_flows import random_cross_leaf_flows
from topo.model import build_fabric
from topo.spec import FabricSpec

CUT = "b0r0l0:3"                   # b0r0l0 <-> s0: s0's only link to b0r0l0


def _ip(sf: SimFabric, nic: int) -> str:
    return str(ipaddress.IPv4Address(int(sf.nic_ip[nic])))


def _into(sf: SimFabric, leaf: str, copies: int) -> tuple[np.ndarray, np.ndarray]:
    """Every NIC of another leaf's rail towards every NIC of ``leaf`` (other servers), ``copies`` times."""
    li = sf.leaf_names.index(leaf)
    dst_nics = [i for i in range(len(sf.nic_ip)) if sf.nic_leaf[i] == li]
    pairs = [(s, d) for s in range(len(sf.nic_ip)) for d in dst_nics
             if sf.nic_leaf[s] != li and s // sf.rails != d // sf.rails]
    s, d = np.array(pairs * copies).T
    return s, d


def test_a_cut_cable_no_longer_blackholes_flows_to_its_leaf() -> None:
    sf = SimFabric.build(build_fabric(), [CUT])
    s, d = _into(sf, "b0r0l0", 20)
    ports = random_ports(len(s), 3)
    s0 = sf.spine_names.index("s0")
    # before the leaves' detours (every flow in the uplink group): some hashed onto s0, lost
    before = route_flows(dataclasses.replace(sf, leaf_route=None), s, d, ports)
    assert before.blackholed.any()
    r = route_flows(sf, s, d, ports)
    assert not r.failed.any() and (r.links >= 0).all()
    assert not (r.spine == s0).any()
    # and the detour is the published model's: the route group's member, as GOR predicts it
    fab = sf.fabric
    eng = PathEngine(fab, sf.hash_model, _state(fab, sf))
    for i in range(0, len(s), 7):
        sl, dl = sf.leaf_names[sf.nic_leaf[s[i]]], sf.leaf_names[sf.nic_leaf[d[i]]]
        gid = route_group(sf.hash_model.switch(sl), _ip(sf, d[i]), LEAF_UPLINK_GROUP)
        assert gid != LEAF_UPLINK_GROUP
        member = predict_path(sf.hash_model, Flow.of(_ip(sf, s[i]), _ip(sf, d[i]), 17, int(ports[i]), 4791),
                              [(sl, gid)])[0]
        assert sf.link_keys[r.links[i, 1]] == (sl, member_port(fab.switch(sl), member))
        cur = eng.current_path(FlowKey(_ip(sf, s[i]), _ip(sf, d[i]), 17, int(ports[i]), 4791), sl, dl)
        assert cur is not None and cur.links == (sf.link_keys[r.links[i, 1]], sf.link_keys[r.links[i, 2]])


def test_nothing_down_or_a_whole_spine_down_has_no_route_table() -> None:
    for failed in ([], ["s1"]):
        sf = SimFabric.build(build_fabric(), failed)
        assert sf.leaf_route is None and sf.group_up is sf.leaf_up
        assert sf.leaf_group(np.array([0, 1]), np.array([2, 3])).tolist() == [0, 1]


PARALLEL = FabricSpec(blocks=3, servers_per_block=4, rails=2, spines=3, uplinks_per_spine=2, leaf_ports=64)


def test_parallel_links_detour_members_map_to_their_links() -> None:
    """Both links of s1 to b0r0l0 cut: the other leaves' detour groups name ``s0#p``/``s2#p``
    members; every routed flow is the hash model's path (300 random flows of the fabric)."""
    fab = build_fabric(PARALLEL)
    leaf = fab.switch("b0r0l0")
    cut = [f"b0r0l0:{p}" for p, info in sorted(leaf.ports.items()) if info.peer_node == "s1"]
    sf = SimFabric.build(fab, cut)
    detours = [g for n in sf.leaf_names for gid, g in sf.hash_model.switch(n).groups.items() if gid > 1]
    assert detours and all("#" in m and not m.startswith("s1#") for g in detours for m in g.members)
    eng = PathEngine(fab, sf.hash_model, _state(fab, sf))
    src, dst, sport = random_cross_leaf_flows(fab, sf, 300, seed=5)
    r = route_flows(sf, np.array(src), np.array(dst), np.array(sport))
    assert not r.failed.any()
    detoured = 0
    for i in range(len(src)):
        sl, dl = sf.leaf_names[sf.nic_leaf[src[i]]], sf.leaf_names[sf.nic_leaf[dst[i]]]
        gid = route_group(sf.hash_model.switch(sl), _ip(sf, dst[i]), LEAF_UPLINK_GROUP)
        detoured += gid != LEAF_UPLINK_GROUP
        flow = Flow.of(_ip(sf, src[i]), _ip(sf, dst[i]), 17, sport[i], 4791)
        up_member = predict_path(sf.hash_model, flow, [(sl, gid)])[0]
        assert sf.link_keys[r.links[i, 1]] == (sl, member_port(fab.switch(sl), up_member))
        cur = eng.current_path(FlowKey(_ip(sf, src[i]), _ip(sf, dst[i]), 17, sport[i], 4791), sl, dl)
        assert cur is not None and cur.links == (sf.link_keys[r.links[i, 1]], sf.link_keys[r.links[i, 2]])
    assert detoured > 10


def _state(fab: object, sf: SimFabric) -> LinkState:
    state = LinkState.from_fabric(fab)
    state.down |= set(sf.down)
    return state


@pytest.mark.parametrize("alg", ["crc16", "crc32"])
def test_tccl_paths_on_detours_are_the_planners(alg: str) -> None:
    """TCCL's ports with detours (a polarised fabric, parallel links, s1 cut off from
    b0r0l0; flows with different palettes, so the planner colours greedily): every flow
    delivered, none to b0r0l0 through s1, and every flow on the path ``PortPlanner``
    (which applies the routes itself) gives it. Ports may differ on detoured flows: the
    planner prefers, among the ports reaching the colour, one that keeps the uplink if the
    detour route is withdrawn, which the simulator does not model."""
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=8, rails=2, spines=4, uplinks_per_spine=2,
                                  leaf_ports=64, leaf_hash=alg, spine_hash=alg))
    cut = [f"b0r0l0:{p}" for p, info in sorted(fab.switch("b0r0l0").ports.items()) if info.peer_node == "s1"]
    sf = SimFabric.build(fab, cut)
    rng = np.random.default_rng(2)
    s, d = rng.integers(0, len(sf.nic_ip), 400), rng.integers(0, len(sf.nic_ip), 400)
    keep = (sf.nic_leaf[s] != sf.nic_leaf[d]) & (s // sf.rails != d // sf.rails)
    s, d = s[keep][:32], d[keep][:32]        # the planner checks 65,536 ports per colour in Python
    to_cut = sf.nic_leaf[d] == sf.leaf_names.index("b0r0l0")
    assert to_cut.sum() >= 5
    ports = tccl_ports(sf, s, d)
    r = route_flows(sf, s, d, ports)
    assert not r.failed.any() and not (r.spine[to_cut] == sf.spine_names.index("s1")).any()
    plan = PortPlanner(sf.hash_model).plan(flows_from_fabric(fab, [(_ip(sf, a), _ip(sf, b))
                                                                  for a, b in zip(s.tolist(), d.tolist())]))
    theirs = route_flows(sf, s, d, np.array([f.sport for f in plan.flows]))
    assert (theirs.links == r.links).all()
    assert max(np.bincount(r.links[:, 1]).max(), np.bincount(r.links[:, 2]).max()) == plan.max_link_load


def test_policies_deliver_every_flow_around_a_cut_cable() -> None:
    sf = SimFabric.build(build_fabric(), [CUT])
    s, d = _into(sf, "b0r0l0", 4)
    phase = Phase("into-b0r0l0", s, d, np.full(len(s), 1 << 20, np.float64), 1.0)
    for policy in ("random_ecmp", "tccl", "tccl_gor"):
        res = run_phase(sf, phase, policy)
        assert res.undeliverable == 0 and np.isfinite(res.step_s), policy
        assert res.gor_path_mismatch == 0
        s0_links = [sf.link_index[k] for k in sf.link_keys if k[0] == "s0"]
        assert res.link_util[s0_links].sum() == 0.0, policy       # nothing into b0r0l0 rides s0


def test_a_route_splitting_a_leafs_nics_is_refused() -> None:
    ips = np.array([0x0A000001, 0x0A000002], np.uint32)          # both on leaf 0
    with pytest.raises(RouteSplitError, match="split the NICs of leaf number 0"):
        dst_leaf_groups((RouteModel("10.0.0.1/32", 2),), ips, np.array([0, 0]), 1)
