"""Hash-orthogonal UDP source ports: choose the source port of every concurrent RoCEv2 flow
so that no ECMP link carries more than its fair share.

A flow (``src`` → ``dst``, UDP, destination port 4791) crosses two ECMP hops: the group of
its source leaf (member = an uplink, named after the spine, ``"s0"`` or ``"s0#<port>"``
with parallel links), then on that spine the group towards the destination leaf (members
``"<leaf>#<port>"``; no group, i.e. one link, when the spine has a single link there).
Both choices are functions of the 5-tuple, so the source port is the host's only knob
(it is covered by the RoCE ICRC: only the sender can change it).

How ports are solved (no random search):

1. **Paths first.** A path is a *colour* ``(spine, j)``: the j-th link from the source
   leaf to ``spine`` and the j-th link from ``spine`` to the destination leaf. Flows are
   edges of a bipartite multigraph (source-leaf hop ↔ destination leaf); splitting every
   vertex of degree d into ``ceil(d / k)`` vertices of degree ≤ k (k = colours) and
   colouring the edges properly with Kempe-chain swaps (König: k colours suffice for a
   bipartite graph of degree ≤ k) gives every link at most ``ceil(flows / links)`` flows
   on both tiers at once.
2. **Then ports.** For each flow, the hash model's affine port → member tables
   (:func:`p4src.hashmodel.port_to_member_table`, 65,536 ports in ~10 ms) of the leaf and
   of the chosen spine give the ports reaching the wanted pair of members; the first one in
   the preferred range (default 49152–65535) is taken, or the flow keeps its previous port
   when that still lands on the planned path (re-planning moves as few flows as possible).
   With crc16 an aligned run of 2,048 ports reaches only 2 of 4/8 members, so ports are
   always taken from the full table, never from a small window.
3. **Polarised models** (the same CRC on both tiers, parallel spine links): a seed only
   XORs a constant into H, so the spine member is a fixed function of the leaf member,
   and the constant comes from the seeds of each (source leaf, spine) pair: it differs
   from leaf to leaf. The solver probes that function once per (source leaf, spine) on
   one flow; where it is a bijection f on the spine's links, colour ``(spine, k)`` means
   downlink k, reached from each flow's own leaf by uplink ``f⁻¹(k)``, so both tiers stay
   properly coloured and the caps of step 1 hold. When some flow still cannot reach its
   colour (a function that is no bijection), the solver falls back to a greedy
   assignment over the colours each flow can reach and reports ``balanced=False`` if a
   cap is exceeded.

Every seed and algorithm comes from the model per switch; :meth:`PortPlanner.replan`
re-solves against a new model (a re-seeded or re-programmed fabric).

The leaf hop is the group the leaf's published routes pick for the destination
(:func:`host.tccl.hops.leaf_group_of`: a detour group around a spine that lost the
destination's leaf, else the request's uplink group). On a detour the first port that
also takes the same uplink in the uplink group is preferred (the flow stays put when the
detour is withdrawn); uplink caps stay the even share over the uplink group.

This module holds the planner; its parts live beside it, and every public name is also
importable from here: :mod:`host.tccl.portplan` (records and constants),
:mod:`host.tccl.hops` (a flow's colours in the hash model), :mod:`host.tccl.colouring`
(step 1) and :mod:`host.tccl.polarisation` (step 3).

Example::

    >>> from p4src.hashmodel import FabricHashModel, GroupModel, SwitchHashModel
    >>> model = FabricHashModel({
    ...     "l0": SwitchHashModel("l0", seed=1, groups={1: GroupModel(0, ["s0", "s1"])}),
    ...     "s0": SwitchHashModel("s0", "crc32", seed=2), "s1": SwitchHashModel("s1", "crc32", seed=3)})
    >>> flows = [FlowRequest(f"f{i}", "10.0.0.1", "10.1.0.1", "l0", 1, "l1") for i in range(4)]
    >>> plan = PortPlanner(model).plan(flows)
    >>> plan.balanced, plan.max_link_load, sorted(p.path[0] for p in plan.flows)
    (True, 2, ['s0', 's0', 's1', 's1'])
"""
from __future__ import annotations

