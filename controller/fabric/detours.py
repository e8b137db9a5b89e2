"""Per-destination ECMP groups on leaves ("detours"): when a spine has lost every link
to a leaf, the other leaves must stop sending that leaf's traffic through it.

A leaf routes the whole address plan (``10.0.0.0/8``) to its uplink group. A spine
reaches a leaf over its own downlinks only, so once all links between spine ``S`` and
leaf ``A`` are down, every packet for ``A`` that another leaf hashes onto ``S`` is lost
(the fault GOR handles at the two ends — :mod:`controller.gor.faults` — cannot help: ``S``
has no other way to ``A``). A real fabric withdraws ``A``'s prefixes from ``S`` (BGP) and the
other leaves stop using ``S`` for them; here the controller does the same:
:func:`leaf_detours` gives each leaf, for every destination leaf some of its live uplinks'
spines cannot reach, a group over the uplinks whose spine still can, and routes ``A``'s
prefixes (the prefixes a spine routes to ``A``: :func:`leaf_prefixes`) to it. Destinations
with the same usable uplinks share one group. Group ids start at
:data:`DETOUR_GROUP_BASE`; member indexes follow the uplink group's live members (the
uplink group shrinks first, so the indexes detours take are no longer its own), which
makes the detours of a fabric with links down equal to those of the fabric planned
without those cables.

The published hash model carries these routes (``SwitchHashModel.routes``), so TCCL and GOR
predict the detoured paths: :func:`p4src.hashmodel.route_group`.

Example::

    >>> from topo.model import build_fabric
    >>> fab = build_fabric()
    >>> down = {("s1", 1), ("b0r0l0", 4)}         # the cable b0r0l0:4 - s1:1 is cut
    >>> d = leaf_detours(fab.switch("b1r0l0"), {s.name: s for s in fab.switches}, down,
    ...                  leaf_prefixes(fab))
    >>> [(g.group.group_id, g.group.members, g.prefixes) for g in d.values()]
    [(2, ('s0',), ('10.0.0.0/24',))]
"""
from __future__ import annotations

import ipaddress
from collections import defaultdict
from dataclasses import dataclass
from typing import Collection, Mapping, Optional

from controller.fabric.ecmp import (EcmpGroup, algorithm_of, ecmp_groups, group_entries, groups_hash_model,
                                    link_group)
from controller.fabric.entries import Entry, route_entry
from controller.fabric.topology import FabricLike, SwitchLike, nic_attachments, nic_leaf_sets
from p4src.hashmodel import FabricHashModel, GroupModel, RouteModel
from controller.fabric.tiers import tier_hash_model

DETOUR_GROUP_BASE = 2


@dataclass(frozen=True, slots=True)
class Detour:
    """One detour group of a leaf and the destination prefixes routed to it.

    >>> Detour(EcmpGroup(2, 2, (4,), ("s1",)), ("10.1.0.0/24",)).entries()[-1].match
    {'hdr.ipv4.dst_addr': '10.1.0.0/24'}
    """

    group: EcmpGroup
    prefixes: tuple[str, ...]

    def entries(self) -> list[Entry]:
        """Group and member entries, then the routes (the order to write them in)."""
        return group_entries(self.group) + [route_entry(p, group=self.group.group_id)
                                            for p in self.prefixes]


