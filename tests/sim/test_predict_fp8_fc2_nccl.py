"""Issue 31, round six: Megatron-Core's standalone FP8 cast of FC2's input, and NCCL's
algorithm choice for NVLink collectives."""
from __future__ import annotations

import pytest

from predict_jobs import small
from sim.predict import graph
from sim.model import Features
from sim.predict.comm import nvls_allreduce_s, tree_features
from sim.predict.framework import PROFILES, resolve_framework
from sim.predict.job import TrainingJob, job_from_dict
from sim.predict.predict import predict
from sim.topology import SimInputError


def _fp8_job(framework: dict, recipe: str = "delayed") -> TrainingJob:
    return job_from_dict(small(parallel={"tp": 1, "pp": 1, "dp": 8}, training={"precision": "fp8"},
                               framework={**framework, "fp8_recipe": recipe}, gpu={"preset": "H100-SXM"}),
                         "j.yaml")


def _cast_bytes_per_element(j: TrainingJob, name: str) -> float:
    fwd = {k.name: k for k in graph.layer_forward(j, moe=False)}
    M, _, K = fwd[name].dims
    return fwd[f"fp8.cast.{name}.x"].bytes / (M * K)


# current scaling (TE 2.x): the amax pass and the quantize for a standalone input (2 + 4), the
# quantize alone after a norm that computed the amax (4); twenty-first round
@pytest.mark.parametrize("recipe,fused,standalone", [("delayed", 1.0, 4.0), ("current", 4.0, 6.0)])
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
    with pytest.raises(SimInputError, match="fp8_fc2_fused"):
        resolve_framework({"name": "megatron-core", "fp8_fc2_fused": "yes"}, "j.yaml")


def test_nvls_allreduce_follows_nccls_model() -> None:
    ring_Bps = 450e9 * 0.78
    t = nvls_allreduce_s("H100", 8, 1e9, ring_Bps)
    assert t is not None
    # busBw x 2 x 0.85 x 15/16 against the ring's, plus NCCL's 25 us NVLS latency
    assert t == pytest.approx(25e-6 + 1.75e9 / (ring_Bps * 2 * 0.85 * 15 / 16))
    assert nvls_allreduce_s("A100", 8, 1e9, ring_Bps) is None          # Ampere: no NVLink SHARP
    assert nvls_allreduce_s("H100", 1, 1e9, ring_Bps) is None


def _tp8_job(sp: bool, gpu: str = "H100-SXM", nvls: bool = True) -> TrainingJob:
    return job_from_dict(small(model={"layers": 2, "hidden": 4096, "heads": 32, "seq_length": 4096},
                               parallel={"tp": 8, "pp": 1, "dp": 1, "sequence_parallel": sp},
                               training={"global_batch": 4}, gpu={"preset": gpu},
                               network={"policy": "random_ecmp", "dual_channel": False, "nvls": nvls},
                               fabric={"spec_file": "topo/specs/pod64k.yaml"}),
                         "j.yaml")


def test_nccl_picks_nvls_for_large_tp_allreduces_on_hopper_only() -> None:
    # TP 8 without sequence parallelism all-reduces 32 MiB activations: NVLS beats the ring
    on, off = predict(_tp8_job(False)).iteration_s, predict(_tp8_job(False, nvls=False)).iteration_s
    assert on < off * 0.97
    assert "NVLS" in predict(_tp8_job(False)).comm["tp.allreduce"].note
    a100_on = predict(_tp8_job(False, "A100-80GB")).iteration_s
    assert a100_on == pytest.approx(predict(_tp8_job(False, "A100-80GB", nvls=False)).iteration_s, rel=1e-9)


def test_small_allreduces_and_sequence_parallel_stay_on_the_ring() -> None:
    # with SP the only TP all-reduce is the loss's (8 bytes a token): the ring's latency wins
    assert predict(_tp8_job(True)).iteration_s == pytest.approx(predict(_tp8_job(True, nvls=False)).iteration_s,
                                                                rel=1e-9)
    assert nvls_allreduce_s("H100", 8, 64e3, 450e9 * 0.78) > 8e-6 + 1.75 * 64e3 / (450e9 * 0.78)


