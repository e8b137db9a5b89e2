"""A table key that is a field of an invalid header matches as 0 on BMv2, though the
header's PHV keeps the previous packet's field (issue 35 class 14): BMv2's MatchKeyBuilder
(src/bm_sim/match_units.cpp) appends zeros for a field of an invalid header. p4c-bm2-ss
writes ``h.f`` and ``h.f & MASK`` as the field itself; a slice ``h.f[3:0]`` goes through a
temporary computed first, so it sees the previous packet's value.

Found by the differential fuzz of issue 35 (tests/p4sim/corpus/difffuzz_bmv2.py) on
nsg-ethz/p4-learning's L2 exercises: a 3-byte frame (no Ethernet header) went to port 1
on p4sim, matching the previous frame's destination MAC, and to port 0 on BMv2 (a miss).
Expected ports measured on simple_switch 1.15.5 (p4c-bm2-ss 1.2.5.16, 6b7ec98e),
2026-12-06, one packet at a time through its packet-in socket.
"""
from __future__ import annotations

from p4sim.engine import load_program_text
from p4sim.runtime import tables as T
from p4sim.runtime.tables import ActionCall
from p4sim.v1model.switch import V1ModelSwitch

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> f; bit<8> g; bit<8> k; }
struct meta_t { }
struct headers_t { h_t h; }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> p) { sm.egress_spec = p; }
    action add(bit<9> d) { sm.egress_spec = sm.egress_spec + d; }
    table t { key = { hdr.h.f: exact; } actions = { fwd; NoAction; } default_action = NoAction(); }
    table m { key = { hdr.h.g & 0x0f: exact; hdr.h.k[3:0]: ternary; } actions = { add; NoAction; }
              default_action = NoAction(); }
    apply { t.apply(); m.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_key_of_invalid_header_is_zero_but_a_slice_key_is_stale() -> None:
    """simple_switch_CLI: ``table_add t fwd 5 => 3``, ``table_add t fwd 0 => 4``,
    ``table_add m add 0x05 0x06&&&0x0f => 1 10``, ``table_add m add 0 0&&&0x0f => 2 10``;
    frames in this order, each on port 1. BMv2: 3, 6, 1, 4, 4."""
    prog = load_program_text(PROGRAM, "key_invalid.p4")
    t, m = prog.state.tables["I.t"], prog.state.tables["I.m"]
    t.add_entry([T.Exact(5)], ActionCall("I.fwd", [3]))
    t.add_entry([T.Exact(0)], ActionCall("I.fwd", [4]))
    m.add_entry([T.Exact(5), T.Ternary(6, 0xF)], ActionCall("I.add", [1]), priority=1)
    m.add_entry([T.Exact(0), T.Ternary(0, 0xF)], ActionCall("I.add", [2]), priority=1)
    sw = V1ModelSwitch(prog)
    frames = [bytes([5, 0x35, 0x70]), bytes([5]), bytes([9, 0x35, 0x76]), bytes([7, 7]),
              bytes([5, 0x35, 0x76])]
    # 2nd: t misses the stale f=5, hits key 0 (port 4); m's g is 0, its slice the stale 0 (+2)
    # 4th: t key 0 (4); m's slice is the stale 6, g is 0: no entry (4)
    assert [sw.process_packet(1, f) for f in frames] == [[(p, f)] for p, f in zip((3, 6, 1, 4, 4), frames)]
