"""The TCCL agent and GOR's flow registry over real gRPC on 127.0.0.1:0.

Each test runs a registry server and one or two agents whose flows are real NIC-emulator
sender QPs, driven by a background thread (the NIC loop) on a fake clock; each runs over
mutual TLS (the default: a throw-away CA) and over the HMAC-token fallback.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from agent_parties import HOST_IPS, SECRET, Parties, agent_stub, make_pki
from astral_proto import agent_pb2
from astral_proto.auth import HostCredentials, call_metadata
from astral_proto.flows import HostFlow, flow_id
from astral_proto.security import CONTROLLER
from controller.registry import FlowRegistry, serve_registry
from host.agent import Agent, QPMover, RegistryClient
from host.nic.frames import FlowSpec, parse_roce
from host.nic.qp import SenderQP


@dataclass
class Nic:
    """A sender QP per flow, polled by a background thread; frames recorded (sport, psn)."""

    mover: QPMover = field(default_factory=QPMover)
    qps: list[SenderQP] = field(default_factory=list)
    sent: list[tuple[int, int, int]] = field(default_factory=list)   # (qpn, sport, psn)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def add(self, src_ip: str, dst_ip: str, sport: int, qpn: int) -> HostFlow:
        qp = SenderQP(FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", src_ip, dst_ip, sport, qpn),
                      message_bytes=8 * 1024, mtu=1024, rate_limit=False)
        self.qps.append(qp)
        # 16 MiB: the flow is still sending when a test moves it, however slow the machine
        return self.mover.add(qp, bytes_total=1 << 24)

    def run(self) -> None:
        def loop() -> None:
            while not self.stop.is_set():
                for qp in self.qps:
                    with self.mover.lock:   # the QP is polled and moved from two threads
                        frame = qp.poll(0.0)
                    if frame is not None:
                        info = parse_roce(frame)
                        assert info is not None
                        self.sent.append((info.dqpn, info.sport, info.psn))
                self.stop.wait(0.0005)
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()

    def wait_sent(self, qpn: int, sport: int, timeout_s: float = 5.0) -> bool:
        """Bounded wait until a frame of QP ``qpn`` has left from ``sport``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(q == qpn and p == sport for q, p, _ in list(self.sent)):
                return True
            self.stop.wait(0.005)
        return False

    def halt(self) -> None:
        self.stop.set()
        if self.thread:
            self.thread.join()


@pytest.fixture(scope="module")
def pki_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pki")
    make_pki(root)
    return root


@pytest.fixture(params=["mtls", "tokens"])
def parties(request: pytest.FixtureRequest, pki_root: Path) -> Parties:
    return Parties(request.param, pki_root)


@pytest.fixture
def registry(parties: Parties) -> Iterator[tuple[FlowRegistry, str]]:
    reg = FlowRegistry(parties.of(CONTROLLER), HOST_IPS)
    server, address = serve_registry(reg)
    yield reg, address
    server.stop(0).wait()


def start_agent(host: str, nic: Nic, address: str, parties: Parties) -> Agent:
    sec = parties.of(host)
    agent = Agent(sec, nic.mover, nic.mover.flows(), registry=RegistryClient(address, sec))
    agent.start()
    return agent


def call_agent(reg: FlowRegistry, agent: Agent, method: str, request: object) -> object:
    """Call ``agent`` as GOR does (the registry's security)."""
    stub, md, channel = agent_stub(reg.security, agent.address, agent.host)
    with channel:
        return getattr(stub, method)(request, metadata=md, timeout=5.0)


@pytest.fixture
def fabric(registry: tuple[FlowRegistry, str],
           parties: Parties) -> Iterator[tuple[FlowRegistry, dict[str, Agent], dict[str, Nic]]]:
    reg, address = registry
    nics = {"b0s0": Nic(), "b1s0": Nic()}
    nics["b0s0"].add("10.0.0.1", "10.1.0.1", 49152, 7)
    nics["b0s0"].add("10.0.1.1", "10.1.1.1", 49153, 8)
    nics["b1s0"].add("10.1.0.1", "10.0.0.1", 49154, 9)
    for nic in nics.values():
        nic.run()
    agents = {h: start_agent(h, nic, address, parties) for h, nic in nics.items()}
    yield reg, agents, nics
    for a in agents.values():
        a.stop()
    for nic in nics.values():
        nic.halt()


def test_register(fabric) -> None:
    reg, agents, _ = fabric
    assert {f.flow_id for f in reg.flows("b0s0")} == {"10.0.0.1>10.1.0.1/qp7", "10.0.1.1>10.1.1.1/qp8"}
    assert reg.owner("10.1.0.1>10.0.0.1/qp9") == "b1s0"
    assert reg.agent_address("b0s0") == agents["b0s0"].address
    assert reg.flow("10.0.0.1>10.1.0.1/qp7").sport == 49152