import ipaddress
import math
from typing import Callable, Iterable, Mapping, Optional, Sequence

from host.tccl.colouring import kempe_colouring, split_vertices
from host.tccl.hops import (FlowHop, colour_of_port, hop_of, links_of, member_tables, reachable,
                            spine_routes_to, uplink_group_table)
from host.tccl.polarisation import follow_polarisation, polarised_downlinks
from host.tccl.portplan import (DEFAULT_PORT_RANGE, LEAF_UPLINK_GROUP, PROTO_UDP, ROCE_DPORT, Colour,
                                FlowPlan, FlowRequest, PortPlan, PortPlanError)
from p4src.hashmodel import FabricHashModel, Flow, predict_path


# ----------------------------------------------------------------------------- the planner
class PortPlanner:
    """Source-port solver over one published hash model; :meth:`replan` swaps the model.

    Example::

        >>> from p4src.hashmodel import FabricHashModel, GroupModel, SwitchHashModel
        >>> m = FabricHashModel({"l0": SwitchHashModel("l0", groups={1: GroupModel(0, ["s0", "s1"])})})
        >>> pp = PortPlanner(m, port_range=(50000, 60000))
        >>> all(50000 <= f.sport <= 60000 for f in pp.plan(
        ...     [FlowRequest("a", "10.0.0.1", "10.1.0.1", "l0", 1, "l1")]).flows)
        True
    """

    def __init__(self, model: FabricHashModel, port_range: tuple[int, int] = DEFAULT_PORT_RANGE,
                 port_ok: Optional[Callable[[FlowRequest, int], bool]] = None) -> None:
        """``port_ok(request, port)``: a further condition every chosen source port must
        meet (:mod:`host.tccl.dualport`: the NIC's tx-port hash picks the planned NIC port)."""
        self.port_ok = port_ok
        lo, hi = port_range
        if not 1 <= lo <= hi <= 0xFFFF:
            raise PortPlanError(f"port range {lo}..{hi}: must be within 1..65535, low ≤ high")
        self.model = model
        self.port_range = (lo, hi)
        self.last: Optional[PortPlan] = None
        self._requests: list[FlowRequest] = []

    def plan(self, flows: Sequence[FlowRequest],
             previous: Optional[Mapping[str, int]] = None) -> PortPlan:
        """Solve ports for ``flows``; ``previous`` (name → port) are kept when still on plan."""
        names = [f.name for f in flows]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise PortPlanError(f"flow {dup}: duplicate flow name")
        for f in flows:
            for ip in (f.src, f.dst):
                try:
                    ipaddress.IPv4Address(ip)
                except ValueError:
                    raise PortPlanError(f"flow {f.name}: {ip!r} is not an IPv4 address") from None
        hops = [hop_of(self.model, f) for f in flows]
        colours = self._colour(flows, hops, previous or {})
        plan = self._ports(flows, hops, colours, previous or {})
        self.last, self._requests = plan, list(flows)
        return plan

    def replan(self, model: FabricHashModel) -> PortPlan:
        """Re-solve the last flow set against ``model``, keeping every port still on plan."""
        if self.last is None:
            raise PortPlanError("replan before any plan")
        previous = {f.name: f.sport for f in self.last.flows}
        self.model = model
        return self.plan(self._requests, previous)

    # ---------------------------------------------------------------- step 1: colours
    def _colour(self, flows: Sequence[FlowRequest], hops: Sequence[FlowHop],
                previous: Mapping[str, int]) -> list[Colour]:
        palettes = {tuple(h.colours) for h in hops}
        if not flows:
            return []
        follow_polarisation(self.model, flows, hops)
        if len(palettes) == 1:
            palette = list(next(iter(palettes)))
            k = len(palette)
            us = split_vertices([("u", h.leaf, h.group) for h in hops], k)
            vs = split_vertices([("v", f.dst_leaf) for f in flows], k)
            # flows with a previous port that is still valid go first, keeping their colour
            order = sorted(range(len(flows)), key=lambda i: flows[i].name not in previous)
            edges = [(us[i], vs[i]) for i in order]
            prev_col = [colour_of_port(self.model, flows[i], hops[i], previous.get(flows[i].name)) for i in order]
            coloured = kempe_colouring(edges, palette, prev_col)
            result: list[Colour] = [("", 0)] * len(flows)
            for pos, i in enumerate(order):
                result[i] = coloured[pos]
            if all(reachable(self.model, flows[i], hops[i], result[i]) for i in range(len(flows))):
                return result
        return self._greedy(flows, hops)

    def _greedy(self, flows: Sequence[FlowRequest], hops: Sequence[FlowHop]) -> list[Colour]:
        """Fallback: least-loaded reachable colour per flow, most constrained flows first."""
        reach = [[c for c in h.colours if reachable(self.model, f, h, c)] for f, h in zip(flows, hops)]
        for f, r in zip(flows, reach):
            if not r:
                raise PortPlanError(f"flow {f.name}: no source port reaches any path in this model")
        load: dict[tuple[str, str], int] = {}
        out: list[Colour] = [("", 0)] * len(flows)
        for i in sorted(range(len(flows)), key=lambda i: len(reach[i])):
            best = min(reach[i], key=lambda c: (max(load.get(l, 0) for l in links_of(self.model, flows[i], hops[i], c)),
                                                sum(load.get(l, 0) for l in links_of(self.model, flows[i], hops[i], c))))
            out[i] = best
            for l in links_of(self.model, flows[i], hops[i], best):
                load[l] = load.get(l, 0) + 1
        return out

    # ---------------------------------------------------------------- step 2: ports
    def _ports(self, flows: Sequence[FlowRequest], hops: Sequence[FlowHop], colours: Sequence[Colour],
               previous: Mapping[str, int]) -> PortPlan:
        used: set[tuple[str, str, int]] = set()
        plans: list[FlowPlan] = []
        lo, hi = self.port_range
        for req, hop, colour in zip(flows, hops, colours):
            lt, wl, st, ws = member_tables(self.model, req, hop, colour)
            alt = uplink_group_table(self.model, req, hop, colour)     # None unless detoured

            def ok(p: int) -> bool:
                return (lt[p] == wl and (st is None or st[p] == ws) and p != 0
                        and (req.src, req.dst, p) not in used
                        and (self.port_ok is None or self.port_ok(req, p)))

            def stays(p: int) -> bool:      # same uplink if the detour route is withdrawn
                return alt is None or alt[0][p] == alt[1]

            prev = previous.get(req.name)
            moved = True
            if prev is not None and 0 < prev <= 0xFFFF and ok(prev):
                port, moved = prev, False
            else:
                port = None
                for ports in (range(lo, hi + 1), range(1, 0x10000)):
                    port = next((p for p in ports if ok(p) and stays(p)), None)
                    if port is None and alt is not None:
                        port = next((p for p in ports if ok(p)), None)
                    if port is not None:
                        break
                if port is None:
                    raise PortPlanError(f"flow {req.name}: no free source port reaches path {colour}")
            used.add((req.src, req.dst, port))
            sh = hop.spine_hop[colour]
            hop_list = [(hop.leaf, hop.group)] + ([(sh[0], sh[1])] if sh is not None else [])
            path = predict_path(self.model, Flow.of(req.src, req.dst, PROTO_UDP, port, req.dport), hop_list)
            plans.append(FlowPlan(req.name, req.src, req.dst, port, req.dport, tuple(hop_list),
                                  tuple(path), links_of(self.model, req, hop, colour), moved))
        return _loads(self.model, plans, flows, hops)


