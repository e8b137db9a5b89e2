"""StreamChannel of the P4Runtime server over a real gRPC channel: arbitration between
controllers, PacketOut/PacketIn through @controller_header headers, digests with ack."""
from __future__ import annotations

import queue
from typing import Iterator

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info
from p4sim.p4runtime.authz import parse_policy
from p4sim.p4runtime.server import P4RuntimeServer
from p4sim.p4runtime.streamlimits import StreamMessageBounds
from test_server_support import PROGRAM, Client, FakeDevice, FakeStore, device_config

Req = p4runtime_pb2.SetForwardingPipelineConfigRequest
ETH = bytes.fromhex("000000000002" "0000000000aa" "0800") + b"payload"


@pytest.fixture(scope="module")
def p4info():
    return build_p4info(load_program_text(PROGRAM, "server_test.p4"))


@pytest.fixture
def server() -> Iterator[tuple[P4RuntimeServer, FakeDevice]]:
    dev = FakeDevice()
    srv = P4RuntimeServer(dev, "127.0.0.1:0", None, store_factory=FakeStore)
    srv.start()
    yield srv, dev
    srv.stop()


@pytest.fixture
def clients(server) -> Iterator[list[Client]]:
    made: list[Client] = []

    def make() -> Client:
        c = Client(server[0].port)
        made.append(c)
        return c
    yield make  # type: ignore[misc]
    for c in made:
        c.close()


def status(msg) -> tuple[int, int]:
    return msg.arbitration.status.code, msg.arbitration.election_id.low


def primary_with_pipeline(make, p4info, election_id=1) -> Client:
    c = make()
    c.arbitrate(election_id)
    assert status(c.next("arbitration"))[0] == code_pb2.OK
    req = Req(device_id=1, action=Req.VERIFY_AND_COMMIT)
    req.election_id.low = election_id
    req.config.p4info.CopyFrom(p4info)
    req.config.p4_device_config = device_config()
    c.stub.SetForwardingPipelineConfig(req)
    return c


def test_two_controllers(server, clients, p4info):
    a = primary_with_pipeline(clients, p4info, election_id=1)
    b = clients()
    b.arbitrate(2)
    assert status(b.next("arbitration")) == (code_pb2.OK, 2)
    assert status(a.next("arbitration")) == (code_pb2.ALREADY_EXISTS, 2)
    req = p4runtime_pb2.WriteRequest(device_id=1, election_id=p4runtime_pb2.Uint128(low=1))
    with pytest.raises(grpc.RpcError) as ei:
        a.stub.Write(req)
    assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
    req.election_id.low = 2
    b.stub.Write(req)  # an empty batch from the primary is fine
    # a backup reads
    assert list(a.stub.Read(p4runtime_pb2.ReadRequest(device_id=1, entities=[
        p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())]))) == []
    # an unset election id makes a backup that never becomes primary
    c = clients()
    c.arbitrate(None)
    assert status(c.next("arbitration")) == (code_pb2.ALREADY_EXISTS, 2)
    # the primary leaves: the highest remaining one takes over, everybody is told
    b.close()
    assert status(a.next("arbitration")) == (code_pb2.OK, 1)
    assert status(c.next("arbitration")) == (code_pb2.ALREADY_EXISTS, 1)
    req.election_id.low = 1
    a.stub.Write(req)
    # the primary downgrades itself below nobody: no primary left
    a.arbitrate(None)
    assert status(a.next("arbitration"))[0] == code_pb2.NOT_FOUND
    assert status(c.next("arbitration"))[0] == code_pb2.NOT_FOUND


@pytest.mark.parametrize("case", ["duplicate", "device", "role_change"])
def test_arbitration_errors(clients, case):
    a = clients()
    a.arbitrate(5)
    assert status(a.next("arbitration"))[0] == code_pb2.OK
    b = clients()
    if case == "duplicate":
        b.arbitrate(5)
        expected = grpc.StatusCode.INVALID_ARGUMENT
    elif case == "device":
        b.arbitrate(6, device_id=2)
        expected = grpc.StatusCode.NOT_FOUND
    else:
        b.arbitrate(4)
        b.next("arbitration")
        b.arbitrate(4, role="other")
        expected = grpc.StatusCode.FAILED_PRECONDITION
    assert b.next("arbitration") is None
    assert b.stream_error is not None and b.stream_error.code() == expected


def test_named_role_is_its_own_domain(clients):
    a, b = clients(), clients()
    a.arbitrate(5)
    b.arbitrate(1, role="acl")
    assert status(a.next("arbitration"))[0] == code_pb2.OK
    msg = b.next("arbitration")
    assert msg.arbitration.role.name == "acl" and status(msg) == (code_pb2.OK, 1)


