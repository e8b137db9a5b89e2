"""Issue 31, fifteenth round (i31-tpo-s47): tensor-parallel communication overlap as
Transformer Engine's userbuffers run it, per GEMM (``framework.tp_overlap_config``:
ring-exchange, bulk and pipelined overlap, :mod:`sim.predict.tp_overlap`), and the
Megatron-Bridge Llama rows' userbuffers configs read from the recipes they ran."""
from __future__ import annotations

import copy

import pytest
import yaml

from sim.predict import graph
from sim.predict.comm import CommModel
from sim.predict.job import job_from_dict
from sim.predict.kernels import kernel_time_s
from sim.predict.predict import job_fabric, predict
from sim.predict.stages import _chunk, pass_ops
from sim.predict.tp_overlap import CONFIGS, bulk_s, pipeline_s, ring_exchange_s
from sim.topology import SimInputError
from sim.validation.dataset import DATA, load_dataset
from sim.validation.jobs import run_job

UB_405B = "userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192"
LLAMA = {"layers": 2, "hidden": 8192, "heads": 64, "kv_heads": 8, "seq_length": 8192, "vocab": 128256,
         "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "ffn_hidden": 28672}


def job(framework: dict, tp: int = 4):
    return job_from_dict({"model": LLAMA, "parallel": {"tp": tp, "dp": 8 // tp, "sequence_parallel": True, "zero": 1},
                          "training": {"global_batch": 16, "micro_batch": 1, "precision": "fp8"},
                          "gpu": {"preset": "H100-SXM"}, "framework": {"name": "megatron-bridge", **framework}}, "j.yaml")


def layer_ops(j):
    jf = job_fabric(j)
    comm = CommModel(j, jf.sf, jf.placed, fabric_times=jf.fabric_times)
    fwd = {o.name: o for o in pass_ops(j, graph.layer_forward(j, False), comm)}
    bwd = {o.name: o for o in pass_ops(j, graph.layer_backward(j, False), comm)}
    return fwd, bwd


def test_the_methods_time_a_gemm_with_its_collective_as_te_runs_them() -> None:
    # ring exchange: tp chunks, tp-1 p2p steps each under one chunk
    assert ring_exchange_s(gemm_chunk_s=1.0, step_s=0.5, tp=4) == pytest.approx(4.0)
    assert ring_exchange_s(gemm_chunk_s=0.5, step_s=1.0, tp=4) == pytest.approx(3.5)
    # bulk: the collective on n SMs; shorter than the slowed GEMM: the GEMM plus its SM share
    assert bulk_s(gemm_s=1.0, comm_s=0.5, num_sm=24, sms=132) == pytest.approx(1.0 + 0.5 * 24 / 132)
    assert bulk_s(gemm_s=1.0, comm_s=2.0, num_sm=24, sms=132) == pytest.approx(2.0)
    # pipeline: n chunks, the last chunk's reduce-scatter exposed
    assert pipeline_s(1.0, 0.5, 4) == pytest.approx(4.5)
    assert pipeline_s(0.5, 1.0, 4) == pytest.approx(4.5)


def test_megatron_bridge_configs_are_the_published_ones() -> None:
    c = CONFIGS["userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"]
    assert [c.slot(s).method for s in ("qkv_fprop", "fc1_fprop", "proj_dgrad", "fc2_dgrad", "proj_fprop",
                                       "fc2_fprop")] == ["ring_exchange"] * 6
    assert [c.slot(s).num_sm for s in ("qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad")] == [4, 24, 2, 4]
    assert c.proj_fprop.set_sm_margin and c.proj_fprop.num_sm == 1
    b = CONFIGS["userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192"]
    assert (b.proj_fprop.method, b.proj_fprop.num_sm, b.proj_fprop.num_splits) == ("pipeline", 24, 4)
    assert [CONFIGS[UB_405B].slot(s).num_sm for s in ("qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad")] == [2, 24, 2, 2]


def test_a_ring_exchange_all_gather_costs_its_chunked_gemm_and_steps() -> None:
    j = job({"tp_overlap_config": "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"})
    fwd, _ = layer_ops(j)
    ks = {k.name: k for k in graph.layer_forward(j, False)}
    ag, qkv = fwd["tp.allgather.attn"], fwd["qkv"]
    chunk = kernel_time_s(_chunk(ks["qkv"], 4), j.gpu, "fp8", j.kernels, j.framework.efficiency)
    want = ring_exchange_s(chunk, ag.full_s / 3, 4) - qkv.seconds
    assert ag.seconds == pytest.approx(max(0.0, want))
    assert chunk * 4 > qkv.seconds          # the chunks run at their own, smaller-M rate


def test_bulk_overlap_hides_the_backwards_regather_the_share_left_exposed() -> None:
    # the share alone: since the sixteenth round the profile's tp_bwd_overlap hides the re-gather too
    share = job({"tp_bwd_overlap": False})
    ub = job({"tp_overlap_config": "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"})
    _, b0 = layer_ops(share)
    _, b1 = layer_ops(ub)
    for name in ("tp.allgather.attn.regather", "tp.allgather.mlp.regather"):
        assert b0[name].seconds == pytest.approx(b0[name].full_s)         # the share's neighbour search stops at the RS
        assert b1[name].seconds < 0.1 * b1[name].full_s                   # TE runs it under dgrad on 2-4 SMs


def test_a_mapping_lays_its_fields_over_tes_default_of_each_slot() -> None:
    f = job({"tp_overlap_config": {"proj_fprop": {"num_sm": 24}, "qkv_dgrad": {"method": "bulk", "num_sm": 4,
                                                                                 "set_sm_margin": False}}}).framework
    ub = f.tp_overlap_config
    assert (ub.proj_fprop.method, ub.proj_fprop.num_sm, ub.proj_fprop.set_sm_margin) == ("pipeline", 24, True)
    assert (ub.qkv_dgrad.num_sm, ub.qkv_dgrad.set_sm_margin) == (4, False)
    assert ub.fc1_fprop == CONFIGS["te_default"].fc1_fprop
    assert job({}).framework.tp_overlap_config is None


def test_without_a_config_the_share_stays() -> None:
    fwd, _ = layer_ops(job({}))
    rs = fwd["tp.reducescatter.attn"]
    assert rs.seconds == pytest.approx(max(0.0, rs.full_s - 0.85 * fwd["out_proj"].seconds))


def test_the_config_changes_the_prediction() -> None:
    a = predict(job({})).iteration_s
    b = predict(job({"tp_overlap_config": "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"})).iteration_s
    assert a != pytest.approx(b, rel=1e-4)


@pytest.mark.parametrize("cfg, where", [
    ("userbuffers_fp8_b300", "framework.tp_overlap_config: unknown userbuffers config"),
    ({"qkv_fprop": {"method": "ring_exchange", "num_sms": 2}}, "framework.tp_overlap_config.qkv_fprop.num_sms: unknown field"),
    ({"qkv_fprop": {"method": "ring"}}, "framework.tp_overlap_config.qkv_fprop.method: unknown value 'ring'"),
    ({"qkv_fprop": "ring_exchange"}, "framework.tp_overlap_config.qkv_fprop: must be a mapping"),
    ({"qkv_fprop": {"method": "bulk", "num_sm": 0}}, "framework.tp_overlap_config.qkv_fprop.num_sm: must be an integer >= 1"),
    ({"qkv_fprop": {"method": "bulk", "set_sm_margin": 1}}, "framework.tp_overlap_config.qkv_fprop.set_sm_margin: must be true or false"),
    ({"qkv_fprops": {"method": "bulk"}}, "framework.tp_overlap_config.qkv_fprops: unknown GEMM slot"),
    (3, "framework.tp_overlap_config: a config name or a mapping"),
])
def test_a_bad_config_is_refused_naming_the_field(cfg, where) -> None:
    with pytest.raises(SimInputError, match=where.replace(".", r"\.")):
        job({"tp_overlap_config": cfg})


def test_megatron_bridge_llama_rows_name_their_recipes_userbuffers_config() -> None:
    # configuration fields only: Megatron-Bridge v0.2.0 / v0.3.0 / v0.4.1 llama3_70b_h100_config and
    # llama31_405b_h100_config (FP8) pass these configs
    ds = load_dataset()
    rows = {r.id: r for r in ds.runs if r.source == "mbridge" and r.model.name in ("llama3-70b", "llama3.1-405b")}
    assert len(rows) == 6
    for rid, r in rows.items():
        want = UB_405B if r.model.name == "llama3.1-405b" else "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"
        assert r.tp_overlap_config == want
        assert run_job(r)["framework"]["tp_overlap_config"] == want


def test_a_row_naming_an_unknown_config_is_refused(tmp_path) -> None:
    doc = yaml.safe_load(DATA.read_text())
    data = copy.deepcopy({**doc, "runs": doc["runs"][:1]})
    data["runs"][0] = {k: v for k, v in data["runs"][0].items()}
    data["runs"][0]["tp_overlap_config"] = "ub_cfg_h100"
    p = tmp_path / "runs.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(SimInputError, match=r"runs\[0\] \(.*\)\.tp_overlap_config: unknown userbuffers config"):
        load_dataset(p)

