"""The labs over TLS (``LabSwitch(..., tls=True)``, ``python -m labs.labkit check --tls``):
the switch starts with the five TLS options, refuses a plaintext client and a client
without a certificate of the lab's CA, accepts the lab's controller, and a lab's checker
passes its solution with TLS on. Needs root (veth ports); skipped otherwise."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller.p4rt.tls import ClientTls, open_channel
from labs.labkit import LABS_DIR
from labs.labkit.switch import TLS_ENV, LabSwitch, tls_by_default
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


REFUSED_RPC_TIMEOUT_S = 30.0
"""Bound on the probe RPC; a refused handshake answers UNAVAILABLE in milliseconds."""


def _refused(addr: str, tls: "ClientTls | None") -> bool:
    """True when the switch at ``addr`` refuses a P4Runtime client with ``tls`` (None:
    plaintext): a Capabilities RPC on a channel with those credentials (the controller's
    own ``open_channel``), not waiting for the channel to be ready, fails with UNAVAILABLE
    once the handshake is refused. Before, a SwitchConnection waited out a 3 s timeout for
    each refusal (about 9 s of the test) and any timeout or error counted; now only the
    refusal does: an answer, or a channel still connecting at the bound, is not one."""
    with open_channel(addr, tls) as channel:
        try:
            p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
                p4runtime_pb2.CapabilitiesRequest(), timeout=REFUSED_RPC_TIMEOUT_S)
        except grpc.RpcError as exc:
            return exc.code() == grpc.StatusCode.UNAVAILABLE
    return False


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
