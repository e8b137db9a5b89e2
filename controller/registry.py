"""GOR's flow registry: which host sends which flow, and the move orders sent to agents.

The controller half of the agent protocol (``astral_proto/agent.proto``):

* :class:`FlowRegistry` — in-memory state: flows by id with their owning host, each
  host's agent address and incarnation, and move orders with their outcome. Ownership is
  enforced: a host may only register flows whose source IP is one of its NICs, and only
  report on orders for its own flows.
* :class:`FlowRegistryServicer` / :func:`serve_registry` — the ``FlowRegistry`` gRPC
  service the agents call (host tokens checked, see :mod:`astral_proto.auth`).
* :meth:`FlowRegistry.move` — GOR's side of a re-route: send ``MoveFlow`` to the owning
  host's agent with that host's order token; :meth:`FlowRegistry.wait` for the report.

A host may run several agents (one per sender process): each registration replaces only
the flows that agent (its address) registered before, and orders go to the agent that
registered the flow. A re-registration with a new incarnation (the agent restarted)
replaces that agent's flows and fails their open orders with ``"agent restarted"``.

>>> reg = FlowRegistry(b"secret", {"b0s0": ["10.0.0.1"]})
>>> reg.register("b0s0", "127.0.0.1:1", "i1",
...              [HostFlow("f1", "10.0.0.1", "10.1.0.1", 49152, 7)])
1
>>> reg.owner("f1"), reg.flow("f1").sport
('b0s0', 49152)
"""
from __future__ import annotations

import itertools
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Optional

import grpc

from astral_proto import agent_pb2, agent_pb2_grpc
from astral_proto.auth import call_metadata, host_token, identity, order_token, token_ok
from astral_proto.flows import HostFlow
from astral_proto.net import bound_address


