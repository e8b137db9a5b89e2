"""A flow's paths as the published hash model describes them: its colours (paths
``(spine, j)``), the leaf member and spine hop of each, the links a colour loads, and
which source ports reach a colour.

A flow crosses two ECMP hops: the group its source leaf routes the destination to
(members named after the spine, ``"s0"`` or ``"s0#<port>"`` with parallel links), then on
the spine the group towards the destination leaf (members ``"<leaf>#<port>"``; no group
when the spine has a single link there). :class:`host.tccl.ports.PortPlanner` colours
flows with these paths and then picks ports with :func:`member_tables`.

The leaf's group is :func:`p4src.hashmodel.route_group` of the destination, with the
request's ``leaf_group`` (the uplink group) as the default: when a spine has lost every
link to a leaf, the other leaves route that leaf's prefixes to a *detour* group over the
uplinks whose spine still reaches it (``controller.fabric.detours``), and the port must be
solved on that group's hash. A model without routes gives the request's group.

Example::

    >>> from p4src.hashmodel import FabricHashModel, GroupModel, SwitchHashModel
    >>> from host.tccl.portplan import FlowRequest
    >>> m = FabricHashModel({"l0": SwitchHashModel("l0", groups={1: GroupModel(0, ["s0", "s1"])})})
    >>> req = FlowRequest("f0", "10.0.0.1", "10.1.0.1", "l0", 1, "l1")
    >>> hop = hop_of(m, req)
    >>> hop.colours, links_of(m, req, hop, ("s1", 0))
    ([('s0', 0), ('s1', 0)], (('l0', 's1'), ('s1', 'l1')))
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from host.tccl.portplan import PROTO_UDP, Colour, FlowRequest, PortPlanError
from p4src.hashmodel import FabricHashModel, GroupModel, member_index, port_to_member_table, route_group


def peer_of(member: str) -> str:
    """The node a member's link leads to: ``peer_of("s0#5") == "s0"``."""
    return member.split("#", 1)[0]


@dataclass(slots=True)
class FlowHop:
    """The fan-out of one flow: colours, and for each the leaf member and spine hop.

    ``spine_hop[colour]`` is ``(spine, group id, member index in group)``, or ``None``
    when the spine has a single downlink to the destination leaf (no group).
    """

    leaf: str
    group: int
    colours: list[Colour]           # only paths through a spine routing to the destination
    n_uplinks: int = 1
    leaf_member: dict[Colour, int] = field(default_factory=dict)          # colour -> index in group
    spine_hop: dict[Colour, Optional[tuple[str, int, int]]] = field(default_factory=dict)


def spine_group_of(model: FabricHashModel, spine: str, dst_leaf: str) -> Optional[tuple[int, GroupModel]]:
    """The spine's first group (by id) whose members all lead to ``dst_leaf``, or None."""
    sw = model.switches.get(spine)
    if sw is None:
        return None
    hits = [(gid, g) for gid, g in sorted(sw.groups.items())
            if all(peer_of(m) == dst_leaf for m in g.members)]
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
    if any(peer_of(m) == spine for g in leaf.groups.values() for m in g.members):
        return True
    return spine_group_of(model, spine, dst_leaf) is not None


def leaf_group_of(model: FabricHashModel, req: FlowRequest) -> int:
    """The ECMP group ``req.leaf`` uses for ``req.dst``: its longest published route's
    group, else ``req.leaf_group``; ``KeyError`` when the model has no such leaf.

        >>> from p4src.hashmodel import FabricHashModel, GroupModel, RouteModel, SwitchHashModel
        >>> m = FabricHashModel({"l0": SwitchHashModel("l0", groups={
        ...     1: GroupModel(0, ["s0", "s1"]), 2: GroupModel(2, ["s0"])},
        ...     routes=(RouteModel("10.1.0.0/24", 2),))})
        >>> [leaf_group_of(m, FlowRequest("f", "10.0.0.1", d, "l0", 1, "l1")) for d in ("10.1.0.1", "10.2.0.1")]
        [2, 1]
    """
    gid = route_group(model.switch(req.leaf), req.dst, req.leaf_group)
    return req.leaf_group if gid is None else gid


