"""Queue pairs of the emulated NIC: an RDMA WRITE sender and a receiver, with per-flow counters.

Pure logic over frames and an injected clock (the raw socket lives in :mod:`host.nic.io`):

* :class:`SenderQP` splits messages of ``message_bytes`` into MTU-sized RDMA WRITE packets
  (FIRST with a RETH, MIDDLE, LAST; ONLY when one packet suffices), numbers them with
  24-bit PSNs, requests an ACK on each message's last packet, paces them at the DCQCN
  reaction point's rate and holds them while PFC pauses its priority.
* :class:`Receiver` is the notification point for every flow arriving at a port: it
  counts goodput, detects loss from PSN gaps (no retransmission: a gap is counted and
  skipped), answers ACK requests with an RC ACKNOWLEDGE (AETH, MSN = messages done) and
  CE-marked packets with a CNP (at most one per flow per interval).

Flows are keyed by (sender IP, destination QPN), so a flow that changes its UDP source
port (TCCL re-routing) stays one flow. Replies go to QPN ``peer_qpns.get(qpn, qpn)``: by
default both ends of a connection use the same QP number.

>>> from host.nic.frames import FlowSpec
>>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 49152, 7)
>>> tx, rx = SenderQP(f, message_bytes=2048, mtu=1024), Receiver()
>>> replies = [r for t in (0.0, 0.001) for r in rx.on_frame(tx.poll(t), t)]
>>> [tx.on_frame(r, 0.002) for r in replies], tx.counters.acked_messages
([True], 1)
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Optional

from host.nic.dcqcn import DEFAULT_CNP_INTERVAL_S, DcqcnParams, NotificationPoint, ReactionPoint
from host.nic.frames import (DSCP_CNP, ECN_CE, OP_CNP, OP_RC_ACK, OP_RC_WRITE_FIRST, OP_RC_WRITE_LAST,
                             OP_RC_WRITE_MIDDLE, OP_RC_WRITE_ONLY, PSN_MASK, FlowSpec,
                             FrameTemplate, RoceInfo, aeth_bytes, build_cnp, mac_str,
                             parse_roce, reth_bytes, verify_icrc)
from host.nic.pfc import PfcState

DATA_OPCODES = frozenset({OP_RC_WRITE_FIRST, OP_RC_WRITE_MIDDLE, OP_RC_WRITE_LAST,
                          OP_RC_WRITE_ONLY})
PSN_HALF = 1 << 23


@dataclass(slots=True)
class FlowCounters:
    """Counters of one flow at one end; :meth:`to_dict` is the JSON form.

    >>> FlowCounters("10.0.0.1:49152->10.1.0.1 qp 7").to_dict()["goodput_mbps"]
    0.0
    """

    flow: str
    sent_pkts: int = 0
    sent_bytes: int = 0
    sent_payload_bytes: int = 0
    messages_sent: int = 0
    acked_messages: int = 0
    acked_payload_bytes: int = 0
    recv_pkts: int = 0
    recv_bytes: int = 0
    recv_payload_bytes: int = 0
    messages_received: int = 0
    ce_pkts: int = 0
    cnps_sent: int = 0
    cnps_received: int = 0
    acks_sent: int = 0
    lost_pkts: int = 0
    duplicate_pkts: int = 0
    bad_icrc: int = 0
    pauses: int = 0
    paused_s: float = 0.0
    pause_blocked_s: float = 0.0
    rate_pps: float = 0.0
    first_s: Optional[float] = None
    last_s: Optional[float] = None

    def seen(self, now: float) -> None:
        """Record activity at ``now`` (goodput is measured between first and last)."""
        if self.first_s is None:
            self.first_s = now
        self.last_s = now

    def elapsed_s(self) -> float:
        """Time between the first and the last activity."""
        if self.first_s is None or self.last_s is None:
            return 0.0
        return self.last_s - self.first_s

    def goodput_mbps(self) -> float:
        """Payload Mb/s: acknowledged bytes at a sender, received bytes at a receiver."""
        t = self.elapsed_s()
        nbytes = self.recv_payload_bytes or self.acked_payload_bytes
        return nbytes * 8 / t / 1e6 if t > 0 else 0.0

    def goodput_pps(self) -> float:
        """Received data packets per second (receiver) or sent packets (sender)."""
        t = self.elapsed_s()
        return (self.recv_pkts or self.sent_pkts) / t if t > 0 else 0.0

    def to_dict(self) -> dict[str, object]:
        """JSON-ready counters with derived goodput figures."""
        d = asdict(self)
        d["elapsed_s"] = self.elapsed_s()
        d["goodput_mbps"] = self.goodput_mbps()
        d["goodput_pps"] = self.goodput_pps()
        return d


class SenderQP:
    """The sending side of one RC QP doing RDMA WRITEs (see the module docstring).

    ``messages=None`` sends forever; ``dcqcn=None`` uses :class:`DcqcnParams` defaults;
    ``rate_limit=False`` disables pacing (for tests and benchmarks);
    ``react_to_cnp=False`` counts CNPs but keeps the rate (DCQCN off).

    >>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 1, 7)
    >>> qp = SenderQP(f, message_bytes=3000, mtu=1024, messages=1, rate_limit=False)
    >>> [parse_roce(qp.poll(0.0)).opcode for _ in range(3)], qp.poll(0.0)
    ([6, 7, 8], None)
    """

    def __init__(self, flow: FlowSpec, *, sqpn: Optional[int] = None, message_bytes: int = 65536,
                 mtu: int = 1024, priority: int = 3, messages: Optional[int] = None,
                 dcqcn: Optional[DcqcnParams] = None, pfc: Optional[PfcState] = None,
                 start_psn: int = 0, rkey: int = 0x1234, base_va: int = 0x10000000,
                 rate_limit: bool = True, react_to_cnp: bool = True) -> None:
        if message_bytes <= 0 or mtu <= 0:
            raise ValueError("message_bytes and mtu must be positive")
        if not 0 <= priority < 8:
            raise ValueError("priority must be 0..7")
        self.flow = flow
        self.sqpn = flow.dqpn if sqpn is None else sqpn
        self.message_bytes = message_bytes
        self.mtu = mtu
        self.priority = priority
        self.messages = messages
        self.rp = ReactionPoint(dcqcn or DcqcnParams())
        self.pfc = pfc
        self.psn = start_psn & PSN_MASK
        self.rkey = rkey
        self.base_va = base_va
        self.rate_limit = rate_limit
        self.react_to_cnp = react_to_cnp
        self.counters = FlowCounters(self._name())
        self.next_at = -math.inf
        self._pending_sport: Optional[int] = None
        self._msg_index = 0
        self._pkt_in_msg = 0
        self._pkts_per_msg = max(1, math.ceil(message_bytes / mtu))
        self._last_len = message_bytes - (self._pkts_per_msg - 1) * mtu
        self._acked_msn = 0
        self._blocked_since: Optional[float] = None
        self._build_templates()

    def _name(self) -> str:
        f = self.flow
        return f"{f.src_ip}:{f.sport}->{f.dst_ip} qp {f.dqpn}"

    def _build_templates(self) -> None:
        f, n = self.flow, self._pkts_per_msg
        if n == 1:
            self._only = FrameTemplate.data(f, OP_RC_WRITE_ONLY, self._last_len)
        else:
            self._first = FrameTemplate.data(f, OP_RC_WRITE_FIRST, self.mtu)
            self._middle = FrameTemplate.data(f, OP_RC_WRITE_MIDDLE, self.mtu)
            self._last = FrameTemplate.data(f, OP_RC_WRITE_LAST, self._last_len)

    def change_sport(self, sport: int) -> None:
        """Move the flow to UDP source ``sport`` from the next message on (no data lost)."""
        if not 0 < sport < 65536:
            raise ValueError("sport must be 1..65535")
        self._pending_sport = sport
        if self._pkt_in_msg == 0:
            self._apply_sport()

    def _apply_sport(self) -> None:
        if self._pending_sport is None:
            return
        f = self.flow
        self.flow = FlowSpec(f.src_mac, f.dst_mac, f.src_ip, f.dst_ip, self._pending_sport,
                             f.dqpn, f.dscp, f.ecn, f.ttl, f.pkey)
        self._pending_sport = None
        self.counters.flow = self._name()
        self._build_templates()

    @property
    def done(self) -> bool:
        """True once ``messages`` messages have been sent."""
        return self.messages is not None and self._msg_index >= self.messages

    def wait_s(self, now: float) -> float:
        """Seconds until :meth:`poll` may return a frame (``inf`` when done)."""
        if self.done:
            return math.inf
        pause = self.pfc.pause_remaining(self.priority, now) if self.pfc else 0.0
        pace = max(0.0, self.next_at - now) if self.rate_limit else 0.0
        return max(pause, pace)

    def poll(self, now: float) -> Optional[bytes]:
        """The next frame if one may leave at ``now``, else None."""
        if self.done:
            return None
        if self.pfc is not None and self.pfc.is_paused(self.priority, now):
            if self._blocked_since is None:
                self._blocked_since = now
            return None
        if self._blocked_since is not None:
            self.counters.pause_blocked_s += now - self._blocked_since
            self._blocked_since = None
        self.rp.advance(now)
        if self.rate_limit:
            if self.next_at == -math.inf:
                self.next_at = now
            if now < self.next_at:
                return None
            gap = self.rp.interval_s()
            self.next_at = max(self.next_at, now - gap) + gap
        frame, payload = self._next_frame()
        c = self.counters
        c.seen(now)
        c.sent_pkts += 1
        c.sent_bytes += len(frame)
        c.sent_payload_bytes += payload
        c.rate_pps = self.rp.rate_pps
        self.rp.on_sent(now)
        return frame

    def _next_frame(self) -> tuple[bytes, int]:
        i, n, psn = self._pkt_in_msg, self._pkts_per_msg, self.psn
        last = i == n - 1
        if i == 0:
            va = self.base_va + self._msg_index * self.message_bytes
            reth = reth_bytes(va, self.rkey, self.message_bytes)
            if n == 1:
                frame = self._only.frame(psn, ackreq=True, ext=reth)
            else:
                frame = self._first.frame(psn, ext=reth)
        elif last:
            frame = self._last.frame(psn, ackreq=True)
        else:
            frame = self._middle.frame(psn)
        payload = self._last_len if last else self.mtu
        self.psn = (psn + 1) & PSN_MASK
        if last:
            self._msg_index += 1
            self.counters.messages_sent += 1
            self._pkt_in_msg = 0
            self._apply_sport()
        else:
            self._pkt_in_msg = i + 1
        return frame, payload

    def on_frame(self, frame: bytes | RoceInfo, now: float) -> bool:
        """Handle a CNP or ACK addressed to this QP; False when it is not for this QP."""
        info = parse_roce(frame) if isinstance(frame, (bytes, bytearray)) else frame
        if info is None or info.dqpn != self.sqpn:
            return False
        if info.opcode == OP_CNP:
            self.counters.cnps_received += 1
            if self.react_to_cnp:
                self.rp.on_cnp(now)
            self.counters.rate_pps = self.rp.rate_pps
            return True
        if info.opcode == OP_RC_ACK and len(info.ext) == 4:
            self._on_ack(int.from_bytes(info.ext[1:4], "big"))
            self.counters.seen(now)
            return True
        return False

    def _on_ack(self, msn: int) -> None:
        # The AETH's MSN counts messages the receiver completed (cumulative, 24 bits); a
        # message whose last packet was lost is never counted.
        delta = (msn - self._acked_msn) & PSN_MASK
        if 0 < delta < PSN_HALF:
            self._acked_msn = msn
            self.counters.acked_messages += delta
            self.counters.acked_payload_bytes += delta * self.message_bytes

    def report(self, now: float) -> dict[str, object]:
        """Counters as a dict, PFC figures of this QP's priority included."""
        c = self.counters
        c.rate_pps = self.rp.rate_pps
        if self.pfc is not None:
            c.pauses = self.pfc.pauses[self.priority]
            c.paused_s = self.pfc.paused_seconds(self.priority, now)
        d = c.to_dict()
        d.update(role="sender", psn=self.psn, alpha=self.rp.alpha,
                 dcqcn_decreases=self.rp.decreases, priority=self.priority)
        return d


