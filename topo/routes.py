"""The routes and ECMP groups of the fabric description, every tier: what each switch does
with each destination of the address plan, as data (prefix → next-hop ports).

This is the description's statement of the routing rule; it names ports, not table
entries. A route with several ports is an ECMP group: every port on a shortest path to
the destination, in port order. The rule, per role:

* **leaf**: a /32 per attached NIC port → that host port; ``10.0.0.0/8`` (the whole
  address plan) → all its uplinks. (The controller's plan also drops, on a leaf, each
  subnet whose every NIC is cabled to it: its free addresses and the gateway's are
  nobody's, and went up and back down until the TTL ran out; ``controller.fabric.plan``.
  No NIC's address ever matches those routes, so they are left out here.)
* **spine** of pod p: each rail subnet ``10.b.(p·R + r).0/24`` of its pod → its downlinks
  to the leaves that subnet's NICs sit on (one leaf, or the *pair* of a dual-port NIC: the
  NIC is reachable through either of its ports), or a /32 per NIC when the subnet's NICs
  are spread over several leaf sets; with a core tier, ``10.0.0.0/8`` → all its core
  uplinks (the longer prefixes of its own pod win).
* **core**: each rail subnet of pod q → its links to the spine of its plane in pod q.

Two-tier one-port fabrics get exactly the routes ``controller.fabric.plan`` programs
(the leaf's /32s and uplink group, the spine's subnet routes and per-leaf groups); the
controller does not read this module yet (issue 29, later items).

Example::

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> fab = build_fabric(FabricSpec(pods=2, cores=2, ports_per_nic=2, leaves_per_rail=2))
    >>> table = fabric_routes(fab)
    >>> [(r.prefix, r.ports) for r in table["b0r0l0"]][-1]         # every uplink
    ('10.0.0.0/8', (3, 4))
    >>> lookup(table["s0"], "10.1.2.1")                             # pod 1: every core link
    Route(prefix='10.0.0.0/8', ports=(9, 10, 11, 12, 13, 14, 15, 16))
    >>> lookup(table["p1.s0"], "10.1.2.1").ports                    # the NIC's two leaves
    (5, 6)
    >>> lookup(table["c0.0"], "10.1.2.1").ports                     # spine 0 of pod 1
    (9, 10, 11, 12, 13, 14, 15, 16)
"""
from __future__ import annotations

import ipaddress
from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Union

from topo.model import Fabric, NicInfo, SwitchInfo

FABRIC_PREFIX = "10.0.0.0/8"


@dataclass(frozen=True, slots=True)
class Route:
    """A destination prefix and its next-hop ports (more than one: an ECMP group).

        >>> Route("10.0.0.0/8", (3, 4)).is_ecmp
        True
    """

    prefix: str
    ports: tuple[int, ...]

    @property
    def is_ecmp(self) -> bool:
        """True when the route spreads over several ports (an ECMP group)."""
        return len(self.ports) > 1

    @property
    def network(self) -> ipaddress.IPv4Network:
        """The prefix as an ``IPv4Network``."""
        return ipaddress.IPv4Network(self.prefix)


class _Index:
    """Per-NIC facts indexed once for the whole fabric (a 64K-GPU pod has 65,536 NICs)."""

    def __init__(self, fab: Fabric) -> None:
        self.by_name = {s.name: s for s in fab.switches}
        self.host_pod = {h.name: h.pod for h in fab.hosts}
        self.leaf_ports: dict[str, list[tuple[ipaddress.IPv4Address, int]]] = defaultdict(list)
        # pod -> subnet -> NICs
        self.pod_subnets: dict[int, dict[ipaddress.IPv4Network, list[NicInfo]]] = defaultdict(
            lambda: defaultdict(list))
        for h in fab.hosts:
            for nic in h.nics:
                ip = ipaddress.IPv4Address(nic.ip)
                for port in nic.ports:
                    self.leaf_ports[port.leaf].append((ip, port.leaf_port))
                net = ipaddress.IPv4Network(f"{nic.ip}/{nic.prefix_len}", strict=False)
                self.pod_subnets[h.pod][net].append(nic)
        # pod -> [(subnet, the one leaf set of all its NICs, or None when they differ)]
        self.subnet_leaves: dict[int, list[tuple[ipaddress.IPv4Network, Optional[frozenset[str]]]]] = {}
        for pod, subnets in self.pod_subnets.items():
            rows = []
            for net, nics in sorted(subnets.items()):
                sets = {frozenset(n.leaves) for n in nics}
                rows.append((net, next(iter(sets)) if len(sets) == 1 else None))
            self.subnet_leaves[pod] = rows


