"""Bad input to a host's agent (the agent protocol, astral_proto/agent.proto), on protobuf's
upb backend, from the controller's own mutual-TLS identity (the one party allowed to call
it): bytes that are no MoveOrder (garbage, a truncated order, unknown groups nested
10,000 deep: CVE-2025-4565's shape) are refused by gRPC with ``INTERNAL`` before the
agent sees them, and requests over the agent's receive bound (MAX_AGENT_REQUEST_BYTES,
64 KiB: the groups nested 100,000 deep, 400 kB, and a 100 MB order) with
``RESOURCE_EXHAUSTED``, unread. The agent moves nothing and still obeys a valid order afterwards."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf.internal import api_implementation

from agent_parties import HOST_IPS, Parties, agent_stub, make_pki
from astral_proto import agent_pb2
from astral_proto.flows import HostFlow
from astral_proto.net import MAX_AGENT_REQUEST_BYTES
from astral_proto.security import CONTROLLER
from controller.registry import FlowRegistry, serve_registry
from host.agent import Agent, RegistryClient

HOST = "b0s0"
FLOW = HostFlow("10.0.0.1>10.1.0.1/qp7", "10.0.0.1", "10.1.0.1", 49152, 7)
MOVE_FLOW = "/astral.agent.v1.AgentService/MoveFlow"


class Mover:
    """A flow mover whose moves take effect at once."""

    def __init__(self) -> None:
        self.sport = FLOW.sport
        self.moves: list[tuple[str, int]] = []

    def current_sport(self, fid: str) -> int:
        return self.sport

    def move(self, fid: str, sport: int) -> None:
        self.moves.append((fid, sport))
        self.sport = sport


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FlowRegistry, Agent, Mover]]:
    root = tmp_path_factory.mktemp("pki")
    make_pki(root)
    parties = Parties("mtls", root)
    reg = FlowRegistry(parties.of(CONTROLLER), HOST_IPS)
    server, address = serve_registry(reg, "127.0.0.1:0")
    mover = Mover()
    agent = Agent(parties.of(HOST), mover, [FLOW], registry=RegistryClient(address, parties.of(HOST)),
                  bind="127.0.0.1:0")
    agent.start()
    try:
        yield reg, agent, mover
    finally:
        agent.stop()
        server.stop(0).wait()


def _send_raw(reg: FlowRegistry, agent: Agent, data: bytes) -> grpc.StatusCode:
    channel = reg.security.dial(agent.address, HOST)
    with channel:
        call = channel.unary_unary(MOVE_FLOW, request_serializer=lambda b: b,
                                   response_deserializer=agent_pb2.MoveReply.FromString)
        with pytest.raises(grpc.RpcError) as err:
            call(data, metadata=reg.security.metadata(HOST), timeout=60)
    return err.value.code()


def _order(reg: FlowRegistry, sport: int) -> agent_pb2.MoveOrder:
    return reg.order_message(reg.new_order(FLOW.flow_id, sport), 5.0)


def _nested_groups(depth: int) -> bytes:
    start, end = bytes([0x9B, 0x06]), bytes([0x9C, 0x06])    # unknown field 99, a group
    return b"\x0a\x01x" + start * depth + end * depth


def test_the_agent_parses_with_upb() -> None:
    assert api_implementation.Type() == "upb"


@pytest.mark.parametrize("kind", ["garbage", "truncated", "groups-10000-deep", "groups-100000-deep", "100MB"])
def test_bad_bytes_are_refused_and_move_nothing(fabric, kind: str) -> None:
    reg, agent, mover = fabric
    before = (list(mover.moves), mover.sport)
    if kind == "garbage":
        data, code = b"\xff" * 64, grpc.StatusCode.INTERNAL
    elif kind == "truncated":
        data, code = _order(reg, 50001).SerializeToString()[:-3], grpc.StatusCode.INTERNAL
    elif kind == "groups-10000-deep":
        data, code = _nested_groups(10_000), grpc.StatusCode.INTERNAL
        assert len(data) < MAX_AGENT_REQUEST_BYTES
    elif kind == "groups-100000-deep":
        data, code = _nested_groups(100_000), grpc.StatusCode.RESOURCE_EXHAUSTED
        assert len(data) > MAX_AGENT_REQUEST_BYTES
    else:
        order = _order(reg, 50001)
        order.flow_id = "x" * (100 * 1024 * 1024)
        data, code = order.SerializeToString(), grpc.StatusCode.RESOURCE_EXHAUSTED
    assert _send_raw(reg, agent, data) == code
    assert (mover.moves, mover.sport) == before
    # alive: a valid order from the controller is still obeyed
    stub, md, channel = agent_stub(reg.security, agent.address, HOST)
    sport = 50100 + len(mover.moves)
    with channel:
        reply = stub.MoveFlow(_order(reg, sport), metadata=md, timeout=5.0)
    assert reply.accepted and mover.sport == sport
