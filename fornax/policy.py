"""The VPC policy a FORNAX manager enforces: a plain text file (format below), parsed with
``file:line: statement: field 'name': problem`` errors, and the evaluation of a new
connection against it (:meth:`Policy.evaluate`).

Format — one statement per line, ``#`` starts a comment, words separated by blanks::

    nic  NAME vtep IP uplink-mac MAC underlay-mac MAC gateway-mac MAC
    vpc  NAME vni N                                   # N in 1..16777215
    vm   NAME vpc VPC nic NIC port P ip IP mac MAC [groups G1,G2,...]
    rule GROUP ingress|egress allow|deny PROTO [PORTS] from|to PREFIX
    route VPC PREFIX direct|drop
    lb   VPC VIP:PORT PROTO BACKEND:PORT [BACKEND:PORT ...]

* ``nic``: a SmartNIC: its VTEP (underlay) address, its uplink MAC, the MAC of its
  underlay next hop (the peer NIC or the leaf), the gateway MAC its VMs see.
* ``vm``: a VM of VPC ``VPC`` on NIC ``NIC``'s port ``P`` (2..254), with its address and
  MAC in the VPC and its security groups, in order. Addresses may overlap across VPCs.
* ``rule``: appends a rule to security group ``GROUP`` (created by its first rule).
  ``PROTO`` is ``tcp``, ``udp``, ``icmp`` or ``any``; ``PORTS`` (tcp/udp only) ``N``,
  ``N-M`` or ``any`` (the default); ``ingress ... from`` (who may connect to the VM, on
  which of its ports), ``egress ... to`` (where the VM may connect). A VM's rules are its
  groups' rules in order; the first that matches decides; none: deny.
* ``route``: the VPC's destinations: ``direct`` (to the VM holding the address) or
  ``drop``; the longest prefix wins; an address no route covers is dropped.
* ``lb``: a load balancer: connections to ``VIP:PORT`` go to one of the backends (VMs of
  the VPC), chosen by rendezvous hashing of the connection, the same on every NIC; a
  connection keeps its backend while it stays in the list.

Evaluation of a connection at NIC ``n`` (the first packet's direction is the connection's):
the source must be a VM of the VPC (the one on the port it came from: no spoofing); the
destination is resolved (a VIP to its backend, else the route, then the VM holding the
address); the egress rules of a source VM behind ``n`` and the ingress rules of a
destination VM behind ``n`` must allow it (egress sees the VIP the client connects to,
ingress the backend's own port). Each NIC enforces the rules of its own VMs.

Example::

    >>> p = parse_policy(EXAMPLE, "example.policy")
    >>> sorted(p.vms)
    ['a1', 'b1']
    >>> d = p.evaluate("nicA", Conn(100, 6, ip("10.0.0.1"), 40000, ip("10.0.0.2"), 80))
    >>> (d.allowed, d.src_vm, d.dst_vm)
    (True, 'a1', 'b1')
    >>> parse_policy("vpc blue vni 0", "p.txt")
    Traceback (most recent call last):
    ...
    fornax.policy.PolicyError: p.txt:1: vpc blue: field 'vni': 0 is not in 1..16777215
"""
from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Union

from p4src.hashmodel import crc32
from p4src.smartnic.model import IP_PROTO_ICMP, IP_PROTO_TCP, IP_PROTO_UDP, VM_PORTS, ip

PROTOS = {"tcp": IP_PROTO_TCP, "udp": IP_PROTO_UDP, "icmp": IP_PROTO_ICMP, "any": 0}
MAX_VNI = (1 << 24) - 1

EXAMPLE = """\
nic nicA vtep 192.168.0.1 uplink-mac 02:fa:00:00:00:01 underlay-mac 02:fa:00:00:00:02 gateway-mac 02:fe:00:00:00:01
nic nicB vtep 192.168.0.2 uplink-mac 02:fa:00:00:00:02 underlay-mac 02:fa:00:00:00:01 gateway-mac 02:fe:00:00:00:02
vpc blue vni 100
vm a1 vpc blue nic nicA port 2 ip 10.0.0.1 mac 02:00:00:00:01:01 groups web
vm b1 vpc blue nic nicB port 2 ip 10.0.0.2 mac 02:00:00:00:02:01 groups web
rule web egress allow any to 0.0.0.0/0
rule web ingress allow tcp 80 from 10.0.0.0/24
route blue 10.0.0.0/24 direct
"""


