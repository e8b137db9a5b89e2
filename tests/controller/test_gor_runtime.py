"""GorRuntime, the one object that starts, restarts and stops GOR: on real p4sim switches
every part comes up (registry on its socket, metrics endpoint, loop reconciled, poller
ticking the loop, one digest reader per switch, reactor, recovery), a restart brings a new
registry at the same address and a new loop that reconciles (flows left alone kept), GOR
down leaves the poller running without ticking a loop, and stop leaves no thread behind.
Without polling it is the loop alone (the detour probe's use)."""
from __future__ import annotations

import json
import threading
import urllib.request
from pathlib import Path
from typing import Any

from controller.gor.decisions import FlowKey
from controller.gor.reconcile import ReconcileReport
from controller.gor.runtime import GorOptions, GorRuntime
from controller.gor.shared import LoopSettings
from test_gor_loop import FakeProgrammer
from test_gor_reconcile import PbConn, p4info
from test_gor_reconcile_links import CUT, _program
from topo.model import build_fabric

THREADS = ("digests-", "telemetry-poller", "switch-recovery", "gor-react", "gor-metrics")


def _ours() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith(THREADS))


def test_runtime_starts_restarts_and_stops_everything(live: Any, tmp_path: Path) -> None:
    fab, prog, _ = live
    ticks: list[float] = []
    sock = tmp_path / "gor" / "registry.sock"
    rt = GorRuntime(fab, prog, GorOptions(LoopSettings(period_s=0.05), registry_bind=f"unix:{sock}",
                                          security=b"secret", metrics_port=0,
                                          decision_log=tmp_path / "gor.jsonl"),
                    on_tick=lambda t_s, samples, polled_s: ticks.append(t_s), say=lambda m: None)
    flow = FlowKey("10.0.0.1", "10.0.1.2", 17, 49152, 4791)
    rt.leave_alone([flow])
    try:
        report = rt.start()
        assert isinstance(report, ReconcileReport) and report.failed_switches == []
        assert rt.registry_address == f"unix:{sock}" and sock.exists()
        assert sorted(n for n in _ours() if n.startswith("digests-")) == \
            sorted(f"digests-{sw.name}" for sw in fab.switches)
        assert rt.wait_for(lambda: rt.loop is not None and rt.loop.ticks >= 3, 20.0)
        body = urllib.request.urlopen(f"http://{rt.metrics_address}/metrics", timeout=5).read().decode()
        assert "gor_link_util_ratio" in body
        first_loop, first_registry, port = rt.loop, rt.registry, rt.metrics_port
        rt.restart()
        assert rt.loop is not first_loop and rt.registry is not first_registry
        assert rt.registry_address == f"unix:{sock}" and rt.metrics_port == port
        assert flow in rt.loop.rounds.left_alone and rt.recovery.loop is rt.loop
        assert rt.wait_for(lambda: rt.loop.ticks >= 2, 20.0)
        rt.stop_gor()                                      # GOR down: the poller goes on
        before, n = rt.loop.ticks, len(ticks)
        assert rt.wait_for(lambda: len(ticks) >= n + 3, 20.0) and rt.loop.ticks == before
        rt.start_gor()
        assert rt.wait_for(lambda: rt.loop.ticks >= 2, 20.0)
    finally:
        rt.stop()
    assert _ours() == [] and rt.down
    events = [json.loads(line)["event"] for line in (tmp_path / "gor.jsonl").read_text().splitlines()]
    assert events.count("reconciled") == 3                # start, restart, start after down


def test_runtime_without_polling_is_the_loop_alone() -> None:
    # the detour probe's use: cut a cable through the loop, restart GOR over the cut (the
    # new loop learns it and adopts the detours), mend it; no thread of GOR's runs
    fab = build_fabric()
    prog = FakeProgrammer(fab)
    prog.connections = {sw.name: PbConn(p4info()) for sw in fab.switches}   # type: ignore[assignment]
    _program(prog, fab, cut=False, detours=False)
    rt = GorRuntime(fab, prog, GorOptions(poll=False))
    try:
        assert rt.start().down_links == [] and rt.poller is None and _ours() == []
        assert rt.loop.link_down(*CUT, reason="test") and rt.loop.detours
        report = rt.restart()
        assert report.down_links == ["b0r0l0:4"] and report.adopted_detours == 3
        assert not rt.loop.links.is_up(CUT)
        rt.loop.link_up(*CUT, reason="test")
        assert rt.loop.links.is_up(CUT) and not any(rt.loop.detours.values())
    finally:
        rt.stop()
