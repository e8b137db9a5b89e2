"""NativeSwitch's table copy into C (``_sync``), incremental from each table's change log,
against a whole copy and against the Python engine: after every batch of inserts, and after
deletes, modifies, re-inserts into freed handles and default-action changes, every probe
packet leaves the same way from a NativeSwitch that has synced batch by batch, from a fresh
NativeSwitch of the same state (which copies each table whole), and from V1ModelSwitch.
(tests/p4sim/native/test_native_table_bulk.py compares state and hits as well.)"""
from __future__ import annotations

import random

import pytest

from p4sim.engine.program import load_program_text
from p4sim.native import compiler_status
from p4sim.native.switch import NativeSwitch
from p4sim.runtime.tables import ActionCall, Exact, Lpm, Ternary
from p4sim.v1model.switch import V1ModelSwitch
from v1model_text import v1model_program

pytestmark = pytest.mark.skipif(not compiler_status()[0], reason="no C compiler")

PROGRAM = v1model_program(r"""
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action tag(bit<16> t) { hdr.eth.etype = t; }
    table dmac { key = { hdr.eth.dst: exact; } actions = { fwd; drop; } default_action = drop(); size = 4096; }
    table smac { key = { hdr.eth.src: lpm; } actions = { tag; NoAction; } default_action = NoAction(); }
    table acl { key = { hdr.eth.etype: ternary; } actions = { drop; NoAction; } default_action = NoAction(); }
    apply { dmac.apply(); smac.apply(); acl.apply(); }
}
""", meta="", control="I")


def _frame(dst: int, src: int, etype: int) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + etype.to_bytes(2, "big") + b"payload!" * 4


def test_inserts_only_sync_matches_full_copy_and_python() -> None:
    prog = load_program_text(PROGRAM, "sync.p4")
    native = NativeSwitch(prog)
    tables = prog.state.tables
    dmac, smac, acl = tables["I.dmac"], tables["I.smac"], tables["I.acl"]
    r = random.Random(5)
    keys: list[int] = []
    probes = [(r.randrange(400), r.getrandbits(48), r.choice((0x0800, 0x86DD, 0x88B5))) for _ in range(60)]

    def check() -> None:
        native._sync()
        fresh, py = NativeSwitch(prog), V1ModelSwitch(prog)
        every_key = [(k, (k * 0x9E3779B1) & (1 << 48) - 1, 0x0800) for k in keys]
        for k, src, etype in probes + every_key:
            frame = _frame(0x0A0000000000 + k, src, etype)
            got = native.process_packet(1, frame)
            assert got == fresh.process_packet(1, frame) == py.process_packet(1, frame), (k, src, etype)

    def insert(n: int) -> None:
        for _ in range(n):
            k = r.randrange(400)
            if k not in keys:
                dmac.add_entry([Exact(0x0A0000000000 + k)], ActionCall("I.fwd", (1 + k % 7,)))
                keys.append(k)
        plen = r.choice((8, 16, 24))
        v = r.getrandbits(48) & ~((1 << (48 - plen)) - 1)
        if smac.get_entry([Lpm(v, plen)]) is None:
            smac.add_entry([Lpm(v, plen)], ActionCall("I.tag", (r.getrandbits(16),)))

    for _ in range(6):                      # batches of inserts only: the appending copy
        insert(25)
        check()
    assert native._entries[native._tables.index(dmac)] == list(dmac._entries.values())
    for k in keys[:10]:                     # deletes, then inserts into the freed handles
        dmac.delete_entry([Exact(0x0A0000000000 + k)])
    del keys[:10]
    check()
    insert(20)
    check()
    dmac.modify_entry([Exact(0x0A0000000000 + keys[0])], ActionCall("I.drop", ()))
    insert(5)                               # a modify and inserts in one copy: the full one
    check()
    dmac.set_default_action(ActionCall("I.fwd", (9,)))
    insert(5)
    check()
    acl.add_entry([Ternary(0x0800, 0xFF00)], ActionCall("I.drop", ()), priority=1)
    insert(10)
    check()


def test_shared_action_calls_are_encoded_once_and_told_apart() -> None:
    """Entries that share ActionCall objects (as the P4Runtime plans make them) are copied
    with the call's cached words; a cached id whose call is another object (an id reused
    after the first call was freed) is encoded again, not taken from the cache."""
    prog = load_program_text(PROGRAM, "sync.p4")
    native = NativeSwitch(prog)
    py = V1ModelSwitch(prog)
    dmac = prog.state.tables["I.dmac"]
    calls = [ActionCall("I.fwd", (p,)) for p in (1, 2, 3)]
    for k in range(30):
        dmac.add_entry([Exact(0x0A0000000000 + k)], calls[k % 3])
    native._sync()
    assert {id(c) for c in calls} <= set(native._call_words)
    late = ActionCall("I.fwd", (5,))
    native._call_words[id(late)] = (calls[0], native._call_words[id(calls[0])][1])   # stale: calls[0]'s words
    dmac.add_entry([Exact(0x0A0000000000 + 99)], late)
    native._sync()
    assert native._call_words[id(late)][0] is late
    for k in list(range(30)) + [99]:
        frame = _frame(0x0A0000000000 + k, 1, 0x0800)
        assert native.process_packet(1, frame) == py.process_packet(1, frame), k
    assert native.process_packet(1, _frame(0x0A0000000000 + 99, 1, 0x0800)) != \
        native.process_packet(1, _frame(0x0A0000000000 + 0, 1, 0x0800))
