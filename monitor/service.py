"""The live monitor of one run: exporters, the metric store, the evaluation loop
(evidence → localiser → verdict log, metrics, web view) and the web server.

What it does not start: the processes inside the hosts' namespaces (probers, NIC
emulators). The testbed starts those (``scenarios.monitoring``) and points them at
:attr:`Monitor.metrics_dir`, where they write their ``.prom`` files; the monitor never
imports the testbed.

Every ``interval_s`` the loop:

1. re-predicts the probe paths if the switches' ECMP tables changed (GOR rewrote a
   group or added a detour: :meth:`Monitor.follow_ecmp`, :mod:`monitor.ecmpstate`);
2. builds an :class:`~monitor.evidence.Evidence` from the metric source
   (:class:`~monitor.assemble.EvidenceBuilder`: tomography, switch and NIC counters,
   GOR's agent ages and liveness) and the probe paths from the probers' epoch snapshots
   in :attr:`Monitor.metrics_dir` (:class:`~monitor.probestats.ProbeStatsReader`);
3. gives it to the :class:`~monitor.localiser.Localiser`; verdicts named or cleared go
   to ``verdicts.jsonl`` (:class:`~monitor.localiser.VerdictLog`), to the monitor's own
   metrics (``monitor_verdicts_total``, ``monitor_active_faults``,
   ``monitor_evaluation_seconds``; scraped as job ``monitor``) and to the web view;
4. updates the web view: link states from the tomography, utilisation and alarm levels
   from GOR's metrics, switch liveness, GOR's moves from its decision log.

Example (a running testbed; ``scenarios/monitoring.py`` does this)::

    mon = Monitor(fabric, plan, run_dir, switch_targets, gor_metrics="127.0.0.1:9464",
                  decision_log=run_dir / "gor.jsonl")
    with mon:
        ...                        # probers and NICs write into mon.metrics_dir
        mon.wait_verdict(lambda v: v.kind == "hung_switch", timeout_s=20)
"""
from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from prometheus_client import CollectorRegistry, Summary

from controller.fabric.detours import fabric_hash_model
from controller.telemetry.exposition import RegistryServer
from monitor.assemble import EvidenceBuilder, port_peers
from monitor.ecmpstate import live_hash_model, pins_of, repredict
from monitor.evidence import Evidence, Verdict
from monitor.exporters import TextfileExporter
from monitor.localiser import Localiser, VerdictLog
from monitor.probestats import ProbeStatsReader
from monitor.prometheus import open_metric_source
from monitor.switch_exporter import SwitchExporter
from monitor.verdictbook import MonitorWaits, VerdictBook
from monitor.webport import check_web_port
from monitor.webstate import MonitorView

EVAL_INTERVAL_S = 0.5
VIEW_GAUGES = ("gor_link_util_ratio", "gor_alarm_level")
"""GOR's gauges the web view shows (read in the evidence's query)."""
RATE_WINDOW_S = 3.0
SCRAPE_INTERVAL_S = 0.5


@dataclass(slots=True)
class MonitorOptions:
    """Knobs of the monitor: evaluation period, rate window (at least three scrape
    intervals: Prometheus's ``rate()`` needs them), scrape interval, which store
    (``"prometheus"`` falls back to the embedded one when absent), the web view and its
    port (0: a free one; 0 to 65535, else ValueError: :mod:`monitor.webport`).

    >>> MonitorOptions().window_s >= 3 * MonitorOptions().scrape_interval_s
    True
    """

    interval_s: float = EVAL_INTERVAL_S
    window_s: float = RATE_WINDOW_S
    scrape_interval_s: float = SCRAPE_INTERVAL_S
    prefer: str = "prometheus"
    web: bool = True
    web_port: int = 0

    def __post_init__(self) -> None:
        check_web_port(self.web_port, "web_port")      # ValueError naming it (monitor.webport)


