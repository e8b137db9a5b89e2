"""GOR's main loop: telemetry → alarms → sampling → elephants → path decision → orders → confirmation.

:class:`GorLoop` wires the decision core (:mod:`~controller.gor.alarms`,
:mod:`~controller.gor.elephants`, :mod:`~controller.gor.paths`) to the switches (a
``FabricProgrammer``'s connections), the agents (a ``FlowRegistry``), the decision log and
the metrics. One call of :meth:`GorLoop.tick` is one step; the telemetry poller calls it
with each interval's samples (``TelemetryPoller(on_tick=loop.tick)``), digest reader
threads hand digests in with :meth:`GorLoop.submit_digests`. ``python -m controller run``
is in :mod:`controller.gor.service`.

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
   :class:`AlarmMonitor`.
2. **Alarms**: a link rising to NOTICE or above gets sampling on its egress port
   (``FabricIngress.sampling.config``: ``egress_spec = port → sampling.sample(one_in_n)``);
   back to CLEAR, the entry is deleted (unless a move still needs it for confirmation).
   A failed write is retried on the next tick.
3. **Digests** queued since the last tick go into the :class:`FlowTable`.
4. **Moves in flight** are checked (*Confirmation* below).
5. **Decisions**, one round at a time: only when no move is in flight, for every link at
   ``decide_level`` (default WARNING) or above, worst first, then every link whose
   overload is already proven at a lower alarm level (``early_decide``: it marks, NOTICE
   or above, and its utilisation over the last ``proof_s`` is over the safety threshold
   — the queue need not grow to the WARNING mark rate first), then every link an earlier
   round worked on that still measures above the safety threshold; at most once per
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
logs ``switch_back``.

The loop is split by concern: :mod:`~controller.gor.tables` (entry writes, sampling),
:mod:`~controller.gor.rounds` (decision rounds), :mod:`~controller.gor.orders` (orders),
:mod:`~controller.gor.faults` (links), :mod:`~controller.gor.reconcile` (restart),
:mod:`~controller.gor.restarts` (switches lost and restored),
:mod:`~controller.gor.digests` (digest reader threads).

Link names in the decision log and metrics are the telemetry's (``b0r0l0->s0``, with
``:port`` when two links join the same pair): :meth:`GorLoop.link_name`.

A switch that does not answer a write or a digest read is logged and skipped; the loop
goes on.

Example (fakes for the switches and the registry, see ``tests/controller/test_gor_loop.py``)::

    >>> loop = GorLoop(fabric, programmer, registry, period_s=0.05, safety=0.75, top_n=4,
    ...                log=DecisionLog("logs/gor.jsonl"), metrics=GorMetrics())   # doctest: +SKIP
    >>> loop.submit_digests("b0r0l0", digest_list)                              # doctest: +SKIP
    >>> loop.tick(1.0, poller.poll_once())                                       # doctest: +SKIP
"""
from __future__ import annotations

import itertools
import logging
import queue
import time
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Mapping, Optional

from controller.fabric import switch_id_of
from controller.fabric.detours import fabric_detours
from controller.gor.alarms import AlarmMonitor, AlarmThresholds
from controller.gor.deadlinks import DeadLinkDetector, DeadLinkThresholds
from controller.gor.decisions import AlarmLevel, FlowKey, LinkKey, PathChoice, RoundDecision
from controller.gor.detour_sync import DetourSync
from controller.gor.digests import DIGEST_NAME, digest_reader, enable_digests
from controller.gor.elephants import FlowTable
from controller.gor.expiry import DEFAULT_OVERRIDE_IDLE_S, DEFAULT_OVERRIDE_PROBE_S, OverrideExpiry
from controller.gor.faults import LinkFaults
from controller.gor.log import DecisionLog
from controller.gor.metrics import GorMetrics
from controller.gor.moves import MoveInFlight
from controller.gor.orders import OVERRIDE_ACTION, OVERRIDE_TABLE, MoveOrders, override_match
from controller.gor.pause import PauseStormMonitor, PauseStormThresholds
from controller.gor.paths import LinkState, PathEngine, nic_leaves
from controller.gor.reconcile import Reconciliation
from controller.gor.reconcile_links import ReconcileLinks
from controller.gor.restarts import SwitchRestarts
from controller.gor.rounds import DecisionRounds
from controller.gor.tables import SAMPLING_ACTION, SAMPLING_KEY, SAMPLING_TABLE, SwitchTables

