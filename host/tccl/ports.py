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
from dataclasses import dataclass, field
from typing import Collection, Hashable, Iterable, Mapping, Optional, Sequence

from p4src.hashmodel import (FabricHashModel, Flow, GroupModel, SwitchHashModel, member_index,
                             port_to_member_table, predict_path)

ROCE_DPORT = 4791
PROTO_UDP = 17
LEAF_UPLINK_GROUP = 1          # the leaves' uplink group id in the published model
DEFAULT_PORT_RANGE = (49152, 65535)

Colour = tuple[str, int]       # (spine name, parallel-link index j)


class PortPlanError(ValueError):
    """A flow set or hash model the solver cannot use; the message names the flow."""


@dataclass(frozen=True, slots=True)
class FlowRequest:
    """One concurrent flow to place: ``FlowRequest("f0", "10.0.0.1", "10.1.0.1", "b0r0l0", 1, "b1r0l0")``.

    ``leaf``/``leaf_group``: the first ECMP hop (source leaf and its uplink group);
    ``dst_leaf``: the leaf of the destination NIC (the spine hop is found in the model).
    """

    name: str
    src: str
    dst: str
    leaf: str
    leaf_group: int
    dst_leaf: str
    dport: int = ROCE_DPORT


@dataclass(frozen=True, slots=True)
class FlowPlan:
    """The chosen source port of one flow and its predicted path.

    ``hops`` are the ECMP hops ``[(switch, group_id), ...]`` the port was solved for;
    ``path`` the member taken at each (what :func:`p4src.hashmodel.predict_path` says);
    ``links`` the loaded links ``(switch, member or destination leaf)`` of both tiers.
    """

    name: str
    src: str
    dst: str
    sport: int
    dport: int
    hops: tuple[tuple[str, int], ...]
    path: tuple[str, ...]
    links: tuple[tuple[str, str], ...]
    moved: bool = True

    @property
    def flow(self) -> Flow:
        """The 5-tuple: ``plan.flow.sport == plan.sport``."""
        return Flow.of(self.src, self.dst, PROTO_UDP, self.sport, self.dport)


@dataclass(slots=True)
class PortPlan:
    """The result of :meth:`PortPlanner.plan`: one :class:`FlowPlan` per flow (input order),
    the load of every link, and each link's cap ``ceil(flows at the hop / links)``."""

    flows: list[FlowPlan]
    link_loads: dict[tuple[str, str], int]
    link_caps: dict[tuple[str, str], int]
    balanced: bool = True

    @property
    def max_link_load(self) -> int:
        """The busiest link's flow count (0 without flows)."""
        return max(self.link_loads.values(), default=0)

    def by_name(self) -> dict[str, FlowPlan]:
        """The flow plans by flow name."""
        return {f.name: f for f in self.flows}

    @property
    def moved(self) -> list[str]:
        """Names of the flows whose port changed (all of them on a first plan)."""
        return [f.name for f in self.flows if f.moved]


# ----------------------------------------------------------------------------- model reading
def _peer(member: str) -> str:
    """The node a member's link leads to: ``"s0#5"`` → ``"s0"``."""
    return member.split("#", 1)[0]


@dataclass(slots=True)
class _Hop:
    """The fan-out of one flow: colours, and for each the leaf member and spine hop."""

    leaf: str
    group: int
    colours: list[Colour]           # only paths through a spine routing to the destination
    n_uplinks: int = 1
    leaf_member: dict[Colour, int] = field(default_factory=dict)          # colour -> index in group
    spine_hop: dict[Colour, Optional[tuple[str, int, int]]] = field(default_factory=dict)
    # colour -> (spine, group id, member index in group) or None (single downlink)


def _spine_group(model: FabricHashModel, spine: str, dst_leaf: str) -> Optional[tuple[int, GroupModel]]:
    sw = model.switches.get(spine)
    if sw is None:
        return None
    hits = [(gid, g) for gid, g in sorted(sw.groups.items())
            if all(_peer(m) == dst_leaf for m in g.members)]
    return hits[0] if hits else None


