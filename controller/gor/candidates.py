"""The paths of the fabric as GOR sees them: every live leaf → spine → leaf path between
two leaves (the candidates of a move), the ECMP group members behind each port, and the
path the published hash model sends a flow on now.

Paths come from the networkx graph of ``topo.model.Fabric`` (fabric edges only; a link
in :attr:`LinkState.down` removes every path through it); parallel links give one path
per (uplink, downlink) pair. Member names of the hash model are the peer node, with
``"#<port>"`` when a group has several links to that peer (``controller.fabric_setup``).
:class:`controller.gor.paths.PathEngine` is a :class:`FabricPaths` that also decides.

Example::

    >>> from topo.model import build_fabric
    >>> from controller.fabric_setup import fabric_hash_model
    >>> fab = build_fabric()
    >>> hm = fabric_hash_model(fab)
    >>> paths = FabricPaths(fab, hm, LinkState.from_fabric(fab))
    >>> [(p.spine, p.links) for p in paths.candidate_paths("b0r0l0", "b1r0l0")]
    [('s0', (('b0r0l0', 3), ('s0', 3))), ('s1', (('b0r0l0', 4), ('s1', 3)))]
    >>> from controller.gor.decisions import FlowKey
    >>> now = paths.current_path(FlowKey("10.0.0.1", "10.1.0.1", 17, 49152, 4791), "b0r0l0", "b1r0l0")
    >>> now in paths.candidate_paths("b0r0l0", "b1r0l0")
    True
"""
from __future__ import annotations

import ipaddress
from typing import Optional

from controller.fabric.tiers import TierModel
from controller.gor.decisions import FlowKey, PathChoice
from controller.gor.linkstate import LinkState
from controller.gor.tierpaths import tier_candidates, tier_current
from p4src.hashmodel import FabricHashModel, SwitchHashModel, member_index, route_group
from topo.model import Fabric
from topo.routes import fabric_routes

LEAF_UPLINK_GROUP = 1
"""The leaves' uplink group id in the published hash model."""


def nic_leaves(fabric: Fabric) -> dict[str, str]:
    """NIC address → its leaf: ``nic_leaves(build_fabric())["10.1.0.1"] == "b1r0l0"``."""
    return {n.ip: n.leaf for h in fabric.hosts for n in h.nics}


def nic_port_leaves(fabric: Fabric) -> dict[str, tuple[str, ...]]:
    """NIC address → the leaf of each of its ports, in port order (one for a NIC of one
    port, two for a dual-port NIC homed on two leaves of its rail).

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> nic_port_leaves(build_fabric(load_spec("topo/specs/pod2-dualport.yaml")))["10.0.0.1"]
    ('b0r0l0', 'b0r0l1')
    """
    return {n.ip: tuple(p.leaf for p in n.ports) if n.ports else (n.leaf,)
            for h in fabric.hosts for n in h.nics}


