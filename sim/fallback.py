"""TCCL's greedy fallback at scale: what ``host.tccl.ports.PortPlanner`` does when some
flow cannot reach its colour (a polarised fabric where the per-leaf probe's bijection does
not fit some flow), without a Python loop per flow.

The planner's rule (``PortPlanner._greedy``): every flow, fewest reachable colours first
(stable), takes the reachable colour whose two links (leaf uplink, spine downlink) have
the lowest (max load, summed load), the first such in palette order; colour ``(spine,
k)`` of a polarised spine is downlink k from the leaf's uplink the probe maps there
(:func:`colour_members`). A flow's choice
only reads the loads of its source leaf's uplinks and of the downlinks into its
destination leaf, so it depends only on the earlier flows sharing one of those two
leaves. Here flows are taken in *rounds*: a round is every remaining flow that is the
first remaining one of both its source leaf and its destination leaf (no two share a
link, none waits on another), decided at once with numpy. Each flow sees exactly the
loads it sees in the planner's sequence, so the colours are the planner's; rounds ≈ the
longest chain of flows linked by shared leaves (about the flows per leaf), not flows.

Example::

    >>> from topo.model import build_fabric
    >>> from sim.topology import SimFabric
    >>> sf = SimFabric.build(build_fabric())
    >>> src, dst = np.array([0, 2]), np.array([4, 6])          # b0s0 -> b1s0, b0s1 -> b1s1 (rail 0)
    >>> from sim.ports import _search, candidate_ports
    >>> want_l, want_s = greedy_colours(sf, src, dst, {}, _search, candidate_ports())
    >>> sorted(want_l.tolist()), want_s.tolist()                  # one flow per uplink
    ([0, 1], [-1, -1])
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from sim.routing import ROCE_DPORT, crc_rows, messages
from sim.topology import SimFabric

Search = Callable[..., np.ndarray]


def member_j(sf: SimFabric) -> np.ndarray:
    """``(group rows, max members)``: each member's index among the row's members on the
    same spine (the ``j`` of colour ``(spine, j)``), -1 for padding; rows are
    ``sf.group_up``'s (a leaf's uplink group, or one of its detour groups)."""
    sp = np.where(sf.group_up >= 0, sf.link_spine[np.maximum(sf.group_up, 0)], -1)
    same = sp[:, :, None] == sp[:, None, :]
    earlier = np.tril(np.ones((sp.shape[1], sp.shape[1]), bool), -1)
    return np.where(sp >= 0, (same & earlier[None]).sum(axis=2), -1)


def colour_members(sf: SimFabric, row: np.ndarray, spine: np.ndarray, k: np.ndarray,
                   dst_leaf: np.ndarray, remaps: Mapping[tuple[int, int, int], Sequence[int]]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The links of colour ``(spine, k)`` for flows starting in leaf group ``row`` (of
    ``sf.group_up``: the source leaf's number when it has no detours) towards
    ``dst_leaf``: (member index in that group, spine member index or -1 when the spine
    has one link to the leaf), as ``PortPlanner`` maps its colours.
    ``remaps[(row, spine, downlinks)]`` (from ``sim.ports.polarisation_remaps``): the
    spine member ``down[j]`` the group's j-th link to that spine fixes; there colour
    ``(spine, k)`` is downlink k from the uplink j with ``down[j] == k``. Elsewhere it is
    the group's k-th link to the spine and downlink ``k % downlinks``.

        >>> from topo.model import build_fabric
        >>> sf = SimFabric.build(build_fabric())
        >>> one = np.array([0])
        >>> [a.tolist() for a in colour_members(sf, one, np.array([1]), 0 * one, one + 1, {})]
        [[1], [-1]]
    """
    row = np.asarray(row, np.int64)
    nd = sf.spine_down_n[spine, dst_leaf]
    k = np.asarray(k, np.int64)
    j = k.copy()
    if remaps:
        width = int(sf.spine_down_n.max()) + 1
        keys = sorted(remaps)
        code_of = np.array([(g * len(sf.spine_names) + sp) * width + n for g, sp, n in keys], np.int64)
        inverse = np.full((len(keys), width), -1, np.int64)
        for at_key, key in enumerate(keys):
            for jj, kk in enumerate(remaps[key]):
                inverse[at_key, kk] = jj
        code = (row * len(sf.spine_names) + spine) * width + nd
        at = np.minimum(np.searchsorted(code_of, code), len(keys) - 1)
        hit = code_of[at] == code
        j[hit] = inverse[at[hit], k[hit]]
    # (row, spine, j) -> member index, for the rows asked about only
    used, at_row = np.unique(row, return_inverse=True)
    members = sf.group_up[used]
    position = np.full((len(used), len(sf.spine_names), max(members.shape[1], 1)), -1, np.int64)
    rows, cols = np.nonzero(members >= 0)
    position[rows, sf.link_spine[members[rows, cols]], member_j(sf)[used[rows], cols]] = cols
    return position[at_row.ravel(), spine, j], np.where(nd > 1, k % np.maximum(nd, 1), -1)


