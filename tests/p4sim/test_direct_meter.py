"""A direct meter read by an action declared before its table (the usual order in P4
programs) must report the colour of the entry that was hit."""
from __future__ import annotations

from pathlib import Path

from p4sim.engine import load_program
from p4sim.runtime.meters import MeterConfig
from p4sim.runtime.tables import ActionCall, Exact
from p4sim.v1model.switch import V1ModelSwitch

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> color; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_meter<bit<8>>(MeterType.packets) dm;
    action fwd(bit<9> port) { sm.egress_spec = port; dm.read(hdr.h.color); }
    table t { key = { hdr.h.k : exact; } actions = { fwd; } meters = dm; }
    apply { t.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_direct_meter_colour_reaches_action(tmp_path: Path) -> None:
    src = tmp_path / "dm.p4"
    src.write_text(PROGRAM)
    prog = load_program(str(src))
    entry = prog.state.tables["I.t"].add_entry([Exact(1)], ActionCall("I.fwd", (1,)))
    # one packet of committed and peak burst, refilled at 1 packet/s: at a frozen clock
    # the first packet is GREEN (0), the second RED (2)
    entry.meter.set_config(MeterConfig(cir=1, cburst=1, pir=1, pburst=1))
    switch = V1ModelSwitch(prog, clock=lambda: 1_000_000)
    colours = [switch.process_packet(0, bytes([1, 0xFF]))[0][1][1] for _ in range(2)]
    assert colours == [0, 2]
