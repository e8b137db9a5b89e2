"""Program a whole fabric from its topology: the install part of GOR.

From a topology (``topo.model.Fabric``: ``fabric.switches`` and ``fabric.hosts``, see the
topology contract) this module computes, per switch, every entry ``p4src/fabric.p4``
needs (a :class:`SwitchPlan`, pure data, no connection) and writes it through P4Runtime
(:class:`FabricProgrammer`). It also publishes the ECMP hash model of the fabric *as
programmed* (``hash_model()``), so TCCL predicts exactly what the switches do;
:func:`fabric_hash_model` gives the same model from the groups alone (no table entry
built: ~0.1 s for a 64K-GPU pod), for whoever needs only the model (the simulator,
benchmarks). Both read the groups from one rule, :func:`ecmp_groups`.

What is written on every switch (names of ``p4src/README.md``):

* ``switch_info.config`` default ``set_switch(switch_id, role, seed)``: role 0 leaf, 1
  spine; ``switch_id`` from ``SwitchInfo.switch_id`` when the topology has it, else the
  address plan (leaf ``1 + b·R + r``, spine ``200 + k``); seed ``SwitchInfo.ecmp_seed``.
* ``ecmp.algorithm`` default ``use_crc16`` / ``use_crc32`` (``SwitchInfo.hash_algorithm``;
  without it crc16 on leaves, crc32 on spines: see the README on polarisation).
* ``qos.dscp_to_priority``: :data:`DSCP_TO_PRIORITY` (RoCE data DSCP 26 → priority 3,
  CNP DSCP 48 → priority 6).
* ``forwarding.nexthops``: one next hop per front-panel port, **id = port number**,
  ``route_to(port, own port MAC, peer MAC)`` (peer MAC: the host NIC's MAC or the peer
  switch port's MAC).
* ``forwarding.routes``:
  - leaf: a /32 per attached host NIC → its port's next hop; :data:`FABRIC_PREFIX`
    (10.0.0.0/8, the whole address plan) → ECMP group :data:`LEAF_UPLINK_GROUP` over the
    uplinks, in port order (member indices 0..n−1). A leaf without uplinks has no group.
  - spine: for each leaf reachable on its downlinks, each rail/block subnet
    (10.b.r.0/24) whose hosts all sit on that leaf → the next hop when one link leads
    there, else an ECMP group over the links (groups numbered from 1 in leaf-name order,
    member indices allocated consecutively). A subnet split over several leaves gets
    /32 routes per host instead.
* ``ecmp.groups`` / ``ecmp.members``: as above; members point to next hops (ports).
* ``arp.arp_proxy`` (leaves): every gateway IP of an attached host NIC, and every host IP
  of the subnets attached to this leaf (proxy ARP: fabric.p4 has no L2 switching, so a
  host reaching a neighbour of its own /24 is answered with the router MAC and routed)
  → ``SwitchInfo.router_mac``.
* ``FabricEgress.port_macs``: every port → its own MAC (``PortInfo.mac``).
* ``FabricEgress.ecn.thresholds``: every port → :class:`EcnConfig` (default RED
  kmin 8, kmax 32 packets, pmax 51/255 ≈ 20 %; ``kmax_pkts=None`` means a plain threshold).
* ``FabricIngress.pfc.thresholds``: every port → :class:`PfcConfig` (default XOFF at 32,
  XON at 16 packets, pause 65535 quanta); ``None`` disables PFC.
* Clone sessions ``100 + p`` → port ``p`` for every port, and ``255`` → the CPU port.

Member names of the published hash model: the peer node of the member's link (``"s0"``,
``"b0r1l0"``), with ``"#<port>"`` appended when the group has several links to that
peer. :meth:`FabricProgrammer.member_ports` maps them back to egress ports.

Example::

    >>> from topo.model import load_fabric                            # doctest: +SKIP
    >>> fp = FabricProgrammer(load_fabric("build/topology.json"),
    ...                       "build/fabric.p4info.txtpb", "build/fabric.json")  # doctest: +SKIP
    >>> fp.connect_all(); fp.push_pipelines(); fp.install_all()      # doctest: +SKIP
    >>> fp.hash_model().switch("b0r0l0").groups[1].members           # doctest: +SKIP
    ('s0', 's1')
    >>> fp.close()                                                     # doctest: +SKIP
"""
from __future__ import annotations

