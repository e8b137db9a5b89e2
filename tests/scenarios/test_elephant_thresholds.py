"""The switches' elephant threshold scaled with the links' rate (issue 32, branch i32-loop):
``controller.fabric.monitoring.elephants_for_rate`` and the story's
``scenarios.gor_session.set_elephant_thresholds``."""
from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from p4.v1 import p4runtime_pb2

from controller.fabric.monitoring import DEFAULT_ELEPHANTS, ELEPHANT_SHARE, elephants_for_rate
from controller.fabric_setup import plan_fabric
from controller.switch_restore import reprogram_switch
from p4src.alarmmodel import ELEPHANT_ACTION, ELEPHANT_TABLE, ElephantConfig
from scenarios.gor_session import GorSession, set_elephant_thresholds
from topo import FabricSpec, build_fabric


def burst_rate_pps(cfg: ElephantConfig, flow_pps: float, stall_s: float) -> float:
    """The rate a switch reports for a flow of ``flow_pps`` whose window opens with the
    packets of a ``stall_s`` scheduling stall handed on at once (the p4sim data plane reads
    them in one batch: their ingress timestamps are a microsecond apart), the rest paced:
    ``threshold_pkts - 1`` gaps over the time from the window's first packet to the
    packet that crosses the threshold (``p4src.alarmmodel.ElephantReport.rate_pps``)."""
    burst = max(1, min(cfg.threshold_pkts, round(flow_pps * stall_s)))
    span_s = (burst - 1) * 1e-6 + (cfg.threshold_pkts - burst) / flow_pps
    return (cfg.threshold_pkts - 1) / span_s


def test_old_rates_keep_the_default() -> None:
    assert elephants_for_rate(343) is DEFAULT_ELEPHANTS           # the story's rate before issue 32
    assert elephants_for_rate(1) is DEFAULT_ELEPHANTS


@pytest.mark.parametrize("link_pps", [8572.0, 17143.0, 28572.0, 100_000.0])
def test_threshold_is_a_share_of_the_link(link_pps: float) -> None:
    cfg = elephants_for_rate(link_pps)
    per_s = cfg.threshold_pkts * 1e6 / cfg.window_us
    assert per_s == pytest.approx(ELEPHANT_SHARE * link_pps, rel=0.01)
    assert cfg.alarm_min_pkts == cfg.threshold_pkts + 1     # only flows past the threshold
    assert cfg.window_us == DEFAULT_ELEPHANTS.window_us


@pytest.mark.parametrize("flow_pps, link_pps", [(1500.0, 8572.0), (3000.0, 17143.0), (5000.0, 28572.0)])
def test_a_stall_barely_moves_the_reported_rate(flow_pps: float, link_pps: float) -> None:
    """A 5 ms stall (a busy 2-core machine) at the window's start: with the default's 20
    packets the reported rate is 1.5 to hundreds of times the flow's (the story at 3000 packets/s
    per elephant saw 5-45 times the uplink's capacity), scaled it is within 10 %."""
    stall_s = 0.005
    assert burst_rate_pps(DEFAULT_ELEPHANTS, flow_pps, stall_s) > 1.5 * flow_pps
    assert burst_rate_pps(elephants_for_rate(link_pps), flow_pps, stall_s) == pytest.approx(flow_pps, rel=0.10)


def test_bad_rate_is_refused() -> None:
    with pytest.raises(ValueError, match="not positive"):
        elephants_for_rate(0)
    with pytest.raises(ValueError, match="share"):
        elephants_for_rate(1000, share=0)


class _Conn:
    """Records P4Runtime writes; an INSERT of an entry that exists fails ALREADY_EXISTS."""

    class _Exists(Exception):
        def codes(self) -> list[str]:
            return ["ALREADY_EXISTS"]

    def __init__(self, log: list[tuple[str, Any]]) -> None:
        self.log = log

    def table_entry(self, table: str, match: Any, action: Any = None, params: Any = None) -> Any:
        return (table, dict(match), action, dict(params or {}))

    def insert(self, te: Any) -> None:
        raise self._Exists()                 # the plan wrote every elephant entry

    def modify(self, te: Any) -> None:
        self.log.append(("modify", te))


def test_story_rewrites_every_switch_to_switch_port() -> None:
    fabric = build_fabric(FabricSpec())
    log: list[tuple[str, Any]] = []
    programmer = type("P", (), {"connections": {sw.name: _Conn(log) for sw in fabric.switches},
                                "plans": plan_fabric(fabric)})()
    said: list[str] = []
    n = set_elephant_thresholds(fabric, programmer, 17143, said.append)
    names = {sw.name for sw in fabric.switches}
    fabric_ports = sum(1 for sw in fabric.switches for info in sw.ports.values() if info.peer_node in names)
    assert n == fabric_ports == len(log) > 0
    assert all(te[0] == ELEPHANT_TABLE and te[2] == ELEPHANT_ACTION
               and te[3] == elephants_for_rate(17143).table_params() for _, te in log)
    assert "429 packets" in said[0]
    log.clear()
    assert set_elephant_thresholds(fabric, programmer, 343, said.append) == 0 and not log


