"""Source ports of the policies: random (plain ECMP) and TCCL's hash-orthogonal ports for
hundreds of thousands of flows.

TCCL's solver (``host.tccl.ports.PortPlanner``) is two steps: colour the flows (a colour
is a path ``(spine, j)``) with its Kempe-chain bipartite edge colouring so that every link
of both tiers carries at most ``ceil(flows / links)``, then give each flow a source port
that reaches its colour on both ECMP hops. Step 1 is reused as is (the planner's
``split_vertices`` and ``kempe_colouring``, 65,536 flows in ~0.3 s; a colour only through a
spine with a live link to the destination leaf, a member of the leaf group the flow's
destination is routed to, ``SimFabric.leaf_group``; flows of several palettes, after a
failed cable, take the planner's greedy colours, ``sim.fallback``). Step 2 builds
two 65,536-entry hash tables per flow in Python (~20 ms a flow: 20 minutes for a 64K-GPU
step), so it is replaced here by a vectorised search with the same affine property the
hash model documents: ``H(sport) = H(sport=0) ^ T[sport]`` where ``T`` depends only on
the algorithm, so one CRC per flow and hop plus shared tables give every candidate port's
member; ports are tried in the planner's order (its preferred range first, then the rest)
and a (source, destination, port) triple is never used twice. A flow whose colour no port
reaches at all keeps its hashed path. Polarised fabrics (the same CRC on both tiers)
follow the planner: :func:`polarisation_remaps` (its probe per source leaf and spine:
colour ``(spine, k)`` is downlink k, from the uplink that leaf's bijection maps there),
then its greedy fallback (``sim.fallback``) when a colour is still unreachable.
``tests/sim/test_sim_ports.py`` checks the result against the planner's balance guarantee and
the routes against the hash model.

Example::

    >>> from topo.model import build_fabric
    >>> from sim.topology import SimFabric
    >>> sf = SimFabric.build(build_fabric())
    >>> src, dst = np.array([0, 1]), np.array([4, 5])          # b0s0 -> b1s0, both rails
    >>> ports = tccl_ports(sf, src, dst)
    >>> bool(((49152 <= ports) & (ports <= 65535)).all())
    True
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from host.tccl.ports import DEFAULT_PORT_RANGE, kempe_colouring, polarised_downlinks, split_vertices
from sim.fallback import colour_members, greedy_colours
from sim.routing import ROCE_DPORT, crc_rows, messages
from sim.topology import SimFabric

_SPORT_TABLES: dict[bool, np.ndarray] = {}
CHUNK_PORTS = 512


def random_ports(n: int, seed: int, port_range: tuple[int, int] = DEFAULT_PORT_RANGE) -> np.ndarray:
    """Plain ECMP: ``n`` source ports drawn uniformly from ``port_range`` (seeded).

        >>> random_ports(3, 1).shape
        (3,)
    """
    rng = np.random.default_rng(seed)
    return rng.integers(port_range[0], port_range[1] + 1, n)


def sport_table(use_crc32: bool) -> np.ndarray:
    """``T[sport] = H(..sport..) ^ H(..0..)`` for the default field list (all other
    fields zero; the same for every switch of one algorithm, by linearity)."""
    if use_crc32 not in _SPORT_TABLES:
        ports = np.arange(65536)
        z = np.zeros(65536, np.int64)
        msg = messages(z, z, z, ports, z)
        zero = crc_rows(messages(z[:1], z[:1], z[:1], z[:1], z[:1]), np.array([use_crc32]))[0]
        _SPORT_TABLES[use_crc32] = crc_rows(msg, np.full(65536, use_crc32)) ^ zero
    return _SPORT_TABLES[use_crc32]


def candidate_ports(port_range: tuple[int, int] = DEFAULT_PORT_RANGE) -> np.ndarray:
    """Ports in the planner's order of preference: ``port_range`` first, then 1..65535."""
    lo, hi = port_range
    rest = np.concatenate([np.arange(1, lo), np.arange(hi + 1, 65536)])
    return np.concatenate([np.arange(lo, hi + 1), rest])


