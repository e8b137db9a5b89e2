"""Probers on the live two-pod fabric (``topo/specs/pod2-dualport.yaml``: 2 pods, 4 cores,
dual-port NICs; root only, skipped otherwise). Run it under the testbed lock::

    flock /tmp/astral-net.lock .venv/bin/python -m pytest -q tests/monitor/test_prober_tiers_testbed.py

The fabric is brought up on p4sim with per-port captures, the three-tier plan
(:func:`monitor.probes.plan_probes`: every NIC port an endpoint, 32 paths over 96 link
directions and 16 more that tell every core and spine route apart, some inside a pod) is
written, one ``python -m monitor.prober`` runs per host, and then:

(a) every probe path received every probe of a full window (the probes that the
    destination spine hashes to port 1 of a dual-port NIC arrive on that port's
    interface, and the prober listens on both);
(b) the switches' own captures saw each path's probes on exactly the link directions the
    plan predicted — NIC port to leaf, leaf to spine, spine to core (the parallel links
    told apart by port), core to spine, spine to leaf, leaf to NIC port — and on no other;
(c) with port 1 of b0s0's rail-0 NIC cut (the leaf's interface set down), the localiser
    fed the probers' windows names ``dead_nic_port`` on ``nic b0s0-eth0p1`` and nothing
    else; with every interface of leaf ``p1.b0r0l1`` down (a dead ToR, its switch process
    still answering), ``dead_tor`` on ``switch p1.b0r0l1`` and nothing else. The
    interfaces come back up after each (and every path gets through again before the next).

Waits are bounded probes (files appearing, counters growing), not sleeps.
"""
from __future__ import annotations

import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from monitor.evidence import Evidence, LinkDir, PathStats
from monitor.localiser import Localiser
from monitor.probeframe import parse_probe
from monitor.prober import plan_id_of, prober_command
from monitor.probes import plan_probes, tier_fabric_links
from monitor.probestats import ProbeStatsReader
from p4sim.switchd.pcap import read_pcap
from testbed.net import ProcRecord, proc_cmdline
from testbed.traffic import poll_until
from testbed.traffic import testbed_up as _testbed_up
from testbed.traffic import testbed_unavailable as _why_no_testbed
from topo.model import Fabric, build_fabric
from topo.spec import load_spec

SKIP_REASON = _why_no_testbed() or ""
pytestmark = pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON or "-")
REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "topo" / "specs" / "pod2-dualport.yaml"
WINDOW_S = 3.0
RATE_PPS = 10.0
FAULTS = (("dead_nic_port", "nic b0s0-eth0p1"), ("dead_tor", "switch p1.b0r0l1"))
NAME_TIMEOUT_S = 45.0


def _fault_ifaces(fab: Fabric, kind: str, comp: str) -> list[str]:
    """The root-namespace interfaces set down for a fault: the leaf's side of a NIC port,
    or every interface of a leaf."""
    name = comp.split(" ", 1)[1]
    if kind == "dead_tor":
        return [f"{name}-eth{p}" for p in sorted(fab.switch(name).ports)]
    port = next(p for h in fab.hosts for n in h.nics for p in n.ports if p.intf == name)
    return [f"{port.leaf}-eth{port.leaf_port}"]


def _set(ifaces: list[str], up: bool) -> None:
    for i in ifaces:
        subprocess.run(["ip", "link", "set", i, "up" if up else "down"], check=True, capture_output=True)


