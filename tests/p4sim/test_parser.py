"""Tests of the P4_16 text front end: preprocessor, lexer, parser, core.p4 and v1model.p4."""
from __future__ import annotations

import os

import pytest

from p4sim.errors import P4Error, P4FatalError, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.lexer import tokenize
from p4sim.frontend.parser import parse_file, parse_text
from p4sim.frontend.preprocess import P4INCLUDE_DIR, preprocess_text

HERE = os.path.dirname(os.path.abspath(__file__))
FULL = os.path.join(HERE, "parse", "full.p4")


def decls(text: str, **kw) -> dict[str, A.Decl]:
    return {d.name: d for d in parse_text(text, "t.p4", **kw).decls}


def control_body(stmts: str, locals_: str = "") -> list:
    prog = parse_text(f"control c() {{ {locals_} apply {{ {stmts} }} }}", "t.p4")
    return prog.decls[-1].body.stmts


def first_expr(expr: str) -> A.Expr:
    return control_body(f"x = {expr};")[0].rhs


# --------------------------------------------------------------------------- v1model / core
@pytest.fixture(scope="module")
def v1() -> dict[str, A.Decl]:
    prog = parse_text("#include <v1model.p4>\n", "main.p4")
    out: dict[str, A.Decl] = {}
    for d in prog.decls:
        out.setdefault(d.name, d)
    return out


def test_v1model_resolves_to_p4sim_include(v1):
    assert v1["V1Switch"].loc.file == os.path.join(P4INCLUDE_DIR, "v1model.p4")
    assert v1["packet_in"].loc.file == os.path.join(P4INCLUDE_DIR, "core.p4")


def test_standard_metadata_fields_and_widths(v1):
    sm = v1["standard_metadata_t"]
    got = [(f.name, f.type.width.value if isinstance(f.type, A.BitType) else f.type.name)
           for f in sm.fields]
    assert got == [
        ("ingress_port", 9), ("egress_spec", 9), ("egress_port", 9), ("instance_type", 32),
        ("packet_length", 32), ("enq_timestamp", 32), ("enq_qdepth", 19),
        ("deq_timedelta", 32), ("deq_qdepth", 19), ("ingress_global_timestamp", 48),
        ("egress_global_timestamp", 48), ("mcast_grp", 16), ("egress_rid", 16),
        ("checksum_error", 1), ("parser_error", "error"), ("priority", 3)]
    assert [a.name for a in sm.annotations] == ["metadata", "name"]


def test_v1model_enums_in_order(v1):
    assert v1["HashAlgorithm"].members == ["crc32", "crc32_custom", "crc16", "crc16_custom",
                                           "random", "identity", "csum16", "xor16"]
    assert v1["CounterType"].members == ["packets", "bytes", "packets_and_bytes"]
    assert v1["MeterType"].members == ["packets", "bytes"]
    assert v1["CloneType"].members == ["I2E", "E2E"]
    assert v1["error"].members == ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds",
                                   "HeaderTooShort", "ParserTimeout", "ParserInvalidArgument"]


