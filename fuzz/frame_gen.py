"""Hypothesis strategies of Ethernet frames for the frames campaign: valid fabric traffic
(RoCEv2 over UDP/IPv4 with every ECN and DSCP value, other UDP and IP protocols, IPv4
fragments, ARP for the gateway, PFC PAUSE/RESUME, LLDP-like frames), then mutated: VLAN
tags stacked 0-3 deep (802.1Q and 802.1ad), bytes overwritten, truncated anywhere
(down to nothing), grown to jumbo sizes, IPv4 lengths, header lengths and checksums and
UDP lengths wrong, random EtherTypes, plain random bytes.

All built with :mod:`struct` (no scapy: the campaign draws 10^6 frames). Hypothesis
draws ~600 structured frames/s on a 2-core machine, fewer than a 10^6-frame campaign
needs, so each drawn frame is also sent as :func:`variants`: cheap copies with one
more byte-level mutation each, whose positions and values come from a
``random.Random`` that hypothesis seeds (``st.randoms()``): the same seed gives the same
frames.

>>> len(roce_frame(SWITCH_MAC, HOST1_MAC, "10.0.1.1", "10.0.2.1", sport=49152, payload=b"x"))
55
>>> ipv4_checksum(bytes(20)) == 0xFFFF
True
"""
from __future__ import annotations

import random
import socket
import struct
from typing import Any, Callable

from hypothesis import strategies as st

SearchStrategy = st.SearchStrategy
Draw = Callable[[SearchStrategy[Any]], Any]

SWITCH_MAC = bytes.fromhex("020000010001")
HOST1_MAC = bytes.fromhex("02000000aa01")
HOST2_MAC = bytes.fromhex("02000000aa02")
PFC_DST = bytes.fromhex("0180c2000001")
LLDP_DST = bytes.fromhex("0180c200000e")
BROADCAST = b"\xff" * 6
HOST1_IP, HOST2_IP, GATEWAY_IP = "10.0.1.1", "10.0.2.1", "10.0.1.254"
ROCEV2_PORT = 4791
MAX_FRAME = 9014
"""Largest frame the campaign's veths (MTU 9000) carry; larger ones the kernel refuses."""
_IPS = ("10.0.1.1", "10.0.1.2", "10.0.2.1", "10.0.2.9", "10.0.3.1", "10.0.1.254", "0.0.0.0",
        "255.255.255.255", "127.0.0.1", "224.0.0.1", "10.0.2.255")


def ipv4_checksum(header: bytes) -> int:
    """RFC 791 checksum of ``header`` (whose checksum field is taken as it is)."""
    if len(header) % 2:
        header += b"\x00"
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4_header(src: str, dst: str, payload_len: int, *, proto: int = 17, ttl: int = 64,
                dscp: int = 0, ecn: int = 0, ident: int = 0, frag: int = 0) -> bytes:
    """A 20-byte IPv4 header with a correct checksum."""
    head = struct.pack("!BBHHHBBH4s4s", 0x45, (dscp << 2) | ecn, 20 + payload_len, ident, frag,
                       ttl, proto, 0, socket.inet_aton(src), socket.inet_aton(dst))
    return head[:10] + struct.pack("!H", ipv4_checksum(head)) + head[12:]


def roce_frame(dst_mac: bytes, src_mac: bytes, src: str, dst: str, *, sport: int,
               payload: bytes, dscp: int = 26, ecn: int = 2, ttl: int = 64, qpn: int = 7) -> bytes:
    """Ethernet / IPv4 / UDP 4791 / BTH (12 bytes) / payload: a RoCEv2 frame."""
    bth = struct.pack("!BBHII", 0x04, 0x40, 0xFFFF, qpn & 0xFFFFFF, 0)
    udp = struct.pack("!HHHH", sport, ROCEV2_PORT, 8 + len(bth) + len(payload), 0)
    body = udp + bth + payload
    return dst_mac + src_mac + b"\x08\x00" + ipv4_header(src, dst, len(body), dscp=dscp,
                                                          ecn=ecn, ttl=ttl) + body


