"""GOR's metrics in the Prometheus text exposition format (version 0.0.4), served on a local
HTTP port by a stdlib ``http.server`` thread.

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
* ``gor_moves_total`` (counter) — orders by ``outcome`` (sent, confirmed, rolled_back, retried)
* ``gor_switch_reports_total`` (counter) — the switches' own reports by ``kind``: alarm and
  elephant digests taken, and those dropped as malformed or stale, and alarm reports
  overwritten in a switch before a packet carried them (:mod:`controller.gor.dataplane`)
* ``gor_loop_seconds`` (summary) — duration of a telemetry poll (``_sum``, ``_count``)
* ``gor_loop_last_seconds`` (gauge) — duration of the last poll

>>> m = GorMetrics(); m.set_alarm("b0r0l0->s0", 2); m.count_move("sent")
>>> [l for l in m.render().splitlines() if l.startswith("gor_alarm_level{")]
['gor_alarm_level{link="b0r0l0->s0"} 2']
"""
from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping, Optional

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MOVE_OUTCOMES = ("sent", "confirmed", "rolled_back", "retried")
REPORT_KINDS = ("alarms", "elephants", "malformed", "stale", "overwritten")


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


def _escape(value: str) -> str:
    """A label value escaped as the text format requires (backslash, quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _num(value: float) -> str:
    """A sample value in the text format (``+Inf``, ``NaN``, integers without ``.0``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _labels(**labels: Any) -> str:
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items()) + "}"


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


class GorMetrics:
    """GOR's metric state (thread-safe); :meth:`render` gives the exposition text.

    Feed it from the telemetry loop (:meth:`observe_samples`, :meth:`observe_loop`,
    :meth:`set_switch_stale`), the alarm logic (:meth:`set_alarm`) and the order logic
    (:meth:`count_move`).

    >>> from controller.gor.telemetry import LinkId, LinkSample
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
        self._moves: dict[str, int] = {o: 0 for o in MOVE_OUTCOMES}
        self._reports: dict[str, int] = {k: 0 for k in REPORT_KINDS}
        self._loop_sum = 0.0
        self._loop_count = 0
        self._loop_last = 0.0

    def observe_samples(self, samples: Mapping[Any, Any]) -> None:
        """Take one interval of :class:`controller.gor.telemetry.LinkSample` per ``LinkId``."""
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
        out: list[str] = []

        def family(name: str, kind: str, help_: str) -> None:
            out.append(f"# HELP {name} {help_}")
            out.append(f"# TYPE {name} {kind}")

        with self._lock:
            links = sorted(self._links.items())
            for name, kind, help_, attr in _LINK_METRICS:
                family(name, kind, help_)
                for key, st in links:
                    lab = _labels(link=key, switch=st.switch, port=st.port, peer=st.peer,
                                  kind=st.kind)
                    out.append(f"{name}{lab} {_num(getattr(st, attr))}")
            family("gor_alarm_level", "gauge", "Alarm level of the link direction (0 = none).")
            for key, level in sorted(self._alarms.items()):
                out.append(f"gor_alarm_level{_labels(link=key)} {level}")
            family("gor_pause_storm", "gauge", "1 while the link direction is in a pause storm.")
            for key, v in sorted(self._pause.items()):
                out.append(f"gor_pause_storm{_labels(link=key)} {v}")
            family("gor_link_down", "gauge", "1 while the link direction is out of service.")
            for key, v in sorted(self._down.items()):
                out.append(f"gor_link_down{_labels(link=key)} {v}")
            family("gor_switch_stale", "gauge", "1 while the switch does not answer polls.")
            for sw, v in sorted(self._stale.items()):
                out.append(f"gor_switch_stale{_labels(switch=sw)} {v}")
            family("gor_moves_total", "counter", "Flow re-route orders by outcome.")
            for outcome in MOVE_OUTCOMES:
                out.append(f"gor_moves_total{_labels(outcome=outcome)} {self._moves[outcome]}")
            family("gor_switch_reports_total", "counter",
                   "The switches' alarm and elephant reports by kind (taken, dropped).")
            for kind in REPORT_KINDS:
                out.append(f"gor_switch_reports_total{_labels(kind=kind)} {self._reports[kind]}")
            family("gor_loop_seconds", "summary", "Duration of a telemetry poll.")
            out.append(f"gor_loop_seconds_sum {_num(self._loop_sum)}")
            out.append(f"gor_loop_seconds_count {self._loop_count}")
            family("gor_loop_last_seconds", "gauge", "Duration of the last telemetry poll.")
            out.append(f"gor_loop_last_seconds {_num(self._loop_last)}")
        return "\n".join(out) + "\n"


# ---------------------------------------------------------------------- parsing
_SAMPLE_RE = re.compile(
    r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)'
    r'(?:\{(?P<labels>(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
    r'(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*)?,?)\})?'
    r' (?P<value>[-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf|NaN))'
    r'(?: -?[0-9]+)?$')
_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\.)*)"')
_META_RE = re.compile(r'^# (?:HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|'
                      r'TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (?:counter|gauge|histogram|summary|untyped))$')


@dataclass(frozen=True, slots=True)
class Sample:
    """One parsed sample line.

    >>> parse_metrics('x{a="1"} 2\\n')[0].labels["a"]
    '1'
    """

    name: str
    labels: dict[str, str]
    value: float


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def parse_metrics(text: str) -> list[Sample]:
    """Parse exposition text; raises ``ValueError`` naming the first invalid line.

    >>> [s.value for s in parse_metrics("# TYPE a gauge\\na 1.5\\n")]
    [1.5]
    """
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.startswith("#"):
            if line.startswith(("# HELP ", "# TYPE ")) and not _META_RE.match(line):
                raise ValueError(f"metrics line {n}: bad comment: {line!r}")
            continue
        m = _SAMPLE_RE.match(line)
        if m is None:
            raise ValueError(f"metrics line {n}: not a sample: {line!r}")
        labels = {k: _unescape(v) for k, v in _LABEL_RE.findall(m.group("labels") or "")}
        out.append(Sample(m.group("name"), labels, float(m.group("value").replace("Inf", "inf"))))
    return out


# ---------------------------------------------------------------------- HTTP
class MetricsServer:
    """Serves ``metrics.render()`` on ``http://HOST:PORT/metrics`` from a daemon thread
    (``port=0`` picks a free port; see :attr:`url`). Lifetime: :meth:`start` … :meth:`stop`
    or a context manager.

    >>> with MetricsServer(GorMetrics(), port=0) as srv:           # doctest: +SKIP
    ...     print(srv.url)
    http://127.0.0.1:41233/metrics
    """

    def __init__(self, metrics: GorMetrics, host: str = "127.0.0.1", port: int = 9464) -> None:
        self.metrics = metrics
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 — the stdlib's name
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404)
                    return
                body = owner.metrics.render().encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return  # scrapes every few seconds must not flood stderr

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        """The scrape URL."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/metrics"

    def start(self) -> None:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="gor-metrics", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> "MetricsServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["CONTENT_TYPE", "GorMetrics", "MOVE_OUTCOMES", "MetricsServer", "Sample",
           "parse_metrics"]
