"""Bounded ``StreamChannel`` s, so that no client can starve a switch's P4Runtime server.

p4sim's gRPC server runs each RPC on a worker thread, and a ``StreamChannel`` holds its
thread for as long as it is open. Without a bound, a client that opens streams and sends
nothing (no arbitration needed) takes every worker and the controller's ``Read`` and
``Write`` wait until those streams close. So:

* at most :data:`DEFAULT_MAX_STREAMS` streams are open at once, and at most
  :data:`DEFAULT_MAX_STREAMS_PER_CLIENT` per client identity (the common name of its
  verified certificate; without client certificates every client is one anonymous
  identity, so only the total applies);
* a stream beyond either bound ends at once with ``RESOURCE_EXHAUSTED`` (the code the
  P4Runtime specification gives for too many streams), naming the identity and the bound;
* the server's worker pool is the stream bound plus :data:`RPC_WORKERS` threads that no
  stream can take: unary RPCs (the primary's Write, Read, pipeline push) always find a
  worker, whatever is open.

``python -m p4sim switch --p4rt-max-streams N --p4rt-max-streams-per-client N`` change
the bounds (p4sim options, before ``--``).

A ``Read`` holds its worker too while its answer waits for the client: a client that asks
for a large answer (a wildcard counter read, repeated in one request) and never reads it
keeps the worker blocked in gRPC's flow control. Sixty such Reads with the monitor's
read-only certificate once left the controller's Read and Write waiting past 30 s. So
Reads in progress are bounded the same way (:func:`read_limits`: at most
:data:`DEFAULT_MAX_READS_PER_CLIENT` per identity, :data:`DEFAULT_MAX_READS` in all, fewer
than :data:`RPC_WORKERS`), a Read beyond them ends at once with ``RESOURCE_EXHAUSTED``.

A unary RPC waits for its request at most :data:`REQUEST_WAIT_S` once it holds a worker
(:data:`WRITER_REQUEST_WAIT_S` for an identity that may write)
(:func:`first_request`; gRPC Python gives it the worker before the request comes); a Read
waiting so counts as a Read in progress (:func:`read_limits`), and an identity that only
reads has at most :data:`READ_ONLY_WAITING_REQUESTS` other calls waiting
(:func:`waiting_limits`): a call that sends its headers and never its message holds no
worker for long.

Each StreamChannel message is bounded by its size too, checked on its bytes before it is
parsed (:class:`StreamMessageBounds`): an identity that only reads (the testbed's monitor)
may send :data:`READ_ONLY_STREAM_MESSAGE_BYTES` (16 KiB), one that may write
:data:`WRITER_STREAM_MESSAGE_BYTES` (1 MiB); a larger message ends its stream with
``RESOURCE_EXHAUSTED``, unparsed, and a read-only identity that sent it has its new streams
refused for :data:`READ_ONLY_HOLD_OFF_S` (gRPC has received the message whole by then).

>>> lim = StreamLimits(max_streams=3, per_client=2)
>>> a, b = lim.acquire("b0s0"), lim.acquire("b0s0")
>>> lim.acquire("b0s0")
Traceback (most recent call last):
...
p4sim.p4runtime.streamlimits.StreamLimitError: identity 'b0s0' already has 2 open StreamChannels (at most 2 per client identity)
>>> c = lim.acquire("controller")
>>> lim.acquire("monitor")
Traceback (most recent call last):
...
p4sim.p4runtime.streamlimits.StreamLimitError: the switch already has 3 open StreamChannels (at most 3); identity 'monitor' refused
>>> lim.release("b0s0"); lim.open_streams()
2
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Callable, Iterator, Optional

import grpc

DEFAULT_MAX_STREAMS = 32
DEFAULT_MAX_STREAMS_PER_CLIENT = 8
RPC_WORKERS = 16
"""Worker threads kept for unary RPCs beyond the streams' (BMv2's PI has no such bound:
gRPC C++'s synchronous server grows its thread pool as calls arrive)."""
DEFAULT_MAX_READS = 12
"""Reads in progress at most, in total: :data:`RPC_WORKERS` less 4 workers that only a
Write, a pipeline push, GetForwardingPipelineConfig or Capabilities can take."""
DEFAULT_MAX_READS_PER_CLIENT = 6
"""Reads in progress at most per client identity: two identities (the testbed's
controller and monitor) fit in :data:`DEFAULT_MAX_READS` together."""


