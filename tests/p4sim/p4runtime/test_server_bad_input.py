"""Bad input to p4sim's P4Runtime server, on protobuf's upb backend, over a real gRPC
channel with the real entity store: bytes that are not a WriteRequest (garbage, a
truncated message, unknown groups nested 100,000 deep, P4Data structs nested past
protobuf's depth limit), a P4Data struct nested within it where a register wants a
bitstring, a 100 MB write and one over the server's size limit. Each is refused with its
code, the server keeps answering and the table holds what it held.

Codes: a request gRPC cannot parse is ``INTERNAL`` (grpcio's "Exception deserializing
request", as gRPC C++ answers for BMv2), one over the receive limit ``RESOURCE_EXHAUSTED``
(gRPC's; PI's limit is 256 MB, p4sim's :data:`MAX_RECEIVE_BYTES`), a value too wide for
its field ``INVALID_ARGUMENT`` and a register write ``UNIMPLEMENTED`` (BMv2's, the spec's
codes for these)."""
from __future__ import annotations

from typing import Iterator

import grpc
import pytest
from google.protobuf.internal import api_implementation
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from p4sim.device import DeviceConfig
from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info
from p4sim.p4runtime.server import MAX_RECEIVE_BYTES, P4RuntimeServer
from test_server_support import PROGRAM as SERVER_TEST_PROGRAM
from test_server_support import Client, FakeDevice

U = p4runtime_pb2.Update
# the servers' test program with a register (whose data is a P4Data)
PROGRAM = SERVER_TEST_PROGRAM.replace(
    "    action drop() { mark_to_drop(sm); }",
    "    register<bit<8>>(4) r;\n    action drop() { mark_to_drop(sm); }", 1).replace(
    "        if (hdr.packet_out.isValid()) {", "        r.write(0, 8w1);\n        if (hdr.packet_out.isValid()) {", 1)
assert PROGRAM.count("r.write") == 1 and PROGRAM.count("register<") == 1
WRITE = "/p4.v1.P4Runtime/Write"
SMALL_LIMIT_BYTES = 1 << 20


def _server(limit: int = MAX_RECEIVE_BYTES, extras: bool = False
            ) -> Iterator[tuple[Client, grpc.Channel, object]]:
    dev = FakeDevice()
    srv = P4RuntimeServer(dev, "127.0.0.1:0", None, max_receive_bytes=limit, extras=extras)
    port = srv.start()
    client = Client(port)
    client.arbitrate(1)
    assert client.next("arbitration").arbitration.status.code == code_pb2.OK
    p4info = build_p4info(load_program_text(PROGRAM, "bad_input.p4"))
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    req.election_id.low = 1
    req.config.p4info.CopyFrom(p4info)
    req.config.p4_device_config = DeviceConfig("bad_input.p4", PROGRAM).to_json().encode()
    client.stub.SetForwardingPipelineConfig(req)
    # a raw channel that sends bytes as they are, able to send 300 MB
    raw = grpc.insecure_channel(f"127.0.0.1:{port}",
                                options=[("grpc.max_send_message_length", -1)])
    try:
        yield client, raw, p4info
    finally:
        raw.close()
        client.close()
        srv.stop()


@pytest.fixture(scope="module")
def env() -> Iterator[tuple[Client, grpc.Channel, object]]:
    yield from _server()


def _update(p4info, mac: bytes, port: int = 1) -> p4runtime_pb2.Update:
    fwd = next(a for a in p4info.actions if a.preamble.name == "I.fwd")
    upd = U(type=U.INSERT)
    te = upd.entity.table_entry
    te.table_id = p4info.tables[0].preamble.id
    te.match.add(field_id=1).exact.value = mac
    te.action.action.action_id = fwd.preamble.id
    te.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return upd


def _request(*updates: p4runtime_pb2.Update) -> p4runtime_pb2.WriteRequest:
    req = p4runtime_pb2.WriteRequest(device_id=1)
    req.election_id.low = 1
    req.updates.extend(updates)
    return req


