"""The policies compared side by side, run on one phase of concurrent transfers.

* ``random_ecmp`` — random UDP source ports (plain ECMP, what NCCL does);
* ``tccl`` — TCCL's hash-orthogonal ports (:func:`sim.ports.tccl_ports`);
* ``tccl_gor`` — TCCL's ports, then GOR: the real ``controller.gor.paths.PathEngine`` is
  given the simulated telemetry (every fabric link's load from the max-min rates) and the
  elephants of the congested links (offered load above capacity: what ECN marks reveal;
  the most congested links' flows first, ``top_n`` per round),
  its orders are applied (a :class:`MoveOrder` becomes the flow's new source port, routed
  again through the hash model; an :class:`OverrideOrder` pins the path) and the rates are
  solved again, for up to ``gor_rounds`` rounds;
* ``ideal`` — every leaf's uplinks (and spine links into a leaf) pooled: perfect balance.

Background flows (another tenant) always take random ports and have no TCCL agent.

Example::

    >>> from topo.model import build_fabric
    >>> from sim.topology import SimFabric
    >>> from sim.workloads import place_job, collective_phases
    >>> sf = SimFabric.build(build_fabric())
    >>> ph = collective_phases(sf, place_job(sf, 8), "allreduce", 1 << 20, order="rank")[0]
    >>> r = run_phase(sf, ph, "tccl")
    >>> r.step_s > 0 and r.undeliverable == 0
    True
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from controller.gor.decisions import FlowKey, MoveOrder, OverrideOrder, PathChoice
from controller.gor.paths import DEFAULT_SAFETY, ElephantFlow, LinkState, PathEngine
from sim.engine import FlowSet, link_sums, max_min_rates, simulate
from sim.ports import random_ports, tccl_ports
from sim.routing import ROCE_DPORT, ideal_links, route_flows
from sim.topology import TIER, SimFabric, SimInputError
from sim.workloads import Phase

POLICIES = ("random_ecmp", "tccl", "tccl_gor", "ideal")


@dataclass(slots=True)
class GorOptions:
    """GOR settings: ``rounds`` of decisions, ``top_n`` elephants per round, the 75 % rule."""

    rounds: int = 4
    top_n: int = 100
    safety: float = DEFAULT_SAFETY


@dataclass(slots=True)
class PhaseResult:
    """One phase under one policy: job flows' completion times, the step time (slowest
    job flow), switch hops per job flow, every link's utilisation by the job over the
    step (job bytes / (capacity × step time)), what GOR did, the job flows' links."""

    policy: str
    phase: str
    repeat: float
    fct_s: np.ndarray
    hops: np.ndarray
    step_s: float
    link_util: np.ndarray
    undeliverable: int
    examples: list[str] = field(default_factory=list)
    gor_moves: int = 0
    gor_overrides: int = 0
    gor_rejected: int = 0
    gor_path_mismatch: int = 0
    links: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.int64))   # job flows' links


def _ip(x: int) -> str:
    return str(ipaddress.IPv4Address(int(x)))


def run_phase(sf: SimFabric, phase: Phase, policy: str, background: Optional[tuple[np.ndarray, np.ndarray, np.ndarray]] = None,
              seed: int = 1, gor: Optional[GorOptions] = None) -> PhaseResult:
    """Simulate ``phase`` (plus ``background`` flows) under ``policy``."""
    if policy not in POLICIES:
        raise SimInputError(f"policies: unknown policy {policy!r} (known: {', '.join(POLICIES)})")
    nj = len(phase.src_nic)
    bs, bd, bz = background if background is not None else (np.zeros(0, np.int64),) * 2 + (np.zeros(0),)
    src = np.concatenate([phase.src_nic, bs]).astype(np.int64)
    dst = np.concatenate([phase.dst_nic, bd]).astype(np.int64)
    size = np.concatenate([phase.size_bytes, bz]).astype(np.float64)
    bg_ports = random_ports(len(bs), seed + 7919)
    if policy == "random_ecmp":
        sport = np.concatenate([random_ports(nj, seed), bg_ports])
    else:
        sport = np.concatenate([tccl_ports(sf, phase.src_nic, phase.dst_nic), bg_ports])
    routes = ideal_links(sf, src, dst) if policy == "ideal" else route_flows(sf, src, dst, sport)
    links = routes.links
    res = PhaseResult(policy, phase.name, phase.repeat, np.zeros(0), np.zeros(0), 0.0, np.zeros(0), 0)
    if policy == "tccl_gor":
        _gor(sf, src, dst, sport, links, routes.failed, nj, gor or GorOptions(), res)
    failed = routes.failed
    res.undeliverable = int(failed[:nj].sum())
    for i in np.flatnonzero(failed[:nj])[:5].tolist():
        leaf = sf.leaf_names[sf.nic_leaf[dst[i]]]
        why = (f"unreachable: no live path to leaf {leaf}" if routes.unreachable[i] else
               f"blackholed: hashed onto a spine with no live link to leaf {leaf}")
        res.examples.append(f"{_ip(sf.nic_ip[src[i]])} -> {_ip(sf.nic_ip[dst[i]])}: {why}")
    out = simulate(FlowSet(links, size, np.zeros(len(size)), np.full(len(size), np.inf)), sf.capacity_Bps, skip=failed)
    res.fct_s = out.fct_s[:nj]
    res.links = links[:nj]
    tiers = sf.tier[np.where(links[:nj] >= 0, links[:nj], 0)]
    hop_w = np.where(links[:nj] < 0, 0, np.where(tiers == TIER["nvlink"], 0, 1))
    res.hops = np.maximum(hop_w.sum(axis=1) - 1, 0)        # switches crossed = links - 1
    res.step_s = float(res.fct_s.max()) if nj else 0.0
    # the job's bytes on each link over the step (how well the step used the fabric)
    span = res.step_s if np.isfinite(res.step_s) and res.step_s > 0 else out.makespan_s
    job_bytes = link_sums(links[:nj][~failed[:nj]], size[:nj][~failed[:nj]], sf.num_links)
    with np.errstate(divide="ignore", invalid="ignore"):
        res.link_util = np.nan_to_num(job_bytes / (sf.capacity_Bps * span), nan=0.0, posinf=0.0)
    return res


