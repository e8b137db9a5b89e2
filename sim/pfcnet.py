"""A small packet-level PFC network: NIC QPs with DCQCN and go-back-N, switches whose
egress queues are paced, bounded and tail-dropping, PFC PAUSE/RESUME between hops, ECN
marks and CNPs — for incast at the testbed's scale (hundreds of packets per second).

Everything that decides is the project's own code, imported, not copied:

* the switch's PFC and ECN decisions: :class:`sim.queues.SwitchQueues` (static thresholds,
  or :class:`p4src.buffermodel.SharedBufferModel`'s dynamic ones);
* the sender's rate: :class:`host.nic.dcqcn.ReactionPoint`; the receiver's CNPs:
  :class:`host.nic.dcqcn.NotificationPoint`;
* reliability: :class:`host.nic.rc.Requester` (go-back-N, retry timer) and
  :class:`host.nic.rc.Responder` (PSN check, one NAK per gap).

What this module adds is time: a packet takes ``link_delay_s`` per hop, a PAUSE or RESUME
takes ``pause_delay_s`` from the switch that sends it to the upstream port or NIC that
obeys it (a frame over a veth, then the upstream's Python loop), a PAUSE holds
``pause_time_s`` (0xFFFF quanta at 100 Mb/s, as the incast scenario times them) unless a
RESUME comes first, CNPs and ACKs take ``ctrl_delay_s`` back. Queues are FIFO, served one
packet per ``1 / rate_pps``, at most ``capacity_pkts`` queued (p4sim's 64).

Example::

    >>> from sim.queues import StaticThresholds, SwitchQueues
    >>> net = PfcNet(NetParams(), seed=1)
    >>> net.add_switch("l0", SwitchQueues.static(StaticThresholds()))
    >>> net.add_port("l0", 9, rate_pps=125.0)
    >>> net.add_nic("h1", "l0", 1)
    >>> net.add_flow("f", "h1", [("l0", 1, 9)], rate_pps=250.0)
    >>> r = net.run(duration_s=2.0)
    >>> r.flows["f"].sent_pkts >= r.flows["f"].recv_pkts > 200, r.pfc_frames > 0
    (True, True)
"""
from __future__ import annotations

import heapq
import itertools
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from host.nic.dcqcn import DcqcnParams, NotificationPoint, ReactionPoint
from host.nic.rc import RcParams, Requester, Responder
from sim.queues import Admission, SwitchQueues

PAUSE_QUANTA = 0xFFFF
QUANTUM_BITS = 512


@dataclass(frozen=True, slots=True)
class NetParams:
    """Timing of the emulated network (module docstring); defaults are the testbed's.

    >>> round(NetParams().pause_time_s, 3)
    0.336
    """

    link_delay_s: float = 0.001
    pause_delay_s: float = 0.002
    ctrl_delay_s: float = 0.002
    pfc_line_rate_bps: float = 100e6
    fabric_rate_pps: float = 15000.0
    capacity_pkts: int = 64
    frame_bytes: int = 1082
    payload_bytes: int = 1024
    message_pkts: int = 4
    cnp_interval_s: float = 0.005
    retry_timeout_s: float = 2.0
    nic_poll_s: float = 0.001
    tail_drop_leaks: bool = True
    pacing_jitter: float = 0.0

    @property
    def pause_time_s(self) -> float:
        """How long one PAUSE holds: 0xFFFF quanta of 512 bits at ``pfc_line_rate_bps``."""
        return PAUSE_QUANTA * QUANTUM_BITS / self.pfc_line_rate_bps


@dataclass(slots=True)
class _Port:
    switch: str
    port: int
    rate_pps: float
    capacity_pkts: int
    queue: deque = field(default_factory=deque)
    busy: bool = False
    paused_until: float = 0.0
    wake: int = 0
    peak_pkts: int = 0


@dataclass(slots=True)
class _Nic:
    name: str
    switch: str
    port: int
    paused_until: float = 0.0
    pauses: int = 0


@dataclass(slots=True)
class _Packet:
    flow: str
    seq: int
    ends: bool
    ackreq: bool
    hop: int = 0
    ce: bool = False
    adm: Optional[Admission] = None
    enq_depth: int = 0


@dataclass(slots=True)
class FlowResult:
    """One flow's figures: packets sent (retransmissions in), received, delivered in
    order, PSNs its receiver found missing (one NAK per gap, as ``host.nic`` counts
    ``lost_pkts``), CNPs, goodput (in-order payload over the run, Mb/s)."""

    sent_pkts: int = 0
    recv_pkts: int = 0
    delivered_pkts: int = 0
    lost_pkts: int = 0
    cnps: int = 0
    goodput_mbps: float = 0.0


