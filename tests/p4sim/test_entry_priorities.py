"""Initial entries of a table that needs priorities: their order and the priority each
gets, as p4c-bm2-ss writes them into BMv2's JSON and BMv2's P4Runtime server reports them.

p4c's front end sorts out-of-order ``priority =`` lists (largest first; smallest first
with ``largest_priority_wins = false``); the BMv2 back end then writes each entry's
1-based position (or ``@priority(N)``) as its BMv2 priority, the smallest winning, and
PI reports ``2^31 - 1 - bmv2`` over P4Runtime. The orders below are those of the JSON
p4c-bm2-ss 1.2.5.16 wrote for the same tables.
"""
from __future__ import annotations

import pytest

from p4sim.engine import load_program_text
from p4sim.engine.entry_priorities import BM_MAX_PRIORITY, p4c_entry_order

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<16> k; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> p) { sm.egress_spec = p; }
    table t {
        key = { hdr.h.k : ternary; }
        actions = { fwd; }
        PROPS
        ENTRIES
    }
    apply { t.apply(); }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def ports_and_priorities(props: str, entries: str) -> list[tuple[int, int]]:
    prog = load_program_text(PROGRAM.replace("PROPS", props).replace("ENTRIES", entries), "prio.p4")
    table = prog.state.tables["I.t"]
    return [(e.action.args[0], e.priority) for e in table.entries()]   # handle order = BMv2's order


def p4rt(position: int) -> int:
    return BM_MAX_PRIORITY - position


@pytest.mark.parametrize("props,entries,expected_ports", [
    pytest.param("", """const entries = { 1 &&& 0xFF : fwd(1); 2 &&& 0xFF : fwd(2); }""", [1, 2],
                 id="const-entries-in-order"),
    pytest.param("", """entries = { priority = 10 : 1 &&& 0xFF : fwd(1); priority = 30 : 2 &&& 0xFF : fwd(2);
                 priority = 20 : 3 &&& 0xFF : fwd(3); 4 &&& 0xFF : fwd(4); }""", [2, 3, 4, 1],
                 id="largest-wins-sorted"),
    pytest.param("largest_priority_wins = false;",
                 """entries = { priority = 10 : 1 &&& 0xFF : fwd(1); priority = 5 : 2 &&& 0xFF : fwd(2);
                 priority = 20 : 3 &&& 0xFF : fwd(3); 4 &&& 0xFF : fwd(4); }""", [2, 1, 3, 4],
                 id="smallest-wins-sorted"),
    pytest.param("largest_priority_wins = false; priority_delta = 10;",
                 """entries = { priority = 1 : 1 &&& 0xFF : fwd(1); 2 &&& 0xFF : fwd(2);
                 priority = 30 : 3 &&& 0xFF : fwd(3); }""", [1, 2, 3], id="smallest-wins-in-order"),
])
def test_initial_entries_in_p4c_order_with_bmv2_priorities(props: str, entries: str,
                                                            expected_ports: list[int]) -> None:
    got = ports_and_priorities(props, entries)
    assert [port for port, _ in got] == expected_ports
    assert [prio for _, prio in got] == [p4rt(i) for i in range(1, len(got) + 1)]


def test_priority_annotation_is_the_bmv2_priority() -> None:
    got = ports_and_priorities("", """const entries = { 1 &&& 0xFF : fwd(1) @priority(7);
                               2 &&& 0xFF : fwd(2); }""")
    assert got == [(1, p4rt(7)), (2, p4rt(2))]


def test_order_helper_keeps_ties_in_written_order() -> None:
    assert p4c_entry_order([5, 1, 5, 1], largest_wins=True) == [0, 2, 1, 3]
    assert p4c_entry_order([5, 1, 5, 1], largest_wins=False) == [1, 3, 0, 2]
