"""A restarted switch is reconciled: on real p4sim switches, a leaf whose process restarts
(empty) is found lost, reconnected with the same election id, given its pipeline and plan
back — its ECMP group without the link GOR took down — and GOR's own override and
sampling entries, and polled again from a fresh baseline (no reset interval, no false
dead-link verdict). With fakes: a hung switch does not stop the poller, an intact switch
whose counters went backwards is not re-programmed, ``switch_lost`` / ``switch_back``."""
from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from controller.fabric_setup import T_GROUPS, T_MEMBERS, T_ROUTES, FabricProgrammer
from controller.gor.decisions import FlowKey
from controller.gor.log import DecisionLog
from controller.gor.loop import GorLoop
from controller.gor.metrics import GorMetrics
from controller.gor.orders import OVERRIDE_ACTION, OVERRIDE_TABLE, override_match
from controller.gor.recovery import SwitchRecovery
from controller.fabric.sourceguard import T_GUARD_PORTS, T_GUARD_SOURCES
from controller.gor.tables import SAMPLING_TABLE
from controller.telemetry.poller import (PolledLink, PortReading, TelemetryPoller, connection_reader,
                                      SwitchHealth, fabric_links)
from controller.telemetry.counters import LinkId
from controller.p4rt.codec import decode
from controller.switch_restore import SwitchCheck
from controller.fabric.monitoring import elephants_for_rate
from p4sim_fabric import LEAF, OTHER
from p4src.alarmmodel import ELEPHANT_TABLE
from scenarios.gor_session import set_elephant_thresholds
from p4sim_fabric import switch_process as _switch

def _params(conn: Any, te: Any) -> dict[str, int]:
    act = conn.p4info.get("action", te.action.action.action_id)
    names = {p.id: p.name for p in act.params}
    return {names[p.param_id]: decode(p.value) for p in te.action.action.params}


def _exact(te: Any) -> int:
    return decode(te.match[0].exact.value)


