"""Expiry of override entries: a flow that ended must not keep its pinned path forever.

GOR writes ``FabricIngress.override.flows`` entries for flows whose host has no agent
(and adopts a predecessor's at restart). The table has no per-entry counter or idle
timeout, so GOR decides from what it sees itself (:class:`OverrideExpiry`, mixed into
:class:`controller.gor.loop.GorLoop`, run every tick):

1. **Seen**: a digest of the flow's 5-tuple on any link (``FlowTable``) refreshes it.
2. **Idle**: a flow unseen for ``override_idle_s`` (default 10 s; counted from when GOR
   wrote or adopted the entry if it was never sampled) gets a *liveness probe*: sampling
   is turned on (``one_in_n`` of the loop) at the first link of its pinned path, where
   every packet of the flow must pass, for ``override_probe_s`` (default 1 s).
3. **Expired**: no digest of it during the probe → its entries are deleted on every
   switch of the path (the flow, if it ever comes back, follows ECMP again),
   ``override_expired`` in the decision log. A digest during the probe → it is alive,
   the clock restarts.

A move in flight for the flow (a just-written override) is never expired. While the probe
runs, the link's sampling entry stays (``_confirming``); afterwards it is released unless
something else needs it.

Example (fakes for the switches, ``tests/controller/test_gor_expiry.py``)::

    >>> loop = GorLoop(fabric, programmer, None, override_idle_s=10.0)   # doctest: +SKIP
    >>> loop.tick(12.0, samples); loop.tick(13.1, samples)               # doctest: +SKIP
    >>> loop.overrides                                                   # doctest: +SKIP
    {}
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from controller.gor.decisions import FlowKey, LinkKey, OverrideOrder, PathChoice
from controller.gor.elephants import FlowTable
from controller.gor.log import DecisionLog
from controller.gor.moves import MoveInFlight

DEFAULT_OVERRIDE_IDLE_S = 10.0
DEFAULT_OVERRIDE_PROBE_S = 1.0


class OverrideExpiry:
    """Idle override entries expire after a liveness probe (see the module docstring)."""

    engine: Any
    flows: FlowTable
    decision_log: Optional[DecisionLog]
    overrides: dict[FlowKey, PathChoice]
    pending: dict[str, MoveInFlight]
    sampling: dict[LinkKey, int]
    override_idle_s: float
    override_probe_s: float
    override_seen: dict[FlowKey, float]             # flow → last evidence it is alive
    liveness: dict[FlowKey, tuple[LinkKey, float]]  # flow → (probed link, since)

    if TYPE_CHECKING:  # provided by the other parts of GorLoop
        def link_name(self, link: LinkKey) -> str: ...
        def _enable_sampling(self, key: LinkKey, t_s: float = 0.0) -> bool: ...
        def _release_sampling(self, link: LinkKey) -> None: ...
        def _delete_override(self, flow: FlowKey, switches: Any) -> None: ...

    def last_seen(self, flow: FlowKey) -> Optional[float]:
        """When a digest of ``flow`` was last taken on any link (None: not in the table)."""
        links = self.flows.flows.get(flow)
        return max(fl.last_seen_s for fl in links.values()) if links else None

    def _expire_overrides(self, t_s: float) -> None:
        in_flight = {m.order.flow for m in self.pending.values() if isinstance(m.order, OverrideOrder)}
        for flow in [f for f in self.override_seen if f not in self.overrides]:
            self._end_probe(flow)
            del self.override_seen[flow]
        for flow, path in list(self.overrides.items()):
            seen = self.last_seen(flow)
            last = max(self.override_seen.get(flow, t_s), seen if seen is not None else -1.0)
            self.override_seen[flow] = last
            probe = self.liveness.get(flow)
            if flow in in_flight or t_s - last < self.override_idle_s:
                if probe is not None and (flow in in_flight or last >= probe[1]):
                    self._end_probe(flow)           # seen during the probe: alive
                continue
            if probe is None:
                link = path.links[0]
                if link in self.sampling or self._enable_sampling(link, t_s):
                    self.liveness[flow] = (link, t_s)
                continue
            if t_s - probe[1] < self.override_probe_s:
                continue
            self._expire(flow, path, t_s - last)

    def _end_probe(self, flow: FlowKey) -> None:
        probe = self.liveness.pop(flow, None)
        if probe is not None:
            self._release_sampling(probe[0])

    def _expire(self, flow: FlowKey, path: PathChoice, idle_s: float) -> None:
        switches = [e.switch for e in self.engine.override_entries(path)]
        self._delete_override(flow, switches)
        del self.overrides[flow]
        self.override_seen.pop(flow, None)
        probe = self.liveness.get(flow)
        self._end_probe(flow)
        if self.decision_log is not None:
            self.decision_log.record(
                "override_expired", flow=str(flow), switches=switches, idle_s=round(idle_s, 3),
                probe_link=self.link_name(probe[0]) if probe else None)


__all__ = ["DEFAULT_OVERRIDE_IDLE_S", "DEFAULT_OVERRIDE_PROBE_S", "OverrideExpiry"]
