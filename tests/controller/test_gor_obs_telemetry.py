"""Unit tests of GOR's telemetry loop with fake readers (no switch): utilisation per
direction from counter deltas, the queue-depth histogram, counter resets, stale switches,
the P4Runtime reader over a fake connection (counters only, nothing written), and that
topo's telemetry is the controller's."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Optional

import pytest

from controller.telemetry import poller as gt
from controller.telemetry.poller import (LinkId, PolledLink, PortReading, TelemetryPoller,
                                      counter_reset, delta, fabric_links, p4rt_reader,
                                      utilisation)
from topo import FabricSpec, build_fabric

UP = LinkId("b0r0l0", 3, "s0", "uplink")
DOWN = LinkId("s0", 1, "b0r0l0", "downlink")


class FakeClock:
    """A monotonic clock the test advances by hand."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Script:
    """A reader returning scripted cumulative readings per call (an exception is raised)."""

    def __init__(self, *steps: Any) -> None:
        self.steps, self.calls = list(steps), 0

    def __call__(self, ports: Any) -> dict[int, PortReading]:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        if isinstance(step, BaseException):
            raise step
        return step


# ------------------------------------------------------------------ maths
def test_utilisation_per_direction_from_bytes_and_link_speed() -> None:
    d = PortReading(tx_pkts=1000, tx_bytes=125_000_000, marks=0, max_qdepth=0,
                    rx_pkts=10, rx_bytes=31_250_000)
    assert utilisation(d, 0.1, None, 100.0) == pytest.approx(0.1)          # 10 Gb/s of 100
    assert utilisation(d, 0.1, None, 100.0, rx=True) == pytest.approx(0.025)
    assert utilisation(d, 0.1, 20_000.0, 100.0) == pytest.approx(0.5)      # queue rate wins
    assert utilisation(d, 0.0, None, 100.0) == 0.0


def bins(**counts: int) -> tuple[int, ...]:
    """A histogram as a reader returns it: ``bins(b0=5, b3=2)`` → 16 cells."""
    out = [0] * gt.QDEPTH_BINS
    for k, n in counts.items():
        out[int(k[1:])] = n
    return tuple(out)


def test_delta_and_reset_detection_cover_every_counter() -> None:
    prev = PortReading(100, 1000, 10, 0, 50, 500, 3, 2, 1, bins(b0=90, b2=10))
    cur = PortReading(150, 1600, 12, 0, 80, 800, 4, 2, 5, bins(b0=120, b2=20, b3=10))
    assert delta(prev, cur) == PortReading(50, 600, 2, 12, 30, 300, 1, 0, 4, bins(b0=30, b2=10, b3=10))
    assert not counter_reset(prev, cur)
    restarted = PortReading(7, 70, 0, 4, 3, 30, 0, 0, 0, bins(b0=6, b1=1))
    assert counter_reset(prev, restarted)
    assert delta(prev, restarted) == restarted  # counts from 0 after a reset
    only_a_bin = PortReading(150, 1600, 12, 0, 80, 800, 4, 2, 5, bins(b0=89, b2=10))
    assert counter_reset(prev, only_a_bin)


def test_max_qdepth_is_the_lower_edge_of_the_deepest_bin_of_the_interval() -> None:
    assert (gt.QDEPTH_BINS, gt.QDEPTH_BIN_PKTS) == (16, 4)
    assert gt.QDEPTH_HIST_COUNTER == "FabricEgress.telemetry.qdepth_hist"
    assert [gt.qdepth_bin(d) for d in (0, 3, 4, 7, 8, 59, 60, 63, 1000)] == \
        [0, 0, 1, 1, 2, 14, 15, 15, 15]
    assert gt.qdepth_floor({}) == 0 and gt.qdepth_floor({0: 0, 7: 0}) == 0
    assert gt.qdepth_floor({0: 100}) == 0
    assert gt.qdepth_floor({0: 100, 3: 1, 1: 7}) == 12
    assert gt.qdepth_floor({15: 1}) == 60               # the open-ended last bin
    assert gt.qdepth_floor(bins(b5=2)) == 20             # a sequence indexed by bin
    # a deep queue long ago does not count in a later, shallow interval
    old = PortReading(10, 0, 0, 40, qdepth_bins=bins(b0=5, b10=5))
    later = PortReading(30, 0, 0, 40, qdepth_bins=bins(b0=20, b1=5, b10=5))
    d = delta(old, later)
    assert (d.max_qdepth, d.qdepth_bins) == (4, bins(b0=15, b1=5))
    assert delta(later, later).max_qdepth == 0          # idle interval
    # a reading without a histogram (a pipeline without the counter) reports 0
    assert delta(PortReading(1, 1, 0, 0), PortReading(5, 5, 0, 0)).max_qdepth == 0
    # bins appear (new pipeline): the missing ones count from 0
    assert delta(PortReading(1, 1, 0, 0), later).qdepth_bins == later.qdepth_bins
    assert gt.qdepth_hist_index(3, 0) == 48 and gt.qdepth_hist_index(3, 15) == 63


