"""Probers on a live Mininet fabric (root only; skipped otherwise). Run it under the
testbed lock::

    flock /tmp/astral-testbed.lock .venv/bin/python -m pytest -q tests/monitor/test_prober_testbed.py

One default p4sim fabric is brought up (``testbed.traffic.testbed_up``, its own state file
and per-port pcaps), one ``python -m monitor.prober`` per host runs in the host's
namespace (recorded by PID in the testbed state, stopped by PID), and then:

(a) on the healthy fabric every probe path received every probe of a full window (loss
    0) with a one-way latency measured;
(b) the switches' own captures (``pcaps/<switch>-eth<N>_in|out.pcap``) saw each path's
    probes on exactly the links the plan predicted with the hash model, and on no other;
(c) the tomography of that window calls every link direction ``ok``;
(d) with 50 % loss on one leaf uplink (an nftables egress rule on the leaf's side of the
    veth, root namespace: this kernel has no netem; the table deleted after), the
    tomography of a window after it names exactly that link direction ``lossy``;
(e) with 30 % of the probes crossing one spine downlink corrupted (a byte after the BTH
    flipped: the switches forward it, the ICRC fails), it names that one ``corrupting``.

Waits are bounded probes (files appearing, counters growing), not sleeps. ~40 s.
"""
from __future__ import annotations

import signal
import subprocess
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

from monitor.evidence import LinkDir, PathStats
from monitor.probeframe import parse_probe
from monitor.prober import plan_id_of, prober_command
from monitor.probes import fabric_links, plan_probes
from monitor.probestats import ProbeStatsReader
from monitor.tomography import estimate
from testbed.traffic import poll_until
from testbed.traffic import testbed_unavailable as _why_no_testbed
from topo.model import build_fabric

SKIP_REASON = _why_no_testbed() or ""
pytestmark = pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON or "-")
REPO = Path(__file__).resolve().parents[2]
WINDOW_S = 3.0
RATE_PPS = 10.0
GRAY_LEAF, GRAY_SPINE, GRAY_LOSS_PCT = "b0r0l0", "s0", 50
BAD_SPINE, BAD_LEAF, CORRUPT_PCT = "s1", "b1r1l0", 30
NFT_TABLE = "astral_probe_test"


