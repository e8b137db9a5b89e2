"""The flow-level engine: max-min fair rates by progressive filling over link capacities,
re-solved at every flow arrival and completion, vectorised with numpy.

A flow set is a padded *flow × hop* matrix of link ids (``-1`` = no hop; this is the
flow×link incidence matrix in ELLPACK form: every flow crosses at most 4 links of a
two-tier fabric, so a dense ``(flows, 4)`` array beats a general sparse matrix and
``np.bincount`` gives per-link sums), plus sizes, start times and optional rate caps.

Progressive filling (:func:`max_min_rates`): every link's fair share is its remaining
capacity over its unfrozen flows; the smallest share (or flow cap) is the next level;
every flow whose tightest link (or cap) is at that level is frozen at it and its rate is
taken off its links; repeat. The number of rounds is the number of distinct bottleneck
levels, not the number of flows, so a 64K-GPU step (hundreds of thousands of flows) takes
a few rounds of array operations.

The event loop (:func:`simulate`) advances to the next completion or arrival; flows that
finish within a relative 1e-6 of the earliest one complete together (one re-solve, not
thousands, for the equal flows of a collective step).

Example::

    >>> fs = FlowSet.of([[0], [0], [0, 1]], [1e6, 1e6, 1e6])
    >>> r = simulate(fs, np.array([1e6, 1e6]))      # three flows share link 0
    >>> r.finish_s.round(3).tolist()
    [3.0, 3.0, 3.0]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

EPS_REL = 1e-9
BATCH_REL = 1e-6


@dataclass(slots=True)
class FlowSet:
    """Flows to simulate: ``links`` ``(n, hops)`` link ids (``-1`` padding), ``size_bytes``,
    ``start_s`` and ``max_rate_Bps`` (``inf`` = no cap) of each flow.

        >>> FlowSet.of([[0, 1]], [100.0]).links.shape
        (1, 2)
    """

    links: np.ndarray
    size_bytes: np.ndarray
    start_s: np.ndarray
    max_rate_Bps: np.ndarray

    @classmethod
    def of(cls, paths: Sequence[Sequence[int]], sizes: Sequence[float],
           starts: Optional[Sequence[float]] = None,
           caps: Optional[Sequence[float]] = None) -> "FlowSet":
        """From Python lists (tests, small cases): ``FlowSet.of([[0], [0, 1]], [1e3, 1e3])``."""
        hops = max((len(p) for p in paths), default=1) or 1
        links = np.full((len(paths), hops), -1, np.int64)
        for i, p in enumerate(paths):
            links[i, :len(p)] = p
        n = len(paths)
        return cls(links, np.asarray(sizes, np.float64),
                   np.zeros(n) if starts is None else np.asarray(starts, np.float64),
                   np.full(n, np.inf) if caps is None else np.asarray(caps, np.float64))

    def __len__(self) -> int:
        return len(self.size_bytes)


def max_min_rates(links: np.ndarray, capacity: np.ndarray,
                  max_rate: Optional[np.ndarray] = None) -> np.ndarray:
    """Max-min fair rate (bytes/s) of every flow (row of ``links``) over ``capacity``.

    A flow with no links and no cap gets ``inf``; a flow over a zero-capacity link gets 0.

        >>> max_min_rates(np.array([[0, -1], [0, 1], [1, -1]]), np.array([10.0, 4.0])).tolist()
        [8.0, 2.0, 2.0]
    """
    n, _ = links.shape
    nl = len(capacity)
    rates = np.zeros(n)
    cap_rem = np.append(np.asarray(capacity, np.float64), np.inf)   # sentinel link = padding
    L = np.where(links >= 0, links, nl)
    demand = np.full(n, np.inf) if max_rate is None else np.asarray(max_rate, np.float64).copy()
    alive = np.arange(n)
    while len(alive):
        flat = L.ravel()
        cnt = np.bincount(flat, minlength=nl + 1)
        share = np.full(nl + 1, np.inf)
        used = cnt > 0
        used[nl] = False
        share[used] = np.maximum(cap_rem[used], 0.0) / cnt[used]
        fs = np.minimum(share[L].min(axis=1), demand)
        level = fs.min()
        if not np.isfinite(level):
            rates[alive] = fs
            break
        freeze = fs <= level * (1 + EPS_REL) + 1e-300
        r = fs[freeze]
        rates[alive[freeze]] = r
        taken = np.bincount(L[freeze].ravel(), weights=np.repeat(r, L.shape[1]), minlength=nl + 1)
        cap_rem[:nl] -= taken[:nl]
        keep = ~freeze
        alive, L, demand = alive[keep], L[keep], demand[keep]
    return rates


@dataclass(slots=True)
class SimResult:
    """What one simulation gives: per-flow ``finish_s`` (``inf`` = never: zero rate),
    ``fct_s`` (finish − start), ``link_bytes`` carried per link, the first solve's
    ``link_rate0_Bps`` and per-flow ``rate0_Bps``, ``makespan_s`` and re-solve count."""

    finish_s: np.ndarray
    fct_s: np.ndarray
    link_bytes: np.ndarray
    link_rate0_Bps: np.ndarray
    rate0_Bps: np.ndarray
    makespan_s: float
    solves: int

    def utilisation(self, capacity: np.ndarray) -> np.ndarray:
        """Mean utilisation of every link over the makespan (0 for idle or dead links)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            u = self.link_bytes / (capacity * self.makespan_s)
        return np.nan_to_num(u, nan=0.0, posinf=0.0)


