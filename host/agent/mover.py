"""How the agent moves a flow: the :class:`FlowMover` callback and its NIC-emulator form.

The agent never touches frames itself. It asks a :class:`FlowMover` to move a flow to a new
UDP source port and polls it until the new port is in use, then reports back to GOR.
:class:`QPMover` is the mover over the NIC emulator's sender QPs
(:meth:`host.nic.qp.SenderQP.change_sport` switches at the next message boundary, so no
data is lost and a message never straddles two paths).

>>> from host.nic.frames import FlowSpec
>>> from host.nic.qp import SenderQP
>>> qp = SenderQP(FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1",
...                        49152, 7), message_bytes=2048, mtu=1024, rate_limit=False)
>>> mover = QPMover()
>>> fid = mover.add(qp, bytes_total=4096).flow_id
>>> _ = qp.poll(0.0)          # first packet of a message is out
>>> mover.move(fid, 50000); mover.current_sport(fid)
49152
>>> _ = qp.poll(0.0); mover.current_sport(fid)   # message done: the new port is in use
50000
"""
from __future__ import annotations

import threading
from typing import Protocol

from astral_proto.flows import HostFlow, flow_id
from host.nic.qp import SenderQP


class FlowMover(Protocol):
    """What the agent needs from whatever sends the flows (NIC emulator, a test fake)."""

    def current_sport(self, flow_id: str) -> int:
        """The UDP source port the flow's packets carry now (``KeyError`` if unknown)."""
        ...

    def move(self, flow_id: str, sport: int) -> None:
        """Start moving the flow to ``sport``; it takes effect at a message boundary."""
        ...


class QPMover:
    """A :class:`FlowMover` over :class:`~host.nic.qp.SenderQP` objects.

    ``change_sport`` is called under :attr:`lock`. When the NIC loop runs in another
    thread than the agent's gRPC workers, give it the same lock
    (``NicPort(..., step_lock=mover.lock)``): ``NicPort.run`` holds it around each step,
    so a move never lands half-way through building a frame and the switch happens
    exactly at a message boundary.
    """

    def __init__(self) -> None:
        self._qps: dict[str, SenderQP] = {}
        self._flows: dict[str, HostFlow] = {}
        self.lock = threading.Lock()

    def add(self, qp: SenderQP, *, bytes_total: int = 0, fid: str = "") -> HostFlow:
        """Register a sender QP; returns its :class:`HostFlow` (id from :func:`flow_id`)."""
        f = qp.flow
        rec = HostFlow(fid or flow_id(f.src_ip, f.dst_ip, f.dqpn), f.src_ip, f.dst_ip, f.sport,
                       f.dqpn, bytes_total, qp.priority)
        with self.lock:
            self._qps[rec.flow_id] = qp
            self._flows[rec.flow_id] = rec
        return rec

    def flows(self) -> list[HostFlow]:
        """Every registered flow with the source port in use now."""
        with self.lock:
            return [rec.with_sport(self._qps[fid].flow.sport) for fid, rec in self._flows.items()]

    def current_sport(self, flow_id: str) -> int:
        return self._qps[flow_id].flow.sport

    def move(self, flow_id: str, sport: int) -> None:
        with self.lock:
            self._qps[flow_id].change_sport(sport)
