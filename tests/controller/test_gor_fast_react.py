"""GOR's waits between a switch's alarm and its first order (issue 16), one cause each:
the link's capacity in packets/s known from the first poll (the queue rate), not from a
poll under load; the sampling write after the round's orders, not before the round; an
elephant report or a sample that completes a waiting round makes the loop act at once;
a NOTICE alarm whose overload the switch's own elephant reports prove gets its round."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

from controller.gor.decisions import FlowKey
from controller.gor.digests import DIGEST_NAME
from controller.gor.loop import SAMPLING_TABLE, GorLoop
from controller.telemetry.poller import LinkId, PolledLink, PortReading, TelemetryPoller
from p4src.alarmmodel import ALARM_DIGEST, ELEPHANT_DIGEST
from test_gor_dataplane import alarm_row, elephant_row
from test_gor_loop import (L0, digest_rows, events, flows_through, make, port_to, register,
                           samples)

RATE_PPS = 1000.0
"""The uplinks' queue rate in these tests (utilisation is packets/s over it)."""


def polled(fab: Any, hot: tuple[str, int], hot_util: float = 0.0) -> dict[Any, Any]:
    """One poll: every link at 10 % of ``RATE_PPS``, ``hot`` at ``hot_util`` (0: the
    collision has just begun, no poll has seen it), no marks; each sample says the queue
    rate its utilisation is relative to."""
    out = {}
    for lid, s in samples(fab, marks=0).items():
        util = hot_util if (lid.switch, lid.port) == hot else 0.1
        pkts = round(util * RATE_PPS * s.dt_s)
        out[lid] = dataclasses.replace(s, tx_pkts=pkts, tx_bytes=pkts * 1000, util=util,
                                       max_qdepth=0, rate_pps=RATE_PPS)
    return out


def report(loop: GorLoop, fab: Any, up: int, shares: dict[FlowKey, float]) -> None:
    """The switch reports each flow of ``shares`` at that fraction of ``RATE_PPS``
    (packets − 1 over a 400 ms window)."""
    loop.submit_digests(L0, SimpleNamespace(name=ELEPHANT_DIGEST, data=[
        elephant_row(fab, f, up, packets=round(share * RATE_PPS * 0.4) + 1, window_us=400_000)
        for f, share in shares.items()]))


def alarm(loop: GorLoop, fab: Any, up: int, level: int, seq: int = 1) -> None:
    loop.submit_digests(L0, SimpleNamespace(name=ALARM_DIGEST,
                                            data=[alarm_row(fab, L0, up, level=level, seq=seq)]))


def hot_link() -> tuple[Any, GorLoop, Any, Any, Any, int, FlowKey, FlowKey]:
    """A loop that has had one poll (the collision not in it yet) and two flows through
    ``L0 → s0``, ``f`` registered with an agent."""
    fab, loop, prog, reg, buf, _ = make()
    up = port_to(fab, L0, "s0")
    f, g = flows_through(loop, "s0", 2)
    register(fab, reg, f)
    loop.tick(1.0, polled(fab, (L0, up)))
    return fab, loop, prog, reg, buf, up, f, g


def test_the_capacity_in_packets_per_second_comes_from_the_first_poll() -> None:
    fab, loop, _prog, _reg, buf, up, f, g = hot_link()
    # no poll has seen the hot link busy (utilisation 0): its capacity in packets/s is
    # the queue rate the poller measures it against, not unknown
    assert loop.links.capacity_pps[(L0, up)] == RATE_PPS
    report(loop, fab, up, {f: 0.3, g: 0.7})
    alarm(loop, fab, up, level=2)
    rounds = loop.react(1.02)
    assert len(rounds) == 1 and rounds[0].trigger == (L0, up) and rounds[0].orders
    chosen = [e for e in events(buf) if e["event"] == "flows_chosen"][0]["flows"]
    assert [(c["flow"], c["util_pct"]) for c in chosen] == [(str(g), 70.0), (str(f), 30.0)]
    loop.close()


