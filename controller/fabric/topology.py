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


def nic_attachments(nic: NicLike) -> tuple[tuple[str, int], ...]:
    """``(leaf, leaf port)`` of every port of ``nic``, port order: one for a single-port
    NIC, two for a dual-port one (``topo.model.NicInfo.ports``; a NIC record without
    ``ports`` is single-port).

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> fab = build_fabric(FabricSpec(ports_per_nic=2, leaves_per_rail=2))
    >>> nic_attachments(fab.host("b0s0").nics[0])
    (('b0r0l0', 1), ('b0r0l1', 1))
    """
    ports = getattr(nic, "ports", None)
    if not ports:
        return ((nic.leaf, nic.leaf_port),)
    return tuple((p.leaf, p.leaf_port) for p in ports)


def nic_leaf_sets(fabric: FabricLike) -> tuple[tuple[str, ...], ...]:
    """The sets of leaves that home one NIC together (dual-port NICs: a leaf pair), sorted;
    empty for a fabric of single-port NICs. A spine routes to such a set as to one
    destination, over an ECMP group of its links to every leaf of it
    (:func:`controller.fabric.ecmp.spine_targets`).

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> nic_leaf_sets(build_fabric()), nic_leaf_sets(build_fabric(FabricSpec(
    ...     blocks=1, rails=1, ports_per_nic=2, leaves_per_rail=2)))
    ((), (('b0r0l0', 'b0r0l1'),))
    """
    sets = {tuple(sorted({leaf for leaf, _ in nic_attachments(n)}))
            for h in fabric.hosts for n in h.nics}
    return tuple(sorted(s for s in sets if len(s) > 1))


__all__ = ["FabricLike", "HostLike", "NicLike", "PortLike", "SwitchLike", "nic_attachments",
           "nic_leaf_sets"]
