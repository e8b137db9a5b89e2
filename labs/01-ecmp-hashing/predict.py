"""Lab 01, part 2 (your file): predict, offline, the uplink a UDP flow takes on the lab's
leaf — the same computation a TCCL host does with the fabric's published hash model.

Useful pieces (read them in p4src/hashmodel.py): ``pack_fields([(value, width_bits), …])``
packs values MSB-first without padding; ``crc16_arc(data)`` is BMv2's crc16.

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
    # TODO: pack (seed 32 bits, src 32, dst 32, protocol 8, sport 16, dport 16) with
    # pack_fields, hash the bytes with crc16_arc, take the result modulo the number of
    # uplinks and return that uplink. int(ipaddress.IPv4Address(src)) turns an address
    # into a number. Until then every flow is predicted on the first uplink.
    return UPLINKS[0]
