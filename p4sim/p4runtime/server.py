"""The P4Runtime gRPC service of a p4sim switch (``p4.v1.P4Runtime``, spec v1.x).

``P4RuntimeServer(device, address, request_log, extras=False)`` serves one
:class:`p4sim.device.Device`. By default it answers as BMv2's server
(simple_switch_grpc + PI) does, operation by operation and code for code, so that a
controller developed on p4sim runs on BMv2; ``extras=True`` (``python -m p4sim switch
--p4runtime-extras``) enables what BMv2 lacks. The measured comparison and the decision
for each difference are in p4sim/README.md, "P4Runtime conformance".

* ``SetForwardingPipelineConfig``: ``p4_device_config`` in one of the forms of
  :mod:`p4sim.p4runtime.devconfig` (p4sim's JSON, ``{"program": PATH}``, either inside
  PI's ``p4.tmp.P4DeviceConfig``); the program is compiled and its P4Info (ids and names
  of tables and actions) must match the one given (``INVALID_ARGUMENT`` otherwise, also
  for VERIFY). VERIFY checks only; VERIFY_AND_SAVE makes the config the one Read/Write
  address while the old program keeps forwarding, COMMIT then starts it (a config in
  the COMMIT request is ignored, as BMv2 does; ``UNKNOWN`` without a saved config);
  VERIFY_AND_COMMIT starts it with empty state. RECONCILE_AND_COMMIT keeps the state when
  the device config and P4Info are the running ones (only the cookie changes) and
  otherwise behaves as VERIFY_AND_COMMIT (state reset).
* A device id that is not this device's: ``PERMISSION_DENIED`` ("Not primary") for
  SetForwardingPipelineConfig and Write, ``FAILED_PRECONDITION`` for
  GetForwardingPipelineConfig and Read (BMv2's codes).
* ``Write``: primary for (role, election id) (``PERMISSION_DENIED``), a pipeline
  (``FAILED_PRECONDITION``); atomicity CONTINUE_ON_ERROR. ROLLBACK_ON_ERROR and
  DATAPLANE_ATOMIC are ``UNIMPLEMENTED`` as in BMv2; with the extras they run (undo on
  the first error, the other updates reported ``ABORTED``; DATAPLANE_ATOMIC holds
  ``device.lock`` for the whole batch). A failed update makes the RPC fail with
  ``UNKNOWN`` and one ``p4.v1.Error`` per update in ``grpc-status-details-bin``.
* ``Read``: entities streamed in ``ReadResponse`` messages; a failed entity ends the RPC
  with its own code as the status (as BMv2), no entities returned.
* ``StreamChannel``: arbitration (:mod:`.arbitration`), PacketOut/PacketIn
  (:mod:`.packetio`, PacketIn to the primary of every role), DigestList / DigestListAck
  (:mod:`.digests`), IdleTimeoutNotification (:mod:`.idle`). A PacketOut from a backup
  or with an unknown metadata id is dropped without a word (as BMv2; with the extras a
  ``StreamError`` says why); errors about an ack come back as ``StreamError``.
* ``Capabilities``: ``p4runtime_api_version`` "1.3.0" (BMv2's), "1.4.1" with the extras.
* Transport: plaintext, or TLS with ``tls=`` a :class:`p4sim.p4runtime.tls.ServerTls`
  (simple_switch_grpc's ``--grpc-server-ssl`` options; client certificates required and
  verified with ``--grpc-server-with-client-auth``).
* Authorization (``policy=``, ``--p4rt-policy FILE``; p4sim only, BMv2 has none): which
  certificate identity may hold which role and what each role may do
  (:mod:`.authz`); without a policy every client the TLS layer lets in may do
  everything, as on BMv2.
* Streams are bounded, in total and per client identity (``stream_limits=``,
  :mod:`.streamlimits`): one more ends with ``RESOURCE_EXHAUSTED``, and the worker pool
  keeps threads no stream can take, so unary RPCs are always served.
* Each StreamChannel message is bounded by its size, per identity, on its bytes before it
  is parsed (``stream_message_bounds=``, :class:`.streamlimits.StreamMessageBounds`):
  16 KiB for an identity that only reads (the testbed's monitor), 1 MiB for one that
  may write; a larger one ends the stream ``RESOURCE_EXHAUSTED``, and a read-only
  identity's new streams are refused for a while after.

Example::

    >>> srv = P4RuntimeServer(device, "127.0.0.1:0", "logs/s1-p4runtime-requests.txt")  # doctest: +SKIP
    >>> port = srv.start()                                                               # doctest: +SKIP
    >>> srv.stop()                                                                       # doctest: +SKIP
"""
from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, Optional, Sequence

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4sim.device import Device
from p4sim.errors import P4Error
from p4sim.p4runtime import devconfig
from p4sim.p4runtime import roleconfig
from p4sim.p4runtime.arbitration import ArbitrationError, Arbiter, Session, election_id_value
from p4sim.p4runtime.authz import AuthzPolicy, Denied, RoleDef, peer_identity, role_label
from p4sim.p4runtime.digests import DigestStreamer
from p4sim.p4runtime.gcpause import freeze_long_lived, gc_paused, switch_thresholds
from p4sim.p4runtime.idle import IdleTimeoutMonitor
from p4sim.p4runtime.packetio import PacketIO
from p4sim.p4runtime.reqlog import RequestLog
from p4sim.p4runtime.streamlimits import (REQUEST_WAIT_S, WRITER_REQUEST_WAIT_S, ReadBudget, StreamLimitError,
                                         StreamLimits, StreamMessageBounds, first_request, read_limits,
                                         waiting_limits)
from p4sim.p4runtime.tls import ServerTls
from p4sim.p4runtime.workers import WorkerPool
from p4sim.runtime.errors import RuntimeStateError

if TYPE_CHECKING:     # the wire path's modules load numpy; the store imports them
    from p4sim.p4runtime.wirewrites import WireEntry

_ATOMICITIES = frozenset(p4runtime_pb2.WriteRequest.Atomicity.values())
"""The atomicity values the proto names (``Atomicity.values()`` builds a list per call)."""
log = logging.getLogger(__name__)

P4RUNTIME_API_VERSION = "1.3.0"          # BMv2's (PI's) answer
P4RUNTIME_API_VERSION_EXTRAS = "1.4.1"   # the protos p4sim serves, with the extras
MAX_RECEIVE_BYTES = 256 * 1024 * 1024
"""The largest request p4sim accepts, PI's (``pi_server.cpp``: ``SetMaxReceiveMessageSize(256MB)``;
gRPC's default, 4 MB, would refuse device configs and batches BMv2 takes). A larger one is
refused by gRPC with ``RESOURCE_EXHAUSTED`` before it is parsed."""
MAX_READ_ONLY_REQUEST_BYTES = 4 * 1024 * 1024
"""The largest ReadRequest of an identity that only reads (every role it holds read-only
under the policy, as the testbed's monitor): gRPC's default receive bound. Its Reads are a
few wildcards (well under 1 kB); a larger one is refused ``RESOURCE_EXHAUSTED`` before it
is parsed, where :data:`MAX_RECEIVE_BYTES` (256 MB) would let it make the switch parse
hundreds of MB. Writers keep PI's bound, as on BMv2."""
MAX_READ_ENTITIES = 1 << 20
"""Entities one Read may answer with (1,048,576: a hundred times the fabric's every table
entry and counter cell). A ReadRequest may repeat a wildcard: 200 copies of "every
counter" in an 802-byte request built a 52 MB answer and grew the switch by 330 MB, so a
request of a few kB would have exhausted the machine's memory. Beyond it the Read ends
with ``RESOURCE_EXHAUSTED`` before more is built."""
STOP_WAIT_S = 5.0
"""How long :meth:`P4RuntimeServer.stop` waits for gRPC's server to end its calls."""
_READ_CHUNK = 4096
"""Entities per ReadResponse. PI answers a Read with one response; p4sim splits very large
answers so that no response nears gRPC's default 4 MB limit on what a client receives
(4,096 table entries of the fabric are ~0.3 MB)."""

