"""A job that cannot run is refused naming the file, the field and the reason; the CLI
prints it on one line and exits 2, never with a traceback."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from predict_jobs import small
from sim.cli import main
from sim.predict.job import job_from_dict
from sim.predict.predict import predict
from sim.topology import SimInputError

CASES = [
    (small(parallel={"tp": 3}), "j.yaml: parallel.tp: 3 does not divide model.heads (16)"),
    (small(parallel={"pp": 5}), "j.yaml: parallel.pp: 5 does not divide model.layers (4), nor model.layers + 2"),
    (small(parallel={"pp": 2, "first_stage_layers": 5}), "j.yaml: parallel.first_stage_layers: must be in 0..model"),
    (small(parallel={"pp": 2, "first_stage_layers": 3, "last_stage_layers": 3}),
     "j.yaml: parallel.first_stage_layers: the first and last stages' layers (6) do not add up"),
    (small(parallel={"schedule": "interleaved", "virtual_stages": 4}),
     "j.yaml: parallel.pp: pp x virtual_stages (2 x 4) does not divide model.layers (4)"),
    (small(gpu={"preset": "B300"}), "j.yaml: gpu.preset: unknown GPU 'B300' (known: A100-40GB, A100-80GB, "
                                    "H100-SXM, H800, H20, H200, H100-96GB-500W)"),
    (small(model={"hidden": None}), "j.yaml: model.hidden: missing"),
    (small(gpu=None), "j.yaml: gpu: missing section"),
    (small(model={"hiden": 5}), "j.yaml: model.hiden: unknown field (known: "),
    (small(parallel={"tp": "8"}), "j.yaml: parallel.tp: must be int, got '8'"),
    (small(training={"global_batch": 15}), "j.yaml: training.global_batch: 15 is not a multiple of "
                                           "micro_batch x dp (1 x 2 = 2)"),
    (small(training={"precision": "fp8"}, gpu={"preset": "A100-80GB"}),
     "j.yaml: training.precision: fp8: A100-80GB has no fp8 tensor cores"),
    (small(parallel={"ep": 2}), "j.yaml: parallel.ep: 2 experts groups for a dense model"),
    (small(parallel={"zero": 4}), "j.yaml: parallel.zero: ZeRO stage must be 0..3, got 4"),
    (small(network={"policy": "magic"}), "j.yaml: network.policy: unknown value 'magic' (known: random_ecmp"),
    (small(kernels={"gemm": 1.5}), "j.yaml: kernels.gemm: an efficiency in (0, 1], got 1.5"),
    (small(network={"placement": "scattered"}),
     "j.yaml: network.placement: unknown value 'scattered' (known: contiguous, fragmented, random)"),
]


@pytest.mark.parametrize("data, message", CASES, ids=[m.split(": ")[1] for _, m in CASES])
def test_bad_job_names_the_field(data: dict, message: str) -> None:
    with pytest.raises(SimInputError) as e:
        job_from_dict(data, "j.yaml")
    assert str(e.value).startswith(message), str(e.value)


def test_more_gpus_than_the_fabric_has() -> None:
    j = job_from_dict(small(parallel={"tp": 2, "pp": 2, "dp": 4}), "j.yaml")
    with pytest.raises(SimInputError) as e:
        predict(j)
    assert str(e.value) == ("j.yaml: parallel: the job needs 16 GPUs (tp 2 x pp 2 x cp 1 x dp 4) "
                            "but the fabric has 8 (4 servers x 2)")


def test_gpus_that_do_not_fill_whole_servers() -> None:
    j = job_from_dict(small(parallel={"tp": 1, "pp": 1, "dp": 3}, training={"global_batch": 3}), "j.yaml")
    with pytest.raises(SimInputError, match=r"^j.yaml: parallel: 3 GPUs do not fill whole servers of 2 GPUs$"):
        predict(j)


@pytest.mark.parametrize("text, message", [
    (yaml.safe_dump(small(parallel={"tp": 3})), "parallel.tp: 3 does not divide model.heads (16)"),
    ("model: [1, 2\n", "not valid YAML"),
    (yaml.safe_dump(small(parallel={"dp": 8})), "parallel: the job needs 32 GPUs"),
])
def test_cli_refuses_on_one_line_with_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               text: str, message: str) -> None:
    job = tmp_path / "bad.yaml"
    job.write_text(text)
    assert main(["predict", str(job), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sim: {job}:") and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_cli_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["predict", str(tmp_path / "none.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err
