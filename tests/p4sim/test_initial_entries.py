"""Initial entries: `const entries` are read-only for the control plane, entries of a
plain `entries` property are not (P4_16 1.2.x / P4Runtime)."""
from __future__ import annotations

import pytest

from p4sim.engine import load_program_text
from p4sim.runtime.errors import RuntimeStateError
from p4sim.runtime.tables import Exact

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table fixed { key = { hdr.h.k : exact; } actions = { fwd; } const entries = { 1 : fwd(1); } }
    table initial { key = { hdr.h.k : exact; } actions = { fwd; } entries = { 1 : fwd(1); } }
    apply { fixed.apply(); initial.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_const_entries_are_read_only_and_plain_entries_are_not() -> None:
    prog = load_program_text(PROGRAM, "entries.p4")
    fixed, initial = prog.state.tables["I.fixed"], prog.state.tables["I.initial"]
    with pytest.raises(RuntimeStateError) as err:
        fixed.delete_entry([Exact(1)])
    assert err.value.code == "PERMISSION_DENIED"
    assert [e.is_const for e in initial.entries()] == [False]
    initial.delete_entry([Exact(1)])
    assert len(initial) == 0
