"""GOR's path engine: where to move each elephant, safely, and how (source port or override).

For every elephant (a :class:`ElephantFlow`: 5-tuple, measured rate, demand, leaves,
whether its owner runs a TCCL agent), in order of rate:

1. **Candidates**: every live leaf → spine → leaf path between its two leaves, read from
   the networkx graph of ``topo.model.Fabric`` (fabric edges only; a link in
   :attr:`LinkState.down` removes every path through it). Parallel links give one path
   per (uplink, downlink) pair.
2. **Predicted load** of each link of each candidate with the flow moved there: current
   telemetry load (:attr:`LinkState.load_bps`) plus the flows already moved this round
   (their measured rate leaves the old path and lands on the new one). A link of an
   elephant's current path counts at least the rates of the elephants the hash model
   puts on it: the polls lag a load window behind, and a link past the bottleneck counts
   what drained there, not what was offered, so without that floor a move would take off
   a link more than its telemetry held and predict a negative load where the new path
   keeps a link of the old one.
3. **Safety rule**: a candidate with any link above ``safety`` × capacity (default 75 %)
   is rejected; the best remaining one has the lowest maximum utilisation (then lowest
   sum, then graph order).
4. **Simulation check**: the move, together with every move already accepted this round,
   is run through :func:`controller.gor.simulate.max_min_fair` with every elephant at its
   *demand* (the rate it grows to once its bottleneck is gone) over the background load
   (telemetry minus the elephants' measured rates). The move is refused when a link not
   hot before the round ends above the threshold, or a hot link gets hotter; the next
   candidate is then tried. Each accepted move changes the state the next check starts
   from (recursive re-check).
5. **Action**: the chosen path becomes a new UDP source port solved through the hash
   model for both ECMP hops (the leaf's uplink group, then the spine's group towards the
   destination leaf when it has parallel links) → :class:`MoveOrder`; an owner without
   an agent gets ``FabricIngress.override.flows`` entries instead → :class:`OverrideOrder`.

Member names of the published hash model are the peer node, with ``"#<port>"`` when a
group has several links to that peer (``controller.fabric_setup``); next-hop ids are port
numbers.

This module holds :class:`ElephantFlow` and :class:`PathEngine`; the engine's parts live
beside it and stay importable from here: :mod:`controller.gor.linkstate`
(:class:`LinkState`), :mod:`controller.gor.candidates` (candidate paths, members and ports,
the current path; ``nic_leaves``) and :mod:`controller.gor.sports` (``ports_reaching``).

Example::

    >>> from topo.model import build_fabric
    >>> from controller.fabric_setup import fabric_hash_model
    >>> fab = build_fabric()
    >>> hm = fabric_hash_model(fab)
    >>> eng = PathEngine(fab, hm, LinkState.from_fabric(fab))
    >>> [p.spine for p in eng.candidate_paths("b0r0l0", "b1r0l0")]
    ['s0', 's1']
"""
from __future__ import annotations

import ipaddress
import itertools
import time
from dataclasses import dataclass
from typing import Collection, Iterable, Mapping, Optional, Sequence

from controller.gor.candidates import LEAF_UPLINK_GROUP, FabricPaths, nic_leaves
from controller.gor.decisions import (FlowKey, LinkKey, MoveOrder, Order, OverrideEntry,
                                      OverrideOrder, PathChoice, Rejection, RoundDecision)
from controller.gor.linkstate import LinkState
from controller.gor.simulate import link_loads, max_min_fair, utilisation
from controller.gor.sports import port_filter, ports_reaching
from controller.gor.tierpaths import dst_address, tier_sports
from topo.routes import lookup
from p4src.hashmodel import FabricHashModel, member_index
from topo.model import Fabric

