"""Unit tests of GOR's observability: decision-log records, the Prometheus exposition
text (every line valid) and its HTTP endpoint, and ``python -m controller status --once``
on recorded data."""
from __future__ import annotations

import io
import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from controller.__main__ import main
from controller.gor.log import EVENTS, DecisionLog, read_log
from controller.gor.metrics import GorMetrics, MetricsServer
from controller.telemetry.exposition import parse_metrics
from controller.gor.status import snapshot_from_log, snapshot_from_metrics
from controller.telemetry.poller import LinkId, LinkSample

UP = LinkId("b0r0l0", 3, "s0", "uplink")
UP1 = LinkId("b0r0l0", 4, "s1", "uplink")
FLOW = "10.0.0.1:49152>10.1.0.1:4791/17"


class Ticks:
    """A clock that advances 10 ms per call."""

    def __init__(self, start: float) -> None:
        self.t = start

    def __call__(self) -> float:
        self.t += 0.01
        return self.t


def _record_a_round(dl: DecisionLog) -> None:
    dl.alarm_raised(UP, level=2, mark_rate=0.12, util_pct=96.5, round_id=1)
    dl.flows_chosen(UP, [{"flow": FLOW, "rate_gbps": 40.0}], round_id=1)
    dl.path_chosen(FLOW, ["b0r0l0", "s0", "b1r0l0"], ["b0r0l0", "s1", "b1r0l0"],
                   predicted={UP: 56.5, UP1: 61.0}, measured={UP: 96.5, UP1: 21.0}, round_id=1)
    dl.order_sent("o-1", FLOW, host="b0h0", sport=49301,
                  new_path=["b0r0l0", "s1", "b1r0l0"], round_id=1)
    dl.order_confirmed("o-1", FLOW, measured={UP: 55.0, UP1: 62.0}, round_id=1)
    dl.order_sent("o-2", "10.0.0.2:49153>10.1.0.2:4791/17", host="b0h1", sport=50000, round_id=1)
    dl.order_rolled_back("o-2", "10.0.0.2:49153>10.1.0.2:4791/17", reason="agent refused")
    dl.switch_stale("s1", "ConnectionError: gone")
    dl.alarm_cleared(UP, level=2, mark_rate=0.0, util_pct=55.0, round_id=1)
    dl.alarm_raised(UP1, level=1, mark_rate=0.02, util_pct=80.0, round_id=2)


