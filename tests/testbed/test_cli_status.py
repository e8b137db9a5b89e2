"""``python -m testbed status`` without a recorded testbed says so in one line (it printed
``{}``), and with one prints what of it still exists as JSON. No root, no Mininet."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.net import TestbedState


def test_status_without_a_testbed_says_none_is_recorded(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "testbed-state.json"
    assert main(["status", "--state", str(state)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"testbed: none recorded in {state}") and "make run" in out


def test_status_of_a_recorded_testbed_is_what_still_exists(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "testbed-state.json"
    TestbedState().save(state)
    assert main(["status", "--state", str(state)]) == 0
    assert json.loads(capsys.readouterr().out) == {"processes": [], "namespaces": [],
                                                   "interfaces": [], "tables": []}