def _colours(sf: SimFabric, src_leaf: np.ndarray, dst_leaf: np.ndarray,
             remaps: Mapping[tuple[int, int, int], Sequence[int]]) -> tuple[np.ndarray, np.ndarray, bool]:
    """TCCL's colouring: (member index in the flow's leaf group ``sf.leaf_group``, spine
    member index or -1) per flow; -1, -1 for a flow no spine of its source leaf has a
    live route from (undeliverable). A colour is a spine link of that group (after a
    detour, only links to spines that reach the destination leaf). The third value is
    False when the flows have more than one palette (after a failed cable): the planner
    then colours every flow greedily, so nothing is coloured here (0 for every
    deliverable flow) and the caller runs :func:`sim.fallback.greedy_colours`.
    Colour ``(spine, k)`` is mapped to links as the planner maps it
    (:func:`sim.fallback.colour_members`: downlink k from the uplink the leaf's probe
    maps there on a polarised spine, see :func:`polarisation_remaps`).

    A colour is a candidate only through a spine with a live link to the destination
    leaf (``host.tccl.ports.spine_routes_to``: after a failed cable that spine has no
    route there). One palette is coloured with the planner's Kempe-chain colouring, as
    ``PortPlanner`` colours it."""
    lm = np.full(len(src_leaf), -1, np.int64)
    sm = np.full(len(src_leaf), -1, np.int64)
    group = sf.leaf_group(src_leaf, dst_leaf)
    by_palette: dict[tuple[tuple[int, int], ...], list[int]] = {}
    palettes: dict[tuple[int, int], tuple[tuple[int, int], ...]] = {}     # (row, dst) -> colours
    colours_of: dict[int, list[tuple[int, int]]] = {}
    for i, (row, dst) in enumerate(zip(group.tolist(), dst_leaf.tolist())):
        if (row, dst) not in palettes:
            if row not in colours_of:
                spines = sf.link_spine[sf.group_up[row, :sf.group_up_n[row]]].tolist()
                seen: dict[int, int] = {}
                colours_of[row] = []
                for spine in spines:
                    colours_of[row].append((spine, seen.get(spine, 0)))
                    seen[spine] = seen.get(spine, 0) + 1
            palettes[(row, dst)] = tuple(c for c in colours_of[row] if sf.spine_down_n[c[0], dst] > 0)
        pal = palettes[(row, dst)]
        if pal:
            by_palette.setdefault(pal, []).append(i)
    if len(by_palette) > 1:
        for idx in by_palette.values():
            lm[idx] = 0
        return lm, sm, False
    for palette, idx in by_palette.items():
        k = len(palette)
        us = split_vertices([("u", int(group[i])) for i in idx], k)     # (leaf, group), as the planner
        vs = split_vertices([("v", int(dst_leaf[i])) for i in idx], k)
        coloured = np.array(kempe_colouring(list(zip(us, vs)), palette), np.int64).reshape(-1, 2)
        rows = np.array(idx, np.int64)
        lm[rows], sm[rows] = colour_members(sf, group[rows], coloured[:, 0], coloured[:, 1],
                                            dst_leaf[rows], remaps)
    return lm, sm, True


