"""The topology contract of the fabric plan: what the planner reads of a topology.

``topo.model`` owns the topology (``Fabric``, ``SwitchInfo``, ``PortInfo``, ``HostInfo``,
``NicInfo``); the controller never needs more of it than these protocols, so a test or a
simulator may hand the planner any object with these attributes.

Example::

    >>> from topo.model import build_fabric
    >>> fab: FabricLike = build_fabric()
    >>> sorted(s.role for s in fab.switches)[0]
    'leaf'
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Protocol, Sequence


class PortLike(Protocol):
    """What is read of a ``topo.model.PortInfo``."""

    port: int
    peer_node: str
    peer_port: int
    kind: str
    mac: str


class SwitchLike(Protocol):
    """What is read of a ``topo.model.SwitchInfo`` (``switch_id`` is optional)."""

    name: str
    role: str
    block: Optional[int]
    rail: Optional[int]
    device_id: int
    grpc_addr: str
    election_id: Any
    ports: Mapping[int, PortLike]
    router_mac: str
    ecmp_seed: int
    hash_algorithm: str


class NicLike(Protocol):
    """What is read of a ``topo.model.NicInfo``."""

    rail: int
    ip: str
    prefix_len: int
    mac: str
    gateway_ip: str
    leaf: str
    leaf_port: int


class HostLike(Protocol):
    """What is read of a ``topo.model.HostInfo``."""

    name: str
    block: int
    nics: Sequence[NicLike]


class FabricLike(Protocol):
    """What is read of a ``topo.model.Fabric``."""

    switches: Sequence[SwitchLike]
    hosts: Sequence[HostLike]


__all__ = ["FabricLike", "HostLike", "NicLike", "PortLike", "SwitchLike"]
