"""P4Runtime over TLS on a real ``python -m p4sim switch`` process (no root needed), with
simple_switch_grpc's options: ``-- --grpc-server-ssl --grpc-server-cacert CA
--grpc-server-cert CERT --grpc-server-key KEY --grpc-server-with-client-auth``.

A client with the fabric CA and a client certificate pushes a pipeline and reads; a
plaintext client, a client whose certificate comes from another CA, a client without a
certificate, and a client that does not trust the switch's CA are all refused at the
handshake (UNAVAILABLE, never an answer). Bad TLS options end the process with BMv2's
one-line message and exit status 1. The PKI is ``testbed.pki`` in ``tmp_path``; every
refusal is a bounded RPC deadline, not a sleep.
"""
from __future__ import annotations

import queue
import subprocess
import sys
from pathlib import Path
from typing import Iterator, Optional

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from google.protobuf import text_format
from procs import REPO, SwitchProcess
from testbed.pki import FabricPki

HERE = Path(__file__).parent
RPC_TIMEOUT_S = 10.0
DEVICE_ID = 7


@pytest.fixture(scope="module")
def pkis(tmp_path_factory: pytest.TempPathFactory) -> tuple[FabricPki, FabricPki]:
    """The fabric's PKI (switch ``sw``, ``controller``) and a stranger's (``controller``)."""
    root = tmp_path_factory.mktemp("pki")
    return (FabricPki.create(root / "fabric", ["sw", "controller"]),
            FabricPki.create(root / "other", ["controller"], ca_name="another CA"))


def tls_target_args(pki: FabricPki, client_auth: bool = True) -> list[str]:
    f = pki.files("sw")
    return ["--grpc-server-ssl", "--grpc-server-cacert", str(f.ca_cert),
            "--grpc-server-cert", str(f.cert), "--grpc-server-key", str(f.key),
            *(["--grpc-server-with-client-auth"] if client_auth else [])]


def start_switch(target: list[str]) -> SwitchProcess:
    return SwitchProcess(["--no-p4", "--device-id", str(DEVICE_ID), "--control-port", "0", "--",
                          "--grpc-server-addr", "127.0.0.1:0", *target])


@pytest.fixture(scope="module")
def mtls_switch(pkis: tuple[FabricPki, FabricPki]) -> Iterator[SwitchProcess]:
    sw = start_switch(tls_target_args(pkis[0]))
    try:
        yield sw
    finally:
        sw.stop()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("qfwd")
    p4info, config = out / "qfwd.p4info.txtpb", out / "qfwd.json"
    subprocess.run([sys.executable, "-m", "p4sim", "compile", str(HERE / "qfwd.p4"), "--p4info",
                    str(p4info), "--config", str(config)], cwd=REPO, check=True, timeout=120)
    return p4info, config


def creds(pki: FabricPki, client: Optional[str] = "controller",
          trust: Optional[FabricPki] = None) -> grpc.ChannelCredentials:
    """Client credentials: trust ``trust``'s CA (default ``pki``'s), present ``client``'s
    certificate from ``pki`` (none when None)."""
    ca = ((trust or pki).root / "ca.pem").read_bytes()
    if client is None:
        return grpc.ssl_channel_credentials(root_certificates=ca)
    _, cert, key = pki.files(client).read()
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)


def capabilities(channel: grpc.Channel) -> p4runtime_pb2.CapabilitiesResponse:
    return p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
        p4runtime_pb2.CapabilitiesRequest(), timeout=RPC_TIMEOUT_S)


def assert_refused(channel: grpc.Channel) -> None:
    """The switch gives no answer on ``channel``: the RPC fails UNAVAILABLE (handshake)."""
    with channel:
        with pytest.raises(grpc.RpcError) as err:
            capabilities(channel)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE, err.value


class Primary:
    """A StreamChannel that made its client primary (election id 1), for pipeline pushes."""

    def __init__(self, stub: p4runtime_pb2_grpc.P4RuntimeStub) -> None:
        self._out: "queue.Queue[Optional[p4runtime_pb2.StreamMessageRequest]]" = queue.Queue()
        self._out.put(p4runtime_pb2.StreamMessageRequest(arbitration=p4runtime_pb2.MasterArbitrationUpdate(
            device_id=DEVICE_ID, election_id=p4runtime_pb2.Uint128(high=0, low=1))))
        self.call = stub.StreamChannel(iter(self._out.get, None), timeout=60)
        answer = next(self.call)
        assert answer.arbitration.status.code == 0, answer

    def close(self) -> None:
        self._out.put(None)
        self.call.cancel()


def test_mutual_tls_client_pushes_a_pipeline_and_reads(mtls_switch, pkis, compiled) -> None:
    p4info_path, config_path = compiled
    p4info = text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info())
    with grpc.secure_channel(mtls_switch.grpc_addr, creds(pkis[0])) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        assert capabilities(channel).p4runtime_api_version
        primary = Primary(stub)
        try:
            stub.SetForwardingPipelineConfig(p4runtime_pb2.SetForwardingPipelineConfigRequest(
                device_id=DEVICE_ID, election_id=p4runtime_pb2.Uint128(high=0, low=1),
                action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                config=p4runtime_pb2.ForwardingPipelineConfig(
                    p4info=p4info, p4_device_config=config_path.read_bytes())), timeout=60)
            read = p4runtime_pb2.ReadRequest(device_id=DEVICE_ID, entities=[
                p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())])
            replies = list(stub.Read(read, timeout=RPC_TIMEOUT_S))
            assert [e for r in replies for e in r.entities] == []     # no entries yet, but read
            got = stub.GetForwardingPipelineConfig(p4runtime_pb2.GetForwardingPipelineConfigRequest(
                device_id=DEVICE_ID), timeout=RPC_TIMEOUT_S)
            assert [t.preamble.name for t in got.config.p4info.tables] == \
                [t.preamble.name for t in p4info.tables]
        finally:
            primary.close()


