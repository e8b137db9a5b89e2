"""The traffic manager of the p4sim switch: BMv2 ``simple_switch`` egress queues plus
IEEE 802.1Qbb PFC at the port MAC.

* One FIFO per egress port × priority (``priority_queues``, BMv2's ``--priority-queues``);
  strict priority, the highest index first. Queues exist for any port number on first use.
* Depth in packets (default 64) with tail drop; rate in packets per second (default 0 =
  unlimited). As in BMv2's rate-limited queueing logic, each packet's departure time is
  fixed when it is enqueued: ``max(now, previous departure + 1/rate)``. A packet leaves
  when its departure time has come and no higher priority of its port has one ready.
* ``enq_qdepth`` is the depth of the egress port's queues (all priorities, as BMv2's
  ``egress_buffers.size(port)``) before the push; ``deq_qdepth`` the same after the pop.
* PFC (p4sim's addition; BMv2 has none): :meth:`TrafficManager.pause` stops the listed
  priorities of one port for ``quanta`` × 512 bit times at the port's line rate
  (``line_rate_gbps``, default 10); 0 quanta resumes. A paused queue keeps its packets
  (it still tail-drops when full). A new pause frame restarts the timer from now.
* PFC watchdog (:meth:`TrafficManager.set_pfc_watchdog`, off by default; SONiC's pfcwd,
  :class:`~p4sim.switchd.pfc.PfcWatchdog`): a queue paused for the detection time while it
  holds packets is in a storm: its pause ends and PAUSE frames for it are counted but
  ignored; ``drop`` also discards its packets, queued and arriving. No PAUSE frame (non-zero
  time) for that priority for the restoration time, counted from the storm's start or the
  last such frame, restores it. Checked whenever the queue is looked at (the scheduler wakes
  at the detection time of a paused queue that holds packets), with the restore dated at
  the time it fell due, so the result does not depend on when anyone polls.
* Counters per port and priority: enqueued, dequeued, dropped, paused time (µs), pause
  frames received, and the watchdog's storms detected / restored and packets it dropped.

Times are microseconds of ``clock_us`` (the switch clock, shared with the pipeline's
timestamps). :meth:`TrafficManager.poll` is the non-blocking scheduler step (tests drive
it with a fake clock; :meth:`TrafficManager.poll_wake` also says when to look again);
:meth:`TrafficManager.dequeue` blocks. ``cond``: the condition notified whenever a packet
may have become ready (enqueue, resume, rate change, close); the switch shares it with its
ingress buffer so that one worker waits on both.

Example::

    >>> now = [0]
    >>> tm = TrafficManager(clock_us=lambda: now[0], rate_pps=1000)
    >>> tm.enqueue(1, 0, "a"), tm.enqueue(1, 0, "b")      # enq_qdepth of each
    (0, 1)
    >>> tm.poll().item, tm.poll()                          # "b" departs at t = 1000 µs
    ('a', None)
    >>> now[0] = 1000; tm.poll().item
    'b'
"""
from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, NamedTuple, Optional

from p4sim.switchd.pfc import PfcWatchdog, quanta_to_us

DEFAULT_DEPTH_PKTS = 64
DEFAULT_LINE_RATE_GBPS = 10.0
MAX_PRIORITY_QUEUES = 32


@dataclass
class QueueCounters:
    """Counters of one egress queue (port × priority)."""

    enqueued: int = 0
    dequeued: int = 0
    dropped: int = 0
    paused_us: float = 0.0
    pause_frames: int = 0
    pfcwd_storms: int = 0
    pfcwd_restored: int = 0
    pfcwd_dropped: int = 0


class Dequeued(NamedTuple):
    """A packet that left a queue: ``enq_timestamp`` (µs), ``enq_qdepth`` and
    ``deq_qdepth`` (packets in the port's queues before the push / after the pop).
    (A named tuple: made once per packet, it must be cheap.)"""

    port: int
    priority: int
    item: Any
    enq_timestamp: int
    enq_qdepth: int
    deq_qdepth: int


@dataclass(slots=True)
class _Entry:
    depart_us: float
    seq: int
    enq_timestamp: int
    enq_qdepth: int
    item: Any


