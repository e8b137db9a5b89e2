"""Issue 31, seventh round: the optimizer step as each stack's implementation runs it
(fused / foreach / for-loop Adam, Composer's per-tensor step-count sync, how many tensors a
GPU updates under FSDP1's flat parameters and FSDP2's per-parameter shards), and PyTorch
FSDP's own copies around each unit's collectives (FSDP2's copy-out and reduce-scatter
copy-in on the compute stream, FSDP1's cast and pre-divide before its reduce-scatter)."""
from __future__ import annotations

import math

import pytest

from sim.predict import graph, optimizer
from sim.predict.framework import PROFILES
from sim.predict.job import job_from_dict
from sim.predict.kernels import Kernel, kernel_time_s
from sim.predict.memory import stage_params
from sim.predict.comm import CommModel
from sim.predict.predict import job_fabric, predict
from sim.predict.stages import UnitComm, fsdp_copies, stage_costs
from sim.topology import SimInputError
from sim.validation.dataset import load_dataset
from sim.validation.jobs import run_job

GPT = {"layers": 24, "hidden": 2048, "heads": 16, "seq_length": 2048, "vocab": 50368}
LLAMA = {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "seq_length": 2048, "vocab": 128256,
         "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "ffn_hidden": 14336, "tied_embeddings": False}


def job(model: dict, framework: dict, dp: int = 8, zero: int = 3, **parallel: int):
    return job_from_dict({"model": model, "training": {"global_batch": 1024},
                          "parallel": {"dp": dp, "zero": zero, **parallel}, "gpu": {"preset": "H100-SXM"},
                          "framework": framework}, "j.yaml")


def test_profiles_name_their_implementation() -> None:
    assert PROFILES["composer-fsdp"].optimizer == "forloop" and PROFILES["composer-fsdp"].optimizer_sync
    assert PROFILES["composer-fsdp"].fsdp_flat_params and PROFILES["pytorch-fsdp"].fsdp_flat_params
    assert PROFILES["pytorch-fsdp"].optimizer == "foreach" and not PROFILES["pytorch-fsdp"].optimizer_sync
    assert PROFILES["torchtitan"].optimizer == "fused" and not PROFILES["torchtitan"].fsdp_flat_params
    for name in ("megatron-core", "megatron-lm", "nemo", "megatron-bridge", "deepspeed", "megatron-deepspeed"):
        assert PROFILES[name].optimizer == "fused", name


def test_layer_tensors_fused_qkv_or_separate() -> None:
    assert optimizer.layer_tensors(job(GPT, {"name": "composer-fsdp"})) == 6          # Wqkv, out, up, down, 2 norms
    assert optimizer.layer_tensors(job(LLAMA, {"name": "torchtitan"})) == 9           # wq wk wv wo w1 w2 w3, 2 norms


def test_fsdp1_flat_shards_touch_few_tensors_fsdp2_all() -> None:
    fsdp1 = job(GPT, {"name": "composer-fsdp"}, dp=8)
    # 24 units of 6 tensors (1 + 5/8 each) and the root (embedding, final norm: 1 + 1/8)
    assert optimizer.tensors_per_gpu(fsdp1, 0) == pytest.approx(24 * (1 + 5 / 8) + (1 + 1 / 8))
    wide = job(GPT, {"name": "composer-fsdp"}, dp=512)
    assert optimizer.tensors_per_gpu(wide, 0) < optimizer.tensors_per_gpu(fsdp1, 0)
    fsdp2 = job(GPT, {"name": "torchtitan"}, dp=8)
    assert optimizer.tensors_per_gpu(fsdp2, 0) == 24 * 6 + 2
    untied = job(LLAMA, {"name": "torchtitan"}, dp=8)
    assert optimizer.tensors_per_gpu(untied, 0) == 32 * 9 + 3                           # embedding, norm, head
    replicated = job(GPT, {"name": "composer-fsdp"}, dp=8, zero=0)
    assert optimizer.tensors_per_gpu(replicated, 0) == 24 * 6 + 2


def test_fused_is_the_memory_bound_kernel_of_34_bytes() -> None:
    j = job(GPT, {"name": "composer-fsdp", "optimizer": "fused", "optimizer_sync": False})
    want = kernel_time_s(Kernel("optimizer.adam", "memory", bytes=1e8 * 34.0), j.gpu, "bf16", j.kernels)
    assert optimizer.step_time_s(j, 0, 1e8) == pytest.approx(want)


def test_host_bound_loops() -> None:
    """A tiny shard: the for-loop costs its launches, the sync one more host op a tensor,
    foreach 10 launches per group of 36 tensors."""
    c = 15e-6
    loop = job(GPT, {"name": "composer-fsdp", "optimizer_sync": False, "cpu_op_s": c}, zero=0)
    sync = job(GPT, {"name": "composer-fsdp", "cpu_op_s": c}, zero=0)
    each = job(GPT, {"name": "composer-fsdp", "optimizer": "foreach", "cpu_op_s": c}, zero=0)
    n = 24 * 6 + 2
    assert optimizer.step_time_s(loop, 0, 1e3) == pytest.approx(n * 11 * c)
    assert optimizer.step_time_s(sync, 0, 1e3) == pytest.approx(n * 12 * c)
    assert optimizer.step_time_s(each, 0, 1e3) == pytest.approx(10 * math.ceil(n / 36) * c)


def test_memory_bound_loops_move_96_bytes_and_the_sync_adds_to_them() -> None:
    big = 2e9
    each = job(GPT, {"name": "composer-fsdp", "optimizer": "foreach"}, zero=0)
    fused = job(GPT, {"name": "composer-fsdp", "optimizer": "fused"}, zero=0)
    sync = job(GPT, {"name": "composer-fsdp"}, zero=0)
    t_each, t_fused = optimizer.step_time_s(each, 0, big), optimizer.step_time_s(fused, 0, big)
    assert t_each / t_fused == pytest.approx(96 / 34, rel=0.01)
    assert optimizer.step_time_s(sync, 0, big) > t_each


def test_unknown_optimizer_is_refused() -> None:
    with pytest.raises(SimInputError, match="framework.optimizer: unknown value 'lion'"):
        job(GPT, {"name": "torchtitan", "optimizer": "lion"})


def test_validation_runs_name_torchtitans_release() -> None:
    ds = load_dataset()
    assert run_job(ds.run("torchtitan2412-8b-8-bf16"))["framework"]["optimizer"] == "foreach"
    assert "optimizer" not in run_job(ds.run("torchtitan2506-8b-64-fp8"))["framework"]


def test_prediction_tail_carries_the_step() -> None:
    j = job(GPT, {"name": "composer-fsdp"})
    sp = stage_params(j, 0)
    assert sp.expert == 0
    assert predict(j).tails[0].optimizer_s == pytest.approx(optimizer.step_time_s(j, 0, sp.dense / 8))


def _unit_ops(j) -> tuple[list[str], list[str]]:
    sc = stage_costs(j, CommModel(j, job_fabric(j).sf, job_fabric(j).placed))[0]
    return [o.name for o in sc.fwd_ops[0]], [o.name for o in sc.bwd_ops[0]]


def test_fsdp2_copies_out_every_gather_and_copies_gradients_in() -> None:
    """FSDP2: one copy-out after each unit's forward and backward all-gather (reshard after
    forward), one reduce-scatter copy-in; the copies move the unit's bytes."""
    j = job(GPT, {"name": "torchtitan"})
    f, b = _unit_ops(j)
    units = GPT["layers"] + 2                                # layers, embedding, head
    assert f.count("fsdp.copy_out") == units
    assert b.count("fsdp.copy_out") == units and b.count("fsdp.rs_copy_in") == units
    no_reshard = job(GPT, {"name": "torchtitan", "fsdp_reshard": False})
    assert _unit_ops(no_reshard)[1].count("fsdp.copy_out") == 0
    fw, bw, wait = fsdp_copies(j, [1e8], [UnitComm(1.0, 1.0, 1.0)])
    one = kernel_time_s(Kernel("x", "memory", bytes=4e8), j.gpu, "bf16", j.kernels)
    assert fw[0][0].seconds == pytest.approx(one)                     # bf16 read + written
    assert bw[0][1].seconds == pytest.approx(kernel_time_s(Kernel("x", "memory", bytes=6e8), j.gpu, "bf16",
                                                           j.kernels))  # bf16 read, fp32 written
    assert wait == [0.0]


def test_fsdp1_casts_and_divides_before_its_reduce_scatter() -> None:
    """FSDP1: nothing on the compute stream; the reduce-scatter waits for the fp32 cast and
    the pre-divide (bf16 reduce: the divide only); a unit without a reduce-scatter waits for
    nothing."""
    default = job(GPT, {"name": "composer-fsdp"})
    pure = job(GPT, {"name": "composer-fsdp", "grad_reduce_dtype": "bf16"})
    f, b = _unit_ops(default)
    assert "fsdp.copy_out" not in f + b and "fsdp.rs_copy_in" not in b
    u = [UnitComm(1.0, 1.0, 1.0)]
    _, _, w32 = fsdp_copies(default, [1e8], u)
    _, _, w16 = fsdp_copies(pure, [1e8], u)
    t = lambda n: kernel_time_s(Kernel("x", "memory", bytes=n), default.gpu, "bf16", default.kernels)  # noqa: E731
    assert w32[0] == pytest.approx(t(6e8 + 8e8)) and w16[0] == pytest.approx(t(4e8))
    assert fsdp_copies(default, [1e8], [UnitComm(1.0, 1.0, 0.0)])[2] == [0.0]


def test_fsdp_copies_make_fsdp2_slower_only_by_memory_traffic() -> None:
    """The copies add time to an FSDP2 prediction and none to a Megatron one."""
    tt = job(LLAMA, {"name": "torchtitan"})
    base = predict(job(LLAMA, {"name": "torchtitan", "data_parallel": "distributed_optimizer"}, zero=1))
    assert predict(tt).iteration_s > 0 and base.iteration_s > 0
    sc = predict(tt).stages[0]
    copies = sum(o.seconds for ops in sc.fwd_ops + sc.bwd_ops for o in ops if o.name.startswith("fsdp."))
    assert copies > 0
    assert not any(o.name.startswith("fsdp.") for ops in base.stages[0].fwd_ops + base.stages[0].bwd_ops
                   for o in ops)


def test_train_metrics_recompute_the_loss_after_the_last_stages_backward() -> None:
    """Composer + LLM Foundry's MPT: two training metrics, each a cross entropy over the
    logits, after every micro-batch's backward on the last stage; none for other stacks."""
    assert PROFILES["composer-fsdp"].train_metrics == 2
    assert all(PROFILES[n].train_metrics == 0 for n in PROFILES if n != "composer-fsdp")
    j = job(GPT, {"name": "composer-fsdp"}, zero=0)
    ks = graph.train_metrics(j)
    assert len(ks) == 1 and ks[0].bytes == 2 * 3 * 2048 * 50368 * 4.0
    assert graph.train_metrics(job(GPT, {"name": "composer-fsdp", "train_metrics": 0}, zero=0)) == []
    _, b = _unit_ops(j)
    assert b[-1] == "train_metrics.cross_entropy"
    piped = job(GPT, {"name": "composer-fsdp"}, dp=4, zero=0, pp=2)
    sc = stage_costs(piped, CommModel(piped, job_fabric(piped).sf, job_fabric(piped).placed))
    assert not any(o.name.startswith("train_metrics") for o in sc[0].bwd_ops[0])
    assert sc[1].bwd_ops[0][-1].name == "train_metrics.cross_entropy"
    with pytest.raises(SimInputError, match="framework.train_metrics: must be >= 0"):
        job(GPT, {"name": "composer-fsdp", "train_metrics": -1})
