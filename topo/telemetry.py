"""Fabric telemetry for the testbed: poll the switches' own counters, turn them into
per-link utilisation, ECN marks and queue depth over time.

What is read every ``period_s`` from every switch over P4Runtime (names of
``p4src/README.md``), for each fabric port (uplinks of leaves, downlinks of spines):

* ``FabricEgress.telemetry.tx`` — packets and bytes sent on the port (a link *direction*:
  the port's switch → its peer);
* ``FabricEgress.ecn.marks`` — CE marks on the port;
* ``FabricEgress.telemetry.max_qdepth`` — largest queue depth since the last poll
  (read, then written back to 0: read+clear).

**Utilisation** (:func:`utilisation`): when the port has a configured queue rate
(``rate_pps``, what shapes the link on p4sim) it is ``tx packets/s ÷ rate_pps``, the
fraction of what the queue can drain; otherwise it is ``tx bits/s ÷ link speed`` (the
topology's ``gbps``). The p4sim testbed always sets rates, so the first applies there.

The maths (:func:`delta`, :class:`TelemetrySeries`) is pure; :class:`TelemetryPoller` is
the thread that feeds it, with one reader callable per switch (:func:`p4rt_reader` over
an open, primary ``SwitchConnection`` — the programmer's own connection is reused).

>>> a = PortReading(100, 64000, 0, 3); b = PortReading(300, 192000, 5, 20)
>>> d = delta(a, b); (d.tx_pkts, d.marks, d.max_qdepth)
(200, 5, 20)
>>> round(utilisation(d, dt_s=1.0, rate_pps=400.0, gbps=100.0), 3)
0.5
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from controller.p4rt import register_entry, update

TX_COUNTER = "FabricEgress.telemetry.tx"
ECN_COUNTER = "FabricEgress.ecn.marks"
QDEPTH_REGISTER = "FabricEgress.telemetry.max_qdepth"


@dataclass(frozen=True, slots=True)
class PortReading:
    """Cumulative counters of one egress port (``max_qdepth`` since the last clear).

    >>> PortReading(tx_pkts=5, tx_bytes=320, marks=1, max_qdepth=2).tx_pkts
    5
    """

    tx_pkts: int
    tx_bytes: int
    marks: int
    max_qdepth: int


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

    @property
    def util_pct(self) -> float:
        """Utilisation in percent."""
        return round(100.0 * self.util, 1)

    @property
    def pps(self) -> float:
        """Packets per second over the interval."""
        return self.tx_pkts / self.dt_s if self.dt_s > 0 else 0.0


def delta(prev: PortReading, cur: PortReading) -> PortReading:
    """Counter increments between two readings (a reset counter counts from 0);
    ``max_qdepth`` is the current reading (it was cleared after ``prev``).

    >>> delta(PortReading(50, 10, 4, 0), PortReading(10, 5, 1, 7))
    PortReading(tx_pkts=10, tx_bytes=5, marks=1, max_qdepth=7)
    """
    def inc(a: int, b: int) -> int:
        return b - a if b >= a else b
    return PortReading(inc(prev.tx_pkts, cur.tx_pkts), inc(prev.tx_bytes, cur.tx_bytes),
                       inc(prev.marks, cur.marks), cur.max_qdepth)


def utilisation(d: PortReading, dt_s: float, rate_pps: Optional[float],
                gbps: Optional[float]) -> float:
    """Fraction of capacity used in an interval: pps ÷ ``rate_pps`` when a queue rate is
    set, else bits/s ÷ ``gbps``; 0 when neither is known or ``dt_s`` is 0.

    >>> utilisation(PortReading(0, 125_000_000, 0, 0), 1.0, None, 10.0)
    0.1
    """
    if dt_s <= 0:
        return 0.0
    if rate_pps:
        return d.tx_pkts / dt_s / rate_pps
    if gbps:
        return d.tx_bytes * 8 / dt_s / (gbps * 1e9)
    return 0.0


@dataclass(slots=True)
class TelemetrySeries:
    """The time series of every polled link direction.

    >>> s = TelemetrySeries(); l = LinkId("b0r0l0", 3, "s0", "uplink")
    >>> s.add(l, LinkSample(0.5, 0.5, 100, 6400, 0, 4, 0.5)); s.totals()[l]
    100
    """

    samples: dict[LinkId, list[LinkSample]] = field(default_factory=dict)

    def add(self, link: LinkId, sample: LinkSample) -> None:
        """Append one interval of ``link``."""
        self.samples.setdefault(link, []).append(sample)

    def links(self, kind: Optional[str] = None) -> list[LinkId]:
        """The links seen, sorted by name (only ``kind`` when given)."""
        return sorted((l for l in self.samples if kind is None or l.kind == kind),
                      key=lambda l: (l.switch, l.port))

    def totals(self, kind: Optional[str] = None) -> dict[LinkId, int]:
        """Packets sent per link over the whole series."""
        return {l: sum(s.tx_pkts for s in self.samples[l]) for l in self.links(kind)}

    def marks(self, kind: Optional[str] = None) -> dict[LinkId, int]:
        """ECN marks per link over the whole series."""
        return {l: sum(s.marks for s in self.samples[l]) for l in self.links(kind)}

    def peak_qdepth(self, kind: Optional[str] = None) -> dict[LinkId, int]:
        """Largest queue depth (packets) seen per link."""
        return {l: max((s.max_qdepth for s in self.samples[l]), default=0)
                for l in self.links(kind)}

    def mean_util(self, kind: Optional[str] = None) -> dict[LinkId, float]:
        """Time-weighted mean utilisation per link."""
        out = {}
        for l in self.links(kind):
            ss = self.samples[l]
            span = sum(s.dt_s for s in ss)
            out[l] = sum(s.util * s.dt_s for s in ss) / span if span else 0.0
        return out

    def busiest(self, links: Optional[Sequence[LinkId]] = None) -> Optional[LinkId]:
        """The link (of ``links``, default all) that sent the most packets."""
        totals = self.totals()
        pool = [l for l in (links if links is not None else totals) if l in totals]
        return max(pool, key=lambda l: (totals[l], str(l)), default=None)

    def max_over_mean(self, links: Sequence[LinkId]) -> float:
        """Busiest link's packets ÷ the mean over ``links`` (1.0 = perfectly balanced).

        >>> s = TelemetrySeries(); a = LinkId("l", 1, "s0", "uplink"); b = LinkId("l", 2, "s1", "uplink")
        >>> s.add(a, LinkSample(1, 1, 300, 0, 0, 0, 0)); s.add(b, LinkSample(1, 1, 100, 0, 0, 0, 0))
        >>> s.max_over_mean([a, b])
        1.5
        """
        totals = self.totals()
        vals = [totals.get(l, 0) for l in links]
        mean = sum(vals) / len(vals) if vals else 0.0
        return max(vals) / mean if mean else 0.0

    def times(self) -> list[float]:
        """Sample end times of the longest link series."""
        longest = max(self.samples.values(), key=len, default=[])
        return [s.t_s for s in longest]


Reader = Callable[[Sequence[int]], Mapping[int, PortReading]]
"""Reads (and clears ``max_qdepth`` of) the given ports of one switch."""


def p4rt_reader(conn: Any) -> Reader:
    """A :data:`Reader` over an open, primary ``controller.p4rt.SwitchConnection``:
    one wildcard read per counter/register, then one batched write of zeros to
    ``max_qdepth`` for the ports read."""
    def read(ports: Sequence[int]) -> dict[int, PortReading]:
        tx = conn.read_counter(TX_COUNTER)
        marks = conn.read_counter(ECN_COUNTER)
        qd = conn.read_register(QDEPTH_REGISTER)
        info = conn.p4info if conn.p4info is not None else conn.fetch_pipeline()
        clears = [update(register_entry(info, QDEPTH_REGISTER, p, 0), "MODIFY")
                  for p in ports if qd.get(p)]
        if clears:
            conn.write(clears)
        out = {}
        for p in ports:
            c = tx.get(p)
            m = marks.get(p)
            out[p] = PortReading(c.packets if c else 0, c.bytes if c else 0,
                                 m.packets if m else 0, qd.get(p, 0))
        return out
    return read


@dataclass(frozen=True, slots=True)
class PolledLink:
    """A link to poll and its capacity (``rate_pps`` when a queue rate is set)."""

    link: LinkId
    gbps: Optional[float] = None
    rate_pps: Optional[float] = None


class TelemetryPoller:
    """A thread polling every switch each ``period_s`` into :attr:`series`.

    ``readers`` maps switch name → :data:`Reader`; ``on_tick(t_s, samples)`` (optional)
    gets each interval's samples, e.g. to print a live line. Lifetime: :meth:`start` …
    :meth:`stop` (also a context manager); read errors are kept in :attr:`errors`.

    >>> poller = TelemetryPoller(readers, links, period_s=0.5)      # doctest: +SKIP
    >>> with poller: time.sleep(3)                                  # doctest: +SKIP
    >>> poller.series.busiest()                                     # doctest: +SKIP
    """

    def __init__(self, readers: Mapping[str, Reader], links: Sequence[PolledLink],
                 period_s: float = 0.5,
                 on_tick: Optional[Callable[[float, dict[LinkId, LinkSample]], None]] = None
                 ) -> None:
        self.readers, self.links, self.period_s, self.on_tick = readers, list(links), period_s, on_tick
        self.series = TelemetrySeries()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._prev: dict[LinkId, PortReading] = {}
        self._t0 = 0.0
        self._t_prev = 0.0
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(8, len(readers))))

    def _read_all(self) -> dict[LinkId, PortReading]:
        ports: dict[str, list[int]] = {}
        for pl in self.links:
            ports.setdefault(pl.link.switch, []).append(pl.link.port)
        futures = {sw: self._pool.submit(self.readers[sw], ps) for sw, ps in ports.items()}
        out: dict[LinkId, PortReading] = {}
        for sw, fut in futures.items():
            try:
                got = fut.result()
            except Exception as exc:  # noqa: BLE001 — one bad switch must not stop polling
                self.errors.append(f"{sw}: {type(exc).__name__}: {exc}")
                continue
            for pl in self.links:
                if pl.link.switch == sw and pl.link.port in got:
                    out[pl.link] = got[pl.link.port]
        return out

    def poll_once(self) -> dict[LinkId, LinkSample]:
        """Read every switch now; the samples of the interval since the previous poll
        (empty on the first call, which only sets the baseline)."""
        now = time.monotonic()
        readings = self._read_all()
        samples: dict[LinkId, LinkSample] = {}
        if self._prev:
            dt = now - self._t_prev
            for pl in self.links:
                if pl.link not in readings or pl.link not in self._prev:
                    continue
                d = delta(self._prev[pl.link], readings[pl.link])
                s = LinkSample(round(now - self._t0, 3), dt, d.tx_pkts, d.tx_bytes, d.marks,
                               d.max_qdepth, utilisation(d, dt, pl.rate_pps, pl.gbps))
                self.series.add(pl.link, s)
                samples[pl.link] = s
        else:
            self._t0 = now
        self._prev.update(readings)
        self._t_prev = now
        return samples

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.monotonic()
            samples = self.poll_once()
            if samples and self.on_tick is not None:
                self.on_tick(time.monotonic() - self._t0, samples)
            self._stop.wait(max(0.0, self.period_s - (time.monotonic() - t)))

    def start(self) -> None:
        """Take the baseline reading and start the thread."""
        self.poll_once()
        self._thread = threading.Thread(target=self._run, name="telemetry-poller", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread after one last poll (so the tail of the run is counted)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
            self.poll_once()
        self._pool.shutdown(wait=False)

    def __enter__(self) -> "TelemetryPoller":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def fabric_links(fabric: Any, rates_pps: Optional[Mapping[tuple[str, int], float]] = None
                 ) -> list[PolledLink]:
    """Every switch-to-switch port of ``fabric`` (leaf uplinks, spine downlinks) as a
    :class:`PolledLink`, with its queue rate from ``rates_pps[(switch, port)]`` if any."""
    rates = rates_pps or {}
    out = []
    for sw in fabric.switches:
        for p, info in sorted(sw.ports.items()):
            if info.kind in ("uplink", "downlink"):
                out.append(PolledLink(LinkId(sw.name, p, info.peer_node, info.kind),
                                      getattr(info, "gbps", None), rates.get((sw.name, p))))
    return out


__all__ = [
    "ECN_COUNTER", "LinkId", "LinkSample", "PolledLink", "PortReading", "QDEPTH_REGISTER",
    "Reader", "TX_COUNTER", "TelemetryPoller", "TelemetrySeries", "delta", "fabric_links",
    "p4rt_reader", "utilisation",
]
