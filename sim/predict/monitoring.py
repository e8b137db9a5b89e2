"""Measured iteration times of a training run, read from what a monitoring system keeps
(``python -m sim calibrate-run``, :mod:`sim.predict.runcal`). Three forms, one field each
in a run of the RUNS file:

* ``iterations_s: [1.21, 1.19, ...]`` — the times themselves, in seconds;
* ``prometheus: {file: run.prom, metric: NAME, labels: {job: llama}}`` — a scrape of the
  training job's exporter in the Prometheus text exposition format (parsed by
  ``prometheus_client.parser``; ``file`` may be a list of scrapes). The metric is a
  *histogram* (each matching series gives ``_sum / _count``, the mean iteration time since
  the exporter started), a *summary* (its ``quantile="0.5"`` sample, else ``_sum /
  _count``) or a *gauge* / untyped metric (every matching sample is one iteration time,
  e.g. ``iteration_seconds{iteration="120"} 1.21``). A counter is refused: it is not a
  time per iteration;
* ``query_range: {file: resp.json, labels: {rank: "0"}}`` — a Prometheus HTTP API
  ``/api/v1/query_range`` response saved to a file (``{"status": "success", "data":
  {"resultType": "matrix", "result": [{"metric": {...}, "values": [[t, "1.21"], ...]}]}}``):
  every value of every matching series is one iteration time (``NaN``/``Inf`` skipped).

``labels`` are exact-match matchers on the series' labels (``__name__`` included in a
query_range response); none given, every series matches. A run's measured iteration time
is the **median** of its values (robust to the slow first iterations and checkpoint
stalls a monitoring series holds). Bad input raises :class:`SimInputError` as
``FILE: field: reason``, naming what the file does hold.

Example::

    >>> text = '''# TYPE train_iteration_seconds histogram
    ... train_iteration_seconds_bucket{job="a",le="+Inf"} 4
    ... train_iteration_seconds_sum{job="a"} 5.0
    ... train_iteration_seconds_count{job="a"} 4
    ... '''
    >>> exposition_values(text, "train_iteration_seconds", {"job": "a"}, "r.yaml: runs[0].prometheus")
    [1.25]
    >>> exposition_values(text, "iter_s", {}, "r.yaml: runs[0].prometheus")
    Traceback (most recent call last):
    ...
    sim.topology.SimInputError: r.yaml: runs[0].prometheus.metric: 'iter_s' not in the file (metrics there: train_iteration_seconds (histogram))
    >>> median_s([1.0, 1.2, 9.0])
    1.2
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from sim.topology import SimInputError

FORMS = ("iterations_s", "prometheus", "query_range")


def _matches(labels: Mapping[str, str], want: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in want.items())


def _finite_positive(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values if math.isfinite(v) and v > 0]


def exposition_values(text: str, metric: str, labels: Mapping[str, str], where: str) -> list[float]:
    """Iteration times of ``metric`` in one text exposition (module docstring);
    ``where`` (``FILE: field``) prefixes every error."""
    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, TypeError, IndexError) as exc:
        raise SimInputError(f"{where}.file: not a Prometheus text exposition: {exc}") from None
    family = next((f for f in families if f.name == metric and f.samples), None)
    if family is None:
        known = ", ".join(f"{f.name} ({f.type})" for f in families if f.samples) or "none"
        raise SimInputError(f"{where}.metric: {metric!r} not in the file (metrics there: {known})")
    if family.type == "counter":
        raise SimInputError(f"{where}.metric: {metric!r} is a counter, not a time per iteration "
                            f"(a histogram, summary or gauge)")
    samples = [s for s in family.samples if _matches(s.labels, labels)]
    if not samples:
        sets = sorted({json.dumps(dict(s.labels), sort_keys=True) for s in family.samples})
        raise SimInputError(f"{where}.labels: no series of {metric!r} matches {dict(labels)} "
                            f"(series there: {', '.join(sets[:5])}{' ...' if len(sets) > 5 else ''})")
    if family.type not in ("histogram", "summary"):
        return _finite_positive([s.value for s in samples if s.name == metric])
    series: dict[tuple, dict[str, float]] = {}
    for s in samples:
        key = tuple(sorted((k, v) for k, v in s.labels.items() if k not in ("le", "quantile")))
        part = s.name[len(metric):] or f"q{s.labels.get('quantile', '')}"
        series.setdefault(key, {})[part] = s.value
    out = []
    for parts in series.values():
        if family.type == "summary" and math.isfinite(parts.get("q0.5", math.nan)):
            out.append(parts["q0.5"])
        elif parts.get("_count", 0) > 0 and "_sum" in parts:
            out.append(parts["_sum"] / parts["_count"])
    return _finite_positive(out)


def query_range_values(data: Any, labels: Mapping[str, str], where: str) -> list[float]:
    """Every value of every matching series of a parsed ``query_range`` response."""
    if not isinstance(data, dict) or data.get("status") != "success" or not isinstance(data.get("data"), dict):
        status = data.get("status") if isinstance(data, dict) else type(data).__name__
        raise SimInputError(f"{where}.file: not a successful Prometheus API response (status: {status!r}; "
                            f"expected {{\"status\": \"success\", \"data\": {{...}}}})")
    body = data["data"]
    if body.get("resultType") != "matrix":
        raise SimInputError(f"{where}.file: resultType {body.get('resultType')!r}: a query_range response "
                            f"is a matrix")
    result = body.get("result")
    if not isinstance(result, list):
        raise SimInputError(f"{where}.file: data.result: must be a list of series")
    out: list[float] = []
    for i, series in enumerate(result):
        if not isinstance(series, dict) or not _matches(series.get("metric") or {}, labels):
            continue
        for pair in series.get("values") or []:
            try:
                out.append(float(pair[1]))
            except (TypeError, ValueError, IndexError):
                raise SimInputError(f"{where}.file: data.result[{i}].values: {pair!r} is not [time, \"value\"]") \
                    from None
    return _finite_positive(out)


def _files(spec: Mapping[str, Any], base: Path, where: str) -> list[Path]:
    f = spec.get("file")
    names = f if isinstance(f, list) else [f]
    if f is None or not names or not all(isinstance(n, str) and n for n in names):
        raise SimInputError(f"{where}.file: missing (a file path, relative to the runs file, or a list of them)")
    return [Path(n) if Path(n).is_absolute() else base / n for n in names]


def _read(path: Path, where: str) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise SimInputError(f"{where}.file: {path}: cannot read: {exc.strerror or exc}") from None


def _labels(spec: Mapping[str, Any], where: str) -> dict[str, str]:
    labels = spec.get("labels") or {}
    if not isinstance(labels, dict):
        raise SimInputError(f"{where}.labels: a mapping of label: value, got {labels!r}")
    return {str(k): str(v) for k, v in labels.items()}


def _check_keys(spec: Any, known: tuple[str, ...], where: str) -> None:
    if not isinstance(spec, dict):
        raise SimInputError(f"{where}: a mapping ({', '.join(known)}), got {spec!r}")
    for k in spec:
        if k not in known:
            raise SimInputError(f"{where}.{k}: unknown field (known: {', '.join(known)})")


def measured_values(run: Mapping[str, Any], base: Path, where: str) -> list[float]:
    """The iteration times of one run of the RUNS file (whichever form it gives;
    ``base``: the folder relative paths start from); ``SimInputError`` when there is
    none, more than one form, or no value."""
    given = [f for f in FORMS if f in run]
    if len(given) != 1:
        why = "missing" if not given else f"give one, not {' and '.join(given)}"
        raise SimInputError(f"{where}: measured iteration times: {why} (one of: {', '.join(FORMS)})")
    form = given[0]
    spec, at = run[form], f"{where}.{form}"
    if form == "iterations_s":
        if not isinstance(spec, list) or not spec or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in spec):
            raise SimInputError(f"{at}: a non-empty list of positive seconds, got {spec!r}")
        return [float(v) for v in spec]
    if form == "prometheus":
        _check_keys(spec, ("file", "metric", "labels"), at)
        metric = spec.get("metric")
        if not isinstance(metric, str) or not metric:
            raise SimInputError(f"{at}.metric: missing (the metric family's name, e.g. train_iteration_seconds)")
        out = []
        for path in _files(spec, base, at):
            out += exposition_values(_read(path, at), metric, _labels(spec, at), f"{at}")
        if not out:
            raise SimInputError(f"{at}: {metric!r}: no positive value in the matching series (a histogram "
                                f"with _count 0, a NaN quantile?)")
        return out
    _check_keys(spec, ("file", "labels"), at)
    out = []
    for path in _files(spec, base, at):
        try:
            data = json.loads(_read(path, at))
        except json.JSONDecodeError as exc:
            raise SimInputError(f"{at}.file: {path}: not JSON: {exc}") from None
        out += query_range_values(data, _labels(spec, at), f"{at}")
    if not out:
        raise SimInputError(f"{at}: the matrix has no values (no series matching {_labels(spec, at) or 'any label'} "
                            f"with a finite positive value)")
    return out


def median_s(values: Sequence[float]) -> float:
    """The median of a run's measured iteration times."""
    return float(np.median(np.asarray(values, np.float64)))


__all__ = ["FORMS", "exposition_values", "measured_values", "median_s", "query_range_values"]
