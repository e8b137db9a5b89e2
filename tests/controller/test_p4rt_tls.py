"""controller.p4rt over TLS against a real ``python -m p4sim switch`` with
``--grpc-server-ssl ... --grpc-server-with-client-auth`` (no root needed).

:class:`SwitchConnection` with a :class:`ClientTls` (CA, controller certificate and key)
arbitrates, pushes a pipeline and reads; the switch's certificate must name the server
name asked for (``ClientTls.for_server``); without a client certificate, or in
plaintext, the handshake is refused (UNAVAILABLE at once: ``p4rt_refusal``) and a
SwitchConnection on such a channel times out within its bound; the command-line
options of ``python -m controller setup`` build the same ClientTls.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import grpc
import pytest

from controller.p4rt import ClientTls, SwitchConnection
from controller.p4rt import tls as p4rt_tls
from p4rt_refusal import refusal
from procs import REPO, SwitchProcess
from testbed.pki import FabricPki

DEVICE_ID = 5
REFUSED_TIMEOUT_S = 3.0


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> FabricPki:
    return FabricPki.create(tmp_path_factory.mktemp("pki"), ["b0r0l0", "controller"])


@pytest.fixture(scope="module")
def switch(pki: FabricPki) -> Iterator[SwitchProcess]:
    f = pki.files("b0r0l0")
    sw = SwitchProcess.no_p4(device_id=DEVICE_ID, target_extra=[
        "--grpc-server-ssl", "--grpc-server-cacert", str(f.ca_cert), "--grpc-server-cert", str(f.cert),
        "--grpc-server-key", str(f.key), "--grpc-server-with-client-auth"])
    try:
        yield sw
    finally:
        sw.stop()


def controller_tls(pki: FabricPki) -> ClientTls:
    f = pki.files("controller")
    return ClientTls(f.ca_cert, f.cert, f.key)


def test_tls_connection_pushes_writes_and_reads(switch, pki, probe_compiled) -> None:
    with SwitchConnection(switch.grpc_addr, device_id=DEVICE_ID, election_id=(0, 9),
                          tls=controller_tls(pki).for_server("b0r0l0")) as sw:
        assert sw.is_primary
        sw.push_pipeline(*probe_compiled)
        entry = sw.table_entry("PIngress.t_exact", {"hdr.probe.key8": 7}, "PIngress.set_exact",
                               {"v": 3})
        sw.insert(entry)
        assert len(sw.read_table("PIngress.t_exact")) == 1
        sw.delete(entry)


def test_server_name_must_be_in_the_switch_certificate(switch, pki) -> None:
    # the handshake is refused: UNAVAILABLE at once (p4rt_refusal), not a timeout waited out
    assert refusal(switch.grpc_addr, controller_tls(pki).for_server("s1")) == grpc.StatusCode.UNAVAILABLE
    assert refusal(switch.grpc_addr, controller_tls(pki).for_server("b0r0l0")) is None   # the control


@pytest.mark.parametrize("which", ["plaintext", "no client certificate"])
def test_connection_without_the_right_credentials_gets_nothing(switch, pki, which) -> None:
    tls = None if which == "plaintext" else ClientTls(pki.files("controller").ca_cert).for_server("b0r0l0")
    assert refusal(switch.grpc_addr, tls) == grpc.StatusCode.UNAVAILABLE


def test_a_refused_switch_connection_times_out_within_its_bound(switch) -> None:
    """What a caller of SwitchConnection sees on a refused channel: FutureTimeoutError
    after ``timeout_s`` (once here; the refusals themselves are asserted above, each in
    milliseconds, where each used to wait out this timeout: 9 s of the module in CI)."""
    with pytest.raises(grpc.FutureTimeoutError):
        SwitchConnection(switch.grpc_addr, device_id=DEVICE_ID, election_id=(0, 9), tls=None,
                         timeout_s=REFUSED_TIMEOUT_S)


def test_command_line_options_build_the_client_tls(pki) -> None:
    ap = argparse.ArgumentParser()
    p4rt_tls.add_arguments(ap)
    f = pki.files("controller")
    got = p4rt_tls.from_arguments(ap.parse_args(["--p4rt-ca-cert", str(f.ca_cert), "--p4rt-cert",
                                                 str(f.cert), "--p4rt-key", str(f.key)]))
    assert got == ClientTls(f.ca_cert, f.cert, f.key)
    with pytest.raises(ValueError, match="needs its key"):
        p4rt_tls.from_arguments(ap.parse_args(["--p4rt-ca-cert", str(f.ca_cert), "--p4rt-cert",
                                               str(f.cert)]))


def test_controller_setup_reports_incomplete_tls_options_in_one_line(tmp_path) -> None:
    fabric, p4info, config = (tmp_path / n for n in ("f.json", "p.txtpb", "c.json"))
    for p in (fabric, p4info, config):
        p.write_text("{}")
    done = subprocess.run([sys.executable, "-m", "controller", "setup", "--fabric", str(fabric),
                           "--p4info", str(p4info), "--config", str(config),
                           "--p4rt-cert", "c.pem"], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == ("controller setup: --p4rt-cert/--p4rt-key need --p4rt-ca-cert "
                                   "(the CA the switches are verified against)")
