"""Workloads: a job placed on servers, its collective as phases of concurrent transfers
(from TCCL's planner), and background traffic.

* **Placement** (:func:`place_job`): ``contiguous`` (the first servers in fabric order),
  ``fragmented`` (runs of ``fragment_servers`` servers with equal gaps: every other run,
  then the gaps when more are needed) or ``random`` (a seeded sample, listed in fabric
  order as a scheduler would).
* **Phases** (:func:`collective_phases`): the planner (``host.tccl.planner.Planner``)
  gives the order and the edges; a phase is one set of concurrent transfers repeated
  ``repeat`` times (the collective's time is the sum of ``repeat × phase time``):

  - ring AllReduce / AllGather / ReduceScatter: one step (every ring edge sends
    ``size / n``) repeated 2(n−1) or n−1 times; with ``channels`` C, C rings run at once,
    ring c being the planner's order with every rank moved to GPU ``(g + c) mod G`` of its
    server (NCCL's channels: each leaves a server by another NIC), each with ``size/(n·C)``;
  - tree AllReduce: the planner's tree edges, a reduce phase (child → parent) and a
    broadcast phase (parent → child) of ``size`` each (pipelined: all levels at once);
  - All-to-All: pairwise rounds k = 1..n−1 (position i sends ``size / n`` to i + k of the
    planner's order); ``tccl`` order relays a chunk for another rail over NVLink to the
    local GPU of that rail first (rail-aligned, as the planner counts it). At most
    ``alltoall_rounds`` rounds, evenly spaced, are simulated and scaled to n−1.
* **Background** (:func:`background_flows`): flows between random NICs on different
  leaves (another tenant: random source ports, no TCCL agent), concurrent with each phase.

Example::

    >>> from topo.model import build_fabric
    >>> from sim.topology import SimFabric
    >>> sf = SimFabric.build(build_fabric())
    >>> job = place_job(sf, gpus=8, placement="contiguous")
    >>> ph = collective_phases(sf, job, "allreduce", 8 << 20)
    >>> (len(ph), ph[0].repeat, len(ph[0].src_nic))
    (1, 14.0, 8)
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from host.tccl.planner import Planner, PlanError, Rank, ranks_from_fabric
from sim.topology import SimFabric, SimInputError

PLACEMENTS = ("contiguous", "fragmented", "random")


@dataclass(slots=True)
class Job:
    """A placed job: its servers (rank order) and ranks (``host.tccl.planner.Rank``)."""

    servers: list[str]
    ranks: list[Rank]
    gpus_per_server: int

    @property
    def num_ranks(self) -> int:
        """Number of ranks (GPUs) of the job."""
        return len(self.ranks)


@dataclass(slots=True)
class Phase:
    """Concurrent transfers ``src_nic[i] → dst_nic[i]`` of ``size_bytes[i]`` (NIC ids),
    repeated ``repeat`` times (a fraction for sampled All-to-All rounds)."""

    name: str
    src_nic: np.ndarray
    dst_nic: np.ndarray
    size_bytes: np.ndarray
    repeat: float


def place_job(sf: SimFabric, gpus: int, placement: str = "contiguous", seed: int = 1,
              gpus_per_server: Optional[int] = None, fragment_servers: int = 16) -> Job:
    """Choose servers for ``gpus`` ranks; ``SimInputError`` when the fabric is too small."""
    rails = sf.rails
    g = rails if gpus_per_server is None else gpus_per_server
    if not 1 <= g <= rails:
        raise SimInputError(f"job.gpus_per_server: {g}: servers have 1..{rails} GPUs (one per rail)")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 2:
        raise SimInputError(f"job.gpus: must be an integer of at least 2, got {gpus!r}")
    hosts = [h.name for h in sf.fabric.hosts]
    total = len(hosts) * g
    if gpus > total:
        raise SimInputError(f"job.gpus: {gpus} ranks asked but the fabric has {total} GPUs "
                            f"({len(hosts)} servers x {g} GPUs)")
    if gpus % g:
        raise SimInputError(f"job.gpus: {gpus} is not a multiple of gpus_per_server ({g})")
    n = gpus // g
    if placement == "contiguous":
        chosen = hosts[:n]
    elif placement == "fragmented":
        k = max(1, fragment_servers)
        runs = [hosts[i:i + k] for i in range(0, len(hosts), k)]
        ordered = [h for r in runs[0::2] for h in r] + [h for r in runs[1::2] for h in r]
        pick = set(ordered[:n])
        chosen = [h for h in hosts if h in pick]
    elif placement == "random":
        pick = set(random.Random(seed).sample(hosts, n))
        chosen = [h for h in hosts if h in pick]
    else:
        raise SimInputError(f"job.placement: unknown placement {placement!r} (known: {', '.join(PLACEMENTS)})")
    try:
        ranks = ranks_from_fabric(sf.fabric, chosen, g)
    except PlanError as exc:
        raise SimInputError(f"job: {exc}") from None
    return Job(chosen, ranks, g)


def _nics(sf: SimFabric, ranks: Sequence[Rank]) -> np.ndarray:
    return np.array([sf.host_index[r.server] * sf.rails + r.rail for r in ranks], np.int64)


def _channel_map(job: Job, c: int) -> np.ndarray:
    """Rank id -> rank id on GPU ``(g + c) mod G`` of the same server (c = 0: itself)."""
    if c == 0:
        return np.arange(len(job.ranks), dtype=np.int64)
    by = {(r.server, r.gpu): r.rank for r in job.ranks}
    return np.array([by[(r.server, (r.gpu + c) % job.gpus_per_server)] for r in job.ranks], np.int64)


def collective_phases(sf: SimFabric, job: Job, collective: str, size_bytes: int,
                      algorithm: str = "ring", order: str = "tccl", channels: int = 1,
                      alltoall_rounds: int = 8) -> list[Phase]:
    """The phases of one collective of ``size_bytes`` per rank (module docstring)."""
    planner = Planner(sf.fabric, job.ranks)
    try:
        plan = planner.plan(collective, size_bytes, algorithm, order)
    except PlanError as exc:
        raise SimInputError(f"workload: {exc}") from None
    nic = _nics(sf, planner.ranks)
    n = job.num_ranks
    if collective == "alltoall":
        return _alltoall(sf, job, plan.order, size_bytes, order == "tccl", alltoall_rounds)
    if algorithm == "tree":
        a = np.array([e[0] for e in plan.edges], np.int64)
        b = np.array([e[1] for e in plan.edges], np.int64)
        size = np.full(len(a), float(size_bytes))
        return [Phase("tree-reduce", nic[b], nic[a], size, 1.0),
                Phase("tree-broadcast", nic[a], nic[b], size.copy(), 1.0)]
    if not 1 <= channels <= job.gpus_per_server:
        raise SimInputError(f"workload.channels: {channels}: must be 1..{job.gpus_per_server} (GPUs per server)")
    ring = np.array(plan.order, np.int64)
    nxt = np.roll(ring, -1)
    src, dst = [], []
    for c in range(channels):
        cmap = _channel_map(job, c)
        src.append(nic[cmap[ring]])
        dst.append(nic[cmap[nxt]])
    s, d = np.concatenate(src), np.concatenate(dst)
    chunk = size_bytes / n / channels
    return [Phase(f"{collective}-ring-step", s, d, np.full(len(s), chunk), float(plan.rounds))]


def _alltoall(sf: SimFabric, job: Job, order: list[int], size_bytes: int, relay: bool,
              max_rounds: int) -> list[Phase]:
    n = job.num_ranks
    ranks = sorted(job.ranks, key=lambda r: r.rank)
    nic = _nics(sf, ranks)
    gpu_at = {(r.server, r.rail): r.rank for r in ranks}
    server = np.array([sf.host_index[r.server] for r in ranks])
    rail = np.array([r.rail for r in ranks])
    ordr = np.array(order, np.int64)
    ks = sorted({max(1, min(n - 1, round(1 + i * (n - 2) / max(1, max_rounds - 1))))
                 for i in range(min(max_rounds, n - 1))})
    chunk = size_bytes / n
    phases = []
    for k in ks:
        a, b = ordr, np.roll(ordr, -k)
        src = a.copy()
        extra_s, extra_d = [], []
        if relay:
            for i in np.flatnonzero((server[a] != server[b]) & (rail[a] != rail[b])).tolist():
                via = gpu_at.get((ranks[a[i]].server, int(rail[b[i]])))
                if via is not None:
                    extra_s.append(a[i])
                    extra_d.append(via)
                    src[i] = via
        s = np.concatenate([nic[src], nic[np.array(extra_s, np.int64)]])
        d = np.concatenate([nic[b], nic[np.array(extra_d, np.int64)]])
        phases.append(Phase(f"alltoall-round-{k}", s, d, np.full(len(s), chunk), (n - 1) / len(ks)))
    return phases


def background_flows(sf: SimFabric, flows: int, size_bytes: float, seed: int = 2,
                     exclude_hosts: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``flows`` background flows (source NIC, destination NIC, size) between random NICs
    on different leaves, avoiding the job's servers when others exist."""
    if flows <= 0:
        e = np.zeros(0, np.int64)
        return e, e.copy(), np.zeros(0)
    rng = np.random.default_rng(seed)
    excluded = {sf.host_index[h] for h in exclude_hosts}
    hosts = np.array([i for i in range(len(sf.fabric.hosts)) if i not in excluded] or
                     list(range(len(sf.fabric.hosts))), np.int64)
    src = hosts[rng.integers(0, len(hosts), flows)] * sf.rails + rng.integers(0, sf.rails, flows)
    dst = hosts[rng.integers(0, len(hosts), flows)] * sf.rails + rng.integers(0, sf.rails, flows)
    for _ in range(100):
        same = sf.nic_leaf[src] == sf.nic_leaf[dst]
        if not same.any():
            break
        m = int(same.sum())
        dst[same] = hosts[rng.integers(0, len(hosts), m)] * sf.rails + rng.integers(0, sf.rails, m)
    keep = sf.nic_leaf[src] != sf.nic_leaf[dst]
    return src[keep], dst[keep], np.full(int(keep.sum()), float(size_bytes))


__all__ = ["Job", "PLACEMENTS", "Phase", "background_flows", "collective_phases", "place_job"]
