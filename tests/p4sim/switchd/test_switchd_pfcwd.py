"""Unit tests of the PFC watchdog (SONiC's pfcwd, :class:`p4sim.switchd.pfc.PfcWatchdog`) in
both traffic managers, with an injected clock: the Python one (:mod:`p4sim.switchd.tm`) and
the native data plane's (``dataplane.c``, driven without its threads through
``dp_tm_enqueue`` / ``dp_tm_poll`` and ``dp_set_clock``). Detection: paused for the
detection time with packets waiting → storm, the action applied; restoration: no PAUSE
frame for the restoration time → restored; the counters and the control command."""
from __future__ import annotations

import ctypes
from typing import Any, Iterator, Optional

import pytest

from p4sim.switchd.control import ControlService
from p4sim.switchd.device import SwitchDevice
from p4sim.switchd.fastpath import DP_CLOCK, NativeTM, dataplane_lib
from p4sim.switchd.main import parse_args
from p4sim.switchd.pfc import PfcWatchdog
from p4sim.switchd.tm import TrafficManager

PORT, PRIO = 2, 3
STORM_QUANTA = 0xFFFF          # 3,355 µs at 10 Gb/s: a storm re-sends before it runs out


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class PythonEngine:
    """tm.py's TrafficManager with the test's clock."""

    def __init__(self, clk: Clock) -> None:
        self.tm = TrafficManager(priority_queues=8, clock_us=clk)

    def enqueue(self, port: int, prio: int) -> Optional[int]:
        return self.tm.enqueue(port, prio, "pkt")

    def poll(self) -> Optional[tuple[int, int]]:
        d = self.tm.poll()
        return None if d is None else (d.port, d.priority)

    def wake_us(self) -> Optional[float]:
        return self.tm.poll_wake()[1]

    def close(self) -> None:
        pass


class NativeEngine:
    """The native data plane's queues (no threads started) with the test's clock."""

    def __init__(self, clk: Clock) -> None:
        self.lib = dataplane_lib()
        self.dp = self.lib.dp_new(8, 64, 0.0, 10.0, 1, 0, 1024, 0, -1)
        self._clock = DP_CLOCK(clk)             # kept alive while the data plane runs
        self.lib.dp_set_clock(self.dp, self._clock)
        self.tm = NativeTM(self.dp, 8)
        self._out = (ctypes.c_int64 * 3)()

    def enqueue(self, port: int, prio: int) -> Optional[int]:
        r = self.lib.dp_tm_enqueue(self.dp, port, prio)
        return None if r < 0 else r

    def poll(self) -> Optional[tuple[int, int]]:
        if self.lib.dp_tm_poll(self.dp, self._out):
            return self._out[0], self._out[1]
        return None

    def wake_us(self) -> Optional[float]:
        assert not self.lib.dp_tm_poll(self.dp, self._out)
        return None if self._out[2] < 0 else float(self._out[2])

    def close(self) -> None:
        self.lib.dp_free(self.dp)


@pytest.fixture(params=["python", "native"])
def engine(request: Any) -> Iterator[tuple[Any, Clock]]:
    clk = Clock()
    eng = PythonEngine(clk) if request.param == "python" else NativeEngine(clk)
    yield eng, clk
    eng.close()


def queue(eng: Any) -> dict[str, Any]:
    return eng.tm.queue_stats(PORT)[PORT]["queues"][PRIO]


def storm_until(eng: Any, clk: Clock, until_us: int, step_us: int = 1000) -> None:
    """A host's PFC storm on (PORT, PRIO): a PAUSE frame every ``step_us`` up to ``until_us``."""
    while clk.now < until_us:
        eng.tm.pause(PORT, {PRIO: STORM_QUANTA})
        clk.now += step_us