@dataclass(slots=True)
class _RxFlow:
    counters: FlowCounters
    expected_psn: Optional[int] = None
    sport: int = -1
    reply_qpn: int = 0
    cnp: bytes = b""
    ack: Optional[FrameTemplate] = None


@dataclass(slots=True)
class Receiver:
    """The receiving side of a port: every data flow arriving there (see the module docstring).

    ``local_ips`` (4-byte IPs) limits it to packets addressed to this host; empty accepts all.

    >>> Receiver(cnp_interval_s=0.01).np.cnp_interval_s
    0.01
    """

    cnp_interval_s: float = DEFAULT_CNP_INTERVAL_S
    verify: bool = True
    local_ips: frozenset[bytes] = frozenset()
    peer_qpns: dict[int, int] = field(default_factory=dict)
    np: NotificationPoint = field(init=False)
    flows: dict[tuple[bytes, int], _RxFlow] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.np = NotificationPoint(self.cnp_interval_s)

    def on_frame(self, frame: bytes, now: float, info: Optional[RoceInfo] = None) -> list[bytes]:
        """Consume one frame; returns the replies (ACK, CNP) to transmit."""
        info = info or parse_roce(frame)
        if info is None or info.opcode not in DATA_OPCODES:
            return []
        if self.local_ips and info.dst_ip not in self.local_ips:
            return []
        key = (info.src_ip, info.dqpn)
        st = self.flows.get(key)
        if st is None:
            st = self.flows[key] = _RxFlow(FlowCounters(""), reply_qpn=self.peer_qpns.get(
                info.dqpn, info.dqpn))
        if info.sport != st.sport:
            self._new_path(st, info)
        c = st.counters
        if self.verify and not verify_icrc(frame):
            c.bad_icrc += 1
            return []
        c.seen(now)
        c.recv_pkts += 1
        c.recv_bytes += len(frame)
        c.recv_payload_bytes += info.payload_len
        if info.opcode in (OP_RC_WRITE_LAST, OP_RC_WRITE_ONLY):
            c.messages_received += 1
        exp = st.expected_psn
        if exp is None or info.psn == exp:
            st.expected_psn = (info.psn + 1) & PSN_MASK
        else:
            ahead = (info.psn - exp) & PSN_MASK
            if ahead < PSN_HALF:
                c.lost_pkts += ahead
                st.expected_psn = (info.psn + 1) & PSN_MASK
            else:
                c.duplicate_pkts += 1
        replies: list[bytes] = []
        ce = info.ecn == ECN_CE
        if ce:
            c.ce_pkts += 1
        if self.np.on_packet(key, ce, now):
            c.cnps_sent += 1
            replies.append(st.cnp)
        if info.ackreq and st.ack is not None:
            c.acks_sent += 1
            replies.append(st.ack.frame(info.psn, ext=aeth_bytes(0, c.messages_received)))
        return replies

    def _new_path(self, st: _RxFlow, info: RoceInfo) -> None:
        back = FlowSpec(mac_str(info.dst_mac), mac_str(info.src_mac), _ip(info.dst_ip),
                        _ip(info.src_ip), info.sport, st.reply_qpn, dscp=DSCP_CNP)
        st.sport = info.sport
        st.cnp = build_cnp(back)
        st.ack = FrameTemplate.ack(FlowSpec(back.src_mac, back.dst_mac, back.src_ip,
                                            back.dst_ip, back.sport, back.dqpn,
                                            dscp=info.dscp))
        st.counters.flow = f"{_ip(info.src_ip)}:{info.sport}->{_ip(info.dst_ip)} qp {info.dqpn}"

    def report(self) -> list[dict[str, object]]:
        """Counters of every flow seen, as dicts."""
        out = []
        for (_src, qpn), st in sorted(self.flows.items()):
            d = st.counters.to_dict()
            d.update(role="receiver", qpn=qpn, expected_psn=st.expected_psn)
            out.append(d)
        return out


def _ip(raw: bytes) -> str:
    return ".".join(str(b) for b in raw)
