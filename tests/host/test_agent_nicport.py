"""A move order by NIC port (issue 29) end to end over real gRPC (the token fallback):
GOR's registry sends ``MoveOrder.nic_port``, the agent re-binds the QP of a dual-port NIC
(:class:`host.agent.mover.QPMover` over a :class:`host.nic.bond.BondedIO` on two in-process
cables), reports the port, and the frames leave through the other port; a source-port move
afterwards keeps the port; a port the NIC lacks is refused; a dead port shows in the
port the agent registers."""
from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from agent_parties import HOST_IPS, Parties
from astral_proto.security import CONTROLLER
from controller.registry import FlowRegistry, serve_registry
from host.agent import Agent, QPMover, RegistryClient
from host.nic.bond import BondedIO, FlowKey, LinkMonitor, TxAffinity
from host.nic.frames import FlowSpec, parse_roce
from host.nic.io import DatagramIO
from host.nic.qp import SenderQP

SRC, DST, QPN = "10.0.0.1", "10.1.0.1", 7
FID = f"{SRC}>{DST}/qp{QPN}"
WAIT_S = 5.0


def _sport_on(port: int, skip: int = 0) -> int:
    """A source port the layer3+4 hash puts on ``port`` (the ``skip``-th such)."""
    ports = (sp for sp in range(49152, 65536)
             if TxAffinity().port_of(FlowKey.of(SRC, DST, sp)) == port)
    for _ in range(skip):
        next(ports)
    return next(ports)


@dataclass
class DualPortNic:
    """One QP over a bonded pair of cables; a thread polls it and reads both far ends."""

    carrier: list[bool] = field(default_factory=lambda: [True, True])
    seen: list[tuple[int, int]] = field(default_factory=list)       # (cable, sport)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.cables = [socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM) for _ in range(2)]
        mon = LinkMonitor([lambda: self.carrier[0], lambda: self.carrier[1]], miimon_s=0.01)
        self.bond = BondedIO([DatagramIO(a) for a, _ in self.cables], TxAffinity(), mon)
        self.mover = QPMover(bond=self.bond)
        self.qp = SenderQP(FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", SRC, DST,
                                    _sport_on(0), QPN),
                           message_bytes=2048, mtu=1024, rate_limit=False)
        self.flow = self.mover.add(self.qp, bytes_total=1 << 24)
        for _, far in self.cables:
            far.setblocking(False)
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.is_set():
            with self.mover.lock:
                frame = self.qp.poll(0.0)
                if frame is not None:
                    self.bond.send(frame)
            for i, (_, far) in enumerate(self.cables):
                try:
                    got = far.recv(4096)
                except BlockingIOError:
                    continue
                info = parse_roce(got)
                if info is not None:
                    self.seen.append((i, info.sport))
            self.stop.wait(0.0005)

    def wait_seen(self, cable: int, sport: int) -> bool:
        """Bounded wait for a frame of ``sport`` on ``cable``'s far end."""
        n = len(self.seen)
        ok = lambda: any(s == (cable, sport) for s in self.seen[n:])  # noqa: E731
        for _ in range(int(WAIT_S / 0.005)):
            if ok():
                return True
            self.stop.wait(0.005)
        return ok()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.bond.close()
        for _, far in self.cables:
            far.close()


@pytest.fixture
def setup() -> Iterator[tuple[FlowRegistry, Agent, DualPortNic]]:
    parties = Parties("tokens", None)
    reg = FlowRegistry(parties.of(CONTROLLER), HOST_IPS)
    server, address = serve_registry(reg)
    nic = DualPortNic()
    sec = parties.of("b0s0")
    agent = Agent(sec, nic.mover, nic.mover.flows(), registry=RegistryClient(address, sec))
    agent.start()
    yield reg, agent, nic
    agent.stop()
    nic.close()
    server.stop(0).wait()


def test_order_by_nic_port_rebinds_the_qp_and_is_reported(setup) -> None:
    reg, agent, nic = setup
    sport = nic.qp.flow.sport
    assert reg.flow(FID).nic_port == 0 and nic.wait_seen(0, sport)
    order, reply = reg.move(FID, sport, nic_port=1)
    assert reply.accepted, reply.reason
    done = reg.wait(order.order_id, timeout_s=WAIT_S)
    assert (done.state, done.reported_sport, done.reported_nic_port) == ("done", sport, 1)
    assert reg.flow(FID).nic_port == 1 and reg.flow(FID).sport == sport
    assert nic.wait_seen(1, sport), "no frame left through port 1"
    # a source-port move later keeps the QP on port 1, though the hash would say port 0
    new = _sport_on(0, skip=1)
    order, reply = reg.move(FID, new)
    assert reply.accepted and reg.wait(order.order_id, timeout_s=WAIT_S).state == "done"
    assert nic.wait_seen(1, new) and reg.flow(FID).nic_port == 1


def test_a_port_the_nic_lacks_is_refused(setup) -> None:
    reg, _, nic = setup
    order, reply = reg.move(FID, nic.qp.flow.sport, nic_port=2)
    assert not reply.accepted and reply.reason == "nic_port 2: this NIC has ports 0..1"
    assert reg.order(order.order_id).state == "failed"


def test_the_port_in_use_follows_a_dead_link(setup) -> None:
    _, agent, nic = setup
    assert agent.flows()[0].nic_port == 0
    nic.carrier[0] = False              # port 0's cable dies: the bond moves the QP
    assert nic.wait_seen(1, nic.qp.flow.sport)
    assert agent.flows()[0].nic_port == 1
