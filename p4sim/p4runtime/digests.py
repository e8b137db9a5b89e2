"""Digest streaming: ``digest()`` values from the data plane → P4Runtime ``DigestList``.

A thread waits on ``device.digest_event``, drains ``program.state.digests`` under
``device.lock`` and batches the values of each *configured* digest (a ``DigestEntry``
was written; values of unconfigured digests are dropped, as BMv2 does) following its
``DigestEntry.Config``:

* a list is sent when it holds ``max_list_size`` values (0 = no limit), or when
  ``max_timeout_ns`` has passed since its first value (0 = at once);
* a value equal to one already waiting in the list is dropped, and a value already sent
  is dropped until its list is acknowledged (``DigestListAck``) or ``ack_timeout_ns``
  has passed since it was sent (0 = no such suppression) — BMv2's learning filter;
* ``list_id`` counts up from 1 per server; ``data`` is one ``P4Data`` per value
  (struct members as canonical bitstrings); ``timestamp`` is ns since the epoch.

Lists go to ``sink`` (the server sends them to the primary controllers).

After each drain the streamer tells the queue how many new values can complete a list
it holds (:meth:`~p4sim.runtime.digest.DigestQueue.wake_after`: ``max_list_size`` less
what it holds, or 1 when it holds none, so that a list's timeout starts at its first
value); a device whose ``on_digest`` asks the queue
(:meth:`~p4sim.runtime.digest.DigestQueue.take_due`, :mod:`p4sim.switchd.device`) wakes
it only then, and the timeouts wake it on their own. The lists sent are the same as
when it woke for every value; a switch sampling GOR's ``flow_sample_t`` at ~350 values
a second per alarmed port (lists of 8, 10 ms) woke ~4 times a list before, twice now
(issue 32).

Example::

    >>> streamer = DigestStreamer(device, sink=print)        # doctest: +SKIP
    >>> streamer.set_pipeline(program, p4info); streamer.start()   # doctest: +SKIP
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from p4.config.v1 import p4info_pb2, p4types_pb2
from p4.v1 import p4runtime_pb2

from p4sim.device import Device
from p4sim.p4runtime.codec import encode_p4data
from p4sim.p4runtime.wiredigests import DigestWire
from p4sim.runtime.errors import RuntimeStateError

log = logging.getLogger(__name__)

SinkFn = Callable[[p4runtime_pb2.StreamMessageResponse], bool]
"""Sends a message to the controllers; returns whether anyone received it."""

_IDLE_WAIT_S = 0.5
_NEVER = 1 << 62
"""A wake-up count no digest reaches (a list without a size limit goes by its timeout)."""


@dataclass
class _Pending:
    values: list[tuple[Any, ...]] = field(default_factory=list)
    first_ns: int = 0


class _Held:
    """What the streamer holds of one digest, for :meth:`DigestQueue.hold
    <p4sim.runtime.digest.DigestQueue.hold>`: a value waiting in its list, or sent and
    not yet acknowledged (the learning filter), is dropped when the data plane pushes it,
    whenever the streamer wakes next."""

    __slots__ = ("streamer", "name")

    def __init__(self, streamer: "DigestStreamer", name: str) -> None:
        self.streamer, self.name = streamer, name

    def __deepcopy__(self, memo: dict[int, Any]) -> "_Held":
        """Itself: a view of the streamer, not state (a Write's undo snapshots the queue)."""
        return self

    def __contains__(self, values: object) -> bool:
        seen = self.streamer._filter.get(self.name)
        if seen is not None and values in seen:
            return True
        pend = self.streamer._pending.get(self.name)
        return pend is not None and values in pend.values


@dataclass
class _Sent:
    name: str
    values: list[tuple[Any, ...]]
    expires_ns: Optional[int]


class DigestStreamer:
    """Batches, sends and de-duplicates digest lists for one device (module docstring)."""

    def __init__(self, device: Device, sink: SinkFn,
                 clock_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self.device = device
        self.sink = sink
        self.clock_ns = clock_ns
        self._lock = threading.Lock()
        self._program: Any = None
        self._digests: dict[str, p4info_pb2.Digest] = {}
        self._wire: dict[str, Optional[DigestWire]] = {}
        self._type_info = p4types_pb2.P4TypeInfo()
        self._pending: dict[str, _Pending] = {}
        self._sent: dict[int, _Sent] = {}
        self._filter: dict[str, set[tuple[Any, ...]]] = {}
        self._held: dict[str, _Held] = {}      # handed to the program's digest queue
        self._next_list_id = 1
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    # ------------------------------------------------------------------ lifecycle
    def set_pipeline(self, program: Any, p4info: Optional[p4info_pb2.P4Info]) -> None:
        """A new program: forget everything pending, sent or filtered."""
        with self._lock:
            self._program = program
            self._digests = {d.preamble.name: d for d in p4info.digests} if p4info is not None else {}
            self._type_info = p4info.type_info if p4info is not None else p4types_pb2.P4TypeInfo()
            self._wire = {name: DigestWire.build(d.type_spec, self._type_info) for name, d in self._digests.items()}
            self._pending.clear()
            self._sent.clear()
            self._filter.clear()
            self._held.clear()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="p4rt-digests", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.device.digest_event.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            wait_s = self._next_deadline_s()
            self.device.digest_event.wait(wait_s)
            self.device.digest_event.clear()
            if self._stop.is_set():
                return
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - the thread must survive a bad digest
                log.exception("digest streaming failed")

    def _next_deadline_s(self) -> float:
        now = self.clock_ns()
        deadlines = []
        with self._lock:
            for name, p in self._pending.items():
                cfg = self._config(name)
                if p.values and cfg is not None:
                    deadlines.append(p.first_ns + cfg.max_timeout_ns)
            deadlines.extend(s.expires_ns for s in self._sent.values() if s.expires_ns is not None)
        if not deadlines:
            return _IDLE_WAIT_S
        return min(_IDLE_WAIT_S, max(0.0, (min(deadlines) - now) / 1e9))

    # ------------------------------------------------------------------ work
    def _config(self, name: str) -> Any:
        prog = self._program
        return prog.state.digests.get_config(name) if prog is not None else None

    def poll(self) -> None:
        """Drain the device's digest queue and send every list that is due."""
        prog = self._program
        if prog is None:
            return
        queue = prog.state.digests
        with self.device.lock:
            drained = queue.drain()
            now = self.clock_ns()
            with self._lock:
                if prog is not self._program:
                    return
                self._expire(now)
                for dl in drained:
                    cfg = self._config(dl.digest_name)
                    if cfg is None or dl.digest_name not in self._digests:
                        continue  # not configured: BMv2 sends nothing
                    pend = self._pending.setdefault(dl.digest_name, _Pending())
                    seen = self._filter.get(dl.digest_name, set())
                    for values in dl.values:
                        if values in seen or values in pend.values:
                            continue
                        if not pend.values:
                            pend.first_ns = now
                        pend.values.append(values)
                out = self._due_lists(now)
                # what wakes this thread next (the device lock still held: no value in between)
                due = [name for name, pend in self._pending.items()
                       if queue.wake_after(name, self._values_to_wake(name, pend))]
                for name in self._pending.keys() - self._held:
                    self._held[name] = _Held(self, name)
                    queue.hold(name, self._held[name])
        if due:
            self.device.digest_event.set()
        for msg in out:
            self.sink(msg)

    def _values_to_wake(self, name: str, pend: _Pending) -> int:
        """New values of ``name`` that can complete its list: 1 when none is held (its first
        value starts the timeout), ``max_list_size`` less those held, or, with no size
        limit, as many as could ever come (only the timeout sends the list)."""
        cfg = self._config(name)
        if cfg is None or not pend.values:
            return 1
        if cfg.max_list_size == 0:
            return _NEVER
        return max(1, cfg.max_list_size - len(pend.values))

    def _due_lists(self, now: int) -> list[p4runtime_pb2.StreamMessageResponse]:
        out: list[p4runtime_pb2.StreamMessageResponse] = []
        for name, pend in self._pending.items():
            cfg = self._config(name)
            if cfg is None or not pend.values:
                continue
            size = cfg.max_list_size
            chunks: list[list[tuple[Any, ...]]] = []
            while size > 0 and len(pend.values) >= size:
                chunks.append(pend.values[:size])
                pend.values = pend.values[size:]
            if pend.values and now - pend.first_ns >= cfg.max_timeout_ns:
                chunks.append(pend.values)
                pend.values = []
            if chunks and pend.values:
                pend.first_ns = now  # the rest starts a new list
            for chunk in chunks:
                msg = self._message(name, chunk)
                if msg is None:
                    continue
                list_id = msg.digest.list_id
                if cfg.ack_timeout_ns > 0:
                    self._sent[list_id] = _Sent(name, chunk, now + cfg.ack_timeout_ns)
                    self._filter.setdefault(name, set()).update(chunk)
                out.append(msg)
        return out

    def _message(self, name: str, values: list[tuple[Any, ...]]) -> Optional[p4runtime_pb2.StreamMessageResponse]:
        d = self._digests[name]
        msg = p4runtime_pb2.StreamMessageResponse()
        dl = msg.digest
        dl.digest_id = d.preamble.id
        kind = d.type_spec.WhichOneof("type_spec")
        wire = self._wire.get(name)
        try:
            data = wire.encode(values) if wire is not None else None
            if data is not None:
                dl.MergeFromString(data)      # wiredigests: the same message, no accessors
            else:
                self._encode_values(dl, kind, d, values)
        except (RuntimeStateError, TypeError, ValueError) as e:
            log.error("digest %s: cannot encode %r: %s", name, values, e)
            return None
        dl.list_id = self._next_list_id
        self._next_list_id += 1
        dl.timestamp = time.time_ns()
        return msg

    def _encode_values(self, dl: p4runtime_pb2.DigestList, kind: Optional[str], d: p4info_pb2.Digest,
                       values: list[tuple[Any, ...]]) -> None:
        """The message path: each value through :func:`encode_p4data`."""
        for v in values:
            if kind == "bitstring" and isinstance(v, tuple) and len(v) == 1:
                v = v[0]
            encode_p4data(v, d.type_spec, self._type_info, dl.data.add())

    def _expire(self, now: int) -> None:
        for list_id in [i for i, s in self._sent.items() if s.expires_ns is not None and s.expires_ns <= now]:
            self._release(list_id)

    def _release(self, list_id: int) -> bool:
        sent = self._sent.pop(list_id, None)
        if sent is None:
            return False
        filt = self._filter.get(sent.name)
        if filt is not None:
            filt.difference_update(sent.values)
        return True

    def ack(self, ack: p4runtime_pb2.DigestListAck) -> None:
        """A ``DigestListAck``: its values may be reported again. Unknown ids raise
        ``RuntimeStateError("NOT_FOUND")`` (the server reports a StreamError)."""
        with self._lock:
            d = next((d for d in self._digests.values() if d.preamble.id == ack.digest_id), None)
            if d is None:
                raise RuntimeStateError("NOT_FOUND", f"no digest with id {ack.digest_id}")
            sent = self._sent.get(ack.list_id)
            if sent is None or sent.name != d.preamble.name:
                # already expired, or never sent with an ack timeout: nothing to release
                return
            self._release(ack.list_id)
