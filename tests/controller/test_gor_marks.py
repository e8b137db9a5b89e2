"""GOR starts no round on CE marks the queue cannot explain (controller/gor/markcheck.py):
a port whose packets all saw less than its planned ECN threshold queued (the faults
scenario's wrong_ecn_threshold, or counters read from a stalled switch) raises no alarm,
from the counters or from the switch's own report; the same marks with a queue that
reaches the threshold do."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

from controller.gor.markcheck import MarkCheck, planned_kmin
from controller.telemetry.poller import LinkId, LinkSample
from p4src.alarmmodel import ALARM_DIGEST
from test_gor_dataplane import alarm_row, quiet
from test_gor_loop import L0, events, hot_mix, make, port_to, register, samples


def with_bins(got: dict[LinkId, LinkSample], bins: tuple[int, ...]) -> dict[LinkId, LinkSample]:
    """``got`` with the queue-depth histogram ``bins`` on every link that marks."""
    return {lid: dataclasses.replace(s, qdepth_bins=bins, max_qdepth=4 * (len(bins) - 1)) if s.marks else s
            for lid, s in got.items()}


def test_the_planned_thresholds_are_read_from_the_plan_and_follow_a_new_plan() -> None:
    fab, loop, prog, *_ = make()
    up = port_to(fab, L0, "s0")
    kmin = planned_kmin(prog.plans)
    assert kmin[(L0, up)] == 8 and loop.markcheck.kmin((L0, up)) == 8
    prog.plans[L0] = dataclasses.replace(prog.plans[L0], entries=[])   # e.g. dynamic mode
    assert loop.markcheck.kmin((L0, up)) is None
    assert MarkCheck(SimpleNamespace()).kmin((L0, up)) is None


def test_marks_no_queue_explains_raise_no_alarm_and_start_no_round() -> None:
    """The hot path marks 10 % of its packets while every packet saw 0-3 queued (kmin 8):
    logged once per link as marks_unexplained; no alarm, no sampling, no round."""
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    low = (1000,)
    assert loop.tick(1.0, with_bins(samples(fab), low)) == []
    f, g = hot_mix(fab, loop, up)
    register(fab, reg, f)
    for i in range(5):
        assert loop.tick(round(1.05 + 0.05 * i, 3), with_bins(samples(fab), low)) == []
    evs = events(buf)
    assert [e["event"] for e in evs if e["event"] in ("alarm_raised", "round")] == []
    (odd,) = [e for e in evs if e["event"] == "marks_unexplained" and e["link"] == f"{L0}->s0"]
    assert (odd["link"], odd["marks"], odd["max_qdepth"], odd["kmin_pkts"], odd["source"]) == \
        (f"{L0}->s0", 100, 0, 8, "counters")
    assert (L0, up) not in loop.sampling


def test_the_same_marks_with_a_queue_at_the_threshold_start_the_round() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    deep = (600, 300, 100)                                                # 8-11 packets seen
    assert loop.tick(1.0, with_bins(samples(fab), deep)) == []
    f, g = hot_mix(fab, loop, up)
    register(fab, reg, f)
    rounds = loop.tick(1.05, with_bins(samples(fab), deep))
    assert len(rounds) == 1 and rounds[0].trigger == (L0, up)
    assert "marks_unexplained" not in {e["event"] for e in events(buf)}


def test_a_switch_alarm_whose_queue_stayed_below_the_threshold_is_ignored() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    row: dict[str, Any] = {**alarm_row(fab, L0, up, level=2, seq=1), "max_qdepth": 2}
    loop.submit_digests(L0, SimpleNamespace(name=ALARM_DIGEST, data=[row]))
    loop.tick(1.0, quiet(fab))
    evs = events(buf)
    assert "alarm_raised" not in {e["event"] for e in evs}
    (odd,) = [e for e in evs if e["event"] == "marks_unexplained"]
    assert (odd["source"], odd["max_qdepth"]) == ("switch", 2)
    loop.submit_digests(L0, SimpleNamespace(name=ALARM_DIGEST, data=[alarm_row(fab, L0, up, level=2, seq=2)]))
    loop.tick(1.05, quiet(fab))                                            # max_qdepth 17: real
    assert [e["source"] for e in events(buf) if e["event"] == "alarm_raised"] == ["switch"]


def test_marks_without_a_histogram_are_taken_as_they_are() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    loop.tick(1.0, samples(fab))                                           # no bins: older pipeline
    assert any(e["event"] == "alarm_raised" and e["link"] == f"{L0}->s0" for e in events(buf))
