"""The monitor in a process of its own: ``python -m monitor.remote`` runs a
:class:`~monitor.service.Monitor` and speaks JSON lines; :class:`MonitorProcess` starts it
and waits on it as one waits on a ``Monitor``.

Why a process: in the scenarios the monitor shared one Python interpreter, and its GIL,
with GOR's loop, GOR's telemetry and the agents' registry; an evaluation then took
0.4-0.9 s where it takes a tenth of that alone, and every verdict waits for three.

The child reads the fabric (``topo.model.Fabric.save``), the probe plan
(``ProbePlan.save``) and the switches' P4Runtime addresses and PKI (a JSON file with a
testbed state's ``switches`` and ``pki``). On its stdout, one JSON object per line:

- ``{"event": "ready", "store": "prometheus", "web_url": "http://…", "pid": 4242}``
- ``{"event": "evaluation", "n": 7, "t_s": …, "named": [verdict…], "cleared": […], "quiet": true}``
  (a verdict as ``Verdict.to_dict()``; ``t_s`` is ``time.monotonic()``, one clock for
  every process of the machine)
- ``{"event": "say", "text": "monitor: …"}``, ``{"event": "answer", "id": 3, "series": […]}``
- ``{"event": "stopped", "errors": [...]}`` last.

On its stdin: ``{"cmd": "rates", "id": 3, "metric": "…", "window_s": 30}`` (the
store's ``rates``) and ``{"cmd": "stop"}``; stdin's end or SIGTERM stop it too. Its
stderr goes to ``monitor.log`` in the run folder, with every ``say`` line too.

>>> mp = MonitorProcess(fabric_path, plan_path, run_dir, targets_path,
...                     gor_metrics="127.0.0.1:9464")                      # doctest: +SKIP
>>> with mp:                                                               # doctest: +SKIP
...     v = mp.wait_verdict(lambda v: v.kind == "hung_switch", timeout_s=20)
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable, Optional, Sequence

from monitor.evidence import Verdict
from monitor.probeplan import load_plan
from monitor.service import EvaluationRecord, Monitor, MonitorOptions
from monitor.switch_exporter import targets_from_state
from monitor.verdictbook import MonitorWaits, VerdictBook
from monitor.webport import port_arg
from topo.model import load_fabric

PROG = "python -m monitor.remote"
EXIT_BAD_INPUT = 2
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
ANSWER_TIMEOUT_S = 15.0
ROOT = Path(__file__).resolve().parents[1]


class MonitorProcessError(RuntimeError):
    """The monitor process did not start, ended early, or did not answer; the message
    quotes the end of its ``monitor.log``."""


def verdict_of(d: dict[str, Any]) -> Verdict:
    """The :class:`Verdict` of its JSON form.

    >>> verdict_of(Verdict("hung_switch", "switch s1", 0.9, ("silent",), 3.0).to_dict()).component
    'switch s1'
    """
    return Verdict(str(d["kind"]), str(d["component"]), float(d["confidence"]),
                   tuple(str(e) for e in d.get("evidence", ())), float(d["t_s"]))


def evaluation_line(r: EvaluationRecord) -> dict[str, Any]:
    """The ``evaluation`` line of one :class:`EvaluationRecord`."""
    return {"event": "evaluation", "n": r.n, "t_s": r.t_s, "quiet": r.quiet,
            "named": [v.to_dict() for v in r.named], "cleared": [v.to_dict() for v in r.cleared]}


# --------------------------------------------------------------------------- the child
class _Lines:
    """JSON lines to a stream, whole lines from any thread."""

    def __init__(self, out: IO[str]) -> None:
        self.out, self._lock = out, threading.Lock()

    def __call__(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, separators=(",", ":")) + "\n"
        with self._lock:
            try:
                self.out.write(line)
                self.out.flush()
            except (BrokenPipeError, ValueError):
                pass                       # the parent is gone: stdin's end stops us


def _say(emit: _Lines, text: str) -> None:
    """A line of the monitor's: to the parent, and to ``monitor.log`` (stderr), which
    keeps them when the parent shows none."""
    emit({"event": "say", "text": text})
    print(text, file=sys.stderr, flush=True)


def _answer(mon: Monitor, cmd: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"event": "answer", "id": cmd.get("id")}
    try:
        if cmd.get("cmd") != "rates":
            raise ValueError(f"unknown command {cmd.get('cmd')!r} (rates, stop)")
        series = mon.source.rates(str(cmd["metric"]), float(cmd["window_s"]),
                                  **{str(k): str(v) for k, v in (cmd.get("labels") or {}).items()})
        out["series"] = [[labels, value] for labels, value in series]
    except Exception as exc:  # noqa: BLE001 — the answer says why; the monitor goes on
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _commands(mon: Monitor, emit: _Lines, stop: threading.Event) -> None:
    for raw in sys.stdin:
        try:
            cmd = json.loads(raw)
        except ValueError:
            emit({"event": "answer", "id": None, "error": f"not JSON: {raw.strip()[:80]}"})
            continue
        if cmd.get("cmd") == "stop":
            break
        emit(_answer(mon, cmd))
    stop.set()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m monitor.remote``: see the module docstring."""
    ap = argparse.ArgumentParser(prog=PROG, description="Run one testbed's monitor, "
                                 "speaking JSON lines on stdin/stdout.")
    ap.add_argument("--fabric", required=True, type=Path, help="the fabric (Fabric.save)")
    ap.add_argument("--plan", required=True, type=Path, help="the probe plan (ProbePlan.save)")
    ap.add_argument("--run-dir", required=True, type=Path, help="the run folder")
    ap.add_argument("--targets", type=Path, default=None,
                    help="JSON with a testbed state's 'switches' and 'pki' (without it: "
                         "no switch's counters are read)")
    ap.add_argument("--gor-metrics", default=None, help="GOR's metrics address host:port")
    ap.add_argument("--decision-log", type=Path, default=None, help="GOR's decision log")
    ap.add_argument("--ecn-threshold-pkts", type=int, default=None,
                    help="the fabric's ECN threshold in packets (the wrong-threshold rule)")
    ap.add_argument("--interval-s", type=float, default=MonitorOptions.interval_s,
                    help="evaluation period in seconds")
    ap.add_argument("--window-s", type=float, default=MonitorOptions.window_s,
                    help="rate window in seconds (at least 3 scrape intervals)")
    ap.add_argument("--scrape-interval-s", type=float, default=MonitorOptions.scrape_interval_s,
                    help="the store's scrape interval in seconds")
    ap.add_argument("--prefer", choices=("prometheus", "embedded"), default="prometheus",
                    help="the metric store (prometheus falls back to embedded when absent)")
    ap.add_argument("--no-web", action="store_true", help="no web view")
    ap.add_argument("--web-port", type=port_arg, default=0,
                    help="the web view's port, 0 to 65535 (0: a free one)")
    args = ap.parse_args(argv)
    emit = _Lines(sys.stdout)
    try:
        fabric = load_fabric(args.fabric)
        plan = load_plan(args.plan)
        targets = targets_from_state(fabric, args.targets) if args.targets else []
    except (OSError, ValueError, KeyError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    opts = MonitorOptions(args.interval_s, args.window_s, args.scrape_interval_s, args.prefer,
                          web=not args.no_web, web_port=args.web_port)
    mon = Monitor(fabric, plan, args.run_dir, targets, gor_metrics=args.gor_metrics,
                  decision_log=args.decision_log, ecn_threshold_pkts=args.ecn_threshold_pkts,
                  options=opts, say=lambda text: _say(emit, text))
    mon.on_evaluation = lambda r: emit(evaluation_line(r))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # set from a thread, not from the handler: Event.set takes the Event's lock, which this
        # (main) thread may hold inside its own stop.wait when the signal lands: a deadlock
        # (host/nic/sigflag.py)
        signal.signal(sig, lambda _s, _f: threading.Thread(target=stop.set, daemon=True).start())
    try:
        mon.start()
    except Exception as exc:  # noqa: BLE001 — said, with what failed
        print(f"{PROG}: error: the monitor did not start: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 1
    emit({"event": "ready", "store": mon.store_kind, "web_url": mon.web.url if mon.web else "",
          "pid": os.getpid()})
    threading.Thread(target=_commands, args=(mon, emit, stop), name="commands", daemon=True).start()
    try:
        while not stop.wait(1.0):
            pass
    finally:
        mon.stop()
        emit({"event": "stopped", "errors": list(mon.errors)})
    return 0


# --------------------------------------------------------------------------- the parent
class _RemoteSource:
    """The child's metric store as far as the scenarios read it (:meth:`rates`)."""

    def __init__(self, owner: "MonitorProcess", kind: str) -> None:
        self.owner, self.kind = owner, kind

    def rates(self, metric: str, window_s: float, **label_filter: str) -> list[tuple[dict[str, str], float]]:
        """The store's ``rates`` in the monitor process (bounded by ``ANSWER_TIMEOUT_S``)."""
        got = self.owner.ask({"cmd": "rates", "metric": metric, "window_s": window_s,
                              "labels": label_filter})
        return [(dict(labels), float(value)) for labels, value in got.get("series", ())]


class _Web:
    def __init__(self, url: str) -> None:
        self.url = url


class MonitorProcess(MonitorWaits):
    """A :class:`~monitor.service.Monitor` in its own process (see the module
    docstring), with the parts of a ``Monitor`` that scenarios use: :attr:`verdicts`,
    :attr:`cleared`, :attr:`evaluations`, :attr:`errors`, :attr:`store_kind`,
    :attr:`web` (``.url``), :attr:`source` (``.rates``), :attr:`opts`,
    :meth:`wait_evaluations`, :meth:`wait_verdict`, :meth:`wait_quiet`."""

    def __init__(self, fabric_path: Path, plan_path: Path, run_dir: Path,
                 targets_path: Optional[Path], *,
                 gor_metrics: Optional[str] = None, decision_log: Optional[Path] = None,
                 ecn_threshold_pkts: Optional[int] = None,
                 options: Optional[MonitorOptions] = None,
                 say: Callable[[str], None] = print) -> None:
        self.fabric_path, self.plan_path = Path(fabric_path), Path(plan_path)
        self.run_dir = Path(run_dir)
        self.targets_path = Path(targets_path) if targets_path is not None else None
        self.gor_metrics, self.decision_log = gor_metrics, decision_log
        self.ecn_threshold_pkts = ecn_threshold_pkts
        self.opts = options or MonitorOptions()
        self.say = say
        self.metrics_dir = self.run_dir / "metrics"
        self.verdict_log_path = self.run_dir / "verdicts.jsonl"
        self.log_path = self.run_dir / "monitor.log"
        self.book = VerdictBook()
        self.errors: list[str] = []
        self.store_kind = ""
        self.web: Optional[_Web] = None
        self.source: Optional[_RemoteSource] = None
        self.proc: Optional[subprocess.Popen[str]] = None
        self._cond = threading.Condition()
        self._ready = False
        self._ended = False
        self._answers: dict[int, dict[str, Any]] = {}
        self._next_id = 0
        self._reader: Optional[threading.Thread] = None

    @property
    def ended(self) -> bool:
        """True once the child's stdout has ended (it stopped or died)."""
        return self._ended

    def command(self) -> list[str]:
        """The child's command line."""
        o = self.opts
        cmd = [sys.executable, "-m", "monitor.remote", "--fabric", str(self.fabric_path),
               "--plan", str(self.plan_path), "--run-dir", str(self.run_dir),
               "--interval-s", str(o.interval_s),
               "--window-s", str(o.window_s), "--scrape-interval-s", str(o.scrape_interval_s),
               "--prefer", o.prefer, "--web-port", str(o.web_port)]
        if not o.web:
            cmd.append("--no-web")
        if self.targets_path is not None:
            cmd += ["--targets", str(self.targets_path)]
        if self.gor_metrics:
            cmd += ["--gor-metrics", self.gor_metrics]
        if self.decision_log is not None:
            cmd += ["--decision-log", str(self.decision_log)]
        if self.ecn_threshold_pkts is not None:
            cmd += ["--ecn-threshold-pkts", str(self.ecn_threshold_pkts)]
        return cmd

    # ------------------------------------------------------------------ lifetime
    def start(self) -> "MonitorProcess":
        """Start the child and wait (bounded) for its ready line."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=env, text=True,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=log)
        self._reader = threading.Thread(target=self._read, name="monitor-lines", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + READY_TIMEOUT_S
        with self._cond:
            while not self._ready and not self._ended:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            ready = self._ready
        if not ready:
            status = self.proc.poll()
            self.stop()
            why = (f"ended with exit status {status} before it was ready" if status is not None
                   else f"was not ready within {READY_TIMEOUT_S:g} s")
            raise MonitorProcessError(f"the monitor process {why}; {self.log_path}: "
                                      f"{self._log_tail()}")
        return self

    def _log_tail(self, lines: int = 8) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(text[-lines:]) or "(empty)"

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                self._take(json.loads(raw))
            except (ValueError, KeyError, TypeError) as exc:   # a line we cannot read
                with self._cond:
                    self.errors.append(f"monitor process line not understood: {exc}: {raw[:120]!r}")
        with self._cond:
            self._ended = True
            self._cond.notify_all()
        self.book.end()

    def _take(self, line: dict[str, Any]) -> None:
        event = line.get("event")
        if event == "say":
            self.say(str(line.get("text", "")))
            return
        if event == "evaluation":
            self.book.add([verdict_of(v) for v in line.get("named", ())],
                          [verdict_of(v) for v in line.get("cleared", ())], bool(line.get("quiet")))
            return
        with self._cond:
            if event == "ready":
                self.store_kind = str(line.get("store", ""))
                self.web = _Web(str(line["web_url"])) if line.get("web_url") else None
                self.source = _RemoteSource(self, self.store_kind)
                self._ready = True
            elif event == "answer" and isinstance(line.get("id"), int):
                self._answers[line["id"]] = line
            elif event == "stopped":
                self.errors.extend(str(e) for e in line.get("errors", ()))
            self._cond.notify_all()

    def ask(self, cmd: dict[str, Any], timeout_s: float = ANSWER_TIMEOUT_S) -> dict[str, Any]:
        """Send one command; its answer (bounded by ``timeout_s``). Raises
        :class:`MonitorProcessError` when the child cannot answer or answers an error."""
        with self._cond:
            self._next_id += 1
            ident = self._next_id
        self._send(dict(cmd, id=ident))
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while ident not in self._answers:
                left = deadline - time.monotonic()
                if left <= 0 or self._ended:
                    raise MonitorProcessError(f"the monitor process did not answer {cmd.get('cmd')!r} "
                                              f"within {timeout_s:g} s; {self._log_tail()}")
                self._cond.wait(left)
            got = self._answers.pop(ident)
        if "error" in got:
            raise MonitorProcessError(f"the monitor process: {got['error']}")
        return got

    def _send(self, cmd: dict[str, Any]) -> None:
        if self.proc is None or self.proc.stdin is None or self.proc.poll() is not None:
            raise MonitorProcessError(f"the monitor process is not running; {self._log_tail()}")
        try:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise MonitorProcessError(f"the monitor process is gone: {exc}") from None

    def stop(self) -> None:
        """Ask the child to stop (it stops its exporters, store and web view), wait
        (bounded), then SIGTERM and SIGKILL it by its PID if it has not ended."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None and proc.stdin is not None:
            try:
                proc.stdin.write(json.dumps({"cmd": "stop"}) + "\n")
                proc.stdin.close()
            except (BrokenPipeError, ValueError, OSError):
                pass
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.errors.append(f"the monitor process did not stop within {STOP_TIMEOUT_S:g} s")
            proc.terminate()
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5.0)
        if self._reader is not None:
            self._reader.join(timeout=5.0)
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.returncode not in (0, None):
            self.errors.append(f"the monitor process ended with {proc.returncode}; {self._log_tail()}")
        self.proc = None

    def __enter__(self) -> "MonitorProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["MonitorProcess", "MonitorProcessError", "evaluation_line", "main", "verdict_of"]


if __name__ == "__main__":
    sys.exit(main())
