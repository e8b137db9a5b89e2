"""The story's pieces without Mininet: colliding draws from the hash model, the figures
measured from a decision log and per-tick uplink rates, and the report section."""
from __future__ import annotations

import hashlib
import math
from collections import Counter
from pathlib import Path
from typing import Optional

import pytest

from controller.fabric.admission import ADMISSION_DROPS_COUNTER
from controller.fabric.detours import fabric_hash_model
from controller.fabric.tiers import TierModel
from controller.fabric_setup import FabricProgrammer
from controller.gor.candidates import nic_port_leaves
from controller.gor.decisions import FlowKey, MoveOrder
from controller.gor.paths import ElephantFlow, LinkState, PathEngine
from controller.p4rt.messages import CounterData
from topo import FabricSpec, build_fabric
from topo.spec import load_spec
from scenarios.gor_session import source_uplinks
from scenarios.story import (EVEN_UTIL, StoryResult, append_story, draw_colliding, measure,
                             queue_limit_drops, shortfalls)
import testbed.control as control
from testbed.control import OffProgramDrops

REPO = Path(__file__).resolve().parents[2]


def test_draws_until_the_hash_model_overloads_an_uplink() -> None:
    fab = build_fabric(FabricSpec())
    fp = FabricProgrammer(fab, REPO / "build" / "unused.p4info", REPO / "build" / "unused.json")
    said: list[str] = []
    seed, flows, rate = draw_colliding(fab, fp, 8, 0, 7, 60.0, say=said.append)
    assert seed >= 7 and len(flows) == 8 and len(said) == seed - 7
    assert rate == 343.0 and 4 * 60.0 / rate <= EVEN_UTIL       # an even spread fits under 75 %
    load: dict[str, int] = {}
    for f in flows:
        load[str(f.predicted_uplink)] = load.get(str(f.predicted_uplink), 0) + 1
    assert max(load.values()) * 60.0 > rate                        # the drawn ports collide
    again = draw_colliding(fab, fp, 8, 0, 7, 60.0, say=lambda _: None)
    assert again[0] == seed and [f.sport for f in again[1]] == [f.sport for f in flows]


def _log() -> list[dict[str, object]]:
    f1, f2 = "10.0.0.1:50000->10.1.0.1:4791/17", "10.0.0.2:50001->10.1.0.1:4791/17"
    return [{"event": "alarm_raised", "mono_s": 10.0},
            {"event": "order_sent", "mono_s": 11.0, "flow": f1},
            {"event": "order_sent", "mono_s": 11.0, "flow": f2},
            {"event": "order_confirmed", "mono_s": 11.5, "flow": f1,
             "new_flow": "10.0.0.1:49153->10.1.0.1:4791/17"},
            {"event": "order_confirmed", "mono_s": 12.0, "flow": f2,
             "new_flow": "10.0.0.2:49153->10.1.0.1:4791/17"},
            {"event": "order_sent", "mono_s": 14.0, "flow": "10.0.0.1:49153->10.1.0.1:4791/17"}]


def test_measure_figures_from_the_log_and_the_ticks() -> None:
    up = {"l->s0": ("l", 3), "l->s1": ("l", 4)}
    ticks = [(9.0 + 0.5 * i, {"l->s0": 360.0, "l->s1": 120.0}, 0) for i in range(4)]       # 9 … 10.5
    ticks += [(11.0 + 0.5 * i, {"l->s0": 300.0, "l->s1": 180.0}, 1) for i in range(3)]    # 11 … 12
    ticks += [(12.5 + 0.5 * i, {"l->s0": 240.0, "l->s1": 240.0}, 0) for i in range(10)]   # 12.5 …
    counts = [(t, {u: (round(r * 0.5), 0.5) for u, r in pps.items()}) for t, pps, _ in ticks]
    res = StoryResult(0, queue_rate_pps=343.0, events=_log())
    measure(res, ticks, up, 343.0, 0.5, counts)
    assert res.loop_s == 2.0                                       # first alarm → last seen
    assert res.uplink_pps_before == {"l->s0": 360.0, "l->s1": 120.0}
    assert res.uplink_pps_after == {"l->s0": 240.0, "l->s1": 240.0}
    assert res.max_util_before_pct == 105.0 and res.max_util_after_pct == 70.0
    assert res.spread(res.uplink_pps_after) == 1.0 and res.drops_during_move == 3
    # the flow ordered again under its new port counts as moved twice (a flip-flop)
    assert res.moves_per_flow["10.0.0.1:50000->10.1.0.1:4791/17"] == 2