class PolicyError(ValueError):
    """A policy file that cannot be used: ``file:line: statement: field 'x': problem``."""


@dataclass(frozen=True, slots=True)
class Nic:
    """A SmartNIC of the policy."""

    name: str
    vtep: int
    uplink_mac: int
    underlay_mac: int
    gateway_mac: int


@dataclass(frozen=True, slots=True)
class Vpc:
    """A VPC: its name and VNI."""

    name: str
    vni: int


@dataclass(frozen=True, slots=True)
class Vm:
    """A VM: where it is (NIC, port), its address and MAC in its VPC, its groups."""

    name: str
    vpc: str
    nic: str
    port: int
    ip: int
    mac: int
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rule:
    """One security-group rule (``lo_port``..``hi_port``; proto 0 is any)."""

    direction: str          # "ingress" | "egress"
    allow: bool
    proto: int
    lo_port: int
    hi_port: int
    peer: ipaddress.IPv4Network
    where: str = ""         # file:line, for the decision's reason

    def matches(self, proto: int, port: int, peer: int) -> bool:
        """True when a connection of ``proto`` to ``port`` with ``peer`` falls under it."""
        if self.proto and self.proto != proto:
            return False
        if proto in (IP_PROTO_TCP, IP_PROTO_UDP) and not self.lo_port <= port <= self.hi_port:
            return False
        return ipaddress.IPv4Address(peer) in self.peer


@dataclass(frozen=True, slots=True)
class Route:
    """A VPC route: ``direct`` (to the VM of the address) or ``drop``."""

    prefix: ipaddress.IPv4Network
    action: str


@dataclass(frozen=True, slots=True)
class LoadBalancer:
    """A VIP (address, port, protocol) and its backends ((address, port), ...)."""

    vpc: str
    vip: int
    port: int
    proto: int
    backends: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Conn:
    """A connection as its first packet shows it (after the backend -> VIP mapping of the
    data plane): VNI, protocol, source and destination address and port."""

    vni: int
    proto: int
    src_ip: int
    src_port: int
    dst_ip: int
    dst_port: int

    def reversed(self) -> "Conn":
        """The same connection seen from the other side."""
        return Conn(self.vni, self.proto, self.dst_ip, self.dst_port, self.src_ip, self.src_port)


@dataclass(frozen=True, slots=True)
class Decision:
    """What the policy says of a connection at one NIC.

    ``src_vm``/``dst_vm``: the VMs at each end (the destination is the backend for a VIP);
    ``backend``: (address, port) the VIP goes to; ``reason``: why (the rule's file:line).
    ``spoofed``: refused because the VM on the ingress port sent as another VM (or as a
    VIP it is no backend of): the frame's key is another connection's, so no session entry
    may be built from it (a deny entry would cut that connection) — the frame is dropped.
    """

    allowed: bool
    reason: str
    src_vm: Optional[str] = None
    dst_vm: Optional[str] = None
    backend: Optional[tuple[int, int]] = None
    lb: Optional[LoadBalancer] = None
    spoofed: bool = False


def _fail(where: str, stmt: str, fld: str, problem: str) -> PolicyError:
    return PolicyError(f"{where}: {stmt}: field '{fld}': {problem}")


def _addr(where: str, stmt: str, fld: str, text: str) -> int:
    try:
        return int(ipaddress.IPv4Address(text))
    except ValueError:
        raise _fail(where, stmt, fld, f"{text!r} is not an IPv4 address") from None


def _mac(where: str, stmt: str, fld: str, text: str) -> int:
    parts = text.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise _fail(where, stmt, fld, f"{text!r} is not a MAC address (aa:bb:cc:dd:ee:ff)")
    try:
        return int("".join(parts), 16)
    except ValueError:
        raise _fail(where, stmt, fld, f"{text!r} is not a MAC address") from None


def _int(where: str, stmt: str, fld: str, text: str, lo: int, hi: int) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise _fail(where, stmt, fld, f"{text!r} is not a number") from None
    if not lo <= value <= hi:
        raise _fail(where, stmt, fld, f"{value} is not in {lo}..{hi}")
    return value


def _prefix(where: str, stmt: str, fld: str, text: str) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(text, strict=True)
    except ValueError as exc:
        raise _fail(where, stmt, fld, f"{text!r} is not an IPv4 prefix ({exc})") from None


