"""Port counters of GOR's telemetry as values: one reading of a port's cumulative counters,
the increments between two readings (a counter that went backwards — a restarted switch —
counts from 0), utilisation, and the link directions and interval samples built from them.

:mod:`controller.gor.telemetry` (the poller) re-exports every name here.

>>> a = PortReading(100, 64000, 0, 3); b = PortReading(300, 192000, 5, 20)
>>> d = delta(a, b); (d.tx_pkts, d.marks, d.max_qdepth)
(200, 5, 20)
>>> round(utilisation(d, dt_s=1.0, rate_pps=400.0, gbps=100.0), 3)
0.5
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

@dataclass(frozen=True, slots=True)
class PortReading:
    """Cumulative counters of one port (``max_qdepth`` since the last clear).

    >>> PortReading(tx_pkts=5, tx_bytes=320, marks=1, max_qdepth=2, rx_pkts=4).rx_pkts
    4
    """

    tx_pkts: int
    tx_bytes: int
    marks: int
    max_qdepth: int
    rx_pkts: int = 0
    rx_bytes: int = 0
    drops: int = 0
    pfc_tx: int = 0
    pfc_rx: int = 0


@dataclass(frozen=True, slots=True)
class LinkId:
    """One direction of a fabric link: the egress port ``port`` of ``switch`` toward ``peer``.

    >>> str(LinkId("b0r0l0", 3, "s0", "uplink"))
    'b0r0l0->s0'
    """

    switch: str
    port: int
    peer: str
    kind: str  # "uplink" (leaf → spine) | "downlink" (spine → leaf)

    def __str__(self) -> str:
        return f"{self.switch}->{self.peer}"


@dataclass(frozen=True, slots=True)
class LinkSample:
    """One link direction over one polling interval ending at ``t_s`` (seconds since start).

    ``util`` is the direction switch → peer (tx); ``rx_util`` the reverse direction as seen
    by this end (useful when the peer is stale).

    >>> LinkSample(1.0, 0.5, 200, 12800, 3, 17, 0.8).util_pct
    80.0
    """

    t_s: float
    dt_s: float
    tx_pkts: int
    tx_bytes: int
    marks: int
    max_qdepth: int
    util: float
    rx_pkts: int = 0
    rx_bytes: int = 0
    drops: int = 0
    pfc_tx: int = 0
    pfc_rx: int = 0
    rx_util: float = 0.0
    reset: bool = False

    @property
    def util_pct(self) -> float:
        """Utilisation in percent."""
        return round(100.0 * self.util, 1)

    @property
    def pps(self) -> float:
        """Packets per second over the interval."""
        return self.tx_pkts / self.dt_s if self.dt_s > 0 else 0.0

    @property
    def mark_rate(self) -> float:
        """Fraction of sent packets that were CE-marked in the interval (0 when idle).

        >>> LinkSample(1, 1, 200, 0, 50, 0, 0.1).mark_rate
        0.25
        """
        return self.marks / self.tx_pkts if self.tx_pkts else 0.0


def _inc(a: int, b: int) -> int:
    """Increment of a cumulative counter; a counter that went backwards was reset."""
    return b - a if b >= a else b


def counter_reset(prev: PortReading, cur: PortReading) -> bool:
    """True when any cumulative counter went backwards (switch restart or counter reset).

    >>> counter_reset(PortReading(10, 10, 0, 0), PortReading(2, 20, 0, 0))
    True
    """
    return any(getattr(cur, f) < getattr(prev, f) for f in _CUMULATIVE)


_CUMULATIVE = ("tx_pkts", "tx_bytes", "marks", "rx_pkts", "rx_bytes", "drops", "pfc_tx", "pfc_rx")


def delta(prev: PortReading, cur: PortReading) -> PortReading:
    """Counter increments between two readings (a reset counter counts from 0);
    ``max_qdepth`` is the current reading (it was cleared after ``prev``).

    >>> delta(PortReading(50, 10, 4, 0), PortReading(10, 5, 1, 7))
    PortReading(tx_pkts=10, tx_bytes=5, marks=1, max_qdepth=7, rx_pkts=0, rx_bytes=0, drops=0, pfc_tx=0, pfc_rx=0)
    """
    return PortReading(_inc(prev.tx_pkts, cur.tx_pkts), _inc(prev.tx_bytes, cur.tx_bytes),
                       _inc(prev.marks, cur.marks), cur.max_qdepth,
                       _inc(prev.rx_pkts, cur.rx_pkts), _inc(prev.rx_bytes, cur.rx_bytes),
                       _inc(prev.drops, cur.drops), _inc(prev.pfc_tx, cur.pfc_tx),
                       _inc(prev.pfc_rx, cur.pfc_rx))


def utilisation(d: PortReading, dt_s: float, rate_pps: Optional[float],
                gbps: Optional[float], rx: bool = False) -> float:
    """Fraction of capacity used in an interval: pps ÷ ``rate_pps`` when a queue rate is
    set, else bits/s ÷ ``gbps``; 0 when neither is known or ``dt_s`` is 0. ``rx=True``
    measures the received direction instead of the sent one.

    >>> utilisation(PortReading(0, 125_000_000, 0, 0), 1.0, None, 10.0)
    0.1
    """
    if dt_s <= 0:
        return 0.0
    pkts, nbytes = (d.rx_pkts, d.rx_bytes) if rx else (d.tx_pkts, d.tx_bytes)
    if rate_pps:
        return pkts / dt_s / rate_pps
    if gbps:
        return nbytes * 8 / dt_s / (gbps * 1e9)
    return 0.0


__all__ = ["LinkId", "LinkSample", "PortReading", "counter_reset", "delta", "utilisation"]
