"""The probe planner: which RoCEv2 probe streams to send so that every link direction of
the fabric is watched, and the links the published hash model puts each stream on.

A probe path is ``(src NIC, dst NIC, UDP source port)`` with destination port 4791. Its
links are predicted with :mod:`p4src.hashmodel` — the same crc16/crc32 the switches
run: the source leaf hashes it onto a member of the group its route for the destination
picks (:func:`p4src.hashmodel.route_group`, the uplink group by default), the spine onto
its group towards the destination's leaf (none with a single link). Leaves route the
whole address plan (``10.0.0.0/8``) to their uplinks (``controller.fabric.plan``), so a
*cross-rail* probe — a rail-r NIC sending to a rail-r' address — is carried by the
spines to the other rail's leaf: that is what gives every leaf→NIC link paths from
several spines. Hosts only route their own rail, so the prober sends raw frames to its
leaf's router MAC (:mod:`monitor.prober`).

The plan (:func:`plan_probes`, a :class:`monitor.probeplan.ProbePlan`) covers every link direction (NIC→leaf, leaf→NIC,
leaf→spine, spine→leaf) with at least two paths **that share no other link**: with one
bad link, each other link of its paths is then crossed by a path that avoids it, so
boolean tomography (:mod:`monitor.tomography`) names it alone. A greedy pass picks the
candidate (NIC pair, colour) completing most links, a second pass drops paths no longer
needed. Links no pair of paths can watch that way are listed in ``uncovered`` with why
(e.g. a fabric with one spine: every path into a NIC from another leaf shares the spine
downlink, and the NIC has no neighbour on its leaf).

Plan file (JSON, ``schema`` ``astral-probe-plan``, ``version`` 1;
:func:`monitor.probeplan.load_plan` raises ``ValueError`` naming the field)::

    {"schema": "astral-probe-plan", "version": 1, "dport": 4791, "rate_pps": 10.0,
     "nics": {"b0s0-eth0": {"host": "b0s0", "rail": 0, "ip": "10.0.0.1",
              "mac": "06:00:00:00:00:01", "gateway_mac": "02:00:00:00:01:00",
              "leaf": "b0r0l0", "prefix": "10.0.0.0/24"}, ...},
     "paths": [{"name": "p0", "src_nic": "b0s0-eth0", "dst_nic": "b1s0-eth1",
                "src_ip": "10.0.0.1", "dst_ip": "10.1.1.1", "sport": 49153,
                "links": ["b0s0-eth0->b0r0l0", "b0r0l0->s1", "s1->b1r1l0", "b1r1l0->b1s0-eth1"],
                "switches": ["b0r0l0", "s1", "b1r1l0"], "dst_prefix": "10.1.1.0/24"}, ...],
     "uncovered": {"<link>": "<why>"}}

Example::

    >>> from topo.model import build_fabric
    >>> plan = plan_probes(build_fabric())
    >>> len(plan.paths), plan.uncovered, len(coverage_gaps(plan.paths, fabric_links(build_fabric())))
    (16, {}, 0)
    >>> load_plan_text(plan.to_json()) == plan
    True
"""
from __future__ import annotations

import argparse
import ipaddress
import sys
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

from controller.fabric.detours import fabric_hash_model
from controller.fabric.ecmp import LEAF_UPLINK_GROUP, member_name
from controller.fabric.tiers import TierModel, TierPath
from host.tccl.hops import peer_of, spine_group_of, spine_routes_to
from monitor.evidence import LinkDir, ProbePath
from monitor.probeplan import (DEFAULT_RATE_PPS, ROCE_DPORT, ProbeNic, ProbePlan, load_plan,
                               load_plan_text)
from p4src.hashmodel import FabricHashModel, Flow, flow_hash, predict_member, route_group
from topo.model import Fabric, NicInfo, NicPort, load_fabric
from topo.routes import Route, fabric_routes, lookup

PROTO_UDP = 17
SPORT_FIRST = 49152            # probes use the ephemeral range 49152..65535
SPORT_RANGE = 1 << 14         # ... 16,384 ports
SPORT_SCAN = 4096              # source ports tried per NIC pair to find every colour
SPORT_STRIDE = 2654435761      # odd: i -> SPORT_FIRST + (i * stride) % SPORT_RANGE is a
                               # permutation that varies the high bits of the port at once
RESTARTS = 16                  # greedy passes, each from another candidate
TIER_RESTARTS = 4              # ... on a three-tier fabric (ten times the candidates)
TIER_MAX_HOPS = 16             # a longer walk is a routing loop (controller.fabric.tiers.MAX_HOPS)


# ------------------------------------------------------------------------ prediction
def _port_to(fabric: Fabric, switch: str, peer: str, member: str) -> tuple[int, bool]:
    """The egress port of ``member`` (``"s0"`` / ``"s0#5"``) and whether parallel links
    make the port part of the link's name."""
    if "#" in member:
        return int(member.split("#", 1)[1]), True
    ports = [p for p, info in sorted(fabric.switch(switch).ports.items()) if info.peer_node == peer]
    if not ports:
        raise ValueError(f"{switch} has no link to {peer}")
    return ports[0], len(ports) > 1


