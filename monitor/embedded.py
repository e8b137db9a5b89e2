"""The embedded metric store: where Prometheus is absent, monitoring scrapes the exporters
itself and answers the same queries (:class:`monitor.prometheus.MetricSource`).

:class:`EmbeddedStore` scrapes every target on one background thread every
``scrape_interval_s`` (``urllib``, parsed with ``prometheus_client.parser``), keeps the
last ``retention_s`` of samples of every series in a ring, and adds the labels
Prometheus adds (``job``, ``instance``) and the ``up`` series of each target. As in
Prometheus, a target whose scrape fails is down and its series are stale (no latest
value) until it answers again; the samples already in the ring still count for
:meth:`~EmbeddedStore.rates` and :meth:`~EmbeddedStore.max_over`. A target that goes
down, and one that comes back, are said once on stderr.

>>> store = EmbeddedStore({"gor": ["127.0.0.1:9464"]}).start()        # doctest: +SKIP
>>> store.values("gor_alarm_level", link="b0r0l0->s0")                # doctest: +SKIP
[({'instance': '127.0.0.1:9464', 'job': 'gor', 'link': 'b0r0l0->s0'}, 2.0)]
>>> increase([(0.0, 5.0), (1.0, 9.0), (2.0, 3.0)])                  # a reset: 4 + 3
7.0
"""
from __future__ import annotations

import collections
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Mapping, Optional, Sequence

from prometheus_client.parser import text_string_to_metric_families

from monitor.promql import Series, selector

SeriesKey = tuple[str, tuple[tuple[str, str], ...]]
"""A series: its metric name and sorted labels (``job`` and ``instance`` included)."""

SCRAPE_TIMEOUT_MAX_S = 2.0
ACCEPT = "text/plain;version=0.0.4;q=1,*/*;q=0.1"


def increase(points: Sequence[tuple[float, float]]) -> float:
    """How much a counter grew over ``points`` (time, value), counter resets handled as
    Prometheus does (a drop means the counter restarted from 0).

    >>> increase([(0.0, 1.0), (1.0, 4.0)])
    3.0
    """
    total = 0.0
    for (_, a), (_, b) in zip(points, points[1:]):
        total += b - a if b >= a else b
    return total


def _matches(labels: Mapping[str, str], label_filter: Mapping[str, str]) -> bool:
    return all(labels.get(k) == str(v) for k, v in label_filter.items())


def fetch_text(url: str, timeout_s: float) -> str:
    """The exposition text at ``url`` (``OSError``/``URLError`` when it does not answer)."""
    req = urllib.request.Request(url, headers={"Accept": ACCEPT})
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 — local URL
        return resp.read().decode("utf-8", errors="replace")