class RegistryError(Exception):
    """A refused registry operation; ``code`` is the gRPC status the service returns."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class MoveOrderState:
    """One move order and its outcome (``state``: ``sent``, ``done``, ``failed``)."""

    order_id: str
    flow_id: str
    host: str
    sport: int
    state: str = "sent"
    error: str = ""
    reported_sport: int = 0
    finished: threading.Event = field(default_factory=threading.Event, repr=False)


@dataclass(slots=True)
class _HostState:
    agent_address: str = ""
    incarnation: str = ""


class FlowRegistry:
    """In-memory registry (thread-safe). ``host_ips`` maps each host to its NICs' IPs;
    ``clock`` (seconds) dates the moves agents report.

    Also builds from a topology: ``FlowRegistry.from_fabric(build_fabric(), secret)``.
    """

    def __init__(self, secret: bytes, host_ips: Mapping[str, Iterable[str]],
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not secret:
            raise ValueError("the fabric secret must not be empty")
        self._secret = secret
        self._host_ips = {h: frozenset(ips) for h, ips in host_ips.items()}
        self._hosts: dict[str, _HostState] = {}
        self._flows: dict[str, HostFlow] = {}
        self._clock = clock
        self._moved_at: dict[str, float] = {}              # flow id → clock() of its last move
        self._owner: dict[str, str] = {}
        self._agent_of: dict[str, tuple[str, str]] = {}   # flow id → (agent address, incarnation)
        self._orders: dict[str, MoveOrderState] = {}
        self._seq = itertools.count(1)
        self._lock = threading.Lock()

    @classmethod
    def from_fabric(cls, fabric: object, secret: bytes,
                    clock: Callable[[], float] = time.monotonic) -> "FlowRegistry":
        """Hosts and NIC IPs from a ``topo.model.Fabric`` (``fabric.hosts[i].nics[j].ip``)."""
        hosts = getattr(fabric, "hosts")
        return cls(secret, {h.name: [n.ip for n in h.nics] for h in hosts}, clock=clock)

    # ------------------------------------------------------------- authentication
    def authenticate(self, host: Optional[str], token: Optional[str]) -> str:
        """The host a call speaks for; :class:`RegistryError` UNAUTHENTICATED otherwise."""
        if not host or host not in self._host_ips or not token_ok(host_token(self._secret, host), token):
            raise RegistryError(grpc.StatusCode.UNAUTHENTICATED, "unknown host or bad token")
        return host

    # ------------------------------------------------------------- agents' calls
    def register(self, host: str, agent_address: str, incarnation: str,
                 flows: Iterable[HostFlow]) -> int:
        """Replace the flows ``host``'s agent at ``agent_address`` registered before;
        returns how many flows the host now has (over all its agents).

        A host may run several agents (one per sender process on the testbed), each known
        by its address; orders for a flow go to the agent that registered it. An agent
        whose flows are registered again by another incarnation (the same address, or a
        new one taking over its flows) has restarted: its open orders fail with ``"agent
        restarted"``. PERMISSION_DENIED for a flow whose source IP is not one of
        ``host``'s NICs or whose id another host owns; the whole request is refused then.
        """
        flows = list(flows)
        ips = self._host_ips.get(host)
        if ips is None:
            raise RegistryError(grpc.StatusCode.PERMISSION_DENIED, f"{host} is not in the fabric")
        with self._lock:
            for f in flows:
                if f.src_ip not in ips:
                    raise RegistryError(grpc.StatusCode.PERMISSION_DENIED,
                                        f"flow {f.flow_id}: {f.src_ip} is not a NIC of {host}")
                other = self._owner.get(f.flow_id)
                if other is not None and other != host:
                    raise RegistryError(grpc.StatusCode.PERMISSION_DENIED,
                                        f"flow {f.flow_id} belongs to {other}")
            if len({f.flow_id for f in flows}) != len(flows):
                raise RegistryError(grpc.StatusCode.INVALID_ARGUMENT, "duplicate flow ids")
            state = self._hosts.setdefault(host, _HostState())
            state.agent_address, state.incarnation = agent_address, incarnation
            new_ids = {f.flow_id for f in flows}
            replaced = {ag for fid, ag in self._agent_of.items() if self._owner.get(fid) == host
                        and ag[1] != incarnation and (ag[0] == agent_address or fid in new_ids)}
            dropped: dict[str, str] = {}
            for fid, ag in list(self._agent_of.items()):
                if self._owner.get(fid) != host:
                    continue
                if ag in replaced:
                    dropped[fid] = "agent restarted"
                elif ag == (agent_address, incarnation) and fid not in new_ids:
                    dropped[fid] = "flow unregistered"
                else:
                    continue
                del self._owner[fid], self._flows[fid], self._agent_of[fid]
                self._moved_at.pop(fid, None)
            now = self._clock()
            for f in flows:
                self._owner[f.flow_id] = host
                self._flows[f.flow_id] = f.with_move_age(None)
                if f.moved_s_ago is not None:
                    self._moved_at[f.flow_id] = now - f.moved_s_ago
                self._agent_of[f.flow_id] = (agent_address, incarnation)
            for o in self._orders.values():
                if o.host == host and o.state == "sent" and o.flow_id in dropped:
                    why = dropped[o.flow_id]
                    self._close(o, "failed", "agent restarted" if o.flow_id in new_ids or
                                why == "agent restarted" else why)
            return sum(1 for h in self._owner.values() if h == host)

    def report(self, host: str, order_id: str, fid: str, *, done: bool, sport: int,
               error: str = "") -> MoveOrderState:
        """Record an agent's report; NOT_FOUND for an unknown order, PERMISSION_DENIED for
        an order on another host's flow."""
        with self._lock:
            o = self._orders.get(order_id)
            if o is None:
                raise RegistryError(grpc.StatusCode.NOT_FOUND, f"no order {order_id!r}")
            if o.host != host or (fid and fid != o.flow_id):
                raise RegistryError(grpc.StatusCode.PERMISSION_DENIED,
                                    f"order {order_id} is not for a flow of {host}")
            o.reported_sport = sport
            if done and o.flow_id in self._flows:
                self._flows[o.flow_id] = self._flows[o.flow_id].with_sport(sport)
                self._moved_at[o.flow_id] = self._clock()
            self._close(o, "done" if done else "failed", error)
            return o

    @staticmethod
    def _close(o: MoveOrderState, state: str, error: str) -> None:
        o.state, o.error = state, error
        o.finished.set()

    # ------------------------------------------------------------- GOR's side
    def flow(self, fid: str) -> HostFlow:
        """The registered flow (``KeyError`` if none), with the last reported port."""
        with self._lock:
            return self._flows[fid]

    def flows(self, host: Optional[str] = None) -> list[HostFlow]:
        """Every registered flow, or those of ``host``; ``moved_s_ago`` is the time since
        the flow's last completed move order, as of now (None: never moved, as far as
        this registry or the flow's agent knows)."""
        with self._lock:
            now = self._clock()
            return [f.with_move_age(now - self._moved_at[fid] if fid in self._moved_at else None)
                    for fid, f in self._flows.items() if host is None or self._owner[fid] == host]

    def owner(self, fid: str) -> str:
        """The host that sends flow ``fid`` (``KeyError`` if none)."""
        with self._lock:
            return self._owner[fid]

    def agent_address(self, host: str) -> str:
        """Where ``host``'s most recently registered agent listens (``KeyError`` before
        any registered)."""
        with self._lock:
            return self._hosts[host].agent_address

    def order(self, order_id: str) -> MoveOrderState:
        """An order by id (``KeyError`` if none)."""
        with self._lock:
            return self._orders[order_id]

    def new_order(self, fid: str, sport: int) -> MoveOrderState:
        """Record an order to move ``fid`` to ``sport`` (``KeyError`` for an unknown flow)."""
        with self._lock:
            host = self._owner[fid]
            o = MoveOrderState(f"order-{next(self._seq)}", fid, host, sport)
            self._orders[o.order_id] = o
            return o

    def move(self, fid: str, sport: int, *, timeout_s: float = 5.0) -> tuple[MoveOrderState, agent_pb2.MoveReply]:
        """Send a move order to the owning host's agent; the reply says accepted or why not.

        A rejected order is closed as failed at once; an accepted one closes when the agent
        reports (:meth:`wait`). gRPC errors of the agent call propagate (``grpc.RpcError``).
        """
        o = self.new_order(fid, sport)
        with self._lock:
            address = self._agent_of[fid][0]
        with grpc.insecure_channel(address) as channel:
            stub = agent_pb2_grpc.AgentServiceStub(channel)
            try:
                reply = stub.MoveFlow(agent_pb2.MoveOrder(flow_id=fid, new_sport=sport, order_id=o.order_id),
                                      metadata=call_metadata(o.host, order_token(self._secret, o.host)),
                                      timeout=timeout_s)
            except grpc.RpcError as exc:
                with self._lock:
                    self._close(o, "failed", f"agent call failed: {exc.code().name}")
                raise
        if not reply.accepted:
            with self._lock:
                self._close(o, "failed", reply.reason)
        return o, reply

    def wait(self, order_id: str, timeout_s: float = 5.0) -> MoveOrderState:
        """Block until the order is done or failed (or the timeout); returns its state."""
        o = self.order(order_id)
        o.finished.wait(timeout_s)
        return o


