"""Detours: when a spine loses its only link to a leaf, GOR makes every other leaf route
that leaf's prefixes around the spine (fake switches record the writes), the engine's
hash model follows, and a link back up removes them again."""
from __future__ import annotations

import io
import json

from controller.fabric import fabric_hash_model, plan_fabric
from controller.fabric.detours import fabric_detours
from controller.gor.decisions import FlowKey
from controller.gor.log import DecisionLog
from controller.gor.loop import GorLoop
from controller.gor.shared import LoopSettings
from p4src.hashmodel import FabricHashModel, predict_member, route_group
from test_gor_loop import AgentRegistry, FakeProgrammer
from topo.model import build_fabric

ROUTES = "FabricIngress.forwarding.routes"
GROUPS = "FabricIngress.ecmp.groups"
MEMBERS = "FabricIngress.ecmp.members"
B0R0 = "10.0.0.0/24"                      # the subnet behind b0r0l0 (rail 0 of block 0)


def make() -> tuple[GorLoop, FakeProgrammer, io.StringIO]:
    fab = build_fabric()
    prog = FakeProgrammer(fab)
    buf = io.StringIO()
    loop = GorLoop(fab, prog, AgentRegistry.from_fabric(fab, b"s"),
                   LoopSettings(period_s=0.05, window_s=0.05), log=DecisionLog(buf))
    return loop, prog, buf


def test_a_healthy_full_mesh_has_no_detours() -> None:
    fab = build_fabric()
    assert fabric_detours(fab) == {}
    assert all(not m.routes for m in fabric_hash_model(fab).switches.values())
    assert all(not p.routes for p in plan_fabric(fab).values())


def test_a_spine_that_lost_its_only_link_to_a_leaf_is_routed_around() -> None:
    loop, prog, buf = make()
    loop.link_down("b0r0l0", 4)                                  # the cable to s1
    for leaf in ("b0r1l0", "b1r0l0", "b1r1l0"):
        conn = prog.connections[leaf]
        s0 = next(p for p, i in loop.fabric.switch(leaf).ports.items() if i.peer_node == "s0")
        assert conn.table(ROUTES) == {
            (("hdr.ipv4.dst_addr", B0R0),): ("FabricIngress.forwarding.set_ecmp_group", {"group_id": 2})}
        assert conn.table(GROUPS)[(("meta.ecmp_group_id", 2),)] == (
            "FabricIngress.ecmp.select_member", {"base": 2, "size": 1})
        assert conn.table(MEMBERS)[(("meta.ecmp_member", 2),)] == (
            "FabricIngress.ecmp.set_nexthop", {"nexthop_id": s0})
        model = loop.engine.hash_model.switch(leaf)
        assert route_group(model, "10.0.0.1") == 2 and route_group(model, "10.1.0.1") is None
    assert not prog.connections["b0r0l0"].table(ROUTES)             # its one spine reaches all
    # every source port now goes through s0 towards b0r0l0 — on the model and in GOR's paths
    model = loop.engine.hash_model.switch("b1r0l0")
    assert {predict_member(model, 2, "10.1.0.1", "10.0.0.1", 17, sp, 4791)
            for sp in range(49152, 49252)} == {"s0"}
    paths = {loop.engine.current_path(FlowKey("10.1.0.1", "10.0.0.1", 17, sp, 4791),
                                      "b1r0l0", "b0r0l0").spine for sp in range(49152, 49252)}
    assert paths == {"s0"}
    # the published model equals the fabric's model with that cable out
    down = {("b0r0l0", 4), ("s1", 1)}
    assert loop.engine.hash_model == fabric_hash_model(loop.fabric, down)
    [rec] = [json.loads(l) for l in buf.getvalue().splitlines() if '"link_down"' in l]
    assert rec["detours"] == [f"{leaf}: {B0R0} -> s0" for leaf in ("b0r1l0", "b1r0l0", "b1r1l0")]


def test_the_link_back_up_removes_the_detours() -> None:
    loop, prog, _ = make()                 # fake switches start empty: only GOR's writes
    loop.link_down("b0r0l0", 4)
    loop.link_up("b0r0l0", 4)
    for leaf in ("b0r1l0", "b1r0l0", "b1r1l0"):
        assert prog.connections[leaf].entries == {}, leaf   # routes, group, member deleted
    assert loop.engine.hash_model == FabricHashModel(
        {n: p.hash_model() for n, p in plan_fabric(loop.fabric).items()})
    assert loop.detours == {}


def test_a_switch_that_does_not_answer_gets_its_detours_later() -> None:
    loop, prog, _ = make()
    prog.connections["b1r0l0"].fail = TimeoutError("deadline exceeded")
    loop.link_down("b0r0l0", 4)
    assert loop.detour_sync.pending == {"b1r0l0"} and "b1r0l0" not in loop.detours
    assert route_group(loop.engine.hash_model.switch("b1r0l0"), "10.0.0.1") is None
    prog.connections["b1r0l0"].fail = None
    loop.detour_sync.sync()
    assert loop.detour_sync.pending == set()
    assert route_group(loop.engine.hash_model.switch("b1r0l0"), "10.0.0.1") == 2
    assert prog.connections["b1r0l0"].table(ROUTES)
