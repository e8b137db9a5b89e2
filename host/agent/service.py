"""The TCCL agent: the per-host gRPC ``AgentService`` GOR sends move orders to.

An :class:`Agent` serves ``AgentService`` on the host's management address, registers the
host's flows with GOR's ``FlowRegistry`` when it starts (a new *incarnation* each start, so
the registry can tell a restart) and, with ``register_every_s``, again every period (so a
restarted controller gets every flow back, with the port in use now), applies ``MoveFlow`` orders through a
:class:`~host.agent.mover.FlowMover`, and reports each order back with ``ReportMove`` once
the flow's packets carry the new port (a watcher thread polls the mover).

Who may call: only the party named ``controller`` (:data:`astral_proto.security.CONTROLLER`).
With mutual TLS (the default, :class:`astral_proto.tls.MutualTls`) that is the common name
of the caller's certificate; with the token fallback, GOR's order token for this host.
Status codes a caller sees: ``UNAUTHENTICATED`` for a caller with no identity (no or a bad
token; a client without a certificate of the fabric CA never gets past the TLS
handshake), ``PERMISSION_DENIED`` for an authenticated caller that is not the controller;
an order the :class:`~host.agent.guard.OrderGuard` refuses (replayed, expired,
misaddressed, another host's flow, malformed) gets that refusal's status and reason, and
is logged. A bad port or order id is a reply with ``accepted=False`` and a reason.

>>> from astral_proto.auth import HostCredentials
>>> from astral_proto.flows import HostFlow
>>> class Fake:
...     def current_sport(self, fid): return 49152
...     def move(self, fid, sport): pass
>>> agent = Agent(HostCredentials.derive(b"s", "b0s0"), Fake(),
...               [HostFlow("f1", "10.0.0.1", "10.1.0.1", 49152, 7)], registry=None)
>>> agent.order("f1", 0, "o1").reason
'new_sport must be 1..65535'
>>> agent.order("f1", 49153, "o2", nic_port=1).reason     # the fake has no NIC ports
'nic_port 1: this NIC has one port'
>>> agent.order("f1", 49153, "o3", nic_port=0).accepted   # its one port: a plain move
True

An order with ``nic_port`` (a dual-port NIC, issue 29) also re-binds the flow's QP to that
port of the NIC (:meth:`host.agent.mover.QPMover.move_port`): the flow then leaves through
the NIC's other leaf. It is done (reported) once the new source port and the new NIC port
are both in use; the report carries the port (``MoveReport.nic_port``) and every
registration the port each flow sends on (``Flow.nic_port``), so GOR knows each flow's
source leaf. The guard's checks are the same as for any order: only GOR may send it, and
only about this host's own flows.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from concurrent import futures
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional, Union

import grpc

from astral_proto import agent_pb2, agent_pb2_grpc
from astral_proto.auth import HostCredentials
from astral_proto.flows import HostFlow
from astral_proto.net import MAX_AGENT_REQUEST_BYTES, REQUEST_WAIT_S, first_request, server_options
from astral_proto.security import CONTROLLER, Security, listen
from host.agent.guard import OrderGuard, OrderRefused
from host.agent.mover import FlowMover, PortMover
from host.agent.registry_client import RegistryClient

log = logging.getLogger(__name__)

AGENT_SERVICE = agent_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name
"""``astral.agent.v1.AgentService``, from the generated descriptor."""


class UnknownFlow(KeyError):
    """A move order names a flow this host does not send."""


@dataclass(slots=True)
class PendingMove:
    """A move order waiting for its port to be in use: ``PendingMove("o1", "f1", 50000, t)``."""

    order_id: str
    flow_id: str
    sport: int
    deadline: float
    nic_port: Optional[int] = None


class Agent:
    """One host's agent (see the module docstring).

    ``security``: the host's :class:`~astral_proto.security.Security` (``MutualTls`` of its
    certificate; a ``HostCredentials`` stands for its token fallback). ``registry=None``
    runs without a controller (orders are applied, nothing is reported). ``bind`` is the
    listening address (``127.0.0.1:0`` picks a free port; :meth:`start` returns the real
    one). ``wall_clock`` (Unix seconds) dates orders' expiries, with ``max_clock_skew_s``
    of allowance for GOR's clock (:class:`~host.agent.guard.OrderGuard`).
    """

    def __init__(self, security: Union[Security, HostCredentials], mover: FlowMover,
                 flows: Iterable[HostFlow], *,
                 registry: Optional[RegistryClient], bind: str = "127.0.0.1:0",
                 poll_s: float = 0.002, move_timeout_s: float = 10.0,
                 register_every_s: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time,
                 max_clock_skew_s: float = 1.0) -> None:
        self.security: Security = (security.security() if isinstance(security, HostCredentials)
                                   else security)
        self.host = self.security.name
        self.guard = OrderGuard(self.host, wall_clock=wall_clock, max_clock_skew_s=max_clock_skew_s)
        self.mover = mover
        self.registry = registry
        self.bind = bind
        self.poll_s = poll_s
        self.move_timeout_s = move_timeout_s
        self.register_every_s = register_every_s
        self.registrations = 0
        self.clock = clock
        self.incarnation = uuid.uuid4().hex
        self.address = ""
        self.reports_failed = 0
        self._flows: dict[str, HostFlow] = {f.flow_id: f for f in flows}
        self._pending: dict[str, PendingMove] = {}   # by flow id
        self._moved_at: dict[str, float] = {}        # flow id → clock() when a move completed
        self._cond = threading.Condition()
        self._stopped = threading.Event()
        self._server: Optional[grpc.Server] = None
        self._watcher: Optional[threading.Thread] = None
        self._keepalive: Optional[threading.Thread] = None

    # ------------------------------------------------------------- lifecycle
    def start(self) -> str:
        """Serve, register the flows with the registry, start the watcher; returns host:port."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                             options=server_options(MAX_AGENT_REQUEST_BYTES))
        server.add_generic_rpc_handlers((AgentServicer(self).handlers(),))
        self.address = listen(server, self.security, self.bind, "agent")
        server.start()
        self._server = server
        self._watcher = threading.Thread(target=self._watch, name=f"agent-{self.host}",
                                         daemon=True)
        self._watcher.start()
        self.register()
        if self.register_every_s is not None:
            self._keepalive = threading.Thread(target=self._re_register,
                                               name=f"agent-register-{self.host}", daemon=True)
            self._keepalive.start()
        return self.address

    def register(self) -> int:
        """(Re-)register the current flow set; returns the registry's count (0 without one)."""
        if self.registry is None:
            return 0
        n = self.registry.register(self.flows(), agent_address=self.address,
                                   incarnation=self.incarnation)
        self.registrations += 1
        return n

    def _re_register(self) -> None:
        """Register again every ``register_every_s`` (same incarnation, ports in use now),
        so a restarted controller has every flow back within one period; a registry that
        does not answer is retried on the next period."""
        assert self.register_every_s is not None
        while not self._stopped.wait(self.register_every_s):
            try:
                self.register()
            except grpc.RpcError as exc:
                log.info("re-registration failed (registry down?): %s", exc.code())

    def stop(self, grace_s: float = 0.5) -> None:
        """Stop serving and watching (pending orders are dropped unreported)."""
        self._stopped.set()
        with self._cond:
            self._cond.notify_all()
        if self._server is not None:
            self._server.stop(grace_s).wait()
        if self._watcher is not None:
            self._watcher.join(timeout=2.0)
        if self._keepalive is not None:
            self._keepalive.join(timeout=2.0)

    def __enter__(self) -> "Agent":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------- state
    def flows(self) -> list[HostFlow]:
        """The host's flows with the source port in use now and, for a flow a move order
        moved, how long ago (``moved_s_ago``: a restarted GOR leaves it alone for the rest
        of its cooldown)."""
        with self._cond:
            recs = list(self._flows.values())
            moved_at = dict(self._moved_at)
        now = self.clock()
        return [r.with_sport(self.mover.current_sport(r.flow_id)).with_move_age(
                    max(0.0, now - moved_at[r.flow_id]) if r.flow_id in moved_at else None
                ).with_nic_port(self.current_port(r.flow_id))
                for r in recs]

    def nic_ports(self) -> int:
        """How many ports the host's NIC has (1 for a mover without ports)."""
        counter = getattr(self.mover, "nic_ports", None)
        return int(counter()) if callable(counter) else 1

    def current_port(self, fid: str) -> Optional[int]:
        """The NIC port flow ``fid`` sends on now (None: a NIC of one port)."""
        if self.nic_ports() < 2:
            return None
        mover: PortMover = self.mover      # type: ignore[assignment]
        return mover.current_port(fid)

    def status(self) -> agent_pb2.StatusReply:
        """The ``Status`` reply: every flow, its port in use and any move in progress."""
        with self._cond:
            pending = dict(self._pending)
        states = []
        for f in self.flows():
            p = pending.get(f.flow_id)
            states.append(agent_pb2.FlowState(flow=f.to_proto(),
                                              pending_order_id=p.order_id if p else "",
                                              pending_sport=p.sport if p else 0))
        return agent_pb2.StatusReply(host=self.host, incarnation=self.incarnation,
                                     flows=states)

    def receive(self, order: agent_pb2.MoveOrder) -> agent_pb2.MoveReply:
        """What ``MoveFlow`` does once the caller is known to be the controller: the
        :class:`~host.agent.guard.OrderGuard` checks the order (:class:`OrderRefused`,
        logged, when it refuses it), then :meth:`order` applies it."""
        with self._cond:
            flow = self._flows.get(order.flow_id)
        try:
            self.guard.check(order, flow)
        except OrderRefused as refused:
            log.warning("agent %s refused order %r (flow %r): %s: %s", self.host, order.order_id,
                        order.flow_id, refused.code.name, refused.reason)
            raise
        return self.order(order.flow_id, order.new_sport, order.order_id,
                          nic_port=order.nic_port if order.HasField("nic_port") else None)

    def order(self, fid: str, sport: int, order_id: str,
              nic_port: Optional[int] = None) -> agent_pb2.MoveReply:
        """Apply one move order (what ``MoveFlow`` does after authentication and
        :meth:`receive`'s checks); ``nic_port``: also re-bind the flow's QP to that port of
        the NIC (refused, ``accepted=False``, by a NIC without it).

        Raises :class:`UnknownFlow` for a flow this host does not send.
        """
        with self._cond:
            if fid not in self._flows:
                raise UnknownFlow(fid)
        current = self.mover.current_sport(fid)
        if not order_id:
            return agent_pb2.MoveReply(accepted=False, reason="order_id is empty",
                                       current_sport=current)
        if not 0 < sport < 65536:
            return agent_pb2.MoveReply(accepted=False, reason="new_sport must be 1..65535",
                                       current_sport=current)
        if nic_port is not None and not 0 <= nic_port < self.nic_ports():
            ports = self.nic_ports()
            return agent_pb2.MoveReply(
                accepted=False, current_sport=current,
                reason=(f"nic_port {nic_port}: this NIC has one port" if ports < 2 else
                        f"nic_port {nic_port}: this NIC has ports 0..{ports - 1}"))
        if nic_port is not None and self.nic_ports() < 2:
            nic_port = None              # port 0 of a one-port NIC: a plain move (fuzz-found:
            #                              it called move_port on a mover without it, UNKNOWN)
        superseded: Optional[PendingMove] = None
        with self._cond:
            old = self._pending.get(fid)
            if (old is not None and old.order_id == order_id and old.sport == sport
                    and old.nic_port == nic_port):
                return agent_pb2.MoveReply(accepted=True, current_sport=current)  # a retry
            superseded = old
            if nic_port is None:
                self.mover.move(fid, sport)
            else:
                mover: PortMover = self.mover      # type: ignore[assignment]
                mover.move_port(fid, sport, nic_port)
            self._pending[fid] = PendingMove(order_id, fid, sport, self.clock() + self.move_timeout_s,
                                             nic_port)
            self._cond.notify_all()
        if superseded is not None:
            self._report(superseded, done=False, sport=current,
                         error=f"superseded by order {order_id}")
        return agent_pb2.MoveReply(accepted=True, current_sport=current)

    # ------------------------------------------------------------- watcher
    def _watch(self) -> None:
        while not self._stopped.is_set():
            with self._cond:
                if not self._pending:
                    self._cond.wait(timeout=0.1)
                pending = list(self._pending.values())
            for p in pending:
                in_use = self.mover.current_sport(p.flow_id)
                if in_use == p.sport and (p.nic_port is None
                                          or self.current_port(p.flow_id) == p.nic_port):
                    self._finish(p, done=True, sport=in_use)
                elif self.clock() >= p.deadline:
                    self._finish(p, done=False, sport=in_use, error="timeout")
            if pending:
                self._stopped.wait(self.poll_s)

    def _finish(self, p: PendingMove, *, done: bool, sport: int, error: str = "") -> None:
        with self._cond:
            if self._pending.get(p.flow_id) is not p:
                return          # superseded meanwhile
            del self._pending[p.flow_id]
            if done:
                self._moved_at[p.flow_id] = self.clock()
        self._report(p, done=done, sport=sport, error=error)

    def _report(self, p: PendingMove, *, done: bool, sport: int, error: str = "") -> None:
        if self.registry is None:
            return
        try:
            self.registry.report_move(p.order_id, p.flow_id, done=done, sport=sport, error=error,
                                      nic_port=self.current_port(p.flow_id))
        except grpc.RpcError as exc:
            self.reports_failed += 1
            log.warning("report of order %s failed: %s", p.order_id, exc)


