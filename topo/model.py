"""The fabric model: typed records of every switch, port, server and NIC of a multi-rail
fabric (two tiers, or three with pods and cores; one- or two-port NICs), a networkx graph
of it, and the JSON file the controller, hosts and testbed read (``build/topology.json``).

Conventions (p4src/README.md address plan):

* Leaves ``b<block>r<rail>l<k>``, spines ``s<k>``, servers ``b<block>s<server>``.
* NIC r of server s in block b: ``10.b.r.(s+1)/24``, gateway ``10.b.r.254``, MAC
  ``06:00:00:b:r:(s+1)``, interface ``b<b>s<s>-eth<r>``.
* Switch ports are numbered from 1 (host ports in server order, then uplinks by spine
  and parallel link); 255 (CPU) and 511 (v1model drop) are skipped.
* Switch ids (= P4Runtime device ids): leaf k of rail r in block b ``1 + (b·R + r)·L + k``
  (``1 + b·R + r`` with one leaf per rail), spine k ``200 + k`` (a higher base when the
  leaves reach 200: :attr:`FabricSpec.spine_id_base`).
* Port MAC of switch ``sw``, port ``p``: ``02:00:<sw>>8>:<p>>8>:<sw&255>:<p&255>``, i.e.
  ``02:00:00:00:<sw>:<p>`` for ids and ports below 256; the router MAC is port 0's.
* P4Runtime: switch i (leaves, then spines) at ``grpc_host:grpc_base_port + i``.
* ECMP: leaves crc16, spines crc32; seed ``crc32("<salt>/<name>")``.

Three tiers and dual-port NICs (fabric file version 2; topo/README.md, "Pods, cores and
dual-port NICs"):

* Pod p > 0 prefixes its switch and server names with ``p<p>.`` (``p1.b0r0l0``, ``p1.s0``,
  ``p1.b0s0``); pod 0 keeps the one-pod names. Core j of plane k is ``c<k>.<j>``.
* NIC r of server s in block b of pod p: ``10.b.(p·R + r).(s+1)/24``, MAC
  ``06:00:00:b:(p·R + r):(s+1)`` — pod 0 *is* the one-pod plan (as ``sim/cluster``).
* A dual-port NIC has one address and MAC (its two ports are bonded) and two ports:
  port 0 on leaf ``2j`` of its rail (interface ``<host>-eth<r>``, the NIC's ``leaf`` and
  ``leaf_port``), port 1 on leaf ``2j+1`` (``<host>-eth<r>p1``).
* Switch ids: leaf k of rail r in block b of pod p ``1 + ((p·B + b)·R + r)·L + k``; spine
  k of pod p ``base + p·S + k``; core j of plane k ``base + P·S + k·C + j``; P4Runtime
  ports in the same order (leaves, spines, cores).
* Spine ports: downlinks first, then the core uplinks (core order, then link); core
  ports: the links to pod 0's spine first, then pod 1's ...

Example::

    >>> fab = build_fabric(FabricSpec())
    >>> [s.name for s in fab.switches]
    ['b0r0l0', 'b0r1l0', 'b1r0l0', 'b1r1l0', 's0', 's1']
    >>> nic = fab.host("b1s0").nics[1]
    >>> (nic.ip, nic.gateway_ip, nic.leaf, nic.leaf_port, nic.intf)
    ('10.1.1.1', '10.1.1.254', 'b1r1l0', 1, 'b1s0-eth1')
    >>> fab.switch("b0r0l0").ports[3]
    PortInfo(port=3, peer_node='s0', peer_port=1, kind='uplink', mac='02:00:00:00:01:03', gbps=100.0)
    >>> load_fabric_text(fab.to_json()) == fab
    True
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional, Union

import networkx as nx

from topo.spec import RESERVED_PORTS, FabricSpec, SpecError, check_spec, spec_from_dict

SCHEMA = "astral-fabric"
SCHEMA_VERSION = 1
SCHEMA_VERSION_EXTENDED = 2      # pods, cores, dual-port NICs (a version-1 spec stays version 1)


# ----------------------------------------------------------------------------- records
@dataclass(slots=True)
class PortInfo:
    """One switch port and what is on the other end of its link.

    ``kind`` is ``"host"`` (leaf port to a server NIC; ``peer_port`` is the NIC's rail),
    ``"uplink"`` (leaf to spine, spine to core) or ``"downlink"`` (spine to leaf, core to
    spine)::

        PortInfo(3, "s0", 1, "uplink", "02:00:00:00:01:03", 100.0)
    """

    port: int
    peer_node: str
    peer_port: int
    kind: str
    mac: str
    gbps: float


@dataclass(slots=True)
class SwitchInfo:
    """One leaf or spine: identity, P4Runtime address, ports and ECMP settings.

        >>> sw = build_fabric(FabricSpec()).switch("s1")
        >>> (sw.role, sw.device_id, sw.grpc_addr, sw.hash_algorithm, sorted(sw.ports))
        ('spine', 201, '127.0.0.1:9564', 'crc32', [1, 2, 3, 4])
    """

    name: str
    role: str                      # "leaf" | "spine" | "core"
    block: Optional[int]           # leaves only
    rail: Optional[int]            # leaves only
    device_id: int                 # P4Runtime device id = switch id of switch_info.set_switch
    grpc_addr: str                 # "host:port"
    election_id: int
    ports: dict[int, PortInfo]
    router_mac: str
    ecmp_seed: int
    hash_algorithm: str            # "crc16" | "crc32"
    leaf_index: Optional[int] = None   # k of b<b>r<r>l<k>; spines: None
    spine_index: Optional[int] = None  # k of s<k>; leaves: None
    pod: Optional[int] = 0             # leaves and spines; cores: None
    plane: Optional[int] = None        # cores: the spine index k they join (c<k>.<j>)
    core_index: Optional[int] = None   # cores: j of c<k>.<j>
    subnet_octet: Optional[int] = None  # leaves of a multi-pod fabric: p·R + r (else the rail)

    @property
    def switch_id(self) -> int:
        """The switch id programmed into ``switch_info.set_switch`` (= ``device_id``)."""
        return self.device_id

    @property
    def is_leaf(self) -> bool:
        """``True`` for a leaf."""
        return self.role == "leaf"

    def ports_of_kind(self, kind: str) -> list[PortInfo]:
        """Ports of one kind in port order: ``sw.ports_of_kind("uplink")``."""
        return [p for _, p in sorted(self.ports.items()) if p.kind == kind]

    @property
    def subnet(self) -> Optional[str]:
        """The rail subnet a leaf serves (``"10.b.r.0/24"``); None for a spine."""
        if self.role != "leaf":
            return None
        return f"10.{self.block}.{self._octet}.0/24"

    @property
    def _octet(self) -> Optional[int]:
        return self.rail if self.subnet_octet is None else self.subnet_octet

    @property
    def gateway_ip(self) -> Optional[str]:
        """The gateway address a leaf answers ARP for (``"10.b.r.254"``); None for a spine."""
        if self.role != "leaf":
            return None
        return f"10.{self.block}.{self._octet}.254"


@dataclass(slots=True)
class NicPort:
    """One port of a NIC and the leaf port it is cabled to: ``NicPort(1, "b0r0l1", 1, "b0s0-eth0p1")``."""

    port: int
    leaf: str
    leaf_port: int
    intf: str


@dataclass(slots=True)
class NicInfo:
    """One server NIC (one per rail) and the leaf port it is cabled to.

        NicInfo(1, "10.0.1.2", 24, "06:00:00:00:01:02", "10.0.1.254", "b0r1l0", 2, "b0s1-eth1")

    ``leaf``, ``leaf_port`` and ``intf`` are port 0's; ``ports`` lists every port (one, or
    two on two leaves of the rail with ``ports_per_nic`` 2), filled with port 0 when not
    given. The NIC has one address and MAC whichever port a packet uses (bonded ports).
    """

    rail: int
    ip: str
    prefix_len: int
    mac: str
    gateway_ip: str
    leaf: str
    leaf_port: int
    intf: str
    gbps: float = 100.0
    ports: list[NicPort] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.ports:
            self.ports = [NicPort(0, self.leaf, self.leaf_port, self.intf)]

    @property
    def leaves(self) -> tuple[str, ...]:
        """The leaves the NIC's ports are cabled to, port order: ``("b0r0l0", "b0r0l1")``."""
        return tuple(p.leaf for p in self.ports)


