"""Switch recovery: a thread that notices a switch that stopped answering or came back empty,
reconnects to it, re-programs it and hands it back to GOR's loop — without ever blocking
the loop or the telemetry poller.

:class:`SwitchRecovery` runs next to a :class:`~controller.telemetry.poller.TelemetryPoller`
and a :class:`~controller.gor.loop.GorLoop` on one
:class:`~controller.fabric_setup.FabricProgrammer`. Every ``retry_s`` it looks for
*suspects*:

* a switch the poller marks stale (its reads fail — UNAVAILABLE while the process is gone,
  FAILED_PRECONDITION once a restarted process answers without a pipeline — or time out);
* a switch whose stream channel ended (``SwitchConnection.stream_alive``: the process went
  away; digests would no longer arrive);
* a switch whose counters went backwards (``TelemetryPoller.resets``: a restart the poller
  did not see fail);
* a switch on which GOR lost mastership (the switch named another primary:
  :func:`~controller.gor.mastership.mastership_problem`): lost until GOR is its primary
  again, reconnecting with its own election id on every pass.

A suspect that still answers on its connection and holds its plan
(:func:`~controller.switch_restore.check_switch`: pipeline, cookie, routes) is cleared.
Any other is *lost* until restored (the loop logs ``switch_lost``): the old
connection is closed (its election id is free again), a plain TCP probe of the gRPC port
tells whether a process listens (a gRPC channel to a closed port backs off a second or
more after each refusal; the probe does not, so a process that listens again is
reconnected at once), :func:`~controller.switch_restore.restore_switch`'s steps reconnect
with the same election id (the poller stops reading the switch once it answers: ``hold``),
push the pipeline and re-install the plan if the switch came back empty (ECMP groups from
``GorLoop.live_groups``: links GOR took down stay out), the ``flow_sample_t`` digest
is enabled again, the new connection replaces the old one in ``programmer.connections``
(the poller's :func:`~controller.telemetry.poller.connection_reader` and the digest readers
follow it), the poller resumes with a fresh baseline (``release``: counters restarted
from zero, no interval spans the outage) and the loop gets the switch back
(``GorLoop.submit_switch_back``: GOR's overrides and sampling re-installed at the next
tick, ``switch_back`` logged). A switch that does not answer yet is tried again on the next
pass; :attr:`SwitchRecovery.events` records each restoration.

Example::

    >>> rec = SwitchRecovery(prog, poller, loop, retry_s=0.2)     # doctest: +SKIP
    >>> rec.start(); ...; rec.stop()                              # doctest: +SKIP
    >>> rec.events[-1].restore_s                                  # doctest: +SKIP
    0.41
"""
from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from controller.gor.digests import DIGEST_LIST_SIZE, DIGEST_MAX_TIMEOUT_NS, DIGEST_NAME
from controller.gor.mastership import attach_collector, mastership_problem
from controller.switch_restore import RestoreReport, check_switch, reprogram_switch

log = logging.getLogger("controller.gor.recovery")


@dataclass(frozen=True, slots=True)
class RecoveryEvent:
    """One switch restored: lost at ``lost_at`` (monotonic seconds, first suspicion),
    restoration started at ``started_at`` (the attempt that succeeded) and done at
    ``done_at``; what was done in ``report``.

    >>> e = RecoveryEvent("b0r0l0", 1.0, 3.0, 3.5, RestoreReport("b0r0l0"))
    >>> e.restore_s, e.outage_s
    (0.5, 2.5)
    """

    switch: str
    lost_at: float
    started_at: float
    done_at: float
    report: RestoreReport

    @property
    def restore_s(self) -> float:
        """Seconds of the successful attempt: reconnect, check, push and install."""
        return round(self.done_at - self.started_at, 3)

    @property
    def outage_s(self) -> float:
        """Seconds from the first suspicion to the switch back in service."""
        return round(self.done_at - self.lost_at, 3)


