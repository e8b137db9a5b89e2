"""TCCL across pods: source ports for flows whose path climbs to the core tier.

A flow from a NIC port in pod p to a NIC in pod q ≠ p crosses four switch-to-switch links,
each an ECMP choice of its switch: source leaf → spine (the leaf's uplink group), spine →
core (the spine's core uplinks), core → spine of pod q (the core's links to that plane's
spine), spine → destination leaf (the leaves of the destination NIC). Every choice is a
function of the source port, as the switches compute it: the route is
:func:`topo.routes.fabric_routes`' longest-prefix match, and an ECMP route takes port
``route.ports[H % size]`` with ``H`` the published model's hash of that switch for the
route's group (:meth:`p4src.hashmodel.SwitchHashModel.for_group`: cores and spines towards
leaves may hash ports-first). :func:`walk` is that walk for one source port.

:class:`CrossPodPlanner` plans flows greedily, in request order: for each flow it sweeps
candidate source ports (the preferred range, 49152–65535, visited with an odd stride so
that every bit of the port varies: a small aligned window of a CRC's ports reaches few
members) and takes the one whose path's link loads, tier by tier from the source leaf, are
least (lexicographically: first the leaf uplink, then the spine → core link, ...). With
every member reachable from a flow this puts ``ceil(n / uplinks)`` flows on each uplink of
a leaf and ``ceil(n / core links)`` on each core link of a spine. Loads already on the
links (flows planned inside a pod) are given as ``base`` so both kinds share the links.

Example::

    >>> from topo.spec import load_spec
    >>> from topo.model import build_fabric
    >>> from controller.fabric.detours import fabric_hash_model
    >>> fab = build_fabric(load_spec("topo/specs/pod2-dualport.yaml"))
    >>> planner = CrossPodPlanner(fab, fabric_hash_model(fab))
    >>> reqs = [CrossPodRequest(f"f{i}", "10.0.0.1", "10.0.2.1", i % 2) for i in range(4)]
    >>> plans = planner.plan(reqs)
    >>> sorted(p.links[0] for p in plans)            # each leaf's 2 uplinks: one flow each
    [('b0r0l0', 3), ('b0r0l0', 4), ('b0r0l1', 3), ('b0r0l1', 4)]
    >>> walk(fab, fabric_hash_model(fab), "10.0.0.1", plans[0].nic_port, "10.0.2.1", plans[0].sport) == plans[0].links
    True
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from host.tccl.portplan import DEFAULT_PORT_RANGE, PROTO_UDP, ROCE_DPORT, PortPlanError
from p4src.hashmodel import FabricHashModel, SwitchHashModel, source_port_hasher
from topo.routes import Route, fabric_routes, lookup

MAX_HOPS = 16
SWEEP_STRIDE = 7919          # odd (prime): visits every port of a power-of-two range once
SWEEP_PORTS = 1024           # candidate ports tried per flow (half pass a dual-port NIC's tx hash)

Link = tuple[str, int]       # (switch, egress port): one switch-to-switch link


@dataclass(frozen=True, slots=True)
class CrossPodRequest:
    """A flow to plan: ``CrossPodRequest("f0", "10.0.0.1", "10.1.0.1", 1)`` leaves NIC port 1."""

    name: str
    src: str
    dst: str
    nic_port: int
    dport: int = ROCE_DPORT


@dataclass(frozen=True, slots=True)
class CrossPodPlan:
    """A flow's source port and the switch-to-switch links the hash model sends it over."""

    name: str
    src: str
    dst: str
    nic_port: int
    sport: int
    links: tuple[Link, ...]