@dataclass(slots=True)
class HostInfo:
    """One server (a Mininet host) with one NIC per rail: ``fab.host("b0s1").nics[0].ip``."""

    name: str
    block: int
    server: int
    nics: list[NicInfo]
    pod: int = 0


@dataclass(frozen=True, slots=True)
class Link:
    """One cable, as both ends see it: ``Link("b0r0l0", 3, "s0", 1, "fabric", 100.0)``.

    ``kind`` is ``"host"`` (server NIC ``b_port`` = rail on host ``b``, its port
    ``nic_port``) or ``"fabric"`` (leaf–spine and spine–core, the lower tier first).
    """

    a: str
    a_port: int
    b: str
    b_port: int
    kind: str
    gbps: float
    nic_port: int = 0


# ----------------------------------------------------------------------------- helpers
def port_mac(switch_id: int, port: int) -> str:
    """Port MAC of a switch: ``port_mac(1, 3) == "02:00:00:00:01:03"``."""
    return (f"02:00:{switch_id >> 8 & 0xFF:02x}:{port >> 8 & 0xFF:02x}:"
            f"{switch_id & 0xFF:02x}:{port & 0xFF:02x}")


def host_mac(block: int, rail: int, server: int) -> str:
    """NIC MAC of a server: ``host_mac(1, 0, 2) == "06:00:00:01:00:03"``."""
    return f"06:00:00:{block:02x}:{rail:02x}:{server + 1:02x}"


