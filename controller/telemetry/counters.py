"""Port counters of the telemetry as values: one reading of a port's cumulative counters,
the increments between two readings (a counter that went backwards — a restarted switch —
counts from 0), utilisation, and the link directions and interval samples built from them.

Queue depth comes from a histogram counter (``FabricEgress.telemetry.qdepth_hist``,
``p4src/README.md``): every packet leaving a port counts once in the bin of the queue
depth it saw, :data:`QDEPTH_BIN_PKTS` packets per bin, :data:`QDEPTH_BINS` bins (the last
one open-ended). The deepest queue of an interval is the lower edge of the highest bin
that grew in it (:func:`qdepth_floor`) — nothing on the switch is read and cleared.

:mod:`controller.telemetry.poller` (the poller) re-exports every name here.

>>> a = PortReading(100, 64000, 0, 0, qdepth_bins=(100, 0, 0))
>>> b = PortReading(300, 192000, 5, 8, qdepth_bins=(250, 40, 10))
>>> d = delta(a, b); (d.tx_pkts, d.marks, d.qdepth_bins, d.max_qdepth)
(200, 5, (150, 40, 10), 8)
>>> round(utilisation(d, dt_s=1.0, rate_pps=400.0, gbps=100.0), 3)
0.5
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

QDEPTH_BINS = 16
"""Bins of the queue-depth histogram per port (``QDEPTH_BINS`` in ``p4src/include/define.p4``)."""
QDEPTH_BIN_PKTS = 4
"""Packets of queue depth per bin (``1 << QDEPTH_BIN_SHIFT``): bin b holds depths
``4b .. 4b + 3``, the last bin every depth from 60 packets up."""


def qdepth_bin(depth_pkts: int) -> int:
    """The bin a packet that saw ``depth_pkts`` packets queued is counted in (as the data
    plane computes it).

    >>> [qdepth_bin(d) for d in (0, 3, 4, 59, 60, 64)]
    [0, 0, 1, 14, 15, 15]
    """
    return min(depth_pkts // QDEPTH_BIN_PKTS, QDEPTH_BINS - 1)


def qdepth_floor(bin_counts_delta: Mapping[int, int] | Sequence[int]) -> int:
    """Deepest queue (packets) seen over an interval, at bin resolution: the lower edge
    (``bin * QDEPTH_BIN_PKTS``) of the highest bin that counted a packet, 0 when none did.
    ``bin_counts_delta`` maps bin → packets counted in it in the interval (a sequence is
    taken as indexed by bin).

    >>> qdepth_floor({0: 12, 2: 3, 5: 0}), qdepth_floor([7, 1, 0]), qdepth_floor({})
    (8, 4, 0)
    """
    items = enumerate(bin_counts_delta) if isinstance(bin_counts_delta, Sequence) \
        else bin_counts_delta.items()
    return max((b * QDEPTH_BIN_PKTS for b, n in items if n > 0), default=0)


@dataclass(frozen=True, slots=True)
class PortReading:
    """Cumulative counters of one port, as read, or the increments between two readings
    (:func:`delta`).

    ``qdepth_bins[b]`` counts the packets sent that saw a queue depth in bin ``b`` (empty
    when the pipeline has no histogram). ``max_qdepth`` is the deepest queue at
    :data:`QDEPTH_BIN_PKTS`-packet resolution, a lower bound (:func:`qdepth_floor` of the
    bins): in a reading, since the switch's counters started; in a delta, within the
    interval — what the poller reports per interval.

    >>> PortReading(tx_pkts=5, tx_bytes=320, marks=1, max_qdepth=4, rx_pkts=4).rx_pkts
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
    qdepth_bins: tuple[int, ...] = ()


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
    by this end (useful when the peer is stale). ``max_qdepth`` is the deepest queue of
    the interval in packets, the lower edge of its 4-packet bin (:func:`qdepth_floor`);
    ``qdepth_bins`` the interval's histogram (packets per bin, bin 0 first; the poller
    drops the trailing empty bins). ``rate_pps`` is the queue rate ``util`` is relative to
    (None: the link speed): GOR knows the link's capacity in packets/s from the first
    sample, idle or not.

    >>> LinkSample(1.0, 0.5, 200, 12800, 3, 16, 0.8).util_pct
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
    qdepth_bins: tuple[int, ...] = ()
    rate_pps: Optional[float] = None

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
    >>> a, b = PortReading(1, 1, 0, 0, qdepth_bins=(5, 1)), PortReading(2, 2, 0, 0, qdepth_bins=(3, 1))
    >>> counter_reset(a, b)                      # a histogram bin went backwards
    True
    """
    return any(getattr(cur, f) < getattr(prev, f) for f in _CUMULATIVE) or \
        any(b < a for a, b in zip(prev.qdepth_bins, cur.qdepth_bins))


_CUMULATIVE = ("tx_pkts", "tx_bytes", "marks", "rx_pkts", "rx_bytes", "drops", "pfc_tx", "pfc_rx")


def delta(prev: PortReading, cur: PortReading) -> PortReading:
    """Counter increments between two readings (a reset counter counts from 0), histogram
    bins included (a bin missing from one reading counts as 0); ``max_qdepth`` is the
    deepest queue of the interval, :func:`qdepth_floor` of the bins' increments (0 when
    the readings carry no bins).

    >>> delta(PortReading(50, 10, 4, 0, qdepth_bins=(9, 0)), PortReading(10, 5, 1, 4, qdepth_bins=(9, 2)))
    PortReading(tx_pkts=10, tx_bytes=5, marks=1, max_qdepth=4, rx_pkts=0, rx_bytes=0, drops=0, pfc_tx=0, pfc_rx=0, qdepth_bins=(0, 2))
    """
    n = max(len(prev.qdepth_bins), len(cur.qdepth_bins))
    before = prev.qdepth_bins + (0,) * (n - len(prev.qdepth_bins))
    after = cur.qdepth_bins + (0,) * (n - len(cur.qdepth_bins))
    bins = tuple(_inc(a, b) for a, b in zip(before, after))
    return PortReading(_inc(prev.tx_pkts, cur.tx_pkts), _inc(prev.tx_bytes, cur.tx_bytes),
                       _inc(prev.marks, cur.marks), qdepth_floor(bins),
                       _inc(prev.rx_pkts, cur.rx_pkts), _inc(prev.rx_bytes, cur.rx_bytes),
                       _inc(prev.drops, cur.drops), _inc(prev.pfc_tx, cur.pfc_tx),
                       _inc(prev.pfc_rx, cur.pfc_rx), bins)


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


__all__ = ["LinkId", "LinkSample", "PortReading", "QDEPTH_BINS", "QDEPTH_BIN_PKTS", "counter_reset",
           "delta", "qdepth_bin", "qdepth_floor", "utilisation"]
