"""TCCL hash-orthogonal ports: every chosen port is checked against p4sim's own v1model
``hash()`` (``p4sim.runtime.hashes.compute_hash`` over the packed field list), not against
the hash model the solver used, and the link loads are recounted from those hashes."""
from __future__ import annotations

import ipaddress
import math
from collections import Counter

import pytest

from controller.fabric_setup import fabric_hash_model, plan_fabric
from host.tccl.ports import (FlowRequest, PortPlanError, PortPlanner, flows_from_fabric, kempe_colouring,
                             spine_routes_to, split_vertices)
from p4sim.runtime import hashes as p4sim_hashes
from p4src.hashmodel import FabricHashModel, GroupModel, SwitchHashModel
from topo.model import Fabric, build_fabric
from topo.spec import FabricSpec


def model_of(fab: Fabric) -> FabricHashModel:
    return FabricHashModel({n: p.hash_model() for n, p in plan_fabric(fab).items()})


def independent_member(model: FabricHashModel, switch: str, gid: int, src: str, dst: str,
                       sport: int, dport: int = 4791) -> str:
    sw = model.switch(switch)
    g = sw.groups[gid]
    fields = [(sw.seed, 32), (int(ipaddress.IPv4Address(src)), 32),
              (int(ipaddress.IPv4Address(dst)), 32), (17, 8), (sport, 16), (dport, 16)]
    idx = p4sim_hashes.compute_hash(sw.algorithm, fields, g.base, g.size) & 0xFFFF
    return g.members[idx - g.base]


def independent_loads(model: FabricHashModel, fab: Fabric, plan) -> Counter:
    """Links of both tiers recomputed from p4sim hashes: (leaf, uplink member) and
    (spine, downlink member or destination leaf)."""
    nic_leaf = {n.ip: n.leaf for h in fab.hosts for n in h.nics}
    loads: Counter = Counter()
    for f in plan.flows:
        leaf = nic_leaf[f.src]
        up = independent_member(model, leaf, 1, f.src, f.dst, f.sport)
        assert up == f.path[0]
        loads[(leaf, up)] += 1
        spine = up.split("#")[0]
        dst_leaf = nic_leaf[f.dst]
        groups = [gid for gid, g in model.switch(spine).groups.items()
                  if all(m.split("#")[0] == dst_leaf for m in g.members)]
        if groups:
            down = independent_member(model, spine, groups[0], f.src, f.dst, f.sport)
            assert down == f.path[1]
        else:
            down = dst_leaf
        loads[(spine, down)] += 1
    return loads


def pairs_between_blocks(fab: Fabric, n: int, rail: int = 0) -> list[tuple[str, str]]:
    src = [h.nics[rail].ip for h in fab.hosts if h.block == 0]
    dst = [h.nics[rail].ip for h in fab.hosts if h.block == 1]
    return [(src[i % len(src)], dst[(i * 3) % len(dst)]) for i in range(n)]


@pytest.mark.parametrize("spines,uplinks,flows", [(8, 1, 8), (8, 1, 12), (4, 1, 8), (4, 2, 16),
                                                  (2, 1, 5), (8, 1, 20)])
def test_max_load_within_cap_on_both_tiers(spines: int, uplinks: int, flows: int) -> None:
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=8, rails=1, spines=spines,
                                  uplinks_per_spine=uplinks))
    model = model_of(fab)
    plan = PortPlanner(model).plan(flows_from_fabric(fab, pairs_between_blocks(fab, flows)))
    links = spines * uplinks
    cap = math.ceil(flows / links)
    loads = independent_loads(model, fab, plan)
    assert plan.balanced
    assert max(loads.values()) <= cap
    assert dict(loads) == plan.link_loads
    assert len({(f.src, f.dst, f.sport) for f in plan.flows}) == flows


def test_eight_flows_on_eight_links_load_one_and_ports_in_range() -> None:
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=8, rails=1, spines=8))
    model = model_of(fab)
    plan = PortPlanner(model).plan(flows_from_fabric(fab, pairs_between_blocks(fab, 8)))
    assert max(independent_loads(model, fab, plan).values()) == 1
    assert all(49152 <= f.sport <= 65535 for f in plan.flows)


