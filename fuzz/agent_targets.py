"""The adapter between the agent campaign and the agent protocol's current code: start a
live GOR ``FlowRegistry`` and one host's TCCL ``Agent`` on 127.0.0.1 (real gRPC servers,
in this process), and open channels to them as each kind of caller. The campaign itself
(:mod:`fuzz.agent`) knows only the ``.proto`` descriptors and this module's
:class:`AgentTargets`: when the protocol's security changes (mutual TLS, order
nonces), only this file follows it.

Callers (``AgentTargets.dial(service, role)``): ``host`` (this host's credentials),
``other_host`` (another host of the fabric, its own credentials), ``controller`` (GOR's),
``anonymous`` (no credentials), ``forged`` (this host's name with a wrong token).
``authorized(service, role)`` says which may call which service.

Two security modes (:func:`start_targets`): ``tokens`` (the HMAC-token fallback on
plaintext gRPC) and ``mtls`` (what the testbed runs: mutual TLS with the testbed's split
PKI, :func:`testbed.pki.FabricPki.create_split`), where the callers are every identity
the testbed issues (:data:`MTLS_ROLES`: the host, another host, the controller, the
monitor, a switch) besides ``anonymous`` (plaintext) and ``forged`` (this host's name in a
certificate of another CA); each presents its own certificate and trusts every CA of
the PKI (an attacker completes its side of any handshake).

>>> AgentTargets.authorized("FlowRegistry", "host"), AgentTargets.authorized("AgentService", "host")
(True, False)
"""
from __future__ import annotations

import itertools
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import grpc

from astral_proto import agent_pb2
from astral_proto.auth import HostCredentials, call_metadata
from astral_proto.flows import HostFlow, flow_id
from astral_proto.security import CONTROLLER
from controller.registry import FlowRegistry, serve_registry
from host.agent.registry_client import RegistryClient
from host.agent.service import Agent
from astral_proto.tls import MutualTls, TlsFiles
from testbed.pki import FabricPki

SECRET = b"fuzz-fabric-secret"
HOST, OTHER_HOST = "b0s0", "b0s1"
HOST_IPS = {HOST: ["10.0.0.1", "10.0.1.1"], OTHER_HOST: ["10.0.0.2", "10.0.1.2"]}
FABRIC_IPS = [ip for ips in HOST_IPS.values() for ip in ips] + ["10.1.0.1"]
"""The fabric's NICs (the flows' destination 10.1.0.1: a host that never calls)."""
FLOWS = [HostFlow(flow_id(HOST_IPS[HOST][i % 2], "10.1.0.1", 7 + i), HOST_IPS[HOST][i % 2], "10.1.0.1",
                  49152 + i, 7 + i) for i in range(3)]
ROLES = ("host", "other_host", "controller", "anonymous", "forged")
MTLS_ROLES = ("host", "other_host", "controller", "monitor", "switch", "anonymous", "forged")
SWITCH = "b0r0l0"
_ORDER_SEQ = itertools.count(1)


class FakeMover:
    """A :class:`host.agent.mover.FlowMover` whose moves take effect at once."""

    def __init__(self, flows: list[HostFlow]) -> None:
        self._sport = {f.flow_id: f.sport for f in flows}
        self._lock = threading.Lock()

    def current_sport(self, flow_id: str) -> int:
        with self._lock:
            return self._sport[flow_id]

    def move(self, flow_id: str, sport: int) -> None:
        with self._lock:
            self._sport[flow_id] = sport


