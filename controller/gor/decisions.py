"""Typed records of GOR's decision core: what it decided, why, and what it predicted.

These records are the contract between the pure decision core (``alarms``, ``elephants``,
``paths``, ``simulate``) and the parts that act and explain (the order sender, the
decision log, ``python -m controller status``). Every record has ``to_dict()`` giving
JSON-ready plain data for the structured decision log.

Identifiers used everywhere:

* :data:`LinkKey` — one *direction* of a fabric link, named by its egress port:
  ``("b0r0l0", 3)`` is leaf ``b0r0l0``'s port 3 towards its peer (the telemetry's
  ``LinkId(switch, port, ...)`` has the same two fields).
* :class:`FlowKey` — a 5-tuple with dotted-quad addresses.

Example::

    >>> f = FlowKey("10.0.0.1", "10.1.0.1", 17, 49152, 4791)
    >>> str(f)
    '10.0.0.1:49152->10.1.0.1:4791/17'
    >>> p = PathChoice("s1", (("b0r0l0", 4), ("s1", 1)))
    >>> MoveOrder(f, 50001, p, {("b0r0l0", 4): 0.4}).to_dict()["new_sport"]
    50001
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, NamedTuple, Optional, Union

from p4src.hashmodel import Flow

LinkKey = tuple[str, int]
"""One direction of a link: ``(switch, egress port)``."""


class AlarmLevel(IntEnum):
    """Congestion alarm of one link direction, from its ECN-mark rate (see ``alarms``).

    >>> AlarmLevel.CRITICAL > AlarmLevel.WARNING
    True
    """

    CLEAR = 0
    NOTICE = 1
    WARNING = 2
    CRITICAL = 3


class FlowKey(NamedTuple):
    """A flow's 5-tuple: ``FlowKey("10.0.0.1", "10.1.0.1", 17, 49152, 4791)``."""

    src: str
    dst: str
    proto: int
    sport: int
    dport: int

    @classmethod
    def of_ints(cls, src: int, dst: int, proto: int, sport: int, dport: int) -> "FlowKey":
        """From digest integers: ``FlowKey.of_ints(167772161, 167837697, 17, 1, 4791).src == "10.0.0.1"``."""
        return cls(str(ipaddress.IPv4Address(src)), str(ipaddress.IPv4Address(dst)), proto, sport, dport)

    @property
    def flow(self) -> Flow:
        """The hash model's :class:`p4src.hashmodel.Flow` of this 5-tuple."""
        return Flow.of(self.src, self.dst, self.proto, self.sport, self.dport)

    def with_sport(self, sport: int) -> "FlowKey":
        """The same flow with another source port."""
        return self._replace(sport=sport)

    def __str__(self) -> str:
        return f"{self.src}:{self.sport}->{self.dst}:{self.dport}/{self.proto}"


@dataclass(frozen=True, slots=True)
class PathChoice:
    """A leaf → spine → leaf path as the directed links it loads, in order.

    >>> PathChoice("s0", (("b0r0l0", 3), ("s0", 2))).links[0]
    ('b0r0l0', 3)
    """

    spine: str
    links: tuple[LinkKey, ...]

    def __str__(self) -> str:
        return " ".join(f"{s}:{p}" for s, p in self.links)


