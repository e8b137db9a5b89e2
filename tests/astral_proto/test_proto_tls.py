"""astral_proto.tls: loading a party's files, and a call over mutual TLS on a Unix socket
and on TCP: the server learns the caller's name from its certificate, the client checks
the server's name."""
from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from astral_proto import agent_pb2, agent_pb2_grpc
from astral_proto.security import listen
from astral_proto.tls import MutualTls, TlsFiles
from testbed.pki import FabricPki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pki")
    FabricPki.create(root, ["controller", "b0s0"])
    return root


class WhoAmI(agent_pb2_grpc.AgentServiceServicer):
    """Status answers with the caller's name as the server's security reads it."""

    def __init__(self, security: MutualTls) -> None:
        self.security = security

    def Status(self, request: agent_pb2.StatusRequest, context: grpc.ServicerContext) -> agent_pb2.StatusReply:
        return agent_pb2.StatusReply(host=self.security.caller(context) or "<nobody>")


@pytest.fixture(params=["unix", "tcp"])
def server(request: pytest.FixtureRequest, pki: Path, tmp_path: Path) -> Iterator[str]:
    sec = MutualTls.from_dir(pki, "b0s0")
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    agent_pb2_grpc.add_AgentServiceServicer_to_server(WhoAmI(sec), srv)
    address = listen(srv, sec, f"unix:{tmp_path / 's.sock'}" if request.param == "unix" else "127.0.0.1:0")
    srv.start()
    yield address
    srv.stop(0).wait()


def test_the_server_names_the_caller_by_its_certificate(pki: Path, server: str) -> None:
    gor = MutualTls.from_dir(pki, "controller")
    with gor.dial(server, "b0s0") as channel:
        reply = agent_pb2_grpc.AgentServiceStub(channel).Status(agent_pb2.StatusRequest(), timeout=5.0)
    assert reply.host == "controller"


def test_the_client_checks_the_servers_name(pki: Path, server: str) -> None:
    gor = MutualTls.from_dir(pki, "controller")
    with gor.dial(server, "b1s0") as channel:        # b0s0 listens there, not b1s0
        with pytest.raises(grpc.RpcError) as err:
            agent_pb2_grpc.AgentServiceStub(channel).Status(agent_pb2.StatusRequest(), timeout=2.0)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


def test_loading_errors_name_the_file(pki: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nobody.pem: cannot read the certificate"):
        MutualTls.from_dir(pki, "nobody")
    with pytest.raises(ValueError, match="names 'b0s0', not 'b1s0'"):
        MutualTls.from_dir(_renamed(pki, tmp_path, "b0s0", "b1s0"), "b1s0")
    (tmp_path / "junk.pem").write_text("not a certificate")
    with pytest.raises(ValueError, match="not a PEM certificate"):
        MutualTls(TlsFiles(pki / "ca.pem", tmp_path / "junk.pem", pki / "b0s0.key"))


def _renamed(pki: Path, root: Path, name: str, as_name: str) -> Path:
    """A PKI directory where ``name``'s files are stored as ``as_name``'s."""
    d = root / "renamed"
    d.mkdir()
    (d / "ca.pem").write_bytes((pki / "ca.pem").read_bytes())
    (d / f"{as_name}.pem").write_bytes((pki / f"{name}.pem").read_bytes())
    (d / f"{as_name}.key").write_bytes((pki / f"{name}.key").read_bytes())
    return d
