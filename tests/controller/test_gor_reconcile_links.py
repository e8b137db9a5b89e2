"""A GOR restarted while a cable is cut learns the down link from the switches' ECMP
groups and adopts its predecessor's detours (switches holding P4Runtime messages); one
restarted after the cable was mended removes the detours it finds."""
from __future__ import annotations

from typing import Any

from controller.fabric import fabric_hash_model, plan_fabric
from controller.fabric.entries import T_GROUPS, T_MEMBERS, T_ROUTES
from controller.gor.loop import GorLoop
from test_gor_loop import FakeProgrammer
from test_gor_reconcile import PbConn, events, new_gor, p4info
from topo.model import build_fabric

CUT = ("b0r0l0", 4)                     # the cable b0r0l0:4 - s1:1 (s1's only link to b0r0l0)
DETOUR_LEAVES = ("b0r1l0", "b1r0l0", "b1r1l0")


def _program(prog: FakeProgrammer, fab: Any, cut: bool, detours: bool) -> None:
    """The switches as a predecessor left them: the plan's groups (group 1 of b0r0l0 without
    the cut uplink when ``cut``) and, when ``detours``, routes of b0r0l0's subnet to group 2
    over s0 on every other leaf."""
    for name, plan in plan_fabric(fab).items():
        conn = prog.connections[name]
        for e in plan.entries:
            if e.table in (T_GROUPS, T_MEMBERS) and not e.default:
                params = dict(e.params)
                if cut and name == CUT[0] and e.table == T_GROUPS:
                    params["size"] = 1
                if cut and name == CUT[0] and e.table == T_MEMBERS:
                    params["nexthop_id"] = 3                  # member 0 -> s0 (port 3)
                conn.modify(conn.table_entry(e.table, e.match, e.action, params))
    if detours:
        for leaf in DETOUR_LEAVES:
            conn = prog.connections[leaf]
            s0 = next(p for p, i in fab.switch(leaf).ports.items() if i.peer_node == "s0")
            conn.insert(conn.table_entry(T_MEMBERS, {"meta.ecmp_member": 2},
                                         "FabricIngress.ecmp.set_nexthop", {"nexthop_id": s0}))
            conn.insert(conn.table_entry(T_GROUPS, {"meta.ecmp_group_id": 2},
                                         "FabricIngress.ecmp.select_member", {"base": 2, "size": 1}))
            conn.insert(conn.table_entry(T_ROUTES, {"hdr.ipv4.dst_addr": "10.0.0.0/24"},
                                         "FabricIngress.forwarding.set_ecmp_group", {"group_id": 2}))


def _setup(cut: bool, detours: bool) -> tuple[Any, FakeProgrammer, GorLoop, Any]:
    fab = build_fabric()
    prog = FakeProgrammer(fab)
    info = p4info()
    prog.connections = {sw.name: PbConn(info) for sw in fab.switches}   # type: ignore[assignment]
    _program(prog, fab, cut, detours)
    loop, buf = new_gor(fab, prog)
    return fab, prog, loop, buf


def test_a_cut_cable_and_its_detours_are_learnt_from_the_switches() -> None:
    fab, prog, loop, buf = _setup(cut=True, detours=True)
    before = {n: [e.SerializeToString() for e in c.entries] for n, c in prog.connections.items()}
    report = loop.reconcile(t_s=0.0)
    assert report.down_links == ["b0r0l0:4"] and report.adopted_detours == 3
    assert not loop.links.is_up(CUT) and not loop.links.is_up(("s1", 1))
    assert sorted(loop.detours) == list(DETOUR_LEAVES) and loop.detour_sync.pending == set()
    assert loop.engine.hash_model == fabric_hash_model(fab, {CUT, ("s1", 1)})
    after = {n: sorted(e.SerializeToString() for e in c.entries) for n, c in prog.connections.items()}
    assert after == {n: sorted(v) for n, v in before.items()}      # nothing to change
    (rec,) = [e for e in events(buf) if e["event"] == "reconciled"]
    assert rec["down_links"] == ["b0r0l0:4"] and rec["adopted_detours"] == 3


def test_detours_of_a_cable_mended_meanwhile_are_removed() -> None:
    fab, prog, loop, _ = _setup(cut=False, detours=True)
    report = loop.reconcile(t_s=0.0)
    assert report.down_links == [] and report.adopted_detours == 3
    assert loop.detours == {} and all(loop.links.is_up(l) for l in loop.links.peer)
    for leaf in DETOUR_LEAVES:
        assert prog.connections[leaf].count(T_ROUTES) == 0
        assert prog.connections[leaf].count(T_GROUPS) == 1          # the uplink group only
    assert loop.engine.hash_model == fabric_hash_model(fab)


def test_a_cut_the_predecessor_had_not_detoured_gets_its_detours() -> None:
    fab, prog, loop, _ = _setup(cut=True, detours=False)
    report = loop.reconcile(t_s=0.0)
    assert report.down_links == ["b0r0l0:4"] and report.adopted_detours == 0
    for leaf in DETOUR_LEAVES:
        assert prog.connections[leaf].count(T_ROUTES) == 1
    assert loop.engine.hash_model == fabric_hash_model(fab, {CUT, ("s1", 1)})