def test_v1model_has_every_extern(v1):
    for name in ["counter", "direct_counter", "meter", "direct_meter", "register",
                 "action_profile", "action_selector", "hash", "random", "digest",
                 "mark_to_drop", "clone", "clone3", "clone_preserving_field_list", "resubmit",
                 "resubmit_preserving_field_list", "recirculate",
                 "recirculate_preserving_field_list", "truncate", "assert", "assume",
                 "log_msg", "verify_checksum", "update_checksum",
                 "verify_checksum_with_payload", "update_checksum_with_payload", "Checksum16",
                 "packet_out", "verify", "NoAction", "static_assert", "Parser", "Ingress",
                 "Egress", "VerifyChecksum", "ComputeChecksum", "Deparser", "__v1model_version"]:
        assert name in v1, name
    prog = parse_text("#include <v1model.p4>\n", "main.p4")
    overloads = [d for d in prog.decls if d.name in ("mark_to_drop", "log_msg")]
    assert [(d.name, len(d.params)) for d in overloads] == [
        ("mark_to_drop", 0), ("mark_to_drop", 1), ("log_msg", 1), ("log_msg", 2)]
    kinds = [d.members for d in prog.decls if isinstance(d, A.MatchKindDecl)]
    assert kinds == [["exact", "ternary", "lpm"], ["range", "optional", "selector"]]
    pkt = v1["packet_in"]
    assert [m.name for m in pkt.methods] == ["extract", "extract", "lookahead", "advance", "length"]
    assert pkt.methods[2].type_params == ["T"]
    reg = v1["register"]
    assert reg.type_params == ["T"]
    assert reg.methods[0].return_type is None and reg.methods[0].name == "register"
    assert [a.name for a in reg.methods[1].annotations] == ["noSideEffects"]
    v1s = v1["V1Switch"]
    assert [p.name for p in v1s.params] == ["p", "vr", "ig", "eg", "ck", "dep"]


def test_v1model_version_20200408():
    prog = parse_text("#define V1MODEL_VERSION 20200408\n#include <v1model.p4>\n", "main.p4")
    d = {x.name: x for x in prog.decls}
    assert d["register"].type_params == ["T", "I"]
    assert d["counter"].type_params == ["I"]
    assert isinstance(d["PortId_t"], A.TypedefDecl)
    assert d["standard_metadata_t"].fields[0].type.name == "PortId_t"
    assert d["__v1model_version"].value.value == 20200408
    # and the default
    d = decls("#include <v1model.p4>\n")
    assert d["__v1model_version"].value.value == 20180101


# --------------------------------------------------------------------------- whole program
def test_full_fixture_shapes():
    # a syntax fixture, not a valid program (p4c refuses its @defaultonly action in an entry)
    prog = parse_file(FULL, validate=False)
    d = {x.name: x for x in prog.decls}
    assert isinstance(d["ip4Addr_t"], A.TypedefDecl) and d["ip4Addr_t"].is_newtype
    assert d["pair"].type_params == ["T"]
    assert d["Proto"].underlying is not None and [v.value for v in d["Proto"].values] == [6, 17]
    assert d["ip_u"].kind == "header_union"
    assert isinstance(d["headers"].fields[2].type, A.StackType)
    ext = d["MyExt"]
    assert ext.type_params == ["T"]
    assert [(m.name, m.is_abstract, m.type_params) for m in ext.methods] == [
        ("MyExt", False, []), ("get", False, ["U"]), ("cb", True, [])]

    parser = d["MyParser"]
    assert isinstance(parser.locals[0], A.ValueSetDecl)
    start = parser.states[0]
    assert [type(c.keyset).__name__ for c in start.transition.cases] == [
        "ListExpr", "ListExpr", "ListExpr", "DefaultExpr"]
    mask, rng = start.transition.cases[1].keyset.elems
    assert (mask.op, rng.op) == ("&&&", "..")
    la = parser.states[1].transition.select_keys[0]
    assert isinstance(la, A.Call) and la.func.name == "lookahead"
    assert isinstance(la.type_args[0], A.BitType)

    ig = d["MyIngress"]
    inst = {x.name: x for x in ig.locals}
    assert isinstance(inst["r"], A.Instantiation) and inst["r"].type.name == "register"
    assert isinstance(inst["ext"].initializer[0], A.FunctionDecl)
    assert isinstance(inst["tmp"], A.VarDecl)
    table = inst["ipv4_lpm"]
    key = table.prop("key").value
    assert [(k.match_kind, [a.name for a in k.annotations]) for k in key] == [
        ("lpm", ["name"]), ("ternary", [])]
    acts = table.prop("actions").value
    assert [(a.name.name, a.has_parens, [x.name for x in a.annotations]) for a in acts] == [
        ("fwd", False, []), ("drop", False, ["defaultonly"]), ("NoAction", True, [])]
    entries = table.prop("entries")
    assert entries.is_const
    e0, e1 = entries.value
    assert len(e0.keys) == 2 and e0.keys[1].op == "&&&" and len(e0.action.args) == 2
    assert e1.priority.value == 10 and isinstance(e1.keys[0], A.DontCare)
    assert isinstance(e1.keys[1], A.DefaultExpr) and e1.is_const
    assert table.prop("my_custom_prop").value.value == 3
    assert table.prop("default_action").value.has_parens

    stmts = ig.body.stmts
    assert isinstance(stmts[0], A.VarDecl) and isinstance(stmts[0].init, A.Cast)
    assert stmts[0].init.expr.op == ">>"
    struct_init = [s for s in stmts if isinstance(s, A.VarDecl) and s.name == "p2"][0]
    assert isinstance(struct_init.init, A.Cast) and isinstance(struct_init.init.expr, A.StructExpr)
    named = [s for s in stmts if isinstance(s, A.CallStmt) and isinstance(s.call.func, A.Member)
             and s.call.func.name == "write"][0]
    assert [a.name for a in named.call.args] == ["index", "value"]
    sw = [s for s in stmts if isinstance(s, A.IfStmt)][0].then.stmts[0]
    assert isinstance(sw, A.SwitchStmt)
    assert [(c.label.__class__.__name__, c.body is None) for c in sw.cases] == [
        ("NameRef", True), ("NameRef", False), ("DefaultExpr", False)]
    atomic = [s for s in stmts if isinstance(s, A.BlockStmt)][0]
    assert atomic.annotations[0].name == "atomic"
    main = prog.decls[-1]
    assert isinstance(main, A.Instantiation) and main.name == "main"
    assert main.args[4].value.type_args[0].name == "headers"