@lru_cache(maxsize=4096)
def _ip_int(ip: str) -> int:
    return int(ipaddress.IPv4Address(ip))


Pins = Mapping[str, Mapping[tuple[str, str, int, int, int], int]]
"""Per switch, exact 5-tuples ``(src ip, dst ip, proto, sport, dport)`` pinned to an
egress port (``FabricIngress.override.flows``: GOR's fallback for a flow it cannot move
by its source port; a hit bypasses routes and ECMP)."""


def _member_of(fabric: Fabric, switch: str, port: int) -> str:
    """The member name of ``switch``'s ``port`` as a group names it
    (:func:`controller.fabric.ecmp.member_name`)."""
    return member_name(fabric.switch(switch), port)


def predict_path(fabric: Fabric, model: FabricHashModel, src: NicInfo, dst: NicInfo,
                 sport: int, pins: Optional[Pins] = None) -> tuple[tuple[LinkDir, ...], tuple[str, ...]]:
    """The link directions and switches a probe ``src → dst`` with source port ``sport``
    crosses, as the hash model predicts (and ``pins``, when a switch pins its 5-tuple);
    ``ValueError`` when no spine reaches ``dst``.

    >>> from topo.model import build_fabric
    >>> fab = build_fabric(); a, b = fab.host("b0s0").nics[0], fab.host("b1s1").nics[1]
    >>> links, sws = predict_path(fab, fabric_hash_model(fab), a, b, 49152)
    >>> str(links[0]), str(links[-1]), sws[0], sws[-1]
    ('b0s0-eth0->b0r0l0', 'b1r1l0->b1s1-eth1', 'b0r0l0', 'b1r1l0')
    """
    first = LinkDir(src.intf, src.leaf)
    last = LinkDir(dst.leaf, dst.intf)
    if src.leaf == dst.leaf:
        return (first, last), (src.leaf,)
    five = (src.ip, dst.ip, PROTO_UDP, sport, ROCE_DPORT)
    pinned = {sw: ports[five] for sw, ports in (pins or {}).items() if five in ports}
    sip, dip = _ip_int(src.ip), _ip_int(dst.ip)
    if src.leaf in pinned:
        up = _member_of(fabric, src.leaf, pinned[src.leaf])
    else:
        leaf = model.switch(src.leaf)
        gid = route_group(leaf, dst.ip, LEAF_UPLINK_GROUP)
        if gid is None or gid not in leaf.groups:
            raise ValueError(f"{src.leaf} has no uplink group for {dst.ip}")
        up = predict_member(leaf, gid, sip, dip, PROTO_UDP, sport, ROCE_DPORT)
    spine = peer_of(up)
    if spine not in pinned and not spine_routes_to(model, spine, dst.leaf):
        raise ValueError(f"{spine} has no route to {dst.leaf}")
    up_port, up_named = _port_to(fabric, src.leaf, spine, up)
    sg = spine_group_of(model, spine, dst.leaf)
    if spine in pinned:
        down = _member_of(fabric, spine, pinned[spine])
        if peer_of(down) != dst.leaf:
            raise ValueError(f"{spine} pins the probe to {peer_of(down)}, not {dst.leaf}")
    elif sg is None:
        down = dst.leaf
    else:
        down = predict_member(model.switch(spine), sg[0], sip, dip, PROTO_UDP, sport, ROCE_DPORT)
    down_port, down_named = _port_to(fabric, spine, dst.leaf, down)
    links = (first, LinkDir(src.leaf, spine, up_port if up_named else None),
             LinkDir(spine, dst.leaf, down_port if down_named else None), last)
    return links, (src.leaf, spine, dst.leaf)


def fabric_links(fabric: Fabric) -> list[LinkDir]:
    """Every link direction a probe can cross: NIC→leaf, leaf→NIC, leaf→spine and
    spine→leaf (with the port in the name where parallel links need it).

    >>> from topo.model import build_fabric
    >>> len(fabric_links(build_fabric()))      # 8 NICs, 4 leaves × 2 spines, both ways
    32
    """
    out: list[LinkDir] = []
    for h in fabric.hosts:
        for n in h.nics:
            out += [LinkDir(n.intf, n.leaf), LinkDir(n.leaf, n.intf)]
    for sw in fabric.leaves:
        peers = [info.peer_node for info in sw.ports.values() if info.kind == "uplink"]
        for p, info in sorted(sw.ports.items()):
            if info.kind != "uplink":
                continue
            par = peers.count(info.peer_node) > 1
            out.append(LinkDir(sw.name, info.peer_node, p if par else None))
            out.append(LinkDir(info.peer_node, sw.name, info.peer_port if par else None))
    return out


