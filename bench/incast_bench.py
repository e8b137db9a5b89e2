"""The incast group: ``SCENARIO=incast`` (:func:`scenarios.incast.run_incast`, seed 7) on a
p4sim fabric brought up for it (root + Mininet; skipped otherwise, with the reason):

* ``incast.pause_frames.{static,dynamic}`` — PFC frames (PAUSE and RESUME) the switches
  sent while every sender ran into the one receiver port, per threshold mode;
* ``incast.drops.{static,dynamic}`` — packets lost in that run: PSNs the receivers found
  missing plus the switches' pipeline drops.

Counts from one live run: they vary from run to run with the machine's load (the NIC
emulators' pacing, DCQCN's reaction); bench/README.md, "Figures (incast group)".

>>> [b.name for b in BENCHMARKS], incast_figures({}) == {}
(['incast'], True)
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure
from scenarios.common import ScenarioOptions
from scenarios.incast import run_incast
from testbed.traffic import testbed_unavailable, testbed_up

FIGURES = tuple(f"incast.{what}.{mode}" for what in ("pause_frames", "drops")
                for mode in ("static", "dynamic"))


def incast_figures(phases: dict[tuple[str, str], Any]) -> dict[str, Figure]:
    """The group's figures from ``IncastResult.phases`` (only the incast runs measured)."""
    out: dict[str, Figure] = {}
    for mode in ("static", "dynamic"):
        ph = phases.get((mode, "incast"))
        if ph is None or ph.why_unmeasured():
            continue
        out[f"incast.pause_frames.{mode}"] = Figure(float(ph.pause_frames), "frames")
        out[f"incast.drops.{mode}"] = Figure(float(ph.drops), "packets")
    return out


def bench_incast(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001 — one live run
    """One run of ``SCENARIO=incast`` on a fabric brought up for it."""
    why = testbed_unavailable()
    if why:
        print(f"incast: skipped, {why}; {FIGURES} not written", file=sys.stderr)
        return {}
    with tempfile.TemporaryDirectory(prefix="astral-incast-") as name:
        tmp = Path(name)
        with testbed_up(log_dir=tmp / "logs", state_path=tmp / "state.json") as tb:
            res = run_incast(tb.fabric, tb.programmer, tb.state, tb.save_state,
                             ScenarioOptions(seed=7, runs_root=tmp / "runs"))
    figures = incast_figures(res.phases)
    if res.status != 0 or set(figures) != set(FIGURES):
        raise BenchCheckError(f"incast: the scenario failed or measured a mode only in part "
                              f"({'; '.join(res.errors) or 'figures: ' + ', '.join(figures)})")
    return figures


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("incast", "incast", bench_incast),)
