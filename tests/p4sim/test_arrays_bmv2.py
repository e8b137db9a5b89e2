"""Arrays of non-header types (``bit<8>[16]``): accepted and refused exactly where
p4c-bm2-ss 1.2.5.16 accepts and refuses them (p4sim/engine/arrays.py).

p4c's front end accepts ``T[n]`` of any type, drops declarations nothing refers to, and
its BMv2 back end then stops with a compiler bug on any array of a non-header type left
(``bit<8>: unexpected stack element type`` for a local, ``... unexpected type in stack``
for an array field of the metadata). Each case below was run through p4c-bm2-ss.
"""
from __future__ import annotations

import pytest

from p4sim.engine import load_program_text
from p4sim.errors import P4Error

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct s_t { bit<8>[4] a; }
struct meta_t { META }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    PARSER_LOCALS
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    INGRESS_LOCALS
    apply { INGRESS_BODY sm.egress_spec = 1; }
}
control Eg(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.eth); } }
V1Switch(P(), VC(), I(), Eg(), CC(), D()) main;
"""
BUG = " (p4c-bm2-ss stops on it with a compiler bug: BMv2 has stacks of headers and header unions only)"


def program(meta: str = "", parser_locals: str = "", ingress_locals: str = "", ingress_body: str = "") -> str:
    return (PROGRAM.replace("META", meta).replace("PARSER_LOCALS", parser_locals)
            .replace("INGRESS_LOCALS", ingress_locals).replace("INGRESS_BODY", ingress_body))


@pytest.mark.parametrize("text", [
    pytest.param(program(parser_locals="bit<8>[16] arr;"), id="unused-local-array"),
    pytest.param(program(parser_locals="s_t unused_s;"), id="unused-struct-with-array"),
    pytest.param(program(ingress_locals="bit<8>[4] loc; bool[2] flags;"), id="unused-control-locals"),
])
def test_unused_arrays_compile_as_with_p4c(text: str) -> None:
    load_program_text(text, "arr.p4")


@pytest.mark.parametrize("text,message", [
    pytest.param(program(ingress_locals="bit<8>[16] arr;",
                         ingress_body="arr[h.eth.dst[3:0]] = 5; h.eth.type = (bit<16>)arr[3];"),
                 "bit<8>: unexpected stack element type", id="used-local-array"),
    pytest.param(program(meta="bit<8>[4] a;"), "bit<8>: unexpected type in stack", id="metadata-field"),
    pytest.param(program(ingress_locals="s_t s;",
                         ingress_body="s.a[h.eth.dst[1:0]] = 1; h.eth.type = (bit<16>)s.a[0];"),
                 "bit<8>: unexpected stack element type", id="used-struct-local"),
])
def test_used_arrays_refused_with_p4c_message(text: str, message: str) -> None:
    with pytest.raises(P4Error) as e:
        load_program_text(text, "arr.p4")
    assert e.value.message == message + BUG
    assert e.value.loc is not None and e.value.loc.line > 0


def test_folded_array_is_refused_where_p4c_folds_it_away() -> None:
    text = program(ingress_locals="bit<8>[16] arr;", ingress_body="arr[3] = 5; h.eth.type = (bit<16>)arr[3];")
    with pytest.raises(P4Error, match="unexpected stack element type"):
        load_program_text(text, "arr.p4")


def test_array_of_a_type_p4_does_not_allow_is_still_refused() -> None:
    with pytest.raises(P4Error, match="header stack elements must be headers or header unions, not int"):
        load_program_text(program(ingress_locals="int[4] bad;", ingress_body="bad[0] = 1;"), "arr.p4")
