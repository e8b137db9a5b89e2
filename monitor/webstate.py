"""What the live web view shows: :class:`MonitorView`, the thread-safe state the monitor
service feeds and :mod:`monitor.web` serves.

The view holds the fabric's drawing (positions of a layered layout: spines on top,
leaves, servers below with one port per NIC, as ``topo/draw.py`` places them) and, per
link direction, its utilisation, state (:data:`monitor.evidence.LINK_STATES`), GOR's
alarm level (0-3) and loss; which switches answer; the faults injected (by name) and the
localiser's verdicts; and a timeline of events (GOR's moves, verdicts named and
cleared, faults injected and undone, switches down and up). Every change bumps
``version``; :meth:`MonitorView.snapshot` returns all of it as JSON-able data, and
listeners (the web server's event streams) are told after each change.

Link directions are named as :class:`monitor.evidence.LinkDir` writes them:
``"b0r0l0->s0"``, ``"b0s0-eth0->b0r0l0"`` (NIC to leaf); with parallel leaf-spine
cables each direction is ``"b0r0l0:3->s0"`` (the sending switch's port), and the
port-less name stands for all of them. A switch's port in a name is accepted where it
is not needed (``"b0r0l0:3->s0"`` is ``"b0r0l0->s0"`` on the default fabric).

>>> from topo.model import build_fabric
>>> view = MonitorView(build_fabric(), clock=lambda: 10.0)
>>> view.update_links(util={"b0r0l0->s0": 0.42}, state={"b0r0l0:3->s0": "lossy"}, alarm={"b0r0l0->s0": 2})
>>> view.snapshot()["links"]["b0r0l0->s0"]
{'util': 0.42, 'state': 'lossy', 'alarm': 2, 'loss': None}
>>> view.set_switch_up("s1", False)
>>> snap = view.snapshot(with_fabric=False)
>>> snap["switches"]["s1"], snap["events"][0]["text"], snap["version"]
(False, 'switch s1 down', 2)
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional, Union

from monitor.evidence import LINK_STATES, Evidence, LinkDir, LinkEstimate, Verdict
from monitor.weblayout import Drawing, layout
from topo.model import Fabric

LinkName = Union[str, LinkDir]
#: Alarm levels GOR raises on a link direction (0 = none, 3 = the highest).
ALARM_LEVELS = (0, 1, 2, 3)
#: Kinds of timeline events.
EVENT_KINDS = ("move", "verdict", "verdict_cleared", "fault", "fault_undone", "switch", "note")


@dataclass(slots=True)
class _LinkState:
    util: Optional[float] = None
    state: str = "unknown"
    alarm: int = 0
    loss: Optional[float] = None

    def to_dict(self) -> dict[str, Any]:
        return {"util": self.util, "state": self.state, "alarm": self.alarm, "loss": self.loss}


class MonitorView:
    """The state of the web view, safe to update from any thread.

    ``clock`` gives monotonic seconds (the ``t_s`` of verdicts and events); times are
    shown relative to the view's creation. ``max_events`` bounds the timeline.

    >>> from topo.model import build_fabric
    >>> v = MonitorView(build_fabric())
    >>> len(v.link_names()), v.version
    (32, 0)
    """

    def __init__(self, fabric: Fabric, *, title: str = "", max_events: int = 200,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        if max_events < 1:
            raise ValueError(f"max_events must be at least 1, got {max_events}")
        self._fabric = fabric
        self._drawing: Drawing = layout(fabric)
        spec = fabric.spec
        self._title = title or (f"{spec.blocks} blocks × {spec.servers_per_block} servers × "
                                f"{spec.rails} rails, {len(fabric.leaves)} leaves, "
                                f"{len(fabric.spines)} spines")
        self._clock, self._wall = clock, wall
        self._t0_s = clock()
        self._max_events = max_events
        self._lock = threading.Lock()
        self._version = 0
        self._links = {name: _LinkState() for name in self._drawing.link_ids}
        self._switch_up = {s.name: True for s in fabric.switches}
        self._faults: dict[str, dict[str, Any]] = {}
        self._verdicts: dict[tuple[str, str], dict[str, Any]] = {}
        self._events: list[dict[str, Any]] = []       # oldest first
        self._next_event_id = 1
        self._listeners: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ reading
    @property
    def fabric(self) -> Fabric:
        """The fabric drawn."""
        return self._fabric

    @property
    def version(self) -> int:
        """Bumped by every change (0 before the first)."""
        with self._lock:
            return self._version

    def link_names(self) -> list[str]:
        """Every link direction drawn, in drawing order (fabric links, then NIC links)."""
        return list(self._drawing.link_ids)

    def resolve_link(self, link: LinkName) -> list[str]:
        """The drawn direction(s) a name stands for; ``ValueError`` naming it when none.

        >>> from topo.model import build_fabric
        >>> MonitorView(build_fabric()).resolve_link("s0:1->b0r0l0")
        ['s0->b0r0l0']
        """
        return self._drawing.resolve(str(link))

    def targets(self, component: str) -> dict[str, list[str]]:
        """The drawn links and nodes a component name (:func:`monitor.evidence.component`)
        points at; empty lists for what is not drawn (``controller``).

        >>> from topo.model import build_fabric
        >>> MonitorView(build_fabric()).targets("cable b0r0l0<->s0")
        {'links': ['b0r0l0->s0', 's0->b0r0l0'], 'nodes': []}
        """
        return self._drawing.targets(component)

    def snapshot(self, with_fabric: bool = True) -> dict[str, Any]:
        """Everything the page shows, as JSON-able data (``fabric``: the drawing, left out
        with ``with_fabric=False``); ``events`` newest first."""
        with self._lock:
            snap: dict[str, Any] = {
                "version": self._version,
                "title": self._title,
                "t_rel_s": round(self._clock() - self._t0_s, 3),
                "links": {name: st.to_dict() for name, st in self._links.items()},
                "switches": dict(self._switch_up),
                "faults": [dict(f) for f in self._faults.values()],
                "verdicts": [dict(v) for v in self._verdicts.values()],
                "events": [dict(e) for e in reversed(self._events)],
            }
        if with_fabric:
            snap["fabric"] = self._drawing.to_dict()
        return snap

    # ------------------------------------------------------------------ listeners
    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` (from the updating thread, after the change) on every change."""
        with self._lock:
            self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        """Stop calling ``callback`` (nothing when it is not registered)."""
        with self._lock:
            if callback in self._listeners:
                self._listeners.remove(callback)

    def _changed(self) -> None:
        """Bump the version (the lock is held) — callers then call :meth:`_notify`."""
        self._version += 1

    def _notify(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for cb in listeners:
            cb()

    # ------------------------------------------------------------------ links
    def update_links(self, util: Optional[Mapping[LinkName, Optional[float]]] = None,
                     state: Optional[Mapping[LinkName, str]] = None,
                     alarm: Optional[Mapping[LinkName, int]] = None,
                     loss: Optional[Mapping[LinkName, Optional[float]]] = None) -> None:
        """Set, per link direction, its utilisation (0..1, above 1 when over capacity;
        ``None``: not known), state (:data:`LINK_STATES`), GOR alarm level (0-3) and probe
        loss (0..1). All or nothing: a bad name or value raises ``ValueError`` naming it
        and changes nothing. One version bump for the whole batch.
        """
        changes: list[tuple[str, str, Any]] = []
        for field_name, values in (("util", util), ("state", state), ("alarm", alarm), ("loss", loss)):
            for link, value in (values or {}).items():
                checked = _check_value(field_name, link, value)
                for name in self.resolve_link(link):
                    changes.append((name, field_name, checked))
        if not changes:
            return
        with self._lock:
            for name, field_name, value in changes:
                setattr(self._links[name], field_name, value)
            self._changed()
        self._notify()

    def update_estimates(self, estimates: Iterable[LinkEstimate]) -> None:
        """State and loss of each link direction from the tomography's estimates."""
        ests = list(estimates)
        self.update_links(state={e.link: e.state for e in ests}, loss={e.link: e.loss for e in ests})

    def update_from_evidence(self, evidence: Evidence) -> None:
        """What an evidence snapshot says: each link direction's state and loss (from the
        tomography) and each switch's liveness (a change is a timeline event at
        ``evidence.t_s``). Directions the drawing leaves out are skipped."""
        self.update_estimates(evidence.links.values())
        for name, up in evidence.switch_up.items():
            if name in self._switch_up:
                self.set_switch_up(name, up, evidence.t_s)

    # ------------------------------------------------------------------ switches
    def set_switch_up(self, name: str, up: bool, t_s: Optional[float] = None) -> None:
        """Whether switch ``name`` answers; a change is also a timeline event."""
        if name not in self._switch_up:
            raise ValueError(f"no switch {name!r} in this fabric")
        with self._lock:
            if self._switch_up[name] == bool(up):
                return
            self._switch_up[name] = bool(up)
            self._append_event("switch", f"switch {name} {'up' if up else 'down'}", t_s,
                               {"switch": name, "up": bool(up)})
            self._changed()
        self._notify()

    # ------------------------------------------------------------------ faults
    def add_fault(self, name: str, kind: str, component: str, t_s: Optional[float] = None,
                  detail: str = "") -> None:
        """A fault injected (by ``testbed.faults``) under ``name``: shown until undone."""
        if not name:
            raise ValueError("a fault needs a name")
        with self._lock:
            t = self._t(t_s)
            self._faults[name] = {"name": name, "kind": kind, "component": component, "detail": detail,
                                  "t_s": t, "t_rel_s": self._rel(t), "targets": self.targets(component)}
            text = f"fault {name} injected: {kind} on {component}" + (f" ({detail})" if detail else "")
            self._append_event("fault", text, t, {"name": name, "fault": kind, "component": component})
            self._changed()
        self._notify()

    def undo_fault(self, name: str, t_s: Optional[float] = None) -> None:
        """The fault ``name`` was undone; ``ValueError`` when no such fault is active."""
        with self._lock:
            fault = self._faults.pop(name, None)
            if fault is None:
                raise ValueError(f"no active fault named {name!r} "
                                 f"(active: {', '.join(self._faults) or 'none'})")
            self._append_event("fault_undone", f"fault {name} undone ({fault['kind']} on {fault['component']})",
                               t_s, {"name": name, "fault": fault["kind"], "component": fault["component"]})
            self._changed()
        self._notify()

    # ------------------------------------------------------------------ verdicts
    def add_verdict(self, verdict: Verdict) -> None:
        """The localiser named ``verdict``; a new (kind, component) is a timeline event,
        a known one is updated (confidence, evidence) silently."""
        key = (verdict.kind, verdict.component)
        with self._lock:
            old = self._verdicts.get(key)
            known = old is not None
            if old is not None and (old["confidence"], old["evidence"]) == \
                    (verdict.confidence, list(verdict.evidence)):
                return
            row = verdict.to_dict()
            # a verdict named again keeps the time it was first named
            row["t_s"] = verdict.t_s if old is None else old["t_s"]
            row["t_rel_s"] = self._rel(row["t_s"])
            row["targets"] = self.targets(verdict.component)
            self._verdicts[key] = row
            if not known:
                self._append_event("verdict", f"verdict: {verdict.kind} at {verdict.component} "
                                   f"({verdict.confidence:.0%})", verdict.t_s,
                                   {"verdict": verdict.kind, "component": verdict.component,
                                    "confidence": verdict.confidence})
            self._changed()
        self._notify()

    def clear_verdict(self, kind: str, component: str, t_s: Optional[float] = None) -> None:
        """The localiser no longer names (kind, component); nothing when it was not named."""
        with self._lock:
            if self._verdicts.pop((kind, component), None) is None:
                return
            self._append_event("verdict_cleared", f"verdict cleared: {kind} at {component}", t_s,
                               {"verdict": kind, "component": component})
            self._changed()
        self._notify()

    def set_verdicts(self, verdicts: Iterable[Verdict], t_s: Optional[float] = None) -> None:
        """The localiser's current verdicts: new ones are named, missing ones cleared."""
        current = {(v.kind, v.component): v for v in verdicts}
        with self._lock:
            gone = [k for k in self._verdicts if k not in current]
        for kind, comp in gone:
            self.clear_verdict(kind, comp, t_s)
        for v in current.values():
            self.add_verdict(v)

    # ------------------------------------------------------------------ events
    def add_move(self, flow: str, from_uplink: str, to_uplink: str, t_s: Optional[float] = None) -> dict[str, Any]:
        """GOR moved ``flow`` from one uplink (link direction) to another."""
        return self.add_event("move", f"GOR moved {flow}: {from_uplink} → {to_uplink}", t_s,
                              flow=str(flow), from_uplink=str(from_uplink), to_uplink=str(to_uplink))

    def add_event(self, kind: str, text: str, t_s: Optional[float] = None, **fields: Any) -> dict[str, Any]:
        """Append a timeline event of ``kind`` (:data:`EVENT_KINDS`) and return it."""
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r} (one of {', '.join(EVENT_KINDS)})")
        with self._lock:
            event = self._append_event(kind, text, t_s, fields)
            self._changed()
        self._notify()
        return dict(event)

    def _append_event(self, kind: str, text: str, t_s: Optional[float], fields: Mapping[str, Any]) -> dict[str, Any]:
        t = self._t(t_s)
        wall = self._wall() - (self._clock() - t)
        event = {"id": self._next_event_id, "kind": kind, "text": text, "t_s": t, "t_rel_s": self._rel(t),
                 "wall": time.strftime("%H:%M:%S", time.gmtime(wall)), **fields}
        self._next_event_id += 1
        self._events.append(event)
        del self._events[:-self._max_events]
        return event

    def _t(self, t_s: Optional[float]) -> float:
        return self._clock() if t_s is None else float(t_s)

    def _rel(self, t_s: float) -> float:
        return round(t_s - self._t0_s, 3)


def _check_value(field_name: str, link: LinkName, value: Any) -> Any:
    """A link field's value, checked; ``ValueError`` naming the link otherwise."""
    if field_name == "state":
        if value not in LINK_STATES:
            raise ValueError(f"{link}: state {value!r} is not one of {', '.join(LINK_STATES)}")
        return value
    if field_name == "alarm":
        if isinstance(value, bool) or not isinstance(value, int) or value not in ALARM_LEVELS:
            raise ValueError(f"{link}: alarm level {value!r} is not one of 0, 1, 2, 3")
        return value
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise ValueError(f"{link}: {field_name} {value!r} is not a number >= 0")
    if field_name == "loss" and value > 1:
        raise ValueError(f"{link}: loss {value!r} is not in [0, 1]")
    return round(float(value), 4)


__all__ = ["ALARM_LEVELS", "EVENT_KINDS", "MonitorView"]
