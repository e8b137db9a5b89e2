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
   ``decide_level`` (default WARNING) or above, worst first (then every link an earlier
   round worked on that still measures above the safety threshold), at most once per
   ``decide_every_s``, once the link's window holds at least ``min_samples`` samples
   (shares need no full window: they are unbiased from the first samples): the Top-N
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

**Link failures** (:mod:`controller.gor.faults`): :meth:`GorLoop.link_down` takes a
cable out of the ECMP groups at both ends and out of the engine's hash model, and makes
the links of both switches follow-up links; :meth:`GorLoop.link_up` puts it back.

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
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Mapping, Optional

from controller.fabric_setup import switch_id_of
from controller.gor.alarms import AlarmMonitor, AlarmThresholds
from controller.gor.decisions import AlarmLevel, FlowKey, LinkKey, PathChoice, RoundDecision
from controller.gor.elephants import FlowTable
from controller.gor.faults import LinkFaults
from controller.gor.log import DecisionLog
from controller.gor.metrics import GorMetrics
from controller.gor.moves import MoveInFlight, apply_in_flight
from controller.gor.orders import OVERRIDE_ACTION, OVERRIDE_TABLE, MoveOrders, override_match
from controller.gor.paths import ElephantFlow, LinkState, PathEngine, nic_leaves

SAMPLING_TABLE = "FabricIngress.sampling.config"
SAMPLING_ACTION = "FabricIngress.sampling.sample"
SAMPLING_KEY = "standard_metadata.egress_spec"
DIGEST_NAME = "flow_sample_t"

log = logging.getLogger("controller.gor.loop")

PendingMove = MoveInFlight
"""The former name of :class:`~controller.gor.moves.MoveInFlight`."""


def _is_already_exists(exc: BaseException) -> bool:
    codes = getattr(exc, "codes", None)
    try:
        return callable(codes) and "ALREADY_EXISTS" in codes()
    except Exception:  # noqa: BLE001
        return False