import ipaddress
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Mapping, Optional, Protocol, Sequence, TypeVar, Union

import grpc
from p4.v1 import p4runtime_pb2

from controller.p4rt import (P4RuntimeClientError, SwitchConnection, clone_session,
                             load_p4info, update)
from controller.p4rt.codec import Value
from p4src.hashmodel import FabricHashModel, GroupModel, SwitchHashModel

CPU_PORT = 255
CPU_CLONE_SESSION = 255
PFC_CLONE_SESSION_BASE = 100
ROLE_CODES = {"leaf": 0, "spine": 1}
DEFAULT_ALGORITHMS = {"leaf": "crc16", "spine": "crc32"}
DSCP_TO_PRIORITY: dict[int, int] = {26: 3, 48: 6}
"""RoCE data (DSCP 26, AF31) → priority 3; CNP (DSCP 48, CS6) → priority 6."""
FABRIC_PREFIX = "10.0.0.0/8"
LEAF_UPLINK_GROUP = 1
WRITE_BATCH = 500

T_SWITCH = "FabricIngress.switch_info.config"
T_ALGORITHM = "FabricIngress.ecmp.algorithm"
T_ARP = "FabricIngress.arp.arp_proxy"
T_QOS = "FabricIngress.qos.dscp_to_priority"
T_ROUTES = "FabricIngress.forwarding.routes"
T_NEXTHOPS = "FabricIngress.forwarding.nexthops"
T_GROUPS = "FabricIngress.ecmp.groups"
T_MEMBERS = "FabricIngress.ecmp.members"
T_PORT_MACS = "FabricEgress.port_macs"
T_ECN = "FabricEgress.ecn.thresholds"
T_PFC = "FabricIngress.pfc.thresholds"


# --------------------------------------------------------------------------- the topology contract
class PortLike(Protocol):
    """What is read of a ``topo.model.PortInfo``."""

    port: int
    peer_node: str
    peer_port: int
    kind: str
    mac: str


class SwitchLike(Protocol):
    """What is read of a ``topo.model.SwitchInfo`` (``switch_id`` is optional)."""

    name: str
    role: str
    block: Optional[int]
    rail: Optional[int]
    device_id: int
    grpc_addr: str
    election_id: Any
    ports: Mapping[int, PortLike]
    router_mac: str
    ecmp_seed: int
    hash_algorithm: str


class NicLike(Protocol):
    """What is read of a ``topo.model.NicInfo``."""

    rail: int
    ip: str
    prefix_len: int
    mac: str
    gateway_ip: str
    leaf: str
    leaf_port: int


class HostLike(Protocol):
    """What is read of a ``topo.model.HostInfo``."""

    name: str
    block: int
    nics: Sequence[NicLike]


class FabricLike(Protocol):
    """What is read of a ``topo.model.Fabric``."""

    switches: Sequence[SwitchLike]
    hosts: Sequence[HostLike]


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True, slots=True)
class EcnConfig:
    """ECN marking on every egress port: RED between ``kmin_pkts`` and ``kmax_pkts`` with
    ``pmax_per_255`` at ``kmax``; ``kmax_pkts=None`` marks every packet from ``kmin_pkts``.

    >>> EcnConfig().kmin_pkts, EcnConfig(kmin_pkts=10, kmax_pkts=None).kmax_pkts
    (8, None)
    """

    kmin_pkts: int = 8
    kmax_pkts: Optional[int] = 32
    pmax_per_255: int = 51


@dataclass(frozen=True, slots=True)
class PfcConfig:
    """PFC on every ingress port: PAUSE when the port's packets in the switch reach
    ``xoff_pkts``, RESUME at ``xon_pkts``, pausing for ``pause_quanta`` (512 bit times each).

    >>> PfcConfig().xoff_pkts > PfcConfig().xon_pkts
    True
    """

    xoff_pkts: int = 32
    xon_pkts: int = 16
    pause_quanta: int = 0xFFFF


