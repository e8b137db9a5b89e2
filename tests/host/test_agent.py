"""The TCCL agent and GOR's flow registry over real gRPC on 127.0.0.1:0.

Each test runs a registry server and one or two agents whose flows are real NIC-emulator
sender QPs, driven by a background thread (the NIC loop) on a fake clock.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc
import pytest

from astral_proto import agent_pb2, agent_pb2_grpc
from astral_proto.auth import HostCredentials, call_metadata
from astral_proto.flows import HostFlow
from controller.registry import FlowRegistry, serve_registry
from host.agent import Agent, QPMover, RegistryClient
from host.nic.frames import FlowSpec, parse_roce
from host.nic.qp import SenderQP

SECRET = b"test-fabric-secret"
HOST_IPS = {"b0s0": ["10.0.0.1", "10.0.1.1"], "b1s0": ["10.1.0.1", "10.1.1.1"]}


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


@pytest.fixture
def registry() -> Iterator[tuple[FlowRegistry, str]]:
    reg = FlowRegistry(SECRET, HOST_IPS)
    server, address = serve_registry(reg)
    yield reg, address
    server.stop(0).wait()


def start_agent(host: str, nic: Nic, address: str) -> Agent:
    creds = HostCredentials.derive(SECRET, host)
    agent = Agent(creds, nic.mover, nic.mover.flows(), registry=RegistryClient(address, creds))
    agent.start()
    return agent


@pytest.fixture
def fabric(registry: tuple[FlowRegistry, str]) -> Iterator[tuple[FlowRegistry, dict[str, Agent], dict[str, Nic]]]:
    reg, address = registry
    nics = {"b0s0": Nic(), "b1s0": Nic()}
    nics["b0s0"].add("10.0.0.1", "10.1.0.1", 49152, 7)
    nics["b0s0"].add("10.0.1.1", "10.1.1.1", 49153, 8)
    nics["b1s0"].add("10.1.0.1", "10.0.0.1", 49154, 9)
    for nic in nics.values():
        nic.run()
    agents = {h: start_agent(h, nic, address) for h, nic in nics.items()}
    yield reg, agents, nics
    for a in agents.values():
        a.stop()
    for nic in nics.values():
        nic.halt()


def agent_stub(agent: Agent) -> agent_pb2_grpc.AgentServiceStub:
    return agent_pb2_grpc.AgentServiceStub(grpc.insecure_channel(agent.address))


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
    status = agent_stub(agents["b0s0"]).Status(
        agent_pb2.StatusRequest(), metadata=call_metadata("b0s0", HostCredentials.derive(SECRET, "b0s0").order_token))
    assert {s.flow.flow_id: s.flow.tuple.src_port for s in status.flows}[fid] == 50001


def test_move_rejected_with_reason(fabric) -> None:
    reg, _, _ = fabric
    order, reply = reg.move("10.0.0.1>10.1.0.1/qp7", 70000)
    assert not reply.accepted and "1..65535" in reply.reason
    assert reg.order(order.order_id).state == "failed"


def test_unknown_flow_is_not_found(fabric) -> None:
    _, agents, _ = fabric
    creds = HostCredentials.derive(SECRET, "b0s0")
    with pytest.raises(grpc.RpcError) as err:
        agent_stub(agents["b0s0"]).MoveFlow(agent_pb2.MoveOrder(flow_id="nope", new_sport=5, order_id="o"),
                                            metadata=call_metadata("b0s0", creds.order_token))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_agent_refuses_another_hosts_flow_and_tokens(fabric) -> None:
    _, agents, _ = fabric
    other_fid = "10.1.0.1>10.0.0.1/qp9"
    b0 = HostCredentials.derive(SECRET, "b0s0")
    b1 = HostCredentials.derive(SECRET, "b1s0")
    order = agent_pb2.MoveOrder(flow_id=other_fid, new_sport=50002, order_id="x")
    # b1s0's flow sent to b0s0's agent with b0s0's order token: not one of its flows
    with pytest.raises(grpc.RpcError) as err:
        agent_stub(agents["b0s0"]).MoveFlow(order, metadata=call_metadata("b0s0", b0.order_token))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    # b1s0's order token (or a host token, or none) is no good at b0s0's agent
    for md in (call_metadata("b1s0", b1.order_token), call_metadata("b0s0", b0.host_token),
               call_metadata("b0s0", "0" * 64), ()):
        with pytest.raises(grpc.RpcError) as err:
            agent_stub(agents["b0s0"]).MoveFlow(order, metadata=md)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_registry_refuses_bad_token(registry) -> None:
    _, address = registry
    forged = HostCredentials("b0s0", "f" * 64, "f" * 64)
    client = RegistryClient(address, forged)
    with pytest.raises(grpc.RpcError) as err:
        client.register([], agent_address="127.0.0.1:1", incarnation="i")
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    client.close()


def test_registry_refuses_flows_a_host_does_not_own(registry) -> None:
    reg, address = registry
    b0 = RegistryClient(address, HostCredentials.derive(SECRET, "b0s0"))
    b1 = RegistryClient(address, HostCredentials.derive(SECRET, "b1s0"))
    mine = HostFlow("f-b1", "10.1.0.1", "10.0.0.1", 49152, 9)
    assert b1.register([mine], agent_address="127.0.0.1:1", incarnation="i") == 1
    for flows in ([HostFlow("f-x", "10.1.0.1", "10.0.0.1", 1, 3)],        # src IP of b1s0
                  [HostFlow("f-b1", "10.0.0.1", "10.1.0.1", 1, 3)]):      # id owned by b1s0
        with pytest.raises(grpc.RpcError) as err:
            b0.register(flows, agent_address="127.0.0.1:2", incarnation="j")
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # reporting on an order for b1s0's flow, and on an unknown order
    order = reg.new_order("f-b1", 50000)
    with pytest.raises(grpc.RpcError) as err:
        b0.report_move(order.order_id, "f-b1", done=True, sport=50000)
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as err:
        b1.report_move("order-999", "f-b1", done=True, sport=50000)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert reg.order(order.order_id).state == "sent"
    b0.close()
    b1.close()


def test_agent_restart(fabric, registry) -> None:
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
    new = start_agent("b0s0", nics["b0s0"], address)
    agents["b0s0"] = new
    assert new.incarnation != old.incarnation
    assert reg.agent_address("b0s0") == new.address != old.address
    assert reg.wait(stuck.order_id, 1.0).state == "failed"
    assert reg.order(stuck.order_id).error == "agent restarted"
    assert len(reg.flows("b0s0")) == 2
    order, reply = reg.move("10.0.1.1>10.1.1.1/qp8", 50020)
    assert reply.accepted and reg.wait(order.order_id, 5.0).state == "done"
    # the old address is dead: an order sent there fails with UNAVAILABLE
    with pytest.raises(grpc.RpcError) as err:
        agent_pb2_grpc.AgentServiceStub(grpc.insecure_channel(old.address)).Status(
            agent_pb2.StatusRequest(), timeout=1.0)
    assert err.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_a_restarted_controller_gets_every_flow_back(tmp_path) -> None:
    """Controller restart: the registry process goes away and a new one (empty) listens on
    the same address; the agents' periodic re-registration re-synchronises it, with the
    ports in use now, and the new controller's orders reach the agents (no flow lost)."""
    sock = f"unix:{tmp_path / 'registry.sock'}"
    old = FlowRegistry(SECRET, HOST_IPS)
    server, address = serve_registry(old, sock)
    nic = Nic()
    nic.add("10.0.0.1", "10.1.0.1", 49152, 7)
    nic.add("10.0.1.1", "10.1.1.1", 49153, 8)
    nic.run()
    creds = HostCredentials.derive(SECRET, "b0s0")
    agent = Agent(creds, nic.mover, nic.mover.flows(), registry=RegistryClient(address, creds),
                  register_every_s=0.05)
    agent.start()
    try:
        order, reply = old.move("10.0.0.1>10.1.0.1/qp7", 50001)
        assert reply.accepted and old.wait(order.order_id, 5.0).state == "done"
        server.stop(0).wait()                                   # the controller goes away
        (tmp_path / "registry.sock").unlink(missing_ok=True)
        new = FlowRegistry(SECRET, HOST_IPS)
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
