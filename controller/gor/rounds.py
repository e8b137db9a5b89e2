"""Decision rounds of GOR's loop (step 5 of a tick): which links get a round, which flows
on them are elephants, and the round itself through :meth:`PathEngine.decide`.

:class:`DecisionRounds` is mixed into :class:`controller.gor.loop.GorLoop` (the rules are
in the loop's module docstring: one round at a time, ``decide_every_s`` per link,
``min_samples`` (or ``samples_per_flow``) before ranking, early rounds on a proven
overload, cooldown, follow-up links, loads with every move in
flight applied). Rates are in the loop's basis: an elephant's sampled share of its link
times the link's measured load (at least its capacity on a link that marks).

Example (the loop's own use)::

    >>> rounds = loop._decide(t_s=1.05)                     # doctest: +SKIP
    >>> [r.trigger for r in rounds]                         # doctest: +SKIP
    [('b0r0l0', 3)]
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional

from controller.gor.alarms import AlarmMonitor
from controller.gor.decisions import AlarmLevel, FlowKey, LinkKey, PathChoice, RoundDecision
from controller.gor.elephants import FlowTable
from controller.gor.log import DecisionLog
from controller.gor.moves import MoveInFlight, apply_in_flight
from controller.gor.paths import ElephantFlow, LinkState, PathEngine

AgentFlows = Mapping[tuple[str, str, int, int], str]
"""(src, dst, sport, dport) → registered flow id."""


class DecisionRounds:
    """Hot links, elephants and decision rounds, mixed into :class:`controller.gor.loop.GorLoop`."""

    registry: Any
    decision_log: Optional[DecisionLog]
    alarms: AlarmMonitor
    engine: PathEngine
    links: LinkState
    flows: FlowTable
    leaf_of: Mapping[str, str]
    sampling: dict[LinkKey, int]
    pending: dict[str, MoveInFlight]
    overrides: dict[FlowKey, PathChoice]
    moved: dict[FlowKey, float]
    cooldown_s: float
    flow_ids: dict[FlowKey, str]
    follow_up: set[LinkKey]
    last_decision: dict[LinkKey, float]
    decisions: list[RoundDecision]
    decide_level: AlarmLevel
    decide_every_s: float
    min_samples: int
    samples_per_flow: Optional[int]
    early_decide: bool
    proof_s: float
    util_window: dict[LinkKey, Any]
    top_n: int
    safety: float
    _rounds: "itertools.count[int]"

    if TYPE_CHECKING:  # provided by the other parts of GorLoop (stubs here would shadow them)
        def link_name(self, link: LinkKey) -> str: ...
        def _error(self, msg: str) -> None: ...
        def _release_sampling(self, link: LinkKey) -> None: ...
        def _act(self, order: Any, rid: int, t_s: float, agents: AgentFlows, planned: LinkState) -> None: ...

    def _agent_flows(self, t_s: float) -> dict[tuple[str, str, int, int], str]:
        """(src, dst, sport, dport) → registered flow id (the registry's view, plus the
        new 5-tuples of moves sent before their agent reported). A registered flow whose
        agent says a move order moved it less than ``cooldown_s`` ago — a move of this GOR's
        predecessor, after a restart — rests for the remainder (:meth:`_remember_move`)."""
        out = {(f.src, f.dst, f.sport, f.dport): fid for f, fid in self.flow_ids.items()}
        if self.registry is None:
            return out
        try:
            registered = self.registry.flows()
        except Exception as exc:  # noqa: BLE001
            self._error(f"registry: {type(exc).__name__}: {exc}")
            return out
        for f in registered:
            out[(f.src_ip, f.dst_ip, f.sport, f.dst_port)] = f.flow_id
            if f.moved_s_ago is not None and f.moved_s_ago < self.cooldown_s:
                self._remember_move(FlowKey(f.src_ip, f.dst_ip, 17, f.sport, f.dst_port),
                                    f.flow_id, t_s + self.cooldown_s - f.moved_s_ago)
        return out

    def _remember_move(self, flow: FlowKey, fid: str, until_s: float) -> None:
        """Leave ``flow`` alone until ``until_s`` when this GOR did not know it moved
        (logged once as ``move_remembered``)."""
        if flow in self.moved:
            return
        self.moved[flow] = until_s
        if self.decision_log is not None:
            self.decision_log.record("move_remembered", flow=str(flow), flow_id=fid,
                                     rest_until_s=round(until_s, 3))

    def _elephants(self, link: LinkKey, t_s: float,
                   agents: AgentFlows) -> list[ElephantFlow]:
        """The Top-N flows on ``link``, rates in the loop's basis (sampled share × the
        link's measured load)."""
        counts = self.flows.samples_on(link, t_s)
        total = sum(counts.values())
        if total < self.samples_needed(len(counts)):
            return []
        load = self._offered_bps(link)
        out = []
        for flow, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:self.top_n]:
            src, dst = self.leaf_of.get(flow.src), self.leaf_of.get(flow.dst)
            if src is None or dst is None or src == dst or self.moved.get(flow, float("-inf")) >= t_s:
                continue
            has_agent = (flow.src, flow.dst, flow.sport, flow.dport) in agents
            out.append(ElephantFlow(flow, load * n / total, src, dst,
                                    current=self.overrides.get(flow), has_agent=has_agent))
        return out

    def _in_use(self, agents: AgentFlows) -> set[FlowKey]:
        """5-tuples of live flows (registered, sampled, or the target of a move)."""
        out = {FlowKey(s, d, 17, sp, dp) for s, d, sp, dp in agents}
        out.update(self.flows.flows)
        out.update(m.new_flow for m in self.pending.values())
        return out

    def samples_needed(self, flows: int) -> int:
        """Samples a link's window must hold before its elephants are ranked:
        ``min_samples``, or with ``samples_per_flow`` set, that many per flow sampled on
        the link (at least two flows' worth), capped by ``min_samples`` — each flow's
        share is then known to about 1/√``samples_per_flow`` however few the flows."""
        if self.samples_per_flow is None:
            return self.min_samples
        return min(self.min_samples, self.samples_per_flow * max(flows, 2))

    def recent_util(self, link: LinkKey) -> float:
        """Mean utilisation of ``link`` over its last ``proof_s`` of samples (0 if none)."""
        win = self.util_window.get(link)
        if not win:
            return 0.0
        last = win[-1][0]
        recent = [u for t, u in win if t >= last - self.proof_s - 1e-9]
        return sum(recent) / len(recent)

    def overloaded(self, link: LinkKey) -> bool:
        """The collision is proven on ``link``: it marks (NOTICE or above) and its
        recent utilisation is over the safety threshold (``early_decide``)."""
        return (self.early_decide and self.alarms.level(link) >= AlarmLevel.NOTICE
                and self.recent_util(link) > self.safety + 1e-9)

    def _trigger(self, link: LinkKey) -> bool:
        return self.alarms.level(link) >= self.decide_level or self.overloaded(link)

    def _offered_bps(self, link: LinkKey) -> float:
        """A trigger link that marks queues: whatever the counters could drain, its
        offered load is at least its capacity, and its elephants split that. A follow-up
        link (no alarm any more) is taken at its measured load."""
        load = self.links.load_bps.get(link, 0.0)
        if self._trigger(link):
            return max(load, self.links.capacity_bps[link])
        return load

    def _hot_links(self) -> list[LinkKey]:
        """Links at ``decide_level`` or above, then links at a lower alarm level whose
        overload is proven (:meth:`overloaded`), then links an earlier round worked on
        that still measure above the safety threshold (their alarm may have cleared once
        the queue drained; the threshold is the goal)."""
        hot = self.alarms.active(self.decide_level)
        hot += [l for l in self.alarms.active(AlarmLevel.NOTICE) if l not in hot and self.overloaded(l)]
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
        agents = self._agent_flows(t_s)
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


__all__ = ["AgentFlows", "DecisionRounds"]