def test_move_accepted_reported_and_lossless(fabric) -> None:
    reg, agents, nics = fabric
    fid = "10.0.0.1>10.1.0.1/qp7"
    order, reply = reg.move(fid, 50001)
    assert reply.accepted and reply.current_sport == 49152
    done = reg.wait(order.order_id, timeout_s=5.0)
    assert (done.state, done.reported_sport, done.error) == ("done", 50001, "")
    assert reg.flow(fid).sport == 50001
    # the NIC sends from the new port once reported, and no PSN was skipped across the move
    assert nics["b0s0"].wait_sent(7, 50001), "no frame left from the new port"
    nics["b0s0"].halt()
    seq = [(sport, psn) for qpn, sport, psn in nics["b0s0"].sent if qpn == 7]
    assert seq[-1][0] == 50001 and seq[0][0] == 49152
    assert [psn for _, psn in seq] == list(range(len(seq)))
    first_new = next(i for i, (sport, _) in enumerate(seq) if sport == 50001)
    assert first_new % 8 == 0                   # the switch happened at a message boundary
    assert all(sport == 50001 for sport, _ in seq[first_new:])
    status = call_agent(reg, agents["b0s0"], "Status", agent_pb2.StatusRequest())
    assert {s.flow.flow_id: s.flow.tuple.src_port for s in status.flows}[fid] == 50001


def test_move_rejected_with_reason(fabric) -> None:
    reg, _, _ = fabric
    order, reply = reg.move("10.0.0.1>10.1.0.1/qp7", 70000)
    assert not reply.accepted and "1..65535" in reply.reason
    assert reg.order(order.order_id).state == "failed"


def order_to_b0s0(reg: FlowRegistry, fid: str, sport: int) -> agent_pb2.MoveOrder:
    """A well-formed order for b0s0 (nonce, target, expiry) naming flow ``fid``."""
    msg = reg.order_message(reg.new_order("10.0.0.1>10.1.0.1/qp7", sport), 5.0)
    msg.flow_id = fid
    return msg


def test_unknown_flow_is_not_found(fabric) -> None:
    reg, agents, _ = fabric
    with pytest.raises(grpc.RpcError) as err:
        call_agent(reg, agents["b0s0"], "MoveFlow", order_to_b0s0(reg, "nope", 5))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_agent_refuses_another_hosts_flow(fabric) -> None:
    reg, agents, _ = fabric
    # b1s0's flow sent to b0s0's agent by GOR: not one of its flows
    with pytest.raises(grpc.RpcError) as err:
        call_agent(reg, agents["b0s0"], "MoveFlow", order_to_b0s0(reg, "10.1.0.1>10.0.0.1/qp9", 50002))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert "sends no flow" in (err.value.details() or "")


def test_agent_refuses_bad_tokens(fabric, parties: Parties) -> None:
    """The token fallback: only GOR's order token for this host opens its agent."""
    if parties.kind != "tokens":
        pytest.skip("token fallback only (tests/host/test_agent_tls.py covers mutual TLS)")
    reg, agents, _ = fabric
    order = order_to_b0s0(reg, "10.0.0.1>10.1.0.1/qp7", 50002)
    b0 = HostCredentials.derive(SECRET, "b0s0")
    b1 = HostCredentials.derive(SECRET, "b1s0")
    stub, _, channel = agent_stub(reg.security, agents["b0s0"].address, "b0s0")
    # b1s0's order token (or a host token, or none) is no good at b0s0's agent
    for md in (call_metadata("b1s0", b1.order_token), call_metadata("b0s0", b0.host_token),
               call_metadata("b0s0", "0" * 64), ()):
        with pytest.raises(grpc.RpcError) as err:
            stub.MoveFlow(order, metadata=md)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    channel.close()


def test_registry_refuses_bad_token(registry, parties: Parties) -> None:
    if parties.kind != "tokens":
        pytest.skip("token fallback only (tests/host/test_agent_tls.py covers mutual TLS)")
    _, address = registry
    forged = HostCredentials("b0s0", "f" * 64, "f" * 64)
    client = RegistryClient(address, forged)
    with pytest.raises(grpc.RpcError) as err:
        client.register([], agent_address="127.0.0.1:1", incarnation="i")
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    client.close()


def test_registry_refuses_flows_a_host_does_not_own(registry, parties: Parties) -> None:
    reg, address = registry
    b0 = RegistryClient(address, parties.of("b0s0"))
    b1 = RegistryClient(address, parties.of("b1s0"))
    mine = HostFlow(flow_id("10.1.0.1", "10.0.0.1", 9), "10.1.0.1", "10.0.0.1", 49152, 9)
    fid = mine.flow_id
    assert b1.register([mine], agent_address="127.0.0.1:1", incarnation="i") == 1
    for flows in ([HostFlow(flow_id("10.1.0.1", "10.0.0.1", 3), "10.1.0.1", "10.0.0.1", 1, 3)],  # src of b1s0
                  [HostFlow(fid, "10.0.0.1", "10.0.0.1", 1, 9)]):      # id owned by b1s0
        with pytest.raises(grpc.RpcError) as err:
            b0.register(flows, agent_address="127.0.0.1:2", incarnation="j")
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # reporting on an order for b1s0's flow, and on an unknown order
    order = reg.new_order(fid, 50000)
    with pytest.raises(grpc.RpcError) as err:
        b0.report_move(order.order_id, fid, done=True, sport=50000)
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as err:
        b1.report_move("order-999", fid, done=True, sport=50000)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert reg.order(order.order_id).state == "sent"
    b0.close()
    b1.close()