def _state(client: Client) -> list[bytes]:
    """The table's entries (serialized, sorted): what must not change."""
    req = p4runtime_pb2.ReadRequest(device_id=1)
    req.entities.add().table_entry.SetInParent()
    return sorted(e.SerializeToString(deterministic=True)
                  for resp in client.stub.Read(req, timeout=10) for e in resp.entities)


def _send_raw(raw: grpc.Channel, data: bytes) -> grpc.RpcError:
    """Write ``data`` as it is; the error it must end in."""
    call = raw.unary_unary(WRITE, request_serializer=lambda b: b,
                           response_deserializer=p4runtime_pb2.WriteResponse.FromString)
    with pytest.raises(grpc.RpcError) as err:
        call(data, timeout=120)
    return err.value


def _errors(err: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    """The per-update p4.v1.Error list of a batch's status."""
    status = status_pb2.Status()
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status.ParseFromString(value)
    out = []
    for detail in status.details:
        e = p4runtime_pb2.Error()
        assert detail.Unpack(e)
        out.append(e)
    return out


def _truncated() -> bytes:
    """A WriteRequest with one table-entry INSERT, its last five bytes cut off."""
    upd = U(type=U.INSERT)
    upd.entity.table_entry.table_id = 1
    upd.entity.table_entry.match.add(field_id=1).exact.value = b"\x00" * 6
    return _request(upd).SerializeToString()[:-5]


def _nested_groups(depth: int) -> bytes:
    """A WriteRequest (device 1) whose unknown field 99 is a group nested ``depth`` deep:
    what made protobuf's pure-Python parser recurse without bound (CVE-2025-4565)."""
    start, end = bytes([0x9B, 0x06]), bytes([0x9C, 0x06])    # field 99, wire types 3 and 4
    return b"\x08\x01" + start * depth + end * depth


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field on the wire."""
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _num(message: type, name: str) -> int:
    return message.DESCRIPTOR.fields_by_name[name].number


def _nested_p4data(depth: int) -> bytes:
    """A P4Data: a struct whose one member is a struct … ``depth`` deep, then a bitstring
    (hand-encoded: protobuf itself will not build one deeper than its limit)."""
    data = _field(_num(p4data_pb2.P4Data, "bitstring"), b"\x01")
    for _ in range(depth):
        data = _field(_num(p4data_pb2.P4Data, "struct"),
                      _field(_num(p4data_pb2.P4StructLike, "members"), data))
    return data


def _register_write(p4info, depth: int) -> bytes:
    """A WriteRequest (device 1, election id 1) of one register MODIFY of index 0 whose
    data is :func:`_nested_p4data` of ``depth``."""
    reg = p4runtime_pb2.RegisterEntry(register_id=p4info.registers[0].preamble.id)
    reg.index.index = 0
    reg_bytes = reg.SerializeToString() + _field(_num(p4runtime_pb2.RegisterEntry, "data"),
                                                 _nested_p4data(depth))
    entity = _field(_num(p4runtime_pb2.Entity, "register_entry"), reg_bytes)
    update = U(type=U.MODIFY).SerializeToString() + _field(_num(U, "entity"), entity)
    return _request().SerializeToString() + _field(_num(p4runtime_pb2.WriteRequest, "updates"), update)


@pytest.fixture
def seeded(env) -> tuple[Client, grpc.Channel, object, list[bytes]]:
    client, raw, p4info = env
    if not _state(client):
        client.stub.Write(_request(_update(p4info, b"\x00\x00\x00\x00\x00\x07", 3)))
    before = _state(client)
    assert len(before) == 1
    return client, raw, p4info, before


def test_the_server_parses_with_upb() -> None:
    assert api_implementation.Type() == "upb"


@pytest.mark.parametrize("data", [
    pytest.param(b"\x0a\xff\xff\xff\xff\x0f", id="length-past-the-end"),
    pytest.param(b"\xff" * 64, id="garbage"),
    pytest.param(_truncated(), id="truncated-update"),
    pytest.param(_nested_groups(100_000), id="groups-100000-deep"),
])
def test_bytes_that_are_no_write_request_are_internal(seeded, data: bytes) -> None:
    client, raw, _, before = seeded
    assert _send_raw(raw, data).code() == grpc.StatusCode.INTERNAL
    assert _state(client) == before                     # alive, nothing changed


def test_p4data_nested_past_the_parser_limit_is_internal(seeded) -> None:
    client, raw, p4info, before = seeded
    assert _send_raw(raw, _register_write(p4info, 200)).code() == grpc.StatusCode.INTERNAL
    assert _state(client) == before


def test_p4data_nested_within_the_limit_reaches_the_store_and_is_refused(seeded) -> None:
    client, raw, p4info, before = seeded
    parsed = p4runtime_pb2.WriteRequest.FromString(_register_write(p4info, 40))
    assert parsed.updates[0].entity.register_entry.data.WhichOneof("data") == "struct"
    err = _send_raw(raw, _register_write(p4info, 40))
    assert err.code() == grpc.StatusCode.UNKNOWN                  # the batch's status
    assert [e.canonical_code for e in _errors(err)] == [code_pb2.UNIMPLEMENTED]   # BMv2's
    assert _state(client) == before


def test_p4data_nested_within_the_limit_is_invalid_argument_with_extras() -> None:
    for client, raw, p4info in _server(extras=True):
        err = _send_raw(raw, _register_write(p4info, 40))
        assert [e.canonical_code for e in _errors(err)] == [code_pb2.INVALID_ARGUMENT]
        assert "bitstring" in _errors(err)[0].message


def test_a_100_mb_write_is_refused_and_changes_nothing(seeded) -> None:
    client, raw, p4info, before = seeded
    huge = _request(_update(p4info, b"\x01" * (100 * 1024 * 1024)))   # a 100 MB match value
    assert huge.ByteSize() > 100_000_000                              # under PI's 256 MB
    err = _send_raw(raw, huge.SerializeToString())
    assert err.code() == grpc.StatusCode.UNKNOWN                      # the batch's status
    assert [e.canonical_code for e in _errors(err)] == [code_pb2.INVALID_ARGUMENT]
    assert _state(client) == before


def test_a_write_over_the_receive_limit_is_resource_exhausted() -> None:
    for client, raw, p4info in _server(SMALL_LIMIT_BYTES):
        client.stub.Write(_request(_update(p4info, b"\x00\x00\x00\x00\x00\x07", 3)))
        before = _state(client)
        big = _request(*[_update(p4info, (i + 16).to_bytes(6, "big")) for i in range(30_000)])
        assert big.ByteSize() > SMALL_LIMIT_BYTES
        assert _send_raw(raw, big.SerializeToString()).code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _state(client) == before


# The other RPCs: since the raw-bytes handlers (p4sim/README.md, "Requests refused before
# they are read") the server parses Read, the pipeline RPCs and Capabilities itself, after
# the policy check; StreamChannel messages are still parsed by gRPC. Bad bytes to each end
# the call with INTERNAL as gRPC's own deserializer would, and change nothing.
BAD_BYTES = [
    pytest.param(b"\x0a\xff\xff\xff\xff\x0f", id="length-past-the-end"),
    pytest.param(b"\xff" * 64, id="garbage"),
    pytest.param(_truncated(), id="truncated"),
    pytest.param(_nested_groups(100_000), id="groups-100000-deep"),
]
UNARY_RPCS = {
    "SetForwardingPipelineConfig": p4runtime_pb2.SetForwardingPipelineConfigResponse,
    "GetForwardingPipelineConfig": p4runtime_pb2.GetForwardingPipelineConfigResponse,
    "Capabilities": p4runtime_pb2.CapabilitiesResponse,
}


def _pipeline(client: Client) -> bytes:
    """The device's P4Info, serialized: what a bad pipeline push must not change."""
    req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
        device_id=1, response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
    return client.stub.GetForwardingPipelineConfig(req, timeout=10).config.p4info.SerializeToString(
        deterministic=True)


@pytest.mark.parametrize("rpc", sorted(UNARY_RPCS))
@pytest.mark.parametrize("data", BAD_BYTES)
def test_bad_bytes_to_the_unary_rpcs_are_internal(seeded, rpc: str, data: bytes) -> None:
    client, raw, _, before = seeded
    pipeline = _pipeline(client)
    call = raw.unary_unary(f"/p4.v1.P4Runtime/{rpc}", request_serializer=lambda b: b,
                           response_deserializer=UNARY_RPCS[rpc].FromString)
    with pytest.raises(grpc.RpcError) as err:
        call(data, timeout=60)
    assert err.value.code() == grpc.StatusCode.INTERNAL, err.value.details()
    assert _state(client) == before and _pipeline(client) == pipeline   # alive, unchanged


@pytest.mark.parametrize("data", BAD_BYTES)
def test_bad_bytes_to_read_are_internal(seeded, data: bytes) -> None:
    client, raw, _, before = seeded
    call = raw.unary_stream("/p4.v1.P4Runtime/Read", request_serializer=lambda b: b,
                            response_deserializer=p4runtime_pb2.ReadResponse.FromString)
    with pytest.raises(grpc.RpcError) as err:
        list(call(data, timeout=60))
    assert err.value.code() == grpc.StatusCode.INTERNAL, err.value.details()
    assert _state(client) == before


@pytest.mark.parametrize("data", BAD_BYTES)
def test_bad_bytes_on_a_stream_end_that_stream_only(seeded, data: bytes) -> None:
    """A second client's StreamChannel whose first message is bad bytes is ended with
    INTERNAL; the primary's stream stays open and its writes still apply."""
    client, raw, p4info, before = seeded
    call = raw.stream_stream("/p4.v1.P4Runtime/StreamChannel", request_serializer=lambda b: b,
                             response_deserializer=p4runtime_pb2.StreamMessageResponse.FromString)
    with pytest.raises(grpc.RpcError) as err:
        list(call(iter([data]), timeout=60))
    assert err.value.code() == grpc.StatusCode.INTERNAL, err.value.details()
    assert _state(client) == before and client.stream_error is None
    extra = _update(p4info, b"\x00\x00\x00\x00\x00\x08", 2)
    client.stub.Write(_request(extra), timeout=10)                 # still the primary
    assert len(_state(client)) == len(before) + 1
    extra.type = U.DELETE
    client.stub.Write(_request(extra), timeout=10)
    assert _state(client) == before


@pytest.mark.parametrize("data", BAD_BYTES[:1])
def test_a_stream_ended_by_bad_bytes_leaves_no_call_for_stop_to_wait_on(data: bytes) -> None:
    """gRPC Python sent a second status when the stream's handler returned after its own
    deserializer had failed; the core refused it and ``stop()`` waited its full bound on
    that call (5 of 6 tries before p4sim parsed the stream's bytes itself). Each of 5
    servers is stopped right after its bad stream ends."""
    for _ in range(5):
        dev = FakeDevice()
        srv = P4RuntimeServer(dev, "127.0.0.1:0", None)
        port = srv.start()
        with grpc.insecure_channel(f"127.0.0.1:{port}") as raw:
            call = raw.stream_stream("/p4.v1.P4Runtime/StreamChannel", request_serializer=lambda b: b,
                                     response_deserializer=p4runtime_pb2.StreamMessageResponse.FromString)
            with pytest.raises(grpc.RpcError) as err:
                list(call(iter([data]), timeout=60))
            assert err.value.code() == grpc.StatusCode.INTERNAL, err.value.details()
            assert err.value.details() == "Exception deserializing request!"
        assert srv.stop() is True