class AgentServicer(agent_pb2_grpc.AgentServiceServicer):
    """gRPC face of an :class:`Agent`: only the controller may call; orders go through
    :meth:`Agent.receive`."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def _authenticate(self, context: grpc.ServicerContext) -> None:
        who = self.agent.security.caller(context)
        if who == CONTROLLER:
            return
        host = self.agent.host
        if who is None:
            log.warning("agent %s: unauthenticated call from %s", host, context.peer())
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          f"only {CONTROLLER} may call the agent of {host}: no identity "
                          f"({self.agent.security.kind})")
        log.warning("agent %s: call from %r refused (only %s may call)", host, who, CONTROLLER)
        context.abort(grpc.StatusCode.PERMISSION_DENIED,
                      f"only {CONTROLLER} may call the agent of {host}, not {who}")

    def MoveFlow(self, request: agent_pb2.MoveOrder,
                 context: grpc.ServicerContext) -> agent_pb2.MoveReply:
        self._authenticate(context)
        try:
            return self.agent.receive(request)
        except OrderRefused as refused:
            context.abort(refused.code, refused.reason)
            raise  # unreachable: abort raises
        except UnknownFlow:
            context.abort(grpc.StatusCode.NOT_FOUND,
                          f"host {self.agent.host} sends no flow {request.flow_id!r}")
            raise  # unreachable: abort raises

    def Status(self, request: agent_pb2.StatusRequest,
               context: grpc.ServicerContext) -> agent_pb2.StatusReply:
        self._authenticate(context)
        return self.agent.status()

    def bounded(self, rpc: str, parse: Callable[[bytes], Any],
                serve: Callable[[Any, grpc.ServicerContext], Any]
                ) -> Callable[[Iterator[bytes], grpc.ServicerContext], Any]:
        """The behaviour gRPC runs for ``rpc``: declared request-streaming, so that it
        starts before the request has come (gRPC Python's unary handlers wait for it in
        their thread, unbounded); the caller authenticated first (only the controller: the
        monitor's certificate, which passes the handshake, is refused here, holding
        nothing), the request awaited at most :data:`astral_proto.net.REQUEST_WAIT_S`
        (else the call is cancelled), parsed, then ``serve(request, context)``. Before, 40
        calls of the monitor's certificate that sent no request held the agent's 4 threads
        and the controller's orders to it ended ``DEADLINE_EXCEEDED`` (sec-red2-s49)."""
        def behaviour(requests: Iterator[bytes], context: grpc.ServicerContext) -> Any:
            self._authenticate(context)
            data = first_request(requests, context.cancel)
            if data is None:
                log.warning("agent %s: %s: no request within %g s: cancelled", self.agent.host, rpc,
                            REQUEST_WAIT_S)
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                              f"{rpc}: no request within {REQUEST_WAIT_S:g} s (REQUEST_WAIT_S)")
            try:
                request = parse(data)
            except Exception:  # noqa: BLE001 — protobuf's DecodeError (upb) or others: bad bytes
                # gRPC's own answer when its deserializer fails (what the agent said before)
                context.abort(grpc.StatusCode.INTERNAL, "Exception deserializing request!")
                raise
            return serve(request, context)
        return behaviour

    def handlers(self) -> grpc.GenericRpcHandler:
        """The ``AgentService`` methods as the agent serves them (:meth:`bounded`)."""
        method = grpc.stream_unary_rpc_method_handler
        return grpc.method_handlers_generic_handler(AGENT_SERVICE, {
            "MoveFlow": method(self.bounded("MoveFlow", agent_pb2.MoveOrder.FromString, self.MoveFlow),
                               None, agent_pb2.MoveReply.SerializeToString),
            "Status": method(self.bounded("Status", agent_pb2.StatusRequest.FromString, self.Status),
                             None, agent_pb2.StatusReply.SerializeToString)})