def test_many_leaves_into_one_leaf_balances_spine_downlinks() -> None:
    """Flows from two source leaves (two rails) into one destination leaf: the downlinks into
    that leaf are shared by both source leaves, so per-leaf balancing alone is not enough."""
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=4, rails=2, spines=4))
    model = model_of(fab)
    dst = [h.nics[0].ip for h in fab.hosts if h.block == 1]
    pairs = [(h.nics[r].ip, dst[i % 4]) for i, (h, r) in
             enumerate((h, r) for h in fab.hosts if h.block == 0 for r in (0, 1))]
    plan = PortPlanner(model).plan(flows_from_fabric(fab, pairs))
    loads = independent_loads(model, fab, plan)
    down = [n for (sw, m), n in loads.items() if sw.startswith("s")]
    assert plan.balanced and max(down) == 2 and sum(down) == 8      # 8 flows, 4 downlinks


def test_same_crc_on_both_tiers_is_still_solved() -> None:
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=8, rails=1, spines=4,
                                  uplinks_per_spine=2, spine_hash="crc16"))
    model = model_of(fab)
    plan = PortPlanner(model).plan(flows_from_fabric(fab, pairs_between_blocks(fab, 8)))
    assert max(independent_loads(model, fab, plan).values()) == 1


def test_replan_after_reseed_keeps_ports_still_on_plan() -> None:
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=8, rails=1, spines=8))
    model = model_of(fab)
    planner = PortPlanner(model)
    first = planner.plan(flows_from_fabric(fab, pairs_between_blocks(fab, 8)))
    same = planner.replan(model)
    assert same.moved == [] and [f.sport for f in same.flows] == [f.sport for f in first.flows]
    reseeded = FabricHashModel.from_json(model.to_json())
    reseeded.switches["b0r0l0"].seed ^= 0x5A5A5A5A
    second = planner.replan(reseeded)
    assert second.balanced
    assert max(independent_loads(reseeded, fab, second).values()) == 1
    kept = [f for f in second.flows if not f.moved]
    assert all(f.sport == first.by_name()[f.name].sport for f in kept)


def test_bad_input_is_refused_with_the_flow_named() -> None:
    m = FabricHashModel({"l0": SwitchHashModel("l0", groups={1: GroupModel(0, ["s0", "s1"])})})
    pp = PortPlanner(m)
    with pytest.raises(PortPlanError, match="flow a: .*no switch 'l9'"):
        pp.plan([FlowRequest("a", "10.0.0.1", "10.1.0.1", "l9", 1, "l1")])
    with pytest.raises(PortPlanError, match="flow a: .*no ECMP group 7"):
        pp.plan([FlowRequest("a", "10.0.0.1", "10.1.0.1", "l0", 7, "l1")])
    with pytest.raises(PortPlanError, match="duplicate"):
        pp.plan([FlowRequest("a", "10.0.0.1", "10.1.0.1", "l0", 1, "l1")] * 2)
    with pytest.raises(PortPlanError, match="not an IPv4"):
        pp.plan([FlowRequest("a", "10.0.0.300", "10.1.0.1", "l0", 1, "l1")])
    with pytest.raises(PortPlanError, match="replan before"):
        PortPlanner(m).replan(m)
    with pytest.raises(PortPlanError, match="port range"):
        PortPlanner(m, (0, 10))
    with pytest.raises(PortPlanError, match="no NIC"):
        flows_from_fabric(build_fabric(), [("10.9.9.9", "10.1.0.1")])
    with pytest.raises(PortPlanError, match="share leaf"):
        flows_from_fabric(build_fabric(), [("10.0.0.1", "10.0.0.2")])


# ----------------------------------------------------------------- a failed cable (sim scenario failed-link-default)
def _cut(fab: Fabric, leaf: str, spine: str) -> set[tuple[str, int]]:
    """Both ends of the cable between ``leaf`` and ``spine``."""
    p = next(p for p in fab.switch(leaf).ports.values() if p.peer_node == spine)
    return {(leaf, p.port), (spine, p.peer_port)}


