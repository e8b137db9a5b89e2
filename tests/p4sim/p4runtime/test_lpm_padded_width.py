"""An LPM key that is not a whole number of bytes: PI's trailing-zeros rule (issue 35).

PI (the P4Runtime server of simple_switch_grpc) checks an LPM value's host bits on the
key's whole bytes (p4lang/PI proto/frontend/src/common.cpp
``check_prefix_trailing_zeros``, the value padded to ``ceil(width / 8)`` bytes), so a
20-bit key at /20 must leave its last 4 bits zero. Measured on simple_switch_grpc 1.15.5
(PI f96af95): p4-guide's lpmwidth20bits PTF suite gets "Invalid LPM value, incorrect
number of trailing zeros" for such entries, which p4sim had accepted — more permissive
than BMv2. The prefix is counted from the top of the padded bytes: on a 20-bit key a /12
must leave the last 12 bits zero, not 8. Both p4sim write paths (the per-table plan and the checked one) must refuse.
"""
from __future__ import annotations

import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info
from p4sim.p4runtime.entities import EntityStore
from p4sim.runtime.errors import RuntimeStateError

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<20> k; bit<4> pad; }
struct headers { h_t h; }
struct meta { }
parser P(packet_in pkt, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta m) { apply { } }
control Ing(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table lpm20 { key = { hdr.h.k: lpm; } actions = { fwd; NoAction; } default_action = NoAction(); }
    apply { lpm20.apply(); }
}
control E(inout headers hdr, inout meta m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), E(), CC(), D()) main;
"""


def _entry(info: object, value: int, plen: int) -> pb.TableEntry:
    table = info.tables[0]                                            # type: ignore[attr-defined]
    fwd = next(a for a in info.actions if a.preamble.name.endswith("fwd"))  # type: ignore[attr-defined]
    te = pb.TableEntry(table_id=table.preamble.id)
    fm = te.match.add(field_id=table.match_fields[0].id)
    fm.lpm.value, fm.lpm.prefix_len = value.to_bytes(3, "big"), plen
    act = te.action.action
    act.action_id = fwd.preamble.id
    act.params.add(param_id=1, value=b"\x01")
    return te


@pytest.mark.parametrize("fast", [True, False], ids=["plan", "checked"])
@pytest.mark.parametrize("value,plen,accepted", [
    (0xABCD0, 20, True),      # last 4 bits zero: PI accepts
    (0xABCDE, 20, False),     # within the 20-bit width, but PI's padded check refuses
    (0xAB000, 12, True),      # /12 counted on 24 bits: the last 12 bits zero
    (0xABC00, 12, False),     # zero below /12 of 20 bits, not below /12 of 24
    (0xAB001, 12, False),     # a host bit by either count
    (0xA0000, 8, True),
    (0xAB000, 8, False),
])
def test_lpm_host_bits_counted_on_whole_bytes(fast: bool, value: int, plen: int, accepted: bool) -> None:
    prog = load_program_text(PROGRAM, "lpm20.p4")
    info = build_p4info(prog)
    store = EntityStore(prog, info, fast=fast)
    update = pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=_entry(info, value, plen)))
    if accepted:
        store.write(update)
        assert len(list(store.read(pb.Entity(table_entry=pb.TableEntry(table_id=info.tables[0].preamble.id))))) == 1
        return
    with pytest.raises(RuntimeStateError) as ei:
        store.write(update)
    assert ei.value.code == "INVALID_ARGUMENT"
    assert list(store.read(pb.Entity(table_entry=pb.TableEntry(table_id=info.tables[0].preamble.id)))) == []
