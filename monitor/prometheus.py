"""The run's time-series store: a real Prometheus server started for the run, or, where
Prometheus is absent, the embedded scraper (:class:`monitor.embedded.EmbeddedStore`) —
both answering the same small query interface, :class:`MetricSource`.

* :class:`PrometheusServer` writes ``RUN_DIR/prometheus.yml`` (one scrape job per
  exporter kind), starts the ``prometheus`` binary on a free ``127.0.0.1`` port with
  its TSDB under ``RUN_DIR/prometheus-data`` and its output in ``RUN_DIR/prometheus.log``,
  waits until ``/-/ready`` answers (bounded), and stops it by the PID it recorded. Its
  queries use the HTTP API (``/api/v1/query``, ``/api/v1/targets``).
* :func:`open_metric_source` starts Prometheus if it is installed and falls back to the
  embedded store otherwise, saying once on stderr which one it uses and why.

Every series carries ``job`` and ``instance`` (the target's ``host:port``), as Prometheus
adds them; ``__name__`` is left out of the labels returned.

>>> src = open_metric_source(run_dir, {"switches": ["127.0.0.1:9101"]})   # doctest: +SKIP
monitor: metrics in Prometheus 2.42.0 at http://127.0.0.1:40411 (run_dir/prometheus.yml)
>>> src.rates("astral_switch_port_tx_packets_total", 5.0)                  # doctest: +SKIP
[({'instance': '127.0.0.1:9101', 'job': 'switches', 'switch': 's0', ...}, 812.4), ...]
>>> selector("up", job="switches")
'up{job="switches"}'
"""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import IO, Any, Mapping, Optional, Protocol, Sequence, runtime_checkable

from monitor.embedded import EmbeddedStore
from monitor.promql import LABEL_RE, Series, selector
from process import stop_process

READY_TIMEOUT_S = 30.0
QUERY_TIMEOUT_S = 5.0
_TAG = "astral_metric"          # the label rates_many() tags each metric's series with


class PrometheusUnavailable(RuntimeError):
    """The ``prometheus`` binary is not installed (use the embedded store instead)."""


class PrometheusStartError(RuntimeError):
    """Prometheus was found but did not start or become ready (its log says why)."""


@runtime_checkable
class MetricSource(Protocol):
    """What monitoring reads metrics from: a :class:`PrometheusServer` or an
    :class:`monitor.embedded.EmbeddedStore`. Label filters match label values exactly."""

    kind: str
    """``"prometheus"`` or ``"embedded"``."""

    def values(self, metric: str, **label_filter: str) -> list[Series]:
        """The latest value of every series of ``metric`` (targets that are down: none)."""
        ...

    def rates(self, metric: str, window_s: float, **label_filter: str) -> list[Series]:
        """Per-second increase of counter ``metric`` over the last ``window_s`` seconds
        (counter resets handled; series with fewer than two samples in it: none)."""
        ...

    def rates_many(self, metrics: Sequence[str], window_s: float) -> dict[str, list[Series]]:
        """:meth:`rates` of several counters at once (one query where the store can):
        metric → its series (every metric given is a key)."""
        ...

    def read_many(self, values: Sequence[str], rates: Sequence[str], window_s: float,
                  ) -> tuple[dict[str, list[Series]], dict[str, list[Series]]]:
        """:meth:`values` of ``values`` and :meth:`rates` of ``rates``, in one query where
        the store can: ``(metric → latest series, counter → rate series)``."""
        ...

    def max_over(self, metric: str, window_s: float, **label_filter: str) -> list[Series]:
        """The largest value of every series of ``metric`` over the last ``window_s``."""
        ...

    def targets_up(self) -> dict[str, bool]:
        """``"job/instance"`` → whether its last scrape succeeded."""
        ...

    def wait_scraped(self, job: str, deadline: float) -> bool:
        """Wait until every target of ``job`` was scraped successfully, at most until
        ``deadline`` (``time.monotonic()`` seconds); False when it passed first."""
        ...

    def close(self) -> None:
        """Stop scraping (and the server)."""
        ...


def _window(window_s: float) -> str:
    if not window_s > 0:
        raise ValueError(f"window must be positive, got {window_s!r} s")
    return f"{max(1, int(round(window_s * 1000)))}ms"