def leaf_prefixes(fabric: FabricLike) -> dict[str, tuple[str, ...]]:
    """Leaf name → the prefixes a spine routes to it: each rail/block subnet whose NICs
    all sit on that leaf, and a /32 per NIC of a subnet split over several leaves (the rule
    of :mod:`controller.fabric.plan`'s spine routes).

    >>> from topo.model import build_fabric
    >>> leaf_prefixes(build_fabric())["b1r1l0"]
    ('10.1.1.0/24',)
    """
    leaves: dict[ipaddress.IPv4Network, set[str]] = defaultdict(set)
    nics: dict[ipaddress.IPv4Network, list[tuple[ipaddress.IPv4Address, str]]] = defaultdict(list)
    for host in fabric.hosts:
        for nic in host.nics:
            net = ipaddress.IPv4Network(f"{nic.ip}/{nic.prefix_len}", strict=False)
            for leaf, _ in nic_attachments(nic):     # both leaves of a dual-port NIC
                leaves[net].add(leaf)
                nics[net].append((ipaddress.IPv4Address(nic.ip), leaf))
    out: dict[str, list[str]] = defaultdict(list)
    for net in sorted(leaves):
        if len(leaves[net]) == 1:
            out[next(iter(leaves[net]))].append(str(net))
        else:
            for ip, leaf in sorted(nics[net]):
                out[leaf].append(f"{ip}/32")
    return {leaf: tuple(p) for leaf, p in out.items()}


def prefix_homes(prefixes: Mapping[str, Collection[str]]) -> dict[str, tuple[str, ...]]:
    """Prefix → every leaf it is routed to (:func:`leaf_prefixes` inverted): two leaves
    for the /32 of a dual-port NIC homed on a pair, one for anything else.

    >>> prefix_homes({"l0": ["10.0.0.1/32"], "l1": ["10.0.0.1/32", "10.0.1.0/24"]})["10.0.0.1/32"]
    ('l0', 'l1')
    """
    out: dict[str, list[str]] = defaultdict(list)
    for leaf, nets in prefixes.items():
        for net in nets:
            out[net].append(leaf)
    return {net: tuple(sorted(leaves)) for net, leaves in out.items()}


def _link_up(a: tuple[str, int], b: tuple[str, int], down: Collection[tuple[str, int]]) -> bool:
    return a not in down and b not in down


def spines_reaching(by_name: Mapping[str, SwitchLike],
                    down: Collection[tuple[str, int]]) -> dict[str, set[str]]:
    """Leaf name → the spines with at least one live link to it (a link is live when
    neither end is in ``down``)."""
    out: dict[str, set[str]] = defaultdict(set)
    for sw in by_name.values():
        if sw.role != "spine":
            continue
        for p, info in sw.ports.items():
            if info.kind == "downlink" and _link_up((sw.name, p), (info.peer_node, info.peer_port),
                                                   down):
                out[info.peer_node].add(sw.name)
    return out


def leaf_detours(sw: SwitchLike, by_name: Mapping[str, SwitchLike],
                 down: Collection[tuple[str, int]],
                 prefixes: Optional[Mapping[str, Collection[str]]] = None,
                 reach: Optional[Mapping[str, set[str]]] = None) -> dict[int, Detour]:
    """The detour groups of leaf ``sw`` (group id → :class:`Detour`) with the links in
    ``down`` out of service; none when every live uplink's spine reaches every leaf. A
    destination no live uplink leads to gets no detour (its traffic has no way either way).
    ``prefixes``/``reach``: :func:`leaf_prefixes` / :func:`spines_reaching` when already
    computed (:func:`fabric_detours` computes them once for all leaves)."""
    if sw.role != "leaf":
        return {}
    reach = spines_reaching(by_name, down) if reach is None else reach
    uplinks = [p for p in sorted(sw.ports) if sw.ports[p].kind == "uplink"]
    live = [p for p in uplinks
            if _link_up((sw.name, p), (sw.ports[p].peer_node, sw.ports[p].peer_port), down)]
    spines = {sw.ports[p].peer_node for p in live}
    by_ports: dict[tuple[int, ...], list[str]] = {}
    homes = prefix_homes(prefixes) if prefixes is not None else {}
    for leaf in sorted(n for n, s in by_name.items() if s.role == "leaf" and n != sw.name
                       and not spines <= reach.get(n, set())):
        if prefixes is None:
            raise ValueError("leaf_detours: prefixes needed (leaf_prefixes(fabric))")
        for prefix in prefixes.get(leaf, ()):
            # a dual-homed NIC's /32 is reached through any of its leaves (the spines'
            # group over the pair loses the dead link): a detour only where some live
            # uplink's spine reaches none of them
            home = homes.get(prefix, (leaf,))
            reaching = {sp for h in home for sp in reach.get(h, ())}
            if spines <= reaching:
                continue
            usable = tuple(p for p in live if sw.ports[p].peer_node in reaching)
            if usable and prefix not in by_ports.get(usable, ()):
                by_ports.setdefault(usable, []).append(prefix)
    out: dict[int, Detour] = {}
    base, gid = len(live), DETOUR_GROUP_BASE   # after the uplink group's live members
    for ports, nets in by_ports.items():
        if nets:
            out[gid] = Detour(link_group(sw, gid, base, ports), tuple(nets))
            base, gid = base + len(ports), gid + 1
    return out


