"""A validation run as a job of ``python -m sim predict`` (the job file's dict).

Example::

    >>> from sim.validation.dataset import load_dataset
    >>> j = run_job(load_dataset().run("nemo2407-llama3-70b-64"))
    >>> j["parallel"]["tp"], j["parallel"]["cp"], j["training"]["precision"]
    (4, 2, 'fp8')
"""
from __future__ import annotations

from typing import Any

from sim.validation.dataset import Run

DISTRIBUTED_OPTIMIZER = ("megatron-core", "nemo", "megatron-bridge", "llama3-meta", "megatron-deepspeed")
#: a run's stack → the predictor's framework profile, and what the run's release changes
PROFILE = {"megatron": "megatron-lm", "megatron-deepspeed": "megatron-deepspeed", "megatron-core": "megatron-core",
           "nemo": "nemo", "megatron-bridge": "megatron-bridge", "composer-fsdp": "composer-fsdp",
           "torchtitan-fsdp2": "torchtitan", "llama3-meta": "llama3-meta"}


def framework_section(r: Run) -> dict[str, Any]:
    """The job's ``framework`` section for run ``r``: its stack's profile, its release, and
    what the run's own configuration says (compile, async TP, FSDP mixed precision)."""
    name = PROFILE[r.framework_name]
    out: dict[str, Any] = {"name": name, "version": r.framework_version}
    if name == "nemo" and r.framework_version.startswith("23."):
        # 23.x launcher (conf/training/gpt3/*.yaml): no Transformer Engine, blocking p2p
        out.update(attention="unfused", tp_comm_overlap=0.0, overlap_p2p_comm=False)
    if name == "megatron-lm" and r.framework_version < "2022":
        # Megatron-LM of 2021 (megatron/mpu/layers.py at 57d1356e4a): ColumnParallelLinear's
        # input goes through copy_to_tensor_model_parallel_region, whose backward all-reduce
        # runs when autograd reaches it, after the layer's dgrad and wgrad; the async
        # all-reduce under the wgrad GEMM came with 9c5a830f25 (2022-02-22)
        out["tp_bwd_overlap"] = False
    if r.attention:
        out["attention"] = r.attention
    if r.compile:
        out["compile"] = True
    if r.async_tp:
        out["async_tp"] = True
    if r.source == "torchtitan2412":
        # torchtitan at 9dec370 (2024-12): `--optimizer.fused` defaults to False and
        # build_optimizers passes "foreach": not fused (torchtitan/optimizer.py); fused is the
        # default from #881 (2025-02-24), before the 2025-06 runs
        out["optimizer"] = "foreach"
        # its train.py builds loss_fn = F.cross_entropy(pred.flatten(0, 1).float(), ...) and
        # leaves it eager: its compile is commented out, the comment beside it blaming CUDA
        # errors when the loss was compiled; the model's blocks are still compiled
        out["cross_entropy_fusion"] = "torch"
    if r.source == "trainy2506" and r.precision == "fp8":
        # the benchmark's command (benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md,
        # torchtitan cbccb38) passes --float8.enable_fsdp_float8_all_gather (torchao casts each
        # Float8Linear weight's shard to FP8 before FSDP2's all-gather: 1 byte a weight on the
        # wire) and --float8.precompute_float8_dynamic_scale_for_fsdp (one amax all-reduce a
        # step, not modelled); the toml's default is off
        out["fp8_param_gather"] = True
    # what the run's recipe sets for its MoE layers and TP overlap (sim/validation/README.md)
    if r.moe_dispatcher:
        out["moe_dispatcher"] = r.moe_dispatcher
    if r.tp_comm_overlap is False:
        out["tp_comm_overlap"] = 0.0
    if r.tp_overlap_config and r.tp_comm_overlap is not False:
        out["tp_overlap_config"] = r.tp_overlap_config
    if r.moe_a2a_overlap:
        out["moe_a2a_overlap"] = True
    if r.fsdp_mixed_precision == "pure":
        out["grad_reduce_dtype"] = "bf16"
    return out
ZERO = {"none": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp_full": 3, "fsdp_grad_op": 2, "hsdp": 3}


def run_job(r: Run) -> dict[str, Any]:
    """The job dict of run ``r`` (fabric: blocks of ``topo/specs/pod64k.yaml`` at the run's
    NIC speed, NCCL's rings without TCCL: ``random_ecmp``)."""
    m = r.model
    model: dict[str, Any] = {"layers": m.layers, "hidden": m.hidden, "heads": m.heads, "seq_length": r.seq,
                             "vocab": m.vocab, "mlp": m.mlp, "norm": m.norm, "position": m.position, "dropout": m.bias,
                             "tied_embeddings": m.tied_embeddings}
    if m.kv_heads:
        model["kv_heads"] = m.kv_heads
    if m.ffn_hidden:
        model["ffn_hidden"] = m.ffn_hidden
    if m.experts:      # the NeMo / Megatron-Bridge MoE benchmarks force-balance the routing (their notes)
        model.update(experts=m.experts, top_k=m.top_k, moe_ffn_hidden=m.moe_ffn_hidden, moe_imbalance=1.0)
    zero = ZERO[r.sharding] or (1 if r.framework_name in DISTRIBUTED_OPTIMIZER else 0)
    if m.head_dim:
        model["head_dim"] = m.head_dim
    parallel: dict[str, Any] = {"tp": r.tp, "pp": r.pp, "dp": r.dp, "cp": r.cp, "ep": r.ep, "zero": zero, "sequence_parallel": r.sequence_parallel}
    if r.vp > 1:
        parallel.update(schedule="interleaved", virtual_stages=r.vp)
    return {"name": r.id, "model": model, "parallel": parallel,
            "training": {"global_batch": r.gbs, "micro_batch": r.mbs, "precision": r.precision,
                         "recompute": r.recompute},
            "gpu": {"preset": r.gpu},
            "framework": framework_section(r),
            "fabric": {"spec_file": "topo/specs/pod64k.yaml", "link_gbps": r.nic_gbps},
            "network": {"policy": "random_ecmp", "dual_channel": False}}


__all__ = ["run_job"]