def test_the_poller_hands_the_queue_rate_with_each_sample() -> None:
    link = LinkId("b0r0l0", 3, "s0", "uplink")
    counts = iter([0, 50])
    poller = TelemetryPoller({"b0r0l0": lambda ports: {3: PortReading(next(counts), 0, 0, 0)}},
                             [PolledLink(link, 100.0, RATE_PPS)], period_s=0.05)
    try:
        assert poller.poll_once() == {}                        # the baseline
        (s,) = poller.poll_once().values()
        assert s.rate_pps == RATE_PPS
    finally:
        poller.stop()


def test_the_sampling_write_comes_after_the_rounds_first_order() -> None:
    fab, loop, prog, _reg, buf, up, f, g = hot_link()
    conn = prog.connections[L0]
    seen_at_write: list[list[str]] = []
    insert = conn.insert

    def recording_insert(te: Any) -> None:
        if te[0] == SAMPLING_TABLE and dict(te[1])["standard_metadata.egress_spec"] == up:
            seen_at_write.append([e["event"] for e in events(buf)])
        insert(te)
    conn.insert = recording_insert
    report(loop, fab, up, {f: 0.3, g: 0.7})
    alarm(loop, fab, up, level=2)
    assert loop.react(1.02)[0].orders
    # the alarm is logged, the round decided and its order sent before the write …
    assert len(seen_at_write) == 1 and "order_sent" in seen_at_write[0]
    assert seen_at_write[0].index("alarm_raised") < seen_at_write[0].index("order_sent")
    # … which is made in the same step: sampling is on at the alarmed link and at the
    # move's new link when react returns
    (m,) = loop.pending.values()
    assert (L0, up) in loop.sampling and m.new_link in loop.sampling
    raised = [e for e in events(buf) if e["event"] == "alarm_raised"]
    assert raised[0]["sampling"] == 100_000                # the ratio being written
    loop.close()


def test_an_elephant_report_wakes_a_round_that_waits_for_it() -> None:
    fab, loop, _prog, _reg, _buf, up, f, g = hot_link()
    assert not loop.wants_now(ELEPHANT_DIGEST)             # nothing waits
    alarm(loop, fab, up, level=2)                          # before the switch's elephants
    assert loop.react(1.02) == []
    assert loop.rounds.waiting == {(L0, up)}
    assert loop.wants_now(ELEPHANT_DIGEST)                 # the reader calls react on one
    report(loop, fab, up, {f: 0.3, g: 0.7})
    rounds = loop.react(1.03)
    assert rounds and rounds[0].orders
    assert not loop.wants_now(ELEPHANT_DIGEST)             # a move in flight: none waits
    loop.close()


def test_samples_wake_a_round_the_reports_do_not_explain() -> None:
    fab, loop, _prog, _reg, _buf, up, f, g = hot_link()
    report(loop, fab, up, {f: 0.3})                        # 30 %: not the whole alarm
    alarm(loop, fab, up, level=2)
    assert loop.react(1.02) == []                          # ranks from samples: none yet
    assert loop.rounds.waiting_samples == {(L0, up)} and loop.wants_now(DIGEST_NAME)
    loop.submit_digests(L0, digest_rows(fab, f, up, 30))
    loop.submit_digests(L0, digest_rows(fab, g, up, 70))
    rounds = loop.react(1.03)
    assert rounds and rounds[0].trigger == (L0, up)
    loop.close()


def test_a_notice_alarm_gets_its_round_when_the_switchs_reports_prove_the_overload() -> None:
    fab, loop, _prog, _reg, buf, up, f, g = hot_link()
    report(loop, fab, up, {f: 0.3, g: 0.4})                # 70 %: under the threshold
    alarm(loop, fab, up, level=1)
    assert loop.react(1.02) == []                          # marks alone prove nothing
    assert loop.rounds.waiting == {(L0, up)} and loop.wants_now(ELEPHANT_DIGEST)
    report(loop, fab, up, {g: 0.5})                        # 80 %: over 75 %
    rounds = loop.react(1.03)
    assert rounds and rounds[0].trigger == (L0, up) and rounds[0].orders
    assert loop.rounds.overloaded((L0, up), 1.03) and not loop.rounds.overloaded((L0, up))
    assert [e["level"] for e in events(buf) if e["event"] == "alarm_raised"] == [1]
    loop.close()