def _ports_by_peer(sw: SwitchInfo, kind: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for p in sorted(sw.ports):
        if sw.ports[p].kind == kind:
            out[sw.ports[p].peer_node].append(p)
    return out


def _ports_to(by_peer: Mapping[str, list[int]], peers: Union[set[str], frozenset[str]]) -> tuple[int, ...]:
    return tuple(sorted(p for peer in peers for p in by_peer.get(peer, ())))


def _leaf_routes(sw: SwitchInfo, ix: _Index) -> list[Route]:
    out = [Route(f"{ip}/32", (port,)) for ip, port in sorted(ix.leaf_ports.get(sw.name, []))]
    uplinks = tuple(p for p in sorted(sw.ports) if sw.ports[p].kind == "uplink")
    if uplinks:
        out.append(Route(FABRIC_PREFIX, uplinks))
    return out


def _spine_routes(sw: SwitchInfo, ix: _Index) -> list[Route]:
    out: list[Route] = []
    pod = sw.pod if sw.pod is not None else 0
    down = _ports_by_peer(sw, "downlink")
    for net, leaves in ix.subnet_leaves.get(pod, []):
        if leaves is not None:
            ports = _ports_to(down, leaves)
            if ports:
                out.append(Route(str(net), ports))
            continue
        for nic in sorted(ix.pod_subnets[pod][net], key=lambda n: ipaddress.IPv4Address(n.ip)):
            ports = _ports_to(down, frozenset(nic.leaves))
            if ports:
                out.append(Route(f"{nic.ip}/32", ports))
    core_uplinks = tuple(p for p in sorted(sw.ports) if sw.ports[p].kind == "uplink")
    if core_uplinks:
        out.append(Route(FABRIC_PREFIX, core_uplinks))
    return out


def _core_routes(sw: SwitchInfo, ix: _Index) -> list[Route]:
    spines_by_pod: dict[int, set[str]] = defaultdict(set)
    for p in sw.ports.values():
        peer = ix.by_name.get(p.peer_node)
        if p.kind == "downlink" and peer is not None and peer.pod is not None:
            spines_by_pod[peer.pod].add(peer.name)
    out: list[Route] = []
    down = _ports_by_peer(sw, "downlink")
    for pod in sorted(spines_by_pod):
        ports = _ports_to(down, spines_by_pod[pod])
        out.extend(Route(str(net), ports) for net, _ in ix.subnet_leaves.get(pod, []))
    return out


_RULES = {"leaf": _leaf_routes, "spine": _spine_routes, "core": _core_routes}


def fabric_routes(fab: Fabric) -> dict[str, list[Route]]:
    """Every switch's routes, by switch name (longest prefixes first within a role's
    rule: /32s, then subnets, then ``10.0.0.0/8``)."""
    ix = _Index(fab)
    return {sw.name: _RULES[sw.role](sw, ix) for sw in fab.switches}


def switch_routes(fab: Fabric, name: str) -> list[Route]:
    """One switch's routes: ``switch_routes(build_fabric(), "s0")[0].prefix == "10.0.0.0/24"``."""
    sw = fab.switch(name)
    return _RULES[sw.role](sw, _Index(fab))


def lookup(routes: Sequence[Route], ip: str) -> Optional[Route]:
    """The longest-prefix match for ``ip`` among ``routes`` (None when nothing matches).

        >>> lookup([Route("10.0.0.0/8", (3, 4)), Route("10.0.0.1/32", (1,))], "10.0.0.1").ports
        (1,)
    """
    addr = ipaddress.IPv4Address(ip)
    best: Optional[Route] = None
    for r in routes:
        net = r.network
        if addr in net and (best is None or net.prefixlen > best.network.prefixlen):
            best = r
    return best


def ecmp_groups(routes: Sequence[Route]) -> dict[tuple[int, ...], list[str]]:
    """The distinct ECMP groups of a switch (port tuples of more than one port) and the
    prefixes routed to each, in first-use order.

        >>> ecmp_groups([Route("10.0.0.0/24", (1, 2)), Route("10.0.1.0/24", (1, 2))])
        {(1, 2): ['10.0.0.0/24', '10.0.1.0/24']}
    """
    out: dict[tuple[int, ...], list[str]] = {}
    for r in routes:
        if r.is_ecmp:
            out.setdefault(r.ports, []).append(r.prefix)
    return out


def routes_of(table: Mapping[str, Sequence[Route]], switch: str) -> Sequence[Route]:
    """``table[switch]`` with a ``KeyError`` that names the switch."""
    try:
        return table[switch]
    except KeyError:
        raise KeyError(f"no routes for switch {switch!r}") from None


__all__ = ["FABRIC_PREFIX", "Route", "ecmp_groups", "fabric_routes", "lookup", "routes_of",
           "switch_routes"]
