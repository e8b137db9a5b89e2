"""Test helpers for the agent protocol: the parties (GOR, hosts, a switch) with their
:class:`~astral_proto.security.Security`, over mutual TLS with a throw-away CA (the
default) or the HMAC-token fallback, and a controller's stub to an agent."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import grpc

from astral_proto import agent_pb2_grpc
from astral_proto.auth import ControllerTokens, HostCredentials
from astral_proto.security import CONTROLLER, Metadata, Security
from astral_proto.tls import MutualTls
from testbed.pki import FabricPki

SECRET = b"test-fabric-secret"
HOST_IPS = {"b0s0": ["10.0.0.1", "10.0.1.1"], "b1s0": ["10.1.0.1", "10.1.1.1"]}
NAMES = [CONTROLLER, "b0s0", "b1s0", "b0r0l0"]     # b0r0l0: a switch (not a host)


def make_pki(root: Path, ca_name: str = "astral-p4 test CA") -> FabricPki:
    """A CA and a certificate for every party of :data:`NAMES` under ``root``."""
    return FabricPki.create(root, NAMES, ca_name=ca_name)


@dataclass(frozen=True)
class Parties:
    """Each party's security: ``kind`` ``mtls`` (certificates under ``pki_root``) or
    ``tokens`` (the fabric secret :data:`SECRET`)."""

    kind: str
    pki_root: Optional[Path] = None

    def of(self, name: str) -> Security:
        """The security of party ``name`` (``controller`` or a host)."""
        if self.kind == "mtls":
            assert self.pki_root is not None
            return MutualTls.from_dir(self.pki_root, name)
        if name == CONTROLLER:
            return ControllerTokens(SECRET)
        return HostCredentials.derive(SECRET, name).security()


def agent_stub(security: Security, address: str, peer: str,
               ) -> tuple[agent_pb2_grpc.AgentServiceStub, Metadata, grpc.Channel]:
    """A stub to the agent of ``peer`` at ``address`` dialled with ``security``, the
    metadata to send, and the channel (close it)."""
    channel = security.dial(address, peer)
    return agent_pb2_grpc.AgentServiceStub(channel), security.metadata(peer), channel


def plaintext_agent_stub(address: str) -> tuple[agent_pb2_grpc.AgentServiceStub, grpc.Channel]:
    """A stub to an agent over a plaintext channel (what TLS must refuse)."""
    channel = grpc.insecure_channel(address)
    return agent_pb2_grpc.AgentServiceStub(channel), channel