class EmbeddedStore:
    """Scrapes ``targets`` (job → ``host:port`` list, ``/metrics`` on each) itself; a
    :class:`monitor.prometheus.MetricSource` (see the module docstring).

    ``clock`` and ``fetch`` are injectable for tests; :meth:`scrape_once` does one round
    without the thread.

    >>> texts = {"http://a:1/metrics": "x_total 1\\n"}
    >>> t = iter([0.0, 1.0, 2.0])
    >>> st = EmbeddedStore({"j": ["a:1"]}, clock=lambda: next(t),
    ...                    fetch=lambda url, timeout_s: texts[url])
    >>> st.scrape_once(); texts["http://a:1/metrics"] = "x_total 3\\n"; st.scrape_once()
    >>> st.values("x_total")
    [({'instance': 'a:1', 'job': 'j'}, 3.0)]
    >>> st.rates("x_total", 10.0)
    [({'instance': 'a:1', 'job': 'j'}, 2.0)]
    """

    kind = "embedded"

    def __init__(self, targets: Mapping[str, Sequence[str]], scrape_interval_s: float = 1.0,
                 retention_s: float = 120.0, *, clock: Callable[[], float] = time.monotonic,
                 fetch: Callable[[str, float], str] = fetch_text,
                 log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> None:
        if not scrape_interval_s > 0:
            raise ValueError(f"scrape interval must be positive, got {scrape_interval_s!r} s")
        self.targets = {job: list(addrs) for job, addrs in targets.items()}
        self.scrape_interval_s = scrape_interval_s
        self.retention_s = retention_s
        self._clock, self._fetch, self._log = clock, fetch, log
        depth = int(retention_s / scrape_interval_s) + 2
        self._ring: dict[SeriesKey, collections.deque[tuple[float, float]]] = \
            collections.defaultdict(lambda: collections.deque(maxlen=depth))
        self._current: dict[tuple[str, str], set[SeriesKey]] = {}   # live series per target
        self._up: dict[tuple[str, str], bool] = {}
        self._said: dict[tuple[str, str], bool] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.scrapes = 0

    # ------------------------------------------------------------------ scraping
    def _scrape_target(self, job: str, addr: str) -> tuple[Optional[list[tuple[str, dict[str, str], float]]], str]:
        try:
            text = self._fetch(f"http://{addr}/metrics",
                               min(self.scrape_interval_s, SCRAPE_TIMEOUT_MAX_S))
            out = [(s.name, dict(s.labels), float(s.value))
                   for fam in text_string_to_metric_families(text) for s in fam.samples]
            return out, ""
        except Exception as exc:  # noqa: BLE001 — any failure: the target is down
            return None, f"{type(exc).__name__}: {exc}"

    def scrape_once(self) -> None:
        """Scrape every target once (in parallel) and store what they gave."""
        pairs = [(job, addr) for job, addrs in self.targets.items() for addr in addrs]
        if not pairs:
            return
        with ThreadPoolExecutor(max_workers=min(8, len(pairs))) as pool:
            results = list(pool.map(lambda p: self._scrape_target(*p), pairs))
        now = self._clock()
        with self._lock:
            for (job, addr), (samples, why) in zip(pairs, results):
                target = (job, addr)
                up = samples is not None
                self._store(("up", (("instance", addr), ("job", job))), now, 1.0 if up else 0.0)
                live = {("up", (("instance", addr), ("job", job)))}
                for name, labels, value in samples or ():
                    labels.setdefault("job", job)
                    labels.setdefault("instance", addr)
                    key = (name, tuple(sorted(labels.items())))
                    self._store(key, now, value)
                    live.add(key)
                self._current[target] = live
                self._up[target] = up
                if self._said.get(target, True) != up:
                    self._log(f"monitor: scrape target {job}/{addr} is "
                              + ("up again" if up else f"down ({why}); going on without it"))
                self._said[target] = up
            self.scrapes += 1

    def _store(self, key: SeriesKey, now: float, value: float) -> None:
        self._ring[key].append((now, value))

    def _run(self) -> None:
        next_at = self._clock()
        while not self._stop.is_set():
            self.scrape_once()
            next_at += self.scrape_interval_s
            self._stop.wait(max(0.0, next_at - self._clock()))   # the scrape period

    def start(self) -> "EmbeddedStore":
        """Scrape on a daemon thread until :meth:`close`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="embedded-scraper",
                                            daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop scraping (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    stop = close

    def __enter__(self) -> "EmbeddedStore":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ queries
    def _series(self, metric: str, label_filter: Mapping[str, str],
                live_only: bool) -> Iterable[tuple[dict[str, str], list[tuple[float, float]]]]:
        selector(metric, **label_filter)              # the same name checks as Prometheus
        with self._lock:
            live = set().union(*self._current.values()) if live_only else None
            found = [(dict(k[1]), list(ring)) for k, ring in self._ring.items()
                     if k[0] == metric and (live is None or k in live)]
        return [(labels, pts) for labels, pts in found if _matches(labels, label_filter)]

    def _window(self, points: list[tuple[float, float]], window_s: float) -> list[tuple[float, float]]:
        if not window_s > 0:
            raise ValueError(f"window must be positive, got {window_s!r} s")
        since = self._clock() - window_s
        return [p for p in points if p[0] >= since]

    def values(self, metric: str, **label_filter: str) -> list[Series]:
        return sorted(((labels, pts[-1][1]) for labels, pts in
                       self._series(metric, label_filter, live_only=True) if pts),
                      key=lambda s: sorted(s[0].items()))

    def rates(self, metric: str, window_s: float, **label_filter: str) -> list[Series]:
        out = []
        for labels, pts in self._series(metric, label_filter, live_only=False):
            pts = self._window(pts, window_s)
            if len(pts) >= 2 and pts[-1][0] > pts[0][0]:
                out.append((labels, increase(pts) / (pts[-1][0] - pts[0][0])))
        return sorted(out, key=lambda s: sorted(s[0].items()))

    def rates_many(self, metrics: Sequence[str], window_s: float) -> dict[str, list[Series]]:
        return {m: self.rates(m, window_s) for m in dict.fromkeys(metrics)}

    def read_many(self, values: Sequence[str], rates: Sequence[str], window_s: float,
                  ) -> tuple[dict[str, list[Series]], dict[str, list[Series]]]:
        return {m: self.values(m) for m in dict.fromkeys(values)}, self.rates_many(rates, window_s)

    def max_over(self, metric: str, window_s: float, **label_filter: str) -> list[Series]:
        out = []
        for labels, pts in self._series(metric, label_filter, live_only=False):
            pts = self._window(pts, window_s)
            if pts:
                out.append((labels, max(v for _, v in pts)))
        return sorted(out, key=lambda s: sorted(s[0].items()))

    def targets_up(self) -> dict[str, bool]:
        with self._lock:
            return {f"{job}/{addr}": self._up.get((job, addr), False)
                    for job, addrs in self.targets.items() for addr in addrs}

    def wait_scraped(self, job: str, deadline: float) -> bool:
        pause = threading.Event()
        while True:
            up = {k: v for k, v in self.targets_up().items() if k.startswith(job + "/")}
            if up and all(up.values()):
                return True
            if time.monotonic() >= deadline:
                return False
            pause.wait(min(0.05, max(0.0, deadline - time.monotonic())))


__all__ = ["EmbeddedStore", "SeriesKey", "fetch_text", "increase"]
