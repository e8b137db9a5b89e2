"""GOR on the switches' own reports (issue 16): an alarm digest raises the link's level at
once, and with the elephants the switch reported on it the decision round runs in the
same tick, with no sampling window to fill; malformed and stale reports are counted and
dropped; the counters and the switch are two sources of one level; an alarm digest
wakes the digest reader's poller; the fabric plan writes the two tables."""
from __future__ import annotations

import ipaddress
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from controller.fabric import switch_id_of
from controller.fabric.plan import plan_fabric
from controller.gor.alarms import AlarmMonitor
from controller.gor.dataplane import DataplaneReports
from controller.gor.decisions import AlarmLevel, FlowKey
from controller.gor.digests import digest_reader, enable_digests
from controller.telemetry.exposition import parse_metrics
from p4src.alarmmodel import ALARM_DIGEST, ALARM_TABLE, ELEPHANT_DIGEST, ELEPHANT_TABLE
from test_gor_loop import L0, L1, events, fabric, flows_through, make, port_to, register, samples

# --------------------------------------------------------------------------- helpers


def alarm_row(fab: Any, switch: str, port: int, level: int, seq: int, prev: int = 0,
              marks: int = 8, pkts: int = 100) -> dict[str, int]:
    return {"switch_id": switch_id_of(fab.switch(switch), fab), "port": port, "level": level,
            "prev_level": prev, "marks": marks, "pkts": pkts, "window_us": 20_000,
            "max_qdepth": 17, "seq": seq}


def elephant_row(fab: Any, f: FlowKey, port: int, packets: int = 21,
                 window_us: int = 400_000, reason: int = 1) -> dict[str, int]:
    return {"switch_id": switch_id_of(fab.switch(L0), fab), "port": port,
            "src_addr": int(ipaddress.IPv4Address(f.src)),
            "dst_addr": int(ipaddress.IPv4Address(f.dst)), "protocol": 17,
            "src_port": f.sport, "dst_port": f.dport, "reason": reason, "level": 0,
            "packets": packets, "window_us": window_us}


def quiet(fab: Any) -> dict[Any, Any]:
    """Every link at 10 % without marks: the counters alone raise nothing."""
    return samples(fab, marks=0)


# --------------------------------------------------------------------------- the loop


def test_alarm_and_elephants_from_the_switch_decide_in_the_same_tick() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    f, g = flows_through(loop, "s0", 2)
    register(fab, reg, f)
    assert loop.tick(1.0, quiet(fab)) == []
    # the hot uplink runs 20,000 packets/s at 90 %: 22,222 packets/s of capacity; the
    # switch measured f at 6,667 and g at 15,556 packets/s (600 and 1,400 gaps in 90 ms)
    loop.submit_digests(L0, SimpleNamespace(name=ELEPHANT_DIGEST, data=[
        elephant_row(fab, f, up, packets=601, window_us=90_000),
        elephant_row(fab, g, up, packets=1401, window_us=90_000)]))
    assert loop.tick(1.05, quiet(fab)) == []                  # elephants alone: no alarm
    loop.submit_digests(L0, SimpleNamespace(name=ALARM_DIGEST, timestamp_ns=1_234_567,
                                            data=[alarm_row(fab, L0, up, level=2, seq=1)]))
    rounds = loop.tick(1.06, quiet(fab))
    assert len(rounds) == 1 and rounds[0].trigger == (L0, up)
    (order,) = rounds[0].orders                               # g (70 %) fits nowhere
    assert order.flow == f
    raised = [e for e in events(buf) if e["event"] == "alarm_raised"]
    assert raised == [raised[0]] and raised[0]["source"] == "switch"
    assert (raised[0]["level"], raised[0]["seq"], raised[0]["max_qdepth"]) == (2, 1, 17)
    # when the digest reached GOR (wall clock), at or before the record: detection's split
    assert 0.0 <= raised[0]["ts"] - raised[0]["received_ts"] < 60.0
    assert raised[0]["digest_ts_ns"] == 1_234_567             # the list's own stamp, as given
    chosen = [e for e in events(buf) if e["event"] == "flows_chosen"][0]["flows"]
    # their rates over the link's capacity in packets/s: 30 % and 70 % of the link
    assert [(c["flow"], c["util_pct"]) for c in chosen] == [(str(g), 70.0), (str(f), 30.0)]
    assert (L0, up) in loop.sampling                          # sampling still on (fallback)
    assert {s.labels["kind"]: s.value for s in parse_metrics(metrics.render())
            if s.name == "gor_switch_reports_total"} == {
        "alarms": 1, "elephants": 2, "malformed": 0, "stale": 0, "overwritten": 0}
    loop.close()


