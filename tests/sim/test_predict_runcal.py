"""``python -m sim calibrate-run``: efficiency factors recovered from the monitoring data of
whole runs. The runs are synthetic: their iteration times are predicted here with known
factors and written in the three forms a monitoring system keeps (a list of seconds, a
Prometheus text exposition, a Prometheus ``query_range`` response); no real run was
measured. Also: the readers of each form, bad input (exit 2, ``FILE: field: reason``)."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from predict_jobs import small
from sim.cli import main
from sim.predict.job import job_from_dict
from sim.predict.kernels import KernelParams
from sim.predict.monitoring import exposition_values, query_range_values
from sim.predict.predict import job_fabric, predict
from sim.predict.runcal import calibrate_run_file, predict_time_s, with_factors

REPO = Path(__file__).resolve().parents[2]
TRUTH = with_factors(KernelParams(), compute=0.85, memory=0.55, nvlink=0.6)
# Shapes whose shares of GEMM/attention, element-wise and NVLink time differ (default
# testbed fabric: 2 GPUs per server, so TP 2 runs over NVLink).
JOBS: dict[str, dict[str, Any]] = {
    "tp2": small(training={"global_batch": 64}),
    "tp1": small(parallel={"tp": 1, "pp": 2, "dp": 4}, training={"global_batch": 64}),
    "h512": small(model={"hidden": 512, "heads": 8, "seq_length": 2048}, training={"global_batch": 64}),
    "h2048": small(model={"hidden": 2048, "heads": 16}, parallel={"tp": 2, "pp": 4, "dp": 1},
                   training={"global_batch": 32}),
    "sp": small(parallel={"tp": 2, "pp": 1, "dp": 4, "sequence_parallel": True},
                training={"global_batch": 64, "micro_batch": 2}),
    "h1536": small(model={"hidden": 1536, "heads": 12, "seq_length": 512},
                   training={"global_batch": 64, "micro_batch": 4}),
}
HELD_OUT = ("h1536",)
for _d in JOBS.values():          # the fitter's test: no host-launch floor hiding the compute factor
    _d["framework"] = {"cpu_op_s": 0.0, "microbatch_overhead_s": 0.0, "iteration_overhead_s": 0.0}


@pytest.fixture(scope="module")
def truth_s() -> dict[str, float]:
    """Each job's iteration time under the true factors."""
    return {n: predict_time_s(job_from_dict(d, n), TRUTH) for n, d in JOBS.items()}


def _jitter(t: float, noise: float) -> list[float]:
    """Nine iterations around ``t`` (±noise, median exactly t) and one checkpoint stall."""
    return [t * (1 + noise * k / 4) for k in range(-4, 5)] + [3 * t]


def _histogram(t: float, n: int) -> str:
    return ("# HELP train_iteration_seconds Time of one training iteration.\n"
            "# TYPE train_iteration_seconds histogram\n"
            f'train_iteration_seconds_bucket{{job="h512",le="+Inf"}} {n}\n'
            f'train_iteration_seconds_sum{{job="h512"}} {t * n!r}\n'
            f'train_iteration_seconds_count{{job="h512"}} {n}\n'
            'train_iteration_seconds_bucket{job="other",le="+Inf"} 3\n'
            "train_iteration_seconds_sum{job=\"other\"} 99.0\n"
            'train_iteration_seconds_count{job="other"} 3\n'
            "# TYPE train_tokens_total counter\ntrain_tokens_total 1e9\n")


def _query_range(values: list[float], labels: dict[str, str]) -> dict[str, Any]:
    other = {"metric": {"__name__": "iteration_seconds", "rank": "1"}, "values": [[1.0, "1000"]]}
    mine = {"metric": {"__name__": "iteration_seconds", **labels},
            "values": [[1000.0 + 15 * i, repr(v)] for i, v in enumerate(values)] + [[2000.0, "NaN"]]}
    return {"status": "success", "data": {"resultType": "matrix", "result": [other, mine]}}


