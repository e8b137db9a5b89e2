"""The monitor service end to end without a testbed: the real plan of the default fabric,
probe files written by the prober's own counters and writer (one link direction losing
40 %),
the textfile exporter, the metric store (the embedded one, and the real Prometheus when
installed), the evidence builder, the tomography, the localiser, the verdict log and the
web view's state — the gray link is named, on the right direction, and clears once the
loss stops."""
from __future__ import annotations

import shutil
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from monitor.localiser import VerdictLog
from monitor.prober import Prober
from monitor.probes import plan_probes
from monitor.service import Monitor, MonitorOptions
from topo.model import build_fabric
from topo.spec import FabricSpec

FABRIC = build_fabric(FabricSpec())
BAD = "b0r0l0->s1"


class ProbeFiles:
    """Writes the probers' files with the prober's own counters and writer
    (``monitor.prober.Prober`` without its sockets): sent at the source host, received
    at the destination host, 10 probes/s per path, epochs of 1 s; paths over ``BAD`` lose
    ``loss`` of their probes (every k-th, deterministically)."""

    def __init__(self, plan: object, out: Path) -> None:
        self.plan, self.out = plan, out
        self.probers = {h: Prober(plan, h, out, interval_s=1.0) for h in plan.hosts()}
        self.host_of = {n: nic.host for n, nic in plan.nics.items()}
        self.t_s = 0.0
        self.loss = 0.4
        self._debt: dict[str, float] = {}

    def step(self, dt_s: float) -> None:
        """``dt_s`` seconds of probes (10 per path per second), then close the epochs
        before the current one at every host and write their files."""
        for _ in range(round(dt_s * 10)):
            self.t_s += 0.1
            for p in self.plan.paths:
                self.probers[self.host_of[p.src_nic]].counters.on_sent(p.name, self.t_s)
                bad = any(str(l) == BAD for l in p.links)
                debt = self._debt.get(p.name, 0.0) + (self.loss if bad else 0.0)
                if debt >= 1.0:
                    debt -= 1.0                                     # this one is lost
                else:
                    self.probers[self.host_of[p.dst_nic]].counters.on_received(
                        p.name, self.t_s, 0.001, False)
                self._debt[p.name] = debt
        upto = int(self.t_s // 1.0)
        for prober in self.probers.values():
            prober.write(prober.counters.close_epochs(upto))


@contextmanager
def writing(files: ProbeFiles) -> Iterator[None]:
    """``files`` written every 0.25 s on a thread while the block runs."""
    files.out.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()

    def writer() -> None:
        while not stop.wait(0.25):
            files.step(0.25)
    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


@pytest.mark.parametrize("store", ["embedded", "prometheus"])
def test_the_monitor_names_a_gray_link_from_probe_files_and_clears_it(tmp_path: Path, store: str) -> None:
    if store == "prometheus" and shutil.which("prometheus") is None:
        pytest.skip("Debian's prometheus is not installed (apt-get install prometheus)")
    plan = plan_probes(FABRIC)
    said: list[str] = []
    mon = Monitor(FABRIC, plan, tmp_path, [], options=MonitorOptions(prefer=store, web=True),
                  say=said.append)
    files = ProbeFiles(plan, mon.metrics_dir)
    with mon:
        assert mon.store_kind == store
        with writing(files):
            v = mon.wait_verdict(lambda v: True, timeout_s=40)
            assert v is not None, f"nothing named; errors {mon.errors}"
            assert (v.kind, v.component) == ("gray_link", f"link {BAD}"), v
            assert any("gray_link on link b0r0l0->s1" in s for s in said)
            state = mon.view.snapshot(with_fabric=False)
            assert state["links"][BAD]["state"] == "lossy"
            assert any(r["component"] == f"link {BAD}" for r in state["verdicts"])
            files.loss = 0.0                                   # the fault is gone
            assert mon.wait_quiet(40), mon.localiser.active()
    lines = VerdictLog.read(mon.verdict_log_path)
    assert [(l["event"], l["component"]) for l in lines] == [("named", f"link {BAD}"),
                                                             ("cleared", f"link {BAD}")]
    assert not mon.errors


def test_a_failing_web_view_update_loses_no_verdict(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The web view's update failing (issue 29: a dual-port NIC's link the drawing lacked)
    is said once, and the evaluation's verdicts still reach the waiters: before, the
    exception skipped the book, so every later verdict was lost and every wait timed out."""
    def broken(self: Monitor, *args: object) -> None:
        raise ValueError("no link direction 'x->y' in this fabric")
    monkeypatch.setattr(Monitor, "_update_view", broken)
    plan = plan_probes(FABRIC)
    mon = Monitor(FABRIC, plan, tmp_path, [], options=MonitorOptions(prefer="embedded", web=True),
                  say=lambda _: None)
    files = ProbeFiles(plan, mon.metrics_dir)
    with mon, writing(files):
        v = mon.wait_verdict(lambda v: True, timeout_s=40)
        assert v is not None and (v.kind, v.component) == ("gray_link", f"link {BAD}"), mon.errors
    assert mon.errors == ["web view: ValueError: no link direction 'x->y' in this fabric"]


def test_the_monitor_in_its_own_process_names_and_clears_the_same_gray_link(tmp_path: Path) -> None:
    """``monitor.remote``: the same run with the monitor in a child process (the
    scenarios' way), read through its JSON lines: the verdict, the quiet after it, an
    answer from its store, a clean stop; a bad targets file is an error naming it."""
    from monitor.remote import MonitorProcess, MonitorProcessError
    plan = plan_probes(FABRIC)
    fabric_path = FABRIC.save(tmp_path / "fabric.json")
    plan_path = plan.save(tmp_path / "probe-plan.json")
    said: list[str] = []
    mon = MonitorProcess(fabric_path, plan_path, tmp_path, None,        # no switches
                         options=MonitorOptions(prefer="embedded", web=False), say=said.append)
    files = ProbeFiles(plan, mon.metrics_dir)
    with mon:
        assert mon.store_kind == "embedded" and mon.web is None and mon.proc is not None
        with writing(files):
            v = mon.wait_verdict(lambda v: True, timeout_s=40)
            assert v is not None, f"nothing named; log: {mon.log_path.read_text()}"
            assert (v.kind, v.component) == ("gray_link", f"link {BAD}"), v
            assert any("gray_link on link b0r0l0->s1" in s for s in said)
            sent = mon.source.rates("astral_probe_sent_total", 3.0)
            assert sent and all(rate > 0 for _, rate in sent)
            files.loss = 0.0
            assert mon.wait_quiet(40)
    assert mon.proc is None and not mon.errors, mon.errors
    assert [(l["event"], l["component"]) for l in VerdictLog.read(mon.verdict_log_path)] == \
        [("named", f"link {BAD}"), ("cleared", f"link {BAD}")]
    targets = tmp_path / "targets.json"
    targets.write_text("{not json")
    with pytest.raises(MonitorProcessError, match="targets.json|Expecting property name"):
        MonitorProcess(fabric_path, plan_path, tmp_path / "bad", targets,
                       options=MonitorOptions(prefer="embedded", web=False)).start()
