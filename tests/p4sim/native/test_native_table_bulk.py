"""NativeSwitch's incremental table copy (``p4n_table_del`` / ``p4n_table_put`` from each
table's change log) against the Python engine: the same random batches of inserts,
deletes, modifies, deletes put back with their handle (a rolled-back write), default-action
changes and clears go into two loads of one program, one run by V1ModelSwitch and one by
NativeSwitch; after every batch the same probe packets (every key in use, keys just
deleted, random ones) must leave both the same way and leave the same state (direct
counters, ``last_hit_ns``, registers). Exact tables of one and of two keys (C's hash index
with deletions), an LPM table, a ternary+range table; one batch changes more than a
table's change log keeps, so the whole-table copy is checked as well."""
from __future__ import annotations

import random
from typing import Any

import pytest

from native_equiv import StepClock, diff_snapshots, state_snapshot
from p4sim.engine.program import load_program_text
from p4sim.native import compiler_status
from p4sim.native.switch import NativeSwitch
from p4sim.p4runtime.entities_restore import restore_table_entry
from p4sim.runtime import tables as runtime_tables
from p4sim.runtime.tables import ActionCall, Exact, Lpm, Range, Ternary
from p4sim.v1model.switch import V1ModelSwitch
from v1model_text import v1model_program

pytestmark = pytest.mark.skipif(not compiler_status()[0], reason="no C compiler")

PROGRAM = v1model_program(r"""
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) dmac_hits;
    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action fwd_c(bit<9> port) { sm.egress_spec = port; }
    action tag(bit<16> t) { hdr.eth.etype = hdr.eth.etype ^ t; }
    action tag2(bit<16> t) { hdr.eth.src = hdr.eth.src ^ (bit<48>)t; }
    table dmac { key = { hdr.eth.dst: exact; } actions = { fwd; drop; }
                 default_action = drop(); size = 8192; }
    table counted { key = { hdr.eth.dst: exact; } actions = { fwd_c; NoAction; }
                    default_action = NoAction(); counters = dmac_hits; size = 1024; }
    table pair { key = { hdr.eth.src: exact; hdr.eth.etype: exact; } actions = { tag; NoAction; }
                 default_action = NoAction(); size = 4096; }
    table smac { key = { hdr.eth.src: lpm; } actions = { tag2; NoAction; } default_action = NoAction(); size = 4096; }
    table acl { key = { hdr.eth.etype: ternary; hdr.eth.dst: range; } actions = { drop; tag; NoAction; }
                default_action = NoAction(); size = 4096; }
    apply { dmac.apply(); counted.apply(); pair.apply(); smac.apply(); acl.apply(); }
}
""", meta="bit<16> tag;", control="I")
BASE = 0x0A0000000000
KEYS = 1500


def _frame(dst: int, src: int, etype: int) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + etype.to_bytes(2, "big") + b"payload!" * 4


class Mirror:
    """Applies one operation to both programs' tables (the same call on each)."""

    def __init__(self, progs: list[Any]) -> None:
        self.progs = progs
        self.removed: dict[tuple[str, int], list[Any]] = {}

    def tables(self, name: str) -> list[Any]:
        return [p.state.tables[f"I.{name}"] for p in self.progs]

    def do(self, op: str, name: str, *args: Any, **kw: Any) -> None:
        got = [getattr(t, op)(*args, **kw) for t in self.tables(name)]
        if op == "delete_entry":
            self.removed[(name, got[0].handle)] = got

    def restore(self, name: str, handle: int) -> None:
        for t, e in zip(self.tables(name), self.removed.pop((name, handle))):
            restore_table_entry(t, e)


