"""Switches lost and restored, in GOR's loop: ``switch_lost`` when a switch stops answering,
and, once :class:`controller.gor.recovery.SwitchRecovery` has reconnected and re-programmed
it, GOR's own state for that switch re-installed and ``switch_back`` logged.

:class:`SwitchRestarts` is owned by :class:`controller.gor.loop.GorLoop` and built from the
loop's :class:`~controller.gor.shared.LoopState` (the path engine: the live ECMP groups; the
``LinkState``; the switch tables it re-installs entries with; the ``MoveBook``: what to
re-install; the load windows and the switches' reports it forgets for a restored switch; the
outputs), the :class:`~controller.gor.sampling.Sampling`, the
:class:`~controller.gor.detour_sync.DetourSync` and ``forget_counters`` (a restored switch's
dead-link evidence is forgotten: :meth:`controller.gor.faults.LinkFaults.forget_counters`).
It holds the switches lost, their events and :attr:`SwitchRestarts.switch_log`.
Its public methods:

* :meth:`SwitchRestarts.observe_health` (each tick, with ``TelemetryPoller.health``): a
  switch turning stale is logged ``switch_lost`` (with the error) and exported
  (``gor_switch_stale`` = 1). Without a recovery attached (``recovery_attached`` False) a
  switch answering again is logged ``switch_back`` at once; with one, ``switch_back`` comes
  only after the switch was verified and, if it came back empty, re-programmed.
* :meth:`SwitchRestarts.live_groups` (called from the recovery thread): the ECMP groups of a
  switch as GOR has them now — group id → egress ports of the live members — so a link GOR
  took down stays out of the re-installed groups.
* :meth:`SwitchRestarts.submit_switch_lost` (thread-safe): the recovery found a switch lost.
* :meth:`SwitchRestarts.submit_switch_back` (thread-safe): the recovery hands in a restored
  switch; the next tick re-installs GOR's entries on it — the override entries of every
  flow pinned through it (moves in force), the sampling entries GOR has on its ports (alarms,
  moves to confirm, probes) — forgets the telemetry of its links (load windows, dead-link
  evidence, rx arming: its counters restarted from zero, so no false verdict comes from the
  reset) and logs ``switch_back`` (reinstalled or not, why, what, outage length).
* :meth:`SwitchRestarts.drain_events` (each tick): applies what was handed in.

Example::

    >>> loop.submit_switch_back("b0r0l0", report, lost_s=12.3)   # doctest: +SKIP
    >>> loop.tick(t_s, samples)   # re-installs GOR's entries, logs switch_back   # doctest: +SKIP
"""
from __future__ import annotations

import queue
from typing import Any, Callable, Mapping, Optional

from controller.gor.decisions import LinkKey
from controller.gor.detour_sync import DetourSync
from controller.gor.orders import OVERRIDE_ACTION, OVERRIDE_TABLE, override_match
from controller.gor.sampling import Sampling
from controller.gor.shared import LoopState
from controller.gor.tables import SAMPLING_ACTION, SAMPLING_KEY, SAMPLING_TABLE


SWITCH_GRACE_S = 1.0
"""After a lost switch is back, its links get no decision round for this long."""
SYMPTOM_MAX_S = 5.0
"""An alarm that began on a link of a switch while it was lost or in its grace is the
switch's symptom (its neighbours queued towards it, it drained its backlog in a burst):
no round for it until it clears, or until this long after the switch is back (an alarm
still up then is taken for real congestion)."""


