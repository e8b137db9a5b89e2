"""Front-end diagnostics of p4sim: a table of bad P4_16 programs and the exact message each gets.

Every case is a small v1model program that the reference compiler (p4c) rejects, built by
:func:`program` from a snippet dropped into a fixed skeleton. The expected position is marked
in the snippet with ``$`` (a character P4 source never uses); the marker is removed and its
line and column become the expected ``file:line:col``. For example::

    Bad("undeclared-name", "x: declaration not found", apply="hdr.h.a = $x;")

expects ``bad.p4:<line>:<col>: error: x: declaration not found`` with the column of ``x``.
Cases where p4sim still accepts the program or gives a message that does not name the
problem are kept and marked ``xfail(strict=True)`` so that a fix turns them into failures
to be promoted. The last tests run ``python -m p4sim check`` end to end.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

import pytest

from p4sim.engine import load_program_text
from p4sim.errors import P4Error, P4Unsupported

FILENAME = "bad.p4"
MARK = "$"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DEFAULT_STATES = """\
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }"""


def program(top: str = "", fields: str = "", parser_locals: str = "", states: str = DEFAULT_STATES,
            locals_: str = "", apply: str = "", deparser: str = "pkt.emit(hdr.h);",
            main: bool = True, compute: str = "", verify: str = "") -> str:
    """A complete v1model program with the snippets in place.

    ``top`` goes after the includes, ``fields`` into ``headers_t``, ``locals_`` and ``apply``
    into ``MyIngress``, ``states`` (and ``parser_locals``) into ``MyParser``, ``compute``
    into ``MyComputeChecksum``, ``verify`` into ``MyVerifyChecksum``.

    Example::

        >>> "hdr.h.a = 1;" in program(apply="hdr.h.a = 1;")
        True
    """
    text = f"""\
#include <core.p4>
#include <v1model.p4>
header h_t {{
    bit<8> a;
    bit<8> b;
}}
{top}
struct headers_t {{
    h_t h;
{fields}
}}
struct meta_t {{
    bit<8>  m;
    bit<16> w;
    bool    flag;
}}
parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {{
{parser_locals}
{states}
}}
control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {{ apply {{ {verify} }} }}
control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {{
{locals_}
    apply {{
{apply}
    }}
}}
control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {{ apply {{ }} }}
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) {{ apply {{ {compute} }} }}
control MyDeparser(packet_out pkt, in headers_t hdr) {{
    apply {{ {deparser} }}
}}
"""
    if main:
        text += ("V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),\n"
                 "         MyComputeChecksum(), MyDeparser()) main;\n")
    return text


def split_marker(text: str) -> tuple[str, Optional[tuple[int, int]]]:
    """Remove the single ``$`` marker; return the clean text and the marker's (line, col).

    Example::

        >>> split_marker("ab\\nc$d")
        ('ab\\ncd', (2, 2))
    """
    pos = text.find(MARK)
    if pos < 0:
        return text, None
    assert text.count(MARK) == 1, "one position marker per case"
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return text[:pos] + text[pos + 1:], (line, col)


@dataclass
class Bad:
    """One rejected program: snippets for :func:`program` and the diagnostic it must get."""

    id: str
    message: str
    kind: str = "error"             # "error" or "unsupported"
    xfail: Optional[str] = None     # reason when p4sim does not (yet) reject it properly
    at: Optional[str] = None        # expected position = first occurrence of this text (no marker)
    snippets: dict[str, Any] = field(default_factory=dict)

    def param(self) -> Any:
        marks = [pytest.mark.xfail(reason=self.xfail, strict=True)] if self.xfail else []
        return pytest.param(self, id=self.id, marks=marks)


def bad(id_: str, message: str, kind: str = "error", xfail: Optional[str] = None,
        at: Optional[str] = None, **snippets: Any) -> Any:
    """A ``pytest.param`` for one :class:`Bad` case (``snippets`` go to :func:`program`)."""
    return Bad(id_, message, kind, xfail, at, snippets).param()


def position_of(text: str, needle: str) -> tuple[int, int]:
    """(line, col) of the first occurrence of ``needle`` in ``text``.

    Example::

        >>> position_of("ab\\ncd", "d")
        (2, 2)
    """
    pos = text.index(needle)
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


# Generic functions for the generics cases.
GENERIC_FNS = """
T id<T>(in T x) { return x; }
T pick<T>(in bool c, in T x, in T y) { return c ? x : y; }
void swap<T>(inout T x, inout T y) { T t = x; x = y; y = t; }
T zero<T>() { T z; return z; }
"""

# Three actions for the table and switch cases (a2 has one control-plane parameter).
ACTIONS = """
    action a1() { }
    action a2(bit<8> v) { hdr.h.b = v; }
    action a3() { }