def _random_batch(r: random.Random, m: Mirror, live: dict[str, dict[Any, Any]], size: int,
                  deleted: list[int]) -> None:
    for _ in range(size):
        name = r.choice(("dmac", "dmac", "dmac", "counted", "pair", "smac", "acl"))
        keys = live[name]
        op = r.random()
        if op < 0.5 or not keys:                           # insert
            if name in ("dmac", "counted"):
                k = r.randrange(KEYS)
                match, prio = (Exact(BASE + k),), 0
                action = ActionCall("I.fwd" if name == "dmac" else "I.fwd_c", (1 + r.randrange(8),))
            elif name == "pair":
                k = (r.randrange(64), r.choice((0x0800, 0x86DD, 0x88B5)))
                match, prio = (Exact(k[0]), Exact(k[1])), 0
                action = ActionCall("I.tag", (r.getrandbits(16),))
            elif name == "smac":
                plen = r.choice((0, 8, 40, 44, 48))
                v = r.randrange(64) & ~((1 << (48 - plen)) - 1) if plen else 0
                k = (v, plen)
                match, prio = (Lpm(v, plen),), 0
                action = ActionCall("I.tag2", (r.getrandbits(16),))
            else:
                lo = BASE + r.randrange(KEYS)
                k = (r.choice((0x0800, 0x86DD)), r.choice((0xFFFF, 0xFF00, 0)), lo, lo + r.randrange(50),
                     r.randrange(1, 4))
                match, prio = (Ternary(k[0] & k[1], k[1]), Range(k[2], k[3])), k[4]
                action = r.choice((ActionCall("I.drop", ()), ActionCall("I.tag", (r.getrandbits(16),))))
            if k in keys:
                continue
            m.do("add_entry", name, list(match), action, prio)
            keys[k] = (match, prio)
            continue
        k = r.choice(list(keys))
        match, prio = keys[k]
        if op < 0.75:                                      # delete (sometimes put back)
            m.do("delete_entry", name, list(match), prio)
            del keys[k]
            if name == "dmac":
                deleted.append(k)
            if r.random() < 0.2:
                handle = next(h for (n, h) in m.removed if n == name)
                m.restore(name, handle)
                keys[k] = (match, prio)
            m.removed.clear()
        elif op < 0.95:                                    # modify
            action = {"dmac": ActionCall("I.drop", ()) if r.random() < 0.3 else ActionCall("I.fwd", (r.randrange(9),)),
                      "counted": ActionCall("NoAction", ()),
                      "pair": ActionCall("NoAction", ()),
                      "smac": ActionCall("I.tag2", (r.getrandbits(16),)),
                      "acl": ActionCall("I.tag", (r.getrandbits(16),))}[name]
            m.do("modify_entry", name, list(match), action, prio)
        elif r.random() < 0.5:
            m.do("set_default_action", "dmac", ActionCall("I.fwd", (r.randrange(9),)))
        else:
            m.do("reset_default_action", "dmac")


def test_incremental_native_tables_match_python_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_tables, "CHANGE_LOG_MIN", 512)     # batch 12 outruns the log
    py_prog, nat_prog = load_program_text(PROGRAM, "bulk.p4"), load_program_text(PROGRAM, "bulk.p4")
    py, nat = V1ModelSwitch(py_prog, clock=StepClock()), NativeSwitch(nat_prog, clock=StepClock())
    m = Mirror([py_prog, nat_prog])
    live: dict[str, dict[Any, Any]] = {n: {} for n in ("dmac", "counted", "pair", "smac", "acl")}
    r = random.Random(36)
    dmac = nat_prog.state.tables["I.dmac"]
    ti = nat._tables.index(dmac)
    full_copies = incremental = 0
    for batch in range(24):
        deleted: list[int] = []
        if batch == 12:   # more changes than the log keeps: the whole table is copied
            for k in range(KEYS):
                if k not in live["dmac"]:
                    m.do("add_entry", "dmac", [Exact(BASE + k)], ActionCall("I.fwd", (k % 9,)))
                    live["dmac"][k] = ((Exact(BASE + k),), 0)
            for k in list(live["dmac"])[: KEYS - 200]:
                m.do("delete_entry", "dmac", [Exact(BASE + k)])
                del live["dmac"][k]
                deleted.append(k)
            m.removed.clear()
        elif batch == 18:
            m.do("clear", "dmac")
            live["dmac"].clear()
        else:
            _random_batch(r, m, live, r.choice((1, 20, 100, 400)), deleted)
        if dmac.changes_since(nat._tver[ti]) is None:
            full_copies += 1
        else:
            incremental += 1
        probes = [(BASE + k, r.randrange(64), 0x0800) for k in list(live["dmac"]) + deleted]
        probes += [(BASE + k, src, et) for k, src, et in
                   ((r.randrange(KEYS), r.randrange(64), r.choice((0x0800, 0x86DD, 0x88B5))) for _ in range(80))]
        probes += [(BASE + k, 0, 0x0800) for k in list(live["counted"])]
        probes += [(BASE + r.randrange(KEYS), s, e) for s, e in list(live["pair"])]
        for dst, src, etype in probes:
            frame = _frame(dst, src, etype)
            assert py.process_packet(1, frame) == nat.process_packet(1, frame), (batch, hex(dst), src, etype)
        diffs = diff_snapshots(state_snapshot(py_prog), state_snapshot(nat_prog))
        assert not diffs, (batch, diffs)
        # the C side holds exactly the table's entries, each in the slot the Python side says
        held = [e for e in nat._entries[ti] if e is not None]
        assert sorted(e.handle for e in held) == sorted(dmac._entries)
        assert all(dmac._entries[e.handle] is e for e in held)
    assert full_copies >= 1 and incremental >= 15, (full_copies, incremental)
