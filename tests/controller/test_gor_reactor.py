"""GOR's reaction thread (:mod:`controller.gor.reactor`): a digest reader hands over every
list while a reaction runs (it never waits for one); requests made during a run bring
exactly one more run, which sees all of them; a failing reaction does not end the
thread; ``stop`` ends it. Waits are bounded events, never sleeps."""
from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, Optional

from controller.gor.digests import digest_reader
from controller.gor.reactor import Reactor
from p4src.alarmmodel import ALARM_DIGEST

WAIT_S = 10.0


class _Conn:
    """A switch connection whose stream holds ``lists``; the second and later arrive once
    ``gate`` is set; sets ``drained`` when empty."""

    def __init__(self, lists: list[Any], gate: threading.Event) -> None:
        self.lists, self.gate, self.sent = lists, gate, 0
        self.drained = threading.Event()

    def get_digest(self, timeout_s: float) -> Optional[Any]:
        if self.sent == 1 and not self.gate.wait(WAIT_S):
            return None
        self.sent += 1
        if not self.lists:
            self.drained.set()
            self.drained.wait(timeout_s)
            return None
        return self.lists.pop(0)


def test_the_reader_goes_on_reading_while_a_reaction_runs() -> None:
    release, started = threading.Event(), threading.Event()
    seen: list[int] = []
    got: list[str] = []

    def react() -> None:                      # a reaction that waits for the tick lock
        seen.append(len(got))
        started.set()
        release.wait(WAIT_S)

    reactor = Reactor(react).start()
    stop = threading.Event()
    lists = [SimpleNamespace(name=ALARM_DIGEST, data=[])] + [
        SimpleNamespace(name="flow_sample_t", data=[]) for _ in range(20)]
    conn = _Conn(lists, gate=started)         # the samples come while the alarm's reaction runs
    sink = SimpleNamespace(submit_digests=lambda sw, dl: got.append(dl.name))
    reader = threading.Thread(target=digest_reader, args=(sink, "l", conn, stop, 0.05),
                              kwargs={"on_alarm": reactor.request,
                                      "urgent": lambda name: True})
    reader.start()
    try:
        assert started.wait(WAIT_S)
        assert conn.drained.wait(WAIT_S)          # every list read while the reaction waits
        assert len(got) == 21 and reactor.runs == 0
    finally:
        done = threading.Event()
        reactor.act = done.set                 # what the next run calls
        release.set()
        stop.set()
        reader.join(WAIT_S)
    assert done.wait(WAIT_S)                   # the 20 later requests: one more run
    reactor.stop()
    assert reactor.requests == 21 and reactor.runs == 2 and seen == [1]


def test_a_failing_reaction_does_not_end_the_thread() -> None:
    calls: list[int] = []
    first, ok = threading.Event(), threading.Event()

    def act() -> None:
        calls.append(1)
        if len(calls) == 1:
            first.set()
            raise RuntimeError("a switch went away mid-reaction")
        ok.set()

    reactor = Reactor(act).start()
    reactor.request()
    assert first.wait(WAIT_S)
    reactor.request()
    assert ok.wait(WAIT_S) and len(calls) == 2
    reactor.stop()
    assert reactor._thread is not None and not reactor._thread.is_alive()


def test_stop_without_a_request_ends_the_thread() -> None:
    reactor = Reactor(lambda: None).start()
    reactor.stop()
    assert reactor.runs == 0
    assert reactor._thread is not None and not reactor._thread.is_alive()
