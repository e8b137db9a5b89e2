"""The incast scenario's analysis (scenarios/incast_report.py) and its plumbing that needs no
network: Jain's index, the phase window over polled intervals, the prediction against the
buffer model, the checks, the report section, the flows and ports it picks, and the
in-place static <-> dynamic rewrite of the threshold entries (controller/fabric/qos.py)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from controller.fabric.entries import T_ECN, T_PFC
from controller.fabric.plan import plan_fabric
from controller.fabric.qos import THRESHOLD_TABLES, threshold_updates
from p4src.buffermodel import (DEFAULT_DYNAMIC, DynamicThresholds, PfcAlpha, SharedBuffer,
                               SharedBufferModel)
from scenarios.incast import (DATA_FRAME_BYTES, INCAST_DYNAMIC, QUEUE_PKTS, incast_pairs,
                              ingress_groups, port_rate_pps, receiver_port)
from scenarios.incast_report import (NO_PFC_REASON, FlowFigures, PhaseFigures, append_incast,
                                     checks, jain_index, predict, render_section,
                                     switch_figures, window)
from topo.model import build_fabric


def _sample(t_s: float, dt_s: float = 0.25, pfc: int = 0, marks: int = 0, drops: int = 0,
            q: int = 0) -> SimpleNamespace:
    return SimpleNamespace(t_s=t_s, dt_s=dt_s, pfc_tx=pfc, marks=marks, drops=drops, max_qdepth=q)


def test_jain_index_is_one_for_equal_shares_and_one_over_n_for_a_hog() -> None:
    assert jain_index([5.0] * 8) == 1.0
    assert jain_index([8.0, 0, 0, 0]) == 0.25
    assert jain_index([1.0, 2.0, 3.0]) == pytest.approx(36 / 42, abs=1e-3)
    assert jain_index([]) is None and jain_index([0.0]) is None


def test_switch_figures_sum_the_phase_window_and_take_the_port_peak() -> None:
    port, other = "leaf:4", "spine:1"
    series = SimpleNamespace(samples={
        port: [_sample(0.5, pfc=9, q=60), _sample(1.25, pfc=2, marks=5, q=32),
               _sample(2.0, marks=1, q=44), _sample(3.5, pfc=7, q=60)],
        other: [_sample(1.1, pfc=1, drops=3, q=60), _sample(4.0, pfc=100)]})
    # the interval ending at 0.5 started before the phase; the one at 3.5 began after it
    assert [s.t_s for s in window(series.samples[port], 1.0, 3.0)] == [1.25, 2.0]
    pfc, marks, drops, peak, n = switch_figures(series, 1.0, 3.0, port)
    assert (pfc, marks, drops, peak, n) == (3, 6, 3, 44, 3)   # another link's depth is not the port's


def test_prediction_is_the_buffer_model_of_the_switch() -> None:
    cells = INCAST_DYNAMIC.buffer.cells(DATA_FRAME_BYTES)
    assert cells == 9
    pred = predict(32, INCAST_DYNAMIC, cells, 3, QUEUE_PKTS)
    assert (pred.dynamic_lone_xoff_pkts, pred.dynamic_incast_xoff_pkts) == (43, 19)
    assert pred.static_total_pkts == 96 > QUEUE_PKTS >= pred.dynamic_total_pkts == 57
    # the switch's own model pauses a lone group of these frames at the predicted packet
    model = SharedBufferModel(INCAST_DYNAMIC)
    pauses = [model.arrive(1, 2, 3, DATA_FRAME_BYTES).pause for _ in range(60)]
    assert pauses.index(True) + 1 == pred.dynamic_lone_xoff_pkts
    # three groups filling together: each pauses at the predicted packet
    model = SharedBufferModel(INCAST_DYNAMIC)
    first: dict[int, int] = {}
    for k in range(1, 40):
        for port in (5, 6, 7):
            if model.arrive(port, 2, 3, DATA_FRAME_BYTES).pause:
                first.setdefault(port, k)
    assert max(first.values()) == pred.dynamic_incast_xoff_pkts, first


def test_a_bigger_alpha_or_fewer_groups_changes_the_prediction() -> None:
    one = DynamicThresholds(SharedBuffer(1000, 0), {3: PfcAlpha(1)})
    assert predict(32, one, 10, 1, 100).dynamic_lone_xoff_pkts == 50
    assert predict(32, one, 10, 4, 100).dynamic_incast_xoff_pkts == 20


def _phases(lone_static: int = 32, lone_dyn: int = 40, drops_static: int = 30,
            drops_dyn: int = 0, q_static: int = 60, q_dyn: int = 52) -> dict:
    def flows(lost: int) -> list[FlowFigures]:
        return [FlowFigures(f"f{i}", 100, 95, 0.5 + 0.01 * i, lost if i == 0 else 0, 3)
                for i in range(4)]
    return {("static", "lone"): PhaseFigures("static", "lone", flows(0)[:1], 3.0, 4, 20, 0,
                                             lone_static, 12),
            ("dynamic", "lone"): PhaseFigures("dynamic", "lone", flows(0)[:1], 3.0, 2, 10, 0,
                                              lone_dyn, 12),
            ("static", "incast"): PhaseFigures("static", "incast", flows(drops_static), 3.0,
                                               40, 300, 0, q_static, 12),
            ("dynamic", "incast"): PhaseFigures("dynamic", "incast", flows(drops_dyn), 3.0,
                                                50, 400, 0, q_dyn, 12)}


def test_checks_agree_with_a_run_that_behaves_as_the_reference_says() -> None:
    pred = predict(32, INCAST_DYNAMIC, 9, 3, QUEUE_PKTS)
    assert [c.ok for c in checks(_phases(), pred)] == [True, True, True, True]


def test_checks_disagree_with_a_run_that_does_not() -> None:
    pred = predict(32, INCAST_DYNAMIC, 9, 3, QUEUE_PKTS)
    bad = checks(_phases(lone_static=40, lone_dyn=32, drops_static=0, drops_dyn=5,
                         q_static=40, q_dyn=60), pred)
    assert [c.ok for c in bad] == [False, False, False, True]
    # a buffer that static groups cannot overflow does not make the case
    assert checks(_phases(), predict(32, INCAST_DYNAMIC, 9, 2, 96))[-1].ok is False


def test_on_a_target_without_pfc_the_incast_checks_are_not_applicable(tmp_path: Path) -> None:
    """BMv2's MAC honours no PAUSE (scenarios/README.md, "On BMv2"): its run (drops 298 vs
    534, both incast queues 60+) disagrees with checks 2 and 3 on p4sim's terms; there
    they are "not applicable" with the reason, while the lone port's check and the buffer
    sizes' are still judged."""
    pred = predict(32, INCAST_DYNAMIC, 9, 3, QUEUE_PKTS)
    bmv2 = _phases(lone_static=32, lone_dyn=40, drops_static=298, drops_dyn=534, q_static=60,
                   q_dyn=60)
    assert [c.ok for c in checks(bmv2, pred)] == [True, False, False, True]   # as if it paused
    got = checks(bmv2, pred, pfc_honoured=False)
    assert [c.ok for c in got] == [True, None, None, True]
    assert [bool(c.not_applicable) for c in got] == [False, True, True, False]
    assert got[1].verdict == f"not applicable ({NO_PFC_REASON})" and "534 vs 298" in got[1].measured
    # a lone port that does not queue deeper still disagrees without PFC: it is the NIC's
    assert checks(_phases(lone_static=40, lone_dyn=32), pred, pfc_honoured=False)[0].ok is False
    md = render_section(bmv2, pred, [], pfc_honoured=False)
    assert md.count("**not applicable (") == 2 and "DISAGREES" not in md
    assert md.count("**agrees**") == 2
    (tmp_path / "report.md").write_text("# run\n")
    append_incast(tmp_path, bmv2, pred, [], pfc_honoured=False)
    assert (tmp_path / "report.md").read_text().count("**not applicable (") == 2


