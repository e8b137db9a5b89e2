"""The fabric plan: every entry ``p4src/fabric.p4`` needs on every switch of a topology,
as pure data (:class:`SwitchPlan`, no connection). ``controller.fabric_setup`` writes it.

What is planned on every switch (names of ``p4src/README.md``):

* ``switch_info.config`` default ``set_switch(switch_id, role, seed)``: role 0 leaf, 1
  spine; ``switch_id`` from ``SwitchInfo.switch_id`` when the topology has it, else the
  address plan (leaf ``1 + b·R + r``, spine ``200 + k``); seed ``SwitchInfo.ecmp_seed``.
* ``ecmp.algorithm`` default ``use_crc16`` / ``use_crc32`` (``SwitchInfo.hash_algorithm``;
  without it crc16 on leaves, crc32 on spines: see the README on polarisation).
* ``admission.config`` default ``set_queue_limit(64)``: the egress queue limit
  (:mod:`controller.fabric.admission`; ``queue_limit_pkts=None`` writes none).
* ``qos.dscp_to_priority``: :data:`~controller.fabric.qos.DSCP_TO_PRIORITY` (RoCE data
  DSCP 26 → priority 3, CNP DSCP 48 → priority 6).
* ``forwarding.nexthops``: one next hop per front-panel port, **id = port number**,
  ``route_to(port, own port MAC, peer MAC)`` (peer MAC: the host NIC's MAC or the peer
  switch port's MAC).
* ``forwarding.routes``:
  - leaf: a /32 per attached host NIC → its port's next hop; :data:`FABRIC_PREFIX`
    (10.0.0.0/8, the whole address plan) → ECMP group ``LEAF_UPLINK_GROUP`` over the
    uplinks, in port order (member indices 0..n−1). A leaf without uplinks has no group.
    In a fabric where some spine has no link to some leaf, that leaf's prefixes → a
    detour group without that spine (:mod:`controller.fabric.detours`). Each subnet
    whose every NIC is cabled to the leaf (its rail/block subnet; a leaf pair's on both)
    → ``drop`` (longer than 10.0.0.0/8, shorter than the /32s): an address of it that
    no NIC holds (a free one, the gateway's) is dropped there instead of going up to a
    spine that routes the subnet back down, a loop until the TTL ran out (sec-red-s47).
    In a fabric with a core tier too.
  - spine: for each leaf reachable on its downlinks, each rail/block subnet
    (10.b.r.0/24) whose hosts all sit on that leaf → the next hop when one link leads
    there, else an ECMP group over the links (groups numbered from 1 in leaf-name order,
    member indices allocated consecutively). A subnet split over several leaves gets
    /32 routes per host instead.
  - a fabric with a core tier (pods; any switch of role ``core``, role code 2): the
    routes of every leaf, spine and core are those of :func:`topo.routes.fabric_routes`
    (spine: its pod's subnets down, ``10.0.0.0/8`` up to every core link; core: each
    pod's subnets to its links to that pod's spine), each multi-port route to a group of
    :func:`~controller.fabric.ecmp.route_groups` (numbered as
    :func:`controller.fabric.tiers.tier_hash_model` publishes them); no detours.
* ``ecmp.groups`` / ``ecmp.members``: as above (the one rule:
  :func:`controller.fabric.ecmp.ecmp_groups`); members point to next hops (ports).
* ``arp.arp_proxy`` (leaves): every gateway IP of an attached host NIC, and every host IP
  of the subnets attached to this leaf (proxy ARP: fabric.p4 has no L2 switching, so a
  host reaching a neighbour of its own /24 is answered with the router MAC and routed)
  → ``SwitchInfo.router_mac``.
* ``FabricEgress.port_macs``: every port → its own MAC (``PortInfo.mac``).
* ``FabricEgress.ecn.thresholds``: every port → ``EcnConfig`` (default RED kmin 8, kmax
  32 packets, pmax 51/255 ≈ 20 %; ``kmax_pkts=None`` means a plain threshold).
* ``FabricIngress.pfc.thresholds``: every port → ``PfcConfig`` (default XOFF at 32, XON
  at 16 packets, pause 65535 quanta); ``None`` disables PFC.
* dynamic thresholds instead (``thresholds=`` a
  :class:`~p4src.buffermodel.DynamicThresholds`): ``FabricIngress.buffer.config`` (the
  pool), every port ``set_dynamic_thresholds`` / ``set_ecn_dynamic``, and the alphas per
  priority (:func:`~controller.fabric.qos.dynamic_entries`); ``ecn``/``pfc`` are then
  unused.
* ``FabricEgress.alarms.config`` and ``FabricIngress.elephants.config``: every port
  whose peer is a switch → ``AlarmLevels`` / ``ElephantConfig`` of :mod:`p4src.alarmmodel`
  (defaults in :mod:`controller.fabric.monitoring`); ``None`` turns either off.
* ``FabricIngress.source_guard.ports`` / ``.sources`` (leaves; ``source_guard=True``, the
  default): every port whose peer is not a switch is guarded, and on it only the
  addresses of the NICs cabled there are allowed as IPv4 sources (a dual-port NIC's on
  both of its ports): :mod:`controller.fabric.sourceguard`. ``source_guard=False`` writes
  none (the switch then forwards any source, as before the guard).
* ``FabricIngress.arp.punt_meter`` (every switch, every port; ``arp_punt``, default
  :data:`~controller.fabric.puntguard.DEFAULT_ARP_PUNT`): the port's ARP punts to the
  controller policed, 100 packets/s with a burst of 100 (:mod:`controller.fabric.puntguard`);
  ``arp_punt=None`` writes none (every ARP punt reaches the controller).
* Clone sessions ``100 + p`` → port ``p`` for every port, and ``255`` → the CPU port.

Example::

    >>> from topo.model import build_fabric
    >>> plan = plan_fabric(build_fabric())["b0r0l0"]
    >>> plan.role, plan.groups[1].members
    ('leaf', ('s0', 's1'))
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Optional

from controller.fabric.ecmp import (LEAF_UPLINK_GROUP, EcmpGroup, algorithm_of, ecmp_groups,
                                    group_entries, groups_hash_model, route_groups, spine_targets)
from controller.fabric.admission import QUEUE_LIMIT_PKTS, admission_entry
from controller.fabric.detours import fabric_detours
from controller.fabric.entries import (T_ROUTES, Entry, algorithm_entry, arp_entry, drop_route_entry,
                                       nexthop_entry, port_mac_entry, route_entry,
                                       switch_info_entry)
from controller.fabric.monitoring import (DEFAULT_ALARM_LEVELS, DEFAULT_ELEPHANTS, alarm_entry,
                                          elephant_entry)
from controller.fabric.qos import (EcnConfig, PfcConfig, dynamic_entries, ecn_entry, pfc_entry,
                                  qos_entries)
from controller.fabric.puntguard import DEFAULT_ARP_PUNT, MeterSetting, PuntPolicer, punt_meters
from controller.fabric.sourceguard import entries_of, guarded_sources
from controller.fabric.topology import FabricLike, NicLike, SwitchLike, nic_attachments, nic_leaf_sets
from p4src.alarmmodel import AlarmLevels, ElephantConfig
from p4src.buffermodel import DynamicThresholds
from p4src.hashmodel import RouteModel, SwitchHashModel
from topo.routes import fabric_routes

CPU_PORT = 255
CPU_CLONE_SESSION = 255
PFC_CLONE_SESSION_BASE = 100
ROLE_CODES = {"leaf": 0, "spine": 1, "core": 2}
FABRIC_PREFIX = "10.0.0.0/8"


@dataclass(slots=True)
class SwitchPlan:
    """Everything one switch gets: table entries (in write order), ECMP groups, clone
    sessions (session id → ports) and meter cells (written with MODIFY after the entries).

    >>> from controller.fabric.entries import T_ROUTES
    >>> SwitchPlan("s0", 200, "spine", 7, "crc32").count(T_ROUTES)
    0
    """

    switch: str
    switch_id: int
    role: str
    seed: int
    algorithm: str
    entries: list[Entry] = field(default_factory=list)
    groups: dict[int, EcmpGroup] = field(default_factory=dict)
    clone_sessions: dict[int, tuple[int, ...]] = field(default_factory=dict)
    routes: list[RouteModel] = field(default_factory=list)   # routes to detour groups
    meters: list[MeterSetting] = field(default_factory=list)

    def count(self, table: str) -> int:
        """Number of non-default entries planned for ``table``."""
        return sum(1 for e in self.entries if e.table == table and not e.default)

    def of(self, table: str) -> list[Entry]:
        """The planned non-default entries of ``table``."""
        return [e for e in self.entries if e.table == table and not e.default]

    def hash_model(self) -> SwitchHashModel:
        """This switch's part of the published hash model."""
        return groups_hash_model(self.switch, self.algorithm, self.seed, self.groups, self.routes)


