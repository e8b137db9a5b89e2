"""RoCEv2 frames: ICRC against a NIC capture and Scapy, templates byte-exact, RETH, parser."""
from __future__ import annotations

import time
import zlib

import pytest
from scapy.contrib.roce import BTH, AETH
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from host.nic.frames import (OP_CNP, OP_RC_ACK, OP_RC_WRITE_FIRST, OP_RC_WRITE_LAST,
                             OP_RC_WRITE_MIDDLE, OP_RC_WRITE_ONLY, RETH, FlowSpec,
                             FrameTemplate, aeth_bytes, build_cnp, icrc, parse_roce,
                             reth_bytes, scapy_frame, set_ce, verify_icrc)

# A CNP captured on a ConnectX-4 Lx (74 bytes), as published in Scapy's RoCE regression
# tests (test/contrib/roce.uts); its last 4 bytes are the NIC's ICRC.
CX4_CNP = bytes.fromhex(
    "e41d2dab2bc27cfe90643b32080045c2"
    "003c718c4000401191610a0011010a00"
    "1201000012b700280000" "8100ffff4000"
    "01180000000000000000000000000000"
    "000000000000" "82fd002a")


FLOW = FlowSpec("02:00:00:00:00:01", "02:00:00:00:01:01", "10.0.0.1", "10.1.0.1", 49152, 7)


def own_icrc(frame_wo_icrc: bytes) -> bytes:
    """An independent statement of the IBTA rule on a plain IPv4/UDP/BTH frame."""
    ip = bytearray(frame_wo_icrc[14:34])
    ip[1], ip[8], ip[10], ip[11] = 0xFF, 0xFF, 0xFF, 0xFF
    udp = bytearray(frame_wo_icrc[34:42])
    udp[6:8] = b"\xff\xff"
    bth = bytearray(frame_wo_icrc[42:54])
    bth[4] = 0xFF
    data = b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + frame_wo_icrc[54:]
    return (zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "little")


def test_icrc_matches_connectx_capture() -> None:
    assert len(CX4_CNP) == 74
    assert own_icrc(CX4_CNP[:-4]) == CX4_CNP[-4:]
    assert icrc(CX4_CNP[:-4]).to_bytes(4, "little") == CX4_CNP[-4:]
    assert verify_icrc(CX4_CNP)
    info = parse_roce(CX4_CNP)
    assert info is not None and info.opcode == OP_CNP and info.becn
    assert (info.dscp, info.ecn) == (48, 2)      # ConnectX CNPs: DSCP 48, ECT(0)


def test_scapy_icrc_matches_own_rule() -> None:
    cases = [
        scapy_frame(FLOW, OP_RC_WRITE_FIRST, 5, b"a" * 1024, ext=RETH(va=1, rkey=2, dma_len=3)),
        scapy_frame(FLOW, OP_RC_WRITE_MIDDLE, 0xFFFFFF, bytes(range(256)) * 4),
        scapy_frame(FLOW, OP_RC_WRITE_LAST, 9, b"xyz", ackreq=True),
        scapy_frame(FLOW, OP_RC_WRITE_ONLY, 1, b"", ext=RETH()),
        scapy_frame(FLOW.reply(3), OP_RC_ACK, 77, ext=AETH(msn=4)),
    ]
    for pkt in cases:
        raw = bytes(pkt)
        assert own_icrc(raw[:-4]) == raw[-4:]
        assert verify_icrc(raw)
    assert own_icrc(build_cnp(FLOW.reply(7))[:-4]) == build_cnp(FLOW.reply(7))[-4:]


def test_icrc_covers_sport_not_tos_ttl() -> None:
    raw = bytearray(bytes(scapy_frame(FLOW, OP_RC_WRITE_MIDDLE, 1, b"p" * 64)))
    assert verify_icrc(set_ce(bytes(raw)))
    raw[22] = 3                                   # TTL
    assert verify_icrc(bytes(raw))
    raw[35] ^= 1                                  # UDP source port
    assert not verify_icrc(bytes(raw))


@pytest.mark.parametrize("opcode, plen", [(OP_RC_WRITE_FIRST, 1024), (OP_RC_WRITE_MIDDLE, 1024),
                                          (OP_RC_WRITE_LAST, 301), (OP_RC_WRITE_ONLY, 64)])
def test_template_byte_exact_vs_scapy(opcode: int, plen: int) -> None:
    t = FrameTemplate.data(FLOW, opcode, plen)
    has_reth = opcode in (OP_RC_WRITE_FIRST, OP_RC_WRITE_ONLY)
    for psn, ackreq, va in [(0, False, 0), (1, True, 0x1000), (0xFFFFFF, False, 2**63), (2**24 + 5, True, 7)]:
        ext = reth_bytes(va, 0x42, 4096) if has_reth else b""
        fast = t.frame(psn, ackreq=ackreq, ext=ext)
        scapy_ext = RETH(va=va, rkey=0x42, dma_len=4096) if has_reth else None
        slow = bytes(scapy_frame(FLOW, opcode, psn, b"\x00" * plen, ackreq=ackreq, ext=scapy_ext))
        assert fast == slow


def test_ack_template_byte_exact() -> None:
    back = FLOW.reply(7)
    t = FrameTemplate.ack(back)
    assert t.frame(42, ext=aeth_bytes(0, 3)) == bytes(scapy_frame(back, OP_RC_ACK, 42,
                                                                  ext=AETH(syndrome=0, msn=3)))


def test_reth_dissects_and_parser_fields() -> None:
    t = FrameTemplate.data(FLOW, OP_RC_WRITE_FIRST, 1024)
    raw = t.frame(9, ext=reth_bytes(0xDEAD0000, 0x42, 65536))
    pkt = Ether(raw)
    assert pkt[BTH].psn == 9 and pkt[RETH].va == 0xDEAD0000 and pkt[RETH].dma_len == 65536
    assert pkt[IP].tos == (26 << 2) | 2 and pkt[IP].flags == "DF"
    info = parse_roce(raw)
    assert info is not None
    assert (info.opcode, info.psn, info.dqpn, info.sport, info.payload_len) == (6, 9, 7, 49152, 1024)
    assert info.ext == reth_bytes(0xDEAD0000, 0x42, 65536)
    assert (info.dscp, info.ecn) == (26, 2)
    last = parse_roce(FrameTemplate.data(FLOW, OP_RC_WRITE_LAST, 301).frame(3, ackreq=True))
    assert last is not None and last.payload_len == 301 and last.ackreq


def test_set_ce_keeps_ip_checksum_valid() -> None:
    raw = set_ce(FrameTemplate.data(FLOW, OP_RC_WRITE_MIDDLE, 64).frame(1))
    ip = Ether(raw)[IP]
    want = ip.chksum
    del ip.chksum
    assert IP(bytes(ip)).chksum == want and ip.tos & 3 == 3


def test_parse_rejects_non_roce() -> None:
    assert parse_roce(bytes(Ether() / IP() / (b"x" * 60))) is None
    assert parse_roce(b"") is None


def test_template_is_fast() -> None:
    t = FrameTemplate.data(FLOW, OP_RC_WRITE_MIDDLE, 1024)
    n = 20000
    start = time.perf_counter()
    for psn in range(n):
        t.frame(psn)
    per_frame_us = (time.perf_counter() - start) / n * 1e6
    assert per_frame_us < 20, per_frame_us     # ~1 µs here; Scapy needs ~1 ms
