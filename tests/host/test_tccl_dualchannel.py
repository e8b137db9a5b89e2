"""TCCL dual channel: the split against a brute-force search, EWMA adaptation, bad input."""
from __future__ import annotations

import pytest

from host.tccl.dualchannel import ChannelEstimate, DualChannel


def brute_force(dc: DualChannel, size: int, steps: int = 4096) -> float:
    f = 2 * (dc.tp_size - 1) / dc.tp_size
    nv, ro = dc.estimates["nvlink"], dc.estimates["roce"]
    xs = {round(size * i / steps) for i in range(steps + 1)}
    return min(max(nv.time_s(f * x), ro.time_s(f * (size - x))) for x in xs)


@pytest.mark.parametrize("size", [0, 1, 4096, 64 << 10, 1 << 20, 16 << 20, 256 << 20])
@pytest.mark.parametrize("tp", [2, 8])
def test_split_matches_brute_force(size: int, tp: int) -> None:
    dc = DualChannel(tp_size=tp)
    s = dc.split(size)
    assert s.nvlink_bytes + s.roce_bytes == size
    assert s.time_s <= brute_force(dc, size) * (1 + 1e-9)
    assert s.time_s <= min(s.nvlink_only_s, s.roce_only_s) or size == 0
    assert s.speedup >= 1.0


def test_large_messages_gain_and_small_ones_stay_on_nvlink() -> None:
    dc = DualChannel()
    big = dc.split(256 << 20)
    assert big.speedup == pytest.approx(1.25, rel=0.01)           # (200 + 50) / 200
    assert dc.split(1024).roce_bytes == 0


def test_faster_roce_gets_the_bigger_share() -> None:
    dc = DualChannel(roce=ChannelEstimate(4e-6, 400e9))
    assert dc.split(256 << 20).nvlink_fraction < 0.5


def test_ewma_adapts_the_split() -> None:
    dc = DualChannel(ewma_weight=0.5)
    before = dc.split(64 << 20).roce_bytes
    for _ in range(10):
        dc.observe_bandwidth("roce", 10e9)                         # congested fabric
    assert dc.estimates["roce"].bytes_per_s == pytest.approx(10e9, rel=0.01)
    assert dc.split(64 << 20).roce_bytes < before
    dc.observe_latency("nvlink", 1e-6)
    assert dc.estimates["nvlink"].alpha_s == pytest.approx(0.6e-6)
    dc.observe_transfer("roce", 10_000_000, 4e-6 + 1e-3)
    assert dc.estimates["roce"].bytes_per_s > 10e9


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="unknown channel"):
        DualChannel().observe_latency("pcie", 1e-6)
    with pytest.raises(ValueError, match="bandwidth must be > 0"):
        DualChannel().observe_bandwidth("roce", 0)
    with pytest.raises(ValueError, match="ewma_weight"):
        DualChannel(ewma_weight=0)
    with pytest.raises(ValueError, match="size"):
        DualChannel().split(-5)
