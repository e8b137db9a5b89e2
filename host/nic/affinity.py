"""A dual-port NIC's tx-port affinity: which of its ports each QP sends on — the Linux
bonding driver's ``layer3+4`` hash, round robin, or a port set per QP (pure logic, no I/O;
:mod:`host.nic.bond` runs the bond, :mod:`host.tccl.dualport` plans with the same hash).

The hash, reduced modulo the number of ports: ``h = ports ^ saddr ^ daddr; h ^= h >> 16;
h ^= h >> 8; h >>= 1; port = h % n`` where ``ports`` is the UDP source and destination
ports as one 32-bit word, the words read from the packet's bytes as the kernel does on a
little-endian host (x86-64). Sources: Linux commit 32819dc18348 "bonding: modify the old
and add new xmit hash policies" and b5f862180d70 "bonding: discard lowest hash bit for
802.3ad layer3+4"; Documentation/networking/bonding.rst (``xmit_hash_policy``, "modulo
slave count"). ``policy="rr"`` binds QPs round robin in creation order, as mlx5's RoCE LAG
does for RC QPs (``get_tx_affinity_rr``); :meth:`TxAffinity.bind` sets a QP's port as
rdma-core's ``mlx5dv_modify_qp_lag_port()`` allows.

>>> src, dst = "10.0.0.1", "10.1.0.1"
>>> [TxAffinity().port_of(FlowKey.of(src, dst, sport, 4791)) for sport in range(49152, 49160)]
[0, 0, 1, 1, 0, 0, 1, 1]
"""
from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from typing import Optional

TX_POLICIES = ("layer3+4", "rr")
ETH_HEADER = 14
ETHERTYPE_IPV4 = 0x0800
PROTO_UDP = 17


def l34_hash(src_ip: bytes, dst_ip: bytes, sport: int, dport: int) -> int:
    """The bonding driver's layer3+4 hash of an IPv4/UDP flow (module docstring), before
    the modulo; addresses as 4 network-order bytes.

    >>> l34_hash(bytes([10, 0, 0, 1]), bytes([10, 1, 0, 1]), 49152, 4791)
    1540543026
    """
    h = int.from_bytes(struct.pack("!HH", sport, dport), "little")
    h ^= int.from_bytes(dst_ip, "little") ^ int.from_bytes(src_ip, "little")
    h ^= h >> 16
    h ^= h >> 8
    return h >> 1


@dataclass(frozen=True, slots=True)
class FlowKey:
    """A QP's 5-tuple as the bond sees it (IPv4/UDP): ``FlowKey.of("10.0.0.1", "10.1.0.1", 49152, 4791)``."""

    src_ip: bytes
    dst_ip: bytes
    sport: int
    dport: int

    @classmethod
    def of(cls, src_ip: str, dst_ip: str, sport: int, dport: int = 4791) -> "FlowKey":
        """From dotted addresses."""
        return cls(socket.inet_aton(src_ip), socket.inet_aton(dst_ip), sport, dport)

    @classmethod
    def from_frame(cls, frame: bytes) -> Optional["FlowKey"]:
        """The key of an Ethernet/IPv4/UDP frame, None for anything else (PAUSE, ARP...).

        >>> f = bytes(12) + b"\\x08\\x00" + bytes([0x45]) + bytes(8) + bytes([17]) + bytes(2) \\
        ...     + bytes([10, 0, 0, 1, 10, 1, 0, 1]) + struct.pack("!HH", 49152, 4791)
        >>> FlowKey.from_frame(f) == FlowKey.of("10.0.0.1", "10.1.0.1", 49152)
        True
        """
        if len(frame) < ETH_HEADER + 20 or frame[12:14] != b"\x08\x00":
            return None
        ihl = (frame[ETH_HEADER] & 0x0F) * 4
        if frame[ETH_HEADER + 9] != PROTO_UDP or len(frame) < ETH_HEADER + ihl + 4:
            return None
        sport, dport = struct.unpack_from("!HH", frame, ETH_HEADER + ihl)
        return cls(frame[ETH_HEADER + 12:ETH_HEADER + 16], frame[ETH_HEADER + 16:ETH_HEADER + 20],
                   sport, dport)

    def __str__(self) -> str:
        return (f"{socket.inet_ntoa(self.src_ip)}:{self.sport}->"
                f"{socket.inet_ntoa(self.dst_ip)}:{self.dport}")


@dataclass(slots=True)
class TxAffinity:
    """Which port (0..ports−1) each QP is bound to: the layer3+4 hash or round robin
    (``policy``), or what :meth:`bind` set for it.

    >>> a = TxAffinity(policy="rr")
    >>> k1, k2 = FlowKey.of("10.0.0.1", "10.1.0.1", 1), FlowKey.of("10.0.0.1", "10.1.0.1", 2)
    >>> a.port_of(k1), a.port_of(k2), a.port_of(k1)
    (0, 1, 0)
    >>> a.bind(k1, 1); a.port_of(k1)
    1
    """

    policy: str = "layer3+4"
    ports: int = 2
    pinned: dict[FlowKey, int] = field(default_factory=dict)
    _rr: dict[FlowKey, int] = field(default_factory=dict)
    _rr_next: int = 0

    def __post_init__(self) -> None:
        if self.policy not in TX_POLICIES:
            raise ValueError(f"tx policy {self.policy!r}: one of {', '.join(TX_POLICIES)}")
        if self.ports < 1:
            raise ValueError(f"ports {self.ports}: a NIC has at least one port")

    def bind(self, key: FlowKey, port: int) -> None:
        """Bind the QP of ``key`` to ``port`` (``mlx5dv_modify_qp_lag_port``); ValueError
        for a port the NIC does not have."""
        if not 0 <= port < self.ports:
            raise ValueError(f"port {port}: the NIC has ports 0..{self.ports - 1}")
        self.pinned[key] = port

    def forget(self, key: FlowKey) -> None:
        """Drop what is known of ``key`` (its pin, its round-robin port): a QP that left
        that 5-tuple for good. Without it every move left one entry behind, and a table
        that grows with every order a NIC ever applied has no bound (sec-audit3).

        >>> a = TxAffinity(); k = FlowKey.of("10.0.0.1", "10.1.0.1", 49152)
        >>> a.bind(k, 1); a.forget(k); len(a.pinned), a.port_of(k)
        (0, 0)
        """
        self.pinned.pop(key, None)
        self._rr.pop(key, None)

    def port_of(self, key: FlowKey) -> int:
        """The QP's port (its logical affinity, whatever the links' state)."""
        if key in self.pinned:
            return self.pinned[key]
        if self.policy == "rr":
            port = self._rr.get(key)
            if port is None:                 # creation order, also after forget()
                port = self._rr[key] = self._rr_next % self.ports
                self._rr_next += 1
            return port
        return l34_hash(key.src_ip, key.dst_ip, key.sport, key.dport) % self.ports


__all__ = ["ETH_HEADER", "ETHERTYPE_IPV4", "FlowKey", "PROTO_UDP", "TX_POLICIES", "TxAffinity", "l34_hash"]
