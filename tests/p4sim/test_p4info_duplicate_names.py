"""Objects of one kind with one control-plane name: p4c accepts the program
(p4c-bm2-ss without ``--p4runtime-files``) but its P4Runtime serializer refuses it
(``checkForDuplicates``), as for p4c's testdata/p4_16_errors/issue1803_same_table_name.p4:
a table with an absolute ``@name(".t0")`` in a control instantiated twice. The expected
text is p4c's stderr for that program (p4_16_errors_outputs/...-stderr)."""
from __future__ import annotations

import pytest

from p4sim.engine import load_program_text
from p4sim.errors import P4Error
from p4sim.p4info import build_p4info
from p4sim.tutorials.p4c import main_p4c_bm2_ss

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
struct H { }
struct M { bit<32> hash1; }
parser ParserI(packet_in pk, out H hdr, inout M meta, inout standard_metadata_t smeta) {
    state start { transition accept; }
}
control MyC(inout standard_metadata_t smeta)() {
    action drop() { mark_to_drop(smeta); }
    @name(".t0")
    table t0 {
        key = { smeta.ingress_port : exact; }
        actions = { drop; NoAction; }
        const default_action = NoAction();
    }
    EXTRA
    apply { t0.apply(); }
}
control IngressI(inout H hdr, inout M meta, inout standard_metadata_t smeta) {
    MyC() c1;
    MyC() c2;
    apply { c1.apply(smeta); c2.apply(smeta); }
}
control EgressI(inout H hdr, inout M meta, inout standard_metadata_t smeta) { apply { } }
control DeparserI(packet_out pk, in H hdr) { apply { } }
control VerifyChecksumI(inout H hdr, inout M meta) { apply { } }
control ComputeChecksumI(inout H hdr, inout M meta) { apply { } }
V1Switch(ParserI(), VerifyChecksumI(), IngressI(), EgressI(), ComputeChecksumI(), DeparserI()) main;
"""


@pytest.mark.parametrize("extra,message", [
    pytest.param("", "error: Name 't0' is used for multiple table objects in the P4Info message\n"
                 "error: Found 1 duplicate name(s) in the P4Info", id="issue1803"),
    pytest.param('@name(".c") counter(4, CounterType.packets) c;',
                 "error: Name 't0' is used for multiple table objects in the P4Info message\n"
                 "error: Name 'c' is used for multiple counter objects in the P4Info message\n"
                 "error: Found 2 duplicate name(s) in the P4Info", id="table-and-counter"),
])
def test_duplicate_control_plane_names_refused_in_p4info(extra: str, message: str) -> None:
    prog = load_program_text(PROGRAM.replace("EXTRA", extra), "dup.p4")   # p4c-bm2-ss accepts it
    with pytest.raises(P4Error) as e:
        build_p4info(prog)
    assert str(e.value) == message


def test_distinct_instance_names_are_fine() -> None:
    prog = load_program_text(PROGRAM.replace('@name(".t0")', "").replace("EXTRA", ""), "dup.p4")
    names = sorted(t.preamble.name for t in build_p4info(prog).tables)
    assert names == ["IngressI.c1.t0", "IngressI.c2.t0"]


def test_two_actions_of_one_name_in_a_table_refused_as_by_the_bmv2_json_writer() -> None:
    """p4c's testdata/p4_16_errors/issue1949-bmv2.p4: ``@name(".foo")`` on two actions of
    one table; p4c-bm2-ss fails writing the JSON even without ``--p4runtime-files``."""
    text = PROGRAM.replace("EXTRA", "").replace(
        'action drop() { mark_to_drop(smeta); }',
        '@name(".foo") action drop() { mark_to_drop(smeta); } @name(".foo") action drop2() { }').replace(
        "actions = { drop; NoAction; }", "actions = { drop; drop2; NoAction; }")
    with pytest.raises(P4Error, match="Attempt to add to json object a value for a label which already "
                                      "exists foo "):
        load_program_text(text, "dup.p4")


# p4c-bm2-ss writes and checks P4Info after its mid end and before its back end: with
# --p4runtime-files a P4Info error comes before a back-end one (issue 35, third corpus:
# zjuan22/topicos_sistemas's bng.p4; p4c-bm2-ss 1.2.5.16 measured on this program: with
# P4Info "dup.p4(16): ... ._drop: conflicting control plane name: ._drop", without it
# "dup.p4(11): ... Expected 1 argument for mark_to_drop()")
BACKEND_AND_P4INFO_ERRORS = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    @name("._drop") action _drop() { mark_to_drop(); }
    table t { key = { hdr.h.a : exact; } actions = { _drop; } }
    apply { t.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {
    @name("._drop") action _drop() { mark_to_drop(); }
    table t { key = { hdr.h.a : exact; } actions = { _drop; } }
    apply { t.apply(); }
}
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("p4info, expected", [
    pytest.param(True, "dup.p4:16:21: error: ._drop: conflicting control plane name: ._drop", id="with-p4info"),
    pytest.param(False, "dup.p4:11:38: error: Expected 1 argument for mark_to_drop().", id="without-p4info"),
])
def test_p4info_errors_come_before_the_back_ends(tmp_path, monkeypatch, capsys, p4info: bool, expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dup.p4").write_text(BACKEND_AND_P4INFO_ERRORS)
    args = ["--p4v", "16", "-o", "x.json"] + (["--p4runtime-files", "x.txtpb"] if p4info else []) + ["dup.p4"]
    assert main_p4c_bm2_ss(args) == 1
    errors = [ln for ln in capsys.readouterr().err.splitlines() if " error: " in ln]
    assert errors[0].startswith(expected)


# p4c removes an unused action before it checks control-plane names: E's ``._drop``,
# which no table uses, conflicts with nothing (measured on p4c-bm2-ss 1.2.5.16: the
# mark_to_drop() error at line 11 first; with mark_to_drop(sm) the program compiles)
UNUSED_DUPLICATE = BACKEND_AND_P4INFO_ERRORS.replace(
    "    @name(\"._drop\") action _drop() { mark_to_drop(); }\n    table t { key = { hdr.h.a : exact; } actions = { _drop; } }\n"
    "    apply { t.apply(); }\n}\ncontrol CC",
    "    @name(\"._drop\") action _drop() { hdr.h.a = 4; }\n    table t { key = { hdr.h.a : exact; } actions = { NoAction; } }\n"
    "    apply { t.apply(); }\n}\ncontrol CC")


@pytest.mark.parametrize("drop_call, status, expected", [
    pytest.param("mark_to_drop();", 1, "dup.p4:11:38: error: Expected 1 argument for mark_to_drop().", id="back-end-error"),
    pytest.param("mark_to_drop(sm);", 0, None, id="accepted"),
])
def test_an_unused_action_conflicts_with_no_name(tmp_path, monkeypatch, capsys, drop_call: str, status: int,
                                                 expected) -> None:
    assert UNUSED_DUPLICATE != BACKEND_AND_P4INFO_ERRORS
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dup.p4").write_text(UNUSED_DUPLICATE.replace("mark_to_drop();", drop_call))
    assert main_p4c_bm2_ss(["--p4v", "16", "-o", "x.json", "--p4runtime-files", "x.txtpb", "dup.p4"]) == status
    errors = [ln for ln in capsys.readouterr().err.splitlines() if " error: " in ln]
    assert (errors[0].startswith(expected) if expected else errors == [])
