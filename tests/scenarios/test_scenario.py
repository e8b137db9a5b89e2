"""Unit tests of the scenarios' pieces (no Mininet): telemetry maths, the poller with fake
readers, scenario dispatch, and the report writer with recorded data (the story itself:
``test_story.py``)."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from topo import FabricSpec, build_fabric
from topo.spec import load_spec
from scenarios.report import (PLOT_FILES, FlowRecord, ScenarioRecord, busiest_over_mean,
                         measured_busiest, uplink_rows, write_plots, write_report)
from scenarios.common import DEFAULT_FLOW_RATE_PPS, ScenarioOptions
from scenarios.cli import main as scenarios_main
from scenarios.registry import SCENARIOS, run_scenario
from scenarios.telemetry import (LinkId, LinkSample, PolledLink, PortReading, TelemetryPoller,
                            TelemetrySeries, delta, fabric_links, utilisation)

UP0 = LinkId("b0r0l0", 3, "s0", "uplink")
UP1 = LinkId("b0r0l0", 4, "s1", "uplink")


# ------------------------------------------------------------------ telemetry maths
def test_delta_handles_resets_and_takes_qdepth_from_the_histogram() -> None:
    assert delta(PortReading(10, 1000, 2, 0, qdepth_bins=(10, 0, 0)),
                 PortReading(25, 2500, 7, 8, qdepth_bins=(20, 3, 2))) == \
        PortReading(15, 1500, 5, 8, qdepth_bins=(10, 3, 2))
    assert delta(PortReading(100, 9000, 9, 0, qdepth_bins=(100, 0)),
                 PortReading(4, 300, 1, 4, qdepth_bins=(3, 1))) == \
        PortReading(4, 300, 1, 4, qdepth_bins=(3, 1))


def test_utilisation_prefers_the_queue_rate_then_link_speed() -> None:
    d = PortReading(250, 250 * 1000, 0, 0)
    assert utilisation(d, 0.5, rate_pps=1000.0, gbps=100.0) == pytest.approx(0.5)
    assert utilisation(d, 0.5, rate_pps=None, gbps=0.004) == pytest.approx(1.0)
    assert utilisation(d, 0.0, rate_pps=1000.0, gbps=None) == 0.0
    assert utilisation(d, 1.0, rate_pps=None, gbps=None) == 0.0


def test_series_totals_busiest_and_max_over_mean() -> None:
    s = TelemetrySeries()
    for t, (a, b) in enumerate([(300, 100), (500, 100), (400, 200)], start=1):
        s.add(UP0, LinkSample(t * 0.5, 0.5, a, a * 600, a // 10, 60, a / 0.5 / 1000))
        s.add(UP1, LinkSample(t * 0.5, 0.5, b, b * 600, 0, 4, b / 0.5 / 1000))
    assert s.totals() == {UP0: 1200, UP1: 400}
    assert s.busiest() == UP0 and s.busiest([UP1]) == UP1
    assert s.max_over_mean([UP0, UP1]) == pytest.approx(1.5)
    assert s.marks()[UP0] == 120 and s.peak_qdepth()[UP1] == 4
    assert s.mean_util()[UP0] == pytest.approx(0.8)
    assert s.times() == [0.5, 1.0, 1.5]


def test_poller_turns_cumulative_readings_into_samples() -> None:
    counts = {"n": 0}

    def reader(ports):  # cumulative tx grows by 100 / 40 per poll, in bins 0 and 7 / 0
        counts["n"] += 1
        n = counts["n"]
        return {3: PortReading(100 * n, 6400 * n, 5 * n, 28, qdepth_bins=(90 * n,) + (0,) * 6 + (10 * n,)),
                4: PortReading(40 * n, 2560 * n, 0, 0, qdepth_bins=(40 * n,))}

    links = [PolledLink(UP0, 100.0, 400.0), PolledLink(UP1, 100.0, 400.0)]
    poller = TelemetryPoller({"b0r0l0": reader}, links, period_s=0.01)
    assert poller.poll_once() == {}
    poller.poll_once()
    got = poller.poll_once()
    assert got[UP0].tx_pkts == 100 and got[UP0].marks == 5 and got[UP0].max_qdepth == 28
    assert got[UP1].tx_pkts == 40 and got[UP1].max_qdepth == 0
    assert poller.series.totals() == {UP0: 200, UP1: 80}
    assert poller.series.busiest() == UP0


def test_poller_records_reader_errors_and_goes_on() -> None:
    def bad(ports):
        raise ConnectionError("switch gone")

    poller = TelemetryPoller({"b0r0l0": bad}, [PolledLink(UP0, 100.0, None)], period_s=0.01)
    with poller:
        pass
    assert poller.errors and "switch gone" in poller.errors[0]


def test_fabric_links_are_the_switch_to_switch_ports() -> None:
    fab = build_fabric(FabricSpec())
    links = fabric_links(fab, {("b0r0l0", 3): 500.0})
    assert len(links) == 16  # 4 leaves × 2 uplinks + 2 spines × 4 downlinks
    assert {pl.link.kind for pl in links} == {"uplink", "downlink"}
    rated = [pl for pl in links if pl.rate_pps]
    assert len(rated) == 1 and rated[0].link.switch == "b0r0l0" and rated[0].link.port == 3


# ------------------------------------------------------------------ dispatch
def test_scenarios_refuse_an_unprogrammed_fabric(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_scenario("alltoall", None, None, None, lambda: None).status == 2   # not programmed
    assert "not programmed" in capsys.readouterr().out
    assert run_scenario("link-failure", None, None, None, lambda: None).status == 2  # not programmed
    assert run_scenario("nope", None, None, None, lambda: None).status == 2
    assert run_scenario("default", None, None, None, lambda: None).status == 2   # not programmed


def test_tor_failure_on_one_port_nics_is_refused_before_the_testbed_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``make run SCENARIO=tor-failure`` without a dual-port SPEC brought the whole fabric
    up (~20 s, root) before saying it needs dual-port NICs; the registry's ``unfit`` now
    refuses it first, exit 2, no root needed, nothing started or written."""
    state = tmp_path / "state.json"
    assert scenarios_main(["up", "--scenario", "tor-failure", "--state", str(state)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scenarios: tor-failure: needs dual-port NICs") and "SPEC=" in err
    assert not state.exists()
    assert SCENARIOS["tor-failure"].unfit is not None
    dual = build_fabric(load_spec(Path(__file__).resolve().parents[2] / "topo" / "specs" / "dualport.yaml"))
    assert SCENARIOS["tor-failure"].unfit(dual) is None


# ------------------------------------------------------------------ report
def _recorded() -> tuple[ScenarioRecord, TelemetrySeries]:
    rec = ScenarioRecord("default", seed=3, target="p4sim", flow_rate_pps=100.0,
                         queue_rate_pps=500.0, duration_s=3.0,
                         uplinks=["b0r0l0->s0", "b0r0l0->s1"])
    for i in range(8):
        rec.flows.append(FlowRecord(f"f{i}", "10.0.0.1", "10.1.0.1", 50000 + i,
                                    "b0r0l0->s0" if i < 6 else "b0r0l0->s1", 300))
    rec.event(0.0, "rates set")
    rec.event(1.0, "elephants started")
    rec.notes.append("re-route skipped")
    s = TelemetrySeries()
    for t in range(1, 7):
        s.add(UP0, LinkSample(t * 0.5, 0.5, 250, 250 * 554, 40, 63, 1.0))
        s.add(UP1, LinkSample(t * 0.5, 0.5, 100, 100 * 554, 0, 3, 0.4))
        s.add(LinkId("s0", 3, "b1r0l0", "downlink"), LinkSample(t * 0.5, 0.5, 250, 0, 0, 1, 1.0))
    return rec, s


def test_report_rows_and_busiest() -> None:
    rec, s = _recorded()
    assert rec.predicted_load() == {"b0r0l0->s0": 6, "b0r0l0->s1": 2}
    assert rec.predicted_busiest() == "b0r0l0->s0" == measured_busiest(rec, s)
    rows = uplink_rows(rec, s)
    assert [(r.uplink, r.predicted_flows, r.measured_pkts, r.marks, r.peak_qdepth) for r in rows] \
        == [("b0r0l0->s0", 6, 1500, 240, 63), ("b0r0l0->s1", 2, 600, 0, 3)]
    assert rows[0].share_pct == pytest.approx(71.4) and rows[0].mean_util_pct == 100.0
    assert busiest_over_mean(rec, s) == pytest.approx(1.429)


def test_plots_of_a_two_pod_fabrics_links_lay_out_without_a_warning(tmp_path: Path) -> None:
    # fresh-clone CI: the two-pod scenario's ECN plot had one legend entry per marking link
    # in one column, taller than its 4-inch figure ("Tight layout not applied")
    s = TelemetrySeries()
    links = [LinkId(f"b{b}r{r}l0", 3 + k, f"s{k}", "uplink") for b in range(2) for r in range(4)
             for k in range(6)]
    for t in (0.5, 1.0):
        for i, link in enumerate(links):
            s.add(link, LinkSample(t, 0.5, 100, 60_000, 1 + i, 8, 0.2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paths = write_plots(tmp_path, s)
    assert {p.name for p in paths} == set(PLOT_FILES)


def test_write_report_writes_markdown_plots_and_raw_series(tmp_path: Path) -> None:
    rec, s = _recorded()
    paths = write_report(tmp_path, rec, s)
    names = {p.name for p in paths}
    assert {"report.md", "telemetry.json", *PLOT_FILES} == names
    for name in PLOT_FILES:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "report.md").read_text()
    for text in ("seed **3**", "## Timeline", "elephants started", "| b0r0l0->s0 | 6 | 1500 |",
                 "measured: **b0r0l0->s0** (match)", "load ÷ mean: **1.43**", "re-route skipped",
                 "![utilisation](utilisation.png)"):
        assert text in md, text
    raw = json.loads((tmp_path / "telemetry.json").read_text())
    assert raw["b0r0l0->s0"]["samples"][0]["tx_pkts"] == 250


def test_scenario_options_defaults() -> None:
    o = ScenarioOptions()
    assert (o.flows, o.flow_rate_pps, o.rail) == (8, DEFAULT_FLOW_RATE_PPS, 0) and o.duration_s == 12.0
    assert DEFAULT_FLOW_RATE_PPS == 250.0
