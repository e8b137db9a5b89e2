"""Link tomography from probe paths (monitor.tomography): on the planner's plans, one bad
link is named exactly for any loss from 5 % to 100 %, two bad links far apart are both
named, corruption is told from loss, and too few probes give "unknown"."""
from __future__ import annotations

import itertools
import math
from functools import lru_cache
from typing import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.evidence import LinkDir, PathStats, ProbePath
from monitor.probeplan import ProbePlan
from monitor.probes import fabric_links, plan_probes
from monitor.tomography import Thresholds, bad_links, estimate
from topo.model import build_fabric
from topo.spec import FabricSpec

WINDOW_S = 2.0


LARGER = dict(blocks=2, servers_per_block=4, rails=2, spines=4)


@lru_cache(maxsize=None)
def _plan(larger: bool = False) -> tuple[ProbePlan, tuple[LinkDir, ...]]:
    fab = build_fabric(FabricSpec(**LARGER) if larger else FabricSpec())
    return plan_probes(fab), tuple(fabric_links(fab))


def _stats(paths: Sequence[ProbePath], sent: int, drop: dict[LinkDir, float],
           corrupt: dict[LinkDir, float] = {}) -> dict[str, PathStats]:  # noqa: B006
    """Expected counts: each link keeps ``1 - drop`` of what reaches it; a corrupting link
    turns that share of the frames that cross it into bad-ICRC frames."""
    out = {}
    for p in paths:
        alive, bad = float(sent), 0.0
        for l in p.links:
            alive *= 1.0 - drop.get(l, 0.0)
            bad += (alive - bad) * corrupt.get(l, 0.0)
        lost = sent - math.floor(alive + 1e-9)
        received = sent - lost
        corrupted = min(received, math.ceil(bad - 1e-9))
        out[p.name] = PathStats(p.name, WINDOW_S, sent, received - corrupted, corrupted)
    return out


@settings(max_examples=150, deadline=None)
@given(link_i=st.integers(0, 31), loss=st.floats(0.05, 1.0), sent=st.integers(20, 200))
def test_one_lossy_link_is_named_exactly(link_i: int, loss: float, sent: int) -> None:
    plan, links = _plan()
    link = links[link_i]
    est = estimate(plan.paths, _stats(plan.paths, sent, {link: loss}), links=links)
    bad = bad_links(est)
    assert list(bad) == [str(link)], (str(link), loss, sent, bad)
    e = bad[str(link)]
    lost = sent - math.floor(sent * (1 - loss) + 1e-9)
    assert e.state == ("dead" if lost == sent else "lossy")
    assert e.loss == pytest.approx(lost / sent, abs=1e-9)
    assert e.paths == e.paths_bad >= 2
    assert all(v.state == "ok" for k, v in est.items() if k != str(link))


@settings(max_examples=40, deadline=None)
@given(link_i=st.integers(0, 63), loss=st.floats(0.05, 1.0))
def test_one_lossy_link_is_named_exactly_on_a_larger_fabric(link_i: int, loss: float) -> None:
    plan, links = _plan(larger=True)
    link = links[link_i]
    bad = bad_links(estimate(plan.paths, _stats(plan.paths, 40, {link: loss}), links=links))
    assert list(bad) == [str(link)]


@settings(max_examples=60, deadline=None)
@given(link_i=st.integers(0, 31), ratio=st.floats(0.05, 0.5))
def test_one_corrupting_link_is_named_corrupting(link_i: int, ratio: float) -> None:
    plan, links = _plan()
    link = links[link_i]
    bad = bad_links(estimate(plan.paths, _stats(plan.paths, 100, {}, {link: ratio}), links=links))
    assert list(bad) == [str(link)] and bad[str(link)].state == "corrupting"
    assert bad[str(link)].corrupt == pytest.approx(ratio, abs=0.02)


def _far_pairs(plan: ProbePlan, links: Sequence[LinkDir]) -> list[tuple[LinkDir, LinkDir]]:
    """Pairs of links "far apart": no probe path of one shares any link with a probe path
    of the other. (Nearer pairs can be ambiguous for boolean tomography with two paths
    per link: {a, b} and {c, d} may explain the same bad paths when a's and b's paths
    meet on c and d.)"""
    out = []
    for a, b in itertools.combinations(links, 2):
        la = {l for p in plan.paths if a in p.links for l in p.links}
        lb = {l for p in plan.paths if b in p.links for l in p.links}
        if not la & lb:
            out.append((a, b))
    return out


@pytest.mark.parametrize("loss", [0.05, 0.3, 1.0])
def test_two_bad_links_far_apart_are_both_named(loss: float) -> None:
    plan, links = _plan()
    pairs = _far_pairs(plan, links)
    assert len(pairs) > 20
    for a, b in pairs:
        est = estimate(plan.paths, _stats(plan.paths, 100, {a: loss, b: loss}), links=links)
        assert set(bad_links(est)) == {str(a), str(b)}, (str(a), str(b))


def test_healthy_fabric_is_all_ok() -> None:
    plan, links = _plan()
    est = estimate(plan.paths, _stats(plan.paths, 20, {}), links=links)
    assert {e.state for e in est.values()} == {"ok"} and len(est) == len(links)


def test_too_few_probes_or_no_path_is_unknown() -> None:
    plan, links = _plan()
    stats = _stats(plan.paths, Thresholds().min_probes - 1, {links[0]: 1.0})
    extra = LinkDir("b9r9l0", "s9")
    est = estimate(plan.paths, stats, links=[*links, extra])
    assert {e.state for e in est.values()} == {"unknown"}
    assert est[str(extra)].paths == 0


def test_a_silent_sender_leaves_its_first_link_unknown_and_the_rest_decided() -> None:
    """A host whose prober is down sends nothing: its paths are not measured."""
    plan, links = _plan()
    stats = _stats(plan.paths, 20, {})
    for p in plan.paths_from("b0s0"):
        del stats[p.name]
    est = estimate(plan.paths, stats, links=links)
    assert est["b0s0-eth0->b0r0l0"].state == "unknown"
    assert est["b0r0l0->b0s0-eth0"].state == "ok"


def test_a_single_lost_probe_in_a_small_window_is_not_a_fault() -> None:
    plan, _ = _plan()
    stats = _stats(plan.paths, 100, {})
    p = plan.paths[0]
    stats[p.name] = PathStats(p.name, WINDOW_S, 100, 99)      # 1 % < the 2 % threshold
    assert bad_links(estimate(plan.paths, stats)) == {}


def test_two_bad_links_far_apart_are_both_named_on_a_larger_fabric() -> None:
    plan, links = _plan(larger=True)
    pairs = _far_pairs(plan, links)
    for a, b in pairs[::37]:
        est = estimate(plan.paths, _stats(plan.paths, 50, {a: 0.2, b: 1.0}), links=links)
        bad = bad_links(est)
        assert set(bad) == {str(a), str(b)}, (str(a), str(b))
        assert bad[str(a)].state == "lossy" and bad[str(b)].state == "dead"