def coverage_gaps(paths: Iterable[ProbePath], links: Iterable[LinkDir]) -> list[LinkDir]:
    """The links of ``links`` not crossed by two paths of ``paths`` that share no other
    link (the planner's goal: empty, or only the plan's ``uncovered``).

    >>> coverage_gaps([], [LinkDir("a", "b")])
    [LinkDir(src='a', dst='b', src_port=None)]
    """
    by_link: dict[LinkDir, list[frozenset[LinkDir]]] = defaultdict(list)
    for p in paths:
        s = frozenset(p.links)
        for l in s:
            by_link[l].append(s)
    return [l for l in links if not _watched(l, by_link.get(l, []))]


def _watched(link: LinkDir, sets: Sequence[frozenset[LinkDir]]) -> bool:
    one = frozenset((link,))
    return any(a & b == one for i, a in enumerate(sets) for b in sets[i + 1:])


# ------------------------------------------------------------------------ three tiers
def is_tiered(fabric: Fabric) -> bool:
    """Whether the plan is made over every tier and NIC port (:func:`tier_probe_path`): a
    fabric with a core tier (its routes are :mod:`topo.routes`', its model
    :func:`controller.fabric.tiers.tier_hash_model`)."""
    return any(s.role == "core" for s in fabric.switches)


def _egress(fabric: Fabric, switch: str, port: int) -> LinkDir:
    """The link direction ``switch`` sends out of ``port`` (the port in its name when the
    switch has several ports to that peer)."""
    sw = fabric.switch(switch)
    peer = sw.ports[port].peer_node
    par = sum(1 for info in sw.ports.values() if info.peer_node == peer) > 1
    return LinkDir(switch, peer, port if par else None)


def _port_at(nic: NicInfo, leaf: str, leaf_port: int) -> NicPort:
    for p in nic.ports:
        if (p.leaf, p.leaf_port) == (leaf, leaf_port):
            return p
    raise ValueError(f"{leaf}:{leaf_port} is not a port of NIC {nic.intf}")


def tier_links(fabric: Fabric, src: NicInfo, nic_port: int, dst: NicInfo,
               path: TierPath) -> tuple[tuple[LinkDir, ...], tuple[str, ...], str]:
    """The link directions of ``path`` (a :class:`controller.fabric.tiers.TierPath` from
    port ``nic_port`` of ``src`` to ``dst``), its switches and the interface of the
    destination NIC port it arrives on."""
    here = src.ports[nic_port]
    arrive = _port_at(dst, path.dst_leaf, path.dst_port)
    links = [LinkDir(here.intf, here.leaf)]
    links += [_egress(fabric, sw, port) for sw, port in path.hops[:-1]]
    links.append(LinkDir(path.dst_leaf, arrive.intf))
    return tuple(links), path.switches, arrive.intf


def tier_probe_path(tiers: TierModel, src: NicInfo, nic_port: int, dst: NicInfo,
                    sport: int) -> tuple[tuple[LinkDir, ...], tuple[str, ...], str]:
    """The link directions, switches and arriving NIC port of one probe from port
    ``nic_port`` of ``src`` to ``dst`` with source port ``sport`` on a three-tier fabric,
    as the published hash model predicts (:meth:`TierModel.path`).

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> fab = build_fabric(FabricSpec(pods=2, blocks=1, cores=2, ports_per_nic=2, leaves_per_rail=2))
    >>> a, b = fab.host("b0s0").nics[0], fab.host("p1.b0s1").nics[0]
    >>> links, sws, arrive = tier_probe_path(TierModel.of(fab), a, 1, b, 49152)
    >>> str(links[0]), len(sws), arrive in (b.intf, b.ports[1].intf)
    ('b0s0-eth0p1->b0r0l1', 5, True)
    """
    return tier_links(tiers.fabric, src, nic_port, dst, tiers.path(src, nic_port, dst.ip, sport))


def _host_port_intfs(fabric: Fabric) -> dict[tuple[str, int], tuple[str, str]]:
    """``(leaf, leaf port)`` → (the NIC port interface cabled there, that NIC's address)."""
    return {(p.leaf, p.leaf_port): (p.intf, n.ip) for h in fabric.hosts for n in h.nics for p in n.ports}


