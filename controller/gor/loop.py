"""GOR's main loop: telemetry → alarms → sampling → elephants → path decision → orders → confirmation.

:class:`GorLoop` wires the decision core (:mod:`~controller.gor.alarms`,
:mod:`~controller.gor.elephants`, :mod:`~controller.gor.paths`) to the switches (a
``FabricProgrammer``'s connections), the agents (a ``FlowRegistry``), the decision log and
the metrics. One call of :meth:`GorLoop.tick` is one step; the telemetry poller calls it
with each interval's samples (``TelemetryPoller(on_tick=loop.tick)``), digest reader
threads hand digests in with :meth:`GorLoop.submit_digests`. A switch's own alarm report
(``alarm_digest_t``) makes its reader call :meth:`GorLoop.react`: the digests, the moves
in flight and the rounds run at once, between two polls, with the elephants the switches
reported (:mod:`~controller.gor.dataplane`). ``python -m controller run`` is in
:mod:`controller.gor.service`.

**One basis for every load.** The engine works in link-speed bits per second, but every
load it sees is the *utilisation the poller reports* times the link speed: utilisation is
relative to the link's effective capacity, its queue rate when one shapes the port
(packets/s ÷ ``rate_pps``: the queue drains packets, so every packet counts, ACKs
included) and its speed otherwise (bits/s ÷ gbps). An elephant's rate is put in the same
basis: its share of the packets sampled on the link in the last ``window_s`` times the
link's measured utilisation (mean over the same window). Sampled shares need no
knowledge of the sampling ratio and always add up to what the counters measured.

One tick, in order:

1. **Telemetry**: every ``LinkSample``'s utilisation goes into a per-link window; the
   window's mean sets the link's load in :class:`LinkState`; marks and packets feed the
   :class:`AlarmMonitor` — except marks the queue cannot explain (no packet of the
   interval saw the port's planned ECN threshold, :mod:`controller.gor.markcheck`: a
   threshold written wrong, stale counters), which are logged ``marks_unexplained`` and
   start nothing; the same holds for a switch's own alarm report.
2. **Alarms**: a link rising to NOTICE or above gets sampling on its egress port
   (``FabricIngress.sampling.config``: ``egress_spec = port → sampling.sample(one_in_n)``),
   written at the end of the step, once its rounds have sent their orders
   (:meth:`Sampling.flush <controller.gor.sampling.Sampling.flush>`: a P4Runtime write
   must not delay the round); back to CLEAR, the entry is deleted (unless a move still
   needs it for confirmation). A failed write is retried on the next tick.
3. **Digests** queued since the last tick: samples go into the :class:`FlowTable`, the
   switches' alarm levels into the :class:`AlarmMonitor` (a second source), their
   elephants into the :class:`~controller.gor.dataplane.DataplaneReports`.
4. **Moves in flight** are checked (*Confirmation* below).
5. **Decisions**, one round at a time: only when no move is in flight, for every link at
   ``decide_level`` (default WARNING) or above, worst first, then every link whose
   overload is already proven at a lower alarm level (``early_decide``: it marks, NOTICE
   or above, and its utilisation over the last ``proof_s`` is over the safety threshold,
   or the elephants its switch reported add up to more than that — the queue need not
   grow to the WARNING mark rate first), then every link an earlier
   round worked on that still measures above the safety threshold (its load: the
   window's packets over its seconds, :class:`~controller.gor.windows.LoadWindows`) — until
   a round on it, with no alarm there, finds no move; at most once per
   ``decide_every_s``, once the link's window holds at least ``min_samples`` samples, or
   with ``samples_per_flow`` set that many per flow sampled there (capped by
   ``min_samples``: few flows need few samples; shares need no full window: they are
   unbiased from the first samples): the Top-N
   elephants on it (minus flows moved within
   ``cooldown_s``, by their old and their new 5-tuple: GOR never moves a flow back and
   forth) become :class:`ElephantFlow` s and :meth:`PathEngine.decide` plans the round
   on the loads with every move still in flight applied
   (:func:`~controller.gor.moves.apply_in_flight`).
6. **Orders**: a :class:`MoveOrder` goes to the owning host's agent
   (``FlowRegistry.move``) through a small thread pool, so the loop never blocks on an
   agent; an :class:`OverrideOrder` is written as ``FabricIngress.override.flows``
   entries on each switch of the order. Either way sampling is turned on at the new
   path's first link so the counters can confirm the move.

**Confirmation, retry, rollback.** A move is confirmed (``order_confirmed``, with
``seen_s``) when a digest of its new 5-tuple arrives from the new path's first link;
the agent's own ``ReportMove`` is logged (``agent_done``) but is not the proof. An agent
that refuses or reports a failure gets the order once more per ``max_retries``
(``order_retried``), then the order is ``order_rolled_back``. A move not seen on its new
link within ``confirm_timeout_s`` is rolled back: an agent that said it moved is told
to go back to the old port, override entries are deleted. A confirmed move stays in
flight ``settle_s`` more (default ``window_s`` plus two periods) so that the windowed
loads of the next round contain nothing from before the move.

**Override expiry** (:mod:`controller.gor.expiry`): an override entry whose flow has not
been sampled for ``override_idle_s`` gets a liveness probe (sampling at its pinned
path's first link for ``override_probe_s``); not seen there, its entries are deleted
(``override_expired``).

**Faults** (:mod:`controller.gor.faults`): :meth:`GorLoop.link_down` takes a
cable out of the ECMP groups at both ends and out of the engine's hash model, and makes
the links of both switches follow-up links; :meth:`GorLoop.link_up` puts it back. The
same happens, after each tick's digests, for a link the counters prove dead
(:mod:`controller.gor.deadlinks`: traffic sent into it never arrives, or forwarded to it
never leaves; an idle link is never declared dead). A pause storm (PFC frames received
over a rate for a duration, :mod:`controller.gor.pause`) raises its own alarm, logged and
exported, without a re-route. :meth:`GorLoop.reconcile` (:mod:`controller.gor.reconcile`)
reads back the override and sampling entries a previous GOR left in the switches and
adopts or deletes them. A switch that stops answering is logged ``switch_lost``; once a
:class:`~controller.gor.recovery.SwitchRecovery` has reconnected and re-programmed it,
:mod:`controller.gor.restarts` re-installs GOR's overrides and sampling entries on it and
logs ``switch_back``. While a switch is lost, and for ``SWITCH_GRACE_S`` after it is back,
no decision round runs on its links (their queues and alarms are the switch's doing); an
alarm that began on one of them meanwhile gets none until it clears (at most
``SYMPTOM_MAX_S`` after the switch is back). The same holds while a switch's counters are
stale or frozen (:meth:`LinkFaults.stalled <controller.gor.faults.LinkFaults.stalled>`:
it answers reads, but nothing it counts moves while its neighbours send to it).

**Structure.** :class:`GorLoop` runs steps 1–3 itself and owns one part per concern.
What the parts share is one typed bundle, :class:`~controller.gor.shared.LoopState`
(:attr:`GorLoop.state`: the path engine and its ``LinkState``, alarms, flow table, load
windows, the switches' reports, the ``MoveBook``, the switch tables, the outputs, the
NIC → leaf map, the registry); each part is built from it, the
:class:`~controller.gor.shared.LoopSettings` and a callback or two, and owns the state
only it uses — readable (and testable) alone:

* :attr:`GorLoop.sampler` — :class:`~controller.gor.sampling.Sampling`, the sampling entries;
* :attr:`GorLoop.orders` — :class:`~controller.gor.orders.MoveOrders`, orders and their
  confirmation (it owns the thread pool of agent calls);
* :attr:`GorLoop.rounds` — :class:`~controller.gor.rounds.DecisionRounds`, decision rounds
  and follow-up links (``act`` = ``MoveOrders.act``);
* :attr:`GorLoop.detour_sync` — :class:`~controller.gor.detour_sync.DetourSync`, the
  leaves' detours;
* :attr:`GorLoop.faults` — :class:`~controller.gor.faults.LinkFaults`, links down and up,
  dead links and pause storms (it owns both monitors; ``follow`` = ``DecisionRounds.follow``);
* :attr:`GorLoop.reconciliation` — :class:`~controller.gor.reconcile.Reconciliation` (with
  a :class:`~controller.gor.reconcile_links.LinkReconciler`), restart;
* :attr:`GorLoop.restarts` — :class:`~controller.gor.restarts.SwitchRestarts`, switches
  lost and restored;
* :attr:`GorLoop.expiry` — :class:`~controller.gor.expiry.OverrideExpiry`.

None of them imports this module. :mod:`~controller.gor.digests` has the digest reader
threads; :mod:`~controller.gor.runtime` starts, restarts and stops the loop with everything
around it.

Link names in the decision log and metrics are the telemetry's (``b0r0l0->s0``, with
``:port`` when two links join the same pair): :meth:`LinkState.name
<controller.gor.linkstate.LinkState.name>`.

A switch that does not answer a write or a digest read is logged and skipped; the loop
goes on.

Example (fakes for the switches and the registry, see ``tests/controller/test_gor_loop.py``)::

    >>> loop = GorLoop(fabric, programmer, registry, LoopSettings(period_s=0.05, top_n=4),
    ...                log=DecisionLog("logs/gor.jsonl"), metrics=GorMetrics())   # doctest: +SKIP
    >>> loop.submit_digests("b0r0l0", digest_list)                              # doctest: +SKIP
    >>> loop.tick(1.0, poller.poll_once())                                       # doctest: +SKIP
"""
from __future__ import annotations

