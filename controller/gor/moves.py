"""Moves in flight: the orders GOR has sent and not yet seen settle, and their effect on
the loads the next decision round plans on.

A move is *in flight* from the moment its order is sent until its flow's traffic has
been seen on the new path's first link (a ``flow_sample_t`` digest of the new 5-tuple
there: the counters confirm it) and one more ``settle_s`` has passed (so that every
measured load the next round reads already contains the move). While in flight the
telemetry still shows the flow on its old path, so :func:`apply_in_flight` moves its
rate from the old path's links to the new one's in a copy of the link state: a round
never plans on loads that ignore the previous round. :class:`MoveBook` holds the moves in
flight with the other records of what GOR has moved (cooldowns, registry ids, overrides),
the one piece of state the loop's orders, rounds, expiry, reconciliation and restarts share.

>>> from controller.gor.decisions import FlowKey, MoveOrder, PathChoice
>>> ls = LinkState({("l", 1): 100.0, ("l", 2): 100.0}, {}, {("l", 1): 90.0, ("l", 2): 10.0})
>>> old, new = PathChoice("s0", (("l", 1),)), PathChoice("s1", (("l", 2),))
>>> m = MoveInFlight("move-1", None, MoveOrder(FlowKey("a", "b", 17, 1, 2), 7, new, {}, old, 30.0), 1, 0.0, 3.0)
>>> apply_in_flight(ls, [m]).load_bps
{('l', 1): 60.0, ('l', 2): 40.0}
>>> m.new_flow.sport, m.new_link
(7, ('l', 2))
"""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from controller.gor.decisions import FlowKey, LinkKey, MoveOrder, Order, PathChoice
from controller.gor.paths import LinkState


@dataclass(slots=True)
class MoveInFlight:
    """One order between sending and settling (see the module docstring).

    ``order_id`` is GOR's own id (``move-N`` / ``override-N``); ``registry_order_id`` the
    registry's once the agent call returned; ``future`` the agent call running in the
    loop's thread pool; ``agent_done_s`` when the agent reported the new port in use;
    ``seen_s`` when the counters saw the flow on its new link.
    """

    order_id: str
    flow_id: Optional[str]
    order: Order
    round_id: int
    sent_s: float
    deadline_s: float
    retries_left: int = 0
    future: Optional["Future[Any]"] = None
    registry_order_id: str = ""
    agent_done_s: Optional[float] = None
    seen_s: Optional[float] = None
    host: Optional[str] = None

    @property
    def new_flow(self) -> FlowKey:
        """The 5-tuple the flow has once moved (a new source port for a move order)."""
        o = self.order
        return o.flow.with_sport(o.new_sport) if isinstance(o, MoveOrder) else o.flow

    @property
    def new_link(self) -> LinkKey:
        """The first link of the new path (where the counters must see the flow)."""
        return self.order.path.links[0]

    def settled(self, t_s: float, settle_s: float) -> bool:
        """Seen on the new link at least ``settle_s`` ago."""
        return self.seen_s is not None and t_s - self.seen_s >= settle_s


@dataclass(slots=True)
class MoveBook:
    """The flows GOR has acted on, shared by the parts of the loop that send, plan around,
    re-install, adopt or expire them.

    ``pending``: order id → :class:`MoveInFlight` (sent, not yet seen and settled);
    ``moved``: 5-tuple (old and new) → time until which no round moves it again
    (``cooldown_s``); ``flow_ids``: a moved flow's new 5-tuple → its registry flow id;
    ``overrides``: 5-tuple → the path its override entries pin (written or adopted).

    >>> book = MoveBook()
    >>> book.rest(FlowKey("a", "b", 17, 1, 2), until_s=10.0); book.resting(FlowKey("a", "b", 17, 1, 2), 9.0)
    True
    >>> book.age(10.5); book.moved
    {}
    """

    pending: dict[str, MoveInFlight] = field(default_factory=dict)
    moved: dict[FlowKey, float] = field(default_factory=dict)
    flow_ids: dict[FlowKey, str] = field(default_factory=dict)
    overrides: dict[FlowKey, PathChoice] = field(default_factory=dict)

    def rest(self, flow: FlowKey, until_s: float) -> None:
        """Leave ``flow`` alone until ``until_s``."""
        self.moved[flow] = until_s

    def resting(self, flow: FlowKey, t_s: float) -> bool:
        """``flow`` must not be moved at ``t_s`` (moved, or adopted, too recently)."""
        return self.moved.get(flow, float("-inf")) >= t_s

    def confirming(self, link: LinkKey) -> bool:
        """A move in flight must still be seen (or settle) on ``link``."""
        return any(m.new_link == link for m in self.pending.values())

    def age(self, t_s: float) -> None:
        """Forget the flows whose rest ended before ``t_s`` (and their registry ids)."""
        for f in [f for f, until in self.moved.items() if until < t_s]:
            del self.moved[f]
            self.flow_ids.pop(f, None)


def apply_in_flight(links: LinkState, moves: Iterable[MoveInFlight]) -> LinkState:
    """A copy of ``links`` whose loads have every in-flight move's rate taken off its old
    path and put on its new one (a link never goes below 0); ``down`` is shared."""
    load = dict(links.load_bps)
    for m in moves:
        o = m.order
        old = set(o.old_path.links) if o.old_path is not None else set()
        new = set(o.path.links)
        for link in old - new:
            load[link] = max(0.0, load.get(link, 0.0) - o.rate_bps)
        for link in new - old:
            load[link] = load.get(link, 0.0) + o.rate_bps
    return LinkState(links.capacity_bps, links.peer, load, links.down, links.capacity_pps)


__all__ = ["MoveBook", "MoveInFlight", "apply_in_flight"]
