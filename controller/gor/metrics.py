"""GOR's metrics, exposed with ``prometheus_client`` (text exposition format 0.0.4) on a
local HTTP port.

:class:`GorMetrics` keeps GOR's metric state under a lock; a custom collector on a
registry of its own (never the process-global one: several GORs, and tests, live in one
process) turns that state into metric families at each scrape, so the series appear
exactly as GOR knows them. :class:`MetricsServer` serves the registry
(:class:`controller.telemetry.exposition.RegistryServer`).

Metrics (``link`` is ``switch->peer``, one direction of a fabric link):

* ``gor_link_util_ratio`` (gauge) — utilisation of the link direction, last interval
* ``gor_link_rx_util_ratio`` (gauge) — the reverse direction as received at this port
* ``gor_link_max_qdepth_packets`` (gauge) — deepest egress queue in the last interval, at
  4-packet resolution (lower edge of the highest queue-depth bin that counted a packet)
* ``gor_link_ecn_marks_total`` (counter) — CE marks since GOR started
* ``gor_link_tx_packets_total`` (counter) — packets sent since GOR started
* ``gor_link_pfc_tx_frames_total`` (counter) — PFC frames sent on the port
* ``gor_link_pfc_rx_frames_total`` (counter) — PFC frames received on the port
* ``gor_link_drops_total`` (counter) — packets dropped in ingress from the port
* ``gor_alarm_level`` (gauge) — alarm level of the link (0 = none)
* ``gor_pause_storm`` (gauge) — 1 while the link direction is in a pause storm
  (:mod:`controller.gor.pause`; not re-routed)
* ``gor_link_down`` (gauge) — 1 while the link direction is out of service (an
  administrative event, or dead from the counters: :mod:`controller.gor.deadlinks`)
* ``gor_switch_stale`` (gauge) — 1 while the switch does not answer polls
* ``gor_agent_last_report_age_seconds`` (gauge, label ``host``) — seconds since the
  host's TCCL agent last reported to GOR
* ``gor_moves_total`` (counter) — orders by ``outcome`` (sent, confirmed, rolled_back, retried)
* ``gor_switch_reports_total`` (counter) — the switches' own reports by ``kind``: alarm and
  elephant digests taken, and those dropped as malformed or stale, and alarm reports
  overwritten in a switch before a packet carried them (:mod:`controller.gor.dataplane`)
* ``gor_loop_seconds`` (summary) — duration of a telemetry poll (``_sum``, ``_count``)
* ``gor_loop_last_seconds`` (gauge) — duration of the last poll

Per-link series carry the labels ``link``, ``switch``, ``port``, ``peer``, ``kind``.

>>> m = GorMetrics(); m.set_alarm("b0r0l0->s0", 2); m.count_move("sent")
>>> [l for l in m.render().splitlines() if l.startswith("gor_alarm_level{")]
['gor_alarm_level{link="b0r0l0->s0"} 2.0']
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily, Metric,
                                    SummaryMetricFamily)
from prometheus_client.registry import Collector

from controller.telemetry.exposition import RegistryServer

MOVE_OUTCOMES = ("sent", "confirmed", "rolled_back", "retried")
REPORT_KINDS = ("alarms", "elephants", "malformed", "stale", "overwritten")
LINK_LABELS = ("link", "switch", "port", "peer", "kind")


@dataclass(slots=True)
class _LinkState:
    """What the metrics keep per link direction."""

    switch: str
    port: int
    peer: str
    kind: str
    util: float = 0.0
    rx_util: float = 0.0
    max_qdepth: int = 0
    marks: int = 0
    tx_pkts: int = 0
    pfc_tx: int = 0
    pfc_rx: int = 0
    drops: int = 0


_LINK_METRICS = (
    # (name, type, help, attribute)
    ("gor_link_util_ratio", "gauge", "Utilisation of the link direction in the last interval.", "util"),
    ("gor_link_rx_util_ratio", "gauge", "Utilisation of the reverse direction, received at this port.", "rx_util"),
    ("gor_link_max_qdepth_packets", "gauge", "Deepest egress queue in the last interval (4-packet bins).", "max_qdepth"),
    ("gor_link_ecn_marks_total", "counter", "CE marks on the port since GOR started.", "marks"),
    ("gor_link_tx_packets_total", "counter", "Packets sent on the port since GOR started.", "tx_pkts"),
    ("gor_link_pfc_tx_frames_total", "counter", "PFC frames sent on the port since GOR started.", "pfc_tx"),
    ("gor_link_pfc_rx_frames_total", "counter", "PFC frames received on the port since GOR started.", "pfc_rx"),
    ("gor_link_drops_total", "counter", "Packets from the port dropped in ingress since GOR started.", "drops"),
)


def _family(kind: str, name: str, help_: str, labels: Iterable[str] = ()) -> Any:
    cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
    return cls(name, help_, labels=list(labels))


class _GorCollector(Collector):
    """Yields :class:`GorMetrics`' families from a copy of its state taken under its lock."""

    def __init__(self, snapshot: Callable[[], "_Snapshot"]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        s = self._snapshot()
        links = sorted(s.links.items())
        for name, kind, help_, attr in _LINK_METRICS:
            fam = _family(kind, name, help_, LINK_LABELS)
            for key, st in links:
                fam.add_metric([key, st.switch, str(st.port), st.peer, st.kind],
                               getattr(st, attr))
            yield fam
        for name, help_, label, values in (
                ("gor_alarm_level", "Alarm level of the link direction (0 = none).", "link", s.alarms),
                ("gor_pause_storm", "1 while the link direction is in a pause storm.", "link", s.pause),
                ("gor_link_down", "1 while the link direction is out of service.", "link", s.down),
                ("gor_switch_stale", "1 while the switch does not answer polls.", "switch", s.stale),
                ("gor_agent_last_report_age_seconds",
                 "Seconds since the host's TCCL agent last reported to GOR.", "host", s.agent_age)):
            fam = _family("gauge", name, help_, (label,))
            for key, v in sorted(values.items()):
                fam.add_metric([key], v)
            yield fam
        fam = _family("counter", "gor_moves_total", "Flow re-route orders by outcome.", ("outcome",))
        for outcome in MOVE_OUTCOMES:
            fam.add_metric([outcome], s.moves[outcome])
        yield fam
        fam = _family("counter", "gor_switch_reports_total",
                      "The switches' alarm and elephant reports by kind (taken, dropped).", ("kind",))
        for kind in REPORT_KINDS:
            fam.add_metric([kind], s.reports[kind])
        yield fam
        yield SummaryMetricFamily("gor_loop_seconds", "Duration of a telemetry poll.",
                                  count_value=s.loop_count, sum_value=s.loop_sum)
        yield GaugeMetricFamily("gor_loop_last_seconds", "Duration of the last telemetry poll.",
                                value=s.loop_last)


@dataclass(slots=True)
class _Snapshot:
    links: dict[str, _LinkState]
    alarms: dict[str, int]
    pause: dict[str, int]
    down: dict[str, int]
    stale: dict[str, int]
    agent_age: dict[str, float]
    moves: dict[str, int]
    reports: dict[str, int]
    loop_sum: float
    loop_count: int
    loop_last: float


class GorMetrics:
    """GOR's metric state (thread-safe); :attr:`registry` is its own
    ``prometheus_client`` registry and :meth:`render` the exposition text.

    Feed it from the telemetry loop (:meth:`observe_samples`, :meth:`observe_loop`,
    :meth:`set_switch_stale`), the alarm logic (:meth:`set_alarm`), the order logic
    (:meth:`count_move`) and the agent registry (:meth:`set_agent_age`).

    >>> from controller.telemetry.poller import LinkId, LinkSample
    >>> m = GorMetrics(); l = LinkId("b0r0l0", 3, "s0", "uplink")
    >>> m.observe_samples({l: LinkSample(1.0, 0.05, 100, 6400, 7, 12, 0.5)})
    >>> "gor_link_ecn_marks_total" in m.render()
    True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._links: dict[str, _LinkState] = {}
        self._alarms: dict[str, int] = {}
        self._stale: dict[str, int] = {}
        self._pause: dict[str, int] = {}
        self._down: dict[str, int] = {}
        self._agent_age: dict[str, float] = {}
        self._moves: dict[str, int] = {o: 0 for o in MOVE_OUTCOMES}
        self._reports: dict[str, int] = {k: 0 for k in REPORT_KINDS}
        self._loop_sum = 0.0
        self._loop_count = 0
        self._loop_last = 0.0
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_GorCollector(self._snapshot))

    def _snapshot(self) -> _Snapshot:
        with self._lock:
            links = {k: _LinkState(st.switch, st.port, st.peer, st.kind, st.util, st.rx_util,
                                   st.max_qdepth, st.marks, st.tx_pkts, st.pfc_tx, st.pfc_rx,
                                   st.drops) for k, st in self._links.items()}
            return _Snapshot(links, dict(self._alarms), dict(self._pause), dict(self._down),
                             dict(self._stale), dict(self._agent_age), dict(self._moves),
                             dict(self._reports), self._loop_sum, self._loop_count,
                             self._loop_last)

    def observe_samples(self, samples: Mapping[Any, Any]) -> None:
        """Take one interval of :class:`controller.telemetry.poller.LinkSample` per ``LinkId``."""
        with self._lock:
            for link, s in samples.items():
                st = self._links.get(str(link))
                if st is None:
                    st = self._links[str(link)] = _LinkState(link.switch, link.port, link.peer,
                                                             link.kind)
                st.util, st.rx_util, st.max_qdepth = s.util, s.rx_util, s.max_qdepth
                st.marks += s.marks
                st.tx_pkts += s.tx_pkts
                st.pfc_tx += s.pfc_tx
                st.pfc_rx += s.pfc_rx
                st.drops += s.drops

    def set_alarm(self, link: Any, level: int) -> None:
        """The alarm level of ``link`` (0 clears it; the series stays at 0)."""
        with self._lock:
            self._alarms[str(link)] = int(level)

    def set_pause_storm(self, link: Any, storm: bool) -> None:
        """Whether ``link`` is in a pause storm (the series stays at 0 once cleared)."""
        with self._lock:
            self._pause[str(link)] = 1 if storm else 0

    def set_link_down(self, link: Any, down: bool) -> None:
        """Whether ``link`` is out of service."""
        with self._lock:
            self._down[str(link)] = 1 if down else 0

    def set_switch_stale(self, switch: str, stale: bool) -> None:
        """Whether ``switch`` answers its polls."""
        with self._lock:
            self._stale[switch] = 1 if stale else 0

    def set_agent_age(self, host: str, seconds: float) -> None:
        """Seconds since ``host``'s TCCL agent last reported to GOR
        (``gor_agent_last_report_age_seconds{host}``).

        >>> m = GorMetrics(); m.set_agent_age("b0s0", 1.5)
        >>> 'gor_agent_last_report_age_seconds{host="b0s0"} 1.5' in m.render()
        True
        """
        with self._lock:
            self._agent_age[host] = float(seconds)

    def count_move(self, outcome: str, n: int = 1) -> None:
        """Count orders by ``outcome`` (one of :data:`MOVE_OUTCOMES`)."""
        if outcome not in MOVE_OUTCOMES:
            raise ValueError(f"unknown move outcome {outcome!r}")
        with self._lock:
            self._moves[outcome] += n

    def set_reports(self, counts: Mapping[str, int]) -> None:
        """The running totals of the switches' reports (:data:`REPORT_KINDS`)."""
        with self._lock:
            for kind in REPORT_KINDS:
                self._reports[kind] = int(counts.get(kind, 0))

    def observe_loop(self, seconds: float) -> None:
        """Duration of one telemetry poll (or GOR loop iteration)."""
        with self._lock:
            self._loop_sum += seconds
            self._loop_count += 1
            self._loop_last = seconds

    def render(self) -> str:
        """The exposition text: ``# HELP`` / ``# TYPE`` then samples, ending in a newline."""
        return generate_latest(self.registry).decode("utf-8")


class MetricsServer(RegistryServer):
    """Serves a :class:`GorMetrics` on ``http://HOST:PORT/metrics`` (``port=0``: a free
    port; see :attr:`url`). Lifetime: :meth:`start` … :meth:`stop` or a context manager.

    >>> with MetricsServer(GorMetrics(), port=0) as srv:           # doctest: +SKIP
    ...     print(srv.url)
    http://127.0.0.1:41233/metrics
    """

    def __init__(self, metrics: GorMetrics, host: str = "127.0.0.1", port: int = 9464) -> None:
        self.metrics = metrics
        super().__init__(metrics.registry, host, port, name="gor-metrics")

    def __enter__(self) -> "MetricsServer":
        self.start()
        return self


__all__ = ["GorMetrics", "LINK_LABELS", "MOVE_OUTCOMES", "MetricsServer", "REPORT_KINDS"]
