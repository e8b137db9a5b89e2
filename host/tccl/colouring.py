"""Proper edge colouring of bipartite multigraphs, step 1 of TCCL's source-port solver.

Flows are edges between their source-leaf hop and their destination leaf; a colour is a
path ``(spine, j)``. :func:`split_vertices` splits every vertex of degree d into
``ceil(d / k)`` vertices of degree at most k (k = colours), and :func:`kempe_colouring`
then colours the edges properly with Kempe-chain swaps (König: k colours suffice for a
bipartite graph of degree at most k), so every link carries at most
``ceil(flows / links)`` flows on both tiers at once. Pure graph code: no hash model.

Example::

    >>> us = split_vertices([("u", "l0")] * 4, 2)
    >>> vs = split_vertices([("v", "l1")] * 4, 2)
    >>> sorted(kempe_colouring(list(zip(us, vs)), [("s0", 0), ("s1", 0)]))
    [('s0', 0), ('s0', 0), ('s1', 0), ('s1', 0)]
"""
from __future__ import annotations

import math
from typing import Hashable, Optional, Sequence

from host.tccl.portplan import Colour


def split_vertices(keys: Sequence[Hashable], k: int) -> list[tuple[Hashable, int]]:
    """Split every vertex of a multigraph so that no sub-vertex has degree above ``k``.

    ``keys[e]`` is the vertex of edge ``e`` on one side; vertex ``key`` of degree d
    becomes sub-vertices ``(key, 0) .. (key, ceil(d / k) - 1)``, its edges dealt
    round-robin. Returns the sub-vertex of every edge (input order). With both sides
    split, :func:`kempe_colouring` colours the edges with ``k`` colours.

        >>> split_vertices(["a", "a", "a", "b"], 2)
        [('a', 0), ('a', 1), ('a', 0), ('b', 0)]
    """
    if k < 1:
        raise ValueError(f"k = {k}: at least one colour is needed")
    count: dict[Hashable, int] = {}
    total: dict[Hashable, int] = {}
    for key in keys:
        total[key] = total.get(key, 0) + 1
    out = []
    for key in keys:
        i = count.get(key, 0)
        count[key] = i + 1
        out.append((key, i % math.ceil(total[key] / k)))
    return out


def kempe_colouring(edges: Sequence[tuple[Hashable, Hashable]], palette: Sequence[Colour],
                    preferred: Optional[Sequence[Optional[Colour]]] = None) -> list[Colour]:
    """A proper edge colouring of a bipartite multigraph: no two edges at one vertex share
    a colour. ``edges`` are ``(left vertex, right vertex)`` pairs (no vertex on both
    sides: tag them, e.g. ``("u", leaf)``/``("v", leaf)``) whose degree is at most
    ``len(palette)`` (König: that many colours suffice; split heavier vertices with
    :func:`split_vertices`). Kempe-chain swaps, O(edges × chain length).

    ``preferred[e]`` (optional) is kept when it is free at both ends of edge ``e``, so a
    re-plan leaves flows where they are. Returns one colour per edge, input order.

        >>> kempe_colouring([("u", "v"), ("u", "w"), ("x", "v")], [("s0", 0), ("s1", 0)])
        [('s1', 0), ('s0', 0), ('s0', 0)]
    """
    prefs: Sequence[Optional[Colour]] = preferred if preferred is not None else [None] * len(edges)
    at: dict[Hashable, set[Colour]] = {}
    fixed: dict[int, Colour] = {}
    for e, ((x, y), pref) in enumerate(zip(edges, prefs)):
        if pref is not None and pref not in at.setdefault(x, set()) and pref not in at.setdefault(y, set()):
            fixed[e] = pref
            at[x].add(pref)
            at[y].add(pref)
    rest = [e for e in range(len(edges)) if e not in fixed]
    # colour the fixed edges first (kept), then the rest with Kempe swaps over all edges
    order = sorted(fixed) + rest
    ordered_edges = [edges[e] for e in order]
    pal = list(palette)
    coloured = _kempe_colour_seeded(ordered_edges, pal, [fixed.get(e) for e in order])
    out: list[Colour] = [("", 0)] * len(edges)
    for pos, e in enumerate(order):
        out[e] = coloured[pos]
    return out


def _kempe_colour_seeded(edges: Sequence[tuple[Hashable, Hashable]], palette: Sequence[Colour],
                         seeds: Sequence[Optional[Colour]]) -> list[Colour]:
    """Kempe colouring where the leading edges with a seed colour take it directly."""
    at: dict[Hashable, dict[Colour, int]] = {}
    out: list[Optional[Colour]] = [None] * len(edges)
    for e, ((x, y), seed) in enumerate(zip(edges, seeds)):
        ax, ay = at.setdefault(x, {}), at.setdefault(y, {})
        if seed is not None and seed not in ax and seed not in ay:
            out[e] = seed
            ax[seed] = ay[seed] = e
            continue
        a = next(c for c in palette if c not in ax)
        b = next(c for c in palette if c not in ay)
        if a in ay:
            path: list[int] = []
            v, c = y, a
            while c in at.get(v, {}):
                e2 = at[v][c]
                path.append(e2)
                ex, ey = edges[e2]
                v = ey if ex == v else ex
                c = b if c == a else a
            for e2 in path:
                ex, ey = edges[e2]
                at[ex].pop(out[e2], None)  # type: ignore[arg-type]
                at[ey].pop(out[e2], None)  # type: ignore[arg-type]
            for e2 in path:
                ex, ey = edges[e2]
                out[e2] = b if out[e2] == a else a
                at[ex][out[e2]] = e2  # type: ignore[index]
                at[ey][out[e2]] = e2  # type: ignore[index]
        out[e] = a
        ax[a] = ay[a] = e
    return [c for c in out if c is not None]


__all__ = ["kempe_colouring", "split_vertices"]
