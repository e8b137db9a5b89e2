"""The agent protocol over mutual TLS (its default) against the threats it is for: a client
that is not the controller or not a host of the fabric, a host speaking for another, and
orders replayed, expired, misaddressed or about another host's flow. Each refusal is
checked with its status and its reason; a valid order still moves the flow.

Agents and registry listen on Unix sockets, as on the testbed (TLS with the peer's name
as the target-name override); one test runs on TCP as well.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from agent_parties import HOST_IPS, Parties, agent_stub, make_pki, plaintext_agent_stub
from astral_proto import agent_pb2, agent_pb2_grpc
from astral_proto.flows import HostFlow
from astral_proto.security import CONTROLLER
from astral_proto.tls import MutualTls, TlsFiles
from controller.registry import FlowRegistry, serve_registry
from host.agent import Agent, RegistryClient

B0_FLOW = HostFlow("10.0.0.1>10.1.0.1/qp7", "10.0.0.1", "10.1.0.1", 49152, 7)
B1_FLOW = HostFlow("10.1.0.1>10.0.0.1/qp9", "10.1.0.1", "10.0.0.1", 49154, 9)


class Mover:
    """A flow mover whose moves take effect at once (the NIC is tests/host/test_agent.py's)."""

    def __init__(self, flows: list[HostFlow]) -> None:
        self.sports = {f.flow_id: f.sport for f in flows}
        self.moves: list[tuple[str, int]] = []

    def current_sport(self, fid: str) -> int:
        return self.sports[fid]

    def move(self, fid: str, sport: int) -> None:
        self.moves.append((fid, sport))
        self.sports[fid] = sport


@dataclass
class Fabric:
    reg: FlowRegistry
    reg_address: str
    agents: dict[str, Agent]
    movers: dict[str, Mover]
    parties: Parties
    foreign: Parties                  # the same names, certificates of another CA


@pytest.fixture(scope="module")
def pkis(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    ours, theirs = tmp_path_factory.mktemp("pki"), tmp_path_factory.mktemp("foreign-pki")
    make_pki(ours)
    make_pki(theirs, ca_name="someone else's CA")
    return ours, theirs


@pytest.fixture(params=["unix", "tcp"])
def fabric(request: pytest.FixtureRequest, pkis: tuple[Path, Path], tmp_path: Path) -> Iterator[Fabric]:
    parties, foreign = Parties("mtls", pkis[0]), Parties("mtls", pkis[1])
    unix = request.param == "unix"
    reg = FlowRegistry(parties.of(CONTROLLER), HOST_IPS)
    server, address = serve_registry(reg, f"unix:{tmp_path / 'registry.sock'}" if unix else "127.0.0.1:0")
    agents, movers = {}, {}
    for host, flow in (("b0s0", B0_FLOW), ("b1s0", B1_FLOW)):
        sec = parties.of(host)
        movers[host] = Mover([flow])
        agents[host] = Agent(sec, movers[host], [flow], registry=RegistryClient(address, sec),
                             bind=f"unix:{tmp_path / f'agent-{host}.sock'}" if unix else "127.0.0.1:0")
        agents[host].start()
    yield Fabric(reg, address, agents, movers, parties, foreign)
    for a in agents.values():
        a.stop()
    server.stop(0).wait()


def refused(call) -> grpc.RpcError:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        call()
    return err.value


def gor_call(fab: Fabric, host: str, order: agent_pb2.MoveOrder) -> agent_pb2.MoveReply:
    """Send ``order`` to ``host``'s agent exactly as GOR's registry dials it."""
    stub, md, channel = agent_stub(fab.reg.security, fab.agents[host].address, host)
    with channel:
        return stub.MoveFlow(order, metadata=md, timeout=5.0)


def fresh_order(fab: Fabric, fid: str = B0_FLOW.flow_id, sport: int = 50001,
                ttl_s: float = 5.0) -> agent_pb2.MoveOrder:
    return fab.reg.order_message(fab.reg.new_order(fid, sport), ttl_s)


# ------------------------------------------------------------------ identities
def test_a_valid_order_moves_the_flow_and_is_reported(fabric: Fabric) -> None:
    order, reply = fabric.reg.move(B0_FLOW.flow_id, 50001)
    assert reply.accepted and fabric.reg.wait(order.order_id, 5.0).state == "done"
    assert fabric.movers["b0s0"].moves == [(B0_FLOW.flow_id, 50001)]
    msg = order.message
    assert msg is not None and msg.target_host == "b0s0" and len(msg.nonce) == 32
    assert (msg.flow.src_ip, msg.flow.dst_ip, msg.flow.src_port) == ("10.0.0.1", "10.1.0.1", 49152)
    assert fabric.reg.flow(B0_FLOW.flow_id).sport == 50001


def test_a_plaintext_client_is_refused(fabric: Fabric) -> None:
    stub, channel = plaintext_agent_stub(fabric.agents["b0s0"].address)
    with channel:
        err = refused(lambda: stub.MoveFlow(fresh_order(fabric), timeout=2.0))
    assert err.code() == grpc.StatusCode.UNAVAILABLE            # no TLS handshake, no call
    plain = agent_pb2_grpc.FlowRegistryStub(grpc.insecure_channel(fabric.reg_address))
    err = refused(lambda: plain.RegisterFlows(agent_pb2.RegisterRequest(host="b0s0"), timeout=2.0))
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    assert fabric.movers["b0s0"].moves == []


def test_a_client_with_another_cas_certificate_is_refused(fabric: Fabric) -> None:
    # "controller" and "b0s0" certificates, but from a CA the fabric does not trust
    forged_gor = fabric.foreign.of(CONTROLLER)
    stub, md, channel = agent_stub(forged_gor, fabric.agents["b0s0"].address, "b0s0")
    with channel:
        err = refused(lambda: stub.MoveFlow(fresh_order(fabric), metadata=md, timeout=2.0))
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    forged_host = RegistryClient(fabric.reg_address, fabric.foreign.of("b0s0"), timeout_s=1.0)
    err = refused(lambda: forged_host.register([B0_FLOW], agent_address="unix:/x", incarnation="evil"))
    assert err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    forged_host.close()
    assert fabric.reg.agent_address("b0s0") == fabric.agents["b0s0"].address
    assert fabric.movers["b0s0"].moves == []


def test_a_tls_client_without_a_certificate_is_refused(fabric: Fabric) -> None:
    ca = TlsFiles.in_dir(fabric.parties.pki_root, "b0s0").ca_cert.read_bytes()  # type: ignore[arg-type]
    channel = grpc.secure_channel(fabric.agents["b0s0"].address, grpc.ssl_channel_credentials(ca),
                                  options=[("grpc.ssl_target_name_override", "b0s0")])
    with channel:
        stub = agent_pb2_grpc.AgentServiceStub(channel)
        err = refused(lambda: stub.Status(agent_pb2.StatusRequest(), timeout=2.0))
    assert err.code() == grpc.StatusCode.UNAVAILABLE


def test_only_the_controller_may_call_an_agent(fabric: Fabric) -> None:
    # b1s0 (a host of the fabric, a valid certificate) calling b0s0's agent
    stub, md, channel = agent_stub(fabric.parties.of("b1s0"), fabric.agents["b0s0"].address, "b0s0")
    with channel:
        err = refused(lambda: stub.MoveFlow(fresh_order(fabric), metadata=md, timeout=2.0))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "only controller may call" in (err.details() or "")
        err = refused(lambda: stub.Status(agent_pb2.StatusRequest(), metadata=md, timeout=2.0))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    assert fabric.movers["b0s0"].moves == []


def test_gor_checks_that_the_agent_is_the_flows_owner(fabric: Fabric) -> None:
    """A registration naming another host's agent address: GOR's channel expects a
    certificate naming b0s0 there and finds b1s0's, so the order is never delivered."""
    fabric.agents["b0s0"].stop()
    fabric.reg.register("b0s0", fabric.agents["b1s0"].address, "i-evil", [B0_FLOW])
    err = refused(lambda: fabric.reg.move(B0_FLOW.flow_id, 50001, timeout_s=2.0))
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    assert fabric.movers["b1s0"].moves == []


# ------------------------------------------------------------------ the registry
def test_a_host_cannot_register_or_report_for_another_host(fabric: Fabric) -> None:
    b0 = RegistryClient(fabric.reg_address, fabric.parties.of("b0s0"), timeout_s=2.0)
    # b1s0's flow (source IP of b1s0) registered by b0s0
    err = refused(lambda: b0.register([B0_FLOW, B1_FLOW], agent_address="unix:/x", incarnation="i"))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED and "is not a NIC of b0s0" in (err.details() or "")
    # b0s0's certificate claiming to be b1s0
    stub = agent_pb2_grpc.FlowRegistryStub(b0._channel)
    err = refused(lambda: stub.RegisterFlows(agent_pb2.RegisterRequest(host="b1s0", flows=[B1_FLOW.to_proto()]),
                                             timeout=2.0))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED and "b0s0 cannot speak for b1s0" in (err.details() or "")
    # a report on b1s0's order
    order = fabric.reg.new_order(B1_FLOW.flow_id, 50009)
    err = refused(lambda: b0.report_move(order.order_id, B1_FLOW.flow_id, done=True, sport=50009))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    assert fabric.reg.owner(B1_FLOW.flow_id) == "b1s0" and fabric.reg.order(order.order_id).state == "sent"
    b0.close()


def test_parties_that_are_not_hosts_cannot_use_the_registry(fabric: Fabric) -> None:
    for name in ("b0r0l0", CONTROLLER):          # a switch's and GOR's own certificate
        client = RegistryClient(fabric.reg_address, fabric.parties.of(name), timeout_s=2.0)
        err = refused(lambda: client.register([], agent_address="unix:/x", incarnation="i"))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED
        assert f"{name} is not a host of the fabric" in (err.details() or "")
        client.close()


# ------------------------------------------------------------------ orders
def test_a_replayed_order_is_refused(fabric: Fabric, caplog: pytest.LogCaptureFixture) -> None:
    order, reply = fabric.reg.move(B0_FLOW.flow_id, 50001)
    assert reply.accepted and order.message is not None
    with caplog.at_level(logging.WARNING, logger="host.agent.service"):
        err = refused(lambda: gor_call(fabric, "b0s0", order.message))    # the same bytes again
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS
    assert "order replayed" in (err.details() or "")
    assert "order replayed" in caplog.text                                # and logged
    assert fabric.movers["b0s0"].moves == [(B0_FLOW.flow_id, 50001)]      # applied once


def test_an_expired_order_is_refused(fabric: Fabric) -> None:
    order = fresh_order(fabric, ttl_s=-5.0)          # expired 5 s ago (skew allowance: 1 s)
    err = refused(lambda: gor_call(fabric, "b0s0", order))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "order expired" in (err.details() or "")
    assert fabric.movers["b0s0"].moves == []


def test_an_order_addressed_to_another_host_is_refused(fabric: Fabric) -> None:
    order = fresh_order(fabric, B1_FLOW.flow_id)     # b1s0's order ...
    err = refused(lambda: gor_call(fabric, "b0s0", order))                 # ... at b0s0
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "order addressed to 'b1s0'" in (err.details() or "")
    assert fabric.movers["b0s0"].moves == [] and fabric.movers["b1s0"].moves == []


def test_an_order_for_another_hosts_flow_is_refused(fabric: Fabric) -> None:
    # addressed to b0s0, naming b1s0's flow: b0s0 sends no such flow
    order = fresh_order(fabric, B1_FLOW.flow_id)
    order.target_host = "b0s0"
    err = refused(lambda: gor_call(fabric, "b0s0", order))
    assert err.code() == grpc.StatusCode.NOT_FOUND and "sends no flow" in (err.details() or "")
    # b0s0's flow id with b1s0's 5-tuple: the order is not bound to this flow
    order = fresh_order(fabric)
    order.flow.CopyFrom(B1_FLOW.to_proto().tuple)
    err = refused(lambda: gor_call(fabric, "b0s0", order))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED and "is not flow" in (err.details() or "")
    assert fabric.movers["b0s0"].moves == []


def test_an_order_without_nonce_or_expiry_is_refused(fabric: Fabric) -> None:
    order = fresh_order(fabric)
    order.nonce = ""
    order.expires_unix_ms = 0
    err = refused(lambda: gor_call(fabric, "b0s0", order))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "nonce, expires_unix_ms missing" in (err.details() or "")
    assert fabric.movers["b0s0"].moves == []


def test_mutual_tls_is_what_the_parties_run(fabric: Fabric) -> None:
    assert isinstance(fabric.reg.security, MutualTls) and fabric.reg.security.name == CONTROLLER
    assert all(a.security.kind == "mtls" for a in fabric.agents.values())
