"""Issue 31, round twenty-one: FP8's scale bookkeeping and casts as each recipe's code runs
them — Transformer Engine 1.x delayed scaling (amaxes written by the casts, one reduction
and one fused update a pass), TE 2.x current scaling (an amax kernel and a scale kernel per
quantized tensor, the TP amax all-reduce of a tensor gathered in FP8, the transposes after
the gather), torchao's tensorwise scales on sharded DTensors, FSDP2's float8 all-gather where a row's
command sets it."""
from __future__ import annotations

import pytest

from predict_jobs import small
from sim.predict import graph
from sim.predict.comm import groups
from sim.predict.framework import PROFILES, resolve_framework
from sim.predict.job import TrainingJob, job_from_dict
from sim.predict.predict import predict
from sim.predict.stages import UnitComm, fsdp_copies, fsdp_grad_accumulate
from sim.topology import SimInputError
from sim.validation.dataset import load_dataset
from sim.validation.jobs import framework_section, run_job


def _job(framework: dict, parallel: dict, recipe: str = "") -> TrainingJob:
    fw = {**framework, **({"fp8_recipe": recipe} if recipe else {})}
    return job_from_dict(small(parallel=parallel, training={"precision": "fp8"}, framework=fw,
                               gpu={"preset": "H100-SXM"}), "j.yaml")


def _names(kernels: list) -> list[str]:
    return [k.name for k in kernels]


def _per_element(j: TrainingJob, cast: str, gemm: str, phase: str = "fwd") -> float:
    ks = graph.layer_forward(j, moe=False) if phase == "fwd" else graph.layer_backward(j, moe=False)
    by = {k.name: k for k in ks}
    M, _, K = by[gemm].dims
    return by[cast].bytes / (M * K)


def test_delayed_scaling_has_no_scale_kernels_per_gemm() -> None:
    # TE 1.8: the cast kernels write the amax; the scales are updated once a pass
    j = _job({"name": "nemo"}, {"tp": 2, "pp": 1, "dp": 4})
    ks = graph.layer_forward(j, moe=False) + graph.layer_backward(j, moe=False)
    assert not [n for n in _names(ks) if n.startswith(("fp8.scale", "fp8.amax"))]
    fwd, bwd = graph.fp8_scale_update(j, "fwd", 3), graph.fp8_scale_update(j, "bwd", 3)
    red = [k for k in fwd + bwd if k.kind == "comm"]
    assert [(k.collective, k.group) for k in red] == [("allreduce", "tp_cp")] * 2
    assert red[0].size_bytes == 3 * 4 * 3 * 4.0 and red[1].size_bytes == 3 * 4 * 2 * 4.0   # 3 / 2 tensors a GEMM
    assert graph.fp8_scale_update(j, "fwd", 0) == []


def test_the_scale_update_runs_once_a_chunk_and_pass() -> None:
    j = _job({"name": "megatron-core"}, {"tp": 2, "pp": 2, "dp": 2})
    for stage in predict(j).stages:
        for ops in stage.fwd_ops:
            assert _names(ops).count("fp8.amax_reduce.fwd") == 1
        for ops in stage.bwd_ops:
            assert _names(ops).count("fp8.amax_reduce.bwd") == 1
    for name, recipe in (("megatron-bridge", ""), ("torchtitan", "")):
        other = _job({"name": name}, {"tp": 2, "pp": 1, "dp": 4}, recipe)
        assert graph.fp8_scale_update(other, "fwd", 2) == [], name


def test_amax_groups_are_megatrons_tp_cp_and_composers_world() -> None:
    assert PROFILES["nemo"].fp8_amax_group == "tp_cp"
    assert PROFILES["composer-fsdp"].fp8_amax_group == "world"
    j = job_from_dict(small(parallel={"tp": 2, "pp": 2, "cp": 2, "dp": 2}), "j.yaml")
    tpcp = groups(j, "tp_cp")
    assert len(tpcp) == 4 and all(len(g) == 4 for g in tpcp) and tpcp[0] == [0, 1, 2, 3]
    assert groups(j, "world") == [list(range(16))]
    with pytest.raises(SimInputError, match="fp8_amax_group"):
        resolve_framework({"name": "nemo", "fp8_amax_group": "dp"}, "j.yaml")


def test_current_scaling_casts_as_te2_runs_them() -> None:
    # no TP: amax + quantize for a standalone input, the quantize alone after a norm
    j = _job({"name": "megatron-bridge"}, {"tp": 1, "pp": 1, "dp": 8})
    assert _per_element(j, "fp8.cast.out_proj.x", "out_proj") == pytest.approx(6.0)
    assert _per_element(j, "fp8.cast.qkv.x", "qkv") == pytest.approx(4.0)
    names = _names(graph.layer_forward(j, moe=False))
    assert "fp8.amax.out_proj" in names and "fp8.amax.qkv" not in names     # the norm computes it
    assert "fp8.scale.qkv" in names and not [n for n in names if n.startswith("fp8.amax_reduce")]


