"""Exporters for what monitoring collects: the switches' counters and liveness
(:class:`SwitchExporter`, in :mod:`monitor.switch_exporter`) and the metric files other
processes write — the NIC emulators (``python -m host.nic … --metrics-file``,
:mod:`host.nic.metricsfile`), the probers — served together by :class:`TextfileExporter`.

:class:`TextfileExporter` serves, on one HTTP port, the union of every ``*.prom`` file of a
directory, read at each scrape (the writers replace their file atomically, as
``prometheus_client.write_to_textfile`` does, so a scrape sees a whole file). A file that
does not parse is skipped, said once on stderr and counted in
``astral_textfile_errors_total{file}``; ``astral_textfile_age_seconds{file}`` is the time
since each file was last written (a writer that died stops refreshing it). Every series
gets the label ``source`` = the file's name without ``.prom`` (two NIC processes on one
interface, or two probers' unlabelled counters, stay two series; sum over ``source`` for
a NIC's total); a family found in several files is served once with every file's series.
A family whose type differs from the first file's is skipped and counted as an error.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "a.prom").write_text('# TYPE x_total counter\\nx_total{nic="a"} 3\\n')
>>> _ = (d / "b.prom").write_text('x_total{nic="b"} oops\\n')
>>> exp = TextfileExporter(d, log=lambda m: None)
>>> [l for l in exp.render().splitlines() if l.startswith(("x_total", "astral_textfile_errors"))]
['x_total{nic="a",source="a"} 3.0', 'astral_textfile_errors_total{file="b.prom"} 1.0']
"""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from controller.telemetry.exposition import RegistryServer
from monitor.switch_exporter import (PORT_COUNTERS, SwitchExporter, SwitchReader, SwitchTarget,
                                     switch_targets, targets_from_state)


class _TextfileCollector(Collector):
    def __init__(self, exporter: "TextfileExporter") -> None:
        self._exp = exporter

    def collect(self) -> Iterator[Metric]:
        return iter(self._exp.families())


class TextfileExporter:
    """Serves the ``*.prom`` files of ``directory`` (module docstring) on
    ``http://HOST:PORT/metrics`` once :meth:`start` ed (``port=0``: a free port);
    :meth:`render` gives the same text without HTTP."""

    def __init__(self, directory: Path, host: str = "127.0.0.1", port: int = 0,
                 log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> None:
        self.directory = Path(directory)
        self._log = log
        self._lock = threading.Lock()
        self._errors: dict[str, int] = {}
        self._said: set[str] = set()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_TextfileCollector(self))
        self._host, self._port = host, port
        self.server: RegistryServer | None = None

    def families(self) -> list[Metric]:
        """Every file's families merged, then the exporter's own two."""
        merged: dict[str, Metric] = {}
        seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        ages = GaugeMetricFamily("astral_textfile_age_seconds",
                                 "Seconds since the metric file was last written.", labels=["file"])
        now = time.time()
        paths = sorted(self.directory.glob("*.prom")) if self.directory.is_dir() else []
        for path in paths:
            try:
                text = path.read_text(encoding="utf-8")
                mtime = path.stat().st_mtime
                fams = list(text_string_to_metric_families(text))
            except FileNotFoundError:
                continue                              # removed between glob and read
            except Exception as exc:  # noqa: BLE001 — the parser raises several kinds
                self._count_error(path.name, f"{type(exc).__name__}: {exc}")
                continue
            ages.add_metric([path.name], max(0.0, now - mtime))
            clash = False
            for fam in fams:
                into = merged.get(fam.name)
                if into is None:
                    into = merged[fam.name] = Metric(fam.name, fam.documentation, fam.type, fam.unit)
                elif into.type != fam.type:
                    clash = True
                    continue
                for s in fam.samples:
                    labels = dict(s.labels, source=path.stem)
                    key = (s.name, tuple(sorted(labels.items())))
                    if key in seen:
                        clash = True
                        continue
                    seen.add(key)
                    into.samples.append(s._replace(labels=labels))
            if clash:
                self._count_error(path.name, "a family of another type, or a series given "
                                             "twice in the file")
        errors = CounterMetricFamily("astral_textfile_errors",
                                     "Scrapes that skipped (part of) a metric file.", labels=["file"])
        with self._lock:
            for name, n in sorted(self._errors.items()):
                errors.add_metric([name], n)
        return [*merged.values(), ages, errors]

    def _count_error(self, name: str, why: str) -> None:
        with self._lock:
            self._errors[name] = self._errors.get(name, 0) + 1
            first = name not in self._said
            self._said.add(name)
        if first:
            self._log(f"monitor: metric file {self.directory / name}: {why}; skipped "
                      "(counted in astral_textfile_errors_total)")

    def render(self) -> str:
        """The exposition text a scrape gets."""
        return generate_latest(self.registry).decode("utf-8")

    @property
    def url(self) -> str:
        """The scrape URL (once started)."""
        if self.server is None:
            raise RuntimeError("the textfile exporter is not started")
        return self.server.url

    @property
    def address(self) -> str:
        """``host:port`` for a scrape config (once started)."""
        return self.url.split("//")[1].split("/")[0]

    def start(self) -> "TextfileExporter":
        """Serve on HTTP from a daemon thread."""
        if self.server is None:
            self.server = RegistryServer(self.registry, self._host, self._port,
                                         name="textfile-exporter")
            self.server.start()
        return self

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> "TextfileExporter":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["PORT_COUNTERS", "SwitchExporter", "SwitchReader", "SwitchTarget", "TextfileExporter",
           "switch_targets", "targets_from_state"]
