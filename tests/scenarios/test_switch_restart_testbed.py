"""A leaf switch restarted in the middle of the story on a live p4sim testbed (root +
Mininet; skipped otherwise): the issue's "a restarted switch is reconciled".

The story runs (seed 7, 24 s of traffic); once GOR's first round has moved its flows and
the moves have settled, the source leaf's switch process is stopped and started again
with the same command (``FabricNet.restart_switch``: it comes back empty, its recorded
PID replaced). Nobody tells GOR. Asserted: GOR logged ``switch_lost`` and then
``switch_back`` with the switch re-programmed (pipeline pushed, plan and groups
re-installed) within a bounded time of the process listening; the state file records the
new PID (``make stop`` tears down what exists); no order was sent and no link declared
dead from the restart until 5 s after the switch was back (nothing moved because of it); every flow delivers again — what it
lost fits in the outage — and the source leaf's uplinks carry the flows again at the end.
Brings up its own fabric (~40 s).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

LEAF = "b0r0l0"
DURATION_S = 24.0
RESTART_EFFECT_S = 5.0
"""After the switch is back, how long its restart can still show: reset counters (GOR
holds its links 1 s), the backlog its neighbours queued towards it drained in a burst."""


def test_leaf_restart_mid_story_is_reconciled_and_flows_resume(tmp_path: Path) -> None:
    from testbed.traffic import testbed_unavailable, testbed_up
    from testbed.net import TestbedState, record_matches
    from scenarios.gor_session import restart_after_moves
    from scenarios.common import ScenarioOptions
    from scenarios.story import run_story
    why = testbed_unavailable()
    if why:
        pytest.skip(why)
    sessions: list[Any] = []
    state_path = tmp_path / "state.json"
    opts = ScenarioOptions(seed=7, runs_root=tmp_path / "runs", duration_s=DURATION_S)

    with testbed_up(log_dir=tmp_path / "logs", state_path=state_path) as tb:
        old_pid = next(r.pid for r in tb.state.procs if r.kind == "switch" and r.name == LEAF)

        res = run_story(tb.fabric, tb.programmer, tb.state, tb.save_state, opts,
                        midway=restart_after_moves(LEAF, tb.fnet.restart_switch, sessions))
        saved = TestbedState.load(state_path)
        assert saved is not None
        leaf_recs = [r for r in saved.procs if r.kind == "switch" and r.name == LEAF]
    [session] = sessions
    assert session.moves_settled, "GOR did not settle (moves seen, none pending, not busy) before the restart"
    [rec] = session.switch_restarts
    # the testbed: the new process recorded, the old one gone from the record
    assert [r.pid for r in leaf_recs] == [rec.pid] and rec.pid != old_pid, (leaf_recs, old_pid)
    assert not record_matches(leaf_recs[0])                       # torn down with the testbed
    # GOR found it lost, then re-programmed it within a bounded time of it listening
    assert rec.lost_s is not None and rec.back_s is not None, rec
    assert rec.back["reinstalled"] and rec.back["updates"] > 0, rec.back
    assert rec.back["failed"] == [] and rec.back["overrides"] == 0, rec.back  # no host without agent
    assert rec.reconcile_s is not None and rec.reconcile_s < 10.0, rec
    assert res.count("switch_lost") >= 1 and res.count("switch_back") == 1, res.events
    # nothing moved because of the restart, no link declared dead from the reset counters:
    # nothing from the stop until RESTART_EFFECT_S after it is back (later, the flows'
    # own dynamics may raise a real alarm and a round: CI saw one 14 s after the restart,
    # for a spine downlink offered 103 %)
    t_stop = session.t0 + rec.at_s
    t_settled = t_stop + rec.back_s + RESTART_EFFECT_S
    after = [e for e in res.events if e.get("event") in ("order_sent", "link_down")
             and t_stop <= float(e.get("mono_s", 0.0)) <= t_settled]
    assert res.count("link_down") == 0 and not after, after
    assert max(res.moves_per_flow.values()) == 1, res.moves_per_flow
    # every flow delivers again: what it lost fits in the outage (at the flow's rate)
    assert res.status == 0 and not res.errors, res.errors
    assert len(res.delivery) == 8
    outage_pkts = (rec.back_s + 1.5) * opts.flow_rate_pps
    for label, (sent, recv) in res.delivery.items():
        assert recv > 0 and sent - recv <= outage_pkts, (label, sent, recv, rec)
    # and the source leaf's uplinks carry them again at the end
    t_back = t_stop + rec.back_s
    late = [pps for t, pps, _ in session.ticks if t > t_back + 2.0 and t < session.ticks[-1][0] - 1.0]
    assert late, "no telemetry after the switch came back"
    total = sum(sum(p.get(u, 0.0) for u in session.uplinks if u.startswith(LEAF)) for p in late) / len(late)
    assert total > 0.5 * 8 * opts.flow_rate_pps, total
