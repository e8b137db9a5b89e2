"""Decision rounds of GOR's loop (step 5 of a tick): which links get a round, which flows
on them are elephants, and the round itself through :meth:`PathEngine.decide`.

:class:`DecisionRounds` holds the rounds' own state — the follow-up links (links a round
worked on, re-checked while above the safety threshold), when each link last had a round,
the last decisions — and is built from the loop's :class:`~controller.gor.shared.LoopState`
(the path engine, the ``LinkState``, the alarms, the flow table, the load windows, the
switches' reports, the ``MoveBook``, the registry, the NIC → leaf map, the outputs), the
:class:`~controller.gor.sampling.Sampling`, the settings and ``act``: the callback that
carries out an order (:meth:`controller.gor.orders.MoveOrders.act`).

The rules are in the loop's module docstring: one round at a time, ``decide_every_s`` per
link, ``min_samples`` (or ``samples_per_flow``) before ranking, early rounds on a proven
overload, cooldown, follow-up links, loads with every move in flight applied; no round
on the links of a switch lost or just back, or for an alarm that began there meanwhile,
and no new path through such a switch. Rates are in
the loop's basis: an elephant's sampled share of its link times the link's measured load
(at least its capacity on a link that marks).

Public methods: :meth:`DecisionRounds.decide` (each tick), :meth:`DecisionRounds.follow`
(links to re-check, e.g. after a link fault), :meth:`DecisionRounds.samples_needed`,
:meth:`DecisionRounds.recent_util`, :meth:`DecisionRounds.reported_bps`,
:meth:`DecisionRounds.overloaded`; :attr:`DecisionRounds.waiting` /
``waiting_samples``: the alarmed links whose round waits for their switch's elephant
reports / for samples (the loop acts on the next one at once: ``GorLoop.wants_now``).

Example (the loop's own use)::

    >>> rounds = loop.rounds.decide(t_s=1.05)                # doctest: +SKIP
    >>> [r.trigger for r in rounds]                         # doctest: +SKIP
    [('b0r0l0', 3)]
"""
from __future__ import annotations

import itertools
from typing import Callable, Iterable, Mapping, Optional

from controller.gor.decisions import AlarmLevel, FlowKey, LinkKey, Order, RoundDecision
from controller.gor.candidates import nic_port_leaves
from controller.gor.moves import apply_in_flight
from controller.gor.paths import ElephantFlow, LinkState
from controller.gor.sampling import Sampling
from controller.gor.shared import LoopSettings, LoopState

AgentFlows = Mapping[tuple[str, str, int, int], str]
"""(src, dst, sport, dport) → registered flow id."""

ActOn = Callable[[Order, int, float, AgentFlows, LinkState], None]
"""Carry out one order: ``act(order, round_id, t_s, agents, planned_links)``."""