@dataclass(frozen=True, slots=True)
class AlarmEvent:
    """A link's alarm level changed at ``t_s`` (mark rate = CE marks per transmitted packet).

    >>> AlarmEvent(("s0", 1), 2.0, AlarmLevel.CLEAR, AlarmLevel.WARNING, 0.06).raised
    True
    """

    link: LinkKey
    t_s: float
    old: AlarmLevel
    new: AlarmLevel
    mark_rate: float

    @property
    def raised(self) -> bool:
        """``True`` when the level went up."""
        return self.new > self.old

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the decision log."""
        return {"event": "alarm", "link": list(self.link), "t_s": self.t_s, "old": self.old.name,
                "new": self.new.name, "mark_rate": self.mark_rate}


def _loads(d: dict[LinkKey, float]) -> list[list[Any]]:
    return [[s, p, round(u, 4)] for (s, p), u in sorted(d.items())]


@dataclass(frozen=True, slots=True)
class MoveOrder:
    """Move ``flow`` (whose owner has a TCCL agent) by changing its source port.

    ``predicted_util`` is the utilisation (0..1) of every link of ``path`` with the flow
    there, as the path engine predicted it; ``old_path`` is where it was (when known).
    ``nic_port``: the order also re-binds the flow's QP to this port of its dual-port NIC
    (``path`` then starts at that port's leaf); ``old_nic_port`` the port it leaves (a
    rollback's target). None for a source-port move.

    >>> f = FlowKey("10.0.0.1", "10.0.2.1", 17, 49152, 4791)
    >>> MoveOrder(f, 49152, PathChoice("s2", (("b0r0l1", 3),)), {}, nic_port=1, old_nic_port=0
    ...           ).to_dict()["nic_port"]
    1
    """

    flow: FlowKey
    new_sport: int
    path: PathChoice
    predicted_util: dict[LinkKey, float]
    old_path: Optional[PathChoice] = None
    rate_bps: float = 0.0
    nic_port: Optional[int] = None
    old_nic_port: Optional[int] = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the decision log."""
        d: dict[str, Any] = {"order": "move", "flow": str(self.flow), "new_sport": self.new_sport,
                             "path": str(self.path),
                             "old_path": str(self.old_path) if self.old_path else None,
                             "rate_bps": self.rate_bps, "predicted_util": _loads(self.predicted_util)}
        if self.nic_port is not None:
            d.update(nic_port=self.nic_port, old_nic_port=self.old_nic_port)
        return d


@dataclass(frozen=True, slots=True)
class OverrideEntry:
    """One ``FabricIngress.override.flows`` entry: pin the flow on ``switch`` to next hop
    ``nexthop_id`` (the fabric's next-hop ids are port numbers)."""

    switch: str
    nexthop_id: int


@dataclass(frozen=True, slots=True)
class OverrideOrder:
    """Pin ``flow`` (whose owner has no agent) to ``path`` with override-table entries."""

    flow: FlowKey
    entries: tuple[OverrideEntry, ...]
    path: PathChoice
    predicted_util: dict[LinkKey, float]
    old_path: Optional[PathChoice] = None
    rate_bps: float = 0.0

    @property
    def nexthop(self) -> int:
        """The next hop on the source leaf (the first entry)."""
        return self.entries[0].nexthop_id

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the decision log."""
        return {"order": "override", "flow": str(self.flow),
                "entries": [[e.switch, e.nexthop_id] for e in self.entries], "path": str(self.path),
                "old_path": str(self.old_path) if self.old_path else None, "rate_bps": self.rate_bps,
                "predicted_util": _loads(self.predicted_util)}


Order = Union[MoveOrder, OverrideOrder]


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a flow was not moved (``path`` is None when no candidate was left at all).

    Reasons: ``"no-path"`` (no live candidate), ``"safety"`` (a link over the threshold),
    ``"hotspot"`` (the flow-level simulation found a new hotspot), ``"no-port"`` (no source
    port reaches the path), ``"no-gain"`` (the best candidate is not better than staying).
    """

    flow: FlowKey
    reason: str
    path: Optional[PathChoice] = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the decision log."""
        return {"flow": str(self.flow), "reason": self.reason,
                "path": str(self.path) if self.path else None, "detail": self.detail}


@dataclass(slots=True)
class RoundDecision:
    """Everything one decision round produced, for the decision log.

    ``baseline_max_util`` / ``predicted_max_util``: the busiest link in the flow-level
    simulation before and after the accepted moves.
    """

    t_s: float
    trigger: Optional[LinkKey]
    orders: list[Order] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    baseline_max_util: float = 0.0
    predicted_max_util: float = 0.0
    elapsed_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the decision log."""
        return {"event": "decision", "t_s": self.t_s,
                "trigger": list(self.trigger) if self.trigger else None,
                "orders": [o.to_dict() for o in self.orders],
                "rejected": [r.to_dict() for r in self.rejected],
                "baseline_max_util": round(self.baseline_max_util, 4),
                "predicted_max_util": round(self.predicted_max_util, 4),
                "elapsed_s": self.elapsed_s}


__all__ = ["AlarmEvent", "AlarmLevel", "FlowKey", "LinkKey", "MoveOrder", "Order", "OverrideEntry",
           "OverrideOrder", "PathChoice", "Rejection", "RoundDecision"]