import queue
import time
from typing import Any, Iterable, Mapping, Optional

from controller.fabric.detours import fabric_detours
from controller.gor.decisions import AlarmEvent, AlarmLevel, FlowKey, LinkKey, PathChoice, RoundDecision
from controller.gor.detour_sync import DetourSync
from controller.gor.digests import DIGEST_NAME, URGENT_DIGESTS, digest_name, digest_reader, enable_digests
from controller.gor.expiry import OverrideExpiry
from controller.gor.faults import LinkFaults
from controller.gor.log import DecisionLog
from controller.gor.markcheck import MarkCheck
from controller.gor.metrics import GorMetrics
from controller.gor.moves import MoveInFlight
from controller.gor.orders import OVERRIDE_ACTION, OVERRIDE_TABLE, MoveOrders, override_match
from controller.gor.reconcile import ReconcileReport, Reconciliation
from controller.gor.reconcile_links import LinkReconciler
from controller.gor.restarts import SwitchRestarts
from controller.gor.rounds import DecisionRounds
from controller.gor.sampling import Sampling
from controller.gor.shared import LoopOutputs, LoopSettings, LoopState
from controller.gor.tables import SAMPLING_ACTION, SAMPLING_KEY, SAMPLING_TABLE
from p4src.alarmmodel import ALARM_DIGEST, ELEPHANT_DIGEST