def fabric_detours(fabric: FabricLike, down: Collection[tuple[str, int]] = frozenset(),
                   prefixes: Optional[Mapping[str, Collection[str]]] = None
                   ) -> dict[str, dict[int, Detour]]:
    """Leaf name → its detours (leaves without any left out). A full mesh with nothing
    down has none, and is answered without looking at a single NIC. ``prefixes``:
    :func:`leaf_prefixes` of the fabric when the caller keeps it (it reads every NIC).

    >>> from topo.model import build_fabric
    >>> fab = build_fabric()
    >>> fabric_detours(fab) == {}, sorted(fabric_detours(fab, {("s1", 1)}))
    (True, ['b0r1l0', 'b1r0l0', 'b1r1l0'])
    """
    by_name = {s.name: s for s in fabric.switches}
    reach = spines_reaching(by_name, down)
    spines = {n for n, s in by_name.items() if s.role == "spine"}
    if all(reach.get(n, set()) >= spines for n, s in by_name.items() if s.role == "leaf"):
        return {}
    if prefixes is None:
        prefixes = leaf_prefixes(fabric)
    out = {}
    for sw in fabric.switches:
        d = leaf_detours(sw, by_name, down, prefixes, reach)
        if d:
            out[sw.name] = d
    return out


def fabric_hash_model(fabric: FabricLike,
                      down: Collection[tuple[str, int]] = frozenset()) -> FabricHashModel:
    """The published ECMP hash model of ``fabric`` as
    :func:`~controller.fabric.plan.plan_fabric` programs it (equal to
    ``FabricHashModel({n: p.hash_model() for n, p in plan_fabric(f).items()})``), from the
    groups alone: no table entry is built, so a 64K-GPU pod takes well under a second.
    ``down``: ``(switch, port)`` ends out of service (the model of the fabric re-planned
    without those links, with the leaves' detours of :mod:`controller.fabric.detours`).
    A fabric with a core tier: :func:`controller.fabric.tiers.tier_hash_model` (what the
    plan programs there; ``down`` must be empty).

    >>> from topo.model import build_fabric
    >>> fabric_hash_model(build_fabric()).switch("b1r1l0").groups[1].members
    ('s0', 's1')
    """
    if any(s.role == "core" for s in fabric.switches):
        if down:
            raise ValueError("fabric_hash_model: links out of service are not modelled over "
                             "three tiers (a fabric with a core tier)")
        return tier_hash_model(fabric)  # type: ignore[arg-type]
    by_name = {s.name: s for s in fabric.switches}
    leaf_sets = nic_leaf_sets(fabric)
    model = FabricHashModel({sw.name: groups_hash_model(sw.name, algorithm_of(sw),
                                                        int(sw.ecmp_seed),
                                                        ecmp_groups(sw, by_name, down, leaf_sets))
                             for sw in fabric.switches})
    # the leaves' detour groups
    for name, detours in fabric_detours(fabric, down).items():
        m = model.switches[name]
        for d in detours.values():
            m.groups[d.group.group_id] = GroupModel(d.group.base, d.group.members)
            m.routes += tuple(RouteModel(p, d.group.group_id) for p in d.prefixes)
    return model


__all__ = ["DETOUR_GROUP_BASE", "Detour", "fabric_detours", "fabric_hash_model", "leaf_detours", "leaf_prefixes",
           "spines_reaching"]
