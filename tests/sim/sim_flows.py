"""Shared by the sim tests: random cross-leaf NIC pairs of a fabric as the simulator's
flow arrays (``from sim_flows import random_cross_leaf_flows``)."""
from __future__ import annotations

import random
from typing import Any


def random_cross_leaf_flows(fab: Any, sf: Any, n: int, seed: int
                            ) -> tuple[list[int], list[int], list[int]]:
    """``n`` flows between NICs of different leaves and hosts, random source ports:
    ``(src NIC ids, dst NIC ids, source ports)`` of ``sf`` (a ``sim.topology.SimFabric``),
    as Python ints (``np.array`` them for ``sim.routing.route_flows``)."""
    rng = random.Random(seed)
    nics = [(h, nic) for h in fab.hosts for nic in h.nics]
    src, dst, sport = [], [], []
    while len(src) < n:
        (hs, a), (hd, b) = rng.sample(nics, 2)
        if a.leaf != b.leaf and hs.name != hd.name:
            src.append(sf.nic_id(hs.name, a.rail))
            dst.append(sf.nic_id(hd.name, b.rail))
            sport.append(rng.randrange(1, 65536))
    return src, dst, sport
