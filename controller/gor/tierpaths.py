"""GOR's paths over three tiers (pods joined by core switches): candidates, the current
path of a flow, and the source ports that send it along a chosen path.

In a fabric with a core tier a path is every switch-to-switch link a flow loads, in order:
two links inside a pod (leaf → spine → leaf) and four across pods (leaf → spine of plane
k → core of plane k → spine k of the other pod → leaf). The routes are those the switches
were programmed with (:func:`topo.routes.fabric_routes`, the one source of truth of
:func:`controller.fabric.plan.plan_fabric` over three tiers) and every ECMP choice is the
published hash model's (``H % size`` of that switch's hash,
:func:`p4src.hashmodel.flow_hash`), so what GOR predicts is what the counters see.

* :func:`tier_candidates`: every live path from a source leaf to a destination leaf (the
  product of the parallel links at every tier); the 75 % rule of
  :meth:`controller.gor.paths.PathEngine.decide` then reads every link of it, all tiers.
* :func:`tier_current`: where the hash model sends a flow now.
* :func:`tier_sports`: the source ports that take a path (one hash table per ECMP switch
  on it, :func:`p4src.hashmodel.source_port_hashes`).

Example::

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> from controller.fabric.tiers import TierModel
    >>> fab = build_fabric(FabricSpec(pods=2, blocks=1, cores=2, ports_per_nic=2, leaves_per_rail=2))
    >>> tiers = TierModel.of(fab)
    >>> cands = tier_candidates(tiers, "b0r0l0", "p1.b0r0l0", lambda link: True)
    >>> len(cands), [s for s, _ in cands[0].links]
    (32, ['b0r0l0', 's0', 'c0.0', 'p1.s0'])
    >>> from controller.gor.decisions import FlowKey
    >>> now = tier_current(tiers, FlowKey("10.0.0.1", "10.0.2.1", 17, 49152, 4791), "b0r0l0")
    >>> now is not None and len(now.links)
    4
    >>> sp = next(tier_sports(tiers, FlowKey("10.0.0.1", "10.0.2.1", 17, 49152, 4791), cands[5]))
    >>> tier_current(tiers, FlowKey("10.0.0.1", "10.0.2.1", 17, sp, 4791), "b0r0l0") == cands[5]
    True
"""
from __future__ import annotations

import itertools
from typing import Callable, Iterator, Optional

from controller.fabric.tiers import TierModel
from controller.gor.decisions import FlowKey, LinkKey, PathChoice
from p4src.hashmodel import PROTO_UDP, Flow, flow_hash, source_port_hashes
from topo.routes import Route, lookup

MAX_HOPS = 8


def _route(tiers: TierModel, switch: str, dst: str) -> Optional[Route]:
    return lookup(tiers.routes.get(switch, ()), dst)


def dst_address(tiers: TierModel, dst_leaf: str) -> Optional[str]:
    """An address served by ``dst_leaf`` (its first attached NIC), to look routes up
    towards that leaf; None when no NIC sits on it."""
    for r in tiers.routes.get(dst_leaf, ()):
        if r.prefix.endswith("/32"):
            return r.prefix[:-3]
    return None


def tier_candidates(tiers: TierModel, src_leaf: str, dst_leaf: str,
                    is_up: Callable[[LinkKey], bool]) -> list[PathChoice]:
    """Every path from ``src_leaf`` to ``dst_leaf`` whose links are all up, by the
    programmed routes (at the hop before ``dst_leaf``, only the links to it), in port
    order at every hop. ``PathChoice.spine`` is the first spine."""
    dst = dst_address(tiers, dst_leaf)
    if dst is None:
        return []
    out: list[PathChoice] = []

    def walk(switch: str, links: tuple[LinkKey, ...]) -> None:
        if switch == dst_leaf:
            if links:
                out.append(PathChoice(_first_spine(tiers, links), links))
            return
        if len(links) >= MAX_HOPS:
            return
        route = _route(tiers, switch, dst)
        if route is None:
            return
        sw = tiers.fabric.switch(switch)
        for port in route.ports:
            info = sw.ports[port]
            if info.kind == "host" or not is_up((switch, port)):
                continue
            peer = tiers.fabric.switch(info.peer_node)
            if peer.role == "leaf" and peer.name != dst_leaf:
                continue
            walk(peer.name, links + ((switch, port),))

    walk(src_leaf, ())
    return out


def _first_spine(tiers: TierModel, links: tuple[LinkKey, ...]) -> str:
    sw = tiers.fabric.switch(links[0][0])
    return sw.ports[links[0][1]].peer_node


def tier_current(tiers: TierModel, flow: FlowKey, src_leaf: str) -> Optional[PathChoice]:
    """The switch-to-switch links the hash model sends ``flow`` over from ``src_leaf``
    (None when a hop has no route or the flow never leaves the leaf)."""
    f = Flow.of(flow.src, flow.dst, flow.proto, flow.sport, flow.dport)
    switch, links = src_leaf, []
    for _ in range(MAX_HOPS):
        route = _route(tiers, switch, flow.dst)
        if route is None:
            return None
        port = (route.ports[flow_hash(tiers.hop_model(switch, route), f) % len(route.ports)]
                if route.is_ecmp else route.ports[0])
        info = tiers.fabric.switch(switch).ports[port]
        if info.kind == "host":
            return PathChoice(_first_spine(tiers, tuple(links)), tuple(links)) if links else None
        links.append((switch, port))
        switch = info.peer_node
    return None


def tier_sports(tiers: TierModel, flow: FlowKey, path: PathChoice,
                port_range: tuple[int, int] = (49152, 65535)) -> Iterator[int]:
    """The UDP source ports that send ``flow`` along ``path`` at every ECMP hop (those in
    ``port_range`` first, then the others, ascending). Nothing for a non-UDP flow or a
    path whose hop is not on the flow's route."""
    if flow.proto != PROTO_UDP:
        return
    wants: list[tuple[list[int], int, int]] = []      # (hash table, group size, wanted index)
    for switch, port in path.links:
        route = _route(tiers, switch, flow.dst)
        if route is None or port not in route.ports:
            return
        if route.is_ecmp:
            table = source_port_hashes(tiers.hop_model(switch, route), flow.src, flow.dst, PROTO_UDP,
                                       flow.dport)
            wants.append((table, len(route.ports), route.ports.index(port)))
    lo, hi = port_range
    for sp in itertools.chain(range(lo, hi + 1), range(1, lo), range(hi + 1, 1 << 16)):
        if all(t[sp] % n == want for t, n, want in wants):
            yield sp


def is_tiered(tiers: Optional[TierModel]) -> bool:
    """True for the model of a fabric with a core tier."""
    return tiers is not None and any(s.role == "core" for s in tiers.fabric.switches)


__all__ = ["MAX_HOPS", "dst_address", "is_tiered", "tier_candidates", "tier_current",
           "tier_sports"]