def test_without_elephant_reports_the_round_waits_for_samples() -> None:
    fab, loop, _prog, _reg, buf, _metrics = make()
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, quiet(fab))
    loop.submit_digests(L0, SimpleNamespace(name=ALARM_DIGEST,
                                            data=[alarm_row(fab, L0, up, level=3, seq=1)]))
    assert loop.tick(1.05, quiet(fab)) == []
    assert [e["event"] for e in events(buf)].count("alarm_raised") == 1
    assert (L0, up) in loop.sampling
    loop.close()


def test_the_switch_clears_its_level_the_counters_keep_theirs() -> None:
    fab, loop, _prog, _reg, buf, _metrics = make()
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))                              # counters: WARNING (10 %)
    assert loop.alarms.level((L0, up)) == AlarmLevel.WARNING
    for seq, level in ((1, 3), (2, 0)):
        loop.submit_digests(L0, SimpleNamespace(name=ALARM_DIGEST, data=[
            alarm_row(fab, L0, up, level=level, seq=seq)]))
        loop.tick(1.0 + seq / 100, samples(fab))
    assert loop.alarms.level((L0, up)) == AlarmLevel.WARNING
    ev = [(e["event"], e.get("level"), e.get("source")) for e in events(buf)
          if e["event"].startswith("alarm") and e["link"] == f"{L0}->s0"]
    assert ev == [("alarm_raised", 2, "counters"), ("alarm_raised", 3, "switch"),
                  ("alarm_cleared", 3, "switch")]
    loop.close()


@pytest.mark.parametrize("bad", [
    {"switch_id": 9999}, {"port": 77}, {"level": 5}, {"marks": 500}, {"seq": None}])
def test_malformed_alarm_reports_are_counted_and_dropped(bad: dict[str, Any]) -> None:
    fab, loop, _prog, _reg, buf, _metrics = make()
    up = port_to(fab, L0, "s0")
    row = alarm_row(fab, L0, up, level=2, seq=1)
    row.update({k: v for k, v in bad.items() if v is not None})
    for k in [k for k, v in bad.items() if v is None]:
        del row[k]
    loop.submit_digests(L0, SimpleNamespace(name=ALARM_DIGEST, data=[row]))
    loop.tick(1.0, quiet(fab))
    assert loop.dataplane.counts.malformed == 1 and loop.dataplane.counts.alarms == 0
    assert not [e for e in events(buf) if e["event"] == "alarm_raised"]
    loop.close()


def test_a_report_from_another_switch_name_is_malformed() -> None:
    fab, loop, _prog, _reg, _buf, _metrics = make()
    up = port_to(fab, L0, "s0")
    loop.submit_digests(L1, SimpleNamespace(name=ALARM_DIGEST,
                                            data=[alarm_row(fab, L0, up, level=2, seq=1)]))
    loop.tick(1.0, quiet(fab))
    assert loop.dataplane.counts.malformed == 1
    assert "is b0r0l0, not b1r0l0" in loop.dataplane.counts.last_error
    loop.close()


# --------------------------------------------------------------------------- reports


def reports() -> tuple[DataplaneReports, dict[str, int]]:
    dp = DataplaneReports({11: "l"}, frozenset({("l", 3)}))
    row = {"switch_id": 11, "port": 3, "level": 1, "prev_level": 0, "marks": 1, "pkts": 50,
           "window_us": 1000, "max_qdepth": 9, "seq": 1}
    return dp, row


