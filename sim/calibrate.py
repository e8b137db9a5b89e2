"""Calibration: simulate each measured collective, fit the model's overheads (and the
effective bandwidth) by least squares, report the prediction error before and after.

Measurement file (``python -m scenarios measure`` writes it, :mod:`scenarios.measure`; schema ``astral-sim-measurements``
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

Optional, as ``python -m scenarios measure`` records them:

* ``testbed``: ``{"nic_line_rate_pps", "uplink_queue_pps", "mtu_bytes", "message_bytes"}``
  — with ``uplink_queue_pps`` the leaf uplinks get ``link_Bps × uplink_queue_pps /
  nic_line_rate_pps`` and the spine downlinks (no queue rate on the testbed) p4sim's
  forwarding rate (:data:`SWITCH_PPS`), so a shared uplink is shared at the queue's rate;
* per row, ``flows``: ``[{"src": IP, "dst": IP, "sport": PORT}, ...]`` — the source ports
  the testbed used; the step is then simulated with exactly those ports (through the hash
  model) instead of a policy's;
* per row, ``heldout: true``: not fitted on; its error is reported apart
  (:attr:`CalibrationReport.error_heldout_pct`);
* per row, ``packets_per_flow``, ``shared_uplink``: informative.

Example::

    >>> from pathlib import Path
    >>> rep = calibrate_file(Path("tests/sim/fixtures/calibration-fixture.json"))
    >>> rep.source, rep.error_after_pct < rep.error_before_pct
    ('fixture', True)
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from sim.engine import FlowSet, simulate
from sim.model import Features, ModelParams, error_pct, features_of, fit, predict
from sim.report import format_table
from sim.routing import route_flows
from sim.runner import build_sim_fabric, place, run_scenario
from sim.scenario import Scenario, scenario_from_dict
from sim.topology import TIER, SimFabric, SimInputError
from sim.workloads import collective_phases

SCHEMA = "astral-sim-measurements"
TOP_KEYS = {"schema", "version", "source", "note", "fabric", "link_Bps", "measurements", "recorded_at",
            "testbed"}
ROW_KEYS = {"name", "ranks", "collective", "algorithm", "order", "ports", "size_bytes", "steps",
            "measured_s", "channels", "flows", "heldout", "packets_per_flow", "shared_uplink"}
SWITCH_PPS = 15_000.0            # p4sim's forwarding rate on these machines (no queue rate set)
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
    heldout: list[bool] = field(default_factory=list)
    error_heldout_pct: Optional[float] = None

    def summary(self) -> str:
        """Table and the error lines: ``before`` (defaults, every collective), ``after``
        (fitted, on the collectives fitted on), ``held-out`` (fitted, on the others)."""
        held = self.heldout or [False] * len(self.names)
        rows = [[n, "held-out" if h else "fit", f"{m:.4g}", f"{b:.4g}", f"{a:.4g}"]
                for n, h, m, b, a in zip(self.names, held, self.measured_s, self.before_s, self.after_s)]
        label = " (FIXTURE: synthetic numbers, not a measurement)" if self.source == "fixture" else ""
        n_fit = sum(1 for h in held if not h)
        lines = [
            f"calibration on {len(rows)} collectives from {self.source}{label}",
            format_table(rows, ["collective", "set", "measured s", "predicted before", "predicted after"]),
            f"before: per_host {self.before.per_host_s:.3g} s, per_hop {self.before.per_hop_s:.3g} s, "
            f"bandwidth x{self.before.bandwidth_scale:.3g}: error {self.error_before_pct:.1f} % (all {len(rows)})",
            f"after:  per_host {self.after.per_host_s:.3g} s, per_hop {self.after.per_hop_s:.3g} s, "
            f"bandwidth x{self.after.bandwidth_scale:.3g}: error {self.error_after_pct:.1f} % "
            f"(the {n_fit} fitted on)"]
        if self.error_heldout_pct is not None:
            lines.append(f"held-out: error {self.error_heldout_pct:.1f} % on the {len(rows) - n_fit} "
                         "collectives not fitted on")
        return "\n".join(lines)


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
        for j, fl in enumerate(row.get("flows") or []):
            if not isinstance(fl, dict) or not {"src", "dst", "sport"} <= set(fl):
                raise SimInputError(f"{source}: measurements[{i}].flows[{j}]: src, dst and sport needed")
    tb = data.get("testbed")
    if tb is not None and not isinstance(tb, dict):
        raise SimInputError(f"{source}: testbed: must be an object")
    return data


def apply_testbed_rates(sf: SimFabric, link_Bps: Optional[float], testbed: Optional[dict[str, Any]]) -> None:
    """Leaf uplinks at the queue rate the measurement set, spine downlinks at p4sim's
    forwarding rate (module docstring); nothing without ``uplink_queue_pps``."""
    tb = testbed or {}
    queue, nic = tb.get("uplink_queue_pps"), tb.get("nic_line_rate_pps")
    if not (link_Bps and queue and nic):
        return
    live = sf.capacity_Bps > 0
    sf.capacity_Bps[(sf.tier == TIER["leaf_up"]) & live] = link_Bps * float(queue) / float(nic)
    sf.capacity_Bps[(sf.tier == TIER["spine_down"]) & live] = link_Bps * SWITCH_PPS / float(nic)


def _given_ports_features(sc: Scenario, sf: SimFabric, flows: list[dict[str, Any]], where: str) -> Features:
    """Features of a collective simulated with the recorded source ports."""
    import ipaddress  # noqa: PLC0415
    w = sc.workload
    phases = collective_phases(sf, place(sc, sf), w.collective, w.size_bytes, w.algorithm, w.order,
                               w.channels, w.alltoall_rounds)
    if w.steps is not None:
        for ph in phases:
            ph.repeat = float(w.steps) / len(phases)
    ports = {(int(ipaddress.IPv4Address(f["src"])), int(ipaddress.IPv4Address(f["dst"]))): int(f["sport"])
             for f in flows}
    per = []
    for ph in phases:
        keys = list(zip(sf.nic_ip[ph.src_nic].tolist(), sf.nic_ip[ph.dst_nic].tolist()))
        missing = [k for k in keys if k not in ports]
        if missing:
            a, b = (str(ipaddress.IPv4Address(x)) for x in missing[0])
            raise SimInputError(f"{where}.flows: no port recorded for the ring edge {a} -> {b}")
        sport = np.array([ports[k] for k in keys], np.int64)
        routes = route_flows(sf, ph.src_nic, ph.dst_nic, sport)
        if routes.failed.any():
            raise SimInputError(f"{where}: a flow has no path with its recorded port")
        out = simulate(FlowSet(routes.links, ph.size_bytes.astype(np.float64), np.zeros(len(sport)),
                               np.full(len(sport), np.inf)), sf.capacity_Bps)
        tiers = sf.tier[np.where(routes.links >= 0, routes.links, 0)]
        hops = np.maximum(np.where((routes.links < 0) | (tiers == TIER["nvlink"]), 0, 1).sum(axis=1) - 1, 0)
        slow = int(np.argmax(out.fct_s))
        per.append((ph.repeat, float(out.fct_s[slow]), int(hops.max())))
    return features_of(per)


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
        if sf is None:
            sf = build_sim_fabric(sc)
            apply_testbed_rates(sf, float(link) if link else None, data.get("testbed"))
        if row.get("flows"):
            feat = _given_ports_features(sc, sf, row["flows"], f"{source}: measurements[{i}]")
        else:
            r = run_scenario(sc, sf).results[0]
            if r.undeliverable:
                raise SimInputError(f"{source}: measurements[{i}]: {r.examples[0] if r.examples else 'undeliverable'}")
            feat = r.features
        m = row["measured_s"]
        vals = [float(x) for x in (m if isinstance(m, list) else [m])]
        if not vals or min(vals) <= 0:
            raise SimInputError(f"{source}: measurements[{i}].measured_s: positive seconds needed")
        names.append(sc.name)
        feats.append(feat)
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
    held = [bool(r.get("heldout", False)) for r in data["measurements"]]
    if all(held):
        held = [False] * len(held)          # nothing left to fit on: fit on every collective
    train = [i for i, h in enumerate(held) if not h]
    test = [i for i, h in enumerate(held) if h]
    before = ModelParams(link_Bps=data.get("link_Bps"))
    after = fit([feats[i] for i in train], [meas[i] for i in train], before)
    pb = [predict(f, before) for f in feats]
    pa = [predict(f, after) for f in feats]
    rep = CalibrationReport(str(data.get("source", "unknown")), names, meas, pb, pa, before, after,
                            error_pct(pb, meas), error_pct([pa[i] for i in train], [meas[i] for i in train]),
                            held, error_pct([pa[i] for i in test], [meas[i] for i in test]) if test else None)
    if write is not None:
        write.parent.mkdir(parents=True, exist_ok=True)
        write.write_text(json.dumps({"source": rep.source, "params": asdict(after),
                                     "error_before_pct": rep.error_before_pct,
                                     "error_after_pct": rep.error_after_pct,
                                     "error_heldout_pct": rep.error_heldout_pct}, indent=1) + "\n")
    return rep


__all__ = ["CalibrationReport", "SCHEMA", "SWITCH_PPS", "apply_testbed_rates", "calibrate_file", "features_for"]
