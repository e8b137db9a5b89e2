"""The contract of ``p4src/smartnic/smartnic.p4`` and a bit-exact model of what its
session engine computes: the canonical session key, the check code over an entry, the
TCP state machine, the VXLAN source port; plus the names, constants and encodings of its
tables, digest and CPU headers.

The manager (:mod:`fornax`) builds entries and decodes events with this module; tests
compare p4sim packet by packet against it. Nothing here imports p4sim or the manager (the
CRCs and the bit packing are :mod:`p4src.hashmodel`'s, BMv2's).

Example::

    >>> key, d = canonical_key(100, 6, ip("10.0.0.2"), 80, ip("10.0.0.1"), 40000)
    >>> (str(key), d)
    ('vni 100 tcp 10.0.0.1:40000 <-> 10.0.0.2:80', 1)
    >>> canonical_key(100, 6, ip("10.0.0.1"), 40000, ip("10.0.0.2"), 80)[0] == key
    True
    >>> data = SessionData(VERDICT_ALLOW, scope=3, version=1, slot=7, gen=1, nh_lo=1, nh_hi=2)
    >>> f"{check_code(key, data):08x}" == f"{data.with_check(key).check:08x}"
    True
    >>> tcp_next(TCP_NONE, 0, TCP_FLAG_SYN, 0)
    (1, 0)
"""
from __future__ import annotations

import ipaddress
import socket
import struct
from dataclasses import dataclass, field
from typing import Mapping, Optional

from p4src.hashmodel import crc16_arc, crc32, pack_fields

# ------------------------------------------------------------------ names (P4Info)
NIC_TABLE = "SmartNicIngress.nic_info.config"
NIC_ACTION = "SmartNicIngress.nic_info.set_nic"
PORTS_TABLE = "SmartNicIngress.ports.ports"
VM_PORT_ACTION = "SmartNicIngress.ports.vm_port"
UPLINK_ACTION = "SmartNicIngress.ports.uplink"
VPCS_TABLE = "SmartNicIngress.ports.vpcs"
VPC_ACTION = "SmartNicIngress.ports.vpc"
LB_REVERSE_TABLE = "SmartNicIngress.session_key.lb_reverse"
FROM_BACKEND_ACTION = "SmartNicIngress.session_key.from_backend"
SESSIONS_TABLE = "SmartNicIngress.sessions.sessions"
SESSION_HIT_ACTION = "SmartNicIngress.sessions.session_hit"
SESSIONS_COUNTER = "SmartNicIngress.sessions.hits"
SCOPES_TABLE = "SmartNicIngress.sessions.scopes"
SCOPE_ACTION = "SmartNicIngress.sessions.current"
NEXTHOPS_TABLE = "SmartNicIngress.forward.nexthops"
TO_VM_ACTION = "SmartNicIngress.forward.to_vm"
TO_REMOTE_ACTION = "SmartNicIngress.forward.to_remote"
EVENTS_COUNTER = "SmartNicIngress.events"
TCP_REGISTER = "SmartNicIngress.tcp.states"
TCP_DIGEST = "tcp_event_t"
TCP_DIGEST_FIELDS = ("vni", "proto", "ip_lo", "ip_hi", "port_lo", "port_hi", "slot",
                     "old_state", "new_state")
SESSION_KEY_FIELDS = ("meta.vni", "meta.key_proto", "meta.key_ip_lo", "meta.key_ip_hi",
                      "meta.key_port_lo", "meta.key_port_hi")

# ------------------------------------------------------------------ constants (define.p4)
CPU_PORT = 255
UPLINK_PORT = 1
VM_PORTS = range(2, 255)
DEFAULT_SESSION_TABLE_SIZE = 262144
IP_PROTO_ICMP, IP_PROTO_TCP, IP_PROTO_UDP = 1, 6, 17
VXLAN_UDP_PORT = 4789
VXLAN_FLAGS_VNI = 0x08
VXLAN_OVERHEAD = 50          # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8

OP_EMIT, OP_PIPELINE, OP_HEARTBEAT = 0, 1, 2