def _start_probers(tb: Any, plan_path: Path, out: Path, hosts: list[str]) -> list[tuple[Any, Any]]:
    from testbed.net import ProcRecord, proc_cmdline
    shells = {r.name: r.pid for r in tb.state.procs if r.kind == "host-shell"}
    started = []
    for host in hosts:
        cmd = prober_command(plan_path, host, out, RATE_PPS)
        proc = subprocess.Popen(["mnexec", "-a", str(shells[host]), *cmd], cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        rec = ProcRecord(f"prober {host}", proc.pid, proc_cmdline(proc.pid) or " ".join(cmd), "monitor")
        tb.state.procs.append(rec)
        started.append((proc, rec))
    tb.save_state()
    return started


def _stop_probers(tb: Any, started: list[tuple[Any, Any]]) -> list[str]:
    errors = []
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
    return errors


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from testbed.traffic import testbed_up
    tmp = tmp_path_factory.mktemp("probe-testbed")
    fab = build_fabric()
    plan = plan_probes(fab, rate_pps=RATE_PPS)
    plan_path = plan.save(tmp / "plan.json")
    out = tmp / "probes"
    with testbed_up(log_dir=tmp / "logs", state_path=tmp / "state.json", pcap_dir=tmp / "pcaps") as tb:
        started = _start_probers(tb, plan_path, out, plan.hosts())
        try:
            ready = poll_until(lambda: all((out / f"probe-{h}.ready").exists() for h in plan.hosts())
                               or any(p.poll() is not None for p, _ in started), 30.0)
            assert ready and all(p.poll() is None for p, _ in started), "a prober did not start"
            t_ready = time.monotonic()        # CLOCK_MONOTONIC: the probers' epochs too
            reader = ProbeStatsReader(plan, out, window_s=WINDOW_S)
            stats = _full_window(reader, plan, t_ready)
            with _nft_egress(fab, GRAY_LEAF, GRAY_SPINE, f"numgen random mod 1000 < {GRAY_LOSS_PCT * 10} drop"):
                gray = _full_window(reader, plan, time.monotonic())
            with _nft_egress(fab, BAD_SPINE, BAD_LEAF, "udp dport 4791 numgen random mod 1000 < "
                             f"{CORRUPT_PCT * 10} @th,160,8 set @th,160,8 ^ 0xff"):
                corrupt = _full_window(reader, plan, time.monotonic())
        finally:
            errors = _stop_probers(tb, started)
    assert not (tmp / "state.json").exists()          # everything recorded was removed
    return {"fabric": fab, "plan": plan, "stats": stats, "gray": gray, "corrupt": corrupt,
            "pcaps": tmp / "pcaps", "errors": errors}


@contextmanager
def _nft_egress(fab: Any, switch: str, peer: str, rule: str) -> Iterator[None]:
    """An nftables egress rule on ``switch``'s port to ``peer`` (root namespace; the
    kernel has no netem), table :data:`NFT_TABLE` deleted by name after."""
    port = next(p for p, i in sorted(fab.switch(switch).ports.items()) if i.peer_node == peer)
    script = (f"table netdev {NFT_TABLE} {{\n  chain e0 {{\n    type filter hook egress device "
              f'"{switch}-eth{port}" priority 0; policy accept;\n    {rule}\n  }}\n}}\n')
    subprocess.run(["nft", "-f", "-"], input=script, text=True, check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["nft", "delete", "table", "netdev", NFT_TABLE], check=True,
                       capture_output=True)


def _full_window(reader: ProbeStatsReader, plan: Any, after_s: float) -> dict[str, PathStats]:
    """The statistics of the first full window of probes all sent after ``after_s``
    (monotonic: the probers' epochs are on the same clock)."""
    stats: dict[str, PathStats] = {}

    def full() -> bool:
        got = reader.poll()
        if got is None or len(got[1]) < len(plan.paths):
            return False
        stats.clear()
        stats.update(got[1])
        return got[0] - WINDOW_S > after_s and \
            all(s.sent >= WINDOW_S * RATE_PPS * 0.9 for s in stats.values())

    assert poll_until(full, 40.0, interval_s=0.25), {k: (s.sent, s.received) for k, s in stats.items()}
    return dict(stats)


def test_every_path_receives_every_probe_on_a_healthy_fabric(probed: dict[str, Any]) -> None:
    assert probed["errors"] == []
    stats = probed["stats"]
    lossy = {k: (s.sent, s.received, s.corrupted) for k, s in stats.items()
             if s.received != s.sent or s.corrupted}
    assert lossy == {}
    assert all(s.latency_ms_p50 is not None and 0 < s.latency_ms_p50 < 500 for s in stats.values())


def test_switch_captures_see_each_path_exactly_on_its_predicted_links(probed: dict[str, Any]) -> None:
    from p4sim.switchd.pcap import read_pcap
    fab, plan = probed["fabric"], probed["plan"]
    pid = plan_id_of(plan)
    by_tuple = {(p.src_ip, p.dst_ip, p.sport): p.name for p in plan.paths}
    seen: dict[LinkDir, set[str]] = defaultdict(set)
    for sw in fab.switches:
        for port, info in sw.ports.items():
            peer = info.peer_node if info.kind != "host" else f"{info.peer_node}-eth{info.peer_port}"
            for direction, link in (("out", LinkDir(sw.name, peer)), ("in", LinkDir(peer, sw.name))):
                if direction == "in" and info.kind != "host":
                    continue                 # a fabric link's "in" is the peer switch's "out"
                path = probed["pcaps"] / f"{sw.name}-eth{port}_{direction}.pcap"
                assert path.exists(), path
                for frame in read_pcap(str(path)):
                    pr = parse_probe(frame)
                    if pr is not None and pr.plan_id == pid:
                        seen[link].add(by_tuple[(pr.src_ip, pr.dst_ip, pr.sport)])
    predicted: dict[LinkDir, set[str]] = defaultdict(set)
    for p in plan.paths:
        for l in p.links:
            predicted[l].add(p.name)
    for l in fabric_links(fab):
        assert seen.get(l, set()) == predicted.get(l, set()), str(l)


def test_tomography_of_the_healthy_window_is_all_ok(probed: dict[str, Any]) -> None:
    plan = probed["plan"]
    est = estimate(plan.paths, probed["stats"], links=fabric_links(probed["fabric"]))
    assert {k: e.state for k, e in est.items() if e.state != "ok"} == {}


def test_a_gray_link_is_named_by_the_tomography(probed: dict[str, Any]) -> None:
    plan = probed["plan"]
    est = estimate(plan.paths, probed["gray"], links=fabric_links(probed["fabric"]))
    bad = {k: (e.state, round(e.loss, 2)) for k, e in est.items() if e.state != "ok"}
    assert list(bad) == [f"{GRAY_LEAF}->{GRAY_SPINE}"], bad
    assert bad[f"{GRAY_LEAF}->{GRAY_SPINE}"][0] == "lossy"
    assert 0.2 < est[f"{GRAY_LEAF}->{GRAY_SPINE}"].loss < 0.8


def test_a_corrupting_link_is_named_by_the_tomography(probed: dict[str, Any]) -> None:
    plan, link = probed["plan"], f"{BAD_SPINE}->{BAD_LEAF}"
    stats = probed["corrupt"]
    est = estimate(plan.paths, stats, links=fabric_links(probed["fabric"]))
    bad = {k: (e.state, round(e.corrupt, 2)) for k, e in est.items() if e.state != "ok"}
    assert list(bad) == [link] and bad[link][0] == "corrupting", bad
    assert 0.1 < est[link].corrupt < 0.6