class StreamLimitError(Exception):
    """A stream refused by a bound; the RPC ends with ``RESOURCE_EXHAUSTED``."""

    code = "RESOURCE_EXHAUSTED"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class StreamLimits:
    """The open-stream counts, total and per identity (thread-safe)."""

    def __init__(self, max_streams: int = DEFAULT_MAX_STREAMS,
                 per_client: int = DEFAULT_MAX_STREAMS_PER_CLIENT, what: str = "StreamChannels") -> None:
        if max_streams < 1 or per_client < 1:
            raise ValueError(f"bounds of {what} must be at least 1")
        self.max_streams = max_streams
        self.per_client = per_client
        self.what = what
        self._open: Counter[Optional[str]] = Counter()
        self._lock = threading.Lock()
        self.refused = 0

    @property
    def workers(self) -> int:
        """The worker threads a server with these bounds needs (streams + RPC_WORKERS)."""
        return self.max_streams + RPC_WORKERS

    def acquire(self, identity: Optional[str]) -> Optional[str]:
        """Count one more stream of ``identity`` (None: anonymous); StreamLimitError when
        a bound is reached. Returns the key to :meth:`release`."""
        who = repr(identity) if identity else "(anonymous)"
        with self._lock:
            total = sum(self._open.values())
            if total >= self.max_streams:
                self.refused += 1
                raise StreamLimitError(f"the switch already has {total} open {self.what} "
                                       f"(at most {self.max_streams}); identity {who} refused")
            if identity is not None and self._open[identity] >= self.per_client:
                self.refused += 1
                raise StreamLimitError(f"identity {who} already has {self._open[identity]} open "
                                       f"{self.what} (at most {self.per_client} per client identity)")
            self._open[identity] += 1
        return identity

    def release(self, identity: Optional[str]) -> None:
        """One stream of ``identity`` closed."""
        with self._lock:
            if self._open[identity] > 0:
                self._open[identity] -= 1
            if self._open[identity] == 0:
                del self._open[identity]

    def open_streams(self, identity: Optional[str] = None, *, every: bool = True) -> int:
        """Open streams in total (``every``), or of one identity."""
        with self._lock:
            return sum(self._open.values()) if every and identity is None else self._open[identity]


def read_limits(max_reads: int = DEFAULT_MAX_READS,
                per_client: int = DEFAULT_MAX_READS_PER_CLIENT) -> StreamLimits:
    """The bounds on Reads in progress (a :class:`StreamLimits` counting Reads).

    >>> lim = read_limits(max_reads=2, per_client=1)
    >>> _ = lim.acquire("monitor")
    >>> lim.acquire("monitor")
    Traceback (most recent call last):
    ...
    p4sim.p4runtime.streamlimits.StreamLimitError: identity 'monitor' already has 1 open Reads (at most 1 per client identity)
    """
    if max_reads >= RPC_WORKERS:
        raise ValueError(f"at most {RPC_WORKERS - 1} Reads in progress: {RPC_WORKERS} workers serve every unary RPC")
    return StreamLimits(max_reads, per_client, what="Reads")