def test_a_phase_that_measured_nothing_says_why() -> None:
    assert PhaseFigures("static", "lone", [FlowFigures("f", 10, 10, 1.0)],
                        samples=3).why_unmeasured() == []
    why = PhaseFigures("dynamic", "incast", [FlowFigures("f", 10, 0, 0.0)], samples=0,
                       errors=["sender exited 1"]).why_unmeasured()
    assert why == ["dynamic incast: sender exited 1",
                   "dynamic incast: 1 of 1 flows delivered nothing",
                   "dynamic incast: no switch counters were polled during the phase"]
    assert PhaseFigures("static", "incast").why_unmeasured() == [
        "static incast: no flow ran", "static incast: no switch counters were polled during the phase"]


def test_the_report_section_puts_the_modes_side_by_side(tmp_path: Path) -> None:
    pred = predict(32, INCAST_DYNAMIC, 9, 3, QUEUE_PKTS)
    md = render_section(_phases(), pred, ["settings line"])
    head = next(l for l in md.splitlines() if l.startswith("| |"))
    assert head == "| | static lone | dynamic lone | static incast | dynamic incast |"
    row = next(l for l in md.splitlines() if l.startswith("| drops"))
    assert row.endswith("| 0 | 0 | 30 | 0 |"), row
    assert md.count("**agrees**") == 4 and "settings line" in md
    (tmp_path / "report.md").write_text("# run\n")
    append_incast(tmp_path, _phases(), pred, [])
    assert (tmp_path / "report.md").read_text().startswith("# run\n\n## Incast")


def test_the_flows_ports_and_groups_on_the_default_fabric() -> None:
    fab = build_fabric()
    pairs, recv = incast_pairs(fab, 0, 8)
    assert recv.ip == "10.1.0.1" and len(pairs) == 8
    assert sorted({s for s, _ in pairs}) == ["10.0.0.1", "10.0.0.2", "10.1.0.2"]
    assert receiver_port(fab, recv)[0] == "b1r0l0"
    flows = [SimpleNamespace(leaf="b1r0l0", src_host="b1s1", predicted_uplink=None),
             SimpleNamespace(leaf="b0r0l0", src_host="b0s0", predicted_uplink="b0r0l0->s1"),
             SimpleNamespace(leaf="b0r0l0", src_host="b0s1", predicted_uplink="b0r0l0->s1")]
    assert ingress_groups(flows, "b1r0l0") == ["host b1s1", "spine s1"]
    assert port_rate_pps(250) == 125 and port_rate_pps(1) == 1
    with pytest.raises(ValueError, match="rail 5 has 0 NICs"):
        incast_pairs(fab, 5, 8)


def test_thresholds_go_dynamic_and_back_in_place() -> None:
    fab = build_fabric()
    static, dyn = plan_fabric(fab), plan_fabric(fab, thresholds=DEFAULT_DYNAMIC)
    for name in static:
        old, new = static[name].entries, dyn[name].entries
        ups = threshold_updates(old, new)
        ports = static[name].count(T_PFC)
        assert sum(1 for op, e in ups if op == "MODIFY" and e.table in (T_PFC, T_ECN)) == 2 * ports
        assert {op for op, _ in ups} == {"MODIFY", "INSERT"}
        assert all(e.table in THRESHOLD_TABLES for _, e in ups)
        back = threshold_updates(new, old)
        assert back[0][0] == "DELETE" and ("MODIFY", "NoAction") in {(op, e.action) for op, e in back}
        assert threshold_updates(old, old) == []
