"""p4sim's warnings (p4sim/frontend/p4c_warnings.py, printed by ``check`` and ``compile``)
against p4c-bm2-ss's. EXPECTED is what p4c-bm2-ss 1.2.5.16 printed for PROGRAM (each
warning's line and text, in its order); p4sim prints the same with ``file:line:col``.
"""
from __future__ import annotations

import pytest

from p4sim.__main__ import main

PROGRAM = r"""
#include <v1model.p4>
typedef bit<8> unused_td;
type bit<8> unused_nt;
const bit<8> UNUSED_C = 3;
enum E1 { A, B }
header h_t { bit<8> a; bit<8> b; }
struct vs_t { @match(ternary) bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { bit<8> x; }
action top_unused() { }
bit<8> f_used(in bit<8> q, in bit<8> r) { return q; }
extern void ext_f(in bit<8> z);
extern Ext_t { Ext_t(); void m(in bit<8> w); }
bit<8> f_unused(in bit<8> q, in bit<8> r) { return q; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {
  value_set<vs_t>(4) vs;
  value_set<bit<8>>(2) vs2;
  bit<8> pv;
  state start { p.extract(h.h); transition select(h.h.a, h.h.b) { vs: next; (1, 2): reject; default: accept; } }
  state next { transition accept; }
  state orphan { transition accept; }
}
control VC(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t s) {
  bit<8> unusedvar;
  bit<8> usedvar = 1;
  counter(4, CounterType.packets) cnt_unused; direct_counter(CounterType.packets) dc_unused;
  action a(bit<8> x, bit<8> y) { h.h.a = x; }
  action b() { }
  @noWarn("unused") action c() { }
  table t { key = { h.h.a: exact; } actions = { a; } }
  table t2 { key = { h.h.a: exact; } actions = { a; } }
  apply { t.apply(); h.h.b = usedvar; h.h.a = f_used(h.h.a, 1); }
}
control E(inout H h, inout M m, inout standard_metadata_t s) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
control Unused_c(inout H h) { apply {} }
V1Switch(P(), VC(), I(), E(), VC(), D()) main;
"""

# p4c-bm2-ss: "PROGRAM.p4(LINE): [--Wwarn=KIND] warning: TEXT" (lines counted from PROGRAM's first line)
EXPECTED = """
2 [--Wwarn=unused] warning: 'unused_td' is unused
3 [--Wwarn=unused] warning: 'unused_nt' is unused
4 [--Wwarn=unused] warning: 'UNUSED_C' is unused
10 [--Wwarn=unused] warning: 'top_unused' is unused
14 [--Wwarn=unused] warning: 'f_unused' is unused
17 [--Wwarn=unused] warning: 'vs2' is unused
18 [--Wwarn=unused] warning: 'pv' is unused
25 [--Wwarn=unused] warning: 'unusedvar' is unused
27 [--Wwarn=unused] warning: 'cnt_unused' is unused
27 [--Wwarn=unused] warning: 'dc_unused' is unused
28 [--Wwarn=unused] warning: 'y' is unused
29 [--Wwarn=unused] warning: 'b' is unused
32 [--Wwarn=unused] warning: table 't2' is unused
37 [--Wwarn=unused] warning: control 'Unused_c' is unused
32 [--Winfo=removed] info: removing table 't2'
37 [--Winfo=removed] info: removing control 'Unused_c'
7 [--Wwarn=unsupported] warning: This backend only supports exact matches in value_sets but the match on 'a' is not exact; the annotation will be ignored
19 [--Wwarn=unsupported] warning: Explicit transition to reject not supported on this target
28 [--Wwarn=unused] warning: Unused action parameter y
27 [--Wwarn=unused] warning: I.dc_unused: Direct counter not used; ignoring
"""


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "w.p4"
    path.write_text(PROGRAM.lstrip("\n"))
    return path


def _warnings(err: str, path) -> list[str]:
    """``LINE TEXT`` of every warning/info line p4sim printed (columns dropped, as p4c has none)."""
    out = []
    for line in err.splitlines():
        if line.startswith(f"{path}:") and ": [--W" in line:
            where, text = line[len(str(path)) + 1:].split(": ", 1)
            out.append(f"{where.split(':')[0]} {text}")
    return out


