"""The host's client of GOR's ``FlowRegistry``: register flows, report finished moves.

The channel is dialled with the host's :class:`~astral_proto.security.Security`: with
mutual TLS the host presents its certificate and checks that the registry's names
``controller``; with the token fallback (a ``HostCredentials``) it sends its host token.

>>> from astral_proto.auth import HostCredentials
>>> client = RegistryClient("127.0.0.1:1", HostCredentials.derive(b"s", "b0s0"))
>>> client.host
'b0s0'
>>> client.close()
"""
from __future__ import annotations

from typing import Iterable, Optional, Union

from astral_proto import agent_pb2, agent_pb2_grpc
from astral_proto.auth import HostCredentials
from astral_proto.flows import HostFlow
from astral_proto.security import CONTROLLER, Security


class RegistryClient:
    """Calls the controller's registry at ``address`` as the host ``security`` names."""

    def __init__(self, address: str, security: Union[Security, HostCredentials], *,
                 timeout_s: float = 5.0) -> None:
        self.address = address
        self.security: Security = (security.security() if isinstance(security, HostCredentials)
                                   else security)
        self.host = self.security.name
        self.timeout_s = timeout_s
        self._channel = self.security.dial(address, CONTROLLER)
        self._stub = agent_pb2_grpc.FlowRegistryStub(self._channel)
        self._md = self.security.metadata(CONTROLLER)

    def register(self, flows: Iterable[HostFlow], *, agent_address: str, incarnation: str) -> int:
        """Register the host's complete flow set; returns how many the registry holds."""
        req = agent_pb2.RegisterRequest(host=self.host, agent_address=agent_address,
                                        incarnation=incarnation,
                                        flows=[f.to_proto() for f in flows])
        reply = self._stub.RegisterFlows(req, metadata=self._md, timeout=self.timeout_s,
                                         wait_for_ready=True)
        return int(reply.registered)

    def report_move(self, order_id: str, fid: str, *, done: bool, sport: int, error: str = "",
                    nic_port: Optional[int] = None) -> None:
        """Tell GOR that order ``order_id`` took effect (``done``) or why it did not;
        ``nic_port``: the NIC port the flow sends on (a dual-port NIC)."""
        rep = agent_pb2.MoveReport(host=self.host, order_id=order_id, flow_id=fid, done=done,
                                   sport=sport, error=error)
        if nic_port is not None:
            rep.nic_port = nic_port
        self._stub.ReportMove(rep, metadata=self._md, timeout=self.timeout_s, wait_for_ready=True)

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()
