"""Three tiers on a live Mininet fabric (root only; skipped otherwise): the
``topo/specs/pod2-dualport.yaml`` fabric (2 pods joined by 4 cores, dual-port NICs, 16
switches) is brought up on p4sim, programmed by the controller's plan (core role and the
spines' core uplinks from ``topo.routes``), and

(a) cross-pod flows over a sample of UDP source ports each take exactly the path the hash
    model predicts (:meth:`controller.fabric.tiers.TierModel.path`: leaf uplink, spine core
    link, core downlink, spine downlink to one of the destination NIC's two leaves, that
    leaf's host port): every one of the flow's ``PACKETS`` packets is counted on the
    transmit counter of every predicted switch port, and no other switch port counts as
    many (each flow is sent alone, the counters read before and after it);
(b) every NIC answers ping from every NIC of its rail in the other pod;
(c) a move by NIC port: a dual-port sender b0s0 (pod 0) with its TCCL agent (token
    fallback, Unix sockets) and a dual-port receiver p1.b0s0 (pod 1). GOR's registry
    orders the agent to re-bind the sender's QP to NIC port 1 (``MoveOrder.nic_port``);
    the agent reports it done with port 1, the frames from then on enter the fabric at
    port 1's leaf (its NIC-facing port counts them, port 0's leaf stops counting), and
    every message is still delivered and acknowledged.

The three share the module's one fabric (tests/testbed/conftest.py: one bring-up and
one teardown, about 13 s of the 2-core machine, instead of two; (c) was
``test_nicport_testbed.py`` with a fabric of its own, and runs last). Counters are the
switch ports' own (``/sys/class/net/<switch>-eth<port>/statistics``, the root
namespace's end of each port); waits are bounded probes. ~60 s with bring-up.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from astral_proto.auth import HostCredentials
from controller.fabric.tiers import TierModel, TierPath
from controller.registry import FlowRegistry, serve_registry
from host.nic.affinity import FlowKey, TxAffinity
from testbed.traffic import LiveTestbed, poll_until, testbed_unavailable
from topo.model import Fabric

SKIP_REASON = testbed_unavailable() or ""
pytestmark = pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON or "-")
SPEC = Path(__file__).resolve().parents[2] / "topo" / "specs" / "pod2-dualport.yaml"
PACKETS = 40
NOISE_PKTS = PACKETS // 2     # ARP and ICMP port-unreachable replies stay far below this
SPORTS = [49152 + 997 * i for i in range(8)]     # a spread sample of the RoCE range
PAIRS = [("b0s0", 0, "p1.b0s1"), ("b0s1", 1, "p1.b0s0")]   # (source host, rail, destination host)
SECRET = b"nicport-test-secret"
MESSAGES = 60
RATE_PPS = 100.0


def _tx(fab: Fabric) -> dict[tuple[str, int], int]:
    """Transmit packets of every switch port."""
    out = {}
    for sw in fab.switches:
        for p in sw.ports:
            path = Path(f"/sys/class/net/{sw.name}-eth{p}/statistics/tx_packets")
            out[(sw.name, p)] = int(path.read_text())
    return out


def _send(tb: LiveTestbed, host: str, src: str, dst: str, sport: int) -> None:
    code = (f"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            f"s.bind(('{src}', {sport})); "
            f"[s.sendto(bytes(64), ('{dst}', 4791)) for _ in range({PACKETS})]; print('sent')")
    out = tb.fnet.host(host).cmd(f"{sys.executable} -c \"{code}\"")
    assert out.strip().endswith("sent"), (host, out)


def test_cross_pod_flows_take_the_predicted_path(testbed: LiveTestbed) -> None:
    fab = testbed.fabric
    tiers = TierModel.of(fab)
    wrong: list[tuple] = []
    seen: set[tuple[tuple[str, int], ...]] = set()
    for src_host, rail, dst_host in PAIRS:
        src = fab.host(src_host).nics[rail]
        dst = fab.host(dst_host).nics[rail]
        for sport in SPORTS:
            path: TierPath = tiers.path(src, 0, dst.ip, sport)   # port 0: the host's default route
            assert len(path.hops) == 5 and fab.switch(path.switches[2]).role == "core", path
            before = _tx(fab)
            _send(testbed, src_host, src.ip, dst.ip, sport)
            last = path.hops[-1]
            assert poll_until(lambda: _tx(fab)[last] - before[last] >= PACKETS, 10.0), \
                (src.ip, dst.ip, sport, "never delivered on the predicted leaf port", path)
            after = _tx(fab)
            got = {k for k in after if after[k] - before[k] >= PACKETS}
            stray = {k: after[k] - before[k] for k in after
                     if k not in path.hops and after[k] - before[k] >= NOISE_PKTS}
            if got != set(path.hops) or stray:
                wrong.append((src.ip, dst.ip, sport, path.hops, sorted(got), stray))
            seen.add(path.hops)
    assert not wrong, wrong
    assert len(seen) > 2, seen          # the sample crosses several core paths


def test_every_nic_answers_ping_across_pods(testbed: LiveTestbed) -> None:
    fab = testbed.fabric
    failed = []
    for src in fab.hosts:
        for dst in fab.hosts:
            if src.pod == dst.pod:
                continue
            for nic, peer in zip(src.nics, dst.nics):
                out = testbed.fnet.host(src.name).cmd(f"ping -n -q -c 1 -W 2 {peer.ip}")
                if " 0% packet loss" not in out:
                    failed.append((src.name, nic.ip, peer.ip, out[-120:]))
    assert not failed, failed


def _rx(iface: str) -> int:
    return int(Path(f"/sys/class/net/{iface}/statistics/rx_packets").read_text())


def test_gor_moves_a_qp_to_the_other_nic_port(testbed: LiveTestbed, tmp_path: Path) -> None:
    fab = testbed.fabric
    src, dst = fab.host("b0s0").nics[0], fab.host("p1.b0s0").nics[0]
    sport = next(sp for sp in range(49152, 65536)
                 if TxAffinity().port_of(FlowKey.of(src.ip, dst.ip, sp)) == 0)
    leaf_if = [f"{p.leaf}-eth{p.leaf_port}" for p in src.ports]   # the leaves' ports to the NIC
    # Unix sockets: reachable from the host's namespace (a short path: sun_path is 108 bytes)
    sock_dir = Path(tempfile.mkdtemp(prefix="i29np-"))
    reg = FlowRegistry.from_fabric(fab, SECRET)
    server, reg_addr = serve_registry(reg, f"unix:{sock_dir}/reg.sock")
    creds = HostCredentials.derive(SECRET, "b0s0").save(tmp_path / "creds-b0s0.json")
    macs = ",".join(fab.switch(p.leaf).router_mac for p in src.ports)
    send_json, recv_json = tmp_path / "send.json", tmp_path / "recv.json"
    recv = testbed.fnet.host("p1.b0s0").popen(
        [sys.executable, "-m", "host.nic", "recv", "--iface", ",".join(p.intf for p in dst.ports),
         "--ip", dst.ip, "--duration-s", "60", "--json", str(recv_json)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    send = None
    try:
        send = testbed.fnet.host("b0s0").popen(
            [sys.executable, "-m", "host.nic", "send", "--iface", ",".join(p.intf for p in src.ports),
             "--dst-mac", macs, "--src-ip", src.ip, "--dst-ip", dst.ip, "--sport", str(sport),
             "--qpn", "300", "--messages", str(MESSAGES), "--message-bytes", "4096",
             "--line-rate-pps", str(RATE_PPS), "--duration-s", "45", "--json", str(send_json),
             "--agent-creds", str(creds), "--agent-registry", reg_addr,
             "--agent-bind", f"unix:{sock_dir}/agent.sock"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        fid = f"{src.ip}>{dst.ip}/qp300"
        assert poll_until(lambda: any(f.flow_id == fid for f in reg.flows()), 30.0), \
            "the agent never registered its flow"
        assert reg.flow(fid).nic_port == 0
        start0 = _rx(leaf_if[0])
        assert poll_until(lambda: _rx(leaf_if[0]) - start0 >= 20, 20.0), "port 0 carried nothing"
        order, reply = reg.move(fid, sport, nic_port=1)
        assert reply.accepted, reply.reason
        done = reg.wait(order.order_id, timeout_s=10.0)
        assert (done.state, done.reported_nic_port) == ("done", 1), done
        assert reg.flow(fid).nic_port == 1
        # from now on the frames enter at port 1's leaf, not port 0's (a frame or two may
        # have been on the wire when the order landed)
        at0, at1 = _rx(leaf_if[0]), _rx(leaf_if[1])
        assert poll_until(lambda: _rx(leaf_if[1]) - at1 >= 30, 20.0), "port 1 carried nothing"
        assert _rx(leaf_if[0]) - at0 <= 5, (_rx(leaf_if[0]) - at0)
        out, _ = send.communicate(timeout=90)
        assert send.returncode == 0, out.decode(errors="replace")[-2000:]
    finally:
        for proc in (send, recv):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.communicate(timeout=30)
        server.stop(0).wait()
        shutil.rmtree(sock_dir, ignore_errors=True)
    report = json.loads(send_json.read_text())
    (flow,) = report["flows"]
    assert flow["qp_state"] == "RTS" and flow["acked_messages"] == MESSAGES, flow
    assert report["bond"]["tx_frames"][1] >= 30, report["bond"]
    rx = json.loads(recv_json.read_text())
    assert sum(f["messages_received"] for f in rx["flows"]) == MESSAGES, rx["flows"]