def _ip(draw: Draw) -> str:
    if draw(st.integers(0, 3)):
        return draw(st.sampled_from(_IPS))
    return socket.inet_ntoa(draw(st.binary(min_size=4, max_size=4)))


def _mac(draw: Draw) -> bytes:
    return draw(st.one_of(st.sampled_from([SWITCH_MAC, HOST1_MAC, HOST2_MAC, BROADCAST, PFC_DST,
                                           LLDP_DST]), st.binary(min_size=6, max_size=6)))


@st.composite
def base_frame(draw: Draw) -> bytes:
    """A valid frame of one kind of fabric traffic (see the module docstring)."""
    kind = draw(st.sampled_from(["roce", "roce", "roce", "udp", "ip_other", "fragment",
                                 "arp", "pfc", "lldp", "ethertype", "random"]))
    dst, src = _mac(draw), _mac(draw) if not draw(st.integers(0, 3)) else HOST1_MAC
    if kind in ("roce", "udp", "ip_other", "fragment"):
        payload = draw(st.binary(max_size=64)) + bytes(draw(st.integers(0, 1400)))
        ttl = draw(st.sampled_from([64, 64, 1, 0, 2, 255]))
        if kind == "roce":
            return roce_frame(dst if draw(st.integers(0, 3)) else SWITCH_MAC, src, _ip(draw), _ip(draw),
                              sport=draw(st.integers(0, 65535)), payload=payload,
                              dscp=draw(st.integers(0, 63)), ecn=draw(st.integers(0, 3)), ttl=ttl,
                              qpn=draw(st.integers(0, 1 << 24)))
        proto = 17 if kind == "udp" else draw(st.integers(0, 255))
        body = payload
        if kind == "udp":
            body = struct.pack("!HHHH", draw(st.integers(0, 65535)), draw(st.integers(0, 65535)),
                               8 + len(payload), 0) + payload
        frag = draw(st.integers(1, 0x1FFF)) | draw(st.sampled_from([0, 0x2000])) if kind == "fragment" else 0
        return dst + src + b"\x08\x00" + ipv4_header(_ip(draw), _ip(draw), len(body), proto=proto,
                                                      ttl=ttl, frag=frag, ecn=draw(st.integers(0, 3))) + body
    if kind == "arp":
        op = draw(st.sampled_from([1, 1, 2, 3, 0]))
        tpa = GATEWAY_IP if draw(st.integers(0, 2)) else _ip(draw)
        body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, src, socket.inet_aton(_ip(draw)),
                           bytes(6), socket.inet_aton(tpa))
        return (BROADCAST if draw(st.integers(0, 2)) else dst) + src + b"\x08\x06" + body
    if kind == "pfc":
        vector = draw(st.integers(0, 0xFFFF))
        times = draw(st.lists(st.integers(0, 0xFFFF), min_size=8, max_size=8))
        opcode = 0x0101 if draw(st.integers(0, 5)) else draw(st.integers(0, 0xFFFF))
        frame = (PFC_DST if draw(st.integers(0, 5)) else dst) + src + struct.pack(
            "!HHH8H", 0x8808, opcode, vector, *times)
        return frame + bytes(max(0, 60 - len(frame)))
    if kind == "lldp":
        tlvs = b"".join(struct.pack("!H", (draw(st.integers(0, 127)) << 9) | len(v)) + v
                        for v in draw(st.lists(st.binary(max_size=40), max_size=5)))
        return LLDP_DST + src + b"\x88\xcc" + tlvs + b"\x00\x00"
    if kind == "ethertype":
        return dst + src + struct.pack("!H", draw(st.integers(0, 0xFFFF))) + draw(st.binary(max_size=100))
    return draw(st.binary(min_size=14, max_size=200) if draw(st.integers(0, 7)) else st.binary(max_size=13))