def test_check_prints_p4cs_warnings_and_succeeds(program, capsys) -> None:
    assert main(["check", str(program)]) == 0
    err = capsys.readouterr().err
    assert _warnings(err, program) == EXPECTED.strip().splitlines()
    # the name is located and underlined as p4c does
    assert f"{program}:2:16: [--Wwarn=unused] warning: 'unused_td' is unused\n" \
           "typedef bit<8> unused_td;\n               ^^^^^^^^^\n" in err


def test_compile_prints_them_too(program, tmp_path, capsys) -> None:
    assert main(["compile", str(program), "--p4info", str(tmp_path / "w.txtpb")]) == 0
    assert len(_warnings(capsys.readouterr().err, program)) == len(EXPECTED.strip().splitlines())


@pytest.mark.parametrize("options, left", [
    (["--Wdisable"], ["removed"]),                       # every warning; infos stay
    (["--Wdisable=unused"], ["removed", "unsupported"]),
    (["--Wdisable=unused", "--Wdisable=removed"], ["unsupported"]),
])
def test_wdisable(program, capsys, options, left) -> None:
    assert main(["check", *options, str(program)]) == 0     # a bare --Wdisable takes no argument
    kinds = sorted({w.split("=", 1)[1].split("]", 1)[0] for w in _warnings(capsys.readouterr().err, program)})
    assert kinds == left


def test_no_warning_for_what_p4c_never_warns_about(tmp_path, capsys) -> None:
    path = tmp_path / "quiet.p4"
    path.write_text("""#include <v1model.p4>
enum E1 { A }
struct unused_s { bit<8> f; }
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
extern void ext_f(in bit<8> z);
bit<8> f(in bit<8> q, in bit<8> unused_param) { return q; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {
  state start { p.extract(h.h); transition accept; }
  state orphan { transition accept; }
}
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s) {
  @noWarn("unused") action quiet(bit<8> x) { }
  apply { h.h.a = f(h.h.a, 1); }
}
control E(inout H h, inout M m, inout standard_metadata_t s) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
""")
    assert main(["check", str(path)]) == 0
    assert "warning" not in capsys.readouterr().err


# constant table keys: p4c-bm2-ss 1.2.5.16's warnings for CONST_KEYS, in its order (the
# mismatch ones come after the infos, at the literal the key folds to)
CONST_KEYS = r"""
#include <v1model.p4>
const bit<8> KC = 0x0f;
const bit<8> KD = 7;
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) { state start { p.extract(h.h); transition accept; } }
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s) {
  action a() { }
  table t { key = { KC: exact; h.h.a: exact; } actions = { a; } }
  table t2 { key = { KD: exact; 8w0b101 : exact; (bit<8>)3: exact @name("c"); } actions = { a; } }
  table t3 { key = { h.h.a : exact; } actions = { a; } }
  apply { t.apply(); t2.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t s) { bit<8> zz; apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""

CONST_KEYS_EXPECTED = """
13 [--Wwarn=unused] warning: table 't3' is unused
16 [--Wwarn=unused] warning: 'zz' is unused
11 [--Wwarn=ignore-prop] warning: KeyElement: constant key element
12 [--Wwarn=ignore-prop] warning: KeyElement: constant key element
12 [--Wwarn=ignore-prop] warning: KeyElement: constant key element
12 [--Wwarn=ignore-prop] warning: KeyElement: constant key element
13 [--Winfo=removed] info: removing table 't3'
2 [--Wwarn=mismatch] warning: 8w0xf: Constant key field
3 [--Wwarn=mismatch] warning: 8w7: Constant key field
12 [--Wwarn=mismatch] warning: 8w0b101: Constant key field
12 [--Wwarn=mismatch] warning: 8w3: Constant key field
"""


def test_constant_keys(tmp_path, capsys) -> None:
    path = tmp_path / "keys.p4"
    path.write_text(CONST_KEYS.lstrip("\n"))
    assert main(["check", str(path)]) == 0
    assert _warnings(capsys.readouterr().err, path) == CONST_KEYS_EXPECTED.strip().splitlines()


def test_a_failure_in_the_analysis_never_fails_the_command(program, capsys, monkeypatch) -> None:
    import p4sim.compile_warnings as cw

    def broken(*_args: object) -> list:
        raise KeyError("boom")
    monkeypatch.setattr(cw, "program_warnings", broken)
    assert main(["check", str(program)]) == 0
    err = capsys.readouterr().err
    assert "internal error while looking for warnings (KeyError" in err and "Traceback" not in err


LOOPS = """
#include <v1model.p4>
header h_t { bit<8> a; } struct H { h_t h; } struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {
  state start { p.extract(h.h); transition accept; } }
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s) {
  action twice() { for (bit<8> i = 0; i < 2; i = i + 1) { h.h.a = h.h.a + 1; } }
  apply {
    twice();
    for (bit<8> i = 0; i < 2; i = i + 1) { h.h.a = h.h.a + 1; }
  }
}
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"""


def test_a_loop_in_an_apply_block_is_flagged_and_one_in_an_action_is_not(tmp_path, capsys) -> None:
    """p4c-bm2-ss 1.2.5.16 compiles a loop inside an action (with jumps) but not one in an
    apply block, which it accepts silently: p4sim warns (its own kind, bmv2-loop), runs
    P4_16's semantics and the check still succeeds; --Wdisable=bmv2-loop silences it."""
    path = tmp_path / "loops.p4"
    path.write_text(LOOPS.lstrip("\n"))
    assert main(["check", str(path)]) == 0
    flagged = [w for w in _warnings(capsys.readouterr().err, path) if "bmv2-loop" in w]
    assert len(flagged) == 1 and flagged[0].startswith("10 ")    # the apply block's, not line 7
    assert main(["check", "--Wdisable=bmv2-loop", str(path)]) == 0
    assert "bmv2-loop" not in capsys.readouterr().err


