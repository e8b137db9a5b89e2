"""The GOR story on a live p4sim testbed as figures (root + Mininet; skipped otherwise).

One run of :func:`topo.story.run_story` (the ``make run`` default scenario, seed 7) on a
fabric brought up for it:

* ``gor.loop_s`` — first ECN alarm → the last re-routed elephant seen on its new uplink
  (a ``flow_sample_t`` digest of its new 5-tuple there), from the decision log;
* ``gor.max_util_after_pct`` — the busiest of the source leaf's uplinks after the last
  move settled, mean packets/s in % of the uplink queue rate (GOR's basis; goal < 75);
* ``gor.drops_during_move`` — the switches' drop counters summed over every fabric
  link from the first order to the last move settled (goal 0).

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
    """One run of ``topo.story.run_story`` on a fabric brought up for it."""
    from host.traffic import testbed_unavailable, testbed_up  # noqa: PLC0415
    from topo.scenario import ScenarioOptions  # noqa: PLC0415
    from topo.story import run_story  # noqa: PLC0415
    why = testbed_unavailable()
    if why:
        print(f"gor.story: skipped, {why}; {FIGURES} not written", file=sys.stderr)
        return {}
    tmp = Path(tempfile.mkdtemp(prefix="gor-story-"))
    with testbed_up(log_dir=tmp / "logs", state_path=tmp / "state.json") as tb:
        res = run_story(tb.fabric, tb.programmer, tb.state, tb.save_state,
                        ScenarioOptions(seed=7, runs_root=tmp / "runs"))
    out: dict[str, Figure] = {}
    if res.loop_s is not None:
        out["gor.loop_s"] = Figure(res.loop_s, "s")
    if res.max_util_after_pct is not None:
        out["gor.max_util_after_pct"] = Figure(res.max_util_after_pct, "%")
    if res.drops_during_move is not None:
        out["gor.drops_during_move"] = Figure(float(res.drops_during_move), "packets")
    return out


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("story", "gor", bench_story),)
