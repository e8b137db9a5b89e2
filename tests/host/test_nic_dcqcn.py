"""DCQCN notification and reaction points, step by step with a fake clock."""
from __future__ import annotations

import pytest

from host.nic.dcqcn import DcqcnParams, NotificationPoint, ReactionPoint

G = 1 / 256


def test_np_one_cnp_per_flow_per_interval() -> None:
    np_ = NotificationPoint(cnp_interval_s=0.005)
    assert not np_.on_packet("a", False, 0.0)
    assert np_.on_packet("a", True, 0.001)
    assert not np_.on_packet("a", True, 0.0059)
    assert np_.on_packet("b", True, 0.002)          # other flow: its own interval
    assert np_.on_packet("a", True, 0.006)
    assert (np_.ce_packets, np_.cnps) == (4, 3)


def test_rp_decrease_and_alpha() -> None:
    p = DcqcnParams(line_rate_pps=1000, alpha_timer_s=0.001, rate_timer_s=1e9)
    rp = ReactionPoint(p)
    assert (rp.rate_pps, rp.alpha) == (1000, 1.0)
    rp.on_cnp(0.0)
    assert (rp.rate_pps, rp.target_pps, rp.alpha) == (500, 1000, 1.0)
    rp.advance(0.0035)                               # three α periods without CNPs
    a = (1 - G) ** 3
    assert rp.alpha == pytest.approx(a)
    rp.on_cnp(0.0035)
    assert rp.target_pps == 500
    assert rp.rate_pps == pytest.approx(500 * (1 - a / 2))
    assert rp.alpha == pytest.approx((1 - G) * a + G)


def test_rp_fast_recovery_then_additive() -> None:
    p = DcqcnParams(line_rate_pps=1000, rate_timer_s=0.001, alpha_timer_s=1.0,
                    byte_counter_pkts=10**9, ai_rate_pps=25)
    rp = ReactionPoint(p)
    rp.on_cnp(0.0)
    rp.on_cnp(0.0)                                   # rt 500, rc 250
    assert (rp.target_pps, rp.rate_pps) == (500, 250)
    seen = []
    for k in range(1, 7):
        rp.advance(k * 0.001 + 1e-9)
        seen.append((rp.timer_rounds, rp.target_pps, rp.rate_pps))
    assert seen == [(1, 500, 375), (2, 500, 437.5), (3, 500, 468.75), (4, 500, 484.375),
                    (5, 525, 504.6875), (6, 550, 527.34375)]


def test_rp_hyper_increase_needs_both_counters() -> None:
    p = DcqcnParams(line_rate_pps=1e6, min_rate_pps=1, rate_timer_s=0.001, alpha_timer_s=1.0,
                    byte_counter_pkts=1, ai_rate_pps=10, hai_rate_pps=100)
    rp = ReactionPoint(p)
    rp.on_cnp(0.0)
    rp.on_cnp(0.0)                                    # rt = line / 2: room to grow
    rp.advance(0.0061)                                # timer rounds 1..6
    assert rp.timer_rounds == 6
    deltas = []
    for _ in range(7):
        before = rp.target_pps
        rp.on_sent(0.0061)
        deltas.append(rp.target_pps - before)
    # byte rounds 1..5: max(T, BC) = 6 >= 5 -> additive; 6, 7: hyper with i = min(T, BC) - 5 = 1
    assert deltas == [10, 10, 10, 10, 10, 100, 100]
    rp.advance(0.0071)                                # T = 7, BC = 7: i = 2
    assert rp.target_pps - before - 100 == 200


def test_rp_min_rate_and_recovery_to_line_rate() -> None:
    p = DcqcnParams(line_rate_pps=1000, min_rate_pps=50)
    rp = ReactionPoint(p)
    for i in range(20):
        rp.on_cnp(i * 1e-4)
    assert rp.rate_pps == 50
    t = 0.002
    while rp.rate_pps < 1000 and t < 100:
        t += 0.001
        rp.on_sent(t)
    assert rp.rate_pps == 1000 and t < 10
    rp.advance(3600.0)                                # idle hour: no runaway loop
    assert rp.rate_pps == 1000 and rp.alpha < 1e-6


def test_rp_min_decrease_interval() -> None:
    rp = ReactionPoint(DcqcnParams(line_rate_pps=1000, min_decrease_interval_s=0.01))
    rp.on_cnp(0.0)
    rp.on_cnp(0.005)
    assert (rp.cnps, rp.decreases, rp.rate_pps) == (2, 1, 500)


def test_params_validation_and_scaling() -> None:
    with pytest.raises(ValueError):
        DcqcnParams(min_rate_pps=0)
    with pytest.raises(ValueError):
        DcqcnParams(g=0)
    s = DcqcnParams.scaled(20000, cnp_interval_s=0.01)
    assert (s.ai_rate_pps, s.hai_rate_pps, s.min_rate_pps, s.cnp_interval_s) == (100, 1000, 40, 0.01)
