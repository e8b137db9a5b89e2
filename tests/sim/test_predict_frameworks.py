"""Framework profiles (issue 31, items 2-5): data-parallel patterns (DDP, distributed
optimizer, FSDP per unit, HSDP), overlaps, gradient dtype, attention kernels, eager
traffic, FP8 casts, context parallelism, uneven pipelines, ZB-H1 and user-defined
schedules, and the refusals of each."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from predict_jobs import small
from sim.predict import graph
from sim.predict.breakdown import by_stream
from sim.predict.calibration import load
from sim.predict.job import job_from_dict
from sim.predict.memory import virtual_stage_layers
from sim.predict.predict import predict
from sim.topology import SimInputError

FSDP = {"name": "pytorch-fsdp", "microbatch_overhead_s": 0.0, "iteration_overhead_s": 0.0}
PAR8 = {"tp": 1, "pp": 1, "dp": 8}


def _ops(r) -> list[str]:
    return [o.name for o in r.stages[0].fwd_ops[0] + r.stages[0].bwd_ops[0]]


def test_fsdp_gathers_and_reduces_per_unit_every_micro_batch() -> None:
    full = predict(job_from_dict(small(parallel={**PAR8, "zero": 3}, framework=FSDP), "j.yaml"))
    grad_op = predict(job_from_dict(small(parallel={**PAR8, "zero": 2}, framework=FSDP), "j.yaml"))
    noprefetch = predict(job_from_dict(small(parallel={**PAR8, "zero": 3},
                                             framework={**FSDP, "fsdp_prefetch": False}), "j.yaml"))
    assert {"shard.allgather.first", "shard.reducescatter.last"} <= set(_ops(full)) and full.tails[0].dp_s == 0.0
    assert noprefetch.iteration_s > full.iteration_s            # collectives no longer under the compute
    assert grad_op.iteration_s <= full.iteration_s               # SHARD_GRAD_OP: no backward re-gather


def test_hsdp_shards_inside_a_group_and_all_reduces_across() -> None:
    r = predict(job_from_dict(small(parallel={**PAR8, "zero": 3}, framework={**FSDP, "hybrid_shard": 2}), "j.yaml"))
    assert "dpr.allreduce.grads" in r.comm and r.tails[0].dp_s > 0


def test_distributed_optimizer_reduce_scatters_once_and_bf16_halves_it() -> None:
    fp32 = predict(job_from_dict(small(parallel={**PAR8, "zero": 1}, framework={"name": "megatron-core"}), "j.yaml"))
    bf16 = predict(job_from_dict(small(parallel={**PAR8, "zero": 1},
                                       framework={"name": "megatron-core", "grad_reduce_dtype": "bf16"}), "j.yaml"))
    assert "dp.reducescatter.grads" in fp32.comm and "dp.allgather.params" in fp32.comm
    assert bf16.tails[0].dp_s < 0.75 * fp32.tails[0].dp_s


def test_tp_comm_overlap_hides_the_sequence_parallel_collectives() -> None:
    par = {"tp": 2, "pp": 1, "dp": 4, "sequence_parallel": True}
    plain = predict(job_from_dict(small(parallel=par, framework={"name": "megatron-core", "tp_comm_overlap": 0.0}),
                                  "j.yaml"))
    over = predict(job_from_dict(small(parallel=par, framework={"name": "megatron-core", "tp_comm_overlap": 0.9}),
                                 "j.yaml"))
    assert by_stream(over).get("tp", 0.0) < by_stream(plain).get("tp", 0.0)


def test_unfused_attention_and_eager_traffic() -> None:
    old = job_from_dict(small(framework={"name": "megatron-lm"}), "j.yaml")
    names = [k.name for k in graph.layer_forward(old, False)]
    assert {"attention.qk", "attention.softmax", "attention.av"} <= set(names) and "attention" not in names
    fused = predict(job_from_dict(small(framework={"name": "torchtitan", "elementwise_traffic": 1.0}), "j.yaml"))
    eager = predict(job_from_dict(small(framework={"name": "torchtitan", "elementwise_traffic": 3.0}), "j.yaml"))
    assert eager.iteration_s > fused.iteration_s


LLAMA = {"norm": "rmsnorm", "mlp": "swiglu", "position": "rope", "dropout": False}


def test_rotary_models_run_a_rope_kernel_on_q_and_k() -> None:
    plain = job_from_dict(small(), "j.yaml")
    rope = job_from_dict(small(model=LLAMA, parallel={"tp": 2}), "j.yaml")
    assert "rope" not in [k.name for k in graph.layer_forward(plain, False)]
    k = next(k for k in graph.layer_forward(rope, False) if k.name == "rope")
    m, tokens = rope.model, rope.training.micro_batch * rope.model.seq_length
    assert k.bytes == 2 * tokens * (m.heads + m.kv) * m.d_head // 2 * graph.E
    assert "rope.bwd" in [k.name for k in graph.layer_backward(rope, False)]


def _norm_s(framework: dict, model: dict) -> float:
    """Seconds the first layer's attention norm moves bytes (its launch latency left out)."""
    j = job_from_dict(small(model=model, framework=framework), "j.yaml")
    r = predict(j)
    return next(o.seconds for o in r.stages[0].fwd_ops[0] if o.name.endswith("norm.attn")) - j.kernels.launch_s