def test_nvls_must_be_a_bool() -> None:
    with pytest.raises(SimInputError, match="nvls"):
        job_from_dict(small(network={"nvls": "sometimes"}), "j.yaml")


def test_tree_features_follow_nccls_model() -> None:
    ring = Features(1.0, 2.0 * 63, 3.0 * 2 * 63)          # 64 ranks, one per server
    tree = tree_features(ring, 64, 64)
    assert tree.transfer_s == pytest.approx(64 / (63 * 0.92))   # busBw x .92, algBw x .5
    assert tree.steps == pytest.approx(2 * 6)                   # 2 log2(nodes)
    assert tree.hop_steps == pytest.approx(3 * 12)
    assert tree_features(Features(1.0, 126, 0.0), 64, 8).steps == pytest.approx(2 * (7 + 3))  # + chain in a server


def _ddp_job(hidden: int, layers: int) -> TrainingJob:
    return job_from_dict(small(model={"layers": layers, "hidden": hidden, "heads": 8, "seq_length": 1024},
                               parallel={"tp": 1, "pp": 1, "dp": 64}, training={"global_batch": 64},
                               gpu={"preset": "A100-80GB"}, framework={"name": "megatron-lm"},
                               network={"policy": "random_ecmp", "dual_channel": False},
                               fabric={"spec_file": "topo/specs/pod64k.yaml"}), "j.yaml")


def test_nccl_picks_the_tree_for_small_allreduces_across_servers_and_the_ring_for_large() -> None:
    small_grads = predict(_ddp_job(256, 2)).comm["dp.allreduce.grads"]
    large_grads = predict(_ddp_job(4096, 8)).comm["dp.allreduce.grads"]
    assert small_grads.medium == large_grads.medium == "fabric"
    assert "NCCL tree" in small_grads.note              # 126 ring steps of latency against 20
    assert "tree" not in large_grads.note               # bandwidth-bound: the ring's n/(n-1) x .92 wins


def _sac_job(framework: str, mlp: str = "swiglu", recompute: str = "selective") -> TrainingJob:
    return job_from_dict(small(model={"mlp": mlp, "kv_heads": 4}, parallel={"tp": 1, "pp": 1, "dp": 8},
                               training={"recompute": recompute}, framework={"name": framework},
                               gpu={"preset": "H100-SXM"}), "j.yaml")


def test_torchtitan_recomputes_every_second_mm() -> None:
    # SwiGLU: wq wk wv wo w1 w3 w2 = 7 mms, the counter alternates: every GEMM half the time
    assert graph.sac_gemm_shares(_sac_job("torchtitan")) == pytest.approx(
        {"qkv": 0.5, "out_proj": 0.5, "fc1": 0.5, "fc2": 0.5})
    # GeLU: 6 mms, always the even ones: wk (4 of 16 + 2 x 4 heads of qkv), wo, w2
    assert graph.sac_gemm_shares(_sac_job("torchtitan", "gelu")) == pytest.approx(
        {"qkv": 4 / 24, "out_proj": 1.0, "fc1": 0.0, "fc2": 1.0})


def test_op_sac_replays_memory_kernels_and_half_the_gemms_not_attention() -> None:
    j = _sac_job("torchtitan")
    fwd = {k.name: k for k in graph.layer_forward(j, moe=False)}
    rec = {k.name.removeprefix("recompute."): k for k in graph.recompute_forward(j, moe=False)}
    assert "attention" not in rec and not [k for k in rec.values() if k.kind == "comm"]
    assert rec["fc1"].flops == pytest.approx(0.5 * fwd["fc1"].flops)
    assert {n for n, k in fwd.items() if k.kind == "memory"} <= set(rec)
    # Megatron's selective recomputation (Korthikanti et al.) replays no GEMM
    mc = graph.recompute_forward(_sac_job("megatron-core"), moe=False)
    assert not [k for k in mc if k.kind == "gemm"]
    assert predict(j).iteration_s > predict(_sac_job("torchtitan", recompute="none")).iteration_s


def test_selective_ac_is_checked() -> None:
    with pytest.raises(SimInputError, match="selective_ac"):
        resolve_framework({"name": "torchtitan", "selective_ac": "layer"}, "j.yaml")