log = logging.getLogger("controller.gor.loop")

PendingMove = MoveInFlight
"""The former name of :class:`~controller.gor.moves.MoveInFlight`."""


class GorLoop(DecisionRounds, MoveOrders, LinkFaults, DetourSync, Reconciliation, ReconcileLinks,
              SwitchRestarts, OverrideExpiry, SwitchTables):
    """GOR's control loop over one fabric (see the module docstring for one tick).

    ``fabric`` is a ``topo.model.Fabric``; ``programmer`` gives ``connections`` (switch
    name → ``SwitchConnection``-like: ``table_entry``, ``insert``, ``modify``, ``delete``,
    and ``read_table`` for :meth:`reconcile`) and ``hash_model()``; ``registry`` is a
    ``FlowRegistry``-like object (``flows``, ``move``, ``order``, ``owner``) or None (every
    flow then gets override entries). ``pause_thresholds`` / ``dead_link_thresholds`` set
    the fault detectors (``detect_dead_links=False`` turns the counter rule off).
    Call :meth:`close` at the end (it stops the order thread pool).
    """

    def __init__(self, fabric: Any, programmer: Any, registry: Any, *, period_s: float = 0.05,
                 safety: float = 0.75, top_n: int = 4, log: Optional[DecisionLog] = None,
                 metrics: Optional[GorMetrics] = None, one_in_n: int = 100,
                 thresholds: Optional[AlarmThresholds] = None, window_s: float = 1.0,
                 decide_every_s: float = 1.0, cooldown_s: float = 10.0,
                 confirm_timeout_s: float = 3.0, order_timeout_s: float = 2.0,
                 max_retries: int = 1, decide_level: AlarmLevel = AlarmLevel.WARNING,
                 settle_s: Optional[float] = None, min_samples: int = 20,
                 samples_per_flow: Optional[int] = None, early_decide: bool = True,
                 proof_s: float = 0.5, order_workers: int = 4,
                 override_idle_s: float = DEFAULT_OVERRIDE_IDLE_S,
                 override_probe_s: float = DEFAULT_OVERRIDE_PROBE_S,
                 pause_thresholds: Optional[PauseStormThresholds] = None,
                 dead_link_thresholds: Optional[DeadLinkThresholds] = None,
                 detect_dead_links: bool = True) -> None:
        if top_n < 1 or one_in_n < 1 or order_workers < 1:
            raise ValueError("top_n, one_in_n and order_workers must be at least 1")
        self.fabric, self.programmer, self.registry = fabric, programmer, registry
        self.period_s, self.top_n, self.one_in_n = period_s, top_n, one_in_n
        self.decision_log, self.metrics = log, metrics
        self.decide_every_s, self.cooldown_s = decide_every_s, cooldown_s
        self.confirm_timeout_s, self.order_timeout_s = confirm_timeout_s, order_timeout_s
        self.max_retries, self.decide_level = max_retries, decide_level
        self.window_s, self.min_samples = window_s, min_samples
        self.samples_per_flow, self.early_decide, self.proof_s = samples_per_flow, early_decide, proof_s
        self.override_idle_s, self.override_probe_s = override_idle_s, override_probe_s
        self.override_seen: dict[FlowKey, float] = {}
        self.liveness: dict[FlowKey, tuple[LinkKey, float]] = {}
        self.settle_s = window_s + 2 * period_s if settle_s is None else settle_s
        self.safety = safety
        self.follow_up: set[LinkKey] = set()          # links of past rounds, still over safety
        self.alarms = AlarmMonitor(thresholds)
        self.pause = PauseStormMonitor(pause_thresholds)
        self.dead_links = DeadLinkDetector(dead_link_thresholds)
        self.detect_dead_links = detect_dead_links
        self.links = LinkState.from_fabric(fabric)
        self.engine = PathEngine(fabric, programmer.hash_model(), self.links, safety=safety)
        # the detours the plan installed (a fabric whose spines miss some leaf), kept by
        # DetourSync; the groups the fault handling rewrites are the others
        self.detours = fabric_detours(fabric)
        self.detours_pending: set[str] = set()
        self.programmed_groups = {n: {gid: g for gid, g in m.groups.items()
                                      if gid not in self.detours.get(n, {})}
                                  for n, m in programmer.hash_model().switches.items()}
        self.link_events: "queue.Queue[tuple[str, int, bool, str]]" = queue.Queue()
        self.flows = FlowTable({switch_id_of(sw, fabric): sw.name for sw in fabric.switches},
                               one_in_n=one_in_n, window_s=window_s)
        self.leaf_of = nic_leaves(fabric)
        self.digests: "queue.Queue[tuple[str, Any]]" = queue.Queue()
        self.sampling: dict[LinkKey, int] = {}        # link → one_in_n programmed
        self.sampling_since: dict[LinkKey, float] = {}
        self.probes: dict[LinkKey, float] = {}        # dead-link probes: link → since
        self.forwarded: Counter[LinkKey] = Counter()  # digests per egress link since the last tick
        self.rx_armed: set[LinkKey] = set()           # ports whose rx counter has moved
        self.counter_down: set[LinkKey] = set()       # links taken down by the counters
        self.adopted_sampling: dict[LinkKey, float] = {}   # reconciled entries: link → until
        self.pending: dict[str, MoveInFlight] = {}    # order id → move not yet seen/settled
        self.overrides: dict[FlowKey, PathChoice] = {}
        self.moved: dict[FlowKey, float] = {}         # flow (old and new key) → left alone until
        self.flow_ids: dict[FlowKey, str] = {}        # new 5-tuple → registry flow id
        self.last_decision: dict[LinkKey, float] = {}
        self.util_window: dict[LinkKey, deque[tuple[float, float]]] = {}
        self.link_ids: dict[LinkKey, Any] = {}
        self.decisions: list[RoundDecision] = []
        self.errors: list[str] = []
        self.ticks = 0
        self.digest_errors = 0
        self._rounds = itertools.count(1)
        self._order_ids = itertools.count(1)
        self._stale: dict[str, bool] = {}
        self.recovery_attached = False                # a SwitchRecovery reports switch_back
        self.switch_events: "queue.Queue[tuple[str, str, Any, Optional[float]]]" = queue.Queue()
        self.lost_switches: dict[str, float] = {}     # switch → t_s it was lost
        self.switch_log: list[tuple[str, str, float, dict[str, Any]]] = []  # lost/back, switch, t_s, what
        self._pool = ThreadPoolExecutor(max_workers=order_workers, thread_name_prefix="gor-order")

    def close(self) -> None:
        """Stop the order thread pool (agent calls still running finish on their own)."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ names
    def link_name(self, link: LinkKey) -> str:
        """``"b0r0l0->s0"`` (the telemetry's name), ``"b0r0l0:3->s0"`` with parallel links."""
        sw, port = link
        peer = self.links.peer.get(link)
        if peer is None:
            return f"{sw}:{port}"
        twins = [k for k, v in self.links.peer.items() if k[0] == sw and v[0] == peer[0]]
        return f"{sw}->{peer[0]}" if len(twins) < 2 else f"{sw}:{port}->{peer[0]}"

    def _utils(self, links: Iterable[LinkKey], state: Optional[LinkState] = None) -> dict[str, float]:
        st = state or self.links
        return {self.link_name(l): round(100 * st.util(l), 2) for l in links}

    def busy(self) -> bool:
        """True while something wants fast telemetry: an alarm (NOTICE or above), a move
        in flight, a follow-up link, a dead-link probe or a link with dead evidence
        running (``DeadLinkDetector.suspects``). A caller may poll faster then
        (``scenarios.gor_session`` does: samples fill and moves are confirmed sooner).

        >>> poller.period_s = 0.1 if loop.busy() else 0.25       # doctest: +SKIP
        """
        return bool(self.pending or self.follow_up or self.probes
                    or self.alarms.active(AlarmLevel.NOTICE) or self.dead_links.suspects())

    # ------------------------------------------------------------------ inputs
    def submit_digests(self, switch: str, digest: Any) -> None:
        """Queue one DigestList (``.data`` rows) or a list of rows from ``switch``
        (thread-safe: called by the digest reader threads)."""
        self.digests.put((switch, digest))

    # ------------------------------------------------------------------ the step
    def tick(self, t_s: float, samples: Mapping[Any, Any]) -> list[RoundDecision]:
        """One step at ``t_s`` (seconds) with one interval's ``LinkId → LinkSample``;
        returns the decision rounds it ran. Never raises for a switch, agent or digest
        fault (they are logged in :attr:`errors`)."""
        start = time.perf_counter()
        self.ticks += 1
        self._drain_link_events()
        self._drain_switch_events(t_s)
        self._telemetry(t_s, samples)
        self._drain_digests(t_s)
        if self.detect_dead_links:
            self._watch_links(t_s, samples)
        self._expire_adopted(t_s)
        self._check_pending(t_s)
        self._expire_overrides(t_s)
        rounds = self._decide(t_s)
        self.flows.age(t_s)
        for f in [f for f, until in self.moved.items() if until < t_s]:
            del self.moved[f]
            self.flow_ids.pop(f, None)
        if self.metrics is not None:
            self.metrics.observe_loop(time.perf_counter() - start)
        return rounds

    def _error(self, msg: str) -> None:
        log.warning("%s", msg)
        self.errors.append(msg)
        del self.errors[:-100]

    # ------------------------------------------------------------------ 1-2 telemetry, alarms
    def _telemetry(self, t_s: float, samples: Mapping[Any, Any]) -> None:
        if self.metrics is not None:
            self.metrics.observe_samples(samples)
        for lid, s in samples.items():
            key: LinkKey = (lid.switch, lid.port)
            self.link_ids[key] = lid
            if key in self.links.capacity_bps:
                win = self.util_window.setdefault(key, deque())
                win.append((t_s, max(0.0, float(s.util))))
                while len(win) > 1 and win[0][0] <= t_s - self.window_s:
                    win.popleft()
                self.links.set_util(key, sum(u for _, u in win) / len(win))
            self._watch_pause(key, t_s, s)
            ev = self.alarms.observe(key, t_s, s.marks, s.tx_pkts)
            if ev is None:
                continue
            name = self.link_name(key)
            if self.metrics is not None:
                self.metrics.set_alarm(name, int(ev.new))
            if ev.raised:
                ok = self._enable_sampling(key, t_s) if key not in self.sampling else True
                if self.decision_log is not None:
                    self.decision_log.record(
                        "alarm_raised", link=name, level=int(ev.new), mark_rate=ev.mark_rate,
                        util_pct=round(100 * s.util, 2),
                        sampling=self.sampling.get(key) if ok else None)
            else:
                if ev.new == AlarmLevel.CLEAR and not self._confirming(key):
                    self._disable_sampling(key)
                if self.decision_log is not None:
                    self.decision_log.alarm_cleared(name, int(ev.old), ev.mark_rate,
                                                    round(100 * s.util, 2))
        # retry sampling writes that failed on an earlier tick
        for key in self.alarms.active(AlarmLevel.NOTICE):
            if key not in self.sampling:
                self._enable_sampling(key, t_s)

    # ------------------------------------------------------------------ 3 digests
    def _drain_digests(self, t_s: float) -> None:
        while True:
            try:
                switch, digest = self.digests.get_nowait()
            except queue.Empty:
                return
            rows = getattr(digest, "data", digest)
            try:
                for row in rows:
                    got = self.flows.add(row, t_s)
                    if got is not None:
                        sw = self.flows.switch_names.get(got.switch_id)
                        self.forwarded[(sw or switch, got.egress_port)] += 1
            except Exception as exc:  # noqa: BLE001 — a malformed digest must not stop the loop
                self.digest_errors += 1
                self._error(f"{switch}: bad digest: {type(exc).__name__}: {exc}")


__all__ = ["DIGEST_NAME", "GorLoop", "MoveInFlight", "OVERRIDE_ACTION", "OVERRIDE_TABLE", "PendingMove",
           "SAMPLING_ACTION", "SAMPLING_KEY", "SAMPLING_TABLE", "digest_reader", "enable_digests",
           "override_match"]