def _localise(reader: ProbeStatsReader, plan: Any, fab: Fabric, kind: str, comp: str
              ) -> tuple[list[tuple[str, str]], float]:
    """Cut, feed the localiser the probers' windows until it names something (at most
    :data:`NAME_TIMEOUT_S`), mend, wait for every path to get through again; what was
    named and after how long."""
    ifaces = _fault_ifaces(fab, kind, comp)
    loc, named = Localiser(), []
    up = {s.name: True for s in fab.switches}

    def step() -> bool:
        got = reader.poll()
        if got is not None and len(got[1]) == len(plan.paths):
            named.extend(loc.observe(Evidence(time.monotonic(), paths=dict(got[1]),
                                              path_links=plan.path_links(),
                                              path_dst_prefix=dict(plan.dst_prefix),
                                              switch_up=dict(up), controller_up=True)))
        return bool(named)

    t0 = time.monotonic()
    _set(ifaces, up=False)
    try:
        poll_until(step, NAME_TIMEOUT_S, interval_s=0.5)
        took = time.monotonic() - t0
    finally:
        _set(ifaces, up=True)
    t_up = time.monotonic()

    def clean() -> bool:
        got = reader.poll()
        return (got is not None and got[0] - WINDOW_S > t_up + 1.0
                and all(s.received == s.sent for s in got[1].values()))
    assert poll_until(clean, 40.0, interval_s=0.5), f"paths still lose after {comp} came back"
    return [(v.kind, v.component) for v in named], took


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("probe-tiers")
    spec = load_spec(SPEC)
    fab = build_fabric(spec)
    plan = plan_probes(fab, rate_pps=RATE_PPS)
    plan_path = plan.save(tmp / "plan.json")
    out = tmp / "probes"
    errors: list[str] = []
    with _testbed_up(spec=spec, log_dir=tmp / "logs", state_path=tmp / "state.json",
                    pcap_dir=tmp / "pcaps") as tb:
        shells = {r.name: r.pid for r in tb.state.procs if r.kind == "host-shell"}
        started = []
        try:
            for host in plan.hosts():
                cmd = prober_command(plan_path, host, out, RATE_PPS)
                proc = subprocess.Popen(["mnexec", "-a", str(shells[host]), *cmd], cwd=REPO,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL)
                rec = ProcRecord(f"prober {host}", proc.pid, proc_cmdline(proc.pid) or " ".join(cmd), "monitor")
                tb.state.procs.append(rec)
                started.append((proc, rec))
            tb.save_state()
            ready = poll_until(lambda: all((out / f"probe-{h}.ready").exists() for h in plan.hosts())
                               or any(p.poll() is not None for p, _ in started), 40.0)
            assert ready and all(p.poll() is None for p, _ in started), "a prober did not start"
            reader = ProbeStatsReader(plan, out, window_s=WINDOW_S)
            stats: dict[str, PathStats] = {}

            def full() -> bool:
                got = reader.poll()
                if got is None or len(got[1]) < len(plan.paths):
                    return False
                stats.clear()
                stats.update(got[1])
                return all(s.sent >= WINDOW_S * RATE_PPS * 0.9 for s in stats.values())

            assert poll_until(full, 60.0, interval_s=0.25), {k: (s.sent, s.received) for k, s in stats.items()}
            faults = {kind: _localise(reader, plan, fab, kind, comp) for kind, comp in FAULTS}
        finally:
            for proc, _ in started:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc, rec in started:
                try:
                    _, err = proc.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    _, err = proc.communicate(timeout=10)
                if proc.returncode != 0:
                    errors.append(f"{rec.name}: exit {proc.returncode}: {err.decode(errors='replace')[-400:]}")
                if rec in tb.state.procs:
                    tb.state.procs.remove(rec)
            tb.save_state()
    return {"fabric": fab, "plan": plan, "stats": dict(stats), "pcaps": tmp / "pcaps", "errors": errors,
            "faults": faults}


def test_every_path_receives_every_probe(probed: dict[str, Any]) -> None:
    assert probed["errors"] == []
    lossy = {k: (s.sent, s.received, s.corrupted) for k, s in probed["stats"].items()
             if s.received != s.sent or s.corrupted}
    assert lossy == {}
    assert len(probed["stats"]) == len(probed["plan"].paths) == 48
    assert any(len(p.switches) == 3 for p in probed["plan"].paths)   # inside a pod, too


def _link_names(fab: Fabric) -> dict[tuple[str, int, str], LinkDir]:
    """(switch, port, "in"/"out") -> the link direction its capture shows, named as the plan
    names them (the egress port where a switch has parallel links to one peer)."""
    intf = {(p.leaf, p.leaf_port): p.intf for h in fab.hosts for n in h.nics for p in n.ports}
    out: dict[tuple[str, int, str], LinkDir] = {}
    for sw in fab.switches:
        for port, info in sw.ports.items():
            if info.kind == "host":
                nic = intf[(sw.name, port)]
                out[(sw.name, port, "out")] = LinkDir(sw.name, nic)
                out[(sw.name, port, "in")] = LinkDir(nic, sw.name)
                continue
            twins = sum(1 for i in sw.ports.values() if i.peer_node == info.peer_node)
            out[(sw.name, port, "out")] = LinkDir(sw.name, info.peer_node, port if twins > 1 else None)
    return out


def test_captures_see_each_path_exactly_on_its_predicted_links(probed: dict[str, Any]) -> None:
    fab, plan = probed["fabric"], probed["plan"]
    pid = plan_id_of(plan)
    by_tuple = {(p.src_ip, p.dst_ip, p.sport): p.name for p in plan.paths}
    seen: dict[LinkDir, set[str]] = defaultdict(set)
    for (switch, port, direction), link in _link_names(fab).items():
        path = probed["pcaps"] / f"{switch}-eth{port}_{direction}.pcap"
        assert path.exists(), path
        for frame in read_pcap(str(path)):
            pr = parse_probe(frame)
            if pr is not None and pr.plan_id == pid:
                seen[link].add(by_tuple[(pr.src_ip, pr.dst_ip, pr.sport)])
    predicted: dict[LinkDir, set[str]] = defaultdict(set)
    for p in plan.paths:
        for l in p.links:
            predicted[l].add(p.name)
    links = tier_fabric_links(fab)
    assert set(_link_names(fab).values()) == set(links)
    wrong = {str(l): (sorted(seen.get(l, set())), sorted(predicted.get(l, set())))
             for l in links if seen.get(l, set()) != predicted.get(l, set())}
    assert wrong == {}


@pytest.mark.parametrize("kind,comp", FAULTS)
def test_localiser_names_the_dead_nic_port_and_the_dead_tor(probed: dict[str, Any], kind: str,
                                                            comp: str) -> None:
    named, took = probed["faults"][kind]
    assert named == [(kind, comp)], named
    assert took < NAME_TIMEOUT_S
    print(f"{kind} {comp}: named after {took:.1f} s")
