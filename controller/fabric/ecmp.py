"""ECMP groups of the fabric plan — one rule — and their hash model.

:func:`ecmp_groups` decides the groups of one switch (the leaf's uplink group, a spine's
group per leaf reached over several links); both the full plan
(:func:`controller.fabric.plan.plan_fabric`) and :func:`controller.fabric.detours.fabric_hash_model` (groups only,
no table entry: well under a second for a 64K-GPU pod) read it, so TCCL predicts exactly
what the switches do.

Member names of the published hash model: the peer node of the member's link (``"s0"``,
``"b0r1l0"``), with ``"#<port>"`` appended when the group has several links to that peer.

Example::

    >>> from topo.model import build_fabric
    >>> fab = build_fabric(); names = {s.name: s for s in fab.switches}
    >>> ecmp_groups(fab.switch("b0r0l0"), names)[1].members
    ('s0', 's1')
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Mapping, Protocol, Sequence

from controller.fabric.entries import T_GROUPS, T_MEMBERS, Entry
from controller.fabric.topology import SwitchLike
from p4src.hashmodel import PORTS_FIRST_FIELDS, GroupModel, RouteModel, SwitchHashModel

LEAF_UPLINK_GROUP = 1
DEFAULT_ALGORITHMS = {"leaf": "crc16", "spine": "crc32"}
A_SELECT = "FabricIngress.ecmp.select_member"
A_SELECT_PORTS_FIRST = "FabricIngress.ecmp.select_member_ports_first"


@dataclass(frozen=True, slots=True)
class EcmpGroup:
    """An ECMP group of one switch: member indices ``base ..``, one egress port each.

    >>> EcmpGroup(1, 0, (5, 6), ("s0", "s1")).size
    2
    """

    group_id: int
    base: int
    ports: tuple[int, ...]
    members: tuple[str, ...]
    ports_first: bool = False      # hashed by select_member_ports_first (PORTS_FIRST_FIELDS)

    @property
    def size(self) -> int:
        """Number of members."""
        return len(self.ports)

    def model(self) -> GroupModel:
        """The group in the published hash model (its own field list when ports-first).

        >>> EcmpGroup(1, 0, (5, 6), ("s0", "s1"), ports_first=True).model().fields[1].name
        'udp.src_port'
        """
        return GroupModel(self.base, self.members, PORTS_FIRST_FIELDS if self.ports_first else None)


def algorithm_of(sw: SwitchLike) -> str:
    """The switch's ECMP algorithm: ``SwitchInfo.hash_algorithm``, else the role default
    (:data:`DEFAULT_ALGORITHMS`)."""
    return getattr(sw, "hash_algorithm", None) or DEFAULT_ALGORITHMS[sw.role]


def spine_links(sw: SwitchLike, switch_names: Collection[str],
                down: Collection[tuple[str, int]]) -> dict[str, list[int]]:
    """Leaf name → live downlink ports of spine ``sw`` to it, in port order."""
    links: dict[str, list[int]] = {}
    for p in sorted(sw.ports):
        info = sw.ports[p]
        if info.kind == "downlink" and info.peer_node in switch_names and (sw.name, p) not in down:
            links.setdefault(info.peer_node, []).append(p)
    return links


def link_group(sw: SwitchLike, group_id: int, base: int, ports: Sequence[int]) -> EcmpGroup:
    """The group ``group_id`` of ``sw`` over ``ports`` (member indexes from ``base``), its
    members named by peer: ``"s0"``, or ``"s0#5"`` when several of the switch's ports lead
    to that peer — counted over all its ports, not the group's, so a group cut down to
    one of two links to ``s0`` still names the port it kept (a reader that maps ``"s0"``
    back to a port takes the first port to ``s0``, which may be the one cut).

    >>> from types import SimpleNamespace as NS
    >>> sw = NS(ports={9: NS(peer_node="s0"), 10: NS(peer_node="s0"), 11: NS(peer_node="s1")})
    >>> link_group(sw, 1, 0, [10, 11]).members
    ('s0#10', 's1')
    """
    names = tuple(member_name(sw, p) for p in ports)
    return EcmpGroup(group_id, base, tuple(ports), names)


def member_name(sw: SwitchLike, port: int) -> str:
    """The member name of ``sw``'s ``port`` in any of its groups (see :func:`link_group`):
    its peer, ``peer#port`` when the switch has several ports to that peer."""
    peer = sw.ports[port].peer_node
    twins = sum(1 for info in sw.ports.values() if info.peer_node == peer)
    return peer if twins == 1 else f"{peer}#{port}"


