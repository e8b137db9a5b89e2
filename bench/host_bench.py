"""The ``host`` benchmark group: TCCL ports and the NIC emulator on the REAL Mininet testbed
(root + Mininet; skipped with a message otherwise).

One default p4sim fabric (``FabricSpec()``: 2 blocks x 2 servers x 2 rails, 6 switches)
is brought up with :func:`testbed.traffic.testbed_up` (recorded in
``build/testbed-state.json`` like ``testbed.cli up``) and torn down after. On it,
:func:`testbed.traffic.run_traffic` runs 8 elephants from block 0 to block 1 on rail 0 (one
RDMA WRITE QP each, 100 pps, DCQCN on, no queue rate: the counters show where the flows
go, not how a queue throttles them), twice:

* ``tccl.max_over_mean.random`` — source ports random from seed :data:`RANDOM_SEED`:
  packets sent by the busiest uplink of leaf ``b0r0l0`` ÷ the mean over its uplinks, from
  the switch's own ``FabricEgress.telemetry.tx`` counters (delta over the run);
* ``tccl.max_over_mean.tccl`` — the same with TCCL's ports
  (:class:`host.tccl.ports.PortPlanner` on the programmed hash model). Goal 1.00;
* ``nic.goodput_mbps.per_flow`` — mean RDMA payload goodput per flow measured by the
  receiving NIC emulators in the TCCL run (Mb/s).

Each run lasts ``max(config.duration_s, 4)`` seconds.

Example::

    $ sudo .venv/bin/python -m bench host            # ~25 s
"""
from __future__ import annotations

import sys

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure
from testbed.traffic import NicOptions, TrafficOptions, run_traffic, testbed_unavailable, testbed_up

RANDOM_SEED = 7
"""Seed of the random ports: 5 of the 8 elephants on one uplink with the default fabric."""
FIGURES = "tccl.max_over_mean.random, tccl.max_over_mean.tccl, nic.goodput_mbps.per_flow"


def bench_testbed(config: BenchConfig) -> dict[str, Figure]:
    """Random vs TCCL ports on the live default fabric (see the module docstring)."""
    why = testbed_unavailable()
    if why is not None:
        print(f"host.testbed: skipped, {why}; {FIGURES} not written", file=sys.stderr,
              flush=True)
        return {}
    duration = max(config.duration_s, 4.0)
    results = {}
    with testbed_up() as tb:
        for mode in ("random", "tccl"):
            opts = TrafficOptions(elephants=8, rail=0, port_mode=mode, seed=RANDOM_SEED,
                                  duration_s=duration, nic=NicOptions(line_rate_pps=100.0))
            res = run_traffic(tb.fabric, tb.programmer, tb.state, tb.save_state, opts,
                              say=lambda line: print(line, file=sys.stderr, flush=True))
            if res.errors or not all(f.recv_pkts for f in res.flows):
                raise BenchCheckError(f"{mode} run: a NIC reported nothing:\n{res.summary()}")
            results[mode] = res
    return {"tccl.max_over_mean.random": Figure(round(results["random"].max_over_mean, 3), "ratio"),
            "tccl.max_over_mean.tccl": Figure(round(results["tccl"].max_over_mean, 3), "ratio"),
            "nic.goodput_mbps.per_flow": Figure(round(results["tccl"].mean_goodput_mbps, 3),
                                                "Mb/s")}


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("testbed", "host", bench_testbed),)
