"""Issue 31, eighth round: the power exponent is held at the cube-root law, not fitted
(:data:`sim.validation.fit.HELD`): every power-limited run of the validation set is a
torchtitan run, so a fitted exponent and the torchtitan efficiency share scale the same
rates of the same runs and only their product is fixed by the data."""
from __future__ import annotations

import pytest

from sim.predict.calibration import Calibration, use
from sim.predict.gpus import PRESETS
from sim.predict.kernels import Kernel, KernelParams, kernel_time_s
from sim.validation.dataset import load_dataset
from sim.validation.fit import HELD, PARAMETERS, calibration_to_theta, free_parameters, theta_to_calibration
from sim.validation.jobs import PROFILE
from sim.validation.split import fit_runs


def test_the_power_exponent_is_held_at_the_cube_root_law_and_not_fitted() -> None:
    assert HELD == {"power_exponent": pytest.approx(1.0 / 3.0)}
    names = [p[0] for p in free_parameters(["torchtitan"])]
    assert "power_exponent" not in names and "efficiency.torchtitan" in names
    c = theta_to_calibration([p[1] for p in PARAMETERS])
    assert c.power_exponent == pytest.approx(1.0 / 3.0)
    # a calibration whose exponent differs still round-trips to the same fitted vector
    a = calibration_to_theta(Calibration(power_exponent=0.55))
    b = calibration_to_theta(Calibration(power_exponent=1.0 / 3.0))
    assert list(a) == list(b)
    with use(c):
        assert PRESETS["H100-96GB-500W"].clock_factor == pytest.approx((500.0 / 700.0) ** (1.0 / 3.0))
        assert PRESETS["H100-SXM"].clock_factor == 1.0


def test_why_it_is_held_power_limit_and_share_scale_the_same_rates_of_torchtitan_runs_only() -> None:
    gpu = PRESETS["H100-96GB-500W"]
    gemm = Kernel("fc1", "gemm", flops=2 * 8192 ** 3, dims=(8192, 8192, 8192))
    p = KernelParams(launch_s=0.0)
    with use(Calibration(power_exponent=0.547)):
        t1 = kernel_time_s(gemm, gpu, "bf16", p, 1.092)
    share = 1.092 * (500.0 / 700.0) ** (0.547 - 1.0 / 3.0)
    with use(Calibration(power_exponent=1.0 / 3.0)):
        t2 = kernel_time_s(gemm, gpu, "bf16", p, share)
    assert t1 == pytest.approx(t2)          # only the product is seen by a power-limited run
    limited = {PROFILE[r.framework_name] for r in load_dataset().runs
               if PRESETS[r.gpu].power_limit_W is not None and PRESETS[r.gpu].power_limit_W < PRESETS[r.gpu].tdp_W}
    assert limited == {"torchtitan"}
    full_power = [r for r in fit_runs(load_dataset()) if PROFILE[r.framework_name] == "torchtitan"
                  and PRESETS[r.gpu].power_limit_W is None]
    assert len(full_power) == 1             # the one run that told the share from the exponent
