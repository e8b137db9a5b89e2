"""``python -m fuzz``: arguments, exit status, the results file."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fuzz.cli import build_parser, main
from fuzz.report import CampaignResult

REPO = Path(__file__).resolve().parents[2]


def test_every_option_has_help() -> None:
    missing = [a.dest for a in build_parser()._actions if a.option_strings and not a.help]
    assert missing == []


def test_agent_campaign_writes_its_result(tmp_path: Path) -> None:
    out = tmp_path / "fuzz.json"
    assert main(["agent", "--count", "40", "--seed", "3", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data) == {"agent"}
    assert data["agent"]["ok"] and data["agent"]["inputs"] == 40 and data["agent"]["seed"] == 3


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "fuzz", "nonsense"], cwd=REPO,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    assert main(["agent", "--count", "0", "--out", str(tmp_path / "x.json")]) == 2


def test_a_finding_makes_the_result_not_ok() -> None:
    r = CampaignResult("p4rt", seed=1, size="small")
    assert r.ok
    r.add_finding("status", "Write answered INTERNAL", index=3)
    assert not r.ok and r.to_json()["ok"] is False
