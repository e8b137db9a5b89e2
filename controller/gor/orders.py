"""GOR's orders: sending moves and overrides, following them until the counters confirm
them, retrying and rolling back (the order half of :class:`controller.gor.loop.GorLoop`).

:class:`MoveOrders` is a mixin: it works on the loop's state — ``pending`` (order id →
:class:`~controller.gor.moves.MoveInFlight`), ``moved`` (5-tuples left alone until a
time), ``flow_ids`` (a moved flow's new 5-tuple → registry flow id), ``overrides``,
``flows`` (the :class:`~controller.gor.elephants.FlowTable` whose digests confirm a
move), ``registry``, ``decision_log``, ``metrics`` and the thread pool ``_pool`` — and on
its sampling and table helpers. See the loop's module docstring for the rules.

Agent calls (``FlowRegistry.move``, a gRPC round trip) run in the bounded thread pool:
:meth:`MoveOrders._send_move` returns at once and :meth:`MoveOrders._check_pending`
collects the outcome on a later tick.
"""
from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional

from controller.gor.alarms import AlarmMonitor
from controller.gor.decisions import AlarmLevel, FlowKey, LinkKey, MoveOrder, OverrideOrder, PathChoice
from controller.gor.elephants import FlowTable
from controller.gor.log import DecisionLog
from controller.gor.metrics import GorMetrics
from controller.gor.moves import MoveInFlight
from controller.gor.paths import LinkState

OVERRIDE_TABLE = "FabricIngress.override.flows"
OVERRIDE_ACTION = "FabricIngress.override.set_nexthop"


def override_match(flow: FlowKey) -> dict[str, Any]:
    """The ``FabricIngress.override.flows`` key of a 5-tuple.

    >>> override_match(FlowKey("10.0.0.1", "10.1.0.1", 17, 49152, 4791))["hdr.udp.src_port"]
    49152
    """
    return {"hdr.ipv4.src_addr": flow.src, "hdr.ipv4.dst_addr": flow.dst,
            "hdr.ipv4.protocol": flow.proto, "hdr.udp.src_port": flow.sport,
            "hdr.udp.dst_port": flow.dport}


def _path_nodes(path: Any, links: Any) -> list[str]:
    """``["b0r0l0", "s1", "b1r0l0"]`` for a leaf → spine → leaf path."""
    if path is None:
        return []
    nodes = [path.links[0][0], path.spine]
    peer = links.peer.get(path.links[-1])
    if peer is not None:
        nodes.append(peer[0])
    return nodes


