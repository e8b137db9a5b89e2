"""testbed.control: the same queue and register commands on both targets.

p4sim: a real ``python -m p4sim switch`` running a program with a register, driven through
its control API. BMv2: ``simple_switch_CLI`` is stood in for by a small script (this module
only; BMv2 itself is not installed here) that records its stdin and answers as the real
CLI does, so the commands sent, the parsing of answers and the errors are checked."""
from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest

from procs import SwitchProcess
from testbed.control import Bmv2ThriftControl, ControlError, P4simControl, open_control

PROGRAM = textwrap.dedent("""
    #include <core.p4>
    #include <v1model.p4>
    header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
    struct headers_t { eth_t eth; }
    struct meta_t { }
    parser P(packet_in p, out headers_t h, inout meta_t m, inout standard_metadata_t s) {
        state start { p.extract(h.eth); transition accept; } }
    control VC(inout headers_t h, inout meta_t m) { apply { } }
    control I(inout headers_t h, inout meta_t m, inout standard_metadata_t s) {
        register<bit<32>>(8) cells;
        apply { cells.write(0, 7); s.egress_spec = 1; } }
    control E(inout headers_t h, inout meta_t m, inout standard_metadata_t s) { apply { } }
    control CC(inout headers_t h, inout meta_t m) { apply { } }
    control D(packet_out p, in headers_t h) { apply { p.emit(h.eth); } }
    V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""")


def test_p4sim_queue_rate_depth_and_registers(tmp_path: Path) -> None:
    prog = tmp_path / "reg.p4"
    prog.write_text(PROGRAM)
    with SwitchProcess([str(prog), "--control-port", "0", "--no-grpc"]) as sw:
        ctl = open_control("p4sim", {"control_addr": sw.control_addr}, "s0")
        try:
            ctl.set_queue_rate(250, port=1, priority=0)
            ctl.set_queue_depth(16, port=1)
            assert ctl.register_read("I.cells", 3) == 0
            with pytest.raises(ControlError, match="no register 'I.nope'"):
                ctl.register_read("I.nope", 0)
            with pytest.raises(ControlError, match="OUT_OF_RANGE|not in"):
                ctl.register_read("I.cells", 8)
            with pytest.raises(ControlError, match="a priority needs a port"):
                ctl.set_queue_rate(1, priority=2)
            ctl.register_reset("I.cells")
        finally:
            ctl.close()


def test_p4sim_control_unreachable_names_the_switch() -> None:
    with pytest.raises(ControlError, match="switch s9: p4sim control API 127.0.0.1:1"):
        P4simControl("127.0.0.1:1", switch="s9")


FAKE_CLI = """#!/bin/sh
# stands in for simple_switch_CLI: records argv and stdin, answers like the real CLI
echo "$@" > "{log}.argv"
cat > "{log}.stdin"
echo "Obtaining JSON from switch..."
echo "Done"
echo "Control utility for runtime P4 table manipulation"
case "$(cat {log}.stdin)" in
  *"register_read I.cells 3"*) echo "RuntimeCmd: I.cells[3]= 42" ;;
  *"register_read I.nope"*) echo "RuntimeCmd: Error: Invalid register name (I.nope)" ;;
  *"set_queue_rate 99"*) echo "Could not connect to thrift client on port 9999"; exit 1 ;;
  *"modules"*) echo "ModuleNotFoundError: No module named 'bm_runtime'"; exit 1 ;;
  *) echo "RuntimeCmd: " ;;
esac
"""


def _fake_cli(tmp_path: Path) -> Path:
    cli = tmp_path / "simple_switch_CLI"
    cli.write_text(FAKE_CLI.format(log=tmp_path / "cli"))
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    return cli


def test_bmv2_commands_go_to_simple_switch_cli(tmp_path: Path) -> None:
    ctl = Bmv2ThriftControl(9191, switch="s0", cli=str(_fake_cli(tmp_path)))
    ctl.set_queue_rate(343.4, port=5)
    assert (tmp_path / "cli.stdin").read_text() == "set_queue_rate 343 5\n"
    assert (tmp_path / "cli.argv").read_text().split()[:2] == ["--thrift-port", "9191"]
    ctl.set_queue_depth(64, port=5, priority=3)
    assert (tmp_path / "cli.stdin").read_text() == "set_queue_depth 64 5 3\n"
    ctl.set_queue_rate(0)
    assert (tmp_path / "cli.stdin").read_text() == "set_queue_rate 0\n"
    assert ctl.register_read("I.cells", 3) == 42
    ctl.register_reset("I.cells")
    assert (tmp_path / "cli.stdin").read_text() == "register_reset I.cells\n"


def test_bmv2_errors_are_said_with_the_switch_and_command(tmp_path: Path) -> None:
    ctl = Bmv2ThriftControl(9191, switch="s0", cli=str(_fake_cli(tmp_path)))
    with pytest.raises(ControlError, match=r"switch s0: .*register_read I.nope 0.*Invalid register"):
        ctl.register_read("I.nope", 0)
    with pytest.raises(ControlError, match="Could not connect to thrift client"):
        ctl.set_queue_rate(99, port=1)
    with pytest.raises(ControlError, match="BMv2's Python runtime is missing \\(bm_runtime\\)"):
        ctl.run(["modules"])


def test_bmv2_cli_missing_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMPLE_SWITCH_CLI", str(tmp_path / "absent"))
    with pytest.raises(ControlError, match="installed with BMv2.*SIMPLE_SWITCH_CLI"):
        open_control("bmv2", {"thrift_port": 9090}, "s0")
    with pytest.raises(ControlError, match="no thrift port recorded"):
        open_control("bmv2", {}, "s0")
    assert os.environ["SIMPLE_SWITCH_CLI"].endswith("absent")
