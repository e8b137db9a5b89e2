"""A flag that a signal handler may set: no lock taken, and a wait that wakes at once.

A Python signal handler runs in the main thread between two bytecodes of whatever the
main thread was doing. A handler that calls ``threading.Event.set()`` takes the Event's
internal lock (a ``Condition`` over a non-reentrant ``Lock``); when the signal lands
while the main thread itself is inside ``Event.wait()`` and holds that lock (on entry,
or when a timed wait returns), the handler waits for a lock its own thread holds:
the process hangs for good, and later signals (SIGTERM) only set flags that nothing
reads any more. That is how a NIC sender waiting for its go (SIGUSR1) could hang with
nothing sent and ignore SIGTERM (issue 32, ``tests/host/test_nic_signals.py``).

:class:`SignalFlag` instead sets a plain attribute and writes one byte to a
non-blocking pipe (``os.write``: no Python lock; a full pipe is already readable);
:func:`wait_any` sleeps in ``select`` on the pipes of several flags, so a handler that
runs while the main thread waits there wakes it at once.

>>> import signal
>>> go = SignalFlag()
>>> old = signal.signal(signal.SIGUSR1, go.handler)
>>> signal.raise_signal(signal.SIGUSR1)
>>> go.is_set(), wait_any([go], 0.0)
(True, True)
>>> _ = signal.signal(signal.SIGUSR1, old); go.close()
"""
from __future__ import annotations

import os
import select
import time
from types import FrameType
from typing import Optional, Sequence


class SignalFlag:
    """A one-way flag (set, never cleared) that is safe to set from a signal handler.

    ``signal.signal(signal.SIGTERM, flag.handler)``; the main loop reads
    :meth:`is_set`; :func:`wait_any` waits for one of several flags with a timeout.
    """

    def __init__(self) -> None:
        self._set = False
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)

    def set(self) -> None:
        """Set the flag and wake a :func:`wait_any` (signal-safe: takes no lock)."""
        self._set = True
        try:
            os.write(self._w, b"\x01")
        except (BlockingIOError, OSError):    # full (already readable) or closed
            pass

    def handler(self, _sig: int, _frame: Optional[FrameType]) -> None:
        """A ``signal.signal`` handler that sets the flag."""
        self.set()

    def is_set(self) -> bool:
        """True once :meth:`set` ran."""
        return self._set

    def fileno(self) -> int:
        """The pipe's read end: readable once the flag is set."""
        return self._r

    def close(self) -> None:
        """Close the pipe (the flag keeps its value)."""
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass


def wait_any(flags: Sequence[SignalFlag], timeout_s: float) -> bool:
    """Wait until one of ``flags`` is set, at most ``timeout_s``; True when one is.

    >>> a, b = SignalFlag(), SignalFlag()
    >>> wait_any([a, b], 0.01)
    False
    >>> b.set(); wait_any([a, b], 10.0)
    True
    >>> a.close(); b.close()
    """
    deadline = time.monotonic() + max(0.0, timeout_s)
    while not any(f.is_set() for f in flags):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        # a handler that runs during select makes it return EINTR; Python runs the
        # handler and retries with the time left, and the byte it wrote ends the wait
        select.select([f.fileno() for f in flags], [], [], left)
    return True


__all__ = ["SignalFlag", "wait_any"]
