"""The data-plane alarm and elephant contracts of ``fabric.p4``: table parameters and a
bit-exact model of what the switch reports.

``FabricEgress.alarms`` (``include/control/alarms.p4``) turns ECN marks into alarm levels
in the switch itself; ``FabricIngress.elephants`` (``include/control/elephants.p4``)
reports heavy hitters. This module is the one owner of their contract, as
:mod:`p4src.hashmodel` is of ECMP's: the controller builds the table entries from
:class:`AlarmLevels` / :class:`ElephantConfig` and decodes the digests with
:func:`alarm_report` / :func:`elephant_report`; tests and labs predict what the switch
must send with :class:`PortAlarmModel`. Nothing here imports p4sim or the controller (the CRCs are :mod:`p4src.hashmodel`'s).

What one egress port does per normal IPv4 packet (``PortAlarmModel.packet``):

* the packet joins the current window (the first packet at least ``window_us`` after
  the window began closes it and opens the next one);
* **down, at a window's end**: the closed window's mark rate (0 with fewer than
  ``min_pkts`` packets, or when a whole window has passed idle since: an old window
  says nothing of now) below the clear threshold of the current level, held at least
  ``hold_us``, lowers the level to the highest one whose clear threshold it still meets;
* **up, at once**: otherwise, once the window holds ``min_pkts`` packets, the highest
  level whose raise threshold the window's rate reaches, if above the current level.

Rates are compared without division, as the target does: ``marks * 1000 >= pm * pkts``.

Example::

    >>> levels = AlarmLevels(window_us=1000, min_pkts=4)
    >>> port = PortAlarmModel(levels)
    >>> [port.packet(now_us=t, marked=t >= 3) for t in range(1, 5)][-1]
    AlarmReport(level=3, prev_level=0, marks=2, pkts=4, window_us=3, max_qdepth=0, seq=1)
    >>> levels.table_params()["critical_pm"]
    200
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Optional

from p4src.hashmodel import crc16_arc, crc32, pack_fields

ALARM_TABLE = "FabricEgress.alarms.config"
ALARM_ACTION = "FabricEgress.alarms.set_alarm_levels"
ALARM_DIGEST = "alarm_digest_t"
ELEPHANT_TABLE = "FabricIngress.elephants.config"
ELEPHANT_ACTION = "FabricIngress.elephants.track"
ELEPHANT_DIGEST = "elephant_digest_t"
#: reasons of an elephant digest
ELEPHANT_CROSSED = 1
ELEPHANT_ALARMED = 2
#: cells per stage of the heavy-hitter table (``ELEPHANT_SLOTS`` in define.p4)
ELEPHANT_SLOTS = 1024
#: fingerprints are crc32 % 2**31 (``ELEPHANT_FP_SPACE``); 0 is read as 1
ELEPHANT_FP_SPACE = 1 << 31

_U16 = 0xFFFF
_U32 = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class AlarmLevels:
    """One port's alarm configuration: the parameters of ``set_alarm_levels``.

    Thresholds are marks per thousand packets (per mille); raise and clear per level,
    clear below raise, both growing with the level. The defaults are GOR's
    (NOTICE 1 % / 0.5 %, WARNING 5 % / 2.5 %, CRITICAL 20 % / 10 %).

    >>> AlarmLevels(notice_pm=0)
    Traceback (most recent call last):
    ...
    ValueError: alarm levels: notice_clear_pm (5) must be below notice_pm (0), both within 0..1000
    """

    window_us: int = 10_000
    hold_us: int = 100_000
    min_pkts: int = 10
    notice_pm: int = 10
    warning_pm: int = 50
    critical_pm: int = 200
    notice_clear_pm: int = 5
    warning_clear_pm: int = 25
    critical_clear_pm: int = 100

    def __post_init__(self) -> None:
        for name, value, top in (("window_us", self.window_us, _U32),
                                 ("hold_us", self.hold_us, _U32),
                                 ("min_pkts", self.min_pkts, _U16)):
            if not 0 <= value <= top:
                raise ValueError(f"alarm levels: {name} = {value} is outside 0..{top}")
        if self.window_us == 0:
            raise ValueError("alarm levels: window_us must be positive")
        for level in ("notice", "warning", "critical"):
            up, down = getattr(self, f"{level}_pm"), getattr(self, f"{level}_clear_pm")
            if not 0 <= down < up <= 1000:
                raise ValueError(f"alarm levels: {level}_clear_pm ({down}) must be below "
                                 f"{level}_pm ({up}), both within 0..1000")
        if not (self.notice_pm < self.warning_pm < self.critical_pm
                and self.notice_clear_pm < self.warning_clear_pm < self.critical_clear_pm):
            raise ValueError("alarm levels: thresholds must grow with the level "
                             "(notice < warning < critical)")

    def raise_pm(self, level: int) -> int:
        """The raise threshold of level 1..3."""
        return (self.notice_pm, self.warning_pm, self.critical_pm)[level - 1]

    def clear_pm(self, level: int) -> int:
        """The clear threshold of level 1..3."""
        return (self.notice_clear_pm, self.warning_clear_pm, self.critical_clear_pm)[level - 1]

    def table_params(self) -> dict[str, int]:
        """The action parameters of ``FabricEgress.alarms.set_alarm_levels``."""
        return {"window_us": self.window_us, "hold_us": self.hold_us,
                "min_pkts": self.min_pkts, "notice_pm": self.notice_pm,
                "warning_pm": self.warning_pm, "critical_pm": self.critical_pm,
                "notice_clear_pm": self.notice_clear_pm,
                "warning_clear_pm": self.warning_clear_pm,
                "critical_clear_pm": self.critical_clear_pm}

    @classmethod
    def from_fractions(cls, raise_at: Mapping[int, float], clear_at: Mapping[int, float],
                       **kw: Any) -> "AlarmLevels":
        """From marks-per-packet fractions keyed by level 1..3 (GOR's ``AlarmThresholds``).

        >>> AlarmLevels.from_fractions({1: .01, 2: .05, 3: .2}, {1: .005, 2: .025, 3: .1}).warning_pm
        50
        """
        pm = {lv: round(x * 1000) for lv, x in raise_at.items()}
        cpm = {lv: round(x * 1000) for lv, x in clear_at.items()}
        return cls(notice_pm=pm[1], warning_pm=pm[2], critical_pm=pm[3],
                   notice_clear_pm=cpm[1], warning_clear_pm=cpm[2], critical_clear_pm=cpm[3],
                   **kw)


@dataclass(frozen=True, slots=True)
class AlarmReport:
    """One ``alarm_digest_t`` (less the switch and port): a port's level changed.

    ``marks``/``pkts`` are the window that decided it, ``window_us`` how long that window
    had run, ``seq`` the port's report count (a gap means reports were overwritten
    before a packet carried them)."""

    level: int
    prev_level: int
    marks: int
    pkts: int
    window_us: int
    max_qdepth: int
    seq: int

    @property
    def mark_rate(self) -> float:
        """Marks per packet of the deciding window."""
        return self.marks / self.pkts if self.pkts else 0.0


class PortAlarmModel:
    """What ``FabricEgress.alarms`` does on one port, packet by packet (bit-exact for
    32-bit counters and a 48-bit microsecond clock that never reads 0)."""

    def __init__(self, levels: AlarmLevels) -> None:
        self.levels = levels
        self.start_us = 0
        self.marks = 0
        self.pkts = 0
        self.max_qdepth = 0
        self.level = 0
        self.since_us = 0
        self.seq = 0

    def packet(self, now_us: int, marked: bool, qdepth: int = 0) -> Optional[AlarmReport]:
        """One packet leaves the port at ``now_us``; the report it makes, if any."""
        lv = self.levels
        cur, new = self.level, self.level
        report: Optional[tuple[int, int, int, int]] = None
        if self.start_us != 0 and now_us - self.start_us >= lv.window_us:
            idle = now_us - self.start_us >= 2 * lv.window_us      # a whole window idle since
            m = self.marks if self.pkts >= lv.min_pkts and not idle else 0
            lhs = m * 1000
            if cur and lhs < lv.clear_pm(cur) * self.pkts and now_us - self.since_us >= lv.hold_us:
                new = next((x for x in range(cur - 1, 0, -1)
                            if lhs >= lv.clear_pm(x) * self.pkts), 0)
            report = (self.marks, self.pkts, self.max_qdepth, now_us - self.start_us)
            self.start_us = 0
        if self.start_us == 0:
            self.start_us, self.marks, self.pkts, self.max_qdepth = now_us or 1, 0, 0, 0
        self.marks = (self.marks + int(marked)) & _U32
        self.pkts = (self.pkts + 1) & _U32
        self.max_qdepth = max(self.max_qdepth, qdepth)
        if new == cur and self.pkts >= lv.min_pkts:
            lhs = self.marks * 1000
            up = next((x for x in (3, 2, 1) if lhs >= lv.raise_pm(x) * self.pkts), 0)
            if up > cur:
                new = up
                report = (self.marks, self.pkts, self.max_qdepth, now_us - self.start_us)
        if new == cur:
            return None
        assert report is not None
        self.level, self.since_us = new, now_us
        self.seq = (self.seq + 1) & _U32
        marks, pkts, maxq, length = report
        return AlarmReport(new, cur, marks, pkts, length & _U32, maxq, self.seq)


@dataclass(frozen=True, slots=True)
class ElephantConfig:
    """The parameters of ``FabricIngress.elephants.track``: a flow is an elephant when it
    sends ``threshold_pkts`` packets within ``window_us`` of its window's first packet;
    when its port's alarm rises, every flow with ``alarm_min_pkts`` or more in its window
    is reported (reason 2) with the next packet, elephant yet or not (at least 2: one gap
    measures a rate).

    >>> ElephantConfig(8, 100_000).table_params()
    {'threshold_pkts': 8, 'window_us': 100000, 'alarm_min_pkts': 2}
    >>> ElephantConfig(8, 100_000, alarm_min_pkts=1)
    Traceback (most recent call last):
    ValueError: elephants: alarm_min_pkts = 1 is outside 2..4294967295
    """

    threshold_pkts: int
    window_us: int
    alarm_min_pkts: int = 2

    def __post_init__(self) -> None:
        if not 1 <= self.threshold_pkts <= _U32:
            raise ValueError(f"elephants: threshold_pkts = {self.threshold_pkts} is outside 1..{_U32}")
        if not 1 <= self.window_us <= _U32:
            raise ValueError(f"elephants: window_us = {self.window_us} is outside 1..{_U32}")
        if not 2 <= self.alarm_min_pkts <= _U32:
            raise ValueError(f"elephants: alarm_min_pkts = {self.alarm_min_pkts} is outside 2..{_U32}")

    def table_params(self) -> dict[str, int]:
        """The action parameters of ``FabricIngress.elephants.track``."""
        return {"threshold_pkts": self.threshold_pkts, "window_us": self.window_us,
                "alarm_min_pkts": self.alarm_min_pkts}


class ElephantCells(NamedTuple):
    """Where ``FabricIngress.elephants`` keeps a flow: its fingerprint and its cell in each
    stage."""

    fingerprint: int
    stage1: int
    stage2: int


def elephant_cells(port: int, src_addr: int, dst_addr: int, protocol: int, src_port: int,
                   dst_port: int) -> ElephantCells:
    """The cells of a flow, as the switch computes them: the key (egress port 9 bits,
    addresses 32, protocol 8, UDP ports 16 each; 0 without UDP) packed MSB-first; stage 1
    at crc16 % 1024, the fingerprint crc32 % 2**31, stage 2 at its low 10 bits.

    >>> elephant_cells(2, 0x0A000001, 0x0A000002, 17, 50001, 4791).stage2 < ELEPHANT_SLOTS
    True
    """
    data = pack_fields([(port, 9), (src_addr, 32), (dst_addr, 32), (protocol, 8),
                        (src_port, 16), (dst_port, 16)])
    fp = crc32(data) % ELEPHANT_FP_SPACE
    return ElephantCells(fp or 1, crc16_arc(data) % ELEPHANT_SLOTS, fp & (ELEPHANT_SLOTS - 1))


@dataclass(frozen=True, slots=True)
class ElephantReport:
    """One ``elephant_digest_t``: a heavy hitter on ``port``; ``packets`` in the
    ``window_us`` its window has run (its rate), ``reason`` 1 crossed, 2 its port alarmed."""

    switch_id: int
    port: int
    src_addr: int
    dst_addr: int
    protocol: int
    src_port: int
    dst_port: int
    reason: int
    level: int
    packets: int
    window_us: int

    @property
    def rate_pps(self) -> float:
        """Packets per second over its window: ``packets - 1`` gaps since the window's
        first packet in ``window_us`` (0 when the window has not run yet)."""
        return (self.packets - 1) * 1e6 / self.window_us if self.window_us else 0.0


_ALARM_FIELDS = ("switch_id", "port", "level", "prev_level", "marks", "pkts", "window_us",
                 "max_qdepth", "seq")
_ELEPHANT_FIELDS = tuple(ElephantReport.__slots__)


def _fields(data: Mapping[str, int], names: tuple[str, ...], what: str) -> dict[str, int]:
    missing = [n for n in names if n not in data]
    if missing:
        raise ValueError(f"{what}: missing field(s) {', '.join(missing)}")
    return {n: int(data[n]) for n in names}


def alarm_report(data: Mapping[str, int]) -> tuple[int, int, AlarmReport]:
    """``(switch_id, port, report)`` of one decoded ``alarm_digest_t`` member; a missing
    field or a level outside 0..3 raises ``ValueError`` naming it.

    >>> alarm_report({"switch_id": 11, "port": 5, "level": 2, "prev_level": 0, "marks": 6,
    ...               "pkts": 40, "window_us": 900, "max_qdepth": 9, "seq": 1})[2].mark_rate
    0.15
    """
    f = _fields(data, _ALARM_FIELDS, ALARM_DIGEST)
    for name in ("level", "prev_level"):
        if not 0 <= f[name] <= 3:
            raise ValueError(f"{ALARM_DIGEST}: {name} = {f[name]} is not a level (0..3)")
    if f["marks"] > f["pkts"]:
        raise ValueError(f"{ALARM_DIGEST}: marks ({f['marks']}) exceed pkts ({f['pkts']})")
    return f["switch_id"], f["port"], AlarmReport(
        f["level"], f["prev_level"], f["marks"], f["pkts"], f["window_us"], f["max_qdepth"],
        f["seq"])


def elephant_report(data: Mapping[str, int]) -> ElephantReport:
    """One decoded ``elephant_digest_t`` member; a missing field or an unknown reason
    raises ``ValueError`` naming it."""
    f = _fields(data, _ELEPHANT_FIELDS, ELEPHANT_DIGEST)
    if f["reason"] not in (ELEPHANT_CROSSED, ELEPHANT_ALARMED):
        raise ValueError(f"{ELEPHANT_DIGEST}: reason = {f['reason']} is not 1 or 2")
    return ElephantReport(**f)


__all__ = ["ALARM_ACTION", "ALARM_DIGEST", "ALARM_TABLE", "AlarmLevels", "AlarmReport",
           "ELEPHANT_ACTION", "ELEPHANT_ALARMED", "ELEPHANT_CROSSED", "ELEPHANT_DIGEST",
           "ELEPHANT_FP_SPACE", "ELEPHANT_SLOTS", "ELEPHANT_TABLE", "ElephantCells",
           "ElephantConfig", "ElephantReport", "PortAlarmModel", "alarm_report",
           "elephant_cells", "elephant_report"]
