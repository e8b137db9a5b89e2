"""A DP AllReduce over whole pods of the cluster, simulated end to end: ``python -m sim
allreduce --cluster sim/clusters/cluster512k.yaml --gpus 524288 --bytes 16GiB``.

Hierarchical, as TCCL runs it across pods (each phase a flow-level simulation of one
ring step, repeated; :mod:`sim.model` adds the per-step host and per-hop overheads):

1. **ReduceScatter inside every pod**: the planner's ring over the pod's GPUs
   (``order``: ``tccl`` = rail-aligned, or ``rank``), ``channels`` rings at once
   (``sim.workloads.collective_phases``), n−1 steps of ``size/(n·channels)``, simulated
   by ``sim.policies.run_phase`` under the policy (TCCL's ports, GOR's rounds, ...).
2. **AllReduce between pods**: GPU g of pod p and GPU g of every other pod form a ring
   (same rail, same server position: rail-aligned), 2(P−1) steps of ``size/(n·P)``; every
   GPU sends one flow per step over leaf → spine → core → spine → leaf
   (:mod:`sim.cluster.fabric`; ports of :mod:`sim.cluster.ports`).
3. **AllGather inside every pod**: the ring of step 1 backwards in data, the same flows
   and chunk: its step time is step 1's.

**Aggregation.** Pods share no link in steps 1 and 3, so the cluster's step is one pod's:
pod 0 (the pod plan) is simulated and stands for every pod, a class of ``pods``
symmetric copies (exact for ``tccl`` and ``ideal``, which balance every pod alike; under
``random_ecmp`` each pod draws its own collisions and pod 0's draw is reported;
``all_pods=True`` simulates every pod with its own addresses, seeds and ports and keeps
the slowest, :meth:`SimCluster.pod_view`). Step 2
is simulated whole: one flow per GPU (524,288 on the 512K cluster), no aggregation; its
flows all have one size and start together, so the engine's makespan is computed in
closed form (``sim.engine.equal_flows_makespan``: exact, proof there) — the event loop
ran 10 minutes without finishing on random ECMP's many distinct bottleneck levels here.

Bus bandwidth is NCCL's: ``size × 2(N−1)/N / time``. The bottleneck tier of a phase is
the tier of the most utilised link on the path of its slowest flow (the first on the
path when several are equally full: the NIC before the fabric).

Example::

    >>> from sim.cluster.spec import cluster_from_dict
    >>> from sim.cluster.fabric import SimCluster
    >>> sc = SimCluster.build(cluster_from_dict({"pod": {"blocks": 2, "servers_per_block": 4,
    ...     "rails": 2, "spines": 4}, "pods": 2, "cores_per_plane": 2, "spine_core_uplinks": 8}))
    >>> r = cluster_allreduce(sc, 32, 64 << 20, "tccl")
    >>> [p.name for p in r.phases], r.pods, r.bottleneck_tier
    (['reducescatter-in-pod', 'allreduce-across-pods', 'allgather-in-pod'], 2, 'nic_up')
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from sim.cluster.fabric import SimCluster
from sim.cluster.ports import gor_core, tccl_cluster_ports
from sim.engine import equal_flows_makespan
from sim.model import ModelParams, features_of, predict
from sim.policies import POLICIES, GorOptions, run_phase
from sim.ports import random_ports
from sim.topology import TIERS, SimInputError
from sim.workloads import collective_phases, place_job

INTER_POD_HOPS = 5            # leaf, spine, core, spine, leaf


@dataclass(slots=True)
class ClusterPhase:
    """One phase: ``repeat`` steps of ``step_s`` (slowest flow), the flows simulated
    (``copies`` symmetric pods stand behind each in-pod flow), switches crossed by the
    slowest flow, the bottleneck tier and its utilisation, GOR's work."""

    name: str
    repeat: float
    step_s: float
    flows: int
    hops: int
    bottleneck_tier: str
    bottleneck_util: float
    gor: str = ""
    copies: int = 1


