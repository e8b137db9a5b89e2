"""The monitor follows the switches' ECMP groups on a live p4sim fabric (root + Mininet;
skipped otherwise). Run it under the testbed lock::

    flock /tmp/astral-testbed.lock .venv/bin/python -m pytest -q tests/monitor/test_ecmp_follow_testbed.py

The default fabric comes up with the probers and the monitor process
(``scenarios.monitoring.MonitoringSession``, no GOR). Then, as GOR does when it takes the
cable ``b0r0l0``–``s1`` out, the leaf's uplink group is rewritten over P4Runtime to its
``s0`` member alone. The monitor reads the new group, re-predicts the probe paths that
left ``b0r0l0`` over ``s1``, and a gray link then injected on ``b0r0l0->s0`` (30 %, the
injector's nftables rule) is named exactly: with the planned paths it would see paths
"over ``b0r0l0->s1``" losing as much as those over ``s0``. The group and the fault are
undone at the end. ~70 s.
"""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from testbed.traffic import testbed_unavailable as _why_no_testbed

SKIP_REASON = _why_no_testbed() or ""
pytestmark = pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON or "-")
LEAF, KEEP, DROP = "b0r0l0", "s0", "s1"
GROUPS = "FabricIngress.ecmp.groups"


def test_a_rewritten_uplink_group_is_followed_and_a_gray_link_on_the_other_named(tmp_path: Path) -> None:
    from controller.fabric.ecmp import LEAF_UPLINK_GROUP
    from controller.p4rt.codec import decode
    from scenarios.monitoring import MonitoringSession
    from testbed.faults import FaultInjector
    from testbed.traffic import testbed_up

    said: list[str] = []
    moved = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        if "probe path(s) re-predicted" in line:
            moved.set()

    state_path = tmp_path / "state.json"
    with testbed_up(log_dir=tmp_path / "logs", state_path=state_path) as tb:
        ports = tb.fabric.switch(LEAF).ports
        keep = next(p for p, pi in ports.items() if pi.peer_node == KEEP)
        conn = tb.programmer.connections[LEAF]
        (planned,) = [e for e in conn.read_table(GROUPS)
                      if decode(e.match[0].exact.value) == LEAF_UPLINK_GROUP]
        params = {conn.p4info.action_param(planned.action.action.action_id, p.param_id).name:
                  decode(p.value) for p in planned.action.action.params}
        assert params["size"] == 2
        with MonitoringSession(tb.fabric, tb.programmer, tb.state, tb.save_state,
                               tmp_path / "run", say=say) as ms:
            mon = ms.monitor
            over_drop = [p.name for p in ms.plan.paths if f"{LEAF}->{DROP}" in map(str, p.links)]
            assert over_drop and mon.wait_evaluations(4, 30)
            assert not moved.is_set()                              # the tables as planned
            # what GOR writes when the cable to s1 is out: the group over its s0 member
            base = params["base"]
            index_of_keep = sorted(p for p, pi in ports.items()
                                   if pi.peer_node in (KEEP, DROP)).index(keep)
            assert index_of_keep == 0
            group = conn.table_entry(GROUPS, {"meta.ecmp_group_id": LEAF_UPLINK_GROUP},
                                     "FabricIngress.ecmp.select_member", {"base": base, "size": 1})
            conn.modify(group)
            try:
                assert moved.wait(20), said
                line = next(s for s in said if "re-predicted" in s)
                assert f"changed on {LEAF}" in line and all(n in line for n in over_drop[:8]), line
                injector = FaultInjector(tb.fabric, tb.state, state_path=state_path)
                since = len(mon.verdicts)
                rec = injector.inject("gray_link", f"link {LEAF}->{KEEP}", loss_pct=30.0)
                try:
                    v = mon.wait_verdict(lambda v: True, 30, since=since)
                finally:
                    injector.undo(rec.name)
                assert v is not None, said[-10:]
                assert (v.kind, v.component) == ("gray_link", f"link {LEAF}->{KEEP}"), (v, said[-10:])
            finally:
                conn.modify(conn.table_entry(GROUPS, {"meta.ecmp_group_id": LEAF_UPLINK_GROUP},
                                             "FabricIngress.ecmp.select_member",
                                             {"base": base, "size": 2}))
        assert not [r for r in tb.state.procs if r.kind == "monitor"]