@dataclass
class AgentTargets:
    """A running registry and agent (see the module docstring); ``close()`` stops both."""

    registry: FlowRegistry
    agent: Agent
    registry_addr: str
    agent_addr: str
    _server: Any = None
    _client: Any = None
    _channels: list[grpc.Channel] = field(default_factory=list)
    mode: str = "tokens"
    #: mtls: role → the caller's Security (MutualTls)
    callers: dict[str, Any] = field(default_factory=dict)

    @property
    def roles(self) -> tuple[str, ...]:
        """The callers of this mode."""
        return MTLS_ROLES if self.mode == "mtls" else ROLES

    @staticmethod
    def authorized(service: str, role: str) -> bool:
        """True when ``role`` may call ``service`` at all."""
        return role in (("host", "other_host") if service == "FlowRegistry" else ("controller",))

    def dial(self, service: str, role: str) -> tuple[grpc.Channel, tuple[tuple[str, str], ...]]:
        """A channel to ``service`` and the metadata ``role`` sends on every call."""
        addr = self.registry_addr if service == "FlowRegistry" else self.agent_addr
        peer = CONTROLLER if service == "FlowRegistry" else HOST
        if self.mode == "mtls" and role in self.callers:
            sec = self.callers[role]
            channel, md = sec.dial(addr, peer), sec.metadata(peer)
        elif role in ("host", "other_host"):
            sec = HostCredentials.derive(SECRET, HOST if role == "host" else OTHER_HOST).security()
            channel, md = sec.dial(addr, peer), sec.metadata(peer)
        elif role == "controller":
            sec = self.registry.security
            channel, md = sec.dial(addr, peer), sec.metadata(peer)
        elif role == "forged":
            channel, md = grpc.insecure_channel(addr), call_metadata(HOST, "0" * 64)
        else:
            channel, md = grpc.insecure_channel(addr), ()
        self._channels.append(channel)
        return channel, tuple(md)

    def valid_request(self, service: str, method: str, pick: int) -> Optional[Any]:
        """A request the target accepts from its authorized caller (``pick`` chooses the
        flow), or None for an RPC this adapter does not know: the campaign sends it, or
        it with one field taken from a drawn message."""
        f = FLOWS[pick % len(FLOWS)]
        if (service, method) == ("AgentService", "MoveFlow"):
            req = agent_pb2.MoveOrder(flow_id=f.flow_id, new_sport=50000 + pick % 10000,
                                      order_id=f"fuzz{next(_ORDER_SEQ)}")
            fields = req.DESCRIPTOR.fields_by_name      # the order's binding, where the proto has it
            if "nonce" in fields:
                req.nonce = secrets.token_hex(16)
            if "target_host" in fields:
                req.target_host = HOST
            if "flow" in fields:
                req.flow.CopyFrom(f.to_proto().tuple)
            if "expires_unix_ms" in fields:
                req.expires_unix_ms = int((time.time() + 30) * 1000)
            return req
        if (service, method) == ("FlowRegistry", "RegisterFlows"):
            return agent_pb2.RegisterRequest(host=HOST, agent_address=self.agent_addr,
                                             incarnation=self.agent.incarnation,
                                             flows=[g.to_proto() for g in FLOWS])
        if (service, method) == ("AgentService", "Status"):
            return agent_pb2.StatusRequest()
        return None

    def registry_state(self) -> tuple:
        """Every registered flow with its owner and addresses."""
        return tuple(sorted((f.flow_id, self.registry.owner(f.flow_id), f.src_ip, f.dst_ip,
                             f.sport, f.qpn, f.bytes) for f in self.registry.flows()))

    def agent_state(self) -> tuple:
        """The agent's flows with their ports in use, and its pending orders."""
        st = self.agent.status()
        return tuple(sorted((s.flow.flow_id, s.flow.tuple.src_port, s.pending_order_id, s.pending_sport)
                            for s in st.flows))

    def settle(self, timeout_s: float = 5.0) -> bool:
        """Wait (bounded) until the agent has no move in progress."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not any(s.pending_order_id for s in self.agent.status().flows):
                return True
            threading.Event().wait(0.005)
        return False

    def reset(self) -> None:
        """Re-register the agent's flows through its own client (the real path)."""
        self.agent.register()

    def close(self) -> None:
        """Stop the agent and the registry, close every channel dialled."""
        for ch in self._channels:
            ch.close()
        self.agent.stop()
        if self._client is not None:
            self._client.close()
        if self._server is not None:
            self._server.stop(0).wait()


def _mtls_callers(work: Path) -> tuple[Any, Any, dict[str, Any]]:
    """The testbed's split PKI under ``work`` (and a stranger's CA): GOR's and the host's
    security, and every caller's (trusting every CA of the PKI)."""
    pki = FabricPki.create_split(work / "pki", {CONTROLLER: "controller", "monitor": "monitor",
                                                SWITCH: "switch", HOST: "host", OTHER_HOST: "host"})
    other = FabricPki.create(work / "stranger", [HOST], ca_name="a stranger's CA")
    every = work / "every-ca.pem"
    every.write_bytes(b"".join(pki.ca_cert(c).read_bytes() for c in ("control", "switches", "hosts")))

    def caller(root: Path, name: str) -> Any:
        f = FabricPki.load(root).files(name)
        return MutualTls(TlsFiles(every, f.cert, f.key))
    callers = {"host": caller(pki.root, HOST), "other_host": caller(pki.root, OTHER_HOST),
               "controller": caller(pki.root, CONTROLLER), "monitor": caller(pki.root, "monitor"),
               "switch": caller(pki.root, SWITCH), "forged": caller(other.root, HOST)}
    return MutualTls.from_dir(pki.root, CONTROLLER), MutualTls.from_dir(pki.root, HOST), callers


def start_targets(mode: str = "tokens", work_dir: Optional[Path] = None) -> AgentTargets:
    """A registry knowing :data:`HOST_IPS` and this host's agent sending :data:`FLOWS`,
    registered: ``tokens`` (the token fallback: plaintext gRPC on 127.0.0.1) or ``mtls``
    (mutual TLS with the testbed's split PKI, made in ``work_dir``)."""
    callers: dict[str, Any] = {}
    if mode == "mtls":
        gor_sec, creds, callers = _mtls_callers(Path(work_dir or tempfile.mkdtemp(prefix="fuzz-agent-")))
        registry = FlowRegistry(gor_sec, HOST_IPS, fabric_ips=FABRIC_IPS)
    elif mode == "tokens":
        registry = FlowRegistry(SECRET, HOST_IPS, fabric_ips=FABRIC_IPS)
        creds = HostCredentials.derive(SECRET, HOST)
    else:
        raise ValueError(f"unknown mode {mode!r} (tokens, mtls)")
    server, registry_addr = serve_registry(registry)
    client = RegistryClient(registry_addr, creds)
    agent = Agent(creds, FakeMover(FLOWS), FLOWS, registry=client)
    agent_addr = agent.start()
    return AgentTargets(registry, agent, registry_addr, agent_addr, server, client, mode=mode,
                        callers=callers)
