"""Expiry of override entries: a flow that ended must not keep its pinned path forever.

GOR writes ``FabricIngress.override.flows`` entries for flows whose host has no agent
(and adopts a predecessor's at restart). The table has no per-entry counter or idle
timeout, so GOR decides from what it sees itself (:class:`OverrideExpiry`, owned by
:class:`controller.gor.loop.GorLoop`, :meth:`OverrideExpiry.check` run every tick):

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
runs, the link's sampling entry stays (:meth:`OverrideExpiry.probing` is part of what the
loop's ``Sampling.needed`` asks); afterwards it is released unless something else needs it.

It is built from the loop's :class:`~controller.gor.shared.LoopState` (the path engine: a
path's override entries; the ``LinkState``: link names; the flow table: when a flow was last
sampled; the ``MoveBook``: ``overrides``, moves in flight; the outputs), the
:class:`~controller.gor.sampling.Sampling`, ``delete_override`` (delete a flow's entries on
some switches: :meth:`controller.gor.orders.MoveOrders.delete_override`) and the settings.

Example (fakes for the switches, ``tests/controller/test_gor_expiry.py``)::

    >>> loop = GorLoop(fabric, programmer, None, LoopSettings(override_idle_s=10.0))   # doctest: +SKIP
    >>> loop.tick(12.0, samples); loop.tick(13.1, samples)               # doctest: +SKIP
    >>> loop.book.overrides                                              # doctest: +SKIP
    {}
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from controller.gor.decisions import FlowKey, LinkKey, OverrideOrder, PathChoice
from controller.gor.sampling import Sampling
from controller.gor.shared import LoopSettings, LoopState


class OverrideExpiry:
    """Idle override entries expire after a liveness probe (see the module docstring).
    Settings: ``override_idle_s`` (unseen that long, a flow is probed) and
    ``override_probe_s`` (the probe's length)."""

    def __init__(self, state: LoopState, sampling: Sampling,
                 delete_override: Callable[[FlowKey, Iterable[str]], None], settings: LoopSettings) -> None:
        self.engine, self.links, self.flows, self.book = state.engine, state.links, state.flows, state.book
        self.sampling, self._delete_override, self._out, self.settings = sampling, delete_override, state.out, settings
        self.seen: dict[FlowKey, float] = {}                     # flow → last evidence it is alive
        self.liveness: dict[FlowKey, tuple[LinkKey, float]] = {}  # flow → (probed link, since)

    def probing(self, link: LinkKey) -> bool:
        """A liveness probe samples on ``link``."""
        return any(l == link for l, _ in self.liveness.values())

    def last_seen(self, flow: FlowKey) -> Optional[float]:
        """When a digest of ``flow`` was last taken on any link (None: not in the table)."""
        links = self.flows.flows.get(flow)
        return max(fl.last_seen_s for fl in links.values()) if links else None

    def check(self, t_s: float) -> None:
        """Refresh, probe or expire every override at ``t_s`` (each tick)."""
        overrides = self.book.overrides
        in_flight = {m.order.flow for m in self.book.pending.values() if isinstance(m.order, OverrideOrder)}
        for flow in [f for f in self.seen if f not in overrides]:
            self._end_probe(flow)
            del self.seen[flow]
        for flow, path in list(overrides.items()):
            seen = self.last_seen(flow)
            last = max(self.seen.get(flow, t_s), seen if seen is not None else -1.0)
            self.seen[flow] = last
            probe = self.liveness.get(flow)
            if flow in in_flight or t_s - last < self.settings.override_idle_s:
                if probe is not None and (flow in in_flight or last >= probe[1]):
                    self._end_probe(flow)           # seen during the probe: alive
                continue
            if probe is None:
                link = path.links[0]
                if link in self.sampling or self.sampling.enable(link, t_s):
                    self.liveness[flow] = (link, t_s)
                continue
            if t_s - probe[1] < self.settings.override_probe_s:
                continue
            self._expire(flow, path, t_s - last)

    def _end_probe(self, flow: FlowKey) -> None:
        probe = self.liveness.pop(flow, None)
        if probe is not None:
            self.sampling.release(probe[0])

    def _expire(self, flow: FlowKey, path: PathChoice, idle_s: float) -> None:
        switches = [e.switch for e in self.engine.override_entries(path, flow.dst)]
        self._delete_override(flow, switches)
        del self.book.overrides[flow]
        self.seen.pop(flow, None)
        probe = self.liveness.get(flow)
        self._end_probe(flow)
        if self._out.decision_log is not None:
            self._out.decision_log.record(
                "override_expired", flow=str(flow), switches=switches, idle_s=round(idle_s, 3),
                probe_link=self.links.name(probe[0]) if probe else None)


__all__ = ["OverrideExpiry"]