def test_no_path_through_a_spine_without_a_route_to_the_destination_leaf() -> None:
    """b0r0l0 <-> s0 is down: s0 has no route to b0r0l0 (one link per pair, so no group
    anywhere), yet the other leaves still hash onto s0. Every flow into b0r0l0 must be
    planned over s1, and the ports must really hash there (p4sim's hash)."""
    fab = build_fabric()                                 # 2 spines, one link per leaf-spine pair
    model = fabric_hash_model(fab, _cut(fab, "b0r0l0", "s0"))
    into = [(h.nics[0].ip, g.nics[0].ip) for h in fab.hosts if h.block == 1
            for g in fab.hosts if g.block == 0]          # b1r0l0 -> b0r0l0, 4 flows
    away = [(g, h) for h, g in into]                     # b0r0l0 -> b1r0l0: its group is s1 only
    plan = PortPlanner(model).plan(flows_from_fabric(fab, into + away))
    assert all(f.path[0] == "s1" for f in plan.flows)
    loads = independent_loads(model, fab, plan)
    assert ("s0", "b0r0l0") not in loads and loads[("s1", "b0r0l0")] == 4
    assert loads[("b1r0l0", "s1")] == 4 and not plan.balanced      # s0 unusable: above the even share


def test_flows_to_other_leaves_still_use_the_spine() -> None:
    fab = build_fabric()
    model = fabric_hash_model(fab, _cut(fab, "b0r0l0", "s0"))
    pairs = [(h.nics[1].ip, g.nics[1].ip) for h in fab.hosts if h.block == 1
             for g in fab.hosts if g.block == 0]          # rail 1: b1r1l0 -> b0r1l0, untouched
    plan = PortPlanner(model).plan(flows_from_fabric(fab, pairs))
    assert plan.balanced and Counter(f.path[0] for f in plan.flows) == {"s0": 2, "s1": 2}


def test_a_leaf_no_spine_reaches_is_named() -> None:
    fab = build_fabric()
    down = _cut(fab, "b0r0l0", "s0") | _cut(fab, "b0r0l0", "s1")
    model = fabric_hash_model(fab, down)
    pairs = [(fab.hosts[2].nics[0].ip, fab.hosts[0].nics[0].ip)]       # b1s0 -> b0s0, rail 0
    with pytest.raises(PortPlanError, match=r"flow f0: no spine of b1r0l0's uplink group 1 "
                                            r"\(s0, s1\) has a live route to b0r0l0"):
        PortPlanner(model).plan(flows_from_fabric(fab, pairs))


def test_spine_routes_from_the_groups() -> None:
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1, spines=2, uplinks_per_spine=2))
    model = fabric_hash_model(fab)
    assert spine_routes_to(model, "s0", "b0r0l0") and spine_routes_to(model, "s1", "b1r0l0")
    ports = [p for p in fab.switch("b0r0l0").ports.values() if p.peer_node == "s0"]
    one = fabric_hash_model(fab, {("b0r0l0", ports[0].port), ("s0", ports[0].peer_port)})
    assert spine_routes_to(one, "s0", "b0r0l0")                  # one of two parallel links left
    both = fabric_hash_model(fab, {e for p in ports for e in (("b0r0l0", p.port), ("s0", p.peer_port))})
    assert not spine_routes_to(both, "s0", "b0r0l0") and spine_routes_to(both, "s1", "b0r0l0")


# ----------------------------------------------------------------- the public colouring helpers
def test_split_and_kempe_colouring_keep_every_vertex_within_k() -> None:
    import random
    rng = random.Random(3)
    palette = [(f"s{i}", 0) for i in range(4)]
    left = [("u", rng.randrange(3)) for _ in range(40)]
    right = [("v", rng.randrange(5)) for _ in range(40)]
    us, vs = split_vertices(left, 4), split_vertices(right, 4)
    assert max(Counter(us).values()) <= 4 and max(Counter(vs).values()) <= 4
    colours = kempe_colouring(list(zip(us, vs)), palette)
    for side in (us, vs):
        assert len(set(zip(side, colours))) == len(colours)          # proper at every sub-vertex
    for key, total in Counter(left).items():                          # so each colour ≤ ceil(d/k)
        per = Counter(c for k, c in zip(left, colours) if k == key)
        assert max(per.values()) <= math.ceil(total / 4)
    kept = kempe_colouring([("a", "b"), ("a", "c")], palette, [("s3", 0), ("s3", 0)])
    assert kept[0] == ("s3", 0) and kept[1] != ("s3", 0)
    with pytest.raises(ValueError, match="at least one colour"):
        split_vertices(["a"], 0)


def test_docstring_examples() -> None:
    import doctest
    from host.tccl import ports
    assert doctest.testmod(ports).failed == 0
