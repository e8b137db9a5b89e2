"""Issue 31, eighteenth round (i31-mbr-s48): the loss as Megatron-Bridge runs it,
Transformer Engine's fused cross entropy (``framework.cross_entropy_fusion: te``,
:data:`sim.predict.graph.TE_CE_PASSES`): three passes over the BF16 logits forward (the
gradient written over them), two backward, and no fp32 copy of the logits held."""
from __future__ import annotations

import pytest

from sim.predict import graph
from sim.predict.framework import PROFILES
from sim.predict.job import job_from_dict
from sim.predict.memory import stage_memory
from sim.predict.predict import predict
from sim.topology import SimInputError
from sim.validation.dataset import load_dataset
from sim.validation.jobs import run_job

LLAMA3_8B = {"layers": 2, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "seq_length": 8192,
             "vocab": 128256, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope"}


def job(framework: dict, tp: int = 1):
    return job_from_dict({"model": LLAMA3_8B, "parallel": {"tp": tp, "sequence_parallel": tp > 1},
                          "training": {"global_batch": 8, "micro_batch": 1, "precision": "bf16"},
                          "gpu": {"preset": "H100-SXM"}, "framework": framework}, "j.yaml")


def loss_bytes(j) -> dict[str, float]:
    ks = graph.head_forward(j) + graph.head_backward(j)
    return {k.name: k.bytes for k in ks if k.name.startswith("cross_entropy")}


def test_te_fused_loss_moves_three_bf16_passes_forward_and_two_backward() -> None:
    logits = 8192 * 128256                                  # tokens x vocab of one micro-batch
    assert loss_bytes(job({"name": "megatron-core", "cross_entropy_fusion": "te"})) == {
        "cross_entropy": 3 * logits * 2.0, "cross_entropy.bwd": 2 * logits * 2.0}
    # unfused (Megatron-Core's vocab_parallel_cross_entropy on fp32 logits; its passes counted
    # from the code in the nineteenth round: tests/sim/test_predict_loss_kernels.py)
    assert loss_bytes(job({"name": "megatron-core"})) == {
        "cross_entropy": 38 * logits, "cross_entropy.bwd": 14 * logits}


def test_the_fused_loss_divides_the_vocab_over_tensor_parallel_ranks() -> None:
    assert loss_bytes(job({"name": "megatron-core", "cross_entropy_fusion": "te"}, tp=8))["cross_entropy"] == \
        3 * 8192 * (128256 // 8) * 2.0


def test_megatron_bridge_runs_the_fused_loss_and_the_other_stacks_do_not() -> None:
    assert PROFILES["megatron-bridge"].cross_entropy_fusion == "te"
    for name in ("megatron-lm", "megatron-core", "nemo", "pytorch-fsdp", "deepspeed"):
        assert PROFILES[name].cross_entropy_fusion == "none", name
    for name in ("torchtitan", "composer-fsdp"):     # nineteenth round: their own loss kernels
        assert PROFILES[name].cross_entropy_fusion not in ("none", "te"), name


def test_the_fused_loss_holds_no_fp32_logits() -> None:
    fused = stage_memory(job({"name": "megatron-core", "cross_entropy_fusion": "te"}), 0).logits
    plain = stage_memory(job({"name": "megatron-core"}), 0).logits
    assert fused == 8192 * 128256 * 2.0
    assert plain == 3 * fused


def test_the_fused_loss_shortens_the_iteration_by_the_bytes_it_saves() -> None:
    fused = predict(job({"name": "megatron-core", "cross_entropy_fusion": "te"}))
    plain = predict(job({"name": "megatron-core"}))
    assert fused.iteration_s < plain.iteration_s


def test_an_unknown_loss_kernel_is_refused_naming_the_field() -> None:
    with pytest.raises(SimInputError, match=r"framework\.cross_entropy_fusion: unknown value 'liger'"):
        job({"name": "megatron-core", "cross_entropy_fusion": "liger"})


def test_megatron_bridge_rows_predict_with_the_fused_loss() -> None:
    ds = load_dataset()
    r = ds.run("mbridge2511-llama3-8b-8")
    spec = run_job(r)
    assert spec["framework"]["name"] == "megatron-bridge"
    bridge = predict(job_from_dict(spec, r.id))
    spec["framework"]["cross_entropy_fusion"] = "none"
    unfused = predict(job_from_dict(spec, r.id))
    assert bridge.iteration_s < unfused.iteration_s
