"""Predict every run of the validation set and compare with what was measured.

``python -m sim validate [--split heldout|fit|all] [--source S] [--out FILE.csv]`` prints one
line per run (measured and predicted iteration time, the error, whether the run is held out)
and the summary of each split: the share of runs within 10 % and 20 %, the median and mean
absolute error, the same per source and for the FP8 runs. A run the predictor refuses (it
does not fit in memory, a shape it cannot express) is counted as a miss and its reason shown.

Example::

    >>> from sim.validation.dataset import load_dataset
    >>> ds = load_dataset()
    >>> res = validate_runs([ds.run("korthikanti22-175b-64")], ds)
    >>> res[0].measured_s > 0 and res[0].predicted_s > 0
    True
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

from sim.predict.job import job_from_dict
from sim.predict.predict import predict
from sim.topology import SimInputError
from sim.validation.dataset import Dataset, Run, measured_iteration_s
from sim.validation.jobs import run_job
from sim.validation.split import heldout_ids


@dataclass(slots=True)
class RunResult:
    """One run: measured and predicted iteration time (``predicted_s`` 0 when refused)."""

    run: Run
    measured_s: float
    predicted_s: float
    heldout: bool
    refused: str = ""

    @property
    def error(self) -> float:
        """Signed relative error of the predicted iteration time (+: predicted slower);
        a refused run counts as an infinite error."""
        if self.refused:
            return float("inf")
        return self.predicted_s / self.measured_s - 1.0


@dataclass(slots=True)
class Summary:
    """Figures of a set of runs."""

    n: int
    within10_pct: float
    within20_pct: float
    median_abs_err_pct: float
    mean_abs_err_pct: float
    refused: int

    def line(self, label: str) -> str:
        """One line of text."""
        return (f"{label:<28} {self.n:>4} runs  within 10 %: {self.within10_pct:5.1f} %  within 20 %: "
                f"{self.within20_pct:5.1f} %  median |err| {self.median_abs_err_pct:5.1f} %  mean |err| "
                f"{self.mean_abs_err_pct:5.1f} %" + (f"  ({self.refused} refused)" if self.refused else ""))


def summarize(results: Sequence[RunResult]) -> Summary:
    """Share within 10/20 %, median and mean |error| (refused runs: misses, 100 % in the mean)."""
    if not results:
        return Summary(0, 0.0, 0.0, 0.0, 0.0, 0)
    errs = [min(abs(r.error), 1.0) * 100 for r in results]
    n = len(errs)
    return Summary(n, 100.0 * sum(e <= 10 for e in errs) / n, 100.0 * sum(e <= 20 for e in errs) / n,
                   statistics.median(errs), statistics.fmean(errs), sum(bool(r.refused) for r in results))


JobBuilder = Callable[[Run], dict]


def validate_runs(runs: Iterable[Run], ds: Dataset, builder: JobBuilder = run_job) -> list[RunResult]:
    """Predict each run (module docstring)."""
    held = heldout_ids(ds)
    out = []
    for r in runs:
        meas = measured_iteration_s(r, ds)
        try:
            pred = predict(job_from_dict(builder(r), f"{ds.path}:{r.id}")).iteration_s
            out.append(RunResult(r, meas, pred, r.id in held))
        except SimInputError as exc:
            out.append(RunResult(r, meas, 0.0, r.id in held, str(exc).split(": ", 1)[-1]))
    return out


def report_lines(results: Sequence[RunResult], per_run: bool = True) -> list[str]:
    """Per-run lines and the summaries (module docstring)."""
    lines = []
    if per_run:
        lines.append(f"{'run':<46} {'split':<7} {'measured':>10} {'predicted':>10} {'error':>8}")
        for r in results:
            err = "refused" if r.refused else f"{100 * r.error:+7.1f}%"
            lines.append(f"{r.run.id:<46} {'held' if r.heldout else 'fit':<7} {r.measured_s:10.3f} "
                         f"{r.predicted_s:10.3f} {err:>8}" + (f"  {r.refused}" if r.refused else ""))
        lines.append("")
    for label, pick in (("held-out", lambda r: r.heldout), ("fit", lambda r: not r.heldout),
                        ("all", lambda r: True), ("fp8 (all)", lambda r: r.run.precision == "fp8")):
        sel = [r for r in results if pick(r)]
        if sel:
            lines.append(summarize(sel).line(label))
    for src in sorted({r.run.source for r in results}):
        lines.append(summarize([r for r in results if r.run.source == src]).line(f"  source {src}"))
    return lines


def select(ds: Dataset, split: str = "all", source: Optional[str] = None) -> list[Run]:
    """The runs of a split (``heldout`` | ``fit`` | ``all``) and, optionally, one source."""
    held = heldout_ids(ds)
    runs = [r for r in ds.runs if split == "all" or (r.id in held) == (split == "heldout")]
    return [r for r in runs if source is None or r.source == source]


__all__ = ["RunResult", "Summary", "report_lines", "select", "summarize", "validate_runs"]
