"""The worker threads of p4sim's gRPC server: what ``concurrent.futures.ThreadPoolExecutor``
does for ``grpc.server``, with less done per call.

gRPC Python's synchronous server hands every RPC to its thread pool with ``submit`` and
only ever calls ``add_done_callback`` on what comes back. ``ThreadPoolExecutor`` does more
per call: two locks in ``submit``, a ``Future`` whose every state change takes a
``Condition`` and notifies waiters no one registers. Measured on an echo server (5 kB
request, ``b"ok"`` answer, one client, 5,000 calls, 3 alternated pairs at load ~8, issue
36's tenth pass): 189 / 160 / 204 µs of server CPU a call with ``ThreadPoolExecutor``,
176 / 148 / 155 µs with :class:`WorkerPool`.

The pool keeps ``ThreadPoolExecutor``'s rules, so the stream limits' accounting
(:mod:`.streamlimits`: the pool is the stream bound plus threads no stream can take)
holds as before: at most ``max_workers`` threads, made as calls come when none is idle
(an idle worker is counted the same way, by a semaphore each worker releases after each
call), calls beyond them queued in order. The threads are daemons: a handler stuck in a
call does not hold the process at exit; :meth:`WorkerPool.shutdown` ends them once they
are idle.

Example::

    >>> pool = WorkerPool(2, "doc")
    >>> done = threading.Event()
    >>> pool.submit(lambda x: None, 1).add_done_callback(lambda call: done.set())
    >>> done.wait(5)
    True
    >>> pool.shutdown()
"""
from __future__ import annotations

import logging
import queue
import threading
from concurrent import futures
from typing import Any, Callable, Optional

log = logging.getLogger(__name__)


class Call:
    """What :meth:`WorkerPool.submit` returns: the call's end, for ``add_done_callback``
    (all gRPC's server asks of it).

    >>> c = Call(); seen = []; c.add_done_callback(seen.append); c.done(), seen
    (False, [])
    >>> c._finish(); c.done(), seen == [c]
    (True, True)
    """

    __slots__ = ("_lock", "_done", "_callbacks")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = False
        self._callbacks: list[Callable[["Call"], Any]] = []

    def add_done_callback(self, fn: Callable[["Call"], Any]) -> None:
        """Call ``fn(self)`` when the call ends (at once if it has)."""
        with self._lock:
            if not self._done:
                self._callbacks.append(fn)
                return
        fn(self)

    def done(self) -> bool:
        return self._done

    def cancel(self) -> bool:
        """A call is never cancelled once submitted (gRPC cancels the RPC, not its work)."""
        return False

    def _finish(self) -> None:
        with self._lock:
            self._done = True
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            try:
                fn(self)
            except Exception:  # noqa: BLE001 - as Future does: one callback must not stop the others
                log.exception("a worker call's done callback failed")


_Item = tuple[Call, Callable[..., Any], tuple, dict]


class WorkerPool(futures.Executor):
    """At most ``max_workers`` daemon threads named ``{thread_name_prefix}_{n}`` that run
    submitted calls in order (see the module docstring)."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "workers") -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, not {max_workers}")
        self.max_workers = max_workers
        self._prefix = thread_name_prefix
        self._queue: "queue.SimpleQueue[Optional[_Item]]" = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._shut = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Call:  # type: ignore[override]
        call = Call()
        # the check and the put under one lock: a call that passes the check is queued before
        # shutdown's stop markers, so it runs (review3: checked without the lock, a call could
        # land behind the markers and never end)
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot run calls after shutdown")
            self._queue.put((call, fn, args, kwargs))
        if not self._idle.acquire(blocking=False):
            self._grow()
        return call

    def _grow(self) -> None:
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot run calls after shutdown")
            n = len(self._threads)
            if n < self.max_workers:
                t = threading.Thread(target=self._work, name=f"{self._prefix}_{n}", daemon=True)
                t.start()
                self._threads.append(t)

    def _work(self) -> None:
        get = self._queue.get
        while True:
            item = get()
            if item is None:
                return
            call, fn, args, kwargs = item
            del item
            try:
                fn(*args, **kwargs)
            except BaseException:  # noqa: BLE001 - a worker outlives any call (gRPC catches its own)
                log.exception("a worker call failed")
            finally:
                call._finish()
            del call, fn, args, kwargs
            self._idle.release()

    def threads(self) -> int:
        """Threads made so far (at most ``max_workers``)."""
        return len(self._threads)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No more calls; every thread ends once the calls queued before are done (joined
        when ``wait``). ``cancel_futures`` is accepted for ``Executor``'s signature; queued
        calls still run."""
        with self._lock:
            self._shut = True
            threads = list(self._threads)
        for _ in threads:
            self._queue.put(None)
        if wait:
            for t in threads:
                if t is not threading.current_thread():
                    t.join()