def link_ports(count: int, first: int = 1) -> list[int]:
    """``count`` port numbers from ``first``, skipping the v1model reserved ports 255, 511.

        >>> link_ports(3, 254)
        [254, 256, 257]
    """
    out: list[int] = []
    p = first
    while len(out) < count:
        if p not in RESERVED_PORTS:
            out.append(p)
        p += 1
    return out


def ecmp_seed_for(name: str, salt: int = 0) -> int:
    """Deterministic 32-bit ECMP seed of a switch: ``crc32("<salt>/<name>")``."""
    return zlib.crc32(f"{salt}/{name}".encode())


def leaf_name(block: int, rail: int, k: int) -> str:
    """``leaf_name(0, 1, 0) == "b0r1l0"``."""
    return f"b{block}r{rail}l{k}"


def host_name(block: int, server: int) -> str:
    """``host_name(0, 1) == "b0s1"``."""
    return f"b{block}s{server}"


def pod_name(pod: int, name: str) -> str:
    """A pod's switch or server name: ``pod_name(1, "s0") == "p1.s0"``; pod 0 keeps the
    one-pod name (``pod_name(0, "s0") == "s0"``), as ``sim/cluster`` names them."""
    return name if pod == 0 else f"p{pod}.{name}"


def core_name(plane: int, j: int) -> str:
    """Core ``j`` of plane ``plane`` (the cores spine ``plane`` of every pod joins):
    ``core_name(1, 0) == "c1.0"``."""
    return f"c{plane}.{j}"


def nic_intf(host: str, rail: int, port: int = 0) -> str:
    """Interface of a NIC port: ``nic_intf("b0s1", 1) == "b0s1-eth1"``, port 1
    ``"b0s1-eth1p1"``."""
    return f"{host}-eth{rail}" if port == 0 else f"{host}-eth{rail}p{port}"