def hop_of(model: FabricHashModel, req: FlowRequest) -> FlowHop:
    """The colours of ``req`` (paths through a spine with a live route to its destination
    leaf) and, for each, its leaf member and spine hop, in the group the leaf routes
    ``req.dst`` to (:func:`leaf_group_of`); :class:`PortPlanError` when the leaf or group
    is unknown or no spine reaches the destination."""
    try:
        leaf = model.switch(req.leaf)
        gid = leaf_group_of(model, req)
        group = leaf.group(gid)
    except KeyError as exc:
        raise PortPlanError(f"flow {req.name}: {exc.args[0]}") from None
    hop = FlowHop(req.leaf, gid, [], group.size)
    seen: dict[str, int] = {}
    for i, member in enumerate(group.members):
        spine = peer_of(member)
        j = seen.get(spine, 0)
        seen[spine] = j + 1
        if not spine_routes_to(model, spine, req.dst_leaf):
            continue        # a path through this spine would be blackholed: not a candidate
        colour = (spine, j)
        hop.colours.append(colour)
        hop.leaf_member[colour] = i
    if not hop.colours:
        raise PortPlanError(
            f"flow {req.name}: no spine of {req.leaf}'s "
            f"{'uplink' if gid == req.leaf_group else 'detour'} group {gid} "
            f"({', '.join(seen)}) has a live route to {req.dst_leaf}: the destination is "
            f"unreachable in this model")
    for spine, n_up in seen.items():
        if not any(c[0] == spine for c in hop.colours):
            continue
        sg = spine_group_of(model, spine, req.dst_leaf)
        n_down = sg[1].size if sg else 1
        for j in range(n_up):
            if sg is None:
                hop.spine_hop[(spine, j)] = None
            else:
                # more uplinks than downlinks: colours share the spine's members round-robin
                hop.spine_hop[(spine, j)] = (spine, sg[0], j % n_down)
    return hop


def links_of(model: FabricHashModel, req: FlowRequest, hop: FlowHop, colour: Colour) -> tuple[tuple[str, str], ...]:
    """The two links ``colour`` loads: ``((leaf, member), (spine, member or dst leaf))``."""
    leaf_m = model.switch(hop.leaf).group(hop.group).members[hop.leaf_member[colour]]
    sh = hop.spine_hop[colour]
    if sh is None:
        down = (colour[0], req.dst_leaf)
    else:
        down = (sh[0], model.switch(sh[0]).group(sh[1]).members[sh[2]])
    return ((hop.leaf, leaf_m), down)


def member_tables(model: FabricHashModel, req: FlowRequest, hop: FlowHop,
                  colour: Colour) -> tuple[list[int], int, Optional[list[int]], int]:
    """``(leaf table, wanted leaf member, spine table or None, wanted spine member)``:
    the member of every source port at each hop and the members ``colour`` needs."""
    leaf = model.switch(hop.leaf)
    lt = port_to_member_table(leaf, hop.group, req.src, req.dst, PROTO_UDP, req.dport)
    want_l = leaf.group(hop.group).base + hop.leaf_member[colour]
    sh = hop.spine_hop[colour]
    if sh is None:
        return lt, want_l, None, 0
    sw = model.switch(sh[0])
    st = port_to_member_table(sw, sh[1], req.src, req.dst, PROTO_UDP, req.dport)
    return lt, want_l, st, sw.group(sh[1]).base + sh[2]


def uplink_group_table(model: FabricHashModel, req: FlowRequest, hop: FlowHop,
                       colour: Colour) -> Optional[tuple[list[int], int]]:
    """On a detour (``hop.group`` is not ``req.leaf_group``): the member of every source
    port in the leaf's uplink group and the index there of the uplink ``colour`` takes
    (the same link has the same member name in both groups); ``None`` otherwise, or when
    the uplink group lacks that link. A port that takes the link in both groups stays on
    it when the detour route is withdrawn (the planner prefers such ports)."""
    if hop.group == req.leaf_group:
        return None
    leaf = model.switch(hop.leaf)
    uplinks = leaf.groups.get(req.leaf_group)
    name = leaf.group(hop.group).members[hop.leaf_member[colour]]
    if uplinks is None or name not in uplinks.members:
        return None
    table = port_to_member_table(leaf, req.leaf_group, req.src, req.dst, PROTO_UDP, req.dport)
    return table, uplinks.base + uplinks.members.index(name)


def reachable(model: FabricHashModel, req: FlowRequest, hop: FlowHop, colour: Colour) -> bool:
    """Whether some source port of ``req`` takes ``colour`` on both hops."""
    lt, wl, st, ws = member_tables(model, req, hop, colour)
    if st is None:
        return wl in lt
    return any(a == wl and b == ws for a, b in zip(lt, st))


def colour_of_port(model: FabricHashModel, req: FlowRequest, hop: FlowHop,
                   sport: Optional[int]) -> Optional[Colour]:
    """The colour source port ``sport`` of ``req`` takes (None: no port, or off every colour)."""
    if sport is None:
        return None
    leaf = model.switch(hop.leaf)
    g = leaf.group(hop.group)
    i = member_index(leaf, hop.group, req.src, req.dst, PROTO_UDP, sport, req.dport) - g.base
    for colour, idx in hop.leaf_member.items():
        if idx != i:
            continue
        sh = hop.spine_hop[colour]
        if sh is None:
            return colour
        sw = model.switch(sh[0])
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


__all__ = ["FlowHop", "colour_of_port", "hop_of", "leaf_group_of", "links_of", "member_tables", "peer_of",
           "reachable", "spine_group_of", "spine_routes_to", "uplink_group_table"]