class GorLoop(MoveOrders, LinkFaults):
    """GOR's control loop over one fabric (see the module docstring for one tick).

    ``fabric`` is a ``topo.model.Fabric``; ``programmer`` gives ``connections`` (switch
    name → ``SwitchConnection``-like: ``table_entry``, ``insert``, ``modify``, ``delete``)
    and ``hash_model()``; ``registry`` is a ``FlowRegistry``-like object (``flows``,
    ``move``, ``order``, ``owner``) or None (every flow then gets override entries).
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
                 order_workers: int = 4) -> None:
        if top_n < 1 or one_in_n < 1 or order_workers < 1:
            raise ValueError("top_n, one_in_n and order_workers must be at least 1")
        self.fabric, self.programmer, self.registry = fabric, programmer, registry
        self.period_s, self.top_n, self.one_in_n = period_s, top_n, one_in_n
        self.decision_log, self.metrics = log, metrics
        self.decide_every_s, self.cooldown_s = decide_every_s, cooldown_s
        self.confirm_timeout_s, self.order_timeout_s = confirm_timeout_s, order_timeout_s
        self.max_retries, self.decide_level = max_retries, decide_level
        self.window_s, self.min_samples = window_s, min_samples
        self.settle_s = window_s + 2 * period_s if settle_s is None else settle_s
        self.safety = safety
        self.follow_up: set[LinkKey] = set()          # links of past rounds, still over safety
        self.alarms = AlarmMonitor(thresholds)
        self.links = LinkState.from_fabric(fabric)
        self.engine = PathEngine(fabric, programmer.hash_model(), self.links, safety=safety)
        self.programmed_groups = {n: dict(m.groups) for n, m in programmer.hash_model().switches.items()}
        self.link_events: "queue.Queue[tuple[str, int, bool, str]]" = queue.Queue()
        self.flows = FlowTable({switch_id_of(sw, fabric): sw.name for sw in fabric.switches},
                               one_in_n=one_in_n, window_s=window_s)
        self.leaf_of = nic_leaves(fabric)
        self.digests: "queue.Queue[tuple[str, Any]]" = queue.Queue()
        self.sampling: dict[LinkKey, int] = {}        # link → one_in_n programmed
        self.sampling_since: dict[LinkKey, float] = {}
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

    # ------------------------------------------------------------------ inputs
    def submit_digests(self, switch: str, digest: Any) -> None:
        """Queue one DigestList (``.data`` rows) or a list of rows from ``switch``
        (thread-safe: called by the digest reader threads)."""
        self.digests.put((switch, digest))

    def observe_health(self, health: Mapping[str, Any]) -> None:
        """Log switches going stale / answering again (``TelemetryPoller.health``)."""
        for sw, h in health.items():
            stale = bool(getattr(h, "stale", False))
            if stale == self._stale.get(sw, False):
                continue
            self._stale[sw] = stale
            if self.metrics is not None:
                self.metrics.set_switch_stale(sw, stale)
            if self.decision_log is not None:
                if stale:
                    self.decision_log.switch_stale(sw, getattr(h, "last_error", ""))
                else:
                    self.decision_log.switch_back(sw)

    # ------------------------------------------------------------------ the step
    def tick(self, t_s: float, samples: Mapping[Any, Any]) -> list[RoundDecision]:
        """One step at ``t_s`` (seconds) with one interval's ``LinkId → LinkSample``;
        returns the decision rounds it ran. Never raises for a switch, agent or digest
        fault (they are logged in :attr:`errors`)."""
        start = time.perf_counter()
        self.ticks += 1
        self._drain_link_events()
        self._telemetry(t_s, samples)
        self._drain_digests(t_s)
        self._check_pending(t_s)
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

    def _confirming(self, link: LinkKey) -> bool:
        """Sampling on ``link`` is still needed: a move must be seen there, or a follow-up
        round may run on it."""
        return link in self.follow_up or any(m.new_link == link for m in self.pending.values())

    def _conn(self, switch: str) -> Any:
        conn = self.programmer.connections.get(switch)
        if conn is None:
            raise KeyError(f"{switch}: no connection")
        return conn

    def _write(self, switch: str, table: str, match: Mapping[str, Any], action: str,
               params: Mapping[str, Any]) -> None:
        """INSERT the entry, MODIFY when it exists already."""
        conn = self._conn(switch)
        te = conn.table_entry(table, match, action, params)
        try:
            conn.insert(te)
        except Exception as exc:  # noqa: BLE001
            if not _is_already_exists(exc):
                raise
            conn.modify(te)

    def _enable_sampling(self, key: LinkKey, t_s: float = 0.0) -> bool:
        sw, port = key
        try:
            self._write(sw, SAMPLING_TABLE, {SAMPLING_KEY: port}, SAMPLING_ACTION,
                        {"one_in_n": self.one_in_n})
        except Exception as exc:  # noqa: BLE001 — a dead switch must not stop the loop
            self._error(f"{sw}: sampling on port {port} not enabled: {type(exc).__name__}: {exc}")
            return False
        self.sampling[key] = self.one_in_n
        self.sampling_since[key] = t_s
        self.flows.set_sampling(key, self.one_in_n)
        return True

    def _disable_sampling(self, key: LinkKey) -> None:
        if self.sampling.pop(key, None) is None:
            return
        self.sampling_since.pop(key, None)
        sw, port = key
        try:
            conn = self._conn(sw)
            conn.delete(conn.table_entry(SAMPLING_TABLE, {SAMPLING_KEY: port}))
        except Exception as exc:  # noqa: BLE001
            self._error(f"{sw}: sampling on port {port} not disabled: {type(exc).__name__}: {exc}")

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
                    self.flows.add(row, t_s)
            except Exception as exc:  # noqa: BLE001 — a malformed digest must not stop the loop
                self.digest_errors += 1
                self._error(f"{switch}: bad digest: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ 5 decisions
    def _agent_flows(self) -> dict[tuple[str, str, int, int], str]:
        """(src, dst, sport, dport) → registered flow id (the registry's view, plus the
        new 5-tuples of moves sent before their agent reported)."""
        out = {(f.src, f.dst, f.sport, f.dport): fid for f, fid in self.flow_ids.items()}
        if self.registry is None:
            return out
        try:
            out.update({(f.src_ip, f.dst_ip, f.sport, f.dst_port): f.flow_id
                        for f in self.registry.flows()})
        except Exception as exc:  # noqa: BLE001
            self._error(f"registry: {type(exc).__name__}: {exc}")
        return out

    def _elephants(self, link: LinkKey, t_s: float,
                   agents: Mapping[tuple[str, str, int, int], str]) -> list[ElephantFlow]:
        """The Top-N flows on ``link``, rates in the loop's basis (sampled share × the
        link's measured load)."""
        counts = self.flows.samples_on(link, t_s)
        total = sum(counts.values())
        if total < self.min_samples:
            return []
        load = self._offered_bps(link)
        out = []
        for flow, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:self.top_n]:
            src, dst = self.leaf_of.get(flow.src), self.leaf_of.get(flow.dst)
            if src is None or dst is None or src == dst or flow in self.moved:
                continue
            has_agent = (flow.src, flow.dst, flow.sport, flow.dport) in agents
            out.append(ElephantFlow(flow, load * n / total, src, dst,
                                    current=self.overrides.get(flow), has_agent=has_agent))
        return out

    def _in_use(self, agents: Mapping[tuple[str, str, int, int], str]) -> set[FlowKey]:
        """5-tuples of live flows (registered, sampled, or the target of a move)."""
        out = {FlowKey(s, d, 17, sp, dp) for s, d, sp, dp in agents}
        out.update(self.flows.flows)
        out.update(m.new_flow for m in self.pending.values())
        return out

    def _offered_bps(self, link: LinkKey) -> float:
        """A trigger link that marks queues: whatever the counters could drain, its
        offered load is at least its capacity, and its elephants split that. A follow-up
        link (no alarm any more) is taken at its measured load."""
        load = self.links.load_bps.get(link, 0.0)
        if self.alarms.level(link) >= self.decide_level:
            return max(load, self.links.capacity_bps[link])
        return load

    def _hot_links(self) -> list[LinkKey]:
        """Links at ``decide_level`` or above, then links an earlier round worked on that
        still measure above the safety threshold (their alarm may have cleared once the
        queue drained; the threshold is the goal)."""
        hot = self.alarms.active(self.decide_level)
        for link in sorted(self.follow_up):
            if self.links.util(link) <= self.safety + 1e-9:
                self.follow_up.discard(link)
                self._release_sampling(link)
            elif link not in hot:
                hot.append(link)
        return hot

    def _decide(self, t_s: float) -> list[RoundDecision]:
        rounds: list[RoundDecision] = []
        if self.pending:
            return rounds                            # one round at a time
        hot = self._hot_links()
        if not hot:
            return rounds
        agents = self._agent_flows()
        for link in hot:
            if t_s - self.last_decision.get(link, -float("inf")) < self.decide_every_s:
                continue
            if link not in self.sampling:
                continue                              # no samples to rank elephants yet
            elephants = self._elephants(link, t_s, agents)
            if not elephants:
                continue
            self.last_decision[link] = t_s
            self.follow_up.add(link)
            rid = next(self._rounds)
            name = self.link_name(link)
            if self.decision_log is not None:
                self.decision_log.flows_chosen(
                    name, [{"flow": str(e.flow), "util_pct": round(100 * e.rate_bps
                                                                  / self.links.capacity_bps[link], 2),
                            "agent": e.has_agent} for e in elephants], rid)
            planned = apply_in_flight(self.links, self.pending.values())
            planned.load_bps[link] = self._offered_bps(link)
            try:
                dec = self.engine.decide(elephants, t_s, trigger=link, links=planned,
                                         in_use=self._in_use(agents))
            except Exception as exc:  # noqa: BLE001 — a model gap must not stop the loop
                self._error(f"decision on {name} failed: {type(exc).__name__}: {exc}")
                continue
            self.decisions.append(dec)
            del self.decisions[:-100]
            rounds.append(dec)
            if self.decision_log is not None:
                self.decision_log.record("round", round=rid, link=name, **{
                    k: v for k, v in dec.to_dict().items() if k in ("rejected", "baseline_max_util",
                                                                    "predicted_max_util", "elapsed_s")})
            for order in dec.orders:
                self._act(order, rid, t_s, agents, planned)
            if self.pending:
                break                                 # one round at a time
        return rounds