def spine_routes_to(model: FabricHashModel, spine: str, dst_leaf: str) -> bool:
    """Whether ``spine`` has a live route to ``dst_leaf`` in the published model.

    The model holds ECMP groups, not routes, so this is read from the groups: the spine
    has a group towards ``dst_leaf`` (several live links), or the leaf's own uplink groups
    have a member on ``spine`` (a cable carries both directions: when it fails, both ends
    leave their groups, as ``controller.fabric_setup`` and GOR's link-failure handling
    do). A spine that is in neither has no live link to the leaf, hence no route. A leaf
    the model does not describe gives no evidence: every spine is taken to reach it.

        >>> from p4src.hashmodel import FabricHashModel, GroupModel, SwitchHashModel
        >>> m = FabricHashModel({"l1": SwitchHashModel("l1", groups={1: GroupModel(0, ["s1"])}),
        ...                      "s0": SwitchHashModel("s0"), "s1": SwitchHashModel("s1")})
        >>> spine_routes_to(m, "s0", "l1"), spine_routes_to(m, "s1", "l1"), spine_routes_to(m, "s0", "l9")
        (False, True, True)
    """
    leaf = model.switches.get(dst_leaf)
    if leaf is None:
        return True
    if any(_peer(m) == spine for g in leaf.groups.values() for m in g.members):
        return True
    return _spine_group(model, spine, dst_leaf) is not None


def _hop_of(model: FabricHashModel, req: FlowRequest) -> _Hop:
    try:
        leaf = model.switch(req.leaf)
        group = leaf.group(req.leaf_group)
    except KeyError as exc:
        raise PortPlanError(f"flow {req.name}: {exc.args[0]}") from None
    hop = _Hop(req.leaf, req.leaf_group, [], group.size)
    seen: dict[str, int] = {}
    for i, member in enumerate(group.members):
        spine = _peer(member)
        j = seen.get(spine, 0)
        seen[spine] = j + 1
        if not spine_routes_to(model, spine, req.dst_leaf):
            continue        # a path through this spine would be blackholed: not a candidate
        colour = (spine, j)
        hop.colours.append(colour)
        hop.leaf_member[colour] = i
    if not hop.colours:
        raise PortPlanError(
            f"flow {req.name}: no spine of {req.leaf}'s uplink group {req.leaf_group} "
            f"({', '.join(seen)}) has a live route to {req.dst_leaf}: the destination is "
            f"unreachable in this model")
    for spine, n_up in seen.items():
        if not any(c[0] == spine for c in hop.colours):
            continue
        sg = _spine_group(model, spine, req.dst_leaf)
        n_down = sg[1].size if sg else 1
        for j in range(n_up):
            if sg is None:
                hop.spine_hop[(spine, j)] = None
            else:
                # more uplinks than downlinks: colours share the spine's members round-robin
                hop.spine_hop[(spine, j)] = (spine, sg[0], j % n_down)
    return hop


def _links_of(model: FabricHashModel, req: FlowRequest, hop: _Hop, colour: Colour) -> tuple[tuple[str, str], ...]:
    leaf_m = model.switch(hop.leaf).group(hop.group).members[hop.leaf_member[colour]]
    sh = hop.spine_hop[colour]
    if sh is None:
        down = (colour[0], req.dst_leaf)
    else:
        down = (sh[0], model.switch(sh[0]).group(sh[1]).members[sh[2]])
    return ((hop.leaf, leaf_m), down)


# ----------------------------------------------------------------------------- colouring
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


