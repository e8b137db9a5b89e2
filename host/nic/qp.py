"""Queue pairs of the emulated NIC: an RDMA WRITE sender and a receiver, reliable as RC.

Pure logic over frames and an injected clock (the raw socket lives in :mod:`host.nic.io`,
the transport rules in :mod:`host.nic.rc`):

* :class:`SenderQP` splits messages of ``message_bytes`` into MTU-sized RDMA WRITE packets
  (FIRST with a RETH, MIDDLE, LAST; ONLY when one packet suffices), numbers them with
  24-bit PSNs, requests an ACK on each message's last packet and every 64 packets, paces
  them at the DCQCN reaction point's rate and holds them while PFC pauses its priority.
  Unacknowledged packets stay outstanding: a NAK or the retry timer sends them again from
  the lost one on (go-back-N); too many retries put the QP in error (``qp_state``).
* :class:`Receiver` is the responder and notification point of every flow arriving at a
  port: it accepts packets in PSN order, NAKs the first packet past a gap, drops the rest
  until the gap is filled, ACKs (coalesced: one cumulative ACK per flow per receive burst,
  from :meth:`Receiver.flush_acks`; AETH MSN = messages completed) and answers CE-marked
  packets with a CNP (at most one per flow per interval).

Flows are keyed by (sender IP, destination QPN), so a flow that changes its UDP source
port (TCCL re-routing) stays one flow. Replies go to QPN ``peer_qpns.get(qpn, qpn)``: by
default both ends of a connection use the same QP number.

>>> from host.nic.frames import FlowSpec
>>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 49152, 7)
>>> tx, rx = SenderQP(f, message_bytes=2048, mtu=1024, messages=1), Receiver()
>>> [rx.on_frame(tx.poll(t), t) for t in (0.0, 0.001)]          # no CNP, no NAK
[[], []]
>>> [tx.on_frame(a, 0.002) for a in rx.flush_acks()], tx.counters.acked_messages, tx.done
([True], 1, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from host.nic.counters import FlowCounters
from host.nic.dcqcn import DEFAULT_CNP_INTERVAL_S, DcqcnParams, NotificationPoint, ReactionPoint
from host.nic.frames import (AETH_LEN, DSCP_CNP, ECN_CE, OP_CNP, OP_RC_ACK, OP_RC_WRITE_FIRST,
                             OP_RC_WRITE_LAST, OP_RC_WRITE_MIDDLE, OP_RC_WRITE_ONLY, FlowSpec,
                             FrameTemplate, RoceInfo, aeth_bytes, build_cnp, ip_bytes,
                             parse_roce, readdress, reth_bytes, verify_icrc)
from host.nic.native import (D_FIRST_T, D_GAP, D_LAST_T, D_NEXT_AT, D_NOW, D_RX_FIRST_T, D_RX_LAST_T, D_SLACK,
                             FILL_MAX, RP_AI, RP_ALPHA, RP_ALPHA_TIMER, RP_G, RP_HAI, RP_LAST_DEC, RP_LINE,
                             RP_MIN, RP_MIN_DEC, RP_NEXT_ALPHA, RP_NEXT_RATE, RP_NOW, RP_RATE, RP_RATE_TIMER,
                             RP_TARGET, S_ACKED, S_ACKED_MSN, S_ACKREQ_EVERY, S_BASE_VA, S_BC_LEFT, S_HIGH,
                             S_LAST_LEN, S_MSG_BYTES, S_MTU, S_NEXT, S_OUT_ACKED_MSGS, S_OUT_ACKREQS,
                             S_OUT_AGAIN, S_OUT_BYTES, S_OUT_CNPS, S_OUT_LAST_END, S_OUT_MSGS, S_OUT_N,
                             S_OUT_PAYLOAD, S_OUT_PROGRESS, S_OUT_RETX, S_OUT_RX, S_PEER_IP, S_PER_MSG,
                             S_RATE_LIMIT, S_REACT, S_RKEY, S_RP_BC_PKTS, S_RP_BYTE_ROUNDS, S_RP_CNPS,
                             S_RP_DECREASES, S_RP_FR_ROUNDS, S_RP_PKTS, S_RP_TIMER_ROUNDS, S_SKIP, S_SQPN,
                             S_START_PSN, S_STOP_AT_END, S_TOTAL, S_WINDOW, S_WINDOW_PKTS, NativeQP, NativeTx,
                             frame_bytes)
from host.nic.pfc import PfcState
from host.nic.sendsize import check_send_size
from host.nic.rc import (AETH_ACK, AETH_NAK_PSN_SEQ, AETH_TYPE_ACK, AETH_TYPE_NAK, PSN_HALF,
                         PSN_MASK, QP_RTS, RcParams, Requester, Responder)

MAX_RX_FLOWS_PER_SOURCE = 1024
"""Flows (QPNs) a receiver keeps from one source address: the testbed gives each pair of
NICs 64 QPNs (``testbed.traffic.flows.QPNS_PER_PAIR``). Without a bound any host of the
fabric made a receiver keep a flow (and build its replies) for every QPN it named;
beyond it a new flow's frames are dropped and counted (``flows_refused``; sec-audit5)."""
MAX_RX_FLOWS = 65536
"""Flows a receiver keeps in all (a host that sends from addresses not its own: the
leaves' source guard drops those, ``p4src/include/control/source_guard.p4``, but a fabric
programmed without it, or a link that bypasses it, does not), ~16 times a testbed's
largest fabric's flows to one NIC."""
PACE_SLACK_S = 0.01
"""How far the pacer may fall behind and catch up: a sender woken late (the emulator's
loop sleeps in ``select``; on a loaded machine a wake-up can be milliseconds late) sends
the frames that became due meanwhile, up to this much time's worth, so the mean rate is
the DCQCN rate; without it a flow paced at a few thousand packets per second reached
about half of it (one or two frames per wake-up). Never less than one gap."""

