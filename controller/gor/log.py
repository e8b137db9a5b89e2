"""GOR's decision log: one JSON object per line (``logs/gor.jsonl``) for every step of a
re-route, so an operator can replay why a flow moved.

Every record has ``ts`` (Unix time, seconds), ``mono_s`` (monotonic seconds, for step
durations), ``event`` (one of :data:`EVENTS`) and the event's fields; records of one
decision share a ``round`` id, records of one order its ``order_id``. Field values may be
the typed records of :mod:`controller.gor.decisions` (their ``to_dict()`` is written), flow
keys (written as text) and link keys (``("b0r0l0", 3)`` → ``"b0r0l0:3"`` as a mapping key).

* ``alarm_raised``: link, level, mark_rate, util_pct, source (``switch``: an alarm digest,
  with switch_level, max_qdepth, seq, received_ts, the wall clock of its arrival at GOR,
  and digest_ts_ns, the DigestList's timestamp as the target stamped it: p4sim the wall
  clock, as P4Runtime says, BMv2's PI server CLOCK_MONOTONIC; ``counters``: the polls)
* ``alarm_cleared``: link, level (the level left), mark_rate, util_pct
* ``flows_chosen``: link, flows (list of flow keys with rate estimates)
* ``path_chosen``: flow, old_path, new_path, predicted (link → util_pct), measured
* ``order_sent``: order_id, flow, host, sport (or ``override``), new_path
* ``order_confirmed``: order_id, flow, measured (link → util_pct)
* ``order_rolled_back``: order_id, flow, reason
* ``order_retried``: order_id, flow, reason
* ``link_down`` / ``link_up``: link, reason (``administrative``, or ``counters: …`` for a
  dead link found by :mod:`controller.gor.deadlinks`), groups rewritten
* ``pause_storm_raised``: link, frames_per_s, held_s, action (what the operator should do;
  GOR does not re-route); ``pause_storm_cleared``: link, frames_per_s, held_s
* ``reconciled``: adopted/deleted override and sampling entries of a predecessor
  (:mod:`controller.gor.reconcile`)
* ``move_remembered``: flow, flow_id, rest_until_s — a registered flow whose agent reports a
  move completed less than ``cooldown_s`` ago that this GOR did not make (a predecessor's
  move, after a restart): left alone until then
* ``marks_unexplained``: link, marks, max_qdepth, kmin_pkts, source — CE marks the queue
  cannot explain (no packet saw the planned threshold, :mod:`controller.gor.markcheck`):
  ignored, no alarm and no round from them; once per episode
* ``switch_stale``: switch, error (a poll failed; older logs)
* ``switch_lost``: switch, error — it stopped answering, its stream broke, or it came back
  empty; ``switch_back``: switch, and after a restore (:mod:`controller.gor.restarts`)
  reinstalled, reason, updates, groups, overrides, sampling, failed, lost_s

>>> import io, json
>>> buf = io.StringIO(); dl = DecisionLog(buf, clock=lambda: 1.5, wall=lambda: 100.0)
>>> dl.alarm_raised("b0r0l0->s0", level=2, mark_rate=0.12, util_pct=91.0)
>>> json.loads(buf.getvalue())["event"]
'alarm_raised'
"""
from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, TextIO, Union

DEFAULT_LOG_PATH = Path("logs/gor.jsonl")

EVENTS = (
    "alarm_raised", "alarm_cleared", "flows_chosen", "path_chosen", "order_sent",
    "order_confirmed", "order_rolled_back", "order_retried", "link_down", "link_up",
    "switch_stale", "switch_lost", "switch_back", "round", "agent_done", "pause_storm_raised",
    "pause_storm_cleared", "reconciled", "override_expired", "move_remembered", "marks_unexplained",
)

_log = logging.getLogger("controller.gor.log")


def _key(k: Any) -> str:
    """A mapping key as text: link keys ``("b0r0l0", 3)`` become ``"b0r0l0:3"``."""
    if isinstance(k, tuple) and not hasattr(k, "_fields"):
        return ":".join(str(x) for x in k)
    return str(k)


