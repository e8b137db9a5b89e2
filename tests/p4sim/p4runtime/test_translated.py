"""Fields of ``@p4runtime_translation`` types through the P4Runtime server, as
simple_switch_grpc takes them (p4sim/p4runtime/entities_translated.py): no translation;
PI checks a value against the P4Info width (the controller's N) and BMv2 refuses a match
key whose byte count is not its field's; a digest with a ``type`` member makes PI refuse
the P4Info."""
from __future__ import annotations

from typing import Any, Callable

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4sim.device import DeviceConfig
from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info
from p4sim.p4runtime.devconfig import digest_too_complex
from p4sim.p4runtime.entities import EntityStore
from p4sim.p4runtime.server import P4RuntimeServer
from p4sim.runtime.errors import RuntimeStateError
from p4sim.v1model.switch import V1ModelSwitch
from test_server_support import Client, FakeDevice, FakeStore

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
@p4runtime_translation("org.example/ip", 32) type bit<32> ip_t;        // same width
@p4runtime_translation("org.example/mac", 32) type bit<48> mac_t;      // 6 bytes vs 4
@p4runtime_translation("org.example/name", string) type bit<8> name_t;
@p4runtime_translation("org.example/port", 16) type bit<9> port_t;     // 2 bytes both
header h_t { ip_t ip; mac_t mac; bit<8> name; bit<8> pad; }
struct H { h_t h; }
struct M { name_t n; }
struct learn_t { mac_t mac; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {
  state start { p.extract(h.h); transition accept; }
}
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s) {
  action fwd(port_t port) { s.egress_spec = (bit<9>)port; }
  action drop() { mark_to_drop(s); }
  table by_ip { key = { h.h.ip : exact; } actions = { fwd; drop; } default_action = drop(); }
  table by_mac { key = { h.h.mac : exact; } actions = { fwd; drop; } }
  table by_name { key = { m.n : exact; } actions = { fwd; drop; } }
  table by_port { key = { s.ingress_port : lpm; } actions = { fwd; drop; } }
  apply {
    m.n = (name_t)h.h.name;
    by_ip.apply(); by_mac.apply(); by_name.apply(); by_port.apply();
  }
}
control E(inout H h, inout M m, inout standard_metadata_t s) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


class Env:
    def __init__(self) -> None:
        self.prog = load_program_text(PROGRAM, "translated.p4")
        self.info = build_p4info(self.prog)
        self.store = EntityStore(self.prog, self.info)
        self.sw = V1ModelSwitch(self.prog)
        self.ids = {o.preamble.alias: o.preamble.id for o in [*self.info.tables, *self.info.actions]}

    def insert(self, table: str, match: Callable[[Any], None], port: bytes) -> None:
        te = pb.TableEntry(table_id=self.ids[table])
        match(te.match.add(field_id=1))
        te.action.action.action_id = self.ids["fwd"]
        te.action.action.params.add(param_id=1, value=port)
        self.store.write(pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=te)))

    def code(self, fn: Callable[[], Any]) -> str:
        with pytest.raises(RuntimeStateError) as ei:
            fn()
        return ei.value.code


@pytest.fixture
def env() -> Env:
    return Env()


def _exact(value: bytes) -> Callable[[Any], None]:
    def set_(fm: Any) -> None:
        fm.exact.value = value
    return set_


def test_p4info_widths_are_the_controllers(env: Env) -> None:
    widths = {t.preamble.alias: [(m.bitwidth, m.type_name.name) for m in t.match_fields] for t in env.info.tables}
    assert widths == {"by_ip": [(32, "ip_t")], "by_mac": [(32, "mac_t")], "by_name": [(0, "name_t")],
                      "by_port": [(9, "")]}


def test_same_width_passes_untranslated(env: Env) -> None:
    env.insert("by_ip", _exact(b"\x0a\x00\x00\x01"), b"\x00\x05")
    frame = b"\x0a\x00\x00\x01" + bytes(6) + b"\x00\x00"
    assert [p for p, _ in env.sw.process_packet(1, frame)] == [5]
    (read,) = env.store.read(pb.Entity(table_entry=pb.TableEntry(table_id=env.ids["by_ip"])))
    assert read.table_entry.match[0].exact.value == b"\x0a\x00\x00\x01"


def test_other_byte_count_is_bmv2s_bad_match_key(env: Env) -> None:
    # PI accepts a 32-bit value (the P4Info width); BMv2 wants the 6 bytes of the field
    assert env.code(lambda: env.insert("by_mac", _exact(b"\x00\x00\x00\x01"), b"\x00\x05")) == "UNKNOWN"
    # a value wider than the P4Info width is PI's INVALID_ARGUMENT, before BMv2 sees it
    assert env.code(lambda: env.insert("by_mac", _exact(b"\x01\x00\x00\x00\x01"), b"\x00\x05")) \
        == "INVALID_ARGUMENT"


def test_string_translation_takes_only_zero(env: Env) -> None:
    assert env.code(lambda: env.insert("by_name", _exact(b"\x07"), b"\x00\x05")) == "INVALID_ARGUMENT"
    assert env.code(lambda: env.insert("by_name", _exact(b"\x00"), b"\x00\x05")) == "UNKNOWN"


def test_translated_action_parameter(env: Env) -> None:
    # port 1 as a /8 (ports 0-1): PI counts the prefix on the key's 2 whole bytes, so a /9
    # must leave 7 low bits zero and cannot name port 1 (test_lpm_padded_width.py)
    lpm = pb.FieldMatch.LPM(value=b"\x00\x00", prefix_len=8)

    def match(fm: Any) -> None:
        fm.lpm.CopyFrom(lpm)
    # 16 bits in P4Info: 0x10000 is PI's INVALID_ARGUMENT; 0x0200 fits 16 bits but not the
    # program's 9 (BMv2 would store it and truncate it on assignment; p4sim refuses it)
    assert env.code(lambda: env.insert("by_port", match, b"\x01\x00\x00")) == "INVALID_ARGUMENT"
    assert env.code(lambda: env.insert("by_port", match, b"\x02\x00")) == "OUT_OF_RANGE"
    env.insert("by_port", match, b"\x00\x07")
    frame = bytes(12) + b"\x00\x00"
    assert [p for p, _ in env.sw.process_packet(1, frame)] == [7]


def test_digest_of_a_type_is_refused_like_pi(tmp_path) -> None:
    info = build_p4info(load_program_text(PROGRAM.replace("by_port.apply();", "by_port.apply(); "
                                                          "digest<learn_t>(1, { h.h.mac });"), "d.p4"))
    assert digest_too_complex(info) == "learn_t"
    srv = P4RuntimeServer(FakeDevice(), "127.0.0.1:0", str(tmp_path / "requests.txt"), store_factory=FakeStore)
    client = Client(srv.start())
    try:
        client.arbitrate(1)
        assert client.next("arbitration").arbitration.status.code == code_pb2.OK
        req = pb.SetForwardingPipelineConfigRequest(device_id=1, action=pb.SetForwardingPipelineConfigRequest.VERIFY)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(info)
        req.config.p4_device_config = DeviceConfig("d.p4", PROGRAM.replace(
            "by_port.apply();", "by_port.apply(); digest<learn_t>(1, { h.h.mac });")).to_json().encode()
        with pytest.raises(grpc.RpcError) as ei:
            client.stub.SetForwardingPipelineConfig(req)
        assert ei.value.code() == grpc.StatusCode.UNKNOWN
        assert "Error when importing p4info" in ei.value.details()
    finally:
        client.close()
        srv.stop()