class FlowRegistryServicer(agent_pb2_grpc.FlowRegistryServicer):
    """gRPC face of a :class:`FlowRegistry`: checks host tokens, maps errors to codes."""

    def __init__(self, registry: FlowRegistry) -> None:
        self.registry = registry

    def _host(self, context: grpc.ServicerContext, claimed: str) -> str:
        try:
            host = self.registry.authenticate(*identity(context.invocation_metadata()))
        except RegistryError as exc:
            context.abort(exc.code, str(exc))
            raise
        if claimed and claimed != host:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{host} cannot speak for {claimed}")
        return host

    def RegisterFlows(self, request: agent_pb2.RegisterRequest,
                      context: grpc.ServicerContext) -> agent_pb2.RegisterReply:
        host = self._host(context, request.host)
        try:
            n = self.registry.register(host, request.agent_address, request.incarnation,
                                       [HostFlow.from_proto(f) for f in request.flows])
        except RegistryError as exc:
            context.abort(exc.code, str(exc))
            raise
        return agent_pb2.RegisterReply(registered=n)

    def ReportMove(self, request: agent_pb2.MoveReport,
                   context: grpc.ServicerContext) -> agent_pb2.MoveReportAck:
        host = self._host(context, request.host)
        try:
            self.registry.report(host, request.order_id, request.flow_id, done=request.done,
                                 sport=request.sport, error=request.error)
        except RegistryError as exc:
            context.abort(exc.code, str(exc))
            raise
        return agent_pb2.MoveReportAck()


def serve_registry(registry: FlowRegistry, bind: str = "127.0.0.1:0") -> tuple[grpc.Server, str]:
    """Start the ``FlowRegistry`` service; returns the server and its ``host:port``.

    >>> server, address = serve_registry(FlowRegistry(b"s", {}))
    >>> _ = server.stop(0).wait(); address.startswith("127.0.0.1:")
    True
    """
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         options=[("grpc.so_reuseport", 0)])  # the port is ours alone
    agent_pb2_grpc.add_FlowRegistryServicer_to_server(FlowRegistryServicer(registry), server)
    port = server.add_insecure_port(bind)
    if port == 0:
        raise OSError(f"registry cannot listen on {bind}")
    server.start()
    return server, bound_address(bind, port)