def polarised_downlinks(reach: Mapping[int, Collection[int]],
                        leaf_members: Sequence[int]) -> Optional[list[int]]:
    """The polarisation remap rule of :class:`PortPlanner` for the colours through one spine.

    ``reach[a]``: the spine members (indices in the spine's group towards the destination
    leaf) that some source port reaches together with leaf member ``a`` (indices in the
    leaf's group); ``leaf_members``: the leaf member of each colour ``(spine, j)``, j in
    order. When every one of them reaches exactly one spine member, and no two the same
    one (the function is a bijection on the spine's links), returns the spine member the
    leaf's j-th link fixes (the planner then routes colour ``(spine, k)`` over the link j
    whose member is k, per source leaf); ``None`` otherwise (not polarised there: colour
    j keeps uplink j and downlink j).

        >>> polarised_downlinks({0: {1}, 1: {0}}, [0, 1])
        [1, 0]
        >>> polarised_downlinks({0: {0, 1}, 1: {0, 1}}, [0, 1]) is None
        True
    """
    image = [reach.get(a, set()) for a in leaf_members]
    if all(len(x) == 1 for x in image) and len({min(x) for x in image}) == len(leaf_members):
        return [min(x) for x in image]
    return None


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

    def __init__(self, model: FabricHashModel, port_range: tuple[int, int] = DEFAULT_PORT_RANGE) -> None:
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
        hops = [_hop_of(self.model, f) for f in flows]
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
    def _colour(self, flows: Sequence[FlowRequest], hops: Sequence[_Hop],
                previous: Mapping[str, int]) -> list[Colour]:
        palettes = {tuple(h.colours) for h in hops}
        if not flows:
            return []
        self._follow_polarisation(flows, hops)
        if len(palettes) == 1:
            palette = list(next(iter(palettes)))
            k = len(palette)
            us = split_vertices([("u", h.leaf, h.group) for h in hops], k)
            vs = split_vertices([("v", f.dst_leaf) for f in flows], k)
            # flows with a previous port that is still valid go first, keeping their colour
            order = sorted(range(len(flows)), key=lambda i: flows[i].name not in previous)
            edges = [(us[i], vs[i]) for i in order]
            prev_col = [self._colour_of_port(flows[i], hops[i], previous.get(flows[i].name)) for i in order]
            coloured = kempe_colouring(edges, palette, prev_col)
            result: list[Colour] = [("", 0)] * len(flows)
            for pos, i in enumerate(order):
                result[i] = coloured[pos]
            if all(self._reachable(flows[i], hops[i], result[i]) for i in range(len(flows))):
                return result
        return self._greedy(flows, hops)

    def _follow_polarisation(self, flows: Sequence[FlowRequest], hops: Sequence[_Hop]) -> None:
        """Same CRC on both tiers: the spine member is then a fixed function of the leaf
        member (the seeds only XOR a constant into H, whatever the flow), but that
        constant comes from the seeds of each (source leaf, spine) pair, so the function
        differs from leaf to leaf. It is probed once per (source leaf, uplink group, spine,
        downlinks), on the first flow with that key; where it is a bijection f on the
        spine's links, colour ``(spine, k)`` means *downlink k*, reached from the flow's
        own leaf by uplink ``f⁻¹(k)``. A colour then names the same downlink from every
        leaf (the destination tier stays properly coloured) and distinct colours distinct
        uplinks at each leaf (so does the source tier). Every flow is still checked
        afterwards (greedy fallback when a colour is unreachable)."""
        probed: dict[tuple[str, int, str, int], Optional[list[int]]] = {}
        leaf_tables: dict[str, list[int]] = {}          # flow name -> its leaf table
        for req, hop in zip(flows, hops):
            for spine in dict.fromkeys(c[0] for c in hop.colours):
                cols = [c for c in hop.colours if c[0] == spine]        # (spine, j), j in order
                sh = hop.spine_hop[cols[0]]
                if sh is None:
                    continue
                n_down = self.model.switch(spine).group(sh[1]).size
                if len(cols) != n_down:
                    continue        # not one colour per downlink: colours share them round-robin
                key = (hop.leaf, hop.group, spine, n_down)
                if key not in probed:
                    if req.name not in leaf_tables:
                        leaf_tables[req.name] = self._leaf_table(req, hop)
                    probed[key] = self._probe_spine(req, hop, sh[1], cols, leaf_tables[req.name])
                down = probed[key]
                if down is None:
                    continue
                uplink = [hop.leaf_member[c] for c in cols]
                for j, k in enumerate(down):
                    hop.leaf_member[(spine, k)] = uplink[j]
                    hop.spine_hop[(spine, k)] = (spine, sh[1], k)

    def _leaf_table(self, req: FlowRequest, hop: _Hop) -> list[int]:
        """Leaf member index (in the group) of every source port of ``req``."""
        leaf = self.model.switch(hop.leaf)
        base = leaf.group(hop.group).base
        return [m - base for m in port_to_member_table(leaf, hop.group, req.src, req.dst, PROTO_UDP, req.dport)]

    def _probe_spine(self, req: FlowRequest, hop: _Hop, group_id: int, cols: Sequence[Colour],
                     leaf_table: Sequence[int]) -> Optional[list[int]]:
        """:func:`polarised_downlinks` of the colours ``cols`` through one spine, probed
        on ``req``'s 65,536 ports (its leaf table given)."""
        sw = self.model.switch(cols[0][0])
        sbase = sw.group(group_id).base
        st = port_to_member_table(sw, group_id, req.src, req.dst, PROTO_UDP, req.dport)
        reach: dict[int, set[int]] = {}
        for a, b in zip(leaf_table, st):
            reach.setdefault(a, set()).add(b - sbase)
        return polarised_downlinks(reach, [hop.leaf_member[c] for c in cols])

    def _colour_of_port(self, req: FlowRequest, hop: _Hop, sport: Optional[int]) -> Optional[Colour]:
        if sport is None:
            return None
        leaf = self.model.switch(hop.leaf)
        g = leaf.group(hop.group)
        i = member_index(leaf, hop.group, req.src, req.dst, PROTO_UDP, sport, req.dport) - g.base
        for colour, idx in hop.leaf_member.items():
            if idx != i:
                continue
            sh = hop.spine_hop[colour]
            if sh is None:
                return colour
            sw = self.model.switch(sh[0])
            got = member_index(sw, sh[1], req.src, req.dst, PROTO_UDP, sport, req.dport)
            if got - sw.group(sh[1]).base == sh[2]:
                return colour
            # the port reaches the leaf member but another spine member: some colour sharing
            # this spine hop may match (more uplinks than downlinks)
            for c2, idx2 in hop.leaf_member.items():
                sh2 = hop.spine_hop[c2]
                if idx2 == i and sh2 is not None and got - sw.group(sh[1]).base == sh2[2]:
                    return c2
            return None
        return None

    def _tables(self, req: FlowRequest, hop: _Hop, colour: Colour) -> tuple[list[int], int, Optional[list[int]], int]:
        leaf = self.model.switch(hop.leaf)
        lt = port_to_member_table(leaf, hop.group, req.src, req.dst, PROTO_UDP, req.dport)
        want_l = leaf.group(hop.group).base + hop.leaf_member[colour]
        sh = hop.spine_hop[colour]
        if sh is None:
            return lt, want_l, None, 0
        sw = self.model.switch(sh[0])
        st = port_to_member_table(sw, sh[1], req.src, req.dst, PROTO_UDP, req.dport)
        return lt, want_l, st, sw.group(sh[1]).base + sh[2]

    def _reachable(self, req: FlowRequest, hop: _Hop, colour: Colour) -> bool:
        lt, wl, st, ws = self._tables(req, hop, colour)
        if st is None:
            return wl in lt
        return any(a == wl and b == ws for a, b in zip(lt, st))

    def _greedy(self, flows: Sequence[FlowRequest], hops: Sequence[_Hop]) -> list[Colour]:
        """Fallback: least-loaded reachable colour per flow, most constrained flows first."""
        reach = [[c for c in h.colours if self._reachable(f, h, c)] for f, h in zip(flows, hops)]
        for f, r in zip(flows, reach):
            if not r:
                raise PortPlanError(f"flow {f.name}: no source port reaches any path in this model")
        load: dict[tuple[str, str], int] = {}
        out: list[Colour] = [("", 0)] * len(flows)
        for i in sorted(range(len(flows)), key=lambda i: len(reach[i])):
            best = min(reach[i], key=lambda c: (max(load.get(l, 0) for l in _links_of(self.model, flows[i], hops[i], c)),
                                                sum(load.get(l, 0) for l in _links_of(self.model, flows[i], hops[i], c))))
            out[i] = best
            for l in _links_of(self.model, flows[i], hops[i], best):
                load[l] = load.get(l, 0) + 1
        return out

    # ---------------------------------------------------------------- step 2: ports
    def _ports(self, flows: Sequence[FlowRequest], hops: Sequence[_Hop], colours: Sequence[Colour],
               previous: Mapping[str, int]) -> PortPlan:
        used: set[tuple[str, str, int]] = set()
        plans: list[FlowPlan] = []
        lo, hi = self.port_range
        for req, hop, colour in zip(flows, hops, colours):
            lt, wl, st, ws = self._tables(req, hop, colour)

            def ok(p: int) -> bool:
                return (lt[p] == wl and (st is None or st[p] == ws) and p != 0
                        and (req.src, req.dst, p) not in used)

            prev = previous.get(req.name)
            moved = True
            if prev is not None and 0 < prev <= 0xFFFF and ok(prev):
                port, moved = prev, False
            else:
                port = next((p for p in range(lo, hi + 1) if ok(p)), None)
                if port is None:
                    port = next((p for p in range(1, 0x10000) if ok(p)), None)
                if port is None:
                    raise PortPlanError(f"flow {req.name}: no free source port reaches path {colour}")
            used.add((req.src, req.dst, port))
            sh = hop.spine_hop[colour]
            hop_list = [(hop.leaf, hop.group)] + ([(sh[0], sh[1])] if sh is not None else [])
            path = predict_path(self.model, Flow.of(req.src, req.dst, PROTO_UDP, port, req.dport), hop_list)
            plans.append(FlowPlan(req.name, req.src, req.dst, port, req.dport, tuple(hop_list),
                                  tuple(path), _links_of(self.model, req, hop, colour), moved))
        return _loads(plans, flows, hops)


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


