"""make shell SW=…: the p4runtime-shell command for one switch of a topology file."""
from __future__ import annotations

from pathlib import Path

import pytest

from topo.model import build_fabric
from testbed.shell import SHELL_PYTHON, main, shell_command


@pytest.fixture()
def topology(tmp_path: Path) -> Path:
    path = tmp_path / "topology.json"
    build_fabric().save(path)
    return path


def test_command_names_the_switch_address_and_a_higher_election_id(topology: Path) -> None:
    fabric = build_fabric()
    sw = fabric.switches[0]
    cmd = shell_command(topology, sw.name)
    assert cmd[:3] == [str(SHELL_PYTHON), "-m", "p4runtime_sh"]   # .venv-shell's, not .venv's
    assert cmd[cmd.index("--grpc-addr") + 1] == sw.grpc_addr
    assert cmd[cmd.index("--device-id") + 1] == str(sw.device_id)
    assert cmd[cmd.index("--election-id") + 1] == f"0,{sw.election_id + 1}"
    assert "--config" not in cmd   # never re-push the pipeline of a running testbed


def test_unknown_switch_and_missing_topology_are_clear(topology: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nope", "--topology", str(topology)]) == 2
    assert "no switch 'nope'" in capsys.readouterr().err
    assert main(["s0", "--topology", str(tmp_path / "absent.json")]) == 2
    assert "start the testbed first" in capsys.readouterr().err
