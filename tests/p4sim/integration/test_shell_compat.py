"""p4runtime-shell against p4sim, over the wire: the shell's suite (``shell_e2e.py``) runs in
p4runtime-shell's own environment (.venv-shell, protobuf 3.20, made by ``make venv-shell``)
and drives ``python -m p4sim switch`` processes of this environment (.venv, protobuf 7 on
upb) over gRPC, as a user's shell does. Nothing here imports ``p4runtime_sh``.

Without .venv-shell the test skips and says how to make it; under CI (``CI`` set, as
``.ci/run`` runs) it fails instead, so the suite cannot pass by not running.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from procs import REPO

SHELL_PYTHON = REPO / ".venv-shell" / "bin" / "python"
SUITE = ("tests/p4sim/integration/shell_e2e.py",)
TIMEOUT_S = 600


def test_p4runtime_shell_suite_passes_against_p4sim() -> None:
    if not SHELL_PYTHON.exists():
        why = f"{SHELL_PYTHON} missing: make venv-shell (p4runtime-shell's environment)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    env = dict(os.environ, ASTRAL_P4SIM_PYTHON=sys.executable)
    run = subprocess.run([str(SHELL_PYTHON), "-m", "pytest", "-q", "-rs", *SUITE], cwd=REPO,
                         env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=TIMEOUT_S)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    summary = out.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and "skipped" not in summary, out[-3000:]
