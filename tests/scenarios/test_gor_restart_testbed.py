"""GOR restarted in the middle of the story on a live p4sim testbed (root + Mininet;
skipped otherwise): the issue's controller-restart test.

The story runs (seed 7); once GOR's first round has moved its flows (every move seen on
its new uplink and reported done by its agent, while the moves still settle), GOR stops —
loop and registry — and a new one starts on the same switches and agents
(``GorSession.restart_gor``). Asserted: the new loop reconciled every switch and adopted
the sampling entries its predecessor left; every flow was registered again by its agent
on the port it had (the moves are kept); no flow was moved twice; every flow went on to
the end (≥ 95 % of its packets received); the uplinks end under the 75 % threshold. 18 s
of traffic; brings up its own fabric (~45 s).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


DURATION_S = 18.0
"""Longer than the story's 12 s: the new GOR may run a round of its own seconds after the
restart (CI saw one 7 s after it, while the flows' rates still ramped up), and the uplinks
are measured only once the last move has settled."""


MOVES_TIMEOUT_S = 15.0
"""Bound on the wait for GOR's first round to be seen and reported done before the restart
(it returns as soon as it is: a few seconds on a quiet machine). Was 10 s; on the 2-core CI
machine beside other load the senders start and the moves land later, and a round that
completes late is not a GOR failure (the restart then meets fewer moves settling)."""
REREGISTER_TIMEOUT_S = 15.0
"""Bound on the wait for every flow to be registered again with the new GOR (returns as
soon as all are). Was 5 s: the agents learn of the new registry from their own retries,
which a loaded machine delays; ``rec.complete`` and the port checks are unchanged."""


def _moves_done(session: Any) -> bool:
    pending = list(session.loop.pending.values())
    return bool(pending) and all(m.seen_s is not None and m.agent_done_s is not None for m in pending)


def test_gor_restart_mid_story_resynchronises_and_loses_no_flow(tmp_path: Path) -> None:
    from testbed.traffic import testbed_unavailable, testbed_up
    from scenarios.common import ScenarioOptions
    from scenarios.story import run_story
    why = testbed_unavailable()
    if why:
        pytest.skip(why)
    waited: list[bool] = []

    def restart(session: Any) -> None:
        waited.append(session.wait_for(lambda: _moves_done(session), timeout_s=MOVES_TIMEOUT_S))
        session.restart_gor(wait_s=REREGISTER_TIMEOUT_S)

    with testbed_up(log_dir=tmp_path / "logs", state_path=tmp_path / "state.json") as tb:
        res = run_story(tb.fabric, tb.programmer, tb.state, tb.save_state,
                        ScenarioOptions(seed=7, runs_root=tmp_path / "runs", duration_s=DURATION_S),
                        midway=restart)
    assert res.status == 0 and not res.errors, res.errors
    assert waited == [True], "GOR's first round did not complete before the restart"
    [rec] = res.restarts
    assert rec.reconciled["failed_switches"] == [] and rec.reconciled["adopted_sampling"] >= 1, rec
    assert rec.reregistered_s is not None and rec.complete, rec          # every flow, same port
    assert len(rec.flows_before) == 8, rec
    assert max(res.moves_per_flow.values()) == 1, res.moves_per_flow    # nothing moved again
    assert res.count("reconciled") == 2, res.events                     # at start and at restart
    # a flow the new GOR learns was moved (from its agent's registration) is one the old
    # GOR moved, under its new port (it rests; whether a hot link asks depends on timing)
    moved_to = {e["new_flow"] for e in res.events if e["event"] == "order_confirmed"}
    remembered = {e["flow"] for e in res.events if e["event"] == "move_remembered"}
    assert remembered <= moved_to, (remembered, moved_to)
    # no flow lost: each goes on to the end (a move may reorder a few packets, which the
    # receiver counts as missing, so the bound is 95 % of what was sent, not 100 %)
    assert len(res.delivery) == 8 and all(r >= 0.95 * s > 0 for s, r in res.delivery.values()), \
        (res.lost_pkts, res.delivery)
    assert res.max_util_after_pct is not None and res.max_util_after_pct < 75.0, \
        (res.uplink_pps_before, res.uplink_pps_after)