class _Walker:
    """Routes and per-switch hashers of one fabric and model, shared by the flows."""

    def __init__(self, fabric: Any, model: FabricHashModel) -> None:
        self.fabric = fabric
        self.model = model
        self.routes = fabric_routes(fabric)
        self.nics = {n.ip: n for h in fabric.hosts for n in h.nics}

    def hop_model(self, switch: str, route: Route) -> SwitchHashModel:
        sw = self.model.switch(switch)
        for r in sw.routes:
            if r.prefix == route.prefix:
                return sw.for_group(r.group_id)
        raise PortPlanError(f"{switch}: route {route.prefix} has no group in the published hash model")

    def path(self, src: str, nic_port: int, dst: str, sport: int, dport: int,
             hashers: dict[str, Callable[[int], int]]) -> tuple[Link, ...]:
        """The links of one flow; ``hashers`` caches each switch's hash of this src/dst."""
        nic = self.nics.get(src)
        if nic is None:
            raise PortPlanError(f"no NIC has address {src}")
        if not 0 <= nic_port < len(nic.ports):
            raise PortPlanError(f"NIC {src} has no port {nic_port}")
        switch, links = nic.ports[nic_port].leaf, []
        for _ in range(MAX_HOPS):
            route = lookup(self.routes.get(switch, ()), dst)
            if route is None:
                raise PortPlanError(f"{switch} has no route to {dst}")
            if route.is_ecmp:
                h = hashers.get(switch)
                if h is None:
                    h = hashers[switch] = source_port_hasher(self.hop_model(switch, route), src, dst,
                                                             PROTO_UDP, dport)
                port = route.ports[h(sport) % len(route.ports)]
            else:
                port = route.ports[0]
            info = self.fabric.switch(switch).ports[port]
            if info.kind == "host":
                return tuple(links)
            links.append((switch, port))
            switch = info.peer_node
        raise PortPlanError(f"no delivery to {dst} within {MAX_HOPS} hops (a routing loop)")


def walk(fabric: Any, model: FabricHashModel, src: str, nic_port: int, dst: str, sport: int,
         dport: int = ROCE_DPORT) -> tuple[Link, ...]:
    """The switch-to-switch links ``(switch, egress port)`` a flow from port ``nic_port`` of
    NIC ``src`` takes to ``dst`` with source port ``sport`` (module docstring)."""
    return _Walker(fabric, model).path(src, nic_port, dst, sport, dport, {})


class CrossPodPlanner:
    """Greedy least-loaded source ports over every tier (module docstring);
    ``port_ok(request, sport)``: a further condition (the NIC's tx hash picks its port)."""

    def __init__(self, fabric: Any, model: FabricHashModel,
                 port_range: tuple[int, int] = DEFAULT_PORT_RANGE,
                 port_ok: Optional[Callable[[CrossPodRequest, int], bool]] = None) -> None:
        lo, hi = port_range
        if not 1 <= lo <= hi <= 0xFFFF:
            raise PortPlanError(f"port range {lo}..{hi}: must be within 1..65535, low ≤ high")
        self.port_range = (lo, hi)
        self.port_ok = port_ok
        self._walker = _Walker(fabric, model)

    def links_of(self, src: str, nic_port: int, dst: str, sport: int,
                 dport: int = ROCE_DPORT) -> tuple[Link, ...]:
        """:func:`walk` with this planner's routes."""
        return self._walker.path(src, nic_port, dst, sport, dport, {})

    def _candidates(self) -> list[int]:
        lo, hi = self.port_range
        span = hi - lo + 1
        stride = SWEEP_STRIDE if span % SWEEP_STRIDE else 1
        return [lo + (i * stride) % span for i in range(min(span, SWEEP_PORTS))]

    def plan(self, requests: Sequence[CrossPodRequest],
             base: Optional[Mapping[Link, int]] = None) -> list[CrossPodPlan]:
        """Source ports for ``requests`` (request order); ``base``: loads already on links."""
        load: dict[Link, int] = dict(base or {})
        used: set[tuple[str, str, int]] = set()
        cands = self._candidates()
        out = []
        for req in requests:
            hashers: dict[str, Callable[[int], int]] = {}
            best: Optional[tuple[tuple[int, ...], int, tuple[Link, ...]]] = None
            for sport in cands:
                if (req.src, req.dst, sport) in used or (self.port_ok is not None and not self.port_ok(req, sport)):
                    continue
                links = self._walker.path(req.src, req.nic_port, req.dst, sport, req.dport, hashers)
                key = tuple(load.get(link, 0) for link in links)
                if best is None or key < best[0]:
                    best = (key, sport, links)
            if best is None:
                raise PortPlanError(f"flow {req.name}: no free source port in {self.port_range}")
            _, sport, links = best
            used.add((req.src, req.dst, sport))
            for link in links:
                load[link] = load.get(link, 0) + 1
            out.append(CrossPodPlan(req.name, req.src, req.dst, req.nic_port, sport, links))
        return out


__all__ = ["CrossPodPlan", "CrossPodPlanner", "CrossPodRequest", "Link", "walk"]
