"""Issue 31, tenth round (i31-gen): FSDP under pipeline parallelism as torch.distributed.pipelining
runs it (torchtitan: the units gathered once a step and kept, the gradients accumulated
unsharded in fp32 and reduce-scattered once after each chunk's last backward), against FSDP
per micro-batch; and the torchtitan 2024-12 Table 5 rows' micro-batch (local batch 32 in
torchtitan's default pipeline_parallel_microbatches = PP degree = 8 micro-batches)."""
from __future__ import annotations

import pytest

from sim.predict.comm import CommModel
from sim.predict.framework import FSDP_PIPELINE, PROFILES
from sim.predict.job import job_from_dict
from sim.predict.kernels import Kernel, kernel_time_s
from sim.predict.memory import stage_memory, stage_params
from sim.predict.predict import job_fabric, predict
from sim.predict.stages import sharded_pattern, stage_costs
from sim.topology import SimInputError
from sim.validation.dataset import load_dataset

LLAMA = {"layers": 8, "hidden": 4096, "heads": 32, "kv_heads": 8, "seq_length": 4096, "vocab": 128256,
         "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "ffn_hidden": 14336, "tied_embeddings": False}


def job(framework: dict, pp: int = 2, dp: int = 8, global_batch: int = 64, micro_batch: int = 1):
    return job_from_dict({"model": LLAMA, "training": {"global_batch": global_batch, "micro_batch": micro_batch},
                          "parallel": {"pp": pp, "dp": dp, "zero": 3}, "gpu": {"preset": "H100-SXM"},
                          "framework": framework}, "j.yaml")


def test_profiles() -> None:
    assert FSDP_PIPELINE == ("per_microbatch", "per_step")
    assert PROFILES["torchtitan"].fsdp_pipeline == "per_step"
    for name in ("pytorch-fsdp", "composer-fsdp", "deepspeed", "megatron-core", "megatron-bridge"):
        assert PROFILES[name].fsdp_pipeline == "per_microbatch", name


def test_pattern_needs_fsdp_and_pipeline() -> None:
    assert sharded_pattern(job({"name": "torchtitan"})) == "per_step"
    assert sharded_pattern(job({"name": "torchtitan"}, pp=1)) == "per_unit"
    assert sharded_pattern(job({"name": "torchtitan", "fsdp_pipeline": "per_microbatch"})) == "per_unit"
    assert sharded_pattern(job({"name": "pytorch-fsdp", "fsdp_pipeline": "per_step"})) == "per_step"


def test_passes_hold_no_collective_but_accumulate() -> None:
    """Per step: no all-gather or reduce-scatter inside a pass; every unit's backward adds its
    gradients into the fp32 accumulator (2 + 4 + 4 bytes a parameter)."""
    j = job({"name": "torchtitan"})
    comm = CommModel(j, job_fabric(j).sf, job_fabric(j).placed)
    st = stage_costs(j, comm)
    names = [o.name for s in st for ops in s.fwd_ops + s.bwd_ops for o in ops]
    assert not [n for n in names if n.startswith("shard.")]
    acc = [o for ops in st[0].bwd_ops for o in ops if o.name == "fsdp.grad_accumulate"]
    assert len(acc) == 1 + 4                                      # the embedding and the stage's 4 layers
    per = job({"name": "torchtitan", "fsdp_pipeline": "per_microbatch"})
    names = [o.name for s in stage_costs(per, comm) for ops in s.fwd_ops + s.bwd_ops for o in ops]
    assert [n for n in names if n.startswith("shard.")] and "fsdp.grad_accumulate" not in names


def test_step_reduction_once_whatever_the_microbatches() -> None:
    """The stage's reduce-scatter (and its copy-in) runs once a step: the same seconds with 8
    or 32 micro-batches; it is one reduce-scatter of the stage's parameters in fp32."""
    few, many = (predict(job({"name": "torchtitan"}, global_batch=g)) for g in (64, 256))
    assert few.tails[0].dp_s == pytest.approx(many.tails[0].dp_s)
    j = job({"name": "torchtitan"})
    comm = CommModel(j, job_fabric(j).sf, job_fabric(j).placed)
    params = stage_params(j, 0).total
    rs = comm.collective("dp", "reducescatter", 4.0 * params).seconds
    copy_in = kernel_time_s(Kernel("c", "memory", bytes=8.0 * params), j.gpu, "bf16", j.kernels)
    assert few.tails[0].dp_s == pytest.approx(rs + copy_in)
    # per micro-batch the reductions run inside the passes: nothing left for the tail
    per = predict(job({"name": "torchtitan", "fsdp_pipeline": "per_microbatch"}))
    assert per.tails[0].dp_s == 0.0


def test_hsdp_adds_the_replicas_all_reduce() -> None:
    flat = predict(job({"name": "torchtitan"}, dp=16))
    hsdp = predict(job({"name": "torchtitan", "hybrid_shard": 8}, dp=16))
    assert "dpr.allreduce.grads" in hsdp.comm and "dpr.allreduce.grads" not in flat.comm
    assert hsdp.tails[0].dp_s > 0


def test_per_step_is_faster_when_the_network_is_slow() -> None:
    """With many micro-batches, gathering and reducing once a step beats doing it every
    micro-batch (the exposed per-unit collectives)."""
    step = predict(job({"name": "torchtitan"}, global_batch=256))
    per = predict(job({"name": "torchtitan", "fsdp_pipeline": "per_microbatch"}, global_batch=256))
    assert step.iteration_s < per.iteration_s


def test_bad_value_refused_naming_the_field() -> None:
    with pytest.raises(SimInputError, match=r"j.yaml: framework.fsdp_pipeline: unknown value 'sometimes'"):
        job({"name": "torchtitan", "fsdp_pipeline": "sometimes"})


def test_table5_rows_run_eight_microbatches_of_four() -> None:
    """torchtitan 2024-12 Table 5: local batch 32 on FSDP 8 × TP 8 × PP 8; torchtitan at 9dec370
    splits a batch into pipeline_parallel_microbatches = PP degree (8) when not set."""
    ds = load_dataset()
    for rid in ("torchtitan2412-405b-512-1f1b", "torchtitan2412-405b-512-interleaved"):
        r = ds.run(rid)
        assert r.gbs // r.dp == 32 and r.gbs // (r.dp * r.mbs) == r.pp == 8, rid


def test_memory_holds_the_gathered_stage_and_its_fp32_gradients_per_step() -> None:
    """Per step the stage's bf16 parameters stay gathered and its fp32 gradient accumulator
    is unsharded for the whole step (2 + 4 bytes a parameter of the stage); per micro-batch
    only the fp32 shards and the sharded gradients are held."""
    step, micro = job({"name": "torchtitan"}), job({"name": "torchtitan", "fsdp_pipeline": "per_microbatch"})
    params = stage_params(step, 0).total
    a, b = stage_memory(step, 0), stage_memory(micro, 0)
    assert a.weights - b.weights == pytest.approx(2.0 * params)
    assert a.grads == pytest.approx(4.0 * params) and b.grads < a.grads / 7     # 8-way shards
    assert (a.optimizer, a.activations, a.logits) == (b.optimizer, b.activations, b.logits)
