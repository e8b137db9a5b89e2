"""Predictions against published measurements: Table 1 of the Megatron-LM paper (SC 2021,
achieved teraFLOP/s per GPU of GPT models on A100-80GB GPUs, counted with recomputation).

Tolerance 10 %: the issue's aim for predictions judged against real training runs. The
kernel model's defaults are not fitted to these rows (sim/predict/kernels.py says where
each comes from), so this is a held-out check; the paper's figures are single benchmark
runs on a shared machine (run-to-run spread of a few %), and the Selene fabric is
approximated by the pod64k spec at 200 Gb/s. The rows with tensor parallelism 8 (18B to
1T parameters, 256 to 3,072 GPUs) are tested; the small data-parallel-only rows are in
sim/README.md's table (1.7B: +15 %, the exposed 32-way gradient all-reduce)."""
from __future__ import annotations

import pytest

from sim.predict.job import job_from_dict
from sim.predict.predict import predict
from sim.predict.reference import MEGATRON_TABLE1, megatron_job

TOLERANCE = 0.10
ROWS = [r for r in MEGATRON_TABLE1 if r.tp == 8]


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.params_B:g}B-{r.gpus}" for r in ROWS])
def test_megatron_table1_throughput_within_tolerance(row: object) -> None:
    r = predict(job_from_dict(megatron_job(row), f"megatron-{row.params_B:g}b"))
    got = r.hardware_tflops_per_gpu
    assert abs(got / row.tflops_per_gpu - 1) <= TOLERANCE, (row, got)
    assert r.mfu < row.pct_of_peak / 100                         # model FLOPs leave out the recomputation


def test_throughput_per_gpu_grows_with_the_model_as_published() -> None:
    small, large = ROWS[1], ROWS[-1]                            # 39B on 512, 1T on 3,072
    a = predict(job_from_dict(megatron_job(small), "a")).hardware_tflops_per_gpu
    b = predict(job_from_dict(megatron_job(large), "b")).hardware_tflops_per_gpu
    assert b > a