def test_stale_reports_dropped_gaps_counted_restart_accepted() -> None:
    dp, row = reports()
    assert dp.alarm("l", row, 1.0) is not None
    assert dp.alarm("l", row, 1.1) is None                  # the same seq again: stale
    assert dp.alarm("l", {**row, "seq": 5, "level": 3}, 1.2).level == 3
    assert dp.counts.overwritten == 3                       # 2, 3, 4 never carried
    assert dp.alarm("l", {**row, "seq": 4}, 1.3) is None    # late: stale
    assert dp.alarm("l", {**row, "seq": 1, "level": 2}, 1.4).level == 2   # restarted switch
    assert (dp.counts.alarms, dp.counts.stale) == (3, 2)
    wrapped = {**row, "seq": 0}                              # 2**32 - 1 → 0 is newer
    dp.seq[("l", 3)] = 2**32 - 1
    assert dp.alarm("l", wrapped, 1.5) is not None


def test_elephants_age_out() -> None:
    dp, _ = reports()
    row = {"switch_id": 11, "port": 3, "src_addr": 1, "dst_addr": 2, "protocol": 17,
           "src_port": 5, "dst_port": 4791, "reason": 1, "level": 0, "packets": 11,
           "window_us": 100_000}
    assert dp.elephant("l", row, 1.0) == FlowKey("0.0.0.1", "0.0.0.2", 17, 5, 4791)
    assert list(dp.elephants_on(("l", 3), 1.5).values()) == [100.0]
    assert dp.elephants_on(("l", 3), 2.01) == {}
    assert dp.elephant("l", {**row, "reason": 7}, 2.0) is None
    assert dp.counts.malformed == 1


def test_alarm_monitor_two_sources() -> None:
    m = AlarmMonitor()
    link = ("l", 3)
    assert m.report(link, 0.0, AlarmLevel.NOTICE, 0.02).new == AlarmLevel.NOTICE
    assert m.observe(link, 0.1, marks=60, tx_pkts=1000).new == AlarmLevel.WARNING
    assert m.report(link, 0.2, AlarmLevel.CLEAR, 0.0) is None      # counters still WARNING
    assert m.active() == [link]
    m.forget_report(link)
    assert m.level(link) == AlarmLevel.WARNING


# --------------------------------------------------------------------------- digests


class _Conn:
    def __init__(self, lists: list[Any], stop: threading.Event) -> None:
        self.lists, self.stop = lists, stop
        self.enabled: list[tuple[str, int]] = []

    def get_digest(self, timeout_s: float) -> Any:
        if not self.lists:
            self.stop.set()
            return None
        return self.lists.pop(0)

    def enable_digest(self, name: str, max_timeout_ns: int, max_list_size: int) -> None:
        self.enabled.append((name, max_list_size))


def test_the_reader_calls_on_alarm_for_an_alarm_only() -> None:
    stop = threading.Event()
    got: list[str] = []
    wakes: list[int] = []
    sink = SimpleNamespace(submit_digests=lambda sw, dl: got.append(dl.name))
    conn = _Conn([SimpleNamespace(name="flow_sample_t", data=[]),
                  SimpleNamespace(name=ELEPHANT_DIGEST, data=[]),
                  SimpleNamespace(name=ALARM_DIGEST, data=[]),
                  SimpleNamespace(name="other_t", data=[])], stop)
    digest_reader(sink, "l", conn, stop, 0.01, on_alarm=lambda: wakes.append(1))
    assert got == ["flow_sample_t", ELEPHANT_DIGEST, ALARM_DIGEST] and wakes == [1]


def test_enable_digests_enables_all_three() -> None:
    conn = _Conn([], threading.Event())
    assert enable_digests({"l": conn}, ["l"]) == []
    assert conn.enabled == [("flow_sample_t", 8), (ALARM_DIGEST, 1), (ELEPHANT_DIGEST, 1)]