def test_eager_pytorch_runs_rmsnorm_as_its_primitives_and_compile_fuses_them() -> None:
    eager = {"name": "torchtitan", "elementwise_traffic": None}
    compiled = {"name": "torchtitan", "compile": True}
    rms_eager, rms_compiled = _norm_s(eager, LLAMA), _norm_s(compiled, LLAMA)
    ln_eager = _norm_s(eager, {"norm": "layernorm"})
    assert rms_eager / rms_compiled == pytest.approx(9.0 * load().eager_traffic, rel=0.02)
    assert ln_eager / rms_compiled == pytest.approx(load().eager_traffic, rel=0.02)   # native_layer_norm: one kernel
    j = job_from_dict(small(model=LLAMA), "j.yaml")
    assert graph.eager_factor(j, "activation") == pytest.approx(10 / 6) and graph.eager_factor(j, "rope.bwd") == 5.0


@pytest.mark.parametrize("framework, gather_bytes", [("torchtitan", 1.0), ("megatron-core", 1.0), ("composer-fsdp", 2.0)])
def test_fp8_sequence_parallel_gathers_fp8_where_the_stack_does(framework: str, gather_bytes: float) -> None:
    j = job_from_dict(small(parallel={"tp": 2, "sequence_parallel": True}, training={"precision": "fp8"},
                            gpu={"preset": "H100-SXM"}, framework={"name": framework}), "j.yaml")
    tokens_h = j.training.micro_batch * j.model.seq_length * j.model.hidden
    fwd = {k.name: k.size_bytes for k in graph.layer_forward(j, False) if k.kind == "comm"}
    bwd = {k.name: k.size_bytes for k in graph.layer_backward(j, False) if k.kind == "comm"}
    assert fwd["tp.allgather.attn"] == tokens_h * gather_bytes and fwd["tp.reducescatter.attn"] == tokens_h * 2
    assert bwd["tp.allgather.mlp.bwd"] == tokens_h * gather_bytes           # the output gradient's all-gather
    head = {k.name: k.size_bytes for k in graph.head_forward(j) if k.kind == "comm"}
    assert head["tp.allgather.head"] == tokens_h * 2                          # the LM head stays BF16


@pytest.mark.parametrize("precision, framework, dtype", [("fp16", {"name": "megatron-lm"}, "fp16"),
                                                         ("bf16", {"name": "megatron-lm"}, "fp32"),
                                                         ("fp16", {"name": "megatron-core"}, "fp16"),
                                                         ("fp16", {"name": "megatron-lm", "grad_reduce_dtype": "fp32"},
                                                          "fp32")])
def test_megatron_reduces_fp16_gradients_in_fp16_and_bf16_in_fp32(precision: str, framework: dict, dtype: str) -> None:
    j = job_from_dict(small(training={"precision": precision}, framework=framework), "j.yaml")
    assert j.framework.grad_reduce_dtype == dtype
    assert j.framework.grad_wire_bytes == (4.0 if dtype == "fp32" else 2.0)


@pytest.mark.parametrize("value", ["alibi", 3])
def test_an_unknown_position_encoding_is_refused(value: object) -> None:
    with pytest.raises(SimInputError, match="model.position"):
        job_from_dict(small(model={"position": value}), "j.yaml")


