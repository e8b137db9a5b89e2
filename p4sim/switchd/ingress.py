"""The ingress buffer of the p4sim switch: BMv2 ``simple_switch``'s input buffer.

BMv2 keeps the frames received from the ports in a bounded FIFO of 1024 packets (its
``InputBuffer``, capacity fixed in ``simple_switch.cpp``, no command-line flag) between
the port receive threads and the ingress thread. A normal frame is pushed *blocking*:
when the buffer is full the port's receive thread waits, stops reading its interface, and
the kernel drops what keeps arriving (back pressure to the interface). p4sim does the
same: :meth:`IngressBuffer.put_many` waits for room; a port that cannot be read
meanwhile counts the kernel's drops (``rx_dropped``, :mod:`.ports`). Nothing is dropped
after it was processed, and the buffer never grows past its capacity. Waiting producers
are woken when the buffer has drained to a quarter of its capacity (not at every frame
taken: under overload that would cost two thread switches per frame; the quarter left
keeps the worker busy while the woken port thread gets the CPU back).

The buffer's lock and its ``ready`` condition are shared with the traffic manager
(:class:`~p4sim.switchd.tm.TrafficManager` ``cond=``), so the switch's one pipeline worker
sleeps on a single condition until a frame arrives or a queued packet may leave.

Counters: ``enqueued`` (frames accepted), ``dequeued`` (taken by the worker), ``dropped``
(refused: :meth:`put_nowait` on a full buffer, or any put after :meth:`close`),
``full_waits`` (deliveries that found the buffer full and had to wait), ``high_water``
(largest depth seen). Always ``enqueued == dequeued + depth``.

Example::

    >>> buf = IngressBuffer(capacity_pkts=2)
    >>> buf.put_many(1, [b"a", b"b"]), buf.put_nowait(2, b"c")
    (2, False)
    >>> buf.pop_nowait(), buf.depth
    ((1, b'a'), 1)
    >>> s = buf.stats(); (s["enqueued"], s["dequeued"], s["dropped"], s["depth"])
    (2, 1, 1, 1)
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Optional, Sequence

#: BMv2 simple_switch's input buffer capacity for normal packets (simple_switch.cpp)
DEFAULT_CAPACITY_PKTS = 1024
_WAIT_SLICE_S = 0.2


class IngressBuffer:
    """A bounded FIFO of ``(port, frame)`` (thread safe). See the module docstring."""

    def __init__(self, capacity_pkts: int = DEFAULT_CAPACITY_PKTS) -> None:
        if not isinstance(capacity_pkts, int) or capacity_pkts < 1:
            raise ValueError(f"ingress buffer capacity must be a positive number of "
                             f"packets, not {capacity_pkts!r}")
        self.capacity_pkts = capacity_pkts
        self.lock = threading.RLock()
        self.ready = threading.Condition(self.lock)
        """Notified when a frame is added (and, shared with the traffic manager, when a
        queued packet may leave): the consumer waits on it."""
        self._room = threading.Condition(self.lock)
        self._room_to_wake = max(1, capacity_pkts - capacity_pkts // 4)
        self._producers_waiting = 0
        self._frames: deque[tuple[int, bytes]] = deque()
        self._reserved = 0
        self._closed = False
        self.enqueued = 0
        self.dequeued = 0
        self.dropped = 0
        self.full_waits = 0
        self.high_water = 0

    @property
    def depth(self) -> int:
        """Frames waiting now."""
        return len(self._frames)

    def _room_now(self) -> int:
        return self.capacity_pkts - len(self._frames) - self._reserved

    def _wait_room(self, deadline: Optional[float], waited: bool) -> bool:
        """Wait (lock held) for a producer wake-up; False when ``deadline`` has passed."""
        if not waited:
            self.full_waits += 1
        wait = _WAIT_SLICE_S
        if deadline is not None:
            wait = min(wait, deadline - time.monotonic())
            if wait <= 0:
                return False
        self._producers_waiting += 1
        try:
            self._room.wait(wait)
        finally:
            self._producers_waiting -= 1
        return True

    def _append(self, port: int, frames: Sequence[bytes]) -> None:
        self._frames.extend((port, f) for f in frames)
        self.enqueued += len(frames)
        if len(self._frames) > self.high_water:
            self.high_water = len(self._frames)
        self.ready.notify()

    def put_many(self, port: int, frames: Sequence[bytes],
                 timeout_s: Optional[float] = None) -> int:
        """Append ``frames`` received on ``port`` in order, waiting for room while the
        buffer is full (BMv2's blocking push). Returns how many were accepted: all of
        them, unless the buffer was closed or ``timeout_s`` passed while waiting (the rest
        are counted in ``dropped``)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        done = 0
        waited = False
        with self.lock:
            while done < len(frames) and not self._closed:
                room = self._room_now()
                if room > 0:
                    chunk = frames[done:done + room]
                    self._append(port, chunk)
                    done += len(chunk)
                elif not self._wait_room(deadline, waited):
                    break
                else:
                    waited = True
            self.dropped += len(frames) - done
        return done

    def reserve(self, frames: int, timeout_s: Optional[float] = None) -> int:
        """Reserve room for up to ``frames`` frames, waiting while the buffer is full
        (``timeout_s`` 0: not at all). Returns the room granted (0: closed, or timed out);
        :meth:`commit` it. A port reserves before it reads, so it never holds frames it
        read while it waits for room, and reads and commits under its own lock (frame
        order kept) whichever thread does it."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        waited = False
        with self.lock:
            while not self._closed:
                room = self._room_now()
                if room > 0:
                    granted = min(frames, room)
                    self._reserved += granted
                    return granted
                if not self._wait_room(deadline, waited):
                    break
                waited = True
            return 0

    def commit(self, port: int, frames: Sequence[bytes], reserved: int) -> None:
        """Append ``frames`` (at most ``reserved``) into the room :meth:`reserve` granted
        and give back the rest. After :meth:`close` the frames are counted as dropped."""
        if len(frames) > reserved:
            raise ValueError(f"{len(frames)} frames committed into {reserved} reserved slots")
        with self.lock:
            self._reserved -= reserved
            if self._closed:
                self.dropped += len(frames)
            elif frames:
                self._append(port, frames)

    def put_nowait(self, port: int, frame: bytes) -> bool:
        """Append one frame if there is room now; False (counted in ``dropped``) if not."""
        with self.lock:
            if self._closed or self._room_now() < 1:
                self.dropped += 1
                return False
            self._append(port, (frame,))
            return True

    def pop_nowait(self) -> Optional[tuple[int, bytes]]:
        """The oldest ``(port, frame)``, or None when empty."""
        with self.lock:
            if not self._frames:
                return None
            item = self._frames.popleft()
            self.dequeued += 1
            if self._producers_waiting and self._room_now() >= self._room_to_wake:
                self._room.notify_all()
            return item

    def close(self) -> None:
        """Refuse further frames and wake every waiting producer and consumer."""
        with self.lock:
            self._closed = True
            self._room.notify_all()
            self.ready.notify_all()

    def stats(self) -> dict[str, Any]:
        """``{"capacity_pkts", "depth", "reserved", "enqueued", "dequeued", "dropped",
        "full_waits", "high_water"}`` (one consistent snapshot; ``reserved``: room
        promised to ports reading now)."""
        with self.lock:
            return {"capacity_pkts": self.capacity_pkts, "depth": len(self._frames),
                    "reserved": self._reserved,
                    "enqueued": self.enqueued, "dequeued": self.dequeued,
                    "dropped": self.dropped, "full_waits": self.full_waits,
                    "high_water": self.high_water}
