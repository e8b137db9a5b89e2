"""``python -m controller status``: a plain-text table of GOR's links, alarms and moves,
read from the metrics endpoint (``--metrics URL``) or the decision log (``--log FILE``,
the default ``logs/gor.jsonl``); refreshes every ``--interval`` seconds, or prints one
snapshot with ``--once``.

From the metrics the links table is complete (every polled link direction); from the log
it lists the links that had an alarm, with the load measured when the alarm changed.

>>> snap = snapshot_from_log([{"event": "alarm_raised", "link": "b0r0l0->s0", "level": 2,
...                            "mark_rate": 0.1, "util_pct": 93.0, "ts": 0}])
>>> snap.alarms
{'b0r0l0->s0': 2}
"""
from __future__ import annotations

import argparse
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, TextIO

from controller.gor.log import DEFAULT_LOG_PATH, read_log
from controller.gor.metrics import MOVE_OUTCOMES
from controller.telemetry.exposition import parse_metrics

CLEAR_SCREEN = "\x1b[H\x1b[2J"
MAX_MOVES_SHOWN = 15


@dataclass(slots=True)
class LinkRow:
    """One link direction in the table (``None`` = not known from this source).

    >>> LinkRow("b0r0l0->s0", util_pct=80.0).alarm
    0
    """

    link: str
    util_pct: Optional[float] = None
    marks: Optional[int] = None
    mark_rate: Optional[float] = None
    max_qdepth: Optional[int] = None
    alarm: int = 0


@dataclass(slots=True)
class MoveRow:
    """The latest state of one order.

    >>> MoveRow("o-1", "f", "sent").state
    'sent'
    """

    order_id: str
    flow: str
    state: str
    new_path: str = ""
    note: str = ""
    ts: float = 0.0


@dataclass(slots=True)
class StatusSnapshot:
    """What the status table shows.

    >>> StatusSnapshot("log").render().splitlines()[0].startswith("GOR status")
    True
    """

    source: str
    links: dict[str, LinkRow] = field(default_factory=dict)
    alarms: dict[str, int] = field(default_factory=dict)
    moves: list[MoveRow] = field(default_factory=list)
    move_counts: dict[str, int] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)
    pause_storms: list[str] = field(default_factory=list)
    down: list[str] = field(default_factory=list)
    loop_ms: Optional[float] = None

    def render(self) -> str:
        """The snapshot as plain text (links by utilisation, busiest first)."""
        out = [f"GOR status — {self.source}"]
        loop = f"{self.loop_ms:.1f} ms" if self.loop_ms is not None else "-"
        counts = " ".join(f"{o}={self.move_counts.get(o, 0)}" for o in MOVE_OUTCOMES)
        out.append(f"loop {loop}   moves {counts}   stale switches: "
                   f"{', '.join(self.stale) if self.stale else 'none'}")
        out.append("")
        out.append(f"{'LINK':<24} {'UTIL%':>7} {'ECN':>9} {'MARK%':>6} {'QDEPTH':>7} {'ALARM':>5}")
        rows = sorted(self.links.values(), key=lambda r: (-(r.util_pct or 0.0), r.link))
        for r in rows:
            out.append(f"{r.link:<24} {_fmt(r.util_pct, '.1f'):>7} {_fmt(r.marks, 'd'):>9} "
                       f"{_fmt(None if r.mark_rate is None else 100 * r.mark_rate, '.1f'):>6} "
                       f"{_fmt(r.max_qdepth, 'd'):>7} {r.alarm or '-':>5}")
        if not rows:
            out.append("(no links yet)")
        out.append("")
        active = {l: v for l, v in sorted(self.alarms.items()) if v}
        out.append("ALARMS: " + (", ".join(f"{l} L{v}" for l, v in active.items())
                                 if active else "none"))
        out.append("PAUSE STORMS (not re-routed): " + (", ".join(self.pause_storms) or "none"))
        out.append("LINKS DOWN: " + (", ".join(self.down) or "none"))
        out.append("")
        out.append(f"{'ORDER':<12} {'STATE':<12} {'FLOW':<40} NEW PATH / NOTE")
        for m in self.moves[-MAX_MOVES_SHOWN:]:
            out.append(f"{m.order_id:<12} {m.state:<12} {m.flow:<40} "
                       f"{' '.join(x for x in (m.new_path, m.note) if x)}")
        if not self.moves:
            out.append("(no moves)")
        return "\n".join(out) + "\n"


