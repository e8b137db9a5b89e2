"""Tables p4c's front end deletes before it writes P4Info: applied only in the dead branch
of ``if (false)`` or ``true ? a : b`` (ConstantFolding, then RemoveAllUnusedDeclarations,
which says ``removing table 't'``). p4sim/frontend/uses.py ``removed_blocks_and_tables``.
Checked against p4c-bm2-ss 1.2.5.16: its P4Info of PROGRAM lists only ``I.live_else``
and the actions ``NoAction`` (its default) and ``I.live``; it prints the two infos below.
"""
from __future__ import annotations

from p4sim.__main__ import main
from p4sim.engine import load_program_text
from p4sim.p4info import build_p4info

PROGRAM = r"""
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) { state start { p.extract(h.h); transition accept; } }
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s) {
  action only_dead(bit<8> v) { h.h.b = v; }
  action live() { }
  table dead_if { key = { h.h.a: exact; } actions = { only_dead; } }
  table dead_ternary { key = { h.h.a: exact; } actions = { only_dead; live; } }
  table live_else { key = { h.h.a: exact; } actions = { live; } }
  apply {
    if (false) { dead_if.apply(); } else { live_else.apply(); }
    h.h.b = true ? 8w1 : (dead_ternary.apply().hit ? 8w2 : 8w3);
  }
}
control E(inout H h, inout M m, inout standard_metadata_t s) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_dead_tables_and_their_actions_are_not_in_p4info() -> None:
    info = build_p4info(load_program_text(PROGRAM, "dead.p4"))
    assert [t.preamble.name for t in info.tables] == ["I.live_else"]
    assert [a.preamble.name for a in info.actions] == ["NoAction", "I.live"]


def test_removing_infos(tmp_path, capsys) -> None:
    path = tmp_path / "dead.p4"
    path.write_text(PROGRAM.lstrip("\n"))
    assert main(["check", str(path)]) == 0
    err = capsys.readouterr().err
    assert [line.split(": ", 1)[1] for line in err.splitlines() if "[--W" in line] == [
        "[--Winfo=removed] info: removing table 'dead_if'",
        "[--Winfo=removed] info: removing table 'dead_ternary'",
    ]
