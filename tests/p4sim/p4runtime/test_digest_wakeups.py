"""The digest streamer woken only when a list can be due (p4sim/runtime/digest.py
``wake_after`` / ``take_due``, p4sim/p4runtime/digests.py, the switch device's
``on_digest``) against the same streamer woken for every value, as before: the same
lists (ids, values, the instants they were sent) on random arrivals, list sizes,
timeouts, repeated values and acknowledgements, and fewer wake-ups for GOR's samples.

The streamer's thread is simulated on a fake clock: it polls when its event is set and
when the wait it asked for (``_next_deadline_s``) runs out, as ``DigestStreamer._run``.
"""
from __future__ import annotations

import random
import threading
from types import SimpleNamespace
from typing import Callable, Sequence

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.digests import DigestStreamer
from p4sim.runtime import DigestQueue
from p4sim.switchd.device import SwitchDevice

DIGEST_ID = 0x3D000001
NAME = "sample_t"
MS = 1_000_000

Waker = Callable[[DigestQueue, threading.Event], None]


def every_value(queue: DigestQueue, event: threading.Event) -> None:
    """The device's ``on_digest`` before: every value wakes the streamer."""
    event.set()


def when_due(queue: DigestQueue, event: threading.Event) -> None:
    """The switch device's ``on_digest`` (:meth:`SwitchDevice._digest_waker`)."""
    program = SimpleNamespace(state=SimpleNamespace(digests=queue))
    SwitchDevice._digest_waker(SimpleNamespace(digest_event=event), program)()   # type: ignore[arg-type]


def _p4info() -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    d = info.digests.add()
    d.preamble.id, d.preamble.name = DIGEST_ID, NAME
    d.type_spec.bitstring.bit.bitwidth = 32
    return info


def simulate(arrivals: Sequence[tuple[int, int]], size: int, timeout_ns: int, ack_timeout_ns: int,
             waker: Waker, ack_every: int = 0) -> tuple[list[tuple[int, int, list[bytes]]], int]:
    """(the lists sent as (instant ns, list_id, values), the polls) for values arriving at
    the given instants; every ``ack_every``-th arrival acknowledges the last list sent."""
    clock = [0]
    queue = DigestQueue()
    queue.set_config(NAME, max_timeout_ns=timeout_ns, max_list_size=size, ack_timeout_ns=ack_timeout_ns)
    device = SimpleNamespace(lock=threading.RLock(), digest_event=threading.Event())
    sent: list[tuple[int, int, list[bytes]]] = []

    def sink(msg: pb.StreamMessageResponse) -> bool:
        sent.append((clock[0], msg.digest.list_id, [d.bitstring for d in msg.digest.data]))
        return True
    streamer = DigestStreamer(device, sink, clock_ns=lambda: clock[0])  # type: ignore[arg-type]
    streamer.set_pipeline(SimpleNamespace(state=SimpleNamespace(digests=queue)), _p4info())
    polls = 0

    def poll() -> int:
        nonlocal polls
        device.digest_event.clear()
        streamer.poll()
        polls += 1
        return clock[0] + round(streamer._next_deadline_s() * 1e9)

    wake_at = poll()
    for k, (t, value) in enumerate(arrivals):
        while wake_at <= t:
            clock[0] = wake_at
            wake_at = poll()
        clock[0] = t
        if ack_every and k % ack_every == 0 and sent:
            streamer.ack(pb.DigestListAck(digest_id=DIGEST_ID, list_id=sent[-1][1]))
        queue.push(NAME, (value,), now_ns=t)
        waker(queue, device.digest_event)
        if device.digest_event.is_set():
            wake_at = poll()
    end = (arrivals[-1][0] if arrivals else 0) + 2_000 * MS
    while wake_at <= end:
        clock[0] = wake_at
        wake_at = poll()
    return sent, polls


def _arrivals(rng: random.Random, n: int, mean_gap_ns: int, pool: int) -> list[tuple[int, int]]:
    t, out = 0, []
    for _ in range(n):
        t += 0 if rng.random() < 0.2 else int(rng.expovariate(1 / mean_gap_ns)) + 1   # some bursts
        out.append((t, rng.randrange(pool)))
    return out


def test_woken_when_due_sends_the_lists_woken_for_every_value_sends() -> None:
    rng = random.Random(32)
    for case in range(40):
        size = rng.choice([0, 1, 2, 3, 8])
        timeout_ns = rng.choice([0, 1 * MS, 10 * MS, 100 * MS])
        ack_timeout_ns = rng.choice([0, 5 * MS, 1_000 * MS])
        arrivals = _arrivals(rng, 150, rng.choice([300_000, 3 * MS, 20 * MS]), rng.choice([6, 1 << 30]))
        ack_every = rng.choice([0, 3, 7])
        want, polls_every = simulate(arrivals, size, timeout_ns, ack_timeout_ns, every_value, ack_every)
        got, polls_due = simulate(arrivals, size, timeout_ns, ack_timeout_ns, when_due, ack_every)
        what = f"case {case}: size {size}, timeout {timeout_ns} ns, ack timeout {ack_timeout_ns} ns"
        assert want, what
        assert got == want, what
        assert polls_due <= polls_every, what


def test_gor_samples_wake_the_streamer_about_twice_a_list() -> None:
    # GOR's flow samples (controller/gor/digests.py: lists of 8, 10 ms) at ~350 a second
    # on an alarmed port: a list goes by its timeout with ~4 values; woken for every value
    # the streamer polled ~4 times a list (the story's leaf: 428 polls for 106 lists a second)
    rng = random.Random(7)
    arrivals = [(i * 2_857_000 + rng.randrange(500_000), rng.getrandbits(32)) for i in range(700)]
    want, polls_every = simulate(arrivals, 8, 10 * MS, 1_000 * MS, every_value, ack_every=4)
    got, polls_due = simulate(arrivals, 8, 10 * MS, 1_000 * MS, when_due, ack_every=4)
    assert got == want
    assert polls_every >= 3.5 * len(want)
    assert polls_due <= 2.2 * len(want), (polls_due, len(want))


def test_a_list_fills_while_the_streamer_holds_part_of_it() -> None:
    queue = DigestQueue()
    queue.set_config(NAME, max_list_size=4)
    queue.push(NAME, (1,))
    queue.drain()
    assert queue.wake_after(NAME, 3) is False
    for v in (2, 3):
        queue.push(NAME, (v,))
        assert queue.take_due() is False
    queue.push(NAME, (4,))
    assert queue.take_due() is True
    # asked after the values came: due at once
    queue.drain()
    queue.push(NAME, (5,))
    queue.push(NAME, (6,))
    queue.take_due()
    assert queue.wake_after(NAME, 2) is True and queue.take_due() is True
    # a new configuration: the next value wakes the reader again
    queue.drain()
    queue.wake_after(NAME, 5)
    queue.set_config(NAME, max_list_size=1)
    queue.push(NAME, (7,))
    assert queue.take_due() is True
