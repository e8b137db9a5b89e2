"""GOR's flow registry: which host sends which flow, and the move orders sent to agents.

The controller half of the agent protocol (``astral_proto/agent.proto``):

* :class:`FlowRegistry` — in-memory state: flows by id with their owning host, each
  host's agent address and incarnation, and move orders with their outcome. Ownership is
  enforced: a host may only register (and, by leaving them out, unregister) flows whose
  source IP is one of its NICs, and only report on orders for its own flows. A flow's id
  must be the id of its own 5-tuple (:func:`astral_proto.flows.flow_id`:
  ``SRC_IP>DST_IP/qpN``), so an id names its source and only the host owning that source
  can claim it: an id cannot be claimed ahead of time by another host, whatever comes
  first, and after a GOR restart the true owner is the only one that can register it. A
  squatting attempt (an id naming another host's address) is refused ``PERMISSION_DENIED``,
  logged and counted (:attr:`FlowRegistry.squats`).
* :class:`FlowRegistryServicer` / :func:`serve_registry` — the ``FlowRegistry`` gRPC
  service the agents call. Who calls is the registry's
  :class:`~astral_proto.security.Security`'s answer: by default (``MutualTls``) the common
  name of the caller's certificate from the fabric CA, which must be a host of the
  fabric; with the token fallback (a fabric secret, :mod:`astral_proto.auth`) the host
  whose host token the call carries.
* :meth:`FlowRegistry.move` — GOR's side of a re-route: send ``MoveFlow`` to the agent
  that registered the flow (with TLS, the channel checks that agent's certificate names
  the flow's owner), an order with a fresh random nonce, the target host, the flow's
  5-tuple and an expiry (wall clock, now + the call's timeout) that the agent checks
  (``host/agent/guard.py``); :meth:`FlowRegistry.wait` for the report.

A host may run several agents (one per sender process): each registration replaces only
the flows that agent (its address) registered before, and orders go to the agent that
registered the flow. A re-registration with a new incarnation (the agent restarted)
replaces that agent's flows and fails their open orders with ``"agent restarted"``.

>>> reg = FlowRegistry(b"secret", {"b0s0": ["10.0.0.1"], "b1s0": ["10.1.0.1"]})  # tokens
>>> fid = flow_id("10.0.0.1", "10.1.0.1", 7)
>>> reg.register("b0s0", "127.0.0.1:1", "i1", [HostFlow(fid, "10.0.0.1", "10.1.0.1", 49152, 7)])
1
>>> reg.owner(fid), reg.flow(fid).sport
('b0s0', 49152)
>>> reg.register("b1s0", "127.0.0.1:2", "i2", [HostFlow(fid, "10.1.0.1", "10.1.0.1", 49152, 7)])
Traceback (most recent call last):
...
controller.registry.RegistryError: flow 10.0.0.1>10.1.0.1/qp7: the id names 10.0.0.1, a NIC of b0s0, not of b1s0 (squatting refused)
"""
from __future__ import annotations

import collections
import itertools
import logging
import secrets
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Union

import grpc

from astral_proto import agent_pb2, agent_pb2_grpc
from astral_proto.auth import ControllerTokens
from astral_proto.flows import HostFlow, flow_id
from astral_proto.net import (MAX_AGENT_ADDRESS_CHARS, MAX_REGISTRY_REQUEST_BYTES, REQUEST_WAIT_S, first_request,
                              peer_text, server_options)
from astral_proto.security import CONTROLLER, Security, listen

log = logging.getLogger(__name__)


MAX_FLOWS_PER_HOST = 4096
"""Flows one host may hold registered, over all its agents. Without a bound a host's own
certificate registered 180,000 flows (30,000 per request under six made-up agent
addresses) and GOR's ``registry.flows()``, read every round, took 1.3 s; beyond it a
registration is refused ``RESOURCE_EXHAUSTED`` and changes nothing."""


REGISTRY_SERVICE = agent_pb2.DESCRIPTOR.services_by_name["FlowRegistry"].full_name
"""``astral.agent.v1.FlowRegistry``, from the generated descriptor."""
REGISTER_BYTES_PER_S = 1024 * 1024
"""Bytes of ``RegisterFlows`` requests one host may send GOR's registry per second, over
all its agents and connections (a token bucket, charged before a request is parsed). Its
agents re-register every flow once a second (``host.agent.Agent``'s ``register_every_s``):
at most :data:`MAX_FLOWS_PER_HOST` flows, 487,547 bytes with the widest default ids
(``astral_proto.net.MAX_REGISTRY_REQUEST_BYTES``); the rate is about twice that. Without
it host b0s0's own certificate re-registered 4,096 flows ~30 times a second over 4
connections and GOR's reads of the registry (``flows()``, every round, same process) took
72 ms at the median and 406 ms at p99 instead of 0.14 / 0.19 ms (sec-audit4). Beyond it a
registration is refused ``RESOURCE_EXHAUSTED`` unread and changes nothing."""
REGISTER_BURST_BYTES = 4 * 1024 * 1024
"""The bucket's depth (4 MiB): two requests of the largest size the registry takes, or
several agents of a host (re)starting at once."""


