"""Issue 31, sixteenth round (i31-bwd-s47): the backward's tensor-parallel collectives of a
column-parallel linear under that linear's own GEMMs, as Megatron's
``LinearWithGradAccumulationAndAsyncCommunication.backward`` and Transformer Engine's
``LayerNormLinear`` / ``Linear`` run them (``framework.tp_bwd_overlap``,
:data:`sim.predict.stages.BWD_OVERLAP`): the sequence-parallel re-gather under the dgrad
GEMM, the input gradient's reduce-scatter (all-reduce without SP) under the wgrad GEMM."""
from __future__ import annotations

import pytest

from sim.predict import graph
from sim.predict.comm import CommModel
from sim.predict.framework import PROFILES
from sim.predict.job import job_from_dict
from sim.predict.predict import job_fabric, predict
from sim.predict.stages import BWD_OVERLAP, pass_ops
from sim.topology import SimInputError
from sim.validation.dataset import load_dataset
from sim.validation.jobs import run_job

GPT_175B = {"layers": 2, "hidden": 12288, "heads": 96, "seq_length": 2048, "vocab": 51200}


def job(framework: dict, model: dict = GPT_175B, tp: int = 8, sp: bool = True, gpu: str = "A100-SXM-80GB"):
    return job_from_dict({"model": model, "parallel": {"tp": tp, "sequence_parallel": sp},
                          "training": {"global_batch": 4, "micro_batch": 1, "precision": "bf16"},
                          "gpu": {"preset": gpu}, "framework": framework}, "j.yaml")


def backward_ops(j):
    jf = job_fabric(j)
    comm = CommModel(j, jf.sf, jf.placed, fabric_times=jf.fabric_times)
    return {o.name: o for o in pass_ops(j, graph.layer_backward(j, False), comm)}


def test_megatron_lm_hides_the_regather_under_dgrad_and_the_reduce_scatter_under_wgrad() -> None:
    ops = backward_ops(job({"name": "megatron-lm"}))
    for coll, gemm in (("tp.allgather.attn.regather", "qkv.dgrad"), ("tp.allgather.mlp.regather", "fc1.dgrad"),
                       ("tp.reducescatter.attn.bwd", "qkv.wgrad"), ("tp.reducescatter.mlp.bwd", "fc1.wgrad")):
        o = ops[coll]
        assert o.full_s > 0
        assert o.seconds == pytest.approx(max(0.0, o.full_s - ops[gemm].seconds)), coll
        assert o.seconds < o.full_s, coll                  # the old share model: fully exposed (share 0)


def test_a_collective_that_outlasts_its_gemm_is_exposed_by_the_difference() -> None:
    """Without the SMs the collective takes from the GEMM (twentieth round, tested in
    test_predict_nccl_sms.py: there the GEMM is slower and hides that much more)."""
    small = {"layers": 2, "hidden": 512, "heads": 8, "seq_length": 256, "vocab": 32000}
    ops = backward_ops(job({"name": "megatron-lm", "nccl_sm_contention": False}, model=small))
    o, dgrad = ops["tp.allgather.attn.regather"], ops["qkv.dgrad"].seconds
    assert o.full_s > dgrad
    assert o.seconds == pytest.approx(o.full_s - dgrad)


def test_without_the_overlap_every_backward_collective_waits() -> None:
    ops = backward_ops(job({"name": "megatron-lm", "tp_bwd_overlap": False}))
    for coll in ("tp.allgather.attn.regather", "tp.reducescatter.attn.bwd", "tp.allgather.mlp.regather",
                 "tp.reducescatter.mlp.bwd"):
        assert ops[coll].seconds == pytest.approx(ops[coll].full_s)


def test_the_row_parallel_grad_output_gathers_stay_synchronous() -> None:
    ops = backward_ops(job({"name": "megatron-lm"}))
    for coll in ("tp.allgather.attn.bwd", "tp.allgather.mlp.bwd"):
        assert coll not in BWD_OVERLAP
        assert ops[coll].seconds == pytest.approx(ops[coll].full_s)


def test_without_sequence_parallelism_the_dgrad_all_reduce_runs_under_wgrad() -> None:
    ops = backward_ops(job({"name": "megatron-lm"}, sp=False))
    for coll, gemm in (("tp.allreduce.qkv.dgrad", "qkv.wgrad"), ("tp.allreduce.fc1.dgrad", "fc1.wgrad")):
        assert ops[coll].seconds == pytest.approx(max(0.0, ops[coll].full_s - ops[gemm].seconds))
        assert ops[coll].seconds < ops[coll].full_s


def test_the_share_and_the_backward_overlap_take_the_larger_hiding() -> None:
    """Megatron-Core with the userbuffers share (no config): the re-gather, which the share's
    neighbour search left exposed, now hides under qkv's dgrad."""
    on = backward_ops(job({"name": "megatron-core"}, gpu="H100-SXM"))
    off = backward_ops(job({"name": "megatron-core", "tp_bwd_overlap": False}, gpu="H100-SXM"))
    rg = "tp.allgather.attn.regather"
    assert off[rg].seconds == pytest.approx(off[rg].full_s)
    assert on[rg].seconds == pytest.approx(max(0.0, on[rg].full_s - on["qkv.dgrad"].seconds))
    rs = "tp.reducescatter.attn.bwd"
    assert on[rs].seconds <= off[rs].seconds


def test_profiles_follow_their_code() -> None:
    for name in ("megatron-lm", "megatron-core", "nemo", "megatron-bridge"):
        assert PROFILES[name].tp_bwd_overlap, name
    for name in ("megatron-deepspeed", "deepspeed", "pytorch-fsdp", "composer-fsdp", "torchtitan", "llama3-meta"):
        assert not PROFILES[name].tp_bwd_overlap, name


def test_megatron_lm_of_2021_runs_the_synchronous_all_reduce() -> None:
    ds = load_dataset()
    old = job_from_dict(run_job(ds.run("narayanan21-145.6b-1536")), "r.yaml")
    new = job_from_dict(run_job(ds.run("korthikanti22-175b-64")), "r.yaml")
    assert not old.framework.tp_bwd_overlap
    assert new.framework.tp_bwd_overlap


def test_the_overlap_shortens_a_sequence_parallel_prediction() -> None:
    base = run_job(load_dataset().run("korthikanti22-175b-64"))
    on = predict(job_from_dict(base, "r.yaml")).iteration_s
    off = predict(job_from_dict({**base, "framework": {**base["framework"], "tp_bwd_overlap": False}},
                                "r.yaml")).iteration_s
    assert on < off


@pytest.mark.parametrize("value", ["yes", 1])
def test_a_bad_value_is_refused_naming_the_field(value) -> None:
    with pytest.raises(SimInputError, match="framework.tp_bwd_overlap"):
        job({"name": "megatron-lm", "tp_bwd_overlap": value})