def _subnet(ip: str, prefix_len: int) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(f"{ip}/{prefix_len}", strict=False)


def _index_in_name(name: str) -> int:
    """The trailing number of a name: ``s3`` → 3, ``b0r1l2`` → 2 (0 when none)."""
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else 0


def switch_id_of(sw: SwitchLike, fabric: FabricLike) -> int:
    """The fabric switch id: ``sw.switch_id`` when the topology gives one, else the
    address plan of ``p4src/README.md`` (leaf ``1 + b·R + r`` with R rails, a second
    leaf of the same rail and block adding ``k·B·R``; spine ``200 + k``).

    >>> class S: name, role, block, rail = "s1", "spine", None, None
    >>> class F: switches, hosts = [S()], []
    >>> switch_id_of(S(), F())
    201
    """
    given = getattr(sw, "switch_id", None)
    if given is not None:
        return int(given)
    if sw.role == "spine":
        return 200 + _index_in_name(sw.name)
    leaves = [s for s in fabric.switches if s.role == "leaf"]
    rails = 1 + max((s.rail or 0) for s in leaves)
    blocks = 1 + max((s.block or 0) for s in leaves)
    k = _index_in_name(sw.name)
    return 1 + (k * blocks + (sw.block or 0)) * rails + (sw.rail or 0)


