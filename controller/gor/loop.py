"""GOR's main loop: telemetry → alarms → sampling → elephants → path decision → orders → confirmation.

:class:`GorLoop` wires the decision core (:mod:`~controller.gor.alarms`,
:mod:`~controller.gor.elephants`, :mod:`~controller.gor.paths`) to the switches (a
``FabricProgrammer``'s connections), the agents (a ``FlowRegistry``), the decision log and
the metrics. One call of :meth:`GorLoop.tick` is one step; the telemetry poller calls it
with each interval's samples (``TelemetryPoller(on_tick=loop.tick)``), digest reader
threads hand digests in with :meth:`GorLoop.submit_digests`.

One tick, in order:

1. **Telemetry**: every ``LinkSample`` sets the link's load in :class:`LinkState`
   (``util × capacity``) and feeds the :class:`AlarmMonitor` (marks, packets).
2. **Alarms**: a link rising to NOTICE or above gets sampling on its egress port:
   ``FabricIngress.sampling.config`` entry ``egress_spec = port →
   sampling.sample(one_in_n)`` on that switch (logged in the ``alarm_raised`` record as
   ``sampling``); a link back to CLEAR has its entry deleted. A failed write is retried on
   the next tick.
3. **Digests** queued since the last tick go into the :class:`FlowTable` (a malformed one
   is counted in ``FlowTable.malformed`` and skipped).
4. **Pending orders** are checked (see *Confirmation* below).
5. **Decisions**: for every link at WARNING or above (worst first), at most once per
   ``decide_every_s``: the Top-N elephants sampled on it (minus flows with an open order or
   moved within ``cooldown_s``) become :class:`ElephantFlow` s (``has_agent`` when the
   registry knows the 5-tuple) and :meth:`PathEngine.decide` plans the round.
6. **Orders**: a :class:`MoveOrder` goes to the owning host's agent
   (``FlowRegistry.move``); an :class:`OverrideOrder` is written as
   ``FabricIngress.override.flows`` entries (5-tuple → ``override.set_nexthop``) on each
   switch of the order.

**Confirmation, retry, rollback** (what is implemented):

* *Move*: the agent's ``ReportMove`` closes the order in the registry. ``done`` →
  ``order_confirmed`` (with the measured util of the new path's links); ``failed`` (the
  agent refused or reported an error) → sent again once per ``max_retries``
  (``order_retried``), then ``order_rolled_back``; no report within
  ``confirm_timeout_s`` → ``order_rolled_back`` (the agent is assumed not to have moved;
  there is nothing to undo in the network). An order the agent refuses at once, or whose
  agent call fails, is rolled back at once.
* *Override*: a successful P4Runtime Write is the confirmation (``order_confirmed`` at
  once). When a later entry of a multi-switch order fails, the entries already written
  are deleted (``order_rolled_back``).
* **Not implemented**: confirmation from counters (checking that the new path's tx
  counters grew by the flow's rate) and rolling back a confirmed move that made a new
  hotspot; removing override entries when the flow ends (they stay until the fabric is
  re-programmed).

A switch that does not answer a write or a digest read is logged and skipped; the loop
goes on. Blocking: ``FlowRegistry.move`` is a gRPC call of at most ``order_timeout_s``
made inside the tick.

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
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence

from controller.fabric_setup import switch_id_of
from controller.gor.alarms import AlarmMonitor, AlarmThresholds
from controller.gor.decisions import (AlarmLevel, FlowKey, LinkKey, MoveOrder, OverrideOrder,
                                      PathChoice, RoundDecision)
from controller.gor.elephants import FlowTable
from controller.gor.log import DecisionLog
from controller.gor.metrics import GorMetrics
from controller.gor.paths import ElephantFlow, LinkState, PathEngine, nic_leaves

SAMPLING_TABLE = "FabricIngress.sampling.config"
SAMPLING_ACTION = "FabricIngress.sampling.sample"
SAMPLING_KEY = "standard_metadata.egress_spec"
OVERRIDE_TABLE = "FabricIngress.override.flows"
OVERRIDE_ACTION = "FabricIngress.override.set_nexthop"
DIGEST_NAME = "flow_sample_t"

log = logging.getLogger("controller.gor.loop")


@dataclass(slots=True)
class PendingMove:
    """A move order waiting for its agent's report."""

    order_id: str
    flow_id: str
    order: MoveOrder
    round_id: int
    deadline_s: float
    retries_left: int


