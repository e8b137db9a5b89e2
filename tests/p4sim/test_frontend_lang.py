"""Language forms the front end rewrites into the core AST, as p4c's front end does.

Compound assignment (``lhs op= rhs`` → ``lhs = lhs op (rhs)``, a call in the left side
evaluated once into a temporary), indexed slices (``e[lsb +: w]``), a parser state without
a transition (→ ``reject``), free-form annotation bodies with characters that start no
token, and the width limits p4c enforces while reading types and literals. Packet-level
behaviour is in ``stf/lang/compound_assign*.stf`` and ``stf/lang/indexed_slice.stf``.
"""
from __future__ import annotations

import pytest

from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.parser import parse_text


def apply_stmts(stmts: str, top: str = "") -> list:
    """The statements of ``control c``'s apply block, with ``top`` declared before it."""
    prog = parse_text(f"{top}\ncontrol c(inout bit<8> x, inout bit<8> y) {{ apply {{ {stmts} }} }}", "t.p4")
    return prog.decls[-1].body.stmts


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "|+|", "|-|"])
def test_compound_assignment_is_lhs_op_rhs(op: str) -> None:
    (st,) = apply_stmts(f"x {op}= y + 1;")
    assert isinstance(st, A.AssignStmt) and isinstance(st.lhs, A.NameRef)
    assert isinstance(st.rhs, A.Binary) and st.rhs.op == op
    # the left side is read again (a copy, not the same node); the right side is one operand
    assert isinstance(st.rhs.left, A.NameRef) and st.rhs.left.name == "x" and st.rhs.left is not st.lhs
    assert isinstance(st.rhs.right, A.Binary) and st.rhs.right.op == "+"


def test_shift_right_assign_needs_adjacent_characters() -> None:
    (st,) = apply_stmts("x >>= 2;")
    assert st.rhs.op == ">>"
    with pytest.raises(P4Error, match="syntax error"):
        apply_stmts("x > >= 2;")
    (cmp,) = apply_stmts("if (x > y) { }")
    assert cmp.cond.op == ">"


def test_compound_assignment_to_a_slice_and_a_stack_element() -> None:
    st1, st2 = apply_stmts("x[3:0] += 1; h.s[2].v |= 4;", top="header s_t { bit<8> v; } struct hs { s_t[4] s; }")
    assert isinstance(st1.lhs, A.Slice) and isinstance(st1.rhs.left, A.Slice)
    assert isinstance(st2.lhs, A.Member) and isinstance(st2.rhs.left.expr, A.Index)


def test_call_in_left_side_runs_once_through_a_temporary() -> None:
    top = "bit<8> f(inout bit<8> v) { v = v + 1; return v; }"
    (block,) = apply_stmts("h[f(y) & 3] ^= 1;", top=top)
    assert isinstance(block, A.BlockStmt)
    decl, assign = block.stmts
    assert isinstance(decl, A.VarDecl) and isinstance(decl.init, A.Call) and decl.init.func.name == "f"
    assert isinstance(decl.type, A.BitType)
    # both reads of the left side use the temporary, neither calls f again
    for side in (assign.lhs, assign.rhs.left):
        assert side.index.left.name == decl.name
    assert not any(isinstance(n, A.Call) for n in _nodes(assign))


def test_call_of_unknown_result_type_in_left_side_is_unsupported() -> None:
    with pytest.raises(P4Unsupported, match="compound assignment"):
        apply_stmts("h[r.read(y)] += 1;")


def test_indexed_slice_is_a_slice() -> None:
    (st,) = apply_stmts("x = y[4 +: 4];")
    assert isinstance(st.rhs, A.Slice)
    assert (st.rhs.hi.value, st.rhs.lo.value) == (7, 4)
    (st,) = apply_stmts("x[y +: 2] = 1;")
    # a non-literal lsb: msb = lsb + width - 1, folded by the checker
    assert st.lhs.hi.op == "-" and st.lhs.hi.left.op == "+" and st.lhs.lo.name == "y"


def test_state_without_transition_goes_to_reject() -> None:
    prog = parse_text("extern packet_in { } parser p(packet_in b) { state start { } }", "t.p4")
    tr = prog.decls[1].states[0].transition
    assert (tr.state, tr.select_keys) == ("reject", None)


def test_free_form_annotation_may_hold_any_character() -> None:
    prog = parse_text("@note(that's it - 'quoted' $5)\nconst bit<8> K = 1;", "t.p4")
    assert "that" in prog.decls[0].annotations[0].raw and "'" in prog.decls[0].annotations[0].raw
    with pytest.raises(P4Error, match=r"t\.p4:1:18: error: unexpected character '\$'"):
        parse_text("const bit<8> K = $1;", "t.p4")


@pytest.mark.parametrize("text, message", [
    ("const bit<2048> K = 1;", None),
    ("const int<2048> K = 1;", None),
    ("const bit<8> K = (bit<8>)2048w1;", None),
    ("const bit<2049> K = 1;", "t.p4:1:11: error: bit<2049>: Compiler only supports widths up to 2048"),
    ("const bit<8> K = (bit<8>)2049w1;", "t.p4:1:26: error: 2049w1: 2049 size too large"),
    ("header h { varbit<4294967296> v; }",
     "t.p4:1:19: error: 4294967296: this implementation does not support bitstrings this large"),
])
def test_width_limits_of_p4c(text: str, message: str) -> None:
    if message is None:
        parse_text(text, "t.p4")
        return
    with pytest.raises(P4Error) as info:
        parse_text(text, "t.p4")
    assert str(info.value) == message


def _nodes(node: A.Node) -> list[A.Node]:
    from p4sim.frontend.validate import walk

    return [n for n, _ in walk(node, ())]


def test_multiline_string_then_error_position() -> None:
    text = '@description("first\nsecond")\nconst bit<8> K = 1;\nconst bit<8> L = $;'
    with pytest.raises(P4Error) as info:
        parse_text(text, "t.p4")
    assert str(info.value) == "t.p4:4:18: error: unexpected character '$'"
    prog = parse_text(text.rsplit("\n", 1)[0], "t.p4")
    assert prog.decls[0].annotations[0].exprs[0].value == "first\nsecond"


def test_apply_block_may_be_annotated() -> None:
    prog = parse_text('control c() { apply @noWarn("unused") { } }', "t.p4")
    assert [a.name for a in prog.decls[0].body.annotations] == ["noWarn"]


def test_p4runtime_translation_type_is_grammar() -> None:
    parse_text('@p4runtime_translation("p4.org/x", bit<32>) type bit<9> port_t;', "t.p4")
    parse_text('@p4runtime_translation("p4.org/x", string) type bit<9> port_t;', "t.p4")
    # p4c-bm2-ss 1.2.5.16: a width written as an expression is a syntax error here (its text,
    # measured with the type in use), which p4c reports only when it writes P4Info, and only
    # for a type it keeps (test_p4info_newtypes): the parser keeps it on the annotation
    prog = parse_text('@p4runtime_translation("p4.org/x", bit<8+8>) type bit<9> port_t;', "t.p4")
    message, loc = prog.decls[0].annotations[0].deferred_error
    assert (message, str(loc)) == ("syntax error, unexpected +, expecting > or R_ANGLE_SHIFT", "t.p4:1:41")
