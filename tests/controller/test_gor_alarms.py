"""GOR alarms: levels from the ECN-mark rate, hysteresis (raise above clear, minimum hold)."""
from __future__ import annotations

import pytest

from controller.gor.alarms import AlarmMonitor, AlarmThresholds, mark_rate
from controller.gor.decisions import AlarmLevel

LINK = ("b0r0l0", 3)


def test_levels_from_mark_rate() -> None:
    for marks, level in ((0, AlarmLevel.CLEAR), (5, AlarmLevel.CLEAR), (10, AlarmLevel.NOTICE),
                         (50, AlarmLevel.WARNING), (200, AlarmLevel.CRITICAL)):
        m = AlarmMonitor()
        m.observe(LINK, 0.0, marks, 1000)
        assert m.level(LINK) is level, marks


def test_raise_is_immediate_and_skips_levels() -> None:
    m = AlarmMonitor()
    ev = m.observe(LINK, 0.0, 300, 1000)
    assert ev is not None and ev.old is AlarmLevel.CLEAR and ev.new is AlarmLevel.CRITICAL and ev.raised
    assert m.active() == [LINK]


def test_hysteresis_between_raise_and_clear() -> None:
    m = AlarmMonitor()
    m.observe(LINK, 0.0, 60, 1000)                       # 6 %: WARNING
    # 3 % is below WARNING's raise (5 %) but above its clear (2.5 %): stays, even after the hold
    assert m.observe(LINK, 2.0, 30, 1000) is None
    assert m.level(LINK) is AlarmLevel.WARNING
    # 2 %: below the clear threshold, hold elapsed -> the highest level still met (NOTICE, 0.5 %)
    ev = m.observe(LINK, 3.0, 20, 1000)
    assert ev is not None and ev.new is AlarmLevel.NOTICE and not ev.raised


def test_minimum_hold_time() -> None:
    m = AlarmMonitor(AlarmThresholds(min_hold_s=1.0))
    m.observe(LINK, 10.0, 100, 1000)
    assert m.observe(LINK, 10.5, 0, 1000) is None          # too soon
    assert m.level(LINK) is AlarmLevel.WARNING
    ev = m.observe(LINK, 11.0, 0, 1000)
    assert ev is not None and ev.new is AlarmLevel.CLEAR


def test_few_packets_are_not_congestion() -> None:
    assert mark_rate(5, 5) == 0.0
    m = AlarmMonitor()
    assert m.observe(LINK, 0.0, 5, 5) is None


def test_bad_thresholds_refused() -> None:
    with pytest.raises(ValueError):
        AlarmThresholds(clear_at={AlarmLevel.NOTICE: 0.02, AlarmLevel.WARNING: 0.025,
                                  AlarmLevel.CRITICAL: 0.1})


def test_links_are_independent_and_event_logs() -> None:
    m = AlarmMonitor()
    m.observe(LINK, 0.0, 300, 1000)
    m.observe(("s0", 1), 0.0, 60, 1000)
    assert m.active() == [LINK, ("s0", 1)]
    assert m.active(AlarmLevel.CRITICAL) == [LINK]
    ev = AlarmMonitor().observe(LINK, 1.0, 300, 1000)
    assert ev is not None and ev.to_dict()["new"] == "CRITICAL"


def test_an_alarm_begins_once_whichever_source_raises_or_keeps_it() -> None:
    m = AlarmMonitor()
    link = ("s0", 1)
    assert m.alarm_since(link) is None
    m.observe(link, 1.0, marks=20, tx_pkts=1000)                       # NOTICE from the counters
    m.report(link, 1.2, AlarmLevel.CRITICAL, mark_rate=0.3)            # higher: the same alarm
    m.observe(link, 1.8, marks=0, tx_pkts=1000)                        # counters clear, the switch not
    assert m.level(link) == AlarmLevel.CRITICAL and m.alarm_since(link) == 1.0
    m.report(link, 2.0, AlarmLevel.CLEAR, mark_rate=0.0)
    assert m.alarm_since(link) is None
    m.report(link, 2.5, AlarmLevel.WARNING, mark_rate=0.06)            # a new alarm
    assert m.alarm_since(link) == 2.5
    m.forget_report(link)                                               # the switch restarted
    assert m.alarm_since(link) is None
