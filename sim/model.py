"""The prediction model and its calibration: simulated transfer time plus per-host and
per-hop overheads, fitted by least squares to measured collective times.

For one collective, each phase (see :mod:`sim.workloads`) contributes ``repeat`` times
its step time; a step lasts as long as its slowest job flow. The predicted time is::

    time = Σ_phases repeat × ( T_sim / bandwidth_scale + per_host_s + hops × per_hop_s )

``T_sim`` is the simulated (max-min, flow-level) completion of the step's slowest flow,
``hops`` the switches that flow crosses (1 under a leaf, 3 over a spine, 0 on NVLink).
The defaults reproduce TCCL's planner α (4 µs under a leaf, 5 µs over a spine). The time
is linear in ``(1 / bandwidth_scale, per_host_s, per_hop_s)``, so :func:`fit` is a
least-squares solve (non-negative: a negative coefficient is dropped and the rest
re-fitted) of the *relative* residuals (each row divided by its measured time), the error
:func:`error_pct` reports: measurements of 0.2 s and 2 s weigh the same, and one long
collective the model cannot explain does not buy its fit with every short one. ``bandwidth_scale`` absorbs what the flow model does not see (on the
testbed: p4sim's queue rate and the NIC emulator's per-QP goodput, far below the
nominal link speed).

Example::

    >>> f = [Features(1e-3, 2.0, 6.0), Features(2e-3, 2.0, 2.0), Features(4e-3, 4.0, 12.0)]
    >>> truth = ModelParams(per_host_s=1e-4, per_hop_s=2e-5, bandwidth_scale=0.5)
    >>> got = fit(f, [predict(x, truth) for x in f])
    >>> round(got.per_host_s, 6), round(got.per_hop_s, 6), round(got.bandwidth_scale, 3)
    (0.0001, 2e-05, 0.5)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np


@dataclass(slots=True)
class ModelParams:
    """Overheads and bandwidth scale; ``link_Bps`` (optional) overrides every fabric
    link's capacity in bytes/s (the testbed's effective rate)."""

    per_host_s: float = 3.5e-6
    per_hop_s: float = 0.5e-6
    bandwidth_scale: float = 1.0
    link_Bps: Optional[float] = None


@dataclass(frozen=True, slots=True)
class Features:
    """What one collective's simulation gives the model: ``Σ repeat × T_sim`` (s),
    ``Σ repeat`` (steps) and ``Σ repeat × hops``."""

    transfer_s: float
    steps: float
    hop_steps: float


def features_of(phases: Sequence[tuple[float, float, int]]) -> Features:
    """From ``(repeat, slowest flow's simulated time, its hops)`` per phase."""
    return Features(sum(r * t for r, t, _ in phases), sum(r for r, _, _ in phases),
                    sum(r * h for r, _, h in phases))


def predict(f: Features, p: ModelParams) -> float:
    """Predicted collective time in seconds."""
    return f.transfer_s / p.bandwidth_scale + f.steps * p.per_host_s + f.hop_steps * p.per_hop_s


def fit(features: Sequence[Features], measured_s: Sequence[float],
        base: Optional[ModelParams] = None) -> ModelParams:
    """Least-squares fit of ``1/bandwidth_scale``, ``per_host_s`` and ``per_hop_s``
    (non-negative) on relative residuals; ``ValueError`` without measurements or with a
    non-positive measured time."""
    if not features or len(features) != len(measured_s):
        raise ValueError("calibration needs at least one measurement with its simulation")
    y = np.asarray(measured_s, np.float64)
    if (y <= 0).any():
        raise ValueError("measured times must be positive")
    A = np.array([[f.transfer_s, f.steps, f.hop_steps] for f in features], np.float64) / y[:, None]
    y = np.ones_like(y)
    cols = [0, 1, 2]
    x = np.zeros(3)
    while cols:
        sol, *_ = np.linalg.lstsq(A[:, cols], y, rcond=None)
        if (sol >= 0).all():
            x[:] = 0
            x[cols] = sol
            break
        cols = [c for c, v in zip(cols, sol) if v >= 0] if (sol > 0).any() else []
    b = base or ModelParams()
    inv_scale = x[0] if x[0] > 0 else 1.0 / b.bandwidth_scale
    return ModelParams(per_host_s=float(x[1]), per_hop_s=float(x[2]),
                       bandwidth_scale=float(1.0 / inv_scale), link_Bps=b.link_Bps)


def error_pct(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Mean absolute percentage error: ``error_pct([1.1], [1.0])`` ≈ 10."""
    p, m = np.asarray(predicted, np.float64), np.asarray(measured, np.float64)
    return float(np.mean(np.abs(p - m) / m) * 100) if len(m) else 0.0


__all__ = ["Features", "ModelParams", "error_pct", "features_of", "fit", "predict"]
