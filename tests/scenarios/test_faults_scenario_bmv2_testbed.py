"""The faults scenario on a live **BMv2** testbed (issue 33): all nine fault kinds of
``SCENARIO=faults`` injected in turn on ``simple_switch_grpc`` switches, each named first
and exactly (kind and component) within ``BMV2_NAME_BOUND_S``, the localiser quiet again
and GOR holding no link down within ``scenarios.faults.QUIET_BOUND_S`` of each undo, every
fault undone and every prober stopped.

Skipped unless ``simple_switch_grpc`` and ``p4c-bm2-ss`` are on PATH (CI has neither; a
reference build: README.md, "Targets: p4sim and BMv2") and a Mininet testbed can start
here (root). Run it as ``make run TARGET=bmv2 SCENARIO=faults`` is run, under the shared
network lock on a machine with other testbeds. 161-172 s where it runs (passed on
simple_switch_grpc 1.15.5, 2026-12-05, and with p4c-bm2-ss 1.2.5.16 on main 84732a8,
2026-12-06); 0 s in CI.
"""
from __future__ import annotations

import json
from pathlib import Path

from bmv2_faults import run_bmv2_faults
from scenarios.faults import QUIET_BOUND_S

BMV2_NAME_BOUND_S = 10.0
"""Issue 33's bound: every fault named within 10 s of taking effect."""


def test_every_fault_is_named_exactly_on_bmv2_and_the_fabric_settles(tmp_path: Path) -> None:
    res, procs = run_bmv2_faults(tmp_path)
    assert not [r for r in procs if r.kind == "monitor"]                # probers stopped
    rows = [(t.kind, t.named_kind, t.named, t.localise_s, t.quiet_after_undo_s, t.gor_links_down)
            for t in res.trials]
    assert len(res.trials) == 9, rows
    assert all(t.exact for t in res.trials), rows
    assert all(t.localise_s is not None and t.localise_s <= BMV2_NAME_BOUND_S
               for t in res.trials), rows
    assert all(t.settled and t.quiet_after_undo_s is not None
               and t.quiet_after_undo_s <= QUIET_BOUND_S for t in res.trials), rows
    assert res.status == 0 and res.top1 == 1.0, rows
    assert not (tmp_path / "state-faults.json").exists()                  # all undone
    log = [json.loads(l) for l in (res.run_dir / "verdicts.jsonl").read_text().splitlines()]
    assert {(l["kind"], l["component"]) for l in log if l["event"] == "named"} >= \
        {(t.kind, t.target) for t in res.trials}