REGISTRY_WORKERS = 16
"""Threads of the registry's gRPC server. gRPC Python's synchronous server gives a call its
thread *before* the request has arrived and waits for it there; with 4 threads, 4 calls
whose request never came (HTTP/2 headers sent, no message) held the registry: live on the
p4sim testbed, host b1s1's own certificate (or a switch's: the registry trusts the
switches' CA) held every thread, and every agent's registration and move report waited
until its deadline (sec-red2-s49). Now a call waits at most :data:`REQUEST_RECEIVE_S` for
its request, and one party holds at most :data:`MAX_CALLS_PER_PARTY` threads."""
MAX_CALLS_PER_PARTY = 4
"""Registry calls one party (a certificate's name) may have waiting for their request;
the next is refused ``RESOURCE_EXHAUSTED`` before its request is read. A client sends its
request with the call's headers, so a legitimate call waits microseconds; once the
request came the call no longer counts (serving it takes milliseconds, and a host's
agents, one certificate, may report several moves of one GOR round at once)."""
REQUEST_RECEIVE_S = REQUEST_WAIT_S
"""The longest a registry call waits for its request once it holds a thread
(:data:`astral_proto.net.REQUEST_WAIT_S`, 2 s); later it is cancelled (the caller sees
``CANCELLED``) and counted (:attr:`FlowRegistry.requests_timed_out`)."""


MAX_NIC_PORTS = 2
"""Ports a NIC may have in the topology model (``ports_per_nic`` 1 or 2): the bound on a
reported NIC port when the registry is not told each NIC's ports (``nic_ports``)."""


MAX_CLOSED_ORDERS = 4096
"""Closed move orders (done or failed) the registry keeps for GOR to read; older ones are
forgotten. Before, every order was kept for good: a host whose 4,096 registered flows
were each moved once per 10 s cooldown would have grown GOR's memory by ~400 orders a
second (sec-audit3). GOR reads an order only while its move is in flight (seconds)."""

MAX_OPEN_ORDER_S = 60.0
"""How long a move order may stay open (``sent``, its agent's report not in) before the
registry closes it ``failed`` ("no report"), the next time it records an order: GOR gives up
on a move within seconds (``confirm_timeout_s``). Without it only closed orders were
bounded (:data:`MAX_CLOSED_ORDERS`): an agent that accepted every order and never
reported kept each one for good (review2)."""

MOVE_CLAIMS_S = 10.0
"""For how long after a registry starts it takes an agent's word that a flow moved
recently (``Flow.moved``/``ms_since_move``: a move of the GOR before a restart, which this
registry cannot know). Later it trusts only the moves it ordered and saw reported: a
host's own certificate re-registered its flow every second claiming it had just moved,
and GOR left that flow resting for good (its elephants never moved, other hosts' flows
moved instead; sec-audit3). Agents register again every second, so 10 s covers the
first registration of every live agent after a restart. Such a move was made before the
registry started, so a claimed move time later than the start is dated at the start: a
host's "moved 0 s ago" 9 s after a restart made GOR hold every round (the settle of a
predecessor's move, ``move_settle_s``) until 10.1 s instead of 1.1 s, and rest the flow
until 19 s instead of 10 s (sec-audit5)."""


MOVE_REPORT_S = 12.0
"""The latest after its order that an agent's done report dates a move: the order's
lifetime (GOR's ``order_timeout_s``, 2 s: the agent refuses it later) plus the agent's
``move_timeout_s`` (10 s: it reports done as soon as its sender uses the new port, else
failed at 10 s). A later report is still taken (the flow's port and NIC port), its move
dated at the order's time plus this. GOR holds every round for ``move_settle_s`` after a
move its registry learnt of: before, a host that accepted GOR's orders and held back its
reports (the registry keeps the newest 4,096 closed orders, and takes a late report)
could report one done whenever it chose, each report holding every round of GOR
(every host's links) for 1.1 s (sec-audit5)."""


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
    nic_port: Optional[int] = None         # the NIC port the order re-binds the QP to
    reported_nic_port: Optional[int] = None
    reported: bool = False                 # the agent's one report was received
    created_s: float = 0.0                 # the registry's clock() when the order was made
    finished: threading.Event = field(default_factory=threading.Event, repr=False)
    message: Optional[agent_pb2.MoveOrder] = field(default=None, repr=False)  # as sent


@dataclass(slots=True)
class _HostState:
    agent_address: str = ""
    incarnation: str = ""
    last_report_s: Optional[float] = None     # clock() of the agent's last registration