class _EmptySwitch:
    """A switch process that restarted: no pipeline; records what the recovery writes."""

    def __init__(self) -> None:
        self.p4info = None
        self.entries: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        self.meters: list[tuple[str, Any, Any]] = []
        self.pushed = 0

    def pipeline_cookie(self) -> tuple[bool, None]:
        return False, None

    def push_pipeline(self, *args: Any) -> None:
        self.pushed += 1

    def table_entry(self, table: str, match: Any, action: Any = None, params: Any = None,
                    is_default: bool = False) -> p4runtime_pb2.TableEntry:
        self.entries.append((table, dict(match), dict(params or {})))
        return p4runtime_pb2.TableEntry()

    def meter_entry(self, meter: str, index: Any = None, config: Any = None) -> p4runtime_pb2.MeterEntry:
        self.meters.append((meter, index, config))          # the ARP punt policer's cells
        return p4runtime_pb2.MeterEntry()

    def write(self, updates: Any) -> None:
        pass


def test_a_restarted_switch_gets_the_scaled_threshold_back_not_the_plans_default() -> None:
    """GOR's recovery re-programs a switch that restarted empty from its plan
    (``reprogram_switch``): the plan follows the scaled threshold, so the switch's
    switch-to-switch ports get it back, its host ports keep the default (i32-loop's
    "not done")."""
    fabric = build_fabric(FabricSpec())
    log: list[tuple[str, Any]] = []
    programmer = type("P", (), {"connections": {sw.name: _Conn(log) for sw in fabric.switches},
                                "plans": plan_fabric(fabric), "cookies": {}, "cookie": 7,
                                "p4info_path": "p4info", "device_config_path": "config"})()
    set_elephant_thresholds(fabric, programmer, 17143, lambda _: None)
    names = {sw.name for sw in fabric.switches}
    leaf = next(sw for sw in fabric.switches if any(i.kind == "uplink" for i in sw.ports.values()))
    conn = _EmptySwitch()
    rep = reprogram_switch(programmer, leaf.name, conn)
    assert rep.pushed and conn.pushed == 1
    got = {m["standard_metadata.egress_spec"]: p for t, m, p in conn.entries if t == ELEPHANT_TABLE}
    fabric_ports = {p for p, i in leaf.ports.items() if i.peer_node in names}
    assert fabric_ports and fabric_ports <= set(got)
    assert all(got[p] == elephants_for_rate(17143).table_params() for p in fabric_ports), got
    assert all(v == DEFAULT_ELEPHANTS.table_params() for p, v in got.items() if p not in fabric_ports)
    assert len(got) == len(programmer.plans[leaf.name].of(ELEPHANT_TABLE))   # replaced, none added
    assert len(conn.meters) == len(programmer.plans[leaf.name].meters) > 0    # and its policer back


def test_restart_switch_leaves_the_scaled_thresholds_to_the_plan() -> None:
    """``GorSession.restart_switch`` writes no elephant threshold itself: GOR's recovery
    re-programs the restarted switch from its plan, which already holds the scaled ones,
    and the new process reads them (before: the session wrote them a second time once GOR
    had the switch back, a redundant write per switch-to-switch port). The same on a real
    restarted p4sim switch, read back over P4Runtime:
    ``tests/controller/test_switch_restart.py``."""
    fabric = build_fabric(FabricSpec())
    log: list[tuple[str, Any]] = []
    conns = {sw.name: _Conn(log) for sw in fabric.switches}
    leaf = next(sw for sw in fabric.switches if sw.name.endswith("l0"))
    programmer = type("P", (), {"connections": conns, "plans": plan_fabric(fabric), "cookies": {},
                                "cookie": 7, "p4info_path": "p4info", "device_config_path": "config"})()
    set_elephant_thresholds(fabric, programmer, 17143, lambda _: None)
    log.clear()
    loop = SimpleNamespace(switch_log=[])
    restarted = _EmptySwitch()

    def wait_for(predicate: Any, timeout_s: float) -> bool:
        reprogram_switch(programmer, leaf.name, restarted)             # GOR's recovery
        loop.switch_log.append(("switch_back", leaf.name, 0.0, {}))
        return bool(predicate())

    s = GorSession.__new__(GorSession)
    s.runtime = SimpleNamespace(loop=loop, wait_for=wait_for, t0=time.monotonic())  # type: ignore[assignment]
    s.fabric, s.programmer = fabric, programmer
    s.rate_pps, s.rates, s.say, s.switch_restarts = 17143.0, {}, lambda _: None, []
    rec = s.restart_switch(leaf.name, lambda name: 4242, wait_s=1.0)
    assert rec.back_s is not None and restarted.pushed == 1
    assert log == []                                                    # nothing written again
    names = {sw.name for sw in fabric.switches}
    got = {m["standard_metadata.egress_spec"]: p for t, m, p in restarted.entries if t == ELEPHANT_TABLE}
    fabric_ports = {p for p, i in leaf.ports.items() if i.peer_node in names}
    assert fabric_ports and all(got[p] == elephants_for_rate(17143).table_params() for p in fabric_ports)
