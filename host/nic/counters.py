"""Per-flow counters of the emulated NIC, one record per flow at each end, exported as JSON.

Wire counts include everything that crossed the wire: ``sent_pkts`` counts retransmissions
(the switches count them too), ``recv_pkts`` every data frame with a good ICRC, duplicates
and dropped out-of-sequence packets included. Delivery counts only what the RC transport
accepted in order: ``recv_payload_bytes``, ``messages_received`` (so the receiver's
goodput is delivered data), ``acked_messages`` at the sender.

>>> FlowCounters("10.0.0.1:49152->10.1.0.1 qp 7").to_dict()["goodput_mbps"]
0.0
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional


@dataclass(slots=True)
class FlowCounters:
    """Counters of one flow at one end; :meth:`to_dict` is the JSON form.

    Receiver: ``lost_pkts`` = PSNs missing when a gap was detected (one NAK each gap),
    ``out_of_sequence_pkts`` = packets dropped past a NAKed gap, ``duplicate_pkts`` =
    packets received again. Sender: ``retransmitted_pkts`` (go-back-N), ``timeouts``
    (retry timer expiries), ``naks_received``.

    >>> c = FlowCounters("f"); c.seen(1.0); c.seen(3.0); c.elapsed_s()
    2.0
    """

    flow: str
    sent_pkts: int = 0
    sent_bytes: int = 0
    sent_payload_bytes: int = 0
    messages_sent: int = 0
    acked_messages: int = 0
    acked_payload_bytes: int = 0
    retransmitted_pkts: int = 0
    timeouts: int = 0
    naks_received: int = 0
    recv_pkts: int = 0
    recv_bytes: int = 0
    recv_payload_bytes: int = 0
    messages_received: int = 0
    ce_pkts: int = 0
    cnps_sent: int = 0
    cnps_received: int = 0
    acks_sent: int = 0
    naks_sent: int = 0
    lost_pkts: int = 0
    out_of_sequence_pkts: int = 0
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
        """Payload Mb/s: acknowledged bytes at a sender, delivered bytes at a receiver."""
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


__all__ = ["FlowCounters"]