def test_sample_mark_rate() -> None:
    assert gt.LinkSample(1, 1, 0, 0, 0, 0, 0).mark_rate == 0.0
    assert gt.LinkSample(1, 1, 400, 0, 100, 0, 0).mark_rate == 0.25


# ------------------------------------------------------------------ the poller
def test_poller_computes_util_per_direction_over_each_interval() -> None:
    clock = FakeClock()
    leaf = Script({3: PortReading(0, 0, 0, 0, qdepth_bins=bins())},
                  {3: PortReading(1000, 62_500_000, 40, 12, 500, 12_500_000, 1, 0, 0,
                                  bins(b0=900, b1=60, b3=40))})
    spine = Script({1: PortReading(0, 0, 0, 0)}, {1: PortReading(500, 12_500_000, 0, 0)})
    links = [PolledLink(UP, gbps=10.0), PolledLink(DOWN, gbps=10.0)]
    poller = TelemetryPoller({"b0r0l0": leaf, "s0": spine}, links, period_s=0.05, clock=clock)
    assert poller.poll_once() == {}
    clock.t += 0.05
    got = poller.poll_once()
    up, down = got[UP], got[DOWN]
    assert up.dt_s == pytest.approx(0.05) and up.t_s == pytest.approx(0.05)
    assert up.util == pytest.approx(1.0)              # 62.5 MB in 50 ms = 10 Gb/s
    assert down.util == pytest.approx(0.2)            # 12.5 MB in 50 ms = 2 Gb/s
    assert up.rx_util == pytest.approx(down.util)     # the reverse direction seen at the leaf
    assert (up.marks, up.max_qdepth, up.drops, up.mark_rate) == (40, 12, 1, 0.04)
    assert up.qdepth_bins == (900, 60, 0, 40) and down.max_qdepth == 0   # empty tail dropped
    assert poller.polls == 2 and poller.loop_s == 0.0


def test_poller_survives_a_counter_reset() -> None:
    clock = FakeClock()
    reader = Script({3: PortReading(5000, 5_000_000, 50, 0)},
                    {3: PortReading(6000, 6_000_000, 60, 3)},
                    {3: PortReading(200, 200_000, 1, 4)})      # switch restarted
    poller = TelemetryPoller({"b0r0l0": reader}, [PolledLink(UP, None, 10_000.0)], clock=clock)
    poller.poll_once()
    clock.t += 0.1
    first = poller.poll_once()[UP]
    clock.t += 0.1
    after = poller.poll_once()[UP]
    assert (first.tx_pkts, first.reset) == (1000, False)
    assert first.util == pytest.approx(1.0)
    assert (after.tx_pkts, after.marks, after.reset) == (200, 1, True)
    assert after.util == pytest.approx(0.2)
    assert all(s.tx_pkts >= 0 for s in poller.series.samples[UP])


def test_an_interval_runs_between_the_middles_of_its_two_reads() -> None:
    """A slow read followed by a quick one: timed by the answers alone, the second
    interval would be 0.1 s and its rate 5x too high; by the middles of the reads it is
    the 0.5 s the counters really span (the snapshot lies between request and answer)."""
    clock = FakeClock()

    class Slow:
        def __init__(self, latency_s: list[float], tx: list[int]) -> None:
            self.latency_s, self.tx = latency_s, tx

        def __call__(self, ports: Any) -> dict[int, PortReading]:
            clock.t += self.latency_s.pop(0)
            return {3: PortReading(self.tx.pop(0), 0, 0, 0)}

    reader = Slow([0.0, 0.8, 0.0], [0, 200, 300])
    poller = TelemetryPoller({"b0r0l0": reader}, [PolledLink(UP, 200.0, 10.0)], clock=clock)
    poller.poll_once()                               # read at 100.0
    clock.t += 0.1
    first = poller.poll_once()[UP]                   # asked at 100.1, answered at 100.9
    clock.t += 0.1
    second = poller.poll_once()[UP]                  # asked and answered at 101.0
    assert first.dt_s == pytest.approx(0.5) and second.dt_s == pytest.approx(0.5)
    assert second.pps == pytest.approx(200.0)        # not 1000