def test_the_plan_writes_alarms_and_elephants_on_fabric_ports_only() -> None:
    fab = fabric()
    plan = plan_fabric(fab)[L0]
    ports = sorted(e.match["standard_metadata.egress_port"] for e in plan.of(ALARM_TABLE))
    assert ports == sorted(port_to(fab, L0, s) for s in ("s0", "s1", "s2"))
    assert len(plan.of(ELEPHANT_TABLE)) == 3
    assert plan_fabric(fab, alarms=None, elephants=None)[L0].of(ALARM_TABLE) == []


def test_react_decides_between_two_polls() -> None:
    fab, loop, _prog, reg, buf, _metrics = make()
    up = port_to(fab, L0, "s0")
    f, g = flows_through(loop, "s0", 2)
    register(fab, reg, f)
    loop.tick(1.0, quiet(fab))
    forwarded = dict(loop.faults.forwarded)
    loop.submit_digests(L0, SimpleNamespace(name=ELEPHANT_DIGEST, data=[
        elephant_row(fab, f, up, packets=601, window_us=90_000),
        elephant_row(fab, g, up, packets=1401, window_us=90_000)]))
    loop.submit_digests(L0, SimpleNamespace(name=ALARM_DIGEST,
                                            data=[alarm_row(fab, L0, up, level=2, seq=1)]))
    rounds = loop.react(1.01)                        # no poll: digests, moves, rounds only
    assert len(rounds) == 1 and [o.flow for o in rounds[0].orders] == [f]
    assert loop.ticks == 1 and dict(loop.faults.forwarded) == forwarded
    assert [e["event"] for e in events(buf)][:2] == ["alarm_raised", "flows_chosen"]
    loop.close()


def test_before_the_capacity_is_known_the_round_waits_for_samples() -> None:
    # no poll has given the link's capacity in packets/s yet: the switch's rates cannot be
    # put in the loads' basis (shares of a link offered more than its capacity would
    # understate every flow), so the round waits for samples
    fab, loop, _prog, reg, buf, _metrics = make()
    up = port_to(fab, L0, "s0")
    f, g = flows_through(loop, "s0", 2)
    register(fab, reg, f)
    loop.submit_digests(L0, SimpleNamespace(name=ELEPHANT_DIGEST, data=[
        elephant_row(fab, f, up, packets=13), elephant_row(fab, g, up, packets=29)]))
    loop.submit_digests(L0, SimpleNamespace(name=ALARM_DIGEST,
                                            data=[alarm_row(fab, L0, up, level=2, seq=1)]))
    assert loop.react(1.0) == []
    assert not [e for e in events(buf) if e["event"] == "flows_chosen"]
    loop.close()


def test_a_round_sees_the_offered_load_the_switches_report_elsewhere() -> None:
    # the polled loads still show s1 and s2 idle (their load windows lag), but the switch
    # reported elephants on them: a move must not pile onto them
    fab, loop, _prog, reg, buf, _metrics = make()
    up = port_to(fab, L0, "s0")
    f, g = flows_through(loop, "s0", 2)
    register(fab, reg, f)
    loop.tick(1.0, quiet(fab))
    others = [flows_through(loop, s, 1, src="10.0.0.2")[0] for s in ("s1", "s2")]
    rows = [elephant_row(fab, f, up, packets=601, window_us=90_000),      # 30 % of s0
            elephant_row(fab, g, up, packets=1401, window_us=90_000)]     # 70 % of s0
    for s, o in zip(("s1", "s2"), others):       # 100,000 of 200,000 packets/s: 50 %
        rows.append(elephant_row(fab, o, port_to(fab, L0, s), packets=9001, window_us=90_000))
    loop.submit_digests(L0, SimpleNamespace(name=ELEPHANT_DIGEST, data=rows))
    loop.submit_digests(L0, SimpleNamespace(name=ALARM_DIGEST,
                                            data=[alarm_row(fab, L0, up, level=2, seq=1)]))
    (dec,) = loop.react(1.01)
    # s1 and s2 carry 50 % each (not the 10 % polled): f (30 %) would take them to 80 %
    assert dec.orders == [] and {r.reason for r in dec.rejected} == {"safety"}
    loop.close()
