"""The wire format of a probe: a RoCEv2 UD SEND frame that carries its path, sequence
number and send time, and its parser.

``Ethernet (to the leaf's router MAC) / IPv4 (DSCP 26, ECT(0)) / UDP sport → 4791 /
BTH (opcode 0x64 UD SEND Only, destination QP 0xFFFF01) / DETH (Q_Key "ASTP", source
QP 0xFFFF01) / payload 32 bytes / ICRC``. The payload::

    magic "ASTRPRB1" (8) | plan id (u32) | path index (u32) | sequence (u64) | send time (u64, ns)

The send time is ``CLOCK_MONOTONIC`` in nanoseconds: one clock for every network
namespace of a machine, so the receiver measures one-way latency. The probe travels in
the RoCE data class (DSCP 26, priority 3) like the traffic it watches, ECN-capable, so a
port marking CE shows on probes too (the receiver counts CE-marked probes). QP 0xFFFF01
is far above any QP the NIC emulator allocates and UD SEND is not an opcode it serves:
``host.nic`` counts such a frame in ``rx_frames`` (and ``rx_other`` when it runs no
receiver) and otherwise ignores it; a sender-only ``host.nic`` never reads it (its kernel
filter drops RoCE frames for QPs it does not have: ``host.nic.io.qpn_filter``).

>>> t = ProbeTemplate("02:00:00:00:01:00", "06:00:00:00:00:01", "10.0.0.1", "10.1.0.1", 49152)
>>> fr = t.frame(plan_id=7, path_index=3, seq=5, send_ns=1_000)
>>> p = parse_probe(fr); (p.plan_id, p.path_index, p.seq, p.send_ns, p.icrc_ok, len(fr))
(7, 3, 5, 1000, True, 98)
>>> bad = bytearray(fr); bad[60] ^= 1; parse_probe(bytes(bad)).icrc_ok
False
"""
from __future__ import annotations

import struct
from typing import NamedTuple, Optional

from host.nic.frames import (ECN_ECT0, ETH_LEN, ETHERTYPE_IPV4, ICRC_LEN, IPV4_LEN, ROCE_UDP_PORT,
                             UDP_LEN, FlowSpec, icrc, scapy_frame)

OP_UD_SEND_ONLY = 0x64
PROBE_QPN = 0xFFFF01
PROBE_QKEY = 0x41535450          # "ASTP"
MAGIC = b"ASTRPRB1"
DSCP_PROBE = 26
_PAYLOAD = struct.Struct("!8sIIQQ")
_DETH = struct.Struct("!II")
BTH_OFF = ETH_LEN + IPV4_LEN + UDP_LEN
PAYLOAD_OFF = BTH_OFF + 12 + _DETH.size
FRAME_LEN = PAYLOAD_OFF + _PAYLOAD.size + ICRC_LEN


class ProbeInfo(NamedTuple):
    """What a received probe frame says (addresses as dotted strings)."""

    src_ip: str
    dst_ip: str
    sport: int
    ecn: int
    plan_id: int
    path_index: int
    seq: int
    send_ns: int
    icrc_ok: bool
    magic_ok: bool


class ProbeTemplate:
    """The frame of one probe path, built once with Scapy; :meth:`frame` patches the
    payload, the PSN and the ICRC.

    >>> len(ProbeTemplate("02:00:00:00:01:00", "06:00:00:00:00:01", "10.0.0.1", "10.1.0.1", 1).frame(0, 0, 0, 0))
    98
    """

    __slots__ = ("_head",)

    def __init__(self, gateway_mac: str, src_mac: str, src_ip: str, dst_ip: str,
                 sport: int) -> None:
        flow = FlowSpec(src_mac, gateway_mac, src_ip, dst_ip, sport, PROBE_QPN,
                        dscp=DSCP_PROBE, ecn=ECN_ECT0)
        body = _DETH.pack(PROBE_QKEY, PROBE_QPN) + bytes(_PAYLOAD.size)
        raw = bytes(scapy_frame(flow, OP_UD_SEND_ONLY, 0, body))   # lengths count the ICRC
        self._head = raw[:PAYLOAD_OFF]

    def frame(self, plan_id: int, path_index: int, seq: int, send_ns: int) -> bytes:
        """The wire bytes of one probe (PSN = sequence mod 2^24), ICRC included."""
        head = bytearray(self._head)
        struct.pack_into("!I", head, BTH_OFF + 8, seq & 0xFFFFFF)
        body = bytes(head) + _PAYLOAD.pack(MAGIC, plan_id & 0xFFFFFFFF, path_index, seq, send_ns)
        return body + icrc(body).to_bytes(4, "little")


def parse_probe(frame: bytes) -> Optional[ProbeInfo]:
    """A probe's fields, or None for any frame that is not an IPv4 RoCEv2 UD SEND to the
    probe QP (the ICRC and magic are checked, not required: a corrupted probe is still
    reported, with ``icrc_ok`` False).

    >>> parse_probe(bytes(98)) is None
    True
    """
    if len(frame) < FRAME_LEN or (frame[12] << 8 | frame[13]) != ETHERTYPE_IPV4:
        return None
    if frame[ETH_LEN] != 0x45 or frame[ETH_LEN + 9] != 17:
        return None
    sport, dport = struct.unpack_from("!HH", frame, ETH_LEN + IPV4_LEN)
    if dport != ROCE_UDP_PORT or frame[BTH_OFF] != OP_UD_SEND_ONLY:
        return None
    dqpn = int.from_bytes(frame[BTH_OFF + 5:BTH_OFF + 8], "big")
    if dqpn != PROBE_QPN:
        return None
    magic, plan_id, index, seq, send_ns = _PAYLOAD.unpack_from(frame, PAYLOAD_OFF)
    ok = icrc(frame[:-ICRC_LEN]).to_bytes(4, "little") == frame[-ICRC_LEN:]
    ip = frame[ETH_LEN + 12:ETH_LEN + 20]
    return ProbeInfo(".".join(str(b) for b in ip[:4]), ".".join(str(b) for b in ip[4:]), sport,
                     frame[ETH_LEN + 1] & 3, plan_id, index, seq, send_ns, ok, magic == MAGIC)


__all__ = ["DSCP_PROBE", "FRAME_LEN", "MAGIC", "OP_UD_SEND_ONLY", "PROBE_QKEY", "PROBE_QPN",
           "ProbeInfo", "ProbeTemplate", "parse_probe"]
