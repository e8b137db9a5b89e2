"""Fixtures shared by the controller tests that run real p4sim switches."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FABRIC_PROGRAM = REPO / "p4src" / "fabric.p4"
PROBE_PROGRAM = Path(__file__).parent / "probe.p4"


@pytest.fixture(scope="session")
def fabric_compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``p4src/fabric.p4`` compiled once per test session: (P4Info text file, device config)."""
    out = tmp_path_factory.mktemp("fabric")
    p4info, config = out / "fabric.p4info.txtpb", out / "fabric.json"
    subprocess.run([sys.executable, "-m", "p4sim", "compile", str(FABRIC_PROGRAM), "--p4info",
                    str(p4info), "--config", str(config)], cwd=REPO, check=True, timeout=300)
    return p4info, config


@pytest.fixture(scope="session")
def probe_compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``tests/controller/probe.p4`` compiled once per test session: (P4Info text file,
    device config)."""
    out = tmp_path_factory.mktemp("probe")
    p4info, config = out / "probe.p4info.txtpb", out / "probe.json"
    subprocess.run([sys.executable, "-m", "p4sim", "compile", str(PROBE_PROGRAM), "--p4info",
                    str(p4info), "--config", str(config)], cwd=REPO, check=True, timeout=120)
    return p4info, config