PUNT_MISS = 1
PUNT_STALE = 2
PUNT_CORRUPT = 3
PUNT_SOFTWARE = 4
PUNT_HEARTBEAT = 5
PUNT_OTHER = 6
PUNT_NO_ROUTE = 7
PUNT_NAMES = {PUNT_MISS: "miss", PUNT_STALE: "stale", PUNT_CORRUPT: "corrupt",
              PUNT_SOFTWARE: "software", PUNT_HEARTBEAT: "heartbeat", PUNT_OTHER: "other",
              PUNT_NO_ROUTE: "no-route"}
EV_UNKNOWN_PORT, EV_NOT_VXLAN, EV_UNKNOWN_VNI, EV_DENIED = 8, 9, 10, 11
EV_ARP_ANSWERED, EV_L2_DROPPED, EV_TCP_DIGEST = 12, 13, 14
EVENT_NAMES = {**PUNT_NAMES, EV_UNKNOWN_PORT: "unknown-port", EV_NOT_VXLAN: "not-vxlan",
               EV_UNKNOWN_VNI: "unknown-vni", EV_DENIED: "denied",
               EV_ARP_ANSWERED: "arp-answered", EV_L2_DROPPED: "l2-dropped",
               EV_TCP_DIGEST: "tcp-digest"}

VERDICT_DENY, VERDICT_ALLOW, VERDICT_SOFTWARE = 0, 1, 2
NAT_NONE, NAT_LO, NAT_HI = 0, 1, 2

TCP_NONE, TCP_SYN, TCP_SYNACK, TCP_EST, TCP_FIN1, TCP_CLOSED = range(6)
TCP_STATE_NAMES = ("none", "syn", "synack", "established", "fin1", "closed")
TCP_FLAG_FIN, TCP_FLAG_SYN, TCP_FLAG_RST, TCP_FLAG_ACK = 0x01, 0x02, 0x04, 0x10

#: widths of the check code's input, in the order the program hashes them
CHECK_FIELDS = (("vni", 24), ("proto", 8), ("ip_lo", 32), ("ip_hi", 32), ("port_lo", 16),
                ("port_hi", 16), ("verdict", 8), ("scope", 16), ("version", 16),
                ("slot", 32), ("gen", 8), ("nh_lo", 16), ("nh_hi", 16), ("nat_side", 8),
                ("nat_ip", 32), ("nat_port", 16))
CHECK_MAX = 0xFFFFFFFF          # hash(..., 32w0xffffffff): the crc32 modulo this
SPORT_BASE, SPORT_RANGE = 49152, 16384

_PROTO_NAMES = {IP_PROTO_TCP: "tcp", IP_PROTO_UDP: "udp", IP_PROTO_ICMP: "icmp"}


def ip(text: str) -> int:
    """A dotted IPv4 address as an int: ``ip("10.0.0.1") == 0x0a000001``."""
    return int(ipaddress.IPv4Address(text))


def ip_str(value: int) -> str:
    """An int as a dotted IPv4 address: ``ip_str(0x0a000001) == '10.0.0.1'`` (the event
    log names every rebuilt session: ``inet_ntoa``, not an ``IPv4Address`` each)."""
    if isinstance(value, int) and 0 <= value <= 0xFFFFFFFF:
        return socket.inet_ntoa(value.to_bytes(4, "big"))
    return str(ipaddress.IPv4Address(value))


# ------------------------------------------------------------------ the session key
@dataclass(frozen=True, slots=True, order=True)
class SessionKey:
    """A session's key in canonical order (the lower endpoint first).

    >>> SessionKey(100, 6, 1, 2, 80, 443).packed().hex()
    '000064060000000100000002005001bb'
    >>> SessionKey.unpack(SessionKey(100, 6, 1, 2, 80, 443).packed()).port_hi
    443
    """

    vni: int
    proto: int
    ip_lo: int
    ip_hi: int
    port_lo: int
    port_hi: int

    def packed(self) -> bytes:
        """16 bytes, the key as the manager stores it: VNI (24 bits) and protocol in one
        word, the addresses, the ports."""
        return _KEY.pack((self.vni << 8) | self.proto, self.ip_lo, self.ip_hi, self.port_lo,
                         self.port_hi)

    @classmethod
    def unpack(cls, data: bytes) -> "SessionKey":
        """The inverse of :meth:`packed`."""
        word, ip_lo, ip_hi, port_lo, port_hi = _KEY.unpack(data)
        return cls(word >> 8, word & 0xFF, ip_lo, ip_hi, port_lo, port_hi)

    def match(self) -> dict[str, int]:
        """The table's match fields by name."""
        return dict(zip(SESSION_KEY_FIELDS, (self.vni, self.proto, self.ip_lo, self.ip_hi,
                                             self.port_lo, self.port_hi)))

    def __str__(self) -> str:
        proto = _PROTO_NAMES.get(self.proto, str(self.proto))
        return (f"vni {self.vni} {proto} {ip_str(self.ip_lo)}:{self.port_lo} <-> "
                f"{ip_str(self.ip_hi)}:{self.port_hi}")


