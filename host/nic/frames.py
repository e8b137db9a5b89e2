"""RoCEv2 RC frames: RETH for Scapy, the ICRC, pre-built templates and a fast parser.

A RoCEv2 frame is ``Ethernet / IPv4 / UDP 4791 / BTH (12) / [RETH 16 | AETH 4] / payload /
ICRC (4)``. Scapy builds each kind of frame once (:class:`FrameTemplate`); after that a
sender only patches the BTH's ACK-request bit and PSN, the per-packet extension header
(the RETH's virtual address, an AETH's MSN) and appends the ICRC, computed with
``zlib.crc32`` continued from a CRC precomputed over the invariant prefix. That costs a
few microseconds per frame in pure Python (see ``tests/host/test_nic_frames.py``), so no
per-PSN table is needed.

ICRC (IBTA annex A17, as Linux rxe and ConnectX NICs compute it): CRC-32/IEEE over
``8 × 0xFF`` (the pseudo-LRH) followed by the packet from the IPv4 header to the end of
the payload, with the IPv4 TOS, TTL and header checksum, the UDP checksum and the BTH
byte holding FECN/BECN/reserved set to all ones; it goes on the wire least significant
byte first. Switches may therefore rewrite DSCP/ECN/TTL; the UDP source port is covered.

>>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 49152, 7)
>>> t = FrameTemplate.data(f, OP_RC_WRITE_MIDDLE, payload_len=64)
>>> info = parse_roce(t.frame(psn=5))
>>> (info.opcode, info.psn, info.payload_len, verify_icrc(t.frame(psn=5)))
(7, 5, 64, True)
"""
from __future__ import annotations

import socket
import struct
import zlib
from dataclasses import dataclass
from typing import NamedTuple, Optional

from scapy.contrib.roce import AETH, BTH, CNPPadding
from scapy.fields import IntField, XIntField, XLongField
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw, bind_layers

ROCE_UDP_PORT = 4791
DSCP_DATA = 26
DSCP_CNP = 48
ECN_NOT_ECT = 0
ECN_ECT0 = 2
ECN_CE = 3
PSN_MASK = 0xFFFFFF

OP_RC_WRITE_FIRST = 0x06
OP_RC_WRITE_MIDDLE = 0x07
OP_RC_WRITE_LAST = 0x08
OP_RC_WRITE_ONLY = 0x0A
OP_RC_ACK = 0x11
OP_CNP = 0x81

ETH_LEN = 14
IPV4_LEN = 20
UDP_LEN = 8
BTH_LEN = 12
RETH_LEN = 16
AETH_LEN = 4
ICRC_LEN = 4
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_VLAN = 0x8100

_EXT_LEN = {OP_RC_WRITE_FIRST: RETH_LEN, OP_RC_WRITE_ONLY: RETH_LEN, OP_RC_ACK: AETH_LEN}


class RETH(Packet):
    """RDMA Extended Transport Header (16 bytes), on the first packet of an RDMA WRITE.

    >>> len(bytes(RETH(va=0x1000, rkey=0x42, dma_len=4096)))
    16
    """

    name = "RETH"
    fields_desc = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        IntField("dma_len", 0),
    ]


bind_layers(BTH, RETH, opcode=OP_RC_WRITE_FIRST)
bind_layers(BTH, RETH, opcode=OP_RC_WRITE_ONLY)


def icrc(frame_wo_icrc: bytes, l3_offset: int = ETH_LEN) -> int:
    """The ICRC of an IPv4 RoCEv2 frame given without its 4 ICRC bytes (IBTA rule).

    The IPv4 total length and UDP length must already count the ICRC. The value goes on
    the wire as ``icrc(...).to_bytes(4, "little")``.

    >>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 1, 2)
    >>> fr = FrameTemplate.data(f, OP_RC_WRITE_MIDDLE, 8).frame(0)
    >>> icrc(fr[:-4]).to_bytes(4, "little") == fr[-4:]
    True
    """
    buf = bytearray(frame_wo_icrc[l3_offset:])
    ihl = (buf[0] & 0x0F) * 4
    buf[1] = 0xFF                  # TOS (DSCP + ECN)
    buf[8] = 0xFF                  # TTL
    buf[10:12] = b"\xff\xff"       # header checksum
    buf[ihl + 6:ihl + 8] = b"\xff\xff"   # UDP checksum
    buf[ihl + UDP_LEN + 4] = 0xFF  # BTH FECN, BECN, reserved
    return zlib.crc32(b"\xff" * 8 + bytes(buf)) & 0xFFFFFFFF


