"""The faults scenario on a live p4sim testbed (root + Mininet; skipped otherwise), with a
subset of the fault kinds: traffic under GOR, probers in every host, the switch and NIC
exporters, Prometheus (the embedded store where it is absent), the localiser and the web
view. Asserted: each injected fault is named first, exactly (kind and component); the
verdicts are in the verdict log; the
scenario's report has its row; every fault was undone (no faults file left) and every
prober stopped; with Chromium installed, the web view was loaded in it during the run and
its screenshot is in the run folder. Times to name are reported, not asserted. ~3 min.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

KINDS = ("gray_link", "blackhole", "hung_switch", "slow_receiver", "wrong_ecn_threshold",
         "controller_down")


def test_faults_are_named_exactly_and_undone(tmp_path: Path) -> None:
    from scenarios.common import ScenarioOptions
    from scenarios.faults import run_faults
    from testbed.traffic import testbed_unavailable, testbed_up
    why = testbed_unavailable()
    if why:
        pytest.skip(why)
    state = tmp_path / "state.json"
    with testbed_up(log_dir=tmp_path / "logs", state_path=state) as tb:
        res = run_faults(tb.fabric, tb.programmer, tb.state, tb.save_state,
                         ScenarioOptions(seed=3, runs_root=tmp_path / "runs", state_path=state),
                         kinds=KINDS)
        assert not [r for r in tb.state.procs if r.kind == "monitor"]     # probers stopped
    rows = [(t.kind, t.named_kind, t.named, t.localise_s) for t in res.trials]
    assert [t.kind for t in res.trials] == list(KINDS), rows
    assert all(t.exact for t in res.trials), rows
    assert res.status == 0 and res.top1 == 1.0, rows
    assert not (tmp_path / "state-faults.json").exists()                  # all undone
    log = [json.loads(l) for l in (res.run_dir / "verdicts.jsonl").read_text().splitlines()]
    assert {(l["kind"], l["component"]) for l in log if l["event"] == "named"} == \
        {(t.kind, t.target) for t in res.trials}
    report = (res.run_dir / "report.md").read_text()
    assert all(f"| {t.kind} | {t.target} | {t.kind} {t.target} | yes |" in report for t in res.trials)
    assert res.store == ("prometheus" if shutil.which("prometheus") else "embedded")
    if shutil.which("chromium") and shutil.which("chromedriver"):
        assert res.screenshot is not None and res.screenshot.stat().st_size > 10_000
