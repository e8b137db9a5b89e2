"""The labs over TLS (``LabSwitch(..., tls=True)``, ``python -m labs.labkit check --tls``):
the switch starts with the five TLS options, refuses a plaintext client and a client
without a certificate of the lab's CA, accepts the lab's controller, and a lab's checker
passes its solution with TLS on. Needs root (veth ports); skipped otherwise."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.p4rt.tls import ClientTls
from labs.labkit import LABS_DIR
from labs.labkit.switch import TLS_ENV, LabSwitch, tls_by_default
from p4rt_refusal import refused
from testbed.pki import FabricPki

REPO = Path(__file__).resolve().parents[2]
LAB = LABS_DIR / "01-ecmp-hashing"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="labs need root (veth ports)")


def test_plaintext_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TLS_ENV, raising=False)
    assert not tls_by_default()
    assert not LabSwitch(LAB / "solution" / "ecmp.p4", lab="99-tls", ports=[1]).tls
    monkeypatch.setenv(TLS_ENV, "1")
    assert LabSwitch(LAB / "solution" / "ecmp.p4", lab="99-tls", ports=[1]).tls
    assert not LabSwitch(LAB / "solution" / "ecmp.p4", lab="99-tls", ports=[1], tls=False).tls


def _refused(addr: str, tls: "ClientTls | None") -> bool:
    """True when the lab switch at ``addr`` refuses a P4Runtime client with ``tls``
    (:func:`p4rt_refusal.refused`: UNAVAILABLE to a Capabilities RPC, in milliseconds;
    before, a SwitchConnection waited out 3 s per refusal, about 9 s of the test)."""
    return refused(addr, tls)


@needs_root
def test_lab_switch_over_tls(tmp_path: Path) -> None:
    with LabSwitch(LAB / "solution" / "ecmp.p4", lab="99-tls", ports=[1, 2], tls=True) as sw:
        assert sw.daemon is not None
        cmd = " ".join(sw.daemon.cmd)
        assert "--grpc-server-ssl" in cmd and "--grpc-server-with-client-auth" in cmd
        assert sw.client_tls is not None and sw.client_tls.server_name == sw.name
        assert oct((sw.pki_dir / f"{sw.name}.key").stat().st_mode & 0o777) == "0o600"
        assert "P4Runtime over TLS" in sw.banner()
        assert sw.connection.pipeline_cookie()[0]      # the lab's own client works
        assert _refused(sw.grpc_addr, None)            # plaintext
        other = FabricPki.create(tmp_path / "other", ["controller"]).files("controller")
        assert _refused(sw.grpc_addr, ClientTls(other.ca_cert, other.cert, other.key))
        assert _refused(sw.grpc_addr, sw.client_tls.for_server("not-this-switch"))
        pki_dir = sw.pki_dir
    assert not pki_dir.exists()                         # throw-away: gone after the lab


@needs_root
def test_lab_checker_passes_over_tls() -> None:
    res = subprocess.run([sys.executable, "-m", "labs.labkit", "check", str(LAB),
                          "--solution", "--target", "p4sim", "--tls"],
                         cwd=REPO, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, f"{res.stdout}\n{res.stderr}"
    assert "P4Runtime over TLS" in res.stdout and "RESULT: all" in res.stdout