@dataclass
class _Queue:
    depth_pkts: int
    rate_pps: float
    entries: deque[_Entry] = field(default_factory=deque)
    last_depart_us: float = float("-inf")
    paused: bool = False
    pause_start_us: float = 0.0
    paused_until_us: float = 0.0
    storm: bool = False                       # the PFC watchdog found a storm (PFC ignored)
    quiet_from_us: float = 0.0                # storm: since when no PAUSE frame came
    waiting_from_us: float = 0.0              # since when packets wait (the queue non-empty)
    counters: QueueCounters = field(default_factory=QueueCounters)

    def stuck_from_us(self) -> float:
        """Since when the queue has been paused with packets waiting (while paused nothing
        leaves, so both have held since the later of the pause's start and the first
        waiting packet's arrival): what the watchdog's detection time counts from."""
        return max(self.pause_start_us, self.waiting_from_us)

    def settle(self, now: float) -> None:
        """End a pause whose time has run out, adding it to the paused time."""
        if self.paused and now >= self.paused_until_us:
            self.counters.paused_us += self.paused_until_us - self.pause_start_us
            self.paused = False

    def paused_us(self, now: float) -> float:
        extra = max(0.0, min(now, self.paused_until_us) - self.pause_start_us) if self.paused else 0.0
        return self.counters.paused_us + extra


@dataclass
class _Port:
    queues: list[_Queue]
    line_rate_gbps: float
    pfc_enabled: bool
    count: int = 0                            # packets in all its queues

    def depth(self) -> int:
        return self.count


