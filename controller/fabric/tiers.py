"""The hash model over three tiers and dual-port NICs: the published ECMP groups of every
leaf, spine and core of a ``topo`` fabric, and the path a flow takes through them.

For a fabric with a core tier this is the model the controller programs
(:func:`controller.fabric.plan.plan_fabric` takes its groups from the same
:func:`controller.fabric.ecmp.route_groups`) and the one
:func:`controller.fabric.detours.fabric_hash_model` publishes; TCCL, GOR and the monitor
predict with it.

**Groups.** A switch's ECMP groups are the multi-port routes of :mod:`topo.routes`
(every next hop on a shortest path, port order), one group per distinct port set,
numbered from 1 in route order, member indexes consecutive; members are named as
:func:`controller.fabric.ecmp.member_name` names them (``"s0"``, ``"c0.1#10"``). Every
route to a group is published (``SwitchHashModel.routes``). Routes to one port are not
published: they are the longer prefixes (a leaf's /32 to an attached NIC port) and win
the longest-prefix match, so a reader looks up the route first (:func:`predict_tier_path`
does, with :func:`topo.routes.lookup`).

**A flow's path.** A NIC port (the QP's port on a dual-port NIC) sends to its leaf; every
switch looks its route up and, for a group, takes member ``H % size`` of its own hash
(:func:`p4src.hashmodel.flow_hash`: seed, CRC and field list of that switch, or of the
group: cores and spines towards their leaves hash ports-first, :meth:`TierModel.hop_model`). The
destination NIC is reached through whichever of its ports' leaves the last spine's hash
picks. :func:`sport_paths` gives the path of every source port at once with the affine
sweep of :func:`p4src.hashmodel.source_port_hashes` (one table per switch visited).

Example::

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> fab = build_fabric(FabricSpec(pods=2, cores=2, ports_per_nic=2, leaves_per_rail=2))
    >>> tiers = TierModel.of(fab)
    >>> tiers.model.switch("c0.0").groups[1].members[:2]
    ('s0#1', 's0#2')
    >>> p = tiers.path(fab.host("b0s0").nics[0], 1, "10.1.3.2", 49152)
    >>> p.switches[0], len(p.switches), p.dst_leaf in fab.host("p1.b1s1").nics[1].leaves
    ('b0r0l1', 5, True)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from controller.fabric.ecmp import algorithm_of, route_groups
from p4src.hashmodel import (PROTO_UDP, FabricHashModel, Flow, RouteModel, SwitchHashModel,
                             flow_hash, source_port_hasher, source_port_hashes)
from topo.model import Fabric, NicInfo
from topo.routes import Route, fabric_routes, lookup

ROCE_DPORT = 4791
MAX_HOPS = 16


@dataclass(frozen=True, slots=True)
class TierPath:
    """The switches a flow crosses and the port each sends it out of; ``dst_leaf`` /
    ``dst_port`` are the last leaf and its port to the destination NIC.

        >>> TierPath(("b0r0l0", "s0", "b0r1l0"), (3, 2, 1)).hops
        (('b0r0l0', 3), ('s0', 2), ('b0r1l0', 1))
    """

    switches: tuple[str, ...]
    ports: tuple[int, ...]

    @property
    def hops(self) -> tuple[tuple[str, int], ...]:
        """``(switch, egress port)`` at every hop."""
        return tuple(zip(self.switches, self.ports))

    @property
    def dst_leaf(self) -> str:
        """The leaf that delivers to the destination NIC."""
        return self.switches[-1]

    @property
    def dst_port(self) -> int:
        """That leaf's port to the destination NIC."""
        return self.ports[-1]