@dataclass(slots=True)
class ClusterAllReduceResult:
    """The AllReduce of ``size_bytes`` per GPU on ``gpus`` GPUs (``pods`` pods)."""

    policy: str
    gpus: int
    pods: int
    size_bytes: float
    phases: list[ClusterPhase]
    time_s: float
    wall_s: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def busbw_GBps(self) -> float:
        """NCCL's bus bandwidth (GB/s): ``size × 2(N−1)/N / time``."""
        n = self.gpus
        return self.size_bytes * 2 * (n - 1) / n / self.time_s / 1e9

    @property
    def transfer_s(self) -> float:
        """The simulated transfers alone: ``Σ repeat × step`` (the rest of ``time_s`` is the
        per-step host and per-hop overheads of :mod:`sim.model`)."""
        return sum(p.repeat * p.step_s for p in self.phases)

    @property
    def bottleneck_tier(self) -> str:
        """The bottleneck tier of the phase that takes the most time."""
        return max(self.phases, key=lambda p: p.repeat * p.step_s).bottleneck_tier

    def summary_lines(self) -> list[str]:
        """The printed report."""
        out = [f"cluster allreduce: {self.gpus:,} GPUs ({self.pods} pods), {self.size_bytes / 2**30:g} GiB "
               f"per GPU, policy {self.policy}",
               f"{'phase':24} {'steps':>7} {'step':>12} {'flows simulated':>18} {'hops':>4}  bottleneck"]
        for p in self.phases:
            flows = f"{p.flows:,}" + (f" (x{p.copies} pods)" if p.copies > 1 else "")
            out.append(f"{p.name:24} {p.repeat:7.0f} {p.step_s * 1e6:9.3f} us {flows:>18} {p.hops:4}  "
                       f"{p.bottleneck_tier} ({p.bottleneck_util:.0%}){'  ' + p.gor if p.gor else ''}")
        over = self.time_s - self.transfer_s
        steps = sum(p.repeat for p in self.phases)
        out.append(f"time {self.time_s * 1e3:.3f} ms (transfers {self.transfer_s * 1e3:.3f} ms, per-step "
                   f"overheads {over * 1e3:.3f} ms over {steps:,.0f} steps), bus bandwidth "
                   f"{self.busbw_GBps:.1f} GB/s, bottleneck tier {self.bottleneck_tier}"
                   + ("; most of the time is the ring's per-step latency" if over > self.transfer_s else ""))
        out.append(f"simulated in {self.wall_s:.2f} s (" + ", ".join(f"{k} {v:.2f}" for k, v in self.timings.items())
                   + ")")
        return out


def _bottleneck(links: np.ndarray, util: np.ndarray, fct: np.ndarray, tiers: np.ndarray,
                names: tuple[str, ...]) -> tuple[str, float]:
    """The tier of the most utilised link on the slowest flow's path (first on the path on a tie)."""
    if not len(fct):
        return "-", 0.0
    path = links[int(np.argmax(fct))]
    path = path[path >= 0]
    u = util[path]
    j = int(np.flatnonzero(u >= u.max() * (1 - 1e-6))[0])
    return names[int(tiers[path[j]])], float(u[j])


def _inter_pod(sc: SimCluster, pods: int, size_bytes: float, policy: str, seed: int,
               gor: GorOptions) -> tuple[ClusterPhase, dict[str, float]]:
    """One step of the AllReduce between pods (module docstring, step 2)."""
    t0 = time.perf_counter()
    n_pod = sc.pod.nic_ip.shape[0]
    nic = np.tile(np.arange(n_pod, dtype=np.int64), pods)
    sp = np.repeat(np.arange(pods, dtype=np.int64), n_pod)
    dp = (sp + 1) % pods
    chunk = size_bytes / n_pod / pods
    note = ""
    if policy == "ideal":
        links = sc.ideal(sp, nic, dp, nic)
    else:
        sport = random_ports(len(nic), seed) if policy == "random_ecmp" else tccl_cluster_ports(sc, sp, nic, dp, nic)
        links = sc.route(sp, nic, dp, nic, sport)
    t1 = time.perf_counter()
    if policy == "tccl_gor":
        alone = np.minimum(sc.capacity_Bps[links[:, 0]], sc.capacity_Bps[links[:, -1]])
        g = gor_core(sc, links, sc.capacity_Bps, alone, gor.rounds, gor.top_n, gor.safety)
        note = f"GOR: {g.overrides} core overrides, {g.rejected} refused (75 % rule)"
    t2 = time.perf_counter()
    # every flow of the step has one size and starts at once: the event loop's makespan
    # in closed form (sim.engine.equal_flows_makespan), the bottleneck its worst link
    step, worst = equal_flows_makespan(links, sc.capacity_Bps, chunk)
    tier, u = sc.tier_name(worst), 1.0
    t3 = time.perf_counter()
    return (ClusterPhase("allreduce-across-pods", 2.0 * (pods - 1), step, len(nic), INTER_POD_HOPS, tier, u, note),
            {"inter_ports_route_s": t1 - t0, "inter_gor_s": t2 - t1, "inter_step_s": t3 - t2})