@dataclass(slots=True)
class NetResult:
    """One run: per flow, and summed over every switch: PFC frames sent (PAUSE and
    RESUME), PAUSEs the NICs honoured, ECN marks, tail drops; every port's deepest queue
    (packets queued when a packet was enqueued, ``enq_qdepth``)."""

    flows: dict[str, FlowResult]
    pfc_frames: int = 0
    nic_pauses: int = 0
    ecn_marks: int = 0
    tail_drops: int = 0
    peak_pkts: dict[tuple[str, int], int] = field(default_factory=dict)
    end_s: float = 0.0

    @property
    def lost_pkts(self) -> int:
        """PSNs missing at the receivers (the scenario's ``drops`` without pipeline drops)."""
        return sum(f.lost_pkts for f in self.flows.values())

    @property
    def sent_pkts(self) -> int:
        """Packets the senders sent, retransmissions in."""
        return sum(f.sent_pkts for f in self.flows.values())


class _Flow:
    def __init__(self, name: str, nic: str, path: list[tuple[str, int, int]], rate_pps: float,
                 params: NetParams) -> None:
        self.name, self.nic, self.path = name, nic, path
        self.rp = ReactionPoint(DcqcnParams.scaled(rate_pps, cnp_interval_s=params.cnp_interval_s))
        self.req = Requester(RcParams(retry_timeout_s=params.retry_timeout_s))
        self.resp = Responder(expected_psn=0)
        self.np = NotificationPoint(params.cnp_interval_s)
        self.result = FlowResult()