def _endpoint(where: str, stmt: str, fld: str, text: str) -> tuple[int, int]:
    addr, sep, port = text.rpartition(":")
    if not sep:
        raise _fail(where, stmt, fld, f"{text!r} is not ADDRESS:PORT")
    return _addr(where, stmt, fld, addr), _int(where, stmt, fld, port, 1, 65535)


def _fields(where: str, stmt: str, words: list[str], required: tuple[str, ...],
            optional: tuple[str, ...] = ()) -> dict[str, str]:
    """``key value`` pairs; every required key once, no unknown or repeated one."""
    if len(words) % 2:
        raise _fail(where, stmt, words[-1], "has no value")
    out: dict[str, str] = {}
    for k, v in zip(words[::2], words[1::2]):
        if k not in required and k not in optional:
            raise _fail(where, stmt, k, f"unknown field (expected: {', '.join(required + optional)})")
        if k in out:
            raise _fail(where, stmt, k, "given twice")
        out[k] = v
    for k in required:
        if k not in out:
            raise _fail(where, stmt, k, "missing")
    return out


@dataclass
class Policy:
    """A parsed, checked policy (see the module docstring); :meth:`evaluate` decides."""

    source: str = "<policy>"
    nics: dict[str, Nic] = field(default_factory=dict)
    vpcs: dict[str, Vpc] = field(default_factory=dict)
    vms: dict[str, Vm] = field(default_factory=dict)
    groups: dict[str, list[Rule]] = field(default_factory=dict)
    routes: dict[str, list[Route]] = field(default_factory=dict)
    lbs: list[LoadBalancer] = field(default_factory=list)
    vm_lines: dict[str, str] = field(default_factory=dict)   # VM name -> file:line

    def __post_init__(self) -> None:
        self._index()

    def _index(self) -> None:
        self.vpc_by_vni: dict[int, Vpc] = {v.vni: v for v in self.vpcs.values()}
        self.vm_by_addr: dict[tuple[str, int], Vm] = {(v.vpc, v.ip): v for v in self.vms.values()}
        self.vip_of: dict[tuple[str, int, int, int], LoadBalancer] = {
            (lb.vpc, lb.proto, lb.vip, lb.port): lb for lb in self.lbs}
        self.backend_of: dict[tuple[str, int, int, int], LoadBalancer] = {
            (lb.vpc, lb.proto, b_ip, b_port): lb for lb in self.lbs for b_ip, b_port in lb.backends}

    # ------------------------------------------------------------------ queries
    def vms_of_nic(self, nic: str) -> list[Vm]:
        """The VMs behind NIC ``nic``, in file order."""
        return [v for v in self.vms.values() if v.nic == nic]

    def vm_on_port(self, nic: str, port: int) -> Optional[Vm]:
        """The VM on port ``port`` of NIC ``nic``."""
        return next((v for v in self.vms.values() if v.nic == nic and v.port == port), None)

    def route(self, vpc: str, addr: int) -> Optional[Route]:
        """The longest route of ``vpc`` covering ``addr`` (None: no route)."""
        a = ipaddress.IPv4Address(addr)
        best = None
        for r in self.routes.get(vpc, []):
            if a in r.prefix and (best is None or r.prefix.prefixlen > best.prefix.prefixlen):
                best = r
        return best

    def rules(self, vm: Vm) -> list[Rule]:
        """The VM's rules: its groups' rules, in order."""
        return [r for g in vm.groups for r in self.groups.get(g, [])]

    def choose_backend(self, lb: LoadBalancer, conn: Conn,
                       among: Optional[Iterable[tuple[int, int]]] = None) -> tuple[int, int]:
        """The backend of ``conn`` by rendezvous hashing (crc32 of the client, the VIP and
        the backend; the highest wins), among ``among`` (default: all)."""
        cands = list(among) if among is not None else list(lb.backends)

        def score(b: tuple[int, int]) -> int:
            return crc32(b"".join(x.to_bytes(4, "big") for x in (
                conn.src_ip, conn.src_port, conn.proto, lb.vip, lb.port, b[0], b[1])))
        return max(cands, key=lambda b: (score(b), b))

    def fingerprints(self) -> tuple[dict[str, str], dict[str, str]]:
        """(VM name -> digest of what its own sessions depend on besides the VPC,
        VPC name -> digest of the VPC's routes, load balancers and VM placements). A
        policy change changes the digests of exactly the scopes it affects."""
        vm_fp = {}
        for v in self.vms.values():
            rules = [(r.direction, r.allow, r.proto, r.lo_port, r.hi_port, str(r.peer))
                     for r in self.rules(v)]
            vm_fp[v.name] = _digest((v.vpc, v.nic, v.port, v.ip, v.mac, v.groups, rules))
        vpc_fp = {}
        for name, vpc in self.vpcs.items():
            vms = sorted((v.name, v.nic, v.port, v.ip, v.mac) for v in self.vms.values()
                         if v.vpc == name)
            nics = sorted((n.name, n.vtep, n.gateway_mac) for n in self.nics.values())
            routes = sorted((str(r.prefix), r.action) for r in self.routes.get(name, []))
            lbs = sorted((lb.vip, lb.port, lb.proto, lb.backends) for lb in self.lbs
                         if lb.vpc == name)
            vpc_fp[name] = _digest((vpc.vni, vms, nics, routes, lbs))
        return vm_fp, vpc_fp

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, nic: str, conn: Conn, in_vm: Optional[str] = None,
                 keep_backend: Optional[tuple[int, int]] = None) -> Decision:
        """The decision at NIC ``nic`` for ``conn`` (its first packet's direction).

        ``in_vm``: the VM on the port the packet came from (None: from the uplink);
        ``keep_backend``: the backend the connection had (kept while still listed).
        """
        vpc = self.vpc_by_vni.get(conn.vni)
        if vpc is None:
            return Decision(False, f"no VPC with VNI {conn.vni}")
        # the source: a VM, or a backend answering for its VIP (the data plane keyed it so)
        lb_src = self.vip_of.get((vpc.name, conn.proto, conn.src_ip, conn.src_port))
        src = self.vm_by_addr.get((vpc.name, conn.src_ip))
        if lb_src is not None and in_vm is not None:
            src = self.vms.get(in_vm)
            if src is None or not any(b[0] == src.ip for b in lb_src.backends):
                return Decision(False, f"{in_vm} is not a backend of its VIP", spoofed=True)
        if src is None:
            return Decision(False, "the source is no VM of the VPC")
        if in_vm is not None and src.name != in_vm:
            return Decision(False, f"spoofed source: {in_vm} sent as {src.name}",
                            spoofed=True)
        # the destination: a VIP's backend, else a route and the VM of the address
        lb = self.vip_of.get((vpc.name, conn.proto, conn.dst_ip, conn.dst_port))
        backend = None
        if lb is not None:
            if keep_backend is not None and keep_backend in lb.backends:
                backend = keep_backend
            else:
                backend = self.choose_backend(lb, conn)
                if in_vm is None:            # it came here: the backend is behind this NIC
                    local = [b for b in lb.backends
                             if (v := self.vm_by_addr.get((vpc.name, b[0]))) and v.nic == nic]
                    if local and backend not in local:
                        backend = self.choose_backend(lb, conn, local)
            dst = self.vm_by_addr.get((vpc.name, backend[0]))
            dst_port = backend[1]
        else:
            route = self.route(vpc.name, conn.dst_ip)
            if route is None or route.action == "drop":
                return Decision(False, "no route" if route is None else
                                f"route {route.prefix} drops", src.name)
            dst = self.vm_by_addr.get((vpc.name, conn.dst_ip))
            dst_port = conn.dst_port
        if dst is None:
            return Decision(False, "no VM holds the destination", src.name)
        if src.nic != nic and dst.nic != nic:
            return Decision(False, "neither end is behind this NIC", src.name, dst.name)
        reasons = []
        if src.nic == nic:
            ok, why = self._check(src, "egress", conn.proto, conn.dst_port, conn.dst_ip)
            if not ok:
                return Decision(False, f"{src.name} egress: {why}", src.name, dst.name, backend, lb)
            reasons.append(f"{src.name} egress {why}")
        if dst.nic == nic:
            ok, why = self._check(dst, "ingress", conn.proto, dst_port, conn.src_ip)
            if not ok:
                return Decision(False, f"{dst.name} ingress: {why}", src.name, dst.name, backend, lb)
            reasons.append(f"{dst.name} ingress {why}")
        return Decision(True, "; ".join(reasons), src.name, dst.name, backend, lb)

    def _check(self, vm: Vm, direction: str, proto: int, port: int, peer: int) -> tuple[bool, str]:
        for r in self.rules(vm):
            if r.direction == direction and r.matches(proto, port, peer):
                return r.allow, ("allowed" if r.allow else "denied") + f" by {r.where}"
        return False, "no rule allows it"