def _live_egress(fabric: Fabric, model: FabricHashModel, routes: Mapping[str, Sequence[Route]],
                 switch: str, flow: Flow, dst_ip: str) -> int:
    """The port ``switch`` sends ``flow`` out of by ``model``'s routes to groups (the
    tables as read, longest prefix first) and the programmed routes to one port
    (:mod:`topo.routes`: those GOR never rewrites); ``ValueError`` when the longest
    match is a route to a group that ``model`` does not hold (left out as incomplete)."""
    sm = model.switch(switch)
    planned = lookup(routes.get(switch, ()), dst_ip)
    addr = _ip_int(dst_ip)
    live: Optional[tuple[int, int]] = None                     # (prefix length, group id)
    for r in sm.routes:
        net = r.network
        if (addr & int(net.netmask)) == int(net.network_address) and (
                live is None or net.prefixlen > live[0]):
            live = (net.prefixlen, r.group_id)
    if live is not None and (planned is None or live[0] >= planned.network.prefixlen):
        group = sm.groups.get(live[1])
        if group is None or group.size < 1:
            raise ValueError(f"{switch}: group {live[1]} of its route to {dst_ip} is not held")
        member = group.members[flow_hash(sm.for_group(live[1]), flow) % group.size]
        return _port_to(fabric, switch, peer_of(member), member)[0]
    if planned is None:
        raise ValueError(f"{switch} has no route to {dst_ip}")
    if planned.is_ecmp:
        raise ValueError(f"{switch}: its route {planned.prefix} to a group was not read")
    return planned.ports[0]


def predict_tier_path(fabric: Fabric, model: FabricHashModel, routes: Mapping[str, Sequence[Route]],
                      src_intf: str, src_ip: str, dst_ip: str, sport: int,
                      pins: Optional[Pins] = None) -> tuple[tuple[LinkDir, ...], tuple[str, ...]]:
    """The link directions and switches of one probe on a three-tier fabric, from the NIC
    port ``src_intf`` to ``dst_ip`` with source port ``sport``, walked hop by hop as the
    switches hold their tables: ``model`` (the hash model of their groups and routes to
    groups as read, :func:`monitor.ecmpstate.live_hash_model`: the member is ``H % size``
    of that switch's hash, a ports-first group's own field list), ``routes`` (the
    programmed routes, :func:`topo.routes.fabric_routes`, for the routes to one port) and
    ``pins`` (a switch's override entry for the probe's 5-tuple wins). With the tables as
    programmed it is :func:`tier_probe_path` exactly (tests/monitor/test_tierwalk.py).
    ``ValueError`` when a hop has no route, a group is not held, or the walk ends on a
    NIC port of another address.

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> from topo.routes import fabric_routes
    >>> fab = build_fabric(FabricSpec(pods=2, blocks=1, cores=2, ports_per_nic=2, leaves_per_rail=2))
    >>> tiers = TierModel.of(fab)
    >>> a, b = fab.host("b0s0").nics[0], fab.host("p1.b0s1").nics[0]
    >>> walked = predict_tier_path(fab, tiers.model, fabric_routes(fab), a.ports[1].intf, a.ip, b.ip, 49152)
    >>> walked == tier_probe_path(tiers, a, 1, b, 49152)[:2]
    True
    """
    hosts = _host_port_intfs(fabric)
    start = next((p for h in fabric.hosts for n in h.nics for p in n.ports if p.intf == src_intf), None)
    if start is None:
        raise ValueError(f"no NIC port {src_intf!r} in the fabric")
    flow = Flow.of(src_ip, dst_ip, PROTO_UDP, sport, ROCE_DPORT)
    five = (src_ip, dst_ip, PROTO_UDP, sport, ROCE_DPORT)
    pinned = {sw: ports[five] for sw, ports in (pins or {}).items() if five in ports}
    links, switches, switch = [LinkDir(start.intf, start.leaf)], [], start.leaf
    for _ in range(TIER_MAX_HOPS):
        switches.append(switch)
        port = pinned[switch] if switch in pinned else _live_egress(fabric, model, routes, switch,
                                                                     flow, dst_ip)
        info = fabric.switch(switch).ports.get(port)
        if info is None:
            raise ValueError(f"{switch} has no port {port}")
        if info.kind == "host":
            intf, ip = hosts.get((switch, port), ("", ""))
            if ip != dst_ip:
                raise ValueError(f"{switch}:{port} delivers to {intf or 'no NIC'}, not {dst_ip}")
            links.append(LinkDir(switch, intf))
            return tuple(links), tuple(switches)
        links.append(_egress(fabric, switch, port))
        switch = info.peer_node
    raise ValueError(f"no delivery to {dst_ip} within {TIER_MAX_HOPS} hops (a routing loop)")


def tier_fabric_links(fabric: Fabric) -> list[LinkDir]:
    """Every link direction of a three-tier fabric: both ways between every NIC port and
    its leaf, and every switch-to-switch egress (leaf↔spine, spine↔core)."""
    out: list[LinkDir] = []
    for h in fabric.hosts:
        for n in h.nics:
            for p in n.ports:
                out += [LinkDir(p.intf, p.leaf), LinkDir(p.leaf, p.intf)]
    for sw in fabric.switches:
        for port, info in sorted(sw.ports.items()):
            if info.kind != "host":
                out.append(_egress(fabric, sw.name, port))
    return out


def _sample_sports() -> list[int]:
    return [SPORT_FIRST + (i * SPORT_STRIDE) % SPORT_RANGE for i in range(SPORT_SCAN)]


