"""P4Info ``value_sets`` as p4c writes them, field for field, and the value sets p4c
refuses only when it writes P4Info (nested structs, tuples).

The expected texts are what p4c-bm2-ss 1.2.5.16 (``--p4runtime-files``) wrote for the
same programs (control-plane/p4RuntimeSerializer.cpp, ``addValueSet``): prefix 0x03 ids,
``@id`` honoured, one unnamed EXACT field for a ``bit<W>`` element, one field per struct
field (``@id``, ``@name``, ``@match`` and the other annotations), one per member of a
serializable enum. p4c-bm2-ss without ``--p4runtime-files`` accepts a nested struct or a
tuple (one parse value set of the flattened width), so ``p4sim check``/``stf`` do too.
"""
from __future__ import annotations

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2 as P

from p4sim.engine import load_program_text
from p4sim.errors import P4Error
from p4sim.p4info import build_p4info
from p4sim.v1model.switch import V1ModelSwitch

TEMPLATE = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { }
DECLS
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
  LOCALS
  state start {
    pkt.extract(hdr.eth);
    transition select(KEYS) { vs: hit; default: accept; }
  }
  state hit { hdr.eth.src = 0xAAAAAAAAAAAA; transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control Eg(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.eth); } }
V1Switch(P(), VC(), I(), Eg(), CC(), D()) main;
"""


def program(decls: str, locals_: str, keys: str) -> str:
    return TEMPLATE.replace("DECLS", decls).replace("LOCALS", locals_).replace("KEYS", keys)


def value_sets_text(text: str) -> str:
    info = build_p4info(load_program_text(text, "vs.p4"))
    return text_format.MessageToString(P.P4Info(value_sets=info.value_sets))


# p4c-bm2-ss's value_sets for each program (its whole P4Info has nothing else but pkg_info)
CASES = [
    pytest.param("typedef bit<16> etype_t;",
                 '@brief("types to accept") @my_vs_anno value_set<etype_t>(4) vs;', "hdr.eth.type", """
value_sets { preamble { id: 61396054 name: "P.vs" alias: "vs" annotations: "@my_vs_anno"
                        doc { brief: "types to accept" } }
             match { id: 1 bitwidth: 16 match_type: EXACT } size: 4 }""", id="bit-typedef-doc"),
    pytest.param("""struct pair_t { @match(ternary) bit<16> type; @name("dst_low") @id(7) bit<8> low;
                    @my_anno bit<4> nib; }""",
                 '@name(".global_vs") value_set<pair_t>(8) vs;',
                 "hdr.eth.type, hdr.eth.dst[7:0], hdr.eth.src[3:0]", """
value_sets { preamble { id: 53483358 name: "global_vs" alias: "global_vs" }
             match { id: 1 name: "type" bitwidth: 16 match_type: TERNARY }
             match { id: 7 name: "dst_low" bitwidth: 8 match_type: EXACT }
             match { id: 2 name: "nib" annotations: "@my_anno" bitwidth: 4 match_type: EXACT }
             size: 8 }""", id="struct-fields"),
    pytest.param("", "@id(0x03000011) value_set<bit<8>>(2) vs;", "hdr.eth.src[7:0]", """
value_sets { preamble { id: 50331665 name: "P.vs" alias: "vs" }
             match { id: 1 bitwidth: 8 match_type: EXACT } size: 2 }""", id="explicit-id"),
    pytest.param("enum bit<16> E { A = 1, B = 2 }", "value_set<E>(4) vs;", "(E)hdr.eth.type", """
value_sets { preamble { id: 61396054 name: "P.vs" alias: "vs" }
             match { id: 1 name: "A" bitwidth: 16 match_type: EXACT }
             match { id: 2 name: "B" bitwidth: 16 match_type: EXACT } size: 4 }""", id="serializable-enum"),
]


@pytest.mark.parametrize("decls,locals_,keys,expected", CASES)
def test_value_sets_as_p4c_writes_them(decls: str, locals_: str, keys: str, expected: str) -> None:
    want = text_format.MessageToString(text_format.Parse(expected, P.P4Info()))
    assert value_sets_text(program(decls, locals_, keys)) == want


def test_no_type_info_without_tables_externs_or_parameters() -> None:
    """p4c writes ``type_info {}`` only as a side effect of tables, action parameters,
    extern instances and extern calls from controls: a parser-only program has none."""
    bare = program("", "value_set<bit<16>>(4) vs;", "hdr.eth.type")
    assert not build_p4info(load_program_text(bare, "vs.p4")).HasField("type_info")
    with_call = bare.replace("inout standard_metadata_t sm) { apply { } }\ncontrol Eg",
                             "inout standard_metadata_t sm) { apply { mark_to_drop(sm); } }\ncontrol Eg")
    assert with_call != bare
    assert build_p4info(load_program_text(with_call, "vs.p4")).HasField("type_info")


NESTED = program("struct in_t { bit<8> a; } struct out_t { in_t inner; bit<16> b; }",
                 "value_set<out_t>(4) vs;", "hdr.eth.type[7:0], hdr.eth.type")
REFUSED = [
    pytest.param(NESTED, "vs.p4:7:42: error: Unsupported type argument for Value Set; this version of P4Runtime "
                 "requires that when the type parameter of a Value Set is a struct, all the fields of the "
                 "struct must be of type bit<W>, but inner is not", id="nested-struct"),
    pytest.param(program("", "value_set<tuple<bit<8>, bit<16>>>(4) vs;", "hdr.eth.type[7:0], hdr.eth.type"),
                 "vs.p4:9:3: error: P.vs: Unsupported type argument for Value Set; this version of P4Runtime "
                 "requires the type parameter of a Value Set to be a bit<W>, a struct of bit<W> fields, or a "
                 "serializable enum", id="tuple"),
]


@pytest.mark.parametrize("text,message", REFUSED)
def test_p4info_refuses_what_p4c_refuses(text: str, message: str) -> None:
    prog = load_program_text(text, "vs.p4")            # accepted without P4Info, as by p4c-bm2-ss
    with pytest.raises(P4Error) as e:
        build_p4info(prog)
    assert str(e.value) == message


def test_nested_struct_value_set_matches_the_flattened_fields() -> None:
    switch = V1ModelSwitch(load_program_text(NESTED, "vs.p4"))
    (vs,) = switch.program.state.value_sets.values()
    assert vs.width == 24                              # p4c-bm2-ss: compressed_bitwidth 24
    vs.set_members([(0x34_1234, 0xFFFFFF)])

    def src(etype: int) -> bytes:
        out = switch.process_packet(0, bytes(12) + etype.to_bytes(2, "big"))
        return out[0][1][6:12] if out else b""
    assert src(0x1234) == b"\xaa" * 6
    assert src(0x1235) == bytes(6)


@pytest.mark.parametrize("decls,locals_,keys,message", [
    pytest.param("struct s_t { bool a; bit<16> b; }", "value_set<s_t>(4) vs;", "true, hdr.eth.type",
                 "field 'a' is bool", id="bool-field"),
    pytest.param("enum bit<8> E { A = 1 } struct s_t { E a; bit<16> b; }", "value_set<s_t>(4) vs;",
                 "(E)hdr.eth.type[7:0], hdr.eth.type", "Type not supported E for struct field a in 'select'",
                 id="enum-field"),
])
def test_value_set_fields_p4c_refuses(decls: str, locals_: str, keys: str, message: str) -> None:
    with pytest.raises(P4Error, match=message):
        load_program_text(program(decls, locals_, keys), "vs.p4")
