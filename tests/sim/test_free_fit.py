"""Issue 31, round four: ``python -m sim validate --fit --free`` (one efficiency share per
framework profile with enough fit-split runs) and blocking pipeline send/receive
(``framework.overlap_p2p_comm: false``, the NeMo 23.x launcher's configs)."""
from __future__ import annotations

import pytest

from sim.predict.calibration import Calibration, load, use
from sim.predict.framework import resolve_framework
from sim.predict.gpus import PRESETS
from sim.predict.job import job_from_dict
from sim.predict.kernels import Kernel, KernelParams, kernel_time_s
from sim.predict.predict import predict
from sim.topology import SimInputError
from sim.validation.dataset import load_dataset
from sim.validation.fit import (FREE_BOUNDS, FREE_MIN_RUNS, PARAMETERS, calibration_to_theta, fit, free_parameters,
                                free_profiles, theta_to_calibration)
from sim.validation.jobs import PROFILE, run_job
from sim.validation.split import fit_runs, heldout_runs

JOB = {"model": {"layers": 8, "hidden": 1024, "heads": 16, "seq_length": 1024, "vocab": 32000},
       "parallel": {"tp": 1, "pp": 4, "dp": 2, "schedule": "interleaved", "virtual_stages": 2},
       "training": {"global_batch": 32}, "gpu": {"preset": "H100-SXM"},
       "fabric": {"spec_file": "topo/specs/default.yaml"}}


def _job(**framework) -> object:
    return job_from_dict({**JOB, "framework": {"name": "megatron-core", **framework}}, "j.yaml")


def test_free_profiles_are_those_with_enough_fit_runs_and_never_held_out_ones():
    ds = load_dataset()
    runs = fit_runs(ds)
    free = free_profiles(runs)
    counts = {p: sum(PROFILE[r.framework_name] == p for r in runs) for p in set(PROFILE.values())}
    assert free == sorted(p for p, n in counts.items() if n >= FREE_MIN_RUNS)
    assert "llama3-meta" not in free and "megatron-deepspeed" not in free      # 1 fit run each: kept at 1.0
    assert len(free_parameters(free)) == len(PARAMETERS) + len(free)
    with pytest.raises(SimInputError, match="held-out run"):
        fit(ds, runs=heldout_runs(ds)[:1], free=True)


def test_free_theta_round_trips_and_is_bounded():
    free = ["composer-fsdp", "nemo"]
    x = [p[1] for p in free_parameters(free)]
    x[-1] = 0.9
    c = theta_to_calibration(x, free=free)
    assert c.framework_efficiency == {"composer-fsdp": 1.0, "nemo": 0.9}
    assert calibration_to_theta(c, free)[-1] == pytest.approx(0.9)
    assert all(p[2:] == FREE_BOUNDS for p in free_parameters(free)[len(PARAMETERS):])
    assert theta_to_calibration([p[1] for p in PARAMETERS]).framework_efficiency == {}


def test_framework_efficiency_scales_compute_kernels_only():
    gpu = PRESETS["H100-SXM"]
    gemm = Kernel("fc1", "gemm", flops=2 * 8192 ** 3, dims=(8192, 8192, 8192))
    mem = Kernel("norm", "memory", bytes=1e9)
    p = KernelParams(launch_s=0.0)
    assert kernel_time_s(gemm, gpu, "bf16", p, 0.5) == pytest.approx(2 * kernel_time_s(gemm, gpu, "bf16", p))
    assert kernel_time_s(mem, gpu, "bf16", p, 0.5) == kernel_time_s(mem, gpu, "bf16", p)
    with use(Calibration()):
        fast = predict(_job()).iteration_s
    with use(Calibration(framework_efficiency={"megatron-core": 0.8})):
        assert predict(_job()).iteration_s > fast * 1.05
    with use(Calibration(framework_efficiency={"nemo": 0.5})):          # another stack's share: no effect
        assert predict(_job()).iteration_s == pytest.approx(fast)


def test_a_bad_framework_efficiency_is_refused(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("framework_efficiency: {nemo: 2.0}\n")
    with pytest.raises(SimInputError, match="framework_efficiency"):
        load(f)
    f.write_text("framework_efficiency: {nemo: 0.9}\n")
    assert load(f).framework_efficiency_for("nemo") == 0.9
    assert load(f).framework_efficiency_for("torchtitan") == 1.0


def test_blocking_p2p_holds_every_interleaved_pass_for_its_transfer():
    over = predict(_job())
    block = predict(_job(overlap_p2p_comm=False))
    assert block.iteration_s > over.iteration_s
    j = _job()
    passes = 2 * j.microbatches * j.chunks                       # forwards and backwards of one stage
    p2p = over.comm["pp.sendrecv"].seconds
    # at most every pass of the busiest stage longer by one transfer, plus the fill/drain chain
    assert block.iteration_s - over.iteration_s <= (passes + 2 * j.parallel.pp * j.chunks) * p2p * 1.05 + 1e-9
    assert resolve_framework({"name": "nemo"}, "j.yaml").overlap_p2p_comm is True


def test_nemo_23_rows_block_on_p2p_as_their_launcher_config_says():
    # NeMo-Megatron-Launcher conf/training/gpt3/175b.yaml (9dbd2dad^, 2023-10):
    # overlap_p2p_comm: False, batch_p2p_comm: True, transformer_engine: False
    ds = load_dataset()
    for r in ds.runs:
        fw = run_job(r)["framework"]
        if r.framework_name == "nemo" and r.framework_version.startswith("23."):
            assert fw["overlap_p2p_comm"] is False and fw["attention"] == "unfused"
        else:
            assert "overlap_p2p_comm" not in fw