_KEY = struct.Struct("!IIIHH")


def canonical_key(vni: int, proto: int, src_ip: int, src_port: int, dst_ip: int,
                  dst_port: int, baseline: bool = False) -> tuple[SessionKey, int]:
    """The session key of a packet from ``src`` to ``dst`` (already normalised by
    ``lb_reverse`` when its sender is a load balancer's backend) and its direction
    (0: the packet goes lo -> hi). ``baseline``: the software-centric build keeps the
    packet's own order (each direction a flow of its own; direction always 0).

    >>> canonical_key(1, 17, 5, 9, 5, 8)[1], canonical_key(1, 17, 5, 9, 5, 8, True)[1]
    (1, 0)
    """
    if baseline or (src_ip, src_port) <= (dst_ip, dst_port):
        return SessionKey(vni, proto, src_ip, dst_ip, src_port, dst_port), 0
    return SessionKey(vni, proto, dst_ip, src_ip, dst_port, src_port), 1


# ------------------------------------------------------------------ the action data
@dataclass(frozen=True, slots=True)
class SessionData:
    """The action data of a session entry (``session_hit``) but its check code, which
    :meth:`with_check` computes.

    ``nh_lo``/``nh_hi``: next hops towards the lo / hi endpoint (ids of
    ``forward.nexthops``); ``nat_side``: which endpoint is a VIP this NIC translates to
    ``nat_ip:nat_port``; ``scope``/``version``: the policy scope and the version of it the
    entry was built from; ``slot``/``gen``: the TCP-state cell and its generation.

    >>> SessionData(VERDICT_DENY).params()["verdict"]
    0
    """

    verdict: int
    scope: int = 0
    version: int = 0
    slot: int = 0
    gen: int = 0
    nh_lo: int = 0
    nh_hi: int = 0
    nat_side: int = NAT_NONE
    nat_ip: int = 0
    nat_port: int = 0
    check: int = 0

    def params(self) -> dict[str, int]:
        """``session_hit``'s parameters by name."""
        return {"verdict": self.verdict, "scope": self.scope, "version": self.version,
                "slot": self.slot, "gen": self.gen, "nh_lo": self.nh_lo, "nh_hi": self.nh_hi,
                "nat_side": self.nat_side, "nat_ip": self.nat_ip, "nat_port": self.nat_port,
                "check": self.check}

    @classmethod
    def from_params(cls, params: Mapping[str, int]) -> "SessionData":
        """The inverse of :meth:`params` (a read-back entry)."""
        return cls(**{k: int(params[k]) for k in cls.__slots__})  # type: ignore[arg-type]

    def with_check(self, key: SessionKey) -> "SessionData":
        """The same data with its check code over ``key`` and itself."""
        return SessionData(self.verdict, self.scope, self.version, self.slot, self.gen,
                           self.nh_lo, self.nh_hi, self.nat_side, self.nat_ip, self.nat_port,
                           check_code(key, self))

    def placed(self, key: SessionKey, slot: int, gen: int,
               verdict: Optional[int] = None) -> "SessionData":
        """The same data in TCP-state ``slot`` of generation ``gen`` (and ``verdict``, when
        given), with its check code over ``key``: what the manager installs.

        >>> k = SessionKey(100, 6, 1, 2, 80, 443)
        >>> want = SessionData(VERDICT_ALLOW, scope=3, slot=7, gen=1).with_check(k)
        >>> SessionData(VERDICT_ALLOW, scope=3).placed(k, 7, 1) == want
        True
        """
        v = self.verdict if verdict is None else verdict
        return SessionData(v, self.scope, self.version, slot, gen, self.nh_lo, self.nh_hi,
                           self.nat_side, self.nat_ip, self.nat_port,
                           _check(key.vni, key.proto, key.ip_lo, key.ip_hi, key.port_lo,
                                  key.port_hi, v, self.scope, self.version, slot, gen,
                                  self.nh_lo, self.nh_hi, self.nat_side, self.nat_ip,
                                  self.nat_port))


