"""Predictions against published measurements: Table 1 of the Megatron-LM paper (SC 2021,
achieved teraFLOP/s per GPU of GPT models on A100-80GB GPUs, counted with recomputation),
with the ``megatron-lm`` framework profile (DDP, unfused attention).

These ten rows are part of the validation set (sim/validation/runs.yaml; four held out,
six in the fit split the calibration was fitted on), so this is a regression check of the
whole model on one source: every row within 15 %, the median within 5 %, and the
pipeline-parallel rows (39B to 1T, where the table's tp 8 × pp and the schedule decide)
within 5 %. The data-parallel-heavy small rows come out 9-15 % slow (their micro-batch
is not printed: 1 is assumed; the paper's Figure 9 shows larger ones faster)."""
from __future__ import annotations

import pytest

from sim.predict.job import job_from_dict
from sim.predict.predict import predict
from sim.predict.reference import MEGATRON_TABLE1, megatron_job

ROWS = [r for r in MEGATRON_TABLE1 if r.tp == 8]


@pytest.fixture(scope="module")
def predicted() -> dict[float, object]:
    return {row.params_B: predict(job_from_dict(megatron_job(row), f"megatron-{row.params_B:g}b"))
            for row in MEGATRON_TABLE1}


@pytest.mark.parametrize("row", MEGATRON_TABLE1, ids=[f"{r.params_B:g}B-{r.gpus}" for r in MEGATRON_TABLE1])
def test_megatron_table1_throughput_within_tolerance(row: object, predicted: dict) -> None:
    r = predicted[row.params_B]
    got = r.hardware_tflops_per_gpu
    assert abs(got / row.tflops_per_gpu - 1) <= (0.05 if row.pp > 1 else 0.15), (row, got)
    assert r.mfu < row.pct_of_peak / 100                         # model FLOPs leave out the recomputation


def test_the_median_row_within_5_percent(predicted: dict) -> None:
    errs = sorted(abs(predicted[r.params_B].hardware_tflops_per_gpu / r.tflops_per_gpu - 1) for r in MEGATRON_TABLE1)
    assert errs[len(errs) // 2] <= 0.05


def test_throughput_per_gpu_grows_with_the_model_as_published() -> None:
    small, large = ROWS[1], ROWS[-1]                            # 39B on 512, 1T on 3,072
    a = predict(job_from_dict(megatron_job(small), "a")).hardware_tflops_per_gpu
    b = predict(job_from_dict(megatron_job(large), "b")).hardware_tflops_per_gpu
    assert b > a