def _vlan_stack(draw: Draw, frame: bytes) -> bytes:
    depth = draw(st.integers(0, 3))
    if depth == 0 or len(frame) < 14:
        return frame
    tags = b"".join(struct.pack("!HH", draw(st.sampled_from([0x8100, 0x8100, 0x88A8, 0x9100])),
                                draw(st.integers(0, 0xFFFF))) for _ in range(depth))
    return frame[:12] + tags + frame[12:]


@st.composite
def fuzz_frame(draw: Draw) -> bytes:
    """A base frame with 0-3 mutations (see the module docstring), at most
    :data:`MAX_FRAME` bytes unless the ``oversize`` mutation drew more."""
    frame = bytearray(draw(base_frame()))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["none"] * 6 + ["vlan", "vlan", "flip", "flip", "truncate", "truncate",
                                   "grow", "oversize", "ip_len", "ihl", "checksum", "udp_len"]))
        if op == "vlan":
            frame = bytearray(_vlan_stack(draw, bytes(frame)))
        elif op == "flip" and frame:
            for _ in range(draw(st.integers(1, 4))):
                frame[draw(st.integers(0, len(frame) - 1))] = draw(st.integers(0, 255))
        elif op == "truncate":  # mostly to a length a NIC can send (14+), sometimes to nothing
            low = 0 if not draw(st.integers(0, 7)) else min(14, len(frame))
            frame = frame[:draw(st.integers(low, len(frame)))]
        elif op == "grow":      # mostly within a standard MTU, sometimes up to a jumbo frame
            room = max(0, MAX_FRAME - 32 - len(frame))
            frame += draw(st.binary(max_size=32)) + bytes(draw(st.integers(0, min(room, 1500)))
                                                            if draw(st.integers(0, 7)) else
                                                            draw(st.integers(0, room)))
        elif op == "oversize":
            low = max(0, MAX_FRAME + 1 - len(frame))
            frame += bytes(draw(st.integers(low, max(low, MAX_FRAME + 200 - len(frame)))))
        elif len(frame) >= 34 and frame[12:14] == b"\x08\x00":
            if op == "ip_len":
                frame[16:18] = struct.pack("!H", draw(st.integers(0, 0xFFFF)))
            elif op == "ihl":
                frame[14] = (frame[14] & 0xF0) | draw(st.integers(0, 15))
            elif op == "checksum":
                frame[24:26] = struct.pack("!H", draw(st.integers(0, 0xFFFF)))
            elif op == "udp_len" and len(frame) >= 42:
                frame[38:40] = struct.pack("!H", draw(st.integers(0, 0xFFFF)))
    return bytes(frame)


def variants(frame: bytes, rng: random.Random, n: int) -> list[bytes]:
    """``n`` copies of ``frame``, each with one byte-level mutation drawn from ``rng``:
    bytes overwritten, cut short, a VLAN tag inserted, the IPv4 length or the UDP source
    port changed, or none.

    >>> vs = variants(bytes(60), random.Random(1), 4)
    >>> len(vs), all(len(v) <= 64 for v in vs)
    (4, True)
    """
    out = []
    for _ in range(n):
        f = bytearray(frame)
        op = rng.randrange(6)
        if op == 0 and f:
            for _ in range(rng.randint(1, 4)):
                f[rng.randrange(len(f))] = rng.randrange(256)
        elif op == 1:
            del f[rng.randint(min(14, len(f)), len(f)):]
        elif op == 2 and len(f) >= 14:
            f[12:12] = struct.pack("!HH", rng.choice((0x8100, 0x88A8)), rng.randrange(1 << 16))
        elif op == 3 and len(f) >= 18:
            f[16:18] = rng.randrange(1 << 16).to_bytes(2, "big")
        elif op == 4 and len(f) >= 36:
            f[34:36] = rng.randrange(1 << 16).to_bytes(2, "big")
        out.append(bytes(f))
    return out
