"""Frames for lab checks: build UDP/IPv4 frames with Scapy (once per packet, not in hot
loops) and read the fields a checker compares with plain ``struct`` (fast, no dissection).

Example::

    >>> f = udp_frame("10.0.0.1", "10.1.0.2", sport=49152, dport=4791, ecn=2)
    >>> fields = udp_fields(f)
    >>> (fields.src, fields.dst, fields.sport, fields.dport, fields.ecn)
    ('10.0.0.1', '10.1.0.2', 49152, 4791, 2)
"""
from __future__ import annotations

import socket
import struct
from typing import NamedTuple, Optional

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

HOST_MAC = "02:00:00:aa:00:01"
SWITCH_MAC = "02:00:00:00:01:01"
ETHERTYPE_IPV4 = 0x0800


class UdpFields(NamedTuple):
    """What a checker compares of a UDP/IPv4 frame (addresses as dotted strings)."""

    src: str
    dst: str
    proto: int
    sport: int
    dport: int
    dscp: int
    ecn: int
    ttl: int


def udp_frame(src: str, dst: str, sport: int = 49152, dport: int = 4791, *, ecn: int = 0,
              dscp: int = 0, ttl: int = 64, eth_src: str = HOST_MAC, eth_dst: str = SWITCH_MAC,
              length: int = 100) -> bytes:
    """A UDP/IPv4 Ethernet frame of ``length`` bytes with correct checksums."""
    pkt = (Ether(src=eth_src, dst=eth_dst) / IP(src=src, dst=dst, ttl=ttl, tos=(dscp << 2) | ecn)
           / UDP(sport=sport, dport=dport))
    pad = max(0, length - len(pkt))
    return bytes(pkt / (b"\x00" * pad))


def udp_fields(frame: bytes) -> Optional[UdpFields]:
    """The fields of an untagged UDP/IPv4 frame, or None for anything else."""
    if len(frame) < 42 or struct.unpack_from("!H", frame, 12)[0] != ETHERTYPE_IPV4:
        return None
    ihl = (frame[14] & 0x0F) * 4
    tos, ttl, proto = frame[15], frame[22], frame[23]
    if proto != 17 or len(frame) < 14 + ihl + 8:
        return None
    sport, dport = struct.unpack_from("!HH", frame, 14 + ihl)
    return UdpFields(socket.inet_ntoa(frame[26:30]), socket.inet_ntoa(frame[30:34]), proto,
                     sport, dport, tos >> 2, tos & 3, ttl)


def ipv4_checksum_ok(frame: bytes) -> bool:
    """True when the IPv4 header checksum of an untagged IPv4 frame is correct.

    >>> ipv4_checksum_ok(udp_frame("10.0.0.1", "10.0.0.2"))
    True
    """
    ihl = (frame[14] & 0x0F) * 4
    header = frame[14:14 + ihl]
    total = sum(struct.unpack(f"!{ihl // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF
