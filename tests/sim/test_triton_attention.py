"""The Triton flash-attention kernel (framework ``attention: triton``) and the LLM Foundry
rows that ran it (issue 31): its rate is FA2's × a share the FA2 paper bounds (1/2.5 .. 1/1.3),
the validation rows name the kernel their launch script passed, a bad value is refused."""
from __future__ import annotations

import pytest

from sim.predict import calibration
from sim.predict.calibration import TRITON_SHARE, Calibration, use
from sim.predict.framework import resolve_framework
from sim.predict.gpus import PRESETS
from sim.predict.kernels import Kernel, KernelParams, compute_rate
from sim.topology import SimInputError
from sim.validation.dataset import load_dataset
from sim.validation.fit import PARAMETERS, calibration_to_theta, theta_to_calibration
from sim.validation.jobs import run_job


def _attention(impl: str, phase: str = "fwd") -> Kernel:
    return Kernel("attention", "attention", flops=1e12, seq=2048, head_dim=128, causal=True, impl=impl, phase=phase)


@pytest.mark.parametrize("phase", ["fwd", "bwd"])
def test_triton_runs_on_fa2_tables_at_the_fitted_share(phase):
    gpu = PRESETS["A100-80GB"]
    with use(Calibration(attention={"fa2": 0.8, "triton": 0.4})):
        fa2 = compute_rate(_attention("fa2", phase), gpu, "bf16", KernelParams())
        tri = compute_rate(_attention("triton", phase), gpu, "bf16", KernelParams())
    assert tri.tflops == pytest.approx(fa2.tflops * 0.5)
    assert "fa2 for triton" in tri.provenance


def test_unfitted_triton_is_fa2_over_1_3():
    c = Calibration(attention={"fa2": 0.7})
    assert c.attention_for("triton") == pytest.approx(0.7 / 1.3)
    assert TRITON_SHARE == pytest.approx((0.4, 1 / 1.3))


def test_the_shipped_calibration_keeps_triton_within_the_fa2_papers_range():
    c = calibration.load()
    share = c.attention_for("triton") / c.attention_for("fa2")
    assert TRITON_SHARE[0] - 1e-3 <= share <= TRITON_SHARE[1] + 1e-3


def test_the_fit_bounds_the_share_and_round_trips_it():
    names = [p[0] for p in PARAMETERS]
    lo, hi = next((p[2], p[3]) for p in PARAMETERS if p[0] == "attention.triton_share")
    assert (lo, hi) == TRITON_SHARE
    x = [p[1] for p in PARAMETERS]
    x[names.index("attention.triton_share")] = 0.5
    c = theta_to_calibration(x)
    assert c.attention["triton"] == pytest.approx(0.5 * c.attention["fa2"])
    assert calibration_to_theta(c)[names.index("attention.triton_share")] == pytest.approx(0.5)


def test_a_job_may_name_triton_and_an_unknown_kernel_is_refused():
    assert resolve_framework({"name": "composer-fsdp", "attention": "triton"}, "j.yaml").attention == "triton"
    with pytest.raises(SimInputError, match="framework.attention: unknown value 'xformers'"):
        resolve_framework({"name": "composer-fsdp", "attention": "xformers"}, "j.yaml")


def test_foundry_rows_name_the_kernel_their_launch_script_passed():
    # submit_benchmarks.py (#543, #838) defaults --attn_impl to triton and sweep.sh passes none;
    # the large-scale sweep.py passes flash for 1b/3b/7b/70b and triton for 13b/30b
    ds = load_dataset()
    rows = [r for r in ds.runs if r.source == "foundry"]
    assert rows
    for r in rows:
        large = r.id.endswith("-ls")
        want = "triton" if not large or r.model.name in ("mpt-13b", "mpt-30b") else "fa2"
        assert r.attention == want, r.id
        assert run_job(r)["framework"]["attention"] == want
    assert all(not r.attention for r in ds.runs if r.source != "foundry")


def test_a_bad_attention_value_is_refused_naming_the_row(tmp_path):
    text = load_dataset().path
    src = open(text).read().replace('"attention": "triton"', '"attention": "xformers"', 1)
    p = tmp_path / "runs.yaml"
    p.write_text(src)
    with pytest.raises(SimInputError, match=r"runs\[\d+\] \(foundry-[^)]*\)\.attention: one of unfused, fa2, fa3, "
                                            r"cudnn, triton, got 'xformers'"):
        load_dataset(p)
