"""Programs p4c-bm2-ss (1.2.5.16) compiles that p4sim used to refuse, and their neighbours.

Each feature comes from a program of p4c's ``testdata/p4_16_samples``: a one-element list
as an entry's keyset (action-two-params), a constant of a struct type (issue1210), an
action whose body calls the extern function it shadows (issue1541), an extern parameter of
a control (issue1958), ``lookahead`` of a struct holding a header stack (issue2465-bmv2),
and a ``typedef`` of a specialized extern type (issue2735-bmv2). The cases are small
v1model programs built by :func:`program` from snippets; the expected position of a
refusal is marked with ``$`` as in ``test_check_errors.py``. Where the behaviour matters
the program runs on packets (STF); those expectations were measured on simple_switch
1.15.5 through p4c's own STF runner. The refused neighbours are what p4c-bm2-ss refuses
next to each feature, with its messages.
"""
from __future__ import annotations

import pytest

from p4sim.compile_warnings import compiled_program_warnings
from p4sim.engine import load_program_text
from p4sim.errors import P4Error
from p4sim.stf import run_stf_text
from test_check_errors import split_marker

FILENAME = "prog.p4"

DEFAULT_STATES = """\
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }"""


def program(top: str = "", fields: str = "", states: str = DEFAULT_STATES, locals_: str = "",
            apply: str = "sm.egress_spec = 1;", deparser: str = "pkt.emit(hdr.h);", after_headers: str = "") -> str:
    """A complete v1model program: ``top`` after the includes and ``h_t``, ``fields`` in
    ``headers_t``, ``after_headers`` after the metadata, ``states`` in the parser,
    ``locals_`` and ``apply`` in the ingress control (which sends to port 1 by default).

    Example::

        >>> "hdr.h.a = 1;" in program(apply="hdr.h.a = 1;")
        True
    """
    return f"""\
#include <core.p4>
#include <v1model.p4>
header h_t {{
    bit<8> a;
    bit<8> b;
    bit<8> c;
}}
{top}
struct headers_t {{
    h_t h;
{fields}
}}
struct meta_t {{
    bit<8> m;
}}
{after_headers}
parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {{
{states}
}}
control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
{locals_}
    apply {{
{apply}
    }}
}}
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control MyDeparser(packet_out pkt, in headers_t hdr) {{
    apply {{ {deparser} }}
}}
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
"""


def run_packets(text: str, stf: str) -> None:
    """Load ``text`` and run the STF ``stf`` on it; fail with the report unless it passes."""
    result = run_stf_text(load_program_text(text, FILENAME), stf)
    assert result.passed, result.report()


def refused(source: str, message: str) -> None:
    """``source`` (with a ``$`` marker) is refused with ``message`` at the marker."""
    text, where = split_marker(source)
    assert where is not None
    with pytest.raises(P4Error) as info:
        load_program_text(text, FILENAME)
    assert str(info.value) == f"{FILENAME}:{where[0]}:{where[1]}: error: {message}"


# ------------------------------------------------------------------ entry keysets (action-two-params)
TABLE = """
    action set_c(bit<8> v) { hdr.h.c = v; }
    table t {
        key = { %s }
        actions = { set_c; NoAction; }
        const entries = { %s }
        default_action = NoAction();
    }"""


def test_braced_keyset_of_an_entry_holds_the_keys() -> None:
    """p4c's grammar takes a list expression written as an entry's keyset as the tuple of
    keys: ``{x}`` for a one-key table is ``x`` (p4c-bm2-ss writes the key 0x20020420 for
    action-two-params's ``{(8w0x20++8w0x02++8w0x04++8w0x20)}``), ``{x, y}`` is ``(x, y)``."""
    entries = "{(4w0 ++ 4w1)} : set_c(8w0x11); {8w2,} : set_c(8w0x22); ({8w3}) : set_c(8w0x33);"
    run_packets(program(locals_=TABLE % ("hdr.h.a : exact;", entries), apply="t.apply(); sm.egress_spec = 1;"),
                "packet 0 01 00 00\nexpect 1 01 00 11\npacket 0 02 00 00\nexpect 1 02 00 22\n"
                "packet 0 03 00 00\nexpect 1 03 00 33\npacket 0 04 00 00\nexpect 1 04 00 00\n")
    run_packets(program(locals_=TABLE % ("hdr.h.a : exact; hdr.h.b : exact;", "{8w1, 8w2} : set_c(8w0x44);"),
                        apply="t.apply(); sm.egress_spec = 1;"),
                "packet 0 01 02 00\nexpect 1 01 02 44\npacket 0 01 05 00\nexpect 1 01 05 00\n")