def _jsonable(value: Any) -> Any:
    """Turn records with ``to_dict()`` (``controller.gor.decisions``), named tuples (flow
    keys, as their text), link ids, tuples and sets into JSON values (``str`` as a last resort).

    >>> _jsonable({("b0r0l0", 3): 0.5, "x": {1, 2}})
    {'b0r0l0:3': 0.5, 'x': [1, 2]}
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return _jsonable(to_dict())
    if isinstance(value, Mapping):
        return {_key(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return str(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [_jsonable(v) for v in items]
    return str(value)


class DecisionLog:
    """Append-only JSON-lines log of GOR's decisions (thread-safe; flushed per record).

    ``target`` is a path (parent folders are created; the file is appended to) or an open
    text stream. Use as a context manager or call :meth:`close`.

    >>> with DecisionLog("logs/gor.jsonl") as dl:                  # doctest: +SKIP
    ...     dl.order_sent("o-1", flow="10.0.0.1:49152>10.1.0.1:4791", host="h0",
    ...                   sport=49301, new_path=["b0r0l0", "s1", "b1r0l0"])
    """

    def __init__(self, target: Union[str, Path, TextIO] = DEFAULT_LOG_PATH,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        if isinstance(target, (str, Path)):
            path = Path(target)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._stream: TextIO = path.open("a", encoding="utf-8")
            self._owned = True
            self.path: Optional[Path] = path
        else:
            self._stream, self._owned, self.path = target, False, None
        self._clock, self._wall = clock, wall
        self._lock = threading.Lock()
        self.records = 0

    # ------------------------------------------------------------------ generic
    def record(self, event: str, **fields: Any) -> dict[str, Any]:
        """Write one record of ``event`` with ``fields``; returns it as written."""
        if event not in EVENTS:
            raise ValueError(f"unknown decision-log event {event!r} (one of {', '.join(EVENTS)})")
        rec = {"ts": round(self._wall(), 6), "mono_s": round(self._clock(), 6), "event": event}
        rec.update({k: _jsonable(v) for k, v in fields.items() if v is not None})
        line = json.dumps(rec, separators=(",", ":"), sort_keys=False)
        with self._lock:
            try:
                self._stream.write(line + "\n")
                self._stream.flush()
            except (OSError, ValueError) as exc:  # a full disk must not stop the loop
                _log.error("decision log write failed: %s", exc)
            self.records += 1
        return rec

    # ------------------------------------------------------------------ alarms
    def alarm_raised(self, link: Any, level: int, mark_rate: float,
                     util_pct: Optional[float] = None, round_id: Optional[int] = None) -> None:
        """An alarm on ``link`` rose to ``level``."""
        self.record("alarm_raised", link=link, level=level, mark_rate=mark_rate,
                    util_pct=util_pct, round=round_id)

    def alarm_cleared(self, link: Any, level: int, mark_rate: float,
                      util_pct: Optional[float] = None, round_id: Optional[int] = None,
                      source: Optional[str] = None, to_level: int = 0) -> None:
        """The alarm of ``link`` (at ``level``) cleared (``to_level`` 0) or came down to
        ``to_level``; ``source``: ``counters`` or ``switch`` (the switch's own data-plane
        alarm)."""
        self.record("alarm_cleared", link=link, level=level, mark_rate=mark_rate,
                    util_pct=util_pct, round=round_id, source=source, to_level=to_level)

    # ------------------------------------------------------------------ decisions
    def flows_chosen(self, link: Any, flows: Sequence[Any], round_id: Optional[int] = None) -> None:
        """The elephants picked on the congested ``link`` (keys or dicts with rates)."""
        self.record("flows_chosen", link=link, flows=list(flows), round=round_id)

    def path_chosen(self, flow: Any, old_path: Sequence[str], new_path: Sequence[str],
                    predicted: Mapping[Any, float], measured: Optional[Mapping[Any, float]] = None,
                    round_id: Optional[int] = None) -> None:
        """A new path for ``flow``: predicted (and currently measured) util % per link."""
        self.record("path_chosen", flow=flow, old_path=list(old_path), new_path=list(new_path),
                    predicted=predicted, measured=measured, round=round_id)

    # ------------------------------------------------------------------ orders
    def order_sent(self, order_id: str, flow: Any, host: Optional[str] = None,
                   sport: Optional[int] = None, override: bool = False,
                   new_path: Optional[Sequence[str]] = None, round_id: Optional[int] = None,
                   nic_port: Optional[int] = None) -> None:
        """An order went to ``host``'s agent (or the override table when ``override``);
        ``nic_port``: it also re-binds the flow to that port of its dual-port NIC."""
        self.record("order_sent", order_id=order_id, flow=flow, host=host, sport=sport,
                    override=override or None, new_path=list(new_path) if new_path else None,
                    round=round_id, nic_port=nic_port)

    def order_confirmed(self, order_id: str, flow: Any,
                        measured: Optional[Mapping[Any, float]] = None,
                        round_id: Optional[int] = None) -> None:
        """The traffic of ``flow`` was seen on its new path."""
        self.record("order_confirmed", order_id=order_id, flow=flow, measured=measured,
                    round=round_id)

    def order_rolled_back(self, order_id: str, flow: Any, reason: str,
                          round_id: Optional[int] = None) -> None:
        """The order was undone (agent refused, traffic did not move, new hotspot …)."""
        self.record("order_rolled_back", order_id=order_id, flow=flow, reason=reason, round=round_id)

    def order_retried(self, order_id: str, flow: Any, reason: str,
                      round_id: Optional[int] = None) -> None:
        """The order is sent again."""
        self.record("order_retried", order_id=order_id, flow=flow, reason=reason, round=round_id)

    # ------------------------------------------------------------------ faults
    def link_down(self, link: Any, reason: str) -> None:
        """A link left the ECMP groups (the loop's record also lists the groups rewritten)."""
        self.record("link_down", link=link, reason=reason)

    def link_up(self, link: Any, reason: str) -> None:
        """A link came back."""
        self.record("link_up", link=link, reason=reason)

    def switch_stale(self, switch: str, error: str) -> None:
        """A switch stopped answering telemetry polls."""
        self.record("switch_stale", switch=switch, error=error)

    def switch_back(self, switch: str) -> None:
        """A stale switch answers again."""
        self.record("switch_back", switch=switch)

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Close the file (a stream passed in is left open)."""
        with self._lock:
            if self._owned:
                self._stream.close()

    def __enter__(self) -> "DecisionLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_log(path: Union[str, Path]) -> Iterator[dict[str, Any]]:
    """The records of a decision log, skipping blank and malformed lines (a line being
    written while read is malformed).

    >>> list(read_log("/nonexistent/gor.jsonl"))
    []
    """
    try:
        f = Path(path).open(encoding="utf-8")
    except OSError:
        return
    with f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and "event" in rec:
                yield rec


__all__ = ["DEFAULT_LOG_PATH", "DecisionLog", "EVENTS", "read_log"]
