"""Sweeps (issue 18, item 4): bad grids refused naming the field, the local pool and a
real Dask cluster (``distributed.LocalCluster``, started and closed here) giving the same
numbers, the run folder's table and plots, the command line."""
from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from sim.cli import main
from sim.sweep.grid import grid_from_dict, load_grid
from sim.sweep.report import best_per_scale, pareto_front
from sim.sweep.run import run_grid
from sim.topology import SimInputError

JOB = {"model": {"layers": 4, "hidden": 512, "heads": 8, "seq_length": 256, "vocab": 1000},
       "training": {"global_batch": 32}, "gpu": {"preset": "H800"}}
GRID = {"name": "tiny", "job": JOB, "parallel": [{"tp": 2}, {"tp": 4, "pp": 2}, {"tp": 3}],
        "policies": ["random_ecmp", "tccl"], "gpus": [8, 16], "seeds": [1, 2]}


@pytest.mark.parametrize("change, message", [
    ({"parallell": []}, "g.yaml: parallell: unknown field (known: gpus, job, name, parallel, policies, seeds)"),
    ({"parallel": [{"tp": 2}, {"tpp": 2}]}, "g.yaml: parallel[1].tpp: unknown field (known: tp, pp, cp,"),
    ({"parallel": [{"tp": 2, "dp": 4}]}, "g.yaml: parallel[0].dp: dp is derived from gpus"),
    ({"parallel": []}, "g.yaml: parallel: must be a non-empty list"),
    ({"parallel": ["tp8"]}, "g.yaml: parallel[0]: must be a mapping of parallel fields, got 'tp8'"),
    ({"policies": ["tccl", "ecmp"]}, "g.yaml: policies[1]: unknown policy 'ecmp' (known: random_ecmp"),
    ({"gpus": [8, 0]}, "g.yaml: gpus[1]: must be a positive integer, got 0"),
    ({"gpus": "8"}, "g.yaml: gpus: must be a non-empty list of integers, got '8'"),
    ({"seeds": [-1]}, "g.yaml: seeds[0]: must be an integer of at least 0, got -1"),
    ({"job": "no/such/job.yaml"}, "g.yaml: job: no/such/job.yaml: no such job file"),
    ({"name": ""}, "g.yaml: name: must be a non-empty string"),
])
def test_bad_grid_is_refused_naming_the_field(change: dict, message: str) -> None:
    with pytest.raises(SimInputError) as err:
        grid_from_dict({**GRID, **change}, "g.yaml")
    assert message in str(err.value)


def test_missing_field_and_yaml_error(tmp_path: Path) -> None:
    with pytest.raises(SimInputError, match="g.yaml: gpus: missing"):
        grid_from_dict({"job": JOB, "parallel": [{"tp": 2}]}, "g.yaml")
    p = tmp_path / "g.yaml"
    p.write_text("job: x\nparallel: [{tp: 2}\n")
    with pytest.raises(SimInputError, match=r"g\.yaml:3:1: not valid YAML"):
        load_grid(p)


def _numbers(rows: list[dict]) -> list[tuple]:
    def num(x: float) -> "float | None":
        return None if math.isnan(x) else x
    return [(r["point"], r["label"], r["status"], r["dp"], num(r["iteration_s"]), num(r["tflops_per_gpu"]),
             num(r["memory_GiB"]), r["error"]) for r in rows]


def test_local_pool_and_dask_cluster_give_the_same_numbers() -> None:
    from distributed import LocalCluster  # noqa: PLC0415

    grid = grid_from_dict(GRID, "g.yaml")
    local = run_grid(grid, workers=2)
    assert len(local) == 3 * 2 * 2 * 2
    assert [r["point"] for r in local] == list(range(24))
    ok = [r for r in local if r["status"] == "ok"]
    assert len(ok) == 16 and all(r["iteration_s"] > 0 for r in ok)
    bad = {r["error"] for r in local if r["status"] != "ok"}
    assert bad == {"gpus: 8 is not a multiple of tp x pp x cp (3)", "gpus: 16 is not a multiple of tp x pp x cp (3)"}
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                      dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        remote = run_grid(grid, address=cluster.scheduler_address)
        assert "evaluate_point" in cluster.scheduler.task_prefixes          # the points ran on the cluster
    assert _numbers(remote) == _numbers(local)
    serial = run_grid(grid, workers=1)
    assert _numbers(serial) == _numbers(local)


def test_dask_address_without_scheduler_is_refused() -> None:
    grid = grid_from_dict({**GRID, "parallel": [{"tp": 2}], "gpus": [8], "seeds": [1], "policies": ["tccl"]})
    with pytest.raises(SimInputError, match="--address: 'localhost:1': a Dask scheduler address"):
        run_grid(grid, address="localhost:1")


def test_cli_sweep_writes_table_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml  # noqa: PLC0415

    p = tmp_path / "g.yaml"
    p.write_text(yaml.safe_dump({**GRID, "seeds": [1]}))
    out = tmp_path / "run"
    assert main(["sweep", str(p), "--workers", "2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "sweep tiny: 12 points (8 feasible)" in text and "best" in text
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert len(rows) == 12 and {r["status"] for r in rows} == {"ok", "infeasible"}
    md = (out / "results.md").read_text()
    assert "## Best configuration per scale" in md and "| 16 |" in md
    for f in ("best_per_scale.png", "pareto.png"):
        assert (out / f).stat().st_size > 1000
    p.write_text("job: x\nparallel: [{tp: 2}]\ngpus: [8]\npolicy: [tccl]\n")
    assert main(["sweep", str(p)]) == 2
    assert f"{p}: policy: unknown field" in capsys.readouterr().err


def test_best_per_scale_and_pareto_on_rows() -> None:
    rows = run_grid(grid_from_dict({**GRID, "seeds": [1]}), workers=1)
    best = best_per_scale(rows)
    assert [b["gpus"] for b in best] == [8, 16]
    for b in best:
        same = [r for r in rows if r["gpus"] == b["gpus"] and r["status"] == "ok"]
        assert b["iteration_s"] == min(r["iteration_s"] for r in same)
    front = pareto_front(rows)
    assert front[0] is best[0] and all(math.isfinite(r["iteration_s"]) for r in front)
    assert all(a["iteration_s"] > b["iteration_s"] for a, b in zip(front, front[1:]))