class MoveOrders:
    """Order sending and confirmation, mixed into :class:`controller.gor.loop.GorLoop`."""

    # state and settings owned by the loop (see GorLoop.__init__)
    registry: Any
    decision_log: Optional[DecisionLog]
    metrics: Optional[GorMetrics]
    alarms: AlarmMonitor
    flows: FlowTable
    links: LinkState
    sampling: dict[LinkKey, int]
    pending: dict[str, MoveInFlight]
    overrides: dict[FlowKey, PathChoice]
    moved: dict[FlowKey, float]
    flow_ids: dict[FlowKey, str]
    cooldown_s: float
    confirm_timeout_s: float
    order_timeout_s: float
    settle_s: float
    max_retries: int
    _order_ids: "itertools.count[int]"
    _pool: ThreadPoolExecutor

    # helpers the loop provides
    if TYPE_CHECKING:  # provided by the other parts of GorLoop (stubs here would shadow them)
        def link_name(self, link: LinkKey) -> str: ...
        def _utils(self, links: Iterable[LinkKey], state: Optional[LinkState] = None) -> dict[str, float]: ...
        def _error(self, msg: str) -> None: ...
        def _conn(self, switch: str) -> Any: ...
        def _write(self, switch: str, table: str, match: Mapping[str, Any], action: str,
                   params: Mapping[str, Any]) -> None: ...
        def _enable_sampling(self, key: LinkKey, t_s: float = 0.0) -> bool: ...
        def _disable_sampling(self, key: LinkKey) -> None: ...
        def _confirming(self, link: LinkKey) -> bool: ...


    def drain_orders(self, timeout_s: float = 5.0) -> bool:
        """Wait (at most ``timeout_s``) until every agent call in flight has returned;
        True when none is left running. For tests and orderly shutdown: the loop itself
        never waits."""
        from concurrent.futures import wait  # noqa: PLC0415
        futs = [m.future for m in self.pending.values() if m.future is not None]
        return not wait(futs, timeout=timeout_s).not_done if futs else True

    # ------------------------------------------------------------------ 4 moves in flight
    def _check_pending(self, t_s: float) -> None:
        for oid, m in list(self.pending.items()):
            if m.seen_s is None and isinstance(m.order, MoveOrder) and not self._agent_state(m, t_s):
                continue                              # closed, or re-sent (a new order id)
            if m.seen_s is None and self.flows.seen_since(m.new_flow, m.new_link, m.sent_s):
                m.seen_s = t_s
                self._confirmed(m, t_s)
            if m.seen_s is not None:
                if m.settled(t_s, self.settle_s):
                    del self.pending[oid]
                    self._release_sampling(m.new_link)
            elif t_s >= m.deadline_s:
                self._undo(m, t_s, f"not seen on {self.link_name(m.new_link)} within "
                                   f"{self.confirm_timeout_s:g} s")

    def _agent_state(self, m: MoveInFlight, t_s: float) -> bool:
        """Follow the agent's side of a move order; False when the order was closed or
        re-sent here (the caller skips it)."""
        fut = m.future
        if fut is not None:
            if not fut.done():
                if t_s >= m.deadline_s:
                    self._close(m, "rolled_back", f"agent did not answer within "
                                                  f"{self.confirm_timeout_s:g} s")
                    return False
                return True
            m.future = None
            try:
                state, reply = fut.result()
            except Exception as exc:  # noqa: BLE001 — an agent that does not answer
                return self._failed(m, t_s, f"agent call failed: {type(exc).__name__}: {exc}")
            m.registry_order_id = state.order_id
            if not getattr(reply, "accepted", True):
                return self._failed(m, t_s, f"refused: {getattr(reply, 'reason', '')}")
        if not m.registry_order_id or m.agent_done_s is not None:
            return True
        try:
            st = self.registry.order(m.registry_order_id)
        except Exception as exc:  # noqa: BLE001
            self._close(m, "rolled_back", f"order lost: {exc}")
            return False
        if st.state == "done":
            m.agent_done_s = t_s
            if self.decision_log is not None:
                self.decision_log.record("agent_done", order_id=m.order_id, flow=str(m.order.flow),
                                         sport=getattr(st, "reported_sport", None), round=m.round_id)
        elif st.state == "failed":
            return self._failed(m, t_s, st.error or "failed")
        return True

    def _failed(self, m: MoveInFlight, t_s: float, reason: str) -> bool:
        if m.retries_left > 0 and not reason.startswith("agent call failed"):
            del self.pending[m.order_id]
            if self.decision_log is not None:
                self.decision_log.order_retried(m.order_id, m.order.flow, reason, m.round_id)
            if self.metrics is not None:
                self.metrics.count_move("retried")
            assert isinstance(m.order, MoveOrder)
            self._send_move(m.order, m.flow_id or "", m.round_id, t_s, m.retries_left - 1)
        else:
            self._close(m, "rolled_back", reason)
        return False

    def _confirmed(self, m: MoveInFlight, t_s: float) -> None:
        if self.decision_log is not None:
            self.decision_log.record(
                "order_confirmed", order_id=m.order_id, flow=str(m.order.flow),
                new_flow=str(m.new_flow), link=self.link_name(m.new_link),
                seen_s=round(t_s, 3), after_s=round(t_s - m.sent_s, 3),
                measured=self._utils(m.order.path.links), round=m.round_id)
        if self.metrics is not None:
            self.metrics.count_move("confirmed")

    def _close(self, m: MoveInFlight, outcome: str, reason: str) -> None:
        self.pending.pop(m.order_id, None)
        self._release_sampling(m.new_link)
        if self.decision_log is not None:
            self.decision_log.order_rolled_back(m.order_id, m.order.flow, reason, m.round_id)
        if self.metrics is not None:
            self.metrics.count_move(outcome)

    def _undo(self, m: MoveInFlight, t_s: float, reason: str) -> None:
        """Roll back a move the counters did not confirm: the agent goes back to the old
        port (fire and forget), override entries are deleted."""
        o = m.order
        if isinstance(o, MoveOrder) and m.flow_id and self.registry is not None:
            fid, sport = m.flow_id, o.flow.sport
            self._pool.submit(self.registry.move, fid, sport, timeout_s=self.order_timeout_s)
        elif isinstance(o, OverrideOrder):
            self._delete_override(o.flow, [e.switch for e in o.entries])
            self.overrides.pop(o.flow, None)
        self._close(m, "rolled_back", reason)

    def _release_sampling(self, link: LinkKey) -> None:
        if (link in self.sampling and not self._confirming(link)
                and self.alarms.level(link) == AlarmLevel.CLEAR):
            self._disable_sampling(link)

    # ------------------------------------------------------------------ 6 orders
    def _act(self, order: Any, rid: int, t_s: float,
             agents: Mapping[tuple[str, str, int, int], str], planned: LinkState) -> None:
        f = order.flow
        if self.decision_log is not None:
            self.decision_log.path_chosen(
                str(f), _path_nodes(order.old_path, self.links), _path_nodes(order.path, self.links),
                {self.link_name(l): round(100 * u, 2) for l, u in order.predicted_util.items()},
                self._utils(order.path.links, planned), rid)
        if isinstance(order, MoveOrder):
            fid = agents.get((f.src, f.dst, f.sport, f.dport))
            if fid is None:
                self._error(f"{f}: no registered flow for a move order")
                return
            self._send_move(order, fid, rid, t_s, self.max_retries)
        elif isinstance(order, OverrideOrder):
            self._send_override(order, rid, t_s)

    def _track(self, m: MoveInFlight, t_s: float) -> None:
        self.pending[m.order_id] = m
        self.moved[m.order.flow] = t_s + self.cooldown_s
        self.moved[m.new_flow] = t_s + self.cooldown_s
        if m.new_link not in self.sampling:
            self._enable_sampling(m.new_link, t_s)

    def _send_move(self, order: MoveOrder, fid: str, rid: int, t_s: float, retries: int) -> None:
        """Hand the agent call to the thread pool; the loop goes on."""
        host: Optional[str] = None
        try:
            host = self.registry.owner(fid)
        except Exception:  # noqa: BLE001
            pass
        oid = f"move-{next(self._order_ids)}"
        m = MoveInFlight(oid, fid, order, rid, t_s, t_s + self.confirm_timeout_s, retries,
                         host=host)
        m.future = self._pool.submit(self.registry.move, fid, order.new_sport,
                                     timeout_s=self.order_timeout_s)
        self.flow_ids[m.new_flow] = fid
        if self.decision_log is not None:
            self.decision_log.order_sent(oid, str(order.flow), host=host, sport=order.new_sport,
                                         new_path=_path_nodes(order.path, self.links), round_id=rid)
        if self.metrics is not None:
            self.metrics.count_move("sent")
        self._track(m, t_s)

    def _delete_override(self, flow: FlowKey, switches: Iterable[str]) -> None:
        for sw in switches:
            try:
                conn = self._conn(sw)
                conn.delete(conn.table_entry(OVERRIDE_TABLE, override_match(flow)))
            except Exception as exc:  # noqa: BLE001
                self._error(f"{sw}: override rollback of {flow} failed: {exc}")

    def _send_override(self, order: OverrideOrder, rid: int, t_s: float) -> None:
        oid = f"override-{next(self._order_ids)}"
        f = order.flow
        if self.decision_log is not None:
            self.decision_log.order_sent(oid, str(f), override=True,
                                         new_path=_path_nodes(order.path, self.links), round_id=rid)
        if self.metrics is not None:
            self.metrics.count_move("sent")
        written: list[str] = []
        for e in order.entries:
            try:
                self._write(e.switch, OVERRIDE_TABLE, override_match(f), OVERRIDE_ACTION,
                            {"nexthop_id": e.nexthop_id})
            except Exception as exc:  # noqa: BLE001 — undo what was written, go on
                self._error(f"{e.switch}: override of {f} failed: {type(exc).__name__}: {exc}")
                self._delete_override(f, written)
                if self.decision_log is not None:
                    self.decision_log.order_rolled_back(oid, str(f), f"{e.switch}: {type(exc).__name__}",
                                                        rid)
                if self.metrics is not None:
                    self.metrics.count_move("rolled_back")
                return
            written.append(e.switch)
        self.overrides[f] = order.path
        self._track(MoveInFlight(oid, None, order, rid, t_s, t_s + self.confirm_timeout_s), t_s)


__all__ = ["MoveOrders", "OVERRIDE_ACTION", "OVERRIDE_TABLE", "override_match"]
