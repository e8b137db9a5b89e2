"""``python -m sim calibrate-run RUNS.yaml``: fit the kernel model's efficiency factors
(:class:`sim.predict.kernels.KernelParams`) to the iteration times a monitoring system
recorded for whole training runs (issue 18, item 2), and report the error before, after,
and on held-out runs, like ``sim calibrate`` (collectives) and ``sim calibrate-ops``
(kernels) do.

The RUNS file (paths relative to its folder)::

    kernels: {}                      # the factors to start from (default: the defaults of
                                     # sim.predict.kernels; e.g. what calibrate-ops wrote)
    fit: [compute, memory, nvlink]   # which factors to fit (default: all three)
    runs:
      - name: llama-tp8              # default: the job's name
        job: jobs/llama.yaml         # REQUIRED: a job file as `sim predict` takes, or an inline job
        heldout: false               # true: never fitted on, reported apart
        # REQUIRED, exactly one of (sim.predict.monitoring):
        iterations_s: [1.21, 1.19, 1.22]
        prometheus: {file: run.prom, metric: train_iteration_seconds, labels: {job: llama}}
        query_range: {file: run.json, labels: {rank: "0"}}

A run's measured time is the median of its values. Every run is predicted with the same
factors (one GPU type per file: the factors are the GPU's); a job file's own ``kernels``
section is replaced by the runs file's.

**What is fitted, and why these.** A whole iteration measures a sum over thousands of
kernels, so it can only tell apart factors whose shares differ from job to job:

* ``compute`` — one scale on ``gemm``, ``attention_fwd`` and ``attention_bwd`` together:
  the tensor-core kernels are most of a training iteration, and in every pass the
  GEMMs and the attention move together, so an iteration cannot separate them
  (``calibrate-ops`` can, from kernels; their ratio and ``gemm_half_dim`` are kept);
* ``memory`` — the HBM efficiency of the element-wise kernels (norms, activations,
  dropout, residual adds, the loss, the optimizer): 10-40 % of an iteration, and its
  share against the GEMMs' falls as the hidden size grows (bytes ∝ s·h, FLOPs ∝ s·h²),
  so runs of different shapes separate it from ``compute``;
* ``nvlink`` — the communication knob of the predictor's ``kernels`` section: the
  tensor-parallel collectives inside a server sit on the critical path of every pass
  (nothing hides them in the model), through NVLink at ``nvlink`` × its bandwidth (and
  TCCL's NVLink/RoCE split under ``tccl``). The fabric's collectives (DP, pipeline,
  TP over servers) are ``sim.model``'s, calibrated on measured collectives by ``sim
  calibrate``, and their overlap with the backward is a switch of the job, not a factor.

Not fitted: ``launch_s`` and the α latencies (microseconds, invisible in an iteration),
``gemm_half_dim`` (a shape, seen only kernel by kernel). A factor no fitted run depends on
(``nvlink`` when no TP group is inside a server) keeps its starting value, reported.

The fit minimises the mean absolute relative error of the predicted iteration times over
the runs not held out (:func:`sim.predict.fitting.minimise_mape`, in log space, each
efficiency within (0.01, 1]); each run's fabric and fabric collectives are simulated once
(:class:`sim.predict.predict.JobFabric`), so a prediction under new factors costs
milliseconds for a small job.

Example (runs generated from known factors, recovered)::

    >>> from sim.predict.job import job_from_dict
    >>> def job(tp, hidden):
    ...     return job_from_dict({"model": {"layers": 2, "hidden": hidden, "heads": 8, "seq_length": 512,
    ...                                     "vocab": 1000}, "parallel": {"tp": tp, "pp": 2, "dp": 4 // tp},
    ...                           "training": {"global_batch": 32}, "gpu": {"preset": "H800"},
    ...                           "fabric": {"spec_file": "topo/specs/default.yaml"}}, "j.yaml")
    >>> jobs = [job(1, 512), job(2, 512), job(2, 2048), job(1, 2048)]
    >>> truth = with_factors(KernelParams(), compute=0.8, memory=0.6, nvlink=0.5)
    >>> runs = [MeasuredRun(f"r{i}", j, predict_time_s(j, truth), 1, i == 3) for i, j in enumerate(jobs)]
    >>> rep = calibrate_runs(RunSet(runs, KernelParams(), FACTORS, "runs.yaml"))
    >>> {k: round(v, 3) for k, v in rep.factors.items()}, rep.error_after_pct < 0.01
    ({'compute': 0.8, 'memory': 0.6, 'nvlink': 0.5}, True)
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import yaml

from sim.model import error_pct
from sim.predict.fields import parse_section
from sim.predict.fitting import minimise_mape
from sim.predict.job import TrainingJob, job_from_dict, load_job
from sim.predict.kernels import KernelParams
from sim.predict.monitoring import measured_values, median_s
from sim.predict.predict import JobFabric, job_fabric, predict
from sim.scenario import read_yaml
from sim.topology import SimInputError

FACTORS = ("compute", "memory", "nvlink")
COMPUTE_FIELDS = ("compute_scale",)
MIN_EFFICIENCY = 0.01
TOP_LEVEL = ("fit", "kernels", "runs")
RUN_FIELDS = ("heldout", "iterations_s", "job", "name", "prometheus", "query_range")


def with_factors(base: KernelParams, compute: float = 1.0, memory: Optional[float] = None,
                 nvlink: Optional[float] = None) -> KernelParams:
    """``base`` with every compute rate × ``compute`` (``compute_scale``; the factors of
    the simple model too, when given) and ``memory``/``nvlink`` set.

    >>> p = with_factors(KernelParams(), compute=0.5, memory=0.9)
    >>> p.compute_scale, p.gemm, p.memory, p.nvlink
    (0.5, None, 0.9, 0.78)
    """
    p = replace(base)
    p.compute_scale = base.compute_scale * compute
    p.memory = base.memory if memory is None else memory
    p.nvlink = base.nvlink if nvlink is None else nvlink
    return p


@dataclass(slots=True)
class MeasuredRun:
    """One run: its job, the median of its measured iteration times (s), how many values."""

    name: str
    job: TrainingJob
    measured_s: float
    values: int
    heldout: bool = False


@dataclass(slots=True)
class RunSet:
    """A parsed RUNS file: the runs, the starting factors, which factors to fit."""

    runs: list[MeasuredRun]
    base: KernelParams
    fit: tuple[str, ...]
    source: str
    replaced_kernels: list[str] = field(default_factory=list)


@dataclass(slots=True)
class RunRow:
    """One run's line of the report: measured, predicted before and after (s)."""

    name: str
    heldout: bool
    values: int
    measured_s: float
    before_s: float
    after_s: float


