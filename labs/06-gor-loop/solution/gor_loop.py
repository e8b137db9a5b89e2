"""Lab 06, the GOR loop (solution): ECN alarms → hot links, sampled digests → elephants,
and a safe re-route decision that never creates a new hotspot.

Three functions, one per step of GOR's loop, written with the controller's own types
(``controller.gor``): :func:`hot_links`, :func:`elephants_on` and :func:`decide`.

Example::

    >>> from controller.gor import AlarmMonitor
    >>> hot_links(AlarmMonitor(), {("s0", 1): (80, 1000)}, t_s=1.0)   # 8 % of packets marked
    [('s0', 1)]
"""
from __future__ import annotations

from typing import Mapping, Sequence

from controller.gor import (AlarmLevel, AlarmMonitor, Elephant, ElephantFlow, FlowKey, FlowTable,
                            LinkKey, LinkState, PathChoice)

SAFETY = 0.75
"""No link may end a move above 75 % of its capacity (``controller/gor/paths.py``)."""

Move = tuple[FlowKey, PathChoice]


def hot_links(monitor: AlarmMonitor, counters: Mapping[LinkKey, tuple[int, int]],
              t_s: float) -> list[LinkKey]:
    """Step 1: feed one polling interval to the alarm monitor and return the hot links.

    ``counters`` maps each link to ``(ce_marks, tx_packets)`` of the interval ending at
    ``t_s``. A link is hot at alarm level WARNING or above; worst first.

    >>> m = AlarmMonitor()
    >>> hot_links(m, {("s0", 1): (300, 1000), ("s0", 2): (60, 1000)}, 1.0)
    [('s0', 1), ('s0', 2)]
    """
    for link, (marks, tx_pkts) in counters.items():
        monitor.observe(link, t_s, marks, tx_pkts)
    return monitor.active(AlarmLevel.WARNING)


def elephants_on(table: FlowTable, link: LinkKey, t_s: float,
                 min_rate_bps: float) -> list[Elephant]:
    """Step 2: the elephants on ``link``: sampled flows at ``min_rate_bps`` or more,
    fastest first (the rates are the flow table's estimates from the digests).

    >>> t = FlowTable({1: "b0r0l0"}, one_in_n=100)
    >>> _ = t.add([1, 0x0A000001, 0x0A010001, 17, 49152, 4791, 1, 3, 0, 1000], t_s=0.5)
    >>> [e.rate_bps for e in elephants_on(t, ("b0r0l0", 3), 1.0, 1e5)]
    [800000.0]
    """
    return [e for e in table.top(len(table), link, t_s) if e.rate_bps >= min_rate_bps]


def decide(hot: LinkKey, elephants: Sequence[ElephantFlow],
           candidates: Mapping[FlowKey, Sequence[PathChoice]], links: LinkState,
           safety: float = SAFETY) -> list[Move]:
    """Step 3: move elephants off ``hot`` until it is at most ``safety`` × capacity.

    Only elephants whose current path (``e.current``) uses ``hot`` are moved, fastest
    first. Each goes to the candidate path (``candidates[e.flow]``) whose **every** link
    stays at or under ``safety`` with the flow added, the least loaded one; moves already
    decided in this round count. A flow with no safe path stays where it is.
    """
    load = dict(links.load_bps)
    moves: list[Move] = []
    on_hot = [e for e in elephants if e.current is not None and hot in e.current.links]
    for e in sorted(on_hot, key=lambda e: (-e.rate_bps, e.flow)):
        if load.get(hot, 0.0) <= safety * links.capacity_bps[hot]:
            break
        assert e.current is not None
        old = set(e.current.links)
        best: tuple[float, PathChoice] | None = None
        for path in candidates.get(e.flow, ()):
            if path == e.current or not all(links.is_up(l) for l in path.links):
                continue
            worst = max((load.get(l, 0.0) + (0.0 if l in old else e.rate_bps))
                        / links.capacity_bps[l] for l in path.links)
            if worst <= safety and (best is None or worst < best[0]):
                best = (worst, path)
        if best is None:
            continue
        for l in old:
            load[l] = load.get(l, 0.0) - e.rate_bps
        for l in best[1].links:
            load[l] = load.get(l, 0.0) + e.rate_bps
        moves.append((e.flow, best[1]))
    return moves
