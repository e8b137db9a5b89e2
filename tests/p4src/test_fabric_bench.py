"""Smoke tests of the ``fabric`` benchmark group (:mod:`bench.fabric_bench`): the group is
registered, the uniformity figure is exact (crc16 over a full source-port sweep is a
bijection), the packet-rate benchmarks time a checked pipeline (the miniature fabric
always, ``p4src/fabric.p4`` when it exists) and skip without a figure otherwise."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import bench.fabric_bench as fb
from bench import groups, run_benchmarks, select
from bench.results import BenchConfig

TINY = BenchConfig(duration_s=0.05, runs=1, warmup_s=0.0)
MINI_P4 = Path(__file__).resolve().parent / "programs" / "mini_fabric.p4"


def test_registered_as_the_fabric_group() -> None:
    assert "fabric" in groups()
    assert [b.name for b in select(["fabric"])] == ["ecmp_uniformity", "pps_leaf", "pps_spine"]


def test_uniformity_figure_is_exactly_one() -> None:
    fig = fb.bench_uniformity(TINY, flows_per_size=2)["fabric.ecmp_uniformity.max_over_mean"]
    assert (fig.value, fig.unit) == (1.0, "ratio")


@pytest.mark.parametrize("role", ["leaf", "spine"])
def test_pps_on_the_mini_fabric(role: str) -> None:
    assert fb.measure_role(role, TINY, MINI_P4, routed=False) > 0


def test_group_writes_its_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    figures = run_benchmarks(["fabric"], TINY, out)
    data = json.loads(out.read_text())
    assert data["fabric.ecmp_uniformity.max_over_mean"] == {"value": 1.0, "unit": "ratio"}
    if fb.FABRIC_P4.exists():
        assert figures["fabric.pps.leaf"].unit == figures["fabric.pps.spine"].unit == "pps"
        assert data["fabric.pps.leaf"]["value"] > 0 and data["fabric.pps.spine"]["value"] > 0
    monkeypatch.setattr(fb, "FABRIC_P4", tmp_path / "missing.p4")
    assert fb.bench_pps_leaf(TINY) == {} and fb.bench_pps_spine(TINY) == {}
    assert "fabric.pps_leaf: skipped" in capsys.readouterr().err
