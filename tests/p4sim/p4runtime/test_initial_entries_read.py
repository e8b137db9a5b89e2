"""Reading a non-const table that holds the program's initial ``entries``: simple_switch_grpc
(PI) answers INTERNAL "Table state out-of-sync with target", since BMv2 loaded those entries
from the JSON and PI's own store never saw them (PI proto/frontend/src/device_mgr.cpp).
Measured on simple_switch_grpc 1.15.5 (PI f96af95) by jafingerhut/p4-guide's own PTF test
initial-table-entries/dump_t1_entries.py (23854a7f), run by
tests/p4sim/corpus/repo_tests_bmv2.py (issue 35): it fails there and passed on p4sim.
``--p4runtime-extras`` keeps p4sim's reading of them.
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
header h_t { bit<8> f; }
struct meta_t { }
struct headers_t { h_t h; }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> p) { sm.egress_spec = p; }
    table t1 { key = { hdr.h.f: exact; } actions = { fwd; NoAction; }
               entries = { 1 : fwd(2); } default_action = NoAction(); }
    table t2 { key = { hdr.h.f: exact; } actions = { fwd; NoAction; } default_action = NoAction(); }
    apply { t1.apply(); t2.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _store(extras: bool) -> tuple[EntityStore, dict[str, int]]:
    prog = load_program_text(PROGRAM, "initial_entries_read.p4")
    info = build_p4info(prog)
    ids = {t.preamble.alias: t.preamble.id for t in info.tables}
    return EntityStore(prog, info, extras=extras), ids


@pytest.mark.parametrize("table_id", ["t1", 0])
def test_read_of_initial_entries_is_internal_as_on_pi(table_id: object) -> None:
    store, ids = _store(extras=False)
    tid = ids[table_id] if isinstance(table_id, str) else 0
    with pytest.raises(RuntimeStateError) as ei:
        list(store.read(pb.Entity(table_entry=pb.TableEntry(table_id=tid))))
    assert (ei.value.code, ei.value.message) == ("INTERNAL", "Table state out-of-sync with target")


def test_other_tables_and_extras_read() -> None:
    store, ids = _store(extras=False)
    assert list(store.read(pb.Entity(table_entry=pb.TableEntry(table_id=ids["t2"])))) == []
    store, ids = _store(extras=True)
    [e] = list(store.read(pb.Entity(table_entry=pb.TableEntry(table_id=ids["t1"]))))
    assert e.table_entry.match[0].exact.value == b"\x01"


def test_time_since_last_hit_in_a_write_is_pis_error_even_for_the_default_entry() -> None:
    """PI checks ``time_since_last_hit`` before anything else of a table write; measured on
    simple_switch_grpc 1.15.5 by p4-guide's ptf-tests/idletimeout (its MODIFY of the default
    entry with ``time_since_last_hit`` set asserts this text, and passes on BMv2)."""
    store, ids = _store(extras=False)
    for te in (pb.TableEntry(table_id=ids["t2"], is_default_action=True),
               pb.TableEntry(table_id=ids["t2"])):
        te.time_since_last_hit.elapsed_ns = 1000000
        for utype in (pb.Update.MODIFY, pb.Update.INSERT):
            with pytest.raises(RuntimeStateError) as ei:
                store.write(pb.Update(type=utype, entity=pb.Entity(table_entry=te)))
            assert (ei.value.code, ei.value.message) == (
                "INVALID_ARGUMENT", "has_time_since_last_hit must not be set in WriteRequest")