# --------------------------------------------------------------------------- the plan
@dataclass(frozen=True, slots=True)
class Entry:
    """One table entry by names: ``Entry(T_ROUTES, {"hdr.ipv4.dst_addr": "10.0.0.1/32"},
    "FabricIngress.forwarding.set_nexthop", {"nexthop_id": 1})``; ``default=True`` modifies
    the table's default entry."""

    table: str
    match: Mapping[str, Any]
    action: str
    params: Mapping[str, Value]
    default: bool = False


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

    @property
    def size(self) -> int:
        """Number of members."""
        return len(self.ports)


@dataclass(slots=True)
class SwitchPlan:
    """Everything one switch gets: table entries (in write order), ECMP groups and clone
    sessions (session id → ports).

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

    def count(self, table: str) -> int:
        """Number of non-default entries planned for ``table``."""
        return sum(1 for e in self.entries if e.table == table and not e.default)

    def of(self, table: str) -> list[Entry]:
        """The planned non-default entries of ``table``."""
        return [e for e in self.entries if e.table == table and not e.default]

    def hash_model(self) -> SwitchHashModel:
        """This switch's part of the published hash model."""
        return SwitchHashModel(self.switch, algorithm=self.algorithm, seed=self.seed,
                               groups={g.group_id: GroupModel(g.base, g.members)
                                       for g in self.groups.values()})


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


# --------------------------------------------------------------------------- ECMP groups (one rule)
def _algorithm_of(sw: SwitchLike) -> str:
    """The switch's ECMP algorithm: ``SwitchInfo.hash_algorithm``, else the role default."""
    return getattr(sw, "hash_algorithm", None) or DEFAULT_ALGORITHMS[sw.role]


def _spine_links(sw: SwitchLike, switch_names: Collection[str],
                 down: Collection[tuple[str, int]]) -> dict[str, list[int]]:
    """Leaf name → live downlink ports of spine ``sw`` to it, in port order."""
    links: dict[str, list[int]] = {}
    for p in sorted(sw.ports):
        info = sw.ports[p]
        if info.kind == "downlink" and info.peer_node in switch_names and (sw.name, p) not in down:
            links.setdefault(info.peer_node, []).append(p)
    return links


