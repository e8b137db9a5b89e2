"""P4Info of user-defined types (``type``) and ``@p4runtime_translation``, as p4c writes it
(p4sim/p4info_newtypes.py). EXPECTED is the P4Info p4c-bm2-ss 1.2.5.16 wrote for PROGRAM
(``--p4runtime-files``, its two comment lines left out): p4sim's must be the same text.

What it pins: ``type_name`` on match fields, parameters and controller-header fields; the
controller's width N as ``bitwidth`` (``string``: none) and in the initial default
action's argument; ``new_types`` (translated or ``original_type``, only the outermost
``type`` of a chain, keyed by ``@name``, with the type's other annotations); a translation
on a ``typedef`` ignored; digests' ``new_type``/``enum``/``error`` members; controller
header fields of a struct type flattened (``b.x``).
"""
from __future__ import annotations

import pytest
from google.protobuf import text_format

from p4sim.engine import load_program_text
from p4sim.errors import P4Error
from p4sim.p4info import build_p4info

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
@p4runtime_translation("org.example/mac", 32) type bit<48> mac_t;
@p4runtime_translation("org.example/port", bit<16>) type bit<9> port_t;
@p4runtime_translation("org.example/name", string) type bit<8> name_t;
type bit<8> plain_t;
type mac_t mac2_t;
typedef port_t port_alias_t;
@p4runtime_translation("org.example/ignored", 32) typedef bit<16> td_t;
@p4runtime_translation("org.example/renamed", 12) @name("renamed_t") @my_note(1) type bit<8> nm_t;
enum Kind_t { A, B }
struct inner_t { bit<7> x; bit<9> p; }
@controller_header("packet_in") header packet_in_t { port_t port; inner_t b; bit<7> pad; }
header eth_t { mac_t dst; bit<48> src; bit<16> type; }
struct headers_t { packet_in_t pin; eth_t eth; }
struct learn_t { mac2_t m; Kind_t k; error e; bit<8> v; }
struct meta_t { plain_t p; name_t n; td_t t; nm_t r; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
  state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
  action fwd(port_alias_t port, plain_t p, td_t t, nm_t r) {
    sm.egress_spec = (bit<9>)port; m.p = p; m.t = t; m.r = r;
  }
  action name_it(name_t n) { m.n = n; }
  table t {
    key = { h.eth.dst : exact; m.p : ternary; m.n : exact; m.t : exact; m.r : exact; }
    actions = { fwd; name_it; NoAction; }
    default_action = fwd((port_t)9w3, (plain_t)8w1, 16w2, (nm_t)8w4);
  }
  apply {
    t.apply();
    digest<learn_t>(1, { (mac2_t)h.eth.dst, Kind_t.A, error.NoError, 8w5 });
  }
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
    bitwidth: 32
    match_type: EXACT
    type_name {
      name: "mac_t"
    }
  }
  match_fields {
    id: 2
    name: "m.p"
    bitwidth: 8
    match_type: TERNARY
    type_name {
      name: "plain_t"
    }
  }
  match_fields {
    id: 3
    name: "m.n"
    match_type: EXACT
    type_name {
      name: "name_t"
    }
  }
  match_fields {
    id: 4
    name: "m.t"
    bitwidth: 16
    match_type: EXACT
  }
  match_fields {
    id: 5
    name: "m.r"
    bitwidth: 12
    match_type: EXACT
    type_name {
      name: "nm_t"
    }
  }
  action_refs {
    id: 31384409
  }
  action_refs {
    id: 21113148
  }
  action_refs {
    id: 21257015
  }
  initial_default_action {
    action_id: 31384409
    arguments {
      param_id: 1
      value: "\000\003"
    }
    arguments {
      param_id: 2
      value: "\001"
    }
    arguments {
      param_id: 3
      value: "\000\002"
    }
    arguments {
      param_id: 4
      value: "\000\004"
    }
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
    id: 31384409
    name: "I.fwd"
    alias: "fwd"
  }
  params {
    id: 1
    name: "port"
    bitwidth: 16
    type_name {
      name: "port_t"
    }
  }
  params {
    id: 2
    name: "p"
    bitwidth: 8
    type_name {
      name: "plain_t"
    }
  }
  params {
    id: 3
    name: "t"
    bitwidth: 16
  }
  params {
    id: 4
    name: "r"
    bitwidth: 12
    type_name {
      name: "nm_t"
    }
  }
}
actions {
  preamble {
    id: 21113148
    name: "I.name_it"
    alias: "name_it"
  }
  params {
    id: 1
    name: "n"
    type_name {
      name: "name_t"
    }
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
    name: "port"
    bitwidth: 16
    type_name {
      name: "port_t"
    }
  }
  metadata {
    id: 2
    name: "b.x"
    bitwidth: 7
  }
  metadata {
    id: 3
    name: "b.p"
    bitwidth: 9
  }
  metadata {
    id: 4
    name: "pad"
    bitwidth: 7
  }
}
digests {
  preamble {
    id: 398033514
    name: "learn_t"
    alias: "learn_t"
  }
  type_spec {
    struct {
      name: "learn_t"
    }
  }
}
type_info {
  structs {
    key: "learn_t"
    value {
      members {
        name: "m"
        type_spec {
          new_type {
            name: "mac2_t"
          }
        }
      }
      members {
        name: "k"
        type_spec {
          enum {
            name: "Kind_t"
          }
        }
      }
      members {
        name: "e"
        type_spec {
          error {
          }
        }
      }
      members {
        name: "v"
        type_spec {
          bitstring {
            bit {
              bitwidth: 8
            }
          }
        }
      }
    }
  }
  enums {
    key: "Kind_t"
    value {
      members {
        name: "A"
      }
      members {
        name: "B"
      }
    }
  }
  error {
    members: "NoError"
    members: "PacketTooShort"
    members: "NoMatch"
    members: "StackOutOfBounds"
    members: "HeaderTooShort"
    members: "ParserTimeout"
    members: "ParserInvalidArgument"
  }
  new_types {
    key: "mac2_t"
    value {
      original_type {
        bitstring {
          bit {
            bitwidth: 48
          }
        }
      }
    }
  }
  new_types {
    key: "mac_t"
    value {
      translated_type {
        uri: "org.example/mac"
        sdn_bitwidth: 32
      }
    }
  }
  new_types {
    key: "name_t"
    value {
      translated_type {
        uri: "org.example/name"
        sdn_string {
        }
      }
    }
  }
  new_types {
    key: "plain_t"
    value {
      original_type {
        bitstring {
          bit {
            bitwidth: 8
          }
        }
      }
    }
  }
  new_types {
    key: "port_t"
    value {
      translated_type {
        uri: "org.example/port"
        sdn_bitwidth: 16
      }
    }
  }
  new_types {
    key: "renamed_t"
    value {
      translated_type {
        uri: "org.example/renamed"
        sdn_bitwidth: 12
      }
      annotations: "@my_note(1)"
    }
  }
}
"""


@pytest.fixture(scope="module")
def info():
    return build_p4info(load_program_text(PROGRAM, "newtypes.p4"))


def test_p4info_is_p4cs_text(info) -> None:
    assert text_format.MessageToString(info) == EXPECTED.lstrip("\n")


def test_action_params_and_new_types(info) -> None:
    fwd = next(a for a in info.actions if a.preamble.name == "I.fwd")
    got = [(p.name, p.bitwidth, p.type_name.name) for p in fwd.params]
    # a typedef of a translated type is that type; a translated typedef is ignored
    assert got == [("port", 16, "port_t"), ("p", 8, "plain_t"), ("t", 16, ""), ("r", 12, "nm_t")]
    name_it = next(a for a in info.actions if a.preamble.name == "I.name_it")
    assert [(p.bitwidth, p.type_name.name) for p in name_it.params] == [(0, "name_t")]
    nt = info.type_info.new_types
    # keyed by control-plane name (@name), listed only where used, outermost type only
    assert sorted(nt) == ["mac2_t", "mac_t", "name_t", "plain_t", "port_t", "renamed_t"]
    assert (nt["mac_t"].translated_type.uri, nt["mac_t"].translated_type.sdn_bitwidth) == ("org.example/mac", 32)
    assert nt["port_t"].translated_type.sdn_bitwidth == 16
    assert nt["name_t"].translated_type.HasField("sdn_string")
    assert nt["plain_t"].original_type.bitstring.bit.bitwidth == 8
    assert nt["mac2_t"].original_type.bitstring.bit.bitwidth == 48   # type over a translated type
    assert list(nt["renamed_t"].annotations) == ["@my_note(1)"]
    assert not any(t.translated_type.uri == "org.example/ignored" for t in nt.values())


def test_controller_header_flattened_with_types(info) -> None:
    (pin,) = info.controller_packet_metadata
    got = [(m.id, m.name, m.bitwidth, m.type_name.name) for m in pin.metadata]
    assert got == [(1, "port", 16, "port_t"), (2, "b.x", 7, ""), (3, "b.p", 9, ""), (4, "pad", 7, "")]


def test_digest_members(info) -> None:
    (d,) = info.digests
    members = {m.name: m.type_spec for m in info.type_info.structs["learn_t"].members}
    assert d.type_spec.struct.name == "learn_t"
    assert members["m"].new_type.name == "mac2_t"
    assert members["k"].enum.name == "Kind_t" and [m.name for m in info.type_info.enums["Kind_t"].members] == ["A", "B"]
    assert members["e"].HasField("error") and list(info.type_info.error.members)[:2] == ["NoError", "PacketTooShort"]
    assert members["v"].bitstring.bit.bitwidth == 8


@pytest.mark.parametrize("decl, call, message", [
    ('@p4runtime_translation("u", 32) type bool b_t;', "a((b_t)true)",
     "b_t: P4Runtime requires the underlying type for a user-defined type with the @p4runtime_translation "
     "annotation to be bit<W>; it cannot be 'bool'"),
    ('@p4runtime_translation("u", string) type bit<8> b_t;', "a((b_t)8w1)",
     "has a type translated to a string"),
    # p4c-bm2-ss 1.2.5.16 (measured): the annotation's grammar is checked when P4Info is
    # written, for a type the program keeps ("Cannot generate P4Info message" after it)
    ('@p4runtime_translation("u", bit<8+8>) type bit<8> b_t;', "a((b_t)8w1)",
     "refused.p4:2:34: error: syntax error, unexpected +, expecting > or R_ANGLE_SHIFT"),
    ('const bit<32> W = 12; @p4runtime_translation("u", bit<W>) type bit<8> b_t;', "a((b_t)8w1)",
     "refused.p4:2:55: error: syntax error, unexpected IDENTIFIER, expecting INTEGER"),
])
def test_refused_as_p4c_refuses(decl: str, call: str, message: str) -> None:
    program = _PROGRAM.format(decl=decl, call=call)
    prog = load_program_text(program, "refused.p4")   # `check` accepts it, as p4c without P4Info
    with pytest.raises(P4Error) as ei:
        build_p4info(prog)
    assert message in str(ei.value)


# p4c-bm2-ss 1.2.5.16 (measured) writes P4Info, without the type, where the front end has
# removed everything that used the type: the type alone, an action no table lists, a typedef
# of it nothing uses, a table nobody applies (then its action)
@pytest.mark.parametrize("decl", [
    "",
    "action unused_a(b_t v) { }",
    "typedef b_t b2_t;",
])
def test_width_expression_on_a_type_p4c_removes_is_accepted(decl: str) -> None:
    program = _PROGRAM.format(decl='@p4runtime_translation("u", bit<8+8>) type bit<8> b_t; ' + decl,
                              call="a()").replace("action a(b_t v)", "action a()")
    program = program.replace("  apply {", "  action b(b_t v) { }\n  table u { key = { h.h.x : exact; } actions = { b; } }\n  apply {")
    info = build_p4info(load_program_text(program, "accepted.p4"))
    assert not info.type_info.new_types and [t.preamble.name for t in info.tables] == ["I.t"]


_PROGRAM = """#include <v1model.p4>
{decl}
header h_t {{ bit<8> x; }}
struct H {{ h_t h; }}
struct M {{ }}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {{ state start {{ p.extract(h.h); transition accept; }} }}
control C(inout H h, inout M m) {{ apply {{ }} }}
control I(inout H h, inout M m, inout standard_metadata_t s) {{
  action a(b_t v) {{ }}
  table t {{ key = {{ h.h.x : exact; }} actions = {{ a; }} default_action = {call}; }}
  apply {{ t.apply(); }}
}}
control E(inout H h, inout M m, inout standard_metadata_t s) {{ apply {{ }} }}
control D(packet_out p, in H h) {{ apply {{ p.emit(h.h); }} }}
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""
