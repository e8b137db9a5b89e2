"""The flow-level engine: hand-checked max-min cases, agreement with GOR's reference
``max_min_fair``, and the event loop's re-solving at completions and arrivals."""
from __future__ import annotations

import random

import numpy as np
import pytest

from controller.gor.simulate import max_min_fair
from sim.engine import FlowSet, max_min_rates, simulate


def test_two_flows_on_one_link_share_it_equally() -> None:
    rates = max_min_rates(np.array([[0], [0]]), np.array([10e9]))
    assert rates.tolist() == [5e9, 5e9]
    r = simulate(FlowSet.of([[0], [0]], [5e9, 5e9]), np.array([10e9]))
    assert r.finish_s.tolist() == pytest.approx([1.0, 1.0])
    assert r.utilisation(np.array([10e9]))[0] == pytest.approx(1.0)


def test_progressive_filling_three_links_by_hand() -> None:
    # links A=0 (cap 10), B=1 (cap 4), C=2 (cap 9)
    # f0: A        f1: A,B      f2: B        f3: B,C      f4: C
    # B is the first bottleneck: 4/3 each for f1,f2,f3; then A: f0 = 10 - 4/3 = 26/3;
    # then C: f4 = 9 - 4/3 = 23/3
    links = np.array([[0, -1], [0, 1], [1, -1], [1, 2], [2, -1]])
    rates = max_min_rates(links, np.array([10.0, 4.0, 9.0]))
    assert rates.tolist() == pytest.approx([26 / 3, 4 / 3, 4 / 3, 4 / 3, 23 / 3])


def test_rate_caps_and_dead_links() -> None:
    rates = max_min_rates(np.array([[0], [0], [1]]), np.array([10.0, 0.0]), np.array([2.0, np.inf, np.inf]))
    assert rates.tolist() == pytest.approx([2.0, 8.0, 0.0])


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_gor_reference_max_min(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        nl, n = rng.randint(1, 6), rng.randint(1, 9)
        cap = {l: float(rng.choice([1, 2, 3, 5, 8])) for l in range(nl)}
        paths = [rng.sample(range(nl), rng.randint(1, min(4, nl))) for _ in range(n)]
        ref = max_min_fair({i: (p, 1e12) for i, p in enumerate(paths)}, cap)
        links = np.full((n, 4), -1)
        for i, p in enumerate(paths):
            links[i, :len(p)] = p
        got = max_min_rates(links, np.array([cap[l] for l in range(nl)]))
        assert got == pytest.approx([ref[i] for i in range(n)], rel=1e-9)


def test_completion_frees_capacity_for_the_rest() -> None:
    # two flows on one 1 B/s link: 1 B and 3 B. Both at 0.5 until t=2 (short done),
    # then the long one alone at 1: 3 - 1 = 2 B left -> t = 4
    r = simulate(FlowSet.of([[0], [0]], [1.0, 3.0]), np.array([1.0]))
    assert r.finish_s.tolist() == pytest.approx([2.0, 4.0])
    assert r.solves == 2


def test_arrival_resolves_rates() -> None:
    # f0 alone from t=0 (4 B at 1 B/s); f1 (1 B) arrives at t=1 and takes half:
    # f1 done at t=3, f0 has 4 - 1 - 1 = 2 B left at t=3 -> t=5
    r = simulate(FlowSet.of([[0], [0]], [4.0, 1.0], starts=[0.0, 1.0]), np.array([1.0]))
    assert r.finish_s.tolist() == pytest.approx([5.0, 3.0])
    assert r.fct_s.tolist() == pytest.approx([5.0, 2.0])


def test_skipped_and_zero_rate_flows_never_finish() -> None:
    r = simulate(FlowSet.of([[0], [1]], [1.0, 1.0]), np.array([1.0, 0.0]), skip=np.array([False, False]))
    assert r.finish_s[0] == pytest.approx(1.0) and np.isinf(r.finish_s[1])