class TrafficManager:
    """Egress queues of all ports (thread safe). See the module docstring."""

    def __init__(self, *, priority_queues: int = 1, depth_pkts: int = DEFAULT_DEPTH_PKTS,
                 rate_pps: float = 0.0, line_rate_gbps: float = DEFAULT_LINE_RATE_GBPS,
                 pfc_enabled: bool = True, clock_us: Optional[Callable[[], int]] = None,
                 cond: Optional[threading.Condition] = None) -> None:
        if not 1 <= priority_queues <= MAX_PRIORITY_QUEUES:
            raise ValueError(f"priority_queues must be 1..{MAX_PRIORITY_QUEUES}")
        _check_depth(depth_pkts)
        _check_rate(rate_pps)
        _check_line_rate(line_rate_gbps)
        self.priority_queues = priority_queues
        self._default_depth = depth_pkts
        self._default_rate = float(rate_pps)
        self._default_line_rate = float(line_rate_gbps)
        self._default_pfc = pfc_enabled
        if clock_us is None:
            start = time.monotonic_ns()
            clock_us = lambda: (time.monotonic_ns() - start) // 1000  # noqa: E731
        self.clock_us = clock_us
        self._ports: dict[int, _Port] = {}
        self._seq = itertools.count()
        self._cond = cond if cond is not None else threading.Condition()
        self._closed = False
        self._queued = 0                      # packets in all queues (poll shortcut)
        self._watchdog: Optional[PfcWatchdog] = None

    # ------------------------------------------------------------------ queues
    def _port(self, port: int) -> _Port:
        p = self._ports.get(port)
        if p is None:
            p = _Port([_Queue(self._default_depth, self._default_rate)
                       for _ in range(self.priority_queues)],
                      self._default_line_rate, self._default_pfc)
            self._ports[port] = p
        return p

    def add_port(self, port: int) -> None:
        """Create the queues of ``port`` now (they are also created on first use)."""
        with self._cond:
            self._port(port)

    def enqueue(self, port: int, priority: int, item: Any, notify: bool = True) -> Optional[int]:
        """Tail of queue (port, priority); returns the enq_qdepth, or None when the queue
        was full (tail drop, counted) or the priority is out of range (dropped).
        ``notify=False``: do not wake a waiting consumer (the caller is the consumer)."""
        now = self.clock_us()
        with self._cond:
            p = self._port(port)
            if not 0 <= priority < self.priority_queues:
                p.queues[0].counters.dropped += 1
                return None
            q = p.queues[priority]
            if q.storm:
                self._watch(q, p, now)
                if q.storm and self._watchdog is not None and self._watchdog.action == "drop":
                    q.counters.pfcwd_dropped += 1
                    return None
            if len(q.entries) >= q.depth_pkts:
                q.counters.dropped += 1
                return None
            depart = float(now)
            if q.rate_pps > 0:
                depart = max(depart, q.last_depart_us + 1e6 / q.rate_pps)
            q.last_depart_us = depart
            qdepth = p.count
            if not q.entries:
                q.waiting_from_us = now
            q.entries.append(_Entry(depart, next(self._seq), now, qdepth, item))
            p.count += 1
            self._queued += 1
            q.counters.enqueued += 1
            if notify:
                self._cond.notify()
            return qdepth

    def poll(self) -> Optional[Dequeued]:
        """The next packet ready to leave now, or None (non-blocking)."""
        with self._cond:
            got, _wake = self._pick(self.clock_us())
            return got

    def poll_wake(self) -> tuple[Optional[Dequeued], Optional[float]]:
        """The next packet ready to leave now (or None) and, when none is, the clock time
        (µs) at which one may become ready without any other event (None: never)."""
        with self._cond:
            if not self._queued:
                return None, None
            return self._pick(self.clock_us())

    def dequeue(self, timeout_s: Optional[float] = None) -> Optional[Dequeued]:
        """Block until a packet may leave (or ``timeout_s`` passes, or :meth:`close`)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            while not self._closed:
                now = self.clock_us()
                got, wake_us = self._pick(now)
                if got is not None:
                    return got
                wait = None if wake_us is None else max(0.0, (wake_us - now) / 1e6)
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait if wait is None else max(wait, 5e-5))
            return None

    def _pick(self, now: float) -> tuple[Optional[Dequeued], Optional[float]]:
        """Choose the packet to send at ``now``; also the next time something changes."""
        best: Optional[tuple[_Entry, int, int, _Port]] = None
        wake: Optional[float] = None
        wd = self._watchdog
        for port_no, p in self._ports.items():
            if not p.count:
                continue
            for prio in range(self.priority_queues - 1, -1, -1):
                q = p.queues[prio]
                if not q.entries:
                    continue
                if q.paused:
                    q.settle(now)
                if q.paused and wd is not None:
                    self._watch(q, p, now)
                    if not q.entries:
                        continue
                if q.paused:
                    until = q.paused_until_us
                    if wd is not None:                    # the watchdog looks again then
                        until = min(until, q.stuck_from_us() + wd.detection_us)
                    wake = until if wake is None else min(wake, until)
                    continue
                head = q.entries[0]
                if head.depart_us <= now:
                    if best is None or (head.depart_us, head.seq) < (best[0].depart_us, best[0].seq):
                        best = (head, port_no, prio, p)
                    break
                wake = head.depart_us if wake is None else min(wake, head.depart_us)
        if best is None:
            return None, wake
        entry, port_no, prio, p = best
        q = p.queues[prio]
        q.entries.popleft()
        p.count -= 1
        self._queued -= 1
        q.counters.dequeued += 1
        return Dequeued(port_no, prio, entry.item, entry.enq_timestamp, entry.enq_qdepth,
                        p.count), wake

    def flush(self) -> int:
        """Drop every queued packet (a new program was pushed); returns how many."""
        with self._cond:
            n = 0
            for p in self._ports.values():
                for q in p.queues:
                    n += len(q.entries)
                    q.entries.clear()
                p.count = 0
            self._queued = 0
            return n

    def close(self) -> None:
        """Wake every blocked :meth:`dequeue`; they return None from now on."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # ------------------------------------------------------------------ settings
    def _select(self, port: Optional[int], priority: Optional[int]) -> list[_Queue]:
        ports = list(self._ports.values()) if port is None else [self._port(port)]
        if priority is not None and not 0 <= priority < self.priority_queues:
            raise ValueError(f"priority {priority} out of range 0..{self.priority_queues - 1}")
        return [q for p in ports for i, q in enumerate(p.queues)
                if priority is None or i == priority]

    def set_queue_depth(self, depth_pkts: int, port: Optional[int] = None,
                        priority: Optional[int] = None) -> None:
        """BMv2 ``set_queue_depth``: one queue, all priorities of a port, or (port None)
        every queue and the default for ports created later. Queued packets stay."""
        _check_depth(depth_pkts)
        with self._cond:
            if port is None and priority is None:
                self._default_depth = depth_pkts
            for q in self._select(port, priority):
                q.depth_pkts = depth_pkts

    def set_queue_rate(self, rate_pps: float, port: Optional[int] = None,
                       priority: Optional[int] = None) -> None:
        """BMv2 ``set_queue_rate`` in packets/s (0 = unlimited); scope as set_queue_depth.
        Packets already queued keep their departure times."""
        _check_rate(rate_pps)
        with self._cond:
            if port is None and priority is None:
                self._default_rate = float(rate_pps)
            for q in self._select(port, priority):
                q.rate_pps = float(rate_pps)
            self._cond.notify_all()

    def set_line_rate(self, gbps: float, port: Optional[int] = None) -> None:
        """Line rate used to convert PFC quanta to time (one port, or all + default)."""
        _check_line_rate(gbps)
        with self._cond:
            if port is None:
                self._default_line_rate = float(gbps)
                for p in self._ports.values():
                    p.line_rate_gbps = float(gbps)
            else:
                self._port(port).line_rate_gbps = float(gbps)

    def set_pfc(self, enabled: bool, port: Optional[int] = None) -> None:
        """Honour PFC frames on one port or all (+ default). Turning it off resumes."""
        with self._cond:
            if port is None:
                self._default_pfc = enabled
            targets = list(self._ports.values()) if port is None else [self._port(port)]
            now = self.clock_us()
            for p in targets:
                p.pfc_enabled = enabled
                if not enabled:
                    for q in p.queues:
                        self._resume(q, now)
            self._cond.notify_all()

    def pfc_enabled(self, port: int) -> bool:
        with self._cond:
            p = self._ports.get(port)
            return self._default_pfc if p is None else p.pfc_enabled

    def set_pfc_watchdog(self, watchdog: Optional[PfcWatchdog]) -> None:
        """Run the PFC watchdog with these settings on every queue (None: stop it; queues
        in a storm are restored, counted)."""
        with self._cond:
            if watchdog is None:
                for p in self._ports.values():
                    for q in p.queues:
                        if q.storm:
                            q.storm = False
                            q.counters.pfcwd_restored += 1
            self._watchdog = watchdog
            self._cond.notify_all()

    def pfc_watchdog(self) -> Optional[PfcWatchdog]:
        """The watchdog's settings (None: off)."""
        return self._watchdog

    # ------------------------------------------------------------------ PFC
    def _watch(self, q: _Queue, p: _Port, now: float) -> None:
        """The watchdog's step for one queue at ``now`` (lock held): restore a storm that
        has had no PAUSE for the restoration time, or find one (paused for the detection
        time with packets waiting) and apply the action."""
        wd = self._watchdog
        if wd is None:
            return
        if q.storm:
            if now - q.quiet_from_us >= wd.restoration_us:
                q.storm = False
                q.counters.pfcwd_restored += 1
            return
        q.settle(now)
        if q.paused and q.entries and now - q.stuck_from_us() >= wd.detection_us:
            q.storm = True
            q.quiet_from_us = now
            q.counters.pfcwd_storms += 1
            self._resume(q, now)
            if wd.action == "drop":
                n = len(q.entries)
                q.entries.clear()
                p.count -= n
                self._queued -= n
                q.counters.pfcwd_dropped += n
            self._cond.notify_all()

    @staticmethod
    def _resume(q: _Queue, now: float) -> None:
        q.settle(now)
        if q.paused:
            q.counters.paused_us += max(0.0, now - q.pause_start_us)
            q.paused = False

    def pause(self, port: int, pauses: dict[int, int]) -> bool:
        """Apply one received PFC frame ``{priority: quanta}`` to ``port``'s egress queues.
        Returns False (nothing done) when PFC is off on the port. Priorities at or above
        ``priority_queues`` are counted nowhere and ignored."""
        now = float(self.clock_us())
        with self._cond:
            p = self._port(port)
            if not p.pfc_enabled:
                return False
            for prio, quanta in pauses.items():
                if not 0 <= prio < self.priority_queues:
                    continue
                q = p.queues[prio]
                q.counters.pause_frames += 1
                self._watch(q, p, now)
                if q.storm:                           # the watchdog ignores PFC on it
                    if quanta:
                        q.quiet_from_us = now
                    continue
                if quanta == 0:
                    self._resume(q, now)
                    continue
                q.settle(now)
                if not q.paused:
                    q.paused = True
                    q.pause_start_us = now
                q.paused_until_us = now + quanta_to_us(quanta, p.line_rate_gbps)
            self._cond.notify_all()
            return True

    def is_paused(self, port: int, priority: int) -> bool:
        with self._cond:
            p = self._ports.get(port)
            if p is None:
                return False
            q = p.queues[priority]
            now = self.clock_us()
            self._watch(q, p, now)
            q.settle(now)
            return q.paused

    # ------------------------------------------------------------------ stats
    def queue_stats(self, port: Optional[int] = None) -> dict[int, dict[str, Any]]:
        """``{port: {"line_rate_gbps", "pfc_enabled", "depth", "queues": [per priority
        {"depth", "depth_pkts", "rate_pps", "paused", "pfcwd_storm", counters…}]}}`` for one
        or all ports."""
        now = float(self.clock_us())
        with self._cond:
            ports = self._ports if port is None else {port: self._port(port)}
            out: dict[int, dict[str, Any]] = {}
            for no, p in sorted(ports.items()):
                queues = []
                for q in p.queues:
                    self._watch(q, p, now)
                    q.settle(now)
                    c = asdict(q.counters)
                    c["paused_us"] = round(q.paused_us(now), 3)
                    queues.append({"depth": len(q.entries), "depth_pkts": q.depth_pkts,
                                   "rate_pps": q.rate_pps, "paused": q.paused,
                                   "pfcwd_storm": q.storm, **c})
                out[no] = {"line_rate_gbps": p.line_rate_gbps, "pfc_enabled": p.pfc_enabled,
                           "depth": p.depth(), "queues": queues}
            return out


def _check_depth(depth: int) -> None:
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"queue depth must be a positive number of packets, not {depth!r}")


def _check_rate(rate: float) -> None:
    if not isinstance(rate, (int, float)) or rate < 0:
        raise ValueError(f"queue rate must be >= 0 packets/s, not {rate!r}")


def _check_line_rate(gbps: float) -> None:
    if not isinstance(gbps, (int, float)) or gbps <= 0:
        raise ValueError(f"line rate must be > 0 Gb/s, not {gbps!r}")