PendingMove = MoveInFlight
"""The former name of :class:`~controller.gor.moves.MoveInFlight`."""


class GorLoop:
    """GOR's control loop over one fabric (see the module docstring for one tick and its
    parts).

    ``fabric`` is a ``topo.model.Fabric``; ``programmer`` gives ``connections`` (switch
    name → ``SwitchConnection``-like: ``table_entry``, ``insert``, ``modify``, ``delete``,
    and ``read_table`` for :meth:`reconcile`) and ``hash_model()``; ``registry`` is a
    ``FlowRegistry``-like object (``flows``, ``move``, ``order``, ``owner``) or None (every
    flow then gets override entries); ``settings`` every knob with its default
    (:class:`~controller.gor.shared.LoopSettings`). Call :meth:`close` at the end (it stops
    the order thread pool).
    """

    def __init__(self, fabric: Any, programmer: Any, registry: Any = None,
                 settings: LoopSettings = LoopSettings(), *, log: Optional[DecisionLog] = None,
                 metrics: Optional[GorMetrics] = None) -> None:
        self.fabric, self.programmer, self.registry, self.settings = fabric, programmer, registry, settings
        # the state the parts share, one typed bundle (the loop's own steps use it too)
        st = self.state = LoopState.for_fabric(fabric, programmer, registry, settings,
                                               LoopOutputs(log, metrics))
        self.out, self.links, self.engine, self.alarms, self.flows = st.out, st.links, st.engine, st.alarms, st.flows
        self.windows, self.dataplane, self.book, self.tables = st.windows, st.dataplane, st.book, st.tables
        self.digests: "queue.Queue[tuple[str, Any, float]]" = queue.Queue()
        self.markcheck = MarkCheck(programmer)
        # one part per concern, each given the shared state, its settings and its callbacks
        self.sampler = Sampling(st, one_in_n=settings.one_in_n, needed=self._sampling_needed)
        self.orders = MoveOrders(st, self.sampler, settings)
        self.rounds = DecisionRounds(st, self.sampler, settings, self.orders.act,
                                     switch_unsettled=self._switch_unsettled)
        self.detour_sync = DetourSync(st, installed=fabric_detours(fabric))
        self.faults = LinkFaults(st, self.sampler, self.detour_sync, settings, follow=self.rounds.follow)
        self.reconciliation = Reconciliation(st, self.sampler, LinkReconciler(st, self.detour_sync, self.faults).run,
                                             settings)
        self.restarts = SwitchRestarts(st, self.sampler, self.detour_sync, self.faults.forget_counters)
        self.expiry = OverrideExpiry(st, self.sampler, self.orders.delete_override, settings)
        self.ticks = self.digest_errors = 0

    def close(self) -> None:
        """Stop the order thread pool (agent calls still running finish on their own)."""
        self.orders.close()

    def _sampling_needed(self, link: LinkKey) -> bool:
        """Something besides an alarm needs sampling on ``link``: a follow-up round may
        run on it, it probes a link that may be dead, a move must be seen there, or an
        override's flow that may have ended (:mod:`controller.gor.expiry`)."""
        return (link in self.rounds.follow_up or link in self.faults.probes
                or self.book.confirming(link) or self.expiry.probing(link))

    # ------------------------------------------------------------------ views
    @property
    def decision_log(self) -> Optional[DecisionLog]:
        """The decision log every part writes to (settable: None stops logging)."""
        return self.out.decision_log

    @decision_log.setter
    def decision_log(self, value: Optional[DecisionLog]) -> None:
        self.out.decision_log = value

    @property
    def metrics(self) -> Optional[GorMetrics]:
        """The Prometheus metrics, or None."""
        return self.out.metrics

    @property
    def errors(self) -> list[str]:
        """The newest faults the loop survived (switch, agent, digest), oldest first."""
        return self.out.errors

    @property
    def pending(self) -> dict[str, MoveInFlight]:
        """Order id → move in flight (:attr:`MoveBook.pending <controller.gor.moves.MoveBook>`)."""
        return self.book.pending

    @property
    def overrides(self) -> dict[FlowKey, PathChoice]:
        """5-tuple → the path its override entries pin."""
        return self.book.overrides

    @property
    def sampling(self) -> dict[LinkKey, int]:
        """Link → ``one_in_n`` of the sampling entries GOR has programmed."""
        return self.sampler.on

    @property
    def detours(self) -> dict[str, Any]:
        """Leaf → group id → the detour in force (:class:`DetourSync`)."""
        return self.detour_sync.detours

    @property
    def switch_log(self) -> list[tuple[str, str, float, dict[str, Any]]]:
        """``(event, switch, t_s, what)`` of every switch lost and back."""
        return self.restarts.switch_log

    @property
    def recovery_attached(self) -> bool:
        """A :class:`~controller.gor.recovery.SwitchRecovery` reports ``switch_back``
        (set by it)."""
        return self.restarts.recovery_attached

    @recovery_attached.setter
    def recovery_attached(self, value: bool) -> None:
        self.restarts.recovery_attached = value

    @property
    def settle_s(self) -> float:
        """How long a confirmed move stays in flight."""
        return self.settings.move_settle_s

    def link_name(self, link: LinkKey) -> str:
        """``"b0r0l0->s0"`` (the telemetry's name), ``"b0r0l0:3->s0"`` with parallel links."""
        return self.links.name(link)

    def _switch_unsettled(self, switch: str, t_s: float, alarm_since: Optional[float]) -> bool:
        """The rounds' view of :meth:`SwitchRestarts.unsettled` and
        :meth:`LinkFaults.stalled <controller.gor.faults.LinkFaults.stalled>` (a switch
        lost, or stale or frozen in its counters; both built after the rounds)."""
        return (self.restarts.unsettled(switch, t_s, alarm_since)
                or self.faults.stalled(switch, t_s, alarm_since))

    def busy(self) -> bool:
        """True while something wants fast telemetry: an alarm (NOTICE or above), a move
        in flight, a follow-up link, a dead-link probe or a link with dead evidence
        running (``DeadLinkDetector.suspects``). A caller may poll faster then
        (``scenarios.gor_session`` does: samples fill and moves are confirmed sooner).

        >>> poller.period_s = 0.1 if loop.busy() else 0.25       # doctest: +SKIP
        """
        return bool(self.book.pending or self.rounds.follow_up or self.faults.probes
                    or self.alarms.active(AlarmLevel.NOTICE) or self.faults.dead_links.suspects())

    # ------------------------------------------------------------------ inputs
    def submit_digests(self, switch: str, digest: Any) -> None:
        """Queue one DigestList (``.data`` rows) or a list of rows from ``switch``
        (thread-safe: called by the digest reader threads). Its arrival (wall clock) goes
        with it: a switch's alarm is logged with ``received_ts``, so detection splits into
        the trip to GOR and GOR's own wait (``bench/gor_fast_bench.py``)."""
        self.digests.put((switch, digest, time.time()))

    def submit_link_event(self, switch: str, port: int, up: bool,
                          reason: str = "administrative") -> None:
        """Queue a link event from another thread; the next tick or :meth:`react` applies
        it (thread-safe, :meth:`LinkFaults.submit_link_event
        <controller.gor.faults.LinkFaults.submit_link_event>`)."""
        self.faults.submit_link_event(switch, port, up, reason)

    def link_down(self, switch: str, port: int, reason: str = "administrative") -> list[str]:
        """Take the cable at ``switch:port`` out of service; returns the groups rewritten
        (:meth:`LinkFaults.link_down <controller.gor.faults.LinkFaults.link_down>`)."""
        return self.faults.link_down(switch, port, reason)

    def link_up(self, switch: str, port: int, reason: str = "administrative") -> list[str]:
        """Put the cable at ``switch:port`` back into its groups (as programmed)."""
        return self.faults.link_up(switch, port, reason)

    def reconcile(self, t_s: float = 0.0) -> ReconcileReport:
        """Adopt or delete the entries a previous GOR left in the switches; call once before
        the first tick (:meth:`Reconciliation.reconcile
        <controller.gor.reconcile.Reconciliation.reconcile>`)."""
        return self.reconciliation.reconcile(t_s)

    def observe_health(self, health: Mapping[str, Any], t_s: float = 0.0) -> None:
        """Log switches lost / answering again (``TelemetryPoller.health``); the stale
        ones give no dead-link evidence for a while (:meth:`LinkFaults.observe_stale`)."""
        self.restarts.observe_health(health, t_s)
        self.faults.observe_stale((sw for sw, h in health.items() if getattr(h, "stale", False)), t_s)

    def live_groups(self, switch: str) -> dict[int, tuple[int, ...]]:
        """Group id → egress ports of the live members of ``switch``'s ECMP groups."""
        return self.restarts.live_groups(switch)

    def submit_switch_lost(self, switch: str, reason: str) -> None:
        """The recovery found ``switch`` lost (thread-safe)."""
        self.restarts.submit_switch_lost(switch, reason)

    def submit_switch_back(self, switch: str, report: Any, lost_s: Optional[float] = None) -> None:
        """Hand in a switch the recovery reconnected (thread-safe)."""
        self.restarts.submit_switch_back(switch, report, lost_s)

    def drain_orders(self, timeout_s: float = 5.0) -> bool:
        """Wait (at most ``timeout_s``) until every agent call in flight has returned;
        True when none is left running (tests, orderly shutdown)."""
        return self.orders.drain(timeout_s)

    # ------------------------------------------------------------------ the step
    def tick(self, t_s: float, samples: Mapping[Any, Any]) -> list[RoundDecision]:
        """One step at ``t_s`` (seconds) with one interval's ``LinkId → LinkSample``;
        returns the decision rounds it ran. Never raises for a switch, agent or digest
        fault (they are logged in :attr:`errors`)."""
        start = time.perf_counter()
        self.ticks += 1
        self.faults.drain_link_events()
        self.restarts.drain_events(t_s)
        self._telemetry(t_s, samples)
        self._drain_digests(t_s)
        if self.settings.detect_dead_links:
            self.faults.watch_links(t_s, samples)
        self.reconciliation.expire_adopted(t_s)
        self.orders.check(t_s)
        self.expiry.check(t_s)
        rounds = self.rounds.decide(t_s)
        self.sampler.flush()
        self.flows.age(t_s)
        self.book.age(t_s)
        if self.out.metrics is not None:
            self.out.metrics.set_reports(self.dataplane.to_dict())
            self.out.metrics.observe_loop(time.perf_counter() - start)
        return rounds

    def leave_alone(self, flows: Iterable[FlowKey]) -> None:
        """Never choose these 5-tuples to move (they still count in their links' load):
        the monitor's probes, whose paths the probe plan predicts — a probe GOR moved or
        pinned would watch other links than planned, and two disjoint paths per link
        would no longer be two.

        >>> loop.leave_alone([FlowKey("10.0.0.1", "10.1.1.2", 17, 49152, 4791)])  # doctest: +SKIP
        """
        self.rounds.left_alone = frozenset(self.rounds.left_alone | set(flows))

    def wants_now(self, digest: str) -> bool:
        """Whether a digest list named ``digest`` should make the loop act at once
        (:meth:`react`) rather than at its next tick: a switch's alarm report always; an
        elephant report while an alarmed link waits for its round (the report may explain
        the alarm or prove the overload: :attr:`DecisionRounds.waiting
        <controller.gor.rounds.DecisionRounds.waiting>`); a flow sample while a move waits
        to be seen on its new uplink (the sample may be its confirmation) or an alarmed
        link's round waits for samples (``waiting_samples``). Safe to call from the digest
        reader threads.

        >>> loop.wants_now("alarm_digest_t"), loop.wants_now("elephant_digest_t")  # doctest: +SKIP
        (True, False)
        """
        if digest in URGENT_DIGESTS:
            return True
        if digest == ELEPHANT_DIGEST:
            return bool(self.rounds.waiting)
        if digest != DIGEST_NAME:
            return False
        if self.rounds.waiting_samples:
            return True
        try:
            return any(m.seen_s is None for m in list(self.book.pending.values()))
        except RuntimeError:                     # the loop changed the book meanwhile
            return True

    def react(self, t_s: float) -> list[RoundDecision]:
        """A switch reported an alarm (or a sample that may confirm a move,
        :meth:`wants_now`), or a link event was queued: act on it now, between two polls —
        apply the queued link events, take the queued digests (the alarm, the elephants),
        check the moves in flight, run the rounds due.
        Telemetry and the dead-link rules wait for the next :meth:`tick`. Not thread-safe
        with :meth:`tick`: the caller serialises the two (``scenarios.gor_session`` and
        ``python -m controller run`` hold one lock)."""
        self.faults.drain_link_events()
        self._drain_digests(t_s)
        self.orders.check(t_s)
        rounds = self.rounds.decide(t_s)
        self.sampler.flush()                 # after the orders: the round waits for no write
        return rounds

    # ------------------------------------------------------------------ 1-2 telemetry, alarms
    def _telemetry(self, t_s: float, samples: Mapping[Any, Any]) -> None:
        out = self.out
        if out.metrics is not None:
            out.metrics.observe_samples(samples)
        for lid, s in samples.items():
            key: LinkKey = (lid.switch, lid.port)
            if key in self.links.capacity_bps:
                self.links.set_util(key, self.windows.add(key, t_s, max(0.0, float(s.util)),
                                                          float(s.dt_s)))
                rate_pps = getattr(s, "rate_pps", None)
                if rate_pps:                 # the queue rate util is relative to
                    self.links.set_queue_rate(key, float(rate_pps))
                elif s.dt_s > 0:
                    self.links.observe_rate(key, s.tx_pkts / s.dt_s, float(s.util))
            self.faults.watch_pause(key, t_s, s)
            marks = s.marks
            if self.markcheck.check(key, marks, getattr(s, "qdepth_bins", ())):
                self._marks_unexplained(key, marks, s.max_qdepth, "counters")
                marks = 0                    # not congestion: no alarm, no round
            else:
                self.markcheck.unexplained.discard(key)
            ev = self.alarms.observe(key, t_s, marks, s.tx_pkts)
            if ev is not None:
                self._alarm_changed(ev, t_s, "counters", util_pct=round(100 * s.util, 2))
        # retry sampling writes that failed on an earlier tick (written after the rounds)
        for key in self.alarms.active(AlarmLevel.NOTICE):
            if key not in self.sampler:
                self.sampler.request(key, t_s)

    def _alarm_changed(self, ev: AlarmEvent, t_s: float, source: str, **what: Any) -> None:
        """A link's level changed (``source``: ``counters`` or ``switch``): sampling on
        while it is alarmed, the decision log and the metrics told."""
        out, key = self.out, ev.link
        name = self.links.name(key)
        if out.metrics is not None:
            out.metrics.set_alarm(name, int(ev.new))
        util_pct = what.pop("util_pct", round(100 * self.links.util(key), 2))
        if ev.raised:
            # sampling is written once this step's rounds have sent their orders
            # (Sampling.flush): the round does not wait for a P4Runtime write
            one_in_n = self.sampler.request(key, t_s)
            if out.decision_log is not None:
                out.decision_log.record(
                    "alarm_raised", link=name, level=int(ev.new), mark_rate=ev.mark_rate,
                    util_pct=util_pct, sampling=one_in_n, source=source, **what)
        else:
            if ev.new == AlarmLevel.CLEAR and not self.sampler.needed(key):
                self.sampler.disable(key)
            if out.decision_log is not None:
                out.decision_log.alarm_cleared(name, int(ev.old), ev.mark_rate, util_pct,
                                               source=source, to_level=int(ev.new))

    def _marks_unexplained(self, link: LinkKey, marks: int, max_qdepth: int, source: str) -> None:
        """CE marks on ``link`` that no queue explains (:mod:`controller.gor.markcheck`):
        logged once per episode, then ignored."""
        if link in self.markcheck.unexplained:
            return
        self.markcheck.unexplained.add(link)
        if self.out.decision_log is not None:
            self.out.decision_log.record("marks_unexplained", link=self.links.name(link), marks=marks,
                                         max_qdepth=max_qdepth, kmin_pkts=self.markcheck.kmin(link),
                                         source=source)

    # ------------------------------------------------------------------ 3 digests
    def _drain_digests(self, t_s: float) -> None:
        while True:
            try:
                switch, digest, received_ts = self.digests.get_nowait()
            except queue.Empty:
                return
            name = digest_name(digest)
            rows = getattr(digest, "data", digest)
            try:
                if name == ALARM_DIGEST:
                    for row in rows:
                        self._switch_alarm(switch, row, t_s, received_ts,
                                           getattr(digest, "timestamp_ns", 0))
                elif name == ELEPHANT_DIGEST:
                    for row in rows:
                        self.dataplane.elephant(switch, row, t_s)
                else:
                    for row in rows:
                        got = self.flows.add(row, t_s)
                        if got is not None:
                            sw = self.flows.switch_names.get(got.switch_id)
                            self.faults.count_forwarded((sw or switch, got.egress_port))
            except Exception as exc:  # noqa: BLE001 — a malformed digest must not stop the loop
                self.digest_errors += 1
                self.out.error(f"{switch}: bad digest: {type(exc).__name__}: {exc}")

    def _switch_alarm(self, switch: str, row: Mapping[str, int], t_s: float,
                      received_ts: Optional[float] = None, digest_ts_ns: int = 0) -> None:
        """One ``alarm_digest_t`` row: the switch's level goes into the monitor
        (``received_ts``: when its digest reached GOR, wall clock; ``digest_ts_ns``: the
        DigestList's own timestamp, the target's clock; both kept in the log)."""
        rep = self.dataplane.alarm(switch, row, t_s)
        if rep is None or not self.links.is_up(rep.link):
            return
        if rep.level > 0 and self.markcheck.check(rep.link, 1 if rep.mark_rate > 0 else 0, (), rep.max_qdepth):
            self._marks_unexplained(rep.link, int(row.get("marks", 0) or 0), rep.max_qdepth, "switch")
            return                           # the switch's own report of the same marks
        ev = self.alarms.report(rep.link, t_s, AlarmLevel(rep.level), rep.mark_rate)
        if ev is not None:
            self._alarm_changed(ev, t_s, "switch", switch_level=rep.level,
                                max_qdepth=rep.max_qdepth, seq=rep.seq,
                                received_ts=None if received_ts is None else round(received_ts, 6),
                                **({"digest_ts_ns": digest_ts_ns} if digest_ts_ns else {}))


__all__ = ["DIGEST_NAME", "GorLoop", "MoveInFlight", "OVERRIDE_ACTION", "OVERRIDE_TABLE", "PendingMove",
           "SAMPLING_ACTION", "SAMPLING_KEY", "SAMPLING_TABLE", "digest_reader", "enable_digests",
           "override_match"]
