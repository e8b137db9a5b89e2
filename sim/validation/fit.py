"""Fit the predictor's calibration (:mod:`sim.predict.calibration`) on the fit split of the
validation set, never on the held-out runs, and write it to ``sim/predict/calibration.yaml``.

``python -m sim validate --fit [--write]`` predicts every fit-split run once to simulate its
fabric collectives (cached: the fitted figures change no collective), then minimises the
mean absolute relative error of the iteration times over the fit runs with
:func:`sim.predict.fitting.minimise_mape` in log space within the bounds of
:data:`PARAMETERS`, and prints the errors of both splits before and after. Eleven figures
for 97 runs; each is physical (what it means: :mod:`sim.predict.calibration`).
``--free`` adds one efficiency share per framework profile that has at least
:data:`FREE_MIN_RUNS` fit-split runs (:func:`free_profiles`: six profiles, 17 figures in all),
bounded to :data:`FREE_BOUNDS`; profiles with fewer runs keep 1.0.

:data:`HELD` figures are not fitted. The power exponent (a power-limited GPU's sustained clock
``(limit/TDP)^e``, :attr:`sim.predict.gpus.GpuSpec.clock_factor`) is held at the cube-root
law, e = 1/3: CMOS dynamic power is ``α·C·V²·f`` and, in the DVFS range, the supply voltage
scales with the clock, so power goes as f³ (T. Mudge, "Power: a first-class architectural
design constraint", IEEE Computer 34(4), 2001). Fitted, it could not be told apart from the
``torchtitan`` efficiency share: every power-limited run of the set is a torchtitan run
(Grand Teton H100s at 500 W) and both scale the same GEMM and attention rates, so the fit
set the share by the one torchtitan fit run at full power (H200) and the exponent by the rest
(0.547 and 1.092 after the seventh round's refit; their product is all the data fix).

Example::

    >>> c = theta_to_calibration([0.8, 0.7, 0.9, 0.8, 0.5, 0.001, 0.02, 0.002, 0.03, 1.5, 0.01])
    >>> c.sustained, c.attention["triton"], round(c.power_exponent, 4)
    ({'A100': 0.8, 'H100': 0.7}, 0.45, 0.3333)
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from sim.predict import calibration
from sim.predict.calibration import TRITON_SHARE, Calibration, use
from sim.predict.fitting import minimise_mape
from sim.predict.job import TrainingJob, job_from_dict
from sim.predict.predict import JobFabric, job_fabric, predict
from sim.topology import SimInputError
from sim.validation.dataset import DATA, Dataset, Run, measured_iteration_s
from sim.validation.jobs import PROFILE, run_job
from sim.validation.split import fit_runs

#: (name, start, lower bound, upper bound)
PARAMETERS: tuple[tuple[str, float, float, float], ...] = (
    ("sustained.A100", 0.85, 0.5, 1.0),
    ("sustained.H100", 0.80, 0.5, 1.0),
    ("attention.fa2", 0.72, 0.3, 1.2),
    ("attention.cudnn", 0.72, 0.3, 1.2),
    ("attention.triton_share", TRITON_SHARE[1], TRITON_SHARE[0], TRITON_SHARE[1]),
    ("megatron.microbatch_s", 1e-3, 1e-5, 0.02),
    ("megatron.iteration_s", 0.02, 1e-4, 0.5),
    ("pytorch.microbatch_s", 2e-3, 1e-5, 0.05),
    ("pytorch.iteration_s", 0.05, 1e-4, 0.5),
    ("eager_traffic", 2.0, 1.0, 4.0),
    ("straggler_sigma", 0.01, 1e-4, 0.1),
)


#: figures held at a published value, not fitted (module docstring: the cube-root law)
HELD: dict[str, float] = {"power_exponent": 1.0 / 3.0}

#: ``--free``: a framework profile gets its own efficiency share only with this many fit-split
#: runs (fewer would let one figure absorb one run's error: fitting the table, not the stack)
FREE_MIN_RUNS = 5
#: ``--free``: bounds of a framework's efficiency share (a stack within ±25 % of the fitted die)
FREE_BOUNDS = (0.75, 1.25)


def free_parameters(free: Sequence[str]) -> tuple[tuple[str, float, float, float], ...]:
    """:data:`PARAMETERS` and, per profile in ``free``, ``efficiency.<profile>``."""
    return PARAMETERS + tuple((f"efficiency.{f}", 1.0, *FREE_BOUNDS) for f in free)


def free_profiles(runs: Sequence[Run]) -> list[str]:
    """The framework profiles with at least :data:`FREE_MIN_RUNS` of ``runs`` (``--free``).

    >>> from sim.validation.dataset import load_dataset
    >>> from sim.validation.split import fit_runs
    >>> free_profiles(fit_runs(load_dataset()))
    ['composer-fsdp', 'megatron-bridge', 'megatron-core', 'megatron-lm', 'nemo', 'torchtitan']
    """
    count: dict[str, int] = {}
    for r in runs:
        name = PROFILE[r.framework_name]
        count[name] = count.get(name, 0) + 1
    return sorted(k for k, n in count.items() if n >= FREE_MIN_RUNS)


def theta_to_calibration(x: Sequence[float], fitted_on: str = "", free: Sequence[str] = ()) -> Calibration:
    """The calibration of a parameter vector (order of :func:`free_parameters`)."""
    v = dict(zip((p[0] for p in free_parameters(free)), (float(a) for a in x)))
    return Calibration(sustained={"A100": v["sustained.A100"], "H100": v["sustained.H100"]},
                       attention={"fa2": v["attention.fa2"], "fa3": v["attention.fa2"],
                                  "cudnn": v["attention.cudnn"],
                                  "triton": v["attention.fa2"] * v["attention.triton_share"]}, power_exponent=HELD["power_exponent"],
                       overheads={"megatron": {"microbatch_s": v["megatron.microbatch_s"],
                                               "iteration_s": v["megatron.iteration_s"]},
                                  "pytorch": {"microbatch_s": v["pytorch.microbatch_s"],
                                              "iteration_s": v["pytorch.iteration_s"]}},
                       eager_traffic=v["eager_traffic"], straggler_sigma=v["straggler_sigma"],
                       framework_efficiency={f: v[f"efficiency.{f}"] for f in free}, fitted_on=fitted_on)


def calibration_to_theta(c: Calibration, free: Sequence[str] = ()) -> np.ndarray:
    """The parameter vector of a calibration (defaults where it has none)."""
    out = []
    for name, start, _, _ in free_parameters(free):
        head, _, tail = name.partition(".")
        if head == "efficiency":
            out.append(c.framework_efficiency_for(tail))
        elif head == "sustained":
            out.append(c.sustained.get(tail, start))
        elif name == "attention.triton_share":
            out.append(c.attention_for("triton") / c.attention_for("fa2"))
        elif head == "attention":
            out.append(c.attention.get(tail, start))
        elif head in ("megatron", "pytorch"):
            out.append(c.overheads.get(head, {}).get(tail, start))
        else:
            out.append(getattr(c, head))
    return np.array(out, float)


@dataclass(slots=True)
class Prepared:
    """A run ready for many predictions: its job, its fabric with the collectives cached."""

    run: Run
    job: TrainingJob
    fabric: JobFabric
    measured_s: float


def prepare(runs: Sequence[Run], ds: Dataset) -> list[Prepared]:
    """Build every run's job and fabric once (refused runs are left out and said)."""
    out = []
    for r in runs:
        try:
            j = job_from_dict(run_job(r), f"{ds.path}:{r.id}")
            jf = job_fabric(j)
            predict(j, jf)                                     # simulates and caches the collectives
        except SimInputError as exc:
            print(f"fit: {r.id}: left out ({exc})")
            continue
        out.append(Prepared(r, j, jf, measured_iteration_s(r, ds)))
    return out