def test_polls_with_traffic_but_no_window_is_not_called_unanswered() -> None:
    """A loaded machine (make run at load 8): GOR ordered before the second poll that saw
    traffic and was still moving flows when they ended. The switches did answer: the
    reason says the windows were empty, not that no poll was answered."""
    up = {"l->s0": ("l", 3), "l->s1": ("l", 4)}
    ticks = [(10.5 + 0.5 * i, {"l->s0": 300.0, "l->s1": 180.0}, 0) for i in range(4)]   # 10.5 … 12
    counts = [(t, {u: (round(r * 0.5), 0.5) for u, r in pps.items()}) for t, pps, _ in ticks]
    res = StoryResult(0, queue_rate_pps=343.0, events=_log())
    measure(res, ticks, up, 343.0, 0.5, counts)
    assert res.polls_with_traffic == 4
    assert res.max_util_before_pct is None and res.max_util_after_pct is None
    why = shortfalls(res)[0]
    assert why.startswith("no before/after figures: 4 polls read traffic") and "2.0 s" in why
    idle = StoryResult(0, queue_rate_pps=343.0, events=_log())
    measure(idle, [(t, {u: 0.0 for u in up}, 0) for t, _, _ in ticks], up, 343.0, 0.5, [])
    assert shortfalls(idle)[0].startswith("no uplink counters were read")


def test_moves_that_settle_after_the_flows_end_fail_the_story() -> None:
    """A quiet 2-core machine at 3000 pps (2026-12-07): the uplinks had a "before" but GOR's
    last move was seen 11.75 s after the first alarm, so no poll fell after the moves
    settled. The story printed "not measured" for its result and exited 0; it must fail."""
    up = {"l->s0": ("l", 3), "l->s1": ("l", 4)}
    ticks = [(10.0 + 0.5 * i, {"l->s0": 360.0, "l->s1": 120.0}, 0) for i in range(6)]   # 10 … 12.5
    counts = [(t, {u: (round(r * 0.5), 0.5) for u, r in pps.items()}) for t, pps, _ in ticks]
    res = StoryResult(0, queue_rate_pps=343.0, events=_log())     # last seen at 12 s
    measure(res, ticks, up, 343.0, 0.5, counts)
    assert res.max_util_before_pct is not None and res.max_util_after_pct is None
    why = shortfalls(res)
    assert len(why) == 1 and why[0].startswith("no 'after' figure") and f"{res.loop_s} s" in why[0]


def test_report_section(tmp_path: Path) -> None:
    res = StoryResult(0, tmp_path, 7, 343.0, _log(), 2.0, {"a": 360.0}, {"a": 240.0}, 105.0, 70.0, 0)
    append_story(tmp_path, res)
    md = (tmp_path / "report.md").read_text()
    assert "## GOR re-route" in md and "105.0% → 70.0%" in md and "gor.loop_s" in md


def _draws_digest(spec: FabricSpec) -> str:
    fab = build_fabric(spec)
    fp = FabricProgrammer(fab, REPO / "build" / "unused.p4info", REPO / "build" / "unused.json")
    rows = []
    for seed0 in (1, 7, 885677274):
        for count in (4, 8):
            s, flows, rate = draw_colliding(fab, fp, count, 0, seed0, 500.0, say=lambda _: None)
            rows.append(repr((s, rate, [(f.src_ip, f.dst_ip, f.sport, f.nic_port, f.leaf, f.gateway_mac,
                                         str(f.predicted_uplink), f.qpn) for f in flows])))
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def test_report_without_a_before_window_keeps_the_after_figures(tmp_path: Path) -> None:
    """A run where GOR ordered before the second poll with traffic (make run at load 16):
    the table listed only the uplinks of the empty "before" (so none) and the line read
    "None% → 62.8%"; the after column stays and the missing figure is said in words."""
    res = StoryResult(0, tmp_path, 7, 343.0, _log(), 2.0, {}, {"a": 215.0, "b": 221.0}, None, 62.8, 0)
    append_story(tmp_path, res)
    md = (tmp_path / "report.md").read_text()
    assert "| a | — | 215.0 |" in md and "| b | — | 221.0 |" in md
    assert "not measured (no poll in that window) → 62.8%" in md and "None" not in md