"""

# BMv2's control graph: p4c-bm2-ss's two messages ({} is the table's control-plane name)
LOOP = "Program can not be implemented on this target since it contains a path from table {} back to itself"
SPLIT = "Program is not supported by this target, because table {} has multiple successors"


def graph_tables(t: str = "t") -> str:
    """Two actions and the tables ``t`` (its name as given, with a marker) and ``u``.

    Example::

        >>> "table $t {" in graph_tables("$t")
        True
    """
    return ("\n    action a1() { }\n    action a3() { hdr.h.b = 3; }\n"
            f"    table {t} {{ key = {{ hdr.h.a: exact; }} actions = {{ a1; a3; }} }}\n"
            "    table u { key = { hdr.h.b: exact; } actions = { a1; a3; } }\n")


def sub_control(t: str = "st") -> str:
    """A control ``Sub`` applying its table (named ``t``, a marker allowed) once."""
    return (f"control Sub(inout h_t h) {{ action s1() {{ }} table {t} {{ key = {{ h.a: exact; }} "
            "actions = { s1; } } apply { st.apply(); } }")


CASES = [
    # ---------------------------------------------------------------- names and fields
    bad("undeclared-name", "x: declaration not found", apply="hdr.h.a = $x;"),
    bad("undeclared-type", "foo_t: declaration not found", locals_="$foo_t v;"),
    # p4c's ResolveReferences: of the names nothing declares, the first in the file, not the
    # first block V1Switch runs (onos's fabric.p4 without CPU_PORT; issue 35, second corpus)
    bad("undeclared-names-in-source-order", "NOT_A: declaration not found",
        top="control Early(inout bit<8> x) { apply { x = $NOT_A; } }",
        states="    state start { pkt.extract(hdr.h); transition select(hdr.h.a) { NOT_B: accept; default: accept; } }"),
    bad("unknown-field", "hdr.h.z: type h_t has no field 'z'", apply="$hdr.h.z = 1;"),
    bad("unknown-struct-field", "meta.q: type meta_t has no field 'q'", apply="hdr.h.a = $meta.q;"),
    bad("unknown-error-member", "error.Nope: no such error",
        apply="if (standard_metadata.parser_error == $error.Nope) { }"),
    # ---------------------------------------------------------------- widths and types
    bad("assign-width-mismatch", "'hdr.h.a = meta.w'", apply="$hdr.h.a = meta.w;"),
    # p4c's TypeInference messages (p4c-bm2-ss 1.2.5.16, measured; issue 35, third corpus)
    bad("arith-width-mismatch", "hdr.h.a + meta.w: Cannot operate on values with different widths 8 and 16",
        apply="meta.w = $hdr.h.a + meta.w;"),
    bad("compare-width-mismatch", "'hdr.h.a' with type 'bit<8>' cannot be compared to 'meta.w' with type 'bit<16>'",
        apply="if ($hdr.h.a == meta.w) { }"),
    bad("compare-width-mismatch-constant", "'hdr.h.a' with type 'bit<8>' cannot be compared to '4w0' with type 'bit<4>'",
        top="const bit<4> VERSION = 0;", apply="if ($hdr.h.a == VERSION) { }"),
    bad("constant-width-mismatch", "5 + 3: operands have different types: bit<16> and bit<8>",
        apply="meta.w = $16w5 + 8w3;"),
    bad("relational-width-mismatch", "hdr.h.a < 1: not defined on bit<8> and bit<16>",
        apply="if ($hdr.h.a < 16w1) { }"),
    bad("assign-width-mismatch-literal", "'hdr.h.a = 16w3'", apply="$hdr.h.a = 16w3;"),
    bad("assign-width-mismatch-expression", "'hdr.h.a = 3 + meta.w'", apply="$hdr.h.a = 16w3 + meta.w;"),
    bad("compound-assign-width-mismatch-hex", "'hdr.h.a -= 16w0x1f'", apply="$hdr.h.a -= 16w0x1F;"),
    # p4c-bm2-ss: "shift amount limited to 8 bits on this target" (a shift it cannot fold)
    bad("shift-amount-too-wide", ">>: shift amount of type bit<16> limited to 8 bits on this "
        "target (as p4c-bm2-ss); cast it, e.g. (bit<8>)",
        apply="hdr.h.a = $hdr.h.b >> meta.w;"),
    bad("shift-amount-typed-constant-too-wide", "<<: shift amount of type bit<32> limited to 8 "
        "bits on this target (as p4c-bm2-ss); cast it, e.g. (bit<8>)",
        apply="meta.w = $meta.w << 32w2;"),
    bad("if-condition-not-bool", "expression: cannot convert type bit<8> to bool",
        apply="if ($hdr.h.a) { }"),
    bad("not-on-bit", "!: operand must be bool, not bit<8>", apply="meta.flag = $!hdr.h.a;"),
    bad("bool-arith", "+: operands must be numeric, not bool",
        apply="meta.flag = $meta.flag + meta.flag;"),
    bad("cast-bool-to-bit8", "cast: cannot cast bool to bit<8> (only bit<1>)",
        apply="hdr.h.a = $(bit<8>)meta.flag;"),
    bad("cast-int8-to-bit16",
        "cast: cannot cast int<8> to bit<16> directly (change sign and width in two steps)",
        locals_="int<8> s = -1;", apply="meta.w = $(bit<16>)s;"),
    bad("shift-by-signed", "<<: shift amount must be unsigned",
        locals_="int<8> s = 1;", apply="hdr.h.a = $hdr.h.a << s;"),
    bad("signed-division", "/: division is not defined on signed values",
        locals_="int<8> s = 1;", apply="s = $s / s;"),
    bad("slice-out-of-range", "hdr.h.a[8:0]: slice [8:0] out of range for bit<8>",
        apply="meta.w[8:0] = $hdr.h.a[8:0];"),
    bad("slice-of-bool", "meta.flag[0:0]: cannot slice a value of type bool",
        apply="hdr.h.a[0:0] = $meta.flag[0:0];"),
    bad("stack-index-out-of-bounds", "Array index 2 larger or equal to array size 2",   # p4c 1.2.5.16
        fields="    h_t[2] s;", apply="hdr.s[$2].a = 1;"),
    bad("stack-index-negative", "hdr.s[-1]: Negative array index -1",
        fields="    h_t[2] s;", apply="$hdr.s[-1].a = 1;"),
    bad("stack-index-out-of-bounds-typed", "Array index 8w3 larger or equal to array size 2",
        fields="    h_t[2] s;", apply="hdr.s[$8w3].a = 1;"),
    # ---------------------------------------------------------------- assignments
    # p4c-bm2-ss 1.2.5.16's type checker (measured): the whole target is quoted
    bad("assign-in-param", "Expression x cannot be the target of an assignment",
        locals_="action set(in bit<8> x) { $x = 1; }"),
    bad("assign-directionless-param", "Expression x cannot be the target of an assignment",
        locals_="action set(bit<8> x) { $x = 1; }"),
    bad("assign-constant", "Expression K cannot be the target of an assignment",
        locals_="const bit<8> K = 1;", apply="$K = 2;"),
    bad("assign-in-control-param", "Expression hdr.h.a cannot be the target of an assignment",
        deparser="$hdr.h.a = 1;"),
    bad("assign-field-of-in-param", "Expression x.a cannot be the target of an assignment",
        top="void f(in h_t x) { $x.a = 1; }", apply="f(hdr.h);"),
    bad("assign-slice-of-in-param", "Expression x[3:0] cannot be the target of an assignment",
        locals_="action set(in bit<8> x) { $x[3:0] = 1; }", apply="set(1);"),
    bad("compound-assign-in-param", "Expression x cannot be the target of an assignment",
        locals_="action set(in bit<8> x) { $x += 1; }", apply="set(1);"),
    bad("in-param-as-out-argument", "'g(x)'",
        top="void g(out bit<8> y) { y = 1; }", locals_="action set(in bit<8> x) { $g(x); }", apply="set(1);"),
    # BMv2's deparser runs emits, extern calls and constant assignments only (p4c-bm2-ss
    # 1.2.5.16, measured; p4sim accepted these): a local given a value that is not a
    # constant, or a header local declared without one (p4c sets it invalid there)
    bad("deparser-local-from-header", "t = hdr.h: not supported within a deparser on this target",
        deparser="$h_t t = hdr.h; t.setInvalid(); pkt.emit(t);"),
    bad("deparser-header-local-without-value", "t.setInvalid(): not supported within a deparser on this target",
        deparser="$h_t t; t.setValid(); t.a = 8w1; t.b = 8w2; pkt.emit(t);"),
    bad("deparser-local-assigned-later", "t.setInvalid(): not supported within a deparser on this target",
        deparser="$h_t t; t = hdr.h; pkt.emit(t);"),
    bad("deparser-local-copy-then-written", "t = hdr.h: not supported within a deparser on this target",
        deparser="$h_t t = hdr.h; t.a = 8w1; pkt.emit(t);"),
    bad("deparser-header-local-only-emitted", "t.setInvalid(): not supported within a deparser on this target",
        deparser="$h_t t; pkt.emit(t); pkt.emit(hdr.h);"),
    # p4sim accepted these (the deparser's headers are an in parameter)
    bad("set-invalid-in-deparser", "hdr.h.setInvalid: must be applied to a left-value",
        deparser="pkt.emit(hdr.h); $hdr.h.setInvalid();"),
    bad("set-valid-in-deparser", "hdr.h.setValid: must be applied to a left-value",
        deparser="$hdr.h.setValid(); pkt.emit(hdr.h);"),
    # ---------------------------------------------------------------- calls and arguments
    bad("too-many-arguments", "set: too many arguments (2 given, 1 expected)",
        locals_="action set(in bit<8> x) { hdr.h.a = x; }", apply="$set(1, 2);"),
    bad("missing-argument", "set: missing argument for parameter 'y'",
        locals_="action set(in bit<8> x, in bit<8> y) { hdr.h.a = x + y; }", apply="$set(1);"),
    bad("named-arg-unknown", "set: no parameter named 'z'",
        locals_="action set(in bit<8> x) { hdr.h.a = x; }", apply="set($z = 1);"),
    bad("named-and-positional-mixed", "set: cannot mix named and positional arguments",
        locals_="action set(in bit<8> x, in bit<8> y) { hdr.h.a = x + y; }", apply="$set(1, y = 2);"),
    bad("out-arg-not-lvalue", "1 cannot be assigned",
        locals_="action get(out bit<8> x) { x = 1; }", apply="get($1);"),
    bad("action-in-expression", "action set does not return a value",
        locals_="action set() { }", apply="meta.flag = $set();"),
    bad("isvalid-with-argument", "isValid: takes no arguments",
        apply="meta.flag = $hdr.h.isValid(1);"),
    # ---------------------------------------------------------------- compile-time constants
    bad("non-constant-width", "meta.m: expected a compile-time constant", locals_="bit<($meta.m)> v;"),
    bad("non-constant-table-size", "hdr.h.a: expected a compile-time constant",
        locals_="action a1() { } table t { key = { hdr.h.a: exact; } actions = { a1; } size = $hdr.h.a; }",
        apply="t.apply();"),
    bad("non-constant-const-init", "K: initializer is not a compile-time constant",
        locals_="const bit<8> K = $hdr.h.a;"),
    # ---------------------------------------------------------------- declarations
    # p4c-bm2-ss 1.2.5.16's words (measured): top level, a control's/parser's locals, a block
    bad("duplicate-declaration", "K duplicates K.", top="const bit<8> K = 1;\n$const bit<8> K = 2;"),
    bad("duplicate-type-declaration", "h_t duplicates h_t.", top="$header h_t { bit<8> z; }"),
    bad("duplicate-local", "v: Duplicates declaration v", locals_="bit<8> v;\n$bit<8> v;"),
    bad("duplicate-type-and-function", "Re-declaration of foo with different type:",
        top="control foo(in bit<8> x, out bit<8> y) { apply { y = x + 7; } }\n$bool foo() { return true; }"),
    bad("duplicate-action", "a: Duplicates declaration a", locals_="action a() { }\n$action a() { }", apply="a();"),
    bad("duplicate-parser-local", "v: Duplicates declaration v", parser_locals="bit<8> v = 1;\n$bit<8> v = 2;"),
    bad("duplicate-in-apply-block", "Duplicate declaration of v; previous at",
        apply="bit<8> v = 1;\n$bit<8> v = 2; hdr.h.a = v;"),
    bad("duplicate-in-action-body", "Duplicate declaration of v; previous at",
        locals_="action a() { bit<8> v = 1;\n$bit<8> v = 2; hdr.h.a = v; }", apply="a();"),
    bad("duplicate-field", "header dup_t: duplicate field 'a'",
        top="header dup_t { bit<8> a; $bit<8> a; }"),
    bad("duplicate-enum-member", "enum E: duplicate member", top="$enum E { A, B, A }"),
    bad("header-field-of-struct-type",
        "header bad_t: field 's' has type inner_t, which is not allowed in a header",
        top="struct inner_t { bit<8> x; h_t h; }\nheader bad_t { $inner_t s; }"),
    bad("two-varbit-fields", "header vb_t: at most one varbit field is allowed",
        top="$header vb_t { varbit<16> x; varbit<16> y; }"),
    bad("directionless-before-directed",
        "action set: directionless parameters must come after directed ones",
        locals_="action set(bit<8> v, $inout bit<8> x) { x = v; }"),
    bad("no-main", "no package instantiation named 'main' (expected: V1Switch(...) main;)", main=False),
    # ---------------------------------------------------------------- parsers
    bad("undefined-parser-state", "transition to unknown state 'nowhere'",
        states="    state start { $transition nowhere; }"),
    bad("parser-without-start", "parser MyParser has no start state", at="parser MyParser",
        states="    state begin { transition accept; }"),
    bad("select-keyset-arity", "keyset has 3 elements, select has 2 keys",
        states="    state start { pkt.extract(hdr.h);\n"
               "        transition select(hdr.h.a, hdr.h.b) { $(1, 2, 3): accept; default: reject; } }"),
    bad("extract-non-header", "extract: argument must be a header, not meta_t",
        states="    state start { pkt.extract($meta); transition accept; }"),
    bad("extract-two-args-fixed-header", "extract: the two-argument form needs a header with a varbit field",
        states="    state start { $pkt.extract(hdr.h, 32); transition accept; }"),
    bad("return-in-parser", "return is not allowed in a parser",
        states="    state start { $return; }"),
    bad("next-outside-parser", "hdr.s.next: 'next' can only be used in a parser",
        fields="    h_t[2] s;", apply="$hdr.s.next.a = 1;"),
    # p4c-bm2-ss 1.2.5.16's type checker (measured; petr4's STF programs emit bits)
    bad("emit-non-header",
        "pkt.emit(hdr.h.a): argument must be a header, stack or union, or a struct or tuple of such types",
        deparser="$pkt.emit(hdr.h.a);"),
    bad("emit-cast-bits",
        "pkt.emit((bit<16>)hdr.h.a): argument must be a header, stack or union, or a struct or tuple of such types",
        deparser="$pkt.emit((bit<16>)hdr.h.a);"),
    # ---------------------------------------------------------------- tables and switch
    # p4c's KeyNameGenerator: a key it cannot name needs @name (innermost part reported)
    bad("table-key-complex-bool", "true: Complex key expression requires a @name annotation",
        locals_=ACTIONS + "table t { key = { $true: exact; } actions = { a1; } }", apply="t.apply();"),
    bad("table-key-complex-cast", "(bit<16>)hdr.h.a: Complex key expression requires a @name annotation",
        locals_=ACTIONS + "table t { key = { $(bit<16>)hdr.h.a: exact; } actions = { a1; } }", apply="t.apply();"),
    bad("table-key-complex-inner", "hdr.h.a + 1: Complex key expression requires a @name annotation",
        locals_=ACTIONS + "table t { key = { ($hdr.h.a + 1) & 8w15: exact; } actions = { a1; } }",
        apply="t.apply();"),
    bad("table-key-struct", "table t: key meta of type meta_t cannot be matched",
        locals_=ACTIONS + "table t { key = { $meta: exact; } actions = { a1; } default_action = a1(); }", apply="t.apply();"),
    bad("unknown-match-kind", "fuzzy: unknown match kind",
        locals_=ACTIONS + "table t { key = { $hdr.h.a: fuzzy; } actions = { a1; } default_action = a1(); }", apply="t.apply();"),
    bad("default-action-not-in-actions", "table t: default action a3 is not in the actions list",
        locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { a1; }\n"
                          "    $default_action = a3(); }", apply="t.apply();"),
    bad("default-action-missing-args", "action a2: expected 1 arguments, got 0",
        locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { a1; a2; }\n"
                          "    default_action = $a2(); }", apply="t.apply();"),
    bad("table-without-actions", "table t has no actions property",
        locals_=ACTIONS + "$table t { key = { hdr.h.a: exact; } }", apply="t.apply();"),
    bad("table-apply-with-args", "apply: tables take no arguments",
        locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { a1; } default_action = a1(); }", apply="$t.apply(1);"),
    bad("switch-label-not-action", "switch label 'a3' is not an action of table t",
        locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { a1; a2; } default_action = a1(); }",
        apply="switch (t.apply().action_run) { a1: { } $a3: { } }"),
    bad("switch-duplicate-default", "switch: more than one default label",
        locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { a1; a2; } default_action = a1(); }",
        apply="switch (t.apply().action_run) { a1: { } default: { } $default: { } }"),
    # ---------------------------------------------------------------- functions
    bad("return-value-in-void-function", "return with a value in a function that returns void",
        top="void f() { $return 1; }"),
    bad("missing-return-value", "return without a value in a function that returns bit<8>",
        top="bit<8> f() { $return; }"),
    # ---------------------------------------------------------------- placement, flow and extern-argument rules
    bad("exit-in-parser", "exit is not allowed in a parser",
        states="    state start { $exit; }"),
    bad("switch-in-parser", "switch statements are not allowed in a parser",
        states="    state start { $switch (hdr.h.a) { 1: { } } transition accept; }"),
    # ---------------------------------------------------------------- p4c-bm2-ss's simple_switch back end
    bad("hash-data-not-a-struct", "hdr.h.a: expected a struct",
        apply="bit<16> o; hash(o, HashAlgorithm.crc16, 16w0, $hdr.h.a, 16w100);"),
    bad("checksum-data-computed", "hdr.h.b + 1: Computations are not supported in update_checksum",
        compute="update_checksum(true, { hdr.h.a, $hdr.h.b + 1 }, meta.w, HashAlgorithm.csum16);"),
    bad("checksum-outside-checksum-controls", "update_checksum: unknown extern function",
        apply="$update_checksum(true, { hdr.h.a }, meta.w, HashAlgorithm.csum16);"),
    bad("checksum-control-other-statement",
        "meta.m = 1: Only calls to update_checksum or update_checksum_with_payload allowed",
        compute="$meta.m = 1;"),
    bad("shift-by-a-new-type", "x: The right operand of shift must be either an expression of type bit<S> "
        "or a compile-time known value that is a non-negative integer, but is amount_t",
        top="type bit<8> amount_t;", apply="amount_t x = (amount_t)hdr.h.b; hdr.h.a = hdr.h.a << $x;"),
    # p4c-bm2-ss 1.2.5.16 (measured): a declaration may not take a parameter's name in its
    # scope (an error, ResolveReferences::checkShadowing); p4sim accepted the second
    bad("local-named-as-an-action-parameter", "declaration of 'x' shadows a parameter 'x'",
        locals_="action a1(bit<8> x) { bit<8> $x = 1; hdr.h.a = x; } "
                "table t { key = { hdr.h.a: exact; } actions = { a1; } }", apply="t.apply();"),
    bad("local-named-as-a-control-parameter", "declaration of 'meta' shadows a parameter 'meta'",
        apply="bit<8> $meta = 1; hdr.h.a = meta;"),
    bad("local-named-as-a-function-parameter", "declaration of 'x' shadows a parameter 'x'",
        top="bit<8> f(in bit<8> x) { bit<8> $x = 1; return x; }", apply="hdr.h.a = f(hdr.h.b);"),
    bad("state-local-named-as-a-parser-parameter", "declaration of 'meta' shadows a parameter 'meta'",
        states="    state start { bit<8> $meta = 1; pkt.extract(hdr.h); hdr.h.a = meta; transition accept; }"),
    # p4c-bm2-ss 1.2.5.16 (measured): a @field_list name is resolved where it is written,
    # even in a struct no block uses (p4sim accepted that program)
    bad("field-list-name-not-declared", "nope: declaration not found",
        top="struct other_t { @field_list($nope) bit<8> x; }"),
    # p4c-bm2-ss 1.2.5.16 (measured): arithmetic is not defined on a `type` (p4sim added it)
    bad("arith-on-a-new-type", "+: cannot be applied to expression 'x' with type 'amount_t'",
        top="type bit<8> amount_t;", apply="amount_t x = (amount_t)hdr.h.b; hdr.h.a = (bit<8>)($x + x);"),
    bad("bitwise-on-a-new-type-right", "&: cannot be applied to expression 'x' with type 'amount_t'",
        top="type bit<8> amount_t;", apply="amount_t x = (amount_t)hdr.h.b; hdr.h.a = hdr.h.a & $x;"),
    bad("error-exact-key-in-an-entry", "error.NoError: unsupported exact key expression",
        locals_=ACTIONS + "table t { key = { standard_metadata.parser_error: exact; } actions = { a1; } "
                          "const entries = { $error.NoError: a1(); } }", apply="t.apply();"),
    bad("if-in-deparser", "IfStatement: not supported within a deparser on this target",
        deparser="$if (hdr.h.isValid()) { pkt.emit(hdr.h); }"),
    bad("for-in-parser", "for statements are not allowed in a parser",
        states="    state start { if (hdr.h.a == 1) { $for (bit<8> i = 0; i < 2; i = i + 1) { } } transition accept; }"),
    bad("for-in-function-called-from-parser", "ForStatement: not supported in parser on this target",
        top="bit<8> f() { bit<8> a = 0; $for (bit<8> i = 0; i < 2; i = i + 1) { a = a + 1; } return a; }\n"
            "bit<8> g() { return f(); }",
        states="    state start { hdr.h.a = g(); transition accept; }"),
    bad("action-call-in-parser", "actions cannot be called from a parser",
        top="action pa() { }", states="    state start { $pa(); transition accept; }"),
    bad("table-apply-in-action", "tables cannot be applied from an action",
        locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { a1; } default_action = a1(); }\n"
                          "    action x() { $t.apply(); }", apply="x();"),
    bad("missing-return-on-some-path", "function f does not return a value on all paths",
        top="$bit<8> f(in bit<8> x) { if (x == 0) { return 1; } }", apply="hdr.h.a = f(hdr.h.a);"),
    bad("int-typed-variable", "variable x cannot have type int",
        locals_="$int x = 1;", apply="hdr.h.a = (bit<8>)x;"),
    bad("extern-arg-type-mismatch",
        "mark_to_drop: argument for inout parameter 'standard_metadata' has type meta_t, "
        "expected standard_metadata_t",
        apply="mark_to_drop($meta);"),
    bad("extern-method-arg-type", "'c.count(meta.flag)'",   # p4c-bm2-ss 1.2.5.16, measured
        locals_="counter(8, CounterType.packets) c;", apply="$c.count(meta.flag);"),
    bad("register-read-out-width",
        "read: argument for out parameter 'result' has type bit<16>, expected bit<8>",
        locals_="register<bit<8>>(8) r;", apply="r.read($meta.w, 0);"),
    # p4c: TypeInference on the actions list (the first argument already binds 'v')
    bad("actions-list-too-many-args", "1: parameter v cannot be bound: it is set by the control plane",
        locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { a1; a2($1, 2); }\n"
                          "    default_action = a1(); }", apply="t.apply();"),
    # ---------------------------------------------------------------- generics
    bad("generic-type-arg-count", "id: expects 1 type argument(s), got 2",
        top=GENERIC_FNS, apply="hdr.h.a = $id<bit<8>, bit<8>>(hdr.h.a);"),
    bad("generic-conflicting-inference",
        "pick: type argument T is bit<8> (from 'x') but argument 'y' has type bit<16>",
        top=GENERIC_FNS, apply="hdr.h.a = pick(meta.flag, hdr.h.a, $meta.w);"),
    bad("generic-infer-from-untyped-literal",
        "id: cannot infer type argument T from an untyped integer (give the literal a width or write id<...>(...))",
        top=GENERIC_FNS, apply="hdr.h.a = $id(5);"),
    bad("generic-cannot-infer", "zero: cannot infer type argument T (write zero<...>(...))",
        top=GENERIC_FNS, apply="hdr.h.a = $zero();"),
    bad("generic-explicit-type-arg-mismatch", "expression: cannot convert type bit<8> to bit<16>",
        top=GENERIC_FNS, apply="meta.w = id<bit<16>>($hdr.h.a);"),
    bad("generic-int-type-arg", "id: int cannot be a type argument (give a width: bit<W> or int<W>)",
        top=GENERIC_FNS, apply="hdr.h.a = (bit<8>)id<$int>(5);"),
    bad("generic-out-arg-type", "swap: argument for inout parameter 'y' has type bit<16>, expected bit<8>",
        top=GENERIC_FNS, apply="swap<bit<8>>(hdr.h.a, $meta.w);"),
    bad("generic-body-checked-abstractly", "+: operands must be numeric, not T",
        top="T inc<T>(in T x) { return $x + x; }"),
    bad("type-args-on-plain-function", "f is not generic: it takes no type arguments",
        top="bit<8> f(in bit<8> x) { return x; }", apply="hdr.h.a = $f<bit<8>>(hdr.h.a);"),
    bad("generic-control-without-type-args",
        "control C: cannot infer type argument(s) T (write C<...>(...))",
        top="control C<T>(inout T v) { apply { } }", locals_="$C() c;"),
    bad("generic-control-type-arg-count", "control C: expects 1 type argument(s), got 2",
        top="control C<T>(inout T v) { apply { } }", locals_="$C<bit<8>, bit<8>>() c;"),
    bad("type-args-on-plain-control", "control D is not generic: it takes no type arguments",
        top="control D(inout bit<8> v) { apply { } }", locals_="$D<bit<8>>() d;"),
    bad("generic-control-apply-arg-type",
        "c: argument for inout parameter 'v' has type bit<8>, expected bit<16>",
        top="control C<T>(inout T v) { apply { } }", locals_="C<bit<16>>() c;",
        apply="c.apply($hdr.h.a);"),
    bad("generic-control-body-error", "'v = 8w1'",
        top="control C<T>(inout T v) { apply { $v = 8w1; } }", locals_="C<bit<16>>() c;",
        apply="c.apply(meta.w);"),
    bad("generic-parser-without-type-args",
        "parser P: cannot infer type argument(s) H (write P<...>(...))",
        top="parser P<H>(packet_in p, out H x) { state start { x = p.lookahead<H>(); transition accept; } }",
        parser_locals="    $P() sub;"),
    # ---------------------------------------------------------------- unsupported constructs
    bad("abstract-method-instantiation", "instantiation with abstract method implementations",
        kind="unsupported",
        top="extern Thing { Thing(); abstract bit<8> f(in bit<8> x); }",
        locals_="$Thing() th = { bit<8> f(in bit<8> x) { return x; } };"),
    bad("packet-in-length", "packet_in.length() (BMv2 does not implement it)",
        kind="unsupported",
        states="    state start { hdr.h.a = (bit<8>)$pkt.length(); transition accept; }"),
    # ---------------------------------------------------------------- programs that once crashed the front end
    # (issue 14: each gave a Python exception inside p4sim; p4c's message in each case)
    bad("width-not-an-int", "2147483648: this implementation does not support bitstrings this large",
        locals_="bit<$2147483648> v;"),
    bad("width-over-p4c-limit", "bit<4096>: Compiler only supports widths up to 2048",
        top="header w_t { bit<$4096> x; }"),
    bad("signed-width-over-p4c-limit", "int<1000000000>: Compiler only supports widths up to 2048",
        locals_="int<$1000000000> v;"),
    bad("literal-width-over-p4c-limit", "4096w1: 4096 size too large", apply="hdr.h.a = (bit<8>)$4096w1;"),
    # a width computed by a constant expression: refused when the type is made (p4c's
    # Type_Bits::get reports it without a position too)
    bad("computed-width-over-p4c-limit", "bit<4096>: Compiler only supports widths up to 2048",
        locals_="bit<(1 << 12)> v;"),
    bad("instance-in-function", "r: invalid declaration. Instantiations cannot be in a function or method.",
        top="void f() { $register<bit<8>>(4) r; }"),
    bad("instance-in-action", "r: declaration. Instantiations not allowed in actions.",
        locals_="action a() { $register<bit<8>>(4) r; }"),
    bad("instance-in-parser-state", "r: invalid declaration. Instantiations cannot be in a parser state.",
        states="    state start { $register<bit<8>>(4) r; transition accept; }"),
    bad("instance-in-apply-block", "r: invalid declaration. Instantiations cannot be in a control 'apply' block.",
        apply="$register<bit<8>>(4) r;"),
    bad("optional-control-constructor-param", "k: optional parameter not allowed here",
        top="control C(inout bit<8> v)(@optional $bit<8> k) { apply { v = k; } }"),
    bad("optional-function-param", "y: optional parameter not allowed here",
        top="bit<8> f(in bit<8> x, @optional $in bit<8> y) { return x; }"),
    bad("slice-bound-string", '"x": expected an integer value', apply='hdr.h.a = hdr.h.b[$"x":0];'),
    bad("slice-bound-negative", "-1: expected slice indexes to be non-negative",
        apply="hdr.h.a = (bit<8>)7[1:$-1];"),
    bad("slice-bounds-reversed", "hdr.h.b[0:7]: bit slicing should be specified as [msb:lsb]",
        apply="hdr.h.a = $hdr.h.b[0:7];"),
    bad("actions-list-binds-control-plane-param", "7: parameter v cannot be bound: it is set by the control plane",
        locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { a2($7); }\n"
                          "    default_action = a2(7); }", apply="t.apply();"),
    bad("default-action-constant-for-inout", "0: must be a left-value",
        locals_="action a4(inout bit<8> x, bit<8> v) { x = v; }\n"
                "table t { key = { hdr.h.a: exact; } actions = { a4(hdr.h.b); }\n"
                "    default_action = a4($0, 1); }", apply="t.apply();"),
    bad("tableonly-default-action", "default_action: Action marked with tableonly used as default action",
        locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { @tableonly a1; a3; }\n"
                          "    $default_action = a1(); }", apply="t.apply();"),
    bad("defaultonly-action-in-entry", "Entry: Action marked with defaultonly used in table",
        locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { a1; @defaultonly a3; }\n"
                          "    const entries = { $1 : a3(); } default_action = a3(); }", apply="t.apply();"),
    bad("tableonly-and-defaultonly", "Table 'MyIngress.t' has an action reference ('MyIngress.a1') "
        "which is annotated with both '@tableonly' and '@defaultonly'",
        locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { @tableonly @defaultonly $a1; a3; } }",
        apply="t.apply();"),
    bad("int-param-with-direction", "v: parameters with type int must be directionless",
        top="bit<8> f($in int v) { return (bit<8>)v; }"),
    bad("int-param-of-action", "v: actions cannot have parameters with type int",
        locals_="action a($int v) { }", apply="a(1);"),
    bad("control-instantiated-at-top-level", "c2: cannot instantiate at top-level",
        top="control C2() { apply { } }\n$C2() c2;"),
    bad("parser-never-ends", "parser MyParser: Parser never reaches accept or reject state",
        at="parser MyParser",
        states="    state start { transition s1; }\n    state s1 { pkt.extract(hdr.h); transition start; }"),
    # p4c-bm2-ss's midend (EliminateSwitch); an action nothing uses is removed before it
    bad("switch-in-action", "SwitchStatement: switch statements not supported in actions on this target",
        locals_="action a() { $switch (hdr.h.a) { 1: { } } }", apply="a();"),
    # p4c-bm2-ss's midend: SimplifySelectCases(requireConstants)
    bad("select-case-not-constant", "meta.m: must be a compile-time constant",
        states="    state start { pkt.extract(hdr.h);\n"
               "        transition select(hdr.h.a) { $meta.m: accept; default: reject; } }"),
    bad("select-range-bound-not-constant", "hdr.h.b: must be a compile-time constant",
        states="    state start { pkt.extract(hdr.h);\n"
               "        transition select(hdr.h.a) { 1 .. $hdr.h.b: accept; default: reject; } }"),
    # p4c's constant folding comes first on a select of constants (1.2.5.16, measured): a
    # range's or mask's bound, or a bool case, that is not constant gets its words
    bad("select-constant-key-range-bound-not-constant", "meta.m: expression must evaluate to a constant",
        states="    state start { pkt.extract(hdr.h);\n"
               "        transition select(8w5) { $meta.m .. 8w9: accept; default: reject; } }"),
    bad("select-constant-key-mask-not-constant", "meta.m: expression must evaluate to a constant",
        states="    state start { pkt.extract(hdr.h);\n"
               "        transition select(8w5) { 8w4 &&& $meta.m: accept; default: reject; } }"),
    bad("select-constant-bool-key-case-not-constant", "meta.flag: expression must evaluate to a constant",
        states="    state start { pkt.extract(hdr.h);\n"
               "        transition select(true) { $meta.flag: accept; default: reject; } }"),
    bad("select-constant-key-value-not-constant", "meta.m: must be a compile-time constant",
        states="    state start { pkt.extract(hdr.h);\n"
               "        transition select(8w5) { $meta.m: accept; default: reject; } }"),
    # p4c's type checker (1.2.5.16, measured): an extern method's argument that does not
    # convert to its bound type is reported as the call; an extern specialized with the
    # wrong number of type arguments (v1model's counter is not generic before 20200408)
    bad("extern-method-argument-does-not-convert", "'r.write(0, meta.w)'",
        locals_="register<bit<8>>(4) r;", apply="$r.write(0, meta.w);"),
    bad("extern-method-index-does-not-convert", "'r.write(meta.w, 8w1)'",
        locals_="register<bit<8>>(4) r;", apply="$r.write(meta.w, 8w1);"),
    bad("extern-specialized-though-not-generic",
        "counter<bit<8>>: Type counter has 0 type parameter(s), but it is specialized with 1",
        locals_="$counter<bit<8>>(4, CounterType.packets) c;", apply="c.count(0);"),
    bad("extern-specialized-with-too-many-type-arguments",
        "register<bit<8>, bit<32>>: Type register has 1 type parameter(s), but it is specialized with 2",
        locals_="$register<bit<8>, bit<32>>(4) r;", apply="r.write(0, 8w1);"),
    # p4c's type checker (1.2.5.16, measured): a cast to a struct type, at the type; it comes
    # before the back end's refusal of a local whose header is 4 bits wide (petr4)
    bad("cast-to-struct", "headers_t: cast not supported",
        top="struct s3_t { h_t h; }", apply="s3_t a = {h = {a = 1, b = 2}}; headers_t b = ($headers_t)a;"),
    bad("cast-to-struct-before-odd-header-local", "headers_t: cast not supported",
        top="header odd_t { bit<4> y; }\nstruct s2_t { odd_t h; }\nstruct s3_t { h_t h; }",
        apply="s2_t o; o.h.setValid(); o.h.y = 1; hdr.h.a = (bit<8>)o.h.y;\n"
              "s3_t a = {h = {a = 1, b = 2}}; headers_t b = ($headers_t)a;"),
    # p4c's type checker (1.2.5.16, measured)
    bad("push-front-in-parser", "hdr.s.push_front: 'push_front' and 'pop_front' for stacks cannot be used in a parser",
        fields="    h_t[2] s;",
        states="    state start { pkt.extract(hdr.h); $hdr.s.push_front(1); transition accept; }"),
    bad("pop-front-in-parser", "hdr.s.pop_front: 'push_front' and 'pop_front' for stacks cannot be used in a parser",
        fields="    h_t[2] s;",
        states="    state start { pkt.extract(hdr.h); $hdr.s.pop_front(1); transition accept; }"),
    bad("call-in-select-case", "one(): no function calls allowed in this context",
        top="bit<8> one() { return 1; }",
        states="    state start { pkt.extract(hdr.h);\n"
               "        transition select(hdr.h.a) { $one(): accept; default: reject; } }"),
    # compound assignment is rewritten to lhs = lhs op rhs by the parser (p4c: RemoveOpAssign)
    bad("compound-assign-call-of-unknown-type", "compound assignment += with a call in its left side "
        "other than of a non-generic function declared before", kind="unsupported", fields="    h_t[2] s;",
        states="    state start { pkt.extract(hdr.h);\n"
               "        hdr.s[pkt.lookahead<bit<1>>()].a $+= 1; transition accept; }"),
    # p4c's TypeInference on OpAssignmentStatement
    bad("compound-assign-bool", "|=: cannot be applied to 'meta.flag' with type 'bool'", apply="$meta.flag |= true;"),
    bad("compound-shift-assign-bool", "<<=: cannot be applied to 'meta.flag' with type 'bool'",
        apply="$meta.flag <<= 1;"),
    bad("compound-assign-width-mismatch", "'hdr.h.a += meta.w'",
        apply="$hdr.h.a += meta.w;"),
    # valid P4_16 that p4c-bm2-ss refuses (its BMv2 back end or its front end)
    bad("mark-to-drop-without-arguments",
        "Expected 1 argument for mark_to_drop(). Are you using an up-to-date v1model.p4?",
        apply="$mark_to_drop();"),
    bad("resubmit-with-data", "resubmit: unknown extern function", apply="$resubmit({ meta.m });"),
    bad("recirculate-with-data", "recirculate: unknown extern function", apply="$recirculate(meta);"),
    bad("clone3-with-data", "clone3: unknown extern function", apply="$clone3(CloneType.I2E, 32w7, { meta.m });"),
    bad("for-in-loop", "BMV2 does not support for-in loops",
        apply="$for (bit<8> k in 1 .. 4) { hdr.h.a = hdr.h.a + k; }"),
    bad("const-entries-with-priority", "Entry: Table with 'const' entries cannot have priorities",
        locals_=ACTIONS + "table t { key = { hdr.h.a: ternary; } actions = { a1; }\n"
                          "    const entries = { 8w1 &&& 8w1 : a1(); $priority = 10 : 8w2 &&& 8w2 : a1(); } }",
        apply="t.apply();"),
    bad("entries-priority-on-exact-key", "Key key match type does not require priorities, but some are specified",
        locals_=ACTIONS + "table t { $key = { hdr.h.a: exact; } actions = { a1; }\n"
                          "    entries = { priority = 10 : 8w2 : a1(); } }",
        apply="t.apply();"),
    bad("entries-first-without-priority", "Entry entry must have a priority",
        locals_=ACTIONS + "table t { key = { hdr.h.a: ternary; } actions = { a1; }\n"
                          "    entries = { $8w1 &&& 8w1 : a1(); priority = 10 : 8w2 &&& 8w2 : a1(); } }",
        apply="t.apply();"),
    bad("entries-priority-below-zero", "t Overflow in priority computation", at="table t",
        locals_=ACTIONS + "table t { key = { hdr.h.a: ternary; } actions = { a1; } priority_delta = 10;\n"
                          "    entries = { priority = 12 : 8w1 &&& 8w1 : a1(); 8w2 &&& 8w2 : a1(); 8w3 &&& 8w3 : a1(); } }",
        apply="t.apply();"),
    bad("table-apply-in-bound-action-argument", "t0.apply(): table invocation in action argument",
        locals_="action a(in bool x) { } table t0 { actions = { NoAction; } }\n"
                "table t { key = { hdr.h.a: exact; } actions = { a($t0.apply().hit); } }",
        apply="t.apply();"),
    # p4c type-checks a generic control once, with its type parameters abstract
    bad("generic-control-arithmetic", "+: cannot be applied to expression 'v' with type 'T'",
        top="control C<T>(inout T v)(T step) { apply { v = $v + step; } }"),
    bad("generic-control-equality", "v and w: values of a type variable cannot be compared",
        top="control C<T>(in T v, in T w, out bool same) { apply { same = $v == w; } }"),
    bad("generic-control-table-key", "Key k field type must be a scalar type; it cannot be K",
        top="control C<K>(in K k) { table t { key = { $k: exact; } actions = { NoAction; } } apply { t.apply(); } }"),
    # p4c's CheckCoreMethods, on the generic body: a value of type H is not a header
    bad("generic-parser-extract", "x: argument must be a header",
        top="parser Sub<H>(packet_in pkt, out H x) { state start { pkt.extract($x); transition accept; } }"),
    bad("generic-control-emit", "pkt.emit(x): argument must be a header, stack or union, or a "
        "struct or tuple of such types",
        top="control Out<H>(packet_out pkt, in H x) { apply { $pkt.emit(x); } }"),
    # p4c-bm2-ss's CompileTimeOperations: BMv2 has no run-time division or modulo; a
    # power-of-two divisor becomes a shift or a mask (StrengthReduction) and compiles
    bad("division-at-run-time", "hdr.h.a / hdr.h.b: could not evaluate expression at compilation time",
        apply="hdr.h.a = $hdr.h.a / hdr.h.b;"),
    bad("modulo-at-run-time", "hdr.h.a % meta.m: could not evaluate expression at compilation time",
        apply="hdr.h.a = $hdr.h.a % meta.m;"),
    bad("compound-division-at-run-time", "hdr.h.a / 3: could not evaluate expression at compilation time",
        apply="$hdr.h.a /= 3;"),
    # quoted as p4c prints it: parenthesised by precedence, a constant by its value
    bad("division-quoted-with-parentheses", "(hdr.h.a - (hdr.h.b - hdr.h.a)) / hdr.h.b: could not evaluate "
        "expression at compilation time", apply="hdr.h.a = ($hdr.h.a - (hdr.h.b - hdr.h.a)) / hdr.h.b;"),
    bad("modulo-of-a-typed-constant", "~(hdr.h.a + 1) % 7: could not evaluate expression at compilation time",
        apply="hdr.h.a = $~(hdr.h.a + 1) % 8w7;"),
    # an action's `in` parameter as divisor: p4c inlines the call, so the argument decides
    # (comp536's ecmp_net.p4: `% N` with N = 2 compiles); reported in the action's body
    bad("modulo-by-an-in-parameter-given-three", "hdr.h.b % 3: could not evaluate expression at compilation time",
        locals_="action div(in bit<8> n) { hdr.h.a = $hdr.h.b % n; }", apply="div(3);"),
    bad("modulo-by-an-in-parameter-given-a-field", "hdr.h.b % hdr.h.a: could not evaluate expression at "
        "compilation time", locals_="action div(in bit<8> n) { hdr.h.a = $hdr.h.b % n; }", apply="div(hdr.h.a);"),
    bad("modulo-by-an-in-parameter-bound-in-a-table", "(hdr.h.b + 1) % 3: could not evaluate expression at "
        "compilation time", locals_="action div(in bit<8> n) { hdr.h.a = ($hdr.h.b + 1) % n; }\n"
        "    table t { key = { hdr.h.a: exact; } actions = { div(3); } }", apply="t.apply();"),
    # p4c-bm2-ss (without --emit-externs) converts only the externs it knows
    bad("self-referencing-struct", "Self-referencing types not supported: 'S' within 'struct S'",
        top="struct S { bit<8> a; $S x; }"),
    bad("self-referencing-generic-struct", "Self-referencing types not supported: 'S<bit<8>>' within 'struct S'",
        top="struct S<T> { T a; $S<T> x; }", locals_="S<bit<8>> s;"),
    bad("register-of-struct", "register: Only registers with bit or int types are currently supported",
        top="struct pair_t { bit<8> a; bit<8> b; }", locals_="$register<pair_t>(4) r;"),
    bad("register-of-bool", "register: Only registers with bit or int types are currently supported",
        locals_="$register<bool>(4) r;"),
    # p4c's front end keeps it; p4c-bm2-ss's ExpressionConverter fails ("Unhandled case")
    bad("plus-slice-variable-lsb", "hdr.h.b[meta.m +: ...] with a non-constant lsb (p4c-bm2-ss cannot compile it)",
        kind="unsupported", apply="hdr.h.a = (bit<8>)hdr.h.b[$meta.m +: 4];"),
    # (issue 35, second corpus; measured on p4c-bm2-ss 1.2.5.16): p4c reports an unknown
    # extern at its declaration, a call of an unknown extern function or method as a
    # statement at the function's or method's declaration, in statement order, and the
    # instance only when the bodies gave no such error; a call in an expression at the call
    bad("user-extern-instance", "E: unknown extern instance",
        top="$extern E { E(@optional bit<8> x); }", locals_="E() e;"),
    bad("user-extern-function", "ext_f(hdr.h.b): not supported",
        top="extern bit<8> ext_f(in bit<8> x);", apply="hdr.h.a = $ext_f(hdr.h.b);"),
    bad("user-extern-function-statement", "ext_g: unknown extern function",
        top="$extern void ext_g(in bit<8> x);", apply="ext_g(hdr.h.b);"),
    bad("user-extern-method-before-instance", "Unknown extern method reset from type E",
        top="extern E {\n    E();\n    $void reset();\n}", locals_="E() e;", apply="e.reset();"),
    bad("user-extern-calls-in-statement-order", "Unknown extern method reset from type E",
        top="extern void ext_g(in bit<8> x);\nextern E {\n    E();\n    $void reset();\n}",
        locals_="E() e;", apply="e.reset(); ext_g(hdr.h.b);"),
    # p4c-bm2-ss converts the ingress and egress bodies (mark_to_drop()) before it checks
    # the deparser, then the compute control, then the verify control
    bad("mark-to-drop-in-ingress-before-deparser-if",
        "Expected 1 argument for mark_to_drop(). Are you using an up-to-date v1model.p4?",
        deparser="if (hdr.h.isValid()) { pkt.emit(hdr.h); }", apply="$mark_to_drop();"),
    bad("action-before-ingress-body", "Expected 1 argument for mark_to_drop(). Are you using an up-to-date v1model.p4?",
        top="extern void ext_g(in bit<8> x);", locals_="action y() { $mark_to_drop(); }",
        apply="ext_g(hdr.h.b); y();"),
    bad("action-before-body-resubmit-with-data", "Expected 1 argument for mark_to_drop(). Are you using an up-to-date v1model.p4?",
        locals_="action y() { $mark_to_drop(); }", apply="resubmit({ meta.m }); y();"),
    bad("action-before-deparser-if", "ext_g: unknown extern function",
        top="$extern void ext_g(in bit<8> x);", locals_="action y() { ext_g(hdr.h.a); }", apply="y();",
        deparser="if (hdr.h.isValid()) { pkt.emit(hdr.h); }"),
    bad("deparser-if-before-mark-to-drop-in-compute-control",
        "IfStatement: not supported within a deparser on this target",
        deparser="$if (hdr.h.isValid()) { pkt.emit(hdr.h); }", compute="mark_to_drop();"),
    bad("compute-control-before-verify-control",
        "hdr.h.b = hdr.h.a: Only calls to update_checksum or update_checksum_with_payload allowed",
        verify="hdr.h.a = hdr.h.b;", compute="$hdr.h.b = hdr.h.a;"),
    bad("deparser-before-compute-control", "IfStatement: not supported within a deparser on this target",
        compute="hdr.h.b = hdr.h.a;", deparser="$if (hdr.h.isValid()) { pkt.emit(hdr.h); }"),
    # named constants as slice bounds, checked once folded (p4c's ConstantFolding)
    bad("slice-bound-negative-constant", "-1: expected slice indexes to be non-negative",
        top="const int K = -1;", apply="hdr.h.a = (bit<8>)7[1:$K];"),
    bad("slice-bound-string-constant", '"x": expected an integer value',
        top='const string S = "x";', apply="hdr.h.a = hdr.h.b[$S:0];"),
    bad("untyped-shift-over-p4c-limit", "1985245330 << 903012108: Compiler only supports widths up to 2048",
        apply="hdr.h.a = (bit<8>)($1985245330 << 903012108);"),
    bad("typed-shift-over-p4c-limit", "8w1 << 3000: Compiler only supports widths up to 2048",
        apply="hdr.h.a = $8w1 << 3000;"),
    bad("slice-bounds-constants-reversed", "hdr.h.b[0:3]: bit slicing should be specified as [msb:lsb]",
        top="const int LO = 3;", apply="hdr.h.a = (bit<8>)$hdr.h.b[0:LO];"),
    # ---------------------------------------------------------------- BMv2's control graph (p4c-bm2-ss,
    # backends/bmv2/common/controlFlowGraph.cpp): at the table's name, as p4c points
    bad("table-applied-twice", LOOP.format("MyIngress.t"), locals_=graph_tables("$t"),
        apply="t.apply(); t.apply();"),
    bad("table-in-a-branch-and-after", LOOP.format("MyIngress.t"), locals_=graph_tables("$t"),
        apply="if (hdr.h.a == 1) { t.apply(); } t.apply();"),
    bad("table-after-a-return-in-a-nested-branch", LOOP.format("MyIngress.t"),   # RemoveReturns' guard
        locals_=graph_tables("$t"),
        apply="if (hdr.h.a == 1) { if (hdr.h.b == 1) { t.apply(); return; } u.apply(); } t.apply();"),
    bad("table-in-both-branches-then-statements", SPLIT.format("MyIngress.t"),   # p4c's issue986-bmv2
        locals_=graph_tables("$t"),
        apply="if (hdr.h.a == 1) { t.apply(); hdr.h.b = 1; } else { t.apply(); hdr.h.b = 2; }"),
    bad("table-hit-and-plain-apply", SPLIT.format("MyIngress.t"), locals_=graph_tables("$t"),
        apply="if (hdr.h.a == 1) { if (t.apply().hit) { u.apply(); } } else { t.apply(); }"),
    bad("table-switch-and-plain-apply", SPLIT.format("MyIngress.t"), locals_=graph_tables("$t"),
        apply="if (hdr.h.a == 1) { switch (t.apply().action_run) { a1: { } } } else { t.apply(); }"),
    bad("table-then-exit-in-one-branch", SPLIT.format("MyIngress.t"), locals_=graph_tables("$t"),
        apply="if (hdr.h.a == 1) { t.apply(); exit; } t.apply();"),
    bad("table-then-action-call-in-both-branches", SPLIT.format("MyIngress.t"),
        locals_=graph_tables("$t"),     # each call is a table of its own
        apply="if (hdr.h.a == 1) { t.apply(); a1(); } else { t.apply(); a1(); }"),
    bad("table-hit-assigned-in-both-branches", SPLIT.format("MyIngress.t"), locals_=graph_tables("$t"),
        apply="if (hdr.h.a == 1) { meta.flag = t.apply().hit; } else { meta.flag = t.apply().hit; }"),
    bad("control-instance-applied-twice", LOOP.format("MyIngress.s.st"), top=sub_control("$st"),
        locals_="Sub() s;", apply="s.apply(hdr.h); s.apply(hdr.h);"),
    bad("table-with-a-global-name-applied-twice", LOOP.format(".g"),
        locals_='action a1() { } @name(".g") table $t { key = { hdr.h.a: exact; } actions = { a1; } }',
        apply="t.apply(); t.apply();"),
    # ---------------------------------------------------------------- a field of stack.next (p4c-bm2-ss,
    # backends/bmv2/common/expression.cpp): read or written, outside an extract
    bad("next-field-in-select", "hdr.s.next uninitialized: next field read", fields="    h_t[2] s;",  # issue692-bmv2
        states="    state start { pkt.extract(hdr.s.next);\n"
               "        transition select($hdr.s.next.a) { 0: accept; default: reject; } }"),
    bad("next-assigned-a-list", "hdr.s.next uninitialized: next field read", fields="    h_t[2] s;",  # next-def-use
        states="    state start { $hdr.s.next = { 8w0, 8w1 }; transition accept; }"),
    bad("next-assigned-a-lookahead", "hdr.s.next uninitialized: next field read", fields="    h_t[2] s;",
        states="    state start { $hdr.s.next = pkt.lookahead<h_t>(); transition accept; }"),
    bad("next-field-written", "hdr.s.next uninitialized: next field read", fields="    h_t[2] s;",
        states="    state start { $hdr.s.next.a = 1; transition accept; }"),
    bad("next-isvalid", "hdr.s.next uninitialized: next field read", fields="    h_t[2] s;",
        states="    state start { meta.flag = $hdr.s.next.isValid(); transition accept; }"),
    bad("next-field-read-into-a-used-local", "hdr.s.next uninitialized: next field read", fields="    h_t[2] s;",
        states="    state start { bit<8> v = $hdr.s.next.a; meta.m = v; transition accept; }"),
    bad("next-field-in-a-sub-parser", "hdr.s.next uninitialized: next field read", fields="    h_t[2] s;",
        top="parser Sub(packet_in p, inout h_t[2] s) { state start { $s.next.a = 1; transition accept; } }",
        parser_locals="    Sub() sub;", states="    state start { sub.apply(pkt, hdr.s); transition accept; }"),
    # ---------------------------------------------------------------- a call BMv2's parser cannot do (p4c-bm2-ss,
    # backends/bmv2/common/parser.cpp: only extract/lookahead/advance, verify, log_msg, header methods)
    bad("parser-mark-to-drop", "mark_to_drop(standard_metadata): not supported in parser on this target",
        states="    state start { pkt.extract(hdr.h); $mark_to_drop(standard_metadata); transition accept; }"),
    bad("parser-register-read", "r.read(hdr.h.a, 32w0): not supported in parser on this target",
        parser_locals="    register<bit<8>>(4) r;",
        states="    state start { pkt.extract(hdr.h); $r.read(hdr.h.a, 32w0); transition accept; }"),
    bad("parser-counter-count", "c.count(32w1): not supported in parser on this target",
        parser_locals="    counter(4, CounterType.packets) c;",
        states="    state start { pkt.extract(hdr.h); $c.count(32w1); transition accept; }"),
    bad("parser-random", "random(meta.m, 8w0, 8w10): not supported in parser on this target",
        states="    state start { pkt.extract(hdr.h); $random(meta.m, 8w0, 8w10); transition accept; }"),
    bad("parser-truncate", "truncate(32w10): not supported in parser on this target",
        states="    state start { $truncate(32w10); pkt.extract(hdr.h); transition accept; }"),
    bad("parser-assert", "assert(true): not supported in parser on this target",
        states="    state start { pkt.extract(hdr.h); $assert(true); transition accept; }"),
    bad("parser-call-in-a-sub-parser", "mark_to_drop(standard_metadata): not supported in parser on this target",
        top="parser Sub(packet_in p, inout standard_metadata_t standard_metadata) {\n"
            "    state start { $mark_to_drop(standard_metadata); transition accept; } }",
        parser_locals="    Sub() sub;", states="    state start { sub.apply(pkt, standard_metadata); transition accept; }"),
    # ---------------------------------------------------------------- a variable of an extern, control or parser
    # type (p4c: frontends/p4/typeChecking/typeCheckDecl.cpp)
    bad("variable-of-a-generic-extern-type",
        "r: cannot declare variables of type 'register<...>' (consider using an instantiation)",
        locals_="    register<bit<8>> $r;", apply="hdr.h.a = 1;"),
    bad("variable-of-an-extern-type-in-an-action",
        "c: cannot declare variables of type 'counter' (consider using an instantiation)",
        locals_="    action a() { counter $c; meta.m = 1; }", apply="a();"),
    bad("variable-of-an-extern-type-in-apply",
        "r: cannot declare variables of type 'register<...>' (consider using an instantiation)",
        apply="register<bit<8>> $r; hdr.h.a = 1;"),
    bad("variable-of-a-control-type",
        "c: cannot declare variables of type 'control C' (consider using an instantiation)",
        top="control C(inout bit<8> x) { apply { x = 1; } }", locals_="    C $c;", apply="hdr.h.a = 1;"),
    # ---------------------------------------------------------------- apply through a typedef (p4c's type checker:
    # the typedef names a type, which has no fields)
    bad("control-applied-through-a-typedef",
        "Cannot extract field apply from CT which has type Type(control C)",
        top="control C(inout bit<8> x) { apply { x = 1; } }\ntypedef C CT;", apply="CT.$apply(hdr.h.a);"),
    bad("parser-applied-through-a-typedef",
        "Cannot extract field apply from ST which has type Type(parser Sub)",
        top="parser Sub(packet_in p, out h_t h) { state start { p.extract(h); transition accept; } }\n"
            "typedef Sub ST;", states="    state start { ST.$apply(pkt, hdr.h); transition accept; }"),
    # ---------------------------------------------------------------- validity of a struct (p4c: typeCheckExpr.cpp)
    bad("isvalid-of-a-struct", "Field isValid is not a member of structure struct meta_t",
        apply="if (meta.$isValid()) { hdr.h.a = 1; }"),
    bad("setvalid-of-a-struct", "Field setValid is not a member of structure struct headers_t",
        apply="hdr.$setValid();"),
    # ---------------------------------------------------------------- p4c's lexer: a name used as a type before it
    # is declared as one is an identifier, a syntax error
    bad("type-used-before-its-declaration", 'syntax error, unexpected IDENTIFIER "headers_t"',
        top="control Sub(inout $headers_t h) { apply { } }"),
    bad("undeclared-constructor-parameter-type", 'syntax error, unexpected IDENTIFIER "foo_t"',
        top="control Sub(inout bit<8> x)($foo_t y) { apply { } }"),
    # ---------------------------------------------------------------- overloaded functions: a call must fit
    # exactly one (p4c: "multiple matching declarations", "declaration not found")
    bad("overloads-of-one-arity-called", "f: multiple matching declarations",
        top="bit<8> f(in bit<8> x) { return x; }\nbit<8> f(in bit<8> y) { return y; }",
        apply="hdr.h.a = $f(hdr.h.a);"),
    bad("overload-with-a-default-fits-too", "f: multiple matching declarations",
        top="bit<8> f(in bit<8> x, in bit<8> y = 1) { return x; }\nbit<8> f(in bit<8> x) { return x; }",
        apply="hdr.h.a = $f(hdr.h.a);"),
    bad("no-overload-fits", "f: declaration not found",
        top="bit<8> f(in bit<8> x) { return x; }\nbit<8> f(in bit<8> x, in bit<8> y) { return x + y; }",
        apply="hdr.h.a = $f();"),
]


def _diagnostic(text: str) -> P4Error:
    with pytest.raises(P4Error) as info:
        load_program_text(text, FILENAME)
    return info.value


@pytest.mark.parametrize("case", CASES)
def test_bad_program_is_rejected_with_exact_message(case: Bad) -> None:
    text, where = split_marker(program(**case.snippets))
    if case.at is not None:
        where = position_of(text, case.at)
    err = _diagnostic(text)
    prefix = f"{FILENAME}:{where[0]}:{where[1]}: " if where is not None else ""
    assert (err.kind, isinstance(err, P4Unsupported)) == (case.kind, case.kind == "unsupported")
    # The engine currently repeats the kind inside unsupported messages ("unsupported:
    # unsupported: …"); test_unsupported_kind_is_not_repeated checks that separately.
    message = err.message
    if case.kind == "unsupported" and message.startswith("unsupported: "):
        message = message[len("unsupported: "):]
    assert (str(err)[:len(prefix)], message) == (prefix, case.message)
    assert str(err) == f"{prefix}{err.kind}: {err.message}"


@pytest.mark.parametrize("version, message", [
    ("-6419018", "-6419018: expected v1model version to be a non-negative number"),
    ("20000101", "20000101: unknown v1model version; initial supported version is 20180101, latest is 20200408"),
])
def test_v1model_version_is_checked_as_p4c_does(version: str, message: str) -> None:
    text = program().replace("#include <core.p4>\n", f"#include <core.p4>\n#define V1MODEL_VERSION {version}\n", 1)
    err = _diagnostic(text)
    assert err.message == message and str(err).split(":")[0].endswith("v1model.p4")
    load_program_text(program().replace("#include <core.p4>\n", "#include <core.p4>\n#define V1MODEL_VERSION 20200408\n", 1),
                      FILENAME)


def test_unsupported_kind_is_not_repeated() -> None:
    text, (line, col) = split_marker(program(
        states="    state start { hdr.h.a = (bit<8>)$pkt.length(); transition accept; }"))
    err = _diagnostic(text)
    assert str(err) == f"{FILENAME}:{line}:{col}: unsupported: packet_in.length() (BMv2 does not implement it)"


# Programs p4c accepts (with at most a warning): p4sim must accept them too.
GOOD = [
    pytest.param({}, id="skeleton"),
    # what p4c-bm2-ss 1.2.5.16 accepts next to the back-end refusals above (compiled)
    pytest.param({"compute": "update_checksum(true, { hdr.h.a, (bit<8>)5, meta.m }, meta.w, HashAlgorithm.csum16);",
                  "apply": "bit<16> o; hash(o, HashAlgorithm.crc16, 16w0, hdr.h, 16w100); "
                           "hash(o, HashAlgorithm.crc16, 16w0, meta, 16w100);",
                  "deparser": "if (true) { pkt.emit(hdr.h); }"}, id="checksum-hash-deparser-bmv2-accepts"),
    pytest.param({"apply": "hdr.h.a = 8w255 + 1; meta.w = (bit<16>)(bit<8>)(int<8>)-1;"},
                 id="wrapping-arithmetic-and-two-step-cast"),
    # shifts p4c-bm2-ss accepts: an 8-bit amount, an int amount, a constant it folds
    pytest.param({"apply": "meta.w = meta.w << hdr.h.a; meta.w = meta.w >> 3; "
                           "hdr.h.a = (bit<8>)(16w1 << 16w3);"}, id="shifts-bmv2-accepts"),
    pytest.param({"locals_": ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { a1; } }",
                  "apply": "t.apply();"}, id="table-without-default-action"),
    # keys p4c can name without @name, and a complex one that has it
    pytest.param({"locals_": ACTIONS + "table t { key = { hdr.h.a & 8w15: ternary; hdr.h.b[3:0]: exact; "
                  "hdr.h.isValid(): exact; 8w1: exact; hdr.h.a + 1: exact @name(\"sum\"); } actions = { a1; } }",
                  "apply": "t.apply();"}, id="table-keys-p4c-names"),
    # p4c only warns ('8w256: value does not fit in 8 bits') and truncates to 0
    pytest.param({"apply": "hdr.h.a = 8w256;"}, id="oversized-typed-literal"),
    # p4c's StrengthReduction folds 0 >> x to 0 before the back end checks x's width
    pytest.param({"apply": "meta.w = 16w0 >> meta.w;"}, id="zero-shifted-by-wide-amount"),
    pytest.param({"top": GENERIC_FNS, "apply": "hdr.h.a = pick(meta.flag, hdr.h.a, 1); swap(hdr.h.a, hdr.h.b);"
                  " meta.w = id<bit<16>>(7); meta.w = zero<bit<16>>();"}, id="generic-function-calls"),
    pytest.param({"top": "control C<T>(inout T v)(T init) { T keep; apply { keep = init; v = keep; } }",
                  "locals_": "C<bit<8>>(1) c8; C<bit<16>>(16w2) c16;",
                  "apply": "c8.apply(hdr.h.a); c16.apply(meta.w);"}, id="generic-control-instances"),
    pytest.param({"apply": "for (bit<8> k = 0; k < 4; k = k + 1) { hdr.h.a = hdr.h.a + k; }"},
                 id="c-style-for-loop"),
    pytest.param({"locals_": ACTIONS + "table t { key = { hdr.h.a: ternary; } actions = { a1; }\n"
                                       "    entries = { priority = 10 : 8w2 &&& 8w2 : a1(); 8w1 &&& 8w1 : a1(); } }",
                  "apply": "t.apply();"}, id="initial-entries-with-priority"),
    pytest.param({"locals_": "action unused() { switch (hdr.h.a) { 1: { } } }"}, id="switch-in-unused-action"),
    pytest.param({"states": "    state start { pkt.extract(hdr.h); }"}, id="state-without-transition-rejects"),
    # externs the program declares: fine until an instance or a call reaches p4c-bm2-ss's back end
    pytest.param({"top": "extern E { E(@optional bit<8> x); void m(); }\nextern bit<8> ext_f(in bit<8> x);"},
                 id="user-externs-declared"),
    # p4c reads @tableonly/@defaultonly on the actions list's element only; on the action's
    # declaration it is no scope (control-plane/p4RuntimeSerializer.cpp)
    pytest.param({"locals_": "@tableonly action a1() { } action a3() { }\n"
                             "table t { key = { hdr.h.a: exact; } actions = { a1; a3; } default_action = a1(); }",
                  "apply": "t.apply();"}, id="tableonly-on-declaration-is-no-scope"),
    # BMv2's control graph: what p4c-bm2-ss 1.2.5.16 compiles next to the refusals above
    pytest.param({"locals_": graph_tables(), "apply": "if (hdr.h.a == 1) { t.apply(); } else { t.apply(); }"},
                 id="table-in-both-branches"),
    pytest.param({"locals_": graph_tables(), "apply": "if (hdr.h.a == 1) { t.apply(); } else { t.apply(); } "
                  "hdr.h.b = 1; u.apply();"}, id="table-in-both-branches-then-the-same-statements"),
    pytest.param({"locals_": graph_tables(), "apply": "if (hdr.h.a == 1) { t.apply(); u.apply(); } "
                  "else { t.apply(); u.apply(); }"}, id="table-in-both-branches-then-one-same-table"),
    pytest.param({"locals_": graph_tables(), "apply": "if (hdr.h.a == 1) { if (!t.apply().hit) { u.apply(); } } "
                  "else { if (t.apply().hit) { u.apply(); } }"}, id="table-hit-and-miss-to-one-table"),
    pytest.param({"locals_": graph_tables(), "apply": "if (hdr.h.a == 1) { switch (t.apply().action_run) "
                  "{ a1: { } } } else { switch (t.apply().action_run) { a1: { } default: { } } }"},
                 id="table-switches-with-as-many-labels"),      # SwitchAddDefault adds the default
    pytest.param({"locals_": graph_tables(), "apply": "switch (u.apply().action_run) { a1: { t.apply(); } "
                  "a3: { t.apply(); } }"}, id="table-in-two-switch-cases"),
    pytest.param({"locals_": graph_tables(), "apply": "switch (hdr.h.a) { 1: 2: { t.apply(); } 3: { t.apply(); } }"},
                 id="table-in-cases-of-a-value-switch"),
    pytest.param({"locals_": graph_tables(), "apply": "if (hdr.h.a == 1) { t.apply(); return; } t.apply();"},
                 id="table-then-return-in-a-branch"),           # the returned flag is never read
    pytest.param({"locals_": graph_tables() + "    bit<8> x;", "apply": "if (hdr.h.a == 1) { t.apply(); x = 1; "
                  "meta.m = 1; } else { t.apply(); } meta.m = 2;"}, id="table-then-dead-assignments"),
    pytest.param({"locals_": graph_tables(), "top": "const bool K = false;",
                  "apply": "if (K) { t.apply(); } t.apply();"}, id="table-in-a-constant-false-branch"),
    pytest.param({"locals_": graph_tables(), "apply": "if (hdr.h.a == 1) { exit; } t.apply();"},
                 id="exit-in-a-branch-before-a-table"),
    pytest.param({"top": sub_control(), "locals_": "Sub() s; Sub() s2;", "apply": "s.apply(hdr.h); s2.apply(hdr.h);"},
                 id="two-instances-of-a-control"),
    # p4c inlines the call before its strength reduction: `% n` with n = 4 is a mask
    # (p4c-bm2-ss 1.2.5.16 accepts these; issue 35, third corpus: comp536's ecmp_net.p4)
    pytest.param({"top": "register<bit<8>>(1) r;\naction step(in bit<8> n, out bit<9> port) "
                         "{ bit<8> c; r.read(c, 0); c = (c + 1) % n + 2; r.write(0, c); port = (bit<9>)c; }",
                  "locals_": "action div(in bit<8> n) { hdr.h.a = hdr.h.b / n; }\n"
                             "    table t { key = { hdr.h.a: exact; } actions = { div(8); } }",
                  "apply": "step(2, standard_metadata.egress_spec); div(1); t.apply();"},
                 id="division-by-in-parameters-given-powers-of-two"),
    pytest.param({"top": sub_control(), "locals_": "Sub() s;",
                  "apply": "if (hdr.h.a == 1) { s.apply(hdr.h); } else { s.apply(hdr.h); }"},
                 id="control-instance-in-both-branches"),
    # a field of stack.next: what p4c-bm2-ss compiles next to the refusals above
    pytest.param({"fields": "    h_t[2] s;", "states": "    state start { pkt.extract(hdr.s.next); "
                  "hdr.s.next.setValid(); meta.m = hdr.s.last.a; hdr.s.next = hdr.h; transition accept; }"},
                 id="next-extracted-validated-copied-and-last-read"),
    pytest.param({"fields": "    h_t[2] s;", "top": "bit<8> f(in h_t x) { return x.a; }",
                  "states": "    state start { meta.m = f(hdr.s.next); bit<8> unused = hdr.s.next.a; "
                            "meta.w = (bit<16>)hdr.s.next.b; meta.w = 1; transition accept; }"},
                 id="next-copied-to-a-function-or-its-field-never-read"),
    pytest.param({"fields": "    h_t[2] s;", "states": "    state start { if (false) { meta.m = hdr.s.next.a; } "
                  "transition accept; }\n    state never { transition select(hdr.s.next.a) { default: accept; } }"},
                 id="next-field-in-a-dropped-branch-or-unreachable-state"),
    pytest.param({"fields": "    u_t[2] us;", "top": "header g_t { bit<8> x; }\nheader_union u_t { h_t a; g_t b; }",
                  "states": "    state start { pkt.extract(hdr.us.next.a); transition accept; }"},
                 id="extract-into-a-union-member-of-next"),
    # overloads: by number of arguments, by the names of named arguments; unused ones that
    # would fit the same calls
    pytest.param({"top": "bit<8> f(in bit<8> x) { return x; }\nbit<8> f(in bit<8> x, in bit<8> y) { return x + y; }\n"
                         "bit<8> g(in bit<8> x) { return x; }\nbit<8> g(in bit<8> y) { return ~y; }\n"
                         "bit<8> u(in bit<8> x) { return x; }\nbit<8> u(in bit<8> y) { return y; }",
                  "apply": "hdr.h.a = f(hdr.h.a); hdr.h.b = f(hdr.h.a, hdr.h.b); hdr.h.a = g(y = hdr.h.b);"},
                 id="functions-overloaded-by-arity-or-parameter-names"),
    # p4c-bm2-ss 1.2.5.16 (measured): a control's or parser's own local named like one of
    # its parameters is only a warning ('meta' shadows 'meta'); the local hides the parameter
    # from its declaration on (packets: stf/lang/local_shadows_param)
    pytest.param({"locals_": "bit<8> before = meta.m; bit<8> meta = 3; action standard_metadata() { "
                             "hdr.h.a = meta; } register<bit<8>>(4) hdr;",
                  "apply": "standard_metadata(); meta = before; hdr.write(0, meta);"},
                 id="control-locals-named-as-its-parameters"),
    pytest.param({"parser_locals": "bit<8> meta = 2; value_set<bit<8>>(4) standard_metadata;",
                  "states": "    state start { pkt.extract(hdr.h); transition select(hdr.h.a) "
                            "{ standard_metadata: next; default: accept; } }\n"
                            "    state next { hdr.h.b = meta; transition accept; }"},
                 id="parser-locals-named-as-its-parameters"),
    # p4c-bm2-ss 1.2.5.16 (measured): constant folding drops the cases after one that
    # surely matches a select of constants, so the mid end never asks them to be constant
    pytest.param({"states": "    state start { pkt.extract(hdr.h); transition select(8w5) "
                            "{ 8w5: accept; meta.m .. 8w9: reject; default: reject; } }"},
                 id="select-of-constants-case-after-a-sure-match-not-constant"),
    # p4c-bm2-ss 1.2.5.16 (measured): a deparser local read nowhere after its value is
    # given is removed by the mid end
    pytest.param({"deparser": "h_t t = hdr.h; bit<8> x = hdr.h.a; pkt.emit(hdr.h);"},
                 id="deparser-locals-never-read"),
    # ... and one never written after its value: copy propagation emits the value itself
    pytest.param({"deparser": "h_t t = hdr.h; pkt.emit(t);"}, id="deparser-local-copy-emitted"),
]


@pytest.mark.parametrize("snippets", GOOD)
def test_program_accepted_by_p4c_is_accepted(snippets: dict[str, str]) -> None:
    load_program_text(program(**snippets), "good.p4")


# ------------------------------------------------------------------------ the command line
def _run_check(tmp_path: Any, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "prog.p4"
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "p4sim", "check", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


CLI_CASES = [
    pytest.param(program(apply="hdr.h.a = 1\n        $hdr.h.b = 2;"), "error",
                 "syntax error, unexpected IDENTIFIER, expecting ;", id="missing-semicolon"),
    pytest.param(program(apply="hdr.h.a = $x;"), "error", "x: declaration not found", id="undeclared-name"),
    pytest.param(program(states="    state start { hdr.h.a = (bit<8>)$pkt.length(); transition accept; }"),
                 "unsupported", "packet_in.length() (BMv2 does not implement it)", id="unsupported-construct"),
]


@pytest.mark.parametrize("source, kind, message", CLI_CASES)
def test_cli_check_reports_error_with_caret(tmp_path: Any, source: str, kind: str, message: str) -> None:
    text, where = split_marker(source)
    assert where is not None
    line, col = where
    proc = _run_check(tmp_path, text)
    assert proc.returncode == 2, proc.stderr
    head, src, caret = proc.stderr.rstrip("\n").split("\n")[-3:]
    assert head.startswith(f"{tmp_path / 'prog.p4'}:{line}:{col}: {kind}: ")
    assert head.endswith(message)
    assert src == text.splitlines()[line - 1]
    assert caret == " " * (col - 1) + "^"


def test_cli_check_accepts_good_program(tmp_path: Any) -> None:
    proc = _run_check(tmp_path, program())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{tmp_path / 'prog.p4'}: ok"


def test_an_internal_failure_is_one_located_line_not_a_traceback(tmp_path, capsys, monkeypatch) -> None:
    """Whatever goes wrong inside p4sim on a program, ``check``/``compile``/``stf`` print
    one ``file:1:1: internal error: …`` line and exit 2."""
    import p4sim.__main__ as cli

    prog = tmp_path / "x.p4"
    prog.write_text("#include <core.p4>\n")

    def boom(*_a, **_k):
        raise AttributeError("'NoneType' object has no attribute 'loc'")

    monkeypatch.setattr(cli, "_check", boom)
    assert cli.main(["check", str(prog)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{prog}:1:1: internal error: AttributeError: ")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


# The seven kinds of program that made ``p4sim check`` raise (issue 14), end to end: one
# located error line with p4c's reason and exit status 2, never a traceback or an
# ``internal error:`` line.
CRASHERS = [
    pytest.param(program(top="const bit<$12301923123132> K = 0;"),
                 "12301923123132: this implementation does not support bitstrings this large", id="memory-error-wide-type"),
    pytest.param(program(top="package P(bit<1> b);\nvoid f() { $P(1w1) r; }"),
                 "r: invalid declaration. Instantiations cannot be in a function or method.",
                 id="name-error-instance-in-function"),
    pytest.param(program(top="control C(inout bit<8> v)(@optional $bit<8> k) { apply { v = k; } }",
                         locals_="C() c;", apply="c.apply(hdr.h.a);"),
                 "k: optional parameter not allowed here", id="attribute-error-optional-param"),
    pytest.param(program(apply='hdr.h.a = hdr.h.b[$"x":0];'), '"x": expected an integer value',
                 id="type-error-string-slice-bound"),
    pytest.param(program(apply="hdr.h.a = (bit<8>)7[1:$-1];"), "-1: expected slice indexes to be non-negative",
                 id="value-error-negative-slice-bound"),
    pytest.param(program(locals_="action a(inout bit<8> x, bit<8> d) { x = d; }\n"
                                 "table t { actions = { a(hdr.h.a, $0); } default_action = a(0); }",
                         apply="t.apply();"),
                 "0: parameter d cannot be bound: it is set by the control plane",
                 id="runtime-state-error-default-action-args"),
    pytest.param(program(locals_=ACTIONS + "table t { key = { hdr.h.a: exact; } actions = { @tableonly a1; a3; }\n"
                                           "    $default_action = a1; }", apply="t.apply();"),
                 "default_action: Action marked with tableonly used as default action",
                 id="runtime-state-error-tableonly-default"),
]


@pytest.mark.parametrize("source, message", CRASHERS)
def test_cli_check_never_raises(tmp_path: Any, source: str, message: str) -> None:
    text, where = split_marker(source)
    assert where is not None
    proc = _run_check(tmp_path, text)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines()[0] == f"{tmp_path / 'prog.p4'}:{where[0]}:{where[1]}: error: {message}"


def test_headers_not_a_struct_refused_with_p4runtime_files_too(tmp_path: Any) -> None:
    """With ``--p4runtime-files`` (back-end checks deferred until P4Info is written) a
    stack as ``H`` is refused with p4c-bm2-ss's message, not an internal error (petr4's
    STF programs use ``head[13]`` as their headers)."""
    from p4sim.tutorials.p4c import main_p4c_bm2_ss
    text = program(fields="").replace("headers_t hdr", "h_t[2] hdr").replace("pkt.extract(hdr.h)", "pkt.extract(hdr.next)") \
        .replace("pkt.emit(hdr.h);", "pkt.emit(hdr);")
    src = tmp_path / "stack_headers.p4"
    src.write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main_p4c_bm2_ss(["--p4runtime-files", str(tmp_path / "p.txtpb"), "-o", str(tmp_path / "p.json"), str(src)])
    assert rc != 0
    assert err.getvalue().splitlines()[0].endswith("error: h_t[2]: expected type to be a struct"), err.getvalue()


def test_headers_that_are_not_a_struct_are_refused_as_p4c_bm2_ss_refuses() -> None:
    text = program().replace("out headers_t hdr", "out h_t hdr").replace("in headers_t hdr", "in h_t hdr") \
        .replace("inout headers_t hdr", "inout h_t hdr").replace("pkt.emit(hdr.h);", "pkt.emit(hdr);")
    text = text.replace("pkt.extract(hdr.h)", "pkt.extract(hdr)")
    with pytest.raises(P4Error, match="h_t: expected type to be a struct"):
        load_program_text(text, "hdr_not_struct.p4")


@pytest.mark.parametrize("snippets, first", [
    ({"fields": "    h_t[2] s;", "apply": "hdr.s[2].a = 1;", "deparser": "pkt.emit(hdr.h.a);"},
     "Array index 2 larger or equal to array size 2"),
    ({"fields": "    h_t[2] s;", "deparser": "pkt.emit(hdr.h.a);",
      "states": "    state start { pkt.extract(hdr.h); pkt.extract(hdr.s[2]); hdr.s.push_front(1); transition accept; }"},
     "hdr.s.push_front: 'push_front' and 'pop_front' for stacks cannot be used in a parser"),
])
def test_late_type_checks_come_after_the_others_as_in_p4c(snippets: dict[str, str], first: str) -> None:
    """p4c-bm2-ss 1.2.5.16 (measured) checks constant stack indices after its other type
    checks, and emit's argument (CheckCoreMethods) after both: its first message is not
    the first in source order (petr4's error.p4 indexes hdr[15] before a push_front)."""
    assert _diagnostic(program(**snippets)).message == first


def test_back_end_errors_of_actions_come_in_declaration_order() -> None:
    """p4c-bm2-ss 1.2.5.16 (measured) converts the actions in the order they are declared:
    with the egress control written before the ingress one, the egress action's
    ``mark_to_drop()`` is reported first (petr4's flowlet_sized_ints.p4), though p4sim
    compiles the ingress control first."""
    import re
    text = program(locals_="action d() { mark_to_drop(); }", apply="d();")
    egress = ("control MyEgress(inout headers_t hdr, inout meta_t meta,\n"
              "                 inout standard_metadata_t standard_metadata) "
              "{ action e() { mark_to_drop(); } apply { e(); } }\n")
    text = re.sub(r"control MyEgress\(.*?\{ apply \{ \} \}\n", "", text, flags=re.S)
    text = text.replace("control MyIngress(", egress + "control MyIngress(")
    line = text[:text.index("action e()")].count("\n") + 1
    err = _diagnostic(text)
    assert (err.loc.line, err.message) == (line, "Expected 1 argument for mark_to_drop(). "
                                                 "Are you using an up-to-date v1model.p4?")


def test_deparser_control_local_header_is_refused_as_p4c_bm2_ss_refuses_it() -> None:
    """A header declared among the deparser control's locals (not in its apply body) and
    emitted: p4c-bm2-ss 1.2.5.16 (measured) sets it invalid at its declaration, which
    BMv2's deparser cannot run ("t.setInvalid(): not supported within a deparser on this
    target", at the local); p4sim accepted it."""
    text = program(deparser="t.setValid(); t.a = 8w1; t.b = 8w2; pkt.emit(t);").replace(
        "control MyDeparser(packet_out pkt, in headers_t hdr) {\n",
        "control MyDeparser(packet_out pkt, in headers_t hdr) {\n    h_t t;\n")
    err = _diagnostic(text)
    assert (err.loc.line, err.message) == (text[:text.index("    h_t t;")].count("\n") + 1,
                                           "t.setInvalid(): not supported within a deparser on this target")