# ------------------------------------------------------------------------------ fabric
@dataclass(slots=True)
class Fabric:
    """A built fabric: the spec, switch and host records, and a networkx ``MultiGraph``.

    Graph nodes carry ``role`` (``leaf``/``spine``/``host``), ``block``, ``rail``
    (leaves), ``device_id`` and ``grpc_addr`` (switches), ``ips`` (hosts); every edge
    carries ``kind`` (``host``/``fabric``), ``gbps`` and ``ports`` = ``{node: port}`` for
    both ends (a host's "port" is its rail). Equality ignores the graph (it is derived).
    """

    spec: FabricSpec
    switches: list[SwitchInfo]
    hosts: list[HostInfo]
    graph: nx.MultiGraph = field(compare=False, repr=False)
    _by_name: dict[str, SwitchInfo] = field(default_factory=dict, compare=False, repr=False)
    _hosts_by_name: dict[str, HostInfo] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name = {s.name: s for s in self.switches}
        self._hosts_by_name = {h.name: h for h in self.hosts}

    # ---------------------------------------------------------------- lookups
    def switch(self, name: str) -> SwitchInfo:
        """The switch called ``name`` (``KeyError`` when there is none)."""
        return self._by_name[name]

    def host(self, name: str) -> HostInfo:
        """The server called ``name`` (``KeyError`` when there is none)."""
        return self._hosts_by_name[name]

    @property
    def leaves(self) -> list[SwitchInfo]:
        """The leaves, in switch order."""
        return [s for s in self.switches if s.role == "leaf"]

    @property
    def spines(self) -> list[SwitchInfo]:
        """The spines, in switch order."""
        return [s for s in self.switches if s.role == "spine"]

    @property
    def cores(self) -> list[SwitchInfo]:
        """The core switches, in switch order (none in a one-pod fabric)."""
        return [s for s in self.switches if s.role == "core"]

    def rail_leaves(self, block: int, rail: int, pod: int = 0) -> list[SwitchInfo]:
        """The leaves of one rail of one block (of pod ``pod``):
        ``fab.rail_leaves(0, 1)[0].name == "b0r1l0"``."""
        return [s for s in self.switches if s.role == "leaf" and s.block == block and s.rail == rail
                and s.pod == pod]

    def links(self) -> Iterator[Link]:
        """Every cable once, in switch order: host links (leaf side first), then each
        switch's uplinks (leaf → spine, spine → core)."""
        nic_port: dict[tuple[str, int], int] = {}
        if self.spec.ports_per_nic > 1:
            nic_port = {(p.leaf, p.leaf_port): p.port for h in self.hosts for n in h.nics for p in n.ports}
        for sw in self.switches:
            for p in sorted(sw.ports):
                info = sw.ports[p]
                if info.kind == "host":
                    yield Link(sw.name, p, info.peer_node, info.peer_port, "host", info.gbps,
                               nic_port.get((sw.name, p), 0))
                elif info.kind == "uplink":
                    yield Link(sw.name, p, info.peer_node, info.peer_port, "fabric", info.gbps)

    def oversubscription(self) -> float:
        """Worst leaf ratio of host capacity to uplink capacity (1.0 = non-blocking)."""
        worst = 0.0
        for sw in self.leaves:
            down = sum(p.gbps for p in sw.ports.values() if p.kind == "host")
            up = sum(p.gbps for p in sw.ports.values() if p.kind == "uplink")
            worst = max(worst, down / up if up else float("inf"))
        return worst

    def core_oversubscription(self) -> Optional[float]:
        """Worst spine ratio of downlink capacity to core uplink capacity (1.0 = the
        equal bandwidth every valid spec gives); None without a core tier."""
        if not self.cores:
            return None
        worst = 0.0
        for sw in self.spines:
            down = sum(p.gbps for p in sw.ports.values() if p.kind == "downlink")
            up = sum(p.gbps for p in sw.ports.values() if p.kind == "uplink")
            worst = max(worst, down / up if up else float("inf"))
        return worst

    # ---------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        """Plain data of the fabric file (schema ``astral-fabric``): version 1 for a
        two-tier one-port spec (exactly as before version 2 existed), else version 2 (the
        extra keys ``pod``, ``plane``, ``core_index``, ``subnet_octet`` and NIC ``ports``)."""
        ext = self.spec.is_extended
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION_EXTENDED if ext else SCHEMA_VERSION,
            "spec": self.spec.to_dict(),
            "switches": [_switch_to_dict(s, ext) for s in self.switches],
            "hosts": [_host_to_dict(h, ext) for h in self.hosts],
        }

    def to_json(self, indent: Optional[int] = 1) -> str:
        """The fabric file's text: ``load_fabric_text(fab.to_json()) == fab``."""
        return json.dumps(self.to_dict(), indent=indent)

    def save(self, path: Union[str, Path]) -> Path:
        """Write :meth:`to_json` to ``path`` (parent folders created); returns the path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.to_json() + "\n")
        return p


def _switch_to_dict(s: SwitchInfo, extended: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": s.name, "role": s.role, "block": s.block, "rail": s.rail,
        "leaf_index": s.leaf_index, "spine_index": s.spine_index,
    }
    if extended:
        out.update({"pod": s.pod, "plane": s.plane, "core_index": s.core_index,
                    "subnet_octet": s.subnet_octet})
    out.update({
        "device_id": s.device_id, "grpc_addr": s.grpc_addr, "election_id": s.election_id,
        "router_mac": s.router_mac, "ecmp_seed": s.ecmp_seed, "hash_algorithm": s.hash_algorithm,
        "ports": [[p.port, p.peer_node, p.peer_port, p.kind, p.mac, p.gbps]
                  for _, p in sorted(s.ports.items())],
    })
    return out


def _host_to_dict(h: HostInfo, extended: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"name": h.name, "block": h.block, "server": h.server}
    if extended:
        out["pod"] = h.pod
    out["nics"] = [_nic_to_dict(n, extended) for n in h.nics]
    return out


def _nic_to_dict(n: NicInfo, extended: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"rail": n.rail, "ip": n.ip, "prefix_len": n.prefix_len, "mac": n.mac,
                           "gateway_ip": n.gateway_ip, "leaf": n.leaf, "leaf_port": n.leaf_port,
                           "intf": n.intf, "gbps": n.gbps}
    if extended:
        out["ports"] = [[p.port, p.leaf, p.leaf_port, p.intf] for p in n.ports]
    return out


# ------------------------------------------------------------------------------- build
def build_fabric(spec: Optional[FabricSpec] = None) -> Fabric:
    """Build the fabric of a spec (default: :class:`FabricSpec()`), validated again here:
    :class:`SpecError` if impossible.

    Real sizes are fine: 64 blocks × 128 servers × 8 rails (65,536 GPUs) builds in a
    few seconds.
    """
    if spec is None:
        spec = FabricSpec()
    check_spec(spec)
    P, B, R, L, S = spec.pods, spec.blocks, spec.rails, spec.leaves_per_rail, spec.spines
    ppn = spec.ports_per_nic
    up_gbps = spec.effective_uplink_gbps
    host_gbps = float(spec.link_gbps)
    per_leaf = spec.servers_per_leaf
    spine_base = spec.spine_id_base
    multi_pod = P > 1

    switches: list[SwitchInfo] = []
    leaves_grid: dict[tuple[int, int, int, int], SwitchInfo] = {}
    for p in range(P):
        for b in range(B):
            for r in range(R):
                for k in range(L):
                    name = pod_name(p, leaf_name(b, r, k))
                    sid = 1 + ((p * B + b) * R + r) * L + k
                    sw = SwitchInfo(name, "leaf", b, r, sid, "", spec.election_id, {}, port_mac(sid, 0),
                                    ecmp_seed_for(name, spec.ecmp_seed), spec.leaf_hash, leaf_index=k,
                                    pod=p, subnet_octet=p * R + r if multi_pod else None)
                    switches.append(sw)
                    leaves_grid[(p, b, r, k)] = sw
    spine_grid: dict[tuple[int, int], SwitchInfo] = {}
    for p in range(P):
        for k in range(S):
            name = pod_name(p, f"s{k}")
            sid = spine_base + p * S + k
            sw = SwitchInfo(name, "spine", None, None, sid, "", spec.election_id, {}, port_mac(sid, 0),
                            ecmp_seed_for(name, spec.ecmp_seed), spec.spine_hash, spine_index=k, pod=p)
            switches.append(sw)
            spine_grid[(p, k)] = sw
    C = spec.cores_per_plane if spec.cores else 0
    core_grid: dict[tuple[int, int], SwitchInfo] = {}
    for k in range(S if C else 0):
        for j in range(C):
            name = core_name(k, j)
            sid = spine_base + P * S + k * C + j
            sw = SwitchInfo(name, "core", None, None, sid, "", spec.election_id, {}, port_mac(sid, 0),
                            ecmp_seed_for(name, spec.ecmp_seed), spec.core_hash, pod=None, plane=k,
                            core_index=j)
            switches.append(sw)
            core_grid[(k, j)] = sw

    _apply_addresses(spec, switches)

    # host links: servers of a block split into contiguous runs per leaf set (one leaf, or
    # a pair with dual-port NICs: port q of the NIC on leaf ppn·set + q)
    host_port_numbers = link_ports(per_leaf)
    hosts: list[HostInfo] = []
    for p in range(P):
        for b in range(B):
            for s in range(spec.servers_per_block):
                hname = pod_name(p, host_name(b, s))
                leaf_set, slot = divmod(s, per_leaf)
                nics: list[NicInfo] = []
                lport = host_port_numbers[slot]
                for r in range(R):
                    octet = p * R + r
                    nic_ports: list[NicPort] = []
                    for q in range(ppn):
                        leaf = leaves_grid[(p, b, r, leaf_set * ppn + q)]
                        leaf.ports[lport] = PortInfo(lport, hname, r, "host", port_mac(leaf.device_id, lport),
                                                     host_gbps)
                        nic_ports.append(NicPort(q, leaf.name, lport, f"{hname}-eth{r}p{q}" if q else
                                                 f"{hname}-eth{r}"))
                    first = nic_ports[0]
                    nics.append(NicInfo(r, f"10.{b}.{octet}.{s + 1}", 24, host_mac(b, octet, s),
                                        f"10.{b}.{octet}.254", first.leaf, first.leaf_port, first.intf,
                                        host_gbps, nic_ports))
                hosts.append(HostInfo(hname, b, s, nics, p))

    # fabric links: leaf uplink (spine k, link j) <-> spine downlink (leaf, link j), per pod
    U = spec.uplinks_per_spine
    spine_port_numbers = link_ports(spec.leaves_per_pod * U)
    # every leaf's uplinks start after the host ports of the fullest leaf
    up_ports = link_ports(spec.leaf_uplinks, host_port_numbers[-1] + 1)
    for p in range(P):
        pod_leaves = [leaves_grid[(p, b, r, k)] for b in range(B) for r in range(R) for k in range(L)]
        for li, leaf in enumerate(pod_leaves):
            for k in range(S):
                spine = spine_grid[(p, k)]
                for j in range(U):
                    lp = up_ports[k * U + j]
                    sp = spine_port_numbers[li * U + j]
                    leaf.ports[lp] = PortInfo(lp, spine.name, sp, "uplink", port_mac(leaf.device_id, lp),
                                              up_gbps)
                    spine.ports[sp] = PortInfo(sp, leaf.name, lp, "downlink", port_mac(spine.device_id, sp),
                                               up_gbps)

    # core links: spine k of pod p, core uplink (core j of plane k, link i) <-> that core's
    # downlink (pod p, link i); equal bandwidth (FabricSpec.spine_core_uplinks)
    if C:
        J = spec.links_per_core
        core_gbps = spec.effective_core_link_gbps
        core_port_numbers = link_ports(P * J)
        spine_up_ports = link_ports(spec.spine_core_uplinks, spine_port_numbers[-1] + 1)
        for (p, k), spine in spine_grid.items():
            for j in range(C):
                core = core_grid[(k, j)]
                for i in range(J):
                    sp = spine_up_ports[j * J + i]
                    cp = core_port_numbers[p * J + i]
                    spine.ports[sp] = PortInfo(sp, core.name, cp, "uplink", port_mac(spine.device_id, sp),
                                               core_gbps)
                    core.ports[cp] = PortInfo(cp, spine.name, sp, "downlink", port_mac(core.device_id, cp),
                                              core_gbps)
    return Fabric(spec, switches, hosts, graph_of(switches, hosts))


def _apply_addresses(spec: FabricSpec, switches: list[SwitchInfo]) -> None:
    """P4Runtime addresses, device ids and per-switch overrides; refuse clashes."""
    names = {s.name for s in switches}
    for name in spec.switches:
        if name not in names:
            shown = ", ".join(sorted(names)[:8]) + (", ..." if len(names) > 8 else "")
            raise SpecError(f"switches.{name}", f"no such switch in this fabric (switches: {shown})")
    for i, sw in enumerate(switches):
        sw.grpc_addr = f"{spec.grpc_host}:{spec.grpc_base_port + i}"
        o = spec.switches.get(sw.name)
        if o is None:
            continue
        if o.grpc_addr is not None:
            sw.grpc_addr = o.grpc_addr
        if o.device_id is not None:
            sw.device_id = o.device_id
        if o.ecmp_seed is not None:
            sw.ecmp_seed = o.ecmp_seed
        if o.hash_algorithm is not None:
            sw.hash_algorithm = o.hash_algorithm
    seen_addr: dict[str, str] = {}
    seen_id: dict[int, str] = {}
    for sw in switches:
        if sw.grpc_addr in seen_addr:
            raise SpecError(f"switches.{sw.name}.grpc_addr",
                            f"{sw.grpc_addr} is already the address of {seen_addr[sw.grpc_addr]}")
        seen_addr[sw.grpc_addr] = sw.name
        if sw.device_id in seen_id:
            raise SpecError(f"switches.{sw.name}.device_id",
                            f"{sw.device_id} is already the device id of {seen_id[sw.device_id]}")
        seen_id[sw.device_id] = sw.name


# -------------------------------------------------------------------------------- load
def fabric_from_dict(data: Any, source: str = "fabric") -> Fabric:
    """Rebuild a :class:`Fabric` from :meth:`Fabric.to_dict` data (graph included)."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SpecError("schema", f"not a fabric file (expected schema {SCHEMA!r})", source)
    if data.get("version") not in (SCHEMA_VERSION, SCHEMA_VERSION_EXTENDED):
        raise SpecError("version", f"unsupported version {data.get('version')!r} "
                                   f"(this code reads {SCHEMA_VERSION} and {SCHEMA_VERSION_EXTENDED})", source)
    spec = spec_from_dict(data["spec"], source)
    switches = []
    for d in data["switches"]:
        ports = {p[0]: PortInfo(p[0], p[1], p[2], p[3], p[4], float(p[5])) for p in d["ports"]}
        switches.append(SwitchInfo(d["name"], d["role"], d["block"], d["rail"], d["device_id"],
                                   d["grpc_addr"], d["election_id"], ports, d["router_mac"],
                                   d["ecmp_seed"], d["hash_algorithm"], d.get("leaf_index"),
                                   d.get("spine_index"), d.get("pod", 0), d.get("plane"),
                                   d.get("core_index"), d.get("subnet_octet")))
    hosts = [HostInfo(h["name"], h["block"], h["server"],
                      [NicInfo(n["rail"], n["ip"], n["prefix_len"], n["mac"], n["gateway_ip"], n["leaf"],
                               n["leaf_port"], n["intf"], float(n.get("gbps", spec.link_gbps)),
                               [NicPort(*p) for p in n.get("ports", ())])
                       for n in h["nics"]], h.get("pod", 0))
             for h in data["hosts"]]
    return Fabric(spec, switches, hosts, graph_of(switches, hosts))