@dataclass(slots=True)
class RunCalibration:
    """Fitted factors and errors (mean absolute %, as ``sim calibrate``)."""

    params: KernelParams
    factors: dict[str, float]
    kept: dict[str, str]
    rows: list[RunRow]
    error_before_pct: float
    error_after_pct: float
    error_heldout_pct: Optional[float]
    from_defaults: bool = True
    evaluations: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """Human-readable lines (the style of ``OpCalibration.summary``)."""
        fitted = [r for r in self.rows if not r.heldout]
        held = [r for r in self.rows if r.heldout]
        start = "defaults" if self.from_defaults else "the runs file's kernels"
        lines = [f"runs: {len(fitted)} fitted on, {len(held)} held out "
                 f"(each the median of its measured iteration times)",
                 f"error before ({start}, every run): {self.error_before_pct:.1f} %",
                 f"error after (the runs fitted on):   {self.error_after_pct:.1f} %"]
        if self.error_heldout_pct is not None:
            lines.append(f"error on the held-out runs:         {self.error_heldout_pct:.1f} %")
        lines += [f"note: {n}" for n in self.notes]
        width = max(3, *(len(r.name) for r in self.rows))
        lines.append(f"  {'run':<{width}}  set      values  measured    before     after")
        for r in self.rows:
            lines.append(f"  {r.name:<{width}}  {'held out' if r.heldout else 'fit':<8} {r.values:>6}  "
                         f"{r.measured_s:>8.4g} s {r.before_s:>8.4g} s {r.after_s:>8.4g} s")
        p = self.params
        note = {f: f"  # compute x{self.factors['compute']:.4g}" for f in COMPUTE_FIELDS if "compute" in self.factors}
        for name in ("memory", "nvlink"):
            if name in self.factors:
                note[name] = "  # fitted"
        for name, why in self.kept.items():
            for f in (COMPUTE_FIELDS if name == "compute" else (name,)):
                note[f] = f"  # kept: {why}"
        lines.append("kernels:   # paste into a job file")
        for f in ("compute_scale", "gemm", "gemm_half_dim", "attention_fwd", "attention_bwd", "memory", "launch_s",
                  "nvlink"):
            if getattr(p, f) is not None:
                lines.append(f"  {f}: {getattr(p, f):.4g}{note.get(f, '')}")
        return "\n".join(lines)