def _loads(model: FabricHashModel, plans: list[FlowPlan], flows: Sequence[FlowRequest],
           hops: Sequence[FlowHop]) -> PortPlan:
    """The :class:`PortPlan` of ``plans``: every link's load and cap, and whether all hold."""
    loads: dict[tuple[str, str], int] = {}
    for p in plans:
        for link in p.links:
            loads[link] = loads.get(link, 0) + 1
    # caps: uplinks of a leaf hop share its flows; downlinks into a leaf share that leaf's flows
    up_n = _uplink_shares(model, flows, hops)
    down_n: dict[str, int] = {}
    for f in flows:
        down_n[f.dst_leaf] = down_n.get(f.dst_leaf, 0) + 1
    # k: a leaf hop's uplinks; into a leaf, the most paths any flow has to it (spines
    # without a live route to the leaf are no path)
    k_down: dict[str, int] = {}
    for f, h in zip(flows, hops):
        k_down[f.dst_leaf] = max(k_down.get(f.dst_leaf, 0), len(h.colours))
    caps: dict[tuple[str, str], int] = {}
    for f, h, p in zip(flows, hops, plans):
        caps[p.links[0]] = up_n[(h.leaf, f.leaf_group)]
        caps[p.links[1]] = math.ceil(down_n[f.dst_leaf] / k_down[f.dst_leaf])
    balanced = all(loads[l] <= caps[l] for l in loads)
    return PortPlan(plans, loads, caps, balanced)


