"""Regression tests of what the P4Runtime campaign (fuzz/p4rt.py) found in p4sim, each
fixed in p4sim/p4runtime/ and checked here without a switch process:

* an ``Update.type`` number the proto does not name (proto3 keeps it: type 7) made the
  write raise ``ValueError`` inside the server, answered ``INTERNAL``; now
  ``INVALID_ARGUMENT`` like ``UNSPECIFIED``;
* a ``p4_device_config`` nested past Python's stack (``[[[[…``, read as nested protobuf
  groups by the ``P4DeviceConfig`` unwrapping, or a P4 program of 3000 nested blocks)
  raised ``RecursionError`` out of SetForwardingPipelineConfig, answered ``UNKNOWN``
  "Exception calling application"; now ``INVALID_ARGUMENT``."""
from __future__ import annotations

import json

import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info
from p4sim.p4runtime import devconfig
from p4sim.p4runtime.entities import EntityStore
from p4sim.p4runtime.server import RpcError, load_device_config
from p4sim.runtime.errors import RuntimeStateError

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> f; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t { key = { hdr.h.f: exact; } actions = { fwd; NoAction; } }
    apply { t.apply(); }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("update_type", [pb.Update.UNSPECIFIED, 7, 1000])
def test_an_unnamed_update_type_is_invalid_argument(update_type: int) -> None:
    program = load_program_text(PROGRAM, "t.p4")
    p4info = build_p4info(program)
    store = EntityStore(program, p4info)
    upd = pb.Update(type=update_type)
    upd.entity.table_entry.table_id = p4info.tables[0].preamble.id
    with pytest.raises(RuntimeStateError) as err:
        store.write(upd)
    assert err.value.code == "INVALID_ARGUMENT"
    assert str(update_type) in err.value.message or "UNSPECIFIED" in err.value.message


@pytest.mark.parametrize("config", [
    b"[" * 5000,
    json.dumps({"format": "p4sim-1", "name": "deep.p4",
                "source": "control C() { apply { " + "{" * 3000 + "}" * 3000 + " } }"}).encode(),
], ids=["json-nested", "p4-nested"])
def test_a_config_nested_too_deeply_is_invalid_argument(config: bytes) -> None:
    with pytest.raises(devconfig.DeviceConfigError, match="nests too deeply"):
        devconfig.load_device_config(config)
    with pytest.raises(RpcError) as err:
        load_device_config(config)
    assert err.value.code == "INVALID_ARGUMENT"
