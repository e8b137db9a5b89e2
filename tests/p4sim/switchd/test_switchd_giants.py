"""Frames longer than a port's interface takes (its MTU + 14, + 4 tagged) are dropped at
the port, before the pipeline, and counted in ``rx_oversize`` — on the Python and the
native data plane (sec-audit3).

Why it matters: a veth hands its packet socket frames of up to MTU + 18 bytes (and GSO
super-frames of any length). A host that raises its own NIC's MTU sends its leaf such a
frame; forwarded, the switch's egress counted it and the next link's ``send`` refused it
(EMSGSIZE): "sent but not received", GOR's evidence that a link is dead
(controller/gor/deadlinks.py). Here: host side 1 raised to MTU 1504, one frame of 1518
bytes (before: forwarded into a ``tx_errors`` on port 2, never received) and one of 1514
(forwarded, received). Root and iproute2 needed; only its own veths and process."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import QFWD, qm_fields, qm_frame
from p4sim.native import compiler_status
from p4sim.switchd.control import ControlClient
from procs import SwitchProcess
from test_switchd_veth import _open, _receive

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2 to create veth pairs")


@pytest.mark.parametrize("engine", ["python", "native"])
def test_a_giant_is_dropped_at_the_port(veths, tmp_path, engine: str) -> None:
    if engine == "native" and not compiler_status()[0]:
        pytest.skip(compiler_status()[1])
    sw1, sw2, host1, host2 = veths
    subprocess.run(["ip", "link", "set", host1, "mtu", "1504"], check=True, capture_output=True)
    args = [str(QFWD), "-i", f"1@{sw1}", "-i", f"2@{sw2}", "--engine", engine, "--control-port", "0",
            "--", "--grpc-server-addr", "127.0.0.1:0"]
    sw = SwitchProcess(args)
    try:
        tx, rx = _open(host1), _open(host2)
        with tx, rx:
            giant, fits = qm_frame(seq=1), qm_frame(seq=2)
            giant += bytes(1518 - len(giant))
            fits += bytes(1514 - len(fits))
            assert tx.send(giant) == 1518
            tx.send(fits)
            # the giant went first: once the frame after it is out, its fate is counted
            # (no wait for a frame that must not come)
            got = _receive(rx, 1, timeout_s=5.0)
            assert [qm_fields(f)["seq"] for f in got] == [2]
        with ControlClient(sw.control_addr) as c:
            counters = c.port_counters()
        assert counters[2]["tx_errors"] == 0, f"forwarded, then refused by port 2: {counters[2]}"
        assert counters[1].get("rx_oversize") == 1, counters[1]
        assert sw.alive()
    finally:
        sw.stop()
