"""The classes of difference issue 35 found between p4sim and the reference (p4c-bm2-ss
1.2.5.16, simple_switch_grpc 1.15.5) on third-party v1model programs, each as a minimal
program with the reference's answer.

Where the answer comes from: the messages p4c prints are the issue's (its author ran the
reference) and p4c's source at 1.2.5.16 (backends/bmv2/common/header.cpp for odd header
widths, control.h for match kinds, control-plane/p4RuntimeArchHandler.cpp for anonymous
table properties, p4RuntimeArchStandard.h for selector size semantics, tableKeyNames.cpp
for key names, typeUnification.cpp for directions, resolveReferences.cpp for
self-reference); positions follow p4c's grammar (a header type's error points at its
name). They were not yet re-run on the reference binaries here (see /work/notes/35.md):
each is a case to re-measure when the reference is built. Packet classes 14 and 15
(header fields across packets, no resubmit limit) are pinned in
``test_hash_invalid_headers.py`` and ``test_v1model_switch.py``; the P4Runtime text of
class 16 in ``p4runtime/test_idle_timeout.py``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format

from p4sim.engine import load_program, load_program_text
from p4sim.errors import P4Error
from p4sim.p4info import build_p4info
from test_p4c_bm2_accepts import FILENAME, program, refused, run_packets

ODD = "header odd_t { bit<9> a; bit<9> b; }"
ODD_MESSAGE = ("odd_t: Found header with fields totaling 18 bits.  BMv2 target only supports headers "
               "with fields totaling a multiple of 8 bits.")
SET_B = "    action set(bit<8> v) { hdr.h.b = v; }\n"


def loads(text: str) -> None:
    load_program_text(text, FILENAME)


# ------------------------------------------------------------------ 1. headers not a whole number of bytes
def test_odd_header_type_never_instantiated_compiles() -> None:
    loads(program(top=ODD))
    loads(program(top=ODD, locals_="odd_t unused_local;"))     # p4c's front end removes it first


@pytest.mark.parametrize("fields, locals_, apply", [
    pytest.param("    odd_t o;", "", "sm.egress_spec = 1;", id="in-headers"),
    pytest.param("    odd_t[2] os;", "", "sm.egress_spec = 1;", id="in-a-stack"),
    pytest.param("", "odd_t o;", "o.setValid(); o.a = 1; hdr.h.a = (bit<8>)o.a;", id="referenced-local"),
])
def test_odd_header_type_that_reaches_bmv2_is_refused(fields: str, locals_: str, apply: str) -> None:
    refused(program(top=ODD.replace("odd_t", "$odd_t", 1), fields=fields, locals_=locals_, apply=apply),
            ODD_MESSAGE)


# ------------------------------------------------------------------ 2. match_kind { list }
def test_list_is_a_name_where_p4c_declares_one() -> None:
    loads(program(top="match_kind { list, range_list }"))
    refused(program(top="match_kind { $list, range_list }",
                    locals_=SET_B + "table t { key = { hdr.h.a : list; } actions = { set; } }",
                    apply="t.apply();"),
            "list: match type not supported on this target")


# ------------------------------------------------------------------ 3. bit<0>
def test_zero_width_bit_field() -> None:
    run_packets(program(top="header z_t { bit<8> a; bit<0> z; }", fields="    z_t z;",
                        states="    state start { pkt.extract(hdr.h); pkt.extract(hdr.z); transition accept; }",
                        locals_="bit<0> zl;", apply="hdr.h.c = (bit<8>)zl + (bit<8>)hdr.z.z; sm.egress_spec = 1;",
                        deparser="pkt.emit(hdr.h); pkt.emit(hdr.z);"),
                "packet 0 01 02 03 04 05\nexpect 1 01 02 00 04 05 $\n")
    refused(program(locals_="$int<0> s;"), "Width of signed type cannot be zero")


# ------------------------------------------------------------------ 4. size = 0
def test_size_zero_is_the_default_size() -> None:
    text = program(locals_=SET_B + """
    table t { key = { hdr.h.a : exact; } actions = { set; NoAction; } size = 0;
              const entries = { 1 : set(11); 2 : set(22); } default_action = NoAction(); }""",
                   apply="t.apply(); sm.egress_spec = 1;")
    run_packets(text, "packet 0 02 00 00\nexpect 1 02 16 00\n")
    [t] = build_p4info(load_program_text(text, FILENAME)).tables
    assert t.size == 1024


# ------------------------------------------------------------------ 5. extern given to an earlier control instance
COUNT = "control Cnt(inout h_t h, counter c) { apply { c.count((bit<32>)h.a); } }"


def test_extern_declared_after_the_control_instance_it_is_given_to() -> None:
    """Named only in the control's apply body, p4c-bm2-ss 1.2.5.16 substitutes it (named
    by the control's locals it still stops: ``test_p4c_bm2_accepts.py``, declared-after)."""
    run_packets(program(top=COUNT, locals_="Cnt() cnt; counter(8, CounterType.packets) c8;",
                        apply="cnt.apply(hdr.h, c8); sm.egress_spec = 1;"),
                "packet 0 03 00 00\nexpect 1 03 00 00\ncheck_counter c8(3) packets == 1\n"
                "check_counter c8(2) packets == 0\n")