def _offered(sf: SimFabric, src: np.ndarray, dst: np.ndarray, links: np.ndarray) -> np.ndarray:
    """Per-link offered load: every flow at the rate it would reach alone (its NICs)."""
    alone = np.minimum(sf.capacity_Bps[sf.nic_up[src]], sf.capacity_Bps[sf.nic_down[dst]])
    return link_sums(links, alone, sf.num_links)


def _gor(sf: SimFabric, src: np.ndarray, dst: np.ndarray, sport: np.ndarray, links: np.ndarray,
         failed: np.ndarray, n_job: int, opts: GorOptions, res: PhaseResult) -> None:
    """GOR rounds on the simulated telemetry; changes ``sport`` and ``links`` in place."""
    state = LinkState.from_fabric(sf.fabric)
    state.down |= set(sf.down)
    eng = PathEngine(sf.fabric, sf.hash_model, state, safety=opts.safety)
    fabric_links = np.flatnonzero((sf.tier == TIER["leaf_up"]) | (sf.tier == TIER["spine_down"]))
    ok = ~failed
    for _ in range(opts.rounds):
        rates = np.zeros(len(src))
        rates[ok] = max_min_rates(links[ok], sf.capacity_Bps)
        load = link_sums(links[ok], rates[ok], sf.num_links)
        state.load_bps = {sf.link_keys[l]: float(load[l]) * 8 for l in fabric_links.tolist() if load[l] > 0}
        offered = _offered(sf, src[ok], dst[ok], links[ok])
        with np.errstate(divide="ignore", invalid="ignore"):
            over = np.where(sf.capacity_Bps > 0, offered / sf.capacity_Bps, 0.0)
        hot = fabric_links[over[fabric_links] > 1 + 1e-9]
        if not len(hot):
            return
        hot = hot[np.argsort(-over[hot], kind="stable")]
        on_hot = np.isin(links[:, 1], hot) | np.isin(links[:, 2], hot)
        cand = np.flatnonzero(on_hot & ok & (links[:, 2] >= 0))
        # the elephants of the most congested links first (GOR reacts per alarmed link),
        # fastest first on each
        worst = np.maximum(over[links[cand, 1]], over[links[cand, 2]])
        cand = cand[np.lexsort((-rates[cand], -worst))][:opts.top_n]
        eles, idx = [], []
        for i in cand.tolist():
            up, down = sf.link_keys[links[i, 1]], sf.link_keys[links[i, 2]]
            fk = FlowKey(_ip(sf.nic_ip[src[i]]), _ip(sf.nic_ip[dst[i]]), 17, int(sport[i]), ROCE_DPORT)
            eles.append(ElephantFlow(fk, float(rates[i]) * 8, up[0], sf.leaf_names[sf.nic_leaf[dst[i]]],
                                     current=PathChoice(down[0], (up, down)), has_agent=i < n_job))
            idx.append(i)
        by_flow = {e.flow: i for e, i in zip(eles, idx)}
        dec = eng.decide(eles)
        res.gor_rejected += len(dec.rejected)
        if not dec.orders:
            return
        for order in dec.orders:
            i = by_flow[order.flow]
            want = [sf.link_index[order.path.links[0]], sf.link_index[order.path.links[1]]]
            if isinstance(order, MoveOrder):
                sport[i] = order.new_sport
                r = route_flows(sf, src[i:i + 1], dst[i:i + 1], sport[i:i + 1])
                links[i] = r.links[0]
                res.gor_moves += 1
                if list(links[i, 1:3]) != want:
                    res.gor_path_mismatch += 1
            elif isinstance(order, OverrideOrder):
                links[i, 1:3] = want
                res.gor_overrides += 1


__all__ = ["GorOptions", "POLICIES", "PhaseResult", "run_phase"]
