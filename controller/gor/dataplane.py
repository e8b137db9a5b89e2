"""What the switches report on their own: ECN alarm levels (``alarm_digest_t``) and
elephants (``elephant_digest_t``) decided in the data plane (``p4src/include/control/
alarms.p4`` and ``elephants.p4``; the contract is :mod:`p4src.alarmmodel`).

:class:`DataplaneReports` takes the decoded digest rows of every switch and keeps, per
link (switch, egress port), the last level the switch reported and the elephants it
reported with their rates. It checks what it is given: a row that does not decode, names
an unknown switch or a port that is not a fabric link is *malformed*; an alarm whose
``seq`` is not newer than the last one of its link (a digest list delivered late, or
twice) is *stale*, unless it is 1 (the switch's first report: it restarted); both are counted and dropped. A gap in ``seq`` means the switch made
reports no packet carried before the next one overwrote them: counted as *overwritten*
(the level is the latest, so nothing is lost but the intermediate levels).

The loop (:class:`controller.gor.loop.GorLoop`) feeds the levels into its
:class:`~controller.gor.alarms.AlarmMonitor` (:meth:`AlarmMonitor.report
<controller.gor.alarms.AlarmMonitor.report>`) and the decision rounds rank a link's
elephants from :meth:`DataplaneReports.elephants_on` when the switch reported any: the
Top-N are known the moment the alarm arrives, no sampling window to fill.

Example::

    >>> dp = DataplaneReports({11: "b0r0l0"}, links=frozenset({("b0r0l0", 3)}))
    >>> dp.alarm("b0r0l0", {"switch_id": 11, "port": 3, "level": 2, "prev_level": 0,
    ...     "marks": 3, "pkts": 40, "window_us": 900, "max_qdepth": 12, "seq": 1}, t_s=1.0)
    DataplaneAlarm(link=('b0r0l0', 3), level=2, prev_level=0, mark_rate=0.075, max_qdepth=12, seq=1, t_s=1.0)
    >>> _ = dp.elephant("b0r0l0", {"switch_id": 11, "port": 3, "src_addr": 0x0A000001,
    ...     "dst_addr": 0x0A010001, "protocol": 17, "src_port": 49152, "dst_port": 4791,
    ...     "reason": 1, "level": 0, "packets": 4, "window_us": 50_000}, t_s=1.0)
    >>> {str(f): pps for f, pps in dp.elephants_on(("b0r0l0", 3), t_s=1.1).items()}
    {'10.0.0.1:49152->10.1.0.1:4791/17': 60.0}
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from p4src.alarmmodel import ALARM_DIGEST, ELEPHANT_DIGEST, alarm_report, elephant_report

from controller.gor.decisions import FlowKey, LinkKey

DATAPLANE_DIGESTS = (ALARM_DIGEST, ELEPHANT_DIGEST)
"""The digests a switch sends on its own (GOR enables them with lists of one)."""

_SEQ_HALF = 1 << 31


@dataclass(frozen=True, slots=True)
class DataplaneAlarm:
    """One alarm report, as GOR acts on it."""

    link: LinkKey
    level: int
    prev_level: int
    mark_rate: float
    max_qdepth: int
    seq: int
    t_s: float


@dataclass(slots=True)
class _Reported:
    rate_pps: float
    packets: int
    reason: int
    t_s: float


@dataclass(slots=True)
class DataplaneCounts:
    """Rows taken and dropped, by kind (exported and shown by ``controller status``)."""

    alarms: int = 0
    elephants: int = 0
    malformed: int = 0
    stale: int = 0
    overwritten: int = 0
    last_error: str = ""


@dataclass(slots=True)
class DataplaneReports:
    """Per link: the last alarm report and the elephants reported (see the module
    docstring). ``switch_ids`` maps digest switch ids to names; ``links`` are the links a
    report may name; an elephant counts for ``max_age_s`` after its last report."""

    switch_ids: Mapping[int, str]
    links: frozenset[LinkKey]
    max_age_s: float = 1.0
    counts: DataplaneCounts = field(default_factory=DataplaneCounts)
    seq: dict[LinkKey, int] = field(default_factory=dict)
    level: dict[LinkKey, int] = field(default_factory=dict)
    elephants: dict[LinkKey, dict[FlowKey, _Reported]] = field(default_factory=dict)

    def _link(self, switch: str, switch_id: int, port: int) -> LinkKey:
        name = self.switch_ids.get(switch_id)
        if name is None:
            raise ValueError(f"unknown switch id {switch_id}")
        if name != switch:
            raise ValueError(f"switch id {switch_id} is {name}, not {switch}")
        link = (name, port)
        if link not in self.links:
            raise ValueError(f"{name} port {port} is not a fabric link")
        return link

    def _bad(self, switch: str, what: str, exc: Exception) -> None:
        self.counts.malformed += 1
        self.counts.last_error = f"{switch}: {what}: {exc}"

    def alarm(self, switch: str, row: Mapping[str, int], t_s: float) -> Optional[DataplaneAlarm]:
        """Take one ``alarm_digest_t`` row from ``switch``; the report, or None when it is
        malformed or stale (counted)."""
        try:
            switch_id, port, rep = alarm_report(row)
            link = self._link(switch, switch_id, port)
        except (ValueError, TypeError) as exc:
            self._bad(switch, ALARM_DIGEST, exc)
            return None
        last = self.seq.get(link)
        restarted = rep.seq == 1 and last != 1     # its first report again: it restarted
        if last is not None and not restarted:
            ahead = (rep.seq - last) % (1 << 32)
            if ahead == 0 or ahead >= _SEQ_HALF:
                self.counts.stale += 1
                return None
            self.counts.overwritten += ahead - 1
        self.seq[link] = rep.seq
        self.level[link] = rep.level
        self.counts.alarms += 1
        return DataplaneAlarm(link, rep.level, rep.prev_level, round(rep.mark_rate, 6),
                              rep.max_qdepth, rep.seq, t_s)

    def elephant(self, switch: str, row: Mapping[str, int], t_s: float) -> Optional[FlowKey]:
        """Take one ``elephant_digest_t`` row from ``switch``; the flow, or None when it is
        malformed (counted)."""
        try:
            rep = elephant_report(row)
            link = self._link(switch, rep.switch_id, rep.port)
            flow = FlowKey.of_ints(rep.src_addr, rep.dst_addr, rep.protocol, rep.src_port,
                                   rep.dst_port)
        except (ValueError, TypeError) as exc:
            self._bad(switch, ELEPHANT_DIGEST, exc)
            return None
        self.elephants.setdefault(link, {})[flow] = _Reported(rep.rate_pps, rep.packets,
                                                              rep.reason, t_s)
        self.counts.elephants += 1
        return flow

    def elephants_on(self, link: LinkKey, t_s: float) -> dict[FlowKey, float]:
        """Flow → packets/s of the elephants ``link``'s switch reported within
        ``max_age_s`` (older reports are forgotten)."""
        got = self.elephants.get(link)
        if not got:
            return {}
        for flow in [f for f, r in got.items() if t_s - r.t_s > self.max_age_s]:
            del got[flow]
        return {f: r.rate_pps for f, r in got.items()}

    def forget(self, link: LinkKey) -> None:
        """Drop what is known of ``link`` (a switch restarted: its seq starts again)."""
        self.seq.pop(link, None)
        self.level.pop(link, None)
        self.elephants.pop(link, None)

    def forget_switch(self, switch: str) -> None:
        """:meth:`forget` every link of ``switch``."""
        for link in [lk for lk in self.links if lk[0] == switch]:
            self.forget(link)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``controller status`` and the metrics."""
        c = self.counts
        return {"alarms": c.alarms, "elephants": c.elephants, "malformed": c.malformed,
                "stale": c.stale, "overwritten": c.overwritten, "last_error": c.last_error}


__all__ = ["DATAPLANE_DIGESTS", "DataplaneAlarm", "DataplaneCounts", "DataplaneReports"]