DATA_OPCODES = frozenset({OP_RC_WRITE_FIRST, OP_RC_WRITE_MIDDLE, OP_RC_WRITE_LAST,
                          OP_RC_WRITE_ONLY})
MESSAGE_ENDS = frozenset({OP_RC_WRITE_LAST, OP_RC_WRITE_ONLY})

__all__ = ["DATA_OPCODES", "FlowCounters", "Receiver", "SenderQP"]


class SenderQP:
    """The sending side of one RC QP doing RDMA WRITEs (see the module docstring).

    ``messages=None`` sends forever; ``dcqcn=None`` uses :class:`DcqcnParams` defaults;
    ``rc=None`` uses :class:`~host.nic.rc.RcParams` defaults (retry timeout, retry count,
    window); ``rate_limit=False`` disables pacing (for tests and benchmarks);
    ``react_to_cnp=False`` counts CNPs but keeps the rate (DCQCN off).

    >>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 1, 7)
    >>> qp = SenderQP(f, message_bytes=3000, mtu=1024, messages=1, rate_limit=False)
    >>> [parse_roce(qp.poll(0.0)).opcode for _ in range(3)], qp.poll(0.0), qp.done
    ([6, 7, 8], None, False)
    """

    def __init__(self, flow: FlowSpec, *, sqpn: Optional[int] = None, message_bytes: int = 65536,
                 mtu: int = 1024, priority: int = 3, messages: Optional[int] = None,
                 dcqcn: Optional[DcqcnParams] = None, pfc: Optional[PfcState] = None,
                 start_psn: int = 0, rkey: int = 0x1234, base_va: int = 0x10000000,
                 rate_limit: bool = True, react_to_cnp: bool = True,
                 rc: Optional[RcParams] = None) -> None:
        check_send_size(message_bytes, mtu, messages)     # ValueError naming the field
        if not 0 <= priority < 8:
            raise ValueError("priority must be 0..7")
        self.flow = flow
        self._peer_ip = ip_bytes(flow.dst_ip)      # the responder: the only source of replies
        self.sqpn = flow.dqpn if sqpn is None else sqpn
        self.message_bytes = message_bytes
        self.mtu = mtu
        self.priority = priority
        self.messages = messages
        self.rp = ReactionPoint(dcqcn or DcqcnParams())
        self.rc = Requester(rc or RcParams(), start_psn=start_psn & PSN_MASK)
        self.pfc = pfc
        self.rkey = rkey
        self.base_va = base_va
        self.rate_limit = rate_limit
        self.react_to_cnp = react_to_cnp
        self.counters = FlowCounters(self._name())
        self.next_at = -math.inf
        self._pending_sport: Optional[int] = None
        self._pkts_per_msg = max(1, math.ceil(message_bytes / mtu))
        self._last_len = message_bytes - (self._pkts_per_msg - 1) * mtu
        self._total_pkts = None if messages is None else messages * self._pkts_per_msg
        self._acked_msn = 0
        self._blocked_since: Optional[float] = None
        self._native: Optional[NativeQP] = None
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
        if self._native is not None:
            self._native_templates()

    def attach_native(self, nq: NativeQP) -> None:
        """Make this QP's frames in C from now on (:meth:`poll_into`, host.nic.native):
        its templates and the state words that do not change are handed over."""
        self._native = nq
        s = nq.s
        s[S_TOTAL] = -1 if self._total_pkts is None else self._total_pkts
        s[S_WINDOW_PKTS] = self.rc.params.window_pkts or 0
        s[S_ACKREQ_EVERY] = self.rc.params.ackreq_every_pkts
        s[S_PER_MSG] = self._pkts_per_msg
        s[S_START_PSN] = self.rc.start_psn
        s[S_MSG_BYTES] = self.message_bytes
        s[S_MTU] = self.mtu
        s[S_LAST_LEN] = self._last_len
        va = self.base_va & 0xFFFFFFFFFFFFFFFF             # the C adds modulo 2^64, as RETH masks
        s[S_BASE_VA] = va - (1 << 64) if va >= 1 << 63 else va
        s[S_RKEY] = self.rkey & 0xFFFFFFFF
        s[S_RATE_LIMIT] = int(self.rate_limit)
        s[S_PEER_IP] = int.from_bytes(self._peer_ip, "big")
        s[S_SQPN] = self.sqpn
        s[S_REACT] = int(self.react_to_cnp)
        p, rp = self.rp.params, nq.rp
        s[S_RP_BC_PKTS], s[S_RP_FR_ROUNDS] = p.byte_counter_pkts, p.fast_recovery_rounds
        (rp[RP_LINE], rp[RP_MIN], rp[RP_G], rp[RP_ALPHA_TIMER], rp[RP_RATE_TIMER], rp[RP_AI], rp[RP_HAI],
         rp[RP_MIN_DEC]) = (p.line_rate_pps, p.min_rate_pps, p.g, p.alpha_timer_s, p.rate_timer_s,
                            p.ai_rate_pps, p.hai_rate_pps, p.min_decrease_interval_s)
        nq.d[D_SLACK] = PACE_SLACK_S
        self._native_templates()

    def native_frame_bytes(self) -> int:
        """The largest data frame this QP makes, as the native hot loop builds it (a
        frame over :data:`host.nic.native.SLOT_BYTES` keeps the QP on the Python path).

        >>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 1, 2)
        >>> SenderQP(f, message_bytes=3000, mtu=1024).native_frame_bytes()
        1098
        """
        tpls = [self._only] if self._pkts_per_msg == 1 else [self._first, self._middle, self._last]
        return max(frame_bytes(t.parts()[0], t.parts()[2], t.ext_len) for t in tpls)

    def detach_native(self) -> None:
        """Make this QP's frames in Python again (its state is Python's between steps)."""
        if self._native is not None:
            self._native.close()
            self._native = None

    def _native_templates(self) -> None:
        nq = self._native
        assert nq is not None
        if self._pkts_per_msg == 1:
            nq.set_template("only", *self._only.parts())
        else:
            nq.set_template("first", *self._first.parts())
            nq.set_template("middle", *self._middle.parts())
            nq.set_template("last", *self._last.parts())

    @property
    def psn(self) -> int:
        """The PSN of the next packet to transmit."""
        return self.rc.psn(self.rc.next_seq)

    def change_sport(self, sport: int) -> None:
        """Move the flow to UDP source ``sport`` from the next message on (no data lost).

        Packets sent again after the move (go-back-N) leave from the new port, as a
        modified QP's would."""
        if not 0 < sport < 65536:
            raise ValueError("sport must be 1..65535")
        self._pending_sport = sport
        if self.rc.next_seq % self._pkts_per_msg == 0:
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
    def errored(self) -> bool:
        """True once the QP is in the error state (retries exhausted or fatal NAK)."""
        return self.rc.state != QP_RTS

    @property
    def done(self) -> bool:
        """True once all ``messages`` are acknowledged, or the QP is in error."""
        if self.errored:
            return True
        return self._total_pkts is not None and self.rc.acked_seq >= self._total_pkts

    def _has_data(self) -> bool:
        if self._total_pkts is not None and self.rc.next_seq >= self._total_pkts:
            return False
        return self.rc.window_open()

    def wait_s(self, now: float) -> float:
        """Seconds until :meth:`poll` may have something to do (a frame or the retry
        timer; ``inf`` when done)."""
        if self.done:
            return math.inf
        pause = self.pfc.pause_remaining(self.priority, now) if self.pfc else 0.0
        timer = max(pause, self.rc.deadline_s - now)
        if not self._has_data():
            return timer
        pace = max(0.0, self.next_at - now) if self.rate_limit else 0.0
        return min(timer, max(pause, pace))

    def _may_send(self, now: float) -> bool:
        """The checks every poll makes before any frame, the same for the Python and the
        native path: not done, not PFC-paused (the paused time is counted once the pause
        ends), the retry timer checked, and something left to send."""
        if self.done:
            return False
        if self.pfc is not None and self.pfc.is_paused(self.priority, now):
            if self._blocked_since is None:
                self._blocked_since = now
            return False
        if self._blocked_since is not None:
            self.counters.pause_blocked_s += now - self._blocked_since
            self._blocked_since = None
        if self.rc.check_timeout(now):
            self.counters.timeouts = self.rc.timeouts
        return self._has_data()

    def poll(self, now: float) -> Optional[bytes]:
        """The next frame (new or sent again) if one may leave at ``now``, else None."""
        if not self._may_send(now):
            return None
        self.rp.advance(now)
        if self.rate_limit:
            if self.next_at == -math.inf:
                self.next_at = now
            if now < self.next_at:
                return None
            gap = self.rp.interval_s()
            self.next_at = max(self.next_at, now - max(gap, PACE_SLACK_S)) + gap
        frame, payload = self._next_frame(now)
        c = self.counters
        c.seen(now)
        c.sent_pkts += 1
        c.sent_bytes += len(frame)
        c.sent_payload_bytes += payload
        c.retransmitted_pkts = self.rc.retransmitted_pkts
        c.rate_pps = self.rp.rate_pps
        self.rp.on_sent(now)
        return frame

    def poll_batch(self, now: float, limit: int) -> list[bytes]:
        """Every frame that may leave at ``now``, at most ``limit``: the same frames, in
        the same order, with the same counters and state after, as calling :meth:`poll`
        with ``now`` until it returns None (or ``limit`` times).

        After the first frame nothing of what :meth:`poll` checks once per call can
        change at the same ``now``: the PFC pause, the retry timer (a frame sent at
        ``now`` arms it for ``now`` + the timeout) and the DCQCN timers (already
        advanced to ``now``), so only the window, the message count and the pacer are
        checked again for each further frame.

        >>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 1, 7)
        >>> qp = SenderQP(f, message_bytes=3000, mtu=1024, messages=1, rate_limit=False)
        >>> [parse_roce(fr).opcode for fr in qp.poll_batch(0.0, 8)], qp.counters.sent_pkts
        ([6, 7, 8], 3)
        """
        out: list[bytes] = []
        if limit <= 0:
            return out
        frame = self.poll(now)
        if frame is None:
            return out
        out.append(frame)
        c, rp, rc = self.counters, self.rp, self.rc
        total = self._total_pkts
        rate_limit = self.rate_limit
        while len(out) < limit:
            if total is not None and rc.next_seq >= total:
                break
            if not rc.window_open():
                break
            if rate_limit:
                if now < self.next_at:
                    break
                gap = rp.interval_s()
                self.next_at = max(self.next_at, now - max(gap, PACE_SLACK_S)) + gap
            frame, payload = self._next_frame(now)
            c.last_s = now
            c.sent_pkts += 1
            c.sent_bytes += len(frame)
            c.sent_payload_bytes += payload
            c.retransmitted_pkts = rc.retransmitted_pkts
            c.rate_pps = rp.rate_pps
            rp.on_sent(now)
            out.append(frame)
        return out

    def poll_into(self, now: float, limit: int, tx: NativeTx) -> int:
        """:meth:`poll_batch` with the frames made in C into ``tx`` (after
        :meth:`attach_native`): the same frames, in the same order, with the same state
        and counters after; returns how many. Python makes the checks :meth:`poll` makes
        once per call (done, PFC, the retry timer, DCQCN's timers, the pacer's start), C
        makes the frames while the message count, the window and the pacer allow, and
        stops where DCQCN's byte counter ends a round (the rate changes: Python applies
        it and C goes on) or where a source-port move waits at a message's end."""
        nq = self._native
        if nq is None:
            raise RuntimeError("poll_into needs attach_native first")
        if limit <= 0 or not self._may_send(now):
            return 0
        rp, rc, s, d = self.rp, self.rc, nq.s, nq.d
        rp.advance(now)
        if self.rate_limit and self.next_at == -math.inf:
            self.next_at = now
        d[D_NOW] = now
        made = 0
        while made < limit:
            s[S_NEXT], s[S_HIGH], s[S_ACKED] = rc.next_seq, rc.high_seq, rc.acked_seq
            s[S_WINDOW] = (rc.params.window_pkts or PSN_HALF - 1) if rc.state == QP_RTS else 0
            s[S_BC_LEFT] = (rp.params.byte_counter_pkts - rp._pkts) if rp._next_rate != math.inf else -1
            s[S_STOP_AT_END] = self._pending_sport is not None
            d[D_NEXT_AT] = self.next_at
            d[D_GAP] = rp.interval_s()
            want = min(limit - made, FILL_MAX)
            k = nq.fill(tx, want)
            if k == 0:
                break
            made += k
            self._take_native(k, now, now, None)
            if k < want and not s[S_OUT_AGAIN]:   # the pacer, the window, the count or a full arena
                break
        return made

    def burst_begin(self, now: float) -> float:
        """Set up a native burst (``NicPort.run``, host.nic.native.NativeBurst) right
        after a step at ``now``: whether this QP takes part (not done, not paused, data
        to send), its requester and DCQCN state handed to C, and the instant Python must
        run again for it (its retry timer, a pause's end; ``inf`` when none). DCQCN's
        timers and byte counter run in C during the burst, and its ACKs and CNPs are taken
        there (nicc_burst), so neither ends it."""
        nq = self._native
        assert nq is not None
        s, d, rc = nq.s, nq.d, self.rc
        for w in (S_OUT_N, S_OUT_RETX, S_OUT_MSGS, S_OUT_BYTES, S_OUT_PAYLOAD, S_OUT_ACKREQS, S_OUT_PROGRESS,
                  S_OUT_ACKED_MSGS, S_OUT_CNPS, S_OUT_RX):
            s[w] = 0
        paused = self.pfc.pause_remaining(self.priority, now) if self.pfc is not None else 0.0
        if self.done or paused > 0 or not self._has_data() or self.next_at == -math.inf:
            s[S_SKIP] = 1
            return now + paused if paused > 0 else math.inf
        s[S_SKIP] = 0
        s[S_NEXT], s[S_HIGH], s[S_ACKED] = rc.next_seq, rc.high_seq, rc.acked_seq
        s[S_WINDOW] = (rc.params.window_pkts or PSN_HALF - 1) if rc.state == QP_RTS else 0
        s[S_STOP_AT_END] = self._pending_sport is not None
        s[S_ACKED_MSN] = self._acked_msn
        d[D_NEXT_AT] = self.next_at
        self._rp_to_native()
        return min(rc.deadline_s, now + rc.params.retry_timeout_s)

    def burst_end(self) -> int:
        """Take what a native burst did (:meth:`burst_begin`): the frames it sent, the
        ACKs and CNPs it took and DCQCN's state, the same state and counters as
        :meth:`poll_into` and :meth:`on_frame` at each instant it acted. Returns the frames."""
        nq = self._native
        assert nq is not None
        s, d, rc, c = nq.s, nq.d, self.rc, self.counters
        if s[S_SKIP]:
            return 0
        self._rp_from_native()
        k = s[S_OUT_N]
        replies = s[S_OUT_RX]
        if k:
            self._take_native(k, d[D_FIRST_T], d[D_LAST_T], nq.acktimes, rp_done=True)
        if replies:
            if s[S_OUT_PROGRESS]:                            # Requester._progress, after C's ACKs
                rc.acked_seq = s[S_ACKED]
                rc.next_seq = max(rc.next_seq, s[S_NEXT])
                rc.retries = 0
                while rc._ackreqs and rc._ackreqs[0][0] < rc.acked_seq:
                    rc._ackreqs.popleft()
                rc._rearm()
            delta = s[S_OUT_ACKED_MSGS]
            if delta:                                         # _on_msn
                self._acked_msn = s[S_ACKED_MSN]
                c.acked_messages += delta
                c.acked_payload_bytes += delta * self.message_bytes
            c.cnps_received += s[S_OUT_CNPS]
            first, last = d[D_RX_FIRST_T], d[D_RX_LAST_T]
            if k:
                first, last = min(first, d[D_FIRST_T]), max(last, d[D_LAST_T])
            c.seen(first)
            c.last_s = last
        c.rate_pps = self.rp.rate_pps
        return k

    def _rp_to_native(self) -> None:
        """DCQCN's reaction point state into the C words (its parameters were set once)."""
        nq = self._native
        assert nq is not None
        rp, w, s = self.rp, nq.rp, nq.s
        (w[RP_RATE], w[RP_TARGET], w[RP_ALPHA], w[RP_NOW], w[RP_NEXT_ALPHA], w[RP_NEXT_RATE],
         w[RP_LAST_DEC]) = (rp.rate_pps, rp.target_pps, rp.alpha, rp._now, rp._next_alpha, rp._next_rate,
                            rp._last_decrease)
        (s[S_RP_TIMER_ROUNDS], s[S_RP_BYTE_ROUNDS], s[S_RP_CNPS], s[S_RP_DECREASES],
         s[S_RP_PKTS]) = (rp.timer_rounds, rp.byte_rounds, rp.cnps, rp.decreases, rp._pkts)

    def _rp_from_native(self) -> None:
        """DCQCN's reaction point state back from the C words."""
        nq = self._native
        assert nq is not None
        rp, w, s = self.rp, nq.rp, nq.s
        (rp.rate_pps, rp.target_pps, rp.alpha, rp._now, rp._next_alpha, rp._next_rate,
         rp._last_decrease) = (w[RP_RATE], w[RP_TARGET], w[RP_ALPHA], w[RP_NOW], w[RP_NEXT_ALPHA],
                               w[RP_NEXT_RATE], w[RP_LAST_DEC])
        (rp.timer_rounds, rp.byte_rounds, rp.cnps, rp.decreases,
         rp._pkts) = (s[S_RP_TIMER_ROUNDS], s[S_RP_BYTE_ROUNDS], s[S_RP_CNPS], s[S_RP_DECREASES], s[S_RP_PKTS])

    def _take_native(self, k: int, first_t: float, last_t: float, ack_times: Optional[Sequence[float]],
                     rp_done: bool = False) -> None:
        """Take what C sent (``k`` frames, from ``first_t`` to ``last_t``) into the
        requester's state and the counters: :meth:`poll_into` after each fill (every ACK
        request at ``last_t``), :meth:`burst_end` after a burst (``ack_times``: each one's;
        ``rp_done``: DCQCN's byte counter already ran in C)."""
        nq = self._native
        assert nq is not None
        s, d, rc, rp, c = nq.s, nq.d, self.rc, self.rp, self.counters
        rc.next_seq, rc.high_seq = s[S_NEXT], s[S_HIGH]
        rc.retransmitted_pkts += s[S_OUT_RETX]
        nack = s[S_OUT_ACKREQS]
        if nack:
            seqs = nq.ackreqs
            if ack_times is None:
                rc._ackreqs.extend((seqs[i], last_t) for i in range(nack))
            else:
                rc._ackreqs.extend((seqs[i], ack_times[i]) for i in range(nack))
            rc._rearm()
        self.next_at = d[D_NEXT_AT]
        c.seen(first_t)
        c.last_s = last_t
        c.sent_pkts += k
        c.sent_bytes += s[S_OUT_BYTES]
        c.sent_payload_bytes += s[S_OUT_PAYLOAD]
        c.messages_sent += s[S_OUT_MSGS]
        c.retransmitted_pkts = rc.retransmitted_pkts
        c.rate_pps = rp.rate_pps
        if not rp_done:
            rp.on_sent(last_t, k)
        if s[S_OUT_LAST_END]:
            self._apply_sport()

    def _next_frame(self, now: float) -> tuple[bytes, int]:
        seq, n = self.rc.next_seq, self._pkts_per_msg
        msg, i = divmod(seq, n)
        last = i == n - 1
        psn = self.rc.psn(seq)
        ackreq = self.rc.ackreq(seq, last)
        if i == 0:
            reth = reth_bytes(self.base_va + msg * self.message_bytes, self.rkey,
                              self.message_bytes)
            if n == 1:
                frame = self._only.frame(psn, ackreq=ackreq, ext=reth)
            else:
                frame = self._first.frame(psn, ackreq=ackreq, ext=reth)
        elif last:
            frame = self._last.frame(psn, ackreq=ackreq)
        else:
            frame = self._middle.frame(psn, ackreq=ackreq)
        new = seq >= self.rc.high_seq
        self.rc.on_sent(seq, ackreq, now)
        if last:
            if new:
                self.counters.messages_sent += 1
            self._apply_sport()
        return frame, self._last_len if last else self.mtu

    def on_frame(self, frame: bytes | RoceInfo, now: float) -> bool:
        """Handle a CNP, ACK or NAK addressed to this QP; False when it is not for this QP:
        another QPN, or another source than the QP's peer (the flow's destination, whose
        responder sends every ACK, NAK and CNP of the flow). Before, any host of the fabric
        that named this QPN was taken: its fatal NAK put the QP in error, its CNPs cut the
        rate, its NAKs made it resend (sec-audit5)."""
        info = parse_roce(frame) if isinstance(frame, (bytes, bytearray)) else frame
        if info is None or info.dqpn != self.sqpn or info.src_ip != self._peer_ip:
            return False
        if info.opcode == OP_CNP:
            self.counters.cnps_received += 1
            if self.react_to_cnp:
                self.rp.on_cnp(now)
            self.counters.rate_pps = self.rp.rate_pps
            return True
        if info.opcode == OP_RC_ACK and len(info.ext) == 4:
            syndrome = info.ext[0]
            kind = syndrome >> 5
            if kind == AETH_TYPE_ACK:
                self.rc.on_ack(info.psn, now)
            elif syndrome == AETH_NAK_PSN_SEQ:
                self.counters.naks_received += 1
                self.rc.on_nak(info.psn, now)
                self.counters.retransmitted_pkts = self.rc.retransmitted_pkts
            elif kind == AETH_TYPE_NAK:
                self.rc.on_fatal_nak(syndrome)
            self._on_msn(int.from_bytes(info.ext[1:4], "big"))
            self.counters.seen(now)
            return True
        return False

    def _on_msn(self, msn: int) -> None:
        # The AETH's MSN counts messages the responder completed in order (24 bits).
        delta = (msn - self._acked_msn) & PSN_MASK
        if 0 < delta < PSN_HALF:
            self._acked_msn = msn
            self.counters.acked_messages += delta
            self.counters.acked_payload_bytes += delta * self.message_bytes

    def report(self, now: float) -> dict[str, object]:
        """Counters as a dict, PFC figures of this QP's priority and the QP state included."""
        c = self.counters
        c.rate_pps = self.rp.rate_pps
        c.retransmitted_pkts, c.timeouts = self.rc.retransmitted_pkts, self.rc.timeouts
        if self.pfc is not None:
            c.pauses = self.pfc.pauses[self.priority]
            c.paused_s = self.pfc.paused_seconds(self.priority, now)
        d = c.to_dict()
        d.update(role="sender", psn=self.psn, alpha=self.rp.alpha,
                 dcqcn_decreases=self.rp.decreases, priority=self.priority,
                 qp_state=self.rc.state, qp_error=self.rc.error,
                 unacked_pkts=self.rc.outstanding)
        return d


