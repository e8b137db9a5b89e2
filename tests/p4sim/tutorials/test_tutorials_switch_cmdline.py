"""``p4sim-simple-switch-grpc``: BMv2's command lines as the P4 tutorials write them are
taken (mapped onto ``p4sim switch``'s), what p4sim cannot honour is refused with a message
(exit 1), and a BMv2 JSON program is refused naming the compile command to use."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4sim.switchd.main import parse_args
from p4sim.tutorials.switch import Refused, translate
from tutorials_support import run, script

# utils/p4runtime_switch.py (make run), joined by spaces and split by the shell
RUN_EXERCISE = ("-i 1@s1-eth1 -i 2@s1-eth2 --pcap pcaps --nanolog ipc:///tmp/bm-0-log.ipc "
                "--device-id 0 build/basic.json --log-console --thrift-port 9090 "
                "-- --grpc-server-addr 0.0.0.0:50051 --cpu-port 255 --priority-queues 8").split()
# exercises/basic/runptf.sh
RUNPTF = ("--log-file ss-log --log-flush --dump-packet-data 10000 -i 0@veth0 -i 1@veth2 "
          "--no-p4").split()


def test_run_exercise_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pcaps").mkdir()              # --pcap DIR must exist, as on BMv2
    monkeypatch.chdir(tmp_path)
    args = parse_args(translate(RUN_EXERCISE))
    assert args.program == "build/basic.json" and args.pcap == "pcaps" and args.log_console
    assert args.ports == [(1, "s1-eth1"), (2, "s1-eth2")]
    assert (args.grpc_server_addr, args.cpu_port, args.priority_queues) == ("0.0.0.0:50051", 255, 8)
    assert args.device_id == 0


def test_runptf_command_line() -> None:
    args = parse_args(translate(RUNPTF))
    assert args.no_p4 and args.log_file == "ss-log.txt"   # BMv2's spdlog appends .txt
    assert args.ports == [(0, "veth0"), (1, "veth2")]


def test_short_and_inline_forms() -> None:
    assert translate(["-L", "info", "--log-file=x", "--max-port-count=64", "--no-p4"]) == \
        ["--log-level", "info", "--log-file", "x.txt", "--no-p4"]


@pytest.mark.parametrize("option", ["--use-files", "--packet-in", "--debugger", "--restore-state"])
def test_unsupported_options_refused(option: str) -> None:
    with pytest.raises(Refused, match=f"{option} is not supported"):
        translate([option, "1", "--no-p4"] if option != "--debugger" else [option, "--no-p4"])


def test_console_script_refuses_with_exit_1(tmp_path: Path) -> None:
    res = run([script("p4sim-simple-switch-grpc"), "--use-files", "0", "--no-p4"], tmp_path)
    assert res.returncode == 1 and "--use-files is not supported" in res.stderr, res.stderr


def test_bmv2_json_program_refused(tmp_path: Path) -> None:
    (tmp_path / "basic.json").write_text(json.dumps(
        {"header_types": [], "parsers": [], "deparsers": [], "pipelines": []}))
    res = run([script("p4sim-simple-switch-grpc"), "basic.json", "--", "--grpc-server-addr",
               "127.0.0.1:0"], tmp_path)
    assert res.returncode == 1
    assert "BMv2 JSON" in res.stderr and "p4sim-p4c-bm2-ss" in res.stderr, res.stderr


def test_version() -> None:
    res = run([script("p4sim-simple-switch-grpc"), "--version"], Path("."))
    assert res.returncode == 0 and res.stdout.startswith("p4sim-simple-switch-grpc: p4sim ")