def test_restarted_leaf_gets_its_plan_live_groups_and_gor_entries_back(live: Any) -> None:
    fab, prog, procs = live
    buf = io.StringIO()
    loop = GorLoop(fab, prog, None, log=DecisionLog(buf), metrics=GorMetrics())
    uplinks = [p for p, i in sorted(fab.switch(LEAF).ports.items()) if i.kind == "uplink"]
    dead, sampled = uplinks[0], uplinks[1]
    assert loop.link_down(LEAF, dead)                         # GOR took a link down
    loop.faults.probes[(LEAF, sampled)] = 0.0                          # a port GOR keeps sampling
    assert loop.sampler.enable((LEAF, sampled), 0.0)
    src = next(n.ip for h in fab.hosts for n in h.nics if n.leaf == LEAF)
    dst = next(n.ip for h in fab.hosts for n in h.nics if n.leaf == OTHER)
    flow = FlowKey(src, dst, 17, 49200, 4791)
    path = next(p for p in loop.engine.candidate_paths(LEAF, OTHER) if p.links[0] != (LEAF, dead))
    for e in loop.engine.override_entries(path):               # an override in force
        loop.tables.write(e.switch, OVERRIDE_TABLE, override_match(flow), OVERRIDE_ACTION,
                    {"nexthop_id": e.nexthop_id})
    loop.overrides[flow] = path
    live_before = loop.live_groups(LEAF)
    assert dead not in live_before[1] and len(live_before[1]) == len(uplinks) - 1
    set_elephant_thresholds(fab, prog, 17143, lambda _: None)     # the story's, at 3000 pps a flow

    poller = TelemetryPoller({n: connection_reader(prog.connections, n) for n in prog.connections},
                             fabric_links(fab), read_timeout_s=2.0)
    recovery = SwitchRecovery(prog, poller, loop, connect_timeout_s=1.0)
    poller.poll_once()
    old_conn = prog.connections[LEAF]
    addr, device_id = procs[LEAF].grpc_addr, fab.switch(LEAF).device_id
    procs[LEAF].stop()
    t = 1.0
    loop.observe_health(poller.health, t)
    loop.tick(t, poller.poll_once())
    procs[LEAF] = _switch(device_id, addr)                    # same address, empty
    deadline = time.monotonic() + 60
    while not any(e[0] == "switch_back" for e in loop.switch_log) and time.monotonic() < deadline:
        t += 0.05
        samples = poller.poll_once()
        loop.observe_health(poller.health, t)
        recovery.check_once()
        loop.tick(t, samples)
    kinds = [(e[0], e[1]) for e in loop.switch_log]
    assert kinds == [("switch_lost", LEAF), ("switch_back", LEAF)], loop.switch_log
    back = loop.switch_log[-1][3]
    assert back["reinstalled"] and back["reason"] == "no pipeline" and back["failed"] == [], back
    assert back["sampling"] == 1 and back["overrides"] == 1, back
    conn = prog.connections[LEAF]
    assert conn is not old_conn and conn.is_primary and conn.election_id == old_conn.election_id
    assert conn.pipeline_cookie() == (True, prog.cookie)
    assert len(conn.read_table(T_ROUTES)) == prog.plans[LEAF].count(T_ROUTES)
    guarded = {_exact(te) for te in conn.read_table(T_GUARD_PORTS)}   # the source guard is back
    assert guarded and guarded == {p for p, i in fab.switch(LEAF).ports.items() if i.kind == "host"}
    assert len(conn.read_table(T_GUARD_SOURCES)) == prog.plans[LEAF].count(T_GUARD_SOURCES) > 0
    nexthops = {_exact(te): _params(conn, te)["nexthop_id"] for te in conn.read_table(T_MEMBERS)}
    [group] = conn.read_table(T_GROUPS)
    g = _params(conn, group)
    assert [nexthops[g["base"] + i] for i in range(g["size"])] == list(live_before[1])  # dead stays out
    assert [_exact(te) for te in conn.read_table(SAMPLING_TABLE)] == [sampled]
    switches = {sw.name for sw in fab.switches}
    elephants = {_exact(te): _params(conn, te) for te in conn.read_table(ELEPHANT_TABLE)}
    fabric_ports = {p for p, i in fab.switch(LEAF).ports.items() if i.peer_node in switches}
    assert fabric_ports and all(elephants[p] == elephants_for_rate(17143).table_params()
                                for p in fabric_ports), elephants      # not the plan's default
    [ov] = conn.read_table(OVERRIDE_TABLE)
    assert _params(conn, ov)["nexthop_id"] == path.links[0][1]
    # polled again from a fresh baseline: no interval spans the restart, no false verdict
    first = poller.poll_once()
    assert not any(l.switch == LEAF for l in first)             # the baseline reading
    again = poller.poll_once()
    mine = [s for l, s in again.items() if l.switch == LEAF]
    assert mine and not any(s.reset or s.tx_pkts < 0 for s in mine)
    loop.tick(t + 0.1, again)
    assert loop.faults.counter_down == set() and poller.stale_switches() == []
    logged = [json.loads(x)["event"] for x in buf.getvalue().splitlines()]
    assert logged.count("link_down") == 1 and "switch_lost" in logged and "switch_back" in logged
    assert recovery.events and recovery.events[0].report.pushed


# ------------------------------------------------------------------ fakes
class _Health:
    stale = True
    last_error = "UNAVAILABLE"


def test_a_hung_switch_does_not_stop_the_poller() -> None:
    gate = threading.Event()

    def hung(ports: Any) -> dict[int, PortReading]:
        gate.wait(30)
        return {}

    def fine(ports: Any) -> dict[int, PortReading]:
        fine.n += 1  # type: ignore[attr-defined]
        return {p: PortReading(fine.n * 10, 0, 0, 0) for p in ports}  # type: ignore[attr-defined]
    fine.n = 0  # type: ignore[attr-defined]
    links = [PolledLink(LinkId("a", 1, "b", "uplink")), PolledLink(LinkId("b", 1, "a", "downlink"))]
    poller = TelemetryPoller({"a": hung, "b": fine}, links, read_timeout_s=0.2)
    try:
        poller.poll_once()
        got = poller.poll_once()
        assert poller.stale_switches() == ["a"] and [str(l) for l in got] == ["b->a"]
        assert "no answer" in poller.health["a"].last_error
    finally:
        gate.set()


