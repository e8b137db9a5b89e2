"""Scaling on a 1K-GPU pod in CI time: the study's scenario at 1 block (a half-pod job of
512 GPUs, rank-order ring over 8 channels, background) under every policy."""
from __future__ import annotations

import numpy as np

from sim.runner import run_scenario
from sim.study import study_scenario


def test_1k_gpu_pod_all_policies() -> None:
    res = run_scenario(study_scenario(1))
    by = res.by_policy()
    assert res.job.num_ranks == 512 and set(by) == {"random_ecmp", "tccl", "tccl_gor", "ideal"}
    for r in res.results:
        assert r.undeliverable == 0 and np.isfinite(r.collective_s)
        assert len(r.phases[0].fct_s) == 512 * 8
    ideal = by["ideal"].collective_s
    assert by["tccl"].collective_s >= ideal * (1 - 1e-9)
    assert by["random_ecmp"].collective_s >= by["tccl"].collective_s * (1 - 1e-9)
    assert by["tccl_gor"].collective_s <= by["tccl"].collective_s * (1 + 1e-9)
    moved = by["tccl_gor"].phases[0]
    assert moved.gor_path_mismatch == 0
