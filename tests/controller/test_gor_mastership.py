"""GOR notices losing mastership (issue 28, item 2), on real p4sim switches with no policy
(as BMv2: any client the switch lets in may arbitrate): another client arbitrates with a
higher election id on one leaf; GOR's connection learns it from the arbitration update
(``is_primary`` False, the other's election id), the recovery logs ``switch_lost`` with
"mastership lost", GOR's metrics say ``gor_switch_primary 0`` and count the loss, and once
the other client has gone GOR is primary again (``switch_back``, ``gor_switch_primary 1``)
with its plan intact. The client alone: a backup told it is primary again when the
other primary leaves."""
from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from controller.fabric_setup import FabricProgrammer
from controller.gor.log import DecisionLog
from controller.gor.loop import GorLoop
from controller.gor.metrics import GorMetrics
from controller.gor.recovery import SwitchRecovery
from controller.telemetry.counter_reader import connection_reader
from controller.telemetry.poller import TelemetryPoller, fabric_links
from controller.p4rt import SwitchConnection
from procs import SwitchProcess, poll
from topo import model as topo_model

LEAF = "b0r0l0"
INTRUDER_ELECTION_ID = (1, 0)          # above any (0, low) GOR uses


@pytest.fixture(scope="module")
def live(fabric_compiled: tuple[Path, Path]) -> Iterator[tuple[Any, FabricProgrammer]]:
    spec = topo_model.FabricSpec(blocks=1, servers_per_block=2, rails=2, spines=2,
                                 leaves_per_rail=1, uplinks_per_spine=2)
    fab = topo_model.build_fabric(spec)
    procs: list[SwitchProcess] = []
    prog = None
    try:
        for sw in fab.switches:
            procs.append(SwitchProcess.no_p4(device_id=sw.device_id, target_extra=["--priority-queues", "8"]))
            sw.grpc_addr = procs[-1].grpc_addr
        prog = FabricProgrammer(fab, *fabric_compiled, timeout_s=10.0)
        prog.setup()
        yield fab, prog
    finally:
        if prog is not None:
            prog.close()
        for p in procs:
            p.stop()


def series(metrics: GorMetrics, name: str) -> float:
    for line in metrics.render().splitlines():
        if line.startswith(f'{name}{{switch="{LEAF}"}}'):
            return float(line.split()[-1])
    raise AssertionError(f"{name} for {LEAF} not in the metrics")


def test_a_connection_told_it_is_primary_again(live: Any) -> None:
    fab, prog = live
    sw = fab.switch(LEAF)
    gor = prog.connections[LEAF]
    seen: list[bool] = []
    gor.on_mastership = lambda c: seen.append(c.is_primary)
    other = SwitchConnection(sw.grpc_addr, device_id=sw.device_id,
                             election_id=INTRUDER_ELECTION_ID, timeout_s=10.0)
    assert poll(lambda: seen == [False], 10.0), seen
    other.close()                                   # the highest live stream is GOR's again
    assert poll(lambda: seen == [False, True], 10.0), seen
    assert gor.is_primary and gor.mastership_lost_to is None
    gor.write([])                                   # and the switch takes its writes


def test_gor_notices_losing_mastership_stops_and_takes_it_back(live: Any) -> None:
    fab, prog = live
    buf, metrics = io.StringIO(), GorMetrics()
    loop = GorLoop(fab, prog, None, log=DecisionLog(buf), metrics=metrics)
    poller = TelemetryPoller({n: connection_reader(prog.connections, n) for n in prog.connections},
                             fabric_links(fab), read_timeout_s=2.0)
    recovery = SwitchRecovery(prog, poller, loop, connect_timeout_s=1.0)
    gor = prog.connections[LEAF]
    before = gor.mastership_losses                  # the test above took it once already
    assert series(metrics, "gor_switch_primary") == 1.0
    sw = fab.switch(LEAF)
    intruder = SwitchConnection(sw.grpc_addr, device_id=sw.device_id,
                                election_id=INTRUDER_ELECTION_ID, timeout_s=10.0)
    t = 1.0
    try:
        assert poll(lambda: gor.is_primary is False, 10.0), "GOR did not hear it lost mastership"
        assert gor.mastership_lost_to == 1 << 64 and gor.mastership_losses == before + 1
        assert series(metrics, "gor_switch_primary") == 0.0
        assert series(metrics, "gor_mastership_lost_total") == before + 1
        recovery.check_once()                   # lost: reconnecting fails while the other is primary
        loop.tick(t, poller.poll_once())
        lost = [json.loads(x) for x in buf.getvalue().splitlines() if '"switch_lost"' in x]
        assert lost and lost[0]["switch"] == LEAF
        assert lost[0]["error"] == f"mastership lost: election id {1 << 64} is primary now"
        assert "not primary" in recovery.last_error[LEAF]
    finally:
        intruder.close()
    deadline = time.monotonic() + 30
    while not any(e[0] == "switch_back" for e in loop.switch_log) and time.monotonic() < deadline:
        t += 0.05
        recovery.check_once()
        loop.tick(t, poller.poll_once())
    assert [(e[0], e[1]) for e in loop.switch_log] == [("switch_lost", LEAF), ("switch_back", LEAF)]
    assert loop.switch_log[-1][3]["reinstalled"] is False          # the other wrote nothing
    assert prog.connections[LEAF].is_primary and series(metrics, "gor_switch_primary") == 1.0
    assert series(metrics, "gor_mastership_lost_total") == before + 1   # kept over the new connection