def test_a_restored_switch_is_not_marked_stale_by_a_read_over_its_old_connection() -> None:
    # CI caught it: the old connection's in-flight read failed ("Channel closed") after the
    # restore, the switch went stale again, and recovery restored it ten times over.
    started, gate = threading.Event(), threading.Event()

    def old_conn(ports: Any) -> dict[int, PortReading]:
        started.set()
        gate.wait(30)
        raise ValueError("Cannot invoke RPC: Channel closed!")

    links = [PolledLink(LinkId("a", 1, "b", "uplink"))]
    poller = TelemetryPoller({"a": old_conn}, links, read_timeout_s=5.0)
    poll = threading.Thread(target=poller.poll_once)
    poll.start()
    try:
        assert started.wait(5)
        poller.health.setdefault("a", SwitchHealth()).stale_since_s = 1.0   # it was lost
        poller.release("a", answered=True)                 # restored on a new connection
        assert poller.stale_switches() == []
    finally:
        gate.set()
        poll.join(10)
    assert poller.stale_switches() == [], poller.health["a"].last_error


class _FakeConn:
    p4info = object()
    stream_alive = True

    def pipeline_cookie(self) -> tuple[bool, int]:
        return True, 5

    def read_table(self, name: str) -> list[int]:
        return [1, 2, 3]


class _Plan:
    def count(self, table: str) -> int:
        return 3


def test_intact_switch_with_reset_counters_is_not_reprogrammed() -> None:
    class Prog:
        connections = {"s0": _FakeConn()}
        plans = {"s0": _Plan()}
        cookies = {"s0": 5}

        def connect_switch(self, *a: Any, **k: Any) -> Any:
            raise AssertionError("must not reconnect an intact switch")

    class Poller:
        resets = {"s0": 1.0}
        held: set[str] = set()
        health: dict[str, Any] = {}

        def stale_switches(self) -> list[str]:
            return []

    class Loop:
        recovery_attached = False

    rec = SwitchRecovery(Prog(), Poller(), Loop())
    assert rec.check_once() == [] and Poller.resets == {} and rec.lost == {}
    assert SwitchCheck(True, 6, 3, 3, expected_cookie=5).empty       # re-pushed by someone else


def test_lost_is_logged_once_and_back_only_after_restore() -> None:
    from test_gor_loop import make
    _, loop, _, _, buf, metrics = make()
    loop.recovery_attached = True
    loop.observe_health({"s0": _Health()}, 1.0)
    loop.observe_health({"s0": _Health()}, 1.1)
    loop.submit_switch_lost("s0", "stream channel closed")           # already logged
    loop.tick(1.2, {})
    class Ok:
        stale = False
    loop.observe_health({"s0": Ok()}, 1.3)                           # answers: not yet back
    logged = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert [e["event"] for e in logged] == ["switch_lost"] and logged[0]["error"] == "UNAVAILABLE"
    assert "gor_switch_stale{switch=\"s0\"} 1" in metrics.render()
    loop.submit_switch_back("s0", None, 0.5)
    loop.tick(1.4, {})
    logged = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert [e["event"] for e in logged] == ["switch_lost", "switch_back"]
    assert logged[1]["reinstalled"] is False and logged[1]["lost_s"] == 0.5
    assert "gor_switch_stale{switch=\"s0\"} 0" in metrics.render()


def test_status_lists_a_lost_switch_until_it_is_back() -> None:
    from controller.gor.status import snapshot_from_log
    lost = {"event": "switch_lost", "switch": "b0r0l0", "error": "UNAVAILABLE"}
    back = {"event": "switch_back", "switch": "b0r0l0", "reinstalled": True}
    assert snapshot_from_log([lost]).stale == ["b0r0l0"]
    assert snapshot_from_log([lost, back]).stale == []
    assert "stale switches: b0r0l0" in snapshot_from_log([lost]).render()