REQUEST_WAIT_S = 2.0
"""The longest a unary RPC (Write, Read, a pipeline push or get, Capabilities) waits for
its request once it holds a worker; then it is cancelled (the client sees ``CANCELLED``).
gRPC Python's synchronous server hands a unary call to a worker *before* its request has
come and waits there without bound: 200 calls with the monitor's certificate that sent
their HTTP/2 headers and no message held every worker, and the controller's Read ended
``DEADLINE_EXCEEDED`` after 30 s (sec-red2-s49). gRPC C++'s synchronous server (BMv2's PI)
hands a unary call to a thread only once its request is read. The largest legitimate
request, a pipeline push (~70 KB for ``fabric.p4``), crosses the loopback in milliseconds."""
WRITER_REQUEST_WAIT_S = 30.0
""":data:`REQUEST_WAIT_S` for an identity that may write (and every caller of a switch
started without a policy): such a request may be up to the receive bound (16 MiB on the
testbed, 256 MB PI's) and a writer's key can reprogram the switch anyway; a 100 MB Write
over the loopback of a loaded 2-core machine took more than 2 s."""
READ_ONLY_WAITING_REQUESTS = 2
"""Calls other than Reads (GetForwardingPipelineConfig, Capabilities: its Writes and
pipeline pushes are refused before they wait) of one identity that only reads (the
policy's read-only roles) that may wait for their request at once (a Read waiting counts
as a Read in progress, :data:`DEFAULT_MAX_READS_PER_CLIENT`); the next is refused ``RESOURCE_EXHAUSTED`` before it waits. An
identity that may write (and every caller without a policy) is bounded by
:data:`REQUEST_WAIT_S` only, as writes are: a writer's key can delete every entry."""
READ_ONLY_WAITING_TOTAL = 4
"""Calls of every read-only identity together that may wait for their request at once:
a quarter of :data:`RPC_WORKERS`, so Reads in progress (:data:`DEFAULT_MAX_READS`) and
waiting calls leave workers to the controller."""


def waiting_limits() -> StreamLimits:
    """The bounds on read-only identities' calls waiting for their request.

    >>> lim = waiting_limits(); _ = lim.acquire("monitor"); _ = lim.acquire("monitor")
    >>> lim.acquire("monitor")
    Traceback (most recent call last):
    ...
    p4sim.p4runtime.streamlimits.StreamLimitError: identity 'monitor' already has 2 open calls waiting for their request (at most 2 per client identity)
    """
    return StreamLimits(READ_ONLY_WAITING_TOTAL, READ_ONLY_WAITING_REQUESTS,
                        what="calls waiting for their request")


def first_request(requests: Iterator[bytes], cancel: Callable[[], None],
                  wait_s: float = REQUEST_WAIT_S) -> Optional[bytes]:
    """The first message of ``requests`` (a request-streaming call's iterator), or None
    when none came within ``wait_s`` (``cancel()``, the call's ``context.cancel``, is
    called then) or the client ended the call first.

    >>> first_request(iter([b"req", b"more"]), cancel=lambda: None)
    b'req'
    >>> first_request(iter([]), cancel=lambda: None) is None
    True
    """
    timer = threading.Timer(wait_s, cancel)
    timer.daemon = True
    timer.start()
    try:
        return next(requests, None)
    except grpc.RpcError:                       # the client went, or the timer cancelled
        return None
    finally:
        timer.cancel()


DEFAULT_READ_LOCK_SHARE = 0.25
"""The share of wall time a read-only identity's Reads may hold the device lock, averaged
(each Read holds it while its answer is built, and the data plane waits meanwhile)."""
DEFAULT_READ_LOCK_BURST_S = 2.0
"""Device-lock seconds a read-only identity may use at once before the share applies."""


