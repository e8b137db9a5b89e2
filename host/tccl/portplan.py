"""The records of TCCL's source-port solver: what to place (:class:`FlowRequest`), what was
chosen (:class:`FlowPlan`, :class:`PortPlan`) and the constants they share.

The solver itself is :class:`host.tccl.ports.PortPlanner`; every name here is also
importable from :mod:`host.tccl.ports`.

Example::

    >>> req = FlowRequest("f0", "10.0.0.1", "10.1.0.1", "b0r0l0", LEAF_UPLINK_GROUP, "b1r0l0")
    >>> req.dport == ROCE_DPORT
    True
"""
from __future__ import annotations

from dataclasses import dataclass

from p4src.hashmodel import Flow

ROCE_DPORT = 4791
PROTO_UDP = 17
LEAF_UPLINK_GROUP = 1          # the leaves' uplink group id in the published model
DEFAULT_PORT_RANGE = (49152, 65535)

Colour = tuple[str, int]       # (spine name, parallel-link index j)


class PortPlanError(ValueError):
    """A flow set or hash model the solver cannot use; the message names the flow."""


@dataclass(frozen=True, slots=True)
class FlowRequest:
    """One concurrent flow to place: ``FlowRequest("f0", "10.0.0.1", "10.1.0.1", "b0r0l0", 1, "b1r0l0")``.

    ``leaf``/``leaf_group``: the first ECMP hop (source leaf and its uplink group; a
    route of the leaf in the model, e.g. a detour around a spine that lost ``dst_leaf``,
    overrides the group: :func:`host.tccl.hops.leaf_group_of`); ``dst_leaf``: the leaf of
    the destination NIC (the spine hop is found in the model).
    """

    name: str
    src: str
    dst: str
    leaf: str
    leaf_group: int
    dst_leaf: str
    dport: int = ROCE_DPORT


@dataclass(frozen=True, slots=True)
class FlowPlan:
    """The chosen source port of one flow and its predicted path.

    ``hops`` are the ECMP hops ``[(switch, group_id), ...]`` the port was solved for;
    ``path`` the member taken at each (what :func:`p4src.hashmodel.predict_path` says);
    ``links`` the loaded links ``(switch, member or destination leaf)`` of both tiers.

        >>> FlowPlan("f0", "10.0.0.1", "10.1.0.1", 50000, ROCE_DPORT, (("l0", 1),), ("s0",),
        ...          (("l0", "s0"), ("s0", "l1"))).flow.sport
        50000
    """

    name: str
    src: str
    dst: str
    sport: int
    dport: int
    hops: tuple[tuple[str, int], ...]
    path: tuple[str, ...]
    links: tuple[tuple[str, str], ...]
    moved: bool = True

    @property
    def flow(self) -> Flow:
        """The 5-tuple: ``plan.flow.sport == plan.sport``."""
        return Flow.of(self.src, self.dst, PROTO_UDP, self.sport, self.dport)


@dataclass(slots=True)
class PortPlan:
    """The result of :meth:`host.tccl.ports.PortPlanner.plan`: one :class:`FlowPlan` per
    flow (input order), the load of every link, and each link's cap
    ``ceil(flows at the hop / links)``.

        >>> PortPlan([], {("l0", "s0"): 2}, {("l0", "s0"): 2}).max_link_load
        2
    """

    flows: list[FlowPlan]
    link_loads: dict[tuple[str, str], int]
    link_caps: dict[tuple[str, str], int]
    balanced: bool = True

    @property
    def max_link_load(self) -> int:
        """The busiest link's flow count (0 without flows)."""
        return max(self.link_loads.values(), default=0)

    def by_name(self) -> dict[str, FlowPlan]:
        """The flow plans by flow name."""
        return {f.name: f for f in self.flows}

    @property
    def moved(self) -> list[str]:
        """Names of the flows whose port changed (all of them on a first plan)."""
        return [f.name for f in self.flows if f.moved]


__all__ = ["Colour", "DEFAULT_PORT_RANGE", "FlowPlan", "FlowRequest", "LEAF_UPLINK_GROUP", "PROTO_UDP",
           "PortPlan", "PortPlanError", "ROCE_DPORT"]