class SwitchRecovery:
    """See the module docstring. ``on_restored(switch, event)`` (optional) runs on the
    recovery thread after each restoration (the testbed re-applies p4sim queue rates
    there). Lifetime: :meth:`start` … :meth:`stop`; :meth:`check_once` is one pass."""

    def __init__(self, programmer: Any, poller: Any, loop: Any, *, retry_s: float = 0.2,
                 connect_timeout_s: float = 2.0,
                 on_restored: Optional[Callable[[str, RecoveryEvent], None]] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.programmer, self.poller, self.loop = programmer, poller, loop
        self.retry_s, self.connect_timeout_s, self.on_restored = retry_s, connect_timeout_s, on_restored
        self.lost: dict[str, float] = {}            # switch → monotonic time first suspected
        self.events: list[RecoveryEvent] = []
        self.attempts = 0
        self.last_error: dict[str, str] = {}
        self.reported: set[str] = set()             # lost switches already told to the loop
        self._clock = clock
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        loop.recovery_attached = True
        attach_collector(getattr(loop, "metrics", None), lambda: programmer.connections)

    # ------------------------------------------------------------------ passes
    def suspects(self) -> list[str]:
        """Switches to verify now: lost ones, stale ones, broken streams, reset counters."""
        out = set(self.lost) | set(self.poller.stale_switches()) | set(self.poller.resets)
        for sw, conn in list(self.programmer.connections.items()):
            if getattr(conn, "stream_alive", True) is False or mastership_problem(conn):
                out.add(sw)
        return sorted(out)

    def check_once(self) -> list[str]:
        """One pass over the suspects; returns the switches restored in it."""
        done = []
        for sw in self.suspects():
            if self._stop.is_set():
                break
            self.lost.setdefault(sw, self._clock())
            if self._attempt(sw):
                done.append(sw)
        return done

    def _why(self, sw: str) -> str:
        h = self.poller.health.get(sw)
        if h is not None and getattr(h, "stale", False):
            return getattr(h, "last_error", "") or "does not answer"
        conn = self.programmer.connections.get(sw)
        if mastership_problem(conn):
            return str(mastership_problem(conn))
        if conn is not None and getattr(conn, "stream_alive", True) is False:
            return "stream channel closed"
        if sw in self.poller.resets:
            return "counters went backwards"
        return "does not hold its plan"

    def _probe_port(self, sw: str) -> None:
        """Raise ConnectionError unless the switch's gRPC port accepts a TCP connection
        (bounded by ``connect_timeout_s``): a gRPC channel to a closed port backs off for a
        second or more after each refusal, a plain probe does not, so the switch is
        reconnected as soon as its new process listens."""
        addr = next((s.grpc_addr for s in getattr(self.programmer.fabric, "switches", ())
                     if s.name == sw), None)
        if not addr:
            return
        host, _, port = str(addr).rpartition(":")
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)),
                                      timeout=self.connect_timeout_s):
            pass

    def _intact(self, sw: str) -> bool:
        """The switch answers on its connection and holds its plan (nothing to do)."""
        conn = self.programmer.connections.get(sw)
        if (conn is None or getattr(conn, "stream_alive", True) is False or mastership_problem(conn)
                or sw in self.poller.stale_switches() or sw in self.poller.held):
            return False
        try:
            return not check_switch(conn, self.programmer.plans[sw],
                                    self.programmer.cookies.get(sw)).empty
        except Exception:  # noqa: BLE001 — it does not answer: restore it
            return False

    def _attempt(self, sw: str) -> bool:
        if self._intact(sw):
            self.lost.pop(sw, None)
            self.poller.resets.pop(sw, None)
            return False
        if sw not in self.reported:
            self.reported.add(sw)
            self.loop.submit_switch_lost(sw, self._why(sw))
        self.attempts += 1
        started = self._clock()
        old = self.programmer.connections.get(sw)
        if old is not None:
            try:
                old.close()                 # frees the election id on the switch
            except Exception:  # noqa: BLE001
                pass
        conn = None
        try:
            self._probe_port(sw)
            conn = self.programmer.connect_switch(sw, timeout_s=self.connect_timeout_s)
            self.poller.hold(sw)            # answering again: no reading until restored
            report = reprogram_switch(self.programmer, sw, conn, self.loop.live_groups(sw))
        except Exception as exc:  # noqa: BLE001 — not back yet: next pass
            if conn is not None:
                conn.close()
            msg = f"{type(exc).__name__}: {exc}"
            if self.last_error.get(sw) != msg:
                log.info("%s: not restored yet: %s", sw, msg)
            self.last_error[sw] = msg
            self.poller.release(sw)
            return False
        try:
            conn.enable_digest(DIGEST_NAME, max_timeout_ns=DIGEST_MAX_TIMEOUT_NS,
                               max_list_size=DIGEST_LIST_SIZE)
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: digest not enabled after restore: %s", sw, exc)
        self.programmer.connections[sw] = conn
        self.poller.release(sw, answered=True)
        ev = RecoveryEvent(sw, self.lost.pop(sw, started), started, self._clock(), report)
        self.events.append(ev)
        self.last_error.pop(sw, None)
        self.reported.discard(sw)
        self.loop.submit_switch_back(sw, report, ev.outage_s)
        log.warning("%s: restored in %.3f s (%s)", sw, ev.restore_s,
                    f"re-programmed: {report.reason}" if report.pushed else "intact")
        if self.on_restored is not None:
            try:
                self.on_restored(sw, ev)
            except Exception:  # noqa: BLE001 — a consumer bug must not stop recovery
                log.exception("on_restored failed")
        return True

    # ------------------------------------------------------------------ lifetime
    def _run(self) -> None:
        while not self._stop.wait(self.retry_s):
            try:
                self.check_once()
            except Exception:  # noqa: BLE001 — recovery must outlive a bug in one pass
                log.exception("switch recovery pass failed")

    def start(self) -> None:
        """Start the recovery thread."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="switch-recovery", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (an attempt in progress finishes first, bounded by its timeouts)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.connect_timeout_s + 70)
            self._thread = None

    def __enter__(self) -> "SwitchRecovery":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["RecoveryEvent", "SwitchRecovery"]