# ------------------------------------------------------------------------ planning
@dataclass(frozen=True, slots=True)
class _Candidate:
    src: NicInfo
    dst: NicInfo
    sport: int
    links: tuple[LinkDir, ...]
    switches: tuple[str, ...]
    src_intf: str = ""          # the NIC port it leaves by, arrives on (tiered plans)
    dst_intf: str = ""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.src_nic, self.dst_nic, self.sport)

    @property
    def src_nic(self) -> str:
        return self.src_intf or self.src.intf

    @property
    def dst_nic(self) -> str:
        return self.dst_intf or self.dst.intf


def _tier_candidates(tiers: TierModel) -> list[_Candidate]:
    """One candidate per (NIC port, destination NIC) and distinct predicted path, with the
    first sampled source port that takes it and that no other candidate of the same
    address pair uses (the two ports of a NIC share its address, and a prober tells paths
    apart by addresses and source port)."""
    fab = tiers.fabric
    nics = [n for h in fab.hosts for n in h.nics]
    sports = _sample_sports()
    out: list[_Candidate] = []
    for src in nics:
        for dst in nics:
            if src.intf == dst.intf:
                continue
            used: set[int] = set()
            for nic_port in range(len(src.ports)):
                seen: set[TierPath] = set()
                for sport, path in zip(sports, tiers.sport_paths(src, nic_port, dst.ip, sports=sports)):
                    if sport in used or path in seen:
                        continue
                    seen.add(path)
                    used.add(sport)
                    links, sws, arrive = tier_links(fab, src, nic_port, dst, path)
                    out.append(_Candidate(src, dst, sport, links, sws, src.ports[nic_port].intf, arrive))
    return out


def _tier_nics(tiers: TierModel) -> dict[str, ProbeNic]:
    """A :class:`ProbeNic` per NIC *port* (its interface, its leaf and that leaf's router
    MAC; the NIC's address and MAC), its prefix the route a spine of its pod takes to it."""
    fab = tiers.fabric
    routers = {s.name: s.router_mac for s in fab.leaves}
    out: dict[str, ProbeNic] = {}
    for h in fab.hosts:
        for n in h.nics:
            leaf = fab.switch(n.leaf)
            spine = next(info.peer_node for _, info in sorted(leaf.ports.items()) if info.kind == "uplink")
            route = lookup(tiers.routes[spine], n.ip)
            prefix = route.prefix if route is not None else f"{n.ip}/32"
            for p in n.ports:
                out[p.intf] = ProbeNic(h.name, n.rail, n.ip, n.mac, routers[p.leaf], p.leaf, prefix)
    return out


def _candidates(fabric: Fabric, model: FabricHashModel) -> list[_Candidate]:
    """One candidate per NIC pair and distinct predicted path (the first source port
    from :data:`SPORT_FIRST` that takes it)."""
    nics = [n for h in fabric.hosts for n in h.nics]
    out: list[_Candidate] = []
    for src in nics:
        for dst in nics:
            if src.intf == dst.intf:
                continue
            if src.leaf == dst.leaf:
                links, sws = predict_path(fabric, model, src, dst, SPORT_FIRST)
                out.append(_Candidate(src, dst, SPORT_FIRST, links, sws))
                continue
            seen: set[tuple[LinkDir, ...]] = set()
            want = _colours(model, src, dst)
            for i in range(SPORT_SCAN):
                sport = SPORT_FIRST + (i * SPORT_STRIDE) % SPORT_RANGE
                try:
                    links, sws = predict_path(fabric, model, src, dst, sport)
                except ValueError:
                    break
                if links not in seen:
                    seen.add(links)
                    out.append(_Candidate(src, dst, sport, links, sws))
                    if len(seen) >= want:
                        break
    return out


def _colours(model: FabricHashModel, src: NicInfo, dst: NicInfo) -> int:
    """How many distinct paths the hash can give ``src → dst`` (uplinks × downlinks)."""
    leaf = model.switch(src.leaf)
    gid = route_group(leaf, dst.ip, LEAF_UPLINK_GROUP)
    if gid is None or gid not in leaf.groups:
        return 0
    total = 0
    for spine in dict.fromkeys(peer_of(m) for m in leaf.group(gid).members):
        ups = sum(1 for m in leaf.group(gid).members if peer_of(m) == spine)
        sg = spine_group_of(model, spine, dst.leaf)
        total += ups * (sg[1].size if sg else 1)
    return total


def _spine_prefixes(fabric: Fabric) -> dict[str, str]:
    """NIC → the prefix spines route to it: its rail subnet, or its /32 when that subnet's
    hosts sit on several leaves (``controller.fabric.plan``)."""
    leaves: dict[str, set[str]] = defaultdict(set)
    for h in fabric.hosts:
        for n in h.nics:
            leaves[str(ipaddress.IPv4Network(f"{n.ip}/{n.prefix_len}", strict=False))].add(n.leaf)
    out: dict[str, str] = {}
    for h in fabric.hosts:
        for n in h.nics:
            net = str(ipaddress.IPv4Network(f"{n.ip}/{n.prefix_len}", strict=False))
            out[n.intf] = net if len(leaves[net]) == 1 else f"{n.ip}/32"
    return out