# --------------------------------------------------------------------------- snippets
def test_integer_literals():
    toks = tokenize("8w5 8s0b101 16w0x1_0 0o17 0d99 1_000 0XFF 4w0B1010", "a.p4")
    got = [(t.value, t.width, t.signed) for t in toks[:-1]]
    assert got == [(5, 8, False), (5, 8, True), (16, 16, False), (15, None, None),
                   (99, None, None), (1000, None, None), (255, None, None), (10, 4, False)]


def test_operators_and_precedence():
    e = first_expr("a + b * c == d << 1 & e")
    # == binds looser than &, & looser than <<, << looser than +
    assert e.op == "==" and e.left.op == "+" and e.left.right.op == "*"
    assert e.right.op == "&" and e.right.left.op == "<<"
    e = first_expr("a |+| b |-| c ++ d")
    assert e.op == "++" and e.left.op == "|-|" and e.left.left.op == "|+|"
    e = first_expr("a > b >> 2")
    assert e.op == ">" and e.right.op == ">>"
    e = first_expr("c ? 1 : d ? 2 : 3")
    assert isinstance(e, A.Ternary) and isinstance(e.other, A.Ternary)
    e = first_expr("-~!x")
    assert (e.op, e.expr.op, e.expr.expr.op) == ("-", "~", "!")
    e = first_expr("a < b && c >= d || !e")
    assert e.op == "||" and e.left.op == "&&" and e.left.left.op == "<"


def test_slices_members_calls():
    e = first_expr("h.f[7:0]")
    assert isinstance(e, A.Slice) and e.expr.name == "f"
    e = first_expr("h.s[2].f")
    assert isinstance(e, A.Member) and isinstance(e.expr, A.Index)
    e = first_expr("t.apply().hit")
    assert e.name == "hit" and isinstance(e.expr, A.Call)
    e = first_expr("error.NoMatch")
    assert isinstance(e, A.Member) and e.expr.name == "error"
    e = first_expr(".glob")
    assert e.is_global
    e = first_expr("{a, b}")
    assert isinstance(e, A.ListExpr) and len(e.elems) == 2
    e = first_expr("{a = 1, b = 2}")
    assert isinstance(e, A.StructExpr) and [f for f, _ in e.fields] == ["a", "b"]
    e = first_expr("f(_, x = 1)")
    assert isinstance(e.args[0].value, A.DontCare) and e.args[1].name == "x"