def _fmt(value: Optional[float], spec: str) -> str:
    return "-" if value is None else format(value, spec)


# ---------------------------------------------------------------------- sources
def snapshot_from_metrics(text: str, source: str = "metrics") -> StatusSnapshot:
    """A snapshot from Prometheus exposition text written by ``GorMetrics``.

    >>> snapshot_from_metrics('gor_alarm_level{link="a->b"} 1\\n').alarms
    {'a->b': 1}
    """
    snap = StatusSnapshot(source)

    def row(link: str) -> LinkRow:
        return snap.links.setdefault(link, LinkRow(link))

    loop_sum = loop_count = 0.0
    tx_total: dict[str, float] = {}
    for s in parse_metrics(text):
        link = s.labels.get("link")
        if s.name == "gor_link_util_ratio" and link:
            row(link).util_pct = round(100.0 * s.value, 1)
        elif s.name == "gor_link_ecn_marks_total" and link:
            row(link).marks = int(s.value)
        elif s.name == "gor_link_tx_packets_total" and link:
            tx_total[link] = s.value
        elif s.name == "gor_link_max_qdepth_packets" and link:
            row(link).max_qdepth = int(s.value)
        elif s.name == "gor_alarm_level" and link:
            snap.alarms[link] = int(s.value)
        elif s.name == "gor_pause_storm" and link and s.value:
            snap.pause_storms.append(link)
        elif s.name == "gor_link_down" and link and s.value:
            snap.down.append(link)
        elif s.name == "gor_switch_stale" and s.value:
            snap.stale.append(s.labels.get("switch", "?"))
        elif s.name == "gor_moves_total":
            snap.move_counts[s.labels.get("outcome", "?")] = int(s.value)
        elif s.name == "gor_loop_seconds_sum":
            loop_sum = s.value
        elif s.name == "gor_loop_seconds_count":
            loop_count = s.value
        elif s.name == "gor_loop_last_seconds" and loop_count == 0:
            snap.loop_ms = 1000.0 * s.value
    if loop_count:
        snap.loop_ms = 1000.0 * loop_sum / loop_count
    for link, r in snap.links.items():     # marked fraction since GOR started
        if r.marks is not None and tx_total.get(link):
            r.mark_rate = r.marks / tx_total[link]
    for link, level in snap.alarms.items():
        if link in snap.links:
            snap.links[link].alarm = level
    snap.stale.sort()
    snap.pause_storms.sort()
    snap.down.sort()
    return snap


_ORDER_STATES = {"order_sent": "sent", "order_confirmed": "confirmed",
                 "order_rolled_back": "rolled_back", "order_retried": "retried"}


def snapshot_from_log(records: Iterable[dict[str, Any]], source: str = "log") -> StatusSnapshot:
    """A snapshot replayed from decision-log records (oldest first)."""
    snap = StatusSnapshot(source)
    orders: dict[str, MoveRow] = {}
    stale: set[str] = set()
    storms: set[str] = set()
    down: set[str] = set()
    for rec in records:
        ev = rec.get("event")
        if ev in ("alarm_raised", "alarm_cleared"):
            link = str(rec.get("link"))
            # a clear may only bring the level down (to_level; logs before it: to 0)
            level = int(rec.get("level", 0) if ev == "alarm_raised" else rec.get("to_level", 0))
            snap.alarms[link] = level
            r = snap.links.setdefault(link, LinkRow(link))
            r.alarm = level
            if rec.get("util_pct") is not None:
                r.util_pct = float(rec["util_pct"])
            if rec.get("mark_rate") is not None:
                r.mark_rate = float(rec["mark_rate"])
        elif ev in _ORDER_STATES:
            oid = str(rec.get("order_id"))
            state = _ORDER_STATES[ev]
            snap.move_counts[state] = snap.move_counts.get(state, 0) + 1
            m = orders.get(oid)
            if m is None:
                m = orders[oid] = MoveRow(oid, str(rec.get("flow", "")), state)
            m.state, m.ts = state, float(rec.get("ts", 0.0))
            if rec.get("new_path"):
                m.new_path = "→".join(str(x) for x in rec["new_path"])
            m.note = str(rec.get("reason", "")) or (
                f"sport {rec['sport']}" if rec.get("sport") is not None else m.note)
        elif ev in ("pause_storm_raised", "pause_storm_cleared"):
            (storms.add if ev == "pause_storm_raised" else storms.discard)(str(rec.get("link")))
        elif ev in ("link_down", "link_up"):
            (down.add if ev == "link_down" else down.discard)(str(rec.get("link")))
        elif ev in ("switch_stale", "switch_lost"):
            stale.add(str(rec.get("switch")))
        elif ev == "switch_back":
            stale.discard(str(rec.get("switch")))
    snap.moves = sorted(orders.values(), key=lambda m: m.ts)
    snap.stale = sorted(stale)
    snap.pause_storms, snap.down = sorted(storms), sorted(down)
    return snap


