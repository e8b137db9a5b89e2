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

Over a dual-port NIC (``QPMover(bond=...)``, :class:`host.nic.bond.BondedIO`) a flow's QP
also has a NIC port: :meth:`QPMover.move_port` re-binds it to the other port (the bond's
per-QP override, as ``mlx5dv_modify_qp_lag_port()``), and a source-port move keeps the
QP's port (the new 5-tuple is bound where the old one was: a QP's port does not follow
the UDP hash once it is set). :meth:`QPMover.current_port` is the port it sends on now
(the surviving one while its own is down).

**The pin table stays bounded.** Each move binds the QP's new 5-tuple; the 5-tuples it
left are forgotten at the next move (:meth:`host.nic.bond.BondedIO.forget`): the bond
keeps at most two per QP, the one in use (its frames may still be on their way until
the message boundary) and the one ordered. Before, every order left its 5-tuple behind:
400 orders with the controller's certificate left 400 pins for one QP
(``tests/security/test_threat_model.py::test_port_moves_keep_the_pin_table_bounded``).
"""
from __future__ import annotations

import threading
from typing import Optional, Protocol

from astral_proto.flows import HostFlow, flow_id
from host.nic.affinity import FlowKey
from host.nic.bond import BondedIO
from host.nic.qp import SenderQP


class FlowMover(Protocol):
    """What the agent needs from whatever sends the flows (NIC emulator, a test fake)."""

    def current_sport(self, flow_id: str) -> int:
        """The UDP source port the flow's packets carry now (``KeyError`` if unknown)."""
        ...

    def move(self, flow_id: str, sport: int) -> None:
        """Start moving the flow to ``sport``; it takes effect at a message boundary."""
        ...


class PortMover(FlowMover, Protocol):
    """A :class:`FlowMover` over a NIC of several ports (a dual-port NIC): the agent
    applies an order's ``nic_port`` through it; a mover without these methods, or with
    :meth:`nic_ports` 1, refuses such orders."""

    def nic_ports(self) -> int:
        """How many ports the NIC has."""
        ...

    def current_port(self, flow_id: str) -> Optional[int]:
        """The port the flow sends on now (None: a NIC of one port)."""
        ...

    def move_port(self, flow_id: str, sport: int, nic_port: int) -> None:
        """Move the flow to ``sport`` on NIC port ``nic_port`` (``ValueError``: no such port)."""
        ...


class QPMover:
    """A :class:`FlowMover` over :class:`~host.nic.qp.SenderQP` objects.

    ``change_sport`` is called under :attr:`lock`. When the NIC loop runs in another
    thread than the agent's gRPC workers, give it the same lock
    (``NicPort(..., step_lock=mover.lock)``): ``NicPort.run`` holds it around each step,
    so a move never lands half-way through building a frame and the switch happens
    exactly at a message boundary.
    """

    def __init__(self, bond: Optional[BondedIO] = None) -> None:
        self._qps: dict[str, SenderQP] = {}
        self._flows: dict[str, HostFlow] = {}
        self._bound: dict[str, set[int]] = {}       # flow id → source ports bound in the bond
        self.bond = bond
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
            return [rec.with_sport(self._qps[fid].flow.sport).with_nic_port(self._port(fid))
                    for fid, rec in self._flows.items()]

    def current_sport(self, flow_id: str) -> int:
        return self._qps[flow_id].flow.sport

    def move(self, flow_id: str, sport: int) -> None:
        with self.lock:
            qp = self._qps[flow_id]
            if self.bond is not None:           # the QP keeps its port on its new 5-tuple
                self.bond.affinity.bind(self._key(qp, sport),
                                        self.bond.affinity.port_of(self._key(qp, qp.flow.sport)))
                self._keep_bound(flow_id, qp, sport)
            qp.change_sport(sport)

    def _keep_bound(self, flow_id: str, qp: SenderQP, sport: int) -> None:
        """After binding ``sport``: forget every 5-tuple the QP had before but the one in
        use (caller holds :attr:`lock`; module docstring). A 5-tuple another QP sends on
        now, or is ordered to, stays."""
        assert self.bond is not None
        keep = {qp.flow.sport, sport}
        old = self._bound.get(flow_id, set()) | {qp.flow.sport}
        others = {self._key(q, s) for fid, q in self._qps.items() if fid != flow_id
                  for s in self._bound.get(fid, {q.flow.sport}) | {q.flow.sport}}
        for gone in old - keep:
            key = self._key(qp, gone)
            if key not in others:
                self.bond.forget(key)
        self._bound[flow_id] = keep

    # ------------------------------------------------------------- NIC ports
    @staticmethod
    def _key(qp: SenderQP, sport: int) -> FlowKey:
        return FlowKey.of(qp.flow.src_ip, qp.flow.dst_ip, sport)

    def nic_ports(self) -> int:
        """How many ports the NIC has (1 without a bond)."""
        return 1 if self.bond is None else len(self.bond.links)

    def _port(self, flow_id: str) -> Optional[int]:
        if self.bond is None:
            return None
        qp = self._qps[flow_id]
        logical = self.bond.affinity.port_of(self._key(qp, qp.flow.sport))
        live = self.bond.live_port(logical)
        return logical if live is None else live

    def current_port(self, flow_id: str) -> Optional[int]:
        """The port the flow's QP sends on now: its bound port, or the surviving one while
        that is down (None: a NIC of one port)."""
        return self._port(flow_id)

    def move_port(self, flow_id: str, sport: int, nic_port: int) -> None:
        """Re-bind the flow's QP to ``nic_port`` (from its next frame when ``sport`` is the
        port in use, else from the message boundary where ``sport`` takes over);
        ``ValueError`` for a NIC of one port or a port it does not have."""
        if self.bond is None:
            raise ValueError("this NIC has one port")
        with self.lock:
            qp = self._qps[flow_id]
            self.bond.affinity.bind(self._key(qp, sport), nic_port)
            self._keep_bound(flow_id, qp, sport)
            qp.change_sport(sport)      # also when it is the port in use: drops a pending change
