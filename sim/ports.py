"""Source ports of the policies: random (plain ECMP) and TCCL's hash-orthogonal ports for
hundreds of thousands of flows.

TCCL's solver (``host.tccl.ports.PortPlanner``) is two steps: colour the flows (a colour
is a path ``(spine, j)``) with its Kempe-chain bipartite edge colouring so that every link
of both tiers carries at most ``ceil(flows / links)``, then give each flow a source port
that reaches its colour on both ECMP hops. Step 1 is reused as is (the planner's
``split_vertices`` and ``kempe_colouring``, 65,536 flows in ~0.3 s; a colour only through a
spine with a live link to the destination leaf). Step 2 builds
two 65,536-entry hash tables per flow in Python (~20 ms a flow: 20 minutes for a 64K-GPU
step), so it is replaced here by a vectorised search with the same affine property the
hash model documents: ``H(sport) = H(sport=0) ^ T[sport]`` where ``T`` depends only on
the algorithm, so one CRC per flow and hop plus shared tables give every candidate port's
member; ports are tried in the planner's order (its preferred range first, then the rest)
and a (source, destination, port) triple is never used twice. A flow whose colour no port
reaches (both tiers on the same CRC: polarised) keeps its hashed path (the planner's
polarisation remap is not reproduced: ``sim/README.md`` says why).
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

import numpy as np

from host.tccl.ports import DEFAULT_PORT_RANGE, kempe_colouring, split_vertices
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


def _colours(sf: SimFabric, src_leaf: np.ndarray, dst_leaf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TCCL's colouring: (leaf member index, spine member index or -1) per flow; -1, -1
    for a flow no spine of its source leaf has a live route from (undeliverable).

    A colour is a candidate only through a spine with a live link to the destination
    leaf (``host.tccl.ports.spine_routes_to``: after a failed cable that spine has no
    route there). Flows with the same source palette and the same candidates are
    coloured together, as ``PortPlanner`` colours one palette."""
    lm = np.full(len(src_leaf), -1, np.int64)
    sm = np.full(len(src_leaf), -1, np.int64)
    by_palette: dict[tuple[tuple[int, int], ...], list[int]] = {}
    palettes: dict[tuple[int, int], tuple[tuple[int, int], ...]] = {}     # (leaf, dst) -> colours
    member_of: dict[int, dict[tuple[int, int], int]] = {}
    for i, (leaf, dst) in enumerate(zip(src_leaf.tolist(), dst_leaf.tolist())):
        if (leaf, dst) not in palettes:
            if leaf not in member_of:
                spines = sf.link_spine[sf.leaf_up[leaf, :sf.leaf_up_n[leaf]]].tolist()
                seen: dict[int, int] = {}
                member_of[leaf] = {}
                for m, spine in enumerate(spines):
                    member_of[leaf][(spine, seen.get(spine, 0))] = m
                    seen[spine] = seen.get(spine, 0) + 1
            palettes[(leaf, dst)] = tuple(c for c in member_of[leaf] if sf.spine_down_n[c[0], dst] > 0)
        pal = palettes[(leaf, dst)]
        if pal:
            by_palette.setdefault(pal, []).append(i)
    for palette, idx in by_palette.items():
        k = len(palette)
        us = split_vertices([("u", int(src_leaf[i])) for i in idx], k)
        vs = split_vertices([("v", int(dst_leaf[i])) for i in idx], k)
        coloured = kempe_colouring(list(zip(us, vs)), palette)
        for i, (spine, j) in zip(idx, coloured):
            lm[i] = member_of[int(src_leaf[i])][(spine, j)]
            nd = sf.spine_down_n[spine, dst_leaf[i]]
            sm[i] = j % nd if nd > 1 else -1
    return lm, sm


_KEYS: dict[tuple[bool, int, int], np.ndarray] = {}


def _position_keys(use_crc32: bool, n: int, cands: np.ndarray) -> np.ndarray:
    """Sorted ``value * len(cands) + position`` of every candidate port, ``value`` = the
    low bits ``T[port] & (n - 1)``: the ports giving each member in preference order."""
    key = (use_crc32, n, int(cands[0]))
    if key not in _KEYS:
        v = (sport_table(use_crc32)[cands] & np.uint32(n - 1)).astype(np.int64)
        _KEYS[key] = np.sort(v * len(cands) + np.arange(len(cands)))
    return _KEYS[key]