@pytest.mark.parametrize("keys, entries, message", [
    # p4c-bm2-ss: a syntax error (a list expression holds expressions only)
    pytest.param("hdr.h.a : ternary;", "{$_} : set_c(1);", "syntax error, unexpected _, expecting }",
                 id="dont-care-in-braces"),
    pytest.param("hdr.h.a : ternary;", "{$default} : set_c(1);",
                 "syntax error, unexpected DEFAULT, expecting }", id="default-in-braces"),
    # p4c-bm2-ss 1.2.5.16: "'Entry'" (then: "Tuples with different sizes 1 vs 2")
    pytest.param("hdr.h.a : exact;", "${8w1, 8w2} : set_c(1);", "'Entry'",
                 id="two-keys-for-one"),
    # p4c-bm2-ss 1.2.5.16: a lone _ or default is one key, not one for every key
    pytest.param("hdr.h.a : ternary; hdr.h.b : ternary;", "$_ : set_c(1);",
                 "{ DefaultExpression }: Size of entry keyset must match the table key set size",
                 id="lone-dont-care-for-two-keys"),
    pytest.param("hdr.h.a : ternary; hdr.h.b : ternary;", "$default : set_c(1);",
                 "{ DefaultExpression }: Size of entry keyset must match the table key set size",
                 id="lone-default-for-two-keys"),
    pytest.param("hdr.h.a : ternary; hdr.h.b : ternary; hdr.h.c : exact;", "$(8w1, 8w2) : set_c(1);",
                 "{ 8w1, 8w2 }: Size of entry keyset must match the table key set size",
                 id="two-keys-for-three"),
    pytest.param("hdr.h.a : ternary; hdr.h.b : exact;", "$0x1111 &&& 0xF : set_c(1);",
                 "{ 4369 &&& 15 }: Size of entry keyset must match the table key set size",
                 id="mask-alone-for-two-keys"),
])
def test_braced_keyset_neighbours_are_refused(keys: str, entries: str, message: str) -> None:
    refused(program(locals_=TABLE % (keys, entries)), message)


# ------------------------------------------------------------------ struct constants (issue1210)
PAIR = "struct pair_t { bit<8> lo; bit<8> hi; }\nconst pair_t K = {8w3, 8w9};"


def test_constant_of_a_struct_type() -> None:
    """``const S k = {...};`` is a compile-time constant: its fields are constants (a table
    entry's key and action data, a select case), it compares with a struct, and a copy of it
    is a copy (measured on simple_switch)."""
    locals_ = """
    action set_c(bit<8> v) { hdr.h.c = v; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { set_c; NoAction; }
        const entries = { {8w1} : set_c(8w0x11); {K.hi} : set_c(K.lo); }
        default_action = NoAction();
    }"""
    apply = """
        pair_t p = K;
        p.lo = 8w7;
        t.apply();
        if (p == K) { hdr.h.b = 0xEE; } else { hdr.h.b = K.lo + p.lo; }
        sm.egress_spec = 1;"""
    run_packets(program(top=PAIR, locals_=locals_, apply=apply),
                "packet 0 01 00 00\nexpect 1 01 0a 11\npacket 0 09 00 00\nexpect 1 09 0a 03\n"
                "packet 0 05 00 00\nexpect 1 05 0a 00\n")
    states = """
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) { K.lo : three; default : accept; }
    }
    state three { hdr.h.c = K.hi; transition accept; }"""
    top = ("typedef bit<9> Port_t;\nstruct port_s { Port_t v; }\ntypedef port_s PortId_t;\n"
           "const PortId_t CPU = {9w1};\nconst h_t HK = {8w1, 8w2, 8w3};\n" + PAIR)
    run_packets(program(top=top, states=states, apply="sm.egress_spec = CPU.v; hdr.h.b = HK.b;"),
                "packet 0 03 00 00\nexpect 1 03 02 09\npacket 0 04 00 00\nexpect 1 04 02 00\n")
    run_packets(program(top="const h_t HK = {8w1, 8w2, 8w3};", states="    state start { transition accept; }",
                        apply="hdr.h = HK; sm.egress_spec = 1;"), "packet 0 ff\nexpect 1 01 02 03 ff\n")


