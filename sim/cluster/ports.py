"""TCCL's source ports across pods, and GOR on the core links.

**TCCL across pods.** A flow between pods crosses three ECMP choices (the source leaf's
uplink group, the source spine's core group, the core's group towards the destination
pod) and a 16-bit source port cannot fix all three in general (7 + 9 + 6 bits on the
512K cluster). TCCL colours the two hops of the source pod, as its planner does inside a
pod: the leaf hop with the planner's Kempe-chain edge colouring (``host.tccl.ports``:
each source leaf's flows to distinct uplinks, each destination leaf reached by each
spine at most once), then the spine's core uplink so that the flows through one spine
take distinct core uplinks. The port is found with the hash model's affine property
(``sim.ports``): ``H(seed, flow, sport) = S(seed) ^ R(flow) ^ T[sport]`` for CRCs over
equal-length messages, so with power-of-two groups the pair (leaf member, spine member)
of every port is one look-up in a 65,536-entry table keyed by ``(T_leaf[p] & (A−1),
T_spine[p] & (U−1))`` (~63 % of the pairs are reachable by some port). Core uplinks are
given in rounds (flow i of a spine proposes member ``i + r``: no two proposals of a round
collide), a flow left without a reachable free member swaps with one that can take its
free member, and only then shares. The core's own hop stays hashed: its collisions are
what GOR is for.

**GOR on the core.** ``controller.gor.paths``' safety rule (75 %): a flow on a core link
whose offered load exceeds its capacity is pinned (an override at its core switch, as
GOR's ``OverrideOrder`` pins a flow without an agent: a new source port would also move
the leaf and spine hops TCCL chose) to the least loaded link of the same core group
towards its destination pod, only if that link stays at or below ``safety`` × capacity
with the flow's current rate added; ``top_n`` elephants per round, the most congested
links' first, ``rounds`` rounds, rates solved again between rounds.

Example::

    >>> from sim.cluster.spec import cluster_from_dict
    >>> from sim.cluster.fabric import SimCluster
    >>> sc = SimCluster.build(cluster_from_dict({"pod": {"blocks": 2, "servers_per_block": 4,
    ...     "rails": 2, "spines": 4}, "pods": 2, "cores_per_plane": 2, "spine_core_uplinks": 8}))
    >>> n = 16
    >>> sp, dp, nic = np.repeat([0, 1], n), np.repeat([1, 0], n), np.tile(np.arange(n), 2)
    >>> ports = tccl_cluster_ports(sc, sp, nic, dp, nic)
    >>> links = sc.route(sp, nic, dp, nic, ports)
    >>> int(np.bincount(links[:, 1]).max()), int(np.bincount(links[:, 2]).max())   # leaf, spine hops
    (1, 1)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controller.gor.paths import DEFAULT_SAFETY
from host.tccl.ports import DEFAULT_PORT_RANGE, kempe_colouring, split_vertices
from sim.cluster.fabric import SimCluster
from sim.engine import link_sums, max_min_rates
from sim.ports import candidate_ports, sport_table
from sim.topology import SimInputError


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _uniform(flags: np.ndarray, what: str) -> bool:
    if flags.min() != flags.max():
        raise SimInputError(f"policy tccl across pods: every {what} must hash with the same CRC")
    return bool(flags[0])


def _leaf_colours(sc: SimCluster, sp: np.ndarray, s: np.ndarray, dp: np.ndarray, d: np.ndarray,
                  A: int) -> np.ndarray:
    """Leaf member per flow: each source leaf's flows on distinct uplinks and each
    destination leaf reached through each colour once (a proper edge colouring of the
    (source leaf, destination leaf) multigraph); the rank of the flow at its source leaf
    when that already is one (a ring step between pods), else the planner's Kempe-chain
    colouring."""
    nl = len(sc.pod.leaf_names)
    u = sp * nl + sc.pod.nic_leaf[s]
    v = dp * nl + sc.pod.nic_leaf[d]
    order = np.argsort(u, kind="stable")
    first = np.searchsorted(u[order], u[order], side="left")
    a = np.empty(len(u), np.int64)
    a[order] = np.arange(len(u)) - first
    over = np.bincount(u).max() > A
    clash = np.bincount(v * A + a % A).max() > 1
    if not over and not clash:
        return a
    us = split_vertices([("u", int(x)) for x in u], A)
    vs = split_vertices([("v", int(x)) for x in v], A)
    return np.array(kempe_colouring(list(zip(us, vs)), list(range(A))), np.int64)


def tccl_cluster_ports(sc: SimCluster, src_pod: np.ndarray, src_nic: np.ndarray, dst_pod: np.ndarray,
                       dst_nic: np.ndarray) -> np.ndarray:
    """TCCL's source port of every flow between pods (module docstring). ``SimInputError``
    when the leaf uplink group or the spine's core group is not a power of two."""
    sf = sc.pod
    A, U = int(sf.leaf_up_n.max()), sc.spec.spine_core_uplinks
    if not (_pow2(A) and (sf.leaf_up_n == A).all()):
        raise SimInputError(f"policy tccl across pods: leaf uplink groups of {A} members: TCCL's "
                            f"cluster colouring needs a power of two (pod spines x uplinks_per_spine)")
    if not _pow2(U):
        raise SimInputError(f"policy tccl across pods: spine_core_uplinks {U}: TCCL's cluster colouring "
                            f"needs a power of two")
    l32, s32 = _uniform(sf.leaf_crc32, "leaf"), _uniform(sf.spine_crc32, "spine")
    ports = candidate_ports(DEFAULT_PORT_RANGE)
    ubits = U.bit_length() - 1
    key_of_port = ((sport_table(l32)[ports].astype(np.int64) & (A - 1)) << ubits) | \
        (sport_table(s32)[ports].astype(np.int64) & (U - 1))
    inv = np.full(A * U, -1, np.int64)
    inv[key_of_port[::-1]] = ports[::-1]                  # the first port in the planner's order wins
    sp, dp = np.asarray(src_pod, np.int64), np.asarray(dst_pod, np.int64)
    s, d = np.asarray(src_nic, np.int64), np.asarray(dst_nic, np.int64)
    n = len(s)
    src_ip, dst_ip = sc.nic_ip[sp, s], sc.nic_ip[dp, d]
    zero = np.zeros(n, np.int64)
    lf = sf.nic_leaf[s]
    h_leaf = sc.hashes(sc.leaf_seed[sp, lf], l32, src_ip, dst_ip, zero).astype(np.int64)
    r_flow = sc.hashes(np.zeros(n, np.uint32), s32, src_ip, dst_ip, zero).astype(np.int64)
    z1 = np.zeros(1, np.int64)
    base = int(sc.hashes(np.zeros(1, np.uint32), s32, z1, z1, z1)[0])   # the all-zero message, dport in
    seeds = sc.spine_seed.ravel()
    s_spine = (sc.hashes(seeds, s32, np.zeros(len(seeds), np.int64), np.zeros(len(seeds), np.int64),
                         np.zeros(len(seeds), np.int64)).astype(np.int64) ^ base).reshape(sc.spine_seed.shape)
    a = _leaf_colours(sc, sp, s, dp, d, A)
    k = sf.link_spine[sf.leaf_up[lf, a]]
    t_leaf = ((a ^ h_leaf) & (A - 1)) << ubits
    t_spine = s_spine[sp, k] ^ r_flow

    def key(idx: np.ndarray, m: np.ndarray) -> np.ndarray:
        return t_leaf[idx] | ((m ^ t_spine[idx]) & (U - 1))

    m = _core_uplinks(sp * len(sf.spine_names) + k, U, lambda idx, mm: inv[key(idx, mm)] >= 0)
    out = inv[key(np.arange(n), m)]
    out[out < 0] = DEFAULT_PORT_RANGE[0]          # no port reaches any free colour: hashed
    return out


