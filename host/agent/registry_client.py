"""The host's client of GOR's ``FlowRegistry``: register flows, report finished moves.

>>> from astral_proto.auth import HostCredentials
>>> client = RegistryClient("127.0.0.1:1", HostCredentials.derive(b"s", "b0s0"))
>>> client.close()
"""
from __future__ import annotations

from typing import Iterable

import grpc

from astral_proto import agent_pb2, agent_pb2_grpc
from astral_proto.auth import HostCredentials, call_metadata
from astral_proto.flows import HostFlow


class RegistryClient:
    """Calls the controller's registry at ``address`` as ``creds.host`` (its host token)."""

    def __init__(self, address: str, creds: HostCredentials, *, timeout_s: float = 5.0) -> None:
        self.address = address
        self.creds = creds
        self.timeout_s = timeout_s
        self._channel = grpc.insecure_channel(address)
        self._stub = agent_pb2_grpc.FlowRegistryStub(self._channel)
        self._md = call_metadata(creds.host, creds.host_token)

    def register(self, flows: Iterable[HostFlow], *, agent_address: str, incarnation: str) -> int:
        """Register the host's complete flow set; returns how many the registry holds."""
        req = agent_pb2.RegisterRequest(host=self.creds.host, agent_address=agent_address,
                                        incarnation=incarnation,
                                        flows=[f.to_proto() for f in flows])
        reply = self._stub.RegisterFlows(req, metadata=self._md, timeout=self.timeout_s,
                                         wait_for_ready=True)
        return int(reply.registered)

    def report_move(self, order_id: str, fid: str, *, done: bool, sport: int, error: str = "") -> None:
        """Tell GOR that order ``order_id`` took effect (``done``) or why it did not."""
        rep = agent_pb2.MoveReport(host=self.creds.host, order_id=order_id, flow_id=fid, done=done,
                                   sport=sport, error=error)
        self._stub.ReportMove(rep, metadata=self._md, timeout=self.timeout_s, wait_for_ready=True)

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()
