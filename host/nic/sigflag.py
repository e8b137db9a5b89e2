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

That pipe alone still leaves one window: the Python handler runs only between two
bytecodes, so a signal that lands after :func:`wait_any` last looked at its flags but
before ``select`` entered the kernel (the C part of the handler ran, the Python part is
deferred) interrupts nothing — ``select`` sleeps its whole timeout, and the handler runs
only when it returns. The same holds when the kernel hands the signal to another thread
(a gRPC thread of the sender's agent): the main thread's ``select`` is not interrupted at
all (CPython issue 85300). A sender waiting for its go then started only when its
launcher's SIGTERM came, and so never (issue 32: CI at c862f58, one of four senders of a
story never took its go). :func:`wait_any` therefore also waits on
``signal.set_wakeup_fd``: CPython's C-level handler writes the signal's number there from
whichever thread the signal reached, at the instant it lands, so ``select`` returns and the
deferred Python handler runs before the flags are looked at again.

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
import signal
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

    In the main thread the wait also watches a ``signal.set_wakeup_fd`` pipe (the previous
    wakeup fd is put back on return), so a signal that lands just before ``select`` starts,
    or on another thread, still ends the wait at once (the module's docstring).

    >>> a, b = SignalFlag(), SignalFlag()
    >>> wait_any([a, b], 0.01)
    False
    >>> b.set(); wait_any([a, b], 10.0)
    True
    >>> a.close(); b.close()
    """
    deadline = time.monotonic() + max(0.0, timeout_s)
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    try:
        old_wake: Optional[int] = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    except ValueError:              # not the main thread: no signal handler runs here anyway
        old_wake = None
    try:
        fds = [f.fileno() for f in flags] + [wake_r]
        while not any(f.is_set() for f in flags):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            # a handler that runs during select makes it return EINTR; Python runs the
            # handler and retries with the time left, and the byte it wrote ends the wait;
            # a signal whose Python handler is still deferred wrote to wake_r
            ready, _, _ = select.select(fds, [], [], left)
            if wake_r in ready:
                _drain(wake_r)      # the handlers run before the loop's test (a bytecode later)
        return True
    finally:
        if old_wake is not None:
            signal.set_wakeup_fd(old_wake)
        os.close(wake_r)
        os.close(wake_w)


def _drain(fd: int) -> None:
    """Read everything a non-blocking pipe holds."""
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


__all__ = ["SignalFlag", "wait_any"]