class FlowRegistry:
    """In-memory registry (thread-safe). ``security``: GOR's
    :class:`~astral_proto.security.Security` (``MutualTls`` of the ``controller``
    certificate), or a fabric secret (bytes) for the token fallback. ``host_ips`` maps
    each host to its NICs' IPs; ``clock`` (seconds) dates the moves agents report;
    ``wall_clock`` (Unix seconds) dates the orders' expiries; ``fabric_ips``: the
    addresses a flow's destination may be (default: every NIC in ``host_ips``; give the
    whole fabric's when ``host_ips`` names only some hosts); ``nic_ports``: each NIC's
    number of ports, by address (the topology's; default :data:`MAX_NIC_PORTS` each): a
    host may register or report only a port its flow's NIC has.

    Also builds from a topology: ``FlowRegistry.from_fabric(build_fabric(), security)``.
    """

    def __init__(self, security: Union[Security, bytes], host_ips: Mapping[str, Iterable[str]],
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time,
                 fabric_ips: Optional[Iterable[str]] = None,
                 nic_ports: Optional[Mapping[str, int]] = None) -> None:
        self.security: Security = (ControllerTokens(security) if isinstance(security, bytes)
                                   else security)
        if self.security.name != CONTROLLER:
            raise ValueError(f"the registry runs as {CONTROLLER!r}, not {self.security.name!r}")
        self._wall_clock = wall_clock
        self.max_flows_per_host = MAX_FLOWS_PER_HOST
        self._host_ips = {h: frozenset(ips) for h, ips in host_ips.items()}
        self._hosts: dict[str, _HostState] = {}
        self._flows: dict[str, HostFlow] = {}
        self._clock = clock
        self.move_claims_s = MOVE_CLAIMS_S
        self.move_report_s = MOVE_REPORT_S
        self._started_s = clock()
        self.claims_ignored = 0
        """Agents' claims of a recent move not taken (after :data:`MOVE_CLAIMS_S`)."""
        self.claims_clamped = 0
        """Agents' claims of a move after the registry started (one it would have ordered
        and seen), dated at its start instead."""
        self._moved_at: dict[str, float] = {}              # flow id → clock() of its last move
        self._owner: dict[str, str] = {}
        self._agent_of: dict[str, tuple[str, str]] = {}   # flow id → (agent address, incarnation)
        self._registered_at: dict[str, float] = {}         # flow id → clock() its agent last named it
        self._orders: dict[str, MoveOrderState] = {}
        self._closed: collections.deque[str] = collections.deque()   # ids, in closing order
        self.max_closed_orders = MAX_CLOSED_ORDERS
        self._open: dict[str, MoveOrderState] = {}     # sent orders, oldest first
        self.max_open_order_s = MAX_OPEN_ORDER_S
        self._seq = itertools.count(1)
        self._lock = threading.Lock()
        self._host_of_ip = {ip: h for h, ips in self._host_ips.items() for ip in ips}
        self._fabric_ips = (frozenset(fabric_ips) if fabric_ips is not None
                            else frozenset(self._host_of_ip))
        """Addresses a registered flow may be sent to: the fabric's NICs (every host's, by
        default those of ``host_ips``). A flow to anywhere else is refused INVALID_ARGUMENT."""
        self.squats = 0
        """Registrations refused because a flow's id named another host's address."""
        self._nic_ports = dict(nic_ports) if nic_ports is not None else None
        self.register_bytes_per_s = float(REGISTER_BYTES_PER_S)
        self.register_burst_bytes = float(REGISTER_BURST_BYTES)
        self._budgets: dict[str, tuple[float, float]] = {}   # host → (bytes left, clock() then)
        self._budget_lock = threading.Lock()
        self.registrations_limited = 0
        """Registrations refused by the per-host rate bound (:data:`REGISTER_BYTES_PER_S`)."""
        self.max_calls_per_party = MAX_CALLS_PER_PARTY
        self.request_receive_s = REQUEST_RECEIVE_S
        self._calls: collections.Counter[str] = collections.Counter()   # party → calls waiting for their request
        self.calls_refused = 0
        """Calls refused because their party had :data:`MAX_CALLS_PER_PARTY` in progress."""
        self.requests_timed_out = 0
        """Calls cancelled because their request did not come within :data:`REQUEST_RECEIVE_S`."""

    @property
    def started_s(self) -> float:
        """The registry's ``clock()`` when it started: an agent's claim of a move it did
        not see is dated no later (:data:`MOVE_CLAIMS_S`)."""
        return self._started_s

    @classmethod
    def from_fabric(cls, fabric: object, security: Union[Security, bytes],
                    clock: Callable[[], float] = time.monotonic) -> "FlowRegistry":
        """Hosts and NIC IPs from a ``topo.model.Fabric`` (``fabric.hosts[i].nics[j].ip``)."""
        hosts = getattr(fabric, "hosts")
        return cls(security, {h.name: [n.ip for n in h.nics] for h in hosts}, clock=clock,
                   fabric_ips=[n.ip for h in hosts for n in h.nics],
                   nic_ports={n.ip: len(getattr(n, "ports", None) or [n]) for h in hosts for n in h.nics})

    def charge_registration(self, host: str, request_bytes: int) -> None:
        """Take a request of ``request_bytes`` (at least 1) from ``host``'s registration
        budget (:data:`REGISTER_BYTES_PER_S`, burst :data:`REGISTER_BURST_BYTES`), before
        it is parsed; RegistryError RESOURCE_EXHAUSTED, nothing taken, when it has not that
        much left. The gRPC service charges every RegisterFlows; in-process callers of
        :meth:`register` are not charged.

        >>> reg = FlowRegistry(b"s", {"b0s0": []}, clock=lambda: 0.0)
        >>> reg.charge_registration("b0s0", REGISTER_BURST_BYTES)
        >>> reg.charge_registration("b0s0", 1)
        Traceback (most recent call last):
        ...
        controller.registry.RegistryError: b0s0 sent a RegisterFlows of 1 bytes: 0 left of its 1048576 bytes per second (REGISTER_BYTES_PER_S); refused unread, retry later
        """
        cost = max(1, int(request_bytes))
        now = self._clock()
        with self._budget_lock:
            left, then = self._budgets.get(host, (self.register_burst_bytes, now))
            left = min(self.register_burst_bytes, left + max(0.0, now - then) * self.register_bytes_per_s)
            if cost > left:
                self._budgets[host] = (left, now)
                self.registrations_limited += 1
                if self.registrations_limited & (self.registrations_limited - 1) == 0:   # 1, 2, 4, ...
                    log.warning("registry: %s sent a RegisterFlows of %d bytes, %d left of its "
                                "budget: refused (%d so far)", host, cost, int(left),
                                self.registrations_limited)
                raise RegistryError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                    f"{host} sent a RegisterFlows of {cost} bytes: {int(left)} left of "
                                    f"its {int(self.register_bytes_per_s)} bytes per second "
                                    "(REGISTER_BYTES_PER_S); refused unread, retry later")
            self._budgets[host] = (left - cost, now)

    def enter_call(self, party: str) -> None:
        """Count a gRPC call of ``party`` in progress (:meth:`leave_call` when it ends);
        RegistryError RESOURCE_EXHAUSTED, nothing counted, when it already has
        :data:`MAX_CALLS_PER_PARTY`. The service calls it before the request is read.

        >>> reg = FlowRegistry(b"s", {"b0s0": []})
        >>> for _ in range(MAX_CALLS_PER_PARTY): reg.enter_call("b0s0")
        >>> reg.enter_call("b0s0")
        Traceback (most recent call last):
        ...
        controller.registry.RegistryError: b0s0 has 4 registry calls waiting for their request, at most 4 (MAX_CALLS_PER_PARTY): refused unread
        >>> reg.leave_call("b0s0"); reg.enter_call("b0s0"); reg.calls_refused
        1
        """
        with self._budget_lock:
            held = self._calls[party]
            if held < self.max_calls_per_party:
                self._calls[party] = held + 1
                return
            self.calls_refused += 1
            refused = self.calls_refused
        if refused & (refused - 1) == 0:                   # 1, 2, 4, ...
            log.warning("registry: %s has %d calls waiting for their request (at most %d): refused (%d so far)",
                        party, held, self.max_calls_per_party, refused)
        raise RegistryError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                            f"{party} has {held} registry calls waiting for their request, at most "
                            f"{self.max_calls_per_party} (MAX_CALLS_PER_PARTY): refused unread")

    def leave_call(self, party: str) -> None:
        """A call :meth:`enter_call` counted has ended."""
        with self._budget_lock:
            self._calls[party] -= 1
            if self._calls[party] <= 0:
                del self._calls[party]

    def request_timed_out(self, party: str, rpc: str) -> str:
        """Count a call of ``party`` whose request did not come within
        :data:`REQUEST_RECEIVE_S`; returns the reason to log and answer."""
        with self._budget_lock:
            self.requests_timed_out += 1
            n = self.requests_timed_out
        why = (f"{rpc}: no request from {party} within {self.request_receive_s:g} s "
               "(REQUEST_RECEIVE_S): cancelled")
        if n & (n - 1) == 0:
            log.warning("registry: %s (%d so far)", why, n)
        return why

    def check_nic_port(self, src_ip: str, nic_port: Optional[int], what: str) -> None:
        """RegistryError INVALID_ARGUMENT when ``nic_port`` is not a port of the NIC at
        ``src_ip`` (the topology's ports: ``nic_ports``); None (not said) passes.

        >>> reg = FlowRegistry(b"s", {"b0s0": ["10.0.0.1"]}, nic_ports={"10.0.0.1": 1})
        >>> reg.check_nic_port("10.0.0.1", 1, "flow f")
        Traceback (most recent call last):
        ...
        controller.registry.RegistryError: flow f: NIC port 1: the NIC 10.0.0.1 has port 0 only
        """
        if nic_port is None:
            return
        ports = MAX_NIC_PORTS if self._nic_ports is None else self._nic_ports.get(src_ip, 1)
        if not 0 <= nic_port < ports:
            log.warning("registry: %s: NIC port %d, the NIC %s has %d: refused", what, nic_port,
                        src_ip, ports)
            have = "port 0 only" if ports == 1 else f"ports 0..{ports - 1}"
            raise RegistryError(grpc.StatusCode.INVALID_ARGUMENT,
                                f"{what}: NIC port {nic_port}: the NIC {src_ip} has {have}")

    # ------------------------------------------------------------- authentication
    def authenticate(self, caller: Optional[str]) -> str:
        """The host a call comes from, given its authenticated name (``Security.caller``):
        :class:`RegistryError` UNAUTHENTICATED for none, PERMISSION_DENIED for a party
        that is not a host of the fabric (a switch's or the controller's certificate).

        >>> FlowRegistry(b"s", {"b0s0": []}).authenticate("b0s0")
        'b0s0'
        """
        if not caller:
            raise RegistryError(grpc.StatusCode.UNAUTHENTICATED,
                                f"no identity ({self.security.kind}): a host certificate or token is required")
        if caller not in self._host_ips:
            raise RegistryError(grpc.StatusCode.PERMISSION_DENIED, f"{caller} is not a host of the fabric")
        return caller

    # ------------------------------------------------------------- agents' calls
    def register(self, host: str, agent_address: str, incarnation: str,
                 flows: Iterable[HostFlow]) -> int:
        """Replace the flows ``host``'s agent at ``agent_address`` registered before;
        returns how many flows the host now has (over all its agents).

        A host may run several agents (one per sender process on the testbed), each known
        by its address; orders for a flow go to the agent that registered it. An agent
        whose flows are registered again by another incarnation (the same address, or a
        new one taking over its flows) has restarted: its open orders fail with ``"agent
        restarted"``. A flow's ``moved_s_ago`` (the agent's word that a move order moved
        it) is taken only in the registry's first :data:`MOVE_CLAIMS_S`, only for a
        flow whose move this registry did not see, and dated no later than the registry's
        start (a move it did not see was made before it started). PERMISSION_DENIED for a flow whose source IP is not one of
        ``host``'s NICs or whose id another host owns, INVALID_ARGUMENT for one whose
        destination is not a NIC of the fabric (GOR would route and move flows that do not
        cross it); the whole request is refused then.
        """
        flows = list(flows)
        ips = self._host_ips.get(host)
        if ips is None:
            raise RegistryError(grpc.StatusCode.PERMISSION_DENIED, f"{host} is not in the fabric")
        for what, text in (("agent address", agent_address), ("incarnation", incarnation)):
            if len(text) > MAX_AGENT_ADDRESS_CHARS or not text.isprintable():
                raise RegistryError(grpc.StatusCode.INVALID_ARGUMENT,
                                    f"{what} {peer_text(text, 80)}: at most "
                                    f"{MAX_AGENT_ADDRESS_CHARS} printable characters")
        if len(flows) > self.max_flows_per_host:        # before any per-flow work
            raise RegistryError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"{host} would hold {len(flows)} registered flows, at most "
                                f"{self.max_flows_per_host} per host")
        with self._lock:
            for f in flows:
                self._check_owned(host, ips, f)
                self.check_nic_port(f.src_ip, f.nic_port, f"flow {f.flow_id}")
                other = self._owner.get(f.flow_id)
                if other is not None and other != host:
                    raise RegistryError(grpc.StatusCode.PERMISSION_DENIED,
                                        f"flow {f.flow_id} belongs to {other}")
            if len({f.flow_id for f in flows}) != len(flows):
                raise RegistryError(grpc.StatusCode.INVALID_ARGUMENT, "duplicate flow ids")
            new_ids = {f.flow_id for f in flows}
            kept = sum(1 for fid, ag in self._agent_of.items() if self._owner.get(fid) == host
                       and ag[0] != agent_address and fid not in new_ids)
            if kept + len(flows) > self.max_flows_per_host:
                log.warning("registry: %s would hold %d flows (at most %d per host): refused",
                            host, kept + len(flows), self.max_flows_per_host)
                raise RegistryError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                    f"{host} would hold {kept + len(flows)} registered flows, at most "
                                    f"{self.max_flows_per_host} per host")
            state = self._hosts.setdefault(host, _HostState())
            state.agent_address, state.incarnation = agent_address, incarnation
            state.last_report_s = self._clock()
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
                self._registered_at.pop(fid, None)
            now = self._clock()
            claims_open = now - self._started_s <= self.move_claims_s
            for f in flows:
                self._owner[f.flow_id] = host
                self._flows[f.flow_id] = f.with_move_age(None)
                self._agent_of[f.flow_id] = (agent_address, incarnation)
                self._registered_at[f.flow_id] = now
                if f.moved_s_ago is None:
                    continue
                if not claims_open:
                    self.claims_ignored += 1
                elif f.flow_id not in self._moved_at:     # a move this registry never saw
                    # ... so one made before it started: a claim of a later one (a host's
                    # "moved 0 s ago" 9 s after a restart froze every GOR round for
                    # move_settle_s and rested the flow past cooldown_s; sec-audit5) is
                    # dated at the registry's start
                    claimed = now - f.moved_s_ago
                    if claimed > self._started_s:
                        self.claims_clamped += 1
                    self._moved_at[f.flow_id] = min(claimed, self._started_s)
            # the open orders, copied: a close may forget the oldest closed order
            for o in list(self._open.values()):
                if o.host == host and o.state == "sent" and o.flow_id in dropped:
                    why = dropped[o.flow_id]
                    self._close(o, "failed", "agent restarted" if o.flow_id in new_ids or
                                why == "agent restarted" else why)
            return sum(1 for h in self._owner.values() if h == host)

    def _check_owned(self, host: str, ips: frozenset[str], f: HostFlow) -> None:
        """A flow ``host`` may register: its source is one of the host's NICs, its id is
        the id of its 5-tuple (so the id names that source) and its destination another NIC
        of the fabric. RegistryError otherwise; a squatting attempt is logged and counted."""
        if f.src_ip not in ips:
            raise RegistryError(grpc.StatusCode.PERMISSION_DENIED,
                                f"flow {f.flow_id}: {f.src_ip} is not a NIC of {host}")
        own_id = flow_id(f.src_ip, f.dst_ip, f.qpn)
        if f.flow_id == own_id:
            if f.dst_ip in self._fabric_ips and f.dst_ip != f.src_ip:
                return
            log.warning("registry: %s registered flow %s to %s, not another NIC of the fabric: refused",
                        host, f.flow_id, f.dst_ip)
            raise RegistryError(grpc.StatusCode.INVALID_ARGUMENT,
                                f"flow {f.flow_id}: destination {f.dst_ip!r} is not another NIC of "
                                "the fabric (a registered flow crosses the fabric)")
        named_ip = f.flow_id.split(">", 1)[0] if ">" in f.flow_id else ""
        victim = self._host_of_ip.get(named_ip)
        if victim is not None and victim != host:
            self.squats += 1
            log.warning("registry: %s tried to register flow %s, whose id names %s (a NIC of %s): "
                        "squatting refused", host, f.flow_id, named_ip, victim)
            raise RegistryError(grpc.StatusCode.PERMISSION_DENIED,
                                f"flow {f.flow_id}: the id names {named_ip}, a NIC of {victim}, "
                                f"not of {host} (squatting refused)")
        log.warning("registry: %s registered flow id %r, not the id of its 5-tuple (%s): refused",
                    host, f.flow_id, own_id)
        raise RegistryError(grpc.StatusCode.INVALID_ARGUMENT,
                            f"flow {f.flow_id!r}: a flow's id is the id of its 5-tuple, {own_id!r} "
                            "(SRC_IP>DST_IP/qpN: it names the flow's source)")

    def report(self, host: str, order_id: str, fid: str, *, done: bool, sport: int,
               error: str = "", nic_port: Optional[int] = None) -> MoveOrderState:
        """Record an agent's report; NOT_FOUND for an unknown order, PERMISSION_DENIED for
        an order on another host's flow, FAILED_PRECONDITION for an order already reported
        (a replayed or forged second report: it would set the flow's port, NIC port and
        move time again, at any later time). ``nic_port``: the NIC port the flow now sends on
        (a dual-port NIC), kept with the flow. A done report dates the move no later than
        :data:`MOVE_REPORT_S` after the order."""
        with self._lock:
            o = self._orders.get(order_id)
            if o is None:
                raise RegistryError(grpc.StatusCode.NOT_FOUND, f"no order {order_id!r}")
            if o.host != host or (fid and fid != o.flow_id):
                raise RegistryError(grpc.StatusCode.PERMISSION_DENIED,
                                    f"order {order_id} is not for a flow of {host}")
            if o.reported:
                log.warning("registry: %s reported order %s again: refused", host, order_id)
                raise RegistryError(grpc.StatusCode.FAILED_PRECONDITION,
                                    f"order {order_id} was already reported ({o.state}): an "
                                    "order is reported once")
            flow = self._flows.get(o.flow_id)
            if flow is not None:
                self.check_nic_port(flow.src_ip, nic_port, f"order {order_id}")
            o.reported = True
            o.reported_sport, o.reported_nic_port = sport, nic_port
            if done and o.flow_id in self._flows:
                moved = self._flows[o.flow_id].with_sport(sport)
                self._flows[o.flow_id] = moved if nic_port is None else moved.with_nic_port(nic_port)
                self._moved_at[o.flow_id] = min(self._clock(), o.created_s + self.move_report_s)
            self._close(o, "done" if done else "failed", peer_text(error))
            return o

    def _close(self, o: MoveOrderState, state: str, error: str) -> None:
        """Close order ``o`` (caller holds the lock); beyond :data:`MAX_CLOSED_ORDERS`
        closed orders the oldest are forgotten."""
        if o.state == "sent":
            self._closed.append(o.order_id)
            self._open.pop(o.order_id, None)
        o.state, o.error = state, error
        o.finished.set()
        while len(self._closed) > self.max_closed_orders:
            self._orders.pop(self._closed.popleft(), None)

    def orders_kept(self) -> int:
        """How many move orders the registry holds now (open and closed)."""
        with self._lock:
            return len(self._orders)

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

    def silent_flows(self, after_s: float) -> set[str]:
        """Ids of the registered flows whose agent has not registered them for more than
        ``after_s`` seconds: agents register their flows every second
        (``host.agent.Agent``'s ``register_every_s``), so the sender (and its agent) of such
        a flow is gone — a move order to it fails UNAVAILABLE — while the registry, which
        nobody told, still holds it. GOR orders no move for them (``LoopSettings.agent_silent_s``).
        An agent a move order found not listening (UNAVAILABLE) has its flows silent at
        once, until it registers them again.

        >>> now = [0.0]
        >>> reg = FlowRegistry(b"secret", {"b0s0": ["10.0.0.1"], "b1s0": ["10.1.0.1"]}, clock=lambda: now[0])
        >>> _ = reg.register("b0s0", "unix:/tmp/a.sock", "i1", [HostFlow(flow_id("10.0.0.1", "10.1.0.1", 7),
        ...                  "10.0.0.1", "10.1.0.1", 49152, 7)])
        >>> now[0] = 2.0; reg.silent_flows(3.0)
        set()
        >>> now[0] = 4.0; reg.silent_flows(3.0)
        {'10.0.0.1>10.1.0.1/qp7'}
        """
        with self._lock:
            now = self._clock()
            return {fid for fid, t in self._registered_at.items() if now - t > after_s}

    def agent_ages(self) -> dict[str, float]:
        """Seconds since each host's agent last registered its flows (agents register
        every second; monitoring names an agent silent for longer as dead).

        >>> reg = FlowRegistry(b"secret", {"b0s0": ["10.0.0.1"]}, clock=lambda: 5.0)
        >>> _ = reg.register("b0s0", "unix:/tmp/a.sock", "i1", []); reg.agent_ages()
        {'b0s0': 0.0}
        """
        with self._lock:
            now = self._clock()
            return {h: now - st.last_report_s for h, st in self._hosts.items()
                    if st.last_report_s is not None}

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

    def new_order(self, fid: str, sport: int, nic_port: Optional[int] = None) -> MoveOrderState:
        """Record an order to move ``fid`` to ``sport`` (and NIC port ``nic_port``, a
        dual-port NIC; None: its port stays) (``KeyError`` for an unknown flow)."""
        with self._lock:
            host = self._owner[fid]
            now = self._clock()
            self._close_unreported(now)
            o = MoveOrderState(f"order-{next(self._seq)}", fid, host, sport, nic_port=nic_port,
                               created_s=now)
            self._orders[o.order_id] = o
            self._open[o.order_id] = o
            return o

    def _close_unreported(self, now: float) -> None:
        """Close (``failed``) the open orders older than :data:`MAX_OPEN_ORDER_S` (caller
        holds the lock); a report of one still arrives (closed orders take their report)."""
        while self._open:
            o = next(iter(self._open.values()))
            if now - o.created_s <= self.max_open_order_s:
                break
            self._close(o, "failed", f"no report within {self.max_open_order_s:g} s")

    def order_message(self, o: MoveOrderState, ttl_s: float) -> agent_pb2.MoveOrder:
        """The wire form of order ``o``: a fresh random nonce (128 bits), the target host,
        the flow's 5-tuple as registered, and an expiry ``ttl_s`` from now (wall clock)."""
        with self._lock:
            flow = self._flows[o.flow_id]
        m = agent_pb2.MoveOrder(flow_id=o.flow_id, new_sport=o.sport, order_id=o.order_id,
                                nonce=secrets.token_hex(16), target_host=o.host,
                                flow=flow.to_proto().tuple,
                                expires_unix_ms=int((self._wall_clock() + ttl_s) * 1000))
        if o.nic_port is not None:
            m.nic_port = o.nic_port
        return m

    def move(self, fid: str, sport: int, *, timeout_s: float = 5.0,
             nic_port: Optional[int] = None) -> tuple[MoveOrderState, agent_pb2.MoveReply]:
        """Send a move order to the owning host's agent; the reply says accepted or why not.
        ``nic_port``: also re-bind the flow's QP to that port of its dual-port NIC.

        The order expires when the call times out (``timeout_s``): an order still in
        transit when GOR has given up on it is refused by the agent, never applied late.
        A rejected order is closed as failed at once; an accepted one closes when the agent
        reports (:meth:`wait`). gRPC errors of the agent call propagate (``grpc.RpcError``;
        the agent's refusals, see ``host/agent/guard.py``, are among them).
        """
        o = self.new_order(fid, sport, nic_port)
        with self._lock:
            address = self._agent_of[fid][0]
        o.message = self.order_message(o, timeout_s)
        with self.security.dial(address, o.host) as channel:
            stub = agent_pb2_grpc.AgentServiceStub(channel)
            try:
                reply = stub.MoveFlow(o.message, metadata=self.security.metadata(o.host),
                                      timeout=timeout_s)
            except grpc.RpcError as exc:
                why = peer_text(f"{exc.code().name}: {exc.details() or ''}")   # the agent's words
                log.warning("order %s (flow %s) to %s at %s failed: %s", o.order_id, fid, o.host,
                            address, why)
                with self._lock:
                    self._close(o, "failed", f"agent call failed: {why}")
                    if exc.code() == grpc.StatusCode.UNAVAILABLE:
                        # no agent listens there (its sender ended): its flows are silent
                        # now, not only after silent_flows' wait, until it registers again;
                        # only this host's: the address is the host's word, and another
                        # host's agent there (its certificate fails the name check, also
                        # UNAVAILABLE) is alive (host_hijacks_agent_address, sec-audit5)
                        for other, ag in self._agent_of.items():
                            if ag[0] == address and self._owner.get(other) == o.host:
                                self._registered_at[other] = float("-inf")
                raise
        reply.reason = peer_text(reply.reason)      # the agent's words: printed by GOR's story
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
    """gRPC face of a :class:`FlowRegistry`: names the calling host, maps errors to codes.

    Every method is served as :meth:`handlers` builds it: the caller is named from its
    certificate and counted against :data:`MAX_CALLS_PER_PARTY` *before* its request is
    read (a switch's or the monitor's certificate is refused there, holding nothing), the
    request is awaited at most :data:`REQUEST_RECEIVE_S`, and only then parsed."""

    def __init__(self, registry: FlowRegistry) -> None:
        self.registry = registry

    def _host(self, context: grpc.ServicerContext, claimed: str) -> str:
        try:
            host = self.registry.authenticate(self.registry.security.caller(context))
        except RegistryError as exc:
            log.warning("registry: call from %s refused: %s", context.peer(), exc)
            context.abort(exc.code, str(exc))
            raise
        if claimed and claimed != host:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{host} cannot speak for {claimed}")
        return host

    def RegisterFlows(self, request: agent_pb2.RegisterRequest,
                      context: grpc.ServicerContext) -> agent_pb2.RegisterReply:
        """A parsed registration (no rate charge: :meth:`register_bytes` charges the wire)."""
        host = self._host(context, request.host)
        try:
            n = self.registry.register(host, request.agent_address, request.incarnation,
                                       [HostFlow.from_proto(f) for f in request.flows])
        except RegistryError as exc:
            context.abort(exc.code, str(exc))
            raise
        return agent_pb2.RegisterReply(registered=n)

    def register_bytes(self, data: bytes, context: grpc.ServicerContext) -> agent_pb2.RegisterReply:
        """RegisterFlows as served: the caller named (TLS), its request's bytes charged to
        its rate (:meth:`FlowRegistry.charge_registration`), then parsed and registered."""
        host = self._host(context, "")
        try:
            self.registry.charge_registration(host, len(data))
        except RegistryError as exc:
            context.abort(exc.code, str(exc))
            raise
        try:
            request = agent_pb2.RegisterRequest.FromString(data)
        except Exception:  # noqa: BLE001 — protobuf's DecodeError (upb) or others: bad bytes
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "RegisterFlows: the request is not a "
                          "RegisterRequest (cannot be parsed)")
            raise
        return self.RegisterFlows(request, context)

    def report_bytes(self, data: bytes, context: grpc.ServicerContext) -> agent_pb2.MoveReportAck:
        """ReportMove as served: its request's bytes parsed, then :meth:`ReportMove`."""
        try:
            request = agent_pb2.MoveReport.FromString(data)
        except Exception:  # noqa: BLE001 — as register_bytes
            # gRPC's own answer when its deserializer fails (what ReportMove said before)
            context.abort(grpc.StatusCode.INTERNAL, "Exception deserializing request!")
            raise
        return self.ReportMove(request, context)

    def bounded(self, rpc: str, serve: Callable[[bytes, grpc.ServicerContext], Any]
                ) -> Callable[[Iterator[bytes], grpc.ServicerContext], Any]:
        """The behaviour gRPC runs for ``rpc``: declared request-streaming, so that it
        starts before the request has come (gRPC Python's unary handlers wait for it in
        their thread, unbounded); the caller named and counted
        (:meth:`FlowRegistry.enter_call`), its one request awaited at most
        :data:`REQUEST_RECEIVE_S` (else the call is cancelled), then ``serve(bytes,
        context)``. A unary client sends its message and half-closes at once; messages
        after the first are not read."""
        registry = self.registry

        def behaviour(requests: Iterator[bytes], context: grpc.ServicerContext) -> Any:
            host = self._host(context, "")
            try:
                registry.enter_call(host)
            except RegistryError as exc:
                context.abort(exc.code, str(exc))
                raise
            try:
                data = first_request(requests, context.cancel, registry.request_receive_s)
            finally:
                # the bound is on calls *waiting* for their request: once it came, serving
                # takes milliseconds, and a host's agents (one certificate) may report
                # several moves of one round at once
                registry.leave_call(host)
            if data is None:
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, registry.request_timed_out(host, rpc))
            return serve(data, context)
        return behaviour

    def handlers(self) -> grpc.GenericRpcHandler:
        """The ``FlowRegistry`` service's methods (:meth:`bounded`), each taking its
        request's bytes."""
        method = grpc.stream_unary_rpc_method_handler
        return grpc.method_handlers_generic_handler(REGISTRY_SERVICE, {
            "RegisterFlows": method(self.bounded("RegisterFlows", self.register_bytes), None,
                                    agent_pb2.RegisterReply.SerializeToString),
            "ReportMove": method(self.bounded("ReportMove", self.report_bytes), None,
                                 agent_pb2.MoveReportAck.SerializeToString)})

    def ReportMove(self, request: agent_pb2.MoveReport,
                   context: grpc.ServicerContext) -> agent_pb2.MoveReportAck:
        host = self._host(context, request.host)
        try:
            self.registry.report(host, request.order_id, request.flow_id, done=request.done,
                                 sport=request.sport, error=request.error,
                                 nic_port=request.nic_port if request.HasField("nic_port") else None)
        except RegistryError as exc:
            context.abort(exc.code, str(exc))
            raise
        return agent_pb2.MoveReportAck()


def serve_registry(registry: FlowRegistry, bind: str = "127.0.0.1:0") -> tuple[grpc.Server, str]:
    """Start the ``FlowRegistry`` service with the registry's security (mutual TLS, or the
    token fallback); returns the server and the address to dial.

    >>> server, address = serve_registry(FlowRegistry(b"s", {}))
    >>> _ = server.stop(0).wait(); address.startswith("127.0.0.1:")
    True
    """
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=REGISTRY_WORKERS),
                         options=server_options(MAX_REGISTRY_REQUEST_BYTES))
    server.add_generic_rpc_handlers((FlowRegistryServicer(registry).handlers(),))
    address = listen(server, registry.security, bind, "registry")
    server.start()
    return server, address
