"""Idle-timeout notifications (P4Runtime spec, "Idle timeout"): a thread of the server
that sends an ``IdleTimeoutNotification`` to the primary controllers for every entry with
``idle_timeout_ns`` whose last hit (or insertion) is older than that timeout, as BMv2 does.

An entry is reported once per expiry: again only after a hit (or a MODIFY of its
``idle_timeout_ns``) re-arms it and it expires anew. Hits are recorded by the tables
(:meth:`p4sim.runtime.tables.Table.apply` sets ``last_hit_ns`` from the switch clock);
the monitor reads that clock through ``clock_ns``. Entries found expired in one sweep go
out in one notification, as BMv2 batches them.

Example::

    >>> mon = IdleTimeoutMonitor(lambda: server.pipeline, clock_ns, send, lock)   # doctest: +SKIP
    >>> mon.start(); mon.stop()                                                   # doctest: +SKIP
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Optional

from p4.v1 import p4runtime_pb2

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 0.1


class IdleTimeoutMonitor:
    """Sweeps the running pipeline's tables every ``interval_s`` seconds.

    ``pipeline()`` returns the running pipeline (or None); its ``store.tables`` is the
    :class:`p4sim.p4runtime.entities_tables.TableStore`; ``send(msg)`` delivers a
    ``StreamMessageResponse`` to the primaries; ``lock`` is the device lock.
    """

    def __init__(self, pipeline: Callable[[], Any], clock_ns: Callable[[], int],
                 send: Callable[[p4runtime_pb2.StreamMessageResponse], Any], lock: Any,
                 interval_s: float = SWEEP_INTERVAL_S) -> None:
        self.pipeline = pipeline
        self.clock_ns = clock_ns
        self.send = send
        self.lock = lock
        self.interval_s = interval_s
        # id(entry) -> (entry, last_hit_ns, idle_timeout_ns) at the time it was reported
        self._reported: dict[int, tuple[Any, int, int]] = {}
        self._store: Any = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="p4rt-idle-timeout", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sweep()
            except Exception:  # noqa: BLE001 - the monitor must outlive one bad sweep
                log.exception("idle-timeout sweep failed")

    def sweep(self) -> int:
        """One pass; returns the number of entries reported."""
        pipe = self.pipeline()
        store = getattr(pipe, "store", None) if pipe is not None else None
        tables = getattr(store, "tables", None)
        if tables is None or not hasattr(tables, "encode_key"):
            return 0
        if store is not self._store:
            self._store, self._reported = store, {}
        timed = [ti for ti in tables.index.tables.values() if ti.table.support_timeout]
        if not timed:
            # no table can age (fabric.p4 has none): the device lock is not taken ten times
            # a second (on the native path it holds the pipeline and copies hit times back)
            self._reported.clear()
            return 0
        msg = p4runtime_pb2.StreamMessageResponse()
        note = msg.idle_timeout_notification
        with self.lock:
            now = self.clock_ns()
            alive: set[int] = set()
            for ti in timed:
                for entry in ti.table.entries():
                    timeout = entry.idle_timeout_ns
                    if not timeout:
                        continue
                    alive.add(id(entry))
                    if now - entry.last_hit_ns < timeout:
                        continue
                    seen = self._reported.get(id(entry))
                    if seen is not None and seen[0] is entry and seen[1:] == (entry.last_hit_ns, timeout):
                        continue
                    self._reported[id(entry)] = (entry, entry.last_hit_ns, timeout)
                    out = note.table_entry.add()
                    tables.encode_key(ti, entry, out)
                    out.idle_timeout_ns = timeout
                    out.metadata = entry.metadata
            for key in [k for k in self._reported if k not in alive]:
                del self._reported[key]
        if not note.table_entry:
            return 0
        note.timestamp = time.time_ns()
        self.send(msg)
        return len(note.table_entry)