# ------------------------------------------------------------------ decision log
def test_decision_log_writes_one_json_object_per_step(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "gor.jsonl"
    with DecisionLog(path, clock=Ticks(5.0), wall=Ticks(1_700_000_000.0)) as dl:
        _record_a_round(dl)
    lines = path.read_text().splitlines()
    recs = [json.loads(l) for l in lines]
    assert len(recs) == 10 and dl.records == 10
    assert [r["event"] for r in recs][:5] == ["alarm_raised", "flows_chosen", "path_chosen",
                                              "order_sent", "order_confirmed"]
    assert all(r["event"] in EVENTS and {"ts", "mono_s"} <= set(r) for r in recs)
    monos = [r["mono_s"] for r in recs]
    assert monos == sorted(monos) and monos[1] - monos[0] == pytest.approx(0.01)
    alarm, _, path_rec, sent, confirmed = recs[:5]
    assert alarm == {"ts": alarm["ts"], "mono_s": alarm["mono_s"], "event": "alarm_raised",
                     "link": "b0r0l0->s0", "level": 2, "mark_rate": 0.12, "util_pct": 96.5,
                     "round": 1}
    assert path_rec["old_path"] == ["b0r0l0", "s0", "b1r0l0"]
    assert path_rec["predicted"] == {"b0r0l0->s0": 56.5, "b0r0l0->s1": 61.0}
    assert path_rec["measured"]["b0r0l0->s0"] == 96.5
    assert sent["order_id"] == "o-1" and sent["sport"] == 49301 and "override" not in sent
    assert confirmed["measured"] == {"b0r0l0->s0": 55.0, "b0r0l0->s1": 62.0}
    assert recs[6]["reason"] == "agent refused"


def test_decision_log_appends_and_rejects_unknown_events(tmp_path: Path) -> None:
    path = tmp_path / "gor.jsonl"
    for _ in range(2):
        with DecisionLog(path) as dl:
            dl.link_down(UP, "counters stalled")
    assert len(path.read_text().splitlines()) == 2
    with pytest.raises(ValueError, match="unknown decision-log event"):
        DecisionLog(io.StringIO()).record("oops")


def test_read_log_skips_torn_and_foreign_lines(tmp_path: Path) -> None:
    path = tmp_path / "gor.jsonl"
    path.write_text('{"event":"link_up","link":"a->b"}\n\n{"event": "alarm_ra\n[1,2]\n')
    assert list(read_log(path)) == [{"event": "link_up", "link": "a->b"}]


# ------------------------------------------------------------------ metrics
_SAMPLE_LINE = re.compile(
    r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
    r'(,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*\})? '
    r'(-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?|[-+]Inf|NaN)$')


def _metrics() -> GorMetrics:
    m = GorMetrics()
    m.observe_samples({UP: LinkSample(0.05, 0.05, 1000, 64000, 120, 33, 0.925, drops=2,
                                      pfc_tx=1, pfc_rx=3, rx_util=0.1),
                       UP1: LinkSample(0.05, 0.05, 200, 12800, 0, 1, 0.21)})
    m.observe_samples({UP: LinkSample(0.10, 0.05, 900, 57600, 80, 30, 0.9)})
    m.set_alarm(UP, 2)
    m.set_alarm(UP1, 0)
    m.set_switch_stale("s1", True)
    m.set_switch_stale("b0r0l0", False)
    m.count_move("sent", 2)
    m.count_move("confirmed")
    m.count_move("rolled_back")
    m.observe_loop(0.004)
    m.observe_loop(0.006)
    return m


def test_metrics_text_is_valid_prometheus_exposition() -> None:
    text = _metrics().render()
    assert text.endswith("\n")
    typed: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            assert re.match(r"^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* \S.*$", line), line
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "summary") and name not in typed, line
            typed[name] = kind
        else:
            assert _SAMPLE_LINE.match(line), f"invalid sample line: {line!r}"
            name = line.split("{")[0].split(" ")[0]
            family = re.sub(r"_(sum|count)$", "", name) if name.startswith("gor_loop_seconds") \
                else name
            assert family in typed, f"{name} has no TYPE before it"
    samples = parse_metrics(text)
    by = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples}
    up = (("kind", "uplink"), ("link", "b0r0l0->s0"), ("peer", "s0"), ("port", "3"),
          ("switch", "b0r0l0"))
    assert by[("gor_link_util_ratio", up)] == pytest.approx(0.9)           # last interval
    assert by[("gor_link_ecn_marks_total", up)] == 200                     # accumulated
    assert by[("gor_link_tx_packets_total", up)] == 1900
    assert by[("gor_link_pfc_rx_frames_total", up)] == 3
    assert by[("gor_alarm_level", (("link", "b0r0l0->s0"),))] == 2
    assert by[("gor_switch_stale", (("switch", "s1"),))] == 1
    assert by[("gor_moves_total", (("outcome", "sent"),))] == 2
    assert by[("gor_loop_seconds_count", ())] == 2
    assert by[("gor_loop_seconds_sum", ())] == pytest.approx(0.01)


def test_metrics_escape_label_values_and_reject_bad_outcomes() -> None:
    m = GorMetrics()
    m.set_alarm('we"ird\\link\n', 1)
    line = next(l for l in m.render().splitlines() if l.startswith("gor_alarm_level{"))
    assert line == 'gor_alarm_level{link="we\\"ird\\\\link\\n"} 1.0'   # prometheus_client writes floats
    assert parse_metrics(line)[0].labels["link"] == 'we"ird\\link\n'
    with pytest.raises(ValueError):
        m.count_move("teleported")
    with pytest.raises(ValueError, match="line 1"):
        parse_metrics("bad line here\n")


def test_metrics_are_served_over_http() -> None:
    with MetricsServer(_metrics(), port=0) as srv:
        with urllib.request.urlopen(srv.url, timeout=5) as resp:
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            body = resp.read().decode()
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(srv.url.replace("/metrics", "/nope"), timeout=5)
    assert parse_metrics(body) and "gor_alarm_level" in body


def test_metrics_have_their_own_registry_and_the_agent_age() -> None:
    a, b = GorMetrics(), GorMetrics()
    a.set_agent_age("b0s0", 2.5)
    by = {(s.name, tuple(s.labels.items())): s.value for s in parse_metrics(a.render())}
    assert by[("gor_agent_last_report_age_seconds", (("host", "b0s0"),))] == 2.5
    assert "b0s0" not in b.render() and a.registry is not b.registry
    with pytest.raises(ValueError, match="line 2: not a sample"):
        parse_metrics('gor_loop_last_seconds 1\ngor_alarm_level{link=a} 1\n')


# ------------------------------------------------------------------ status
def test_status_snapshot_from_log_replays_alarms_and_orders(tmp_path: Path) -> None:
    path = tmp_path / "gor.jsonl"
    with DecisionLog(path) as dl:
        _record_a_round(dl)
    snap = snapshot_from_log(read_log(path))
    assert snap.alarms == {"b0r0l0->s0": 0, "b0r0l0->s1": 1}
    assert snap.links["b0r0l0->s0"].util_pct == 55.0 and snap.links["b0r0l0->s1"].alarm == 1
    assert [(m.order_id, m.state) for m in snap.moves] == [("o-1", "confirmed"),
                                                           ("o-2", "rolled_back")]
    assert snap.move_counts == {"sent": 2, "confirmed": 1, "rolled_back": 1}
    assert snap.stale == ["s1"]


