"""P4Info ``type_info`` as p4c writes it: serializable enums that a controller header field
or a listed action parameter has (p4c's TypeSpecConverter), and ``type_info {}`` only when
p4c's serializer creates it (p4sim/p4info_typeinfo.py).

EXPECTED is the whole P4Info p4c-bm2-ss 1.2.5.16 wrote for PROGRAM (``--p4runtime-files``,
its two comment lines left out): p4sim's must be the same text.
"""
from __future__ import annotations

from google.protobuf import text_format

from p4sim.engine import load_program_text
from p4sim.p4info import build_p4info

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
enum bit<8> Reason_t { UNKNOWN = 1, EXPIRED = 7 }
enum bit<16> Mode_t { FAST = 0x100, SLOW = 2 }
@controller_header("packet_in") header packet_in_t { Reason_t reason; bit<8> pad; }
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { packet_in_t pin; eth_t eth; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
  action set_mode(Mode_t mode) { h.eth.type = (bit<16>)mode; }
  table t { key = { h.eth.dst : exact; } actions = { set_mode; NoAction; } }
  apply { t.apply(); }
}
control Eg(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.pin); pkt.emit(h.eth); } }
V1Switch(P(), VC(), I(), Eg(), CC(), D()) main;
"""

EXPECTED = r"""
pkg_info {
  arch: "v1model"
}
tables {
  preamble {
    id: 49059515
    name: "I.t"
    alias: "t"
  }
  match_fields {
    id: 1
    name: "h.eth.dst"
    bitwidth: 48
    match_type: EXACT
  }
  action_refs {
    id: 18213981
  }
  action_refs {
    id: 21257015
  }
  initial_default_action {
    action_id: 21257015
  }
  size: 1024
}
actions {
  preamble {
    id: 21257015
    name: "NoAction"
    alias: "NoAction"
    annotations: "@noWarn(\"unused\")"
  }
}
actions {
  preamble {
    id: 18213981
    name: "I.set_mode"
    alias: "set_mode"
  }
  params {
    id: 1
    name: "mode"
    bitwidth: 16
  }
}
controller_packet_metadata {
  preamble {
    id: 80671331
    name: "packet_in"
    alias: "packet_in"
    annotations: "@controller_header(\"packet_in\")"
  }
  metadata {
    id: 1
    name: "reason"
    bitwidth: 8
  }
  metadata {
    id: 2
    name: "pad"
    bitwidth: 8
  }
}
type_info {
  serializable_enums {
    key: "Mode_t"
    value {
      underlying_type {
        bitwidth: 16
      }
      members {
        name: "FAST"
        value: "\001\000"
      }
      members {
        name: "SLOW"
        value: "\000\002"
      }
    }
  }
  serializable_enums {
    key: "Reason_t"
    value {
      underlying_type {
        bitwidth: 8
      }
      members {
        name: "UNKNOWN"
        value: "\001"
      }
      members {
        name: "EXPIRED"
        value: "\007"
      }
    }
  }
}
"""


def test_p4info_with_serializable_enums_is_p4cs_text() -> None:
    info = build_p4info(load_program_text(PROGRAM, "se.p4"))
    assert text_format.MessageToString(info) == EXPECTED.lstrip("\n")


def test_no_type_info_for_a_parser_only_program() -> None:
    bare = PROGRAM.replace("actions = { set_mode; NoAction; }", "actions = { NoAction; }")
    bare = bare.replace("table t { key = { h.eth.dst : exact; } actions = { NoAction; } }", "")
    bare = bare.replace("apply { t.apply(); }", "apply { }")
    bare = bare.replace('@controller_header("packet_in") ', "")
    assert "table" not in bare.split("control I")[1].split("control Eg")[0]
    assert not build_p4info(load_program_text(bare, "se.p4")).HasField("type_info")


ERROR_KEY_PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
error { Custom }
enum bit<4> Color_t { RED = 1, BLUE = 2 }
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { error e; Color_t c; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
  action a() { }
  table t { key = { m.e : exact; m.c : ternary; } actions = { a; } }
  apply { t.apply(); }
}
control Eg(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.eth); } }
V1Switch(P(), VC(), I(), Eg(), CC(), D()) main;
"""

ERROR_KEY_EXPECTED = r"""
pkg_info {
  arch: "v1model"
}
tables {
  preamble {
    id: 49059515
    name: "I.t"
    alias: "t"
  }
  match_fields {
    id: 1
    name: "m.e"
    match_type: EXACT
  }
  match_fields {
    id: 2
    name: "m.c"
    bitwidth: 4
    match_type: TERNARY
  }
  action_refs {
    id: 24592339
  }
  action_refs {
    id: 21257015
    annotations: "@defaultonly"
    scope: DEFAULT_ONLY
  }
  initial_default_action {
    action_id: 21257015
  }
  size: 1024
}
actions {
  preamble {
    id: 21257015
    name: "NoAction"
    alias: "NoAction"
    annotations: "@noWarn(\"unused\")"
  }
}
actions {
  preamble {
    id: 24592339
    name: "I.a"
    alias: "a"
  }
}
type_info {
  error {
    members: "NoError"
    members: "PacketTooShort"
    members: "NoMatch"
    members: "StackOutOfBounds"
    members: "HeaderTooShort"
    members: "ParserTimeout"
    members: "ParserInvalidArgument"
    members: "Custom"
  }
  serializable_enums {
    key: "Color_t"
    value {
      underlying_type {
        bitwidth: 4
      }
      members {
        name: "RED"
        value: "\001"
      }
      members {
        name: "BLUE"
        value: "\002"
      }
    }
  }
}
"""


def test_error_and_serializable_enum_table_keys_as_p4c_writes_them() -> None:
    """An ``error`` key has no bitwidth and puts every error into ``type_info.error``; a
    serializable-enum key keeps its width and puts the enum into ``serializable_enums``."""
    info = build_p4info(load_program_text(ERROR_KEY_PROGRAM, "ek.p4"))
    assert text_format.MessageToString(info) == ERROR_KEY_EXPECTED.lstrip("\n")
