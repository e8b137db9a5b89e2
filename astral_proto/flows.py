"""The flow record of the agent protocol, shared by hosts and GOR: :class:`HostFlow`, flow ids.

A flow is identified fabric-wide by :func:`flow_id` — sender IP, destination IP and
destination QP number, the same key the NIC receiver uses, so it survives source-port moves.

>>> f = HostFlow(flow_id("10.0.0.1", "10.1.0.1", 7), "10.0.0.1", "10.1.0.1", 49152, 7, 1 << 20)
>>> f.flow_id, f.to_proto().tuple.dst_port
('10.0.0.1>10.1.0.1/qp7', 4791)
>>> HostFlow.from_proto(f.to_proto()) == f
True
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from astral_proto import agent_pb2

ROCE_UDP_PORT = 4791
IPPROTO_UDP = 17


def flow_id(src_ip: str, dst_ip: str, qpn: int) -> str:
    """The default fabric-wide id of a flow.

    >>> flow_id("10.0.0.1", "10.1.0.1", 7)
    '10.0.0.1>10.1.0.1/qp7'
    """
    return f"{src_ip}>{dst_ip}/qp{qpn}"


@dataclass(frozen=True, slots=True)
class HostFlow:
    """One flow a host sends: ``HostFlow("f1", "10.0.0.1", "10.1.0.1", 49152, 7)``.

    ``sport`` is the UDP source port in use; ``bytes`` 0 means open-ended.
    ``moved_s_ago``: seconds since the flow's agent completed a move order for it (None:
    never moved); it is not part of the flow's identity (equality ignores it).
    ``nic_port``: the port of a dual-port NIC the flow sends on now (None: a NIC of one
    port, or not said); not part of the identity either (a move may change it).

        >>> f = HostFlow("f", "1.1.1.1", "2.2.2.2", 1, 7).with_move_age(2.5)
        >>> HostFlow.from_proto(f.to_proto()).moved_s_ago, f == f.with_move_age(None)
        (2.5, True)
        >>> HostFlow.from_proto(f.with_nic_port(1).to_proto()).nic_port, f.nic_port
        (1, None)
    """

    flow_id: str
    src_ip: str
    dst_ip: str
    sport: int
    qpn: int
    bytes: int = 0
    priority: int = 3
    dst_port: int = ROCE_UDP_PORT
    moved_s_ago: Optional[float] = field(default=None, compare=False)
    nic_port: Optional[int] = field(default=None, compare=False)

    def with_nic_port(self, nic_port: Optional[int]) -> "HostFlow":
        """The same flow, sending on port ``nic_port`` of its NIC (None: not said)."""
        return replace(self, nic_port=nic_port)

    def with_move_age(self, moved_s_ago: Optional[float]) -> "HostFlow":
        """The same flow, moved ``moved_s_ago`` seconds ago (None: never)."""
        return replace(self, moved_s_ago=moved_s_ago)

    def with_sport(self, sport: int) -> "HostFlow":
        """The same flow on another source port.

        >>> HostFlow("f", "1.1.1.1", "2.2.2.2", 1, 7).with_sport(2).sport
        2
        """
        return replace(self, sport=sport)

    def to_proto(self) -> agent_pb2.Flow:
        """The wire form."""
        m = agent_pb2.Flow(
            flow_id=self.flow_id,
            tuple=agent_pb2.FiveTuple(src_ip=self.src_ip, dst_ip=self.dst_ip, src_port=self.sport,
                                      dst_port=self.dst_port, protocol=IPPROTO_UDP),
            qpn=self.qpn, bytes=self.bytes, priority=self.priority,
            moved=self.moved_s_ago is not None,
            ms_since_move=min(0xFFFFFFFF, max(0, round((self.moved_s_ago or 0.0) * 1000))))
        if self.nic_port is not None:
            m.nic_port = self.nic_port
        return m

    @classmethod
    def from_proto(cls, m: agent_pb2.Flow) -> "HostFlow":
        """Parse the wire form."""
        t = m.tuple
        return cls(m.flow_id, t.src_ip, t.dst_ip, t.src_port, m.qpn, m.bytes, m.priority,
                   t.dst_port, m.ms_since_move / 1000.0 if m.moved else None,
                   m.nic_port if m.HasField("nic_port") else None)
