"""``@field_list`` as simple_switch runs it: list 0 is a list like any other, and a field
of a nested struct of the user metadata is in a list by its own annotation or by that of a
struct field above it (p4c-bm2-ss flattens the metadata, each leaf carrying its parents'
annotations, and takes a leaf's first ``@field_list``: midend/flattenInterfaceStructs.h,
backends/bmv2/simple_switch/simpleSwitch.cpp).

Found by the differential fuzz of issue 35 (tests/p4sim/corpus/difffuzz_bmv2.py) on
nsg-ethz/p4-learning's examples/resubmit_recirculate, whose ``resubmit_meta_t`` holds
``@field_list(0) bit<8> i``: p4sim dropped every packet after 4096 passes, BMv2 forwards
after ``tos`` passes. Expected bytes measured on simple_switch 1.15.5 (p4c-bm2-ss 1.2.5.16,
6b7ec98e), 2026-12-06, one packet at a time through its packet-in socket.
"""
from __future__ import annotations

from p4sim.engine import load_program_text
from p4sim.v1model.switch import V1ModelSwitch

HEAD = """
#include <core.p4>
#include <v1model.p4>
"""
TAIL = """
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

RESUBMIT = HEAD + """
header h_t { bit<8> count; bit<8> passes; bit<8> parent; }
struct counts_t { @field_list(0) bit<8> i; bit<8> lost; }
struct outer_t { counts_t c; }
struct meta_t { outer_t o; @field_list(0) counts_t p; }
struct headers_t { h_t h; }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (meta.o.c.i < hdr.h.count) {
            meta.o.c.i = meta.o.c.i + 1;
            meta.o.c.lost = meta.o.c.lost + 1;
            meta.p.lost = meta.p.lost + 1;
            resubmit_preserving_field_list(0);
        }
        hdr.h.passes = meta.o.c.i;
        hdr.h.parent = meta.o.c.lost + meta.p.lost;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
""" + TAIL

CLONE = HEAD + """
header h_t { bit<8> keep; bit<8> other; }
struct meta_t { @field_list(0) bit<8> keep; bit<8> other; }
struct headers_t { h_t h; }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        meta.keep = 7;
        meta.other = 9;
        clone_preserving_field_list(CloneType.I2E, 5, 0);
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.h.keep = meta.keep; hdr.h.other = meta.other; }
}
""" + TAIL


def test_resubmit_keeps_nested_and_parent_annotated_fields_of_list_0() -> None:
    """``meta.o.c.i`` (own annotation) and ``meta.p.*`` (the parent field's) survive each
    resubmit; ``meta.o.c.lost`` does not. BMv2: 05 00 00 -> port 2, 05 05 05."""
    sw = V1ModelSwitch(load_program_text(RESUBMIT, "field_lists.p4"))
    assert sw.process_packet(1, bytes([5, 0, 0])) == [(2, bytes([5, 5, 5]))]
    assert sw.process_packet(1, bytes([0, 9, 9])) == [(2, bytes([0, 0, 0]))]
    assert sw.process_packet(1, bytes([200, 0, 0])) == [(2, bytes([200, 200, 200]))]


def test_clone_keeps_field_list_0() -> None:
    """I2E clone to session 5 (port 3) with list 0: the clone keeps ``keep``, not
    ``other``. BMv2: port 2 07 09, port 3 07 00."""
    prog = load_program_text(CLONE, "field_lists.p4")
    prog.state.pre.mirroring_add(5, 3)
    sw = V1ModelSwitch(prog)
    assert sorted(sw.process_packet(1, bytes([1, 1]))) == [(2, bytes([7, 9])), (3, bytes([7, 0]))]
