"""GOR's telemetry loop: poll every switch's port counters over P4Runtime every ``period_s``
and turn them into per-link-direction utilisation, ECN marks, PFC, drops and queue depth.

The controller owns switch polling; ``topo.telemetry`` (the testbed) re-exports this module.

What is read from every switch, for each polled port (names of ``p4src/README.md``):

* ``FabricEgress.telemetry.tx`` — packets and bytes sent on the port (one link *direction*:
  the port's switch → its peer);
* ``FabricIngress.telemetry.rx`` — packets and bytes received on the port (peer → switch);
* ``FabricEgress.ecn.marks`` — CE marks on the port;
* ``FabricEgress.telemetry.pfc_tx`` (index ``port``) / ``FabricIngress.pfc.rx_frames``
  (index ``port·8 + priority``, summed over priorities) — PFC frames sent / received;
* ``FabricIngress.telemetry.drops`` — packets dropped in ingress, by ingress port;
* ``FabricEgress.telemetry.max_qdepth`` — largest queue depth since the last poll
  (read, then written back to 0: read-and-clear).

A counter missing from the pipeline reads as 0 (older P4Info files lack the PFC ones).

**Utilisation** (:func:`utilisation`): when the port has a configured queue rate
(``rate_pps``, what shapes the link on p4sim) it is ``packets/s ÷ rate_pps``; otherwise
``bits/s ÷ link speed`` (``gbps`` of the port in ``topo.model``).

**Robustness.** A switch whose reader raises is logged, marked stale
(:attr:`TelemetryPoller.health`) and skipped; the loop goes on, and when the switch answers
again the first interval spans the whole outage (per-link timestamps). A counter that went
backwards (switch restart, counter reset) counts from 0 (:func:`delta`).

>>> a = PortReading(100, 64000, 0, 3); b = PortReading(300, 192000, 5, 20)
>>> d = delta(a, b); (d.tx_pkts, d.marks, d.max_qdepth)
(200, 5, 20)
>>> round(utilisation(d, dt_s=1.0, rate_pps=400.0, gbps=100.0), 3)
0.5
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from controller.p4rt import counter_entry, register_entry, update

TX_COUNTER = "FabricEgress.telemetry.tx"
RX_COUNTER = "FabricIngress.telemetry.rx"
DROPS_COUNTER = "FabricIngress.telemetry.drops"
ECN_COUNTER = "FabricEgress.ecn.marks"
PFC_TX_COUNTER = "FabricEgress.telemetry.pfc_tx"
PFC_RX_COUNTER = "FabricIngress.pfc.rx_frames"
QDEPTH_REGISTER = "FabricEgress.telemetry.max_qdepth"
PFC_PRIORITIES = 8

log = logging.getLogger("controller.gor.telemetry")


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


@dataclass(slots=True)
class TelemetrySeries:
    """The time series of every polled link direction (the newest ``max_samples`` per link
    when set, so a long-running controller stays bounded).

    >>> s = TelemetrySeries(); l = LinkId("b0r0l0", 3, "s0", "uplink")
    >>> s.add(l, LinkSample(0.5, 0.5, 100, 6400, 0, 4, 0.5)); s.totals()[l]
    100
    """

    samples: dict[LinkId, list[LinkSample]] = field(default_factory=dict)
    max_samples: Optional[int] = None

    def add(self, link: LinkId, sample: LinkSample) -> None:
        """Append one interval of ``link``."""
        ss = self.samples.setdefault(link, [])
        ss.append(sample)
        if self.max_samples is not None and len(ss) > self.max_samples:
            del ss[: len(ss) - self.max_samples]

    def latest(self) -> dict[LinkId, LinkSample]:
        """The newest sample of every link."""
        return {l: ss[-1] for l, ss in self.samples.items() if ss}

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


def _optional_counter(conn: Any, info: Any, name: str) -> dict[int, Any]:
    """Cells of ``name``, or nothing when the pipeline has no such counter."""
    if info is not None and hasattr(info, "has") and not info.has("counter", name):
        return {}
    return conn.read_counter(name)


def p4rt_reader(conn: Any) -> Reader:
    """A :data:`Reader` over an open, primary ``controller.p4rt.SwitchConnection``: ONE
    Read request with one entity per (counter, polled port) cell and the ``max_qdepth``
    cells (a wildcard read would return all 512 cells of every counter, 4,096 of the
    PFC ones: seconds per poll on a loaded 2-core machine), then one batched write of
    zeros to ``max_qdepth`` for the ports read (only the non-zero cells). Targets that
    refuse an indexed read fall back to wildcard reads."""
    state: dict[str, Any] = {}

    def cells(info: Any, ports: Sequence[int]) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        def present(name: str) -> bool:
            return not hasattr(info, "has") or info.has("counter", name)
        for name in (TX_COUNTER, ECN_COUNTER, RX_COUNTER, DROPS_COUNTER, PFC_TX_COUNTER):
            if name in (TX_COUNTER, ECN_COUNTER) or present(name):
                out += [(name, p) for p in ports]
        if present(PFC_RX_COUNTER):
            out += [(PFC_RX_COUNTER, p * PFC_PRIORITIES + q) for p in ports for q in range(PFC_PRIORITIES)]
        return out

    def read_indexed(info: Any, ports: Sequence[int]) -> tuple[dict[str, dict[int, Any]], dict[int, int]]:
        want = cells(info, ports)
        ids = {info.counter_id(n): n for n in {n for n, _ in want}}
        msgs = [counter_entry(info, n, i) for n, i in want]
        msgs += [register_entry(info, QDEPTH_REGISTER, p) for p in ports]
        got: dict[str, dict[int, Any]] = {n: {} for n in ids.values()}
        qd: dict[int, int] = {}
        for e in conn.read(*msgs):
            if e.HasField("counter_entry"):
                ce = e.counter_entry
                got[ids[ce.counter_id]][ce.index.index] = _Cell(ce.data.packet_count, ce.data.byte_count)
            elif e.HasField("register_entry"):
                re_ = e.register_entry
                qd[re_.index.index] = _p4data_int(re_.data)
        return got, qd

    def read_wildcard(info: Any) -> tuple[dict[str, dict[int, Any]], dict[int, int]]:
        got = {TX_COUNTER: conn.read_counter(TX_COUNTER), ECN_COUNTER: conn.read_counter(ECN_COUNTER)}
        for name in (RX_COUNTER, DROPS_COUNTER, PFC_TX_COUNTER, PFC_RX_COUNTER):
            got[name] = _optional_counter(conn, info, name)
        return got, conn.read_register(QDEPTH_REGISTER)

    def read(ports: Sequence[int]) -> dict[int, PortReading]:
        info = conn.p4info if conn.p4info is not None else conn.fetch_pipeline()
        if state.get("indexed", hasattr(conn, "read")):
            try:
                got, qd = read_indexed(info, ports)
                state["indexed"] = True
            except Exception:  # noqa: BLE001 — a target without indexed reads
                if state.get("indexed"):
                    raise
                state["indexed"] = False
                got, qd = read_wildcard(info)
        else:
            got, qd = read_wildcard(info)
        clears = [update(register_entry(info, QDEPTH_REGISTER, p, 0), "MODIFY")
                  for p in ports if qd.get(p)]
        if clears:
            conn.write(clears)

        def pk(name: str, i: int) -> int:
            c = got.get(name, {}).get(i)
            return c.packets if c else 0

        out = {}
        for p in ports:
            t, r = got[TX_COUNTER].get(p), got.get(RX_COUNTER, {}).get(p)
            prx = sum(pk(PFC_RX_COUNTER, p * PFC_PRIORITIES + q) for q in range(PFC_PRIORITIES))
            out[p] = PortReading(t.packets if t else 0, t.bytes if t else 0, pk(ECN_COUNTER, p),
                                 qd.get(p, 0), r.packets if r else 0, r.bytes if r else 0,
                                 pk(DROPS_COUNTER, p), pk(PFC_TX_COUNTER, p), prx)
        return out
    return read


@dataclass(frozen=True, slots=True)
class _Cell:
    packets: int
    bytes: int


def _p4data_int(data: Any) -> int:
    """The integer of a register cell's P4Data (a bitstring, or the first struct member)."""
    if data.HasField("bitstring"):
        return int.from_bytes(data.bitstring, "big")
    for kind in ("struct", "tuple", "header"):
        if data.HasField(kind):
            members = getattr(getattr(data, kind), "members", None) or []
            return _p4data_int(members[0]) if members else 0
    return 0