# ---------------------------------------------------------------------- digest readers
def digest_reader(loop: GorLoop, switch: str, conn: Any, stop: Any, poll_s: float = 0.2) -> None:
    """Body of one digest reader thread: ``conn.get_digest`` until ``stop`` (an Event) is
    set, handing ``flow_sample_t`` lists to ``loop``; errors are logged and the thread
    backs off one second, it never dies on a bad switch."""
    while not stop.is_set():
        try:
            dl = conn.get_digest(timeout_s=poll_s)
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: digest read failed: %s", switch, exc)
            stop.wait(1.0)
            continue
        if dl is not None and getattr(dl, "name", DIGEST_NAME) == DIGEST_NAME:
            loop.submit_digests(switch, dl)


def enable_digests(connections: Mapping[str, Any], switches: Iterable[str],
                   max_list_size: int = 64, max_timeout_ns: int = 10_000_000) -> list[str]:
    """Enable ``flow_sample_t`` on every switch that answers; returns those that failed."""
    failed = []
    for sw in switches:
        try:
            connections[sw].enable_digest(DIGEST_NAME, max_timeout_ns=max_timeout_ns,
                                          max_list_size=max_list_size)
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: digest %s not enabled: %s", sw, DIGEST_NAME, exc)
            failed.append(sw)
    return failed


__all__ = ["DIGEST_NAME", "GorLoop", "MoveInFlight", "OVERRIDE_ACTION", "OVERRIDE_TABLE", "PendingMove",
           "SAMPLING_ACTION", "SAMPLING_TABLE", "digest_reader", "enable_digests", "override_match"]
