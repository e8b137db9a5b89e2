"""Initial entries: `const entries` are read-only; entries of a plain `entries` property
are not in P4_16, but BMv2 makes them immutable too, so p4sim's P4Runtime server (unless
`--p4runtime-extras`) and STF runner refuse writes to them; the in-process API does not."""
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


def _p4rt(prog, extras: bool):  # type: ignore[no-untyped-def]
    from p4.v1 import p4runtime_pb2 as pb

    from p4sim.p4info import build_p4info
    from p4sim.p4runtime.entities import EntityStore

    info = build_p4info(prog)
    ids = {o.preamble.alias: o.preamble.id for kind in ("tables", "actions", "match_fields")
           for o in getattr(info, kind, [])}
    store = EntityStore(prog, info, extras=extras)

    def write(utype: int, key: int, port: int = 2) -> None:
        te = pb.TableEntry(table_id=ids["initial"])
        te.match.add(field_id=1).exact.value = bytes([key])
        te.action.action.action_id = ids["fwd"]
        te.action.action.params.add(param_id=1, value=bytes([0, port]))
        store.write(pb.Update(type=utype, entity=pb.Entity(table_entry=te)))
    return pb, write


def test_bmv2_makes_a_table_with_initial_entries_immutable_over_p4runtime() -> None:
    """BMv2 marks every table with initial entries immutable, `const` or not
    (IMMUTABLE_TABLE_ENTRIES): over P4Runtime an INSERT fails UNKNOWN and a MODIFY or
    DELETE NOT_FOUND (PI never saw the entries), as for `const entries`; the table is
    unchanged. `--p4runtime-extras` gives P4_16's rule (the entries are ordinary)."""
    prog = load_program_text(PROGRAM, "entries.p4")
    initial = prog.state.tables["I.initial"]
    pb, write = _p4rt(prog, extras=False)
    for utype, key, code in ((pb.Update.INSERT, 2, "UNKNOWN"), (pb.Update.MODIFY, 1, "NOT_FOUND"),
                             (pb.Update.DELETE, 1, "NOT_FOUND")):
        with pytest.raises(RuntimeStateError) as err:
            write(utype, key)
        assert err.value.code == code and "--p4runtime-extras" in err.value.message
    assert [(e.matches, e.action.args) for e in initial.entries()] == [((Exact(1),), (1,))]

    prog = load_program_text(PROGRAM, "entries.p4")
    pb, write = _p4rt(prog, extras=True)
    write(pb.Update.INSERT, 2)
    write(pb.Update.DELETE, 1)
    assert [e.matches for e in prog.state.tables["I.initial"].entries()] == [(Exact(2),)]


def test_stf_add_to_a_table_with_initial_entries_fails_as_on_bmv2() -> None:
    from p4sim.stf import run_stf_text

    prog = load_program_text(PROGRAM, "entries.p4")
    res = run_stf_text(prog, "add I.initial hdr.h.k:2 I.fwd(port:2)\n"
                             "packet 0 01\nexpect 1 01\n", "immutable.stf")
    assert not res.passed
    assert "IMMUTABLE_TABLE_ENTRIES" in res.failures[0] and "immutable.stf:1" in res.failures[0]
