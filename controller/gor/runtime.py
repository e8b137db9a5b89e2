"""GOR's runtime: one object starts, restarts and stops everything GOR runs over a fabric —
the decision log, the flow registry the agents call, the metrics endpoint, the loop
(reconciled before its first tick), the telemetry poller whose ticks drive it, the digest
readers and the reactor that make it act on a switch's report at once, and the switch
recovery — and holds the lock that serialises the loop's tick and reaction.

``python -m controller run`` (:func:`controller.gor.service.run_gor`), the testbed's
scenarios (``scenarios.gor_session.GorSession``, and the benchmarks through them) and the
detour probe (``scenarios.detour_probe``) all run GOR through it. As Mininet's ``Mininet``
owns build, start and stop, :class:`GorRuntime` owns every thread and server it starts::

    rt = GorRuntime(fabric, programmer, GorOptions(LoopSettings(period_s=0.05),
                    registry_bind="127.0.0.1:50100", security=b"secret", metrics_port=0,
                    decision_log=Path("logs/gor.jsonl")))
    report = rt.start()      # log, registry, metrics, loop (reconciled), poller, readers, recovery
    rt.wait_for(lambda: not rt.loop.busy(), timeout_s=5.0)
    rt.restart()             # a new registry at the same address, a new loop that reconciles
    rt.stop()

:meth:`GorRuntime.stop_gor` / :meth:`GorRuntime.start_gor`: GOR down — loop closed,
registry and metrics endpoint stopped — while the poller and the digest readers go on (what
a crashed controller leaves; the digests and ticks meanwhile go nowhere).
:meth:`GorRuntime.quiesce` stops what acts (recovery, poller, readers, reactor) and leaves
the registry answering until :meth:`GorRuntime.stop`. Hooks: ``on_tick(t_s, samples,
polled_s)`` after each tick of the loop (``polled_s``: the monotonic time the samples were
handed in, before the loop acted on them); :meth:`GorRuntime.leave_alone` (flows kept
across restarts); the recovery (``GorOptions.recovery``) attached to every new loop.
``GorOptions(poll=False)``: the loop alone, driven by its caller (no poller, readers,
reactor or recovery).

>>> GorOptions().registry_bind is None, GorOptions().settings.period_s
(True, 0.05)
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional

from controller.gor.digests import digest_reader, enable_digests
from controller.gor.log import DecisionLog
from controller.gor.loop import GorLoop
from controller.gor.metrics import GorMetrics, MetricsServer
from controller.gor.reactor import Reactor
from controller.gor.reconcile import ReconcileReport
from controller.gor.recovery import SwitchRecovery
from controller.gor.shared import LoopSettings
from controller.registry import FlowRegistry, serve_registry
from controller.telemetry.poller import TelemetryPoller, connection_reader, fabric_links

TickHook = Callable[[float, Mapping[Any, Any], float], None]
"""``on_tick(t_s, samples, polled_s)``: one interval's samples, after the loop's tick."""


@dataclass(slots=True)
class GorOptions:
    """What a :class:`GorRuntime` runs: the loop's ``settings`` (its ``period_s`` is the
    poll period; ``fast_period_s``, when set, while ``GorLoop.busy()``); the registry's
    ``registry_bind`` (``host:port`` or ``unix:PATH``; None: no registry, every flow gets
    override entries) and ``security`` (a ``MutualTls`` or the token secret); the metrics
    endpoint's ``metrics_port`` (None: none; 0: a free port, kept across restarts); the
    ``decision_log`` path (None: no log); ``link_rates_pps`` (switch, port) → the queue
    rate polled links are measured against; ``poll`` (False: the loop alone) and
    ``recovery`` (a :class:`SwitchRecovery` with the poller).

    >>> GorOptions(LoopSettings(top_n=8), metrics_port=0).settings.top_n
    8
    """

    settings: LoopSettings = field(default_factory=LoopSettings)
    registry_bind: Optional[str] = None
    security: Any = None
    metrics_port: Optional[int] = None
    decision_log: Optional[Path] = None
    fast_period_s: Optional[float] = None
    link_rates_pps: Optional[Mapping[tuple[str, int], float]] = None
    poll: bool = True
    recovery: bool = True


class GorRuntime:
    """See the module docstring. ``programmer``: a ``FabricProgrammer`` already connected
    (``connections``, ``hash_model()``); ``say`` gets the runtime's notices. Lifetime:
    :meth:`start` … :meth:`stop`, or a context manager. ``lock`` (a re-entrant condition)
    is held by every tick and reaction; a caller holds it to see the loop at one instant."""

    def __init__(self, fabric: Any, programmer: Any, options: Optional[GorOptions] = None, *,
                 on_tick: Optional[TickHook] = None, say: Callable[[str], None] = print) -> None:
        self.fabric, self.programmer, self.options = fabric, programmer, options or GorOptions()
        self.on_tick, self.say = on_tick, say
        self.metrics = GorMetrics()                 # one for the runtime: restarts keep the series
        self.metrics_port = self.options.metrics_port
        self.lock = threading.Condition(threading.RLock())
        self.loop: Optional[GorLoop] = None
        self.registry: Optional[FlowRegistry] = None
        self.registry_address = ""
        self.decision_log: Optional[DecisionLog] = None
        self.poller: Optional[TelemetryPoller] = None
        self.recovery: Optional[SwitchRecovery] = None
        self.reactor: Optional[Reactor] = None
        self.metrics_server: Optional[MetricsServer] = None
        self.left_alone: set[Any] = set()
        self.down = True                            # no loop runs (before start, after stop_gor)
        self.t0 = time.monotonic()                  # the poller's start (since_start)
        self._server: Any = None
        self._stop = threading.Event()
        self._readers: list[threading.Thread] = []

    # ------------------------------------------------------------------ lifetime
    def start(self) -> ReconcileReport:
        """Start everything (the module docstring's order); returns the first loop's
        ``ReconcileReport``. On an error what was started is stopped and the error raised."""
        o = self.options
        try:
            if o.decision_log is not None:
                self.decision_log = DecisionLog(o.decision_log)
            report = self.start_gor(0.0)
            if not o.poll:
                return report
            conns = self.programmer.connections
            self.poller = TelemetryPoller({n: connection_reader(conns, n) for n in conns},
                                          fabric_links(self.fabric, o.link_rates_pps),
                                          o.settings.period_s, on_tick=self._tick)
            if o.recovery:                  # restarted switches found and re-programmed
                self.recovery = SwitchRecovery(self.programmer, self.poller, self.loop)
            failed = enable_digests(conns, conns)
            if failed:
                self.say(f"digests not enabled on {', '.join(failed)}")
            # a switch's alarm report: the loop acts at once, in a thread of its own, so no
            # reader waits for a reaction (controller.gor.reactor)
            self.reactor = Reactor(self.react).start()
            for name in conns:
                t = threading.Thread(target=digest_reader, args=(self, name, conns, self._stop),
                                     kwargs={"on_alarm": self.reactor.request, "urgent": self.wants_now},
                                     name=f"digests-{name}", daemon=True)
                t.start()
                self._readers.append(t)
            self.t0 = time.monotonic()
            self.poller.start()
            if self.recovery is not None:
                self.recovery.start()
            return report
        except BaseException:
            self.stop()
            raise

    def start_gor(self, t_s: Optional[float] = None) -> ReconcileReport:
        """A registry served at ``registry_bind``, the metrics endpoint (on the port of the
        last one), and a new loop that reconciles at ``t_s`` (default: now, since the
        start) before its first tick; returns the ``ReconcileReport``."""
        o = self.options
        with self.lock:
            if o.registry_bind is not None:
                if o.registry_bind.startswith("unix:"):     # a predecessor's socket file goes
                    sock = Path(o.registry_bind[len("unix:"):])
                    sock.parent.mkdir(parents=True, exist_ok=True)
                    sock.unlink(missing_ok=True)
                self.registry = FlowRegistry.from_fabric(self.fabric, o.security)
                self._server, self.registry_address = serve_registry(self.registry, o.registry_bind)
            if self.metrics_port is not None and self.metrics_server is None:
                self.metrics_server = MetricsServer(self.metrics, port=self.metrics_port)
                self.metrics_server.start()
                self.metrics_port = self.metrics_server.port   # a restarted GOR serves here too
            self.loop = GorLoop(self.fabric, self.programmer, self.registry, o.settings,
                                log=self.decision_log, metrics=self.metrics)
            self.loop.leave_alone(self.left_alone)
            if self.recovery is not None:
                self.recovery.loop = self.loop
                self.loop.recovery_attached = True
            report = self.loop.reconcile(self.since_start() if t_s is None else t_s)
            self.down = False
            return report

    def stop_gor(self) -> None:
        """GOR down: its loop, registry server and metrics endpoint stop; the switches,
        poller and digest readers go on (:meth:`start_gor` brings it back)."""
        with self.lock:
            if self.down:
                return
            self.down = True
            if self.loop is not None:
                self.loop.close()
            self._stop_servers()

    def restart(self) -> ReconcileReport:
        """:meth:`stop_gor` then :meth:`start_gor` (a new registry at the same address, a new
        loop that reconciles first); returns the ``ReconcileReport``."""
        with self.lock:
            self.stop_gor()
            return self.start_gor()

    def quiesce(self) -> None:
        """Stop what acts — recovery, poller, digest readers, reactor — leaving the loop,
        registry and metrics endpoint up (a caller stops its agents, then :meth:`stop`)."""
        if self.recovery is not None:
            self.recovery.stop()
        if self.poller is not None:
            self.poller.stop()
        self._stop.set()
        for t in self._readers:
            t.join(timeout=2)
        self._readers.clear()
        if self.reactor is not None:
            self.reactor.stop()

    def stop(self) -> None:
        """Stop everything (idempotent): :meth:`quiesce`, then the loop, registry server,
        metrics endpoint and decision log."""
        self.quiesce()
        with self.lock:
            self.down = True
            if self.loop is not None:
                self.loop.close()
            self._stop_servers()
            if self.decision_log is not None:
                self.decision_log.close()

    def _stop_servers(self) -> None:
        if self._server is not None:
            self._server.stop(0).wait()
            self._server = None
        if self.metrics_server is not None:
            self.metrics_server.stop()
            self.metrics_server = None

    def __enter__(self) -> "GorRuntime":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ hooks and views
    def leave_alone(self, flows: Iterable[Any]) -> None:
        """5-tuples (``FlowKey``) GOR must never move, now and after a restart: the
        monitor's probes (:meth:`GorLoop.leave_alone <controller.gor.loop.GorLoop.leave_alone>`)."""
        self.left_alone |= set(flows)
        if self.loop is not None:
            self.loop.leave_alone(self.left_alone)

    @property
    def metrics_address(self) -> str:
        """``host:port`` of the metrics endpoint (Prometheus scrapes it as job ``gor``)."""
        return f"127.0.0.1:{self.metrics_port}"

    def since_start(self, t_mono: Optional[float] = None) -> float:
        """Seconds since the poller started (now, or at ``t_mono``)."""
        return (time.monotonic() if t_mono is None else t_mono) - self.t0

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``predicate()`` holds after a tick or reaction (at most
        ``timeout_s``); its last value."""
        with self.lock:
            return self.lock.wait_for(predicate, timeout=timeout_s)

    # ------------------------------------------------------------------ the threads' entry points
    def _tick(self, t_s: float, samples: Mapping[Any, Any]) -> None:
        """The poller's ``on_tick``: the loop's tick under the lock (the agents' ages
        exported, the poll period set fast while the loop is busy), then ``on_tick``."""
        polled_s = time.monotonic()              # before the loop acts on these samples
        o = self.options
        with self.lock:
            loop, poller = self.loop, self.poller
            if loop is not None and poller is not None and not self.down:
                loop.observe_health(poller.health, t_s)
                loop.tick(t_s, samples)
                if self.registry is not None:
                    for host, age_s in self.registry.agent_ages().items():
                        self.metrics.set_agent_age(host, age_s)
                if o.fast_period_s is not None:
                    poller.period_s = o.fast_period_s if loop.busy() else o.settings.period_s
            self.lock.notify_all()
        if self.on_tick is not None:
            self.on_tick(t_s, samples, polled_s)

    def react(self) -> None:
        """A switch reported an alarm (the reactor's thread): the loop acts on it now
        (:meth:`GorLoop.react <controller.gor.loop.GorLoop.react>`, under the lock). The
        polls keep their period: uneven intervals make per-poll rates noisy."""
        with self.lock:
            if self.loop is None or self.poller is None or self.down:
                return
            self.loop.react(self.poller.elapsed_s())
            self.lock.notify_all()

    def submit_link_event(self, switch: str, port: int, up: bool,
                          reason: str = "administrative") -> None:
        """A link went down or up (a port watcher, the testbed): queue it on the loop and
        have the reactor apply it now rather than at the next poll (a switch's port-down
        interrupt, not its counters, is what rewrites a real fabric's groups: every
        poll period of delay black-holes the flows hashed onto the dead link). Without
        a reactor (``poll=False``) the next :meth:`GorLoop.tick` applies it.

        >>> rt.submit_link_event("b0r0l0", 3, up=False, reason="cable cut")  # doctest: +SKIP
        """
        loop = self.loop
        if loop is None:
            raise RuntimeError("GOR is not running: no loop to take the link event")
        loop.submit_link_event(switch, port, up, reason)
        if self.reactor is not None:
            self.reactor.request()

    def wants_now(self, digest: str) -> bool:
        """The running loop's :meth:`GorLoop.wants_now
        <controller.gor.loop.GorLoop.wants_now>` (False while GOR is down)."""
        loop = self.loop
        return loop is not None and not self.down and loop.wants_now(digest)

    def submit_digests(self, switch: str, digest: Any) -> None:
        """Hand a digest list to the running loop (the digest readers call this; dropped
        while GOR is down)."""
        loop = self.loop
        if loop is not None and not self.down:
            loop.submit_digests(switch, digest)


__all__ = ["GorOptions", "GorRuntime", "TickHook"]
