"""``python -m sim calibrate-ops MEASUREMENTS --gpu NAME``: fit the kernel model's
efficiency factors (:class:`sim.predict.kernels.KernelParams`) to measured operator times
(issue 18, item 2), from a PyTorch-profiler/Kineto trace (:mod:`sim.predict.kineto`) or
a plain CSV, and report the error before, after, and on held-out kernels, like
``python -m sim calibrate`` does for collectives.

CSV (a header line; one measured kernel per line)::

    kind,name,M,N,K,flops,bytes,phase,measured_us,heldout
    gemm,fc1,4096,14336,4096,,,,1520.0,0      # M, N, K: FLOPs and bytes derived
    memory,norm,,,,,67108864,,40.1,0          # bytes moved through HBM
    attention,flash,,,,3.4e12,,fwd,9100,1     # FLOPs (the causal half), phase fwd|bwd

Fit, on the rows not held out (relative residuals, so small and large kernels weigh the
same): memory-bound kernels ``t = bytes / (HBM × memory) + launch_s`` (linear least
squares in ``1/memory`` and ``launch_s``, non-negative); GEMMs ``t = max(FLOPs · (m +
gemm_half_dim) / (peak · gemm · m), memory term) + launch_s`` (``gemm_half_dim`` on a
grid, ``1/gemm`` by least squares for each on the GEMMs that come out compute-bound,
the pair with the least error kept);
attention ``t = FLOPs / (peak · attention_fwd|bwd) + launch_s``. A kind without rows keeps
its default. Held out: the CSV's ``heldout`` column; every ``heldout_every``-th kernel of a
trace.

Example::

    >>> from sim.predict.gpus import PRESETS
    >>> from sim.predict.kineto import gemm_kernel, MeasuredKernel
    >>> truth = KernelParams(gemm=0.6, gemm_half_dim=32.0, memory=0.8, launch_s=3e-6)
    >>> g = PRESETS["H800"]
    >>> rows = [gemm_kernel("g", m, 4096, 4096, 1, 2.0, 0.0) for m in (64, 256, 1024, 4096, 8192)]
    >>> rows += [MeasuredKernel("m", "memory", 0.0, b, (0, 0, 0), "fwd", 0.0) for b in (1e6, 1e8, 1e9)]
    >>> rows = [with_time(r, model_time_s(r, g, "bf16", truth)) for r in rows]
    >>> rep = calibrate(rows, g, "bf16")
    >>> round(rep.params.gemm, 2), rep.params.gemm_half_dim, round(rep.params.memory, 2), rep.error_after_pct < 1
    (0.6, 32.0, 0.8, True)
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import yaml

from sim.model import error_pct
from sim.predict.gpus import GpuSpec
from sim.predict.kernels import Kernel, KernelParams, kernel_time_s
from sim.predict.kineto import MeasuredKernel, gemm_kernel, load_trace
from sim.topology import SimInputError

HALF_DIM_GRID = (0.0, 4.0, 8.0, 16.0, 24.0, 32.0, 48.0, 64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0)
CSV_COLUMNS = ("kind", "name", "M", "N", "K", "flops", "bytes", "phase", "measured_us", "heldout")


def with_time(k: MeasuredKernel, seconds: float) -> MeasuredKernel:
    """``k`` with another measured time."""
    return replace(k, measured_s=seconds)


def model_time_s(k: MeasuredKernel, gpu: GpuSpec, precision: str, p: KernelParams) -> float:
    """The kernel model's time of a measured kernel."""
    kern = Kernel(k.name, k.kind, k.flops, k.bytes, k.dims, k.phase, fp8=precision == "fp8")
    return kernel_time_s(kern, gpu, precision, p)


def _scale_fit(a: np.ndarray, t: np.ndarray, launch_s: float) -> float:
    """x minimising Σ((x·a + launch − t)/t)², at least a tiny positive number."""
    w = a / t
    x = float(np.dot(w, (t - launch_s) / t) / max(np.dot(w, w), 1e-300))
    return max(x, 1e-30)


@dataclass(slots=True)
class OpCalibration:
    """Fitted parameters and the errors (mean absolute %, as ``sim calibrate``)."""

    params: KernelParams
    fitted: int
    heldout: int
    error_before_pct: float
    error_after_pct: float
    error_heldout_pct: Optional[float]
    kept_default: list[str]
    skipped: int = 0

    def summary(self) -> str:
        """Human-readable lines."""
        p = self.params
        lines = [f"kernels: {self.fitted} fitted on, {self.heldout} held out"
                 + (f", {self.skipped} operators not understood (skipped)" if self.skipped else ""),
                 f"error before (defaults, every kernel): {self.error_before_pct:.1f} %",
                 f"error after (the kernels fitted on):   {self.error_after_pct:.1f} %"]
        if self.error_heldout_pct is not None:
            lines.append(f"error on the held-out kernels:         {self.error_heldout_pct:.1f} %")
        lines.append("kernels:   # paste into a job file")
        for f in ("gemm", "gemm_half_dim", "attention_fwd", "attention_bwd", "memory", "launch_s"):
            note = "  # default kept: no such kernels" if f in self.kept_default else ""
            v = getattr(p, f)
            lines.append(f"  {f}: {v:.4g}{note}" if v is not None else
                         f"  # {f}: not fitted (no such kernels): the GPU's kernel tables apply")
        return "\n".join(lines)