def test_casts_and_type_arguments():
    stmts = control_body("x = (bit<8>)y; x = (T); x = (y) + 1; x = (int<4>)-y;"
                         " f<bit<8>, T>(x); x = a < b; x = hh.g<bit<8>>();",
                         locals_="")
    prog_t = parse_text("typedef bit<8> T; control c() { apply { x = (T)y; x = (T) - 1; x = (U) - 1; } }",
                        "t.p4")
    assert isinstance(stmts[0].rhs, A.Cast)
    assert isinstance(stmts[1].rhs, A.NameRef)  # T is not a declared type here
    assert isinstance(stmts[2].rhs, A.Binary)
    assert isinstance(stmts[3].rhs, A.Cast) and stmts[3].rhs.type.signed
    assert [type(t).__name__ for t in stmts[4].call.type_args] == ["BitType", "NamedType"]
    assert stmts[5].rhs.op == "<"
    assert isinstance(stmts[6].rhs.type_args[0], A.BitType)
    body = prog_t.decls[-1].body.stmts
    assert isinstance(body[0].rhs, A.Cast) and isinstance(body[1].rhs, A.Cast)
    assert isinstance(body[2].rhs, A.Binary)


def test_nested_generic_closing():
    d = decls("extern E<T> { E(); } control c() { E<tuple<bit<8>, bit<16>>>() e; apply {} }")
    inst = d["c"].locals[0]
    assert inst.type.args[0].elems[1].width.value == 16


def test_local_declarations_vs_statements():
    stmts = control_body("h_t[4] st; bit<8> x = 1; a[3] = 1; f(x); h.f = 2; const int k = 3;"
                         " if (x == 1) return; else { exit; } ;",
                         locals_="")
    kinds = [type(s).__name__ for s in stmts]
    assert kinds == ["VarDecl", "VarDecl", "AssignStmt", "CallStmt", "AssignStmt", "ConstDecl",
                     "IfStmt", "EmptyStmt"]
    assert isinstance(stmts[0].type, A.StackType)
    assert isinstance(stmts[6].then, A.ReturnStmt) and isinstance(stmts[6].other, A.BlockStmt)


def test_annotations():
    d = decls('@name("x.y") @hidden @size(1, 2 + 3) @weird(a b c) @s[k = 1, v = "z"] @l[1, 2]'
              " const bit<8> X = 1;")
    a = {x.name: x for x in d["X"].annotations}
    assert a["name"].raw == '"x.y"' and a["name"].exprs[0].value == "x.y"
    assert a["hidden"].raw == "" and a["hidden"].exprs is None
    assert len(a["size"].exprs) == 2 and a["size"].raw == "1, 2 + 3"
    assert a["weird"].exprs is None and a["weird"].raw == "a b c"
    assert a["s"].structured and set(a["s"].kv) == {"k", "v"}
    assert a["l"].structured and len(a["l"].exprs) == 2


def test_param_directions_and_defaults():
    d = decls("extern void f(in bit<8> a, out bool b, inout int<4> c, bit<8> d = 1, @opt in bit<1> e);")
    ps = d["f"].params
    assert [p.direction for p in ps] == ["in", "out", "inout", "", "in"]
    assert ps[3].default.value == 1 and ps[4].annotations[0].name == "opt"


