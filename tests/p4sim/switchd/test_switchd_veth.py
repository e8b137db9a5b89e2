"""``python -m p4sim switch`` as a real process on veth pairs (root and ``ip`` needed):
frames sent on a raw socket come back forwarded, 802.1Q tags survive (PACKET_AUXDATA),
an interface going down and up is survived, the control API answers, pcaps are written
and SIGTERM stops the process cleanly. Creates two veth pairs named after this process
and deletes only those; stops only the switch process it started (by PID)."""
from __future__ import annotations

import os
import select
import shutil
import socket
import time

import pytest

from conftest import QFWD, qm_fields, qm_frame
from p4sim.switchd.control import ControlClient
from p4sim.switchd.pcap import read_pcap
from p4sim.switchd.ports import PACKET_AUXDATA, PACKET_OUTGOING, SOL_PACKET, restore_vlan
from procs import SwitchProcess
from veths import ip

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="needs root and iproute2 to create veth pairs")


def _open(iface: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    s.bind((iface, 3))
    return s


def _receive(sock: socket.socket, n: int, timeout_s: float = 5.0) -> list[bytes]:
    """Up to ``n`` test frames (EtherType 0x88B5, possibly tagged) arriving on ``sock``."""
    out: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            break
        data, anc, _f, addr = sock.recvmsg(9216, socket.CMSG_SPACE(20))
        if addr[2] == PACKET_OUTGOING:
            continue
        frame = restore_vlan(data, anc)
        if frame[12:14] == b"\x88\xb5" or frame[12:14] == b"\x81\x00":
            out.append(frame)
    return out


def test_switch_process_forwards_on_veths(veths, tmp_path) -> None:
    sw1, sw2, host1, host2 = veths
    pcaps = tmp_path / "pcaps"
    pcaps.mkdir()                      # BMv2 and p4sim refuse a --pcap directory that is missing
    args = [str(QFWD), "-i", f"1@{sw1}", "-i", f"2@{sw2}", "--pcap", str(pcaps),
            "--thrift-port", "9090", "--control-port", "0",
            "--log-file", str(tmp_path / "s1.log"), "--log-level", "debug",
            "--", "--grpc-server-addr", "127.0.0.1:0"]
    with open(tmp_path / "stderr.txt", "wb") as err:
        sw = SwitchProcess(args, stderr=err)
    try:
        ready = sw.ready_line
        assert ready.startswith("p4sim switch ready: grpc 127.0.0.1:") and ready.endswith("device 0")
        tx, rx = _open(host1), _open(host2)
        with tx, rx:
            frames = [qm_frame(seq=i) for i in range(20)]
            for f in frames:
                tx.send(f)
            got = _receive(rx, 20)
            assert [qm_fields(f)["seq"] for f in got] == list(range(20))
            tagged = frames[0][:12] + bytes.fromhex("8100002a") + frames[0][12:]
            tx.send(tagged)
            assert _receive(rx, 1) == [tagged]
            ip("link", "set", sw1, "down")
            ip("link", "set", sw1, "up")
            for attempt in range(50):
                tx.send(qm_frame(seq=1000 + attempt))
                if got := _receive(rx, 1, 0.2):
                    break
            assert got and qm_fields(got[0])["seq"] >= 1000
        with ControlClient(sw.control_addr) as c:
            counters = c.port_counters()
            assert counters[1]["rx_frames"] >= 22 and counters[2]["tx_frames"] >= 22
        assert sw.alive()
    finally:
        rc = sw.stop()
    assert rc == 0, (tmp_path / "stderr.txt").read_text()
    assert len(read_pcap(str(pcaps / f"{sw1}_in.pcap"))) >= 22
    assert len(read_pcap(str(pcaps / f"{sw2}_out.pcap"))) >= 22
    assert "Transmitting packet of size" in (tmp_path / "s1.log").read_text()
