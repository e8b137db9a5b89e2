"""GOR's orders: sending moves and overrides, following them until the counters confirm
them, retrying and rolling back (see :mod:`controller.gor.loop` for the rules).

:class:`MoveOrders` is built from the loop's :class:`~controller.gor.shared.LoopState` (the
flow registry: the agents; the :class:`~controller.gor.moves.MoveBook` it records every order
in: ``pending``, ``moved``, ``flow_ids``, ``overrides``; the flow table whose digests
confirm a move; the ``LinkState``: names, measured loads; the switch tables it writes
override entries with; the outputs), the :class:`~controller.gor.sampling.Sampling` it turns
on at each new path's first link, and the settings. Its public methods:

* :meth:`MoveOrders.act` — carry out one order of a decision round;
* :meth:`MoveOrders.check` — each tick: agent answers, confirmation, settling, retry,
  rollback of every move in flight;
* :meth:`MoveOrders.delete_override` — delete a flow's override entries (rollback, expiry);
* :meth:`MoveOrders.drain` / :meth:`MoveOrders.close` — wait for / stop the agent calls.

Agent calls (``FlowRegistry.move``, a gRPC round trip) run in a bounded thread pool the
object owns: :meth:`MoveOrders.act` returns at once and :meth:`MoveOrders.check` collects
the outcome on a later tick.

Every call is a new single-use order: ``FlowRegistry.move`` gives it a fresh random nonce,
the owner as target host, the flow's 5-tuple, and ``order_timeout_s`` from now as its
expiry (wall clock), so a retry or a rollback is a new order and an order the call gave up
on is never applied late. An order the agent refuses (replayed, expired, misaddressed,
another host's flow; ``host/agent/guard.py``) fails the call: rolled back, not retried.

Example (fakes for the switches and the registry, see ``tests/controller/test_gor_loop.py``)::

    >>> orders = MoveOrders(state, sampling, LoopSettings(confirm_timeout_s=3.0))  # doctest: +SKIP
    >>> orders.act(decision.orders[0], 1, t_s=1.0, agents=agents, planned=planned)  # doctest: +SKIP
    >>> orders.check(t_s=1.05); orders.close()                         # doctest: +SKIP
"""
from __future__ import annotations

import itertools
import logging
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any, Iterable, Mapping, Optional

from astral_proto.net import peer_text
from controller.gor.decisions import FlowKey, MoveOrder, Order, OverrideOrder
from controller.gor.moves import MoveInFlight
from controller.gor.paths import LinkState
from controller.gor.sampling import Sampling
from controller.gor.shared import LoopSettings, LoopState

log = logging.getLogger("controller.gor.orders")

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