def test_fp8_adds_casts_and_keeps_attention_and_head_in_bf16() -> None:
    j = job_from_dict(small(gpu={"preset": "H100-SXM"}, training={"precision": "fp8"}), "j.yaml")
    fwd = graph.layer_forward(j, False)
    assert any(k.name == "fp8.cast.out_proj.x" for k in fwd)
    assert all(not k.fp8 for k in graph.head_forward(j) if k.kind == "gemm")
    bwd = [k.name for k in graph.layer_backward(j, False)]
    assert "fp8.cast.fc2.dgrad.dy" in bwd
    cur = job_from_dict(small(gpu={"preset": "H100-SXM"}, training={"precision": "fp8"},
                              framework={"name": "megatron-core", "fp8_recipe": "current"}), "j.yaml")
    x = lambda jj: sum(k.bytes for k in graph.layer_forward(jj, False) if k.name.startswith("fp8.cast"))  # noqa: E731
    assert x(cur) > x(j)                                       # current scaling: an amax pass first
    big = {"hidden": 4096, "heads": 32, "seq_length": 2048}
    bf16 = predict(job_from_dict(small(model=big, gpu={"preset": "H100-SXM"}), "j.yaml"))
    fp8 = predict(job_from_dict(small(model=big, gpu={"preset": "H100-SXM"}, training={"precision": "fp8"}), "j.yaml"))
    assert bf16.iteration_s / 2 < fp8.iteration_s < bf16.iteration_s      # far from "twice BF16"
    tiny = predict(job_from_dict(small(gpu={"preset": "H100-SXM"}, training={"precision": "fp8"}), "j.yaml"))
    tiny16 = predict(job_from_dict(small(gpu={"preset": "H100-SXM"}), "j.yaml"))
    assert tiny.iteration_s / tiny16.iteration_s > fp8.iteration_s / bf16.iteration_s   # casts weigh on small models


def test_context_parallel_ring_hides_what_allgather_exposes() -> None:
    par = {"tp": 1, "pp": 1, "dp": 2, "cp": 4}
    base = small(model={"seq_length": 8192}, parallel=par, training={"global_batch": 4})
    ring = predict(job_from_dict({**base, "parallel": {**par, "cp_comm": "ring"}}, "j.yaml"))
    ag = predict(job_from_dict({**base, "parallel": {**par, "cp_comm": "allgather"}}, "j.yaml"))
    assert by_stream(ag).get("cp", 0.0) > by_stream(ring).get("cp", 0.0)


def test_attention_masks_change_the_attention_flops() -> None:
    att = lambda **t: next(k.flops for k in graph.layer_forward(job_from_dict(small(training=t), "j.yaml"), False)  # noqa: E731
                           if k.kind == "attention")
    causal, full = att(global_batch=16), att(global_batch=16, attention_mask="full")
    doc = att(global_batch=16, attention_mask="document", document_tokens=256)
    assert full == pytest.approx(2 * causal) and doc == pytest.approx(causal * 256 / 1024)


def test_uneven_pipeline_gives_first_and_last_stage_a_layer_less() -> None:
    j = job_from_dict(small(model={"layers": 14}, parallel={"tp": 1, "pp": 4, "dp": 2}), "j.yaml")
    assert virtual_stage_layers(j) == [3, 4, 4, 3]
    assert predict(j).iteration_s > 0


def test_zero_bubble_h1_beats_1f1b() -> None:
    par = {"tp": 1, "pp": 4, "dp": 2}
    one = predict(job_from_dict(small(model={"layers": 8}, parallel=par), "j.yaml"))
    zb = predict(job_from_dict(small(model={"layers": 8}, parallel={**par, "schedule": "zb-h1"}), "j.yaml"))
    assert zb.pipeline.makespan_s < one.pipeline.makespan_s
    assert {o.kind for o in zb.pipeline.ops} == {"F", "B", "W"}


def _custom(tmp_path: Path, stages: list) -> dict:
    f = tmp_path / "sched.yaml"
    f.write_text(yaml.safe_dump({"stages": stages}))
    return small(parallel={"tp": 1, "pp": 2, "dp": 2, "schedule": "custom", "schedule_file": str(f)},
                 training={"global_batch": 4})                   # 2 micro-batches per pipeline


def test_a_custom_schedule_runs_and_sets_the_memory(tmp_path: Path) -> None:
    gpipe = [["F0", "F1", "B0", "B1"], ["F0", "F1", "B1", "B0"]]
    r = predict(job_from_dict(_custom(tmp_path, gpipe), "j.yaml"))
    assert r.iteration_s > 0 and len(r.pipeline.ops) == 8


