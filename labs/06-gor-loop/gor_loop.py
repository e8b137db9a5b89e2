"""Lab 06, the GOR loop: ECN alarms → hot links, sampled digests → elephants, and a safe
re-route decision that never creates a new hotspot.

Three functions, one per step of GOR's loop, written with the controller's own types
(``controller.gor``). Each one has a TODO; ``make check`` tells you which step is wrong.

Example (once step 1 is done)::

    >>> from controller.gor import AlarmMonitor
    >>> hot_links(AlarmMonitor(), {("s0", 1): (80, 1000)}, t_s=1.0)   # doctest: +SKIP
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
    """
    # TODO 1: for every link, give its marks and packets to monitor.observe(link, t_s,
    #         marks, tx_pkts). The monitor keeps the state (hysteresis), so do not compute
    #         the mark rate yourself. Then return monitor.active(...) at AlarmLevel.WARNING.
    _ = (monitor, counters, t_s, AlarmLevel)
    return []


def elephants_on(table: FlowTable, link: LinkKey, t_s: float,
                 min_rate_bps: float) -> list[Elephant]:
    """Step 2: the elephants on ``link``: sampled flows at ``min_rate_bps`` or more,
    fastest first (the rates are the flow table's estimates from the digests)."""
    # TODO 2: table.top(n, link, t_s) gives the n fastest flows seen on link (each an
    #         Elephant with .rate_bps); keep those at min_rate_bps or more.
    _ = (table, link, t_s, min_rate_bps)
    return []


def decide(hot: LinkKey, elephants: Sequence[ElephantFlow],
           candidates: Mapping[FlowKey, Sequence[PathChoice]], links: LinkState,
           safety: float = SAFETY) -> list[Move]:
    """Step 3: move elephants off ``hot`` until it is at most ``safety`` × capacity.

    Only elephants whose current path (``e.current``) uses ``hot`` are moved, fastest
    first. Each goes to the candidate path (``candidates[e.flow]``) whose **every** link
    stays at or under ``safety`` with the flow added, the least loaded one; moves already
    decided in this round count. A flow with no safe path stays where it is.
    """
    # TODO 3: keep a copy of the loads: load = dict(links.load_bps) (bits/s per link;
    #         capacity in links.capacity_bps). For each elephant on the hot link, fastest
    #         first, while load[hot] > safety * capacity:
    #           - for each candidate path other than e.current, predict every link of it
    #             with the flow added (a link it already uses does not change);
    #           - keep the path whose worst link is lowest, if that worst is <= safety;
    #           - if there is one, take e.rate_bps off the old path's links, add it on the
    #             new path's links, and append (e.flow, path) to the moves.
    _ = (hot, elephants, candidates, links, safety)
    moves: list[Move] = []
    return moves