def write_runs(d: Path, truth_s: dict[str, float], noise: float = 0.0) -> Path:
    """Job files and monitoring data of every form in ``d``; the RUNS file's path."""
    (d / "jobs").mkdir(exist_ok=True)
    runs: list[dict[str, Any]] = []
    for name, job in JOBS.items():
        (d / "jobs" / f"{name}.yaml").write_text(yaml.safe_dump(job))
        runs.append({"name": name, "job": f"jobs/{name}.yaml", "heldout": name in HELD_OUT})
    t = truth_s
    runs[0]["iterations_s"] = _jitter(t["tp2"], noise)
    runs[1]["job"] = JOBS["tp1"]                                            # an inline job
    runs[1]["iterations_s"] = _jitter(t["tp1"], noise)
    (d / "h512.prom").write_text(_histogram(t["h512"] * (1 + noise), 200))
    runs[2]["prometheus"] = {"file": "h512.prom", "metric": "train_iteration_seconds", "labels": {"job": "h512"}}
    for k, part in enumerate(_jitter(t["h2048"], noise)[:9:4]):           # three scrapes of a gauge
        (d / f"h2048-{k}.prom").write_text(f"# TYPE last_iteration_seconds gauge\n"
                                           f'last_iteration_seconds{{rank="0"}} {part!r}\n')
    runs[3]["prometheus"] = {"file": [f"h2048-{k}.prom" for k in range(3)], "metric": "last_iteration_seconds"}
    (d / "sp.json").write_text(json.dumps(_query_range(_jitter(t["sp"], noise), {"rank": "0"})))
    runs[4]["query_range"] = {"file": "sp.json", "labels": {"rank": "0"}}
    (d / "h1536.prom").write_text("# TYPE step_seconds summary\n"
                                  f'step_seconds{{quantile="0.5"}} {t["h1536"]!r}\n'     # exact: held out
                                  f'step_seconds{{quantile="0.99"}} {t["h1536"] * 2!r}\n'
                                  "step_seconds_sum 1000.0\nstep_seconds_count 10\n")
    runs[5]["prometheus"] = {"file": "h1536.prom", "metric": "step_seconds"}
    p = d / "runs.yaml"
    p.write_text("# synthetic runs (generated by the test from known factors)\n" + yaml.safe_dump({"runs": runs}))
    return p


def test_exact_runs_give_back_the_factors(tmp_path: Path, truth_s: dict[str, float]) -> None:
    rep = calibrate_run_file(write_runs(tmp_path, truth_s))
    assert rep.factors == {"compute": pytest.approx(0.85, rel=1e-3), "memory": pytest.approx(0.55, rel=1e-3),
                           "nvlink": pytest.approx(0.6, rel=1e-3)}
    assert rep.error_before_pct > 3 and rep.error_after_pct < 0.05
    assert rep.error_heldout_pct is not None and rep.error_heldout_pct < 0.05
    assert [r.name for r in rep.rows if r.heldout] == ["h1536"] and rep.kept == {}
    assert rep.rows[0].values == 10 and rep.rows[3].values == 3


def test_noisy_runs_fit_within_the_noise(tmp_path: Path, truth_s: dict[str, float]) -> None:
    rep = calibrate_run_file(write_runs(tmp_path, truth_s, noise=0.03))   # medians off by up to 3 %
    assert rep.error_after_pct < 1.0 and rep.error_heldout_pct is not None and rep.error_heldout_pct < 2.0
    assert rep.error_after_pct < rep.error_before_pct
    assert abs(rep.factors["compute"] - 0.85) < 0.15       # 3 % noise: the compute/memory split is loose


def test_cli_prints_the_errors_and_writes_a_kernels_section(tmp_path: Path, truth_s: dict[str, float],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kernels.yaml"
    assert main(["calibrate-run", str(write_runs(tmp_path, truth_s)), "--write", str(out)]) == 0
    text = capsys.readouterr().out
    for line in ("runs: 5 fitted on, 1 held out", "error before (defaults, every run)",
                 "error after (the runs fitted on):   0.0 %", "error on the held-out runs:         0.0 %",
                 "compute_scale: 0.85  # compute x0.85", "memory: 0.55  # fitted", "nvlink: 0.6  # fitted"):
        assert line in text
    section = yaml.safe_load(out.read_text())["kernels"]
    job = job_from_dict({**JOBS["h1536"], "kernels": section}, "j.yaml")        # usable in a job file
    assert predict(job).iteration_s == pytest.approx(truth_s["h1536"], rel=1e-3)


def test_a_factor_no_run_depends_on_is_kept(tmp_path: Path, truth_s: dict[str, float]) -> None:
    (tmp_path / "r.yaml").write_text(yaml.safe_dump({"fit": ["compute", "nvlink"], "runs": [
        {"job": JOBS["tp1"], "iterations_s": [truth_s["tp1"]]},
        {"job": small(parallel={"tp": 1, "pp": 1, "dp": 8}), "iterations_s": [0.05]}]}))
    rep = calibrate_run_file(tmp_path / "r.yaml")
    assert rep.kept == {"memory": "not in fit:", "nvlink": "no fitted run depends on it"}
    assert rep.params.nvlink == KernelParams().nvlink and set(rep.factors) == {"compute"}
    assert "nvlink: 0.78  # kept: no fitted run depends on it" in rep.summary()


def test_shared_fabric_gives_the_fresh_prediction() -> None:
    j = job_from_dict(JOBS["sp"], "j.yaml")
    jf = job_fabric(j)
    for p in (KernelParams(), with_factors(KernelParams(), 0.5, 0.3, 0.2)):
        assert predict(replace(j, kernels=p), jf).iteration_s == predict(replace(j, kernels=p)).iteration_s


def test_the_readers_of_each_form() -> None:
    assert exposition_values(_histogram(1.5, 4), "train_iteration_seconds", {"job": "h512"}, "w") == [1.5]
    assert sorted(exposition_values(_histogram(1.5, 4), "train_iteration_seconds", {}, "w")) == [1.5, 33.0]
    text = 'step_seconds{quantile="0.5"} 1.2\nstep_seconds_sum 10\nstep_seconds_count 5\n'
    assert exposition_values("# TYPE step_seconds summary\n" + text, "step_seconds", {}, "w") == [1.2]
    assert exposition_values('# TYPE g gauge\ng{i="1"} 1.0\ng{i="2"} 1.4\n', "g", {}, "w") == [1.0, 1.4]
    assert query_range_values(_query_range([2.0, 3.0], {"rank": "0"}), {"rank": "0"}, "w") == [2.0, 3.0]


def _bad(tmp_path: Path, runs: Any, files: dict[str, str] | None = None) -> Path:
    (tmp_path / "jobs").mkdir(exist_ok=True)
    (tmp_path / "jobs" / "ok.yaml").write_text(yaml.safe_dump(JOBS["tp2"]))
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(runs))
    return p