def calibrate(rows: Sequence[MeasuredKernel], gpu: GpuSpec, precision: str,
              base: Optional[KernelParams] = None, skipped: int = 0) -> OpCalibration:
    """Fit the efficiency factors to ``rows`` (module docstring)."""
    base = base or KernelParams()
    fit_rows = [r for r in rows if not r.heldout and r.measured_s > 0]
    if not fit_rows:
        raise SimInputError("calibrate-ops: no measured kernel to fit on (every row held out or unusable)")
    p = replace(base)
    kept: list[str] = []
    mem = [r for r in fit_rows if r.kind == "memory"]
    if mem:
        b = np.array([r.bytes for r in mem]) / gpu.hbm_Bps
        t = np.array([r.measured_s for r in mem])
        if len(mem) >= 2:
            A = np.stack([b / t, 1.0 / t], axis=1)
            sol, *_ = np.linalg.lstsq(A, np.ones(len(mem)), rcond=None)
            y, launch = (float(sol[0]), float(sol[1])) if sol[1] >= 0 else (_scale_fit(b, t, 0.0), 0.0)
            p.launch_s = launch
        else:
            y = _scale_fit(b, t, p.launch_s)
        p.memory = float(min(1.0, 1.0 / max(y, 1e-30)))
    else:
        kept += ["memory", "launch_s"]
    gemms = [r for r in fit_rows if r.kind == "gemm"]
    if gemms:
        peak = gpu.peak_flops("fp8" if precision == "fp8" else precision)
        t = np.array([r.measured_s for r in gemms])
        best: tuple[float, float, float] = (float("inf"), p.gemm, p.gemm_half_dim)
        mem_t = np.array([r.bytes for r in gemms]) / (gpu.hbm_Bps * p.memory)
        for h in HALF_DIM_GRID:
            a = np.array([r.flops * (min(r.dims) + h) / (peak * max(min(r.dims), 1)) for r in gemms])
            bound = np.ones(len(gemms), bool)          # fit on the compute-bound ones (the roofline's max)
            for _ in range(3):
                x = _scale_fit(a[bound], t[bound], p.launch_s)
                nxt = a * x >= mem_t
                if not nxt.any() or (nxt == bound).all():
                    break
                bound = nxt
            eff = min(1.0, 1.0 / x)
            trial = replace(p, gemm=eff, gemm_half_dim=h)
            err = error_pct([model_time_s(r, gpu, precision, trial) for r in gemms], t)
            if err < best[0] - 1e-9:
                best = (err, eff, h)
        p.gemm, p.gemm_half_dim = best[1], best[2]
    else:
        kept += ["gemm", "gemm_half_dim"]
    for phase, name in (("fwd", "attention_fwd"), ("bwd", "attention_bwd")):
        att = [r for r in fit_rows if r.kind == "attention" and r.phase == phase]
        if att:
            a = np.array([r.flops / gpu.peak_flops("bf16" if precision == "fp8" else precision) for r in att])
            setattr(p, name, min(1.0, 1.0 / _scale_fit(a, np.array([r.measured_s for r in att]), p.launch_s)))
        else:
            kept.append(name)
    held = [r for r in rows if r.heldout and r.measured_s > 0]

    def err(ps: KernelParams, rs: Sequence[MeasuredKernel]) -> float:
        return error_pct([model_time_s(r, gpu, precision, ps) for r in rs], [r.measured_s for r in rs])

    return OpCalibration(p, len(fit_rows), len(held), err(base, [r for r in rows if r.measured_s > 0]),
                         err(p, fit_rows), err(p, held) if held else None, kept, skipped)


def _num(row: dict, col: str, where: str, required: bool) -> float:
    v = (row.get(col) or "").strip()
    if not v:
        if required:
            raise SimInputError(f"{where}: {col}: missing")
        return 0.0
    try:
        x = float(v)
    except ValueError:
        raise SimInputError(f"{where}: {col}: not a number: {v!r}") from None
    if x < 0:
        raise SimInputError(f"{where}: {col}: must be >= 0, got {v}")
    return x