def _greedy(cands: list[_Candidate], links: list[LinkDir]) -> list[_Candidate]:
    """Pick candidates until every coverable link has two paths sharing nothing else."""
    chosen: list[_Candidate] = []
    by_link: dict[LinkDir, list[frozenset[LinkDir]]] = defaultdict(list)
    done: set[LinkDir] = set()
    sends: dict[str, int] = defaultdict(int)
    recvs: dict[str, int] = defaultdict(int)
    pool = [(c, frozenset(c.links)) for c in cands]     # each path's link set, built once
    while True:
        best: Optional[tuple[tuple[int, int, int], int]] = None
        for i, (c, s) in enumerate(pool):
            gain = 0
            for l in c.links:
                if l in done:
                    continue
                others = by_link[l]
                if not others:
                    gain += 1
                elif any(len(s & other) == 1 for other in others):   # they share l alone
                    gain += 2
            if gain == 0:
                continue
            score = (gain, -(sends[c.src_nic] + recvs[c.dst_nic]), -i)
            if best is None or score > best[0]:
                best = (score, i)
        if best is None:
            return chosen
        c, s = pool.pop(best[1])
        chosen.append(c)
        sends[c.src_nic] += 1
        recvs[c.dst_nic] += 1
        for l in c.links:
            by_link[l].append(s)
            if l not in done and _watched(l, by_link[l]):
                done.add(l)


def _prune(chosen: list[_Candidate], links: list[LinkDir]) -> list[_Candidate]:
    """Drop, latest first, every path the others make unnecessary."""
    def paths(cs: list[_Candidate]) -> list[ProbePath]:
        return [ProbePath("", c.src_nic, c.dst_nic, "", "", c.sport, c.links) for c in cs]
    gaps = set(coverage_gaps(paths(chosen), links))
    keep = list(chosen)
    for c in reversed(chosen):
        trial = [k for k in keep if k is not c]
        if set(coverage_gaps(paths(trial), links)) <= gaps:
            keep = trial
    return keep


def _why_uncovered(link: LinkDir, cands: list[_Candidate]) -> str:
    sets = [frozenset(c.links) for c in cands if link in c.links]
    if not sets:
        return "no probe path crosses it (no NIC pair routed over it)"
    common = frozenset.intersection(*sets) - {link}
    if common:
        shown = ", ".join(sorted(str(l) for l in common))
        return f"every probe path across it also crosses {shown}"
    return "no two probe paths across it share no other link"


# ------------------------------------------------------------------------ routes told apart
@dataclass(frozen=True, slots=True)
class _Route:
    """One plan path as the blackhole rule reads it: ends, switches, destination prefix."""

    src: str
    dst: str
    switches: tuple[str, ...]
    prefix: str


def held_routes(fabric: Fabric, prefixes: Iterable[str]) -> list[tuple[str, str]]:
    """``(switch, prefix)`` of every route a spine or core of a three-tier fabric holds for
    exactly one of ``prefixes`` (the probes' destination prefixes): a core's route to each
    rail subnet, a spine's to each of its own pod's (a spine reaches other pods by
    ``10.0.0.0/8``, a leaf a NIC port by its /32: not one prefix's route). These are what
    the faults scenario blackholes and :func:`monitor.linkrules.blackhole_rule` names.

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> fab = build_fabric(FabricSpec(pods=2, blocks=1, cores=2, ports_per_nic=2, leaves_per_rail=2))
    >>> held_routes(fab, ["10.0.2.0/24"])
    [('p1.s0', '10.0.2.0/24'), ('p1.s1', '10.0.2.0/24'), ('c0.0', '10.0.2.0/24'), ('c1.0', '10.0.2.0/24')]
    """
    table = fabric_routes(fabric)
    out: list[tuple[str, str]] = []
    wanted = sorted(set(prefixes))
    for sw in fabric.switches:
        if sw.role not in ("spine", "core"):
            continue
        for prefix in wanted:
            r = lookup(table[sw.name], prefix.split("/", 1)[0])
            if r is not None and r.prefix == prefix:
                out.append((sw.name, prefix))
    return out


def route_told_apart(paths: Sequence[_Route], switch: str, prefix: str) -> bool:
    """Whether, with ``switch``'s route to ``prefix`` gone (every path to ``prefix`` through
    it losing everything, the others arriving), the blackhole rule names that route alone:
    the failing paths (those whose source NIC sends and destination NIC receives some
    arriving path) cross it; every other switch they all cross is crossed by an arriving
    path to ``prefix``; such a path exists; and ``switch`` forwards some arriving path.
    The same reading as :func:`monitor.linkrules.blackhole_rule`
    (tests/monitor/test_probes_routes.py runs the rule itself)."""
    return _RouteView.of(paths, switch, prefix).gap() == 0


