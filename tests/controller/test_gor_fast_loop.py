"""GOR's faster loop, with the fake switches of ``test_gor_loop``: a round on the first
alarm level when the overload is proven (marks and utilisation over the safety
threshold), not on marks alone; samples needed per flow sampled; ``busy()`` for the
caller's fast polling; dead-link evidence scaled to short polling intervals."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace as S
from typing import Any

from controller.gor.deadlinks import DeadLinkDetector, DeadLinkThresholds, Evidence, link_evidence
from controller.gor.decisions import AlarmLevel
from test_gor_loop import L0, hot_mix, make, port_to, samples


def with_hot_util(fab: Any, util: float, marks: int) -> Any:
    """``samples`` with the hot path's utilisation set to ``util``."""
    return {lid: (dataclasses.replace(s, util=util) if s.marks else s)
            for lid, s in samples(fab, marks=marks).items()}


def notice_round(util: float, early: bool = True) -> tuple[Any, list[Any]]:
    fab, loop, prog, reg, buf, _ = make(early_decide=early)
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, with_hot_util(fab, util, marks=20))              # 2 % marked: NOTICE
    assert loop.alarms.level((L0, up)) == AlarmLevel.NOTICE
    hot_mix(fab, loop, up)
    return loop, loop.tick(1.05, with_hot_util(fab, util, marks=20))


def test_round_on_notice_when_the_overload_is_proven() -> None:
    loop, rounds = notice_round(util=0.9)
    assert rounds and rounds[0].orders                                 # decided on NOTICE
    assert loop.rounds.overloaded(rounds[0].trigger)


def test_no_round_on_notice_under_the_safety_threshold_or_when_turned_off() -> None:
    assert notice_round(util=0.7)[1] == []                             # marks alone prove nothing
    assert notice_round(util=0.9, early=False)[1] == []                # waits for WARNING


def test_samples_needed_scale_with_the_flows_sampled() -> None:
    _, loop, *_ = make(min_samples=100)
    assert loop.rounds.samples_needed(3) == 100                               # default: fixed
    _, loop, *_ = make(min_samples=100, samples_per_flow=16)
    assert [loop.rounds.samples_needed(n) for n in (1, 2, 5, 6, 10)] == [32, 32, 80, 96, 100]


def test_busy_while_an_alarm_is_up_and_quiet_after() -> None:
    fab, loop, *_ = make()
    loop.tick(1.0, samples(fab, hot_spine="none", marks=0))
    assert not loop.busy()
    loop.tick(1.05, samples(fab, marks=100))
    assert loop.busy()


def test_dead_link_evidence_scales_with_short_intervals() -> None:
    th = DeadLinkThresholds()
    peer = S(rx_pkts=0, reset=False)

    def tx(n: int, dt_s: float) -> Any:
        return S(tx_pkts=n, pfc_rx=0, reset=False, dt_s=dt_s)
    assert link_evidence(tx(10, 0.1), peer, rx_armed=True, forwarded=0, th=th) is Evidence.LOST
    assert link_evidence(tx(10, 0.25), peer, rx_armed=True, forwarded=0, th=th) is None
    assert link_evidence(tx(4, 0.01), peer, rx_armed=True, forwarded=0, th=th) is None   # floor 5
    d = DeadLinkDetector(th)
    d.observe(("b0r0l0", 3), 0.1, Evidence.LOST)
    assert d.suspects() == [("b0r0l0", 3)]
    d.observe(("b0r0l0", 3), 0.2, None)
    assert d.suspects() == []
