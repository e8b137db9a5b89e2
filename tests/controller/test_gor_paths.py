"""GOR path engine: safety rule, simulation check (greedy hotspot refused), ports through the
hash model on both hops, override orders, link-down, and the max-min simulation itself."""
from __future__ import annotations

import pytest

from controller.fabric_setup import plan_fabric
from controller.gor.decisions import FlowKey, MoveOrder, OverrideOrder
from controller.gor.paths import ElephantFlow, LinkState, PathEngine
from controller.gor.simulate import max_min_fair
from p4src.hashmodel import FabricHashModel, member_index
from topo.model import Fabric, build_fabric
from topo.spec import FabricSpec

G = 1e9
L0, L1 = "b0r0l0", "b1r0l0"


def setup(spines: int = 3, uplinks_per_spine: int = 1) -> tuple[Fabric, PathEngine]:
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1, spines=spines,
                                  uplinks_per_spine=uplinks_per_spine))
    hm = FabricHashModel({n: p.hash_model() for n, p in plan_fabric(fab).items()})
    return fab, PathEngine(fab, hm, LinkState.from_fabric(fab))


def up(fab: Fabric, spine: str, leaf: str = L0) -> tuple[str, int]:
    return next((leaf, p) for p, i in fab.switch(leaf).ports.items() if i.peer_node == spine)


def down(fab: Fabric, spine: str, leaf: str = L1) -> tuple[str, int]:
    return next((spine, p) for p, i in fab.switch(spine).ports.items() if i.peer_node == leaf)


def flows_on(eng: PathEngine, spine: str, n: int) -> list[FlowKey]:
    """n flows 10.0.0.1 -> 10.1.0.1 the hash model sends through ``spine``."""
    out = []
    for sport in range(49152, 65536):
        f = FlowKey("10.0.0.1", "10.1.0.1", 17, sport, 4791)
        p = eng.current_path(f, L0, L1)
        if p is not None and p.spine == spine:
            out.append(f)
            if len(out) == n:
                return out
    raise AssertionError("not enough flows")


def load(fab: Fabric, eng: PathEngine, spine_util: dict[str, float]) -> None:
    for s, u in spine_util.items():
        eng.links.set_util(up(fab, s), u)
        eng.links.set_util(down(fab, s), u)


def test_candidates_and_current_path() -> None:
    fab, eng = setup()
    assert [p.spine for p in eng.candidate_paths(L0, L1)] == ["s0", "s1", "s2"]
    p = eng.candidate_paths(L0, L1)[1]
    assert p.links == (up(fab, "s1"), down(fab, "s1"))


def test_safety_rule_rejects_paths_over_75pct_and_picks_lowest_max() -> None:
    fab, eng = setup()
    load(fab, eng, {"s0": 1.0, "s1": 0.60, "s2": 0.40})
    f = flows_on(eng, "s0", 1)[0]
    dec = eng.decide([ElephantFlow(f, 20 * G, L0, L1)])
    assert len(dec.orders) == 1
    order = dec.orders[0]
    assert isinstance(order, MoveOrder) and order.path.spine == "s2"       # s1 would be 80 %
    assert order.predicted_util[up(fab, "s2")] == pytest.approx(0.60)
    # 20 G more on s1 and s2 breaks the rule on both: rejected for safety
    load(fab, eng, {"s0": 1.0, "s1": 0.60, "s2": 0.70})
    dec = eng.decide([ElephantFlow(f, 20 * G, L0, L1)])
    assert not dec.orders and dec.rejected[0].reason == "safety"


def test_flows_already_moved_count_in_the_round() -> None:
    fab, eng = setup()
    load(fab, eng, {"s0": 1.0, "s1": 0.40, "s2": 0.45})
    a, b = flows_on(eng, "s0", 2)
    dec = eng.decide([ElephantFlow(a, 25 * G, L0, L1), ElephantFlow(b, 24 * G, L0, L1)])
    spines = {o.flow: o.path.spine for o in dec.orders}
    # a takes s1 (65 %); b on s1 would make 89 %: it goes to s2 (69 %)
    assert spines == {a: "s1", b: "s2"}


def test_greedy_choice_that_creates_a_hotspot_is_refused_by_the_simulation() -> None:
    fab, eng = setup()
    # s0 is full with 4 elephants held at 25 G each by the bottleneck; each wants 100 G.
    load(fab, eng, {"s0": 1.0, "s1": 0.40, "s2": 0.60})
    flows = flows_on(eng, "s0", 4)
    eles = [ElephantFlow(f, 25 * G, L0, L1, demand_bps=100 * G) for f in flows]
    # greedy alone: s1 at 40 + 25 = 65 % passes the 75 % rule ...
    assert eng.links.util(up(fab, "s1"), 25 * G) < 0.75
    dec = eng.decide(eles)
    # ... but once off the bottleneck the flow grows to its demand: s1 would reach 100 %
    assert not dec.orders
    reasons = {r.reason for r in dec.rejected}
    assert "hotspot" in reasons
    hot = next(r for r in dec.rejected if r.reason == "hotspot")
    assert hot.path is not None and hot.path.spine == "s1"
    # the same flows, rate-limited to what they send now (demand = rate), can move
    dec2 = eng.decide([ElephantFlow(f, 25 * G, L0, L1) for f in flows])
    assert [o.path.spine for o in dec2.orders] == ["s1"]
    assert dec2.predicted_max_util <= 0.75 + 1e-9 or dec2.predicted_max_util <= dec2.baseline_max_util