def predicted(prep: Sequence[Prepared], c: Calibration) -> np.ndarray:
    """Predicted iteration times under ``c`` (a refused run: 10× its measurement)."""
    out = []
    with use(c):
        for p in prep:
            try:
                out.append(predict(p.job, p.fabric).iteration_s)
            except SimInputError:
                out.append(10.0 * p.measured_s)
    return np.array(out)


@dataclass(slots=True)
class FitReport:
    """The fitted calibration, the error on the fit runs before and after, the time spent."""

    calibration: Calibration
    before_pct: float
    after_pct: float
    evaluations: int
    wall_s: float


def fit(ds: Dataset, start: Calibration | None = None, evaluations: int = 200,
        runs: Sequence[Run] | None = None, free: bool = False) -> FitReport:
    """Fit :data:`PARAMETERS` on the fit split (module docstring); ``runs``: a subset of it;
    ``free``: also one efficiency share per framework profile with enough of those runs
    (:func:`free_profiles`), the others keep 1.0."""
    t0 = time.perf_counter()
    allowed = {r.id for r in fit_runs(ds)}
    chosen = list(runs) if runs is not None else fit_runs(ds)
    if any(r.id not in allowed for r in chosen):
        raise SimInputError("fit: a held-out run was given to fit on (never allowed)")
    prep = prepare(chosen, ds)
    meas = np.array([p.measured_s for p in prep])
    profiles = free_profiles([p.run for p in prep]) if free else []
    params = free_parameters(profiles)
    x0 = np.log(calibration_to_theta(start or calibration.current(), profiles))
    lo = np.log([p[2] for p in params])
    hi = np.log([p[3] for p in params])
    x0 = np.clip(x0, lo, hi)

    def model(x: np.ndarray) -> np.ndarray:
        return predicted(prep, theta_to_calibration(np.exp(x), free=profiles))

    before = float(np.mean(np.abs(model(x0) / meas - 1)) * 100)
    res = minimise_mape(model, meas, x0, lo, hi, polish_evaluations=evaluations, lm_iterations=6)
    name = Path(ds.path).name if Path(ds.path).resolve() != DATA.resolve() else "sim/validation/runs.yaml"
    how = f" (--free: {len(params)} figures, {len(profiles)} of them per framework)" if free else ""
    cal = theta_to_calibration(np.exp(res.x), f"{len(prep)} fit-split runs of {name}{how}", profiles)
    return FitReport(cal, before, res.error_pct, res.evaluations, time.perf_counter() - t0)


__all__ = ["FREE_BOUNDS", "FREE_MIN_RUNS", "HELD", "PARAMETERS", "FitReport", "free_parameters", "free_profiles", "Prepared", "calibration_to_theta", "fit", "predicted", "prepare",
           "theta_to_calibration"]