@pytest.mark.parametrize("top, apply, message", [
    # p4c's constant folding cannot fold an error member ("Cannot evaluate initializer for constant")
    pytest.param("const error E = $error.NoError;", "", "error.NoError: Cannot evaluate initializer for constant",
                 id="error-constant"),
    pytest.param("struct s_t { bool b; error e; }\nconst s_t K = ${true, error.NoError};", "",
                 "{ true, error.NoError }: Cannot evaluate initializer for constant", id="error-in-struct-constant"),
    # a constant header is valid; p4c refuses to set it, and stops on isValid() of it
    pytest.param("const h_t HK = {8w1, 8w2, 8w3};", "$HK.setValid();", "HK.setValid: must be applied to a left-value",
                 id="set-valid-of-constant"),
    pytest.param("const h_t HK = {8w1, 8w2, 8w3};", "if ($HK.isValid()) { }",
                 "HK.isValid: isValid() of a constant header: p4c-bm2-ss cannot compile it (it stops with a "
                 "compiler bug)", id="is-valid-of-constant"),
])
def test_constant_neighbours_are_refused(top: str, apply: str, message: str) -> None:
    refused(program(top=top, apply=apply), message)


# ------------------------------------------------------------------ a name inside its own declaration (issue1541)
HASH_ACTION = "action hash() { hash(hdr.h.b, HashAlgorithm.identity, 8w0, { hdr.h.a }, 16w256); }"


def test_own_name_inside_a_declaration_is_what_it_names_outside() -> None:
    """In p4c a declaration is not visible inside itself: the action ``hash`` calls v1model's
    ``hash`` (identity of ``a`` into ``b``), and an action nothing else uses is unused."""
    run_packets(program(locals_=HASH_ACTION, apply="hash(); sm.egress_spec = 1;"),
                "packet 0 05 00 00\nexpect 1 05 05 00\npacket 0 07 00 00\nexpect 1 07 07 00\n")
    prog = load_program_text(program(locals_=HASH_ACTION), FILENAME)
    assert "'hash' is unused" in [d.message for d in compiled_program_warnings(prog)]


@pytest.mark.parametrize("top, locals_, apply, message", [
    # p4c: "f: declaration not found" (a function cannot call itself)
    pytest.param("void f(inout bit<8> x) { $f(x); }", "", "f(hdr.h.a);", "f: declaration not found", id="recursion"),
    pytest.param("", "action again() { $again(); }", "again();", "again: declaration not found", id="action-recursion"),
])
def test_own_name_neighbours_are_refused(top: str, locals_: str, apply: str, message: str) -> None:
    refused(program(top=top, locals_=locals_, apply=apply), message)


def test_a_shadowing_action_still_hides_the_extern_outside_itself() -> None:
    # p4c resolves by scope, not by argument count: outside the action, hash is the action
    refused(program(locals_="action hash() { }",
                    apply="$hash(hdr.h.b, HashAlgorithm.identity, 8w0, { hdr.h.a }, 16w256);"),
            "hash: too many arguments (5 given, 0 expected)")
    refused(program(locals_="action hash() { $hash(); }", apply="hash();"), "hash: no overload takes 0 arguments")


# ------------------------------------------------------------------ extern parameters of a control (issue1958)
KEEP = """
control Keep(inout h_t h, register<bit<8>> r) {
    action swap() { r.read(h.c, 0); r.write(0, h.a); }
    apply { swap(); }
}
control Outer(inout h_t h, register<bit<8>> r) {
    Keep() inner;
    apply { inner.apply(h, r); }
}"""


def test_extern_parameter_of_a_control_is_the_instance_given() -> None:
    """p4c-bm2-ss inlines the control: its ``r.read``/``r.write`` act on the register the
    apply gives (also through another control's parameter)."""
    stf = "packet 0 05 00 00\nexpect 1 05 00 00\npacket 0 07 00 00\nexpect 1 07 00 05\n"
    run_packets(program(top=KEEP, locals_="register<bit<8>>(4) store; Keep() keep;",
                        apply="keep.apply(hdr.h, store); sm.egress_spec = 1;"), stf)
    run_packets(program(top=KEEP, locals_="register<bit<8>>(4) store; Outer() outer;",
                        apply="outer.apply(hdr.h, store); outer.apply(hdr.h, store); sm.egress_spec = 1;"),
                "packet 0 05 00 00\nexpect 1 05 00 05\npacket 0 07 00 00\nexpect 1 07 00 07\n")
    # an instance never applied needs no register (p4c compiles it, and warns)
    load_program_text(program(top=KEEP, locals_="Keep() keep;"), FILENAME)


