"""The monitor service end to end without a testbed: the real plan of the default fabric,
probe counter files written as the probers write them (one link direction losing 40 %),
the textfile exporter, the metric store (the embedded one, and the real Prometheus when
installed), the evidence builder, the tomography, the localiser, the verdict log and the
web view's state — the gray link is named, on the right direction, and clears once the
loss stops."""
from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, write_to_textfile

from monitor.localiser import VerdictLog
from monitor.probes import plan_probes
from monitor.service import Monitor, MonitorOptions
from topo.model import build_fabric
from topo.spec import FabricSpec

FABRIC = build_fabric(FabricSpec())
BAD = "b0r0l0->s1"


class ProbeFiles:
    """Writes ``probe-<host>.prom`` like the probers: sent at the source host, received at
    the destination host, 10 probes/s per path; paths over ``bad`` lose ``loss`` of them."""

    def __init__(self, plan: object, out: Path) -> None:
        self.plan, self.out = plan, out
        self.sent: dict[str, float] = {}
        self.recv: dict[str, float] = {}
        self.loss = 0.4

    def step(self, dt_s: float) -> None:
        host_of = {n: nic.host for n, nic in self.plan.nics.items()}
        regs: dict[str, CollectorRegistry] = {}
        fams: dict[tuple[str, str], Counter] = {}

        def fam(host: str, what: str) -> Counter:
            if host not in regs:
                regs[host] = CollectorRegistry()
            if (host, what) not in fams:
                fams[(host, what)] = Counter(f"astral_probe_{what}", what,
                                             ["path", "src_nic", "dst_nic"], registry=regs[host])
            return fams[(host, what)]

        for p in self.plan.paths:
            n = 10.0 * dt_s
            bad = any(str(l) == BAD for l in p.links)
            self.sent[p.name] = self.sent.get(p.name, 0.0) + n
            self.recv[p.name] = self.recv.get(p.name, 0.0) + n * ((1 - self.loss) if bad else 1.0)
            fam(host_of[p.src_nic], "sent").labels(p.name, p.src_nic, p.dst_nic).inc(self.sent[p.name])
            fam(host_of[p.dst_nic], "received").labels(p.name, p.src_nic, p.dst_nic).inc(self.recv[p.name])
        for host, reg in regs.items():
            write_to_textfile(str(self.out / f"probe-{host}.prom"), reg)


@pytest.mark.parametrize("store", ["embedded", "prometheus"])
def test_the_monitor_names_a_gray_link_from_probe_files_and_clears_it(tmp_path: Path, store: str) -> None:
    if store == "prometheus" and shutil.which("prometheus") is None:
        pytest.skip("Debian's prometheus is not installed (apt-get install prometheus)")
    plan = plan_probes(FABRIC)
    said: list[str] = []
    mon = Monitor(FABRIC, plan, tmp_path, [], options=MonitorOptions(prefer=store, web=True),
                  say=said.append)
    files = ProbeFiles(plan, mon.metrics_dir)
    stop = threading.Event()

    def writer() -> None:
        while not stop.wait(0.25):
            files.step(0.25)

    with mon:
        assert mon.store_kind == store
        mon.metrics_dir.mkdir(parents=True, exist_ok=True)
        t = threading.Thread(target=writer, daemon=True)
        t.start()
        try:
            v = mon.wait_verdict(lambda v: True, timeout_s=40)
            assert v is not None, f"nothing named; errors {mon.errors}"
            assert (v.kind, v.component) == ("gray_link", f"link {BAD}"), v
            assert any("gray_link on link b0r0l0->s1" in s for s in said)
            state = mon.view.snapshot(with_fabric=False)
            assert state["links"][BAD]["state"] == "lossy"
            assert any(r["component"] == f"link {BAD}" for r in state["verdicts"])
            files.loss = 0.0                                   # the fault is gone
            assert mon.wait_quiet(40), mon.localiser.active()
        finally:
            stop.set()
            t.join()
    lines = VerdictLog.read(mon.verdict_log_path)
    assert [(l["event"], l["component"]) for l in lines] == [("named", f"link {BAD}"),
                                                             ("cleared", f"link {BAD}")]
    assert not mon.errors
