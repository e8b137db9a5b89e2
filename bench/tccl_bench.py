"""The ``tccl`` benchmark group: TCCL's planner and dual channel, no testbed needed.

Figures:

* ``tccl.cross_spine_bytes_ratio.1024`` — bytes crossing the spines of TCCL's ring
  AllReduce over those of the rank-order ring, on :data:`SPEC_1024` (4 blocks x 32
  servers x 8 rails = 1024 GPUs, 8 spines), 1 MiB per rank. Lower is better.
* ``tccl.plan_s.1024`` — seconds to build the ranks and plan that TCCL ring (median of
  ``config.runs``).
* ``tccl.dual_channel_speedup.1MiB`` — predicted TP AllReduce time (tp 8) of the best
  NVLink/RoCE split over the better single channel, 1 MiB message, default estimates
  (``host/tccl/dualchannel.py``).

``tccl.max_over_mean.*`` (switch counters on the Mininet testbed) are measured by the ``host`` group (bench/host_bench.py).

Example::

    $ .venv/bin/python -m bench tccl
"""
from __future__ import annotations

import time

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from host.tccl.dualchannel import DualChannel
from host.tccl.planner import Planner, cross_spine_ratio, ranks_from_fabric
from topo.model import build_fabric
from topo.spec import FabricSpec

SPEC_1024 = FabricSpec(blocks=4, servers_per_block=32, rails=8, spines=8)
MESSAGE_BYTES = 1 << 20


def bench_planner_1024(config: BenchConfig) -> dict[str, Figure]:
    """Cross-spine byte ratio and planning time on the 1024-GPU fabric."""
    fab = build_fabric(SPEC_1024)
    times = []
    for _ in range(max(config.runs, 1)):
        t0 = time.perf_counter()
        planner = Planner(fab, ranks_from_fabric(fab))
        plan = planner.plan("allreduce", MESSAGE_BYTES, order="tccl")
        times.append(time.perf_counter() - t0)
    if len(plan.order) != 1024 or sorted(plan.order) != list(range(1024)):
        raise BenchCheckError(f"1024-GPU ring: got {len(plan.order)} ranks, not a permutation of 0..1023")
    ratio = cross_spine_ratio(planner, MESSAGE_BYTES)
    return {"tccl.cross_spine_bytes_ratio.1024": Figure(round(ratio, 4), "ratio"),
            "tccl.plan_s.1024": Figure(round(median(times), 4), "s")}


def bench_dual_channel(config: BenchConfig) -> dict[str, Figure]:
    """Speedup of the split over the better single channel for a 1 MiB TP AllReduce."""
    split = DualChannel(tp_size=8).split(MESSAGE_BYTES)
    if split.nvlink_bytes + split.roce_bytes != MESSAGE_BYTES or split.speedup < 1.0:
        raise BenchCheckError(f"dual channel split is inconsistent: {split}")
    return {"tccl.dual_channel_speedup.1MiB": Figure(round(split.speedup, 4), "x")}


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("planner_1024", "tccl", bench_planner_1024),
    Benchmark("dual_channel", "tccl", bench_dual_channel),
)