class _Planner:
    """Builds the :class:`SwitchPlan` of every switch of one fabric.

    Every per-NIC fact is indexed once here (NIC by leaf port, subnets, the leaves of
    each subnet): a plan per switch never scans the fabric's NICs (at 64K GPUs that scan,
    parsing addresses, took ~1 s per switch).
    """

    def __init__(self, fabric: FabricLike, ecn: Optional[EcnConfig],
                 pfc: Optional[PfcConfig], alarms: Optional[AlarmLevels] = None,
                 elephants: Optional[ElephantConfig] = None,
                 thresholds: Optional[DynamicThresholds] = None,
                 source_guard: bool = True,
                 arp_punt: Optional[PuntPolicer] = DEFAULT_ARP_PUNT,
                 queue_limit_pkts: Optional[int] = QUEUE_LIMIT_PKTS) -> None:
        self.fabric, self.ecn, self.pfc = fabric, ecn, pfc
        self.queue_limit = None if queue_limit_pkts is None else admission_entry(queue_limit_pkts)
        self.source_guard = source_guard
        self.arp_punt = arp_punt
        self.thresholds = thresholds
        self.alarms, self.elephants = alarms, elephants
        self.by_name = {s.name: s for s in fabric.switches}
        self.nics = [(h, n) for h in fabric.hosts for n in h.nics]
        self.nic_at: dict[tuple[str, int], NicLike] = {}
        self.leaf_nics: dict[str, list[tuple[NicLike, int]]] = {}   # leaf -> (NIC, its port)
        self.subnet_ips: dict[ipaddress.IPv4Network, list[str]] = {}
        self.subnet_leaves: dict[ipaddress.IPv4Network, set[str]] = {}
        self.subnet_nics: dict[ipaddress.IPv4Network, list[NicLike]] = {}
        self.nic_subnet: dict[int, ipaddress.IPv4Network] = {}
        self.leaf_sets = nic_leaf_sets(fabric)          # leaf pairs of dual-port NICs
        for _, nic in self.nics:
            net = _subnet(nic.ip, nic.prefix_len)
            for leaf, leaf_port in nic_attachments(nic):
                self.nic_at.setdefault((leaf, leaf_port), nic)
                self.leaf_nics.setdefault(leaf, []).append((nic, leaf_port))
                self.subnet_leaves.setdefault(net, set()).add(leaf)
            self.nic_subnet[id(nic)] = net
            self.subnet_ips.setdefault(net, []).append(nic.ip)
            self.subnet_nics.setdefault(net, []).append(nic)
        for nics in self.subnet_nics.values():
            nics.sort(key=lambda n: ipaddress.IPv4Address(n.ip))
        # a fabric with a core tier (pods): every switch's routes and groups are those of
        # topo.routes (the one statement of the three-tier rule); no detours there
        self.tiered = any(s.role == "core" for s in fabric.switches)
        self.tier_routes = fabric_routes(fabric) if self.tiered else {}  # type: ignore[arg-type]
        self.detours = {} if self.tiered else fabric_detours(fabric)   # spines missing a leaf

    def peer_mac(self, sw: SwitchLike, port: int) -> str:
        p = sw.ports[port]
        peer = self.by_name.get(p.peer_node)
        if peer is not None:
            return peer.ports[p.peer_port].mac
        nic = self.nic_at.get((sw.name, port))
        if nic is not None:
            return nic.mac
        raise ValueError(f"{sw.name} port {port}: no switch or host NIC {p.peer_node!r} "
                         f"is its peer")

    def plan(self, sw: SwitchLike) -> SwitchPlan:
        role = sw.role
        if role not in ROLE_CODES:
            raise ValueError(f"{sw.name}: unknown role {role!r} (leaf, spine or core)")
        if role == "core" and not self.tiered:
            raise ValueError(f"{sw.name}: role core in a fabric without a core tier")
        algorithm = algorithm_of(sw)
        plan = SwitchPlan(sw.name, switch_id_of(sw, self.fabric), role, int(sw.ecmp_seed),
                          algorithm)
        add = plan.entries.append
        add(switch_info_entry(plan.switch_id, ROLE_CODES[role], plan.seed))
        add(algorithm_entry(algorithm))
        ports = sorted(sw.ports)
        for p in ports:
            add(nexthop_entry(p, sw.ports[p].mac, self.peer_mac(sw, p)))
        if self.tiered:
            self._tiered(sw, plan)
            if role == "leaf":
                self._proxy_arp(sw, plan)
                self._own_subnets(sw, plan)
        elif role == "leaf":
            self._leaf(sw, plan)
            self._proxy_arp(sw, plan)
            self._own_subnets(sw, plan)
        else:
            self._spine(sw, plan)
        for g in plan.groups.values():
            plan.entries.extend(group_entries(g))
        if self.source_guard:
            plan.entries.extend(entries_of(guarded_sources(
                sw, self.by_name, self.leaf_nics.get(sw.name, []))))
        plan.entries.extend(qos_entries())
        if self.queue_limit is not None:
            add(self.queue_limit)
        if self.thresholds is not None:
            plan.entries.extend(dynamic_entries(ports, self.thresholds))
        for p in ports:
            add(port_mac_entry(p, sw.ports[p].mac))
            if self.thresholds is None and self.ecn is not None:
                add(ecn_entry(p, self.ecn))
            if self.thresholds is None and self.pfc is not None:
                add(pfc_entry(p, self.pfc))
            if sw.ports[p].peer_node in self.by_name:
                if self.alarms is not None:
                    add(alarm_entry(p, self.alarms))
                if self.elephants is not None:
                    add(elephant_entry(p, self.elephants))
        plan.clone_sessions = {PFC_CLONE_SESSION_BASE + p: (p,) for p in ports}
        plan.clone_sessions[CPU_CLONE_SESSION] = (CPU_PORT,)
        if self.arp_punt is not None:
            plan.meters = punt_meters(ports, self.arp_punt)
        return plan

    def _leaf(self, sw: SwitchLike, plan: SwitchPlan) -> None:
        attached = self.leaf_nics.get(sw.name, [])
        for nic, leaf_port in sorted(attached, key=lambda a: ipaddress.IPv4Address(a[0].ip)):
            plan.entries.append(route_entry(f"{nic.ip}/32", nexthop=leaf_port))
        plan.groups.update(ecmp_groups(sw, self.by_name))
        if LEAF_UPLINK_GROUP in plan.groups:
            plan.entries.append(route_entry(FABRIC_PREFIX, group=LEAF_UPLINK_GROUP))
        for gid, detour in self.detours.get(sw.name, {}).items():
            plan.groups[gid] = detour.group
            for prefix in detour.prefixes:
                plan.entries.append(route_entry(prefix, group=gid))
                plan.routes.append(RouteModel(prefix, gid))

    def _tiered(self, sw: SwitchLike, plan: SwitchPlan) -> None:
        """Routes and groups of any role in a fabric with a core tier: those of
        :func:`topo.routes.fabric_routes`, grouped by :func:`route_groups` (the numbering
        :func:`controller.fabric.tiers.tier_hash_model` publishes); every route to a group
        is published in the switch's hash model."""
        routes = self.tier_routes[sw.name]
        groups, routed = route_groups(sw, routes)
        plan.groups.update(groups)
        gid_of = dict(routed)
        for r in routes:
            if r.prefix in gid_of and len(r.ports) > 1:
                plan.entries.append(route_entry(r.prefix, group=gid_of[r.prefix]))
                plan.routes.append(RouteModel(r.prefix, gid_of[r.prefix]))
            else:
                plan.entries.append(route_entry(r.prefix, nexthop=r.ports[0]))

    def _own_subnets(self, sw: SwitchLike, plan: SwitchPlan) -> None:
        """A leaf's drop route for each subnet whose every NIC it is cabled to (module
        docstring): its free addresses and its gateway's are nobody's. Without it they
        matched ``10.0.0.0/8`` up and the spine's subnet route down again, a loop until the
        TTL ran out (sec-red-s47: 100 datagrams to a free address, 6,488 frames)."""
        attached = self.leaf_nics.get(sw.name, [])
        routed = {e.match["hdr.ipv4.dst_addr"] for e in plan.entries if e.table == T_ROUTES}
        for net in sorted({self.nic_subnet[id(n)] for n, _ in attached}):
            mine = all(any(leaf == sw.name for leaf, _ in nic_attachments(n))
                       for n in self.subnet_nics[net])
            if mine and str(net) not in routed:
                plan.entries.append(drop_route_entry(str(net)))

    def _proxy_arp(self, sw: SwitchLike, plan: SwitchPlan) -> None:
        """A leaf's proxy ARP entries (module docstring)."""
        attached = self.leaf_nics.get(sw.name, [])
        subnets = {self.nic_subnet[id(n)] for n, _ in attached}
        answered = {n.gateway_ip for n, _ in attached}
        for net in subnets:
            answered.update(self.subnet_ips[net])
        for ip in sorted(answered, key=ipaddress.IPv4Address):
            plan.entries.append(arp_entry(ip, sw.router_mac))

    def _spine(self, sw: SwitchLike, plan: SwitchPlan) -> None:
        groups = ecmp_groups(sw, self.by_name, leaf_sets=self.leaf_sets)
        plan.groups.update(groups)
        by_ports = {g.ports: g.group_id for g in groups.values()}
        targets: dict[str, dict[str, int]] = {}      # leaf -> route action params
        for leaves, ports in spine_targets(sw, self.by_name, frozenset(), self.leaf_sets):
            action = ({"nexthop": ports[0]} if len(ports) == 1
                      else {"group": by_ports[tuple(ports)]})
            for leaf in leaves:
                targets[leaf] = action
        for net in sorted(self.subnet_leaves):
            # the NICs' destinations: one leaf, or the leaf pair of a dual-port NIC
            dests = {nic.ip: self._target(nic, targets) for nic in self.subnet_nics[net]}
            if len(set(map(repr, dests.values()))) == 1 and None not in dests.values():
                plan.entries.append(route_entry(str(net), **next(iter(dests.values()))))
                continue
            for nic in self.subnet_nics[net]:
                if dests[nic.ip] is not None:
                    plan.entries.append(route_entry(f"{nic.ip}/32", **dests[nic.ip]))

    @staticmethod
    def _target(nic: NicLike, targets: dict[str, dict[str, int]]) -> Optional[dict[str, int]]:
        """The route action towards ``nic``: that of its first leaf the spine reaches."""
        for leaf, _ in nic_attachments(nic):
            if leaf in targets:
                return targets[leaf]
        return None


