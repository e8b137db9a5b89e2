"""The GOR story on a live p4sim testbed as figures (root + Mininet; skipped otherwise).

``gor.loop_s`` (first alarm → last confirmed move, decision log), ``gor.max_util_after_pct``
(busiest of the source leaf's uplinks after the re-route, % of the uplink queue rate) and
``gor.drops_during_move`` (sum of the switches' ingress drop counters over the run).

>>> [b.name for b in BENCHMARKS]
['story']
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench.results import BenchConfig, Benchmark, Figure

FIGURES = ("gor.loop_s", "gor.max_util_after_pct", "gor.drops_during_move")


def bench_story(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001 — one live run
    """One run of ``topo.scenario.run_story`` on a fabric brought up for it."""
    from host.traffic import testbed_unavailable, testbed_up  # noqa: PLC0415
    from topo.scenario import ScenarioOptions, run_story  # noqa: PLC0415
    why = testbed_unavailable()
    if why:
        print(f"gor.story: skipped, {why}; {FIGURES} not written", file=sys.stderr)
        return {}
    tmp = Path(tempfile.mkdtemp(prefix="gor-story-"))
    with testbed_up(log_dir=tmp / "logs", state_path=tmp / "state.json") as tb:
        res = run_story(tb.fabric, tb.programmer, tb.state, tb.save_state,
                        ScenarioOptions(seed=7, duration_s=12.0, runs_root=tmp / "runs"))
    out: dict[str, Figure] = {}
    if res.loop_s is not None:
        out["gor.loop_s"] = Figure(res.loop_s, "s")
    if res.max_util_after_pct is not None:
        out["gor.max_util_after_pct"] = Figure(res.max_util_after_pct, "%")
    if res.drops_during_move is not None:
        out["gor.drops_during_move"] = Figure(float(res.drops_during_move), "packets")
    return out


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("story", "gor", bench_story),)