def verify_icrc(frame: bytes, l3_offset: int = ETH_LEN) -> bool:
    """True when the frame's last 4 bytes are its correct ICRC.

    >>> verify_icrc(b"\\x00" * 80)
    False
    """
    if len(frame) < l3_offset + IPV4_LEN + UDP_LEN + BTH_LEN + ICRC_LEN:
        return False
    return icrc(frame[:-ICRC_LEN], l3_offset).to_bytes(4, "little") == frame[-ICRC_LEN:]


@dataclass(frozen=True, slots=True)
class FlowSpec:
    """Addresses of one RoCEv2 flow as seen on the sender's wire.

    ``dqpn`` is the destination QP number carried in the BTH.

    >>> FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 49152, 7).dscp
    26
    """

    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    sport: int
    dqpn: int
    dscp: int = DSCP_DATA
    ecn: int = ECN_ECT0
    ttl: int = 64
    pkey: int = 0xFFFF

    def reply(self, dqpn: int, dscp: int = DSCP_CNP) -> "FlowSpec":
        """The reverse direction (MACs and IPs swapped), e.g. for CNPs and ACKs.

        >>> FlowSpec("a:b:c:d:e:1", "a:b:c:d:e:2", "1.1.1.1", "2.2.2.2", 5, 7).reply(9).dst_ip
        '1.1.1.1'
        """
        return FlowSpec(self.dst_mac, self.src_mac, self.dst_ip, self.src_ip, self.sport,
                        dqpn, dscp, self.ecn, self.ttl, self.pkey)


def scapy_frame(flow: FlowSpec, opcode: int, psn: int = 0, payload: bytes = b"",
                ackreq: bool = False, ext: Optional[Packet] = None,
                becn: bool = False) -> Packet:
    """The Scapy packet of one RoCEv2 frame (slow; templates and tests use it).

    Payload is padded with zeros to a multiple of 4 bytes (BTH pad count).

    >>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 1, 2)
    >>> len(bytes(scapy_frame(f, OP_RC_WRITE_ONLY, 0, b"x" * 5, ext=RETH(dma_len=5))))
    82
    """
    pad = (-len(payload)) % 4
    pkt = (Ether(src=flow.src_mac, dst=flow.dst_mac)
           / IP(src=flow.src_ip, dst=flow.dst_ip, tos=(flow.dscp << 2) | flow.ecn,
                ttl=flow.ttl, id=0, flags="DF")
           / UDP(sport=flow.sport, dport=ROCE_UDP_PORT, chksum=0)
           / BTH(opcode=opcode, padcount=pad, pkey=flow.pkey, dqpn=flow.dqpn,
                 psn=psn & PSN_MASK, ackreq=int(ackreq), becn=int(becn)))
    if ext is not None:
        pkt = pkt / ext
    body = payload + b"\x00" * pad
    if body:
        pkt = pkt / Raw(body)
    return pkt


class FrameTemplate:
    """One kind of frame of one flow, built once; :meth:`frame` patches PSN and extension.

    >>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 1, 2)
    >>> t = FrameTemplate.data(f, OP_RC_WRITE_FIRST, 1024)
    >>> len(t.frame(psn=1, ext=reth_bytes(0x1000, 0x42, 4096)))
    1098
    """

    __slots__ = ("opcode", "ext_len", "payload_len", "_head", "_tail", "_crc_head")

    def __init__(self, pkt: Packet | bytes, ext_len: int, payload_len: int) -> None:
        raw = bytes(pkt)                     # a Scapy packet, or a frame's bytes (readdress)
        bth = ETH_LEN + IPV4_LEN + UDP_LEN   # Scapy builds no IP options
        self.opcode = raw[bth]
        self.ext_len = ext_len
        self.payload_len = payload_len
        self._head = raw[:bth + 8]                        # up to the BTH's dqpn
        self._tail = raw[bth + BTH_LEN + ext_len:-ICRC_LEN]  # padded payload
        masked = bytearray(raw[ETH_LEN:bth + 8])
        masked[1] = 0xFF
        masked[8] = 0xFF
        masked[10:12] = b"\xff\xff"
        masked[IPV4_LEN + 6:IPV4_LEN + 8] = b"\xff\xff"
        masked[IPV4_LEN + UDP_LEN + 4] = 0xFF
        self._crc_head = zlib.crc32(b"\xff" * 8 + bytes(masked))

    @classmethod
    def data(cls, flow: FlowSpec, opcode: int, payload_len: int,
             payload_byte: int = 0) -> "FrameTemplate":
        """A data (RDMA WRITE) template; FIRST and ONLY carry a RETH (patched per frame)."""
        ext_len = _EXT_LEN.get(opcode, 0)
        ext = RETH() if ext_len == RETH_LEN else None
        pkt = scapy_frame(flow, opcode, 0, bytes([payload_byte]) * payload_len, ext=ext)
        return cls(pkt, ext_len, payload_len)

    @classmethod
    def ack(cls, flow: FlowSpec) -> "FrameTemplate":
        """An RC ACKNOWLEDGE template (AETH patched per frame with :func:`aeth_bytes`)."""
        return cls(scapy_frame(flow, OP_RC_ACK, ext=AETH()), AETH_LEN, 0)

    def parts(self) -> tuple[bytes, int, bytes, int]:
        """``(head, crc_head, tail, ext_len)``: the bytes up to the BTH's DestQP, the CRC
        of the masked invariant prefix, the padded payload and the extension header's
        length: what the native hot loop (host.nic.native) builds frames from.

        >>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 1, 2)
        >>> head, crc_head, tail, ext_len = FrameTemplate.data(f, OP_RC_WRITE_LAST, 8).parts()
        >>> len(head), len(tail), ext_len
        (50, 8, 0)
        """
        return self._head, self._crc_head, self._tail, self.ext_len

    def frame(self, psn: int, ackreq: bool = False, ext: bytes = b"") -> bytes:
        """The wire bytes for ``psn`` (mod 2^24), ICRC included."""
        word = struct.pack("!I", (psn & PSN_MASK) | (0x80000000 if ackreq else 0))
        crc = zlib.crc32(word, self._crc_head)
        if ext:
            crc = zlib.crc32(ext, crc)
        crc = zlib.crc32(self._tail, crc)
        return b"".join((self._head, word, ext, self._tail, crc.to_bytes(4, "little")))


