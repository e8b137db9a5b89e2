"""The `make run` story end to end on a live p4sim testbed (root + Mininet; skipped
otherwise with the reason): random ports collide on a leaf uplink, ECN alarms, GOR moves
elephants through the TCCL agents, and after the re-route the busiest uplink is under
GOR's 75 % safety threshold (of the uplink queue rate), the uplinks are balanced
(max/mean ≤ 1.25), and no flow was moved twice. Brings up its own fabric (~40 s).
"""
from __future__ import annotations

from pathlib import Path

import pytest


def test_story_rebalances_the_uplinks_under_the_threshold(tmp_path: Path) -> None:
    from testbed.traffic import testbed_unavailable, testbed_up
    from scenarios.common import ScenarioOptions
    from scenarios.story import run_story
    why = testbed_unavailable()
    if why:
        pytest.skip(why)
    with testbed_up(log_dir=tmp_path / "logs", state_path=tmp_path / "state.json") as tb:
        res = run_story(tb.fabric, tb.programmer, tb.state, tb.save_state,
                        ScenarioOptions(seed=7, runs_root=tmp_path / "runs"))
    assert res.status == 0 and not res.errors, res.errors
    figures = (res.uplink_pps_before, res.offered_before_pct, res.uplink_pps_after,
               res.moves_per_flow)
    # the collision: measured by the polls before the first order, or (GOR acting within
    # one poll of it) by the hot uplink's switch when GOR's first round ran, or, when GOR
    # acts while the senders still ramp up (a loaded machine: fresh-clone CI at c0ed1cf
    # measured 69.3 % before with the hash model's 6 of 8 flows on that uplink), by the
    # switch marking that uplink's packets: an ECN alarm of level 2 or more (>= 5 % of its
    # packets marked) on the uplink the hash model loads most, which the polls before the
    # order also found the busiest
    before = max(res.max_util_before_pct or 0.0, res.offered_before_pct or 0.0)
    loads: dict[str, int] = {}
    for uplink in res.predicted.values():
        loads[uplink] = loads.get(uplink, 0) + 1
    hot = max(loads, key=loads.__getitem__)
    marked = [e for e in res.events if e.get("event") == "alarm_raised" and e.get("link") == hot
              and int(e.get("level", 0)) >= 2]
    busiest_before = (max(res.uplink_pps_before, key=res.uplink_pps_before.__getitem__)
                      if res.uplink_pps_before else None)
    assert before > 75.0 or (marked and busiest_before == hot), (figures, hot, marked)
    assert res.count("order_confirmed") >= 1 and res.count("order_rolled_back") == 0, res.events
    # on a failure, GOR's rounds say why it moved what it moved (the run dir is gone in CI)
    rounds = [e for e in res.events if e.get("event") in ("flows_chosen", "round", "path_chosen",
                                                          "order_sent", "order_confirmed")]
    assert res.max_util_after_pct is not None and res.max_util_after_pct < 75.0, (figures, rounds)
    assert res.spread(res.uplink_pps_after) <= 1.25, (figures, rounds)
    assert max(res.moves_per_flow.values()) == 1, res.moves_per_flow       # no flip-flop
    assert res.loop_s is not None and (res.run_dir / "report.md").is_file()