def packet_out(port: int, payload: bytes, with_pad: bool = True) -> p4runtime_pb2.StreamMessageRequest:
    req = p4runtime_pb2.StreamMessageRequest()
    req.packet.payload = payload
    req.packet.metadata.add(metadata_id=1, value=port.to_bytes(2, "big"))
    if with_pad:
        req.packet.metadata.add(metadata_id=2, value=b"\x00")
    return req


def test_packet_out_and_in(server, clients, p4info):
    srv, dev = server
    a = primary_with_pipeline(clients, p4info)
    a.send(packet_out(3, ETH))
    a.send(packet_out(255, ETH))  # to the CPU port: comes back as a PacketIn
    msg = a.next("packet")
    assert msg.packet.payload == ETH
    assert {m.metadata_id: m.value for m in msg.packet.metadata} == {1: b"\xff", 2: b"\x00"}
    assert dev.injected[0] == bytes([0x01, 0x80]) + ETH  # 9-bit port 3, then 7 pad bits, MSB first
    assert dev.sent == [(3, ETH)]
    # as BMv2: a missing metadata field is 0, the packet goes out
    a.send(packet_out(3, ETH, with_pad=False))
    a.send(packet_out(255, ETH))
    a.next("packet")                       # (the stream is ordered: the first one was handled)
    assert dev.injected[2] == bytes([0x01, 0x80]) + ETH and dev.sent[-1] == (3, ETH)
    # as BMv2: an unknown metadata id, or a PacketOut from a backup, is dropped without a word
    bad = packet_out(3, ETH)
    bad.packet.metadata.add(metadata_id=9, value=b"\x01")
    a.send(bad)
    b = clients()
    b.arbitrate(0)
    b.next("arbitration")
    b.send(packet_out(3, ETH))
    a.send(packet_out(255, ETH))
    a.next("packet")
    b.send(packet_out(255, ETH))       # nothing comes back to the backup
    with pytest.raises(queue.Empty):
        b.next("error", timeout=0.3)
    assert len(dev.injected) == 5 and a.received.empty()


def test_packet_out_errors_with_extras(p4info):
    """With ``--p4runtime-extras`` a dropped PacketOut is answered with a StreamError."""
    dev = FakeDevice()
    srv = P4RuntimeServer(dev, "127.0.0.1:0", None, store_factory=FakeStore, extras=True)
    srv.start()
    made: list[Client] = []

    def make() -> Client:
        made.append(Client(srv.port))
        return made[-1]
    try:
        a = primary_with_pipeline(make, p4info)
        bad = packet_out(3, ETH)
        bad.packet.metadata.add(metadata_id=9, value=b"\x01")
        a.send(bad)
        err = a.next("error").error
        assert err.canonical_code == code_pb2.INVALID_ARGUMENT and err.packet_out.packet_out.payload == ETH
        b = make()
        b.arbitrate(0)
        b.next("arbitration")
        b.send(packet_out(3, ETH))
        assert b.next("error").error.canonical_code == code_pb2.PERMISSION_DENIED
        assert dev.injected == []
    finally:
        for c in made:
            c.close()
        srv.stop()


def digest_config(p4info, max_list_size: int, max_timeout_ns: int, ack_timeout_ns: int):
    req = p4runtime_pb2.WriteRequest(device_id=1, election_id=p4runtime_pb2.Uint128(low=1))
    upd = req.updates.add(type=p4runtime_pb2.Update.INSERT)
    d = upd.entity.digest_entry
    d.digest_id = p4info.digests[0].preamble.id
    d.config.max_list_size = max_list_size
    d.config.max_timeout_ns = max_timeout_ns
    d.config.ack_timeout_ns = ack_timeout_ns
    return req


def frame_from(src: int) -> bytes:
    return bytes.fromhex("000000000002") + src.to_bytes(6, "big") + b"\x08\x00"


def members(msg) -> list[tuple[bytes, ...]]:
    return [tuple(m.bitstring for m in d.struct.members) for d in msg.digest.data]