def _probe(sf: SimFabric, src_nic: int, dst_nic: int, spine: int, leaf_m: np.ndarray) -> Optional[list[int]]:
    """``PortPlanner``'s probe of one flow and one spine: the leaf member → spine member
    pairs its 65,536 ports reach (``leaf_m``: the leaf member of every port), then the
    planner's own rule (:func:`host.tccl.ports.polarised_downlinks`); ``None`` when the
    spine is not one link per colour there, or not polarised."""
    dst = int(sf.nic_leaf[dst_nic])
    row = _row(sf, src_nic, dst_nic)
    spines = sf.link_spine[sf.group_up[row, :sf.group_up_n[row]]].tolist()
    nd = int(sf.spine_down_n[spine, dst])
    members = [m for m, sp in enumerate(spines) if sp == spine]
    if nd <= 1 or len(members) != nd:
        return None           # one link down (no spine hop), or not one colour per downlink
    s32 = bool(sf.spine_crc32[spine])
    flow = (sf.nic_ip[[src_nic]], sf.nic_ip[[dst_nic]], np.zeros(1, np.int64), np.array([ROCE_DPORT], np.int64))
    h0_s = crc_rows(messages(sf.spine_seed[[spine]], *flow), np.array([s32]))[0]
    spine_m = ((h0_s ^ sport_table(s32)) % np.uint32(nd)).astype(np.int64)
    reach: dict[int, set[int]] = {}
    for pair in np.unique(leaf_m * nd + spine_m).tolist():
        reach.setdefault(pair // nd, set()).add(pair % nd)
    return polarised_downlinks(reach, members)


def _row(sf: SimFabric, src_nic: int, dst_nic: int) -> int:
    """The leaf group row (``sf.group_up``) one flow starts in."""
    return int(sf.leaf_group(sf.nic_leaf[[src_nic]], sf.nic_leaf[[dst_nic]])[0])


def _leaf_members(sf: SimFabric, src_nic: int, dst_nic: int) -> np.ndarray:
    """The member index in the flow's leaf group for every one of the 65,536 source ports."""
    leaf = int(sf.nic_leaf[src_nic])
    size = int(sf.group_up_n[_row(sf, src_nic, dst_nic)])
    l32 = bool(sf.leaf_crc32[leaf])
    flow = (sf.nic_ip[[src_nic]], sf.nic_ip[[dst_nic]], np.zeros(1, np.int64), np.array([ROCE_DPORT], np.int64))
    h0_l = crc_rows(messages(sf.leaf_seed[[leaf]], *flow), np.array([l32]))[0]
    return ((h0_l ^ sport_table(l32)) % np.uint32(max(size, 1))).astype(np.int64)


def polarisation_remap(sf: SimFabric, src_nic: int, dst_nic: int) -> dict[tuple[int, int], int]:
    """The polarisation probe of one flow (:func:`_probe`) on every spine of its palette:
    ``(spine number, j)`` → the spine member the leaf's j-th link to that spine fixes;
    empty when nothing is polarised at this flow's leaf (same CRC on both tiers makes it
    a bijection; its constant comes from the (leaf, spine) seeds, so leaves differ).

        >>> from topo.model import build_fabric
        >>> from topo.spec import FabricSpec
        >>> polarisation_remap(SimFabric.build(build_fabric()), 0, 4)           # crc16 / crc32
        {}
        >>> sf = SimFabric.build(build_fabric(FabricSpec(uplinks_per_spine=2, leaf_ports=8,
        ...                                              leaf_hash="crc16", spine_hash="crc16")))
        >>> sorted(polarisation_remap(sf, 0, 4))
        [(0, 0), (0, 1), (1, 0), (1, 1)]
    """
    row = _row(sf, src_nic, dst_nic)
    if not sf.group_up_n[row]:
        return {}
    leaf_m = _leaf_members(sf, src_nic, dst_nic)
    remap: dict[tuple[int, int], int] = {}
    for spine in sorted(set(sf.link_spine[sf.group_up[row, :sf.group_up_n[row]]].tolist())):
        down = _probe(sf, src_nic, dst_nic, spine, leaf_m)
        if down is not None:
            remap.update({(spine, j): m for j, m in enumerate(down)})
    return remap


def polarisation_remaps(sf: SimFabric, src_nic: np.ndarray, dst_nic: np.ndarray
                        ) -> dict[tuple[int, int, int], list[int]]:
    """``PortPlanner``'s probes for a flow set: one per (source leaf group, spine,
    downlinks into the destination leaf) where the group has as many links to the spine
    as the spine has into that leaf (more than one), on the first flow with that key, as
    the planner probes (per source leaf and uplink group); ``{(row, spine, downlinks):
    down}`` (``row``: ``sf.group_up``'s, the leaf's number for its uplink group;
    ``down[j]``: the spine member the group's j-th link to the spine fixes) where the
    probe found a bijection. Nothing is probed without parallel links (the shipped pods).

        >>> from topo.model import build_fabric
        >>> from topo.spec import FabricSpec
        >>> sf = SimFabric.build(build_fabric(FabricSpec(uplinks_per_spine=2, leaf_ports=8,
        ...                                              leaf_hash="crc16", spine_hash="crc16")))
        >>> sorted(polarisation_remaps(sf, np.array([0, 4]), np.array([4, 0])))
        [(0, 0, 2), (0, 1, 2), (2, 0, 2), (2, 1, 2)]
    """
    src_nic, dst_nic = np.asarray(src_nic, np.int64), np.asarray(dst_nic, np.int64)
    n_spines = len(sf.spine_names)
    parallel = np.zeros((len(sf.group_up), n_spines), np.int64)    # links of each group to each spine
    rows, cols = np.nonzero(sf.group_up >= 0)
    np.add.at(parallel, (rows, sf.link_spine[sf.group_up[rows, cols]]), 1)
    out: dict[tuple[int, int, int], list[int]] = {}
    if not len(src_nic) or parallel.max() <= 1:
        return out
    lf, dlf = sf.nic_leaf[src_nic], sf.nic_leaf[dst_nic]
    group = sf.leaf_group(lf, dlf)
    width = int(sf.spine_down_n.max()) + 1
    leaf_m: dict[int, np.ndarray] = {}
    for spine in range(n_spines):
        nd = sf.spine_down_n[spine, dlf]
        hit = np.flatnonzero((nd > 1) & (parallel[group, spine] == nd))
        if not len(hit):
            continue
        _, first = np.unique(group[hit] * width + nd[hit], return_index=True)
        for i in hit[first].tolist():
            if i not in leaf_m:
                leaf_m[i] = _leaf_members(sf, int(src_nic[i]), int(dst_nic[i]))
            down = _probe(sf, int(src_nic[i]), int(dst_nic[i]), spine, leaf_m[i])
            if down is not None:
                out[(int(group[i]), spine, int(nd[i]))] = down
    return out


_KEYS: dict[tuple[bool, int, bool, int, int], np.ndarray] = {}


def _position_keys(l32: bool, n_leaf: int, s32: bool, n_spine: int, cands: np.ndarray) -> np.ndarray:
    """Sorted ``value * len(cands) + position`` of every candidate port for power-of-two
    groups, ``value = (T_leaf[port] & (n_leaf - 1)) * n_spine + (T_spine[port] & (n_spine - 1))``
    (``n_spine`` 1: no spine hop): the ports giving each pair of members in preference order."""
    key = (l32, n_leaf, s32 and n_spine > 1, n_spine, int(cands[0]))
    if key not in _KEYS:
        u = (sport_table(l32)[cands] & np.uint32(n_leaf - 1)).astype(np.int64)
        v = (sport_table(s32)[cands] & np.uint32(n_spine - 1)).astype(np.int64)
        _KEYS[key] = np.sort((u * n_spine + v) * len(cands) + np.arange(len(cands)))
    return _KEYS[key]


def _pow2(n: np.ndarray) -> np.ndarray:
    return (n > 0) & ((n & (n - 1)) == 0)


def _search(h0_leaf: np.ndarray, crc32_leaf: np.ndarray, n_leaf: np.ndarray, want_leaf: np.ndarray,
            h0_spine: np.ndarray, crc32_spine: np.ndarray, n_spine: np.ndarray, want_spine: np.ndarray,
            cands: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Position in ``cands`` of the first port at or after ``start`` reaching both wanted
    members (``want_spine`` -1: no spine hop); -1 when none does."""
    t16, t32 = sport_table(False), sport_table(True)
    pos = np.full(len(h0_leaf), -1, np.int64)
    # power-of-two groups: member = low bits of H0 ^ T[p], so the pair of members is a
    # sorted-table look-up (two hops as one value); -1 at once when no port reaches it
    ns = np.where(want_spine < 0, 1, n_spine)
    never = want_spine >= n_spine             # a remapped member beyond this flow's group
    fast = _pow2(n_leaf) & _pow2(ns) & ~never
    idx = np.flatnonzero(fast)
    if len(idx):
        groups = np.stack([crc32_leaf[idx].astype(np.int64), n_leaf[idx],
                           crc32_spine[idx].astype(np.int64) & (ns[idx] > 1), ns[idx]], axis=1)
        uniq, which = np.unique(groups, axis=0, return_inverse=True)
        which = which.ravel()
        for g, (l32, nl, s32, nsp) in enumerate(uniq.tolist()):
            sel = idx[which == g]
            keys = _position_keys(bool(l32), int(nl), bool(s32), int(nsp), cands)
            u = (h0_leaf[sel] & np.uint32(nl - 1)).astype(np.int64) ^ want_leaf[sel]
            v = (h0_spine[sel] & np.uint32(nsp - 1)).astype(np.int64) ^ np.maximum(want_spine[sel], 0)
            v = u * nsp + np.where(want_spine[sel] < 0, 0, v)
            at = np.searchsorted(keys, v * len(cands) + start[sel])
            ok = at < len(keys)
            hit = np.zeros(len(sel), bool)
            hit[ok] = keys[at[ok]] // len(cands) == v[ok]
            pos[sel[hit]] = keys[at[hit]] % len(cands)
    todo = np.flatnonzero(~fast & ~never)
    lo = int(start[todo].min()) if len(todo) else 0
    while len(todo) and lo < len(cands):
        block = np.arange(lo, min(lo + CHUNK_PORTS, len(cands)))
        p = cands[block]
        tl = np.where(crc32_leaf[todo, None], t32[None, p], t16[None, p])
        ml = (h0_leaf[todo, None] ^ tl) % n_leaf[todo, None].astype(np.uint32)
        ok = (ml == want_leaf[todo, None]) & (block[None, :] >= start[todo, None])
        ws = want_spine[todo]
        if (ws >= 0).any():
            ts = np.where(crc32_spine[todo, None], t32[None, p], t16[None, p])
            msp = (h0_spine[todo, None] ^ ts) % np.maximum(n_spine[todo, None], 1).astype(np.uint32)
            ok &= (ws[:, None] < 0) | (msp == ws[:, None])
        hit = ok.any(axis=1)
        pos[todo[hit]] = block[ok[hit].argmax(axis=1)]
        todo = todo[~hit]
        lo += CHUNK_PORTS
    return pos


def tccl_ports(sf: SimFabric, src_nic: np.ndarray, dst_nic: np.ndarray,
               port_range: tuple[int, int] = DEFAULT_PORT_RANGE, dport: int = ROCE_DPORT) -> np.ndarray:
    """Hash-orthogonal source ports (module docstring) for flows between NIC ids; flows
    that cross no spine get the first port of ``port_range``."""
    src_nic = np.asarray(src_nic, np.int64)
    dst_nic = np.asarray(dst_nic, np.int64)
    n = len(src_nic)
    ports = np.full(n, port_range[0], np.int64)
    sl, dl = sf.nic_leaf[src_nic], sf.nic_leaf[dst_nic]
    cross = np.flatnonzero((sl != dl) & (sf.leaf_up_n[sl] > 0) & ((src_nic // sf.rails) != (dst_nic // sf.rails)))
    if not len(cross):
        return ports
    remaps = polarisation_remaps(sf, src_nic[cross], dst_nic[cross])
    want_l, want_s, coloured = _colours(sf, sl[cross], dl[cross], remaps)
    # no spine routes to the destination leaf: undeliverable whatever the port (routing says so)
    keep = want_l >= 0
    cross, want_l, want_s = cross[keep], want_l[keep], want_s[keep]
    if not len(cross):
        return ports
    s, d, lf, dlf = src_nic[cross], dst_nic[cross], sl[cross], dl[cross]
    row = sf.leaf_group(lf, dlf)               # colours are member indexes of this group
    n_up = sf.group_up_n[row]
    dp = np.full(len(cross), dport, np.int64)
    z = np.zeros(len(cross), np.int64)
    h0_l = crc_rows(messages(sf.leaf_seed[lf], sf.nic_ip[s], sf.nic_ip[d], z, dp), sf.leaf_crc32[lf])
    cands = candidate_ports(port_range)
    start = np.zeros(len(cross), np.int64)
    if not coloured:            # several palettes: the planner's greedy colours (sim.fallback)
        want_l, want_s = greedy_colours(sf, s, d, remaps, _search, cands)
    for attempt in range(1 if not coloured else 2):
        # the spine each colour leads to, and its group size towards the destination leaf
        spine = sf.link_spine[sf.group_up[row, np.maximum(want_l, 0)]]
        nd = sf.spine_down_n[spine, dlf]
        h0_s = crc_rows(messages(sf.spine_seed[spine], sf.nic_ip[s], sf.nic_ip[d], z, dp), sf.spine_crc32[spine])
        pos = _search(h0_l, sf.leaf_crc32[lf], n_up, np.maximum(want_l, 0), h0_s,
                      sf.spine_crc32[spine], nd, np.where(nd > 1, want_s, -1), cands, start)
        pos[want_l < 0] = -1
        if attempt or (pos >= 0).all():
            break
        # some colour is unreachable (a probe's bijection does not fit some flow): the
        # planner then re-colours every flow greedily (sim.fallback)
        want_l, want_s = greedy_colours(sf, s, d, remaps, _search, cands)
    todo = np.arange(len(cross))
    for k in range(64):
        if k:
            pos[todo] = _search(h0_l[todo], sf.leaf_crc32[lf[todo]], n_up[todo], want_l[todo],
                                h0_s[todo], sf.spine_crc32[spine[todo]], nd[todo],
                                np.where(nd[todo] > 1, want_s[todo], -1), cands, start[todo])
        got = pos[todo]
        miss = todo[got < 0]
        if len(miss):
            _recolour(sf, miss, want_l, want_s, lf, row, dlf, h0_l, h0_s, cands, pos, spine, nd)
        # a (source, destination, port) triple once only: later duplicates search on
        key = (s * (1 << 20) + d) * 65536 + cands[np.maximum(pos, 0)]
        _, first = np.unique(key, return_index=True)
        dup = np.ones(len(cross), bool)
        dup[first] = False
        todo = np.flatnonzero(dup)
        if not len(todo):
            break
        start[todo] = pos[todo] + 1
    ports[cross] = cands[np.maximum(pos, 0)]
    return ports


def _recolour(sf: SimFabric, miss: np.ndarray, want_l: np.ndarray, want_s: np.ndarray,
              lf: np.ndarray, row: np.ndarray, dlf: np.ndarray, h0_l: np.ndarray, h0_s: np.ndarray,
              cands: np.ndarray, pos: np.ndarray, spine: np.ndarray, nd: np.ndarray) -> None:
    """Flows whose colour no port reaches: the first candidate port's own path (what the
    hash gives), i.e. the planner's greedy fallback without the load ordering."""
    t16, t32 = sport_table(False), sport_table(True)
    for i in miss.tolist():
        tl = t32 if sf.leaf_crc32[lf[i]] else t16
        m = int((h0_l[i] ^ tl[cands[0]]) % np.uint32(sf.group_up_n[row[i]]))
        want_l[i] = m
        spine[i] = sf.link_spine[sf.group_up[row[i], m]]
        nd[i] = sf.spine_down_n[spine[i], dlf[i]]
        want_s[i] = -1
        pos[i] = 0


__all__ = ["candidate_ports", "polarisation_remap", "polarisation_remaps", "random_ports", "sport_table",
           "tccl_ports"]
