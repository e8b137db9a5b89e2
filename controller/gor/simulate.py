"""Flow-level simulation: max-min fair sharing of link capacities by progressive filling.

Each flow has a set of links and a demand (the rate it would reach unconstrained: its
NIC rate, or its measured rate for a rate-limited flow). Every link has a capacity and a
fixed background load (traffic GOR does not model per flow). Progressive filling raises
all unfrozen flows together; a flow freezes when it reaches its demand or when one of
its links is full. The result is the max-min fair allocation. Links whose users' demands
all fit are dropped first (they can never be a bottleneck), which makes the common case
of a few saturated links fast.

GOR uses it to check a set of moves before committing it: a move that looks safe with
today's *measured* rates can still create a hotspot once the flows freed from a
congested link grow back to their demand.

Example::

    >>> rates = max_min_fair({"a": (("l1",), 10.0), "b": (("l1", "l2"), 10.0)},
    ...                      {"l1": 10.0, "l2": 3.0})
    >>> rates == {"a": 7.0, "b": 3.0}
    True
"""
from __future__ import annotations

from typing import Hashable, Mapping, Optional, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)
L = TypeVar("L", bound=Hashable)
EPS = 1e-9


def max_min_fair(flows: Mapping[K, tuple[Sequence[L], float]], capacity: Mapping[L, float],
                 background: Optional[Mapping[L, float]] = None) -> dict[K, float]:
    """The max-min fair rate of every flow: ``flows`` maps a key to ``(links, demand)``;
    a link missing from ``capacity`` is unconstrained; ``background`` is subtracted from
    the capacity first (never below 0)."""
    bg = background or {}
    rate: dict[K, float] = {f: 0.0 for f in flows}
    rem: dict[L, float] = {}
    users: dict[L, set[K]] = {}
    active: set[K] = set()
    for f, (links, demand) in flows.items():
        if demand <= EPS:
            continue
        active.add(f)
        for l in links:
            if l in capacity:
                if l not in rem:
                    rem[l] = max(capacity[l] - bg.get(l, 0.0), 0.0)
                users.setdefault(l, set()).add(f)
    # a link whose users' demands all fit can never be a bottleneck: drop it
    for l in [l for l, us in users.items() if sum(flows[f][1] for f in us) <= rem[l] + EPS]:
        del users[l]
    constrained = set().union(*users.values()) if users else set()
    for f in active - constrained:
        rate[f] = flows[f][1]
    active &= constrained
    while active:
        inc = min(flows[f][1] - rate[f] for f in active)
        for l, us in users.items():
            if us:
                inc = min(inc, rem[l] / len(us))
        inc = max(inc, 0.0)
        for f in active:
            rate[f] += inc
        frozen = {f for f in active if rate[f] >= flows[f][1] - EPS}
        for l, us in users.items():
            if us:
                rem[l] -= inc * len(us)
                if rem[l] <= EPS * max(1.0, capacity[l]):
                    frozen |= us
        active -= frozen
        for us in users.values():
            us -= frozen
    return rate


def link_loads(flows: Mapping[K, tuple[Sequence[L], float]], rates: Mapping[K, float],
               background: Optional[Mapping[L, float]] = None) -> dict[L, float]:
    """Background plus the allocated rates, per link (every link a flow or the background
    names).

    >>> link_loads({"a": (("l1",), 5.0)}, {"a": 4.0}, {"l1": 1.0, "l2": 2.0}) == {"l1": 5.0, "l2": 2.0}
    True
    """
    out: dict[L, float] = dict(background or {})
    for f, (links, _) in flows.items():
        for l in links:
            out[l] = out.get(l, 0.0) + rates.get(f, 0.0)
    return out


def utilisation(loads: Mapping[L, float], capacity: Mapping[L, float]) -> dict[L, float]:
    """``load / capacity`` per link with a capacity (0..1, more when over-subscribed)."""
    return {l: v / capacity[l] for l, v in loads.items() if capacity.get(l)}


__all__ = ["link_loads", "max_min_fair", "utilisation"]
