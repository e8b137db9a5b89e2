"""The collective planner: ring / tree orders and All-to-All schedules over a job's ranks
on the fabric, with the bytes each tier carries and an α-β completion time.

Ranks are GPUs: GPU g of a server uses NIC g, i.e. rail g (one GPU per rail,
``topo.model``). A transfer between two ranks uses the cheapest tier that connects them:

* ``nvlink`` — same server (NVSwitch: every GPU pair directly);
* ``leaf``   — different servers, source NIC and destination NIC on the same leaf;
* ``spine``  — anything else (another block, another rail, another leaf of the rail).

Orders:

* ``rank`` — the baseline: ranks in rank order (server-major, GPU 0..R−1 in a server).
  Every server boundary goes from rail R−1 to rail 0, i.e. across the spines.
* ``tccl`` — servers grouped by block and leaf, and a *snake* inside every server
  (GPU 0..R−1, then R−1..0 in the next server) so each server boundary stays on one rail
  and, within a leaf group, on one leaf; only the boundaries between leaf groups cross
  the spines (the minimum for a ring visiting every group).

Collectives and bytes (``size`` = the buffer of one rank, in bytes, n ranks):

* ring AllReduce: 2(n−1) steps of ``size/n`` per ring edge (edge total 2(n−1)/n·size);
  ReduceScatter and AllGather: n−1 steps (edge total (n−1)/n·size).
* tree AllReduce (``tccl``): inside a server a star from the leader GPU (NVLink), across
  servers a binary tree over the leaders by contiguous bisection of the tccl server order
  (subtrees stay inside a leaf group), leaders on one rail. Every tree edge carries
  ``size`` up (reduce) and ``size`` down (broadcast). ``rank``: the same bisection
  directly over the ranks in rank order.
* All-to-All (MoE): every rank sends ``size/n`` to every other; round k pairs position i
  with i+k (mod n) of the order. ``tccl`` is *rail-aligned*: a chunk for another server on
  another rail first crosses NVLink to the local GPU of the destination's rail, then
  travels on that rail (so inside a block it stays under one leaf); ``rank`` sends it
  straight from the source NIC.

α-β model (:class:`TierParams`, defaults in :data:`DEFAULT_TIERS`): a transfer of b bytes
on tier t takes ``alpha_s[t] + b / bytes_per_s[t]``. Defaults: NVLink α 0.2 µs (the seed),
200 GB/s per GPU and direction; leaf α 4 µs (RoCE, the seed), spine α 5 µs (two more switch
hops and a longer cable), both at the fabric's link speed (100 Gb/s = 12.5 GB/s unless the
topology says otherwise). A ring step lasts as long as its slowest edge; a tree takes
``2·(depth·α + size/B)`` on its slowest tier (pipelined); an All-to-All round lasts as long
as its busiest sender (NIC or NVLink port). Contention between concurrent rings is not
modelled.

Example::

    >>> from topo.model import build_fabric
    >>> p = Planner(build_fabric())                      # 2 blocks x 2 servers x 2 rails
    >>> p.plan("allreduce", 8 << 20, order="tccl").bytes_per_tier["spine"] < \\
    ...     p.plan("allreduce", 8 << 20, order="rank").bytes_per_tier["spine"]
    True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

TIERS = ("nvlink", "leaf", "spine")
COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall")
ALGORITHMS = ("ring", "tree")
ORDERS = ("tccl", "rank")


class PlanError(ValueError):
    """Unknown ranks, a bad collective or an impossible plan; the message says which."""


@dataclass(frozen=True, slots=True)
class Rank:
    """One GPU of the job: ``Rank(0, "b0s0", 0, rail=0, block=0, leaf="b0r0l0")``."""

    rank: int
    server: str
    gpu: int
    rail: int
    block: int
    leaf: str


@dataclass(frozen=True, slots=True)
class TierParams:
    """α (seconds) and bandwidth (bytes/s) per tier: ``TierParams().alpha_s["leaf"] == 4e-6``."""

    alpha_s: dict[str, float] = field(default_factory=lambda: {"nvlink": 0.2e-6, "leaf": 4e-6,
                                                               "spine": 5e-6})
    bytes_per_s: dict[str, float] = field(default_factory=lambda: {"nvlink": 200e9, "leaf": 12.5e9,
                                                                   "spine": 12.5e9})

    def time_s(self, tier: str, nbytes: float) -> float:
        """α-β time of one transfer: ``TierParams().time_s("nvlink", 0) == 2e-7``."""
        return self.alpha_s[tier] + nbytes / self.bytes_per_s[tier]


DEFAULT_TIERS = TierParams()


@dataclass(slots=True)
class Plan:
    """A planned collective: the order (rank ids), the transfers as ``(src, dst, bytes)``
    edges or rounds, bytes per tier and the predicted completion time."""

    collective: str
    algorithm: str
    order_kind: str
    size_bytes: int
    order: list[int]
    edges: list[tuple[int, int, float]]
    bytes_per_tier: dict[str, float]
    time_s: float
    rounds: int = 0

    def summary(self) -> str:
        """One line per tier, e.g. ``spine  1.00 MiB``."""
        lines = [f"{self.collective} {self.algorithm} order={self.order_kind} ranks={len(self.order)} "
                 f"size={self.size_bytes} B time={self.time_s * 1e6:.1f} us"]
        total = sum(self.bytes_per_tier.values()) or 1.0
        for t in TIERS:
            b = self.bytes_per_tier[t]
            lines.append(f"  {t:<6} {b / 2**20:12.3f} MiB  {100 * b / total:5.1f} %")
        return "\n".join(lines)


# ----------------------------------------------------------------------------- ranks
def ranks_from_fabric(fabric: object, servers: Optional[Sequence[str]] = None,
                      gpus_per_server: Optional[int] = None) -> list[Rank]:
    """The job's ranks on a ``topo.model.Fabric``: every GPU of ``servers`` (default: all,
    fabric order), rank order server-major. GPU g uses rail g.

    Example::

        >>> from topo.model import build_fabric
        >>> [(r.rank, r.server, r.gpu, r.leaf) for r in ranks_from_fabric(build_fabric(), ["b1s0"])]
        [(0, 'b1s0', 0, 'b1r0l0'), (1, 'b1s0', 1, 'b1r1l0')]
    """
    hosts = {h.name: h for h in fabric.hosts}  # type: ignore[attr-defined]
    names = list(servers) if servers is not None else list(hosts)
    if not names:
        raise PlanError("no servers: a job needs at least one rank")
    out: list[Rank] = []
    for name in names:
        if name not in hosts:
            raise PlanError(f"unknown server {name!r} (not in the topology)")
        h = hosts[name]
        count = gpus_per_server if gpus_per_server is not None else len(h.nics)
        if not 1 <= count <= len(h.nics):
            raise PlanError(f"server {name}: {count} GPUs asked, it has {len(h.nics)} NICs/rails")
        for nic in h.nics[:count]:
            out.append(Rank(len(out), name, nic.rail, nic.rail, h.block, nic.leaf))
    if len({r.server for r in out}) != len(names):
        raise PlanError("a server is listed twice")
    return out


def check_ranks(ranks: Sequence[Rank]) -> None:
    """``PlanError`` unless ranks are 0..n−1, unique, one per (server, GPU)."""
    if not ranks:
        raise PlanError("no ranks")
    ids = sorted(r.rank for r in ranks)
    if ids != list(range(len(ranks))):
        raise PlanError(f"ranks must be 0..{len(ranks) - 1} once each, got {ids[:8]}...")
    seen: set[tuple[str, int]] = set()
    for r in ranks:
        if (r.server, r.gpu) in seen:
            raise PlanError(f"rank {r.rank}: GPU {r.gpu} of {r.server} already has a rank")
        seen.add((r.server, r.gpu))


def tier_of(a: Rank, b: Rank) -> str:
    """The tier a transfer a → b crosses (no relay): ``nvlink``, ``leaf`` or ``spine``."""
    if a.server == b.server:
        return "nvlink"
    return "leaf" if a.leaf == b.leaf else "spine"


# ----------------------------------------------------------------------------- planner
class Planner:
    """Plans collectives for one job on one fabric.

    ``ranks`` default to every GPU of the fabric (:func:`ranks_from_fabric`);
    ``params`` default to :data:`DEFAULT_TIERS` with the leaf/spine bandwidth of the
    fabric's links.

    Example::

        >>> from topo.model import build_fabric
        >>> Planner(build_fabric()).ring_order("tccl")
        [0, 1, 3, 2, 4, 5, 7, 6]
    """

    def __init__(self, fabric: object, ranks: Optional[Sequence[Rank]] = None,
                 params: Optional[TierParams] = None) -> None:
        self.fabric = fabric
        self.ranks = list(ranks) if ranks is not None else ranks_from_fabric(fabric)
        check_ranks(self.ranks)
        self.ranks.sort(key=lambda r: r.rank)
        if params is None:
            spec = getattr(fabric, "spec", None)
            bw = dict(DEFAULT_TIERS.bytes_per_s)
            if spec is not None:
                bw["leaf"] = spec.link_gbps * 1e9 / 8
                bw["spine"] = min(spec.link_gbps, spec.effective_uplink_gbps) * 1e9 / 8
            params = TierParams(dict(DEFAULT_TIERS.alpha_s), bw)
        self.params = params
        # leaf-group position of every leaf: block, then rail, then leaf index (fabric order)
        self._leaf_pos = {s.name: i for i, s in enumerate(getattr(fabric, "switches", []))}

    # ---------------------------------------------------------------- orders
    def rank(self, rank_id: int) -> Rank:
        """The rank ``rank_id``; ``PlanError`` for an unknown rank."""
        if not 0 <= rank_id < len(self.ranks):
            raise PlanError(f"unknown rank {rank_id} (the job has ranks 0..{len(self.ranks) - 1})")
        return self.ranks[rank_id]

    def _servers_tccl(self) -> list[list[Rank]]:
        by_server: dict[str, list[Rank]] = {}
        for r in self.ranks:
            by_server.setdefault(r.server, []).append(r)
        for rs in by_server.values():
            rs.sort(key=lambda r: r.rail)

        def key(rs: list[Rank]) -> tuple[int, int, int]:
            lead = rs[0]
            return (lead.block, self._leaf_pos.get(lead.leaf, 0), lead.rank)
        return sorted(by_server.values(), key=key)

    def ring_order(self, kind: str = "tccl") -> list[int]:
        """Rank ids in ring order (``kind`` ``tccl`` or ``rank``; see the module doc)."""
        if kind == "rank":
            return [r.rank for r in self.ranks]
        if kind != "tccl":
            raise PlanError(f"unknown order {kind!r} (known: {', '.join(ORDERS)})")
        order: list[int] = []
        for i, rs in enumerate(self._servers_tccl()):
            seq = rs if i % 2 == 0 else list(reversed(rs))
            order += [r.rank for r in seq]
        return order

    # ---------------------------------------------------------------- plans
    def plan(self, collective: str, size_bytes: int, algorithm: str = "ring",
             order: str = "tccl") -> Plan:
        """Plan one collective of ``size_bytes`` per rank; ``PlanError`` on bad input."""
        if collective not in COLLECTIVES:
            raise PlanError(f"unknown collective {collective!r} (known: {', '.join(COLLECTIVES)})")
        if algorithm not in ALGORITHMS:
            raise PlanError(f"unknown algorithm {algorithm!r} (known: {', '.join(ALGORITHMS)})")
        if order not in ORDERS:
            raise PlanError(f"unknown order {order!r} (known: {', '.join(ORDERS)})")
        if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or size_bytes < 0:
            raise PlanError(f"size must be a non-negative number of bytes, got {size_bytes!r}")
        if collective == "alltoall":
            if algorithm != "ring":
                raise PlanError("alltoall has one schedule (pairwise rounds); algorithm must be ring")
            return self._alltoall(size_bytes, order)
        if algorithm == "tree":
            if collective != "allreduce":
                raise PlanError(f"tree is planned for allreduce only, not {collective}")
            return self._tree(size_bytes, order)
        return self._ring(collective, size_bytes, order)

    def _ring(self, collective: str, size: int, kind: str) -> Plan:
        order = self.ring_order(kind)
        n = len(order)
        steps = 2 * (n - 1) if collective == "allreduce" else n - 1
        chunk = size / n
        per_edge = steps * chunk
        tiers = {t: 0.0 for t in TIERS}
        edges: list[tuple[int, int, float]] = []
        step_s = 0.0
        if n > 1:
            for i, a in enumerate(order):
                b = order[(i + 1) % n]
                t = tier_of(self.ranks[a], self.ranks[b])
                tiers[t] += per_edge
                edges.append((a, b, per_edge))
                step_s = max(step_s, self.params.time_s(t, chunk))
        return Plan(collective, "ring", kind, size, order, edges, tiers, steps * step_s, steps)

    def _tree(self, size: int, kind: str) -> Plan:
        edges: list[tuple[int, int]] = []
        if kind == "rank":
            order = [r.rank for r in self.ranks]
            depth = _bisect_tree(order, edges)
        else:
            servers = self._servers_tccl()
            order = [r.rank for rs in servers for r in rs]
            rail0 = servers[0][0].rail
            leaders = []
            for rs in servers:
                lead = next((r for r in rs if r.rail == rail0), rs[0])
                leaders.append(lead.rank)
                edges += [(lead.rank, r.rank) for r in rs if r.rank != lead.rank]
            depth = _bisect_tree(leaders, edges) + (1 if any(len(rs) > 1 for rs in servers) else 0)
        tiers = {t: 0.0 for t in TIERS}
        used: set[str] = set()
        for a, b in edges:
            t = tier_of(self.ranks[a], self.ranks[b])
            tiers[t] += 2.0 * size
            used.add(t)
        alpha = max((self.params.alpha_s[t] for t in used), default=0.0)
        beta = max((1.0 / self.params.bytes_per_s[t] for t in used), default=0.0)
        time_s = 2.0 * (depth * alpha + size * beta) if edges else 0.0
        return Plan("allreduce", "tree", kind, size, order, [(a, b, 2.0 * size) for a, b in edges],
                    tiers, time_s, 2 * depth)

    def _alltoall(self, size: int, kind: str) -> Plan:
        order = self.ring_order(kind)
        n = len(order)
        chunk = size / n
        tiers = {t: 0.0 for t in TIERS}
        relay = kind == "tccl"
        gpu_at = {(r.server, r.rail): r for r in self.ranks}
        total_s = 0.0
        for k in range(1, n):
            nic_bytes: dict[tuple[str, int], float] = {}
            nic_tier: dict[tuple[str, int], str] = {}
            nv_bytes: dict[int, float] = {}
            for i in range(n):
                a, b = self.ranks[order[i]], self.ranks[order[(i + k) % n]]
                if a.server == b.server:
                    tiers["nvlink"] += chunk
                    nv_bytes[a.rank] = nv_bytes.get(a.rank, 0.0) + chunk
                    continue
                src = a
                if relay and a.rail != b.rail and (a.server, b.rail) in gpu_at:
                    src = gpu_at[(a.server, b.rail)]
                    tiers["nvlink"] += chunk
                    nv_bytes[a.rank] = nv_bytes.get(a.rank, 0.0) + chunk
                t = tier_of(src, b)
                tiers[t] += chunk
                nic = (src.server, src.rail)
                nic_bytes[nic] = nic_bytes.get(nic, 0.0) + chunk
                if nic_tier.get(nic) != "spine":
                    nic_tier[nic] = t
            worst = max((self.params.time_s("nvlink", v) for v in nv_bytes.values()), default=0.0)
            worst = max([worst] + [self.params.time_s(nic_tier[nic], v) for nic, v in nic_bytes.items()])
            total_s += worst
        return Plan("alltoall", "pairwise", kind, size, order, [], tiers, total_s, max(n - 1, 0))


def _bisect_tree(nodes: Sequence[int], edges: list[tuple[int, int]]) -> int:
    """Binary tree by contiguous bisection: root ``nodes[0]``, children = roots of the two
    halves of the rest (appends ``(parent, child)``); returns the depth in edges."""
    if len(nodes) <= 1:
        return 0
    root, rest = nodes[0], list(nodes[1:])
    half = len(rest) // 2
    depth = 0
    for part in (rest[:half], rest[half:]):
        if part:
            edges.append((root, part[0]))
            depth = max(depth, 1 + _bisect_tree(part, edges))
    return depth


def cross_spine_ratio(planner: Planner, size_bytes: int, collective: str = "allreduce") -> float:
    """Spine bytes of the tccl ring over those of the rank-order ring (0 when neither crosses)."""
    tccl = planner.plan(collective, size_bytes, order="tccl").bytes_per_tier["spine"]
    base = planner.plan(collective, size_bytes, order="rank").bytes_per_tier["spine"]
    return tccl / base if base else 0.0


def parse_ranks(specs: Iterable[str], fabric: object) -> list[Rank]:
    """Ranks from ``SERVER:GPU`` strings in rank order (CLI ``--rank b0s0:0``); ``PlanError``
    for an unknown server or GPU.

    Example::

        >>> from topo.model import build_fabric
        >>> [r.leaf for r in parse_ranks(["b0s1:1", "b1s0:0"], build_fabric())]
        ['b0r1l0', 'b1r0l0']
    """
    hosts = {h.name: h for h in fabric.hosts}  # type: ignore[attr-defined]
    out: list[Rank] = []
    for spec in specs:
        server, _, gpu_text = spec.partition(":")
        if server not in hosts:
            raise PlanError(f"rank {len(out)} ({spec}): unknown server {server!r}")
        try:
            gpu = int(gpu_text)
        except ValueError:
            raise PlanError(f"rank {len(out)} ({spec}): GPU must be a number") from None
        nics = hosts[server].nics
        if not 0 <= gpu < len(nics):
            raise PlanError(f"rank {len(out)} ({spec}): {server} has GPUs 0..{len(nics) - 1}")
        out.append(Rank(len(out), server, gpu, nics[gpu].rail, hosts[server].block, nics[gpu].leaf))
    check_ranks(out)
    return out


__all__ = ["ALGORITHMS", "COLLECTIVES", "DEFAULT_TIERS", "ORDERS", "Plan", "PlanError", "Planner",
           "Rank", "TIERS", "TierParams", "check_ranks", "cross_spine_ratio", "parse_ranks",
           "ranks_from_fabric", "tier_of"]
