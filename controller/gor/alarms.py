"""ECN alarms: a per-link state machine with three alarm levels and hysteresis.

The input is one telemetry sample per link direction and polling interval: the CE marks
and packets sent in the interval (``FabricEgress.ecn.marks`` and
``FabricEgress.telemetry.tx`` deltas). The measure is the **mark rate = marks per
transmitted packet**: it does not depend on link speed or polling period, so one set of
thresholds fits the 100 G testbed and a 400 G pod alike. A sample with fewer than
``min_pkts`` packets counts as rate 0 (an idle link is not congested).

Default thresholds (:class:`AlarmThresholds`), fractions of packets marked:

======== ======= =======  ======================================================
level    raise   clear    meaning with the default RED (kmin 8, kmax 32, pmax 20 %)
======== ======= =======  ======================================================
NOTICE   1 %     0.5 %    queue now and then above kmin: watch, start sampling
WARNING  5 %     2.5 %    standing queue: elephants are colliding; re-route
CRITICAL 20 %    10 %     queue near kmax: pauses and drops are close
======== ======= =======  ======================================================

Hysteresis: a level is entered as soon as the rate reaches its *raise* threshold (going
up is immediate, several levels at once if needed); it is left only when the rate is
below its *clear* threshold **and** the link has held its current level for at least
``min_hold_s`` (default 0.5 s). It then drops to the highest level whose clear
threshold the rate still meets.

**Two sources.** The counters (:meth:`AlarmMonitor.observe`, one call per polling
interval) and the switches themselves (:meth:`AlarmMonitor.report`: the level a
switch's ``FabricEgress.alarms`` decided, with its own windows and hysteresis, reported
by digest within microseconds; :mod:`controller.gor.dataplane`). A link's level is the
higher of the two: the data plane raises it at once; the counters stay as the slow path
and cover lost digests; it comes down when both say so. An event is returned whenever
that level changes, whichever source changed it. :meth:`AlarmMonitor.alarm_since` says
when the link's current alarm began (its level left CLEAR).

Example::

    >>> m = AlarmMonitor()
    >>> m.observe(("s0", 1), 0.0, marks=60, tx_pkts=1000).new.name      # 6 %
    'WARNING'
    >>> m.observe(("s0", 1), 0.1, marks=0, tx_pkts=1000) is None         # held 0.5 s
    True
    >>> m.observe(("s0", 1), 0.6, marks=0, tx_pkts=1000).new.name
    'CLEAR'
    >>> m.report(("s0", 1), 0.7, AlarmLevel.CRITICAL, mark_rate=0.3).new.name   # a digest
    'CRITICAL'
    >>> m.alarm_since(("s0", 1))
    0.7
    >>> m.observe(("s0", 1), 0.8, marks=0, tx_pkts=1000) is None   # the counters: no change
    True
    >>> m.report(("s0", 1), 0.9, AlarmLevel.CLEAR, mark_rate=0.0).new.name
    'CLEAR'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from controller.gor.decisions import AlarmEvent, AlarmLevel, LinkKey


@dataclass(frozen=True, slots=True)
class AlarmThresholds:
    """Raise and clear thresholds (marks per packet) of NOTICE, WARNING, CRITICAL.

    >>> AlarmThresholds().raise_at[AlarmLevel.WARNING]
    0.05
    """

    raise_at: dict[AlarmLevel, float] = field(default_factory=lambda: {
        AlarmLevel.NOTICE: 0.01, AlarmLevel.WARNING: 0.05, AlarmLevel.CRITICAL: 0.20})
    clear_at: dict[AlarmLevel, float] = field(default_factory=lambda: {
        AlarmLevel.NOTICE: 0.005, AlarmLevel.WARNING: 0.025, AlarmLevel.CRITICAL: 0.10})
    min_hold_s: float = 0.5
    min_pkts: int = 10

    def __post_init__(self) -> None:
        levels = [AlarmLevel.NOTICE, AlarmLevel.WARNING, AlarmLevel.CRITICAL]
        for lv in levels:
            if not 0 <= self.clear_at[lv] < self.raise_at[lv]:
                raise ValueError(f"alarm {lv.name}: clear threshold {self.clear_at[lv]} must be "
                                 f"below the raise threshold {self.raise_at[lv]}")
        for lo, hi in zip(levels, levels[1:]):
            if self.raise_at[lo] >= self.raise_at[hi] or self.clear_at[lo] >= self.clear_at[hi]:
                raise ValueError(f"alarm thresholds must grow with the level ({lo.name} < {hi.name})")


@dataclass(slots=True)
class LinkAlarm:
    """The state of one link: level, when it was entered, last rate seen."""

    level: AlarmLevel = AlarmLevel.CLEAR
    since_s: float = 0.0
    last_rate: float = 0.0
    last_t_s: float = 0.0


def mark_rate(marks: int, tx_pkts: int, min_pkts: int = 10) -> float:
    """Marks per packet of one interval; 0 below ``min_pkts`` packets.

    >>> mark_rate(5, 100), mark_rate(5, 3)
    (0.05, 0.0)
    """
    if tx_pkts < max(min_pkts, 1) or marks <= 0:
        return 0.0
    return min(marks / tx_pkts, 1.0)


class AlarmMonitor:
    """The alarm state machines of every link direction seen so far.

    Feed it with :meth:`observe` (one call per link and interval, time in seconds from any
    fixed origin, non-decreasing per link); it returns an :class:`AlarmEvent` when the
    link's level changes. :meth:`level` and :meth:`active` read the state.
    """

    def __init__(self, thresholds: Optional[AlarmThresholds] = None) -> None:
        self.thresholds = thresholds or AlarmThresholds()
        self.links: dict[LinkKey, LinkAlarm] = {}
        self.reported: dict[LinkKey, AlarmLevel] = {}   # the switches' own levels
        self._since: dict[LinkKey, float] = {}          # when the current alarm began

    def report(self, link: LinkKey, t_s: float, level: AlarmLevel,
               mark_rate: float) -> Optional[AlarmEvent]:
        """The switch of ``link`` decided ``level`` (its data-plane alarm, ``mark_rate`` of
        the window that decided it); an event when the link's level changes."""
        old = self.level(link)
        self.reported[link] = AlarmLevel(level)
        new = self.level(link)
        if new == old:
            return None
        st = self.links.setdefault(link, LinkAlarm(since_s=t_s))
        st.last_rate, st.last_t_s = mark_rate, t_s
        return self._event(link, t_s, old, new, mark_rate)

    def observe(self, link: LinkKey, t_s: float, marks: int, tx_pkts: int) -> Optional[AlarmEvent]:
        """One interval's marks and packets on ``link`` ending at ``t_s``."""
        th = self.thresholds
        rate = mark_rate(marks, tx_pkts, th.min_pkts)
        st = self.links.get(link)
        if st is None:
            st = self.links[link] = LinkAlarm(since_s=t_s)
        before = self.level(link)
        st.last_rate, st.last_t_s = rate, t_s
        up = max((lv for lv, x in th.raise_at.items() if rate >= x), default=AlarmLevel.CLEAR)
        new = st.level
        if up > st.level:
            new = AlarmLevel(up)
        elif (st.level > AlarmLevel.CLEAR and rate < th.clear_at[st.level]
              and t_s - st.since_s >= th.min_hold_s):
            new = max((lv for lv, x in th.clear_at.items() if lv < st.level and rate >= x),
                      default=AlarmLevel.CLEAR)
            new = AlarmLevel(new)
        if new == st.level:
            return None
        st.level, st.since_s = new, t_s
        after = self.level(link)
        if after == before:
            return None                     # the switch's own level still rules
        return self._event(link, t_s, before, after, rate)

    def _event(self, link: LinkKey, t_s: float, old: AlarmLevel, new: AlarmLevel,
               rate: float) -> AlarmEvent:
        """The event of a change of ``link``'s level; notes when an alarm begins or ends."""
        if new == AlarmLevel.CLEAR:
            self._since.pop(link, None)
        elif old == AlarmLevel.CLEAR:
            self._since[link] = t_s
        return AlarmEvent(link, t_s, old, new, rate)

    def alarm_since(self, link: LinkKey) -> Optional[float]:
        """When ``link``'s current alarm began (its level left CLEAR; higher levels since
        do not restart it); None when it is CLEAR."""
        return self._since.get(link) if self.level(link) > AlarmLevel.CLEAR else None

    def level(self, link: LinkKey) -> AlarmLevel:
        """The current level of ``link``: the higher of the counters' and the switch's
        (CLEAR when never seen)."""
        st = self.links.get(link)
        polled = st.level if st else AlarmLevel.CLEAR
        return max(polled, self.reported.get(link, AlarmLevel.CLEAR))

    def active(self, at_least: AlarmLevel = AlarmLevel.NOTICE) -> list[LinkKey]:
        """Links at ``at_least`` or above, worst first (then by name)."""
        keys = set(self.links) | set(self.reported)
        hits = [(self.level(k), k) for k in keys if self.level(k) >= at_least]
        return [k for _, k in sorted(hits, key=lambda x: (-x[0], x[1]))]

    def forget_report(self, link: LinkKey) -> None:
        """Drop the switch's own level of ``link`` (the switch restarted: its alarm state
        began again at CLEAR without a report); the counters' level stays."""
        self.reported.pop(link, None)
        if self.level(link) == AlarmLevel.CLEAR:
            self._since.pop(link, None)

    def forget(self, link: LinkKey) -> None:
        """Drop the state of a link (it went down or was removed)."""
        self.links.pop(link, None)
        self.reported.pop(link, None)
        self._since.pop(link, None)


__all__ = ["AlarmMonitor", "AlarmThresholds", "LinkAlarm", "mark_rate"]