def override_match(flow: FlowKey) -> dict[str, Any]:
    """The ``FabricIngress.override.flows`` key of a 5-tuple.

    >>> override_match(FlowKey("10.0.0.1", "10.1.0.1", 17, 49152, 4791))["hdr.udp.src_port"]
    49152
    """
    return {"hdr.ipv4.src_addr": flow.src, "hdr.ipv4.dst_addr": flow.dst,
            "hdr.ipv4.protocol": flow.proto, "hdr.udp.src_port": flow.sport,
            "hdr.udp.dst_port": flow.dport}


def _path_nodes(path: Optional[PathChoice], links: LinkState) -> list[str]:
    """``["b0r0l0", "s1", "b1r0l0"]`` for a leaf → spine → leaf path."""
    if path is None:
        return []
    nodes = [path.links[0][0], path.spine]
    peer = links.peer.get(path.links[-1])
    if peer is not None:
        nodes.append(peer[0])
    return nodes


def _is_already_exists(exc: BaseException) -> bool:
    codes = getattr(exc, "codes", None)
    try:
        return callable(codes) and "ALREADY_EXISTS" in codes()
    except Exception:  # noqa: BLE001
        return False


class GorLoop:
    """GOR's control loop over one fabric (see the module docstring for one tick).

    ``fabric`` is a ``topo.model.Fabric``; ``programmer`` gives ``connections`` (switch
    name → ``SwitchConnection``-like: ``table_entry``, ``insert``, ``modify``, ``delete``)
    and ``hash_model()``; ``registry`` is a ``FlowRegistry``-like object (``flows``,
    ``move``, ``order``) or None (every flow then gets override entries).
    """

    def __init__(self, fabric: Any, programmer: Any, registry: Any, *, period_s: float = 0.05,
                 safety: float = 0.75, top_n: int = 4, log: Optional[DecisionLog] = None,
                 metrics: Optional[GorMetrics] = None, one_in_n: int = 100,
                 thresholds: Optional[AlarmThresholds] = None, window_s: float = 1.0,
                 decide_every_s: float = 1.0, cooldown_s: float = 5.0,
                 confirm_timeout_s: float = 3.0, order_timeout_s: float = 2.0,
                 max_retries: int = 1) -> None:
        if top_n < 1 or one_in_n < 1:
            raise ValueError("top_n and one_in_n must be at least 1")
        self.fabric, self.programmer, self.registry = fabric, programmer, registry
        self.period_s, self.top_n, self.one_in_n = period_s, top_n, one_in_n
        self.decision_log, self.metrics = log, metrics
        self.decide_every_s, self.cooldown_s = decide_every_s, cooldown_s
        self.confirm_timeout_s, self.order_timeout_s = confirm_timeout_s, order_timeout_s
        self.max_retries = max_retries
        self.alarms = AlarmMonitor(thresholds)
        self.links = LinkState.from_fabric(fabric)
        self.engine = PathEngine(fabric, programmer.hash_model(), self.links, safety=safety)
        self.flows = FlowTable({switch_id_of(sw, fabric): sw.name for sw in fabric.switches},
                               one_in_n=one_in_n, window_s=window_s)
        self.leaf_of = nic_leaves(fabric)
        self.digests: "queue.Queue[tuple[str, Any]]" = queue.Queue()
        self.sampling: dict[LinkKey, int] = {}        # link → one_in_n programmed
        self.pending: dict[str, PendingMove] = {}     # order id → move waiting for its report
        self.overrides: dict[FlowKey, PathChoice] = {}
        self.moved: dict[FlowKey, float] = {}         # flow → until when it is left alone
        self.last_decision: dict[LinkKey, float] = {}
        self.link_ids: dict[LinkKey, Any] = {}
        self.decisions: list[RoundDecision] = []
        self.errors: list[str] = []
        self.ticks = 0
        self.digest_errors = 0
        self._rounds = itertools.count(1)
        self._override_ids = itertools.count(1)
        self._stale: dict[str, bool] = {}

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
        self._telemetry(t_s, samples)
        self._drain_digests(t_s)
        self._check_pending(t_s)
        rounds = self._decide(t_s)
        self.flows.age(t_s)
        for f in [f for f, until in self.moved.items() if until < t_s]:
            del self.moved[f]
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
                self.links.set_util(key, max(0.0, float(s.util)))
            ev = self.alarms.observe(key, t_s, s.marks, s.tx_pkts)
            if ev is None:
                continue
            if self.metrics is not None:
                self.metrics.set_alarm(str(lid), int(ev.new))
            if ev.raised:
                ok = self._enable_sampling(key) if key not in self.sampling else True
                if self.decision_log is not None:
                    self.decision_log.record(
                        "alarm_raised", link=str(lid), level=int(ev.new), mark_rate=ev.mark_rate,
                        util_pct=round(100 * s.util, 2),
                        sampling=self.sampling.get(key) if ok else None)
            else:
                if ev.new == AlarmLevel.CLEAR:
                    self._disable_sampling(key)
                if self.decision_log is not None:
                    self.decision_log.alarm_cleared(str(lid), int(ev.old), ev.mark_rate,
                                                    round(100 * s.util, 2))
        # retry sampling writes that failed on an earlier tick
        for key in self.alarms.active(AlarmLevel.NOTICE):
            if key not in self.sampling:
                self._enable_sampling(key)

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

    def _enable_sampling(self, key: LinkKey) -> bool:
        sw, port = key
        try:
            self._write(sw, SAMPLING_TABLE, {SAMPLING_KEY: port}, SAMPLING_ACTION,
                        {"one_in_n": self.one_in_n})
        except Exception as exc:  # noqa: BLE001 — a dead switch must not stop the loop
            self._error(f"{sw}: sampling on port {port} not enabled: {type(exc).__name__}: {exc}")
            return False
        self.sampling[key] = self.one_in_n
        self.flows.set_sampling(key, self.one_in_n)
        return True

    def _disable_sampling(self, key: LinkKey) -> None:
        if self.sampling.pop(key, None) is None:
            return
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

    # ------------------------------------------------------------------ 4 confirmation
    def _check_pending(self, t_s: float) -> None:
        for oid, pm in list(self.pending.items()):
            try:
                st = self.registry.order(oid)
            except Exception as exc:  # noqa: BLE001
                self._close_move(pm, "rolled_back", f"order lost: {exc}")
                continue
            if st.state == "done":
                del self.pending[oid]
                measured = {f"{s}:{p}": round(100 * self.links.util((s, p)), 2)
                            for s, p in pm.order.path.links}
                if self.decision_log is not None:
                    self.decision_log.order_confirmed(oid, pm.order.flow, measured, pm.round_id)
                if self.metrics is not None:
                    self.metrics.count_move("confirmed")
                self.moved[pm.order.flow.with_sport(pm.order.new_sport)] = t_s + self.cooldown_s
            elif st.state == "failed":
                if pm.retries_left > 0:
                    del self.pending[oid]
                    if self.decision_log is not None:
                        self.decision_log.order_retried(oid, pm.order.flow, st.error or "failed",
                                                        pm.round_id)
                    if self.metrics is not None:
                        self.metrics.count_move("retried")
                    self._send_move(pm.order, pm.flow_id, pm.round_id, t_s, pm.retries_left - 1)
                else:
                    self._close_move(pm, "rolled_back", st.error or "failed")
            elif t_s >= pm.deadline_s:
                self._close_move(pm, "rolled_back",
                                 f"no report within {self.confirm_timeout_s:g} s")

    def _close_move(self, pm: PendingMove, outcome: str, reason: str) -> None:
        self.pending.pop(pm.order_id, None)
        if self.decision_log is not None:
            self.decision_log.order_rolled_back(pm.order_id, pm.order.flow, reason, pm.round_id)
        if self.metrics is not None:
            self.metrics.count_move(outcome)

    # ------------------------------------------------------------------ 5 decisions
    def _agent_flows(self) -> dict[tuple[str, str, int, int], str]:
        """(src, dst, sport, dport) → registered flow id."""
        if self.registry is None:
            return {}
        try:
            return {(f.src_ip, f.dst_ip, f.sport, f.dst_port): f.flow_id for f in self.registry.flows()}
        except Exception as exc:  # noqa: BLE001
            self._error(f"registry: {type(exc).__name__}: {exc}")
            return {}

    def _busy(self, flow: FlowKey) -> bool:
        return flow in self.moved or any(pm.order.flow == flow for pm in self.pending.values())

    def _decide(self, t_s: float) -> list[RoundDecision]:
        rounds: list[RoundDecision] = []
        hot = self.alarms.active(AlarmLevel.WARNING)
        if not hot:
            return rounds
        agents = self._agent_flows()
        for link in hot:
            if t_s - self.last_decision.get(link, -float("inf")) < self.decide_every_s:
                continue
            elephants = []
            for e in self.flows.top(self.top_n, link, t_s):
                f = e.flow
                src, dst = self.leaf_of.get(f.src), self.leaf_of.get(f.dst)
                if src is None or dst is None or src == dst or self._busy(f):
                    continue
                has_agent = (f.src, f.dst, f.sport, f.dport) in agents
                elephants.append(ElephantFlow(f, e.rate_bps, src, dst, current=self.overrides.get(f),
                                              has_agent=has_agent))
            if not elephants:
                continue
            self.last_decision[link] = t_s
            rid = next(self._rounds)
            lid = str(self.link_ids.get(link, f"{link[0]}:{link[1]}"))
            if self.decision_log is not None:
                self.decision_log.flows_chosen(
                    lid, [{"flow": str(e.flow), "rate_bps": round(e.rate_bps), "agent": e.has_agent}
                          for e in elephants], rid)
            try:
                dec = self.engine.decide(elephants, t_s, trigger=link)
            except Exception as exc:  # noqa: BLE001 — a model gap must not stop the loop
                self._error(f"decision on {lid} failed: {type(exc).__name__}: {exc}")
                continue
            self.decisions.append(dec)
            del self.decisions[:-100]
            rounds.append(dec)
            for order in dec.orders:
                self._act(order, rid, t_s, agents)
        return rounds

    # ------------------------------------------------------------------ 6 orders
    def _act(self, order: Any, rid: int, t_s: float,
             agents: Mapping[tuple[str, str, int, int], str]) -> None:
        f = order.flow
        if self.decision_log is not None:
            self.decision_log.path_chosen(
                f, _path_nodes(order.old_path, self.links), _path_nodes(order.path, self.links),
                {f"{s}:{p}": round(100 * u, 2) for (s, p), u in order.predicted_util.items()},
                {f"{s}:{p}": round(100 * self.links.util((s, p)), 2) for s, p in order.path.links},
                rid)
        if isinstance(order, MoveOrder):
            fid = agents.get((f.src, f.dst, f.sport, f.dport))
            if fid is None:
                self._error(f"{f}: no registered flow for a move order")
                return
            self._send_move(order, fid, rid, t_s, self.max_retries)
        elif isinstance(order, OverrideOrder):
            self._send_override(order, rid, t_s)

    def _send_move(self, order: MoveOrder, fid: str, rid: int, t_s: float, retries: int) -> None:
        f = order.flow
        host: Optional[str] = None
        try:
            host = self.registry.owner(fid)
        except Exception:  # noqa: BLE001
            pass
        try:
            state, reply = self.registry.move(fid, order.new_sport, timeout_s=self.order_timeout_s)
        except Exception as exc:  # noqa: BLE001 — an agent that does not answer
            oid = f"move-{fid}-unsent"
            if self.decision_log is not None:
                self.decision_log.order_rolled_back(oid, f, f"agent call failed: {type(exc).__name__}", rid)
            if self.metrics is not None:
                self.metrics.count_move("rolled_back")
            self._error(f"{f}: move order not delivered: {type(exc).__name__}: {exc}")
            return
        if self.decision_log is not None:
            self.decision_log.order_sent(state.order_id, f, host=host or getattr(state, "host", None),
                                         sport=order.new_sport,
                                         new_path=_path_nodes(order.path, self.links), round_id=rid)
        if self.metrics is not None:
            self.metrics.count_move("sent")
        self.moved[f] = t_s + self.cooldown_s
        pm = PendingMove(state.order_id, fid, order, rid, t_s + self.confirm_timeout_s, retries)
        if not getattr(reply, "accepted", True):
            self._close_move(pm, "rolled_back", f"refused: {getattr(reply, 'reason', '')}")
            return
        self.pending[state.order_id] = pm
        self._check_one(pm, t_s)

    def _check_one(self, pm: PendingMove, t_s: float) -> None:
        """An agent may report before ``move`` returns: look once at once."""
        try:
            st = self.registry.order(pm.order_id)
        except Exception:  # noqa: BLE001
            return
        if st.state != "sent":
            self._check_pending(t_s)

    def _send_override(self, order: OverrideOrder, rid: int, t_s: float) -> None:
        oid = f"override-{next(self._override_ids)}"
        f = order.flow
        if self.decision_log is not None:
            self.decision_log.order_sent(oid, f, override=True,
                                         new_path=_path_nodes(order.path, self.links), round_id=rid)
        if self.metrics is not None:
            self.metrics.count_move("sent")
        written: list[str] = []
        for e in order.entries:
            try:
                self._write(e.switch, OVERRIDE_TABLE, override_match(f), OVERRIDE_ACTION,
                            {"nexthop_id": e.nexthop_id})
            except Exception as exc:  # noqa: BLE001 — undo what was written, go on
                self._error(f"{e.switch}: override of {f} failed: {type(exc).__name__}: {exc}")
                for sw in written:
                    try:
                        conn = self._conn(sw)
                        conn.delete(conn.table_entry(OVERRIDE_TABLE, override_match(f)))
                    except Exception as exc2:  # noqa: BLE001
                        self._error(f"{sw}: override rollback of {f} failed: {exc2}")
                if self.decision_log is not None:
                    self.decision_log.order_rolled_back(oid, f, f"{e.switch}: {type(exc).__name__}", rid)
                if self.metrics is not None:
                    self.metrics.count_move("rolled_back")
                return
            written.append(e.switch)
        self.overrides[f] = order.path
        self.moved[f] = t_s + self.cooldown_s
        if self.decision_log is not None:
            self.decision_log.order_confirmed(oid, f, None, rid)
        if self.metrics is not None:
            self.metrics.count_move("confirmed")


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



