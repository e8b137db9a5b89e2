"""The ``tccl`` bench group runs, is registered, and reports sane figures."""
from __future__ import annotations

from bench import groups
from bench.results import BenchConfig
from bench.tccl_bench import bench_dual_channel, bench_planner_1024


def test_tccl_group_figures() -> None:
    assert "tccl" in groups()
    figs = bench_planner_1024(BenchConfig(runs=1))
    assert 0 < figs["tccl.cross_spine_bytes_ratio.1024"].value < 0.1
    assert figs["tccl.plan_s.1024"].value < 5
    assert bench_dual_channel(BenchConfig(runs=1))["tccl.dual_channel_speedup.1MiB"].value > 1.0