FUNCTION_LOOPS = """
#include <v1model.p4>
header h_t { bit<8> a; } struct H { h_t h; } struct M { }
bit<8> count(in bit<8> n) { bit<8> c = 0; for (bit<8> i = 0; i < n; i = i + 1) { c = c + 1; } return c; }
bit<8> twice(in bit<8> n) { return count(n) + count(n); }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {
  state start { p.extract(h.h); transition accept; } }
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s) {
  action go() { h.h.a = count(h.h.a); }
  apply {
    go();
    h.h.a = twice(h.h.a);
  }
}
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"""


def test_a_loop_in_a_function_called_from_an_apply_block_is_flagged_at_the_call(tmp_path, capsys) -> None:
    """p4c-bm2-ss inlines a function where it is called: from an action its loop stays
    (jumps), from an apply block it is dropped (measured: no jump in the JSON)."""
    path = tmp_path / "function_loops.p4"
    path.write_text(FUNCTION_LOOPS.lstrip("\n"))
    assert main(["check", str(path)]) == 0
    flagged = [w for w in _warnings(capsys.readouterr().err, path) if "bmv2-loop" in w]
    assert len(flagged) == 1 and flagged[0].startswith("12 ") and "function twice" in flagged[0], flagged


PROFILES = r"""
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {
  state start { p.extract(h.h); transition accept; } }
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s) {
  action a1(bit<8> v) { h.h.a = v; }
  action_profile(32w128) prof;
  action_selector(HashAlgorithm.crc16, 32w64, 32w10) sel;
  table t_prof { key = { h.h.a: exact; } actions = { a1; } implementation = prof; }
  table t_sel { key = { h.h.a: exact; h.h.b: selector; } actions = { a1; } implementation = sel; }
  apply { t_prof.apply(); t_sel.apply(); }
}
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"""

# p4c-bm2-ss 1.2.5.16 (measured, issue 35): its front end gives every table a default
# action, and its BMv2 back end warns for each table with an action profile or selector
# (once, though I is both ingress and egress here)
PROFILES_EXPECTED = """
12 [--Wwarn=unsupported] warning: Target does not support default_action for I.t_prof (due to action profiles)
13 [--Wwarn=unsupported] warning: Target does not support default_action for I.t_sel (due to action profiles)
"""


def test_tables_with_action_profiles(tmp_path, capsys) -> None:
    path = tmp_path / "profiles.p4"
    path.write_text(PROFILES.lstrip("\n"))
    assert main(["check", str(path)]) == 0
    assert _warnings(capsys.readouterr().err, path) == PROFILES_EXPECTED.strip().splitlines()


INLINED = r"""
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {
  state start { p.extract(h.h); transition accept; } }
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s) {
  action inner(bit<8> q) { }
  action outer(bit<8> q, bit<8> r) { inner(q); h.h.a = r; }
  action inner2(bit<8> q) { h.h.b = q; }
  action outer2(bit<8> q) { inner2(q); }
  table t { key = { h.h.a: exact; } actions = { outer; outer2; } }
  apply { t.apply(); }
}
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"""

