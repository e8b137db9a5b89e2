"""Issue 31, twentieth round (i31-nccl-s49): an NCCL collective that runs beside compute
holds one SM per channel, so the compute it overlaps runs on the others
(:mod:`sim.predict.nccl_sms`; ``framework.nccl_sm_contention``, ``nccl_version``,
``nccl_ctas``): NCCL's channel counts from its code, the lost time per overlap, and where the
predictor charges it (FSDP's prefetched collectives, the backward's TP collectives under
their GEMMs, the overlapped gradient reduction), each on its own breakdown line."""
from __future__ import annotations

import pytest

from sim.predict import graph
from sim.predict.breakdown import by_operator, by_stream
from sim.predict.comm import CommModel
from sim.predict.job import job_from_dict
from sim.predict.nccl_sms import contention_s, message_ctas, net_ring_ctas
from sim.predict.predict import job_fabric, predict
from sim.predict.stages import CONTENTION, pass_ops
from sim.topology import SimInputError
from sim.validation.dataset import load_dataset
from sim.validation.jobs import run_job


def test_ring_channels_across_servers_follow_nccl_code_per_release() -> None:
    # A100 DGX, 8 HDR NICs: 8 search channels, doubled once: the maintainer's 16 (nccl#689)
    assert net_ring_ctas("A100", 8, 25e9, (2, 18)) == 16
    # one GPU a server on a single NIC: 2 on A100 ("a single NIC ... 2 SMs")
    assert net_ring_ctas("A100", 1, 25e9, (2, 21)) == 2
    # H100 with 8 NDR NICs: 32 at 2.18-2.20, 16 from 2.21 (connect.cc's nChannels < 16)
    assert net_ring_ctas("H100", 8, 50e9, (2, 18)) == 32
    assert net_ring_ctas("H100", 8, 50e9, (2, 21)) == 16
    assert net_ring_ctas("H100", 1, 50e9, (2, 27)) == 4
    assert net_ring_ctas("H100", 8, 50e9, (2, 17)) == 16        # before the Hopper rule


def test_small_messages_drop_channels_and_the_loss_is_the_sm_share_of_the_overlap() -> None:
    assert message_ctas(32, 1 << 30) == 32
    assert message_ctas(16, 4 * 32 * 1024) == 4
    # a collective shorter than the compute: it costs its length × C/S
    assert contention_s(10e-3, 2e-3, 33, 132) == pytest.approx(2e-3 * 33 / 132)
    # a collective that outlasts the compute: the compute runs wholly on S − C SMs
    assert contention_s(1e-3, 5e-3, 33, 132) == pytest.approx(1e-3 * 132 / 99 - 1e-3)
    assert contention_s(1e-3, 5e-3, 0, 132) == 0.0


def fsdp_job(**framework):
    return job_from_dict({"model": {"layers": 4, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
                          "parallel": {"dp": 16, "zero": 3}, "training": {"global_batch": 32, "micro_batch": 2,
                                                                          "precision": "bf16"},
                          "gpu": {"preset": "H100-SXM"},
                          "framework": {"name": "composer-fsdp", **framework}}, "j.yaml")


def test_fsdp_prefetch_slows_the_units_it_overlaps_and_shows_its_own_line() -> None:
    on, off = predict(fsdp_job()), predict(fsdp_job(nccl_sm_contention=False))
    lost = by_operator(on).get(CONTENTION, 0.0)
    assert lost > 0
    assert CONTENTION not in by_operator(off)
    assert on.iteration_s > off.iteration_s
    # at most what the compute would take on the 100 SMs NCCL 2.18's 32 channels leave of 132
    busy = sum(o.seconds for sc in off.stages for ops in sc.fwd_ops + sc.bwd_ops for o in ops if o.stream == "compute")
    assert lost <= off.job.microbatches * busy * 32 / 100 + 1e-12
    assert sum(by_stream(on).values()) == pytest.approx(on.iteration_s)


def test_the_channels_are_the_stacks_nccl_and_a_job_can_pin_them() -> None:
    lost = {v: by_operator(predict(fsdp_job(nccl_version=v)))[CONTENTION] for v in ("2.18", "2.21")}
    assert lost["2.18"] > lost["2.21"] * 1.5                  # 32 against 16 channels on H100
    pinned = by_operator(predict(fsdp_job(nccl_ctas=8)))[CONTENTION]
    assert pinned < lost["2.21"]
    assert CONTENTION not in by_operator(predict(fsdp_job(nccl_ctas=0)))


def test_the_backward_tp_collective_under_its_gemm_slows_it_and_hides_that_much_more() -> None:
    model = {"layers": 2, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000}
    j = job_from_dict({"model": model, "parallel": {"tp": 8, "sequence_parallel": True},
                       "training": {"global_batch": 4, "micro_batch": 1, "precision": "bf16"},
                       "gpu": {"preset": "A100-SXM-80GB"}, "framework": {"name": "megatron-lm"}}, "j.yaml")
    jf = job_fabric(j)
    comm = CommModel(j, jf.sf, jf.placed, fabric_times=jf.fabric_times)
    ops = pass_ops(j, graph.layer_backward(j, False), comm)
    names = [o.name for o in ops]
    i = names.index("tp.allgather.attn.regather")
    rg, lost, dgrad = ops[i], ops[i + 1], next(o for o in ops if o.name == "qkv.dgrad")
    assert lost.name == CONTENTION and lost.kind == "contention"
    assert lost.seconds == pytest.approx(contention_s(dgrad.seconds, rg.full_s, 24, 108))   # NVLink ring: 24
    assert rg.seconds == pytest.approx(max(0.0, rg.full_s - dgrad.seconds - lost.seconds))


def test_an_overlapped_gradient_reduction_charges_the_backward_it_runs_under() -> None:
    base = {"model": {"layers": 8, "hidden": 4096, "heads": 32, "seq_length": 2048, "vocab": 32000},
            "parallel": {"dp": 32, "zero": 1}, "training": {"global_batch": 64, "micro_batch": 1, "precision": "bf16"},
            "gpu": {"preset": "H100-SXM"}, "framework": {"name": "megatron-core", "bucket_MiB": 40}}
    on = predict(job_from_dict(base, "j.yaml"))
    off = predict(job_from_dict({**base, "framework": {**base["framework"], "nccl_sm_contention": False}}, "j.yaml"))
    t = on.tails[on.critical_stage]
    assert t.nccl_sms_s > 0 and off.tails[off.critical_stage].nccl_sms_s == 0
    assert by_operator(on)[CONTENTION] >= t.nccl_sms_s
    assert sum(by_stream(on).values()) == pytest.approx(on.iteration_s)


def test_bad_nccl_fields_are_refused_naming_them() -> None:
    with pytest.raises(SimInputError, match="framework.nccl_version"):
        fsdp_job(nccl_version="latest")
    with pytest.raises(SimInputError, match="framework.nccl_ctas"):
        fsdp_job(nccl_ctas=64)


def test_a_foundry_fit_row_runs_nccl_2_18s_channels() -> None:
    """LLM Foundry's H100 70B on 32 GPUs (FSDP over 4 servers): composer-fsdp's NCCL 2.18."""
    ds = load_dataset()
    r = next(x for x in ds.runs if x.id == "foundry-h100-sxm-bf16-70b-s2048-g32")
    j = job_from_dict(run_job(r), r.id)
    assert j.framework.nccl_version == "2.18" and j.framework.nccl_sm_contention
    assert by_operator(predict(j))[CONTENTION] > 1.0          # seconds of its ~63 s iteration