@pytest.mark.parametrize("stages, message", [
    ([["F0", "F1", "B0", "B1"]], "1 stages given, the job has pp 2 (a stage is missing)"),
    ([["F0", "B0", "F1", "B1"], ["B0", "F0", "F1", "B1"]], "stage 1: B0 before F0"),
    ([["F0", "F1", "B0", "B1"], ["F0", "F1", "B0"]], "stage 1: B1 missing"),
    ([["F0", "F1", "B0", "B1"], ["F0", "X1", "B0", "B1"]], "stage 1: 'X1' is not a pass"),
    ([["F0", "F0", "B0", "B1"], ["F0", "F1", "B0", "B1"]], "stage 0: F0 twice"),
    ([["F0", "B0", "F1", "B1"], ["F1", "B1", "F0", "B0"]], "deadlocks"),
])
def test_an_invalid_custom_schedule_is_refused_naming_why(tmp_path: Path, stages: list, message: str) -> None:
    with pytest.raises(SimInputError, match=r"j.yaml: parallel.schedule_file: .*" + message.replace("(", r"\(")
                       .replace(")", r"\)")):
        job_from_dict(_custom(tmp_path, stages), "j.yaml")


@pytest.mark.parametrize("framework, message", [
    ({"name": "jax"}, "framework.name: unknown framework 'jax'"),
    ({"name": "nemo", "attention": "fa9"}, "framework.attention: unknown value 'fa9'"),
    ({"name": "nemo", "tp_comm_overlap": 1.5}, "framework.tp_comm_overlap: a share in [0, 1]"),
    ({"name": "nemo", "grad_reduce_dtype": "fp64"}, "framework.grad_reduce_dtype: unknown value 'fp64'"),
    ({"name": "nemo", "bucket": 3}, "framework.bucket: unknown field"),
    ({"name": "nemo", "cpu_op_s": "fast"}, "framework.cpu_op_s: must be float"),
    ("nemo", "framework: must be a mapping"),
])
def test_a_bad_framework_section_names_the_field(framework: object, message: str) -> None:
    with pytest.raises(SimInputError, match="j.yaml: " + message.replace("[", r"\[").replace("]", r"\]")):
        job_from_dict(small(framework=framework), "j.yaml")


def test_a_job_that_does_not_fit_says_what_fills_the_gpu_and_what_would_fit() -> None:
    d = small(model={"layers": 8, "hidden": 8192, "heads": 64, "seq_length": 8192}, parallel={"tp": 1, "pp": 1, "dp": 8},
              training={"global_batch": 8}, gpu={"preset": "A100-40GB"})
    with pytest.raises(SimInputError) as e:
        predict(job_from_dict(d, "j.yaml"))
    msg = str(e.value)
    assert msg.startswith("j.yaml: gpu.hbm_GiB: the job does not fit") and "activations" in msg and "fits with" in msg


def test_energy_per_iteration_and_token() -> None:
    base = predict(job_from_dict(small(), "j.yaml"))
    pue = predict(job_from_dict(small(energy={"pue": 1.5}), "j.yaml"))
    assert base.energy is not None and base.energy.per_token_J > 0 and 0 < base.energy.gpu_J < base.energy.it_J
    assert pue.energy.total_J == pytest.approx(base.energy.it_J * 1.5)
    with pytest.raises(SimInputError, match="j.yaml: energy.pue: a power usage effectiveness"):
        job_from_dict(small(energy={"pue": 0.8}), "j.yaml")
    with pytest.raises(SimInputError, match="j.yaml: energy.switch_W: watts >= 0"):
        job_from_dict(small(energy={"switch_W": -1.0}), "j.yaml")


def test_a_power_limited_gpu_runs_slower() -> None:
    full = predict(job_from_dict(small(gpu={"preset": "H100-SXM"}), "j.yaml"))
    capped = predict(job_from_dict(small(gpu={"preset": "H100-SXM", "hbm_GBps": 3350.0}), "j.yaml"))
    grand_teton = predict(job_from_dict(small(gpu={"preset": "H100-96GB-500W", "hbm_GBps": 3350.0}), "j.yaml"))
    assert capped.iteration_s == pytest.approx(full.iteration_s)
    assert grand_teton.iteration_s > full.iteration_s


@pytest.mark.parametrize("body, message", [
    ("sustained: {H100: 2.5}\n", "sustained.H100: a factor in (0, 1.5]"),
    ("overheads: {jax: {microbatch_s: 0.1}}\n", "overheads.jax: a family"),
    ("overheads: {pytorch: {microbatch_s: -1}}\n", "overheads.pytorch.microbatch_s"),
    ("straggler_sigma: 0.9\n", "straggler_sigma: a relative jitter"),
    ("speed: 3\n", "speed: unknown field"),
    ("sustained: [\n", "not valid YAML"),
])
def test_a_bad_calibration_file_names_the_field(tmp_path: Path, body: str, message: str) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(body)
    with pytest.raises(SimInputError, match=message.replace("(", r"\(").replace("]", r"\]").replace("[", r"\[")):
        load(p)
