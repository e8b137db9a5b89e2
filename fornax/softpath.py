"""The software datapath: what the SmartNIC's pipeline does to a packet, done in Python on
the manager's CPU — for a session pinned to software, a connection the full table could
not take, traffic that is not TCP/UDP, and everything while the hardware path hangs
(:mod:`fornax.fallback`). Its output is byte for byte the pipeline's (tests compare the
two on p4sim): the same VXLAN header and source port, MACs, load-balancer translation and
checksums.

Frames are parsed with :mod:`struct` (no Scapy: this runs per packet).

Example::

    >>> nic = NicIdentity(ip("192.168.0.1"), 0x02fa00000001, 0x02fa00000002, 0x02fe00000001)
    >>> frame = bytes.fromhex("02fe00000001 020000000101 0800".replace(" ", "")) + bytes(
    ...     [0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]) + bytes(
    ...     [0x9c, 0x40, 0, 80] + [0] * 9 + [0x02] + [0] * 6)
    >>> pkt = parse_frame(frame, in_port=2)
    >>> (pkt.proto, pkt.src_port, pkt.dst_port, pkt.tcp_flags)
    (6, 40000, 80, 2)
    >>> port, out = forward(pkt, 100, NextHop.remote(ip("192.168.0.2"), 0x020000000201), nic)
    >>> port, len(out) - len(frame)
    (1, 50)
"""
from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass
from typing import Optional

from p4src.smartnic.model import (IP_PROTO_TCP, IP_PROTO_UDP, UPLINK_PORT, VXLAN_FLAGS_VNI,
                                  VXLAN_UDP_PORT, NicIdentity, SessionKey, canonical_key, ip,
                                  vxlan_source_port)

ETH = struct.Struct("!6s6sH")
IPV4 = struct.Struct("!BBHHHBBH4s4s")
UDP_H = struct.Struct("!HHHH")
ETHERTYPE_IPV4, ETHERTYPE_ARP = 0x0800, 0x0806


def _mac_bytes(value: int) -> bytes:
    return value.to_bytes(6, "big")


def ones_sum(data: bytes) -> int:
    """RFC 1071 ones'-complement sum of big-endian 16-bit words (odd tail padded)."""
    if len(data) % 2:
        data += b"\x00"
    words = array("H", data)
    if words.itemsize != 2:                            # pragma: no cover - exotic platforms
        raise RuntimeError("array('H') is not 16-bit here")
    words.byteswap() if _LITTLE else None
    total = sum(words)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


_LITTLE = array("H", b"\x01\x00")[0] == 1


def checksum(data: bytes) -> int:
    """The Internet checksum of ``data`` (the complement of :func:`ones_sum`)."""
    return (~ones_sum(data)) & 0xFFFF


@dataclass(slots=True)
class Packet:
    """A parsed frame: where the tenant frame starts (after the underlay, when it came in
    VXLAN on the uplink), its IPv4 and TCP/UDP fields.

    ``vni`` is the VXLAN header's (None when the frame had no underlay); ``l4`` is True
    for TCP or UDP with ports (IPv4 without options, first fragment)."""

    frame: bytes
    in_port: int
    tenant: int                 # offset of the tenant Ethernet header
    vni: Optional[int]
    ethertype: int
    ip_off: int = 0
    proto: int = 0
    src_ip: int = 0
    dst_ip: int = 0
    total_len: int = 0
    dscp: int = 0
    l4: bool = False
    src_port: int = 0
    dst_port: int = 0
    tcp_flags: int = 0
    icmp_type: int = -1

    @property
    def tenant_frame(self) -> bytes:
        """The tenant's frame (the underlay stripped)."""
        return self.frame[self.tenant:]