def cluster_allreduce(sc: SimCluster, gpus: int, size_bytes: float, policy: str = "tccl",
                      channels: Optional[int] = None, order: str = "tccl", seed: int = 1,
                      gor: Optional[GorOptions] = None, model: Optional[ModelParams] = None,
                      all_pods: bool = False) -> ClusterAllReduceResult:
    """Simulate the hierarchical AllReduce (module docstring) on ``gpus`` GPUs = whole pods;
    ``channels`` rings in a pod (default one per GPU of a server); ``all_pods``: simulate
    the in-pod steps of every pod (its own addresses, seeds and random ports) and keep
    the slowest, instead of pod 0 for all."""
    t0 = time.perf_counter()
    if policy not in POLICIES:
        raise SimInputError(f"--policy: unknown policy {policy!r} (known: {', '.join(POLICIES)})")
    per_pod = sc.spec.pod_gpus
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < per_pod or gpus % per_pod \
            or gpus > sc.spec.gpus:
        raise SimInputError(f"--gpus: {gpus}: a DP job over whole pods: a multiple of the pod's "
                            f"{per_pod:,} GPUs up to the cluster's {sc.spec.gpus:,}")
    if not size_bytes > 0:
        raise SimInputError(f"--bytes: must be positive, got {size_bytes}")
    pods = gpus // per_pod
    gor = gor or GorOptions()
    job = place_job(sc.pod, per_pod)
    rs = collective_phases(sc.pod, job, "reducescatter", int(size_bytes), order=order,
                           channels=channels or sc.pod.rails)[0]
    t1 = time.perf_counter()
    runs = [run_phase(sc.pod_view(p), rs, policy, seed=seed + p, gor=gor) for p in range(pods if all_pods else 1)]
    slowest = int(np.argmax([r.step_s for r in runs]))
    pr = runs[slowest]
    if any(r.undeliverable for r in runs) or not np.isfinite(pr.step_s):
        raise SimInputError("cluster: flows of the in-pod ring undeliverable")
    tier, u = _bottleneck(pr.links, pr.link_util, pr.fct_s, sc.pod.tier, TIERS)
    hops = int(pr.hops[int(np.argmax(pr.fct_s))])
    note = f"GOR: {sum(r.gor_moves for r in runs)} moves, {sum(r.gor_rejected for r in runs)} refused" \
        if policy == "tccl_gor" else ""
    mismatch = sum(r.gor_path_mismatch for r in runs)
    if mismatch:              # a move whose new port did not take the order's path (never seen)
        note += f", {mismatch} path mismatches"
    if all_pods:
        note = (note + "; " if note else "") + f"slowest pod {slowest}"
    copies = 1 if all_pods else pods
    phases = [ClusterPhase("reducescatter-in-pod", rs.repeat, pr.step_s, len(rs.src_nic) * len(runs), hops, tier,
                           u, note, copies)]
    t2 = time.perf_counter()
    timings = {"pod_phase_s": t2 - t1}
    if pods > 1:
        inter, tm = _inter_pod(sc, pods, size_bytes, policy, seed, gor)
        phases.append(inter)
        timings.update(tm)
    ag = phases[0]
    phases.append(ClusterPhase("allgather-in-pod", rs.repeat, ag.step_s, ag.flows, ag.hops, ag.bottleneck_tier,
                               ag.bottleneck_util, copies=copies))
    p = model or ModelParams()
    total = predict(features_of([(ph.repeat, ph.step_s, ph.hops) for ph in phases]), p)
    res = ClusterAllReduceResult(policy, gpus, pods, float(size_bytes), phases, total, timings=timings)
    res.wall_s = time.perf_counter() - t0
    return res


__all__ = ["ClusterAllReduceResult", "ClusterPhase", "cluster_allreduce"]
