"""The three-tier probe plan tells every core and spine route apart
(``monitor.probes``: ``held_routes``, ``route_told_apart``, the route pass of
``plan_probes``): on the two-pod dual-port spec, with any one of them deleted — every
probe path to its prefix through that switch losing everything, every other path
arriving — the localiser's own blackhole rule (``monitor.linkrules.blackhole_rule``)
names exactly that route and nothing else. The coverage pass alone (32 paths) names none
of the 24 (i29-scen: a core's route was named as the far spine's)."""
from __future__ import annotations

import pytest

from monitor.evidence import Evidence, PathStats
from monitor.linkrules import blackhole_rule
from monitor.localiser import Localiser
from monitor.pathview import LocaliserConfig, PathView
from monitor.probeplan import ProbePlan
from monitor.probes import coverage_gaps, held_routes, tier_fabric_links
from monitor.tomography import estimate
from pod2plans import pod2_fabric, pod2_plan

FABRIC = pod2_fabric()
CFG = LocaliserConfig()


@pytest.fixture(scope="module")
def plans() -> tuple[ProbePlan, ProbePlan]:
    return pod2_plan(), pod2_plan(tell_routes=False)     # built once per process (pod2plans)


def named(plan: ProbePlan, switch: str, prefix: str) -> list[str]:
    """What the blackhole rule names when ``switch`` drops ``prefix`` (full windows)."""
    dead = {p.name for p in plan.paths if plan.dst_prefix[p.name] == prefix and switch in p.switches}
    ev = Evidence(0.0, paths={p.name: PathStats(p.name, 3.0, 30, 0 if p.name in dead else 30)
                              for p in plan.paths},
                  path_links=plan.path_links(), path_dst_prefix=dict(plan.dst_prefix),
                  switch_up={s.name: True for s in FABRIC.switches})
    return [c.component for c in blackhole_rule(ev, PathView.of(ev, CFG), CFG, set())]


def test_the_held_routes_are_every_cores_and_each_spines_own_pods() -> None:
    assert held_routes(FABRIC, []) == []
    prefixes = ["10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"]
    held = held_routes(FABRIC, prefixes)
    roles = {s.name: s.role for s in FABRIC.switches}
    assert len([h for h in held if roles[h[0]] == "core"]) == 4 * 4
    assert len([h for h in held if roles[h[0]] == "spine"]) == 4 * 2
    assert ("s0", "10.0.2.0/24") not in held and ("p1.s0", "10.0.2.0/24") in held


def test_every_core_and_spine_route_deleted_is_named_exactly(plans) -> None:
    plan, _ = plans
    held = held_routes(FABRIC, set(plan.dst_prefix.values()))
    assert len(held) == 24
    wrong = {f"route {sw} {prefix}": named(plan, sw, prefix) for sw, prefix in held}
    wrong = {k: v for k, v in wrong.items() if v != [k]}
    assert wrong == {}


def localised(plan: ProbePlan, switch: str, prefix: str) -> list[tuple[str, str]]:
    """What the whole localiser (tomography first, every rule) names over 7 s of 0.5 s
    evaluations when ``switch`` drops ``prefix`` from t = 2 s (3 s windows)."""
    dead = {p.name for p in plan.paths if plan.dst_prefix[p.name] == prefix and switch in p.switches}
    loc, out = Localiser(), []
    for i in range(15):
        t = i * 0.5
        stats = {p.name: PathStats(p.name, 3.0, 30, 0 if p.name in dead and t >= 2.0 else 30)
                 for p in plan.paths}
        ev = Evidence(t, links=estimate(plan.paths, stats), paths=stats, path_links=plan.path_links(),
                      path_dst_prefix=dict(plan.dst_prefix),
                      switch_up={s.name: True for s in FABRIC.switches}, controller_up=True)
        out += [(v.kind, v.component) for v in loc.observe(ev)]
    return out


def test_the_whole_localiser_names_each_deleted_route_and_nothing_else(plans) -> None:
    plan, _ = plans
    held = held_routes(FABRIC, set(plan.dst_prefix.values()))
    got = {f"route {sw} {prefix}": localised(plan, sw, prefix) for sw, prefix in held}
    assert {k: v for k, v in got.items() if v != [("blackhole", k)]} == {}


def test_the_coverage_pass_alone_names_none_of_them(plans) -> None:
    """The failure this pass fixes: every probe through a core also crossed the same two
    spines, and none to that prefix around the core did."""
    _, cover = plans
    held = held_routes(FABRIC, set(cover.dst_prefix.values()))
    assert not [h for h in held if named(cover, *h) == [f"route {h[0]} {h[1]}"]]


def test_the_route_pass_keeps_coverage_and_a_prober_can_tell_its_paths_apart(plans) -> None:
    plan, cover = plans
    assert coverage_gaps(plan.paths, tier_fabric_links(FABRIC)) == [] and plan.uncovered == {}
    assert len({(p.src_ip, p.dst_ip, p.sport) for p in plan.paths}) == len(plan.paths)
    assert len(cover.paths) < len(plan.paths) <= 2 * len(cover.paths)
    cross_pod = [p for p in plan.paths if len(p.switches) == 5]
    in_pod = [p for p in plan.paths if len(p.switches) == 3]
    assert cross_pod and len(cross_pod) + len(in_pod) == len(plan.paths)