def load_csv(path: Path) -> list[MeasuredKernel]:
    """Read the CSV (module docstring); ``SimInputError`` names ``file:line: column``."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise SimInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    reader = csv.DictReader(line.split("#")[0] for line in text.splitlines())
    missing = [c for c in ("kind", "measured_us") if c not in (reader.fieldnames or [])]
    if missing:
        raise SimInputError(f"{path}:1: header: missing column(s) {', '.join(missing)} (columns: {', '.join(CSV_COLUMNS)})")
    out = []
    for i, row in enumerate(reader, start=2):
        where = f"{path}:{i}"
        kind = (row.get("kind") or "").strip()
        t = _num(row, "measured_us", where, True) / 1e6
        held = (row.get("heldout") or "").strip().lower() in ("1", "true", "yes")
        name = (row.get("name") or kind).strip()
        if kind == "gemm":
            m, n, k = (int(_num(row, c, where, True)) for c in ("M", "N", "K"))
            out.append(replace(gemm_kernel(name, m, n, k, 1, 2.0, t), heldout=held))
        elif kind == "memory":
            out.append(MeasuredKernel(name, "memory", 0.0, _num(row, "bytes", where, True), (0, 0, 0), "fwd", t, held))
        elif kind == "attention":
            phase = (row.get("phase") or "fwd").strip()
            if phase not in ("fwd", "bwd"):
                raise SimInputError(f"{where}: phase: fwd or bwd, got {phase!r}")
            out.append(MeasuredKernel(name, "attention", _num(row, "flops", where, True),
                                      _num(row, "bytes", where, False), (0, 0, 0), phase, t, held))
        else:
            raise SimInputError(f"{where}: kind: unknown kind {kind!r} (known: gemm, memory, attention)")
    return out


TABLE_HEADER = ("precision", "kind", "impl", "M", "N", "K", "groups", "seq", "head_dim", "causal", "phase", "tflops",
                "source")


def table_rows(path: Path, precision: str, impl: str = "fa2") -> list[list[str]]:
    """Rows of a kernel table (:mod:`sim.predict.kerneltable`) from a measurement CSV: each
    GEMM's TFLOP/s at its shape, each attention's (its ``seq``, ``head_dim``, ``causal``
    columns, as ``python -m sim.tools.time_kernels`` writes them) under ``impl``; rows
    without those columns, and memory-bound rows, are left out. Held-out rows are kept:
    a table is a measurement, not a fit."""
    rows = []
    for k, extra in zip(load_csv(path), _extra_columns(path)):
        if k.measured_s <= 0:
            continue
        tf = k.flops / k.measured_s / 1e12
        if k.kind == "gemm":
            rows.append([precision, "gemm", "", *map(str, k.dims), "1", "", "", "", "", f"{tf:.4g}", path.name])
        elif k.kind == "attention" and extra.get("seq") and extra.get("head_dim"):
            rows.append([precision if precision != "fp8" else "bf16", "attention", impl, "", "", "", "",
                         extra["seq"], extra["head_dim"], extra.get("causal") or "1", k.phase, f"{tf:.4g}", path.name])
    return rows


def _extra_columns(path: Path) -> list[dict[str, str]]:
    reader = csv.DictReader(line.split("#")[0] for line in path.read_text().splitlines())
    return [{c: (row.get(c) or "").strip() for c in ("seq", "head_dim", "causal")} for row in reader]


def write_table(path: Path, out: Path, gpu: GpuSpec, precision: str, impl: str = "fa2") -> int:
    """Write the kernel table of a measurement CSV (:func:`table_rows`); returns its rows."""
    rows = table_rows(path, precision, impl)
    if not rows:
        raise SimInputError(f"{path}: no GEMM or attention row with a shape to tabulate")
    with out.open("w", newline="") as f:
        f.write(f"# measured on {gpu.name} ({gpu.chip} die), {precision}: python -m sim calibrate-ops {path.name}"
                " --table\n")
        w = csv.writer(f)
        w.writerow(TABLE_HEADER)
        w.writerows(rows)
    return len(rows)


def calibrate_ops_file(path: Path, gpu: GpuSpec, precision: str, heldout_every: int = 5,
                       write: Optional[Path] = None) -> OpCalibration:
    """Calibrate from a CSV or a trace file (``.json``/``.json.gz``); write the fitted
    ``kernels:`` section (YAML) to ``write`` when given."""
    if path.suffix in (".json", ".gz"):
        rows, skipped = load_trace(path)
        if heldout_every > 1:
            rows = [replace(r, heldout=(i % heldout_every == heldout_every - 1)) for i, r in enumerate(rows)]
    else:
        rows, skipped = load_csv(path), 0
    rep = calibrate(rows, gpu, precision, skipped=skipped)
    if write is not None:
        keep = ("gemm", "gemm_half_dim", "attention_fwd", "attention_bwd", "memory", "launch_s")
        section = {f.name: float(f"{getattr(rep.params, f.name):.6g}") for f in fields(rep.params)
                   if f.name in keep and getattr(rep.params, f.name) is not None}
        write.write_text(f"# fitted by python -m sim calibrate-ops {path.name} ({gpu.name}, {precision})\n"
                         + yaml.safe_dump({"kernels": section}, sort_keys=False))
    return rep


__all__ = ["OpCalibration", "calibrate", "calibrate_ops_file", "load_csv", "model_time_s", "table_rows", "with_time",
           "write_table"]
