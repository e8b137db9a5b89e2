"""The fabric PTF suite (``tests/ptf/fabric``) on p4sim as one pytest test, through
``tests/ptf/run_ptf.py`` (what ``make ptf`` runs). Needs root, iproute2 and
``p4src/fabric.p4``; skipped with the reason otherwise. TARGET=bmv2 in the environment
runs it on BMv2 instead (P4C / SIMPLE_SWITCH_GRPC name the tools). P4Runtime runs over
TLS with client certificates (the harness's default; tests/ptf/README.md)."""
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
def test_fabric_ptf_suite(tmp_path: Path) -> None:
    target = os.environ.get("TARGET", "p4sim")
    res = subprocess.run([sys.executable, str(HERE / "run_ptf.py"), "--target", target,
                          "--build-dir", str(tmp_path / "build")],
                         cwd=REPO, capture_output=True, timeout=600)
    out = res.stdout.decode(errors="replace") + res.stderr.decode(errors="replace")
    assert res.returncode == 0, out[-6000:]
    assert "P4Runtime over TLS with client certificates" in out, out[:2000]   # the default