def reth_bytes(va: int, rkey: int, dma_len: int) -> bytes:
    """Packed RETH fields (for :meth:`FrameTemplate.frame`).

    >>> reth_bytes(1, 2, 3).hex()
    '00000000000000010000000200000003'
    """
    return struct.pack("!QII", va & 0xFFFFFFFFFFFFFFFF, rkey & 0xFFFFFFFF, dma_len & 0xFFFFFFFF)


def aeth_bytes(syndrome: int, msn: int) -> bytes:
    """Packed AETH fields: syndrome 0 = ACK, 0x60 = NAK PSN sequence error.

    >>> aeth_bytes(0, 5).hex()
    '00000005'
    """
    return struct.pack("!I", ((syndrome & 0xFF) << 24) | (msn & 0xFFFFFF))


def build_cnp(flow: FlowSpec) -> bytes:
    """A CNP (BTH opcode 0x81, BECN, 16 zero bytes, ICRC) on ``flow`` (use ``reply()``).

    ConnectX NICs send CNPs with DSCP 48 and ECT(0); ``flow.dqpn`` is the QP to slow down.

    >>> f = FlowSpec("02:00:00:00:00:02", "02:00:00:00:00:01", "10.1.0.1", "10.0.0.1", 1, 7, 48)
    >>> c = parse_roce(build_cnp(f)); (c.opcode, c.becn, c.dqpn)
    (129, True, 7)
    """
    pkt = scapy_frame(flow, OP_CNP, becn=True, ext=CNPPadding())
    return bytes(pkt)


class RoceInfo(NamedTuple):
    """Fields of a received RoCEv2 frame that the QPs need (IPs as 4 raw bytes)."""

    src_mac: bytes
    dst_mac: bytes
    src_ip: bytes
    dst_ip: bytes
    dscp: int
    ecn: int
    sport: int
    opcode: int
    becn: bool
    dqpn: int
    ackreq: bool
    psn: int
    payload_len: int
    ext: bytes


_PORTS = struct.Struct("!HH")
_BTH = struct.Struct("!BBHBBHBBH")