def spine_targets(sw: SwitchLike, switch_names: Collection[str],
                  down: Collection[tuple[str, int]] = frozenset(),
                  leaf_sets: Sequence[Sequence[str]] = ()) -> list[tuple[tuple[str, ...], list[int]]]:
    """The destinations of spine ``sw`` and its live links to each, in order: one per leaf
    (name order), except that the leaves of one set of ``leaf_sets`` (the leaf pair that
    homes dual-port NICs, :func:`controller.fabric.topology.nic_leaf_sets`) are one
    destination whose links are those to every leaf of the set (port order within each
    leaf, leaves in name order). Without ``leaf_sets`` every target is one leaf.

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> fab = build_fabric(FabricSpec(blocks=1, rails=1, ports_per_nic=2, leaves_per_rail=2))
    >>> names = {s.name for s in fab.switches}
    >>> spine_targets(fab.switch("s0"), names, leaf_sets=[("b0r0l0", "b0r0l1")])
    [(('b0r0l0', 'b0r0l1'), [1, 2])]
    """
    links = spine_links(sw, switch_names, down)
    key_of = {leaf: tuple(sorted(group)) for group in leaf_sets for leaf in group}
    targets: dict[tuple[str, ...], list[int]] = {}
    for leaf in sorted(links):
        targets.setdefault(key_of.get(leaf, (leaf,)), []).extend(links[leaf])
    return sorted(targets.items())


def ecmp_groups(sw: SwitchLike, switch_names: Collection[str],
                down: Collection[tuple[str, int]] = frozenset(),
                leaf_sets: Sequence[Sequence[str]] = ()) -> dict[int, EcmpGroup]:
    """The ECMP groups programmed on ``sw`` — the one rule behind
    :func:`~controller.fabric.plan.plan_fabric` and :func:`~controller.fabric.detours.fabric_hash_model`.

    Leaf: group :data:`LEAF_UPLINK_GROUP` over its live uplinks in port order (none
    without uplinks). Spine: one group per destination (:func:`spine_targets`: a leaf, or
    the leaf pair of ``leaf_sets`` that homes dual-port NICs) reached over several live
    links, numbered from 1 in destination order, member indices allocated consecutively (a leaf reached
    over one link gets a plain next hop, no group). ``switch_names``: the fabric's
    switches (a spine port leading elsewhere is ignored); ``down``: ``(switch, port)``
    ends that are out of service.

    >>> from topo.model import build_fabric
    >>> fab = build_fabric()
    >>> names = {s.name for s in fab.switches}
    >>> ecmp_groups(fab.switch("b0r0l0"), names)[1].members
    ('s0', 's1')
    >>> ecmp_groups(fab.switch("b0r0l0"), names, down={("b0r0l0", 3)})[1].members
    ('s1',)
    """
    if sw.role == "leaf":
        uplinks = [p for p in sorted(sw.ports)
                   if sw.ports[p].kind == "uplink" and (sw.name, p) not in down]
        return {LEAF_UPLINK_GROUP: link_group(sw, LEAF_UPLINK_GROUP, 0, uplinks)} if uplinks else {}
    groups: dict[int, EcmpGroup] = {}
    base = 0
    for _, ports in spine_targets(sw, switch_names, down, leaf_sets):
        if len(ports) > 1:
            gid = len(groups) + 1
            groups[gid] = link_group(sw, gid, base, ports)
            base += len(ports)
    return groups


class RouteLike(Protocol):
    """What is read of a ``topo.routes.Route``: a prefix and its next-hop ports."""

    prefix: str
    ports: tuple[int, ...]