def ecmp_groups(sw: SwitchLike, switch_names: Collection[str],
                down: Collection[tuple[str, int]] = frozenset()) -> dict[int, EcmpGroup]:
    """The ECMP groups programmed on ``sw`` — the one rule behind :func:`plan_fabric`
    and :func:`fabric_hash_model`.

    Leaf: group :data:`LEAF_UPLINK_GROUP` over its live uplinks in port order (none
    without uplinks). Spine: one group per leaf reached over several live links, numbered
    from 1 in leaf-name order, member indices allocated consecutively (a leaf reached
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
        return {LEAF_UPLINK_GROUP: _group(sw, LEAF_UPLINK_GROUP, 0, uplinks)} if uplinks else {}
    groups: dict[int, EcmpGroup] = {}
    base = 0
    for ports in (v for _, v in sorted(_spine_links(sw, switch_names, down).items())):
        if len(ports) > 1:
            gid = len(groups) + 1
            groups[gid] = _group(sw, gid, base, ports)
            base += len(ports)
    return groups


def _switch_hash_model(sw: SwitchLike, groups: Mapping[int, EcmpGroup]) -> SwitchHashModel:
    return SwitchHashModel(sw.name, algorithm=_algorithm_of(sw), seed=int(sw.ecmp_seed),
                           groups={g.group_id: GroupModel(g.base, g.members) for g in groups.values()})


def fabric_hash_model(fabric: FabricLike,
                      down: Collection[tuple[str, int]] = frozenset()) -> FabricHashModel:
    """The published ECMP hash model of ``fabric`` as :func:`plan_fabric` programs it
    (equal to ``FabricHashModel({n: p.hash_model() for n, p in plan_fabric(f).items()})``),
    from the groups alone: no table entry is built, so a 64K-GPU pod takes well under a
    second. ``down``: ``(switch, port)`` ends out of service (the model of the fabric
    re-planned without those links).

    >>> from topo.model import build_fabric
    >>> fabric_hash_model(build_fabric()).switch("b1r1l0").groups[1].members
    ('s0', 's1')
    """
    names = {s.name for s in fabric.switches}
    return FabricHashModel({sw.name: _switch_hash_model(sw, ecmp_groups(sw, names, down))
                            for sw in fabric.switches})


# --------------------------------------------------------------------------- table entries
class _Planner:
    """Builds the :class:`SwitchPlan` of every switch of one fabric.

    Every per-NIC fact is indexed once here (NIC by leaf port, subnets, the leaves of
    each subnet): a plan per switch never scans the fabric's NICs (at 64K GPUs that scan,
    parsing addresses, took ~1 s per switch).
    """

    def __init__(self, fabric: FabricLike, ecn: Optional[EcnConfig],
                 pfc: Optional[PfcConfig]) -> None:
        self.fabric, self.ecn, self.pfc = fabric, ecn, pfc
        self.by_name = {s.name: s for s in fabric.switches}
        self.nics = [(h, n) for h in fabric.hosts for n in h.nics]
        self.nic_at: dict[tuple[str, int], NicLike] = {}
        self.leaf_nics: dict[str, list[NicLike]] = {}
        self.subnet_ips: dict[ipaddress.IPv4Network, list[str]] = {}
        self.subnet_leaves: dict[ipaddress.IPv4Network, set[str]] = {}
        self.subnet_nics: dict[ipaddress.IPv4Network, list[NicLike]] = {}
        self.nic_subnet: dict[int, ipaddress.IPv4Network] = {}
        for _, nic in self.nics:
            self.nic_at.setdefault((nic.leaf, nic.leaf_port), nic)
            self.leaf_nics.setdefault(nic.leaf, []).append(nic)
            net = _subnet(nic.ip, nic.prefix_len)
            self.nic_subnet[id(nic)] = net
            self.subnet_ips.setdefault(net, []).append(nic.ip)
            self.subnet_leaves.setdefault(net, set()).add(nic.leaf)
            self.subnet_nics.setdefault(net, []).append(nic)
        for nics in self.subnet_nics.values():
            nics.sort(key=lambda n: ipaddress.IPv4Address(n.ip))

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
            raise ValueError(f"{sw.name}: unknown role {role!r} (leaf or spine)")
        algorithm = _algorithm_of(sw)
        plan = SwitchPlan(sw.name, switch_id_of(sw, self.fabric), role, int(sw.ecmp_seed),
                          algorithm)
        add = plan.entries.append
        add(Entry(T_SWITCH, {}, "FabricIngress.switch_info.set_switch",
                  {"switch_id": plan.switch_id, "role": ROLE_CODES[role],
                   "ecmp_seed": plan.seed}, default=True))
        add(Entry(T_ALGORITHM, {}, f"FabricIngress.ecmp.use_{algorithm}", {}, default=True))
        ports = sorted(sw.ports)
        for p in ports:
            add(Entry(T_NEXTHOPS, {"meta.nexthop_id": p}, "FabricIngress.forwarding.route_to",
                      {"port": p, "src_mac": sw.ports[p].mac, "dst_mac": self.peer_mac(sw, p)}))
        if role == "leaf":
            self._leaf(sw, plan)
        else:
            self._spine(sw, plan)
        for g in plan.groups.values():
            add(Entry(T_GROUPS, {"meta.ecmp_group_id": g.group_id},
                      "FabricIngress.ecmp.select_member", {"base": g.base, "size": g.size}))
            for i, p in enumerate(g.ports):
                add(Entry(T_MEMBERS, {"meta.ecmp_member": g.base + i},
                          "FabricIngress.ecmp.set_nexthop", {"nexthop_id": p}))
        for dscp, prio in sorted(DSCP_TO_PRIORITY.items()):
            add(Entry(T_QOS, {"hdr.ipv4.dscp": dscp}, "FabricIngress.qos.set_priority",
                      {"prio": prio}))
        for p in ports:
            add(Entry(T_PORT_MACS, {"standard_metadata.egress_port": p},
                      "FabricEgress.set_port_mac", {"mac": sw.ports[p].mac}))
            if self.ecn is not None:
                add(_ecn_entry(p, self.ecn))
            if self.pfc is not None:
                add(Entry(T_PFC, {"standard_metadata.ingress_port": p},
                          "FabricIngress.pfc.set_thresholds",
                          {"xoff_pkts": self.pfc.xoff_pkts, "xon_pkts": self.pfc.xon_pkts,
                           "pause_quanta": self.pfc.pause_quanta}))
        plan.clone_sessions = {PFC_CLONE_SESSION_BASE + p: (p,) for p in ports}
        plan.clone_sessions[CPU_CLONE_SESSION] = (CPU_PORT,)
        return plan

    def _leaf(self, sw: SwitchLike, plan: SwitchPlan) -> None:
        attached = self.leaf_nics.get(sw.name, [])
        for nic in sorted(attached, key=lambda n: ipaddress.IPv4Address(n.ip)):
            plan.entries.append(_route(f"{nic.ip}/32", nexthop=nic.leaf_port))
        plan.groups.update(ecmp_groups(sw, self.by_name))
        if LEAF_UPLINK_GROUP in plan.groups:
            plan.entries.append(_route(FABRIC_PREFIX, group=LEAF_UPLINK_GROUP))
        subnets = {self.nic_subnet[id(n)] for n in attached}
        answered = {n.gateway_ip for n in attached}
        for net in subnets:
            answered.update(self.subnet_ips[net])
        for ip in sorted(answered, key=ipaddress.IPv4Address):
            plan.entries.append(Entry(T_ARP, {"hdr.arp.target_proto_addr": ip},
                                      "FabricIngress.arp.arp_reply", {"mac": sw.router_mac}))

    def _spine(self, sw: SwitchLike, plan: SwitchPlan) -> None:
        plan.groups.update(ecmp_groups(sw, self.by_name))
        targets: dict[str, dict[str, int]] = {}      # leaf -> route action params
        for leaf, ports in _spine_links(sw, self.by_name, frozenset()).items():
            if len(ports) == 1:
                targets[leaf] = {"nexthop": ports[0]}
        for g in plan.groups.values():
            targets[g.members[0].partition("#")[0]] = {"group": g.group_id}
        for net in sorted(self.subnet_leaves):
            leaves = self.subnet_leaves[net]
            if len(leaves) == 1:
                leaf = next(iter(leaves))
                if leaf in targets:
                    plan.entries.append(_route(str(net), **targets[leaf]))
                continue
            for nic in self.subnet_nics[net]:
                if nic.leaf in targets:
                    plan.entries.append(_route(f"{nic.ip}/32", **targets[nic.leaf]))


def _group(sw: SwitchLike, group_id: int, base: int, ports: Sequence[int]) -> EcmpGroup:
    peers = [sw.ports[p].peer_node for p in ports]
    names = tuple(peer if peers.count(peer) == 1 else f"{peer}#{p}"
                  for peer, p in zip(peers, ports))
    return EcmpGroup(group_id, base, tuple(ports), names)


def _route(prefix: str, nexthop: Optional[int] = None, group: Optional[int] = None) -> Entry:
    if group is not None:
        return Entry(T_ROUTES, {"hdr.ipv4.dst_addr": prefix},
                     "FabricIngress.forwarding.set_ecmp_group", {"group_id": group})
    return Entry(T_ROUTES, {"hdr.ipv4.dst_addr": prefix}, "FabricIngress.forwarding.set_nexthop",
                 {"nexthop_id": nexthop if nexthop is not None else 0})


def _ecn_entry(port: int, ecn: EcnConfig) -> Entry:
    match = {"standard_metadata.egress_port": port}
    if ecn.kmax_pkts is None:
        return Entry(T_ECN, match, "FabricEgress.ecn.set_ecn_threshold",
                     {"kmin_pkts": ecn.kmin_pkts})
    return Entry(T_ECN, match, "FabricEgress.ecn.set_ecn_red",
                 {"kmin_pkts": ecn.kmin_pkts, "kmax_pkts": ecn.kmax_pkts,
                  "pmax_per_255": ecn.pmax_per_255})


def plan_fabric(fabric: FabricLike, ecn: Optional[EcnConfig] = EcnConfig(),
                pfc: Optional[PfcConfig] = PfcConfig()) -> dict[str, SwitchPlan]:
    """The plan of every switch, by name (no connection needed).

    >>> plan_fabric(fab)["b0r0l0"].count(T_ROUTES)                     # doctest: +SKIP
    3
    """
    planner = _Planner(fabric, ecn, pfc)
    return {sw.name: planner.plan(sw) for sw in fabric.switches}


# --------------------------------------------------------------------------- writing
R = TypeVar("R")


class SwitchSetupError(P4RuntimeClientError):
    """Connecting to, pushing to or writing one switch failed; ``switch`` names it.

    >>> str(SwitchSetupError("s0", TimeoutError("no answer")))
    's0: TimeoutError: no answer'
    """

    def __init__(self, switch: str, cause: BaseException) -> None:
        detail = str(cause) or "(no detail)"
        super().__init__(f"{switch}: {type(cause).__name__}: {detail}")
        self.switch, self.cause = switch, cause


def _chunks(items: Sequence[Any], n: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


class FabricProgrammer:
    """Connects to every switch of ``fabric`` and installs its plan.

    ``ecn``/``pfc`` set the defaults written on every port (``None`` writes none);
    ``timeout_s`` is each connection's RPC timeout. Connections live until :meth:`close`
    (also a context manager). Switch-parallel steps run in a thread pool.
    """

    def __init__(self, fabric: FabricLike, p4info_path: Union[str, Path],
                 device_config_path: Union[str, Path], *,
                 ecn: Optional[EcnConfig] = EcnConfig(), pfc: Optional[PfcConfig] = PfcConfig(),
                 timeout_s: float = 30.0) -> None:
        self.fabric = fabric
        self.p4info_path, self.device_config_path = Path(p4info_path), Path(device_config_path)
        self.timeout_s = timeout_s
        self.plans: dict[str, SwitchPlan] = plan_fabric(fabric, ecn, pfc)
        self.connections: dict[str, SwitchConnection] = {}
        self.cookie = int.from_bytes(os.urandom(7), "big") or 1
        """Pipeline cookie of :meth:`push_pipelines`: a switch answering another one (or
        none) was restarted or re-programmed by someone else (``controller.switch_restore``)."""
        self.cookies: dict[str, Optional[int]] = {}
        """Switch → the pipeline cookie it is known to run (pushed here, or read on attach)."""

    # ---------------------------------------------------------------- helpers
    def _each(self, fn: Callable[[SwitchLike], R]) -> dict[str, R]:
        """Run ``fn`` on every switch concurrently; a failure is re-raised as a
        :class:`SwitchSetupError` naming the first switch that failed."""
        switches = list(self.fabric.switches)
        with ThreadPoolExecutor(max_workers=max(1, min(16, len(switches)))) as pool:
            futures = {sw.name: pool.submit(fn, sw) for sw in switches}
            out: dict[str, R] = {}
            for name, f in futures.items():
                try:
                    out[name] = f.result()
                except SwitchSetupError:
                    raise
                except Exception as exc:
                    raise SwitchSetupError(name, exc) from exc
            return out

    def _name(self, switch: Union[str, SwitchLike]) -> str:
        return switch if isinstance(switch, str) else switch.name

    def connection(self, switch: Union[str, SwitchLike]) -> SwitchConnection:
        """The open connection of ``switch`` (name or record); KeyError when not connected."""
        name = self._name(switch)
        try:
            return self.connections[name]
        except KeyError:
            raise KeyError(f"{name}: not connected (connect_all() first)") from None

    # ---------------------------------------------------------------- steps
    def connect_switch(self, switch: Union[str, SwitchLike],
                       timeout_s: Optional[float] = None) -> SwitchConnection:
        """A new primary :class:`SwitchConnection` to one switch, with the topology's address,
        device id and election id (not stored in :attr:`connections`)."""
        name = self._name(switch)
        sw = next(s for s in self.fabric.switches if s.name == name)
        t = self.timeout_s if timeout_s is None else timeout_s
        try:
            return SwitchConnection(sw.grpc_addr, device_id=sw.device_id,
                                    election_id=_election(sw.election_id), timeout_s=t)
        except grpc.FutureTimeoutError:
            raise TimeoutError(f"no P4Runtime server answered at {sw.grpc_addr} within "
                               f"{t:g} s (is the switch running?)") from None

    def connect_all(self) -> None:
        """One primary :class:`SwitchConnection` per switch, opened concurrently."""
        try:
            self.connections.update(self._each(self.connect_switch))
        except BaseException:
            self.close()
            raise

    def push_pipelines(self) -> None:
        """SetForwardingPipelineConfig on every switch (fresh, empty tables)."""
        # bytes, parsed by each thread into its own message (see SwitchConnection.push_pipeline)
        p4info = load_p4info(self.p4info_path).SerializeToString()
        config = self.device_config_path.read_bytes()
        self._each(lambda sw: self.connection(sw).push_pipeline(p4info, config, self.cookie))
        self.cookies.update({sw.name: self.cookie for sw in self.fabric.switches})

    def install(self, switch: Union[str, SwitchLike]) -> int:
        """Write the whole plan of one switch (after a fresh ``push_pipelines``: entries
        are INSERTed); returns the number of updates written."""
        name = self._name(switch)
        conn, plan = self.connection(name), self.plans[name]
        if conn.p4info is None:
            conn.fetch_pipeline()
        updates: list[p4runtime_pb2.Update] = [
            update(clone_session(sid, list(ports)), "INSERT")
            for sid, ports in sorted(plan.clone_sessions.items())]
        for e in plan.entries:
            te = conn.table_entry(e.table, e.match, e.action, e.params, is_default=e.default)
            updates.append(update(te, "MODIFY" if e.default else "INSERT"))
        for batch in _chunks(updates, WRITE_BATCH):
            conn.write(batch)
        return len(updates)

    def install_all(self) -> dict[str, int]:
        """:meth:`install` on every switch concurrently; switch name → updates written."""
        return self._each(self.install)

    def setup(self, push: bool = True) -> dict[str, int]:
        """``connect_all`` (if needed), ``push_pipelines`` (unless ``push=False``) and
        ``install_all``: what ``python -m controller setup`` does."""
        if not self.connections:
            self.connect_all()
        if push:
            self.push_pipelines()
        return self.install_all()

    # ---------------------------------------------------------------- published model
    def hash_model(self) -> FabricHashModel:
        """The ECMP hash model of the fabric as programmed (every switch, groups included)."""
        return FabricHashModel({name: plan.hash_model() for name, plan in self.plans.items()})

    def member_ports(self, switch: str, group_id: int) -> dict[str, int]:
        """Member name → egress port of one group, e.g. ``{"s0": 3, "s1": 4}``."""
        g = self.plans[switch].groups[group_id]
        return dict(zip(g.members, g.ports))

    # ---------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Close every connection (idempotent)."""
        for conn in self.connections.values():
            conn.close()
        self.connections.clear()

    def __enter__(self) -> "FabricProgrammer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _election(value: Any) -> Union[int, tuple[int, int]]:
    """An election id from the topology: an int, ``[high, low]`` or ``"high,low"``."""
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        parts = [int(x) for x in value.split(",")]
        return (parts[0], parts[1]) if len(parts) == 2 else parts[0]
    high, low = value
    return (int(high), int(low))


__all__ = [
    "CPU_CLONE_SESSION", "DSCP_TO_PRIORITY", "EcmpGroup", "EcnConfig", "Entry", "FABRIC_PREFIX",
    "FabricProgrammer", "LEAF_UPLINK_GROUP", "PFC_CLONE_SESSION_BASE", "PfcConfig",
    "SwitchPlan", "SwitchSetupError", "ecmp_groups", "fabric_hash_model", "plan_fabric",
    "switch_id_of",
]
