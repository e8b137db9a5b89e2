"""Dual-port NICs on a live Mininet fabric (root only; skipped otherwise): the
``topo/specs/dualport.yaml`` fabric (each NIC's two ports on the two leaves of its rail's
pair) is brought up on p4sim, programmed by the controller's plan, and

(a) every NIC answers ping from the other block's NICs sent out of *either* port (port 1
    through a mark rule: ``ping -m`` with a routing table via the port-1 interface, so the
    reply is accepted on whichever port the spines send it to; the port interface's own
    counters prove the port was used);
(b) the NIC emulator as one dual-port device (``--iface a,b``) runs 4 RC QPs to a dual-port
    receiver: the layer3+4 hash puts 2 QPs on each port, both ports carry frames, every
    message is acknowledged and no QP errs;
(c) failover: mid-run the leaf side of the sender's port 1 goes down (its cable dies); the
    NIC sees the carrier loss within one miimon and moves that port's 2 QPs to port 0,
    the controller reaches the NIC through its other leaf
    (:func:`controller.fabric.dualhoming.failover_updates`, written as GOR would), and every
    message of every QP is still delivered and acknowledged (no QP in error).

Also (first, on the fresh fabric) TCCL's NIC ports: 8 elephants from block 0 to block 1
with TCCL's ports (``port_mode="tccl"``: NIC port and source port planned together,
:func:`testbed.traffic.plan_ports`): four QPs on each port, each sender's bond sends every
QP on its planned port and both ports of every sending NIC carry frames, every QP ends in
RTS and delivers, and the four uplinks of the two sending leaves carry even counts
(measured switch counters, busiest/mean <= 1.25 against 1.0 planned). Before, every QP
was on port 0: the port-1 leaf's uplinks were idle. (It was
``test_tccl_dualport_testbed.py`` with a fabric of its own: the module's one fabric saves
a bring-up and a teardown.)

Waits are bounded (the NIC processes' own durations and timeouts). ~45 s with bring-up.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.fabric.dualhoming import failover_updates, restore_updates
from host.nic.affinity import FlowKey, TxAffinity
from testbed.traffic import LiveTestbed, TrafficOptions, plan_flows, poll_until, run_traffic, testbed_unavailable

SKIP_REASON = testbed_unavailable() or ""
pytestmark = pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON or "-")
SPEC = Path(__file__).resolve().parents[2] / "topo" / "specs" / "dualport.yaml"


def _opts(mode: str, tmp: Path) -> TrafficOptions:
    return TrafficOptions(8, 0, port_mode=mode, seed=5, duration_s=4.0, report_dir=tmp)


def test_tccl_ports_spread_qps_over_both_ports_and_all_uplinks(testbed: LiveTestbed,
                                                                  tmp_path: Path) -> None:
    tb = testbed
    planned = plan_flows(tb.fabric, tb.programmer, _opts("tccl", tmp_path))
    assert sorted(f.nic_port for f in planned) == [0] * 4 + [1] * 4
    res = run_traffic(tb.fabric, tb.programmer, tb.state, tb.save_state,
                      _opts("tccl", tmp_path), say=print)
    assert not res.errors, res.errors
    assert all(f.qp_ok for f in res.flows), [(f.label, f.qp_state) for f in res.flows]
    assert all(f.sent_pkts > 0 and f.recv_pkts > 0 for f in res.flows), res.summary()
    want = {f"{f.src_ip}:{f.sport}->{f.dst_ip}:4791": f.nic_port for f in planned}
    seen: dict[str, int] = {}
    for rep in res.sender_reports:
        bond = rep["bond"]
        for qp in bond["qps"]:
            seen[qp["flow"]] = qp["port"]
        ports = {want[qp["flow"]] for qp in bond["qps"]}
        assert all(bond["tx_frames"][p] > 0 for p in ports), bond["tx_frames"]
    assert seen == want
    assert len(res.uplink_tx) == 4 and min(res.uplink_tx.values()) > 0, res.uplink_tx
    assert res.max_over_mean <= 1.25, res.uplink_tx
    print(f"tccl: uplink tx {res.uplink_tx}, busiest/mean {res.max_over_mean:.3f}")


def _tx_packets(tb: LiveTestbed, host: str, iface: str) -> int:
    """The interface's tx packets inside the host's namespace (/proc/net/dev is per
    namespace; sysfs shows the namespace it was mounted in)."""
    for line in tb.fnet.host(host).cmd("cat /proc/net/dev").splitlines():
        name, _, counters = line.partition(":")
        if name.strip() == iface:
            return int(counters.split()[9])
    raise AssertionError(f"{host}: no interface {iface}")


PORT1_MARK = 0x29


def _mark_port_1(tb: LiveTestbed) -> None:
    """In every host: packets marked PORT1_MARK leave on port 1 (a table of their own)."""
    for host in tb.fabric.hosts:
        nic = host.nics[0]
        out = tb.fnet.host(host.name).cmd(
            f"ip rule add fwmark {PORT1_MARK} table {PORT1_MARK} && ip route replace 10.0.0.0/8 "
            f"via {nic.gateway_ip} dev {nic.ports[1].intf} table {PORT1_MARK}; echo rc=$?")
        assert out.strip().endswith("rc=0"), (host.name, out)


def test_every_nic_answers_ping_out_of_either_port(testbed: LiveTestbed) -> None:
    fab = testbed.fabric
    _mark_port_1(testbed)
    failed = []
    for src in fab.hosts:
        for dst in fab.hosts:
            if src.block == dst.block:
                continue
            for port in src.nics[0].ports:
                before = _tx_packets(testbed, src.name, port.intf)
                mark = f"-m {PORT1_MARK}" if port.port == 1 else ""
                out = testbed.fnet.host(src.name).cmd(
                    f"ping -n -q -c 2 -i 0.2 -W 2 {mark} {dst.nics[0].ip}")
                sent = _tx_packets(testbed, src.name, port.intf) - before
                if " 0% packet loss" not in out or sent < 2:
                    failed.append((src.name, port.intf, dst.nics[0].ip, sent, out[-120:]))
    assert not failed, failed


SPORTS = [49152, 49153, 49154, 49155]


def _run_pair(tb: LiveTestbed, tmp_path: Path, messages: int, rate_pps: float,
              during=None) -> tuple[dict, dict]:
    """A dual-port sender b0s0 → dual-port receiver b1s1, 4 QPs; ``during(proc)`` runs while
    the sender does. Returns the two reports."""
    fab = tb.fabric
    src, dst = fab.host("b0s0").nics[0], fab.host("b1s1").nics[0]
    assert sorted(TxAffinity().port_of(FlowKey.of(src.ip, dst.ip, s)) for s in SPORTS) == [0, 0, 1, 1]
    macs = ",".join(fab.switch(p.leaf).router_mac for p in src.ports)
    recv_json, send_json = tmp_path / "recv.json", tmp_path / "send.json"
    recv = tb.fnet.host("b1s1").popen(
        [sys.executable, "-m", "host.nic", "recv", "--iface",
         ",".join(p.intf for p in dst.ports), "--ip", dst.ip, "--duration-s", "40",
         "--json", str(recv_json)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        send = tb.fnet.host("b0s0").popen(
            [sys.executable, "-m", "host.nic", "send", "--iface",
             ",".join(p.intf for p in src.ports), "--dst-mac", macs, "--src-ip", src.ip,
             "--dst-ip", dst.ip, "--sport", ",".join(map(str, SPORTS)), "--qpn", "300",
             "--messages", str(messages), "--message-bytes", "4096",
             "--line-rate-pps", str(rate_pps), "--duration-s", "30",
             "--json", str(send_json)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if during is not None:
            during(send)
        out, _ = send.communicate(timeout=90)
        assert send.returncode == 0, out.decode(errors="replace")[-2000:]
    finally:
        recv.terminate()
        rout, _ = recv.communicate(timeout=30)
    assert recv_json.exists(), rout.decode(errors="replace")[-2000:]
    return json.loads(send_json.read_text()), json.loads(recv_json.read_text())


def test_nic_emulator_runs_qps_on_both_ports(testbed: LiveTestbed, tmp_path: Path) -> None:
    report, rx = _run_pair(testbed, tmp_path, messages=5, rate_pps=200.0)
    bond = report["bond"]
    assert bond["up"] == [True, True] and bond["moves"] == 0, bond
    assert sorted(q["port"] for q in bond["qps"]) == [0, 0, 1, 1], bond
    assert all(n > 0 for n in bond["tx_frames"]), bond
    for flow in report["flows"]:
        assert flow["qp_state"] == "RTS" and flow["acked_messages"] == 5, flow
    assert sum(f["messages_received"] for f in rx["flows"]) == 20, rx["flows"]
    assert all(n > 0 for n in rx["bond"]["rx_frames"]), rx["bond"]   # data came in on both


def _leaf_rx(iface: str) -> int:
    return int(Path(f"/sys/class/net/{iface}/statistics/rx_packets").read_text())


def test_a_dead_port_moves_its_qps_and_no_message_is_lost(testbed: LiveTestbed,
                                                          tmp_path: Path) -> None:
    fab = testbed.fabric
    src = fab.host("b0s0").nics[0]
    dead = (src.ports[1].leaf, src.ports[1].leaf_port)
    leaf_iface = f"{dead[0]}-eth{dead[1]}"
    cut: dict[str, float] = {}

    def fail_port_1(_send: subprocess.Popen) -> None:
        start = _leaf_rx(leaf_iface)
        assert poll_until(lambda: _leaf_rx(leaf_iface) - start >= 40, 20.0), \
            "port 1 never carried the sender's frames"
        # The cut's time is taken before `ip link set down` returns: the NIC's
        # link monitor may see the carrier drop before this process runs again.
        cut["t"] = time.monotonic()
        subprocess.run(["ip", "link", "set", leaf_iface, "down"], check=True)
        fabric_start = time.monotonic()
        for name, updates in failover_updates(fab, {dead}).items():
            testbed.programmer.write_updates(name, updates)
        cut["fabric_s"] = time.monotonic() - fabric_start

    messages = 40
    try:
        report, rx = _run_pair(testbed, tmp_path, messages=messages, rate_pps=100.0,
                               during=fail_port_1)
    finally:
        subprocess.run(["ip", "link", "set", leaf_iface, "up"], check=False)
        if "t" in cut:
            for name, updates in restore_updates(fab, {dead}).items():
                testbed.programmer.write_updates(name, updates)
    bond = report["bond"]
    assert bond["up"] == [True, False] and bond["moves"] == 2, bond
    (event,) = bond["events"]
    detect_s = event["t"] - cut["t"]
    print(f"dual-port failover: port 1 down seen {detect_s * 1000:.0f} ms after the cut "
          f"(miimon {bond['miimon_ms']:g} ms), fabric updated in {cut['fabric_s'] * 1000:.0f} ms")
    assert 0 <= detect_s <= bond["miimon_ms"] / 1000 + 0.5, (detect_s, bond)
    assert all(q["port"] == 0 for q in bond["qps"]), bond
    for flow in report["flows"]:                 # every QP finished, none in error
        assert flow["qp_state"] == "RTS" and flow["acked_messages"] == messages, flow
    assert sum(f["messages_received"] for f in rx["flows"]) == 4 * messages, rx["flows"]


def test_tor_failure_scenario_loses_no_flow(testbed: LiveTestbed, tmp_path: Path) -> None:
    """``SCENARIO=tor-failure`` on this testbed: leaf b0r0l1 dies under 8 QPs."""
    from scenarios.common import ScenarioOptions
    from scenarios.tor_failure import run_tor_failure
    lines: list[str] = []
    res = run_tor_failure(testbed.fabric, testbed.programmer, testbed.state, testbed.save_state,
                          ScenarioOptions(runs_root=tmp_path), say=lines.append)
    print("\n".join(lines))
    assert res.status == 0, (res.reasons, lines)
    assert res.flows == 8 and res.flows_lost == 0 and res.moved_qps >= 2
    assert res.recover_s is not None and res.recover_s < 2.0
    assert (res.run_dir / "tor-failure.json").exists()
    # the fabric is whole again: b0s0 answers ping out of port 1 after the restore (bounded
    # probe: the leaf's links just came back). Failed once (04:32, see notes/29-dual.md):
    # cause not found yet; the diagnostics below say where the ping went.
    host = testbed.fnet.host("b0s0")
    ok = poll_until(lambda: " 0% packet loss" in host.cmd(
        f"ping -n -q -c 1 -W 1 -m {PORT1_MARK} 10.1.0.1"), 10.0, interval_s=0.2)
    assert ok, (host.cmd("ip neigh; ip -s link show b0s0-eth0p1"),
                [p for p in Path("/sys/class/net").iterdir() if p.name.startswith("b0r0l1")])