def _uplink_shares(model: FabricHashModel, flows: Sequence[FlowRequest],
                   hops: Sequence[FlowHop]) -> dict[tuple[str, int], int]:
    """``(leaf, uplink group)`` → the even share of its flows over the uplink group,
    ``ceil(flows / uplinks)``. Flows a route sends to a detour group count in it too
    (they load the same links): a plan that must leave a spine unused is not balanced."""
    count: dict[tuple[str, int], int] = {}
    size: dict[tuple[str, int], int] = {}
    for f, h in zip(flows, hops):
        key = (h.leaf, f.leaf_group)
        count[key] = count.get(key, 0) + 1
        uplinks = model.switch(h.leaf).groups.get(f.leaf_group)
        size.setdefault(key, h.n_uplinks if uplinks is None else uplinks.size)
    return {key: math.ceil(n / size[key]) for key, n in count.items()}


# ----------------------------------------------------------------------------- from a topology
def flows_from_fabric(fabric: object, pairs: Iterable[tuple[str, str]],
                      dport: int = ROCE_DPORT) -> list[FlowRequest]:
    """Flow requests for ``(src_ip, dst_ip)`` pairs of a ``topo.model.Fabric``; flows are
    named ``f0, f1, ...``. ``PortPlanError`` for an address no NIC has, or for two NICs
    on the same leaf (no ECMP hop to plan).

    Example::

        >>> from topo.model import build_fabric
        >>> flows_from_fabric(build_fabric(), [("10.0.0.1", "10.1.0.1")])[0].dst_leaf
        'b1r0l0'
    """
    nic_leaf = {n.ip: n.leaf for h in fabric.hosts for n in h.nics}  # type: ignore[attr-defined]
    out = []
    for i, (src, dst) in enumerate(pairs):
        for ip in (src, dst):
            if ip not in nic_leaf:
                raise PortPlanError(f"flow f{i}: no NIC has address {ip}")
        if nic_leaf[src] == nic_leaf[dst]:
            raise PortPlanError(f"flow f{i}: {src} and {dst} share leaf {nic_leaf[src]}: no ECMP hop")
        out.append(FlowRequest(f"f{i}", src, dst, nic_leaf[src], LEAF_UPLINK_GROUP, nic_leaf[dst], dport))
    return out


__all__ = ["DEFAULT_PORT_RANGE", "FlowPlan", "FlowRequest", "LEAF_UPLINK_GROUP", "PortPlan",
           "PortPlanError", "PortPlanner", "ROCE_DPORT", "flows_from_fabric", "kempe_colouring",
           "polarised_downlinks", "spine_routes_to", "split_vertices"]