class ReadBudget:
    """A per-identity token bucket of device-lock seconds for Reads (thread-safe).

    Each identity starts with ``burst_s`` seconds, regains ``share`` seconds per second up
    to ``burst_s``, and is charged the time each of its Reads held the device lock; a
    Read that finds its identity's balance at or below zero is refused at once
    (:class:`StreamLimitError`, ``RESOURCE_EXHAUSTED``) with the wait until it is positive.
    A Read is charged after it ran, so concurrent Reads may leave a debt; it is repaid
    before the next one, so over time an identity holds the lock at most ``share`` of the
    time (plus ``burst_s``). The monitor's normal cadence (one counter Read and one ECMP
    Read per switch per second, ms each) uses about 1 % of it.

    >>> now = [0.0]
    >>> b = ReadBudget(share=0.25, burst_s=1.0, clock=lambda: now[0])
    >>> b.check("monitor"); b.charge("monitor", 1.5)       # a long wildcard Read
    >>> b.check("monitor")
    Traceback (most recent call last):
    ...
    p4sim.p4runtime.streamlimits.StreamLimitError: identity 'monitor' used its share of the device lock for Reads (25% of the time, 1 s at once); retry in 2.0 s
    >>> now[0] = 2.5; b.check("monitor")                   # the debt repaid: served again
    """

    def __init__(self, share: float = DEFAULT_READ_LOCK_SHARE, burst_s: float = DEFAULT_READ_LOCK_BURST_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < share <= 1 or burst_s <= 0:
            raise ValueError("want 0 < share <= 1 and burst_s > 0")
        self.share, self.burst_s, self._clock = share, burst_s, clock
        self._balance: dict[str, tuple[float, float]] = {}    # identity → (seconds, at)
        self._lock = threading.Lock()
        self.refused = 0

    def _now_balance(self, identity: str) -> float:
        now = self._clock()
        bal, at = self._balance.get(identity, (self.burst_s, now))
        bal = min(self.burst_s, bal + self.share * (now - at))
        self._balance[identity] = (bal, now)
        return bal

    def check(self, identity: str) -> None:
        """StreamLimitError when ``identity`` has no device-lock time left."""
        with self._lock:
            bal = self._now_balance(identity)
            if bal > 0:
                return
            self.refused += 1
        raise StreamLimitError(f"identity {identity!r} used its share of the device lock for Reads "
                               f"({self.share:.0%} of the time, {self.burst_s:g} s at once); "
                               f"retry in {(1e-3 - bal) / self.share:.1f} s")

    def charge(self, identity: str, held_s: float) -> None:
        """``identity``'s Read held the device lock ``held_s`` seconds."""
        with self._lock:
            bal = self._now_balance(identity)
            self._balance[identity] = (bal - max(0.0, held_s), self._balance[identity][1])


READ_ONLY_STREAM_MESSAGE_BYTES = 16 * 1024
"""The largest StreamChannel message an identity that only reads may send (16 KiB), checked
on its bytes before they are parsed. What such an identity may legitimately send is an
arbitration (under 100 B without a role config: device id, election id, role name; the
policy refuses it anyway), a digest ack (``DigestListAck``: two integers, under 20 B) and,
for a role that held primacy, a PacketOut of one frame: a 9,000-byte jumbo MTU + 18 B of
Ethernet header and tag + the packet_out metadata (fabric.p4's: two fields, under 16 B)
is 9,034 B. 16 KiB is that with room for a longer metadata header; 1/1024 of the switch's
receive bound (``p4sim.switchd.main.DEFAULT_MAX_RECEIVE_BYTES``, 16 MiB), which let the
read-only monitor make the switch parse 20 messages of 15 MiB in 1.2 s (0.51 s of the
switch's CPU, +184 MiB peak memory; sec-audit4)."""
WRITER_STREAM_MESSAGE_BYTES = 1024 * 1024
"""The largest StreamChannel message of an identity that may write (the controller; every
client without a policy), 1 MiB: a PacketOut of the largest frame a p4sim port reads
(``p4sim.switchd.ports.MAX_FRAME``, 65,540 B) with its metadata is 16 times under it, and
an arbitration's role config (Stratum's ``P4RoleConfig``, P4 ids of 4-5 B each) naming
every table, counter and action of a program of 100,000 such objects is half of it."""
READ_ONLY_HOLD_OFF_S = 10.0
"""Seconds for which an identity that only reads has its new StreamChannels refused after
one of its messages went over its bound. gRPC receives a message whole before the bound is
checked, so without it the monitor could still send 15 MiB per new stream: 20 streams of
one 15 MiB message each cost the switch 0.34 s of CPU and +68 MiB peak memory. A read-only
identity has no use for a stream (the policy refuses its arbitration), so the hold-off
costs it nothing legitimate."""


class StreamMessageBounds:
    """The per-identity bound on the size of one StreamChannel message, checked on the
    message's bytes before it is parsed: ``read_only`` bytes for an identity that only
    reads (or that the policy does not name), ``writer`` bytes for the others.
    :meth:`check` raises :class:`StreamLimitError` (the stream ends
    ``RESOURCE_EXHAUSTED``) for a larger message, and counts it in ``refused``. An identity
    that only reads and sent such a message has its new streams refused for ``hold_off_s``
    (:meth:`admit`); a writer (the controller) is never held off.

    >>> now = [0.0]
    >>> b = StreamMessageBounds(read_only=100, writer=1000, hold_off_s=10, clock=lambda: now[0])
    >>> b.check("monitor", True, 100); b.check("controller", False, 1000)
    >>> b.check("monitor", True, 101)
    Traceback (most recent call last):
    ...
    p4sim.p4runtime.streamlimits.StreamLimitError: a StreamChannel message of 101 bytes from identity 'monitor' exceeds its bound of 100 bytes (an identity that only reads); refused before it was parsed
    >>> b.refused
    1
    >>> now[0] = 4.0; b.admit("controller"); b.admit("monitor")
    Traceback (most recent call last):
    ...
    p4sim.p4runtime.streamlimits.StreamLimitError: identity 'monitor' sent a StreamChannel message over its bound of 100 bytes: its streams are refused for 6.0 s more
    >>> now[0] = 10.0; b.admit("monitor")
    """

    def __init__(self, read_only: int = READ_ONLY_STREAM_MESSAGE_BYTES,
                 writer: int = WRITER_STREAM_MESSAGE_BYTES, hold_off_s: float = READ_ONLY_HOLD_OFF_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < read_only <= writer or hold_off_s < 0:
            raise ValueError("want 0 < read_only <= writer bytes and hold_off_s >= 0")
        self.read_only, self.writer, self.hold_off_s = read_only, writer, hold_off_s
        self._clock = clock
        self._held: dict[str, float] = {}      # read-only identity → end of its hold-off
        self._lock = threading.Lock()
        self.refused = 0

    def admit(self, identity: Optional[str]) -> None:
        """StreamLimitError while ``identity`` is held off (a read-only identity whose
        message went over its bound less than ``hold_off_s`` ago)."""
        if identity is None or not self._held:
            return
        now = self._clock()
        with self._lock:
            for who in [w for w, until in self._held.items() if until <= now]:
                del self._held[who]
            until = self._held.get(identity)
        if until is not None:
            raise StreamLimitError(f"identity {identity!r} sent a StreamChannel message over its bound of "
                                   f"{self.read_only} bytes: its streams are refused for {until - now:.1f} s more")

    def bound(self, read_only: bool) -> int:
        """The bound in bytes of an identity that only reads (``read_only``) or may write."""
        return self.read_only if read_only else self.writer

    def check(self, identity: Optional[str], read_only: bool, size_bytes: int) -> None:
        """StreamLimitError when a message of ``size_bytes`` exceeds ``identity``'s bound."""
        bound = self.bound(read_only)
        if size_bytes <= bound:
            return
        with self._lock:
            self.refused += 1
            if read_only and identity is not None and self.hold_off_s > 0:
                self._held[identity] = self._clock() + self.hold_off_s
        who = repr(identity) if identity else "(anonymous)"
        kind = "an identity that only reads" if read_only else "an identity that may write"
        raise StreamLimitError(f"a StreamChannel message of {size_bytes} bytes from identity {who} "
                               f"exceeds its bound of {bound} bytes ({kind}); refused before it was parsed")


__all__ = ["DEFAULT_MAX_READS", "DEFAULT_MAX_READS_PER_CLIENT", "DEFAULT_MAX_STREAMS",
           "DEFAULT_MAX_STREAMS_PER_CLIENT", "DEFAULT_READ_LOCK_BURST_S", "DEFAULT_READ_LOCK_SHARE",
           "READ_ONLY_HOLD_OFF_S", "READ_ONLY_STREAM_MESSAGE_BYTES", "READ_ONLY_WAITING_REQUESTS",
           "READ_ONLY_WAITING_TOTAL", "REQUEST_WAIT_S", "RPC_WORKERS", "WRITER_REQUEST_WAIT_S", "first_request",
           "waiting_limits", "ReadBudget", "StreamLimitError", "StreamLimits",
           "StreamMessageBounds", "WRITER_STREAM_MESSAGE_BYTES", "read_limits"]