class DecisionLogTail:
    """New lines of GOR's decision log since the last call (the file may not exist yet).

    >>> import tempfile, os
    >>> p = Path(tempfile.mkdtemp()) / "gor.jsonl"
    >>> t = DecisionLogTail(p); t.read()
    []
    >>> _ = p.write_text('{"event": "order_sent"}\\n{"event": "order_con')
    >>> [e["event"] for e in t.read()]
    ['order_sent']
    """

    def __init__(self, path: Optional[Path]) -> None:
        self.path = path
        self._offset = 0

    def read(self) -> list[dict[str, Any]]:
        """Whole lines appended since the last call (a torn last line waits)."""
        if self.path is None or not self.path.exists():
            return []
        with self.path.open("rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1
        self._offset += end
        out = []
        for line in data[:end].splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out


class Monitor(MonitorWaits):
    """One run's monitoring; :meth:`start` … :meth:`stop` or a context manager.

    ``plan``: the probe plan (:class:`monitor.probes.ProbePlan`); ``switch_targets``: the
    switch exporter's targets (:func:`monitor.switch_exporter.targets_from_record`);
    ``gor_metrics``: GOR's metrics address ``host:port`` (``None``: no GOR to watch);
    ``decision_log``: GOR's decision log, whose moves go to the web view's timeline;
    ``uplink_rate_pps``: the links' capacity for the view's utilisation where GOR gives
    none.
    """

    def __init__(self, fabric: Any, plan: Any, run_dir: Path, switch_targets: Sequence[Any], *,
                 gor_metrics: Optional[str] = None, decision_log: Optional[Path] = None,
                 ecn_threshold_pkts: Optional[int] = None,
                 options: Optional[MonitorOptions] = None,
                 say: Callable[[str], None] = print) -> None:
        self.fabric, self.plan, self.run_dir = fabric, plan, Path(run_dir)
        self.switch_targets = list(switch_targets)
        self.gor_metrics = gor_metrics
        self.opts = options or MonitorOptions()
        self.say = say
        self.metrics_dir = self.run_dir / "metrics"
        self.verdict_log_path = self.run_dir / "verdicts.jsonl"
        self.builder = EvidenceBuilder(plan.paths, _dst_prefixes(plan), port_peers(fabric),
                                       window_s=self.opts.window_s,
                                       ecn_threshold_pkts=ecn_threshold_pkts,
                                       gor_job="gor" if gor_metrics else None,
                                       probe_stats=ProbeStatsReader(plan, self.metrics_dir,
                                                                    window_s=self.opts.window_s),
                                       extra_values=VIEW_GAUGES)
        self._tail = DecisionLogTail(decision_log)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.book = VerdictBook()                  # verdicts, quiet flags, the waits
        self.errors: list[str] = []
        self.last_evidence: Optional[Evidence] = None
        self.on_evaluation: Optional[Callable[[EvaluationRecord], None]] = None
        self.source: Any = None
        self.view: Any = None
        self.web: Any = None
        self._parts: list[Any] = []
        self.switch_exporter: Any = None
        self._ecmp_seen: dict[str, Any] = {}
        self._planned_model: Any = None
        self.repredictions = 0                     # times the probe paths were re-predicted

    # ------------------------------------------------------------------ lifetime
    def start(self) -> "Monitor":
        """Exporters, the metric store, the localiser, the web view, the loop."""
        self.metrics_dir.mkdir(parents=True, exist_ok=True)
        try:
            switches = self._part(SwitchExporter(self.switch_targets).start())
            self.switch_exporter = switches
            files = self._part(TextfileExporter(self.metrics_dir).start())
            self.registry = CollectorRegistry()
            self._eval_s = Summary("monitor_evaluation_seconds",
                                   "Time to build one evidence snapshot and localise",
                                   registry=self.registry)
            self.localiser = Localiser(log=VerdictLog(self.verdict_log_path), registry=self.registry)
            own = self._part(RegistryServer(self.registry, port=0))
            own.start()
            targets = {"switches": [switches.address], "files": [files.address],
                       "monitor": [own.url.split("/")[2]]}
            if self.gor_metrics:
                targets["gor"] = [self.gor_metrics]
            self.source = self._part(open_metric_source(self.run_dir, targets, self.opts.prefer,
                                                        self.opts.scrape_interval_s))
            if self.opts.web:
                from monitor.web import WebServer  # noqa: PLC0415 — heavy: starlette, uvicorn
                self.view = MonitorView(self.fabric, title=f"Astral-P4 monitor — {self.run_dir.name}")
                self.web = self._part(WebServer(self.view, port=self.opts.web_port).start())
                self.say(f"monitor: web view at {self.web.url}")
        except BaseException:
            self.stop()
            raise
        self._thread = threading.Thread(target=self._run, name="monitor", daemon=True)
        self._thread.start()
        return self

    def _part(self, part: Any) -> Any:
        self._parts.append(part)
        return part

    def stop(self) -> None:
        """Stop the loop, then every part in reverse order of starting."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self.book.end()
        for part in reversed(self._parts):
            try:
                (getattr(part, "close", None) or part.stop)()
            except Exception as exc:  # noqa: BLE001 — the others still stop
                self.errors.append(f"stopping {type(part).__name__}: {exc}")
        self._parts.clear()

    def __enter__(self) -> "Monitor":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def store_kind(self) -> str:
        """``"prometheus"`` or ``"embedded"`` (``""`` before :meth:`start`)."""
        return str(getattr(self.source, "kind", ""))

    # ------------------------------------------------------------------ the loop
    def _run(self) -> None:
        while not self._stop.wait(self.opts.interval_s):
            try:
                self.evaluate(time.monotonic())
            except Exception as exc:  # noqa: BLE001 — said once per kind, the loop goes on
                msg = f"{type(exc).__name__}: {exc}"
                if msg not in self.errors:
                    self.errors.append(msg)
                    print(f"monitor: evaluation failed: {msg}", file=sys.stderr)

    def evaluate(self, t_s: float) -> list[Verdict]:
        """One evaluation at ``t_s`` (the loop calls it; tests may too)."""
        started = time.perf_counter()
        self.follow_ecmp()
        ev = self.builder.build(self.source, t_s)
        named = self.localiser.observe(ev)
        cleared = self.localiser.cleared()
        self._eval_s.observe(time.perf_counter() - started)
        for v in named:
            self.say(f"monitor: {v.kind} on {v.component} (confidence {v.confidence:.2f}): "
                     + "; ".join(v.evidence[:3]))
        if self.view is not None:           # before the waiters learn of the verdicts
            try:
                self._update_view(ev, named, cleared)
            except Exception as exc:  # noqa: BLE001 — the web view's, said once; the
                # verdicts still reach the book (the localiser has already named them: an
                # exception here used to lose them, and every later evaluation's, silently)
                msg = f"web view: {type(exc).__name__}: {exc}"
                if msg not in self.errors:
                    self.errors.append(msg)
                    print(f"monitor: evaluation's view update failed: {msg}", file=sys.stderr)
        calm = quiet(ev) and not self.localiser.active()
        self.last_evidence = ev
        self.book.add(named, cleared, calm)
        if self.on_evaluation is not None:
            self.on_evaluation(EvaluationRecord(self.book.evaluations, t_s, tuple(named),
                                                tuple(cleared), calm))
        return named

    def follow_ecmp(self) -> list[str]:
        """When the switches' ECMP tables or override pins (read by the switch exporter)
        changed since the last call, re-predict every probe path with the hash model they
        imply and the pins (:mod:`monitor.ecmpstate`) and give the evidence builder the
        new links; returns the paths whose links changed."""
        states = self.switch_exporter.ecmp_snapshot() if self.switch_exporter is not None else {}
        if not states or states == self._ecmp_seen:
            return []
        changed = sorted(n for n in states if self._ecmp_seen.get(n) != states[n])
        self._ecmp_seen = states
        if self._planned_model is None:
            self._planned_model = fabric_hash_model(self.fabric)
        model = live_hash_model(self.fabric, states, self._planned_model)
        paths, lost = repredict(self.fabric, model, self.builder.paths, pins_of(states))
        moved = [q.name for p, q in zip(self.builder.paths, paths) if p.links != q.links]
        self.builder.paths = paths
        if moved:
            self.repredictions += 1
            self.say(f"monitor: ECMP tables or pins changed on {', '.join(changed)}: {len(moved)} probe "
                     f"path(s) re-predicted ({', '.join(moved[:8])}{' …' if len(moved) > 8 else ''})")
        if lost:
            self.say(f"monitor: {len(lost)} probe path(s) not predictable from the switches' "
                     f"ECMP tables, kept as they were: {', '.join(lost[:8])}")
        return moved

    def _update_view(self, ev: Evidence, named: list[Verdict], cleared: list[Verdict]) -> None:
        view = self.view
        view.update_from_evidence(ev)
        got = self.builder.extra                   # read with the evidence, in its query
        util = {lab["link"]: v for lab, v in got["gor_link_util_ratio"] if "link" in lab}
        alarm = {lab["link"]: int(v) for lab, v in got["gor_alarm_level"] if "link" in lab}
        known = set(view.link_names())
        util = {k: v for k, v in util.items() if k in known}
        alarm = {k: v for k, v in alarm.items() if k in known}
        if util or alarm:
            view.update_links(util=util or None, alarm=alarm or None)
        for v in named:
            view.add_verdict(v)
        for v in cleared:
            view.clear_verdict(v.kind, v.component, t_s=ev.t_s)
        for e in self._tail.read():
            if e.get("event") == "path_chosen":
                old, new = e.get("old_path") or [], e.get("new_path") or []
                if len(old) > 1 and len(new) > 1:
                    view.add_move(str(e.get("flow")), f"{old[0]}->{old[1]}", f"{new[0]}->{new[1]}",
                                  t_s=_mono(e, ev.t_s))
            elif e.get("event") in ("alarm_raised", "alarm_cleared"):
                view.add_event("note", f"GOR {e['event'].replace('_', ' ')} on {e.get('link')}"
                               + (f" (level {e.get('level')})" if e.get("level") else ""),
                               t_s=_mono(e, ev.t_s))
            elif e.get("event") == "switch_lost" and "mastership" in str(e.get("error", "")):
                # GOR is no longer the switch's primary P4Runtime client (another client
                # took it): GOR stops acting on it until it is primary again
                view.add_event("switch", f"GOR lost control of {e.get('switch')}: {e.get('error')}",
                               t_s=_mono(e, ev.t_s), switch=str(e.get("switch")))
            elif e.get("event") == "switch_back":
                view.add_event("switch", f"GOR controls {e.get('switch')} again", t_s=_mono(e, ev.t_s),
                               switch=str(e.get("switch")))


@dataclass(frozen=True, slots=True)
class EvaluationRecord:
    """What one evaluation told: its number (from 1), when (``time.monotonic()``), the
    verdicts it named and cleared, and whether the fabric was :func:`quiet` with no fault
    active in the localiser (what :meth:`Monitor.wait_quiet` counts)."""

    n: int
    t_s: float
    named: tuple[Verdict, ...]
    cleared: tuple[Verdict, ...]
    quiet: bool


def quiet(ev: Optional[Evidence]) -> bool:
    """No bad link (lossy, dead, corrupting) and no silent switch in ``ev``.

    >>> quiet(None)
    False
    """
    return ev is not None and not any(
        e.state in ("lossy", "dead", "corrupting") for e in ev.links.values()) \
        and all(ev.switch_up.values())


def _mono(event: dict[str, Any], default: float) -> float:
    try:
        return float(event["mono_s"])
    except (KeyError, TypeError, ValueError):
        return default


def _dst_prefixes(plan: Any) -> dict[str, str]:
    """Each path's destination prefix, from the plan."""
    out: dict[str, str] = {}
    for prefix, names in plan.paths_by_prefix().items():
        for name in names:
            out[name] = prefix
    return out


__all__ = ["DecisionLogTail", "EVAL_INTERVAL_S", "EvaluationRecord", "Monitor", "MonitorOptions",
           "RATE_WINDOW_S", "quiet"]
