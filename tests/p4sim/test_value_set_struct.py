"""A parser value set of a struct type, matched by a select with one key per field.

p4c-bm2-ss declares such a ``value_set<S>`` as one parse value set of the struct's width
(``backends/bmv2/common/parser.cpp``, ``addValueSets``) and keys it with the select's
fields concatenated; p4sim does the same, so a member is the fields' values packed in
declaration order. Members are set here directly on the runtime value set (the control
plane cannot write value sets yet: see p4sim/README.md).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from p4sim.engine import load_program, load_program_text
from p4sim.errors import P4Error
from p4sim.v1model.switch import V1ModelSwitch

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; bit<8> hit; }
struct headers_t { h_t h; }
struct meta_t { }
struct pair_t { bit<8> a; bit<16> b; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<pair_t>(4) pvs;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a, hdr.h.b) { pvs: mark; default: accept; }
    }
    state mark { hdr.h.hit = 1; transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture(scope="module")
def switch(tmp_path_factory: pytest.TempPathFactory) -> V1ModelSwitch:
    src: Path = tmp_path_factory.mktemp("vs_struct") / "p.p4"
    src.write_text(PROGRAM)
    return V1ModelSwitch(load_program(str(src)))


def hit(switch: V1ModelSwitch, a: int, b: int) -> int:
    out = switch.process_packet(0, bytes([a]) + b.to_bytes(2, "big") + bytes([0]))
    assert len(out) == 1
    return out[0][1][3]


def test_struct_value_set_has_the_struct_width_and_matches_packed_fields(switch: V1ModelSwitch) -> None:
    (vs,) = switch.program.state.value_sets.values()
    assert vs.width == 24
    assert hit(switch, 0x12, 0x3456) == 0                 # empty set: default
    vs.set_members([(0x123456, 0xFFFFFF), (0xAB0000, 0xFF0000)])
    assert hit(switch, 0x12, 0x3456) == 1                 # exact member
    assert hit(switch, 0x12, 0x3457) == 0
    assert hit(switch, 0xAB, 0x9999) == 1                 # a masked member: a only


def test_struct_value_set_needs_one_key_per_field() -> None:
    text = PROGRAM.replace("select(hdr.h.a, hdr.h.b)", "select(hdr.h.a)")
    with pytest.raises(P4Error, match="value_set of pair_t has 2 fields, the select has 1 keys"):
        load_program_text(text, "vs.p4")