def _core_uplinks(group: np.ndarray, U: int, reachable) -> np.ndarray:  # type: ignore[no-untyped-def]
    """A core-uplink member per flow, distinct within each group (spine) when it can be
    (rounds of proposals, then swaps); shared (least used reachable) otherwise."""
    n = len(group)
    order = np.argsort(group, kind="stable")
    first = np.searchsorted(group[order], group[order], side="left")
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - first
    gid, g = np.unique(group, return_inverse=True)
    cap = max(1, -(-int(np.bincount(g).max()) // U))
    count = np.zeros((len(gid), U), np.int64)
    m = np.full(n, -1, np.int64)
    todo = np.arange(n)
    for r in range(U * cap):
        if not len(todo):
            break
        want = (rank[todo] + r) % U
        ok = reachable(todo, want) & (count[g[todo], want] < cap)
        take = todo[ok]
        if cap > 1:      # ranks of a group differ, so with one flow per member no proposals collide
            _, first_of = np.unique(g[take] * U + want[ok], return_index=True)
            take = take[first_of]
        m[take] = (rank[take] + r) % U
        np.add.at(count, (g[take], m[take]), 1)
        todo = todo[m[todo] < 0]
    for f in todo.tolist():          # few: swap with a flow that can take one of our free members
        members = np.flatnonzero(g == g[f])
        free = np.flatnonzero(count[g[f]] < cap)
        done = False
        for mf in free.tolist():
            others = members[(m[members] >= 0) & reachable(members, np.full(len(members), mf))]
            ours = others[reachable(np.full(len(others), f), m[others])]
            if len(ours):
                o = int(ours[0])
                m[f], m[o] = m[o], mf
                count[g[f], mf] += 1
                done = True
                break
        if not done:                 # share: the least used member this flow reaches
            options = np.arange(U)
            ok = reachable(np.full(U, f), options)
            options = options[ok] if ok.any() else options
            m[f] = int(options[np.argmin(count[g[f], options])])
            count[g[f], m[f]] += 1
    return m


@dataclass(slots=True)
class CoreGorResult:
    """What GOR did on the core links: overrides applied, candidates refused by the
    safety rule, rounds run."""

    overrides: int = 0
    rejected: int = 0
    rounds: int = 0


def gor_core(sc: SimCluster, links: np.ndarray, capacity: np.ndarray, nic_rate: np.ndarray,
             rounds: int = 4, top_n: int = 100, safety: float = DEFAULT_SAFETY) -> CoreGorResult:
    """GOR's rounds on the core links (module docstring); changes ``links[:, 3]`` in place.
    ``nic_rate``: each flow's rate alone (its NICs), for the offered load."""
    res = CoreGorResult()
    J = sc.spec.links_per_core
    for _ in range(rounds):
        rates = max_min_rates(links, capacity)
        load = link_sums(links, rates, len(capacity))
        offered = link_sums(links, nic_rate, len(capacity))
        core = links[:, 3]
        over = offered[core] / capacity[core]
        cand = np.flatnonzero(over > 1 + 1e-9)
        if not len(cand):
            break
        res.rounds += 1
        cand = cand[np.lexsort((-rates[cand], -over[cand]))][:top_n]
        rel = core[cand] - sc.core_down_base
        first = sc.core_down_base + (rel // J) * J       # member 0 of the flow's core group
        moved = 0
        for f, g0 in zip(cand.tolist(), first.tolist()):
            group = np.arange(g0, g0 + J)
            util = (load[group] + rates[f]) / capacity[group]
            util[group == links[f, 3]] = np.inf
            best = int(np.argmin(util))
            if util[best] > safety + 1e-9:
                res.rejected += 1
                continue
            load[links[f, 3]] -= rates[f]
            load[group[best]] += rates[f]
            links[f, 3] = group[best]
            res.overrides += 1
            moved += 1
        if not moved:
            break
    return res


__all__ = ["CoreGorResult", "gor_core", "tccl_cluster_ports"]
