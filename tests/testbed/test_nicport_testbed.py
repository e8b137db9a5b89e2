"""A move by NIC port on the live two-pod testbed (root + Mininet, under the lock; skipped
otherwise): ``topo/specs/pod2-dualport.yaml`` on p4sim, a dual-port sender b0s0 (pod 0)
with its TCCL agent (token fallback, Unix sockets) and a dual-port receiver p1.b0s0 (pod 1).
GOR's registry orders the agent to re-bind the sender's QP to NIC port 1
(``MoveOrder.nic_port``); the agent reports it done with port 1, the frames from then on
enter the fabric at port 1's leaf (its NIC-facing port counts them, port 0's leaf stops
counting), and every message is still delivered and acknowledged. ~40 s with bring-up."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from astral_proto.auth import HostCredentials
from controller.registry import FlowRegistry, serve_registry
from host.nic.affinity import FlowKey, TxAffinity
from testbed.traffic import LiveTestbed, poll_until, testbed_unavailable

SKIP_REASON = testbed_unavailable() or ""
pytestmark = pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON or "-")
SPEC = Path(__file__).resolve().parents[2] / "topo" / "specs" / "pod2-dualport.yaml"
SECRET = b"nicport-test-secret"
MESSAGES = 60
RATE_PPS = 100.0


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
