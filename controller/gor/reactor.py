"""GOR's reaction thread: the loop acts on a digest between two polls without holding up
the thread that read it.

The digest readers (:func:`controller.gor.digests.digest_reader`, one per switch) hand a
list to the loop and, when it asks to act at once (an alarm, a sample that may confirm a
move: :meth:`GorLoop.wants_now <controller.gor.loop.GorLoop.wants_now>`), call
:meth:`Reactor.request` and go back to reading. One :class:`Reactor` thread runs the
loop's reaction (``act``: :meth:`GorLoop.react <controller.gor.loop.GorLoop.react>` under
the tick lock); requests that come while it runs are served by one more run, which takes
everything queued meanwhile. A reader that ran the reaction itself stopped reading while
it waited for the tick lock and the reaction: on a loaded testbed the lists of a leaf
sampling a hot port 1:1 queued behind it, and the sample that confirmed a move reached
the loop 20-300 ms after its switch sent it.

Example::

    >>> import threading
    >>> ran = threading.Event()
    >>> r = Reactor(ran.set).start()
    >>> r.request(); ran.wait(5.0)
    True
    >>> r.stop()
"""
from __future__ import annotations

import logging
import threading
from typing import Callable, Optional

log = logging.getLogger("controller.gor.loop")


class Reactor:
    """Runs ``act`` in a thread of its own after :meth:`request` (see the module
    docstring); ``act``'s exceptions are logged, the thread goes on. ``runs`` counts the
    runs, ``requests`` the requests."""

    def __init__(self, act: Callable[[], None], name: str = "gor-react") -> None:
        self.act, self.name = act, name
        self.runs = self.requests = 0
        self._wanted = threading.Event()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> "Reactor":
        """Start the thread (once); returns ``self``."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
        return self

    def request(self) -> None:
        """Ask for one run of ``act`` after this call (never blocks)."""
        self.requests += 1
        self._wanted.set()

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop the thread: a run in progress finishes, no new one starts; waits at most
        ``timeout_s`` for it."""
        self._stop.set()
        self._wanted.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            if self._stop.is_set():
                return
            self._wanted.clear()             # a request from now on brings one more run
            try:
                self.act()
            except Exception:  # noqa: BLE001 — the reactions must outlive one failure
                log.exception("%s: reaction failed", self.name)
            self.runs += 1


__all__ = ["Reactor"]