def check_code(key: SessionKey, data: SessionData) -> int:
    """The check code the pipeline recomputes on every hit: crc32 (BMv2's) of the key and
    the action data but the code itself, packed in :data:`CHECK_FIELDS` order, modulo
    ``0xffffffff`` (v1model ``hash`` with max ``32w0xffffffff``)."""
    return _check(key.vni, key.proto, key.ip_lo, key.ip_hi, key.port_lo, key.port_hi,
                  data.verdict, data.scope, data.version, data.slot, data.gen, data.nh_lo,
                  data.nh_hi, data.nat_side, data.nat_ip, data.nat_port)


# CHECK_FIELDS are all whole bytes: the VNI and the protocol share one 32-bit word
_CHECK_STRUCT = struct.Struct("!IIIHHBHHIBHHBIH")


def _check(*values: int) -> int:
    """crc32 of ``values`` (in :data:`CHECK_FIELDS` order) packed as the pipeline packs
    them. In range, one ``struct`` pack; any value out of its field's width (or negative)
    takes :func:`pack_fields`, which keeps the low bits as the pipeline's fields do.

    >>> vals = (100, 6, 1, 2, 80, 443, 1, 3, 2, 7, 1, 1, 2, 0, 0, 0)
    >>> widths = [w for _, w in CHECK_FIELDS]
    >>> _check(*vals) == crc32(pack_fields(list(zip(vals, widths)))) % CHECK_MAX
    True
    """
    vni, proto = values[0], values[1]
    try:
        if vni >> 24 or proto >> 8:
            raise struct.error("vni or proto out of range")
        data = _CHECK_STRUCT.pack((vni << 8) | proto, *values[2:])
    except struct.error:
        data = pack_fields([(v, w) for v, (_, w) in zip(values, CHECK_FIELDS)])
    return crc32(data) % CHECK_MAX


def vxlan_source_port(key: SessionKey) -> int:
    """The outer UDP source port of an encapsulated packet of session ``key``: crc16
    (BMv2's, CRC-16/ARC) of the key, in 49152..65535."""
    data = pack_fields([(key.vni, 24), (key.proto, 8), (key.ip_lo, 32), (key.ip_hi, 32),
                        (key.port_lo, 16), (key.port_hi, 16)])
    return SPORT_BASE + crc16_arc(data) % SPORT_RANGE


# ------------------------------------------------------------------ TCP state
def tcp_next(state: int, fin_dir: int, flags: int, direction: int) -> tuple[int, int]:
    """The (state, FIN direction) after a packet with TCP ``flags`` going ``direction``
    (tcp_state.p4's machine).

    >>> s = (TCP_NONE, 0)
    >>> for flags, d in ((0x02, 0), (0x12, 1), (0x10, 0), (0x11, 0), (0x11, 1)):
    ...     s = tcp_next(*s, flags, d)
    >>> TCP_STATE_NAMES[s[0]]
    'closed'
    """
    if flags & TCP_FLAG_RST:
        return TCP_CLOSED, fin_dir
    syn_ack = flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)
    if syn_ack == TCP_FLAG_SYN:
        return (TCP_SYN, 0) if state in (TCP_NONE, TCP_CLOSED) else (state, fin_dir)
    if syn_ack == TCP_FLAG_SYN | TCP_FLAG_ACK:
        return (TCP_SYNACK, fin_dir) if state in (TCP_NONE, TCP_SYN) else (state, fin_dir)
    if flags & TCP_FLAG_FIN:
        if state == TCP_FIN1:
            return (TCP_CLOSED, fin_dir) if direction != fin_dir else (state, fin_dir)
        return (state, fin_dir) if state == TCP_CLOSED else (TCP_FIN1, direction)
    if flags & TCP_FLAG_ACK and state in (TCP_NONE, TCP_SYNACK):
        return TCP_EST, fin_dir
    return state, fin_dir


