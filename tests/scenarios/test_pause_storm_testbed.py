"""A PFC pause storm on a live p4sim testbed (root + Mininet; skipped otherwise): GOR's
``pause_storm_raised`` / ``pause_storm_cleared`` from the switches' own counters.

GOR runs over the fabric (no traffic). PFC PAUSE frames for priority 3 are written into
the cable s0 → b0r0l0 at 400 frames/s for 1.5 s (a device that keeps pausing its peer),
then stop. b0r0l0's MAC honours them and its P4 program counts them
(``FabricIngress.pfc.rx_frames``: the testbed runs p4sim with ``--pfc-passthrough``);
GOR's poller reads the counter. Asserted: the storm is raised on b0r0l0's port towards
s0 (≥ 200 frames/s held 0.5 s) while it lasts, cleared after it stops (< 50/s for 1 s),
logged with the operator's advice, and nothing is re-routed. Brings up its own fabric
(~30 s).
"""
from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest

LEAF, SPINE = "b0r0l0", "s0"
FRAMES_PER_S = 400
STORM_S = 1.5


def _storm(dev: str, src_mac: str) -> int:
    """PAUSE frames (priority 3, full quanta) out of ``dev`` at :data:`FRAMES_PER_S` for
    :data:`STORM_S`; the number sent."""
    from host.nic.pfc import build_pause
    frame = build_pause(src_mac, {3: 0xFFFF})
    sent = 0
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((dev, 0))
        t0 = time.monotonic()
        while time.monotonic() - t0 < STORM_S:
            s.send(frame)
            sent += 1
            next_t = t0 + sent / FRAMES_PER_S          # pacing of the generator itself
            time.sleep(max(0.0, next_t - time.monotonic()))
    return sent


def test_a_pause_storm_is_raised_and_cleared_from_the_counters(tmp_path: Path) -> None:
    from testbed.traffic import testbed_unavailable, testbed_up
    from scenarios.gor_session import GorSession
    from scenarios.common import ScenarioOptions
    why = testbed_unavailable()
    if why:
        pytest.skip(why)
    opts = ScenarioOptions(seed=7, runs_root=tmp_path / "runs")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with testbed_up(log_dir=tmp_path / "logs", state_path=tmp_path / "state.json") as tb:
        sw = tb.fabric.switch(SPINE)
        port = next(p for p, i in sorted(sw.ports.items()) if i.peer_node == LEAF)
        link = (LEAF, sw.ports[port].peer_port)
        session: Any = GorSession(tb.fabric, tb.programmer, tb.state, tb.save_state, [], 343.0,
                                  opts, run_dir, say=lambda _: None, live=False)
        with session:
            sent = _storm(f"{SPINE}-eth{port}", sw.ports[port].mac)
            raised = session.wait_for(lambda: link in session.loop.faults.pause.active(), 5.0)
            cleared = session.wait_for(lambda: link not in session.loop.faults.pause.active(), 5.0)
    ev = {e["event"]: e for e in session.events if e["event"].startswith("pause_storm")}
    # the generator paces itself in Python: on a busy machine it falls short of its 400/s;
    # what the test needs is a storm the detector must see (its raise rate, held)
    from controller.gor.pause import PauseStormThresholds
    assert sent >= PauseStormThresholds().raise_fps * STORM_S, sent
    assert raised and cleared, (raised, cleared, session.events)
    assert ev["pause_storm_raised"]["link"] == f"{LEAF}->{SPINE}", ev
    assert ev["pause_storm_raised"]["frames_per_s"] >= 200 and ev["pause_storm_raised"]["action"]
    assert ev["pause_storm_cleared"]["link"] == f"{LEAF}->{SPINE}", ev
    assert not [e for e in session.events if e["event"] in ("order_sent", "link_down")]