def fetch_metrics(url: str, timeout_s: float = 2.0) -> str:
    """The exposition text at ``url`` (raises ``OSError`` when unreachable)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 — local URL
        return resp.read().decode("utf-8")


def missing_log(path: Path, runs: Path = Path("runs")) -> str:
    """Why there is nothing to show from ``path`` (a decision log that is not a file), with
    the newest story run's log under ``runs`` to try (``make run`` writes
    ``runs/<time>/gor.jsonl``; ``python -m controller run`` writes ``logs/gor.jsonl``).

    >>> missing_log(Path("logs/gor.jsonl"), runs=Path("/nonexistent")).split(":")[0]
    'no decision log yet'
    """
    if path.exists():
        return "not a file (--log names GOR's decision log, a JSON-lines file)"
    logs = sorted(runs.glob("*/gor.jsonl"), key=lambda p: p.stat().st_mtime) if runs.is_dir() else []
    hint = (f"the newest `make run` wrote --log {logs[-1]}" if logs else
            "`python -m controller run` writes logs/gor.jsonl, `make run` runs/<time>/gor.jsonl")
    return f"no decision log yet: is GOR running? ({hint}; --metrics URL reads a running GOR)"


def take_snapshot(metrics_url: Optional[str], log_path: Optional[Path]) -> StatusSnapshot:
    """One snapshot from the metrics URL when given, else from the log file."""
    if metrics_url:
        return snapshot_from_metrics(fetch_metrics(metrics_url), source=metrics_url)
    path = log_path or DEFAULT_LOG_PATH
    return snapshot_from_log(read_log(path), source=str(path))


# ---------------------------------------------------------------------- command
def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``status`` subcommand's options."""
    src = p.add_mutually_exclusive_group()
    src.add_argument("--metrics", metavar="URL", help="GOR's metrics URL (http://HOST:PORT/metrics)")
    src.add_argument("--log", type=Path, metavar="FILE",
                     help=f"GOR's decision log (default {DEFAULT_LOG_PATH})")
    p.add_argument("--once", action="store_true", help="print one snapshot and exit")
    p.add_argument("--interval", type=float, default=1.0, help="refresh period in seconds")


def run(args: argparse.Namespace, out: Optional[TextIO] = None) -> int:
    """The ``status`` command; returns the exit status (1: metrics unreachable or bad, or
    no decision log where ``--log`` — default ``logs/gor.jsonl`` — points: one line on
    stderr). The live view ends with Ctrl-C (status 0)."""
    out = out if out is not None else sys.stdout
    if not args.metrics:
        path = args.log or DEFAULT_LOG_PATH
        if not path.is_file():
            sys.stderr.write(f"controller status: {path}: {missing_log(path)}\n")
            return 1
    try:
        while True:
            try:
                text, ok = take_snapshot(args.metrics, args.log).render(), True
            except (OSError, ValueError) as exc:   # unreachable URL, malformed exposition text
                text, ok = f"controller status: {args.metrics}: {exc}\n", False
            if args.once:
                (out if ok else sys.stderr).write(text)
                return 0 if ok else 1
            out.write(CLEAR_SCREEN + time.strftime("%H:%M:%S ") + text)
            out.flush()
            time.sleep(max(0.05, args.interval))
    except KeyboardInterrupt:
        return 0


__all__ = ["LinkRow", "MoveRow", "StatusSnapshot", "add_arguments", "fetch_metrics", "missing_log", "run",
           "snapshot_from_log", "snapshot_from_metrics", "take_snapshot"]
