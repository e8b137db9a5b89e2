"""Lab 01, part 2 (solution): predict, offline, the uplink a UDP flow takes on the lab's
leaf — the same computation a TCCL host does with the fabric's published hash model.

>>> predict_uplink("10.0.0.1", "10.1.0.2", 49152, 4791, seed=0x1234ABCD) in UPLINKS
True
"""
from __future__ import annotations

import ipaddress

from p4src.hashmodel import crc16_arc, pack_fields

UPLINKS = (2, 3, 4, 5)   # member 0..3 of the ECMP group -> switch ports
PROTO_UDP = 17


def predict_uplink(src: str, dst: str, sport: int, dport: int, seed: int) -> int:
    """The switch port (2..5) a UDP packet src:sport -> dst:dport leaves on."""
    message = pack_fields([
        (seed, 32),
        (int(ipaddress.IPv4Address(src)), 32),
        (int(ipaddress.IPv4Address(dst)), 32),
        (PROTO_UDP, 8),
        (sport, 16),
        (dport, 16),
    ])
    member = crc16_arc(message) % len(UPLINKS)
    return UPLINKS[member]