@dataclass(frozen=True, slots=True)
class TcpEvent:
    """A decoded ``tcp_event_t`` digest: the session's key and slot, its TCP state before
    and after the packet.

    >>> ev = tcp_event({"vni": 1, "proto": 6, "ip_lo": 1, "ip_hi": 2, "port_lo": 3,
    ...                 "port_hi": 4, "slot": 5, "old_state": 3, "new_state": 4})
    >>> ev.closed, TCP_STATE_NAMES[ev.new_state]
    (False, 'fin1')
    """

    key: SessionKey
    slot: int
    old_state: int
    new_state: int

    @property
    def closed(self) -> bool:
        """The connection ended (both FINs or a RST)."""
        return self.new_state == TCP_CLOSED


def tcp_event(fields: Mapping[str, int]) -> TcpEvent:
    """A ``tcp_event_t`` digest message (member name -> value) decoded; KeyError naming
    a missing member."""
    key = SessionKey(fields["vni"], fields["proto"], fields["ip_lo"], fields["ip_hi"],
                     fields["port_lo"], fields["port_hi"])
    return TcpEvent(key, fields["slot"], fields["old_state"], fields["new_state"])


# ------------------------------------------------------------------ the CPU headers
@dataclass(frozen=True, slots=True)
class Punt:
    """A PacketIn: the frame as it arrived (the underlay still on, from the uplink), the
    port it arrived on (or was injected as from), why it reached software, its VNI.

    >>> punt({"ingress_port": 2, "reason": 1, "vni": 100}, b"x").reason_name
    'miss'
    """

    frame: bytes
    in_port: int
    reason: int
    vni: int

    @property
    def reason_name(self) -> str:
        """The reason's name (``miss``, ``stale``, …)."""
        return PUNT_NAMES.get(self.reason, str(self.reason))


def punt(metadata: Mapping[str, int], payload: bytes) -> Punt:
    """A PacketIn's metadata (by name) and payload as a :class:`Punt`."""
    return Punt(payload, int(metadata.get("ingress_port", 0)), int(metadata.get("reason", 0)),
                int(metadata.get("vni", 0)))


def packet_out_metadata(op: int, egress_port: int = 0, in_port: int = 0) -> dict[str, int]:
    """The ``packet_out`` metadata of a PacketOut: ``op`` (OP_*), where it leaves
    (OP_EMIT) or which port it is processed as from (OP_PIPELINE, OP_HEARTBEAT).

    >>> packet_out_metadata(OP_PIPELINE, in_port=2)
    {'egress_port': 0, 'in_port': 2, 'op': 1}
    """
    return {"egress_port": egress_port, "in_port": in_port, "op": op}


@dataclass(slots=True)
class NicIdentity:
    """``nic_info.config``'s parameters: the NIC's VTEP address and uplink MAC, the
    underlay next hop's MAC and the gateway MAC its VMs see.

    >>> NicIdentity(ip("192.168.0.1"), 1, 2, 3).params()["vtep_ip"]
    3232235521
    """

    vtep_ip: int
    uplink_mac: int
    underlay_gw_mac: int
    vm_gw_mac: int
    extra: dict[str, int] = field(default_factory=dict)

    def params(self) -> dict[str, int]:
        """``set_nic``'s parameters by name."""
        return {"vtep_ip": self.vtep_ip, "uplink_mac": self.uplink_mac,
                "underlay_gw_mac": self.underlay_gw_mac, "vm_gw_mac": self.vm_gw_mac}


def tcp_state_cell(gen: int, state: int, fin_dir: int = 0) -> int:
    """The register cell of a slot (bits 15..8 generation, bit 4 FIN direction, 3..0
    state): ``tcp_state_cell(7, TCP_EST) == 0x0703``."""
    return ((gen & 0xFF) << 8) | ((fin_dir & 1) << 4) | (state & 0xF)


def read_tcp_state(cell: int, gen: int) -> Optional[int]:
    """The state a cell holds for a session of generation ``gen`` (None: the cell is an
    earlier session's, which reads as TCP_NONE in the pipeline)."""
    return cell & 0xF if (cell >> 8) & 0xFF == gen & 0xFF else None


__all__ = [n for n in dir() if n.isupper() or n in (
    "SessionKey", "SessionData", "TcpEvent", "Punt", "NicIdentity", "canonical_key",
    "check_code", "vxlan_source_port", "tcp_next", "tcp_event", "punt",
    "packet_out_metadata", "ip", "ip_str", "tcp_state_cell", "read_tcp_state")]