def test_ports_agree_with_hash_model_on_both_hops() -> None:
    fab, eng = setup(spines=2, uplinks_per_spine=2)
    hm = eng.hash_model
    f = FlowKey("10.0.0.1", "10.1.0.1", 17, 50000, 4791)
    cands = eng.candidate_paths(L0, L1)
    assert len(cands) == 8                          # 2 spines x 2 uplinks x 2 downlinks
    for path in cands:
        sport = eng.solve_sport(f, path)
        assert sport is not None
        (leaf, up_port), (spine, down_port) = path.links
        lm = hm.switch(leaf)
        g = lm.group(1)
        i = member_index(lm, 1, f.src, f.dst, 17, sport, 4791) - g.base
        assert g.members[i] == f"{spine}#{up_port}"
        sm = hm.switch(spine)
        gid = eng.spine_group(spine, L1)
        assert gid is not None
        sg = sm.group(gid)
        j = member_index(sm, gid, f.src, f.dst, 17, sport, 4791) - sg.base
        assert sg.members[j] == f"{L1}#{down_port}"
        assert eng.current_path(f.with_sport(sport), L0, L1) == path


def test_hosts_without_agent_get_override_entries() -> None:
    fab, eng = setup(spines=2, uplinks_per_spine=2)
    load(fab, eng, {})
    f = FlowKey("10.0.0.1", "10.1.0.1", 17, 50000, 4791)
    cur = eng.current_path(f, L0, L1)
    assert cur is not None
    for l in cur.links:
        eng.links.set_util(l, 0.9)
    dec = eng.decide([ElephantFlow(f, 10 * G, L0, L1, has_agent=False)])
    assert len(dec.orders) == 1
    o = dec.orders[0]
    assert isinstance(o, OverrideOrder)
    (leaf, up_port), (spine, down_port) = o.path.links
    assert [(e.switch, e.nexthop_id) for e in o.entries] == [(leaf, up_port), (spine, down_port)]
    assert o.to_dict()["order"] == "override"


def test_link_down_removes_paths_and_replans_affected_flows() -> None:
    fab, eng = setup()
    eng.links.link_down(*down(fab, "s1"))             # spine side of s1 -> L1
    assert [p.spine for p in eng.candidate_paths(L0, L1)] == ["s0", "s2"]
    eng.links.link_down(*up(fab, "s2"))               # leaf side of L0 -> s2
    assert [p.spine for p in eng.candidate_paths(L0, L1)] == ["s0"]
    f = flows_on(eng, "s0", 1)[0]
    eng.links.link_down(*up(fab, "s0"))
    assert eng.candidate_paths(L0, L1) == []
    dec = eng.decide([ElephantFlow(f, 10 * G, L0, L1)])
    assert dec.rejected[0].reason == "no-path"
    eng.links.link_up(*up(fab, "s2"))
    dec = eng.decide([ElephantFlow(f, 10 * G, L0, L1)])   # on a dead path: moved to s2
    assert [o.path.spine for o in dec.orders] == ["s2"]
    assert dec.to_dict()["orders"][0]["order"] == "move"


def test_max_min_fair_progressive_filling() -> None:
    rates = max_min_fair({"a": (("x",), 100.0), "b": (("x", "y"), 100.0), "c": (("y",), 1.0)},
                         {"x": 10.0, "y": 4.0})
    assert rates == pytest.approx({"a": 7.0, "b": 3.0, "c": 1.0})
    rates = max_min_fair({"a": (("x",), 100.0)}, {"x": 10.0}, {"x": 12.0})
    assert rates == {"a": 0.0}


def test_ports_reaching_matches_member_index_any_group_size() -> None:
    from controller.gor.paths import ports_reaching
    from p4src.hashmodel import GroupModel, SwitchHashModel
    for size, algo in ((3, "crc16"), (8, "crc16"), (4, "crc32")):
        sw = SwitchHashModel("l", algo, seed=11, groups={1: GroupModel(0, [f"m{i}" for i in range(size)])})
        for want in range(size):
            ports = ports_reaching(sw, 1, 0x0A000001, 0x0A010001, 4791, want)
            assert ports and all(member_index(sw, 1, 0x0A000001, 0x0A010001, 17, p, 4791) == want
                                 for p in ports[:200] + ports[-50:])
        total = sum(len(ports_reaching(sw, 1, 0x0A000001, 0x0A010001, 4791, w)) for w in range(size))
        assert total == 65536
