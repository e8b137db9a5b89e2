"""Run one scenario: build the fabric, place the job, plan the collective, simulate every
phase under every policy, predict the collective's time.

Example::

    >>> from sim.scenario import scenario_from_dict
    >>> sc = scenario_from_dict({"fabric": {"spec_file": "topo/specs/default.yaml"},
    ...                          "job": {"gpus": 8}, "workload": {"order": "rank", "size_bytes": 1 << 20}})
    >>> out = run_scenario(sc)
    >>> [r.policy for r in out.results], out.results[0].collective_s > 0
    (['random_ecmp', 'tccl', 'tccl_gor', 'ideal'], True)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from sim.model import Features, ModelParams, features_of, predict
from sim.policies import PhaseResult, run_phase
from sim.scenario import Scenario
from sim.topology import TIER, SimFabric, SimInputError
from sim.workloads import Job, background_flows, collective_phases, place_job
from topo.model import build_fabric, load_fabric
from topo.spec import SpecError
from host.tccl.planner import PlanError, parse_ranks


@dataclass(slots=True)
class PolicyResult:
    """One policy's outcome: the collective's predicted time, its features, the phases."""

    policy: str
    collective_s: float
    features: Features
    phases: list[PhaseResult]
    wall_s: float
    undeliverable: int = 0
    examples: list[str] = field(default_factory=list)

    def tier_util(self, sf: SimFabric, tier: str) -> np.ndarray:
        """Utilisation of the live links of one tier by the job over the first phase's step."""
        m = (sf.tier == TIER[tier]) & (sf.capacity_Bps > 0)
        return self.phases[0].link_util[m]


@dataclass(slots=True)
class ScenarioResult:
    """Every policy's result for one scenario, with the fabric and job used."""

    scenario: Scenario
    sf: SimFabric
    job: Job
    results: list[PolicyResult]

    def by_policy(self) -> dict[str, PolicyResult]:
        """Results by policy name."""
        return {r.policy: r for r in self.results}

    def slowdown(self, policy: str) -> float:
        """Collective time of ``policy`` over the ideal bound's (``inf`` if undeliverable)."""
        by = self.by_policy()
        ideal = by["ideal"].collective_s if "ideal" in by else _ideal(self)
        return by[policy].collective_s / ideal if ideal > 0 else float("nan")


def _ideal(res: ScenarioResult) -> float:
    sc = res.scenario
    phases = collective_phases(res.sf, res.job, sc.workload.collective, sc.workload.size_bytes,
                               sc.workload.algorithm, sc.workload.order, sc.workload.channels,
                               sc.workload.alltoall_rounds)
    return _policy(res.sf, phases, "ideal", None, sc).collective_s


def build_sim_fabric(sc: Scenario) -> SimFabric:
    """The scenario's fabric (topology file or spec), failures applied, capacities
    overridden by ``model.link_Bps`` when set."""
    try:
        fab = load_fabric(sc.topology_file) if sc.topology_file else build_fabric(sc.fabric_spec())
    except SpecError as exc:
        raise SimInputError(f"{sc.source}: fabric: {exc}") from None
    sf = SimFabric.build(fab, sc.failures)
    if sc.model.link_Bps:
        sf.set_link_rate(sc.model.link_Bps)
    return sf


def place(sc: Scenario, sf: SimFabric) -> Job:
    """The scenario's job: explicit ``ranks`` or ``gpus`` placed by ``placement``."""
    if sc.job.ranks:
        try:
            ranks = parse_ranks(sc.job.ranks, sf.fabric)
        except PlanError as exc:
            raise SimInputError(f"{sc.source}: job.ranks: {exc}") from None
        servers = list(dict.fromkeys(r.server for r in ranks))
        return Job(servers, ranks, 1)
    return place_job(sf, sc.job.gpus, sc.job.placement, sc.job.seed, sc.job.gpus_per_server,
                     sc.job.fragment_servers)


def _policy(sf: SimFabric, phases: list, policy: str, bg: Optional[tuple], sc: Scenario,
            model: Optional[ModelParams] = None) -> PolicyResult:
    t0 = time.perf_counter()
    prs = [run_phase(sf, ph, policy, bg, sc.seed, sc.gor) for ph in phases]
    per = []
    for pr in prs:
        if pr.undeliverable or not len(pr.fct_s):
            per.append((pr.repeat, float("inf") if pr.undeliverable else 0.0, 0))
            continue
        slow = int(np.argmax(pr.fct_s))
        per.append((pr.repeat, float(pr.fct_s[slow]), int(pr.hops.max())))
    f = features_of(per)
    und = sum(p.undeliverable for p in prs)
    ex = [e for p in prs for e in p.examples][:5]
    return PolicyResult(policy, predict(f, model or sc.model), f, prs, time.perf_counter() - t0, und, ex)


def run_scenario(sc: Scenario, sf: Optional[SimFabric] = None) -> ScenarioResult:
    """Simulate the scenario under each of its policies."""
    sf = sf or build_sim_fabric(sc)
    job = place(sc, sf)
    w = sc.workload
    phases = collective_phases(sf, job, w.collective, w.size_bytes, w.algorithm, w.order,
                               w.channels, w.alltoall_rounds)
    if w.steps is not None:
        if isinstance(w.steps, bool) or not isinstance(w.steps, int) or w.steps < 1:
            raise SimInputError(f"{sc.source}: workload.steps: must be a positive integer, got {w.steps!r}")
        for ph in phases:
            ph.repeat = float(w.steps) / len(phases)
    bg = None
    if sc.background.flows:
        bg = background_flows(sf, sc.background.flows, sc.background.size_bytes, sc.background.seed,
                              job.servers)
    results = [_policy(sf, phases, p, bg, sc) for p in sc.policies]
    return ScenarioResult(sc, sf, job, results)


__all__ = ["PolicyResult", "ScenarioResult", "build_sim_fabric", "place", "run_scenario"]
