"""Prediction and calibration on the FIXTURE ``fixtures/calibration-fixture.json``
(synthetic numbers generated from known parameters, not a testbed measurement; the
recorded file sim/calibration/default-fabric.json replaces it once the lead records it)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.calibrate import calibrate_file
from sim.model import Features, ModelParams, fit, predict
from sim.topology import SimInputError

FIXTURE = Path(__file__).parent / "fixtures" / "calibration-fixture.json"


def test_fixture_is_labelled_synthetic() -> None:
    data = json.loads(FIXTURE.read_text())
    assert data["source"] == "fixture" and "SYNTHETIC" in data["note"]


def test_calibration_on_the_fixture_recovers_the_bandwidth_and_cuts_the_error() -> None:
    rep = calibrate_file(FIXTURE)
    assert rep.error_before_pct > 20
    assert rep.error_after_pct < 3
    assert rep.after.bandwidth_scale == pytest.approx(0.6, rel=0.05)
    assert "FIXTURE" in rep.summary()


def test_fit_is_exact_without_noise() -> None:
    feats = [Features(1.0, 1, 3), Features(2.0, 1, 1), Features(0.5, 3, 9), Features(3.0, 2, 2)]
    truth = ModelParams(per_host_s=0.01, per_hop_s=0.003, bandwidth_scale=0.25)
    got = fit(feats, [predict(f, truth) for f in feats])
    assert (got.per_host_s, got.per_hop_s, got.bandwidth_scale) == pytest.approx((0.01, 0.003, 0.25))


def test_bad_measurement_files(tmp_path: Path) -> None:
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"schema": "astral-sim-measurements", "version": 1,
                               "measurements": [{"ranks": ["b0s0:0", "b1s0:0"], "size_bytes": 1,
                                                 "measured_s": 1, "sizee": 2}]}))
    with pytest.raises(SimInputError, match=r"measurements\[0\]\.sizee: unknown field"):
        calibrate_file(bad)
    bad.write_text("{}")
    with pytest.raises(SimInputError, match="not a measurement file"):
        calibrate_file(bad)
