"""``SCENARIO=incast`` end to end on a live p4sim testbed (root + Mininet; skipped otherwise
with the reason): static then dynamic thresholds, one flow alone and 8 flows into one
leaf port, 3 s each (seed 7). Asserted: every run delivered and was polled (status 0),
the thresholds really changed on the switches and came back, PFC acted in both incast
runs, and — the reference's first claim, which a wrong threshold mode would break — a
port alone queues deeper with dynamic thresholds than with static ones. Brings up its
own fabric (~35 s up, ~45 s of scenario)."""
from __future__ import annotations

from pathlib import Path

import pytest


def test_static_and_dynamic_thresholds_side_by_side(tmp_path: Path) -> None:
    from testbed.traffic import testbed_unavailable, testbed_up
    from scenarios.common import ScenarioOptions
    from scenarios.incast import run_incast
    why = testbed_unavailable()
    if why:
        pytest.skip(why)
    with testbed_up(log_dir=tmp_path / "logs", state_path=tmp_path / "state.json") as tb:
        res = run_incast(tb.fabric, tb.programmer, tb.state, tb.save_state,
                         ScenarioOptions(seed=7, duration_s=6.0, runs_root=tmp_path / "runs"))
        # back to the testbed's own (static) thresholds: no alpha entry left
        leaf = tb.programmer.connections["b1r0l0"]
        assert leaf.read_table("FabricIngress.pfc.alpha") == []
        assert tb.programmer.thresholds is None
    ph = res.phases
    figures = {k: (p.pause_frames, p.ecn_marks, p.drops, p.peak_qdepth_pkts, p.jain)
               for k, p in ph.items()}
    assert res.status == 0, (res.errors, figures)
    assert set(ph) == {(m, l) for m in ("static", "dynamic") for l in ("lone", "incast")}
    assert all(p.delivered == len(p.flows) and p.samples > 0 for p in ph.values()), figures
    assert len(ph[("static", "incast")].flows) == 8 and len(ph[("static", "lone")].flows) == 1
    assert ph[("static", "incast")].pause_frames > 0 < ph[("dynamic", "incast")].pause_frames, figures
    assert ph[("dynamic", "lone")].peak_qdepth_pkts > ph[("static", "lone")].peak_qdepth_pkts, figures
    md = (res.run_dir / "report.md").read_text()
    assert "## Incast: static vs dynamic thresholds" in md and "The scenario failed" not in md