def parse_roce(frame: bytes) -> Optional[RoceInfo]:
    """Parse an Ethernet (optionally 802.1Q) / IPv4 / UDP 4791 / BTH frame; None otherwise.

    ``ext`` holds the RETH or AETH bytes when the opcode carries one; ``payload_len``
    excludes pad bytes and the ICRC.

    >>> parse_roce(b"\\x00" * 60) is None
    True
    """
    off = ETH_LEN
    if len(frame) < off + IPV4_LEN + UDP_LEN + BTH_LEN + ICRC_LEN:
        return None
    etype = (frame[12] << 8) | frame[13]
    if etype == ETHERTYPE_VLAN:
        etype = (frame[16] << 8) | frame[17]
        off += 4
    if etype != ETHERTYPE_IPV4 or frame[off] >> 4 != 4:
        return None
    ihl = (frame[off] & 0x0F) * 4
    l4 = off + ihl
    if len(frame) < l4 + UDP_LEN + BTH_LEN + ICRC_LEN:
        return None
    tos = frame[off + 1]
    proto = frame[off + 9]
    sport, dport = _PORTS.unpack_from(frame, l4)
    if proto != 17 or dport != ROCE_UDP_PORT:
        return None
    bth = l4 + UDP_LEN
    op, flags, _pkey, becn_b, dq_hi, dq_lo, ack_b, psn_hi, psn_lo = _BTH.unpack_from(frame, bth)
    ext_len = _EXT_LEN.get(op, 0)
    ext = frame[bth + BTH_LEN:bth + BTH_LEN + ext_len]
    pad = (flags >> 4) & 0x3
    payload_len = len(frame) - (bth + BTH_LEN + ext_len) - ICRC_LEN - pad
    if op == OP_CNP:
        payload_len = 0
    return RoceInfo(frame[6:12], frame[0:6], frame[off + 12:off + 16],
                    frame[off + 16:off + 20], tos >> 2, tos & 3, sport, op,
                    bool(becn_b & 0x40), (dq_hi << 16) | dq_lo, bool(ack_b & 0x80),
                    (psn_hi << 16) | psn_lo, max(payload_len, 0), ext)


def set_ce(frame: bytes, l3_offset: int = ETH_LEN) -> bytes:
    """The frame with its ECN field set to CE and the IPv4 checksum fixed (a marking switch).

    The ICRC stays valid because it masks the TOS and the checksum.

    >>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 1, 2)
    >>> parse_roce(set_ce(FrameTemplate.data(f, OP_RC_WRITE_MIDDLE, 8).frame(0))).ecn
    3
    """
    buf = bytearray(frame)
    buf[l3_offset + 1] |= ECN_CE
    ihl = (buf[l3_offset] & 0x0F) * 4
    buf[l3_offset + 10:l3_offset + 12] = b"\x00\x00"
    total = sum(struct.unpack_from(f"!{ihl // 2}H", buf, l3_offset))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    struct.pack_into("!H", buf, l3_offset + 10, ~total & 0xFFFF)
    return bytes(buf)


def readdress(frame: bytes, src_mac: bytes, dst_mac: bytes, src_ip: bytes, dst_ip: bytes,
              sport: int, dqpn: int, dscp: int, ecn: int = ECN_ECT0) -> bytes:
    """``frame`` (an IPv4 RoCEv2 frame without IP options, ICRC included, as
    :func:`scapy_frame` builds them) with other addresses (raw bytes), UDP source port,
    destination QP and DSCP/ECN, its IPv4 checksum and ICRC made again: the bytes
    :func:`scapy_frame` builds for those fields, without Scapy (a receiver answers every new
    flow and path this way: with Scapy each cost ~3 ms, sec-audit5).

    >>> f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 1, 2)
    >>> g = FlowSpec("02:00:00:00:00:03", "02:00:00:00:00:04", "10.2.0.1", "10.3.0.1", 9, 77, 48)
    >>> readdress(build_cnp(f), bytes.fromhex("020000000003"), bytes.fromhex("020000000004"),
    ...           ip_bytes("10.2.0.1"), ip_bytes("10.3.0.1"), 9, 77, 48) == build_cnp(g)
    True
    """
    buf = bytearray(frame)
    buf[0:6], buf[6:12] = dst_mac, src_mac
    ip = ETH_LEN
    buf[ip + 1] = ((dscp & 0x3F) << 2) | (ecn & 0x3)
    buf[ip + 12:ip + 16], buf[ip + 16:ip + 20] = src_ip, dst_ip
    buf[ip + 10:ip + 12] = b"\x00\x00"
    total = sum(struct.unpack_from("!10H", buf, ip))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    struct.pack_into("!H", buf, ip + 10, ~total & 0xFFFF)
    struct.pack_into("!H", buf, ip + IPV4_LEN, sport & 0xFFFF)
    bth = ip + IPV4_LEN + UDP_LEN
    buf[bth + 5:bth + 8] = (dqpn & 0xFFFFFF).to_bytes(3, "big")
    buf[-ICRC_LEN:] = icrc(bytes(buf[:-ICRC_LEN])).to_bytes(4, "little")
    return bytes(buf)


def ip_bytes(addr: str) -> bytes:
    """Dotted IPv4 to 4 bytes (the form :class:`RoceInfo` uses).

    >>> ip_bytes("10.0.0.1").hex()
    '0a000001'
    """
    return socket.inet_aton(addr)


def mac_str(mac: bytes) -> str:
    """6 raw bytes to ``aa:bb:cc:dd:ee:ff``.

    >>> mac_str(bytes(range(6)))
    '00:01:02:03:04:05'
    """
    return ":".join(f"{b:02x}" for b in mac)