# ------------------------------------------------------------------ 6. anonymous table properties
@pytest.mark.parametrize("prop, name", [
    ("implementation = action_profile(32w16);", "implementation"),
    ("implementation = action_selector(HashAlgorithm.crc16, 32w16, 32w16);", "implementation"),
    ("counters = direct_counter(CounterType.packets);", "counters"),
])
def test_anonymous_table_property_has_no_p4runtime_name(prop: str, name: str) -> None:
    key = "hdr.h.a : exact; hdr.h.b : selector;" if "selector" in prop else "hdr.h.a : exact;"
    text = program(locals_=SET_B + f"table t {{ key = {{ {key} }} actions = {{ set; }} {prop} }}",
                   apply="t.apply();")
    prog = load_program_text(text, FILENAME)      # p4c-bm2-ss without --p4runtime-files: fine
    with pytest.raises(P4Error) as info:
        build_p4info(prog)
    assert str(info.value) == (f"error: Table 'MyIngress.t' has an anonymous table property '{name}' with no "
                               "name annotation, which is not supported by P4Runtime")
    build_p4info(load_program_text(text.replace(prop, '@name("impl") ' + prop), FILENAME))


# ------------------------------------------------------------------ 7. block parameter directions
def test_block_parameter_direction_must_be_the_packages() -> None:
    text = program().replace("control MyVerifyChecksum(inout headers_t hdr",
                             "control MyVerifyChecksum(in headers_t $hdr")
    refused(text, "Cannot unify 'in' parameter 'hdr' with 'inout' parameter 'hdr' because they have "
                  "different directions")


# ------------------------------------------------------------------ 8. a variable is not visible in its initializer
def test_variable_is_not_visible_in_its_own_initializer() -> None:
    refused(program(apply="bit<8> i = $i; hdr.h.a = i;"), "i: declaration not found")
    run_packets(program(locals_="bit<8> i = 7;", apply="{ bit<8> i = i + 1; hdr.h.a = i; } sm.egress_spec = 1;"),
                "packet 0 00 00 00\nexpect 1 08 00 00\n")


# ------------------------------------------------------------------ 10-13. P4Info
def test_direct_counter_attached_to_no_table_is_not_listed() -> None:
    info = build_p4info(load_program_text(program(locals_=SET_B + """
    direct_counter(CounterType.packets) dc;
    direct_meter<bit<8>>(MeterType.packets) dm;
    direct_counter(CounterType.packets) used;
    table t { key = { hdr.h.a : exact; } actions = { set; } counters = used; }""", apply="t.apply();"), FILENAME))
    assert [c.preamble.name for c in info.direct_counters] == ["MyIngress.used"]
    assert list(info.direct_meters) == []


@pytest.mark.parametrize("annotations, text", [
    ('@selector_size_semantics("sum_of_weights") @max_group_size(8)', "max_group_size: 8 sum_of_weights { }"),
    ('@selector_size_semantics("SUM_OF_MEMBERS") @max_member_weight(4)', "sum_of_members { max_member_weight: 4 }"),
    ('@selector_size_semantics("sum_of_weights") @max_member_weight(4)', "sum_of_weights { }"),
])
def test_selector_size_semantics(annotations: str, text: str) -> None:
    info = build_p4info(load_program_text(program(locals_=SET_B + f"""
    {annotations} action_selector(HashAlgorithm.crc16, 32w16, 32w16) sel;
    table t {{ key = {{ hdr.h.a : exact; hdr.h.b : selector; }} actions = {{ set; }} implementation = sel; }}""",
                                                  apply="t.apply();"), FILENAME))
    [ap] = info.action_profiles
    assert list(ap.preamble.annotations) == []        # written as fields, not annotations
    assert text_format.MessageToString(ap, as_one_line=True).endswith("size: 16 " + text)