def test_plaintext_client_is_refused(mtls_switch) -> None:
    assert_refused(grpc.insecure_channel(mtls_switch.grpc_addr))


def test_client_certificate_from_another_ca_is_refused(mtls_switch, pkis) -> None:
    fabric, other = pkis
    # trusts the switch's CA, presents a certificate the switch cannot verify
    assert_refused(grpc.secure_channel(mtls_switch.grpc_addr, creds(other, trust=fabric)))


def test_client_without_certificate_is_refused_under_client_auth(mtls_switch, pkis) -> None:
    assert_refused(grpc.secure_channel(mtls_switch.grpc_addr, creds(pkis[0], client=None)))


def test_client_that_does_not_trust_the_switch_refuses_it(mtls_switch, pkis) -> None:
    fabric, other = pkis
    assert_refused(grpc.secure_channel(mtls_switch.grpc_addr, creds(fabric, trust=other)))


def test_without_client_auth_no_client_certificate_is_needed(pkis) -> None:
    """BMv2 without --grpc-server-with-client-auth does not request a client certificate."""
    sw = start_switch(tls_target_args(pkis[0], client_auth=False))
    try:
        with grpc.secure_channel(sw.grpc_addr, creds(pkis[0], client=None)) as channel:
            assert capabilities(channel).p4runtime_api_version
        assert_refused(grpc.insecure_channel(sw.grpc_addr))
    finally:
        sw.stop()


def run_switch(target: list[str]) -> subprocess.CompletedProcess:
    """A switch process expected to exit at once (bad TLS options)."""
    return subprocess.run([sys.executable, "-m", "p4sim", "switch", "--no-p4", "--control-port", "0",
                           "--", "--grpc-server-addr", "127.0.0.1:0", *target],
                          cwd=REPO, capture_output=True, text=True, timeout=60)


def test_missing_key_file_is_one_line_and_exit_1(pkis, tmp_path) -> None:
    args = tls_target_args(pkis[0])
    missing = str(tmp_path / "gone.key")
    args[args.index("--grpc-server-key") + 1] = missing
    done = run_switch(args)
    assert done.returncode == 1
    assert done.stderr.strip() == f"Error when reading pem file '{missing}': file cannot be opened"
    assert "p4sim switch ready" not in done.stdout


@pytest.mark.parametrize("drop, message", [
    ("--grpc-server-cert", "When enabling SSL/TLS for gRPC server, --grpc-server-cert is required"),
    ("--grpc-server-key", "When enabling SSL/TLS for gRPC server, --grpc-server-key is required"),
    ("--grpc-server-cacert", "--grpc-server-with-client-auth needs --grpc-server-cacert: without a CA "
                             "no client certificate can be verified (BMv2 would start and refuse every client)"),
])
def test_incomplete_tls_options_are_refused(pkis, drop, message) -> None:
    args = tls_target_args(pkis[0])
    i = args.index(drop)
    del args[i:i + 2]
    done = run_switch(args)
    assert (done.returncode, done.stderr.strip()) == (1, message)


def test_a_key_that_is_not_the_certificates_is_refused(pkis) -> None:
    args = tls_target_args(pkis[0])
    args[args.index("--grpc-server-key") + 1] = str(pkis[0].files("controller").key)
    done = run_switch(args)
    assert done.returncode == 1 and "the key does not match the certificate" in done.stderr
    assert "Traceback" not in done.stderr


def test_tls_options_without_ssl_warn_and_serve_plaintext(pkis) -> None:
    """BMv2 ignores the PEM files and client auth without --grpc-server-ssl, with warnings."""
    args = tls_target_args(pkis[0])
    args.remove("--grpc-server-ssl")
    with open(Path(pkis[0].root) / "stderr.txt", "wb") as err:
        sw = SwitchProcess(["--no-p4", "--control-port", "0", "--", "--grpc-server-addr",
                            "127.0.0.1:0", *args], stderr=err)
        try:
            with grpc.insecure_channel(sw.grpc_addr) as channel:
                assert capabilities(channel).p4runtime_api_version
        finally:
            sw.stop()
    lines = (Path(pkis[0].root) / "stderr.txt").read_text().splitlines()
    assert lines[:2] == ["SSL/TLS is disabled for gRPC server, so provided .pem files will be ignored",
                         "SSL/TLS is disabled for gRPC server, so cannot request client auth"]


def test_tls_options_before_the_separator_are_refused_as_by_bmv2(pkis) -> None:
    done = subprocess.run([sys.executable, "-m", "p4sim", "switch", "--no-p4", "--no-grpc",
                           "--grpc-server-ssl"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("Error while parsing command line arguments: --grpc-server-ssl")