# p4c-bm2-ss 1.2.5.16 (measured, issue 35): a parameter passed only to another action's
# unused parameter is unused once p4c's front end has inlined the call
INLINED_EXPECTED = """
9 [--Wwarn=unused] warning: 'q' is unused
10 [--Wwarn=unused] warning: Unused action parameter q
"""


def test_a_parameter_only_passed_to_an_unused_one_is_unused(tmp_path, capsys) -> None:
    path = tmp_path / "inlined.p4"
    path.write_text(INLINED.lstrip("\n"))
    assert main(["check", str(path)]) == 0
    assert _warnings(capsys.readouterr().err, path) == INLINED_EXPECTED.strip().splitlines()


# a control's and a parser's own locals named like their parameters (constructor ones too):
# p4c-bm2-ss 1.2.5.16 compiles it; EXPECTED as it printed them, each with the parameter's
# place after it; the local declared after the action that reads `m` is unused (the action
# reads the parameter)
SHADOWS = r"""
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { bit<8> x; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {
  bit<8> m = 1;
  state start { p.extract(h.h); h.h.a = m; transition accept; }
}
control Sub(inout H h)(bit<8> k) {
  bit<8> k = 2;
  apply { h.h.a = k; }
}
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s) {
  Sub(7) sub;
  action reads_param() { h.h.a = m.x; }
  bit<8> m = 3;
  apply { reads_param(); sub.apply(h); }
}
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"""
SHADOWS_EXPECTED = """
6 [--Wwarn=shadow] warning: 'm' shadows 'm'
10 [--Wwarn=shadow] warning: 'k' shadows 'k'
17 [--Wwarn=shadow] warning: 'm' shadows 'm'
17 [--Wwarn=unused] warning: 'm' is unused
"""


def test_a_local_named_like_a_parameter_is_a_shadow_warning(tmp_path, capsys) -> None:
    path = tmp_path / "shadows.p4"
    path.write_text(SHADOWS.lstrip("\n"))
    assert main(["check", str(path)]) == 0
    err = capsys.readouterr().err
    assert _warnings(err, path) == SHADOWS_EXPECTED.strip().splitlines()
    # then where the parameter is declared, as p4c shows it
    assert f"{path}:9:31\ncontrol Sub(inout H h)(bit<8> k) {{\n" + " " * 30 + "^\n" in err


# issue 35, second corpus (behavioral-model's action_profile.p4 names its table @name(".IndirectWS")):
# p4c names a declaration by its @name as written, a leading dot kept; p4c-bm2-ss 1.2.5.16
# printed DOT_NAMED_EXPECTED for DOT_NAMED (measured)
DOT_NAMED = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> f; bit<8> g; }
struct H { h_t h; }
struct M { }
parser P(packet_in b, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { b.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    @name(".dc") direct_counter(CounterType.packets) dc;
    @name(".prof") action_profile(32w16) prof;
    action send(bit<9> port) { sm.egress_spec = port; }
    @name(".fwd") table fwd {
        key = { hdr.h.f: exact; }
        actions = { send; }
        implementation = prof;
    }
    @name(".t2") table t2 { key = { hdr.h.f: exact; } actions = { NoAction; } }
    @name("x2") counter(32w4, CounterType.packets) x2c;
    @name(".a2") action a2() { }
    @name("a3") action a3() { }
    @name(".r2") register<bit<8>>(4) r2;
    apply { fwd.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out b, in H hdr) { apply { b.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

DOT_NAMED_EXPECTED = """
11 [--Wwarn=unused] warning: '.dc' is unused
19 [--Wwarn=unused] warning: table '.t2' is unused
20 [--Wwarn=unused] warning: 'x2' is unused
21 [--Wwarn=unused] warning: '.a2' is unused
22 [--Wwarn=unused] warning: 'a3' is unused
23 [--Wwarn=unused] warning: '.r2' is unused
19 [--Winfo=removed] info: removing table '.t2'
14 [--Wwarn=unsupported] warning: Target does not support default_action for .fwd (due to action profiles)
11 [--Wwarn=unused] warning: .dc: Direct counter not used; ignoring
"""


def test_dot_named_declarations_are_named_as_p4c_names_them(tmp_path, capsys) -> None:
    path = tmp_path / "dots.p4"
    path.write_text(DOT_NAMED.lstrip("\n"))
    assert main(["check", str(path)]) == 0
    assert _warnings(capsys.readouterr().err, path) == DOT_NAMED_EXPECTED.strip().splitlines()
