"""A cable that dies silently on a live p4sim testbed (root + Mininet; skipped otherwise):
``SCENARIO=dead-link``. Only the spine's end of the leaf uplink carrying the most
elephants is set down and GOR is told nothing; the leaf's port stays up and its packets
vanish. Asserted: GOR takes the link down from the counters alone (reason ``counters:
sent but not received …``), rewrites the leaf's ECMP group without it, the dead uplink
carries nothing afterwards but GOR's re-test probes (at most twice their 3 frames/s, for
window edges) and the flows go on over the surviving one under the 75 %
threshold (at no less than 0.7 of their offer: DCQCN recovers from the
retransmission burst's ECN marks); once mended (GOR told nothing) the link comes back by
GOR's re-test probes. The times to detect (``regroup_s``) and to heal (``heal_s``) are
reported, not asserted. ~45 s.
"""
from __future__ import annotations

from pathlib import Path

import pytest


def test_silent_dead_link_is_found_from_the_counters_and_leaves_the_group(tmp_path: Path) -> None:
    from testbed.traffic import testbed_unavailable, testbed_up
    from scenarios.link_failure import FLOWS, run_link_failure
    from scenarios.common import ScenarioOptions
    from controller.gor.deadlinks import DeadLinkThresholds
    why = testbed_unavailable()
    if why:
        pytest.skip(why)
    with testbed_up(log_dir=tmp_path / "logs", state_path=tmp_path / "state.json") as tb:
        res = run_link_failure(tb.fabric, tb.programmer, tb.state, tb.save_state,
                               ScenarioOptions(seed=7, runs_root=tmp_path / "runs"), silent=True)
    figures = (res.failed_uplink, res.detected_by, res.groups, res.uplink_pps_before,
               res.uplink_pps_after, res.regroup_s)
    assert res.status == 0 and not res.errors, res.errors
    assert res.silent and res.uplink_pps_before[res.failed_uplink] > 0, figures
    admin = [e for e in res.events if e.get("event") == "link_down"
             and str(e.get("reason", "")).startswith("administrative")]
    assert admin == [], admin                                          # GOR was told nothing
    assert res.detected_by.startswith("counters: sent but not received"), figures
    assert res.regroup_s is not None and res.groups, figures           # the group rewritten
    # mended, told nothing: only GOR's re-test probes can prove it alive (no traffic is offered)
    assert res.heal_s is not None and res.healed_by.startswith("probes: "), (res.heal_s, res.healed_by)
    leaf = res.failed_uplink.split("->")[0]
    assert any(g.startswith(f"{leaf}/") for g in res.groups), figures
    # no traffic sent into it: only GOR's re-test probes (3 frames a second, controller/README.md)
    retest_pps = DeadLinkThresholds().retest_frames / DeadLinkThresholds().retest_every_s
    assert res.uplink_pps_after[res.failed_uplink] <= 2 * retest_pps, figures
    # the flows go on: the packets lost while the link was dead come back as a go-back-N
    # burst onto the surviving uplink, whose ECN marks make DCQCN cut the senders' rates
    # for a while (on a loaded machine measured down to 0.84 of their offer, recovering)
    assert res.late_flows == [], (res.late_flows, res.delivery)        # every flow goes on
    offered = FLOWS * ScenarioOptions().flow_rate_pps
    assert sum(res.uplink_pps_after.values()) >= 0.7 * offered, (figures, offered)
    assert res.max_util_after_pct is not None and res.max_util_after_pct < 75.0, figures