def _search(h0_leaf: np.ndarray, crc32_leaf: np.ndarray, n_leaf: np.ndarray, want_leaf: np.ndarray,
            h0_spine: np.ndarray, crc32_spine: np.ndarray, n_spine: np.ndarray, want_spine: np.ndarray,
            cands: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Position in ``cands`` of the first port at or after ``start`` reaching both wanted
    members (``want_spine`` -1: no spine hop); -1 when none does."""
    t16, t32 = sport_table(False), sport_table(True)
    pos = np.full(len(h0_leaf), -1, np.int64)
    # a power-of-two group and no spine hop: member = low bits of H0 ^ T[p], a table look-up
    fast = (want_spine < 0) & (n_leaf > 0) & ((n_leaf & (n_leaf - 1)) == 0)
    for use32 in (False, True):
        for n in np.unique(n_leaf[fast & (crc32_leaf == use32)]).tolist():
            sel = np.flatnonzero(fast & (crc32_leaf == use32) & (n_leaf == n))
            keys = _position_keys(use32, int(n), cands)
            v = h0_leaf[sel] & np.uint32(n - 1)
            v = v.astype(np.int64) ^ want_leaf[sel]
            at = np.searchsorted(keys, v * len(cands) + start[sel])
            ok = at < len(keys)
            hit = np.zeros(len(sel), bool)
            hit[ok] = keys[at[ok]] // len(cands) == v[ok]
            pos[sel[hit]] = keys[at[hit]] % len(cands)
    todo = np.flatnonzero(~fast)
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
    want_l, want_s = _colours(sf, sl[cross], dl[cross])
    # no spine routes to the destination leaf: undeliverable whatever the port (routing says so)
    keep = want_l >= 0
    cross, want_l, want_s = cross[keep], want_l[keep], want_s[keep]
    if not len(cross):
        return ports
    s, d, lf, dlf = src_nic[cross], dst_nic[cross], sl[cross], dl[cross]
    # the spine each colour leads to, and its group size towards the destination leaf
    spine = sf.link_spine[sf.leaf_up[lf, want_l]]
    nd = sf.spine_down_n[spine, dlf]
    dp = np.full(len(cross), dport, np.int64)
    z = np.zeros(len(cross), np.int64)
    h0_l = crc_rows(messages(sf.leaf_seed[lf], sf.nic_ip[s], sf.nic_ip[d], z, dp), sf.leaf_crc32[lf])
    h0_s = crc_rows(messages(sf.spine_seed[spine], sf.nic_ip[s], sf.nic_ip[d], z, dp), sf.spine_crc32[spine])
    cands = candidate_ports(port_range)
    start = np.zeros(len(cross), np.int64)
    pos = np.full(len(cross), -1, np.int64)
    todo = np.arange(len(cross))
    for _ in range(64):
        got = _search(h0_l[todo], sf.leaf_crc32[lf[todo]], sf.leaf_up_n[lf[todo]], want_l[todo],
                      h0_s[todo], sf.spine_crc32[spine[todo]], nd[todo],
                      np.where(nd[todo] > 1, want_s[todo], -1), cands, start[todo])
        pos[todo] = got
        miss = todo[got < 0]
        if len(miss):
            _recolour(sf, miss, want_l, want_s, lf, dlf, h0_l, h0_s, cands, pos, spine, nd)
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
              lf: np.ndarray, dlf: np.ndarray, h0_l: np.ndarray, h0_s: np.ndarray,
              cands: np.ndarray, pos: np.ndarray, spine: np.ndarray, nd: np.ndarray) -> None:
    """Flows whose colour no port reaches: the first candidate port's own path (what the
    hash gives), i.e. the planner's greedy fallback without the load ordering."""
    t16, t32 = sport_table(False), sport_table(True)
    for i in miss.tolist():
        tl = t32 if sf.leaf_crc32[lf[i]] else t16
        m = int((h0_l[i] ^ tl[cands[0]]) % np.uint32(sf.leaf_up_n[lf[i]]))
        want_l[i] = m
        spine[i] = sf.link_spine[sf.leaf_up[lf[i], m]]
        nd[i] = sf.spine_down_n[spine[i], dlf[i]]
        want_s[i] = -1
        pos[i] = 0


__all__ = ["candidate_ports", "random_ports", "sport_table", "tccl_ports"]