def test_parser_control_package_types():
    d = decls("extern packet_in { } parser P<H>(packet_in b, out H h); control C<H>(inout H h);"
              " package Pkg<H>(P<H> p, C<H> c);"
              " control Impl(inout bit<8> h)(bit<8> k) { apply {} }"
              " Pkg(P(), Impl(8)) main;", )
    assert isinstance(d["P"], A.ParserTypeDecl) and d["P"].type_params == ["H"]
    assert isinstance(d["C"], A.ControlTypeDecl)
    assert isinstance(d["Pkg"], A.PackageTypeDecl)
    assert [p.name for p in d["Impl"].ctor_params] == ["k"]
    assert isinstance(d["main"], A.Instantiation)


def test_functions_and_generic_calls():
    d = decls("T id<T>(in T x) { return x; } control c() { apply { y = id<bit<8>>(1); } }")
    f = d["id"]
    assert isinstance(f, A.FunctionDecl) and f.type_params == ["T"]
    call = d["c"].body.stmts[0].rhs
    assert isinstance(call.type_args[0], A.BitType)


def test_enum_error_matchkind_trailing_comma():
    d = decls("enum E { A, B, } error { X, } match_kind { mk, }")
    assert d["E"].members == ["A", "B"]
    assert d["error"].members == ["X"]


# --------------------------------------------------------------------------- errors
# Syntax errors: p4c-bm2-ss 1.2.5.16's text (bison's token names and "expecting" list;
# measured on each of these inputs, issue 35); p4sim adds the column.
BAD = [
    ("const bit<8> X = 1\nconst bit<8> Y = 2;", P4Error,
     "t.p4:2:1: error: syntax error, unexpected CONST, expecting ;"),
    ("struct s { bit<8> a }", P4Error,
     "t.p4:1:21: error: syntax error, unexpected }, expecting [ or ;"),
    ("control c() { apply { x = ; } }", P4Error,
     "t.p4:1:27: error: syntax error, unexpected ;"),
    ("control c() { apply { f(1) } }", P4Error,
     "t.p4:1:28: error: syntax error, unexpected }, expecting ;"),
    ("header h { bit<8> f; }\n}", P4Error,
     "t.p4:2:1: error: syntax error, unexpected }"),
    ("header h { bit<8> f; }\nfoo bar baz;", P4Error,
     "t.p4:2:9: error: syntax error, unexpected IDENTIFIER, expecting ("),
    ("const int a = 1;\n  /* open\n", P4Error, "t.p4:2:3: error: unterminated comment"),
    ("const bit<8> X = 8x5;", P4Error, "t.p4:1:18: error: invalid integer literal '8x5'"),
    ("const bit<8> X = 0x;", P4Error, "t.p4:1:18: error: invalid integer literal '0x'"),
    ("const bit<8> X = 1 $ 2;", P4Error, "t.p4:1:20: error: unexpected character '$'"),
    ('const string s = "abc;\n', P4Error, "t.p4:1:18: error: unterminated string literal"),
    ("\n\n  #error stop here\n", P4Error, "t.p4:3:3: error: #error stop here"),
    ("#define F 1\n#if F\n#error F is set\n#endif\n", P4Error, "t.p4:3:1: error: #error F is set"),
    ('#include "nope.p4"\n', P4FatalError, "t.p4:1:10: fatal error: nope.p4: No such file or directory"),   # cpp's
    ('  # include <nope.p4>\n', P4FatalError, "t.p4:1:13: fatal error: nope.p4: No such file or directory"),
    ("control c() { apply { this.x = 1; } }", P4Unsupported, "t.p4:1:23: unsupported: 'this'"),
    ("control c() { apply { for (;;) } }", P4Error,       # p4c: the condition is required
     "t.p4:1:29: error: syntax error, unexpected ;"),
    ("control c() { apply { bit<8> x; for (x in 1 .. 3) { } } }", P4Error,   # and the type
     "t.p4:1:40: error: syntax error, unexpected IN"),
    ("control c() { action a() {} }", P4Error,
     "t.p4:1:29: error: syntax error, unexpected }, expecting ACTION or CONST or TABLE"),
    ("control c() { bit<8> x; state }", P4Error,
     "t.p4:1:25: error: syntax error, unexpected STATE, expecting ACTION or CONST or TABLE"),
    ("parser p() { }", P4Error,                               # p4c: a parser has a state
     "t.p4:1:14: error: syntax error, unexpected }, expecting CONST or STATE or VALUESET"),
    ("parser p() { bit<8> x; control }", P4Error,
     "t.p4:1:24: error: syntax error, unexpected CONTROL, expecting CONST or STATE or VALUESET"),
    ("parser p() { state start { transition accept; }\nconst bit<8> x = 1;\n}", P4Error,
     "t.p4:2:1: error: syntax error, unexpected CONST, expecting STATE"),    # locals go first
    ("control c() { table t { } apply { } }", P4Error,      # p4c: a table has a property
     "t.p4:1:25: error: syntax error, unexpected }"),
    ("#ifdef A\nconst bit<8> X = 1;\n", P4Error, "t.p4:1:1: error: unterminated #ifdef"),   # cpp's
    ("#ifndef A\n#if B\n#endif\n#else\n", P4Error, "t.p4:1:1: error: unterminated #else"),
]


