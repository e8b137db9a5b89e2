"""``python -m sim predict`` end to end on a small job: the report, the breakdowns that
sum to the iteration, the Chrome/Perfetto trace; the job files shipped in sim/jobs/."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from predict_jobs import small
from sim.cli import main
from sim.predict.breakdown import by_stream, critical_path
from sim.predict.job import job_from_dict, load_job
from sim.predict.predict import predict
from sim.predict.graph import layer_backward, layer_forward

REPO = Path(__file__).resolve().parents[2]


def test_predict_writes_report_and_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "small.yaml"
    job.write_text(yaml.safe_dump(small()))
    out = tmp_path / "run"
    assert main(["predict", str(job), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    for line in ("iteration", "tokens/s", "TFLOP/s per GPU", "memory per GPU", "by stream", "by operator",
                 "critical path", "Bottleneck: "):
        assert line in text
    assert (out / "report.md").read_text().startswith("# Prediction: small")
    doc = json.loads((out / "trace.json").read_text())
    ev = doc["traceEvents"]
    passes = [e for e in ev if e["ph"] == "X" and e["cat"] in ("forward", "backward") and e["tid"] == 0]
    assert len(passes) == 2 * 8 * 2                            # F and B, 8 micro-batches, 2 stages
    assert {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"} == \
        {"stage 0 (rank 0)", "stage 1 (rank 4)"}
    kernels = [e for e in ev if e["ph"] == "X" and e["tid"] == 1]
    assert any(e["name"].endswith("fc1") for e in kernels) and any(e["cat"] == "tp" for e in kernels)
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in ev if e["ph"] == "X")
    assert json.loads((out / "prediction.json").read_text())["gpus"] == 8


def test_streams_sum_to_the_iteration_and_mfu_is_consistent() -> None:
    r = predict(job_from_dict(small(), "j.yaml"))
    assert sum(by_stream(r).values()) == pytest.approx(r.iteration_s, rel=1e-9)
    assert r.mfu == pytest.approx(r.model_tflops_per_gpu / 989.0)
    assert r.tokens_per_s == pytest.approx(16 * 1024 / r.iteration_s)
    assert critical_path(r)[0].startswith("stage")


def test_more_micro_batches_shrink_the_bubble_share_of_the_slowest_stage() -> None:
    few = predict(job_from_dict(small(training={"global_batch": 4}), "j.yaml"))
    many = predict(job_from_dict(small(training={"global_batch": 64}), "j.yaml"))
    last = 1                                                    # the LM head makes it the slowest
    assert sum(many.stages[last].fwd_s) > sum(many.stages[0].fwd_s)
    share = [by_stream(r, last)["pp-bubble"] / r.pipeline.makespan_s for r in (few, many)]
    assert share[1] < share[0] / 4
    # the faster first stage waits for it: its idle time grows with the micro-batches
    assert by_stream(many, 0)["pp-bubble"] > by_stream(few, 0)["pp-bubble"]


def test_overlapped_gradient_reduction_is_never_slower() -> None:
    on = predict(job_from_dict(small(parallel={"overlap_grad_reduce": True}), "j.yaml"))
    off = predict(job_from_dict(small(parallel={"overlap_grad_reduce": False}), "j.yaml"))
    assert on.iteration_s <= off.iteration_s
    assert off.tails[0].dp_exposed_s == pytest.approx(off.tails[0].dp_s)


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "sim" / "jobs").glob("*.yaml")))
def test_shipped_job_files_predict(name: str) -> None:
    r = predict(load_job(REPO / "sim" / "jobs" / name))
    assert 0 < r.mfu < 0.8 and r.iteration_s > 0
    assert max(m.total for m in r.memory) < r.job.gpu.hbm_bytes


def test_context_parallel_exchanges_kv_under_the_attention_and_halves_activations() -> None:
    base = predict(job_from_dict(small(parallel={"tp": 2, "pp": 1, "dp": 4}), "j.yaml"))
    cp = predict(job_from_dict(small(parallel={"tp": 2, "pp": 1, "dp": 2, "cp": 2}), "j.yaml"))
    names = [o.name for o in cp.stages[0].fwd_ops[0]]
    assert any(n.endswith("cp.allgather.kv") for n in names)
    assert "cp.allgather" in cp.comm
    kv = next(o for o in cp.stages[0].fwd_ops[0] if o.name.endswith("cp.allgather.kv"))
    attn = next(o for o in cp.stages[0].fwd_ops[0] if o.name.endswith(".attention"))
    assert kv.seconds == pytest.approx(max(0.0, kv.full_s - attn.seconds))     # hidden under the attention
    assert kv.seconds < kv.full_s
    assert cp.memory[0].activations == pytest.approx(base.memory[0].activations / 2, rel=0.02)


def test_the_context_parallel_all_gather_carries_every_ranks_kv() -> None:
    """An all-gather's size is what each rank ends up with (the FSDP units' convention in
    stages.unit_comm): every CP rank's K and V, c × the local ones; the backward's
    reduce-scatter of dK/dV the same (i31-cp-s46 found the local size, c times too small)."""
    for cp in (2, 4):
        j = job_from_dict(small(parallel={"tp": 2, "pp": 1, "dp": 1, "cp": cp}), "j.yaml")
        m, tokens = j.model, j.training.micro_batch * j.model.seq_length // cp
        local_kv = 2.0 * tokens * (m.kv // 2) * m.d_head * 2.0          # K and V, bf16, kv/t heads
        fwd = next(k for k in layer_forward(j, False) if k.name == "cp.allgather.kv")
        bwd = next(k for k in layer_backward(j, False) if k.name == "cp.reducescatter.dkv")
        assert fwd.size_bytes == pytest.approx(cp * local_kv) and bwd.size_bytes == fwd.size_bytes


def test_zero3_gathers_weights_every_micro_batch() -> None:
    r = predict(job_from_dict(small(parallel={"zero": 3}), "j.yaml"))
    ops = [o.name for o in r.stages[0].fwd_ops[0] + r.stages[0].bwd_ops[0]]
    assert "shard.allgather.first" in ops and "shard.reducescatter.last" in ops   # FSDP-style, per unit
    assert r.tails[0].dp_s == 0.0                                # nothing left after the backward


def test_tensor_parallel_beyond_a_server_runs_on_the_fabric() -> None:
    inside = predict(job_from_dict(small(parallel={"tp": 2, "pp": 1, "dp": 4}), "j.yaml"))
    across = predict(job_from_dict(small(parallel={"tp": 4, "pp": 1, "dp": 2}), "j.yaml"))
    assert inside.comm["tp.allreduce"].medium == "nvlink"          # default.yaml: 2 GPUs per server
    assert across.comm["tp.allreduce"].medium == "fabric"


def test_jobs_smaller_than_a_server() -> None:
    one = predict(job_from_dict(small(parallel={"tp": 1, "pp": 1, "dp": 1}, training={"global_batch": 4}), "j.yaml"))
    assert one.comm["pp.sendrecv"].medium == "none" and by_stream(one).get("dp", 0.0) == 0.0
    two = predict(job_from_dict(small(parallel={"tp": 2, "pp": 1, "dp": 1}, training={"global_batch": 4}), "j.yaml"))
    assert two.comm["tp.allreduce"].medium == "nvlink"


def test_the_ideal_fabric_is_never_slower_than_random_ecmp() -> None:
    par = {"tp": 1, "pp": 1, "dp": 8}
    ecmp = predict(job_from_dict(small(parallel=par, network={"policy": "random_ecmp"}), "j.yaml"))
    ideal = predict(job_from_dict(small(parallel=par, network={"policy": "ideal"}), "j.yaml"))
    assert ideal.tails[0].dp_s <= ecmp.tails[0].dp_s
    assert ecmp.comm["dp.allreduce.grads"].medium == "fabric"


def test_interleaved_chunks_start_their_gradient_reduction_early() -> None:
    par = {"schedule": "interleaved", "virtual_stages": 2, "bucket_MiB": 1.0}   # many buckets
    on = predict(job_from_dict(small(parallel={**par, "overlap_grad_reduce": True}), "j.yaml"))
    off = predict(job_from_dict(small(parallel={**par, "overlap_grad_reduce": False}), "j.yaml"))
    t_on, t_off = on.tails[0], off.tails[0]
    assert t_on.dp_s == pytest.approx(t_off.dp_s)
    assert t_on.dp_start_s < t_off.dp_start_s                    # chunk 1's share starts before the last backward
    assert t_on.dp_exposed_s < t_off.dp_exposed_s == pytest.approx(t_off.dp_s)


def test_the_network_policy_shows_in_transfers_that_cross_the_spines() -> None:
    job = small(model={"layers": 8}, parallel={"tp": 8, "pp": 2, "dp": 16}, training={"global_batch": 32},
                fabric={"spec_file": "topo/specs/pod64k.yaml", "blocks": 2})
    times = {}
    for policy in ("random_ecmp", "tccl", "ideal"):
        r = predict(job_from_dict({**job, "network": {"policy": policy, "placement": "random"}}, "j.yaml"))
        times[policy] = r.comm["pp.sendrecv"].seconds
    assert times["random_ecmp"] > 1.5 * times["tccl"]            # hash collisions on the uplinks
    assert times["tccl"] == pytest.approx(times["ideal"], rel=0.05)