StoreFactory = Callable[[Any, p4info_pb2.P4Info], Any]
"""Builds the entity store of a program: ``EntityStore(program, p4info)``. A store answers
``write(update)`` and ``read(entity, new_entity)``, making each entity it reads with
``new_entity()`` (the response's ``entities.add``)."""

_Req = p4runtime_pb2.SetForwardingPipelineConfigRequest
_Get = p4runtime_pb2.GetForwardingPipelineConfigRequest


class RpcError(Exception):
    """Ends an RPC with a canonical code (name) and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class _RichStatus(NamedTuple):
    """A ``grpc.Status`` with binary details (what the grpcio-status package builds)."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, bytes], ...]


class _Status(_RichStatus, grpc.Status):
    pass


def _once(fn: Callable[[], None]) -> Callable[[], None]:
    """``fn`` wrapped to run at most once, whoever calls it first (thread-safe).

    >>> calls = []; f = _once(lambda: calls.append(1)); f(); f(); calls
    [1]
    """
    lock, done = threading.Lock(), [False]

    def run() -> None:
        with lock:
            if done[0]:
                return
            done[0] = True
        fn()
    return run


def _grpc_code(name: str) -> grpc.StatusCode:
    return grpc.StatusCode[name]


def batch_status(message: str, errors: list[p4runtime_pb2.Error]) -> grpc.Status:
    """The ``UNKNOWN`` status of a batch with one ``p4.v1.Error`` per update.

    Example::

        >>> st = batch_status("1 of 1 failed", [p4runtime_pb2.Error(canonical_code=5)])
        >>> st.code, st.trailing_metadata[0][0]
        (<StatusCode.UNKNOWN: (2, 'unknown')>, 'grpc-status-details-bin')
    """
    status = status_pb2.Status(code=code_pb2.UNKNOWN, message=message)
    for err in errors:
        packed = any_pb2.Any()
        packed.Pack(err)
        status.details.append(packed)
    return _Status(grpc.StatusCode.UNKNOWN, message,
                   (("grpc-status-details-bin", status.SerializeToString()),))


MAX_ERROR_MESSAGE_CHARS = 512
"""An update's error message is cut here: the batch's errors travel in gRPC trailers, which a
client drops past 16 KB, so no message may echo a client's value whole."""


def _p4_error(code: str, message: str = "") -> p4runtime_pb2.Error:
    if len(message) > MAX_ERROR_MESSAGE_CHARS:
        message = message[:MAX_ERROR_MESSAGE_CHARS - 3] + "..."
    return p4runtime_pb2.Error(canonical_code=code_pb2.Code.Value(code), message=message)


def counter_runs(entities: Sequence[p4runtime_pb2.Entity], start: int) -> tuple[int, list[list[p4runtime_pb2.CounterEntry]]]:
    """The indexed ``counter_entry`` reads from ``start`` on, as runs of one non-zero
    ``counter_id`` each: (the first index after them, the runs' CounterEntry messages);
    ``(start, [])`` when ``entities[start]`` is not one. One look at each entity.

    >>> def cell(cid, i=None):
    ...     e = p4runtime_pb2.Entity(); e.counter_entry.counter_id = cid
    ...     if i is not None: e.counter_entry.index.index = i
    ...     return e
    >>> ents = [cell(7, 0), cell(7, 1), cell(8, 2), cell(7, 0), cell(8), p4runtime_pb2.Entity()]
    >>> end, runs = counter_runs(ents, 0)
    >>> end, [[(c.counter_id, c.index.index) for c in run] for run in runs]
    (4, [[(7, 0), (7, 1)], [(8, 2)], [(7, 0)]])
    >>> counter_runs(ents, 4), counter_runs(ents, 5)
    ((4, []), (5, []))
    """
    runs: list[list[p4runtime_pb2.CounterEntry]] = []
    run: list[p4runtime_pb2.CounterEntry] = []
    run_id = 0
    at = start
    while at < len(entities):
        e = entities[at]
        if e.WhichOneof("entity") != "counter_entry":
            break
        ce = e.counter_entry
        cid = ce.counter_id
        if cid == 0 or not ce.HasField("index"):
            break
        if cid != run_id:
            run, run_id = [], cid
            runs.append(run)
        run.append(ce)
        at += 1
    return at, runs