@pytest.mark.parametrize("text,kind,message", BAD)
def test_bad_inputs(text, kind, message):
    with pytest.raises(P4Error) as info:
        parse_text(text, "t.p4")
    assert type(info.value) is kind
    assert str(info.value) == message


def test_for_statements_parse():
    prog = parse_text("control c() { apply { for (bit<8> i = 0, j = 1; i < 4; i = i + 1) { break; }"
                      " for (bit<8> x in 1 .. 3) { continue; } for (; true;) {} } }", "t.p4")
    body = prog.decls[0].body.stmts
    assert isinstance(body[0], A.ForStmt) and len(body[0].init) == 2
    assert isinstance(body[0].init[0], A.VarDecl) and isinstance(body[0].init[1], A.AssignStmt)
    assert isinstance(body[0].body.stmts[0], A.BreakStmt)
    assert isinstance(body[1], A.ForInStmt) and body[1].typeref is not None
    assert isinstance(body[1].collection, A.Binary) and body[1].collection.op == ".."
    assert isinstance(body[2], A.ForStmt) and body[2].init == [] and body[2].update == []


def test_error_render_has_caret():
    with pytest.raises(P4Error) as info:
        parse_text("struct s {\n    bit<8> a\n}\n", "caret.p4")
    assert info.value.render().splitlines() == [
        "caret.p4:3:1: error: syntax error, unexpected }, expecting [ or ;", "}", "^"]


# --------------------------------------------------------------------------- locations
def test_locations_survive_includes_macros_and_comments(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "lib.p4").write_text("// library\nheader lib_t {\n    bit<8> f;\n}\n")
    (tmp_path / "local.p4").write_text("const bit<8> L = 1;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include <lib.p4>\n#include "local.p4"\n#define W 16\n'
                    "/* a\n   comment */  const bit<W>   X = 1;\n"
                    "      header h_t { bit<W> a; }\n")
    prog = parse_file(str(main), [str(inc)])
    d = {x.name: x for x in prog.decls}
    assert d["lib_t"].loc == A.Loc(str(inc / "lib.p4"), 2, 1)
    assert d["lib_t"].fields[0].loc == A.Loc(str(inc / "lib.p4"), 3, 5)
    assert d["L"].loc == A.Loc(str(tmp_path / "local.p4"), 1, 1)
    assert d["X"].loc == A.Loc(str(main), 5, 16)
    assert d["X"].type.width.value == 16
    assert d["h_t"].loc == A.Loc(str(main), 6, 7)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_trailing_whitespace_and_crlf_keep_tokens_apart(newline):
    # pcpp strips trailing whitespace and \r before lexing; columns must follow its text,
    # or tokens after a whitespace-only line are glued ("inouthsh").
    lines = ["control C(inout bit<8> x) {   ", "    apply {", "        x = 1;",
             "            ", "    }\t", "}", "control D(inout bit<8> y, in bit<8> z) { apply { } }"]
    prog = parse_text(newline.join(lines) + newline, "t.p4")
    d = {x.name: x for x in prog.decls}
    assert [p.name for p in d["D"].params] == ["y", "z"]
    assert d["D"].loc == A.Loc("t.p4", 7, 1)
    assert d["D"].params[1].loc.col == 27