@dataclass(frozen=True, slots=True)
class PolledLink:
    """A link to poll and its capacity (``rate_pps`` when a queue rate is set).

    >>> PolledLink(LinkId("b0r0l0", 3, "s0", "uplink"), gbps=100.0).rate_pps is None
    True
    """

    link: LinkId
    gbps: Optional[float] = None
    rate_pps: Optional[float] = None


@dataclass(slots=True)
class SwitchHealth:
    """Whether a switch answered its last poll; ``stale_since_s`` (monotonic) while it does not.

    >>> SwitchHealth().stale
    False
    """

    stale_since_s: Optional[float] = None
    failures: int = 0
    last_error: str = ""
    last_ok_s: Optional[float] = None

    @property
    def stale(self) -> bool:
        """True while the switch does not answer."""
        return self.stale_since_s is not None


TickCallback = Callable[[float, dict[LinkId, LinkSample]], None]


class TelemetryPoller:
    """A thread polling every switch each ``period_s`` into :attr:`series`.

    ``readers`` maps switch name → :data:`Reader` (read concurrently, one worker per
    switch up to ``max_workers``); ``on_tick(t_s, samples)`` (optional) gets each
    interval's samples — GOR's alarm logic hangs there. Lifetime: :meth:`start` …
    :meth:`stop` (also a context manager). Read errors are logged, kept in :attr:`errors`
    (the newest 100) and mark the switch stale in :attr:`health`; :attr:`loop_s` is the
    duration of the last poll.

    >>> poller = TelemetryPoller(readers, links, period_s=0.05)     # doctest: +SKIP
    >>> with poller: time.sleep(3)                                  # doctest: +SKIP
    >>> poller.stale_switches(), poller.series.busiest()            # doctest: +SKIP
    """

    def __init__(self, readers: Mapping[str, Reader], links: Sequence[PolledLink],
                 period_s: float = 0.05, on_tick: Optional[TickCallback] = None,
                 max_samples: Optional[int] = None, max_workers: int = 16,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.readers, self.links, self.period_s, self.on_tick = readers, list(links), period_s, on_tick
        self.series = TelemetrySeries(max_samples=max_samples)
        self.errors: list[str] = []
        self.health: dict[str, SwitchHealth] = {sw: SwitchHealth() for sw in readers}
        self.loop_s = 0.0
        self.polls = 0
        self._clock = clock
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._prev: dict[LinkId, tuple[float, PortReading]] = {}
        self._t0: Optional[float] = None
        self._by_switch: dict[str, list[PolledLink]] = {}
        for pl in self.links:
            self._by_switch.setdefault(pl.link.switch, []).append(pl)
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(readers))),
                                        thread_name_prefix="telemetry-read")

    def stale_switches(self) -> list[str]:
        """Switches that did not answer their last poll, sorted."""
        return sorted(sw for sw, h in self.health.items() if h.stale)

    def _failed(self, sw: str, exc: BaseException, now: float) -> None:
        h = self.health.setdefault(sw, SwitchHealth())
        msg = f"{sw}: {type(exc).__name__}: {exc}"
        if not h.stale:
            h.stale_since_s = now
            log.warning("switch %s does not answer, marked stale: %s", sw, msg)
        h.failures += 1
        h.last_error = msg
        self.errors.append(msg)
        del self.errors[:-100]

    def _answered(self, sw: str, now: float) -> None:
        h = self.health.setdefault(sw, SwitchHealth())
        if h.stale:
            log.warning("switch %s answers again after %.3f s", sw, now - (h.stale_since_s or now))
        h.stale_since_s, h.last_ok_s = None, now

    def _read_all(self, now: float) -> dict[LinkId, PortReading]:
        futures = {}
        for sw, pls in self._by_switch.items():
            reader = self.readers.get(sw)
            if reader is None:
                continue
            futures[sw] = self._pool.submit(reader, [pl.link.port for pl in pls])
        out: dict[LinkId, PortReading] = {}
        for sw, fut in futures.items():
            try:
                got = fut.result()
            except Exception as exc:  # noqa: BLE001 — one bad switch must not stop polling
                self._failed(sw, exc, now)
                continue
            self._answered(sw, now)
            for pl in self._by_switch[sw]:
                if pl.link.port in got:
                    out[pl.link] = got[pl.link.port]
        return out

    def poll_once(self) -> dict[LinkId, LinkSample]:
        """Read every switch now; the samples of the interval since each link's previous
        reading (none for a link's first reading, which only sets its baseline)."""
        start = self._clock()
        if self._t0 is None:
            self._t0 = start
        readings = self._read_all(start)
        samples: dict[LinkId, LinkSample] = {}
        for pl in self.links:
            cur = readings.get(pl.link)
            if cur is None:
                continue
            prev = self._prev.get(pl.link)
            self._prev[pl.link] = (start, cur)
            if prev is None:
                continue
            dt = start - prev[0]
            reset = counter_reset(prev[1], cur)
            if reset:
                log.info("counters of %s went backwards: reset, counting from 0", pl.link)
            d = delta(prev[1], cur)
            s = LinkSample(round(start - self._t0, 3), dt, d.tx_pkts, d.tx_bytes, d.marks,
                           d.max_qdepth, utilisation(d, dt, pl.rate_pps, pl.gbps),
                           d.rx_pkts, d.rx_bytes, d.drops, d.pfc_tx, d.pfc_rx,
                           utilisation(d, dt, pl.rate_pps, pl.gbps, rx=True), reset)
            self.series.add(pl.link, s)
            samples[pl.link] = s
        self.loop_s = self._clock() - start
        self.polls += 1
        return samples

    def _run(self) -> None:
        while not self._stop.is_set():
            t = self._clock()
            samples = self.poll_once()
            if samples and self.on_tick is not None:
                try:
                    self.on_tick(self._clock() - (self._t0 or t), samples)
                except Exception:  # noqa: BLE001 — a consumer bug must not stop telemetry
                    log.exception("telemetry on_tick failed")
            self._stop.wait(max(0.0, self.period_s - (self._clock() - t)))

    def start(self) -> None:
        """Take the baseline reading and start the thread."""
        self._stop.clear()
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
    """Every switch-to-switch port of ``fabric`` (a ``topo.model.Fabric``: leaf uplinks,
    spine downlinks) as a :class:`PolledLink` with the port's ``gbps``, and its queue rate
    from ``rates_pps[(switch, port)]`` if any."""
    rates = rates_pps or {}
    out = []
    for sw in fabric.switches:
        for p, info in sorted(sw.ports.items()):
            if info.kind in ("uplink", "downlink"):
                out.append(PolledLink(LinkId(sw.name, p, info.peer_node, info.kind),
                                      getattr(info, "gbps", None), rates.get((sw.name, p))))
    return out


__all__ = [
    "DROPS_COUNTER", "ECN_COUNTER", "LinkId", "LinkSample", "PFC_RX_COUNTER", "PFC_TX_COUNTER",
    "PolledLink", "PortReading", "QDEPTH_REGISTER", "RX_COUNTER", "Reader", "SwitchHealth",
    "TX_COUNTER", "TelemetryPoller", "TelemetrySeries", "TickCallback", "counter_reset",
    "delta", "fabric_links", "p4rt_reader", "utilisation",
]
