"""IEEE 802.1Qbb priority flow control (PFC) frames, as p4sim's port MAC reads them.

A PFC frame: destination 01:80:C2:00:00:01, EtherType 0x8808 (MAC control), opcode
0x0101, a 16-bit class-enable vector (bit i = priority i, low 8 bits used) and eight
16-bit pause times in quanta (priority 0 first). One quantum is 512 bit times at the
port's line rate; a time of 0 resumes the priority at once. BMv2 has no PFC: this is
p4sim's addition.

Example::

    >>> f = build_pfc_frame(bytes(6), {3: 100})
    >>> parse_pfc(f)
    {3: 100}
    >>> round(quanta_to_us(100, 10.0), 2)
    5.12
"""
from __future__ import annotations

import struct
from typing import Mapping, Optional

PFC_DST = bytes.fromhex("0180c2000001")
MAC_CONTROL_ETHERTYPE = 0x8808
PFC_OPCODE = 0x0101
MIN_FRAME = 60
_BODY = struct.Struct("!HHH8H")  # ethertype, opcode, class-enable vector, 8 times


def parse_pfc(frame: bytes) -> Optional[dict[int, int]]:
    """``{priority: pause_quanta}`` for the enabled classes of a PFC frame; None when
    ``frame`` is not a PFC frame (too short, other destination, EtherType or opcode)."""
    if len(frame) < 14 + _BODY.size - 2 or frame[:6] != PFC_DST:
        return None
    ethertype, opcode, vector, *times = _BODY.unpack_from(frame, 12)
    if ethertype != MAC_CONTROL_ETHERTYPE or opcode != PFC_OPCODE:
        return None
    return {prio: times[prio] for prio in range(8) if vector >> prio & 1}


def build_pfc_frame(src_mac: bytes, pauses: Mapping[int, int]) -> bytes:
    """A PFC frame pausing each ``priority`` for ``quanta`` (0 = resume), padded to 60
    bytes (no FCS)."""
    vector = 0
    times = [0] * 8
    for prio, quanta in pauses.items():
        if not 0 <= prio < 8 or not 0 <= quanta <= 0xFFFF:
            raise ValueError(f"PFC priority {prio} / quanta {quanta} out of range")
        vector |= 1 << prio
        times[prio] = quanta
    frame = PFC_DST + bytes(src_mac) + _BODY.pack(MAC_CONTROL_ETHERTYPE, PFC_OPCODE, vector,
                                                   *times)
    return frame + bytes(max(0, MIN_FRAME - len(frame)))


def quanta_to_us(quanta: int, line_rate_gbps: float) -> float:
    """Pause duration in microseconds: ``quanta`` × 512 bit times at ``line_rate_gbps``."""
    return quanta * 512 / (line_rate_gbps * 1e3)
