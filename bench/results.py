"""Benchmark figures, the benchmark registry record, and ``build/bench.json``.

A *figure* is one named number with a unit (``p4sim.pps.ipv4_lpm`` -> 31000 ``pps``).
``build/bench.json`` is ONE JSON object mapping figure name -> ``{"value", "unit"}``;
a run merges its figures into the file and keeps the ones it did not re-measure.

Example::

    >>> figs = {"demo.pps": Figure(1234.5, "pps")}
    >>> print(format_table(figs))            # doctest: +NORMALIZE_WHITESPACE
    figure    value  unit
    --------  ------ ----
    demo.pps  1234.5 pps
"""
from __future__ import annotations

import json
import os
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

DEFAULT_OUTPUT = Path("build") / "bench.json"
#: where ``python -m bench --target bmv2`` writes: BMv2's figures never mix with p4sim's
BMV2_OUTPUT = Path("build") / "bench-bmv2.json"


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured number: ``Figure(21500.0, "pps")``."""

    value: float
    unit: str

    def to_json(self) -> dict[str, object]:
        """``{"value": ..., "unit": ...}`` as stored in bench.json."""
        return {"value": self.value, "unit": self.unit}


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """How long and how often to measure: ``BenchConfig(duration_s=3.0, runs=3)``.

    ``duration_s`` is the length of one timed run, ``runs`` the number of timed runs whose
    median is reported, ``warmup_s`` the untimed time spent before them, ``target`` the
    switch (``p4sim``, or ``bmv2`` for the benchmarks whose ``targets`` list it).
    """

    duration_s: float = 3.0
    runs: int = 3
    warmup_s: float = 0.5
    #: the switch target of the live benchmarks that run on either (``Benchmark.targets``)
    target: str = "p4sim"


@dataclass(frozen=True, slots=True)
class Benchmark:
    """A registered benchmark: ``Benchmark("ipv4_lpm", "p4sim", fn)``.

    ``run(config)`` returns the figures it measured, by figure name; ``targets`` the
    switch targets it can measure (``config.target`` is one of them).
    """

    name: str
    group: str
    run: Callable[[BenchConfig], dict[str, Figure]]
    targets: tuple[str, ...] = ("p4sim",)


class BenchCheckError(AssertionError):
    """The pipeline under test produced a wrong result: the bench refuses to time it."""


def median(values: Sequence[float]) -> float:
    """Median of the runs: ``median([3.0, 1.0, 2.0]) == 2.0``."""
    if not values:
        raise ValueError("no runs to take the median of")
    return float(statistics.median(values))


def load_results(path: Path) -> dict[str, dict[str, object]]:
    """The figures already in ``path`` (an empty dict when missing or not a JSON object)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items()
            if isinstance(v, dict) and isinstance(v.get("value"), (int, float)) and "unit" in v}


def merge_results(path: Path, figures: Mapping[str, Figure]) -> dict[str, dict[str, object]]:
    """Write ``figures`` into ``path``, keeping the figures it did not re-measure.

    The file is replaced atomically; returns the merged object.

    Example::

        >>> merge_results(Path("/tmp/b.json"), {"x": Figure(1.0, "s")})["x"]  # doctest: +SKIP
        {'value': 1.0, 'unit': 's'}
    """
    path = Path(path)
    merged = load_results(path)
    for name, fig in figures.items():
        merged[name] = fig.to_json()
    merged = dict(sorted(merged.items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".bench-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(merged, fh, indent=2)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return merged


def _fmt_value(value: float) -> str:
    if value >= 100:
        return f"{value:.1f}"
    return f"{value:.4g}"


def format_table(figures: Mapping[str, Figure]) -> str:
    """A plain-text table of figures, one per line, in name order."""
    rows = [(name, _fmt_value(fig.value), fig.unit) for name, fig in sorted(figures.items())]
    head = ("figure", "value", "unit")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
    lines = [f"{head[0]:<{widths[0]}}  {head[1]:>{widths[1]}}  {head[2]}",
             f"{'-' * widths[0]}  {'-' * widths[1]}  {'-' * widths[2]}"]
    lines += [f"{n:<{widths[0]}}  {v:>{widths[1]}}  {u}" for n, v, u in rows]
    return "\n".join(lines)
