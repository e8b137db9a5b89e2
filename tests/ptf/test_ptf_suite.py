"""The fabric PTF suite (``tests/ptf/fabric``) on p4sim as one pytest test, through
``tests/ptf/run_ptf.py`` (what ``make ptf`` runs). Needs root, iproute2 and
``p4src/fabric.p4``; skipped with the reason otherwise. TARGET=bmv2 in the environment
runs it on BMv2 instead (P4C / SIMPLE_SWITCH_GRPC name the tools). P4Runtime runs over
TLS with client certificates (the harness's default; tests/ptf/README.md). On p4sim the
suite runs twice: on the native path (the program's C and the C data plane, what
``python -m p4sim switch`` runs by default) and on the Python engine (``P4SIM_ENGINE``),
and must pass on both."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
REPO = HERE.parents[1]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                    reason="the PTF suite needs root and iproute2 (veth pairs, raw sockets)")
@pytest.mark.skipif(not (REPO / "p4src" / "fabric.p4").exists(),
                    reason="p4src/fabric.p4 not present")
@pytest.mark.parametrize("engine", ["native", "python"])
def test_fabric_ptf_suite(tmp_path: Path, engine: str) -> None:
    target = os.environ.get("TARGET", "p4sim")
    if target != "p4sim" and engine != "native":
        pytest.skip("the engine is p4sim's")
    env = dict(os.environ, P4SIM_ENGINE=engine)
    res = subprocess.run([sys.executable, str(HERE / "run_ptf.py"), "--target", target,
                          "--build-dir", str(tmp_path / "build")],
                         cwd=REPO, capture_output=True, timeout=600, env=env)
    out = res.stdout.decode(errors="replace") + res.stderr.decode(errors="replace")
    assert res.returncode == 0, out[-6000:]
    assert "P4Runtime over TLS with client certificates" in out, out[:2000]   # the default
    if target == "p4sim":
        logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "build").rglob("switch*.log"))
        said = "data plane: native" in logs and "on the native engine" in logs
        assert said == (engine == "native"), logs[-3000:]
