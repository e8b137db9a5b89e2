"""The incast group's figures from a scenario result (bench/incast_bench.py), and its
registration in ``make bench``; the live run itself is the scenario's test."""
from __future__ import annotations

from bench import groups, select
from bench.incast_bench import FIGURES, incast_figures
from scenarios.incast_report import FlowFigures, PhaseFigures


def test_figures_come_from_the_incast_runs_only_when_measured() -> None:
    ok = [FlowFigures("a", 10, 9, 1.0, lost_pkts=1), FlowFigures("b", 10, 10, 1.0)]
    phases = {("static", "incast"): PhaseFigures("static", "incast", ok, 3.0, 40, 9, 2, 60, 12),
              ("static", "lone"): PhaseFigures("static", "lone", ok[:1], 3.0, 4, 1, 0, 32, 12),
              ("dynamic", "incast"): PhaseFigures("dynamic", "incast",
                                                  [FlowFigures("a", 10, 0, 0.0)], samples=12)}
    figs = incast_figures(phases)
    assert {k: (f.value, f.unit) for k, f in figs.items()} == {
        "incast.pause_frames.static": (40.0, "frames"), "incast.drops.static": (3.0, "packets")}
    assert set(FIGURES) == {"incast.pause_frames.static", "incast.pause_frames.dynamic",
                            "incast.drops.static", "incast.drops.dynamic"}


def test_the_group_is_registered() -> None:
    assert "incast" in groups()
    assert [f"{b.group}.{b.name}" for b in select(["incast"])] == ["incast.incast"]