def test_a_stale_switch_is_marked_logged_and_the_loop_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    gone = ConnectionError("switch gone")
    spine = Script({1: PortReading(0, 0, 0, 0)}, gone, gone,
                   {1: PortReading(300, 300_000, 0, 0)})
    leaf = Script(*[{3: PortReading(100 * n, 100_000 * n, 0, 0)} for n in range(5)])
    links = [PolledLink(UP, None, 1000.0), PolledLink(DOWN, None, 1000.0)]
    poller = TelemetryPoller({"b0r0l0": leaf, "s0": spine}, links, clock=clock)
    caplog.set_level(logging.WARNING, logger="controller.telemetry.poller")
    poller.poll_once()
    clock.t += 0.1
    got = poller.poll_once()
    assert set(got) == {UP} and poller.stale_switches() == ["s0"]
    assert poller.health["s0"].stale_since_s == pytest.approx(100.1)
    assert "s0" in caplog.text and "stale" in caplog.text
    clock.t += 0.1
    assert set(poller.poll_once()) == {UP}
    assert poller.health["s0"].failures == 2 and len(poller.errors) == 2
    clock.t += 0.1
    back = poller.poll_once()
    assert poller.stale_switches() == [] and "answers again" in caplog.text
    # the first interval after the outage spans it all (0.3 s since the last good read)
    assert back[DOWN].dt_s == pytest.approx(0.3) and back[DOWN].tx_pkts == 300
    assert back[DOWN].util == pytest.approx(1.0)
    assert back[UP].dt_s == pytest.approx(0.1)


def test_on_tick_errors_do_not_stop_the_thread() -> None:
    ticks: list[int] = []

    def tick(t_s: float, samples: dict[LinkId, Any]) -> None:
        ticks.append(len(samples))
        raise RuntimeError("consumer bug")

    n = {"i": 0}

    def reader(ports: Any) -> dict[int, PortReading]:
        n["i"] += 1
        return {3: PortReading(n["i"], n["i"], 0, 0)}

    import time
    with TelemetryPoller({"b0r0l0": reader}, [PolledLink(UP, 1.0)], period_s=0.005,
                         on_tick=tick) as poller:
        deadline = time.monotonic() + 2.0
        while len(ticks) < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
    assert len(ticks) >= 3 and poller.series.samples[UP]


def test_series_can_be_bounded() -> None:
    s = gt.TelemetrySeries(max_samples=2)
    for i in range(5):
        s.add(UP, gt.LinkSample(i, 1, i, 0, 0, 0, 0))
    assert [x.tx_pkts for x in s.samples[UP]] == [3, 4] and s.latest()[UP].tx_pkts == 4


def test_fabric_links_take_capacity_from_the_topology() -> None:
    fab = build_fabric(FabricSpec())
    links = fabric_links(fab)
    uplink_gbps = {pl.gbps for pl in links if pl.link.kind == "uplink"}
    port_gbps = {p.gbps for sw in fab.switches for p in sw.ports.values() if p.kind == "uplink"}
    assert uplink_gbps == port_gbps and all(pl.rate_pps is None for pl in links)


# ------------------------------------------------------------------ P4Runtime reader
@dataclass
class Cell:
    packets: int
    bytes: int = 0


class FakeInfo:
    def __init__(self, counters: set[str]) -> None:
        self.counters = counters

    def has(self, kind: str, name: str) -> bool:
        return kind == "counter" and name in self.counters


class FakeConn:
    """Stands in for SwitchConnection on a target that refuses indexed reads (``send_read``
    fails; wildcard ``read_counter`` answers): counters by name; it has no register and
    fails on any write."""

    def __init__(self, counters: dict[str, dict[int, Cell]]) -> None:
        self.counters = counters
        self.p4info: Optional[FakeInfo] = FakeInfo(set(counters))

    def read_counter(self, name: str) -> dict[int, Cell]:
        return self.counters[name]

    def read_request(self, *msgs: Any) -> list[Any]:
        return list(msgs)

    def send_read(self, req: list[Any]) -> Any:
        raise RuntimeError("UNIMPLEMENTED: indexed counter reads")  # as a target without them

    def write(self, updates: list[Any]) -> None:
        raise AssertionError(f"the reader wrote {updates!r}")


