"""Unit tests of the traffic manager (:mod:`p4sim.switchd.tm`) with a fake clock:
departure-time rule, enq/deq depth, tail drop, strict priority, PFC pause/resume,
settings scope, blocking dequeue."""
from __future__ import annotations

import threading
import time

import pytest

from p4sim.switchd.pfc import build_pfc_frame, parse_pfc, quanta_to_us
from p4sim.switchd.tm import TrafficManager


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def drain(tm: TrafficManager) -> list:
    out = []
    while (d := tm.poll()) is not None:
        out.append(d)
    return out


def test_rate_limit_makes_enq_qdepth_grow_and_fixes_departures() -> None:
    clk = Clock()
    tm = TrafficManager(clock_us=clk, rate_pps=1000)          # one packet per 1000 µs
    depths = [tm.enqueue(1, 0, i) for i in range(5)]
    assert depths == [0, 1, 2, 3, 4]
    got = drain(tm)
    assert [d.item for d in got] == [0]
    assert got[0].deq_qdepth == 4
    for t, expect in ((999, []), (1000, [1]), (3500, [2, 3]), (10_000, [4])):
        clk.now = t
        assert [d.item for d in drain(tm)] == expect
    assert tm.queue_stats(1)[1]["queues"][0]["dequeued"] == 5


def test_departure_time_is_max_of_now_and_previous_plus_interval() -> None:
    clk = Clock()
    tm = TrafficManager(clock_us=clk, rate_pps=1000)
    tm.enqueue(1, 0, "a")                                     # departs 0
    clk.now = 500
    tm.enqueue(1, 0, "b")                                     # departs 1000, not 1500
    clk.now = 5000
    tm.enqueue(1, 0, "c")                                     # departs 5000 (idle link)
    clk.now = 0
    assert [d.item for d in drain(tm)] == ["a"]
    clk.now = 1000
    assert [d.item for d in drain(tm)] == ["b"]
    clk.now = 4999
    assert drain(tm) == []
    clk.now = 5000
    got = drain(tm)
    assert [d.item for d in got] == ["c"] and got[0].enq_timestamp == 5000


def test_unlimited_rate_sends_at_once_and_reports_depths() -> None:
    tm = TrafficManager(clock_us=Clock())
    assert [tm.enqueue(3, 0, i) for i in range(3)] == [0, 1, 2]
    got = drain(tm)
    assert [(d.item, d.enq_qdepth, d.deq_qdepth) for d in got] == [(0, 0, 2), (1, 1, 1), (2, 2, 0)]


def test_tail_drop_at_depth_counts_drops() -> None:
    tm = TrafficManager(clock_us=Clock(), depth_pkts=3)
    assert [tm.enqueue(1, 0, i) for i in range(5)] == [0, 1, 2, None, None]
    st = tm.queue_stats(1)[1]["queues"][0]
    assert (st["enqueued"], st["dropped"], st["depth"]) == (3, 2, 3)
    assert [d.item for d in drain(tm)] == [0, 1, 2]


def test_strict_priority_highest_index_first() -> None:
    tm = TrafficManager(clock_us=Clock(), priority_queues=4)
    for prio, item in ((0, "a0"), (3, "b3"), (1, "c1"), (3, "d3"), (0, "e0")):
        tm.enqueue(1, prio, item)
    assert [d.item for d in drain(tm)] == ["b3", "d3", "c1", "a0", "e0"]


def test_enq_qdepth_counts_all_priorities_of_the_port() -> None:
    tm = TrafficManager(clock_us=Clock(), priority_queues=2)
    assert tm.enqueue(1, 0, "a") == 0
    assert tm.enqueue(1, 1, "b") == 1
    assert tm.enqueue(2, 1, "c") == 0                         # other port


def test_rate_limited_high_priority_lets_lower_priority_go() -> None:
    clk = Clock()
    tm = TrafficManager(clock_us=clk, priority_queues=2)
    tm.set_queue_rate(1000, port=1, priority=1)
    tm.enqueue(1, 1, "h1")
    tm.enqueue(1, 1, "h2")                                    # departs 1000
    tm.enqueue(1, 0, "l1")
    assert [d.item for d in drain(tm)] == ["h1", "l1"]
    clk.now = 1000
    assert [d.item for d in drain(tm)] == ["h2"]


