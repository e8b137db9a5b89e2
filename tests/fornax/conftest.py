"""Fixtures of the FORNAX tests: the SmartNIC program compiled once per session in both
builds (p4sim), and the in-process switch of :mod:`nicrig`."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fornax.build import SmartNicBuild  # noqa: E402


@pytest.fixture(scope="session")
def fornax_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(P4Info, config) of the FORNAX build."""
    return SmartNicBuild().compile(tmp_path_factory.mktemp("fx"))


@pytest.fixture(scope="session")
def small_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(P4Info, config) of the FORNAX build with an 8-entry session table."""
    return SmartNicBuild(table_size=8).compile(tmp_path_factory.mktemp("fx8"))


@pytest.fixture(scope="session")
def baseline_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(P4Info, config) of the software-centric build."""
    return SmartNicBuild(baseline=True).compile(tmp_path_factory.mktemp("fxb"))