def _digest(obj: object) -> str:
    return hashlib.sha1(repr(obj).encode()).hexdigest()


# ---------------------------------------------------------------------- parsing
def parse_policy(text: str, source: str = "<policy>") -> Policy:
    """Parse and check a policy; :class:`PolicyError` at the first problem."""
    p = Policy(source)
    rule_lines: list[tuple[str, str, list[str]]] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}:{lineno}"
        words = line.split()
        kw = words[0]
        if kw == "nic":
            _nic(p, where, words[1:])
        elif kw == "vpc":
            _vpc(p, where, words[1:])
        elif kw == "vm":
            _vm(p, where, words[1:])
        elif kw == "rule":
            _rule(p, where, words[1:])
        elif kw == "route":
            rule_lines.append((where, "route", words[1:]))
        elif kw == "lb":
            rule_lines.append((where, "lb", words[1:]))
        else:
            raise PolicyError(f"{where}: unknown statement {kw!r} (nic, vpc, vm, rule, route, lb)")
    for where, kw, words in rule_lines:          # routes and LBs refer to VPCs and VMs
        (_route if kw == "route" else _lb)(p, where, words)
    _check_refs(p)
    p._index()
    return p


def load_policy(path: Union[str, Path]) -> Policy:
    """Read and parse a policy file (PolicyError also when it cannot be read)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_policy(text, str(path))


def _name(where: str, stmt: str, words: list[str], taken: dict) -> str:
    if not words:
        raise PolicyError(f"{where}: {stmt}: field 'name': missing")
    name = words[0]
    if name in taken:
        raise _fail(where, f"{stmt} {name}", "name", "declared twice")
    return name


def _nic(p: Policy, where: str, words: list[str]) -> None:
    name = _name(where, "nic", words, p.nics)
    st = f"nic {name}"
    f = _fields(where, st, words[1:], ("vtep", "uplink-mac", "underlay-mac", "gateway-mac"))
    p.nics[name] = Nic(name, _addr(where, st, "vtep", f["vtep"]),
                       _mac(where, st, "uplink-mac", f["uplink-mac"]),
                       _mac(where, st, "underlay-mac", f["underlay-mac"]),
                       _mac(where, st, "gateway-mac", f["gateway-mac"]))


def _vpc(p: Policy, where: str, words: list[str]) -> None:
    name = _name(where, "vpc", words, p.vpcs)
    st = f"vpc {name}"
    f = _fields(where, st, words[1:], ("vni",))
    vni = _int(where, st, "vni", f["vni"], 1, MAX_VNI)
    if any(v.vni == vni for v in p.vpcs.values()):
        raise _fail(where, st, "vni", f"{vni} is another VPC's")
    p.vpcs[name] = Vpc(name, vni)


def _vm(p: Policy, where: str, words: list[str]) -> None:
    name = _name(where, "vm", words, p.vms)
    st = f"vm {name}"
    f = _fields(where, st, words[1:], ("vpc", "nic", "port", "ip", "mac"), ("groups",))
    if f["vpc"] not in p.vpcs:
        raise _fail(where, st, "vpc", f"no vpc named {f['vpc']!r} declared before")
    if f["nic"] not in p.nics:
        raise _fail(where, st, "nic", f"no nic named {f['nic']!r} declared before")
    port = _int(where, st, "port", f["port"], VM_PORTS.start, VM_PORTS.stop - 1)
    addr = _addr(where, st, "ip", f["ip"])
    for v in p.vms.values():
        if v.nic == f["nic"] and v.port == port:
            raise _fail(where, st, "port", f"port {port} of {v.nic} is {v.name}'s")
        if v.vpc == f["vpc"] and v.ip == addr:
            raise _fail(where, st, "ip", f"{f['ip']} is {v.name}'s in VPC {v.vpc}")
    groups = tuple(g for g in f.get("groups", "").split(",") if g)
    p.vms[name] = Vm(name, f["vpc"], f["nic"], port, addr, _mac(where, st, "mac", f["mac"]),
                     groups)
    p.vm_lines[name] = where


def _rule(p: Policy, where: str, words: list[str]) -> None:
    if not words:
        raise PolicyError(f"{where}: rule: field 'group': missing")
    st = f"rule {words[0]}"
    w = words[1:]
    if len(w) < 4:
        raise PolicyError(f"{where}: {st}: expected 'ingress|egress allow|deny PROTO [PORTS] "
                          "from|to PREFIX'")
    direction, verdict, proto_text = w[0], w[1], w[2]
    if direction not in ("ingress", "egress"):
        raise _fail(where, st, "direction", f"{direction!r} is not ingress or egress")
    if verdict not in ("allow", "deny"):
        raise _fail(where, st, "action", f"{verdict!r} is not allow or deny")
    if proto_text not in PROTOS:
        raise _fail(where, st, "proto", f"{proto_text!r} is not tcp, udp, icmp or any")
    rest = w[3:]
    lo, hi = 0, 65535
    if len(rest) == 3:
        ports, rest = rest[0], rest[1:]
        if proto_text not in ("tcp", "udp"):
            raise _fail(where, st, "ports", f"ports need tcp or udp, not {proto_text}")
        if ports != "any":
            a, _, b = ports.partition("-")
            lo = _int(where, st, "ports", a, 0, 65535)
            hi = _int(where, st, "ports", b, 0, 65535) if b else lo
            if hi < lo:
                raise _fail(where, st, "ports", f"{ports}: the range is empty")
    if len(rest) != 2:
        raise PolicyError(f"{where}: {st}: expected 'from|to PREFIX' at the end")
    want = "from" if direction == "ingress" else "to"
    if rest[0] != want:
        raise _fail(where, st, "peer", f"{direction} takes '{want} PREFIX', not {rest[0]!r}")
    p.groups.setdefault(words[0], []).append(
        Rule(direction, verdict == "allow", PROTOS[proto_text], lo, hi,
             _prefix(where, st, "peer", rest[1]), where))


def _route(p: Policy, where: str, words: list[str]) -> None:
    if len(words) != 3:
        raise PolicyError(f"{where}: route: expected 'route VPC PREFIX direct|drop'")
    vpc, prefix, action = words
    st = f"route {vpc}"
    if vpc not in p.vpcs:
        raise _fail(where, st, "vpc", f"no vpc named {vpc!r}")
    if action not in ("direct", "drop"):
        raise _fail(where, st, "action", f"{action!r} is not direct or drop")
    net = _prefix(where, st, "prefix", prefix)
    if any(r.prefix == net for r in p.routes.get(vpc, [])):
        raise _fail(where, st, "prefix", f"{prefix} has a route already")
    p.routes.setdefault(vpc, []).append(Route(net, action))


def _lb(p: Policy, where: str, words: list[str]) -> None:
    if len(words) < 4:
        raise PolicyError(f"{where}: lb: expected 'lb VPC VIP:PORT PROTO BACKEND:PORT ...'")
    vpc = words[0]
    st = f"lb {vpc}"
    if vpc not in p.vpcs:
        raise _fail(where, st, "vpc", f"no vpc named {vpc!r}")
    vip, port = _endpoint(where, st, "vip", words[1])
    proto = words[2]
    if proto not in ("tcp", "udp"):
        raise _fail(where, st, "proto", f"{proto!r} is not tcp or udp")
    if any(v.vpc == vpc and v.ip == vip for v in p.vms.values()):
        raise _fail(where, st, "vip", f"{words[1]}: the address is a VM's")
    backends = []
    for text in words[3:]:
        b = _endpoint(where, st, "backends", text)
        if not any(v.vpc == vpc and v.ip == b[0] for v in p.vms.values()):
            raise _fail(where, st, "backends", f"{text}: no VM of {vpc} has this address")
        for other in p.lbs:
            if other.vpc == vpc and other.proto == PROTOS[proto] and b in other.backends:
                raise _fail(where, st, "backends", f"{text} is a backend of another VIP")
        if b in backends:
            raise _fail(where, st, "backends", f"{text} listed twice")
        backends.append(b)
    if any(lb.vpc == vpc and lb.vip == vip and lb.port == port and lb.proto == PROTOS[proto]
           for lb in p.lbs):
        raise _fail(where, st, "vip", f"{words[1]} {proto} is declared twice")
    p.lbs.append(LoadBalancer(vpc, vip, port, PROTOS[proto], tuple(backends)))


def _check_refs(p: Policy) -> None:
    for v in p.vms.values():
        for g in v.groups:
            if g not in p.groups:
                raise PolicyError(f"{p.vm_lines.get(v.name, p.source)}: vm {v.name}: field "
                                  f"'groups': no rule names group {g!r}")


__all__ = ["Conn", "Decision", "EXAMPLE", "LoadBalancer", "Nic", "Policy", "PolicyError", "Route",
           "Rule", "Vm", "Vpc", "ip", "load_policy", "parse_policy"]
