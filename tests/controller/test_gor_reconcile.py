"""Restart reconciliation with fake switches that hold real P4Runtime ``TableEntry``
messages (a hand-built P4Info with the override and sampling tables of ``p4src/README.md``):
a new GorLoop reads back what its predecessor left, adopts what is consistent and
deletes the rest, so no stale entry stays."""
from __future__ import annotations

import io
from typing import Any, Optional

from p4.config.v1 import p4info_pb2

from controller.gor.decisions import FlowKey
from controller.gor.log import DecisionLog
from controller.gor.loop import GorLoop
from controller.gor.shared import LoopSettings
from controller.gor.orders import override_match
from controller.p4rt import entities as ent
from controller.p4rt.errors import UpdateError, WriteError
from controller.p4rt.p4info import P4InfoHelper
from test_gor_loop import L0, L1, FakeProgrammer, events, fabric, flows_through, port_to, samples
from topo.model import Fabric

T_OVERRIDE, T_SAMPLING = "FabricIngress.override.flows", "FabricIngress.sampling.config"


def p4info() -> P4InfoHelper:
    info = p4info_pb2.P4Info()
    actions = {"FabricIngress.override.set_nexthop": [("nexthop_id", 16)],
               "FabricIngress.sampling.sample": [("one_in_n", 32)],
               "FabricIngress.sampling.sample_to_cpu": [("one_in_n", 32)],
               "FabricIngress.ecmp.select_member": [("base", 16), ("size", 16)],
               "FabricIngress.ecmp.set_nexthop": [("nexthop_id", 16)],
               "FabricIngress.forwarding.set_ecmp_group": [("group_id", 16)]}
    for i, (name, params) in enumerate(actions.items()):
        a = info.actions.add()
        a.preamble.id, a.preamble.name = 0x01000001 + i, name
        for j, (pn, w) in enumerate(params):
            p = a.params.add()
            p.id, p.name, p.bitwidth = j + 1, pn, w
    tables = {T_OVERRIDE: [("hdr.ipv4.src_addr", 32), ("hdr.ipv4.dst_addr", 32),
                           ("hdr.ipv4.protocol", 8), ("hdr.udp.src_port", 16), ("hdr.udp.dst_port", 16)],
              T_SAMPLING: [("standard_metadata.egress_spec", 9)],
              "FabricIngress.ecmp.groups": [("meta.ecmp_group_id", 16)],
              "FabricIngress.ecmp.members": [("meta.ecmp_member", 16)],
              "FabricIngress.forwarding.routes": [("hdr.ipv4.dst_addr", 32)]}
    for i, (name, fields) in enumerate(tables.items()):
        t = info.tables.add()
        t.preamble.id, t.preamble.name = 0x02000001 + i, name
        for j, (fn, w) in enumerate(fields):
            m = t.match_fields.add()
            m.id, m.name, m.bitwidth = j + 1, fn, w
            m.match_type = (p4info_pb2.MatchField.LPM if name.endswith(".routes")
                            else p4info_pb2.MatchField.EXACT)
    return P4InfoHelper(info)


class PbConn:
    """A switch holding TableEntry messages; ``fail`` makes reads raise."""

    def __init__(self, info: P4InfoHelper) -> None:
        self.p4info = info
        self.entries: list[Any] = []
        self.fail: Optional[BaseException] = None

    def table_entry(self, table: str, match: Any = None, action: Optional[str] = None,
                    params: Any = None) -> Any:
        return ent.table_entry(self.p4info, table, match, action, params)

    def _same(self, a: Any, b: Any) -> bool:
        return a.table_id == b.table_id and list(a.match) == list(b.match)

    def insert(self, te: Any) -> None:
        if any(self._same(e, te) for e in self.entries):     # what a switch answers
            raise WriteError("Write failed", [UpdateError(0, "ALREADY_EXISTS", "entry exists")])
        self.entries.append(te)

    def modify(self, te: Any) -> None:
        self.delete(te)
        self.entries.append(te)

    def delete(self, te: Any) -> None:
        self.entries = [e for e in self.entries if not self._same(e, te)]

    def read_table(self, table: str) -> list[Any]:
        if self.fail is not None:
            raise self.fail
        tid = self.p4info.table_id(table)
        return [e for e in self.entries if e.table_id == tid]

    def count(self, table: str) -> int:
        return len(self.read_table(table))


def new_gor(fab: Fabric, prog: FakeProgrammer) -> tuple[GorLoop, io.StringIO]:
    buf = io.StringIO()
    return GorLoop(fab, prog, None, LoopSettings(window_s=0.05, one_in_n=100, cooldown_s=10.0),
                   log=DecisionLog(buf)), buf