HIST = gt.QDEPTH_HIST_COUNTER
COUNTERS = {
    gt.TX_COUNTER: {3: Cell(10, 640), 4: Cell(5, 320)},
    gt.ECN_COUNTER: {3: Cell(2)},
    gt.RX_COUNTER: {3: Cell(7, 448)},
    gt.DROPS_COUNTER: {3: Cell(1)},
    gt.PFC_TX_COUNTER: {4: Cell(6)},
    gt.PFC_RX_COUNTER: {3 * 8 + 3: Cell(4), 3 * 8 + 5: Cell(1), 4 * 8: Cell(9)},
    HIST: {3 * 16: Cell(6), 3 * 16 + 4: Cell(4), 4 * 16: Cell(5), 5 * 16 + 9: Cell(1)},
}
WANT = {3: PortReading(10, 640, 2, 16, 7, 448, 1, 0, 5, bins(b0=6, b4=4)),
        4: PortReading(5, 320, 0, 0, 0, 0, 0, 6, 9, bins(b0=5))}


def test_p4rt_reader_reads_every_counter_and_the_histogram_without_writing() -> None:
    assert p4rt_reader(FakeConn(COUNTERS))([3, 4]) == WANT


class IndexedInfo(FakeInfo):
    """A P4Info with counter ids (id = position in ``names``)."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(set(names))
        self.names = names

    def counter_id(self, name: str) -> int:
        return self.names.index(name) + 1


class IndexedConn(FakeConn):
    """A SwitchConnection with indexed reads: records every Read request; no register."""

    def __init__(self, counters: dict[str, dict[int, Cell]]) -> None:
        super().__init__(counters)
        self.p4info = IndexedInfo(list(counters))
        self.requests: list[list[tuple[str, int]]] = []

    def read_counter(self, name: str) -> dict[int, Cell]:
        raise AssertionError("fell back to a wildcard read")

    def send_read(self, req: list[Any]) -> Any:
        return self.read(*req)

    def read(self, *msgs: Any) -> Any:
        from p4.v1 import p4runtime_pb2
        names = self.p4info.names  # type: ignore[union-attr]
        asked = []
        for m in msgs:
            assert isinstance(m, p4runtime_pb2.CounterEntry), f"not a counter cell: {m!r}"
            asked.append((names[m.counter_id - 1], m.index.index))
        self.requests.append(asked)
        for name, i in asked:
            c = self.counters[name].get(i)
            if c is not None:
                e = p4runtime_pb2.Entity()
                e.counter_entry.counter_id = names.index(name) + 1
                e.counter_entry.index.index = i
                e.counter_entry.data.packet_count, e.counter_entry.data.byte_count = c.packets, c.bytes
                yield e


def test_p4rt_reader_reads_only_the_polled_cells_in_one_request() -> None:
    conn = IndexedConn(COUNTERS)
    assert p4rt_reader(conn)([3, 4]) == WANT
    [asked] = conn.requests
    hist = sorted(i for n, i in asked if n == HIST)
    assert hist == list(range(48, 64)) + list(range(64, 80))    # ports 3 and 4, 16 bins each
    assert len(asked) == 5 * 2 + 8 * 2 + 16 * 2                 # 5 per-port counters, PFC, bins
    assert all(n in COUNTERS for n, _ in asked)


class BuildOnceConn(IndexedConn):
    """An :class:`IndexedConn` that counts the ReadRequests it builds (``read_request``)."""

    def __init__(self, counters: dict[str, dict[int, Cell]]) -> None:
        super().__init__(counters)
        self.builds = 0

    def read_request(self, *msgs: Any) -> Any:
        self.builds += 1
        return list(msgs)


def test_p4rt_reader_builds_its_request_once_per_port_list_and_pipeline() -> None:
    conn = BuildOnceConn(COUNTERS)
    read = p4rt_reader(conn)
    assert [read([3, 4]) for _ in range(3)] == [WANT] * 3
    assert conn.builds == 1 and len(conn.requests) == 3 and conn.requests[0] == conn.requests[2]
    read([3])
    assert conn.builds == 2                                   # another port list
    assert read([3, 4]) == WANT and conn.builds == 2          # the first one kept
    conn.p4info = IndexedInfo(list(reversed(list(COUNTERS))))  # a new pipeline: new counter ids
    assert read([3, 4]) == WANT and conn.builds == 3


def test_p4rt_reader_tolerates_a_pipeline_without_pfc_counters_or_histogram() -> None:
    conn = FakeConn({gt.TX_COUNTER: {3: Cell(1, 64)}, gt.ECN_COUNTER: {}})
    assert p4rt_reader(conn)([3])[3] == PortReading(1, 64, 0, 0)


def test_topo_telemetry_is_the_controllers() -> None:
    import scenarios.telemetry as tt
    assert tt.TelemetryPoller is TelemetryPoller and tt.delta is delta
    assert tt.LinkId is LinkId and tt.p4rt_reader is p4rt_reader