@pytest.mark.parametrize("top, locals_, apply, message", [
    pytest.param(KEEP.replace("control Keep(inout h_t h, register", "control Keep(inout h_t h, $register"),
                 "register<bit<8>>(4) r1; register<bit<8>>(4) r2; Keep() keep;",
                 "keep.apply(hdr.h, r1); keep.apply(hdr.h, r2);",
                 "r: non-directional parameters must be substitued with the same value in all invocations; two "
                 "different substitutions are r2 and r1", id="two-substitutions"),
    pytest.param("control Sub(inout h_t h, $in register<bit<8>> r) { apply { r.write(0, h.a); } }",
                 "register<bit<8>>(4) r1; Sub() sub;", "sub.apply(hdr.h, r1);",
                 "r: a parameter with type register cannot have a direction", id="direction"),
    pytest.param(KEEP, "register<bit<16>>(4) r1; Keep() keep;", "keep.apply(hdr.h, $r1);",
                 "keep: argument for parameter 'r' has type register<bit<16>>, expected register<bit<8>>",
                 id="wrong-type"),
    # p4c-bm2-ss stops with a compiler bug ("Could not find type of ... r1")
    pytest.param(KEEP, "Keep() keep; register<bit<8>>(4) r1;", "keep.apply(hdr.h, $r1);",
                 "r1: declared after keep, whose parameter 'r' it is given for: p4c-bm2-ss cannot substitute it "
                 "(it stops with a compiler bug); declare r1 first", id="declared-after"),
])
def test_extern_parameter_neighbours_are_refused(top: str, locals_: str, apply: str, message: str) -> None:
    refused(program(top=top, locals_=locals_, apply=apply), message)


# ------------------------------------------------------------------ lookahead of a struct (issue2465-bmv2)
LOOKAHEAD_STACK = """
header out_t { bit<8> count; bit<32> plen; }
header h1 { bit<8> f1; }
struct three_t { h1[3] h; }"""

EGRESS_REPORT = """
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.o.setValid(); hdr.o.count = meta.m; hdr.o.plen = sm.packet_length; }
}"""


def lookahead_program(states: str, deparser: str) -> str:
    """A program whose egress puts ``meta.m`` and the packet length in a header ``o``."""
    text = program(top=LOOKAHEAD_STACK, fields="    out_t o;\n    three_t s;", states=states, deparser=deparser)
    start = text.index("control MyEgress")
    return text[:start] + EGRESS_REPORT.strip() + text[text.index("\n", start):]


def test_lookahead_of_a_struct_holding_a_header_stack() -> None:
    """As p4c-bm2-ss compiles it (ExpandLookahead): one read, the stack's headers made valid
    as setValid() makes them (BMv2's add_header: the packet length grows by their size,
    here 3 bytes), the fields set; assigned to a struct, its stack keeps its nextIndex."""
    states = """
    state start {
        three_t l = pkt.lookahead<three_t>();
        transition select(l.h[0].f1, l.h[1].f1, l.h[2].f1) {
            (1, _, _) : one;
            (0, 1, _) : two;
            default : many;
        }
    }
    state one { pkt.extract(hdr.s.h.next); meta.m = 1; transition accept; }
    state two { pkt.extract(hdr.s.h.next); pkt.extract(hdr.s.h.next); meta.m = 2; transition accept; }
    state many { meta.m = 255; transition accept; }"""
    run_packets(lookahead_program(states, "pkt.emit(hdr.o); pkt.emit(hdr.s);"),
                "packet 0 01 02 03 04\nexpect 1 01 00000007 01 02 03 04\n"
                "packet 0 00 01 03 04\nexpect 1 02 00000007 00 01 03 04\n"
                "packet 0 00 00 00 04\nexpect 1 ff 00000007 00 00 00 04\n"
                # too short to look at: PacketTooShort before any header is made valid
                "packet 0 00 00\nexpect 1 00 00000002 00 00\n")
    states = """
    state start {
        pkt.extract(hdr.s.h.next);
        hdr.s = pkt.lookahead<three_t>();
        pkt.extract(hdr.s.h.next);
        meta.m = (bit<8>)hdr.s.h.lastIndex;
        transition accept;
    }"""
    run_packets(lookahead_program(states, "pkt.emit(hdr.o); pkt.emit(hdr.s);"),
                "packet 0 AA BB CC DD EE\nexpect 1 01 00000007 BB BB DD CC DD EE\n")