def test_digests_with_ack(server, clients, p4info):
    srv, dev = server
    a = primary_with_pipeline(clients, p4info)
    dev.receive(1, frame_from(0xAA))  # not configured yet: dropped
    a.stub.Write(digest_config(p4info, 1, 0, 10 ** 10))
    dev.receive(1, frame_from(0xBB))
    msg = a.next("digest")
    assert msg.digest.digest_id == p4info.digests[0].preamble.id and msg.digest.list_id == 1
    assert members(msg) == [(b"\xbb", b"\x01")] and msg.digest.timestamp > 0
    dev.receive(2, frame_from(0xBB))  # same data again (port 2 differs): a new value
    dev.receive(1, frame_from(0xBB))  # same data, not acknowledged: suppressed
    dev.receive(1, frame_from(0xCC))
    got = [members(a.next("digest")), members(a.next("digest"))]
    assert got == [[(b"\xbb", b"\x02")], [(b"\xcc", b"\x01")]]
    ack = p4runtime_pb2.StreamMessageRequest()
    ack.digest_ack.digest_id = p4info.digests[0].preamble.id
    ack.digest_ack.list_id = 1
    a.send(ack)
    # an ack of an unknown digest id is reported on the stream
    bad = p4runtime_pb2.StreamMessageRequest()
    bad.digest_ack.digest_id = 7
    a.send(bad)
    assert a.next("error").error.canonical_code == code_pb2.NOT_FOUND
    dev.receive(1, frame_from(0xBB))  # acknowledged: reported again
    msg = a.next("digest")
    assert members(msg) == [(b"\xbb", b"\x01")] and msg.digest.list_id == 4


def test_digest_lists_batch_up_to_max_list_size(server, clients, p4info):
    srv, dev = server
    a = primary_with_pipeline(clients, p4info)
    a.stub.Write(digest_config(p4info, 3, 50_000_000, 0))
    for src in (1, 2, 2, 3, 4):
        dev.receive(1, frame_from(src))
    full = a.next("digest")
    assert [m[0] for m in members(full)] == [b"\x01", b"\x02", b"\x03"]
    rest = a.next("digest")  # sent when max_timeout_ns (50 ms) has passed
    assert [m[0] for m in members(rest)] == [b"\x04"] and rest.digest.list_id == full.digest.list_id + 1


def sized_packet_out(port: int, size_bytes: int) -> p4runtime_pb2.StreamMessageRequest:
    """A PacketOut to ``port`` whose message is exactly ``size_bytes`` long on the wire."""
    req = packet_out(port, b"")
    req.packet.payload = bytes(size_bytes - req.ByteSize() - 2)    # 2: the payload's key and length
    assert req.ByteSize() == size_bytes, req.ByteSize()
    return req


def test_a_stream_message_over_its_bound_ends_that_stream_unparsed(p4info):
    """A StreamChannel message longer than its sender's bound (StreamMessageBounds, checked
    on the bytes) ends that stream RESOURCE_EXHAUSTED naming the size and the bound; a
    message at the bound is served. Without a policy every client has the writer bound.
    The primary on another stream keeps its primacy and its PacketOuts go out."""
    dev = FakeDevice()
    bounds = StreamMessageBounds(read_only=64, writer=120)
    srv = P4RuntimeServer(dev, "127.0.0.1:0", None, store_factory=FakeStore, stream_message_bounds=bounds)
    srv.start()
    made: list[Client] = []
    try:
        def make() -> Client:
            made.append(Client(srv.port))
            return made[-1]
        a = primary_with_pipeline(make, p4info, election_id=2)
        at_bound = sized_packet_out(3, 120)
        a.send(at_bound)                                     # at the bound: served
        a.send(packet_out(255, ETH))
        a.next("packet")
        assert dev.sent == [(3, at_bound.packet.payload)]
        b = make()
        b.arbitrate(1)
        assert status(b.next("arbitration")) == (code_pb2.ALREADY_EXISTS, 2)
        b.send(sized_packet_out(3, 121))                     # one byte over: the stream ends
        assert b.next("packet") is None
        assert b.stream_error is not None and b.stream_error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert b.stream_error.details() == ("a StreamChannel message of 121 bytes from identity (anonymous) "
                                            "exceeds its bound of 120 bytes (an identity that may write); "
                                            "refused before it was parsed")
        assert bounds.refused == 1
        a.send(packet_out(3, ETH))                          # the primary is still primary
        a.send(packet_out(255, ETH))
        a.next("packet")
        assert dev.sent[-1] == (3, ETH) and a.stream_error is None
    finally:
        for c in made:
            c.close()
        srv.stop()


TESTBED_POLICY = """\
version: 1
roles:
  "": {can_push_pipeline: true, receives_packet_ins: true}
  monitor: {read_only: true}
identities:
  controller: [""]
  monitor: [monitor]
"""
"""The roles and identities of the testbed's policy (testbed.tls.P4RT_POLICY_TEXT)."""


def test_only_identities_that_may_write_get_the_writer_bound() -> None:
    """The testbed's policy: the controller (role "", may write) gets the writer bound; the
    monitor (read-only role) and an identity the policy does not name get the small one."""
    srv = P4RuntimeServer.__new__(P4RuntimeServer)
    srv.policy = parse_policy(TESTBED_POLICY, "p4rt-policy.yaml")
    assert srv._may_write("controller")
    assert not srv._may_write("monitor") and not srv._may_write("b0s0") and not srv._may_write(None)
