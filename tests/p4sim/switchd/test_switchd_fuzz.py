"""Random and truncated frames on every port never stop the switch: afterwards a valid
frame is still forwarded and no thread died."""
from __future__ import annotations

import random

from conftest import qm_fields, qm_frame
from p4sim.switchd.pfc import build_pfc_frame


def test_random_and_truncated_frames_never_stop_the_switch(make_rig) -> None:
    rig = make_rig(priority_queues=8, pfc_passthrough=True)
    rng = random.Random(1234)
    valid = [qm_frame(prio=p, seq=p) for p in range(8)] + [build_pfc_frame(bytes(6), {1: 3})]
    ports = (rig.p1, rig.p2)
    for i in range(600):
        kind = rng.randrange(4)
        if kind == 0:
            frame = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 80)))
        elif kind == 1:
            base = rng.choice(valid)
            frame = base[:rng.randrange(len(base) + 1)]
        elif kind == 2:
            base = bytearray(rng.choice(valid))
            for _ in range(3):
                base[rng.randrange(len(base))] = rng.randrange(256)
            frame = bytes(base)
        else:
            frame = bytes(rng.randrange(256) for _ in range(rng.randrange(1500, 9000)))
        ports[i % 2].inject(frame)
    for p in ports:
        assert p.wait_idle(30.0)
    rig.dev.tm.set_pfc(False)                                # resume anything paused
    for p in ports:
        while p.take(0.2) is not None:
            pass
    rig.p1.inject(qm_frame(seq=4242))
    out = rig.p2.take(5.0)
    assert out is not None and qm_fields(out)["seq"] == 4242
    assert rig.dev.stats["errors"] == 0
    assert all(t.is_alive() for t in rig.dev._threads)