def test_single_port_draws_are_unchanged() -> None:
    """Sizing the queue rate over both ports' leaves (issue 29) changes nothing on NICs of
    one port: seeds, ports, leaves, predictions and rates as on main 1d1185a, byte for
    byte (sha256 of their repr), one pod and two."""
    assert _draws_digest(load_spec(REPO / "topo" / "specs" / "default.yaml")) == (
        "a7ea09fbcc4c1cc0471637c97d7e282fe1a4f8d089ac62cf499631e69cf5ebd2")
    assert _draws_digest(FabricSpec(pods=2, blocks=1, cores=2)) == (
        "ffdc9e11459cbd04a7eba0fb9085d874c5f1cd8ad83bea432f1ec3ca7b676a21")


def test_dual_port_rate_is_sized_over_both_leaves() -> None:
    """On the two-pod dual-port spec the random draw puts QPs on both ports (the bond's
    hash), and the queue rate makes an even spread over all four uplinks of the two leaves
    70 %: 2 of the 8 flows per uplink fit under GOR's 75 %, 3 do not, so GOR can reach
    max/mean 1.0. Sized from port 0's leaf alone it was twice that (2858 pps)."""
    fab = build_fabric(load_spec(REPO / "topo" / "specs" / "pod2-dualport.yaml"))
    fp = FabricProgrammer(fab, REPO / "build" / "unused.p4info", REPO / "build" / "unused.json")
    seed, flows, rate = draw_colliding(fab, fp, 8, 0, 885677274, 500.0, say=lambda _: None)
    ups = source_uplinks(fab, flows)
    assert sorted(ups) == ["b0r0l0->s0", "b0r0l0->s1", "b0r0l1->s0", "b0r0l1->s1"]
    assert rate == math.ceil(8 * 500.0 / 4 / EVEN_UTIL) == 1429.0
    assert {f.nic_port for f in flows} == {0, 1} and {f.leaf for f in flows} == {"b0r0l0", "b0r0l1"}
    load = Counter(str(f.predicted_uplink) for f in flows)
    assert set(load) <= set(ups) and max(load.values()) * 500.0 > rate      # a collision
    assert 2 * 500.0 <= 0.75 * rate < 3 * 500.0     # 2 per uplink is under the rule, 3 over


def test_gor_rounds_on_the_hash_model_reach_an_even_spread_on_pod2() -> None:
    """GOR's engine, round after round on the loads the hash model predicts for the story's
    draw on the two-pod dual-port spec (8 flows, queue rate over the four uplinks of both
    leaves), moves flows by source port or NIC port until no link is over the 75 % rule:
    every uplink and every downlink then carries 2 flows, max/mean over the four source
    uplinks 1.0. Offline: no switches, the same engine the live story runs."""
    fab = build_fabric(load_spec(REPO / "topo" / "specs" / "pod2-dualport.yaml"))
    fp = FabricProgrammer(fab, REPO / "build" / "unused.p4info", REPO / "build" / "unused.json")
    tiers, hm = TierModel.of(fab), fabric_hash_model(fab)
    leaves, nics = nic_port_leaves(fab), {n.ip: n for h in fab.hosts for n in h.nics}
    for seed0 in (885677274, 7):
        _, flows, rate = draw_colliding(fab, fp, 8, 0, seed0, 250.0, say=lambda _: None)
        cap = 200e9
        bps = 250.0 / rate * cap                     # one flow, in the loads' basis
        state = [[f.src_ip, f.dst_ip, f.sport, f.nic_port] for f in flows]

        def walks() -> list[tuple[tuple[str, int], ...]]:
            return [tiers.path(nics[a], p, b, sp).hops[:-1] for a, b, sp, p in state]
        for _ in range(12):
            load = Counter(l for w in walks() for l in w)
            hot = sorted(l for l, n in load.items() if n * bps > 0.75 * cap)
            if not hot:
                break
            eng = PathEngine(fab, hm, LinkState.from_fabric(fab))
            for l, n in load.items():
                eng.links.load_bps[l] = n * bps
            on = [i for i, w in enumerate(walks()) if hot[0] in w]
            els = [ElephantFlow(FlowKey(a, b, 17, sp, 4791), bps, leaves[a][p], leaves[b][0], nic_port=p,
                                other_ports=tuple((q, lf) for q, lf in enumerate(leaves[a]) if q != p),
                                dst_leaves=leaves[b][1:]) for a, b, sp, p in (state[i] for i in on)]
            dec = eng.decide(els, trigger=hot[0])
            assert dec.orders, (seed0, dec.to_dict())
            for o in dec.orders:
                assert isinstance(o, MoveOrder)
                i = next(i for i in on if (state[i][0], state[i][1], state[i][2]) == (o.flow.src, o.flow.dst,
                                                                                     o.flow.sport))
                state[i][2] = o.new_sport
                state[i][3] = state[i][3] if o.nic_port is None else o.nic_port
        load = Counter(l for w in walks() for l in w)
        ups = [load[(leaf, p)] for leaf in ("b0r0l0", "b0r0l1") for p in (3, 4)]
        assert ups == [2, 2, 2, 2] and max(load.values()) == 2, (seed0, ups)


