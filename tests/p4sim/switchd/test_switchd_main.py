"""The command line of ``python -m p4sim switch`` (:mod:`p4sim.switchd.main`): option
parsing as simple_switch_grpc (target options after ``--``), exit 2 on a bad program, and
a process without ports that reports ready and stops on SIGTERM (no root needed)."""
from __future__ import annotations

import signal

import pytest

from p4sim.switchd.main import main, parse_args
from procs import SwitchProcess


def test_parse_args_like_simple_switch_grpc(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pcaps").mkdir()
    a = parse_args(["prog.p4", "-i", "1@s1-eth1", "-i", "2@s1-eth2", "--device-id", "3",
                    "--thrift-port", "9090", "--log-console", "--pcap=pcaps", "--",
                    "--grpc-server-addr", "0.0.0.0:50052", "--cpu-port", "255"])
    assert a.ports == [(1, "s1-eth1"), (2, "s1-eth2")]
    assert (a.device_id, a.grpc_server_addr, a.cpu_port, a.pcap) == (3, "0.0.0.0:50052", 255, "pcaps")
    b = parse_args(["--no-p4", "--", "--grpc-server-addr", "127.0.0.1:1",
                    "--priority-queues", "8"])
    assert b.program is None and b.grpc_server_addr == "127.0.0.1:1" and b.cpu_port is None
    assert b.priority_queues == 8
    with pytest.raises(SystemExit):
        parse_args(["prog.p4", "-i", "eth0"])
    with pytest.raises(SystemExit):
        parse_args([])


def test_bad_program_exits_2(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <v1model.p4>\nbit<8> x = ;\n")
    assert main([str(bad), "--no-grpc"]) == 2
    assert "bad.p4:2:" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.p4"), "--no-grpc"]) == 2


def test_process_reports_ready_and_stops_on_sigterm() -> None:
    sw = SwitchProcess(["--no-p4", "--control-port", "0", "--", "--grpc-server-addr", "127.0.0.1:0"])
    try:
        assert sw.ready_line.startswith("p4sim switch ready: grpc 127.0.0.1:"), sw.ready_line
        sw.proc.send_signal(signal.SIGTERM)
        assert sw.proc.wait(10) == 0
    finally:
        sw.stop()


@pytest.mark.parametrize("argv", [
    ["--no-p4", "--cpu-port", "255"],
    ["--no-p4", "--priority-queues", "8", "--", "--grpc-server-addr", "127.0.0.1:1"],
    ["--no-p4", "--grpc-server-addr=127.0.0.1:1"],
    ["--no-p4", "--log-console", "--log-file", "x.log"],
    ["--no-p4", "--pcap", "/nonexistent-pcap-dir"],
])
def test_command_lines_bmv2_refuses_are_refused(argv, capsys) -> None:
    """simple_switch_grpc exits 1 on these (target options before ``--``, ``--log-console``
    with ``--log-file``, a missing ``--pcap`` directory); p4sim does the same."""
    assert main([*argv, "--no-grpc"]) == 1
    err = capsys.readouterr().err
    assert "Error" in err or "does not exist" in err
