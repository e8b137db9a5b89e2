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

* ``tccl.max_over_mean.dualport`` — dual-port NICs (:data:`SPEC_DUALPORT`: 2 blocks x 4
  servers x 2 rails, each NIC's ports on a leaf pair, 4 spines), every NIC of block 0
  running :data:`QPS_PER_NIC` QPs to a NIC of block 1 on its rail: the busiest NIC port or
  leaf uplink over its tier's mean with TCCL's NIC ports and source ports
  (:mod:`host.tccl.dualport`). Goal 1.00. Counts from the published hash model and the
  NIC's tx-port hash, not from a testbed.
* ``tccl.max_over_mean.dualport_random`` — the same with random source ports (seed
  :data:`DUALPORT_SEED`), each QP on the port the NIC's layer3+4 hash gives it.

``tccl.max_over_mean.*`` (switch counters on the Mininet testbed) are measured by the ``host`` group (bench/host_bench.py).

Example::

    $ .venv/bin/python -m bench tccl
"""
from __future__ import annotations

import time

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from controller.fabric.detours import fabric_hash_model
from host.tccl.dualchannel import DualChannel
from host.tccl.dualport import dualport_loads, plan_dualport, random_plan
from host.tccl.planner import Planner, cross_spine_ratio, ranks_from_fabric
from topo.model import build_fabric
from topo.spec import FabricSpec

SPEC_1024 = FabricSpec(blocks=4, servers_per_block=32, rails=8, spines=8)
MESSAGE_BYTES = 1 << 20
SPEC_DUALPORT = FabricSpec(blocks=2, servers_per_block=4, rails=2, ports_per_nic=2,
                           leaves_per_rail=2, spines=4)
QPS_PER_NIC = 4
DUALPORT_SEED = 1


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


def bench_dualport(config: BenchConfig) -> dict[str, Figure]:
    """TCCL vs random on dual-port NICs: busiest NIC port or uplink over the mean."""
    del config
    fab = build_fabric(SPEC_DUALPORT)
    model = fabric_hash_model(fab)
    pairs = []
    for s in range(SPEC_DUALPORT.servers_per_block):
        for src, dst in zip(fab.host(f"b0s{s}").nics, fab.host(f"b1s{(s + 1) % 4}").nics):
            pairs += [(src.ip, dst.ip)] * QPS_PER_NIC
    tccl = dualport_loads(fab, model, plan_dualport(fab, model, pairs).flows)
    rand = dualport_loads(fab, model, random_plan(fab, pairs, DUALPORT_SEED).flows)
    if sum(tccl.nic_ports.values()) != len(pairs) or sum(tccl.uplinks.values()) != len(pairs):
        raise BenchCheckError(f"dual-port plan: {len(pairs)} flows, loads {tccl}")
    return {"tccl.max_over_mean.dualport": Figure(round(tccl.max_over_mean, 3), "ratio"),
            "tccl.max_over_mean.dualport_random": Figure(round(rand.max_over_mean, 3), "ratio")}


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("planner_1024", "tccl", bench_planner_1024),
    Benchmark("dual_channel", "tccl", bench_dual_channel),
    Benchmark("dualport", "tccl", bench_dualport),
)
