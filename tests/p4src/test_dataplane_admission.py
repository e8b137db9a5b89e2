"""fabric.p4's egress queue limit (``p4src/include/control/admission.p4``) on p4sim, both
engines: a paused queue that cannot take what comes leaves no PFC or shared-buffer count
behind.

The switch runs in two halves (``run_ingress`` / ``run_egress``, the rig of
``test_dataplane_buffer``) and the test is the traffic manager: one 64-packet queue
(BMv2's and p4sim's depth) that tail-drops what does not fit, as the targets do. Port 6's
host has paused its queue (a host's PAUSE storm, sec-red-s47); 200 datagrams come to it
from port 1 (an uplink). Without the limit the queue tail-drops 136 of them after the
program counted them: port 1's PFC occupancy stays at 136 with ``paused`` 1 after the
queue drains, and the shared buffer keeps their cells — what a host left on its leaf's
uplinks live (735 and 1,224 packets). With ``set_queue_limit(64)`` the program drops the
136 in ingress, counted in ``admission.drops`` and not in ``telemetry.drops``, and every
count is back at 0 (one PAUSE, one RESUME) once the queue drains.
"""
from __future__ import annotations

from collections import deque

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from controller.fabric.admission import (ADMISSION_ACTION, ADMISSION_DROPS_COUNTER,
                                         ADMISSION_QUEUED_REGISTER, T_ADMISSION)
from p4sim.native import compiler_status
from p4src.buffermodel import DynamicThresholds, PfcAlpha, SharedBuffer
from test_dataplane_buffer import Rig, setup_entries

QUEUE_PKTS = 64
ARRIVALS = 200
UPLINK, HOST = 1, 6
PRIO = 3
OCCUPANCY, PAUSED = "FabricIngress.pfc.occupancy", "FabricIngress.pfc.paused"
DROPS = "FabricIngress.telemetry.drops"
CFG = DynamicThresholds(SharedBuffer(100_000, 6), {PRIO: PfcAlpha(1)}, {})
"""A pool far larger than the traffic: only the static XOFF (32) pauses."""

ENGINES = ["python", pytest.param("native", marks=pytest.mark.skipif(
    not compiler_status()[0], reason=compiler_status()[1]))]


def _storm(rig: Rig) -> int:
    """200 arrivals to the paused host queue (a 64-packet tail-drop queue), then it drains;
    returns how many the queue tail-dropped."""
    queue: deque = deque()
    tail_dropped = 0
    for _ in range(ARRIVALS):
        before = len(rig.pauses)
        work = rig.switch.run_ingress(UPLINK, _frame())
        for w in [w for w in work if w.port != HOST]:          # the PAUSE to the uplink
            assert rig._pfc_frames(rig.switch.run_egress(w).frames) == []
        normal = [w for w in work if w.port == HOST]
        assert len(normal) <= 1 and len(rig.pauses) - before <= 1, work
        if normal and len(queue) >= QUEUE_PKTS:
            tail_dropped += 1                                   # the target's queue is full
        elif normal:
            queue.append(normal[0])
    while queue:                                                # the host resumes
        res = rig.switch.run_egress(queue.popleft())
        assert [p for p, _ in rig._pfc_frames(res.frames)] == [HOST]
        for w in res.work:                                      # a RESUME
            assert rig._pfc_frames(rig.switch.run_egress(w).frames) == []
    return tail_dropped


def _frame() -> bytes:
    return bytes(Ether(dst="02:00:00:00:0b:01", src="00:00:00:00:00:01")
                 / IP(src=f"10.0.0.{UPLINK}", dst=f"10.0.0.{HOST}", tos=26 << 2 | 2)
                 / UDP(sport=49152, dport=4791)) + bytes(200)


@pytest.mark.parametrize("engine_name", ENGINES)
@pytest.mark.parametrize("limited", [True, False], ids=["limit", "without-limit"])
def test_a_paused_queue_leaves_no_pfc_or_buffer_count_behind(engine_name: str, limited: bool) -> None:
    entries = setup_entries(CFG, static_xoff=32)
    if limited:
        entries += f"setdefault {T_ADMISSION} {ADMISSION_ACTION}(queue_pkts:{QUEUE_PKTS})\n"
    rig = Rig(entries, engine_name)
    tail_dropped = _storm(rig)
    state = rig.program.state
    occupancy = state.registers[OCCUPANCY].read(UPLINK * 8 + PRIO)
    paused = state.registers[PAUSED].read(UPLINK * 8 + PRIO)
    used = state.registers["FabricIngress.buffer.used"].read(0)
    refused = state.counters[ADMISSION_DROPS_COUNTER].read(HOST)[0]
    if limited:
        assert (tail_dropped, refused) == (0, ARRIVALS - QUEUE_PKTS)
        assert (occupancy, paused, used) == (0, 0, 0)
        assert state.registers[ADMISSION_QUEUED_REGISTER].read(HOST * 8 + PRIO) == 0
        assert state.counters[DROPS].read(UPLINK)[0] == 0       # not a telemetry drop
        assert rig.pauses == [(UPLINK, PRIO, CFG.pause_quanta), (UPLINK, PRIO, 0)]
    else:                       # the program as before the limit: the counts stay behind
        assert (tail_dropped, refused) == (ARRIVALS - QUEUE_PKTS, 0)
        assert (occupancy, paused) == (ARRIVALS - QUEUE_PKTS, 1)
        assert used > 0
        assert rig.pauses == [(UPLINK, PRIO, CFG.pause_quanta)]  # never resumed
