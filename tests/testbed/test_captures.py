"""Which switches write per-port pcaps (testbed/README.md, "Captures"; issue 32): ``testbed
up`` captures on every switch unless ``--no-pcap`` (as the P4 tutorials' run_exercise.py
does); ``scenarios up`` (``make run``) only with ``--pcap`` or ``--pcap-switches``, because
its elephants run at thousands of frames/s and the per-frame captures were a fifth of the
switches' CPU. No root: the command lines are parsed and the switch commands built, nothing
is brought up."""
from __future__ import annotations

from pathlib import Path

import pytest

import scenarios.cli as scenarios_cli
import testbed.cli as testbed_cli
from testbed.cli import capture_options
from testbed.net import NetOptions, switch_launch
from topo import build_fabric

FABRIC = build_fabric()


def _captures(parser_argv: list[str], scenarios: bool) -> tuple[object, object]:
    parser = scenarios_cli.build_parser() if scenarios else testbed_cli.build_parser()
    args = parser.parse_args(["up", *parser_argv])
    return capture_options(args, FABRIC)


def test_testbed_up_captures_every_switch_unless_told_not_to() -> None:
    pcap_dir, only = _captures([], scenarios=False)
    assert pcap_dir is not None and only is None
    assert _captures(["--no-pcap"], scenarios=False) == (None, None)


def test_a_scenario_captures_nothing_unless_asked() -> None:
    assert _captures([], scenarios=True) == (None, None)
    pcap_dir, only = _captures(["--pcap"], scenarios=True)
    assert pcap_dir is not None and only is None
    pcap_dir, only = _captures(["--pcap-switches", "b0r0l0,s0"], scenarios=True)
    assert pcap_dir is not None and only == frozenset({"b0r0l0", "s0"})


def test_an_unknown_switch_is_named() -> None:
    with pytest.raises(ValueError, match="no switch b9r9l9 in the fabric"):
        _captures(["--pcap-switches", "b0r0l0,b9r9l9"], scenarios=True)


def test_only_the_chosen_switches_get_pcap_on_their_command_line(tmp_path: Path) -> None:
    opts = NetOptions(pcap_dir=tmp_path, pcap_switches=frozenset({"s0"}))
    cmds = {}
    for sw in FABRIC.switches:
        launch = switch_launch("p4sim", name=sw.name, device_id=sw.device_id, grpc_addr=sw.grpc_addr,
                               ports=sw.ports.keys(), log_dir=tmp_path,
                               pcap_dir=opts.pcap_dir_of(sw.name))
        cmds[sw.name] = " ".join(launch.command())
    assert f"--pcap={tmp_path}" in cmds["s0"]
    assert all("--pcap" not in c for name, c in cmds.items() if name != "s0")


def test_a_bad_pcap_switches_value_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        scenarios_cli.build_parser().parse_args(["up", "--pcap-switches", ","])
    assert "--pcap-switches: no switch named in ','" in capsys.readouterr().err
