"""The per-kernel roofline model and the operator graph's FLOPs against the closed forms
of the Megatron-LM papers."""
from __future__ import annotations

import pytest

from predict_jobs import small
from sim.predict import graph
from sim.predict.gpus import PRESETS
from sim.predict.job import job_from_dict
from sim.predict.kernels import Kernel, KernelParams, gemm_efficiency, kernel_time_s

A100, H100 = PRESETS["A100-80GB"], PRESETS["H100-SXM"]


SIMPLE = KernelParams(gemm=0.70, gemm_half_dim=64.0)      # the simple model's factors, given


def test_compute_bound_gemm_is_flops_over_efficient_peak() -> None:
    p = KernelParams(gemm=0.70, gemm_half_dim=64.0, launch_s=0.0)
    k = Kernel("g", "gemm", flops=2.0 * 8192 ** 3, bytes=3 * 8192 ** 2 * 2.0, dims=(8192, 8192, 8192))
    eff = p.gemm * 8192 / (8192 + p.gemm_half_dim)
    assert kernel_time_s(k, A100, "bf16", p) == pytest.approx(k.flops / (312e12 * eff))


def test_memory_bound_kernels_are_bytes_over_bandwidth() -> None:
    p = KernelParams()
    k = Kernel("add", "memory", bytes=1e9)
    assert kernel_time_s(k, A100, "bf16", p) == pytest.approx(1e9 / (2039e9 * 0.7) + p.launch_s)
    thin = Kernel("g", "gemm", flops=2.0 * 8 * 8192 * 8192, bytes=8192 * 8192 * 2.0, dims=(8, 8192, 8192))
    assert kernel_time_s(thin, A100, "bf16", p) == pytest.approx(thin.bytes / (2039e9 * 0.7) + p.launch_s)


def test_small_gemms_are_less_efficient_and_fp8_uses_the_fp8_peak() -> None:
    p = SIMPLE
    big = Kernel("g", "gemm", dims=(4096, 4096, 4096))
    tiny = Kernel("g", "gemm", dims=(64, 4096, 4096))
    assert gemm_efficiency(tiny, p) == pytest.approx(p.gemm / 2)
    assert gemm_efficiency(big, p) > 0.98 * p.gemm
    k = Kernel("g", "gemm", flops=1e15, bytes=1.0, dims=(8192, 8192, 8192), fp8=True)
    assert kernel_time_s(k, H100, "fp8", p) == pytest.approx(kernel_time_s(k, H100, "bf16", p) / 2, rel=1e-3)


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_layer_flops_are_megatrons(tp: int) -> None:
    j = job_from_dict(small(model={"heads": 16, "hidden": 2048}, parallel={"tp": tp, "pp": 1, "dp": 1},
                            training={"micro_batch": 2}), "j.yaml")
    b, s, h = 2, 1024, 2048
    fwd = graph.layer_forward(j, moe=False)
    gemm = sum(k.flops for k in fwd if k.kind == "gemm")
    attn = sum(k.flops for k in fwd if k.kind == "attention")
    assert gemm == pytest.approx(24 * b * s * h * h / tp)
    assert attn == pytest.approx(4 * b * s * s * h / 2 / tp)          # causal: half of 4·b·s²·h
    bwd = graph.layer_backward(j, moe=False)
    assert sum(k.flops for k in bwd if k.kind == "gemm") == pytest.approx(2 * gemm)
    assert sum(k.flops for k in bwd if k.kind == "attention") == pytest.approx(2.5 * attn)


def test_tensor_parallel_collectives_per_layer() -> None:
    plain = job_from_dict(small(parallel={"tp": 2}), "j.yaml")
    comm = [k.collective for k in graph.layer_forward(plain, False) + graph.layer_backward(plain, False)
            if k.kind == "comm"]
    assert comm == ["allreduce"] * 4                                    # 2 forward (g), 2 backward (f)
    sp = job_from_dict(small(parallel={"tp": 2, "sequence_parallel": True}), "j.yaml")
    fwd = [k.collective for k in graph.layer_forward(sp, False) if k.kind == "comm"]
    bwd = [k.collective for k in graph.layer_backward(sp, False) if k.kind == "comm"]
    assert sorted(fwd) == ["allgather", "allgather", "reducescatter", "reducescatter"]
    assert sorted(bwd) == ["allgather"] * 4 + ["reducescatter"] * 2     # + the re-gather for wgrad


def test_full_recompute_repeats_the_forward_and_selective_only_cheap_kernels() -> None:
    full = job_from_dict(small(training={"recompute": "full"}), "j.yaml")
    sel = job_from_dict(small(training={"recompute": "selective"}), "j.yaml")
    assert len(graph.recompute_forward(full, False)) == len(graph.layer_forward(full, False))
    assert {k.kind for k in graph.recompute_forward(sel, False)} == {"memory"}
    assert graph.recompute_forward(job_from_dict(small(), "j.yaml"), False) == []


def test_moe_layer_has_router_experts_and_two_alltoalls() -> None:
    j = job_from_dict(small(model={"experts": 8, "top_k": 2}, parallel={"tp": 1, "pp": 1, "dp": 8, "ep": 4}),
                      "j.yaml")
    fwd = graph.layer_forward(j, moe=True)
    names = [k.name for k in fwd]
    assert "router" in names and names.count("ep.alltoall.dispatch") == 1 and "ep.alltoall.combine" in names
    dense = sum(k.flops for k in graph.layer_forward(j, moe=False) if k.name in ("fc1", "fc2"))
    experts = sum(k.flops for k in fwd if k.name.startswith("experts.fc"))
    assert experts == pytest.approx(2 * dense, rel=1e-6)                # top-2: twice the dense MLP


def test_moe_model_flops_count_the_experts_a_token_visits() -> None:
    from sim.predict.predict import model_flops

    llama = {"mlp": "swiglu", "norm": "rmsnorm", "dropout": False}
    par = {"tp": 1, "pp": 1, "dp": 4, "ep": 1}
    dense = job_from_dict(small(model=llama, parallel=par), "j.yaml")
    top1 = job_from_dict(small(model={**llama, "experts": 4, "top_k": 1}, parallel=par), "j.yaml")
    top2 = job_from_dict(small(model={**llama, "experts": 4, "top_k": 2}, parallel=par), "j.yaml")
    tokens, layers, h, f = 16 * 1024, 4, 1024, 4096
    router = 3 * tokens * layers * 2 * h * 4
    assert model_flops(top1)[0] - model_flops(dense)[0] == pytest.approx(router)
    assert model_flops(top2)[0] - model_flops(top1)[0] == pytest.approx(3 * tokens * layers * 2 * 3 * h * f)