@dataclass(frozen=True, slots=True)
class _RouteView:
    """What the blackhole rule reads of a set of paths for one held route (``switch``,
    ``prefix``): the paths through it (``dead``, in path order) and what the others
    (the arriving ones) send, receive and cross. :meth:`gap` answers for these paths, and
    ``gap(extra)`` for them plus one more path to ``prefix`` without building anything:
    the route pass asks that of every candidate, so it costs the dead paths only."""

    switch: str
    dead: tuple[_Route, ...]
    sending: frozenset[str]
    arriving: frozenset[str]
    used: frozenset[str]             # switches of the arriving paths to ``prefix``
    forwarding: frozenset[str]       # switches of every arriving path
    to_prefix: bool                  # some arriving path goes to ``prefix``

    @classmethod
    def of(cls, paths: Sequence[_Route], switch: str, prefix: str) -> "_RouteView":
        """The view of ``paths`` for ``switch``'s route to ``prefix``."""
        dead = tuple(p for p in paths if p.prefix == prefix and switch in p.switches)
        ok = [p for p in paths if not (p.prefix == prefix and switch in p.switches)]
        to_p = [p for p in ok if p.prefix == prefix]
        return cls(switch, dead, frozenset(p.src for p in ok), frozenset(p.dst for p in ok),
                   frozenset(s for p in to_p for s in p.switches),
                   frozenset(s for p in ok for s in p.switches), bool(to_p))

    def gap(self, extra: Optional[_Route] = None) -> int:
        """How far the route is from being told apart (0: :func:`route_told_apart`; the
        greedy pass of :func:`_route_pass` lowers the sum), with ``extra`` (a path to this
        view's prefix) added to the paths when given."""
        dead, sending, arriving = self.dead, self.sending, self.arriving
        used, forwarding, to_prefix = self.used, self.forwarding, self.to_prefix
        if extra is not None:
            if self.switch in extra.switches:
                dead = dead + (extra,)
            else:
                sending, arriving = sending | {extra.src}, arriving | {extra.dst}
                used, forwarding = used | set(extra.switches), forwarding | set(extra.switches)
                to_prefix = True
        fail = [p for p in dead if p.src in sending and p.dst in arriving]
        if fail and to_prefix:
            common = [s for s in fail[0].switches if all(s in p.switches for p in fail)]
            if [s for s in common if s not in used and s in forwarding] == [self.switch]:
                return 0
        if not dead:
            return 20
        gap = 2 * (len(dead) - len(fail)) + (10 if not fail else 0)
        rows = fail or dead
        common = [s for s in rows[0].switches if all(s in p.switches for p in rows)]
        gap += sum(1 for s in common if s != self.switch and s not in used)
        return gap + (1 if not used else 0)


def _route_gap(paths: Sequence[_Route], switch: str, prefix: str) -> int:
    """How far ``switch``'s route to ``prefix`` is from being told apart (0: it is; the
    greedy pass of :func:`_route_pass` lowers the sum)."""
    return _RouteView.of(paths, switch, prefix).gap()


def _route_pass(chosen: list[_Candidate], cands: list[_Candidate], prefix_of: Mapping[str, str],
                held: Sequence[tuple[str, str]]) -> list[_Candidate]:
    """Add candidates, greedily, until every route of ``held`` is told apart
    (:func:`route_told_apart`) or no candidate brings one nearer; ``prefix_of``: NIC port
    → its destination prefix. Each round builds one :class:`_RouteView` per held route and
    scores every candidate against the views of its prefix (the pod2 fabric's plan: 7 s →
    well under 1 s on the 2-core machine, the same plan)."""
    def row(c: _Candidate) -> _Route:
        return _Route(c.src_nic, c.dst_nic, c.switches, prefix_of[c.dst_nic])

    rows = [row(c) for c in chosen]
    out = list(chosen)
    keys = {c.key for c in chosen}
    pool = [(c, row(c)) for c in cands if c.key not in keys]
    by_prefix: dict[str, list[str]] = defaultdict(list)
    for sw, prefix in held:
        by_prefix[prefix].append(sw)
    sends: dict[str, int] = defaultdict(int)
    for c in out:
        sends[c.src_nic] += 1
        sends[c.dst_nic] += 1
    while True:
        views = {p: [_RouteView.of(rows, sw, p) for sw in sws] for p, sws in by_prefix.items()}
        gaps = {p: sum(v.gap() for v in vs) for p, vs in views.items()}
        best: Optional[tuple[tuple[int, int, int], int]] = None
        for i, (c, r) in enumerate(pool):
            if not gaps.get(r.prefix):
                continue
            gain = gaps[r.prefix] - sum(v.gap(r) for v in views[r.prefix])
            if gain <= 0:
                continue
            score = (gain, -(sends[c.src_nic] + sends[c.dst_nic]), -i)
            if best is None or score > best[0]:
                best = (score, i)
        if best is None:
            return out
        c, r = pool.pop(best[1])
        out.append(c)
        rows.append(r)
        sends[c.src_nic] += 1
        sends[c.dst_nic] += 1