def predict_time_s(job: TrainingJob, params: KernelParams, fabric: Optional[JobFabric] = None) -> float:
    """The predicted iteration time of ``job`` under the factors ``params``."""
    return predict(replace(job, kernels=params), fabric).iteration_s


def _bounds(base: KernelParams, active: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x0, lo, hi) in log space for the active factors."""
    x0, lo, hi = [], [], []
    for f in active:
        if f == "compute":
            x0.append(0.0)
            lo.append(np.log(MIN_EFFICIENCY))
            hi.append(np.log(2.0 / base.compute_scale))
        else:
            x0.append(np.log(getattr(base, f)))
            lo.append(np.log(MIN_EFFICIENCY))
            hi.append(0.0)
    return np.array(x0), np.array(lo), np.array(hi)


def _params(base: KernelParams, active: Sequence[str], x: np.ndarray) -> KernelParams:
    v = dict(zip(active, np.exp(x)))
    return with_factors(base, float(v.get("compute", 1.0)), v.get("memory"), v.get("nvlink"))


def calibrate_runs(rs: RunSet) -> RunCalibration:
    """Fit the factors of ``rs.fit`` to the runs not held out (module docstring)."""
    fit_runs = [r for r in rs.runs if not r.heldout]
    if not fit_runs:
        raise SimInputError(f"{rs.source}: runs: no run left to fit on (every run is held out)")
    fabrics = [job_fabric(replace(r.job, kernels=rs.base)) for r in rs.runs]
    fit_idx = [i for i, r in enumerate(rs.runs) if not r.heldout]
    measured = np.array([rs.runs[i].measured_s for i in fit_idx])

    def times(params: KernelParams, idx: Sequence[int]) -> np.ndarray:
        return np.array([predict_time_s(rs.runs[i].job, params, fabrics[i]) for i in idx])

    before = times(rs.base, range(len(rs.runs)))
    kept = {f: "not in fit:" for f in FACTORS if f not in rs.fit}
    active = []
    for f in (f for f in FACTORS if f in rs.fit):        # a factor no fitted run depends on is kept
        x0, lo, hi = _bounds(rs.base, [f])
        probe = times(_params(rs.base, [f], x0 + (-0.1 if x0[0] - 0.1 >= lo[0] else 0.1)), fit_idx)
        if np.all(np.abs(probe / before[fit_idx] - 1) < 1e-9):
            kept[f] = "no fitted run depends on it"
        else:
            active.append(f)
    x0, lo, hi = _bounds(rs.base, active)
    res = minimise_mape(lambda x: times(_params(rs.base, active, x), fit_idx), measured, x0, lo, hi)
    params = _params(rs.base, active, res.x)
    after = times(params, range(len(rs.runs)))
    factors = {f: float(np.exp(v)) for f, v in zip(active, res.x)}
    rows = [RunRow(r.name, r.heldout, r.values, r.measured_s, float(b), float(a))
            for r, b, a in zip(rs.runs, before, after)]
    held = [i for i, r in enumerate(rs.runs) if r.heldout]
    all_measured = [r.measured_s for r in rs.runs]
    notes = []
    if 0 < len(fit_runs) < len(active):
        notes.append(f"{len(fit_runs)} runs fitted on for {len(active)} factors: the fit is not determined; "
                     f"add runs of other shapes or restrict fit:")
    for i, f in enumerate(active):
        if np.isclose(res.x[i], lo[i]) or np.isclose(res.x[i], hi[i]):
            notes.append(f"{f} at its bound ({'efficiency 1' if np.isclose(res.x[i], hi[i]) else 'efficiency 0.01'}): "
                         f"the model cannot explain these runs with this factor alone")
    if rs.replaced_kernels:
        notes.append(f"the kernels sections of the jobs of {', '.join(rs.replaced_kernels)} were replaced "
                     f"by the runs file's")
    return RunCalibration(params, factors, kept, rows, error_pct(before, all_measured),
                          error_pct(after[fit_idx], measured),
                          error_pct(after[held], [all_measured[i] for i in held]) if held else None,
                          rs.base == KernelParams(), res.evaluations, notes)


def _job(spec: Any, folder: Path, where: str, base: KernelParams) -> tuple[TrainingJob, bool]:
    if isinstance(spec, dict):
        j = job_from_dict(spec, where)
    elif isinstance(spec, str) and spec:
        path = Path(spec) if Path(spec).is_absolute() else folder / spec
        if not path.is_file():
            raise SimInputError(f"{where}: no such job file: {spec} (paths are relative to the runs file's folder)")
        j = load_job(path)
    else:
        raise SimInputError(f"{where}: missing (a job file, relative to the runs file, or an inline job)")
    replaced = j.kernels != KernelParams() and j.kernels != base
    return replace(j, kernels=base), replaced


def runs_from_dict(data: Any, source: str, folder: Path) -> RunSet:
    """Validate a parsed RUNS file (module docstring); ``SimInputError`` names the field."""
    if not isinstance(data, dict):
        raise SimInputError(f"{source}: a runs file is a mapping ({', '.join(TOP_LEVEL)})")
    for key in data:
        if key not in TOP_LEVEL:
            raise SimInputError(f"{source}: {key}: unknown field (known: {', '.join(TOP_LEVEL)})")
    base = parse_section(data.get("kernels"), "kernels", KernelParams, source)
    base.validate(source)
    fit = data.get("fit", list(FACTORS))
    if not isinstance(fit, list) or not fit or any(f not in FACTORS for f in fit):
        raise SimInputError(f"{source}: fit: a non-empty list of {', '.join(FACTORS)}, got {fit!r}")
    runs_data = data.get("runs")
    if not isinstance(runs_data, list) or not runs_data:
        raise SimInputError(f"{source}: runs: missing (a list of runs, each a job and its measured iteration times)")
    runs, replaced = [], []
    for i, run in enumerate(runs_data):
        where = f"{source}: runs[{i}]"
        if not isinstance(run, dict):
            raise SimInputError(f"{where}: a mapping ({', '.join(RUN_FIELDS)}), got {run!r}")
        for key in run:
            if key not in RUN_FIELDS:
                raise SimInputError(f"{where}.{key}: unknown field (known: {', '.join(RUN_FIELDS)})")
        held = run.get("heldout", False)
        if not isinstance(held, bool):
            raise SimInputError(f"{where}.heldout: true or false, got {held!r}")
        job, swapped = _job(run.get("job"), folder, f"{where}.job", base)
        if runs and job.gpu.name != runs[0].job.gpu.name:
            raise SimInputError(f"{where}.job: gpu {job.gpu.name} differs from runs[0]'s {runs[0].job.gpu.name}: "
                                f"one GPU type per runs file (the factors are the GPU's)")
        values = measured_values(run, folder, where)
        name = str(run.get("name") or job.name)
        runs.append(MeasuredRun(name, job, median_s(values), len(values), held))
        if swapped:
            replaced.append(name)
    return RunSet(runs, base, tuple(fit), source, replaced)


def load_runs(path: Path) -> RunSet:
    """Read and validate a RUNS file."""
    return runs_from_dict(read_yaml(path), str(path), path.parent)


def calibrate_run_file(path: Path, write: Optional[Path] = None) -> RunCalibration:
    """Calibrate from a RUNS file; write the fitted ``kernels:`` section (YAML, usable in
    a job file, the format ``calibrate-ops`` writes) to ``write`` when given."""
    rs = load_runs(path)
    rep = calibrate_runs(rs)
    if write is not None:
        section = {f.name: float(f"{getattr(rep.params, f.name):.6g}") for f in fields(rep.params)
                   if isinstance(getattr(rep.params, f.name), (int, float))}
        gpu = rs.runs[0].job.gpu.name
        write.write_text(f"# fitted by python -m sim calibrate-run {path.name} ({gpu}, "
                         f"{sum(not r.heldout for r in rs.runs)} runs)\n"
                         + yaml.safe_dump({"kernels": section}, sort_keys=False))
    return rep


__all__ = ["FACTORS", "MeasuredRun", "RunCalibration", "RunRow", "RunSet", "calibrate_run_file",
           "calibrate_runs", "load_runs", "predict_time_s", "runs_from_dict", "with_factors"]
