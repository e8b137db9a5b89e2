"""The web view's port can be set (monitor/webport.py): ``MonitorOptions(web_port=…)``,
``WebServer(port=…)``, ``python -m monitor.remote --web-port`` and ``python -m scenarios up
--monitor-port`` (``$MONITOR_PORT``, ``make run MONITOR_PORT=…``), which the faults
scenario hands to its monitor. A bad port is refused naming the field (the command lines:
exit 2, no traceback), a taken one before the testbed comes up. Before, only
``MonitorOptions`` had the field, no command line reached it, and a port over 65535
raised OverflowError from ``bind`` inside ``WebServer.start``."""
from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

import scenarios.cli as scenarios_cli
from monitor.service import MonitorOptions
from monitor.web import WebServer
from monitor.webstate import MonitorView
from scenarios.common import ScenarioOptions
from scenarios.faults import monitor_options
from topo.model import build_fabric

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def held_port() -> Iterator[int]:
    """A port another socket listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield s.getsockname()[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("port, says", [(70000, "web_port 70000: not a port"),
                                        (-1, "web_port -1: not a port"),
                                        ("8080", "web_port '8080': not an integer"),
                                        (True, "web_port True: not an integer")])
def test_monitor_options_refuse_a_bad_port(port: Any, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        MonitorOptions(web_port=port)


def test_web_server_refuses_a_bad_port_and_serves_on_the_one_given() -> None:
    view = MonitorView(build_fabric())
    with pytest.raises(ValueError, match="web port 65536: not a port"):
        WebServer(view, port=65536)
    port = _free_port()
    with WebServer(view, port=port) as server:
        assert server.port == port and server.url == f"http://127.0.0.1:{port}/"
        with urllib.request.urlopen(server.url + "healthz", timeout=5) as resp:
            assert resp.status == 200


def test_the_faults_scenario_hands_its_port_to_the_monitor() -> None:
    assert monitor_options(ScenarioOptions(monitor_port=8123)).web_port == 8123
    assert monitor_options(ScenarioOptions()).web_port == 0


def test_scenarios_cli_passes_the_port_to_the_scenario(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[ScenarioOptions] = []
    monkeypatch.setattr(scenarios_cli, "run_scenario",
                        lambda name, *a: seen.append(a[-1]) or type("R", (), {"status": 0})())
    args = scenarios_cli.build_parser().parse_args(["up", "--scenario", "faults", "--monitor-port", "8124"])
    fnet = type("N", (), {"opts": type("O", (), {"state_path": None})(), "state": None,
                          "save_state": None})()
    scenarios_cli._runner(args, None, None, fnet)
    assert seen and seen[0].monitor_port == 8124


def test_monitor_port_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONITOR_PORT", "8125")
    assert scenarios_cli.build_parser().parse_args(["up"]).monitor_port == 8125
    monkeypatch.delenv("MONITOR_PORT")
    assert scenarios_cli.build_parser().parse_args(["up"]).monitor_port == 0


@pytest.mark.parametrize("argv, env, says", [
    (["--monitor-port", "70000"], {}, "argument --monitor-port: port 70000: not a port (0 to 65535"),
    (["--monitor-port", "web"], {}, "argument --monitor-port: 'web' is not an integer"),
    ([], {"MONITOR_PORT": "-5"}, "argument --monitor-port: port -5: not a port"),
])
def test_scenarios_cli_refuses_a_bad_port(argv: list[str], env: dict[str, str], says: str,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(SystemExit) as exc:
        scenarios_cli.main(["up", "--scenario", "faults", *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and says in err and "Traceback" not in err, err


def test_scenarios_cli_refuses_a_taken_port_before_the_testbed_comes_up(
        held_port: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def no_testbed(*a: Any, **k: Any) -> int:
        raise AssertionError("the testbed must not come up")
    monkeypatch.setattr(scenarios_cli, "cmd_up", no_testbed)
    assert scenarios_cli.main(["up", "--scenario", "faults", "--monitor-port", str(held_port)]) == 2
    err = capsys.readouterr().err
    assert err == (f"scenarios: --monitor-port {held_port}: 127.0.0.1:{held_port} is taken (Address "
                   "already in use); choose another port, or 0 for a free one\n")


def test_monitor_remote_refuses_a_bad_web_port() -> None:
    proc = subprocess.run([sys.executable, "-m", "monitor.remote", "--fabric", "f", "--plan", "p",
                           "--run-dir", "d", "--web-port", "99999"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "argument --web-port: port 99999: not a port" in proc.stderr
    assert "Traceback" not in proc.stderr
