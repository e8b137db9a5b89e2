"""The ``topo`` benchmark group: how long :func:`topo.model.build_fabric` takes to build a
fabric of real size, without Mininet.

Figure:

* ``topo.build_s.64k`` — seconds to build the records and networkx graph of a 65,536-GPU
  pod (:data:`SPEC_64K`: 64 blocks x 128 servers x 8 rails = 512 leaves, 128 spines,
  131,072 links), median of ``config.runs`` builds. The counts are checked before the
  figure is reported.
* ``topo.routes_s.64k`` — seconds for :func:`topo.routes.fabric_routes` of that pod (the
  routes and ECMP groups of all 640 switches), median of ``config.runs``; checked: every
  leaf has its 128 NIC routes and one uplink group, every spine one route per rail subnet.

Example::

    $ .venv/bin/python -m bench topo
"""
from __future__ import annotations

import time

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from topo.model import Fabric, build_fabric
from topo.routes import fabric_routes
from topo.spec import FabricSpec

SPEC_64K = FabricSpec(blocks=64, servers_per_block=128, rails=8, spines=128,
                      leaf_ports=256, spine_ports=512)


def check_64k(fab: Fabric) -> None:
    """Refuse a wrong 64K build (``BenchCheckError``): switch, host and link counts."""
    got = (len(fab.leaves), len(fab.spines), len(fab.hosts), fab.graph.number_of_edges())
    want = (512, 128, 8192, 8192 * 8 + 512 * 128)
    if got != want:
        raise BenchCheckError(f"64K fabric: (leaves, spines, hosts, links) = {got}, expected {want}")


def bench_build_64k(config: BenchConfig) -> dict[str, Figure]:
    """Time ``build_fabric(SPEC_64K)``; median of ``config.runs`` (at least 1) builds."""
    times = []
    for _ in range(max(config.runs, 1)):
        t0 = time.perf_counter()
        fab = build_fabric(SPEC_64K)
        times.append(time.perf_counter() - t0)
        check_64k(fab)
    return {"topo.build_s.64k": Figure(round(median(times), 3), "s")}


def bench_routes_64k(config: BenchConfig) -> dict[str, Figure]:
    """Time ``fabric_routes`` of the 64K pod; median of ``config.runs`` (at least 1)."""
    fab = build_fabric(SPEC_64K)
    times = []
    for _ in range(max(config.runs, 1)):
        t0 = time.perf_counter()
        table = fabric_routes(fab)
        times.append(time.perf_counter() - t0)
        leaf, spine = table[fab.leaves[0].name], table[fab.spines[0].name]
        if (len(leaf), len(leaf[-1].ports), len(spine)) != (129, 128, 64 * 8):
            raise BenchCheckError(f"64K routes: leaf {len(leaf)} routes (last group {len(leaf[-1].ports)} "
                                  f"ports), spine {len(spine)} routes; expected 129 (128), 512")
    return {"topo.routes_s.64k": Figure(round(median(times), 3), "s")}


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("build_64k", "topo", bench_build_64k),
                                     Benchmark("routes_64k", "topo", bench_routes_64k))