def test_current_scaling_under_sequence_parallelism_casts_the_shard() -> None:
    # quantized all-gather: the shard cast row-wise, the gathered FP8 tensor transposed
    j = _job({"name": "megatron-bridge"}, {"tp": 4, "pp": 1, "dp": 2, "sequence_parallel": True})
    assert _per_element(j, "fp8.cast.qkv.x", "qkv") == pytest.approx(3.0 / 4 + 2.0)
    assert _per_element(j, "fp8.cast.out_proj.x", "out_proj") == pytest.approx(6.0)    # not gathered
    bwd = graph.layer_backward(j, moe=False)
    by = {k.name: k for k in bwd}
    M, _, K = by["out_proj.dgrad"].dims
    assert by["fp8.cast.out_proj.dgrad.dy"].bytes / (M * K) == pytest.approx(5.0 / 4 + 2.0)
    assert by["fp8.cast.qkv.dgrad.dy"].bytes / by["qkv.dgrad"].dims[0] / by["qkv.dgrad"].dims[2] == pytest.approx(6.0)
    # the amax all-reduce precedes the gather it scales, which keeps its GEMM as neighbour
    fwd = _names(graph.layer_forward(j, moe=False))
    assert fwd.index("fp8.amax_reduce.qkv") < fwd.index("tp.allgather.attn") < fwd.index("qkv")
    assert fwd.index("fp8.amax_reduce.fc1") < fwd.index("tp.allgather.mlp") < fwd.index("fc1")
    b = _names(bwd)
    assert b.index("fp8.amax_reduce.out_proj.dgrad") < b.index("tp.allgather.attn.bwd") < b.index("out_proj.dgrad")


def test_torchao_tensorwise_reduces_the_amax_of_sharded_inputs() -> None:
    j = _job({"name": "torchtitan"}, {"tp": 4, "pp": 1, "dp": 2, "sequence_parallel": True})
    fwd = _names(graph.layer_forward(j, moe=False))
    assert {"fp8.amax_reduce.qkv", "fp8.amax_reduce.fc1", "fp8.scale.qkv", "fp8.amax.qkv"} <= set(fwd)
    assert _per_element(j, "fp8.cast.qkv.x", "qkv") == pytest.approx(5.0)           # thirteenth round's bytes
    rowwise = _job({"name": "torchtitan"}, {"tp": 4, "pp": 1, "dp": 2, "sequence_parallel": True}, "rowwise")
    assert not [n for n in _names(graph.layer_forward(rowwise, moe=False)) if n.startswith("fp8.amax_reduce")]


def test_delayed_scaling_transposes_the_gathered_input_in_the_backward() -> None:
    # TE 1.8 LayerNormLinear: FP8 written by the norm on the shard, fp8_transpose of the gathered
    sp = _job({"name": "nemo"}, {"tp": 4, "pp": 1, "dp": 2, "sequence_parallel": True})
    assert _per_element(sp, "fp8.cast.qkv.x", "qkv") == pytest.approx(2.0 - 1.0 / 4)
    assert _per_element(sp, "fp8.cast.out_proj.x", "out_proj") == pytest.approx(5.0)   # cast, transpose later
    plain = _job({"name": "nemo"}, {"tp": 1, "pp": 1, "dp": 8})
    assert _per_element(plain, "fp8.cast.out_proj.x", "out_proj") == pytest.approx(4.0)
    bwd = {k.name: k for k in graph.layer_backward(sp, moe=False)}
    M, _, K = bwd["fc2.dgrad"].dims
    assert bwd["fp8.cast.fc2.dgrad.dy"].bytes / (M * K) == pytest.approx(3.0 / 4 + 2.0)


def test_trainy_rows_gather_their_weights_in_fp8() -> None:
    # benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md: --float8.enable_fsdp_float8_all_gather
    ds = load_dataset()
    rows = [r for r in ds.runs if r.source == "trainy2506"]
    assert rows and all(framework_section(r)["fp8_param_gather"] is True for r in rows)
    j = job_from_dict(run_job(rows[0]), "j.yaml")
    assert j.weight_bytes == 1.0
    other = [r for r in ds.runs if r.source == "torchtitan2412" and r.precision == "fp8"]
    assert "fp8_param_gather" not in framework_section(other[0])


def test_fsdp_gradient_copies_read_bf16_gradients_of_fp8_weights() -> None:
    def job(gather: bool) -> TrainingJob:
        return job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 1024, "vocab": 32000},
                              "training": {"global_batch": 8, "precision": "fp8"}, "parallel": {"dp": 8, "zero": 3},
                              "gpu": {"preset": "H100-SXM"},
                              "framework": {"name": "torchtitan", "fp8_param_gather": gather}}, "j.yaml")
    u = [UnitComm(1e-3, 1e-3, 1e-3)]
    fp8, bf16 = fsdp_copies(job(True), [1e8], u), fsdp_copies(job(False), [1e8], u)
    copy_in = [[o.seconds for o in b[0] if o.name == "fsdp.rs_copy_in"] for _, b, _ in (fp8, bf16)]
    assert copy_in[0] == copy_in[1] and copy_in[0]
    out = [[o.seconds for o in b[0] if o.name == "fsdp.copy_out"] for _, b, _ in (fp8, bf16)]
    assert out[0][0] < out[1][0]                  # the gathered FP8 weights: half the copy-out
    acc = [fsdp_grad_accumulate(job(g), [1e8])[0].seconds for g in (True, False)]
    assert acc[0] == acc[1]