def test_pfc_pause_holds_queue_without_loss_and_zero_resumes() -> None:
    clk = Clock()
    tm = TrafficManager(clock_us=clk, priority_queues=8, line_rate_gbps=0.001)
    # 0.001 Gb/s: one quantum = 512 µs
    assert tm.pause(1, {3: 10, 5: 0})
    for i in range(10):
        tm.enqueue(1, 3, f"p{i}")
    tm.enqueue(1, 0, "other")
    assert [d.item for d in drain(tm)] == ["other"]           # other priority not paused
    clk.now = 2000
    assert drain(tm) == [] and tm.is_paused(1, 3)
    assert tm.pause(1, {3: 0})                                # resume now
    assert [d.item for d in drain(tm)] == [f"p{i}" for i in range(10)]
    st = tm.queue_stats(1)[1]["queues"][3]
    assert st["dropped"] == 0 and st["pause_frames"] == 2 and st["paused_us"] == 2000


def test_pfc_pause_expires_after_quanta_at_line_rate() -> None:
    clk = Clock()
    tm = TrafficManager(clock_us=clk, line_rate_gbps=0.001)
    tm.pause(1, {0: 2})                                       # 1024 µs
    tm.enqueue(1, 0, "x")
    clk.now = 1023
    assert drain(tm) == []
    clk.now = 1024
    assert [d.item for d in drain(tm)] == ["x"]
    assert tm.queue_stats(1)[1]["queues"][0]["paused_us"] == 1024


def test_pfc_new_frame_restarts_timer_and_disable_resumes() -> None:
    clk = Clock()
    tm = TrafficManager(clock_us=clk, line_rate_gbps=0.001)
    tm.pause(1, {0: 2})
    clk.now = 1000
    tm.pause(1, {0: 2})                                       # now until 2024
    tm.enqueue(1, 0, "x")
    clk.now = 2000
    assert drain(tm) == []
    tm.set_pfc(False, port=1)
    assert [d.item for d in drain(tm)] == ["x"]
    assert not tm.pause(1, {0: 100})                          # ignored while off
    tm.enqueue(1, 0, "y")
    assert [d.item for d in drain(tm)] == ["y"]


def test_paused_queue_still_tail_drops_when_full() -> None:
    tm = TrafficManager(clock_us=Clock(), depth_pkts=2, line_rate_gbps=0.001)
    tm.pause(1, {0: 100})
    assert [tm.enqueue(1, 0, i) for i in range(3)] == [0, 1, None]


def test_settings_scope_port_priority_and_defaults() -> None:
    tm = TrafficManager(clock_us=Clock(), priority_queues=2)
    tm.add_port(1)
    tm.set_queue_depth(8, port=1, priority=1)
    tm.set_queue_rate(50, port=1)
    st = tm.queue_stats(1)[1]["queues"]
    assert [(q["depth_pkts"], q["rate_pps"]) for q in st] == [(64, 50.0), (8, 50.0)]
    tm.set_queue_depth(16)
    tm.add_port(7)                                            # created later: new default
    assert tm.queue_stats(7)[7]["queues"][0]["depth_pkts"] == 16
    tm.set_line_rate(25.0, port=7)
    assert tm.queue_stats(7)[7]["line_rate_gbps"] == 25.0
    with pytest.raises(ValueError):
        tm.set_queue_rate(-1)
    with pytest.raises(ValueError):
        tm.set_queue_depth(0)
    with pytest.raises(ValueError):
        tm.set_queue_rate(1, port=1, priority=2)


def test_out_of_range_priority_is_dropped() -> None:
    tm = TrafficManager(clock_us=Clock(), priority_queues=2)
    assert tm.enqueue(1, 2, "x") is None


def test_blocking_dequeue_waits_for_rate_and_close_wakes() -> None:
    tm = TrafficManager(rate_pps=50)                          # real clock: 20 ms apart
    tm.enqueue(1, 0, "a")
    tm.enqueue(1, 0, "b")
    t0 = time.monotonic()
    assert tm.dequeue(1.0).item == "a"
    assert tm.dequeue(1.0).item == "b"
    assert 0.015 <= time.monotonic() - t0 < 0.5
    assert tm.dequeue(0.05) is None
    result: list = []
    th = threading.Thread(target=lambda: result.append(tm.dequeue(5.0)))
    th.start()
    tm.close()
    th.join(2.0)
    assert result == [None]


def test_pfc_frame_codec() -> None:
    frame = build_pfc_frame(bytes.fromhex("020000000009"), {0: 1, 7: 65535})
    assert len(frame) == 60 and frame[12:16] == bytes.fromhex("88080101")
    assert parse_pfc(frame) == {0: 1, 7: 65535}
    assert parse_pfc(frame[:20]) is None
    assert parse_pfc(frame[:14] + bytes.fromhex("0001") + frame[16:]) is None  # 802.3x pause
    assert quanta_to_us(65535, 400.0) == pytest.approx(83.88, abs=0.01)
