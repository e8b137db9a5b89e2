"""The ``gor`` benchmark group: decision time of GOR's path engine on real-size pods.

Figures:

* ``gor.decide_s.64k`` — seconds for :meth:`controller.gor.paths.PathEngine.decide` to plan
  the Top-100 elephants of a congested uplink on the 65,536-GPU pod of
  ``topo/specs/pod64k.yaml`` (512 leaves, 128 spines, 400 G links), median of
  ``config.runs`` rounds. Goal: under 1 s.
* ``gor.decide_s.8k`` and ``gor.decide_s.16k`` — the same on pods of 8 and 16 blocks
  (8,192 and 16,384 GPUs), to show how the time grows with fabric size.

Synthetic telemetry (seeded, reproducible): every leaf–spine link direction at 20–60 %,
the source leaf's uplink to spine ``s0`` at 100 %; 100 elephants from the servers of that
leaf to rail-0 servers of other blocks, each at 2–4 Gb/s measured, whose hash-model path
crosses that uplink (source ports searched before timing). The decision includes
candidate paths, the 75 % rule, the max-min simulation of every accepted move and the
source-port solving through the hash model. Before a figure is reported the round is
checked: every order's port leads its flow along its chosen path and no predicted link
exceeds the threshold (``BenchCheckError`` otherwise).

Example::

    $ .venv/bin/python -m bench gor
"""
from __future__ import annotations

import random
import time
from dataclasses import replace
from pathlib import Path

from bench.gor_fast_bench import BENCHMARKS as fast
from bench.gor_testbed_bench import BENCHMARKS as story
from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from controller.fabric import fabric_hash_model
from controller.gor.decisions import FlowKey, MoveOrder
from controller.gor.paths import ElephantFlow, LinkState, PathEngine
from topo.model import Fabric, build_fabric
from topo.spec import FabricSpec, load_spec

POD64K = Path(__file__).resolve().parent.parent / "topo" / "specs" / "pod64k.yaml"
TOP_N = 100
SEED = 7


def scenario(fab: Fabric) -> tuple[PathEngine, list[ElephantFlow]]:
    """The engine with synthetic telemetry and the Top-100 elephants of the hot uplink."""
    rng = random.Random(SEED)
    links = LinkState.from_fabric(fab)
    for l in links.capacity_bps:
        links.set_util(l, rng.uniform(0.2, 0.6))
    eng = PathEngine(fab, fabric_hash_model(fab), links)
    src_leaf = "b0r0l0"
    hot = next((src_leaf, p.port) for p in fab.switch(src_leaf).ports_of_kind("uplink") if p.peer_node == "s0")
    links.set_util(hot, 1.0)
    srcs = [n for h in fab.hosts for n in h.nics if n.leaf == src_leaf]
    dsts = [n for h in fab.hosts for n in h.nics if n.rail == 0 and h.block != 0]
    eles: list[ElephantFlow] = []
    while len(eles) < TOP_N:
        s, d = rng.choice(srcs), rng.choice(dsts)
        for sport in range(49152 + rng.randrange(4096), 65536):
            f = FlowKey(s.ip, d.ip, 17, sport, 4791)
            p = eng.current_path(f, src_leaf, d.leaf)
            if p is not None and p.links[0] == hot:
                eles.append(ElephantFlow(f, rng.uniform(2e9, 4e9), src_leaf, d.leaf, current=p))
                break
    return eng, eles


def check_round(eng: PathEngine, eles: list[ElephantFlow], orders: list[object]) -> None:
    """Refuse a wrong round: ports must follow the chosen path, predictions under the rule."""
    by_flow = {e.flow: e for e in eles}
    if not orders:
        raise BenchCheckError("gor bench: no elephant was moved")
    for o in orders:
        assert isinstance(o, MoveOrder)
        e = by_flow[o.flow]
        got = eng.current_path(o.flow.with_sport(o.new_sport), e.src_leaf, e.dst_leaf)
        if got != o.path:
            raise BenchCheckError(f"gor bench: port {o.new_sport} of {o.flow} goes {got}, not {o.path}")
        if max(o.predicted_util.values()) > eng.safety + 1e-6:
            raise BenchCheckError(f"gor bench: {o.flow} predicted over the threshold")


def _time(spec: FabricSpec, runs: int) -> float:
    fab = build_fabric(spec)
    eng, eles = scenario(fab)
    times = []
    for _ in range(max(runs, 1)):
        t0 = time.perf_counter()
        dec = eng.decide(eles)
        times.append(time.perf_counter() - t0)
        check_round(eng, eles, list(dec.orders))
    return median(times)


def bench_decide(config: BenchConfig) -> dict[str, Figure]:
    """``gor.decide_s.{8k,16k,64k}``: median decision time of the Top-100 elephants."""
    spec = load_spec(POD64K)
    out: dict[str, Figure] = {}
    for blocks, name in ((8, "8k"), (16, "16k"), (64, "64k")):
        out[f"gor.decide_s.{name}"] = Figure(round(_time(replace(spec, blocks=blocks), config.runs), 3), "s")
    return out


def _story_benchmarks() -> tuple[Benchmark, ...]:
    return story + fast


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("decide", "gor", bench_decide),
                                     *_story_benchmarks())