DEFAULT_SAFETY = 0.75
DEFAULT_PORT_RANGE = (49152, 65535)
PROTO_UDP = 17
SCAN_BELOW_GROUP_SIZE = 16
"""Leaf groups smaller than this are solved by scanning ports with a filter (a good port
every few ports; listing all would be 65,536 / size of them), larger ones by listing
the GF(2) solutions (65,536 / size ports)."""
_EPS = 1e-6


# ----------------------------------------------------------------------------- flows
@dataclass(frozen=True, slots=True)
class ElephantFlow:
    """An elephant to place: ``ElephantFlow(flow, 30e9, "b0r0l0", "b1r0l0", demand_bps=100e9)``.

    ``rate_bps`` is the measured rate (what leaves the old path); ``demand_bps`` the rate
    it would reach unconstrained (default: the measured rate); ``current`` its path now
    (predicted from the hash model when None); ``has_agent``: the source host runs TCCL.
    ``nic_port``: the port of its dual-port NIC it sends on (``src_leaf`` is that port's
    leaf; None: a NIC of one port); ``other_ports``: (port, leaf) of the NIC's other
    ports, where a move by NIC port may take it (:meth:`PathEngine.decide`).
    ``dst_leaves``: the leaves of the destination NIC's other ports (a dual-homed NIC: the
    last spine's ECMP group holds both leaves, so a path may end at either; used over
    three tiers, where the programmed routes say so, :mod:`controller.gor.tierpaths`).
    """

    flow: FlowKey
    rate_bps: float
    src_leaf: str
    dst_leaf: str
    demand_bps: Optional[float] = None
    current: Optional[PathChoice] = None
    has_agent: bool = True
    nic_port: Optional[int] = None
    other_ports: tuple[tuple[int, str], ...] = ()
    dst_leaves: tuple[str, ...] = ()

    @property
    def demand(self) -> float:
        """``demand_bps`` or, without one, the measured rate."""
        return self.rate_bps if self.demand_bps is None else self.demand_bps

    @property
    def to_leaves(self) -> tuple[str, ...]:
        """``dst_leaf`` then the other ``dst_leaves``, each once.

        >>> from controller.gor.decisions import FlowKey
        >>> ElephantFlow(FlowKey("a", "b", 17, 1, 2), 1.0, "l0", "d0", dst_leaves=("d0", "d1")).to_leaves
        ('d0', 'd1')
        """
        return tuple(dict.fromkeys((self.dst_leaf, *self.dst_leaves)))