class FabricPaths:
    """Candidate paths and hash-model predictions over one fabric (caches per switch).

    ``links`` is shared with the telemetry loop (down links are read live);
    ``hash_model`` is the published model of the switches as programmed.
    """

    def __init__(self, fabric: Fabric, hash_model: FabricHashModel, links: LinkState,
                 leaf_group: int = LEAF_UPLINK_GROUP) -> None:
        self.fabric, self.hash_model, self.links = fabric, hash_model, links
        self.leaf_group = leaf_group
        self._spine_groups: dict[tuple[str, str], Optional[int]] = {}
        self._peer_port: dict[tuple[str, str], int] = {}
        # NIC address -> its ports' leaves: a dual-homed NIC's prefix is one spine group
        # over both leaves (two tiers: controller.fabric.ecmp's leaf sets)
        self._port_leaves: dict[str, tuple[str, ...]] = nic_port_leaves(fabric)
        # a fabric with a core tier: paths of any length over the programmed routes
        # (controller.gor.tierpaths); the hash model is then tier_hash_model's
        self.tiers: Optional[TierModel] = (TierModel(fabric, fabric_routes(fabric), hash_model)
                                           if any(s.role == "core" for s in fabric.switches) else None)

    def candidate_paths(self, src_leaf: str, dst_leaf: str) -> list[PathChoice]:
        """Every live leaf → spine → leaf path, in graph order; in a fabric with a core
        tier every live path of the programmed routes, across pods leaf → spine → core →
        spine → leaf (:func:`controller.gor.tierpaths.tier_candidates`)."""
        if self.tiers is not None:
            return tier_candidates(self.tiers, src_leaf, dst_leaf, self.links.is_up)
        g = self.fabric.graph
        out: list[PathChoice] = []
        for spine, edges in g[src_leaf].items():
            if g.nodes[spine].get("role") != "spine" or dst_leaf not in g[spine]:
                continue
            ups = [d["ports"][src_leaf] for d in edges.values() if d.get("kind") == "fabric"]
            downs = [d["ports"][spine] for d in g[spine][dst_leaf].values() if d.get("kind") == "fabric"]
            for up in (sorted(ups) if len(ups) > 1 else ups):
                if not self.links.is_up((src_leaf, up)):
                    continue
                for down in (sorted(downs) if len(downs) > 1 else downs):
                    if self.links.is_up((spine, down)):
                        out.append(PathChoice(spine, ((src_leaf, up), (spine, down))))
        return out

    def member_port(self, switch: str, member: str) -> int:
        """The egress port of group member ``member`` (``"s0"`` or ``"s0#3"``) on ``switch``."""
        return self._member_port(switch, member)

    def _member_port(self, switch: str, member: str) -> int:
        name, sep, port = member.partition("#")
        if sep:
            return int(port)
        key = (switch, name)
        if key not in self._peer_port:
            sw = self.fabric.switch(switch)
            self._peer_port[key] = next(p for p, info in sorted(sw.ports.items()) if info.peer_node == name)
        return self._peer_port[key]

    def _member_of_port(self, model: SwitchHashModel, group_id: int, port: int) -> int:
        """Index in the group of the member whose link is ``port``."""
        g = model.group(group_id)
        for i, m in enumerate(g.members):
            if self._member_port(model.switch, m) == port:
                return i
        raise KeyError(f"{model.switch}: port {port} is not in ECMP group {group_id}")

    def leaf_group_of(self, leaf: SwitchHashModel, dst: int) -> int:
        """The ECMP group ``leaf`` uses for destination ``dst`` (an IPv4 address as an
        integer): its detour group for a leaf some spine lost (the model's routes,
        :mod:`controller.fabric.detours`), else the uplink group."""
        gid = route_group(leaf, dst, self.leaf_group)
        return self.leaf_group if gid is None else gid

    def spine_group(self, spine: str, dst_leaf: str) -> Optional[int]:
        """The spine's ECMP group towards ``dst_leaf`` (None: a single link, no group)."""
        key = (spine, dst_leaf)
        if key not in self._spine_groups:
            sw = self.hash_model.switches.get(spine)
            hits = [gid for gid, g in sorted(sw.groups.items())
                    if all(m.partition("#")[0] == dst_leaf for m in g.members)] if sw else []
            self._spine_groups[key] = hits[0] if hits else None
        return self._spine_groups[key]

    def port_leaves_of(self, ip: str) -> tuple[str, ...]:
        """The leaves of NIC ``ip``'s ports, in port order (() for an unknown address)."""
        return self._port_leaves.get(ip, ())

    def dst_spine_group(self, spine: str, dst_leaf: str, dst_ip: str) -> Optional[int]:
        """The spine's ECMP group for traffic to NIC ``dst_ip`` behind ``dst_leaf``: for a
        dual-homed NIC (two tiers) the group whose members are exactly its leaves (the
        spine spreads the NIC's prefix over both, so the down-link is hashed there too),
        else :meth:`spine_group` (None: a single link, no group).

        >>> from topo.model import build_fabric
        >>> from topo.spec import load_spec
        >>> from controller.fabric_setup import fabric_hash_model
        >>> fab = build_fabric(load_spec("topo/specs/dualport.yaml"))
        >>> fp = FabricPaths(fab, fabric_hash_model(fab), LinkState.from_fabric(fab))
        >>> fp.dst_spine_group("s0", "b1r0l0", "10.1.0.1"), fp.spine_group("s0", "b1r0l0")
        (2, None)
        """
        leaves = tuple(dict.fromkeys(self._port_leaves.get(dst_ip, ())))
        if len(leaves) > 1 and dst_leaf in leaves:
            key = (spine, "|".join(sorted(leaves)))
            if key not in self._spine_groups:
                sw = self.hash_model.switches.get(spine)
                want = set(leaves)
                hits = [gid for gid, g in sorted(sw.groups.items())
                        if {m.partition("#")[0] for m in g.members} == want] if sw else []
                self._spine_groups[key] = hits[0] if hits else None
            if self._spine_groups[key] is not None:
                return self._spine_groups[key]
        return self.spine_group(spine, dst_leaf)

    def current_path(self, flow: FlowKey, src_leaf: str, dst_leaf: str) -> Optional[PathChoice]:
        """Where the hash model says ``flow`` goes now (None when a hop is unknown); to a
        dual-homed NIC over two tiers the spine's hash picks which of its leaves
        (:meth:`dst_spine_group`), so the path may end at the NIC's other leaf."""
        if self.tiers is not None:
            return tier_current(self.tiers, flow, src_leaf)
        try:
            leaf = self.hash_model.switch(src_leaf)
            src, dst = int(ipaddress.IPv4Address(flow.src)), int(ipaddress.IPv4Address(flow.dst))
            gid = self.leaf_group_of(leaf, dst)
            g = leaf.group(gid)
            i = member_index(leaf, gid, src, dst, flow.proto, flow.sport, flow.dport) - g.base
            member = g.members[i]
            spine = member.partition("#")[0]
            up = self._member_port(src_leaf, member)
            sg = self.dst_spine_group(spine, dst_leaf, flow.dst)
            if sg is None:
                down = self._member_port(spine, dst_leaf)
            else:
                smodel = self.hash_model.switch(spine)
                sgrp = smodel.group(sg)
                j = member_index(smodel, sg, src, dst, flow.proto, flow.sport, flow.dport) - sgrp.base
                down = self._member_port(spine, sgrp.members[j])
        except (KeyError, StopIteration, IndexError):
            return None
        return PathChoice(spine, ((src_leaf, up), (spine, down)))

    def _dst_of(self, path: PathChoice) -> str:
        """The destination leaf of ``path`` (the peer of its last link)."""
        return self.links.peer[path.links[-1]][0]


__all__ = ["FabricPaths", "LEAF_UPLINK_GROUP", "nic_leaves", "nic_port_leaves"]