def predecessor_state(fab: Fabric, prog: FakeProgrammer, loop: GorLoop) -> dict[str, FlowKey]:
    """What a previous GOR left: one consistent override, three stale ones, sampling entries."""
    c0, c1 = prog.connections[L0], prog.connections[L1]
    good = flows_through(loop, "s0")[0]                    # pinned to s1 by the predecessor
    stranger = FlowKey("10.9.9.9", "10.1.0.1", 17, 50000, 4791)
    partial = flows_through(loop, "s0")[0]._replace(sport=good.sport + 1)
    c0.insert(c0.table_entry(T_OVERRIDE, override_match(good), "FabricIngress.override.set_nexthop",
                             {"nexthop_id": port_to(fab, L0, "s1")}))
    c0.insert(c0.table_entry(T_OVERRIDE, override_match(stranger), "FabricIngress.override.set_nexthop",
                             {"nexthop_id": port_to(fab, L0, "s2")}))
    c1.insert(c1.table_entry(T_OVERRIDE, override_match(partial), "FabricIngress.override.set_nexthop",
                             {"nexthop_id": 1}))        # an entry on the wrong leaf
    for port, action in ((port_to(fab, L0, "s0"), "FabricIngress.sampling.sample"),
                         (port_to(fab, L0, "s1"), "FabricIngress.sampling.sample"),
                         (1, "FabricIngress.sampling.sample"),           # a host port
                         (port_to(fab, L0, "s2"), "FabricIngress.sampling.sample_to_cpu")):
        c0.insert(c0.table_entry(T_SAMPLING, {"standard_metadata.egress_spec": port}, action,
                                 {"one_in_n": 50}))
    return {"good": good, "stranger": stranger, "partial": partial}


def test_restarted_gor_adopts_what_is_consistent_and_deletes_the_rest() -> None:
    fab = fabric()
    prog = FakeProgrammer(fab)
    info = p4info()
    prog.connections = {sw.name: PbConn(info) for sw in fab.switches}   # type: ignore[assignment]
    loop, buf = new_gor(fab, prog)
    flows = predecessor_state(fab, prog, loop)
    prog.connections["s2"].fail = TimeoutError("deadline exceeded")
    report = loop.reconcile(t_s=0.0)
    assert (report.adopted_overrides, report.deleted_overrides) == (1, 2)
    assert (report.adopted_sampling, report.deleted_sampling) == (2, 2)
    assert report.failed_switches == ["s2"] and loop.errors
    assert loop.overrides[flows["good"]].spine == "s1"
    assert flows["good"] in loop.book.moved                                   # left alone like a move
    c0, c1 = prog.connections[L0], prog.connections[L1]
    assert c0.count(T_OVERRIDE) == 1 and c1.count(T_OVERRIDE) == 0
    up0, up1 = port_to(fab, L0, "s0"), port_to(fab, L0, "s1")
    assert loop.sampling == {(L0, up0): 50, (L0, up1): 50}
    (rec,) = [e for e in events(buf) if e["event"] == "reconciled"]
    assert rec["adopted_overrides"] == 1 and rec["failed"] == ["s2"]
    assert {o["flow"]: o["adopted"] for o in rec["overrides"]} == {
        str(flows["good"]): True, str(flows["stranger"]): False, str(flows["partial"]): False}
    # the link L0->s0 has an alarm: its adopted sampling stays; L0->s1 has none: it goes
    loop.tick(0.5, samples(fab, marks=100))
    loop.tick(1.5, samples(fab, marks=100))
    assert set(loop.sampling) >= {(L0, up0)} and (L0, up1) not in loop.sampling
    left = {int.from_bytes(e.match[0].exact.value, "big") for e in c0.read_table(T_SAMPLING)}
    assert left == {p for sw, p in loop.sampling if sw == L0} == {up0}
    # a second restart finds only what the first one adopted or wrote, and keeps it
    prog.connections["s2"].fail = None
    again, _ = new_gor(fab, prog)
    r2 = again.reconcile(t_s=2.0)
    assert r2.deleted_overrides == 0 and r2.adopted_overrides == 1


def test_override_through_a_link_that_is_down_is_deleted() -> None:
    fab = fabric()
    prog = FakeProgrammer(fab)
    info = p4info()
    prog.connections = {sw.name: PbConn(info) for sw in fab.switches}   # type: ignore[assignment]
    loop, buf = new_gor(fab, prog)
    flows = predecessor_state(fab, prog, loop)
    loop.links.link_down(L0, port_to(fab, L0, "s1"))                     # the pinned path is gone
    report = loop.reconcile(t_s=0.0)
    assert report.adopted_overrides == 0 and flows["good"] not in loop.overrides
    assert prog.connections[L0].count(T_OVERRIDE) == 0
    assert (L0, port_to(fab, L0, "s1")) not in loop.sampling            # sampling on a down link: deleted
