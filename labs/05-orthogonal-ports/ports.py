"""Lab 05, hash-orthogonal source ports: choose the UDP source port of each RoCEv2 flow
so that the leaf's ECMP hash spreads the flows over every uplink.

The leaf picks an uplink with the published hash model (``p4src/hashmodel.py``)::

    member = crc16(seed, src, dst, proto, sport, dport) % len(members) + base

Everything but ``sport`` is fixed by the flow, so the host chooses ``sport`` to choose
the uplink. :func:`p4src.hashmodel.port_to_member_table` gives the member index of every
one of the 65,536 source ports in about 10 ms.
"""
from __future__ import annotations

from typing import Sequence

from p4src.hashmodel import SwitchHashModel, port_to_member_table

ROCE_DPORT = 4791
PROTO_UDP = 17
PORT_RANGE = (49152, 65535)
"""Source ports are taken from the dynamic range, as RoCEv2 NICs do."""


def choose_source_ports(model: SwitchHashModel, group_id: int,
                        flows: Sequence[tuple[str, str]], dport: int = ROCE_DPORT) -> list[int]:
    """One source port per flow ``(src, dst)``, in ``PORT_RANGE``, such that flow ``i``
    takes member ``i % size`` of the leaf's ECMP group ``group_id``: n flows over n
    uplinks use them all, more flows than uplinks share them evenly."""
    lo, _ = PORT_RANGE
    # TODO: today every flow simply gets the next free port, as a NIC driver would do,
    #       and the hash decides where it goes: flows collide on some uplinks.
    #   1. group = model.group(group_id): group.size members, indices group.base ...
    #   2. for flow i, the member you want is group.base + i % group.size;
    #   3. table = port_to_member_table(model, group_id, src, dst, PROTO_UDP, dport)
    #      gives the member index of every source port: take the first port in
    #      PORT_RANGE whose entry is the member you want (and that this (src, dst) pair
    #      does not use yet).
    _ = port_to_member_table
    return [lo + i for i in range(len(flows))]
