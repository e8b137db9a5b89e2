"""Calibration: simulate each measured collective, fit the model's overheads (and the
effective bandwidth) by least squares, report the prediction error before and after.

Measurement file (``python -m sim measure`` writes it; schema ``astral-sim-measurements``
version 1; unknown keys are refused)::

    {"schema": "astral-sim-measurements", "version": 1,
     "source": "testbed",            # or "fixture" (synthetic numbers, not a measurement)
     "note": "...",
     "fabric": {"topology": "build/topology.json"},   # a scenario fabric section
     "link_Bps": 100000.0,           # effective link rate assumed before calibration
     "measurements": [
       {"name": "ring2-rail0", "ranks": ["b0s0:0", "b1s0:0"], "collective": "allreduce",
        "algorithm": "ring", "order": "tccl", "ports": "tccl", "size_bytes": 163840,
        "steps": 1, "measured_s": [0.81, 0.79, 0.80]}]}

Example::

    >>> from pathlib import Path
    >>> rep = calibrate_file(Path("tests/sim/fixtures/calibration-fixture.json"))
    >>> rep.source, rep.error_after_pct < rep.error_before_pct
    ('fixture', True)
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from sim.model import Features, ModelParams, error_pct, fit, predict
from sim.report import format_table
from sim.runner import build_sim_fabric, run_scenario
from sim.scenario import scenario_from_dict
from sim.topology import SimInputError

SCHEMA = "astral-sim-measurements"
TOP_KEYS = {"schema", "version", "source", "note", "fabric", "link_Bps", "measurements", "recorded_at"}
ROW_KEYS = {"name", "ranks", "collective", "algorithm", "order", "ports", "size_bytes", "steps",
            "measured_s", "channels"}
PORTS_POLICY = {"tccl": "tccl", "random": "random_ecmp"}


@dataclass(slots=True)
class CalibrationReport:
    """Per-measurement predictions before/after and the fitted parameters."""

    source: str
    names: list[str]
    measured_s: list[float]
    before_s: list[float]
    after_s: list[float]
    before: ModelParams
    after: ModelParams
    error_before_pct: float
    error_after_pct: float

    def summary(self) -> str:
        """Table and the error line."""
        rows = [[n, f"{m:.4g}", f"{b:.4g}", f"{a:.4g}"]
                for n, m, b, a in zip(self.names, self.measured_s, self.before_s, self.after_s)]
        label = " (FIXTURE: synthetic numbers, not a measurement)" if self.source == "fixture" else ""
        return "\n".join([
            f"calibration on {len(rows)} collectives from {self.source}{label}",
            format_table(rows, ["collective", "measured s", "predicted before", "predicted after"]),
            f"before: per_host {self.before.per_host_s:.3g} s, per_hop {self.before.per_hop_s:.3g} s, "
            f"bandwidth x{self.before.bandwidth_scale:.3g}: error {self.error_before_pct:.1f} %",
            f"after:  per_host {self.after.per_host_s:.3g} s, per_hop {self.after.per_hop_s:.3g} s, "
            f"bandwidth x{self.after.bandwidth_scale:.3g}: error {self.error_after_pct:.1f} %"])


def _check(data: Any, source: str) -> dict[str, Any]:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SimInputError(f"{source}: not a measurement file (expected schema {SCHEMA!r})")
    for k in data:
        if k not in TOP_KEYS:
            raise SimInputError(f"{source}: {k}: unknown field (known: {', '.join(sorted(TOP_KEYS))})")
    rows = data.get("measurements")
    if not isinstance(rows, list) or not rows:
        raise SimInputError(f"{source}: measurements: a non-empty list is needed")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise SimInputError(f"{source}: measurements[{i}]: must be an object")
        for k in row:
            if k not in ROW_KEYS:
                raise SimInputError(f"{source}: measurements[{i}].{k}: unknown field "
                                    f"(known: {', '.join(sorted(ROW_KEYS))})")
        for k in ("ranks", "size_bytes", "measured_s"):
            if k not in row:
                raise SimInputError(f"{source}: measurements[{i}].{k}: missing")
        if row.get("ports", "tccl") not in PORTS_POLICY:
            raise SimInputError(f"{source}: measurements[{i}].ports: tccl or random")
    return data


def features_for(data: dict[str, Any], source: str) -> tuple[list[str], list[Features], list[float]]:
    """Simulate every measurement; returns names, model features and measured means."""
    fabric = data.get("fabric") or {"spec_file": "topo/specs/default.yaml"}
    link = data.get("link_Bps")
    names, feats, meas = [], [], []
    sf = None
    for i, row in enumerate(data["measurements"]):
        sc = scenario_from_dict({
            "name": row.get("name", f"m{i}"), "fabric": fabric,
            "job": {"ranks": row["ranks"]},
            "workload": {k: row[k] for k in ("collective", "algorithm", "order", "size_bytes", "steps", "channels")
                         if k in row},
            "policies": [PORTS_POLICY[row.get("ports", "tccl")]],
            "model": {"link_Bps": float(link)} if link else {}}, f"{source}: measurements[{i}]")
        sf = sf or build_sim_fabric(sc)
        res = run_scenario(sc, sf)
        r = res.results[0]
        if r.undeliverable:
            raise SimInputError(f"{source}: measurements[{i}]: {r.examples[0] if r.examples else 'undeliverable'}")
        m = row["measured_s"]
        vals = [float(x) for x in (m if isinstance(m, list) else [m])]
        if not vals or min(vals) <= 0:
            raise SimInputError(f"{source}: measurements[{i}].measured_s: positive seconds needed")
        names.append(sc.name)
        feats.append(r.features)
        meas.append(float(np.mean(vals)))
    return names, feats, meas


def calibrate_file(path: Path, write: Optional[Path] = None) -> CalibrationReport:
    """Calibrate on a measurement file; ``write``: save the fitted parameters as JSON."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise SimInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise SimInputError(f"{path}: not valid JSON: {exc}") from None
    data = _check(data, str(path))
    names, feats, meas = features_for(data, str(path))
    before = ModelParams(link_Bps=data.get("link_Bps"))
    after = fit(feats, meas, before)
    pb = [predict(f, before) for f in feats]
    pa = [predict(f, after) for f in feats]
    rep = CalibrationReport(str(data.get("source", "unknown")), names, meas, pb, pa, before, after,
                            error_pct(pb, meas), error_pct(pa, meas))
    if write is not None:
        write.parent.mkdir(parents=True, exist_ok=True)
        write.write_text(json.dumps({"source": rep.source, "params": asdict(after),
                                     "error_before_pct": rep.error_before_pct,
                                     "error_after_pct": rep.error_after_pct}, indent=1) + "\n")
    return rep


__all__ = ["CalibrationReport", "SCHEMA", "calibrate_file", "features_for"]
