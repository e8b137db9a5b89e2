"""The ``testbed`` benchmark group (:mod:`bench.testbed_bench`): registration, the 16-switch
spec, the /proc readings and the skip path. No Mininet is started here: the benchmark
itself runs under ``make bench`` (root)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench import groups, run_benchmarks, select
from bench import testbed_bench as tb
from bench.results import BenchConfig
from topo import build_fabric

TINY = BenchConfig(duration_s=0.05, runs=1, warmup_s=0.0)


def test_registered_as_group_testbed() -> None:
    assert "testbed" in groups()
    assert [(b.group, b.name) for b in select(["testbed"])] == [("testbed", "default"),
                                                                ("testbed", "16sw"),
                                                                ("testbed", "2pod_dualport")]


def test_specs_have_the_documented_switch_counts() -> None:
    big = build_fabric(tb.fabric_spec("16sw"))
    assert len(big.switches) == 16
    assert sum(s.role == "leaf" for s in big.switches) == 8
    assert len(build_fabric(tb.fabric_spec("default")).switches) == 6
    pods = build_fabric(tb.fabric_spec("2pod_dualport")).switches
    assert [sum(s.role == r for s in pods) for r in ("leaf", "spine", "core")] == [8, 4, 4]


def test_proc_readings_of_this_process() -> None:
    assert tb.cpu_ticks(os.getpid()) >= 0
    assert tb.rss_mb(os.getpid()) > 1.0
    assert tb.cpu_percent([os.getpid()], 0.05) >= 0.0


def test_not_root_is_a_clear_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    why = tb.testbed_unavailable()
    assert why is not None and "root" in why


def test_skip_writes_no_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(tb, "testbed_unavailable", lambda: "needs root (test)")

    def no_compile() -> None:
        raise AssertionError("a skipped benchmark must not compile or start anything")

    monkeypatch.setattr(tb, "_compile", no_compile)
    out = tmp_path / "bench.json"
    out.write_text(json.dumps({"testbed.rss_mb": {"value": 300.0, "unit": "MB"}}))
    assert run_benchmarks(["testbed"], TINY, out) == {}
    assert json.loads(out.read_text()) == {"testbed.rss_mb": {"value": 300.0, "unit": "MB"}}
    err = capsys.readouterr().err
    assert "testbed.default: skipped, needs root (test)" in err
    assert "testbed.16sw: skipped, needs root (test); testbed.ready_s.16sw not written" in err