# ----------------------------------------------------------------------------- engine
class PathEngine(FabricPaths):
    """Candidate paths, safety rule, simulation check and orders over one fabric.

    ``links`` is shared with the telemetry loop (loads and down links are read live);
    ``hash_model`` is the published model of the switches as programmed. Candidate
    paths, member ports and the current path come from :class:`FabricPaths`.
    """

    def __init__(self, fabric: Fabric, hash_model: FabricHashModel, links: LinkState,
                 safety: float = DEFAULT_SAFETY,
                 port_range: tuple[int, int] = DEFAULT_PORT_RANGE,
                 leaf_group: int = LEAF_UPLINK_GROUP) -> None:
        if not 0 < safety <= 1:
            raise ValueError(f"safety threshold {safety}: must be in (0, 1]")
        super().__init__(fabric, hash_model, links, leaf_group)
        self.safety, self.port_range = safety, port_range

    # ---------------------------------------------------------------- actions
    def solve_sport(self, flow: FlowKey, path: PathChoice,
                    avoid: Collection[int] = (), keep_ok: bool = False) -> Optional[int]:
        """A UDP source port that sends ``flow`` along ``path`` on both ECMP hops (the
        first in ``port_range``, else any; never one of ``avoid``, the ports other flows
        between the same two NICs use, nor the current one unless ``keep_ok``: a move by
        NIC port keeps its source port when that one takes the new leaf's path); None if
        none does."""
        if flow.proto != PROTO_UDP:
            return None
        if keep_ok and flow.sport not in avoid and self.current_path(
                flow, path.links[0][0], self._dst_of(path)) == path:
            return flow.sport
        if self.tiers is not None:              # every ECMP hop of a path over three tiers
            return next((p for p in tier_sports(self.tiers, flow, path, self.port_range)
                         if p != flow.sport and p not in avoid), None)
        (leaf_name, up), (spine, down) = path.links
        leaf = self.hash_model.switch(leaf_name)
        src, dst = int(ipaddress.IPv4Address(flow.src)), int(ipaddress.IPv4Address(flow.dst))
        gid = self.leaf_group_of(leaf, dst)
        try:
            want_leaf = leaf.group(gid).base + self._member_of_port(leaf, gid, up)
        except KeyError:
            return None                             # the uplink is not a way to dst now
        sg = self.dst_spine_group(spine, self._dst_of(path), flow.dst)
        smodel = self.hash_model.switch(spine) if sg is not None else None
        want_spine = (smodel.group(sg).base + self._member_of_port(smodel, sg, down)
                      if smodel is not None and sg is not None else None)
        lo, hi = self.port_range
        if leaf.group(gid).size >= SCAN_BELOW_GROUP_SIZE:   # few solutions: list them
            ports: Iterable[int] = sorted(ports_reaching(leaf, gid, src, dst, flow.dport,
                                                         want_leaf), key=lambda p: (not lo <= p <= hi, p))
        else:                                       # every few ports is one: scan, stop at the first
            ok = port_filter(leaf, gid, src, dst, flow.dport, want_leaf)
            ports = (p for p in itertools.chain(range(lo, hi + 1), range(1, lo), range(hi + 1, 1 << 16))
                     if ok(p))
        for port in ports:
            if port == 0 or port == flow.sport or port in avoid:
                continue
            if smodel is not None and sg is not None and member_index(
                    smodel, sg, src, dst, PROTO_UDP, port, flow.dport) != want_spine:
                continue
            return port
        return None

    def override_entries(self, path: PathChoice, dst_ip: str = "") -> tuple[OverrideEntry, ...]:
        """Override entries pinning a flow to ``path``: the source leaf, and the spine
        when it has parallel links to the destination leaf or spreads the destination NIC
        ``dst_ip`` over its two leaves (:meth:`dst_spine_group`). Over three tiers: every
        switch of the path whose route to the flow's destination is an ECMP group (the
        path's links are those of that destination, :meth:`candidate_paths`)."""
        if self.tiers is not None:
            return tuple(OverrideEntry(sw, port) for sw, port in path.links
                         if self._ecmp_hop(sw, path))
        (leaf, up), (spine, down) = path.links
        entries = [OverrideEntry(leaf, up)]
        if self.dst_spine_group(spine, self._dst_of(path), dst_ip) is not None:
            entries.append(OverrideEntry(spine, down))
        return tuple(entries)

    def _ecmp_hop(self, switch: str, path: PathChoice) -> bool:
        """True when ``switch`` spreads the traffic to ``path``'s destination leaf over
        several ports (an override is needed there to pin the path)."""
        assert self.tiers is not None
        dst = dst_address(self.tiers, self._dst_of(path))
        route = lookup(self.tiers.routes.get(switch, ()), dst) if dst is not None else None
        return route is not None and route.is_ecmp

    # ---------------------------------------------------------------- the round
    def decide(self, elephants: Sequence[ElephantFlow], t_s: float = 0.0,
               trigger: Optional[LinkKey] = None,
               links: Optional[LinkState] = None,
               in_use: Collection[FlowKey] = ()) -> RoundDecision:
        """Plan one round of moves for ``elephants`` (fastest first); pure: the link state
        is not changed. Only the links the elephants use or may use are simulated (the
        others cannot change). ``links`` replaces the shared state for this round (the
        loop passes loads with the moves still in flight applied); ``in_use``: 5-tuples
        of other live flows, whose source ports a move must not take (two QPs between
        the same NICs on one port would become one flow). No path with a link in
        ``links.down`` is a candidate (the rounds add the links of a switch lost or just
        back: no move is sent towards a switch GOR cannot reach)."""
        t0 = time.perf_counter()
        dec = RoundDecision(t_s, trigger)
        links = self.links if links is None else links
        order = sorted(range(len(elephants)), key=lambda i: (-elephants[i].rate_bps, elephants[i].flow))
        cur: dict[int, Optional[PathChoice]] = {}
        for i, e in enumerate(elephants):
            cur[i] = e.current if e.current is not None else self.current_path(e.flow, e.src_leaf, e.dst_leaf)

        def live_paths(src_leaf: str, e: ElephantFlow) -> list[PathChoice]:
            """Every live path from ``src_leaf`` to the flow's destination leaf, and to
            each other leaf of a dual-homed destination NIC (the spines' groups hold both,
            over two tiers and three), never to ``src_leaf`` itself (the leaf delivers
            that one locally)."""
            ends = e.to_leaves
            if src_leaf in ends:
                return []                   # the destination NIC hangs on this leaf too
            return [p for d in ends if d != src_leaf for p in self.candidate_paths(src_leaf, d)
                    if not any(l in links.down for l in p.links)]

        cands_of = {i: [p for p in live_paths(e.src_leaf, e) if p != cur[i]]
                    for i, e in enumerate(elephants)}
        alt_of: dict[int, dict[int, list[PathChoice]]] = {
            i: {port: live_paths(leaf, e) for port, leaf in e.other_ports if leaf != e.dst_leaf}
            for i, e in enumerate(elephants) if e.has_agent}
        # only links some elephant uses or may use can change: simulate those
        rel = {l for i in cur for p in [cur[i], *cands_of[i], *itertools.chain(*alt_of.get(i, {}).values())]
               if p is not None for l in p.links}
        cap = {l: (0.0 if l in links.down else links.capacity_bps[l]) for l in rel}
        background = {l: links.load_bps.get(l, 0.0) for l in rel}
        for i, e in enumerate(elephants):
            for l in (cur[i].links if cur[i] else ()):
                background[l] = max(background.get(l, 0.0) - e.rate_bps, 0.0)
        placed: dict[int, Optional[PathChoice]] = dict(cur)
        taken = {(k.src, k.dst, k.dport, k.sport) for k in [*in_use, *(e.flow for e in elephants)]}

        def simulate(paths: Mapping[int, Optional[PathChoice]]) -> dict[LinkKey, float]:
            flows = {i: (p.links if p else (), elephants[i].demand) for i, p in paths.items()}
            rates = max_min_fair(flows, cap, background)
            used = {l: background.get(l, 0.0) for fl, _ in flows.values() for l in fl}
            return utilisation(link_loads(flows, rates, used), links.capacity_bps)

        base_util = simulate(placed)
        hot0 = {l for l, u in base_util.items() if u > self.safety + _EPS}
        hot0 |= {l for l in rel if links.load_bps.get(l, 0.0) > self.safety * links.capacity_bps[l]}
        dec.baseline_max_util = max(base_util.values(), default=0.0)
        last_util = base_util
        work = dict(links.load_bps)
        # a link of an elephant's current path carries at least the elephants' rates the
        # hash model puts there (telemetry lags, and counts what drained past a bottleneck):
        # a move then never takes off more than the link held
        known: dict[LinkKey, float] = {}
        for i, e in enumerate(elephants):
            for l in (cur[i].links if cur[i] else ()):
                known[l] = known.get(l, 0.0) + e.rate_bps
        for l, bps in known.items():
            work[l] = max(work.get(l, 0.0), bps)
        for i in order:
            e = elephants[i]
            old = cur[i]
            old_links = set(old.links) if old else set()
            # the flow's own NIC port first; the NIC's other ports (their leaves) only when
            # no path from its own leaf is taken (a move by NIC port, issue 29)
            attempts: list[tuple[Optional[int], list[PathChoice]]] = [(None, cands_of[i])]
            alts = alt_of.get(i, {})
            attempts += [(port, alts[port]) for port, _ in e.other_ports if port in alts]
            first: Optional[Rejection] = None
            for nic_port, cands in attempts:
                if not cands:
                    first = first or Rejection(e.flow, "no-path", None,
                                               f"{e.src_leaf} -> {e.dst_leaf}")
                    continue
                scored = []
                unsafe: Optional[Rejection] = None
                unsafe_worst = float("inf")
                for p in cands:
                    pred = {l: (work.get(l, 0.0) + (0.0 if l in old_links else e.rate_bps))
                            / links.capacity_bps[l] for l in p.links}
                    worst = max(pred.values())
                    if worst > self.safety + _EPS:
                        if worst < unsafe_worst:
                            unsafe_worst = worst
                            unsafe = Rejection(e.flow, "safety", p, f"{worst:.3f} > {self.safety}")
                        continue
                    scored.append((worst, sum(pred.values()), len(scored), p, pred))
                scored.sort(key=lambda x: x[:3])
                old_up = old is not None and all(links.is_up(l) for l in old.links)
                if old_up and old is not None and scored:
                    stay = max(work.get(l, 0.0) / links.capacity_bps[l] for l in old.links)
                    if scored[0][0] >= stay - _EPS:
                        first = first or Rejection(e.flow, "no-gain", scored[0][3],
                                                   f"best {scored[0][0]:.3f} >= now {stay:.3f}")
                        continue
                reason: Optional[Rejection] = None
                for worst, _, _, p, pred in scored:
                    order_: Optional[Order]
                    if e.has_agent:
                        f = e.flow
                        avoid = {t[3] for t in taken if t[:3] == (f.src, f.dst, f.dport)}
                        if nic_port is not None:        # the 5-tuple may stay: the port moves
                            avoid.discard(f.sport)
                        sport = self.solve_sport(f, p, avoid, keep_ok=nic_port is not None)
                        if sport is None:
                            reason = reason or Rejection(e.flow, "no-port", p, "no source port reaches it")
                            continue
                        order_ = MoveOrder(e.flow, sport, p, pred, old, e.rate_bps, nic_port,
                                           e.nic_port if nic_port is not None else None)
                    else:
                        order_ = OverrideOrder(e.flow, self.override_entries(p, e.flow.dst), p, pred, old,
                                               e.rate_bps)
                    trial = dict(placed)
                    trial[i] = p
                    util = simulate(trial)
                    bad = min((l for l, u in util.items()
                               if (u > self.safety + _EPS and l not in hot0)
                               or (l in hot0 and u > base_util.get(l, links.util(l)) + _EPS)), default=None)
                    if bad is not None:
                        reason = Rejection(e.flow, "hotspot", p,
                                           f"{bad[0]}:{bad[1]} at {util[bad]:.3f} in simulation")
                        continue
                    placed, last_util = trial, util
                    for l in old_links:
                        work[l] = max(work.get(l, 0.0) - e.rate_bps, 0.0)
                    for l in p.links:
                        work[l] = work.get(l, 0.0) + e.rate_bps
                    dec.orders.append(order_)
                    if isinstance(order_, MoveOrder):
                        taken.add((e.flow.src, e.flow.dst, e.flow.dport, order_.new_sport))
                    reason = None
                    break
                else:
                    reason = reason or unsafe or Rejection(e.flow, "safety", None,
                                                           "every path over the threshold")
                if reason is None:
                    first = None
                    break
                first = first or reason
            if first is not None:
                dec.rejected.append(first)
        dec.predicted_max_util = max(last_util.values(), default=0.0)
        dec.elapsed_s = time.perf_counter() - t0
        return dec


__all__ = ["DEFAULT_PORT_RANGE", "DEFAULT_SAFETY", "ElephantFlow", "LEAF_UPLINK_GROUP", "LinkState",
           "PathEngine", "nic_leaves", "ports_reaching"]