def parse_frame(frame: bytes, in_port: int, uplink_port: int = UPLINK_PORT) -> Optional[Packet]:
    """The :class:`Packet` of ``frame`` as the pipeline parses it (from the uplink: the
    underlay then the tenant frame), or None when it is not one the software path serves
    (too short; on the uplink, not IPv4/UDP 4789/VXLAN)."""
    off, vni = 0, None
    if in_port == uplink_port:
        if len(frame) < 50:
            return None
        _, _, et = ETH.unpack_from(frame, 0)
        if et != ETHERTYPE_IPV4 or frame[14] != 0x45 or frame[23] != IP_PROTO_UDP:
            return None
        frag = struct.unpack_from("!H", frame, 20)[0] & 0x1FFF
        if frag or struct.unpack_from("!H", frame, 36)[0] != VXLAN_UDP_PORT:
            return None
        if not frame[42] & VXLAN_FLAGS_VNI:
            return None
        vni = int.from_bytes(frame[46:49], "big")
        off = 50
    if len(frame) < off + 14:
        return None
    _, _, et = ETH.unpack_from(frame, off)
    pkt = Packet(frame, in_port, off, vni, et)
    if et != ETHERTYPE_IPV4 or len(frame) < off + 34:
        return pkt
    ip_off = off + 14
    vihl, tos, total, _, fragw, _, proto, _, src, dst = IPV4.unpack_from(frame, ip_off)
    pkt.ip_off, pkt.proto, pkt.total_len, pkt.dscp = ip_off, proto, total, tos >> 2
    pkt.src_ip, pkt.dst_ip = int.from_bytes(src, "big"), int.from_bytes(dst, "big")
    l4 = ip_off + 20
    if vihl == 0x45 and not fragw & 0x1FFF:
        if proto == IP_PROTO_TCP and len(frame) >= l4 + 20:
            pkt.src_port, pkt.dst_port = struct.unpack_from("!HH", frame, l4)
            pkt.tcp_flags = frame[l4 + 13]
            pkt.l4 = True
        elif proto == IP_PROTO_UDP and len(frame) >= l4 + 8:
            pkt.src_port, pkt.dst_port = struct.unpack_from("!HH", frame, l4)
            pkt.l4 = True
        elif proto == 1 and len(frame) > l4:
            pkt.icmp_type = frame[l4]
    return pkt


@dataclass(frozen=True, slots=True)
class NextHop:
    """Where a packet goes: a local VM (``port``, ``vm_mac``) or a VM behind another VTEP
    (``vtep``, ``vm_mac``; out of the uplink)."""

    port: int
    vm_mac: int
    vtep: int = 0

    @classmethod
    def local(cls, port: int, vm_mac: int) -> "NextHop":
        """A VM on ``port`` of this NIC."""
        return cls(port, vm_mac)

    @classmethod
    def remote(cls, vtep: int, vm_mac: int) -> "NextHop":
        """A VM behind VTEP ``vtep``."""
        return cls(UPLINK_PORT, vm_mac, vtep)

    @property
    def encap(self) -> bool:
        """True when the packet leaves encapsulated."""
        return self.vtep != 0


@dataclass(frozen=True, slots=True)
class Translation:
    """A load balancer's rewrite of one packet: ``"dst"`` (towards the VIP: destination :=
    backend) or ``"src"`` (from the backend: source := VIP), to ``ip:port``."""

    field: str
    ip: int
    port: int