def call_error(exc: BaseException) -> str:
    """One line for a failed agent call: a gRPC error's status code and details, else the
    exception's type and text, whitespace folded, characters that are not printable
    escaped and cut at ``astral_proto.net.PEER_TEXT_CHARS`` (the details are the agent's
    words: its terminal escapes reached the operator's terminal, sec-audit5). A
    ``grpc.RpcError``'s own text is a multi-line repr (``status = …``, ``details = …``, ``debug_error_string = …``) that
    would otherwise land in the terminal, the story's report.md and gor.jsonl; that full
    text goes to the debug log only (logger ``controller.gor.orders``).

    >>> class Gone(Exception):
    ...     def code(self): return type("C", (), {"name": "UNAVAILABLE"})()
    ...     def details(self): return "failed to connect to all addresses;\\n  last error: ENOENT"
    >>> call_error(Gone("<_InactiveRpcError of RPC that terminated with:\\n\\tstatus = ...>"))
    'UNAVAILABLE: failed to connect to all addresses; last error: ENOENT'
    >>> call_error(ConnectionError("agent\\nunreachable"))
    'ConnectionError: agent unreachable'
    """
    code, details = getattr(exc, "code", None), getattr(exc, "details", None)
    text = ""
    if callable(code) and callable(details):
        try:
            text = f"{getattr(code(), 'name', code())}: {details() or ''}"
        except Exception:  # noqa: BLE001 — an RpcError that is not a call's: its type below
            text = ""
    if not text:
        text = f"{type(exc).__name__}: {exc}"
    return peer_text(text)          # one line; an agent's details may hold terminal escapes


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
    """Orders sent, followed, confirmed, retried and rolled back (see the module docstring).

    Settings: ``cooldown_s``: how long a moved flow (old and new 5-tuple) is left alone;
    ``confirm_timeout_s``: how long a move may go unseen on its new link;
    ``order_timeout_s``: the agent call's timeout and the order's lifetime (its expiry);
    ``move_settle_s``: how long a confirmed move stays in flight; ``max_retries``: re-sends of
    a refused or failed order; ``order_workers``: threads for agent calls.
    """

    def __init__(self, state: LoopState, sampling: Sampling, settings: LoopSettings) -> None:
        self.registry, self.book, self.flows, self.links = state.registry, state.book, state.flows, state.links
        self.sampling, self.tables, self._out, self.settings = sampling, state.tables, state.out, settings
        self._order_ids = itertools.count(1)
        self._pool = ThreadPoolExecutor(max_workers=settings.order_workers, thread_name_prefix="gor-order")

    def close(self, wait: bool = False) -> None:
        """Stop the thread pool: calls not started are cancelled, those running finish on
        their own; with ``wait``, every call submitted runs and is waited for (tests)."""
        self._pool.shutdown(wait=wait, cancel_futures=not wait)

    def drain(self, timeout_s: float = 5.0) -> bool:
        """Wait (at most ``timeout_s``) until every agent call in flight has returned;
        True when none is left running. For tests and orderly shutdown: the loop itself
        never waits."""
        futs = [m.future for m in self.book.pending.values() if m.future is not None]
        return not wait_futures(futs, timeout=timeout_s).not_done if futs else True

    # ------------------------------------------------------------------ moves in flight
    def check(self, t_s: float) -> None:
        """Follow every move in flight at ``t_s``: the agent's answer, confirmation by the
        counters, settling, retry, rollback (each tick)."""
        for oid, m in list(self.book.pending.items()):
            if m.seen_s is None and isinstance(m.order, MoveOrder) and not self._agent_state(m, t_s):
                continue                              # closed, or re-sent (a new order id)
            if m.seen_s is not None and isinstance(m.order, MoveOrder) and m.agent_done_s is None:
                # the counters can see the new 5-tuple before the agent's answer is in
                # (GOR acts on the sample's arrival): its report is still recorded
                self._agent_state(m, t_s, confirmed=True)
            if m.seen_s is None and self.flows.seen_since(m.new_flow, m.new_link, m.sent_s):
                m.seen_s = t_s
                self._confirmed(m, t_s)
            if m.seen_s is not None:
                if m.settled(t_s, self.settings.move_settle_s):
                    del self.book.pending[oid]
                    self.sampling.release(m.new_link)
            elif t_s >= m.deadline_s:
                self._undo(m, t_s, f"not seen on {self.links.name(m.new_link)} within "
                                   f"{self.settings.confirm_timeout_s:g} s")

    def _agent_state(self, m: MoveInFlight, t_s: float, confirmed: bool = False) -> bool:
        """Follow the agent's side of a move order; False when the order was closed or
        re-sent here (the caller skips it). ``confirmed``: the move was already seen on
        its new uplink — the agent's report is recorded, nothing is undone or re-sent."""
        fut = m.future
        if fut is not None:
            if not fut.done():
                if t_s >= m.deadline_s and not confirmed:
                    self._close(m, "rolled_back", f"agent did not answer within "
                                                  f"{self.settings.confirm_timeout_s:g} s")
                    return False
                return True
            m.future = None
            try:
                state, reply = fut.result()
            except Exception as exc:  # noqa: BLE001 — an agent that does not answer
                log.debug("%s: agent call for %s failed: %r", m.order_id, m.order.flow, exc)
                return confirmed or self._failed(m, t_s, f"agent call failed: {call_error(exc)}")
            m.registry_order_id = state.order_id
            if not getattr(reply, "accepted", True):
                return confirmed or self._failed(m, t_s, f"refused: {getattr(reply, 'reason', '')}")
        if not m.registry_order_id or m.agent_done_s is not None:
            return True
        try:
            st = self.registry.order(m.registry_order_id)
        except Exception as exc:  # noqa: BLE001
            if confirmed:
                return True
            self._close(m, "rolled_back", f"order lost: {exc}")
            return False
        if st.state == "done":
            m.agent_done_s = t_s
            if self._out.decision_log is not None:
                self._out.decision_log.record("agent_done", order_id=m.order_id, flow=str(m.order.flow),
                                              sport=getattr(st, "reported_sport", None), round=m.round_id)
        elif st.state == "failed" and not confirmed:
            return self._failed(m, t_s, st.error or "failed")
        return True

    def _failed(self, m: MoveInFlight, t_s: float, reason: str) -> bool:
        if m.retries_left > 0 and not reason.startswith("agent call failed"):
            del self.book.pending[m.order_id]
            if self._out.decision_log is not None:
                self._out.decision_log.order_retried(m.order_id, m.order.flow, reason, m.round_id)
            if self._out.metrics is not None:
                self._out.metrics.count_move("retried")
            assert isinstance(m.order, MoveOrder)
            self._send_move(m.order, m.flow_id or "", m.round_id, t_s, m.retries_left - 1)
        else:
            self._close(m, "rolled_back", reason)
        return False

    def _confirmed(self, m: MoveInFlight, t_s: float) -> None:
        if self._out.decision_log is not None:
            self._out.decision_log.record(
                "order_confirmed", order_id=m.order_id, flow=str(m.order.flow),
                new_flow=str(m.new_flow), link=self.links.name(m.new_link),
                seen_s=round(t_s, 3), after_s=round(t_s - m.sent_s, 3),
                measured=self.links.utils_pct(m.order.path.links), round=m.round_id)
        if self._out.metrics is not None:
            self._out.metrics.count_move("confirmed")

    def _close(self, m: MoveInFlight, outcome: str, reason: str) -> None:
        self.book.pending.pop(m.order_id, None)
        self.sampling.release(m.new_link)
        if self._out.decision_log is not None:
            self._out.decision_log.order_rolled_back(m.order_id, m.order.flow, reason, m.round_id)
        if self._out.metrics is not None:
            self._out.metrics.count_move(outcome)

    def _undo(self, m: MoveInFlight, t_s: float, reason: str) -> None:
        """Roll back a move the counters did not confirm: the agent goes back to the old
        port (fire and forget), override entries are deleted."""
        o = m.order
        if isinstance(o, MoveOrder) and m.flow_id and self.registry is not None:
            fid, sport = m.flow_id, o.flow.sport
            back = {} if o.nic_port is None else {"nic_port": o.old_nic_port}   # its old NIC port too
            self._pool.submit(self.registry.move, fid, sport, timeout_s=self.settings.order_timeout_s,
                              **back)
        elif isinstance(o, OverrideOrder):
            self.delete_override(o.flow, [e.switch for e in o.entries])
            self.book.overrides.pop(o.flow, None)
        self._close(m, "rolled_back", reason)

    # ------------------------------------------------------------------ sending
    def act(self, order: Order, rid: int, t_s: float,
            agents: Mapping[tuple[str, str, int, int], str], planned: LinkState) -> None:
        """Carry out one order of round ``rid``: log ``path_chosen`` (predicted and
        ``planned`` loads), then send a move to the flow's agent (``agents``: (src, dst,
        sport, dport) → registry flow id) or write an override."""
        f = order.flow
        if self._out.decision_log is not None:
            self._out.decision_log.path_chosen(
                str(f), _path_nodes(order.old_path, self.links), _path_nodes(order.path, self.links),
                {self.links.name(l): round(100 * u, 2) for l, u in order.predicted_util.items()},
                planned.utils_pct(order.path.links), rid)
        if isinstance(order, MoveOrder):
            fid = agents.get((f.src, f.dst, f.sport, f.dport))
            if fid is None:
                self._out.error(f"{f}: no registered flow for a move order")
                return
            self._send_move(order, fid, rid, t_s, self.settings.max_retries)
        elif isinstance(order, OverrideOrder):
            self._send_override(order, rid, t_s)

    def _track(self, m: MoveInFlight, t_s: float) -> None:
        self.book.pending[m.order_id] = m
        self.book.rest(m.order.flow, t_s + self.settings.cooldown_s)
        self.book.rest(m.new_flow, t_s + self.settings.cooldown_s)
        if m.new_link not in self.sampling:
            # written by the loop once the round's orders are out (Sampling.flush): the
            # round's next order does not wait for it
            self.sampling.request(m.new_link, t_s)

    def _send_move(self, order: MoveOrder, fid: str, rid: int, t_s: float, retries: int) -> None:
        """Hand the agent call to the thread pool; the loop goes on."""
        host: Optional[str] = None
        try:
            host = self.registry.owner(fid)
        except Exception:  # noqa: BLE001
            pass
        oid = f"move-{next(self._order_ids)}"
        m = MoveInFlight(oid, fid, order, rid, t_s, t_s + self.settings.confirm_timeout_s, retries,
                         host=host)
        by_port = {} if order.nic_port is None else {"nic_port": order.nic_port}   # a dual-port NIC
        m.future = self._pool.submit(self.registry.move, fid, order.new_sport,
                                     timeout_s=self.settings.order_timeout_s, **by_port)
        self.book.flow_ids[m.new_flow] = fid
        if self._out.decision_log is not None:
            self._out.decision_log.order_sent(oid, str(order.flow), host=host, sport=order.new_sport,
                                              new_path=_path_nodes(order.path, self.links), round_id=rid,
                                              **by_port)
        if self._out.metrics is not None:
            self._out.metrics.count_move("sent")
        self._track(m, t_s)

    def delete_override(self, flow: FlowKey, switches: Iterable[str]) -> None:
        """Delete ``flow``'s override entry on each of ``switches`` (a switch that does not
        answer is reported and skipped)."""
        for sw in switches:
            try:
                self.tables.delete(sw, OVERRIDE_TABLE, override_match(flow))
            except Exception as exc:  # noqa: BLE001
                log.debug("%s: override rollback of %s failed: %r", sw, flow, exc)
                self._out.error(f"{sw}: override rollback of {flow} failed: {call_error(exc)}")

    def _send_override(self, order: OverrideOrder, rid: int, t_s: float) -> None:
        oid = f"override-{next(self._order_ids)}"
        f = order.flow
        out = self._out
        if out.decision_log is not None:
            out.decision_log.order_sent(oid, str(f), override=True,
                                        new_path=_path_nodes(order.path, self.links), round_id=rid)
        if out.metrics is not None:
            out.metrics.count_move("sent")
        written: list[str] = []
        for e in order.entries:
            try:
                self.tables.write(e.switch, OVERRIDE_TABLE, override_match(f), OVERRIDE_ACTION,
                                  {"nexthop_id": e.nexthop_id})
            except Exception as exc:  # noqa: BLE001 — undo what was written, go on
                log.debug("%s: override of %s failed: %r", e.switch, f, exc)
                out.error(f"{e.switch}: override of {f} failed: {call_error(exc)}")
                self.delete_override(f, written)
                if out.decision_log is not None:
                    out.decision_log.order_rolled_back(oid, str(f), f"{e.switch}: {type(exc).__name__}",
                                                       rid)
                if out.metrics is not None:
                    out.metrics.count_move("rolled_back")
                return
            written.append(e.switch)
        self.book.overrides[f] = order.path
        self._track(MoveInFlight(oid, None, order, rid, t_s, t_s + self.settings.confirm_timeout_s), t_s)


__all__ = ["MoveOrders", "call_error", "OVERRIDE_ACTION", "OVERRIDE_TABLE", "override_match"]