def link_sums(links: np.ndarray, values: np.ndarray, num_links: int) -> np.ndarray:
    """Per-link sum of a per-flow value over the links each flow crosses."""
    ok = links >= 0
    return np.bincount(links[ok], weights=np.broadcast_to(values[:, None], links.shape)[ok],
                       minlength=num_links)[:num_links]


def simulate(flows: FlowSet, capacity: np.ndarray, skip: Optional[np.ndarray] = None,
             max_solves: int = 100_000) -> SimResult:
    """Run the event loop until every flow (except ``skip``: undeliverable ones) is done.

    Flows whose every link has zero capacity never finish (``finish_s`` stays ``inf``).
    """
    n = len(flows)
    nl = len(capacity)
    remaining = flows.size_bytes.astype(np.float64).copy()
    finish = np.full(n, np.inf)
    done = np.zeros(n, bool) if skip is None else np.asarray(skip, bool).copy()
    zero = ~done & (remaining <= 0)
    finish[zero] = flows.start_s[zero]
    done |= zero
    arrivals = np.unique(flows.start_s[~done])
    t = float(arrivals[0]) if len(arrivals) else 0.0
    link_bytes = np.zeros(nl)
    link_rate0 = np.zeros(nl)
    rate0 = np.zeros(n)
    solves = 0
    while not done.all() and solves < max_solves:
        active = np.flatnonzero(~done & (flows.start_s <= t * (1 + EPS_REL) + 1e-15))
        future = arrivals[arrivals > t * (1 + EPS_REL) + 1e-15]
        next_arrival = float(future[0]) if len(future) else np.inf
        if not len(active):
            if not np.isfinite(next_arrival):
                break
            t = next_arrival
            continue
        rates = max_min_rates(flows.links[active], capacity, flows.max_rate_Bps[active])
        solves += 1
        if solves == 1:
            rate0[active] = rates
            link_rate0 = link_sums(flows.links[active], rates, nl)
        with np.errstate(divide="ignore"):
            ttf = np.where(rates > 0, remaining[active] / rates, np.inf)
        dt_c = float(ttf.min())
        dt = min(dt_c, next_arrival - t)
        if not np.isfinite(dt):
            break                                   # only zero-rate flows are left
        finite = np.isfinite(rates)
        link_bytes += link_sums(flows.links[active[finite]], rates[finite] * dt, nl)
        remaining[active] -= np.where(finite, rates * dt, remaining[active])
        t += dt
        fin = ttf <= dt * (1 + BATCH_REL)
        finish[active[fin]] = t
        remaining[active[fin]] = 0.0
        done[active[fin]] = True
    makespan = float(finish[np.isfinite(finish)].max()) if np.isfinite(finish).any() else 0.0
    start0 = float(flows.start_s.min()) if n else 0.0
    return SimResult(finish, finish - flows.start_s, link_bytes, link_rate0, rate0,
                     makespan - start0 if n else 0.0, solves)


def equal_flows_makespan(links: np.ndarray, capacity: np.ndarray, size_bytes: float) -> tuple[float, int]:
    """Makespan of :func:`simulate` for flows of one size started together without rate
    caps (a collective step), in closed form: ``size × max_l n_l / c_l`` (``n_l`` flows
    on link l of capacity ``c_l``), and that link (``-1``: no link).

    Why it is exact: max-min gives every flow at least ``min_{l∈f} c_l/n_l`` (when the
    level λ saturates link l, its ``n_l`` flows hold at most λ each and fill ``c_l``, so
    λ ≥ c_l/n_l), and counts only fall as flows finish, so every flow is done by
    ``size × max_{l∈f} n_l/c_l``; the flows of the link l* with the largest ``n/c`` are
    frozen at the first level ``c_l*/n_l*`` (their tightest share, the global minimum)
    and stay there until they finish together, at ``size × n_l*/c_l*``. Random ECMP on
    the 524,288 flows between the 512K cluster's pods has so many distinct levels that
    the event loop ran 10 minutes without finishing; here it is one ``bincount``.
    ``tests/sim/test_cluster.py`` checks it equals :func:`simulate` on random cases.

        >>> links = np.array([[0, 1], [0, -1], [1, 2], [2, -1]])
        >>> cap = np.array([10.0, 5.0, 20.0])
        >>> equal_flows_makespan(links, cap, 10.0), simulate(FlowSet.of([[0, 1], [0], [1, 2], [2]],
        ...                                                  [10.0] * 4), cap).makespan_s
        ((4.0, 1), 4.0)
    """
    ok = links >= 0
    if not ok.any():
        return 0.0, -1
    n = np.bincount(links[ok], minlength=len(capacity))[:len(capacity)]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(n > 0, n / capacity, 0.0)
    worst = int(np.argmax(ratio))
    return float(size_bytes * ratio[worst]), worst


__all__ = ["FlowSet", "SimResult", "equal_flows_makespan", "link_sums", "max_min_rates", "simulate"]
