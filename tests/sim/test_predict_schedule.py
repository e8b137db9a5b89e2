"""Pipeline schedules: the simulated 1F1B and interleaved schedules against their closed
forms (the bubble), Megatron's order, the critical path."""
from __future__ import annotations

from collections import Counter

import pytest

from sim.predict.schedule import bubble_fraction, device_order, simulate_pipeline


@pytest.mark.parametrize("p, m", [(1, 4), (2, 2), (4, 8), (8, 32), (16, 192)])
def test_1f1b_makespan_is_m_plus_p_minus_1_passes(p: int, m: int) -> None:
    tf, tb = 1.0, 2.0
    r = simulate_pipeline(p, m, 1, [[tf]] * p, [[tb]] * p, 0.0)
    assert r.makespan_s == pytest.approx((m + p - 1) * (tf + tb))
    busy = m * (tf + tb)
    assert (r.makespan_s - busy) / busy == pytest.approx(bubble_fraction(p, m))


@pytest.mark.parametrize("p, m, v", [(2, 4, 2), (4, 8, 2), (4, 16, 4), (8, 16, 3)])
def test_interleaved_bubble_shrinks_by_v(p: int, m: int, v: int) -> None:
    tf, tb = 1.0, 2.0                          # a whole micro-batch on one GPU; a chunk is 1/v of it
    r = simulate_pipeline(p, m, v, [[tf / v] * v] * p, [[tb / v] * v] * p, 0.0)
    busy = m * (tf + tb)
    assert (r.makespan_s - busy) / busy == pytest.approx(bubble_fraction(p, m, v))


@pytest.mark.parametrize("p, m, v", [(4, 8, 1), (4, 8, 2), (3, 6, 2)])
def test_every_gpu_runs_each_pass_once_in_megatrons_warmup(p: int, m: int, v: int) -> None:
    for s in range(p):
        order = device_order(p, m, v, s)
        assert Counter(order) == Counter([(k, c, b) for k in "FB" for c in range(v) for b in range(m)])
        warm = next(i for i, (k, _, _) in enumerate(order) if k == "B") - 1     # then one F before the first B
        assert warm == (p - s - 1 if v == 1 else min(2 * (p - s - 1) + (v - 1) * p, m * v))


def test_transfers_and_a_slow_last_stage_lengthen_the_iteration() -> None:
    p, m = 4, 8
    base = simulate_pipeline(p, m, 1, [[1.0]] * p, [[2.0]] * p, 0.0).makespan_s
    with_p2p = simulate_pipeline(p, m, 1, [[1.0]] * p, [[2.0]] * p, 0.1).makespan_s
    assert with_p2p >= base + 2 * (p - 1) * 0.1 - 1e-9
    slow = simulate_pipeline(p, m, 1, [[1.0]] * 3 + [[1.5]], [[2.0]] * 3 + [[2.5]], 0.0).makespan_s
    assert slow == pytest.approx(base + m * 1.0)               # the slowest stage sets the steady state


def test_critical_path_is_a_chain_from_the_first_forward_to_the_last_op() -> None:
    r = simulate_pipeline(4, 8, 2, [[0.5, 0.5]] * 4, [[1.0, 1.0]] * 4, 0.05)
    path = r.critical_path()
    assert (path[0].stage, path[0].kind, path[0].mb, path[0].start_s) == (0, "F", 0, 0.0)
    assert path[-1].end_s == r.makespan_s
    for a, b in zip(path, path[1:]):
        assert b.start_s >= a.end_s - 1e-12
