"""``SCENARIO=link-failure`` end to end on a live p4sim testbed (root + Mininet; skipped
otherwise with the reason): a leaf uplink carrying elephants is set down in Mininet, GOR
takes it out of the leaf's ECMP group and its hash model, and every flow goes on over the
surviving uplink (nothing more is sent into the dead link, the uplinks carry ≥ 90 % of the
senders' offer, under
the 75 % threshold). Brings up its own fabric (~35 s)."""
from __future__ import annotations

from pathlib import Path

import pytest


def test_a_downed_uplink_leaves_the_groups_and_the_flows_go_on(tmp_path: Path) -> None:
    from testbed.traffic import testbed_unavailable, testbed_up
    from scenarios.link_failure import FLOWS, run_link_failure
    from scenarios.common import ScenarioOptions
    why = testbed_unavailable()
    if why:
        pytest.skip(why)
    with testbed_up(log_dir=tmp_path / "logs", state_path=tmp_path / "state.json") as tb:
        res = run_link_failure(tb.fabric, tb.programmer, tb.state, tb.save_state,
                               ScenarioOptions(seed=7, runs_root=tmp_path / "runs"))
        leaf = res.failed_uplink.split("->")[0]
        group = tb.programmer.connections[leaf].read_table("FabricIngress.ecmp.groups")
    figures = (res.failed_uplink, res.groups, res.uplink_pps_before, res.uplink_pps_after)
    assert res.status == 0 and not res.errors, res.errors
    assert res.uplink_pps_before[res.failed_uplink] > 0, figures       # it carried elephants
    assert res.regroup_s is not None and res.groups, figures           # GOR rewrote the group
    # the spine end had no other link to the leaf: every other leaf detours around it
    assert len(res.detours) == 3 and all(d.endswith("-> " + ("s0" if "s1" in res.failed_uplink
                                                            else "s1")) for d in res.detours), res.detours
    assert res.uplink_pps_after[res.failed_uplink] == 0.0, figures
    # no flow lost: the uplinks carry what the senders offer (the rate before the cut is
    # no yardstick: it holds the start's retransmissions, up to 8 % over the offer)
    offered = FLOWS * ScenarioOptions().flow_rate_pps
    assert sum(res.uplink_pps_after.values()) >= 0.9 * offered, (figures, offered)
    assert res.max_util_after_pct is not None and res.max_util_after_pct < 75.0, figures
    (entry,) = group                                                   # restored at the end:
    size = {p.param_id: int.from_bytes(p.value, "big") for p in entry.action.action.params}
    assert max(size.values()) == 2, size                               # base 0, size 2
    assert [e for e in res.events if e.get("event") == "link_down"]
