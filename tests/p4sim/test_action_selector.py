"""Action selector tables: the member is chosen by BMv2's hash of the selector fields,
and fields of an invalid header are left out of that hash (not zero-filled)."""
from __future__ import annotations

from pathlib import Path

import pytest

from p4sim.engine import load_program
from p4sim.runtime.hashes import crc16, pack_fields
from p4sim.runtime.tables import ActionCall, Exact, GroupRef
from p4sim.v1model.switch import V1ModelSwitch

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> a; bit<8> has_opt; }
header opt_t { bit<16> b; }
struct headers_t { h_t h; opt_t opt; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.has_opt) { 1: parse_opt; default: accept; }
    }
    state parse_opt { pkt.extract(hdr.opt); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc16, 32w16, 32w16) sel;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.k : exact; hdr.h.a : selector; hdr.opt.b : selector; }
        actions = { fwd; }
        implementation = sel;
    }
    apply { t.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.opt); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

PORTS = (10, 11, 12, 13, 14)


@pytest.fixture()
def switch(tmp_path: Path) -> V1ModelSwitch:
    src = tmp_path / "sel.p4"
    src.write_text(PROGRAM)
    prog = load_program(str(src))
    sel = prog.state.action_profiles["I.sel"]
    for mid, port in enumerate(PORTS):
        sel.insert_member(mid, ActionCall("I.fwd", (port,)))
    sel.insert_group(1, list(range(len(PORTS))))
    prog.state.tables["I.t"].add_entry([Exact(7)], GroupRef(1))
    return V1ModelSwitch(prog)


@pytest.mark.parametrize("a", [0, 1, 2, 3, 40, 255])
def test_invalid_header_fields_are_left_out_of_the_selector_hash(switch: V1ModelSwitch, a: int) -> None:
    out = switch.process_packet(0, bytes([7, a, 0]))
    expected = PORTS[crc16(pack_fields([(a, 8)])) % len(PORTS)]
    assert out[0][0] == expected


@pytest.mark.parametrize("a,b", [(0, 0), (1, 0x1234), (200, 0xFFFF)])
def test_valid_header_fields_are_hashed(switch: V1ModelSwitch, a: int, b: int) -> None:
    out = switch.process_packet(0, bytes([7, a, 1]) + b.to_bytes(2, "big"))
    expected = PORTS[crc16(pack_fields([(a, 8), (b, 16)])) % len(PORTS)]
    assert out[0][0] == expected
