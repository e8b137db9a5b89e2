"""The command line: a scenario run end to end, and bad input reported clearly (unknown
field, more ranks than GPUs, undeliverable flows after a failure, no testbed)."""
from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from sim.cli import main

REPO = Path(__file__).resolve().parents[2]
MODULES = ["sim", "sim.topology", "sim.routing", "sim.engine", "sim.ports", "sim.workloads",
           "sim.policies", "sim.scenario", "sim.model", "sim.runner", "sim.report", "sim.study",
           "sim.calibrate", "sim.cli"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


def test_run_writes_table_report_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _write(tmp_path, "fabric: {spec_file: topo/specs/default.yaml}\njob: {gpus: 8}\n"
                         "workload: {order: rank, size_bytes: 1048576}\n")
    assert main(["run", str(p), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "random_ecmp" in out and "ideal" in out
    for f in ("report.md", "fct_cdf.png", "tier_util.png", "job_time_vs_scale.png"):
        assert (tmp_path / "out" / f).stat().st_size > 0


@pytest.mark.parametrize("text,message", [
    ("job: {gpus: 8}\nworkload: {colective: allreduce}\n", "workload.colective: unknown field"),
    ("job: {gpus: 8}\nfabrik: {}\n", "fabrik: unknown field"),
    ("job: {gpus: 8}\nfabric: {spec_file: topo/specs/default.yaml, spine: 3}\n", "fabric.spine: unknown field"),
    ("fabric: {spec_file: topo/specs/default.yaml}\njob: {gpus: 16}\n",
     "16 ranks asked but the fabric has 8 GPUs"),
    ("job: {gpus: 8}\npolicies: [ecmp]\n", "unknown policy 'ecmp'"),
    ("job: {gpus: 8}\nworkload: {size_bytes: big}\n", "workload.size_bytes: must be int"),
    ("job: {gpus: 8}\nmodel: {link_Bps: fast}\n", "model.link_Bps: must be a number"),
    ("job: {ranks: b0s0}\n", "job.ranks: must be a list"),
    ("job: {gpus: 8}\ngor: {safety: 1.5}\n", "gor.safety: must be in (0, 1]"),
    ("fabric: {spec_file: topo/specs/default.yaml}\njob: {gpus: 8}\nworkload: {collective: allscatter}\n",
     "unknown collective 'allscatter'"),
    ("fabric: {spec_file: topo/specs/default.yaml}\njob: {ranks: [b0s0:0, b9s0:0]}\n", "unknown server 'b9s0'"),
    ("fabric: {spec_file: topo/specs/default.yaml, rails: 0}\njob: {gpus: 8}\n", "fabric.rails"),
    ("fabric: {spec_file: topo/specs/default.yaml}\njob: {gpus: 8}\nfailures: [s7]\n", "unknown switch 's7'"),
])
def test_bad_input_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    assert main(["run", str(_write(tmp_path, text))]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_failed_cable_is_detoured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = REPO / "sim" / "scenarios" / "failed-link-default.yaml"
    assert main(["run", str(scenario), "--out", str(tmp_path)]) == 0
    assert "UNDELIVERABLE" not in capsys.readouterr().err


def test_undeliverable_after_a_failure_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Crossed cuts (b0r0l0 only reaches s0, b1r0l0 only s1): no detour exists."""
    text = (REPO / "sim" / "scenarios" / "failed-link-default.yaml").read_text().replace(
        'failures: ["b0r0l0:3"]', 'failures: ["b0r0l0:4", "b1r0l0:3"]')
    assert main(["run", str(_write(tmp_path, text)), "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "UNDELIVERABLE" in err and "blackholed" in err


def test_measure_runs_the_scenarios_command(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # `sim measure` is `python -m scenarios measure` (scenarios/measure.py): without a running
    # testbed (or root) it refuses, writing nothing
    assert main(["measure", "--out", str(tmp_path / "m.json")]) == 1
    err = capfd.readouterr().err
    assert "scenarios measure: " in err and ("needs root" in err or "no testbed is running" in err)
    assert not (tmp_path / "m.json").exists()


def test_predict_out_that_cannot_be_written_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--out`` under a plain file: one line naming the path, exit 1, no traceback (ux-walk found a
    FileExistsError/FileNotFoundError traceback here)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    rc = main(["predict", str(REPO / "sim/jobs/gpt3-175b-1024.yaml"), "--out", str(blocker / "run")])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.startswith("sim: ") and str(blocker) in err and "Traceback" not in err