def plan_fabric(fabric: FabricLike, ecn: Optional[EcnConfig] = EcnConfig(),
                pfc: Optional[PfcConfig] = PfcConfig(),
                alarms: Optional[AlarmLevels] = DEFAULT_ALARM_LEVELS,
                elephants: Optional[ElephantConfig] = DEFAULT_ELEPHANTS,
                thresholds: Optional[DynamicThresholds] = None,
                source_guard: bool = True,
                arp_punt: Optional[PuntPolicer] = DEFAULT_ARP_PUNT,
                queue_limit_pkts: Optional[int] = QUEUE_LIMIT_PKTS) -> dict[str, SwitchPlan]:
    """The plan of every switch, by name (no connection needed). ``source_guard=False``
    leaves the source guard's tables empty; ``arp_punt=None`` writes no ARP punt meter
    (every ARP punt reaches the controller, as before the policer); ``queue_limit_pkts``
    is the egress queue limit (:mod:`controller.fabric.admission`; None writes none: the
    targets' queues tail-drop and leave the PFC counts behind, as before) (module docstring).

    >>> from topo.model import build_fabric
    >>> from controller.fabric.entries import T_ROUTES
    >>> plan_fabric(build_fabric())["s0"].count(T_ROUTES) > 0
    True
    """
    planner = _Planner(fabric, ecn, pfc, alarms, elephants, thresholds, source_guard, arp_punt,
                       queue_limit_pkts)
    return {sw.name: planner.plan(sw) for sw in fabric.switches}


__all__ = [
    "CPU_CLONE_SESSION", "CPU_PORT", "FABRIC_PREFIX", "PFC_CLONE_SESSION_BASE", "ROLE_CODES",
    "SwitchPlan", "plan_fabric", "switch_id_of",
]