def route_groups(sw: SwitchLike, routes: Sequence[RouteLike]
                 ) -> tuple[dict[int, EcmpGroup], list[tuple[str, int]]]:
    """The ECMP groups of ``sw`` for its routes of :func:`topo.routes.fabric_routes` (the
    three-tier rule) and ``(prefix, group id)`` of every route to a group: one group per
    distinct multi-port set, numbered from 1 in route order, member indexes consecutive,
    members named by :func:`member_name`. Both the plan of a fabric with a core tier
    (:func:`controller.fabric.plan.plan_fabric`) and its published hash model
    (:func:`controller.fabric.tiers.tier_hash_model`) read this one numbering.

    >>> from types import SimpleNamespace as NS
    >>> sw = NS(role="leaf", ports={1: NS(peer_node="a"), 2: NS(peer_node="b")})
    >>> groups, routed = route_groups(sw, [NS(prefix="10.0.0.0/8", ports=(1, 2)),
    ...                                    NS(prefix="10.0.0.1/32", ports=(1,))])
    >>> groups[1].members, routed
    (('a', 'b'), [('10.0.0.0/8', 1)])
    """
    by_ports: dict[tuple[int, ...], int] = {}
    groups: dict[int, EcmpGroup] = {}
    routed: list[tuple[str, int]] = []
    base = 0
    for r in routes:
        if len(r.ports) < 2:
            continue
        gid = by_ports.get(tuple(r.ports))
        if gid is None:
            gid = by_ports[tuple(r.ports)] = len(groups) + 1
            g = link_group(sw, gid, base, r.ports)
            groups[gid] = EcmpGroup(g.group_id, g.base, g.ports, g.members,
                                    ports_first_group(sw, r.ports))
            base += len(r.ports)
        routed.append((r.prefix, gid))
    return groups, routed


def ports_first_group(sw: SwitchLike, ports: Sequence[int]) -> bool:
    """Whether a group of a fabric *with a core tier* hashes ports-first
    (``select_member_ports_first``, ``p4src/include/control/ecmp.p4``): every group of a
    core, and a spine's groups down to its leaves. A seed only XORs a CRC with a constant,
    so hops with the same CRC and field order choose from the same linear function of the
    source port: the four ECMP hops of a cross-pod path are made independent by leaf
    crc16, spine up crc32, core crc16 ports-first, spine down crc32 ports-first (with core
    crc32 the core and the spine down would share one function). Two-tier fabrics never
    call this (their hashing is unchanged).

    >>> from types import SimpleNamespace as NS
    >>> sp = NS(role="spine", ports={1: NS(kind="downlink"), 2: NS(kind="downlink"), 9: NS(kind="uplink")})
    >>> ports_first_group(sp, (1, 2)), ports_first_group(sp, (9,)), ports_first_group(NS(role="core"), (1, 2))
    (True, False, True)
    >>> ports_first_group(NS(role="spine", ports={1: NS(kind="downlink"), 2: NS(kind="downlink")}), (1, 2))
    False
    """
    if sw.role == "core":
        return True
    if sw.role != "spine":
        return False
    has_core = any(info.kind == "uplink" for info in sw.ports.values())
    return has_core and all(sw.ports[p].kind == "downlink" for p in ports)


def group_entries(g: EcmpGroup) -> list[Entry]:
    """``ecmp.groups`` ``select_member(base, size)`` of ``g``, then one ``ecmp.members``
    entry per member → its port's next hop.

    >>> [e.table for e in group_entries(EcmpGroup(1, 0, (5, 6), ("s0", "s1")))]
    ['FabricIngress.ecmp.groups', 'FabricIngress.ecmp.members', 'FabricIngress.ecmp.members']
    """
    out = [Entry(T_GROUPS, {"meta.ecmp_group_id": g.group_id},
                 A_SELECT_PORTS_FIRST if g.ports_first else A_SELECT, {"base": g.base, "size": g.size})]
    for i, p in enumerate(g.ports):
        out.append(Entry(T_MEMBERS, {"meta.ecmp_member": g.base + i},
                         "FabricIngress.ecmp.set_nexthop", {"nexthop_id": p}))
    return out


def groups_hash_model(switch: str, algorithm: str, seed: int,
                      groups: Mapping[int, EcmpGroup],
                      routes: Sequence[RouteModel] = ()) -> SwitchHashModel:
    """One switch's part of the published hash model, from its groups (and the routes to
    its detour groups, :mod:`controller.fabric.detours`)."""
    return SwitchHashModel(switch, algorithm=algorithm, seed=seed,
                           groups={g.group_id: g.model() for g in groups.values()},
                           routes=tuple(routes))


__all__ = [
    "A_SELECT", "A_SELECT_PORTS_FIRST", "DEFAULT_ALGORITHMS", "EcmpGroup", "LEAF_UPLINK_GROUP",
    "algorithm_of", "ecmp_groups", "group_entries", "groups_hash_model", "link_group", "member_name",
    "ports_first_group",
    "RouteLike", "route_groups", "spine_links", "spine_targets",
]
