"""Issue 31, fourteenth round (i31-mb-s47): Megatron-Core's MoE all-to-all overlap
(``framework.moe_a2a_overlap``: ``overlap_moe_expert_parallel_comm`` + ``delay_wgrad_compute``,
Megatron-Bridge's ``moe_a2a_overlap`` preset flag): the combined 1F1B step, and the
Megatron-Bridge rows' MoE configuration read from the recipes they ran."""
from __future__ import annotations

import pytest

from sim.predict.a2a_overlap import LayerSegments, combined_pass_s, pair_s
from sim.predict.framework import PROFILES
from sim.predict.job import job_from_dict
from sim.predict.predict import predict
from sim.predict.schedule import device_order, simulate_pipeline
from sim.predict.stages import TimedOp
from sim.topology import SimInputError
from sim.validation.dataset import load_dataset
from sim.validation.jobs import run_job

MOE = {"layers": 4, "hidden": 2048, "heads": 32, "kv_heads": 4, "head_dim": 128, "seq_length": 4096,
       "vocab": 151936, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "ffn_hidden": 6144,
       "experts": 128, "top_k": 8, "moe_ffn_hidden": 768, "tied_embeddings": False}


def job(framework: dict, pp: int = 2, schedule: str = "interleaved", recompute: str = "none", experts: bool = True):
    model = dict(MOE) if experts else {k: v for k, v in MOE.items() if k not in ("experts", "top_k", "moe_ffn_hidden")}
    parallel = {"pp": pp, "dp": 16 // pp, "ep": 8 if experts else 1, "zero": 1}
    if schedule == "interleaved":
        parallel.update(schedule="interleaved", virtual_stages=2)
    return job_from_dict({"model": model, "parallel": parallel,
                          "training": {"global_batch": 64, "micro_batch": 1, "precision": "fp8", "recompute": recompute},
                          "gpu": {"preset": "H100-SXM"},
                          "framework": {"name": "megatron-bridge", "moe_dispatcher": "alltoall", **framework}}, "j.yaml")


def op(name: str, s: float, stream: str = "compute") -> TimedOp:
    return TimedOp(name, stream, "comm" if stream != "compute" else "gemm", s, s, 0.0)


def test_profiles_default_off() -> None:
    for name, f in PROFILES.items():
        assert f.moe_a2a_overlap is False, name


def test_a_pair_runs_on_two_streams_as_megatron_schedules_it() -> None:
    # comm: combine_bwd | dispatch_fwd -> dispatch_bwd | combine_fwd
    # comp: attn_fwd    | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | attn_bwd
    f = LayerSegments(head=3.0, first=1.0, middle=2.0, second=1.0, a2a=True)
    b = LayerSegments(first=1.0, middle=2.0, middle_dw=2.0, second=1.0, tail=6.0, a2a=True)
    assert pair_s(f, b) == 15.0                      # compute-bound: 3 + 2 + 2 + 2 + 6
    slow = LayerSegments(head=3.0, first=10.0, middle=2.0, second=10.0, a2a=True)
    # comm-bound: dispatch_fwd from 3 to 13, dispatch_bwd to 14, mlp_fwd 13-15, combine_fwd 15-25
    assert pair_s(slow, b) == 25.0
    dense = LayerSegments(head=5.0)
    assert pair_s(dense, b) == 5.0 + b.total_s      # no all-to-all: nothing to overlap


def test_a_chunk_pairs_forward_layer_i_with_the_backwards_ith() -> None:
    f = [op("embedding", 1.0), op("L0.attn", 3.0), op("L0.ep.alltoall.dispatch", 1.0, "ep"),
         op("L0.experts", 2.0), op("L0.ep.alltoall.combine", 1.0, "ep"), op("L1.attn", 3.0)]
    b = [op("L1.attn.bwd", 6.0), op("L0.ep.alltoall.combine.bwd", 1.0, "ep"), op("L0.experts.dgrad", 2.0),
         op("L0.experts.wgrad", 2.0), op("L0.ep.alltoall.dispatch.bwd", 1.0, "ep"), op("L0.attn.bwd", 6.0)]
    # pairs: (fwd L0, bwd L1: dense, 7 + 6) and (fwd L1: dense, bwd L0: 3 + 12), plus the embedding
    assert combined_pass_s(f, b) == 1.0 + (7.0 + 6.0) + (3.0 + 12.0)


def test_the_schedule_runs_one_more_warmup_forward_and_merges_steady_pairs() -> None:
    assert device_order(1, 3, 1, 0) == [("F", 0, 0), ("B", 0, 0), ("F", 0, 1), ("B", 0, 1), ("F", 0, 2), ("B", 0, 2)]
    assert device_order(1, 3, 1, 0, extra_warmup=1)[:3] == [("F", 0, 0), ("F", 0, 1), ("B", 0, 0)]
    # interleaved (Megatron-Core needs virtual stages for it under PP), 16 micro-batches
    f, b = [[0.5, 0.5]] * 2, [[1.0, 1.0]] * 2
    plain = simulate_pipeline(2, 16, 2, f, b, 0.0)
    same = simulate_pipeline(2, 16, 2, f, b, 0.0, combined_s=[[[1.5, 1.5]] * 2] * 2)
    fast = simulate_pipeline(2, 16, 2, f, b, 0.0, combined_s=[[[1.0, 1.0]] * 2] * 2)
    assert same.makespan_s == plain.makespan_s == 49.5
    assert fast.makespan_s == 35.0
    assert len(fast.ops) == len(plain.ops) == 2 * 2 * 2 * 16


def test_the_overlap_hides_the_all_to_all_of_an_moe_job() -> None:
    # fails on the code before this round: framework.moe_a2a_overlap was an unknown field
    off = predict(job({})).iteration_s
    on = predict(job({"moe_a2a_overlap": True})).iteration_s
    assert on < off * 0.95


@pytest.mark.parametrize("kwargs, framework, why", [
    ({}, {"moe_a2a_overlap": "yes"}, "framework.moe_a2a_overlap"),
    ({"schedule": "1f1b"}, {"moe_a2a_overlap": True}, "virtual stages"),
    ({"recompute": "full"}, {"moe_a2a_overlap": True}, "full recomputation"),
    ({"experts": False}, {"moe_a2a_overlap": True}, "model.experts"),
])
def test_bad_input_is_refused_naming_the_field(kwargs: dict, framework: dict, why: str) -> None:
    with pytest.raises(SimInputError) as e:
        job(framework, **kwargs)
    assert "framework.moe_a2a_overlap" in str(e.value) and why in str(e.value)



def test_an_all_to_all_across_servers_sends_server_local_chunks_over_nvlink() -> None:
    """NCCL's P2P transport carries a peer's chunk inside a server (NVLink), so a NIC sends
    only its n−1−L remote chunks; before this round every chunk crossed the fabric."""
    import numpy as np

    from sim.predict.comm import CommModel, groups
    from sim.predict.predict import job_fabric
    from sim.workloads import Job, collective_phases

    j = job_from_dict({"model": MOE, "parallel": {"dp": 16, "ep": 16, "zero": 1},
                       "training": {"global_batch": 16, "precision": "fp8"}, "gpu": {"preset": "H100-SXM"},
                       "framework": {"name": "megatron-bridge", "moe_dispatcher": "alltoall"},
                       "fabric": {"spec_file": "topo/specs/pod64k.yaml", "link_gbps": 400}}, "j.yaml")
    jf = job_fabric(j)
    comm = CommModel(j, jf.sf, jf.placed, fabric_times={})
    g = groups(j, "ep")[0]
    assert len({r // 8 for r in g}) == 2
    size = 64e6
    t = comm.collective("ep", "alltoall", size)
    sub = [jf.placed.ranks[r] for r in g]
    every = collective_phases(jf.sf, Job(list(dict.fromkeys(r.server for r in sub)), sub, 1), "alltoall",
                              int(size), "ring", j.network.order, 1)
    before = comm._simulate(every)                          # every chunk on the fabric, n−1 rounds
    remote, nvl = comm._alltoall_local(every, g, 16, size)
    rails = jf.sf.rails
    assert all(np.all(ph.src_nic // rails != ph.dst_nic // rails) for ph in remote)
    assert all(r.repeat == e.repeat * 8 / 15 for r, e in zip(remote, every))
    assert nvl == pytest.approx(comm.nvlink.alpha_s + 7 * size / 16 / comm.nvlink.bytes_per_s)
    assert t.seconds < before * 0.75 and "NVLink" in t.note



def test_megatron_bridge_qwen3_rows_run_their_recipes_moe_settings() -> None:
    """Configuration only (no measurement): the Qwen3 H100 FP8 presets of the release each
    row names (Megatron-Bridge v0.2.0 for 25.11, v0.4.1 for 26.04.01)."""
    ds = load_dataset()
    fw = {r.id: run_job(r)["framework"] for r in ds.runs if r.source == "mbridge" and "qwen3" in r.id}
    for rid in ("mbridge2511-qwen3-30b-a3b-16", "mbridge2511-qwen3-235b-a22b-256", "mbridge260401-qwen3-235b-a22b-256"):
        assert fw[rid]["moe_dispatcher"] == "alltoall" and fw[rid]["moe_a2a_overlap"] is True, rid
    for rid in ("mbridge2511-qwen3-235b-a22b-256", "mbridge260401-qwen3-235b-a22b-256"):
        assert fw[rid]["tp_comm_overlap"] == 0.0, rid
    assert fw["mbridge260401-qwen3-30b-a3b-16"]["moe_dispatcher"] == "deepep"
    assert "moe_a2a_overlap" not in fw["mbridge260401-qwen3-30b-a3b-16"]
