"""Issue 31, nineteenth round (i31-ce-s48): the loss kernels every stack runs, each counted
from its code (:data:`sim.predict.graph.CE_BYTES_PER_LOGIT`): Megatron's unfused
``vocab_parallel_cross_entropy`` (the fp32 cast and five fp32 passes forward, an in-place
multiply and the cast back backward), flash-attn's Triton ``CrossEntropyLoss`` (LLM Foundry's
MPT), ``torch.nn.functional.cross_entropy`` on fp32 logits (torchtitan; torch's
``loss_parallel`` under TP) and that loss compiled (a job override)."""
from __future__ import annotations

from sim.predict import graph
from sim.predict.framework import PROFILES
from sim.predict.job import job_from_dict
from sim.predict.memory import stage_memory
from sim.predict.predict import predict
from sim.validation.dataset import load_dataset
from sim.validation.jobs import run_job

LLAMA3_8B = {"layers": 2, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "seq_length": 8192,
             "vocab": 128256, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope"}
LOGITS = 8192 * 128256                      # tokens x vocab of one micro-batch


def job(framework: dict, tp: int = 1):
    return job_from_dict({"model": LLAMA3_8B, "parallel": {"tp": tp, "sequence_parallel": tp > 1},
                          "training": {"global_batch": 8, "micro_batch": 1, "precision": "bf16"},
                          "gpu": {"preset": "H100-SXM"}, "framework": framework}, "j.yaml")


def per_logit(framework: dict, tp: int = 1) -> tuple[float, float]:
    """(forward, backward) bytes of the loss kernels per logit of one TP rank."""
    ks = {k.name: k.bytes for k in graph.head_forward(job(framework, tp)) + graph.head_backward(job(framework, tp))}
    n = 8192 * (128256 // tp)
    return ks["cross_entropy"] / n, ks["cross_entropy.bwd"] / n


def test_megatrons_unfused_loss_counts_the_cast_and_every_pass_of_its_code() -> None:
    # forward: cast bf16 -> fp32 (2 + 4), max (4), -= max (8), exp_ (8), sum (4), div_ (8);
    # backward: mul_ (8), autograd's cast of the fp32 gradient to bf16 (4 + 2)
    assert per_logit({"name": "megatron-core"}) == (38.0, 14.0)
    assert per_logit({"name": "megatron-lm"}, tp=8) == (38.0, 14.0)


def test_flash_attn_cross_entropy_reads_the_bf16_logits_once_forward_and_once_backward() -> None:
    assert per_logit({"name": "megatron-core", "cross_entropy_fusion": "flash_attn"}) == (2.0, 4.0)
    assert PROFILES["composer-fsdp"].cross_entropy_fusion == "flash_attn"


def test_torch_cross_entropy_on_fp32_logits_and_torchs_loss_parallel_under_tp() -> None:
    # ATen: cast (6), log_softmax 3 reads + 1 write (16); nll_loss_backward's zero fill (4),
    # log_softmax backward (16), the cast back (6)
    assert per_logit({"name": "torchtitan"}) == (22.0, 26.0)
    # loss_parallel: cast, amax, x - max, exp, sum, shifted - lse; zeros, exp, +, *, cast back
    assert per_logit({"name": "torchtitan"}, tp=8) == (38.0, 38.0)


def test_the_compiled_loss_is_a_job_override_not_what_compile_turns_on() -> None:
    assert per_logit({"name": "torchtitan", "cross_entropy_fusion": "inductor"}) == (4.0, 4.0)
    assert job({"name": "torchtitan", "compile": True}).framework.cross_entropy_fusion == "torch"


def test_fused_losses_hold_the_bf16_logits_alone() -> None:
    for impl, nbytes in (("flash_attn", 2.0), ("inductor", 2.0), ("torch", 6.0), ("none", 6.0)):
        assert stage_memory(job({"name": "torchtitan", "cross_entropy_fusion": impl}), 0).logits == LOGITS * nbytes, impl


def test_each_sources_rows_run_the_loss_of_their_code() -> None:
    want = {"narayanan21": "none", "korthikanti22": "none", "mtnlg22": "none", "bloom22": "none", "mcore08": "none",
            "nemo2407": "none", "nemo2310": "none", "mbridge": "te", "foundry": "flash_attn",
            "torchtitan2412": "torch", "torchtitan2506": "torch", "trainy2506": "torch", "llama3": "none"}
    ds = load_dataset()
    seen = set()
    for r in ds.runs:
        got = job_from_dict(run_job(r), r.id).framework.cross_entropy_fusion
        assert got == want[r.source], r.id
        seen.add(r.source)
    assert seen == set(want)


def test_a_small_foundry_model_is_faster_with_flash_attns_loss() -> None:
    r = load_dataset().run("foundry-h100-sxm-bf16-1b-s2048-g8")
    spec = run_job(r)
    fused = predict(job_from_dict(spec, r.id)).iteration_s
    spec["framework"]["cross_entropy_fusion"] = "none"
    assert fused < 0.97 * predict(job_from_dict(spec, r.id)).iteration_s
