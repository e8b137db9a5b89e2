"""Polarisation between ECMP tiers, as p4src/README.md explains it: with the same CRC on
leaf and spine a per-switch seed only XORs the hash with a constant, so for power-of-two
groups the spine's member is a fixed function of the leaf's; a different CRC on the
spine (crc32, FabricIngress.ecmp.algorithm) makes the two choices independent."""
from __future__ import annotations

import random
from collections import Counter

from p4src.hashmodel import GroupModel, SwitchHashModel, member_index

LEAF_GROUP, SPINE_GROUP = 1, 2


def joint(spine_algorithm: str, flows: int = 4000) -> Counter[tuple[int, int]]:
    leaf = SwitchHashModel("leaf", "crc16", seed=0x1234,
                           groups={LEAF_GROUP: GroupModel(0, [f"up{i}" for i in range(4)])})
    spine = SwitchHashModel("spine", spine_algorithm, seed=0xBEEF,
                            groups={SPINE_GROUP: GroupModel(0, ["down0", "down1"])})
    rng = random.Random(7)
    pairs: Counter[tuple[int, int]] = Counter()
    for _ in range(flows):
        flow = (rng.getrandbits(32), rng.getrandbits(32), 17, rng.getrandbits(16), 4791)
        pairs[(member_index(leaf, LEAF_GROUP, *flow), member_index(spine, SPINE_GROUP, *flow))] += 1
    return pairs


def test_same_crc_on_both_tiers_polarises() -> None:
    pairs = joint("crc16")
    # each leaf uplink determines the spine link: 4 of the 8 (leaf, spine) pairs never occur
    assert len(pairs) == 4
    assert {leaf for leaf, _ in pairs} == {0, 1, 2, 3}


def test_crc32_on_the_spine_makes_the_tiers_independent() -> None:
    pairs = joint("crc32")
    assert len(pairs) == 8
    mean = sum(pairs.values()) / 8
    assert max(pairs.values()) / mean < 1.15   # 4000 flows: ±15% is > 4 sigma