def test_storm_detected_after_detection_time_and_drop_discards(engine: Any) -> None:
    eng, clk = engine
    eng.tm.set_pfc_watchdog(PfcWatchdog.from_ms(200, 400, "drop"))
    for _ in range(5):
        eng.enqueue(PORT, PRIO)
    storm_until(eng, clk, 199_000)
    assert eng.poll() is None
    q = queue(eng)
    assert (q["paused"], q["pfcwd_storm"], q["pfcwd_storms"], q["depth"]) == (True, False, 0, 5)
    # the scheduler looks again at the detection time (pause start + 200 ms), not later
    assert eng.wake_us() == pytest.approx(200_000)
    clk.now = 200_000
    assert eng.poll() is None                      # the queue's packets were discarded
    q = queue(eng)
    assert (q["paused"], q["pfcwd_storm"], q["pfcwd_storms"], q["pfcwd_dropped"], q["depth"]) == \
        (False, True, 1, 5, 0)
    # in the storm: PAUSE frames counted but ignored, new packets dropped
    frames = q["pause_frames"]
    eng.tm.pause(PORT, {PRIO: STORM_QUANTA})
    assert eng.enqueue(PORT, PRIO) is None
    q = queue(eng)
    assert (q["paused"], q["pause_frames"], q["pfcwd_dropped"]) == (False, frames + 1, 6)
    # other priorities of the port are untouched
    eng.enqueue(PORT, 1)
    assert eng.poll() == (PORT, 1)


def test_forward_ignores_pfc_and_sends_the_waiting_packets(engine: Any) -> None:
    eng, clk = engine
    eng.tm.set_pfc_watchdog(PfcWatchdog.from_ms(100, action="forward"))
    eng.enqueue(PORT, PRIO)
    eng.enqueue(PORT, PRIO)
    storm_until(eng, clk, 150_000)
    assert queue(eng)["pfcwd_storm"]               # found when looked at (100 ms passed)
    assert eng.poll() == (PORT, PRIO)
    eng.tm.pause(PORT, {PRIO: STORM_QUANTA})       # still storming: ignored
    assert eng.poll() == (PORT, PRIO)
    q = queue(eng)
    assert (q["pfcwd_storms"], q["pfcwd_dropped"], q["dequeued"]) == (1, 0, 2)


def test_restored_after_restoration_time_without_pause(engine: Any) -> None:
    eng, clk = engine
    eng.tm.set_pfc_watchdog(PfcWatchdog.from_ms(200, 300, "drop"))
    eng.enqueue(PORT, PRIO)
    storm_until(eng, clk, 250_000)                 # storm at 200 ms; last PAUSE at 249 ms
    assert queue(eng)["pfcwd_storm"]
    last_pause = clk.now - 1000
    clk.now = last_pause + 299_999
    assert queue(eng)["pfcwd_storm"]               # a PAUSE 299.999 ms ago: not yet
    clk.now = last_pause + 300_000
    q = queue(eng)
    assert (q["pfcwd_storm"], q["pfcwd_restored"]) == (False, 1)
    # restored: PFC is honoured again, packets queue and wait
    eng.tm.pause(PORT, {PRIO: STORM_QUANTA})
    assert eng.enqueue(PORT, PRIO) == 0
    assert eng.poll() is None and queue(eng)["paused"]


def test_no_storm_without_waiting_packets_or_under_detection_time(engine: Any) -> None:
    eng, clk = engine
    eng.tm.set_pfc_watchdog(PfcWatchdog.from_ms(200))
    storm_until(eng, clk, 500_000)                 # paused 500 ms, nothing waiting
    assert not queue(eng)["pfcwd_storm"]
    eng.tm.pause(PORT, {PRIO: 0})
    eng.enqueue(PORT, PRIO)
    storm_until(eng, clk, 650_000)                 # packets wait, paused 150 ms < 200 ms
    eng.tm.pause(PORT, {PRIO: 0})                  # the host resumes
    assert eng.poll() == (PORT, PRIO)
    assert queue(eng)["pfcwd_storms"] == 0