def test_agent_restart(fabric, registry, parties: Parties) -> None:
    reg, agents, nics = fabric
    _, address = registry
    old = agents["b0s0"]
    # an order the old agent will never report: the NIC is stopped mid-message
    nics["b0s0"].halt()
    qp = nics["b0s0"].qps[0]
    while qp.counters.sent_pkts % 8 == 0:       # make sure a message is in flight
        qp.poll(0.0)
    stuck, reply = reg.move("10.0.0.1>10.1.0.1/qp7", 50010)
    assert reply.accepted
    old.stop()
    # the host's agent comes back (new incarnation, new port) with the same QPs
    nics["b0s0"] = Nic(mover=nics["b0s0"].mover, qps=nics["b0s0"].qps)
    nics["b0s0"].run()
    new = start_agent("b0s0", nics["b0s0"], address, parties)
    agents["b0s0"] = new
    assert new.incarnation != old.incarnation
    assert reg.agent_address("b0s0") == new.address != old.address
    assert reg.wait(stuck.order_id, 1.0).state == "failed"
    assert reg.order(stuck.order_id).error == "agent restarted"
    assert len(reg.flows("b0s0")) == 2
    order, reply = reg.move("10.0.1.1>10.1.1.1/qp8", 50020)
    assert reply.accepted and reg.wait(order.order_id, 5.0).state == "done"
    # the old address is dead: an order sent there fails with UNAVAILABLE
    stub, md, channel = agent_stub(reg.security, old.address, "b0s0")
    with pytest.raises(grpc.RpcError) as err:
        stub.Status(agent_pb2.StatusRequest(), metadata=md, timeout=1.0)
    channel.close()
    assert err.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_a_restarted_controller_gets_every_flow_back(tmp_path, parties: Parties) -> None:
    """Controller restart: the registry process goes away and a new one (empty) listens on
    the same address; the agents' periodic re-registration re-synchronises it, with the
    ports in use now, and the new controller's orders reach the agents (no flow lost).
    Over a Unix socket: with TLS, too (the channels name their peer)."""
    sock = f"unix:{tmp_path / 'registry.sock'}"
    old = FlowRegistry(parties.of(CONTROLLER), HOST_IPS)
    server, address = serve_registry(old, sock)
    nic = Nic()
    nic.add("10.0.0.1", "10.1.0.1", 49152, 7)
    nic.add("10.0.1.1", "10.1.1.1", 49153, 8)
    nic.run()
    sec = parties.of("b0s0")
    agent = Agent(sec, nic.mover, nic.mover.flows(), registry=RegistryClient(address, sec),
                  register_every_s=0.05, bind=f"unix:{tmp_path / 'agent.sock'}")
    agent.start()
    try:
        order, reply = old.move("10.0.0.1>10.1.0.1/qp7", 50001)
        assert reply.accepted and old.wait(order.order_id, 5.0).state == "done"
        server.stop(0).wait()                                   # the controller goes away
        (tmp_path / "registry.sock").unlink(missing_ok=True)
        new = FlowRegistry(parties.of(CONTROLLER), HOST_IPS)
        server, _ = serve_registry(new, sock)                   # and comes back, knowing nothing
        got = threading.Event()
        for _ in range(200):                                    # bounded probe: ≤ 10 s
            if len(new.flows("b0s0")) == 2:
                got.set()
                break
            got.wait(0.05)
        assert got.is_set(), "the agent did not re-register with the new registry"
        assert {f.flow_id: f.sport for f in new.flows("b0s0")} == {
            "10.0.0.1>10.1.0.1/qp7": 50001, "10.0.1.1>10.1.1.1/qp8": 49153}
        # the agent says which flow a move order moved, and when: the new GOR lets it rest
        age = {f.flow_id: f.moved_s_ago for f in new.flows("b0s0")}
        assert age["10.0.1.1>10.1.1.1/qp8"] is None
        assert age["10.0.0.1>10.1.0.1/qp7"] is not None and 0.0 <= age["10.0.0.1>10.1.0.1/qp7"] < 60
        assert new.agent_address("b0s0") == agent.address
        order, reply = new.move("10.0.1.1>10.1.1.1/qp8", 50002)
        assert reply.accepted and new.wait(order.order_id, 5.0).state == "done"
        assert new.flow("10.0.1.1>10.1.1.1/qp8").sport == 50002
    finally:
        agent.stop()
        nic.halt()
        server.stop(0).wait()