class SwitchRestarts:
    """Lost and restored switches (see the module docstring). ``recovery_attached``: a
    :class:`~controller.gor.recovery.SwitchRecovery` reports ``switch_back`` (set by it)."""

    def __init__(self, state: LoopState, sampling: Sampling, detours: DetourSync,
                 forget_counters: Callable[[LinkKey], None]) -> None:
        self.engine, self.links, self.tables, self.sampling = state.engine, state.links, state.tables, sampling
        self.book, self.detours, self.windows, self._out = state.book, detours, state.windows, state.out
        self.dataplane, self.alarms, self._forget_counters = state.dataplane, state.alarms, forget_counters
        self.recovery_attached = False                # a SwitchRecovery reports switch_back
        self.switch_events: "queue.Queue[tuple[str, str, Any, Optional[float]]]" = queue.Queue()
        self.lost_switches: dict[str, float] = {}     # switch → t_s it was lost
        self.back_at: dict[str, float] = {}           # switch → t_s it was last back
        self.lost_at: dict[str, float] = {}           # switch → t_s it was last lost
        self.grace_s = SWITCH_GRACE_S
        self.switch_log: list[tuple[str, str, float, dict[str, Any]]] = []  # lost/back, switch, t_s, what
        self._stale: dict[str, bool] = {}

    def observe_health(self, health: Mapping[str, Any], t_s: float = 0.0) -> None:
        """Log switches lost / answering again (``TelemetryPoller.health``; see the module
        docstring)."""
        for sw, h in health.items():
            stale = bool(getattr(h, "stale", False))
            if stale == self._stale.get(sw, False):
                continue
            if stale:
                self._lost(sw, getattr(h, "last_error", ""), t_s)
                continue
            if self.recovery_attached:
                continue                  # switch_back comes from the recovery, verified
            self._stale[sw] = False
            self.lost_switches.pop(sw, None)
            self.back_at[sw] = t_s
            self.switch_log.append(("switch_back", sw, t_s, {}))
            if self._out.metrics is not None:
                self._out.metrics.set_switch_stale(sw, False)
            if self._out.decision_log is not None:
                self._out.decision_log.switch_back(sw)

    def unsettled(self, switch: str, t_s: float, alarm_since: Optional[float] = None) -> bool:
        """``switch`` is lost, or came back less than ``grace_s`` ago, or the alarm of a
        link of it began (``alarm_since``) while it was either and has not cleared (for
        at most :data:`SYMPTOM_MAX_S` after it is back): what its links show then (a hung
        switch's neighbours queue towards it, a resumed one drains its backlog in a
        burst) says nothing about elephants, and the rounds leave its links alone
        (:class:`~controller.gor.rounds.DecisionRounds`).

        >>> r = SwitchRestarts.__new__(SwitchRestarts)
        >>> r._stale, r.grace_s, r.lost_at, r.back_at = {}, 1.0, {"s0": 10.0}, {"s0": 14.0}
        >>> r.unsettled("s0", 14.5), r.unsettled("s0", 15.5)
        (True, False)
        >>> r.unsettled("s0", 15.5, alarm_since=14.8), r.unsettled("s0", 19.5, alarm_since=14.8)
        (True, False)
        >>> r.unsettled("s0", 15.5, alarm_since=9.0), r.unsettled("s0", 15.5, alarm_since=15.2)
        (False, False)
        """
        if self._stale.get(switch, False):
            return True
        back = self.back_at.get(switch)
        if back is None:
            return False
        if t_s - back < self.grace_s:
            return True
        lost = self.lost_at.get(switch, back)
        return (alarm_since is not None and lost <= alarm_since < back + self.grace_s
                and t_s - back < SYMPTOM_MAX_S)

    def live_groups(self, switch: str) -> dict[int, tuple[int, ...]]:
        """Group id → egress ports of the live members of every ECMP group of ``switch``, as
        GOR has them now (a link taken down is not in them)."""
        model = self.engine.hash_model.switches.get(switch)
        if model is None:
            return {}
        return {gid: tuple(self.engine.member_port(switch, m) for m in g.members)
                for gid, g in dict(model.groups).items()}

    def submit_switch_lost(self, switch: str, reason: str) -> None:
        """The recovery found ``switch`` lost (``reason``); logged ``switch_lost`` at the next
        tick unless the poller's health did already. Thread-safe."""
        self.switch_events.put(("lost", switch, reason, None))

    def submit_switch_back(self, switch: str, report: Any, lost_s: Optional[float] = None) -> None:
        """Hand in a switch the recovery reconnected (and re-programmed when it came back
        empty: ``report.pushed``); ``lost_s``: how long it was out. Thread-safe."""
        self.switch_events.put(("back", switch, report, lost_s))

    def drain_events(self, t_s: float) -> None:
        """Apply the switch events handed in since the last tick."""
        while True:
            try:
                kind, sw, what, lost_s = self.switch_events.get_nowait()
            except queue.Empty:
                return
            if kind == "back":
                self._switch_back(sw, what, lost_s, t_s)
            elif not self._stale.get(sw, False):
                self._lost(sw, str(what), t_s)

    def _lost(self, sw: str, error: str, t_s: float) -> None:
        self._stale[sw] = True
        self.lost_switches.setdefault(sw, t_s)
        self.lost_at[sw] = self.lost_switches[sw]
        if self._out.metrics is not None:
            self._out.metrics.set_switch_stale(sw, True)
        self.switch_log.append(("switch_lost", sw, t_s, {"error": error}))
        if self._out.decision_log is not None:
            self._out.decision_log.record("switch_lost", switch=sw, error=error)

    def _switch_back(self, sw: str, report: Any, lost_s: Optional[float], t_s: float) -> None:
        pushed = bool(getattr(report, "pushed", False))
        overrides = sampling = 0
        failed: list[str] = []
        if pushed:
            for flow, path in sorted(self.book.overrides.items(), key=lambda kv: str(kv[0])):
                for e in self.engine.override_entries(path, flow.dst):
                    if e.switch != sw:
                        continue
                    try:
                        self.tables.write(sw, OVERRIDE_TABLE, override_match(flow), OVERRIDE_ACTION,
                                          {"nexthop_id": e.nexthop_id})
                        overrides += 1
                    except Exception as exc:  # noqa: BLE001 — logged, the loop goes on
                        failed.append(f"override {flow}: {type(exc).__name__}: {exc}")
            for (lsw, port), n in sorted(self.sampling.on.items()):
                if lsw != sw:
                    continue
                try:
                    self.tables.write(sw, SAMPLING_TABLE, {SAMPLING_KEY: port}, SAMPLING_ACTION,
                                      {"one_in_n": n})
                    sampling += 1
                except Exception as exc:  # noqa: BLE001
                    failed.append(f"sampling {port}: {type(exc).__name__}: {exc}")
            if not self.detours.reinstall(sw):    # the plan has none: write them all again
                failed.append("detours")
        for link in [l for l in self.links.peer if l[0] == sw]:
            self.windows.forget(link)
            self._forget_counters(link)          # the dead-link evidence (LinkFaults)
            self.dataplane.forget(link)          # its own reports: alarm seq numbers, elephants
            self.alarms.forget_report(link)
        for msg in failed:
            self._out.error(f"{sw}: after restore: {msg}")
        self._stale[sw] = False
        self.back_at[sw] = t_s
        since = self.lost_switches.pop(sw, None)
        if self._out.metrics is not None:
            self._out.metrics.set_switch_stale(sw, False)
        info = {"reinstalled": pushed, "reason": getattr(report, "reason", ""),
                "updates": getattr(report, "updates", 0),
                "groups": {str(g): list(p) for g, p in getattr(report, "groups", {}).items()},
                "overrides": overrides, "sampling": sampling, "failed": failed,
                "lost_s": round(lost_s, 3) if lost_s is not None else
                (round(t_s - since, 3) if since is not None else None)}
        self.switch_log.append(("switch_back", sw, t_s, info))
        if self._out.decision_log is not None:
            self._out.decision_log.record("switch_back", switch=sw, **info)


__all__ = ["SWITCH_GRACE_S", "SYMPTOM_MAX_S", "SwitchRestarts"]