def test_report_names_the_drops_no_p4_counter_sees(tmp_path: Path) -> None:
    """The switches' traffic-manager tail drops and receive-ring drops (p4sim's control API)
    are in the report: the P4 drop counters, hence ``drops_during_move``, never see them
    (issue 32, i32-story-s46: 2,300-12,500 tail drops a run at 3000 pps with
    ``drops_during_move`` 0)."""
    res = StoryResult(0, tmp_path, 7, 343.0, _log(), 2.0, {"a": 360.0}, {"a": 240.0}, 105.0, 70.0, 0)
    res.off_program_drops = {"b0r0l0": OffProgramDrops(7702, 0), "s0": OffProgramDrops(0, 3239)}
    append_story(tmp_path, res)
    md = (tmp_path / "report.md").read_text()
    assert "gor.drops_during_move: 0 (the P4 program's drop counters)" in md
    assert "receive-ring drops, whole run): 10941 (b0r0l0 7702 + 0, s0 0 + 3239)" in md


def test_report_names_the_drops_of_the_egress_queue_limit(tmp_path: Path) -> None:
    """What the egress queue limit dropped (the queues' tail drops before it, sec-red-s47)
    is in the report, read from each switch's ``FabricIngress.admission.drops``."""
    class Conn:
        def __init__(self, cells: dict[int, int]) -> None:
            self.cells = cells

        def read_counter(self, counter: str, index: Optional[int] = None) -> dict[int, CounterData]:
            assert counter == ADMISSION_DROPS_COUNTER and index is None
            return {i: CounterData(n, 1000 * n) for i, n in self.cells.items()}

    res = StoryResult(0, tmp_path, 7, 343.0, _log(), 2.0, {"a": 360.0}, {"a": 240.0}, 105.0, 70.0, 0)
    res.queue_limit_drops = queue_limit_drops({"s0": Conn({}), "b0r0l0": Conn({3: 700, 4: 2})})
    append_story(tmp_path, res)
    assert "FabricIngress.admission.drops, whole run): 702 (b0r0l0 702)" in (tmp_path / "report.md").read_text()


def test_off_program_drops_reads_each_p4sim_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each switch's control API is asked once; one that does not answer is left out."""
    class FakeControl:
        def __init__(self, name: str) -> None:
            self.name, self.closed = name, False

        def off_program_drops(self) -> OffProgramDrops:
            if self.name == "s1":
                raise control.ControlError("switch s1: port_counters: timed out")
            return control.OffProgramDrops.of({3: {"rx_dropped": 4, "queues": [{"dropped": 9}]}})

        def close(self) -> None:
            self.closed = True

    opened: list[FakeControl] = []

    def fake_open(target: str, record: dict, name: str) -> FakeControl:
        if not record:
            raise control.ControlError(f"switch {name}: no p4sim control address recorded")
        opened.append(FakeControl(name))
        return opened[-1]

    monkeypatch.setattr(control, "open_control", fake_open)
    got = control.off_program_drops("p4sim", {"s0": {"control_addr": "a"}, "s1": {"control_addr": "b"},
                                              "s2": {}})
    assert got == {"s0": OffProgramDrops(9, 4)}
    assert [c.name for c in opened] == ["s0", "s1"] and all(c.closed for c in opened)