EMPTY_MATRIX = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
    {"metric": {"rank": "0"}, "values": []}, {"metric": {"rank": "1"}, "values": [[1, "NaN"]]}]}})
BAD = [
    ({"runs": [{"job": "jobs/nope.yaml", "iterations_s": [1.0]}]}, {},
     "bad.yaml: runs[0].job: no such job file: jobs/nope.yaml"),
    ({"runs": [{"job": "jobs/ok.yaml", "prometheus": {"file": "m.prom", "metric": "iter_seconds"}}]},
     {"m.prom": _histogram(1.0, 3)},
     "bad.yaml: runs[0].prometheus.metric: 'iter_seconds' not in the file (metrics there: "
     "train_iteration_seconds (histogram), train_tokens (counter))"),
    ({"runs": [{"job": "jobs/ok.yaml", "query_range": {"file": "q.json"}}]}, {"q.json": EMPTY_MATRIX},
     "bad.yaml: runs[0].query_range: the matrix has no values"),
    ({"runs": [{"job": "jobs/ok.yaml", "iterations_s": [1.0], "heldout": True}]}, {},
     "bad.yaml: runs: no run left to fit on (every run is held out)"),
    ({"runs": [{"job": "jobs/ok.yaml"}]}, {},
     "bad.yaml: runs[0]: measured iteration times: missing (one of: iterations_s, prometheus, query_range)"),
    ({"runs": [{"job": "jobs/ok.yaml", "iterations_s": [1.0], "query_range": {"file": "q.json"}}]}, {},
     "runs[0]: measured iteration times: give one, not iterations_s and query_range"),
    ({"runs": [{"job": "jobs/ok.yaml", "prometheus": {"file": "m.prom", "metric": "train_tokens"}}]},
     {"m.prom": _histogram(1.0, 3)}, "runs[0].prometheus.metric: 'train_tokens' is a counter"),
    ({"runs": [{"job": "jobs/ok.yaml", "prometheus": {"file": "m.prom", "metric": "train_iteration_seconds",
                                                       "labels": {"job": "x"}}}]},
     {"m.prom": _histogram(1.0, 3)}, "runs[0].prometheus.labels: no series of 'train_iteration_seconds' matches"),
    ({"runs": [{"job": "jobs/ok.yaml", "iterations_s": [1.0]},
               {"job": small(gpu={"preset": "A100-80GB"}), "iterations_s": [1.0]}]}, {},
     "runs[1].job: gpu A100-80GB differs from runs[0]'s H800"),
    ({"runs": [{"job": "jobs/ok.yaml", "iterations_s": [1.0], "heldot": True}]}, {},
     "runs[0].heldot: unknown field"),
    ({"runs": [{"job": "jobs/ok.yaml", "iterations_s": [0.0]}]}, {}, "runs[0].iterations_s: a non-empty list"),
    ({"fit": ["compute", "overlap"], "runs": []}, {}, "bad.yaml: fit: a non-empty list of compute, memory, nvlink"),
]


@pytest.mark.parametrize("runs, files, message", BAD, ids=[m.split(": ", 1)[1][:40] for _, _, m in BAD])
def test_bad_input_exits_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            runs: Any, files: dict[str, str], message: str) -> None:
    assert main(["calibrate-run", str(_bad(tmp_path, runs, files))]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_input_through_the_command_line_has_no_traceback(tmp_path: Path) -> None:
    p = _bad(tmp_path, {"runs": [{"job": "jobs/ok.yaml", "query_range": {"file": "q.json"}}]},
             {"q.json": EMPTY_MATRIX})
    r = subprocess.run([sys.executable, "-m", "sim", "calibrate-run", str(p)], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == f"sim: {p}: runs[0].query_range: the matrix has no values (no series matching " \
                               f"any label with a finite positive value)"