def plan_probes(fabric: Fabric, model: Optional[FabricHashModel] = None,
                rate_pps: float = DEFAULT_RATE_PPS, tell_routes: bool = True) -> ProbePlan:
    """The probe plan of ``fabric`` under ``model`` (default: the model the controller
    publishes for it, :func:`controller.fabric.detours.fabric_hash_model`).

    >>> from topo.model import build_fabric
    >>> p = plan_probes(build_fabric()).paths[0]
    >>> p.name, len(p.links), p.links[0].src == p.src_nic
    ('p0', 4, True)
    """
    if rate_pps <= 0:
        raise ValueError(f"rate_pps must be positive, got {rate_pps}")
    if is_tiered(fabric):
        tiers = TierModel.of(fabric)
        if model is not None and model != tiers.model:
            raise ValueError("a fabric with a core tier is probed with its own published model "
                             "(controller.fabric.tiers.tier_hash_model), not another one")
        links = tier_fabric_links(fabric)
        cands = _tier_candidates(tiers)
        nics = _tier_nics(tiers)
        restarts = TIER_RESTARTS
    else:
        model = model if model is not None else fabric_hash_model(fabric)
        links = fabric_links(fabric)
        cands = _candidates(fabric, model)
        prefixes = _spine_prefixes(fabric)
        routers = {s.name: s.router_mac for s in fabric.leaves}
        nics = {n.intf: ProbeNic(h.name, n.rail, n.ip, n.mac, routers[n.leaf], n.leaf, prefixes[n.intf])
                for h in fabric.hosts for n in h.nics}
        restarts = RESTARTS
    chosen: list[_Candidate] = []
    for r in range(restarts):         # greedy from several starts: keep the smallest plan
        start = (r * len(cands)) // restarts
        trial = _prune(_greedy(cands[start:] + cands[:start], links), links)
        if not chosen or len(trial) < len(chosen):
            chosen = trial
    if tell_routes and is_tiered(fabric):     # + paths that tell each core/spine route apart
        chosen = _route_pass(chosen, cands, {k: n.prefix for k, n in nics.items()},
                             held_routes(fabric, {n.prefix for n in nics.values()}))
    chosen.sort(key=lambda c: (c.src_nic, c.dst_nic, c.sport))
    paths = tuple(ProbePath(f"p{i}", c.src_nic, c.dst_nic, c.src.ip, c.dst.ip, c.sport, c.links,
                            c.switches) for i, c in enumerate(chosen))
    gaps = coverage_gaps(paths, links)
    return ProbePlan(paths, nics, {p.name: nics[p.dst_nic].prefix for p in paths},
                     {str(l): _why_uncovered(l, cands) for l in gaps}, float(rate_pps))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m monitor.probes --fabric build/topology.json --out build/probe-plan.json
    [--hash-model FILE] [--rate-pps 10]``: write the plan, print its size; exit 2 on bad
    input."""
    ap = argparse.ArgumentParser(prog="python -m monitor.probes",
                                 description="Plan RoCEv2 probe paths over every link.")
    ap.add_argument("--fabric", required=True, type=Path, help="topology file (python -m topo build)")
    ap.add_argument("--hash-model", type=Path, default=None,
                    help="published hash model JSON (default: the fabric's own)")
    ap.add_argument("--rate-pps", type=float, default=DEFAULT_RATE_PPS, help="probes/s per path")
    ap.add_argument("--out", required=True, type=Path, help="plan file to write")
    args = ap.parse_args(argv)
    try:
        fabric = load_fabric(args.fabric)
        model = None
        if args.hash_model is not None:
            try:
                model = FabricHashModel.from_json(args.hash_model.read_text())
            except OSError as exc:
                raise ValueError(f"{args.hash_model}: {exc.strerror or exc}") from None
        plan = plan_probes(fabric, model, args.rate_pps)
    except ValueError as exc:
        print(f"monitor.probes: error: {exc}", file=sys.stderr)
        return 2
    plan.save(args.out)
    print(f"{args.out}: {len(plan.paths)} paths, {plan.probes_per_s():g} probes/s, "
          f"{len(plan.uncovered)} link(s) not watched by two disjoint paths")
    for link, why in plan.uncovered.items():
        print(f"  {link}: {why}")
    return 0


__all__ = ["DEFAULT_RATE_PPS", "Pins", "ProbeNic", "ProbePlan", "coverage_gaps", "fabric_links", "load_plan",
           "held_routes", "load_plan_text", "main", "plan_probes", "predict_path", "predict_tier_path",
           "route_told_apart"]


if __name__ == "__main__":
    raise SystemExit(main())