def graph_of(switches: list[SwitchInfo], hosts: list[HostInfo]) -> nx.MultiGraph:
    """The networkx graph of switch and host records (as :func:`build_fabric` makes it)."""
    g = nx.MultiGraph()
    for sw in switches:
        g.add_node(sw.name, role=sw.role, block=sw.block, rail=sw.rail,
                   device_id=sw.device_id, grpc_addr=sw.grpc_addr, pod=sw.pod)
    for h in hosts:
        g.add_node(h.name, role="host", block=h.block, server=h.server, ips=[n.ip for n in h.nics],
                   pod=h.pod)
    nic_port = {(p.leaf, p.leaf_port): p.port for h in hosts for n in h.nics if len(n.ports) > 1
                for p in n.ports}       # port 0 unless listed: one-port fabrics list none
    for sw in switches:
        for p in sorted(sw.ports):
            info = sw.ports[p]
            if info.kind == "host":
                extra = {"nic_port": nic_port.get((sw.name, p), 0)} if nic_port else {}   # dual-port NICs
                g.add_edge(sw.name, info.peer_node, kind="host", gbps=info.gbps, rail=info.peer_port,
                           ports={sw.name: p, info.peer_node: info.peer_port}, **extra)
            elif info.kind == "uplink":
                g.add_edge(sw.name, info.peer_node, kind="fabric", gbps=info.gbps,
                           ports={sw.name: p, info.peer_node: info.peer_port})
    return g


def load_fabric_text(text: str, source: str = "fabric") -> Fabric:
    """A :class:`Fabric` from the text of a fabric file."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError("(syntax)", f"not valid JSON: {exc.msg} at line {exc.lineno}", source) from None
    return fabric_from_dict(data, source)


def load_fabric(path: Union[str, Path]) -> Fabric:
    """Read ``build/topology.json`` (written by ``python -m topo build`` / :meth:`Fabric.save`)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise SpecError("(file)", f"cannot read: {exc.strerror or exc}; build it with "
                                  f"'python -m topo build --out {p}'", str(p)) from None
    return load_fabric_text(text, str(p))


__all__ = ["Fabric", "FabricSpec", "HostInfo", "Link", "NicInfo", "NicPort", "PortInfo", "SwitchInfo",
           "build_fabric", "core_name", "ecmp_seed_for", "fabric_from_dict", "graph_of", "host_mac",
           "link_ports", "load_fabric", "load_fabric_text", "nic_intf", "pod_name", "port_mac"]