class DecisionRounds:
    """Hot links, elephants and decision rounds (see the module docstring).

    Settings: ``top_n`` elephants per round, ``safety`` (the threshold every link of a new
    path must stay under), ``decide_level``, ``decide_every_s``, ``min_samples``,
    ``samples_per_flow``, ``early_decide``, ``proof_s``, ``cooldown_s`` (a flow a
    predecessor's order moved rests for the remainder); ``switch_unsettled(switch, t_s, alarm_since)``:
    a switch lost or just back, or whose link's alarm (begun at ``alarm_since``) is its
    symptom: the link gets no round
    (:meth:`SwitchRestarts.unsettled <controller.gor.restarts.SwitchRestarts.unsettled>`).
    """

    def __init__(self, state: LoopState, sampling: Sampling, settings: LoopSettings, act: ActOn,
                 switch_unsettled: Callable[[str, float, Optional[float]], bool] = (
                     lambda sw, t_s, alarm_since: False)) -> None:
        self.engine, self.links, self.alarms, self.flows = state.engine, state.links, state.alarms, state.flows
        self.dataplane, self.windows, self.book, self.sampling = state.dataplane, state.windows, state.book, sampling
        self.registry, self.leaf_of, self._out, self._act = state.registry, state.leaf_of, state.out, act
        fabric = getattr(state.engine, "fabric", None)
        self.port_leaves = nic_port_leaves(fabric) if fabric is not None else {}  # a leaf per NIC port
        # (src, dst, sport, dport) → the NIC port its agent says the flow sends on
        self.nic_port_of: dict[tuple[str, str, int, int], int] = {}
        self.settings, self.switch_unsettled = settings, switch_unsettled
        self.left_alone: frozenset[FlowKey] = frozenset()   # never moved: see GorLoop.leave_alone
        # registered flows whose agent stopped registering them (their sender is gone):
        # counted in the loads, never ordered to move (set by each _agent_flows)
        self.gone: frozenset[tuple[str, str, int, int]] = frozenset()
        self.follow_up: set[LinkKey] = set()          # links of past rounds, still over safety
        self.last_decision: dict[LinkKey, float] = {}
        self.decisions: list[RoundDecision] = []      # the newest 100
        # alarmed links whose round waits for their switch's elephant reports, and the
        # hot links among them that wait for samples too (set by each decide; read by
        # the digest reader threads through GorLoop.wants_now: a report or a sample then
        # makes the loop act at once, not at the next poll)
        self.waiting: frozenset[LinkKey] = frozenset()
        self.waiting_samples: frozenset[LinkKey] = frozenset()
        # a predecessor's move (after a restart) still settles until then: no round, as
        # while a move of this GOR's own is in flight (set by each _agent_flows)
        self.settling_until_s = -float("inf")
        self._rounds = itertools.count(1)

    def follow(self, links: Iterable[LinkKey]) -> None:
        """Make ``links`` follow-up links: each gets a round while it measures above the
        safety threshold, alarm or not, until a round without an alarm finds no move."""
        self.follow_up.update(links)

    def _agent_flows(self, t_s: float) -> dict[tuple[str, str, int, int], str]:
        """(src, dst, sport, dport) → registered flow id (the registry's view, plus the
        new 5-tuples of moves sent before their agent reported). A registered flow whose
        agent says a move order moved it less than ``cooldown_s`` ago — a move of this GOR's
        predecessor, after a restart — rests for the remainder (:meth:`_remember_move`), and
        one moved less than ``move_settle_s`` ago holds every round until it has settled
        (:attr:`settling_until_s`: the loads still lag the move, as for a move of this
        GOR's own in flight). A
        flow whose agent has not registered it for ``agent_silent_s`` (its sender is gone)
        is left out and put in :attr:`gone`: no order, not even an override, goes to it."""
        out = {(f.src, f.dst, f.sport, f.dport): fid for f, fid in self.book.flow_ids.items()}
        if self.registry is None:
            return out
        try:
            registered = self.registry.flows()
            silent = self.registry.silent_flows(self.settings.agent_silent_s)
        except Exception as exc:  # noqa: BLE001
            self._out.error(f"registry: {type(exc).__name__}: {exc}")
            return out
        ports: dict[tuple[str, str, int, int], int] = {}
        gone: set[tuple[str, str, int, int]] = set()
        for f in registered:
            if f.flow_id in silent:
                gone.add((f.src_ip, f.dst_ip, f.sport, f.dst_port))
                continue
            out[(f.src_ip, f.dst_ip, f.sport, f.dst_port)] = f.flow_id
            if f.nic_port is not None:
                ports[(f.src_ip, f.dst_ip, f.sport, f.dst_port)] = f.nic_port
            if f.moved_s_ago is not None and f.moved_s_ago < self.settings.cooldown_s:
                self._remember_move(FlowKey(f.src_ip, f.dst_ip, 17, f.sport, f.dst_port),
                                    f.flow_id, t_s + self.settings.cooldown_s - f.moved_s_ago)
            if f.moved_s_ago is not None and f.moved_s_ago < self.settings.move_settle_s:
                self.settling_until_s = max(self.settling_until_s,
                                            t_s + self.settings.move_settle_s - f.moved_s_ago)
        self.nic_port_of = ports
        self.gone = frozenset(gone - set(out))      # a move's new 5-tuple in flight stays
        return out

    def _remember_move(self, flow: FlowKey, fid: str, until_s: float) -> None:
        """Leave ``flow`` alone until ``until_s`` when this GOR did not know it moved
        (logged once as ``move_remembered``)."""
        if flow in self.book.moved:
            return
        self.book.rest(flow, until_s)
        if self._out.decision_log is not None:
            self._out.decision_log.record("move_remembered", flow=str(flow), flow_id=fid,
                                          rest_until_s=round(until_s, 3))

    def _unsettled(self, link: LinkKey, t_s: float) -> bool:
        """Either end of ``link`` is a switch lost or just back, or the link's alarm is a
        symptom of one (``switch_unsettled``)."""
        since = self.alarms.alarm_since(link)
        peer = self.links.peer.get(link)
        return self.switch_unsettled(link[0], t_s, since) or (
            peer is not None and self.switch_unsettled(peer[0], t_s, since))

    def _away_links(self, t_s: float) -> set[LinkKey]:
        """The links of every switch lost or just back (``switch_unsettled``): no new
        path may cross them (:meth:`PathEngine.decide` skips paths with a link down)."""
        away = {sw for sw in {l[0] for l in self.links.peer} if self.switch_unsettled(sw, t_s, None)}
        if not away:
            return set()
        return {l for l, peer in self.links.peer.items()
                if l[0] in away or (peer is not None and peer[0] in away)}

    def _elephants(self, link: LinkKey, t_s: float,
                   agents: AgentFlows) -> list[ElephantFlow]:
        """The Top-N flows on ``link``, rates in the loop's basis. When the switch reported
        elephants on the link (known at once, :mod:`controller.gor.dataplane`) and a poll
        gave the link's capacity in packets/s: each one's packets/s over that capacity
        (``LinkState.bps_of_pps``); else its share of the packets sampled there times the
        link's load. A flow whose sender is gone (:attr:`gone`) or, ranked from the
        samples, not sampled on the link for ``flow_ended_s`` (it ended) counts in the load
        and is not moved."""
        reported = self.dataplane.elephants_on(link, t_s)
        rates = {f: self.links.bps_of_pps(link, pps) for f, pps in reported.items()}
        known = [r for r in rates.values() if r is not None]
        if reported and (len(known) < len(rates)
                         or sum(known) < self.settings.safety * self.links.capacity_bps[link]):
            # no poll has yet given the link's capacity in packets/s (shares of a link
            # offered more than its capacity would understate every flow), or what the
            # switch reported so far does not explain the alarm (the other elephants have
            # not reached their threshold yet): rank from the samples
            reported, rates = {}, {}
        if reported:
            counts: Mapping[FlowKey, float] = reported
        else:
            counts = self.flows.samples_on(link, t_s)
            if sum(counts.values()) < self.samples_needed(len(counts)):
                return []
        total = sum(counts.values())
        if total <= 0:
            return []
        load = self._offered_bps(link, t_s)
        out = []
        ranked = [kv for kv in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
                  if kv[0] not in self.left_alone]           # counted in the load, never moved
        for flow, n in ranked[:self.settings.top_n]:
            src, dst = self.leaf_of.get(flow.src), self.leaf_of.get(flow.dst)
            if src is None or dst is None or src == dst or self.book.resting(flow, t_s):
                continue
            key = (flow.src, flow.dst, flow.sport, flow.dport)
            if key in self.gone or (not reported and self._ended(flow, link, t_s)):
                continue
            has_agent = key in agents
            nic_port, others = self._nic_port(key)
            if nic_port is not None:
                src = self.port_leaves[flow.src][nic_port]
                if src == dst:
                    continue
            rate = rates.get(flow)            # the switch's own measure, when it gave one
            out.append(ElephantFlow(flow, rate if rate is not None else load * n / total, src,
                                    dst, current=self.book.overrides.get(flow),
                                    has_agent=has_agent, nic_port=nic_port, other_ports=others,
                                    dst_leaves=self.port_leaves.get(flow.dst, ())[1:]))
        return out

    def _ended(self, flow: FlowKey, link: LinkKey, t_s: float) -> bool:
        """``flow`` was last sampled on ``link`` more than ``flow_ended_s`` before ``t_s``."""
        seen = self.flows.last_seen(flow, link)
        return seen is not None and t_s - seen > self.settings.flow_ended_s

    def _nic_port(self, key: tuple[str, str, int, int]
                  ) -> tuple[Optional[int], tuple[tuple[int, str], ...]]:
        """The NIC port a flow sends on and (port, leaf) of its NIC's other ports, when its
        agent says which port it uses (a dual-port NIC whose QPs the agent can re-bind);
        (None, ()) otherwise: the flow is taken to leave through its NIC's first leaf. A
        port the NIC does not have (a host's wrong word) counts as not said."""
        leaves = self.port_leaves.get(key[0], ())
        port = self.nic_port_of.get(key)
        if port is None or len(leaves) < 2 or not 0 <= port < len(leaves):
            return None, ()
        return port, tuple((p, leaf) for p, leaf in enumerate(leaves) if p != port)

    def _in_use(self, agents: AgentFlows) -> set[FlowKey]:
        """5-tuples of live flows (registered, sampled, or the target of a move)."""
        out = {FlowKey(s, d, 17, sp, dp) for s, d, sp, dp in agents}
        out.update(self.flows.flows)
        out.update(m.new_flow for m in self.book.pending.values())
        return out

    def samples_needed(self, flows: int) -> int:
        """Samples a link's window must hold before its elephants are ranked:
        ``min_samples``, or with ``samples_per_flow`` set, that many per flow sampled on
        the link (at least two flows' worth), capped by ``min_samples`` — each flow's
        share is then known to about 1/√``samples_per_flow`` however few the flows."""
        if self.settings.samples_per_flow is None:
            return self.settings.min_samples
        return min(self.settings.min_samples, self.settings.samples_per_flow * max(flows, 2))

    def recent_util(self, link: LinkKey) -> float:
        """Mean utilisation of ``link`` over its last ``proof_s`` of samples (0 if none)."""
        return self.windows.recent(link, self.settings.proof_s)

    def reported_bps(self, link: LinkKey, t_s: float) -> Optional[float]:
        """What the elephants ``link``'s switch reported add up to, in the loads' basis
        (bits/s of its capacity; the switch counts them at ingress: offered, not drained);
        None when it reported none or a rate cannot be converted yet (the link's capacity
        in packets/s unknown)."""
        rates = [self.links.bps_of_pps(link, pps)
                 for pps in self.dataplane.elephants_on(link, t_s).values()]
        if not rates or any(r is None for r in rates):
            return None
        return sum(r for r in rates if r is not None)

    def overloaded(self, link: LinkKey, t_s: Optional[float] = None) -> bool:
        """The collision is proven on ``link``: it marks (NOTICE or above) and its
        recent utilisation is over the safety threshold (``early_decide``), or (with
        ``t_s``) the elephants its switch reported add up to more than the safety
        threshold of the link (:meth:`reported_bps`: the switch's own measure of the same
        overload, known when the alarm arrives; the polls show it up to ``proof_s``
        later)."""
        if not (self.settings.early_decide and self.alarms.level(link) >= AlarmLevel.NOTICE):
            return False
        if self.recent_util(link) > self.settings.safety + 1e-9:
            return True
        offered = None if t_s is None else self.reported_bps(link, t_s)
        return offered is not None and offered > self.settings.safety * self.links.capacity_bps[link] + 1e-9

    def _trigger(self, link: LinkKey, t_s: Optional[float] = None) -> bool:
        return self.alarms.level(link) >= self.settings.decide_level or self.overloaded(link, t_s)

    def _offered_bps(self, link: LinkKey, t_s: Optional[float] = None) -> float:
        """A trigger link that marks queues: whatever the counters could drain, its
        offered load is at least its capacity, and its elephants split that. A follow-up
        link (no alarm any more) is taken at its measured load."""
        load = self.links.load_bps.get(link, 0.0)
        if self._trigger(link, t_s):
            return max(load, self.links.capacity_bps[link])
        return load

    def _offered_by_switches(self, planned: LinkState, t_s: float) -> dict[LinkKey, float]:
        """Every link whose switch reported elephants carries at least their rates (the
        switch counts them at ingress: offered, not drained). The polled loads lag a
        load window behind; at a collision's start they still show the links nearly idle,
        and a round on them alone would pile the moved flows onto a link already taken.
        Returns each such link's offered bits/s as its switch measured it (the round's
        record gives them)."""
        offered: dict[LinkKey, float] = {}
        for link in list(self.dataplane.elephants):
            rates = [self.links.bps_of_pps(link, pps)
                     for pps in self.dataplane.elephants_on(link, t_s).values()]
            known = [r for r in rates if r is not None]
            if known and link in planned.capacity_bps:
                offered[link] = sum(known)
                planned.load_bps[link] = max(planned.load_bps.get(link, 0.0), offered[link])
        return offered

    def _hot_links(self, t_s: float) -> list[LinkKey]:
        """Links at ``decide_level`` or above, then links at a lower alarm level whose
        overload is proven (:meth:`overloaded`), then links an earlier round worked on
        that still measure above the safety threshold (their alarm may have cleared once
        the queue drained; the threshold is the goal)."""
        hot = self.alarms.active(self.settings.decide_level)
        hot += [l for l in self.alarms.active(AlarmLevel.NOTICE)
                if l not in hot and self.overloaded(l, t_s)]
        for link in sorted(self.follow_up):
            if self.links.util(link) <= self.settings.safety + 1e-9:
                self.follow_up.discard(link)
                self.sampling.release(link)
            elif link not in hot:
                hot.append(link)
        return hot

    def decide(self, t_s: float) -> list[RoundDecision]:
        """Run the decision rounds due at ``t_s`` (at most one when it sends an order);
        returns them."""
        rounds: list[RoundDecision] = []
        self.waiting, self.waiting_samples = frozenset(), frozenset()
        if self.book.pending:
            return rounds                            # one round at a time
        hot = self._hot_links(t_s)
        waiting = set(self._alarmed_waiting(hot, t_s))
        starved: set[LinkKey] = set()
        agents = self._agent_flows(t_s) if hot else {}
        if t_s < self.settling_until_s:
            return rounds                            # a predecessor's move still settles
        for link in hot:
            if t_s - self.last_decision.get(link, -float("inf")) < self.settings.decide_every_s:
                continue
            if self._unsettled(link, t_s):
                continue                              # a symptom of its switch, not elephants
            if not self.sampling.wanted(link) and not self.dataplane.elephants_on(link, t_s):
                waiting.add(link)
                continue                              # nothing to rank elephants with yet
            elephants = self._elephants(link, t_s, agents)
            if not elephants:
                if self._short_of_data(link, t_s):
                    starved.add(link)                 # the next report or samples may do
                continue
            self.last_decision[link] = t_s
            self.follow_up.add(link)
            rid = next(self._rounds)
            name = self.links.name(link)
            if self._out.decision_log is not None:
                self._out.decision_log.flows_chosen(
                    name, [{"flow": str(e.flow),
                            "util_pct": round(100 * e.rate_bps / self.links.capacity_bps[link], 2),
                            "agent": e.has_agent} for e in elephants], rid)
            planned = apply_in_flight(self.links, self.book.pending.values())
            planned.down = planned.down | self._away_links(t_s)   # a copy: not taken down
            offered = self._offered_by_switches(planned, t_s)
            planned.load_bps[link] = max(planned.load_bps.get(link, 0.0), self._offered_bps(link, t_s))
            try:
                dec = self.engine.decide(elephants, t_s, trigger=link, links=planned,
                                         in_use=self._in_use(agents))
            except Exception as exc:  # noqa: BLE001 — a model gap must not stop the loop
                self._out.error(f"decision on {name} failed: {type(exc).__name__}: {exc}")
                continue
            self.decisions.append(dec)
            del self.decisions[:-100]
            rounds.append(dec)
            if self._out.decision_log is not None:
                self._out.decision_log.record("round", round=rid, link=name, offered_pct={
                    self.links.name(k): round(100 * bps / planned.capacity_bps[k], 2)
                    for k, bps in offered.items()} or None,
                    **{k: v for k, v in dec.to_dict().items() if k in (
                        "rejected", "baseline_max_util", "predicted_max_util", "elapsed_s")})
            for order in dec.orders:
                self._act(order, rid, t_s, agents, planned)
            if not dec.orders and not self._trigger(link, t_s):
                # a follow-up link no move can relieve: GOR stops re-checking it (and
                # polling fast for it); its next alarm brings it back
                self.follow_up.discard(link)
                self.sampling.release(link)
            if self.book.pending:
                return rounds                         # one round at a time: none waits
        # only alarmed links wait (a follow-up link is re-checked on the polls' ticks)
        alarmed = set(self.alarms.active(AlarmLevel.NOTICE))
        self.waiting = frozenset((waiting | starved) & alarmed)
        self.waiting_samples = frozenset(starved & alarmed)
        return rounds

    def _short_of_data(self, link: LinkKey, t_s: float) -> bool:
        """``link``'s elephants cannot be ranked yet: what its switch reported does not
        explain the alarm (:meth:`_elephants`) and its window holds too few samples (not:
        every elephant on it rests after a move)."""
        reported = self.reported_bps(link, t_s)
        if reported is not None and reported >= self.settings.safety * self.links.capacity_bps[link]:
            return False
        counts = self.flows.samples_on(link, t_s)
        return sum(counts.values()) < self.samples_needed(len(counts))

    def _alarmed_waiting(self, hot: list[LinkKey], t_s: float) -> frozenset[LinkKey]:
        """Alarmed links (NOTICE or above) not hot yet whose round is not held back by
        ``decide_every_s`` or their switch: the next elephant report from their switch
        may prove the overload (:meth:`overloaded`)."""
        return frozenset(
            l for l in self.alarms.active(AlarmLevel.NOTICE) if l not in hot
            and self.settings.early_decide
            and t_s - self.last_decision.get(l, -float("inf")) >= self.settings.decide_every_s
            and not self._unsettled(l, t_s))


__all__ = ["ActOn", "AgentFlows", "DecisionRounds"]
