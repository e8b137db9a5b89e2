"""Issue 31, round five: flash-attention head dimensions padded to the kernel compiled for
them, and the local token copies of Megatron-Core's MoE dispatchers."""
from __future__ import annotations

import pytest

from predict_jobs import small
from sim.predict import graph
from sim.predict.gpus import PRESETS
from sim.predict.job import TrainingJob, job_from_dict
from sim.predict.kernels import Kernel, KernelParams, compute_rate, kernel_time_s, padded_head_dim
from sim.predict.predict import predict

H100 = PRESETS["H100-SXM"]


@pytest.mark.parametrize("impl,dims", [
    ("fa2", {32: 32, 40: 64, 64: 64, 80: 96, 96: 96, 112: 128, 128: 128, 160: 160, 192: 192, 200: 256}),
    ("triton", {16: 16, 40: 64, 64: 64, 80: 128, 112: 128, 128: 128}),
    ("fa3", {40: 64, 64: 64, 80: 96, 112: 128, 128: 128, 160: 192, 256: 256}),
    ("cudnn", {80: 80, 112: 112, 128: 128}),
])
def test_each_implementation_pads_to_its_compiled_head_dims(impl: str, dims: dict[int, int]) -> None:
    assert {d: padded_head_dim(impl, d) for d in dims} == dims


def _attention(dh: int, impl: str, seq: int = 8192) -> Kernel:
    flops = 4.0 * seq * seq * 32 * dh * 0.5            # one micro-batch, 32 heads, causal
    return Kernel("attention", "attention", flops, 0.0, seq=seq, head_dim=dh, causal=True, impl=impl)


@pytest.mark.parametrize("impl", ["fa2", "triton", "fa3"])
def test_a_padded_head_dim_costs_the_padded_kernels_time(impl: str) -> None:
    # 112 runs the 128 kernel: 112/128 of its FLOPs in the same time
    p = KernelParams(launch_s=0.0)
    t112 = kernel_time_s(_attention(112, impl), H100, "bf16", p)
    t128 = kernel_time_s(_attention(128, impl), H100, "bf16", p)
    assert t112 == pytest.approx(t128, rel=1e-9)
    assert "head dim 112 run as 128" in compute_rate(_attention(112, impl), H100, "bf16", p).provenance


def test_cudnn_runs_the_head_dim_as_given() -> None:
    p = KernelParams(launch_s=0.0)
    t112 = kernel_time_s(_attention(112, "cudnn"), H100, "bf16", p)
    t128 = kernel_time_s(_attention(128, "cudnn"), H100, "bf16", p)
    assert t112 < t128 * 0.95
    assert "run as" not in compute_rate(_attention(112, "cudnn"), H100, "bf16", p).provenance


def _moe_job(ep: int, experts: int = 8, dispatcher: str = "alltoall") -> TrainingJob:
    return job_from_dict(small(model={"experts": experts, "top_k": 2},
                               parallel={"tp": 1, "pp": 1, "dp": 8, "ep": ep},
                               framework={"name": "megatron-core", "moe_dispatcher": dispatcher}), "j.yaml")


def _names(j: TrainingJob) -> list[str]:
    return [k.name for k in graph.layer_forward(j, moe=True)]


def test_alltoall_dispatcher_copies_tokens_around_both_alltoalls() -> None:
    names = _names(_moe_job(4))
    i, o = names.index("ep.alltoall.dispatch"), names.index("ep.alltoall.combine")
    assert names[i - 1] == "moe.permute" and names[i + 1] == "moe.sort_chunks"
    assert names[o - 1] == "moe.unsort_chunks" and names[o + 1] == "moe.unpermute"
    fwd = {k.name: k for k in graph.layer_forward(_moe_job(4), moe=True)}
    a2a = fwd["ep.alltoall.dispatch"].size_bytes
    assert fwd["moe.permute"].bytes == pytest.approx(2 * a2a) == fwd["moe.sort_chunks"].bytes
    bwd = [k.name for k in graph.layer_backward(_moe_job(4), moe=True)]
    assert {"moe.permute.bwd", "moe.sort_chunks.bwd", "moe.unsort_chunks.bwd", "moe.unpermute.bwd"} <= set(bwd)


def test_one_local_expert_needs_no_chunk_sort_and_ep1_no_alltoall() -> None:
    names = _names(_moe_job(8, experts=8))            # 8 experts on EP 8: one a GPU
    assert "moe.sort_chunks" not in names and "moe.permute" in names and "moe.unpermute" in names
    names = _names(_moe_job(1))
    assert "ep.alltoall.dispatch" not in names and names.count("moe.permute") == 1
    assert "moe.sort_chunks" not in names


def test_deepep_permutes_after_its_dispatch_kernel() -> None:
    names = _names(_moe_job(4, dispatcher="deepep"))
    i, o = names.index("ep.alltoall.dispatch"), names.index("ep.alltoall.combine")
    assert names[i + 1] == "moe.permute" and names[o - 1] == "moe.unpermute"
    assert "moe.sort_chunks" not in names and names.count("moe.permute") == 1


def test_the_copies_reach_the_predicted_iteration() -> None:
    r = predict(_moe_job(4))
    ops = [o.name for s in r.stages for ops in s.fwd_ops + s.bwd_ops for o in ops]
    assert any(n.endswith("moe.sort_chunks") for n in ops) and any(n.endswith("moe.unpermute.bwd") for n in ops)


def test_expert_gemm_inputs_are_cast_in_full_under_fp8() -> None:
    # TEGroupedMLP: GroupedLinear casts the permuted tokens and the SwiGLU output itself
    j = job_from_dict(small(model={"experts": 8, "top_k": 2}, parallel={"tp": 1, "pp": 1, "dp": 8, "ep": 4},
                            training={"precision": "fp8"},
                            framework={"name": "megatron-core", "fp8_recipe": "delayed"},
                            gpu={"preset": "H100-SXM"}), "j.yaml")
    fwd = {k.name: k for k in graph.layer_forward(j, moe=True)}
    for name in ("experts.fc1", "experts.fc2", "qkv"):
        M, _, K = fwd[name].dims
        per_element = fwd[f"fp8.cast.{name}.x"].bytes / (M * K * fwd[name].groups)
        assert per_element == pytest.approx(1.0 if name == "qkv" else 4.0)