def test_error_inside_included_file_names_it(tmp_path):
    (tmp_path / "bad.p4").write_text("header h {\n  bit<8> f\n}\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "bad.p4"\n')
    with pytest.raises(P4Error) as info:
        parse_file(str(main))
    assert info.value.loc == A.Loc(str(tmp_path / "bad.p4"), 3, 1)
    assert "bit<8> f" not in info.value.render()  # the caret line is line 3 of bad.p4
    assert info.value.render().splitlines()[1] == "}"


def test_line_directive_remaps():
    text = "const bit<8> A = 1;\n#line 100 \"orig.p4\"\nconst bit<8> B = 2;\nconst bit<8> C = 3;\n"
    d = decls(text)
    assert d["A"].loc == A.Loc("t.p4", 1, 1)
    assert d["B"].loc == A.Loc("orig.p4", 100, 1)
    assert d["C"].loc == A.Loc("orig.p4", 101, 1)
    with pytest.raises(P4Error) as info:
        parse_text("#line 7\n x y z;\n", "t.p4")
    assert str(info.value).startswith("t.p4:7:6:")


def test_preprocessor_keeps_strings_apostrophes_and_annotations():
    out = preprocess_text('// it\'s fine\n@name("a//b") const bit<8> X = 1; /* don\'t */\n', "p.p4")
    assert '@name("a//b") const bit<8> X = 1;' in out
    d = decls('// it\'s fine\n@name("a/*b*/") const bit<8> X = 1;\n')
    assert d["X"].annotations[0].exprs[0].value == "a/*b*/"


def test_function_macros_and_conditionals():
    d = decls("#define MAX(a, b) ((a) > (b) ? (a) : (b))\n#ifdef NOPE\nconst int Z = 0;\n"
              "#elif MAX(1, 2) == 2\nconst int Y = MAX(3, 4);\n#else\nconst int Z = 1;\n#endif\n")
    assert "Y" in d and "Z" not in d
    assert isinstance(d["Y"].value, A.Ternary)
    d = decls("const int Q = V;\n", defines={"V": "42"})
    assert d["Q"].value.value == 42


def test_pragma_global_names_and_misc():
    d = decls("@pragma my_pragma 1 2\nconst bit<8> P = 1;\n"
              "control c() { action a() {} table t { actions = { .a; } "
              "const default_action = .a(); support_timeout = true; } apply {} }\n"
              "struct S { bit<8> f; } const S s = { f = 1 };\n"
              "extern bool static_assert(bool c);\n"
              "const bool ok = static_assert(true);\n")
    pragma = d["P"].annotations[0]
    assert pragma.name == "my_pragma" and pragma.raw == "1 2"
    t = d["c"].locals[1]
    assert t.prop("actions").value[0].name.is_global
    da = t.prop("default_action")
    assert da.is_const and da.value.name.is_global and da.value.has_parens
    assert isinstance(t.prop("support_timeout").value, A.BoolLit)
    assert isinstance(d["s"].value, A.StructExpr)


def test_switch_on_values_and_unary_plus():
    sw = control_body("switch (x) { 1: { y = +1; } 2: 3: { } default: { } }")[0]
    assert [type(c.label).__name__ for c in sw.cases] == ["IntLit", "IntLit", "IntLit", "DefaultExpr"]
    assert sw.cases[1].body is None
