"""The telemetry poller: poll every switch's port counters over P4Runtime every ``period_s``
and turn them into per-link-direction utilisation, ECN marks, PFC, drops and queue depth.

GOR (:mod:`controller.gor`) and the testbed's scenarios (``scenarios.telemetry``
re-exports this module) poll with it.

What is read from every switch, for each polled port (names of ``p4src/README.md``; all
indexed counters, read in one P4Runtime Read, nothing written — BMv2 serves them all):

* ``FabricEgress.telemetry.tx`` — packets and bytes sent on the port (one link *direction*:
  the port's switch → its peer);
* ``FabricIngress.telemetry.rx`` — packets and bytes received on the port (peer → switch);
* ``FabricEgress.ecn.marks`` — CE marks on the port;
* ``FabricEgress.telemetry.pfc_tx`` (index ``port``) / ``FabricIngress.pfc.rx_frames``
  (index ``port·8 + priority``, summed over priorities) — PFC frames sent / received;
* ``FabricIngress.telemetry.drops`` — packets dropped in ingress, by ingress port;
* ``FabricEgress.telemetry.qdepth_hist`` (index ``port·16 + bin``) — packets sent per
  queue-depth bin of 4 packets; the interval's deepest queue, ``max_qdepth``, is the lower
  edge of the highest bin that grew (:func:`qdepth_floor`).

A counter missing from the pipeline reads as 0 (older P4Info files lack the PFC ones).

**Utilisation** (:func:`utilisation`): when the port has a configured queue rate
(``rate_pps``, what shapes the link on p4sim) it is ``packets/s ÷ rate_pps``; otherwise
``bits/s ÷ link speed`` (``gbps`` of the port in ``topo.model``).

**Robustness.** A switch whose reader raises, or does not answer within ``read_timeout_s``,
is logged, marked stale (:attr:`TelemetryPoller.health`) and skipped; the other switches
keep being polled (a switch whose previous read still hangs is not read again until it
returns). When the switch answers again the first interval spans the whole outage
(per-link timestamps). A counter that went backwards (switch restart, counter reset) counts
from 0 (:func:`delta`) and the switch is noted in :attr:`TelemetryPoller.resets`.
:meth:`TelemetryPoller.hold` stops reading a switch (it is being restored) and
:meth:`TelemetryPoller.release` resumes with a fresh baseline (no interval spans the restart).

The module is split by concern: :mod:`~controller.telemetry.counters` (readings, deltas,
samples), :mod:`~controller.telemetry.series` (the time series),
:mod:`~controller.telemetry.counter_reader` (the P4Runtime reader); every name is re-exported here.

>>> a = PortReading(100, 64000, 0, 0, qdepth_bins=(100, 0, 0))
>>> b = PortReading(300, 192000, 5, 8, qdepth_bins=(250, 40, 10))
>>> d = delta(a, b); (d.tx_pkts, d.marks, d.max_qdepth)
(200, 5, 8)
>>> round(utilisation(d, dt_s=1.0, rate_pps=400.0, gbps=100.0), 3)
0.5
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from controller.telemetry.counter_reader import (DROPS_COUNTER, ECN_COUNTER, PFC_PRIORITIES, PFC_RX_COUNTER,
                                           PFC_TX_COUNTER, QDEPTH_HIST_COUNTER, RX_COUNTER, TX_COUNTER,
                                           Reader, connection_reader, p4rt_reader, qdepth_hist_index)
from controller.telemetry.counters import (QDEPTH_BIN_PKTS, QDEPTH_BINS, LinkId, LinkSample, PortReading,
                                     counter_reset, delta, qdepth_bin, qdepth_floor, utilisation)
from controller.telemetry.series import TelemetrySeries

log = logging.getLogger("controller.telemetry.poller")
DEFAULT_READ_TIMEOUT_S = 2.0
"""How long one poll waits for a switch's counters before marking it stale."""


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
                 clock: Callable[[], float] = time.monotonic,
                 read_timeout_s: float = DEFAULT_READ_TIMEOUT_S) -> None:
        self.readers, self.links, self.period_s, self.on_tick = readers, list(links), period_s, on_tick
        self.series = TelemetrySeries(max_samples=max_samples)
        self.errors: list[str] = []
        self.health: dict[str, SwitchHealth] = {sw: SwitchHealth() for sw in readers}
        self.loop_s = 0.0
        self.polls = 0
        self.read_timeout_s = read_timeout_s
        self.resets: dict[str, float] = {}          # switch → when its counters last went backwards
        self.held: set[str] = set()                 # switches not read (being restored)
        self._inflight: dict[str, Future[tuple[float, Mapping[int, PortReading]]]] = {}
        self._generation: dict[str, int] = {}       # bumped by release(): new connection
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

    def hold(self, switch: str) -> None:
        """Stop reading ``switch`` (it is being restored); it stays stale meanwhile.

        >>> poller.hold("b0r0l0"); poller.release("b0r0l0")       # doctest: +SKIP
        """
        self.held.add(switch)

    def release(self, switch: str, answered: bool = False) -> None:
        """Read ``switch`` again from the next poll, whose reading is a fresh baseline for
        its links (no interval spans the outage; counters restarted from zero).

        Reads started before this call went over the old connection: their outcome is
        ignored (a late "Channel closed" must not mark the restored switch stale again).
        ``answered=True`` (the switch was just restored) also clears its stale mark."""
        for pl in self._by_switch.get(switch, []):
            self._prev.pop(pl.link, None)
        self.resets.pop(switch, None)
        self._generation[switch] = self._generation.get(switch, 0) + 1
        self._inflight.pop(switch, None)
        if answered:
            h = self.health.get(switch)
            if h is not None and h.stale:
                h.stale_since_s = None
        self.held.discard(switch)

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

    def _timed_read(self, reader: Reader, ports: list[int]) -> tuple[float, Mapping[int, PortReading]]:
        """One switch's read and the time its counters were read: the middle of the read,
        as the switch took its snapshot somewhere between the request and the answer.
        Either end alone biases a rate by the read's whole latency on a loaded machine:
        the answer time of a read that took 0.5 s, followed by a quick one, makes the
        next interval 0.5 s too short and its rate several times too high."""
        sent = self._clock()
        got = reader(ports)
        return (sent + self._clock()) / 2, got

    def _read_all(self, now: float) -> dict[LinkId, tuple[float, PortReading]]:
        futures = {}
        generation: dict[str, int] = {}
        for sw, pls in self._by_switch.items():
            reader = self.readers.get(sw)
            if reader is None or sw in self.held:
                continue
            hung = self._inflight.get(sw)
            if hung is not None and not hung.done():
                self._failed(sw, TimeoutError(f"no answer for over {self.read_timeout_s:g} s"), now)
                continue
            generation[sw] = self._generation.get(sw, 0)      # before the read starts
            futures[sw] = self._inflight[sw] = self._pool.submit(
                self._timed_read, reader, [pl.link.port for pl in pls])
        out: dict[LinkId, tuple[float, PortReading]] = {}
        deadline = self._clock() + self.read_timeout_s
        for sw, fut in futures.items():
            try:
                read_at, got = fut.result(timeout=max(0.0, deadline - self._clock()))
            except FutureTimeout:
                if self._generation.get(sw, 0) == generation[sw]:
                    self._failed(sw, TimeoutError(f"no answer within {self.read_timeout_s:g} s"), now)
                continue
            except Exception as exc:  # noqa: BLE001 — one bad switch must not stop polling
                if self._generation.get(sw, 0) == generation[sw]:   # else: an old connection
                    self._failed(sw, exc, now)
                continue
            if self._generation.get(sw, 0) != generation[sw]:
                continue                    # read over the old connection: not a baseline
            self._answered(sw, now)
            for pl in self._by_switch[sw]:
                if pl.link.port in got:
                    out[pl.link] = (read_at, got[pl.link.port])
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
            got = readings.get(pl.link)
            if got is None:
                continue
            read_at, cur = got
            prev = self._prev.get(pl.link)
            self._prev[pl.link] = (read_at, cur)
            if prev is None or read_at <= prev[0]:
                continue
            dt = read_at - prev[0]          # between the switch's two answers
            reset = counter_reset(prev[1], cur)
            if reset:
                log.info("counters of %s went backwards: reset, counting from 0", pl.link)
                self.resets[pl.link.switch] = start
            d = delta(prev[1], cur)
            s = LinkSample(round(start - self._t0, 3), dt, d.tx_pkts, d.tx_bytes, d.marks,
                           d.max_qdepth, utilisation(d, dt, pl.rate_pps, pl.gbps),
                           d.rx_pkts, d.rx_bytes, d.drops, d.pfc_tx, d.pfc_rx,
                           utilisation(d, dt, pl.rate_pps, pl.gbps, rx=True), reset,
                           _without_empty_tail(d.qdepth_bins), pl.rate_pps)
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

    def elapsed_s(self) -> float:
        """Seconds since the first poll: the time base of ``on_tick``'s ``t_s``."""
        now = self._clock()
        return now - (self._t0 if self._t0 is not None else now)

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


def _without_empty_tail(bins: tuple[int, ...]) -> tuple[int, ...]:
    """``bins`` without its trailing empty bins (an idle interval: ``()``), so a long series
    keeps only the bins that counted something.

    >>> _without_empty_tail((5, 0, 2, 0, 0)), _without_empty_tail((0, 0))
    ((5, 0, 2), ())
    """
    n = len(bins)
    while n and not bins[n - 1]:
        n -= 1
    return bins[:n]


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
    "DEFAULT_READ_TIMEOUT_S", "DROPS_COUNTER", "ECN_COUNTER", "LinkId", "LinkSample", "PFC_PRIORITIES",
    "PFC_RX_COUNTER", "PFC_TX_COUNTER", "PolledLink", "PortReading", "QDEPTH_BINS", "QDEPTH_BIN_PKTS",
    "QDEPTH_HIST_COUNTER", "RX_COUNTER", "Reader", "SwitchHealth", "TX_COUNTER", "TelemetryPoller",
    "TelemetrySeries", "TickCallback", "connection_reader", "counter_reset", "delta", "fabric_links",
    "p4rt_reader", "qdepth_bin", "qdepth_floor", "qdepth_hist_index", "utilisation",
]