def scrape_config(targets: Mapping[str, Sequence[str]], scrape_interval_s: float) -> str:
    """``prometheus.yml`` for ``targets`` (job → ``host:port`` list), scraped every
    ``scrape_interval_s`` (timeout the same). JSON-style YAML: values quoted.

    >>> print(scrape_config({"gor": ["127.0.0.1:9464"]}, 1.0))
    global:
      scrape_interval: "1000ms"
      scrape_timeout: "1000ms"
    scrape_configs:
      - job_name: "gor"
        static_configs:
          - targets: ["127.0.0.1:9464"]
    """
    every = _window(scrape_interval_s)
    lines = ["global:", f'  scrape_interval: "{every}"', f'  scrape_timeout: "{every}"',
             "scrape_configs:"]
    for job, addrs in targets.items():
        if not LABEL_RE.match(job):
            raise ValueError(f"job name {job!r} must be a label-like name (letters, digits, _)")
        lines += [f"  - job_name: {json.dumps(job)}", "    static_configs:",
                  f"      - targets: {json.dumps(list(addrs))}"]
    return "\n".join(lines)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether ``port`` can be bound on ``host`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def find_binary(binary: str) -> str:
    """The path of the Prometheus ``binary`` (a name on ``PATH`` or a path);
    :class:`PrometheusUnavailable` naming it when absent."""
    path = shutil.which(binary)
    if path is None:
        raise PrometheusUnavailable(f"Prometheus is not installed: no {binary!r} on PATH "
                                    "(Debian: apt-get install prometheus)")
    return path


class PrometheusServer:
    """A Prometheus server for one run (see the module docstring); a :class:`MetricSource`.

    ``port=0`` picks a free port; a given port that is taken is said on stderr and another
    one is picked. :meth:`start` raises :class:`PrometheusUnavailable` when the binary is
    absent, :class:`PrometheusStartError` (with the log's last lines) when it does not
    become ready within ``ready_timeout_s``.

    >>> with PrometheusServer(run_dir, {"gor": ["127.0.0.1:9464"]}) as prom:  # doctest: +SKIP
    ...     prom.wait_scraped("gor", time.monotonic() + 10)
    True
    """

    kind = "prometheus"

    def __init__(self, run_dir: Path, scrape_targets: Mapping[str, Sequence[str]],
                 scrape_interval_s: float = 1.0, binary: str = "prometheus", *,
                 port: int = 0, ready_timeout_s: float = READY_TIMEOUT_S,
                 retention: str = "1d") -> None:
        self.run_dir = Path(run_dir)
        self.targets = {job: list(addrs) for job, addrs in scrape_targets.items()}
        self.scrape_interval_s = scrape_interval_s
        self.binary = binary
        self.port = port
        self.ready_timeout_s = ready_timeout_s
        self.retention = retention
        self.config_path = self.run_dir / "prometheus.yml"
        self.log_path = self.run_dir / "prometheus.log"
        self.data_dir = self.run_dir / "prometheus-data"
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.pid: Optional[int] = None
        self._log: Optional[IO[bytes]] = None

    @property
    def url(self) -> str:
        """The server's base URL (``http://127.0.0.1:PORT``)."""
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------ lifetime
    def start(self) -> "PrometheusServer":
        """Write the config, start the binary and wait until it is ready."""
        path = find_binary(self.binary)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(scrape_config(self.targets, self.scrape_interval_s) + "\n")
        if self.port and not port_free(self.port):
            print(f"monitor: port {self.port} for Prometheus is taken; using another",
                  file=sys.stderr)
            self.port = 0
        for attempt in range(3):           # a free port can be taken between look and bind
            port = self.port or free_port()
            self._log = open(self.log_path, "ab")
            self.proc = subprocess.Popen(
                [path, f"--config.file={self.config_path}",
                 f"--web.listen-address=127.0.0.1:{port}",
                 f"--storage.tsdb.path={self.data_dir}",
                 f"--storage.tsdb.retention.time={self.retention}"],
                stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            self.pid, self.port = self.proc.pid, port
            (self.run_dir / "prometheus.pid").write_text(f"{self.pid}\n")
            if self._wait_ready():
                return self
            taken = "address already in use" in self._log_tail().lower()
            self.stop()
            if not taken or attempt == 2:
                break
            print(f"monitor: port {port} for Prometheus was taken; trying another",
                  file=sys.stderr)
            self.port = 0
        raise PrometheusStartError(f"Prometheus did not become ready within "
                                   f"{self.ready_timeout_s:g} s; {self.log_path} ends with:\n"
                                   f"{self._log_tail()}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self.ready_timeout_s
        pause = threading.Event()
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1.0) as resp:
                    if resp.status == 200:
                        return True
            except (OSError, urllib.error.URLError):
                pass
            pause.wait(0.1)               # poll again; the deadline bounds the wait
        return False

    def _log_tail(self, lines: int = 8) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the server by its recorded process (idempotent)."""
        if self.proc is not None:
            stop_process(self.proc, timeout_s=10.0)
            self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    close = stop

    def __enter__(self) -> "PrometheusServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ queries
    def _get(self, path: str, **params: str) -> Any:
        url = f"{self.url}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        try:
            with urllib.request.urlopen(url, timeout=QUERY_TIMEOUT_S) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as exc:
            try:
                body = json.load(exc)
            except ValueError:
                raise RuntimeError(f"Prometheus {path}: HTTP {exc.code}") from None
        if body.get("status") != "success":
            raise ValueError(f"Prometheus {path} {params}: {body.get('errorType')}: "
                             f"{body.get('error')}")
        return body["data"]

    def instant(self, promql: str) -> list[Series]:
        """An instant query: each series' labels (no ``__name__``) and value."""
        data = self._get("/api/v1/query", query=promql)
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        if data["resultType"] != "vector":
            raise ValueError(f"{promql!r} gives a {data['resultType']}, not an instant vector")
        return [({k: v for k, v in r["metric"].items() if k != "__name__"},
                 float(r["value"][1])) for r in data["result"]]

    def values(self, metric: str, **label_filter: str) -> list[Series]:
        return self.instant(selector(metric, **label_filter))

    def rates(self, metric: str, window_s: float, **label_filter: str) -> list[Series]:
        return self.instant(f"rate({selector(metric, **label_filter)}[{_window(window_s)}])")

    def rates_many(self, metrics: Sequence[str], window_s: float) -> dict[str, list[Series]]:
        return self.read_many((), metrics, window_s)[1]

    def read_many(self, values: Sequence[str], rates: Sequence[str], window_s: float,
                  ) -> tuple[dict[str, list[Series]], dict[str, list[Series]]]:
        # one query: each part tagged with what it is (rate() drops __name__), the tagged
        # vectors joined by 'or' (the tags keep their label sets apart)
        vals: dict[str, list[Series]] = {m: [] for m in dict.fromkeys(values)}
        rts: dict[str, list[Series]] = {m: [] for m in dict.fromkeys(rates)}
        parts = [(f"v:{m}", selector(m)) for m in vals]
        w = _window(window_s)
        parts += [(f"r:{m}", f"rate({selector(m)}[{w}])") for m in rts]
        if not parts:
            return vals, rts
        query = " or ".join(f'label_replace({expr}, "{_TAG}", "{tag}", "job", ".*")'
                            for tag, expr in parts)
        for labels, value in self.instant(query):
            tag = labels.pop(_TAG, "")
            kind, _, metric = tag.partition(":")
            into = vals if kind == "v" else rts if kind == "r" else None
            if into is not None and metric in into:
                into[metric].append((labels, value))
        return vals, rts

    def max_over(self, metric: str, window_s: float, **label_filter: str) -> list[Series]:
        return self.instant(f"max_over_time({selector(metric, **label_filter)}"
                            f"[{_window(window_s)}])")

    def targets_up(self) -> dict[str, bool]:
        data = self._get("/api/v1/targets", state="active")
        return {f"{t['labels']['job']}/{t['labels']['instance']}": t["health"] == "up"
                for t in data["activeTargets"]}

    def wait_scraped(self, job: str, deadline: float) -> bool:
        pause = threading.Event()
        while True:
            up = {k: v for k, v in self.targets_up().items() if k.startswith(job + "/")}
            if up and all(up.values()):
                return True
            if time.monotonic() >= deadline:
                return False
            pause.wait(min(0.1, max(0.0, deadline - time.monotonic())))


def open_metric_source(run_dir: Path, targets: Mapping[str, Sequence[str]],
                       prefer: str = "prometheus", scrape_interval_s: float = 1.0,
                       binary: str = "prometheus") -> MetricSource:
    """A started :class:`MetricSource` for ``targets``: Prometheus when ``prefer`` is
    ``"prometheus"`` and it starts, the embedded store otherwise (said once on stderr).

    >>> import tempfile
    >>> src = open_metric_source(Path(tempfile.mkdtemp()), {}, binary="no-such-prometheus")
    >>> src.kind
    'embedded'
    >>> src.close()
    """
    if prefer not in ("prometheus", "embedded"):
        raise ValueError(f"prefer must be 'prometheus' or 'embedded', not {prefer!r}")
    why = "asked for the embedded store"
    if prefer == "prometheus":
        try:
            prom = PrometheusServer(run_dir, targets, scrape_interval_s, binary).start()
            print(f"monitor: metrics in Prometheus at {prom.url} (pid {prom.pid}, "
                  f"config {prom.config_path})", file=sys.stderr)
            return prom
        except (PrometheusUnavailable, PrometheusStartError, OSError) as exc:
            why = str(exc).splitlines()[0]
    store = EmbeddedStore(targets, scrape_interval_s).start()
    print(f"monitor: metrics in the embedded store ({why})", file=sys.stderr)
    return store


__all__ = ["EmbeddedStore", "MetricSource", "PrometheusServer", "PrometheusStartError", "PrometheusUnavailable",
           "Series", "find_binary", "free_port", "open_metric_source", "port_free",
           "scrape_config", "selector"]
