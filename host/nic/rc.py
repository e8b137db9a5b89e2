"""RC reliability of the NIC emulator: go-back-N requester and PSN-checking responder.

Pure state machines with an injected clock, as an RNIC's transport does it (IBTA vol. 1
ch. 9.7; Linux rxe behaves the same way):

* :class:`Responder` (receiver side of one QP) expects one PSN (ePSN). A packet with the
  ePSN is accepted; one ahead of it is a **PSN sequence error**: the first such packet
  gets a NAK (AETH syndrome 0x60, BTH PSN = ePSN) and later ones are dropped silently
  until the ePSN arrives (one NAK per gap, like rxe's ``sent_psn_nak``); a packet behind
  it is a duplicate and is ACKed again (C9-105), which is how a lost ACK is repaired.
  ACKs are **coalesced**: an accepted packet that asks for one (BTH AckReq) or a
  duplicate only marks an ACK pending; the NIC sends one cumulative ACK per flow per
  receive burst (:meth:`Responder.take_ack`, BTH PSN = ePSN − 1, syndrome 0x1F: ACK
  without end-to-end credits) carrying the MSN (messages completed in order).
* :class:`Requester` (sender side of one QP) numbers packets with an absolute sequence
  number (PSN = start PSN + seq mod 2^24), keeps everything from the oldest unacknowledged
  packet on as outstanding and asks for an ACK at the end of each message and every
  ``ackreq_every_pkts`` packets (rxe: 64). An ACK for PSN p acknowledges up to p; a NAK
  for PSN p acknowledges up to p − 1 and **goes back** to p (go-back-N: everything from p
  is sent again). A packet that asked for an ACK must see one within
  ``retry_timeout_s``; if not (ACK, NAK or tail lost) the requester goes back to the oldest
  unacknowledged packet. ``retry_count`` retries in a row without progress (timeouts and
  NAKs, as the IB retry counter) put the QP in the error state: it stops sending.

Emulation scale: the retry timeout defaults to 2 s, above the worst round trip of the
testbed (a 64-packet leaf queue drained at 40 pps holds a packet 1.6 s); hardware uses
4.096 µs · 2^k (k = 14: 67 ms) against microsecond round trips. Retry count 7 is IB's
maximum.

>>> req, resp = Requester(), Responder(expected_psn=0)
>>> for seq in range(3):                      # PSN 1 is lost on the way
...     ackreq = req.ackreq(seq, ends_message=seq == 2)
...     req.on_sent(seq, ackreq, now=0.0)
>>> resp.on_data(0, False, False), resp.on_data(2, True, True)
('accept', 'nak')
>>> req.on_nak(resp.expected_psn, now=0.01); req.next_seq, req.acked_seq
(1, 1)
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

PSN_MASK = 0xFFFFFF
PSN_HALF = 1 << 23
AETH_ACK = 0x1F               # ACK, credit count "invalid" (no end-to-end flow control)
AETH_NAK_PSN_SEQ = 0x60       # NAK, PSN sequence error
AETH_TYPE_ACK = 0
AETH_TYPE_RNR = 1
AETH_TYPE_NAK = 3
QP_RTS = "RTS"
QP_ERROR = "ERROR"


def psn_diff(a: int, b: int) -> int:
    """``a − b`` in 24-bit PSN space, in [−2^23, 2^23).

    >>> psn_diff(1, 0xFFFFFF), psn_diff(0xFFFFFF, 1)
    (2, -2)
    """
    d = (a - b) & PSN_MASK
    return d - (1 << 24) if d >= PSN_HALF else d


@dataclass(frozen=True, slots=True)
class RcParams:
    """Reliability knobs of a requester (see the module docstring).

    ``window_pkts`` bounds the unacknowledged packets (rxe: 128); ``None`` = no bound
    (always below 2^23, the PSN half-space).

    >>> RcParams().retry_count
    7
    """

    retry_timeout_s: float = 2.0
    retry_count: int = 7
    ackreq_every_pkts: int = 64
    window_pkts: Optional[int] = None

    def __post_init__(self) -> None:
        if self.retry_timeout_s <= 0 or self.retry_count < 0 or self.ackreq_every_pkts <= 0:
            raise ValueError("need retry_timeout_s > 0, retry_count >= 0, ackreq_every_pkts > 0")
        if self.window_pkts is not None and not 0 < self.window_pkts < PSN_HALF:
            raise ValueError("window_pkts must be in 1..2^23-1")


@dataclass(slots=True)
class Requester:
    """Go-back-N send state of one RC QP (sequence numbers are absolute, from 0).

    ``next_seq`` is the next packet to transmit (behind ``high_seq`` while going back),
    ``high_seq`` one past the newest packet ever sent, ``acked_seq`` the oldest packet not
    yet acknowledged.

    >>> r = Requester(start_psn=0xFFFFFF)
    >>> r.on_sent(0, True, now=0.0); r.on_ack(0xFFFFFF, now=0.1), r.acked_seq
    (1, 1)
    """

    params: RcParams = field(default_factory=RcParams)
    start_psn: int = 0
    next_seq: int = 0
    high_seq: int = 0
    acked_seq: int = 0
    retries: int = 0
    state: str = QP_RTS
    error: str = ""
    retransmitted_pkts: int = 0
    timeouts: int = 0
    naks: int = 0
    deadline_s: float = math.inf
    _ackreqs: deque[tuple[int, float]] = field(default_factory=deque)

    def psn(self, seq: int) -> int:
        """The PSN of packet ``seq``."""
        return (self.start_psn + seq) & PSN_MASK

    def seq_of(self, psn: int) -> int:
        """The packet number of ``psn`` near the outstanding window."""
        return self.acked_seq + psn_diff(psn, self.psn(self.acked_seq))

    @property
    def outstanding(self) -> int:
        """Packets sent and not yet acknowledged."""
        return self.high_seq - self.acked_seq

    def window_open(self) -> bool:
        """True when ``next_seq`` may be sent now (QP usable, window not full)."""
        if self.state != QP_RTS:
            return False
        limit = self.params.window_pkts or PSN_HALF - 1
        return self.next_seq - self.acked_seq < limit

    def ackreq(self, seq: int, ends_message: bool) -> bool:
        """Whether packet ``seq`` asks for an ACK: message end, every N-th packet, or the
        packet that fills the window."""
        p = self.params
        if ends_message or (seq + 1) % p.ackreq_every_pkts == 0:
            return True
        return p.window_pkts is not None and seq - self.acked_seq + 1 >= p.window_pkts

    def on_sent(self, seq: int, ackreq: bool, now: float) -> None:
        """Packet ``seq`` left at ``now`` (``ackreq``: it asked for an ACK)."""
        if seq < self.high_seq:
            self.retransmitted_pkts += 1
        self.next_seq = seq + 1
        self.high_seq = max(self.high_seq, self.next_seq)
        if ackreq:
            self._ackreqs.append((seq, now))
            self._rearm()

    def on_ack(self, psn: int, now: float) -> int:
        """An ACK for ``psn`` (everything up to it received); returns packets newly acked."""
        seq = self.seq_of(psn)
        if not self.acked_seq <= seq < self.high_seq:
            return 0                                       # stale or duplicate
        return self._progress(seq + 1)

    def on_nak(self, psn: int, now: float) -> None:
        """A NAK (PSN sequence error) for ``psn``: acknowledge what is before, go back to it."""
        seq = self.seq_of(psn)
        if not self.acked_seq <= seq < self.high_seq:
            return
        self.naks += 1
        if seq > self.acked_seq:
            self._progress(seq)
        elif not self._retry(f"NAK PSN sequence error at PSN {psn} after "
                             f"{self.params.retry_count} retries"):
            return
        self._go_back(seq)

    def on_fatal_nak(self, syndrome: int) -> None:
        """A NAK the requester cannot recover from (invalid request, access error…)."""
        self._fail(f"fatal NAK, AETH syndrome 0x{syndrome:02x}")

    def check_timeout(self, now: float) -> bool:
        """Fire the retry timer if due: go back to the oldest unacknowledged packet (or
        put the QP in error after ``retry_count`` retries); True when it fired."""
        if self.state != QP_RTS or now < self.deadline_s:
            return False
        self.timeouts += 1
        if self._retry(f"retry count exceeded: no ACK for PSN {self.psn(self.acked_seq)} "
                       f"after {self.params.retry_count} retries"):
            self._go_back(self.acked_seq)
        return True

    def _progress(self, acked_seq: int) -> int:
        newly = acked_seq - self.acked_seq
        self.acked_seq = acked_seq
        self.next_seq = max(self.next_seq, acked_seq)
        self.retries = 0
        while self._ackreqs and self._ackreqs[0][0] < acked_seq:
            self._ackreqs.popleft()
        self._rearm()
        return newly

    def _retry(self, reason: str) -> bool:
        self.retries += 1
        if self.retries > self.params.retry_count:
            self._fail(reason)
            return False
        return True

    def _fail(self, reason: str) -> None:
        self.state, self.error = QP_ERROR, reason
        self._ackreqs.clear()
        self.deadline_s = math.inf

    def _go_back(self, seq: int) -> None:
        self.next_seq = seq
        while self._ackreqs and self._ackreqs[-1][0] >= seq:   # they will be sent again
            self._ackreqs.pop()
        self._rearm()

    def _rearm(self) -> None:
        # the oldest unanswered ACK request sets the deadline
        self.deadline_s = (self._ackreqs[0][1] + self.params.retry_timeout_s
                           if self._ackreqs else math.inf)


@dataclass(slots=True)
class Responder:
    """PSN checking and ACK coalescing of one flow at the receiver.

    ``expected_psn=None`` takes the first packet's PSN as the start PSN (a responder that
    was not told the connection's start PSN).

    >>> r = Responder(expected_psn=5)
    >>> r.on_data(5, False, True), r.on_data(5, False, False), r.take_ack()
    ('accept', 'duplicate', 5)
    >>> r.take_ack() is None
    True
    """

    expected_psn: Optional[int] = 0
    msn: int = 0
    nak_sent: bool = False
    ack_pending: bool = False

    def on_data(self, psn: int, ends_message: bool, ackreq: bool) -> str:
        """Check one data packet: ``"accept"`` (in order: deliver it), ``"nak"`` (first
        packet past a gap: send a NAK for ``expected_psn``), ``"out_of_sequence"`` (past
        a gap already NAKed: drop), ``"duplicate"`` (already received: drop, ACK again)."""
        if self.expected_psn is None:
            self.expected_psn = psn
        d = psn_diff(psn, self.expected_psn)
        if d > 0:
            if self.nak_sent:
                return "out_of_sequence"
            self.nak_sent = True
            return "nak"
        if d < 0:
            self.ack_pending = True
            return "duplicate"
        self.nak_sent = False
        self.expected_psn = (psn + 1) & PSN_MASK
        if ends_message:
            self.msn = (self.msn + 1) & PSN_MASK
        if ackreq:
            self.ack_pending = True
        return "accept"

    def take_ack(self) -> Optional[int]:
        """The PSN to acknowledge (the newest in-order packet) if an ACK is pending."""
        if not self.ack_pending or self.expected_psn is None:
            return None
        self.ack_pending = False
        return (self.expected_psn - 1) & PSN_MASK


__all__ = ["AETH_ACK", "AETH_NAK_PSN_SEQ", "AETH_TYPE_ACK", "AETH_TYPE_NAK", "AETH_TYPE_RNR",
           "PSN_HALF", "PSN_MASK", "QP_ERROR", "QP_RTS", "RcParams", "Requester", "Responder",
           "psn_diff"]