class PfcNet:
    """The network (module docstring): add switches, their paced ports, NICs, flows, then
    :meth:`run`. A port not added explicitly serves at ``fabric_rate_pps``."""

    def __init__(self, params: NetParams, seed: int = 0) -> None:
        self.p = params
        self.rng = random.Random(seed)
        self.switches: dict[str, SwitchQueues] = {}
        self.ports: dict[tuple[str, int], _Port] = {}
        self.nics: dict[str, _Nic] = {}
        self.flows: dict[str, _Flow] = {}
        self.upstream: dict[tuple[str, int], Union[str, tuple[str, int]]] = {}
        self._events: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = itertools.count()
        self.now = 0.0
        self._res = NetResult({})

    # ------------------------------------------------------------------ building
    def add_switch(self, name: str, queues: SwitchQueues) -> None:
        """A switch and its PFC/ECN model."""
        self.switches[name] = queues

    def add_port(self, switch: str, port: int, rate_pps: Optional[float] = None) -> None:
        """An egress port of ``switch`` served at ``rate_pps`` (default ``fabric_rate_pps``)."""
        self.ports[(switch, port)] = _Port(switch, port, rate_pps or self.p.fabric_rate_pps,
                                           self.p.capacity_pkts)

    def add_link(self, up_switch: str, up_port: int, down_switch: str, down_port: int) -> None:
        """A switch-to-switch link: ``up_switch``'s egress ``up_port`` feeds
        ``down_switch``'s ingress ``down_port`` (which PAUSEs it)."""
        if (up_switch, up_port) not in self.ports:
            self.add_port(up_switch, up_port)
        self.upstream[(down_switch, down_port)] = (up_switch, up_port)

    def add_nic(self, name: str, switch: str, port: int) -> None:
        """A NIC whose transmit side enters ``switch`` at ``port`` (a PAUSE stops all its QPs)."""
        self.nics[name] = _Nic(name, switch, port)
        self.upstream[(switch, port)] = name

    def add_flow(self, name: str, nic: str, path: list[tuple[str, int, int]], rate_pps: float) -> None:
        """A QP from ``nic`` along ``path`` = [(switch, ingress port, egress port)...] (the
        last egress port faces the receiver), at most ``rate_pps`` (DCQCN's line rate)."""
        for sw, _, out in path:
            if (sw, out) not in self.ports:
                self.add_port(sw, out)
        self.flows[name] = _Flow(name, nic, path, rate_pps, self.p)

    # ------------------------------------------------------------------ events
    def _at(self, t: float, fn: Callable[..., None], *args: Any) -> None:
        heapq.heappush(self._events, (t, next(self._seq), fn, args))

    def run(self, duration_s: float, settle_s: float = 10.0) -> NetResult:
        """Every flow sends for ``duration_s``; the fabric then drains (at most
        ``settle_s`` more). Returns the figures."""
        self._res = NetResult({n: f.result for n, f in self.flows.items()})
        self._stop = duration_s
        for i, f in enumerate(self.flows.values()):
            self._at(i * 1e-6, self._tick, f)
        end = duration_s + settle_s
        while self._events:
            t, _, fn, args = heapq.heappop(self._events)
            if t > end:
                break
            self.now = t
            fn(*args)
        for f in self.flows.values():
            f.result.goodput_mbps = f.result.delivered_pkts * self.p.payload_bytes * 8 / duration_s / 1e6
        self._res.peak_pkts = {k: p.peak_pkts for k, p in self.ports.items()}
        self._res.end_s = self.now
        return self._res

    # ------------------------------------------------------------------ senders
    def _tick(self, f: _Flow) -> None:
        now = self.now
        if now >= self._stop:
            return
        nic = self.nics[f.nic]
        if nic.paused_until > now:
            self._at(min(nic.paused_until, now + self.p.nic_poll_s), self._tick, f)
            return
        f.req.check_timeout(now)
        f.rp.advance(now)
        if f.req.window_open():
            seq = f.req.next_seq
            ends = (seq + 1) % self.p.message_pkts == 0
            ackreq = f.req.ackreq(seq, ends)
            f.req.on_sent(seq, ackreq, now)
            f.rp.on_sent(now)
            f.result.sent_pkts += 1
            self._at(now + self.p.link_delay_s, self._arrive, _Packet(f.name, seq, ends, ackreq))
        gap = f.rp.interval_s()
        if self.p.pacing_jitter:            # a sender's timer on a loaded machine: gap x U(1 - j, 1 + j)
            gap *= 1.0 + self.p.pacing_jitter * (2.0 * self.rng.random() - 1.0)
        self._at(now + gap, self._tick, f)

    # ------------------------------------------------------------------ switches
    def _arrive(self, pkt: _Packet) -> None:
        f = self.flows[pkt.flow]
        sw, inp, out = f.path[pkt.hop]
        q = self.switches[sw]
        adm = q.admit(inp, out, self.p.frame_bytes)
        if adm.pause:
            self._pfc(sw, inp, pause=True)
        port = self.ports[(sw, out)]
        if len(port.queue) >= port.capacity_pkts:
            if self.p.tail_drop_leaks:
                q.drop(adm)
            else:                   # a switch that counts a dropped packet out again
                q.leave(adm, len(port.queue))
            self._res.tail_drops += 1
            return
        pkt.adm, pkt.enq_depth = adm, len(port.queue)
        port.peak_pkts = max(port.peak_pkts, pkt.enq_depth)
        port.queue.append(pkt)
        self._serve(port)

    def _serve(self, port: _Port) -> None:
        if port.busy or not port.queue:
            return
        if port.paused_until > self.now:
            port.wake += 1
            self._at(port.paused_until, self._wake, port, port.wake)
            return
        port.busy = True
        self._at(self.now + 1.0 / port.rate_pps, self._depart, port)

    def _wake(self, port: _Port, version: int) -> None:
        if version == port.wake:
            self._serve(port)

    def _depart(self, port: _Port) -> None:
        port.busy = False
        pkt = port.queue.popleft()
        assert pkt.adm is not None
        lv = self.switches[port.switch].leave(pkt.adm, pkt.enq_depth)
        if lv.marked:
            pkt.ce = True
            self._res.ecn_marks += 1
        if lv.resume:
            self._pfc(port.switch, self.flows[pkt.flow].path[pkt.hop][1], pause=False)
        pkt.hop += 1
        nxt = self._receive if pkt.hop == len(self.flows[pkt.flow].path) else self._arrive
        self._at(self.now + self.p.link_delay_s, nxt, pkt)
        self._serve(port)

    def _pfc(self, switch: str, ingress: int, pause: bool) -> None:
        """``switch`` sends a PAUSE (or RESUME) out of ``ingress`` to what feeds it."""
        self._res.pfc_frames += 1
        up = self.upstream.get((switch, ingress))
        if up is not None:
            self._at(self.now + self.p.pause_delay_s, self._obey, up, pause)

    def _obey(self, up: Union[str, tuple[str, int]], pause: bool) -> None:
        until = self.now + self.p.pause_time_s if pause else self.now
        if isinstance(up, str):
            nic = self.nics[up]
            nic.paused_until = until
            nic.pauses += pause
            self._res.nic_pauses += pause
            return
        port = self.ports[up]
        port.paused_until = until
        if not pause:
            port.wake += 1
            self._serve(port)

    # ------------------------------------------------------------------ receivers
    def _receive(self, pkt: _Packet) -> None:
        f = self.flows[pkt.flow]
        r = f.result
        r.recv_pkts += 1
        expected = f.resp.expected_psn or 0
        verdict = f.resp.on_data(pkt.seq, pkt.ends, pkt.ackreq)
        back = self.now + self.p.ctrl_delay_s
        if verdict == "accept":
            r.delivered_pkts += 1
        elif verdict == "nak":
            r.lost_pkts += pkt.seq - expected
            self._at(back, f.req.on_nak, expected, back)
        ack = f.resp.take_ack()
        if ack is not None:
            self._at(back, f.req.on_ack, ack, back)
        if f.np.on_packet(f.name, pkt.ce, self.now):
            r.cnps += 1
            self._at(back, f.rp.on_cnp, back)


__all__ = ["FlowResult", "NetParams", "NetResult", "PfcNet"]
