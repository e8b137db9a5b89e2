"""The native path reuses header storage as BMv2 and the Python engine do (issue 35's PHV
pool, issue 32's known difference closed): a packet that leaves gives its headers back,
invalid but with their fields; the next packet takes the last given back; a copy takes one
and copies validity and the valid headers' fields in. ``phv_pool.p4`` reads fields of
headers it may not have extracted (a header, a stack, a union member) on every path that
takes or gives back headers (multicast, I2E and E2E clones, resubmit, recirculate, drops,
a priority out of range), so a packet's output depends on the pool's order.

Each test first checks that the sequence does depend on the pool (the Python engine with
and without ``reuse_headers`` gives different frames), so it can fail.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from native_equiv import StepClock, diff_snapshots, load_pair, state_snapshot
from p4sim.native import compiler_status, make_switch
from p4sim.v1model.switch import QueueMeta

PROGRAM = str(Path(__file__).resolve().parent / "phv_pool.p4")
FRAMES = 400
pytestmark = pytest.mark.skipif(not compiler_status()[0], reason=compiler_status()[1])


def _frames(seed: int) -> list[tuple[int, bytes]]:
    rng = random.Random(seed)
    out = []
    for _ in range(FRAMES):
        k = (rng.randrange(13) << 4) | rng.randrange(7)
        body = bytes([k]) + rng.randbytes(7) + rng.randbytes(rng.randrange(0, 12))
        out.append((rng.choice([1, 2, 3]), body))
    return out


def _pair(seed: int) -> tuple[Any, Any]:
    a, b = load_pair(PROGRAM, [], seed=seed)
    for prog in (a, b):
        pre = prog.state.pre
        pre.insert_multicast_group(1, [(1, 0), (2, 1), (3, 2)])
        pre.insert_multicast_group(2, [(2, 0), (4, 1)])
        pre.insert_clone_session(5, [(4, 0)])
        pre.insert_clone_session(6, [(5, 0), (6, 1)])
    return a, b


def _run_whole(sw: Any, frames: list[tuple[int, bytes]]) -> list[Any]:
    return [sw.process_packet(port, frame) for port, frame in frames]


def _run_halves(sw: Any, frames: list[tuple[int, bytes]], seed: int) -> list[Any]:
    """As the switch process runs it, with queues that hold packets across arrivals and let
    them leave in an order of their own (so headers go back in another order than taken)."""
    rng = random.Random(seed)
    queue: list[Any] = []
    out = []
    for i, (port, frame) in enumerate(frames):
        queue += sw.run_ingress(port, frame)
        while queue and (len(queue) > 6 or rng.random() < 0.5):
            item = queue.pop(rng.randrange(len(queue)))
            res = sw.run_egress(item, QueueMeta(enq_timestamp=i, enq_qdepth=len(queue), deq_qdepth=i % 4))
            out.append(res.frames)
            queue += res.work
    while queue:
        res = sw.run_egress(queue.pop(), None)
        out.append(res.frames)
        queue += res.work
    return out


def _stats(sw: Any) -> tuple:
    return (sw.stats.received, sw.stats.transmitted, sw.stats.dropped, sw.stats.errors)


@pytest.mark.parametrize("reuse, max_repasses", [(True, None), (False, None), (True, 0)],
                         ids=["reuse", "fresh", "reuse-no-repass"])
def test_whole_packets_same_on_both_engines(reuse: bool, max_repasses: Any) -> None:
    """``max_repasses=0``: resubmit and recirculate drop the packet (its headers go back)."""
    frames = _frames(7)
    a, b = _pair(7)
    sa = make_switch(a, engine="python", clock=StepClock(), reuse_headers=reuse, max_repasses=max_repasses)
    sb = make_switch(b, engine="native", clock=StepClock(), reuse_headers=reuse, max_repasses=max_repasses)
    assert sb.reuse_headers is reuse
    oa, ob = _run_whole(sa, frames), _run_whole(sb, frames)
    for i, (x, y) in enumerate(zip(oa, ob)):
        assert x == y, f"frame {i} {frames[i][1].hex()}: python {x} native {y}"
    assert _stats(sa) == _stats(sb)
    assert not diff_snapshots(state_snapshot(a), state_snapshot(b))
    other, _ = _pair(7)
    flipped = _run_whole(make_switch(other, engine="python", clock=StepClock(), reuse_headers=not reuse,
                                     max_repasses=max_repasses), frames)
    assert flipped != oa, "phv_pool.p4's output does not depend on header reuse: the test checks nothing"


def test_switch_process_halves_same_on_both_engines() -> None:
    frames = _frames(8)
    a, b = _pair(8)
    sa = make_switch(a, engine="python", clock=StepClock(), priority_queues=2)
    sb = make_switch(b, engine="native", clock=StepClock(), priority_queues=2)
    oa, ob = _run_halves(sa, frames, 8), _run_halves(sb, frames, 8)
    for i, (x, y) in enumerate(zip(oa, ob)):
        assert x == y, f"egress pass {i}: python {x} native {y}"
    assert len(oa) == len(ob)
    assert _stats(sa) == _stats(sb)
    other, _ = _pair(8)
    fresh = _run_halves(make_switch(other, engine="python", clock=StepClock(), priority_queues=2,
                                    reuse_headers=False), frames, 8)
    assert fresh != oa, "the halves' output does not depend on header reuse: the test checks nothing"


def test_batch_same_as_one_at_a_time() -> None:
    frames = _frames(9)
    a, b = _pair(9)
    want = [(i, p, f) for i, out in enumerate(_run_whole(make_switch(a, engine="python", clock=StepClock()), frames))
            for p, f in out]
    assert make_switch(b, engine="native", clock=StepClock()).process_batch(frames) == want
