"""Issue 31, round six: Megatron-Core's standalone FP8 cast of FC2's input, and NCCL's
algorithm choice for NVLink collectives."""
from __future__ import annotations

import pytest

from predict_jobs import small
from sim.predict import graph
from sim.predict.framework import PROFILES, resolve_framework
from sim.predict.job import TrainingJob, job_from_dict
from sim.predict.predict import predict


def _fp8_job(framework: dict, recipe: str = "delayed") -> TrainingJob:
    return job_from_dict(small(parallel={"tp": 1, "pp": 1, "dp": 8}, training={"precision": "fp8"},
                               framework={**framework, "fp8_recipe": recipe}, gpu={"preset": "H100-SXM"}),
                         "j.yaml")


def _cast_bytes_per_element(j: TrainingJob, name: str) -> float:
    fwd = {k.name: k for k in graph.layer_forward(j, moe=False)}
    M, _, K = fwd[name].dims
    return fwd[f"fp8.cast.{name}.x"].bytes / (M * K)


@pytest.mark.parametrize("recipe,fused,standalone", [("delayed", 1.0, 4.0), ("current", 5.0, 8.0)])
def test_megatron_core_casts_fc2_input_itself(recipe: str, fused: float, standalone: float) -> None:
    # megatron/core/transformer/mlp.py: bias_swiglu_impl writes BF16, TERowParallelLinear casts
    for name in ("megatron-core", "nemo", "megatron-bridge"):
        j = _fp8_job({"name": name}, recipe)
        assert _cast_bytes_per_element(j, "fc2") == pytest.approx(standalone), name
        assert _cast_bytes_per_element(j, "fc1") == pytest.approx(fused), name      # LayerNormLinear
        assert _cast_bytes_per_element(j, "out_proj") == pytest.approx(standalone), name


def test_layernorm_mlp_stacks_keep_fc2_fused() -> None:
    for name in ("composer-fsdp", "torchtitan", "pytorch-fsdp", "deepspeed"):
        assert PROFILES[name].fp8_fc2_fused, name
        assert _cast_bytes_per_element(_fp8_job({"name": name}, "delayed"), "fc2") == pytest.approx(1.0), name


def test_fc2_cast_is_an_override_and_slows_the_iteration() -> None:
    fused = _fp8_job({"name": "megatron-core", "fp8_fc2_fused": True})
    cast = _fp8_job({"name": "megatron-core"})
    assert _cast_bytes_per_element(fused, "fc2") == pytest.approx(1.0)
    assert predict(cast).iteration_s > predict(fused).iteration_s
    bf16 = job_from_dict(small(parallel={"tp": 1, "pp": 1, "dp": 8}, framework={"name": "megatron-core"}), "j.yaml")
    assert not [k for k in graph.layer_forward(bf16, moe=False) if k.name.startswith("fp8.")]


def test_fc2_fused_must_be_a_bool() -> None:
    with pytest.raises(Exception, match="fp8_fc2_fused"):
        resolve_framework({"name": "megatron-core", "fp8_fc2_fused": "yes"}, "j.yaml")