class _Responses:
    """ReadResponses of at most :data:`_READ_CHUNK` entities; :meth:`new_entity` is the
    entity store's factory (``EntityStore.read(entity, new_entity)``): it adds the entity to
    the current response, so nothing is copied after it is filled. :meth:`add_wire` takes
    entities already encoded (the counters' wildcard reads, :mod:`.wirecounters`)."""

    def __init__(self, max_entities: int = MAX_READ_ENTITIES) -> None:
        self.responses: list[p4runtime_pb2.ReadResponse] = []
        self._left = 0
        self._room = max_entities
        self._max = max_entities
        self._current = p4runtime_pb2.ReadResponse()
        self._add: Callable[[], p4runtime_pb2.Entity] = p4runtime_pb2.Entity

    def _take(self, n: int) -> None:
        """Count ``n`` more entities; RpcError RESOURCE_EXHAUSTED beyond the bound."""
        self._room -= n
        if self._room < 0:
            raise RpcError("RESOURCE_EXHAUSTED", f"the Read's answer exceeds {self._max} entities "
                                                 "(MAX_READ_ENTITIES); ask for fewer per request")

    def _next(self) -> None:
        self._current = p4runtime_pb2.ReadResponse()
        self.responses.append(self._current)
        self._add, self._left = self._current.entities.add, _READ_CHUNK

    def new_entity(self) -> p4runtime_pb2.Entity:
        if self._left == 0:
            self._next()
        self._take(1)
        self._left -= 1
        return self._add()

    def add_wire(self, wire: bytes, width: int) -> None:
        """Append the ``ReadResponse.entities`` items of ``wire``, each ``width`` bytes,
        in order, starting a new response every :data:`_READ_CHUNK` entities."""
        at = 0
        while at < len(wire):
            if self._left == 0:
                self._next()
            take = min(self._left, (len(wire) - at) // width)
            self._take(take)
            self._current.MergeFromString(wire[at:at + take * width])
            self._left -= take
            at += take * width


class _Split(NamedTuple):
    """A Write request split by :meth:`P4RuntimeServer._split_write`: the pipeline whose
    store read it, the request's fields but the updates, the updates (parsed when asked
    for) and each one's wire entry."""

    pipe: "Pipeline"
    head: p4runtime_pb2.WriteRequest
    updates: Sequence[p4runtime_pb2.Update]
    wire: Sequence[Optional["WireEntry"]]


class _Unparsed(Exception):
    """A StreamChannel message that does not parse (:func:`_parsed_stream`)."""


def _parsed_stream(raw: Iterator[bytes],
                   check: Optional[Callable[[int], None]] = None) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
    """The StreamMessageRequests of a stream's bytes; :class:`_Unparsed` at one that does
    not parse (logged, as :meth:`P4RuntimeServer._parse` logs a request). ``check(size)``
    is called with each message's size in bytes before it is parsed: what it raises
    (:class:`~p4sim.p4runtime.streamlimits.StreamLimitError` for a message over the
    identity's bound) ends the stream unparsed.

    >>> ok = p4runtime_pb2.StreamMessageRequest(packet={"payload": b"x"}).SerializeToString()
    >>> [m.packet.payload for m in _parsed_stream(iter([ok]))]
    [b'x']
    >>> list(_parsed_stream(iter([b"\\xff"])))
    Traceback (most recent call last):
    ...
    p4sim.p4runtime.server._Unparsed: a StreamChannel message (1 bytes) does not parse
    >>> bound = StreamMessageBounds(read_only=4, writer=8)
    >>> list(_parsed_stream(iter([ok]), lambda n: bound.check("monitor", True, n)))
    Traceback (most recent call last):
    ...
    p4sim.p4runtime.streamlimits.StreamLimitError: a StreamChannel message of 5 bytes from identity 'monitor' exceeds its bound of 4 bytes (an identity that only reads); refused before it was parsed
    """
    parse = p4runtime_pb2.StreamMessageRequest.FromString
    for data in raw:
        if check is not None:
            check(len(data))
        try:
            msg = parse(data)
        except Exception:  # noqa: BLE001 - what gRPC catches around a deserializer
            log.warning("P4Runtime StreamChannel: a message (%d bytes) does not parse", len(data))
            raise _Unparsed(f"a StreamChannel message ({len(data)} bytes) does not parse") from None
        yield msg


@dataclass
class Pipeline:
    """A verified forwarding pipeline: the program, its P4Info and entity store."""

    program: Any
    p4info: p4info_pb2.P4Info
    device_config: bytes
    cookie: Optional[int]
    store: Any
    packetio: PacketIO
    name: str = ""


def load_device_config(data: bytes, allow_paths: bool = False) -> tuple[Any, str]:
    """Compile the program a ``p4_device_config`` names (:mod:`.devconfig`; the
    ``{"program": PATH}`` form only with ``allow_paths``); returns (program, name).
    Raises :class:`RpcError` ``INVALID_ARGUMENT`` for a bad config or program.
    """
    try:
        return devconfig.load_device_config(data, allow_paths)
    except (ValueError, OSError) as e:       # DeviceConfigError is a ValueError
        raise RpcError("INVALID_ARGUMENT", str(e)) from None
    except P4Error as e:
        raise RpcError("INVALID_ARGUMENT", f"the program does not compile: {e}") from None


def check_p4info(given: p4info_pb2.P4Info, built: p4info_pb2.P4Info) -> None:
    """:func:`p4sim.p4runtime.devconfig.check_p4info`, ``INVALID_ARGUMENT`` on a mismatch."""
    try:
        devconfig.check_p4info(given, built)
    except devconfig.DeviceConfigError as e:
        raise RpcError("INVALID_ARGUMENT", str(e)) from None


class P4RuntimeServer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """P4Runtime service for one device (see the module docstring)."""

    def __init__(self, device: Device, address: str, request_log: Optional[str] = None,
                 store_factory: Optional[StoreFactory] = None, max_workers: Optional[int] = None,
                 extras: bool = False, tls: Optional[ServerTls] = None,
                 policy: Optional[AuthzPolicy] = None,
                 stream_limits: Optional[StreamLimits] = None,
                 max_receive_bytes: int = MAX_RECEIVE_BYTES, freeze_gc: bool = False,
                 stream_message_bounds: Optional[StreamMessageBounds] = None) -> None:
        self.device = device
        #: freeze the collector's survivors at each pipeline commit (gcpause.freeze_long_lived)
        #: and raise its young generation's threshold at start (gcpause.switch_thresholds);
        #: the switch process sets it, an embedding program may not want it
        self.freeze_gc = freeze_gc
        self.address = address
        self.tls = tls
        self.extras = extras
        self.policy = policy
        self.stream_limits = stream_limits or StreamLimits()
        #: the size bound of one StreamChannel message, per identity (checked unparsed)
        self.stream_message_bounds = stream_message_bounds or StreamMessageBounds()
        self.read_limits = read_limits()
        #: read-only identities' calls waiting for their request (streamlimits.waiting_limits)
        self.waiting_limits = waiting_limits()
        #: how long a unary RPC of an identity that only reads waits for its request, and
        #: of a writer or without a policy (streamlimits.REQUEST_WAIT_S, WRITER_REQUEST_WAIT_S)
        self.request_wait_s = REQUEST_WAIT_S
        self.writer_request_wait_s = WRITER_REQUEST_WAIT_S
        #: unary RPCs cancelled because their request did not come within request_wait_s
        self.requests_timed_out = 0
        #: device-lock time of read-only identities' Reads (streamlimits.ReadBudget)
        self.read_budget = ReadBudget()
        self.arbiter = Arbiter(device.device_id)
        self.reqlog = RequestLog(request_log) if request_log else None
        self.store_factory = store_factory or self._default_store
        # The switch clock (µs) that tables stamp hits with; a device without one gets
        # a clock of the server's own.
        clock_us = getattr(device, "clock_us", None)
        if clock_us is None:
            start = time.monotonic_ns()
            clock_us = lambda: (time.monotonic_ns() - start) // 1000  # noqa: E731
        self._clock_us: Callable[[], int] = clock_us
        # the same clock in ns, one call where the device offers it (the store reads it
        # once per inserted entry)
        clock_ns = getattr(device, "clock_ns", None) if clock_us is getattr(device, "clock_us", None) else None
        if not callable(clock_ns):
            clock_ns = lambda: clock_us() * 1000  # noqa: E731
        self._clock_ns: Callable[[], int] = clock_ns
        self.max_workers = max_workers or self.stream_limits.workers
        self.max_receive_bytes = max_receive_bytes
        self.pipeline: Optional[Pipeline] = None
        self.saved: Optional[Pipeline] = None
        self.port: Optional[int] = None
        self._state_lock = threading.RLock()
        self._sessions: dict[int, tuple[Session, "queue.Queue[Any]"]] = {}
        self._sessions_lock = threading.Lock()
        self._stream_ids = itertools.count(1)
        self._server: Optional[grpc.Server] = None
        self._pool: Optional[WorkerPool] = None
        self.digests = DigestStreamer(device, self._send_to_primaries)
        self.idle = IdleTimeoutMonitor(lambda: self.pipeline, self.clock_ns, self._send_to_primaries, device.lock)
        device.on_packet_in = self._on_packet_in

    def clock_ns(self) -> int:
        """The switch clock in ns (the base of table entries' ``last_hit_ns``)."""
        return self._clock_ns()

    def _default_store(self, program: Any, p4info: p4info_pb2.P4Info) -> Any:
        from p4sim.p4runtime.entities import EntityStore  # written alongside this module
        return EntityStore(program, p4info, clock_ns=self._clock_ns, extras=self.extras)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> int:
        """Bind and serve; returns the TCP port (useful with ``HOST:0``)."""
        # gRPC turns SO_REUSEPORT on by default: a second server on the same port would
        # silently share its connections with the first. A switch owns its port alone.
        self._pool = WorkerPool(self.max_workers, "p4rt")
        server = grpc.server(self._pool,  # type: ignore[arg-type]  # all gRPC asks of it: workers.py
                             options=[("grpc.so_reuseport", 0),
                                      ("grpc.max_receive_message_length", self.max_receive_bytes)])
        server.add_generic_rpc_handlers((self.rpc_handlers(),))
        try:
            port = server.add_insecure_port(self.address) if self.tls is None else \
                server.add_secure_port(self.address, self.tls.credentials())
        except RuntimeError:
            port = 0
        if port == 0:
            raise OSError(f"cannot listen on {self.address}: the address is in use by another "
                          "program or is not an address of this machine")
        server.start()
        if self.freeze_gc:
            switch_thresholds()
        self._server = server
        self.port = port
        self.digests.start()
        self.idle.start()
        return port

    def stop(self, grace: Optional[float] = 0.5) -> bool:
        """End every stream and RPC, stop the digest thread, close the request log. True
        when gRPC's server ended within :data:`STOP_WAIT_S` (False: a call was still in
        flight, logged)."""
        with self._sessions_lock:
            queues = [q for _, q in self._sessions.values()]
        for q in queues:
            q.put(None)
        ended = True
        if self._server is not None:
            ended = self._server.stop(grace).wait(STOP_WAIT_S)
            if not ended:
                log.warning("P4Runtime server: a call was still in flight %.0f s after stop", STOP_WAIT_S)
            self._server = None
        if self._pool is not None:
            self._pool.shutdown(wait=False)   # a stream's worker may still be unwinding
            self._pool = None
        self.digests.stop()
        self.idle.stop()
        if self.device.on_packet_in == self._on_packet_in:
            self.device.on_packet_in = None
        if self.reqlog is not None:
            self.reqlog.close()
        return ended

    def wait_for_termination(self, timeout: Optional[float] = None) -> bool:
        return self._server.wait_for_termination(timeout) if self._server is not None else True

    def rpc_handlers(self) -> grpc.GenericRpcHandler:
        """The ``p4.v1.P4Runtime`` methods as gRPC serves them. The unary ones and Read
        take the request's **bytes** (``request_deserializer=None``): the caller's
        identity is checked against the policy from the TLS auth context first
        (:meth:`_unread_identity`), and only then is the request parsed
        (:meth:`_parse`), so that a client with no right to a method cannot make the
        switch parse a request of up to :data:`MAX_RECEIVE_BYTES` (256 MB) for it. A
        Write then reads its table updates from those same bytes (:mod:`.wirewrites`).
        StreamChannel's messages are parsed by its reader thread (:meth:`_stream_bytes`):
        one that does not parse ends the stream ``INTERNAL`` "Exception deserializing
        request!", as gRPC's deserializer would, but with one status. When gRPC's own
        deserializer failed, gRPC Python (1.85) sent that status from its receive callback
        and then a second one when the handler returned; the core refuses the second, its
        completion never comes, and ``stop()`` waited its full 5 s for that call.

        >>> srv = P4RuntimeServer.__new__(P4RuntimeServer)
        >>> isinstance(srv.rpc_handlers(), grpc.GenericRpcHandler)
        True
        """
        pb = p4runtime_pb2
        unary = grpc.stream_unary_rpc_method_handler            # _one_request: see there
        return grpc.method_handlers_generic_handler("p4.v1.P4Runtime", {
            "Write": unary(self._one_request("Write", self._write_bytes), None,
                           pb.WriteResponse.SerializeToString),
            "Read": grpc.stream_stream_rpc_method_handler(self._one_request("Read", self._read_bytes), None,
                                                          pb.ReadResponse.SerializeToString),
            "SetForwardingPipelineConfig": unary(
                self._one_request("SetForwardingPipelineConfig", self._set_pipeline_bytes), None,
                pb.SetForwardingPipelineConfigResponse.SerializeToString),
            "GetForwardingPipelineConfig": unary(
                self._one_request("GetForwardingPipelineConfig", self._get_pipeline_bytes), None,
                pb.GetForwardingPipelineConfigResponse.SerializeToString),
            "Capabilities": unary(self._one_request("Capabilities", self._capabilities_bytes), None,
                                  pb.CapabilitiesResponse.SerializeToString),
            "StreamChannel": grpc.stream_stream_rpc_method_handler(
                self._stream_bytes, None, pb.StreamMessageResponse.SerializeToString),
        })

    def _one_request(self, rpc: str, serve: Callable[[bytes, grpc.ServicerContext], Any]
                     ) -> Callable[[Iterator[bytes], grpc.ServicerContext], Any]:
        """The behaviour gRPC runs for the unary ``rpc``, declared request-streaming so that
        it starts before the request has come (gRPC Python's unary handlers wait for it on
        their worker, without bound): the caller's identity checked first
        (:meth:`_unread_identity`: one the policy refuses waits for nothing), a Read
        waiting counted as a Read in progress (:attr:`read_limits`), another RPC of a
        read-only identity by :attr:`waiting_limits`, the request awaited at
        most :attr:`request_wait_s` (:attr:`writer_request_wait_s` for an identity that may
        write, and without a policy; then the call is cancelled), then ``serve(bytes,
        context)``. A unary client sends its one message and half-closes at once; a
        message after the first is not read."""
        def behaviour(requests: Iterator[bytes], context: grpc.ServicerContext) -> Any:
            try:
                identity = self._unread_identity(context, rpc)
            except RpcError as e:
                self._abort(context, e)
            # a Read waiting for its request is a Read in progress (read_limits, every
            # identity); another RPC waiting is bounded for read-only identities
            reader = self.policy is not None and not self._may_write(identity)
            wait_s = self.request_wait_s if reader else self.writer_request_wait_s
            limits = self.read_limits if rpc == "Read" else (self.waiting_limits if reader else None)
            if limits is not None:
                try:
                    limits.acquire(identity)
                except StreamLimitError as e:
                    log.warning("P4Runtime %s refused: %s", rpc, e.message)
                    context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, e.message)
            try:
                data = first_request(requests, context.cancel, wait_s)
            finally:
                if limits is not None:
                    limits.release(identity)
            if data is None:
                self.requests_timed_out += 1
                log.warning("P4Runtime %s from %r: no request within %g s (REQUEST_WAIT_S): cancelled",
                            rpc, identity, wait_s)
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                              f"{rpc}: no request within {wait_s:g} s (REQUEST_WAIT_S)")
            return serve(data, context)
        return behaviour

    def _unread_identity(self, context: grpc.ServicerContext, rpc: str) -> Optional[str]:
        """The caller's identity, decided before its request is read: with a policy,
        RpcError PERMISSION_DENIED for an identity the policy does not name (every RPC,
        the message of :meth:`_identity`), for a Write or SetForwardingPipelineConfig by
        an identity none of whose roles may write (the testbed's monitor), and for
        SetForwardingPipelineConfig by one none of whose roles may push a pipeline
        (``can_push_pipeline``; a role config narrows a role, never widens it). Such a
        request would be refused PERMISSION_DENIED whatever it holds, so it is refused
        unread. Without a policy every caller passes, as on BMv2."""
        identity = peer_identity(context)
        if self.policy is None:
            return identity
        pol = self.policy
        try:
            roles = pol.require_identity(identity, rpc)
            if rpc not in ("Write", "SetForwardingPipelineConfig"):
                return identity
            who = repr(identity) if identity else "(no client certificate)"
            held = ", ".join(role_label(r) for r in roles)
            if all(pol.roles[r].read_only for r in roles):
                what = f"identity {who} may not hold role '<default>' nor" if "" not in roles \
                    else f"identity {who} may not"
                raise Denied(f"{what} write as any role it holds ({held}: read-only, Read and "
                             f"GetForwardingPipelineConfig only): {rpc} refused before its request was read")
            if rpc == "SetForwardingPipelineConfig" and not any(pol.roles[r].can_push_pipeline for r in roles):
                raise Denied(f"identity {who} may not push a pipeline: no role it holds ({held}) has "
                             f"can_push_pipeline: {rpc} refused before its request was read")
        except Denied as e:
            raise self._denied(e, rpc) from None
        return identity

    def _parse(self, cls: Any, data: bytes, context: grpc.ServicerContext) -> Any:
        """``cls.FromString(data)``; a request that does not parse ends the RPC as gRPC's
        own deserializer ends it (``INTERNAL`` "Exception deserializing request!")."""
        try:
            msg = cls.FromString(data)
        except Exception:  # noqa: BLE001 - what gRPC catches around a deserializer
            log.warning("P4Runtime %s: the request (%d bytes) does not parse", cls.__name__, len(data))
            context.abort(grpc.StatusCode.INTERNAL, "Exception deserializing request!")
        return msg

    def _write_bytes(self, data: bytes, context: grpc.ServicerContext) -> Any:
        try:
            identity = self._unread_identity(context, "Write")
        except RpcError as e:
            self._abort(context, e)
        pre = self._split_write(data)
        if pre is not None:
            return self._write(pre.head, context, identity, data, pre)
        return self._write(self._parse(p4runtime_pb2.WriteRequest, data, context), context, identity, data)

    def _split_write(self, data: bytes) -> Optional["_Split"]:
        """The Write ``data`` with every update read from its bytes by the target
        pipeline's store (:func:`.wirewrites.split_request`: upb parses only the
        request's other fields, and an update only when it is asked for); None when one
        is not, without a store that can, with a request log (it records the whole
        request) or when anything fails (the whole request is parsed then, and refused
        as gRPC would refuse it)."""
        pipe = self.saved or self.pipeline      # checked again under the state lock
        if pipe is None or self.reqlog is not None:
            return None
        split = getattr(pipe.store, "split_write", None)
        if split is None:
            return None
        try:
            got = split(data)
        except Exception:  # noqa: BLE001 - a field that does not parse: the whole parse says so
            return None
        return None if got is None else _Split(pipe, *got)

    def _read_bytes(self, data: bytes, context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            identity = self._unread_identity(context, "Read")
            if len(data) > MAX_READ_ONLY_REQUEST_BYTES and self._read_only(identity) is not None:
                raise RpcError("RESOURCE_EXHAUSTED", f"identity {identity!r} only reads: a ReadRequest "
                                                     f"of {len(data)} bytes exceeds {MAX_READ_ONLY_REQUEST_BYTES} "
                                                     "(MAX_READ_ONLY_REQUEST_BYTES); refused before it was read")
        except RpcError as e:
            log.warning("P4Runtime Read refused: %s", e.message)
            self._abort(context, e)
        yield from self.Read(self._parse(p4runtime_pb2.ReadRequest, data, context), context)

    def _set_pipeline_bytes(self, data: bytes, context: grpc.ServicerContext) -> Any:
        try:
            self._unread_identity(context, "SetForwardingPipelineConfig")
        except RpcError as e:
            self._abort(context, e)
        return self.SetForwardingPipelineConfig(self._parse(_Req, data, context), context)

    def _get_pipeline_bytes(self, data: bytes, context: grpc.ServicerContext) -> Any:
        try:
            self._unread_identity(context, "GetForwardingPipelineConfig")
        except RpcError as e:
            self._abort(context, e)
        return self.GetForwardingPipelineConfig(self._parse(_Get, data, context), context)

    def _capabilities_bytes(self, data: bytes, context: grpc.ServicerContext) -> Any:
        try:
            self._unread_identity(context, "Capabilities")
        except RpcError as e:
            self._abort(context, e)
        return self.Capabilities(self._parse(p4runtime_pb2.CapabilitiesRequest, data, context), context)

    def _stream_bytes(self, request_iterator: Iterator[bytes],
                      context: grpc.ServicerContext) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        """:meth:`StreamChannel` of the stream's messages as bytes, each parsed as it is
        read (:meth:`rpc_handlers`), after its size is checked against the caller's bound
        (:attr:`stream_message_bounds`: small for an identity that only reads or that the
        policy does not name, larger for one that may write and for every caller without a
        policy): a larger message ends the stream ``RESOURCE_EXHAUSTED`` unparsed."""
        identity = peer_identity(context)
        read_only = self.policy is not None and not self._may_write(identity)
        bounds = self.stream_message_bounds
        return self.StreamChannel(_parsed_stream(
            request_iterator, lambda size: bounds.check(identity, read_only, size)), context)

    def _may_write(self, identity: Optional[str]) -> bool:
        """True when the policy lets ``identity`` hold a role that is not read-only."""
        pol = self.policy
        return pol is not None and any(r in pol.roles and not pol.roles[r].read_only
                                       for r in pol.roles_of(identity))

    # ------------------------------------------------------------------ helpers
    def _check_device(self, device_id: int, write: bool) -> None:
        """BMv2's answers to a device id that is not this device's."""
        if device_id == self.device.device_id:
            return
        if write:
            raise RpcError("PERMISSION_DENIED", f"Not primary: device {device_id} is not this device "
                                                f"({self.device.device_id})")
        raise RpcError("FAILED_PRECONDITION", f"No forwarding pipeline config set for device {device_id} "
                                              f"(this device is {self.device.device_id})")

    def _check_primary(self, role: str, request: Any, identity: Optional[str] = None,
                       rpc: str = "Write") -> None:
        eid = election_id_value(request.election_id) if request.HasField("election_id") else None
        if not self.arbiter.is_primary(role, eid):
            raise RpcError("PERMISSION_DENIED",
                           f"election id {eid} is not the primary's for role {role or '<default>'}")
        if self.policy is not None:
            primary = self.arbiter.primary_of(role)
            owner = primary.identity if primary is not None else None
            if owner != identity:
                raise self._denied(Denied(
                    f"identity {identity!r} is not the primary of role {role_label(role)}: "
                    f"election id {eid} belongs to the stream of {owner!r}"), rpc=rpc)

    # ------------------------------------------------------------------ authorization
    def _denied(self, err: Denied, rpc: str) -> RpcError:
        log.warning("P4Runtime %s refused: %s", rpc, err.message)
        return RpcError(err.code, err.message)

    def _identity(self, context: grpc.ServicerContext, rpc: str, role: Optional[str] = None) -> Optional[str]:
        """The caller's identity (its certificate's common name); with a policy,
        RpcError PERMISSION_DENIED for an identity it does not name (or that does not hold
        ``role``)."""
        identity = peer_identity(context)
        if self.policy is not None:
            try:
                if role:
                    self.policy.require_role(identity, role, rpc)
                else:
                    self.policy.require_identity(identity, rpc)
            except Denied as e:
                raise self._denied(e, rpc) from None
        return identity

    def _writer(self, identity: Optional[str], role: str, rpc: str) -> Optional[RoleDef]:
        """With a policy, the role's effective definition when ``identity`` may write in it
        (RpcError PERMISSION_DENIED otherwise); None without a policy."""
        if self.policy is None:
            return None
        try:
            self.policy.require_writer(identity, role, rpc)
        except Denied as e:
            raise self._denied(e, rpc) from None
        return self._effective_role(role)

    def _effective_role(self, role: str) -> RoleDef:
        """The policy's role as its primary's ``role.config`` narrows it (spec: the
        primary's config is the role's)."""
        assert self.policy is not None
        base = self.policy.roles[role]
        cfg = self.arbiter.role_config(role)
        if cfg is None:
            return base
        primary = self.arbiter.primary_of(role)
        return base.narrowed(roleconfig.unpack(cfg), primary.identity if primary else "")

    def _check_arbitration(self, session: Session, msg: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """With a policy: the stream's identity must hold the role, which must not be
        read-only, and a ``role.config`` must be Stratum's P4RoleConfig within the role."""
        if self.policy is None:
            return
        role = msg.role.name
        try:
            rd = self.policy.require_writer(session.identity, role, "StreamChannel arbitration")
            if msg.role.HasField("config"):
                try:
                    cfg = roleconfig.unpack(msg.role.config)
                except ValueError as e:
                    raise ArbitrationError("INVALID_ARGUMENT", str(e)) from None
                rd.narrowed(cfg, session.identity or "")
        except Denied as e:
            err = self._denied(e, "StreamChannel")
            raise ArbitrationError(err.code, err.message) from None

    def _target(self) -> Pipeline:
        """The pipeline Read/Write address: a saved config first, else the running one."""
        pipe = self.saved or self.pipeline
        if pipe is None:
            raise RpcError("FAILED_PRECONDITION", "no forwarding pipeline config has been set")
        return pipe

    @staticmethod
    def _abort(context: grpc.ServicerContext, err: RpcError) -> None:
        context.abort(_grpc_code(err.code), err.message)

    # ------------------------------------------------------------------ pipeline config
    def SetForwardingPipelineConfig(self, request: _Req, context: grpc.ServicerContext) -> Any:
        try:
            identity = self._identity(context, "SetForwardingPipelineConfig")
            self._check_device(request.device_id, write=True)
            rd = self._writer(identity, request.role, "SetForwardingPipelineConfig")
            self._check_primary(request.role, request, identity, "SetForwardingPipelineConfig")
            if rd is not None and not rd.can_push_pipeline:
                raise self._denied(Denied(f"identity {identity!r}: role {role_label(request.role)} may "
                                          "not push a pipeline (can_push_pipeline is not set)"),
                                   "SetForwardingPipelineConfig")
            self._set_pipeline(request)
        except RpcError as e:
            self._abort(context, e)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _set_pipeline(self, request: _Req) -> None:
        action = request.action
        if action == _Req.UNSPECIFIED or action not in _Req.Action.values():
            raise RpcError("INVALID_ARGUMENT", "SetForwardingPipelineConfig: action is not set")
        if action == _Req.COMMIT:   # a config in the request is ignored, as BMv2 does
            with self._state_lock:
                if self.saved is None:
                    raise RpcError("UNKNOWN", "Error in second phase of device update: COMMIT without a "
                                              "saved config (VERIFY_AND_SAVE first)")
                if self.reqlog is not None:
                    self.reqlog.pipeline_config(request, self.saved.name)
                self._commit(self.saved)
            return
        if not request.HasField("config") or not request.config.p4_device_config:
            raise RpcError("INVALID_ARGUMENT", "SetForwardingPipelineConfig: config is not provided")
        config = request.config
        if action == _Req.RECONCILE_AND_COMMIT:
            with self._state_lock:
                run = self.pipeline
                if (run is not None and self.saved is None and run.device_config == config.p4_device_config
                        and run.p4info == config.p4info):
                    run.cookie = config.cookie.cookie if config.HasField("cookie") else None
                    if self.reqlog is not None:
                        self.reqlog.pipeline_config(request, run.name)
                    return
        pipe = self._verify(config)
        if self.reqlog is not None:
            self.reqlog.pipeline_config(request, pipe.name)
        if action == _Req.VERIFY:
            return
        with self._state_lock:
            if action == _Req.VERIFY_AND_SAVE:
                self.saved = pipe
            else:
                self._commit(pipe)

    def _verify(self, config: p4runtime_pb2.ForwardingPipelineConfig) -> Pipeline:
        from p4sim.p4info import build_p4info
        program, name = load_device_config(config.p4_device_config, allow_paths=self.extras)
        try:
            built = build_p4info(program)
        except Exception as e:  # noqa: BLE001 - report any generator failure to the client
            raise RpcError("INVALID_ARGUMENT", f"cannot build P4Info for the program: {e}") from None
        check_p4info(config.p4info, built)
        too_complex = devconfig.digest_too_complex(config.p4info)
        if too_complex is not None:   # PI's P4Info import fails before any device update
            raise RpcError("UNKNOWN", f"Error when importing p4info: digest {too_complex!r}: "
                           "Packed type for digest too complex (PI takes only bit<W> members)")
        p4info = p4info_pb2.P4Info()
        p4info.CopyFrom(config.p4info)
        try:
            store = self.store_factory(program, p4info)
        except RuntimeStateError as e:
            raise RpcError(e.code, e.message) from None
        cookie = config.cookie.cookie if config.HasField("cookie") else None
        return Pipeline(program, p4info, bytes(config.p4_device_config), cookie, store, PacketIO(p4info), name)

    def _commit(self, pipe: Pipeline) -> None:
        with self.device.lock:
            self.device.set_program(pipe.program)
            self.pipeline = pipe
            self.saved = None
        self.digests.set_pipeline(pipe.program, pipe.p4info)
        if self.freeze_gc:
            freeze_long_lived()

    def GetForwardingPipelineConfig(self, request: _Get, context: grpc.ServicerContext) -> Any:
        try:
            self._identity(context, "GetForwardingPipelineConfig")
            self._check_device(request.device_id, write=False)
            pipe = self.saved or self.pipeline    # BMv2 answers with a saved config too
            if pipe is None:
                raise RpcError("FAILED_PRECONDITION", "No forwarding pipeline config set for this device")
        except RpcError as e:
            self._abort(context, e)
            return None   # not reached: abort raises
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        cfg = resp.config
        if pipe.cookie is not None:
            cfg.cookie.cookie = pipe.cookie
        rt = request.response_type
        if rt in (_Get.ALL, _Get.P4INFO_AND_COOKIE):
            cfg.p4info.CopyFrom(pipe.p4info)
        if rt in (_Get.ALL, _Get.DEVICE_CONFIG_AND_COOKIE):
            cfg.p4_device_config = pipe.device_config
        cfg.SetInParent()
        return resp

    def Capabilities(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self._identity(context, "Capabilities")
        except RpcError as e:
            self._abort(context, e)
        version = P4RUNTIME_API_VERSION_EXTRAS if self.extras else P4RUNTIME_API_VERSION
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=version)

    # ------------------------------------------------------------------ Write
    def Write(self, request: p4runtime_pb2.WriteRequest, context: grpc.ServicerContext) -> Any:
        """The servicer's Write of a parsed request (gRPC calls :meth:`_write_bytes`)."""
        try:
            identity = self._identity(context, "Write")
        except RpcError as e:
            self._abort(context, e)
        return self._write(request, context, identity, None)

    def _write(self, request: p4runtime_pb2.WriteRequest, context: grpc.ServicerContext,
               identity: Optional[str], data: Optional[bytes], pre: Optional["_Split"] = None) -> Any:
        """A Write by ``identity`` (the policy has named it); ``data``: the request's bytes
        as received (None: re-encoded for the wire path); ``pre``: ``data`` split by
        :meth:`_split_write` (``request`` is then its fields but the updates)."""
        try:
            self._check_device(request.device_id, write=True)
            rd = self._writer(identity, request.role, "Write")
            self._check_primary(request.role, request, identity)
            if request.atomicity not in _ATOMICITIES:
                raise RpcError("INVALID_ARGUMENT", f"unknown atomicity {request.atomicity}")
            if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR and not self.extras:
                raise RpcError("UNIMPLEMENTED", "Support for atomic write modes has not been implemented yet "
                                                "(as in BMv2; python -m p4sim switch --p4runtime-extras enables "
                                                "ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC)")
            if self.reqlog is not None:
                self.reqlog.write_request(request)
            if pre is not None and request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                request, pre = self._parse(p4runtime_pb2.WriteRequest, data, context), None
            with self._state_lock:
                pipe = self._target()
                if pre is not None and pre.pipe is not pipe:     # a commit came between
                    request, pre = self._parse(p4runtime_pb2.WriteRequest, data, context), None
                if pre is not None:
                    updates: Sequence[p4runtime_pb2.Update] = pre.updates
                    wire: Optional[Sequence[Optional[WireEntry]]] = pre.wire
                else:
                    updates = request.updates
                    wire = self._wire_updates(pipe, request, data)
                denied = self._denied_updates(identity, rd, request, wire, updates)
                errors = self._apply(pipe, request, denied, data, wire, wire_known=True, updates=updates)
        except RpcError as e:
            self._abort(context, e)
            return p4runtime_pb2.WriteResponse()  # not reached: abort raises
        failed = sum(1 for e in errors if e.canonical_code != code_pb2.OK)
        if failed:
            context.abort_with_status(batch_status(f"{failed} of {len(errors)} updates failed", errors))
        return p4runtime_pb2.WriteResponse()

    @staticmethod
    def _wire_updates(pipe: Pipeline, request: p4runtime_pb2.WriteRequest,
                      data: Optional[bytes]) -> Optional[Sequence[Optional[WireEntry]]]:
        """The request's updates read from its bytes (``data``, else upb's encoding of it)
        by the store (:mod:`.wirewrites`), for a CONTINUE_ON_ERROR batch on a store with
        runs; None otherwise."""
        store = pipe.store
        wire_of = getattr(store, "wire_updates", None)
        if (wire_of is None or getattr(store, "write_run", None) is None
                or request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR):
            return None
        return wire_of(request, data)

    def _denied_updates(self, identity: Optional[str], rd: Optional[RoleDef],
                        request: p4runtime_pb2.WriteRequest,
                        wire: Optional[Sequence[Optional[WireEntry]]] = None,
                        updates: Optional[Sequence[p4runtime_pb2.Update]] = None) -> dict[int, p4runtime_pb2.Error]:
        """Updates the role may not write (spec: ``PERMISSION_DENIED`` for that update). An
        update read from the wire (``wire[i]``) is judged by its table id, once per table
        (upb's accessors cost ~1 µs an update), the others by their entity. ``updates``:
        the request's (default ``request.updates``)."""
        if rd is None or self.policy is None:
            return {}
        out = {}
        policy = self.policy
        if updates is None:
            updates = request.updates
        by_table: dict[int, Optional[str]] = {}
        for i in range(len(updates)):
            w = wire[i] if wire is not None else None
            if w is not None:
                tid = w[1]
                if tid in by_table:
                    why = by_table[tid]
                else:
                    why = by_table[tid] = policy.p4_id_denied(rd, tid)
            else:
                why = policy.update_denied(rd, updates[i].entity)
            if why is not None:
                log.warning("P4Runtime Write update %d refused: identity %r: %s", i, identity, why)
                out[i] = _p4_error("PERMISSION_DENIED", f"identity {identity!r}: {why}")
        return out

    def _apply(self, pipe: Pipeline, request: p4runtime_pb2.WriteRequest,
               denied: Optional[dict[int, p4runtime_pb2.Error]] = None,
               data: Optional[bytes] = None, wire: Optional[Sequence[Optional[WireEntry]]] = None,
               wire_known: bool = False,
               updates: Optional[Sequence[p4runtime_pb2.Update]] = None) -> list[p4runtime_pb2.Error]:
        """Apply the batch; one ``p4.v1.Error`` per update (OK when it succeeded), or no
        list at all when every update of a CONTINUE_ON_ERROR batch succeeded; ``denied``
        updates fail with their error without being tried. ``data``: the bytes ``request``
        was parsed from, whose updates the wire path reads (None: upb re-encodes it);
        ``wire_known``: ``wire`` is already :meth:`_wire_updates` of them; ``updates``:
        the request's (default ``request.updates``; :class:`.wirewrites.Updates` when the
        server split the request)."""
        W = p4runtime_pb2.WriteRequest
        if updates is None:             # indexed as needed: the wire path reads most from bytes
            updates = request.updates
        lock = self.device.lock
        denied = denied or {}
        if request.atomicity == W.CONTINUE_ON_ERROR:
            # one hold of the device lock for the batch, as PI holds its device lock for a
            # whole WriteRequest; an OK Error is made only when the batch has a failure
            failed: dict[int, p4runtime_pb2.Error] = dict(denied)
            # runs of updates the store applies without undos (planned table INSERTs) go
            # in one call each (EntityStore.write_run); the update a run stops at goes
            # through _write_one, which applies it or gives its error
            run = getattr(pipe.store, "write_run", None)
            n = len(updates)
            # the updates read once from the request's bytes (p4sim/p4runtime/wirewrites.py)
            if not wire_known:
                wire = self._wire_updates(pipe, request, data)
            with lock, gc_paused():
                i = 0
                while i < n:
                    if i in denied:
                        i += 1
                        continue
                    if run is not None:
                        stop = min((j for j in denied if j > i), default=n) if denied else n
                        i = run(updates, i, stop, wire)
                        if i >= stop:
                            continue
                    err = self._write_one(pipe, updates[i])
                    if err is not None:
                        failed[i] = err
                    i += 1
            if not failed:
                return []
            return [failed.get(i) or _p4_error("OK") for i in range(len(updates))]
        errors = [_p4_error("OK") for _ in updates]
        atomic = request.atomicity == W.DATAPLANE_ATOMIC
        undos: list[Callable[[], None]] = []
        if atomic:
            lock.acquire()
        pause = gc_paused()
        pause.__enter__()
        try:
            for i, upd in enumerate(updates):
                undo_box: list[Callable[[], None]] = []
                if i in denied:
                    err = denied[i]
                elif atomic:
                    err = self._write_one(pipe, upd, undo_box)
                else:
                    with lock:
                        err = self._write_one(pipe, upd, undo_box)
                if err is None:
                    undos.extend(undo_box)
                    continue
                for undo in reversed(undos):
                    if atomic:
                        undo()
                    else:
                        with lock:
                            undo()
                for j in range(len(updates)):
                    if j != i:
                        errors[j] = _p4_error("ABORTED", f"batch rolled back: update {i} failed")
                errors[i] = err
                break
        finally:
            pause.__exit__(None, None, None)
            if atomic:
                lock.release()
        return errors

    @staticmethod
    def _write_one(pipe: Pipeline, upd: p4runtime_pb2.Update,
                   undo_box: Optional[list[Callable[[], None]]] = None) -> Optional[p4runtime_pb2.Error]:
        try:
            undo = pipe.store.write(upd)
        except RuntimeStateError as e:
            return _p4_error(e.code, e.message)
        except Exception as e:  # noqa: BLE001 - one bad update must not kill the batch
            log.exception("Write: update failed unexpectedly")
            return _p4_error("INTERNAL", f"{type(e).__name__}: {e}")
        if undo_box is not None and undo is not None:
            undo_box.append(undo)
        return None

    # ------------------------------------------------------------------ Read
    def Read(self, request: p4runtime_pb2.ReadRequest, context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            identity = self._identity(context, "Read", request.role or None)
            self.read_limits.acquire(identity)     # first: "N open Reads" is said as such
            budgeted = self._read_only(identity)
            if budgeted is not None:
                try:
                    self.read_budget.check(budgeted)
                except StreamLimitError:
                    self.read_limits.release(identity)
                    raise
        except RpcError as e:
            self._abort(context, e)
            return
        except StreamLimitError as e:     # a client holding its answers: streamlimits.py
            log.warning("P4Runtime Read refused: %s", e.message)
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, e.message)
            return
        release = _once(lambda: self.read_limits.release(identity))
        context.add_callback(release)     # also when the client goes while a send waits
        try:
            try:
                self._check_device(request.device_id, write=False)
                with self._state_lock:
                    pipe = self._target()
                    held = [0.0]
                    try:
                        responses = self._read_all(pipe, request, held)
                    finally:
                        if budgeted is not None:
                            self.read_budget.charge(budgeted, held[0])
            except RpcError as e:
                self._abort(context, e)
                return
            yield from responses
        finally:
            release()

    def _read_only(self, identity: Optional[str]) -> Optional[str]:
        """``identity`` when the policy lets it only read (every role it holds read-only,
        as the testbed's monitor): its Reads are held to :attr:`read_budget`. None
        otherwise (a writer, which can reprogram the switch anyway, or no policy)."""
        if self.policy is None or not identity:
            return None
        roles = self.policy.roles_of(identity)
        if roles and all(r in self.policy.roles and self.policy.roles[r].read_only for r in roles):
            return identity
        return None

    def _read_all(self, pipe: Pipeline, request: p4runtime_pb2.ReadRequest,
                  held: Optional[list[float]] = None) -> list[p4runtime_pb2.ReadResponse]:
        """The responses holding every entity the request asks for, each entity built in
        its response (:class:`_Responses`); the first failing one ends the Read with its
        code as the RPC status (:class:`RpcError`), as BMv2 does. ``held[0]``: set to the
        seconds the device lock was held."""
        out = _Responses()
        with self.device.lock:
            t0 = time.monotonic()
            try:
                self._read_into(pipe, request, out)
            finally:
                if held is not None:
                    held[0] = time.monotonic() - t0
        return out.responses

    def _read_into(self, pipe: Pipeline, request: p4runtime_pb2.ReadRequest, out: "_Responses") -> None:
        """Build every entity of ``request`` into ``out`` (the device lock held). Consecutive
        indexed cells of counters (GOR's poller asks for its ports' cells this way, counter
        after counter) are encoded in one call, in runs of one counter each
        (:func:`counter_runs`): the same answer and the same first error as one entity at
        a time."""
        ents = request.entities
        cells = getattr(pipe.store, "read_counter_runs", None)
        at = 0
        while at < len(ents):
            ent = ents[at]
            end, runs = counter_runs(ents, at) if cells is not None else (at, [])
            if not runs:
                end = at + 1
            if ent.WhichOneof("entity") is None:
                raise RpcError("UNKNOWN", "Incorrect entity type: the entity is empty")
            try:
                if runs:
                    cells(runs, out.add_wire)
                else:
                    for _ in pipe.store.read(ent, out.new_entity, out.add_wire):   # built in place
                        pass
            except RuntimeStateError as e:
                raise RpcError(e.code, e.message) from None
            except RpcError:
                raise
            except Exception as e:  # noqa: BLE001
                log.exception("Read failed unexpectedly")
                raise RpcError("INTERNAL", f"{type(e).__name__}: {e}") from None
            at = end

    # ------------------------------------------------------------------ StreamChannel
    def StreamChannel(self, request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],
                      context: grpc.ServicerContext) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        try:
            identity = self._identity(context, "StreamChannel")
            self.stream_message_bounds.admit(identity)     # a read-only identity held off
            self.stream_limits.acquire(identity)
        except RpcError as e:
            self._abort(context, e)
            return
        except StreamLimitError as e:
            log.warning("P4Runtime StreamChannel refused: %s", e.message)
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, e.message)
            return
        try:
            yield from self._serve_stream(identity, request_iterator, context)
        finally:
            self.stream_limits.release(identity)

    def _serve_stream(self, identity: Optional[str],
                      request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],
                      context: grpc.ServicerContext) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        outq: "queue.Queue[Any]" = queue.Queue()
        session = Session(next(self._stream_ids), outq.put, identity=identity)
        with self._sessions_lock:
            self._sessions[session.stream_id] = (session, outq)
        context.add_callback(lambda: outq.put(None))
        reader = threading.Thread(target=self._read_stream, args=(session, request_iterator, outq),
                                  name=f"p4rt-stream-{session.stream_id}", daemon=True)
        reader.start()
        try:
            while True:
                item = outq.get()
                if item is None:
                    return
                if isinstance(item, RpcError):
                    context.abort(_grpc_code(item.code), item.message)
                yield item
        finally:
            with self._sessions_lock:
                self._sessions.pop(session.stream_id, None)
            self.arbiter.remove(session)

    def _read_stream(self, session: Session, requests: Iterator[p4runtime_pb2.StreamMessageRequest],
                     outq: "queue.Queue[Any]") -> None:
        try:
            for req in requests:
                kind = req.WhichOneof("update")
                try:
                    if kind == "arbitration":
                        self._check_arbitration(session, req.arbitration)
                        self.arbiter.update(session, req.arbitration,
                                            accept_config=self.policy is not None)
                    elif kind == "packet":
                        self._packet_out(session, req.packet)
                    elif kind == "digest_ack":
                        self._digest_ack(session, req.digest_ack)
                    else:
                        outq.put(self._stream_error("UNIMPLEMENTED", f"stream message {kind} is not supported"))
                except ArbitrationError as e:
                    outq.put(RpcError(e.code, e.message))
                    return
        except _Unparsed:
            outq.put(RpcError("INTERNAL", "Exception deserializing request!"))
        except StreamLimitError as e:      # a message over the identity's bound, unparsed
            log.warning("P4Runtime StreamChannel ended: %s", e.message)
            outq.put(RpcError("RESOURCE_EXHAUSTED", e.message))
        except grpc.RpcError:
            pass  # the client went away
        except Exception:  # noqa: BLE001
            log.exception("StreamChannel reader failed")
        finally:
            outq.put(None)

    @staticmethod
    def _stream_error(code: str, message: str) -> p4runtime_pb2.StreamMessageResponse:
        resp = p4runtime_pb2.StreamMessageResponse()
        resp.error.canonical_code = code_pb2.Code.Value(code)
        resp.error.message = message
        return resp

    def _packet_out(self, session: Session, msg: p4runtime_pb2.PacketOut) -> None:
        err: Optional[RpcError] = None
        pipe = self.pipeline
        silent = not self.extras      # BMv2 drops a bad PacketOut without telling the client
        if session.role is None or not self.arbiter.is_primary(session.role, session.election_id):
            err = RpcError("PERMISSION_DENIED", "PacketOut from a controller that is not primary")
        elif pipe is None:
            silent = False
            err = RpcError("FAILED_PRECONDITION", "no forwarding pipeline config has been set")
        else:
            try:
                frame = pipe.packetio.packet_out_frame(msg)
            except RuntimeStateError as e:
                err = RpcError(e.code, e.message)
            else:
                self.device.inject_cpu(frame)
                return
        if silent:
            log.warning("PacketOut dropped: %s", err.message)
            return
        resp = self._stream_error(err.code, err.message)
        resp.error.packet_out.packet_out.CopyFrom(msg)
        session.send(resp)

    def _digest_ack(self, session: Session, ack: p4runtime_pb2.DigestListAck) -> None:
        try:
            if session.role is None or not self.arbiter.is_primary(session.role, session.election_id):
                raise RuntimeStateError("PERMISSION_DENIED", "DigestListAck from a controller that is not primary")
            self.digests.ack(ack)
        except RuntimeStateError as e:
            resp = self._stream_error(e.code, e.message)
            resp.error.digest_list_ack.digest_list_ack.CopyFrom(ack)
            session.send(resp)

    # ------------------------------------------------------------------ device → controllers
    def _send_to_primaries(self, msg: p4runtime_pb2.StreamMessageResponse) -> bool:
        targets = self.arbiter.primaries()
        if self.policy is not None:
            targets = [s for s in targets if self._receives(s, msg)]
        for s in targets:
            s.send(msg)
        return bool(targets)

    def _receives(self, session: Session, msg: p4runtime_pb2.StreamMessageResponse) -> bool:
        """With a policy: whether the primary ``session``'s role gets ``msg`` (PacketIn:
        ``receives_packet_ins`` and its filter; digests and idle-timeout notifications:
        roles that may write the digest / table)."""
        assert self.policy is not None
        if session.role is None or session.role not in self.policy.roles:
            return False
        rd = self._effective_role(session.role)
        kind = msg.WhichOneof("update")
        if kind == "packet":
            return rd.receives_packet_ins and (rd.packet_in_filter is None or
                                               rd.packet_in_filter.passes(msg.packet))
        if kind == "digest":
            return self.policy.may_notify(rd, msg.digest.digest_id)
        if kind == "idle_timeout_notification":
            entries = msg.idle_timeout_notification.table_entry
            return bool(entries) and self.policy.may_notify(rd, entries[0].table_id)
        return not rd.read_only

    def _on_packet_in(self, frame: bytes) -> None:
        pipe = self.pipeline
        if pipe is None:
            return
        resp = p4runtime_pb2.StreamMessageResponse()
        resp.packet.CopyFrom(pipe.packetio.packet_in_message(frame))
        self._send_to_primaries(resp)