def forward(pkt: Packet, vni: int, hop: NextHop, nic: NicIdentity,
            nat: Optional[Translation] = None, key: Optional[SessionKey] = None) -> tuple[int, bytes]:
    """(egress port, frame) of an allowed packet, exactly as the pipeline builds it:
    decapsulated, translated (checksums recomputed as the pipeline does), its MACs set,
    encapsulated towards ``hop.vtep`` with the session's VXLAN source port (``key``: the
    session key, computed from the packet when None)."""
    tenant = bytearray(pkt.frame[pkt.tenant:])
    tenant[0:6] = _mac_bytes(hop.vm_mac)
    tenant[6:12] = _mac_bytes(nic.vm_gw_mac)
    if pkt.ethertype == ETHERTYPE_IPV4 and pkt.ip_off:
        i = pkt.ip_off - pkt.tenant
        l4 = i + 20
        if nat is not None and pkt.l4:
            if nat.field == "dst":
                tenant[i + 16:i + 20] = nat.ip.to_bytes(4, "big")
                tenant[l4 + 2:l4 + 4] = nat.port.to_bytes(2, "big")
            else:
                tenant[i + 12:i + 16] = nat.ip.to_bytes(4, "big")
                tenant[l4:l4 + 2] = nat.port.to_bytes(2, "big")
            _l4_checksum(tenant, i, pkt)
        if tenant[i] == 0x45:                   # the pipeline recomputes the header's
            tenant[i + 10:i + 12] = b"\x00\x00"
            tenant[i + 10:i + 12] = checksum(bytes(tenant[i:i + 20])).to_bytes(2, "big")
    if not hop.encap:
        return hop.port, bytes(tenant)
    if key is None:
        key = session_key_of(pkt, vni)[0]
    total = pkt.total_len + 50
    outer_ip = bytearray(IPV4.pack(0x45, (pkt.dscp << 2) & 0xFC, total & 0xFFFF, 0, 0x4000, 64,
                                   IP_PROTO_UDP, 0, nic.vtep_ip.to_bytes(4, "big"),
                                   hop.vtep.to_bytes(4, "big")))
    outer_ip[10:12] = checksum(bytes(outer_ip)).to_bytes(2, "big")
    udp = UDP_H.pack(vxlan_source_port(key), VXLAN_UDP_PORT, (pkt.total_len + 30) & 0xFFFF, 0)
    vxlan = bytes([VXLAN_FLAGS_VNI, 0, 0, 0]) + vni.to_bytes(3, "big") + b"\x00"
    eth = ETH.pack(_mac_bytes(nic.underlay_gw_mac), _mac_bytes(nic.uplink_mac), ETHERTYPE_IPV4)
    return UPLINK_PORT, eth + bytes(outer_ip) + udp + vxlan + bytes(tenant)


def _l4_checksum(tenant: bytearray, i: int, pkt: Packet) -> None:
    """Recompute the TCP/UDP checksum as ``update_checksum_with_payload`` does: over the
    pseudo-header (length = IPv4 total length - 20) and every byte after the IPv4 header
    (a UDP checksum of 0 stays 0)."""
    l4 = i + 20
    seg_len = (pkt.total_len - 20) & 0xFFFF
    seg = bytearray(tenant[l4:])
    if pkt.proto == IP_PROTO_TCP:
        off = 16
    else:
        off = 6
        if tenant[l4 + 6:l4 + 8] == b"\x00\x00":
            return
    seg[off:off + 2] = b"\x00\x00"
    pseudo = bytes(tenant[i + 12:i + 20]) + bytes([0, pkt.proto]) + seg_len.to_bytes(2, "big")
    tenant[l4 + off:l4 + off + 2] = checksum(pseudo + bytes(seg)).to_bytes(2, "big")


def session_key_of(pkt: Packet, vni: int, backend_vip: Optional[tuple[int, int]] = None,
                   baseline: bool = False) -> tuple[SessionKey, int]:
    """The session key and direction of ``pkt`` (``backend_vip``: the VIP its source
    answers for, as ``lb_reverse`` maps it)."""
    src_ip, src_port = backend_vip if backend_vip is not None else (pkt.src_ip, pkt.src_port)
    return canonical_key(vni, pkt.proto, src_ip, src_port, pkt.dst_ip, pkt.dst_port, baseline)


def arp_reply(frame: bytes, gateway_mac: int) -> Optional[bytes]:
    """The pipeline's answer to a VM's ARP request (None: not a request, or one for the
    asker's own address)."""
    if len(frame) < 42 or ETH.unpack_from(frame, 0)[2] != ETHERTYPE_ARP:
        return None
    op = struct.unpack_from("!H", frame, 20)[0]
    sha, spa, tpa = frame[22:28], frame[28:32], frame[38:42]
    if op != 1 or spa == tpa:
        return None
    gw = _mac_bytes(gateway_mac)
    out = bytearray(frame)
    out[0:6], out[6:12] = sha, gw
    out[20:22] = b"\x00\x02"
    out[22:28], out[28:32] = gw, tpa
    out[32:38], out[38:42] = sha, spa
    return bytes(out)


__all__ = ["NextHop", "Packet", "Translation", "arp_reply", "checksum", "forward", "ip",
           "ones_sum", "parse_frame", "session_key_of"]