def _loads(plans: list[FlowPlan], flows: Sequence[FlowRequest], hops: Sequence[_Hop]) -> PortPlan:
    loads: dict[tuple[str, str], int] = {}
    for p in plans:
        for link in p.links:
            loads[link] = loads.get(link, 0) + 1
    # caps: uplinks of a leaf hop share its flows; downlinks into a leaf share that leaf's flows
    up_n: dict[tuple[str, int], int] = {}
    down_n: dict[str, int] = {}
    for f, h in zip(flows, hops):
        up_n[(h.leaf, h.group)] = up_n.get((h.leaf, h.group), 0) + 1
        down_n[f.dst_leaf] = down_n.get(f.dst_leaf, 0) + 1
    # k: a leaf hop's uplinks; into a leaf, the most paths any flow has to it (spines
    # without a live route to the leaf are no path)
    k_down: dict[str, int] = {}
    for f, h in zip(flows, hops):
        k_down[f.dst_leaf] = max(k_down.get(f.dst_leaf, 0), len(h.colours))
    caps: dict[tuple[str, str], int] = {}
    for f, h, p in zip(flows, hops, plans):
        caps[p.links[0]] = math.ceil(up_n[(h.leaf, h.group)] / h.n_uplinks)
        caps[p.links[1]] = math.ceil(down_n[f.dst_leaf] / k_down[f.dst_leaf])
    balanced = all(loads[l] <= caps[l] for l in loads)
    return PortPlan(plans, loads, caps, balanced)


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