@dataclass(slots=True)
class TierModel:
    """A fabric's routes and its published hash model over every tier (:meth:`of`)."""

    fabric: Fabric
    routes: dict[str, list[Route]]
    model: FabricHashModel

    @classmethod
    def of(cls, fab: Fabric) -> "TierModel":
        """Routes (:func:`topo.routes.fabric_routes`) and the hash model of ``fab``."""
        table = fabric_routes(fab)
        return cls(fab, table, tier_hash_model(fab, table))

    def hop_model(self, switch: str, route: Route) -> SwitchHashModel:
        """The hash ``switch`` applies to a flow on ``route`` (a route to a group): the
        switch's model with that group's field list (a ports-first group's,
        :func:`controller.fabric.ecmp.ports_first_group`)."""
        sw = self.model.switch(switch)
        for r in sw.routes:
            if r.prefix == route.prefix:
                return sw.for_group(r.group_id)
        raise ValueError(f"{switch}: route {route.prefix} to a group is not in the published hash model")

    def _next(self, switch: str, dst: str) -> Route:
        route = lookup(self.routes[switch], dst)
        if route is None:
            raise ValueError(f"{switch} has no route to {dst}")
        return route

    def path(self, src: NicInfo, nic_port: int, dst: str, sport: int, dport: int = ROCE_DPORT,
             proto: int = PROTO_UDP) -> TierPath:
        """The path of one flow from port ``nic_port`` of NIC ``src`` to address ``dst``."""
        flow = Flow.of(src.ip, dst, proto, sport, dport)
        switch, switches, ports = src.ports[nic_port].leaf, [], []
        for _ in range(MAX_HOPS):
            route = self._next(switch, dst)
            if route.is_ecmp:
                port = route.ports[flow_hash(self.hop_model(switch, route), flow) % len(route.ports)]
            else:
                port = route.ports[0]
            switches.append(switch)
            ports.append(port)
            info = self.fabric.switch(switch).ports[port]
            if info.kind == "host":
                return TierPath(tuple(switches), tuple(ports))
            switch = info.peer_node
        raise ValueError(f"no delivery to {dst} within {MAX_HOPS} hops (a routing loop)")

    def sport_paths(self, src: NicInfo, nic_port: int, dst: str, dport: int = ROCE_DPORT,
                    sports: Optional[Sequence[int]] = None) -> list[TierPath]:
        """:meth:`path` for every source port (``sports``: a subset; default all 65,536), one
        hash table per switch visited instead of one CRC per port and hop."""
        wanted = list(range(1 << 16)) if sports is None else list(sports)
        out: dict[int, TierPath] = {}
        tables: dict[str, Callable[[int], int]] = {}
        few = len(wanted) < 1 << 13        # a hasher per port beats a 65,536-entry table

        def walk(switch: str, group: list[int], switches: tuple[str, ...], ports: tuple[int, ...]) -> None:
            if len(switches) >= MAX_HOPS:
                raise ValueError(f"no delivery to {dst} within {MAX_HOPS} hops (a routing loop)")
            route = self._next(switch, dst)
            by_port: dict[int, list[int]] = {}
            if route.is_ecmp:
                if switch not in tables:
                    hop = self.hop_model(switch, route)
                    tables[switch] = (source_port_hasher(hop, src.ip, dst, PROTO_UDP, dport) if few else
                                      source_port_hashes(hop, src.ip, dst, PROTO_UDP, dport).__getitem__)
                h, n = tables[switch], len(route.ports)
                for sp in group:
                    by_port.setdefault(route.ports[h(sp) % n], []).append(sp)
            else:
                by_port[route.ports[0]] = group
            for port, sps in by_port.items():
                info = self.fabric.switch(switch).ports[port]
                if info.kind == "host":
                    path = TierPath(switches + (switch,), ports + (port,))
                    for sp in sps:
                        out[sp] = path
                else:
                    walk(info.peer_node, sps, switches + (switch,), ports + (port,))

        walk(src.ports[nic_port].leaf, wanted, (), ())
        return [out[sp] for sp in wanted]


def tier_hash_model(fab: Fabric, table: Optional[dict[str, list[Route]]] = None) -> FabricHashModel:
    """The published hash model of every leaf, spine and core (module docstring)."""
    table = fabric_routes(fab) if table is None else table
    switches: dict[str, SwitchHashModel] = {}
    for sw in fab.switches:
        groups, routed = route_groups(sw, table[sw.name])
        switches[sw.name] = SwitchHashModel(
            sw.name, algorithm=algorithm_of(sw), seed=int(sw.ecmp_seed),
            groups={g.group_id: g.model() for g in groups.values()},
            routes=tuple(RouteModel(prefix, gid) for prefix, gid in routed))
    return FabricHashModel(switches)


__all__ = ["MAX_HOPS", "ROCE_DPORT", "TierModel", "TierPath", "tier_hash_model"]