def test_status_once_on_a_recorded_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gor.jsonl"
    with DecisionLog(path) as dl:
        _record_a_round(dl)
    assert main(["status", "--log", str(path), "--once"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out                       # --once prints plain text
    assert "ALARMS: b0r0l0->s1 L1" in out
    assert re.search(r"o-1\s+confirmed\s+10\.0\.0\.1:49152>10\.1\.0\.1:4791/17\s+"
                     r"b0r0l0→s1→b1r0l0 sport 49301", out)
    assert re.search(r"o-2\s+rolled_back .* agent refused", out)
    assert "stale switches: s1" in out
    assert "moves sent=2 confirmed=1 rolled_back=1 retried=0" in out


def test_status_once_from_the_metrics_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    with MetricsServer(_metrics(), port=0) as srv:
        assert main(["status", "--metrics", srv.url, "--once"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    table = lines[lines.index(next(l for l in lines if l.startswith("LINK"))) + 1:]
    assert table[0].split() == ["b0r0l0->s0", "90.0", "200", "10.5", "30", "2"]   # busiest first
    assert table[1].split()[:2] == ["b0r0l0->s1", "21.0"]
    assert "loop 5.0 ms" in out and "stale switches: s1" in out


def test_status_snapshot_from_metrics_text() -> None:
    snap = snapshot_from_metrics(_metrics().render())
    assert snap.alarms == {"b0r0l0->s0": 2, "b0r0l0->s1": 0}
    assert snap.move_counts["rolled_back"] == 1 and snap.loop_ms == pytest.approx(5.0)


def test_status_once_fails_cleanly_when_metrics_are_unreachable(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--metrics", "http://127.0.0.1:9/metrics", "--once"]) == 1
    assert "controller status:" in capsys.readouterr().err


def test_status_without_a_decision_log_says_so_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """No GOR has run here (no logs/gor.jsonl): one line naming the file, exit 1, live
    view or not, instead of empty tables refreshing for ever (ux-walk, problem 3)."""
    monkeypatch.chdir(tmp_path)
    for once in (["--once"], []):
        assert main(["status", *once]) == 1
        got = capsys.readouterr()
        assert got.out == "" and got.err.count("\n") == 1, got
        assert got.err.startswith("controller status: logs/gor.jsonl: no decision log yet: is GOR running?")
    (tmp_path / "dir").mkdir()
    assert main(["status", "--log", str(tmp_path / "dir"), "--once"]) == 1
    assert "not a file" in capsys.readouterr().err
    story = tmp_path / "runs" / "20261207-0452" / "gor.jsonl"          # a `make run` of before
    story.parent.mkdir(parents=True)
    story.write_text("")
    assert main(["status", "--once"]) == 1
    assert "the newest `make run` wrote --log runs/20261207-0452/gor.jsonl;" in capsys.readouterr().err
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "gor.jsonl").write_text("")              # GOR started, nothing logged yet
    assert main(["status", "--once"]) == 0
    assert capsys.readouterr().out.startswith("GOR status — logs/gor.jsonl")


def test_decision_log_writes_the_decision_cores_records() -> None:
    from controller.gor.decisions import FlowKey, MoveOrder, PathChoice
    f = FlowKey("10.0.0.1", "10.1.0.1", 17, 49152, 4791)
    order = MoveOrder(f, 50001, PathChoice("s1", (("b0r0l0", 4), ("s1", 1))),
                      {("b0r0l0", 4): 0.4})
    buf = io.StringIO()
    DecisionLog(buf).record("path_chosen", flow=f, order=order,
                            predicted={("b0r0l0", 4): 40.0})
    rec = json.loads(buf.getvalue())
    assert rec["flow"] == "10.0.0.1:49152->10.1.0.1:4791/17"
    assert rec["order"] == json.loads(json.dumps(order.to_dict()))
    assert rec["predicted"] == {"b0r0l0:4": 40.0}


def test_status_replays_an_alarm_that_came_down_a_level_not_to_clear() -> None:
    recs = [{"event": "alarm_raised", "link": "b0r0l0->s0", "level": 3},
            {"event": "alarm_cleared", "link": "b0r0l0->s0", "level": 3, "to_level": 2},
            {"event": "alarm_raised", "link": "b0r0l0->s1", "level": 2},
            {"event": "alarm_cleared", "link": "b0r0l0->s1", "level": 2}]     # a log before to_level
    assert snapshot_from_log(recs).alarms == {"b0r0l0->s0": 2, "b0r0l0->s1": 0}
