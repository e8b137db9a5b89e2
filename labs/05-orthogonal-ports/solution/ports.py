"""Lab 05, hash-orthogonal source ports (solution): choose the UDP source port of each
RoCEv2 flow so that the leaf's ECMP hash spreads the flows over every uplink.

The leaf picks an uplink with the published hash model (``p4src/hashmodel.py``)::

    member = crc16(seed, src, dst, proto, sport, dport) % len(members) + base

Everything but ``sport`` is fixed by the flow, so the host chooses ``sport`` to choose
the uplink. :func:`p4src.hashmodel.port_to_member_table` gives the member index of every
one of the 65,536 source ports in about 10 ms.

Example::

    >>> from p4src.hashmodel import GroupModel, SwitchHashModel, member_index
    >>> leaf = SwitchHashModel("l0", seed=7, groups={1: GroupModel(0, ["s0", "s1"])})
    >>> ports = choose_source_ports(leaf, 1, [("10.0.0.1", "10.1.0.1")] * 2)
    >>> sorted(member_index(leaf, 1, "10.0.0.1", "10.1.0.1", 17, p, 4791) for p in ports)
    [0, 1]
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
    group = model.group(group_id)
    lo, hi = PORT_RANGE
    taken: set[tuple[str, str, int]] = set()
    ports: list[int] = []
    for i, (src, dst) in enumerate(flows):
        want = group.base + i % group.size
        table = port_to_member_table(model, group_id, src, dst, PROTO_UDP, dport)
        port = next(p for p in range(lo, hi + 1)
                    if table[p] == want and (src, dst, p) not in taken)
        taken.add((src, dst, port))
        ports.append(port)
    return ports