def test_key_names_as_p4c_writes_them() -> None:
    info = build_p4info(load_program_text(program(
        top="header e_t { bit<48> addr0; }", fields='    @name(".ethernet") h_t eth;\n    e_t e;',
        locals_=SET_B + """
    table t { key = { hdr.eth.a : exact; hdr.e.addr0 & 0xFFFF : ternary; hdr.h.a & 8w0x0f : ternary;
                      hdr.h.b & 255 : ternary; } actions = { set; } }""", apply="t.apply();"), FILENAME))
    assert [m.name for m in info.tables[0].match_fields] == [
        "ethernet.a", "hdr.e.addr0 & 0xffff", "hdr.h.a & 0xf", "hdr.h.b & 255"]


# ------------------------------------------------------------------ 17. diagnostics quote the file's own line
def test_drop_in_compiler_quotes_the_files_line(tmp_path: Path) -> None:
    text = program(apply="hdr.h.a = undefined_x;").replace(
        "#include <v1model.p4>\n", "#include <v1model.p4>\n#define TWO \\\n  2\n/* a\n   comment\n*/\n")
    src = tmp_path / "main.p4"
    src.write_text(text)
    bindir = os.path.dirname(sys.executable)
    run = subprocess.run([os.path.join(bindir, "p4sim-p4c-bm2-ss"), "--p4v", "16", "-o", str(tmp_path / "o.json"),
                          str(src)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "undefined_x" in t)
    assert run.stderr.splitlines()[:2] == [f"{src}:{line}:{text.splitlines()[line - 1].index('undefined_x') + 1}: "
                                           "error: undefined_x: declaration not found",
                                           text.splitlines()[line - 1]]


# ------------------------------------------------------------------ beyond the classes (own corpus)
def test_dots_give_the_other_fields_their_default_values() -> None:
    """``{ a, ... }`` and ``{ y = 9, ... }`` (p4c's DefaultValues): the fields not written
    take their default values, a header assigned so is valid (jafingerhut/p4-guide,
    p4runtime-issue-428's bit0b-bmv2.p4, used ``h.h = { ... };``)."""
    top = "header d_t { bit<8> x; bit<8> y; }\nstruct s_t { bit<8> p; d_t q; bit<8> r; }"
    run_packets(program(top=top, fields="    d_t d;",
                        apply="s_t s = { p = 7, ... }; hdr.d = { 5, ... }; hdr.h.c = s.p + s.r + hdr.d.y; "
                              "hdr.h.b = s.q.isValid() ? 8w1 : hdr.d.x; sm.egress_spec = 1;",
                        deparser="pkt.emit(hdr.h); pkt.emit(hdr.d);"),
                "packet 0 01 02 03\nexpect 1 01 05 07 05 00 $\n")


def test_for_in_over_a_list_gets_the_for_in_message() -> None:
    """``for (bit<8> i in (list<bit<8>>){1, 2})`` parses as in p4c and is refused as
    p4c-bm2-ss refuses every for-in loop (was a syntax error at ``list``)."""
    refused(program(locals_="bit<8> n = 0;",
                    apply="$for (bit<8> i in (list<bit<8>>){1, 2}) { n = n + i; } hdr.h.a = n;"),
            "BMV2 does not support for-in loops")


def test_p4info_annotations_as_p4c_writes_them(tmp_path: Path) -> None:
    """Found comparing sonic-net/sonic-pins' SAI P4 instantiations with the P4Info the
    repository ships: p4c runs cpp with -C, so a comment inside a string spanning lines
    (p4-constraints' ``@entry_restriction("...")``) is the string's text; an annotation
    body p4c does not parse is written token by token, one space between (ToP4)."""
    text = program(locals_=SET_B + '''
    @entry_restriction("
      // only small keys
      a < 10;
    ")
    @refers_to(builtin::multicast_group_table, multicast_group_id)
    table t { key = { hdr.h.a : exact @sai_field(SAI_ACL/IP); } actions = { set; } }''', apply="t.apply();")
    src = tmp_path / "ann.p4"
    src.write_text(text)
    [t] = build_p4info(load_program(str(src))).tables
    assert list(t.preamble.annotations) == [
        '@entry_restriction("\n      // only small keys\n      a < 10;\n    ")',
        "@refers_to(builtin : : multicast_group_table , multicast_group_id)"]
    assert list(t.match_fields[0].annotations) == ["@sai_field(SAI_ACL / IP)"]