# ---------------------------------------------------------------------- python -m controller run
def _secret(path: Optional[Any]) -> bytes:
    import os
    if path is not None:
        return path.read_bytes().strip()
    env = os.environ.get("ASTRAL_FABRIC_SECRET", "")
    if env:
        return env.encode()
    log.warning("no fabric secret (--secret-file or $ASTRAL_FABRIC_SECRET): a random one is "
                "used, no agent will authenticate")
    return os.urandom(32).hex().encode()


def run_gor(args: Any) -> int:
    """``python -m controller run``: program (or attach to) the fabric, start the registry,
    the metrics server, the telemetry poller driving :meth:`GorLoop.tick`, one digest
    reader per switch; run until SIGINT/SIGTERM. Exit status 0, 1 when a switch cannot be
    reached at start, 2 on bad arguments."""
    import signal
    import sys
    import threading

    from controller.fabric_setup import FabricProgrammer
    from controller.gor.metrics import MetricsServer
    from controller.gor.telemetry import TelemetryPoller, fabric_links, p4rt_reader
    from controller.p4rt import P4RuntimeClientError
    from controller.registry import FlowRegistry, serve_registry
    from topo.model import load_fabric

    for path in (args.fabric, args.p4info, args.config):
        if not path.is_file():
            print(f"controller run: {path}: no such file", file=sys.stderr)
            return 2
    try:
        fabric = load_fabric(args.fabric)
    except ValueError as exc:
        print(f"controller run: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    prog = FabricProgrammer(fabric, args.p4info, args.config, timeout_s=args.timeout)
    server = srv = poller = None
    threads: list[threading.Thread] = []
    dlog = DecisionLog(args.log)
    try:
        try:
            if args.attach:
                prog.connect_all()
                for conn in prog.connections.values():
                    conn.fetch_pipeline()
            else:
                prog.setup(push=not args.no_push)
        except (P4RuntimeClientError, OSError) as exc:
            print(f"controller run: {exc}", file=sys.stderr)
            return 1
        failed = enable_digests(prog.connections, prog.connections)
        if failed:
            print(f"controller run: digest not enabled on {', '.join(failed)}", file=sys.stderr)
        registry = FlowRegistry.from_fabric(fabric, _secret(args.secret_file))
        server, address = serve_registry(registry, args.registry_bind)
        metrics = GorMetrics()
        if args.metrics_port is not None:
            srv = MetricsServer(metrics, port=args.metrics_port)
            srv.start()
            print(f"controller run: metrics on {srv.url}")
        loop = GorLoop(fabric, prog, registry, period_s=args.period, safety=args.safety,
                       top_n=args.top_n, log=dlog, metrics=metrics, one_in_n=args.one_in_n)
        for name, conn in prog.connections.items():
            t = threading.Thread(target=digest_reader, args=(loop, name, conn, stop),
                                 name=f"digests-{name}", daemon=True)
            t.start()
            threads.append(t)
        readers = {name: p4rt_reader(conn) for name, conn in prog.connections.items()}

        def on_tick(t_s: float, samples: Mapping[Any, Any]) -> None:
            loop.observe_health(poller.health if poller is not None else {})
            loop.tick(t_s, samples)

        poller = TelemetryPoller(readers, fabric_links(fabric), period_s=args.period, on_tick=on_tick)
        poller.start()
        print(f"controller run: {len(prog.connections)} switches, registry on {address}, "
              f"decision log {args.log}; Ctrl-C stops", flush=True)
        stop.wait()
        return 0
    finally:
        stop.set()
        if poller is not None:
            poller.stop()
        for t in threads:
            t.join(timeout=2)
        if server is not None:
            server.stop(0)
        if srv is not None:
            srv.stop()
        prog.close()
        dlog.close()


__all__ = ["DIGEST_NAME", "GorLoop", "OVERRIDE_ACTION", "OVERRIDE_TABLE", "PendingMove",
           "SAMPLING_ACTION", "SAMPLING_TABLE", "digest_reader", "enable_digests", "override_match",
           "run_gor"]