def spine_h0(sf: SimFabric, src_nic: np.ndarray, dst_nic: np.ndarray, dport: int = ROCE_DPORT) -> np.ndarray:
    """``(flows, spines)``: every spine's hash of every flow at source port 0, from two CRCs
    per flow (CRC is affine: ``H(seed, f) = H(0, f) ^ H(seed, 0) ^ H(0, 0)`` for one
    algorithm and message length)."""
    n, z = len(src_nic), np.zeros(len(src_nic), np.int64)
    dp = np.full(n, dport, np.int64)
    out = np.zeros((n, len(sf.spine_names)), np.uint32)
    for use32 in (False, True):
        cols = np.flatnonzero(sf.spine_crc32 == use32)
        if not len(cols):
            continue
        ref = crc_rows(messages(z, sf.nic_ip[src_nic], sf.nic_ip[dst_nic], z, dp), np.full(n, use32))
        zs = np.zeros(len(cols) + 1, np.int64)
        seeds = np.concatenate([sf.spine_seed[cols].astype(np.int64), [0]])
        k = crc_rows(messages(seeds, zs, zs, zs, zs), np.full(len(cols) + 1, use32))
        out[:, cols] = ref[:, None] ^ (k[:-1] ^ k[-1])[None, :]
    return out


def greedy_colours(sf: SimFabric, src_nic: np.ndarray, dst_nic: np.ndarray,
                   remaps: Mapping[tuple[int, int, int], Sequence[int]], search: Search,
                   cands: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The planner's greedy colours of flows crossing the spines: (leaf member in the
    flow's leaf group ``sf.leaf_group``, spine member or -1) per flow; a flow no colour of its palette reaches gets leaf member -1 (the
    planner raises ``PortPlanError`` for it). ``remaps``: the per-leaf polarisation probes
    (``sim.ports.polarisation_remaps``, see :func:`colour_members`); ``search``/``cands``:
    ``sim.ports``' port search and candidate ports, used to test reachability (given by
    the caller: ``sim.ports`` imports this module)."""
    n = len(src_nic)
    lf, dlf = sf.nic_leaf[src_nic], sf.nic_leaf[dst_nic]
    row = sf.leaf_group(lf, dlf)                                  # the leaf's group towards dst
    width = sf.group_up.shape[1]
    up0 = sf.group_up[row]                                        # (n, width) link ids, -1 padding
    valid = up0 >= 0
    spine = np.where(valid, sf.link_spine[np.maximum(up0, 0)], 0)
    nd = np.where(valid, sf.spine_down_n[spine, dlf[:, None]], 0)
    valid &= nd > 0                                               # spine_routes_to
    # column c is colour (spine of member c, j of member c): the planner's palette order
    lm = np.full((n, width), -1, np.int64)
    sm = np.full((n, width), -1, np.int64)
    rows, cols = np.nonzero(valid)
    lm[rows, cols], sm[rows, cols] = colour_members(sf, row[rows], spine[rows, cols],
                                                    member_j(sf)[row[rows], cols], dlf[rows], remaps)
    up = np.where(valid, sf.group_up[row[:, None], np.maximum(lm, 0)], -1)
    down = np.where(valid, sf.spine_down[spine, dlf[:, None], np.maximum(sm, 0)], -1)
    h0_l = crc_rows(messages(sf.leaf_seed[lf], sf.nic_ip[src_nic], sf.nic_ip[dst_nic], np.zeros(n, np.int64),
                             np.full(n, ROCE_DPORT, np.int64)), sf.leaf_crc32[lf])
    h0_s = spine_h0(sf, src_nic, dst_nic)
    reach = np.zeros((n, width), bool)
    zero = np.zeros(n, np.int64)
    for c in range(width):
        rows = np.flatnonzero(valid[:, c])
        if not len(rows):
            continue
        got = search(h0_l[rows], sf.leaf_crc32[lf[rows]], sf.group_up_n[row[rows]], lm[rows, c],
                     h0_s[rows, spine[rows, c]], sf.spine_crc32[spine[rows, c]], nd[rows, c],
                     sm[rows, c], cands, zero[rows])
        reach[rows, c] = got >= 0
    chosen = _assign(reach, up, down, lf, dlf, len(sf.link_keys))
    ok = np.flatnonzero(chosen >= 0)
    want_l = np.full(n, -1, np.int64)
    want_s = np.full(n, -1, np.int64)
    want_l[ok], want_s[ok] = lm[ok, chosen[ok]], sm[ok, chosen[ok]]
    return want_l, want_s


def _assign(reach: np.ndarray, up: np.ndarray, down: np.ndarray, lf: np.ndarray, dlf: np.ndarray,
            n_links: int) -> np.ndarray:
    """The greedy itself, in rounds of flows that share no leaf (module docstring)."""
    n = len(lf)
    load = np.zeros(n_links + 1, np.int64)                        # last slot: padding
    up_i, down_i = np.where(up >= 0, up, n_links), np.where(down >= 0, down, n_links)
    chosen = np.full(n, -1, np.int64)
    rem = np.argsort(reach.sum(axis=1), kind="stable")
    big = 4 * n + 4
    while len(rem):
        head_s, head_d = np.zeros(len(rem), bool), np.zeros(len(rem), bool)
        head_s[np.unique(lf[rem], return_index=True)[1]] = True
        head_d[np.unique(dlf[rem], return_index=True)[1]] = True
        ready = head_s & head_d
        r = rem[ready]
        lu, ld = load[up_i[r]], load[down_i[r]]
        key = np.where(reach[r], np.maximum(lu, ld) * big + lu + ld, np.iinfo(np.int64).max)
        c = key.argmin(axis=1)
        ok = reach[r, c]
        rr, cc = r[ok], c[ok]
        chosen[rr] = cc
        load[up_i[rr, cc]] += 1                                   # no two share a link
        load[down_i[rr, cc]] += 1
        rem = rem[~ready]
    return chosen


__all__ = ["colour_members", "greedy_colours", "member_j", "spine_h0"]