def test_watchdog_off_by_default_and_stopping_restores(engine: Any) -> None:
    eng, clk = engine
    eng.enqueue(PORT, PRIO)
    storm_until(eng, clk, 1_000_000)
    q = queue(eng)
    assert (q["paused"], q["pfcwd_storms"], q["depth"]) == (True, 0, 1)   # the old behaviour
    eng.tm.set_pfc_watchdog(PfcWatchdog.from_ms(100, action="forward"))
    storm_until(eng, clk, 1_101_000)
    assert queue(eng)["pfcwd_storm"]
    eng.tm.set_pfc_watchdog(None)
    q = queue(eng)
    assert (q["pfcwd_storm"], q["pfcwd_restored"]) == (False, 1)


def test_control_command_checks_fields_and_starts_the_watchdog() -> None:
    device = SwitchDevice(priority_queues=8)          # no ports, no program, not started
    svc = ControlService(device)
    ok = svc.handle(b'{"cmd": "set_pfc_watchdog", "args": {"detection_ms": 200}}')
    assert ok == {"ok": True, "result": {"detection_ms": 200.0, "restoration_ms": 400.0,
                                         "action": "drop"}}
    assert device.tm.pfc_watchdog() == PfcWatchdog.from_ms(200, 400)
    bad = svc.handle(b'{"cmd": "set_pfc_watchdog", "args": {"detection_ms": 10}}')
    assert bad["ok"] is False and "detection_ms must be 100..5000" in bad["error"]
    bad = svc.handle(b'{"cmd": "set_pfc_watchdog", "args": {"detection_ms": 200, "action": "x"}}')
    assert bad["ok"] is False and "action must be one of drop, forward" in bad["error"]
    assert svc.handle(b'{"cmd": "set_pfc_watchdog"}') == {"ok": True, "result": None}
    assert device.tm.pfc_watchdog() is None


def test_switch_option_parses_and_names_the_bad_field() -> None:
    args = parse_args(["--no-p4", "--pfc-watchdog", "300::forward"])
    assert args.pfc_watchdog == PfcWatchdog(300_000.0, 600_000.0, "forward")
    assert parse_args(["--no-p4"]).pfc_watchdog is None
    with pytest.raises(SystemExit, match="--pfc-watchdog 200:50: restoration_ms must be 100..60000"):
        parse_args(["--no-p4", "--pfc-watchdog", "200:50"])


def test_detection_counts_from_the_first_waiting_packet_not_the_pause(engine: Any) -> None:
    """A queue paused for longer than the detection time while empty is not in a storm when
    a packet arrives: the packet must wait the detection time first (SONiC counts a queue
    paused *with packets it cannot send*). The first version counted from the pause's start
    and discarded the packet at once (review of this stop's merge)."""
    eng, clk = engine
    eng.tm.set_pfc_watchdog(PfcWatchdog.from_ms(200, 400, "drop"))
    storm_until(eng, clk, 300_000)                 # paused 300 ms, nothing queued
    assert eng.enqueue(PORT, PRIO) is not None     # arrives at 300 ms: waits, not dropped
    q = queue(eng)
    assert (q["paused"], q["pfcwd_storm"], q["pfcwd_storms"], q["depth"]) == (True, False, 0, 1)
    # the scheduler looks again when the last PAUSE runs out (299 ms + 3.4 ms), not at the
    # pause's start + 200 ms (the first version's 200 ms)
    assert eng.wake_us() == pytest.approx(299_000 + 3_355, abs=1)
    storm_until(eng, clk, 499_000)
    assert eng.poll() is None
    assert (queue(eng)["pfcwd_storms"], queue(eng)["depth"]) == (0, 1)
    clk.now = 500_000
    assert eng.poll() is None                      # 200 ms of waiting: the storm, dropped
    q = queue(eng)
    assert (q["pfcwd_storm"], q["pfcwd_storms"], q["pfcwd_dropped"], q["depth"]) == (True, 1, 1, 0)
