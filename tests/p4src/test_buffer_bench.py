"""Smoke test of the ``thresholds`` benchmark group (:mod:`bench.buffer_bench`): registered,
and one sender's figures are the exact counts the alpha rule gives (the bench checks every
PAUSE and deterministic mark against the model itself)."""
from __future__ import annotations

from bench import groups, select
from bench.buffer_bench import bench_thresholds
from bench.results import BenchConfig


def test_registered_as_the_thresholds_group() -> None:
    assert "thresholds" in groups()
    assert [b.name for b in select(["thresholds"])] == ["incast"]


def test_one_sender_static_vs_dynamic() -> None:
    figs = bench_thresholds(BenchConfig(duration_s=0.05, runs=1), senders=(1,))
    # static XOFF 32 packets; dynamic: 1 KiB = 8 cells, pause at 8n >= (2048 - 8n) / 4 -> n = 52
    assert figs["thresholds.pause_pkts.static.n1"].value == 32
    assert figs["thresholds.pause_pkts.dynamic.n1"].value == 52
    assert figs["thresholds.queue_pkts_at_pause.dynamic.n1"].value == 52
