"""The control API (:mod:`p4sim.switchd.control`): the client against a live
ControlServer, refused commands, malformed lines, and the ``python -m p4sim ctl`` CLI."""
from __future__ import annotations

import json
import socket
from typing import Iterator

import pytest

from p4sim.__main__ import main as p4sim_main
from p4sim.switchd.control import ControlClient, ControlError, ControlServer


@pytest.fixture
def control(rig) -> Iterator[tuple[object, str]]:
    srv = ControlServer(rig.dev, 0)
    srv.start()
    yield rig, f"127.0.0.1:{srv.bound_port}"
    srv.stop()


def test_client_sets_queues_and_reads_stats(control) -> None:
    rig, addr = control
    with ControlClient(addr) as c:
        assert c.ping() == {"device_id": 0, "ports": [1, 2]}
        c.set_queue_rate(100, port=2)
        c.set_queue_depth(10, port=2, priority=0)
        c.set_line_rate(25, port=1)
        c.set_pfc(False, port=1)
        q = c.queue_stats(2)[2]["queues"][0]
        assert (q["rate_pps"], q["depth_pkts"]) == (100.0, 10)
        stats = c.port_counters()
        assert stats[1]["line_rate_gbps"] == 25.0 and stats[1]["pfc_enabled"] is False
        assert stats[1]["iface"] == "inproc1" and "rx_frames" in stats[1]
        c.set_pfc_passthrough(True)
        assert rig.dev.pfc_passthrough is True
        assert c.switch_stats()["no_program"] == 0
        with pytest.raises(ControlError, match="queue rate"):
            c.set_queue_rate(-5)
        with pytest.raises(ControlError, match="unknown command"):
            c.call("reboot")
        with pytest.raises(ControlError, match="no port 9"):
            c.port_counters(9)


def test_malformed_lines_get_errors_and_connection_survives(control) -> None:
    _rig, addr = control
    host, port = addr.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        f = s.makefile("rwb")
        for line in (b"not json\n", b"[1,2]\n", b'{"cmd": "set_queue_rate", "args": {"x": 1}}\n',
                     b'{"cmd": "ping"}\n'):
            f.write(line)
            f.flush()
            reply = json.loads(f.readline())
        assert reply["ok"] is True


def test_ctl_cli(control, capsys) -> None:
    rig, addr = control
    assert p4sim_main(["ctl", addr, "set_queue_rate", "250", "2"]) == 0
    assert rig.dev.tm.queue_stats(2)[2]["queues"][0]["rate_pps"] == 250.0
    assert p4sim_main(["ctl", addr, "set_pfc", "off"]) == 0
    assert rig.dev.tm.pfc_enabled(1) is False
    capsys.readouterr()
    assert p4sim_main(["ctl", addr, "queue_stats", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["2"]["queues"][0]["rate_pps"] == 250.0
    assert p4sim_main(["ctl", addr, "set_queue_depth", "0"]) == 1
    assert p4sim_main(["ctl", addr, "set_queue_depth"]) == 2
    assert p4sim_main(["ctl", addr, "bogus"]) == 2