def test_lookahead_of_a_header_makes_it_valid_as_set_valid() -> None:
    states = """
    state start {
        h1 t = pkt.lookahead<h1>();
        transition select(t.f1) { 1 : one; default : accept; }
    }
    state one { meta.m = 1; transition accept; }"""
    run_packets(lookahead_program(states, "pkt.emit(hdr.o);"),
                "packet 0 01 02\nexpect 1 01 00000003 01 02\npacket 0 00 02\nexpect 1 00 00000003 00 02\n")


def test_emit_of_a_struct_with_a_field_that_is_no_header_is_refused() -> None:
    # p4c's CheckCoreMethods (a struct that lookahead may read is not always one emit takes)
    refused(program(top="struct mixed_t { h_t h; bit<8> n; }", fields="    mixed_t x;",
                    deparser="$pkt.emit(hdr.x);"),
            "pkt.emit(hdr.x): argument must be a header, stack or union, or a struct or tuple of such types")


# ------------------------------------------------------------------ typedef of an extern type (issue2735-bmv2)
def test_typedef_of_an_extern_or_control_type_is_instantiated_as_the_type() -> None:
    top = KEEP + "\ntypedef register<bit<8>> R8;\ntypedef R8 Store;\ntypedef Keep KeepT;\ntypedef counter C;"
    run_packets(program(top=top, locals_="Store(4) store; KeepT() keep; C(4, CounterType.packets) hits;",
                        apply="keep.apply(hdr.h, store); hits.count(0); sm.egress_spec = 1;"),
                "packet 0 05 00 00\nexpect 1 05 00 00\npacket 0 07 00 00\nexpect 1 07 00 05\n")


@pytest.mark.parametrize("top, locals_, message", [
    pytest.param("typedef $register R;", "", "register: no type parameters supplied for generic type",
                 id="generic-without-arguments"),
    pytest.param("typedef register<bit<8>> R;", "$R<bit<8>>(4) r;",
                 "R<...>: Type register<...> is not generic and thus it cannot be specialized using type arguments",
                 id="type-arguments-again"),
    # p4c-bm2-ss: "Compiler Bug: Unexpected constructor call"
    pytest.param("typedef action_profile AP;",
                 "table t { key = { hdr.h.a : exact; } actions = { NoAction; } implementation = $AP(4); }",
                 "AP(...): p4c-bm2-ss cannot compile a constructor call through a typedef here (it stops with a "
                 "compiler bug); declare an instance of AP and use it", id="constructor-call-in-a-table"),
])
def test_typedef_neighbours_are_refused(top: str, locals_: str, message: str) -> None:
    refused(program(top=top, locals_=locals_), message)



# ------------------------------------------------------------------ overloaded functions (p4c resolves each call)
OVERLOADS = """
bit<8> f(in bit<8> x) { return x + 1; }
bit<8> f(in bit<8> x, in bit<8> y) { return x + y; }
bit<8> g(in bit<8> x) { return x; }
bit<8> g(in bit<8> y) { return ~y; }
void put(inout bit<8> v) { v = 8w0x77; }
void put(inout bit<8> v, in bit<8> w) { v = w; }"""


def test_overloaded_functions_are_called_by_their_arguments() -> None:
    """Functions of one name in one scope are told apart by the number of arguments, or by
    the names of named arguments; each call runs the one it fits."""
    run_packets(program(top=OVERLOADS, apply="hdr.h.b = f(hdr.h.a); hdr.h.c = f(hdr.h.a, hdr.h.b); "
                                             "put(meta.m); put(hdr.h.a, g(y = meta.m)); sm.egress_spec = 1;"),
                "packet 0 05 00 00\nexpect 1 88 06 0b\npacket 0 10 00 00\nexpect 1 88 11 21\n")


@pytest.mark.parametrize("apply, message", [
    pytest.param("hdr.h.a = $g(hdr.h.a);", "g: multiple matching declarations", id="two-fit"),
    pytest.param("hdr.h.a = $f(z = hdr.h.a);", "f: declaration not found", id="none-fits"),
])
def test_overloaded_function_neighbours_are_refused(apply: str, message: str) -> None:
    refused(program(top=OVERLOADS, apply=apply), message)