@dataclass(slots=True)
class _RxFlow:
    counters: FlowCounters
    rc: Responder
    sport: int = -1
    reply_qpn: int = 0
    cnp: bytes = b""
    ack: Optional[FrameTemplate] = None


@dataclass(slots=True)
class Receiver:
    """The receiving side of a port: every data flow arriving there (see the module docstring).

    ``local_ips`` (4-byte IPs) limits it to packets addressed to this host; empty accepts
    all. ``start_psn`` is the PSN every connection starts at (the senders' default, 0);
    ``None`` takes each flow's first packet's PSN (a lost first packet then goes unseen).
    ``on_deliver`` is called with every packet accepted in order (the data delivered).

    >>> Receiver(cnp_interval_s=0.01).np.cnp_interval_s
    0.01
    """

    cnp_interval_s: float = DEFAULT_CNP_INTERVAL_S
    verify: bool = True
    local_ips: frozenset[bytes] = frozenset()
    peer_qpns: dict[int, int] = field(default_factory=dict)
    start_psn: Optional[int] = 0
    on_deliver: Optional[Callable[[RoceInfo], None]] = None
    max_flows_per_source: int = MAX_RX_FLOWS_PER_SOURCE
    max_flows: int = MAX_RX_FLOWS
    np: NotificationPoint = field(init=False)
    flows: dict[tuple[bytes, int], _RxFlow] = field(default_factory=dict)
    flows_refused: int = 0
    """Data frames of a new flow refused: its source, or the receiver, at its bound."""
    _per_source: dict[bytes, int] = field(init=False, default_factory=dict)
    _ack_proto: bytes = field(init=False, default=b"")
    _cnp_proto: bytes = field(init=False, default=b"")

    def __post_init__(self) -> None:
        self.np = NotificationPoint(self.cnp_interval_s)
        proto = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2", 1, 1)
        self._ack_proto = FrameTemplate.ack(proto).frame(0, ext=aeth_bytes(0, 0))   # readdressed per path
        self._cnp_proto = build_cnp(proto)

    def on_frame(self, frame: bytes, now: float, info: Optional[RoceInfo] = None,
                 icrc_ok: Optional[bool] = None) -> list[bytes]:
        """Consume one frame; returns the replies to transmit now (CNP, NAK). ACKs wait
        for :meth:`flush_acks`. ``info`` and ``icrc_ok``: the frame's parse and ICRC check
        when the caller made them (the native hot loop), else made here."""
        info = info or parse_roce(frame)
        if info is None or info.opcode not in DATA_OPCODES:
            return []
        if self.local_ips and info.dst_ip not in self.local_ips:
            return []
        key = (info.src_ip, info.dqpn)
        st = self.flows.get(key)
        if st is None:
            n = self._per_source.get(info.src_ip, 0)
            if n >= self.max_flows_per_source or len(self.flows) >= self.max_flows:
                self.flows_refused += 1
                return []
            self._per_source[info.src_ip] = n + 1
            st = self.flows[key] = _RxFlow(FlowCounters(""), Responder(self.start_psn),
                                           reply_qpn=self.peer_qpns.get(info.dqpn, info.dqpn))
        if info.sport != st.sport:
            self._new_path(st, info)
        c = st.counters
        if self.verify and not (verify_icrc(frame) if icrc_ok is None else icrc_ok):
            c.bad_icrc += 1
            return []
        c.seen(now)
        c.recv_pkts += 1
        c.recv_bytes += len(frame)
        expected = st.rc.expected_psn
        verdict = st.rc.on_data(info.psn, info.opcode in MESSAGE_ENDS, info.ackreq)
        replies: list[bytes] = []
        if verdict == "accept":
            c.recv_payload_bytes += info.payload_len
            if info.opcode in MESSAGE_ENDS:
                c.messages_received += 1
            if self.on_deliver is not None:
                self.on_deliver(info)
        elif verdict == "nak":
            c.naks_sent += 1
            c.lost_pkts += (info.psn - (expected or 0)) & PSN_MASK
            if st.ack is not None:
                replies.append(st.ack.frame(st.rc.expected_psn or 0,
                                            ext=aeth_bytes(AETH_NAK_PSN_SEQ, st.rc.msn)))
        elif verdict == "out_of_sequence":
            c.out_of_sequence_pkts += 1
        else:
            c.duplicate_pkts += 1
        ce = info.ecn == ECN_CE
        if ce:
            c.ce_pkts += 1
        if self.np.on_packet(key, ce, now):
            c.cnps_sent += 1
            replies.append(st.cnp)
        return replies

    def flush_acks(self) -> list[bytes]:
        """One cumulative ACK for every flow with an ACK pending (coalescing: call once per
        receive burst)."""
        out = []
        for st in self.flows.values():
            psn = st.rc.take_ack()
            if psn is not None and st.ack is not None:
                st.counters.acks_sent += 1
                out.append(st.ack.frame(psn, ext=aeth_bytes(AETH_ACK, st.rc.msn)))
        return out

    def _new_path(self, st: _RxFlow, info: RoceInfo) -> None:
        # the replies' frames readdressed from prototypes, without Scapy: ~3 ms a path with
        # it, which any host of the fabric could make this receiver spend on every frame
        # (a new QPN or source port each; sec-audit5)
        st.sport = info.sport
        st.cnp = readdress(self._cnp_proto, info.dst_mac, info.src_mac, info.dst_ip,
                           info.src_ip, info.sport, st.reply_qpn, DSCP_CNP)
        st.ack = FrameTemplate(readdress(self._ack_proto, info.dst_mac, info.src_mac, info.dst_ip,
                                         info.src_ip, info.sport, st.reply_qpn, info.dscp),
                               AETH_LEN, 0)
        st.counters.flow = f"{_ip(info.src_ip)}:{info.sport}->{_ip(info.dst_ip)} qp {info.dqpn}"

    def report(self) -> list[dict[str, object]]:
        """Counters of every flow seen, as dicts."""
        out = []
        for (_src, qpn), st in sorted(self.flows.items()):
            d = st.counters.to_dict()
            d.update(role="receiver", qpn=qpn, expected_psn=st.rc.expected_psn, msn=st.rc.msn)
            out.append(d)
        return out


def _ip(raw: bytes) -> str:
    return ".".join(str(b) for b in raw)
