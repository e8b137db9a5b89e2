"""Link failures in GOR's loop: a link that goes down leaves the ECMP groups of the
switches at both ends, the published hash model follows, and the flows are re-planned.

:class:`LinkFaults` is owned by :class:`controller.gor.loop.GorLoop` and built from the loop's
:class:`~controller.gor.shared.LoopState` (the ``LinkState``, the path engine and its hash
model, the switch tables, the outputs), the :class:`~controller.gor.sampling.Sampling`, the
:class:`~controller.gor.detour_sync.DetourSync`, the settings (the detectors' thresholds) and
``follow``: the callback that makes links follow-up links of the decision rounds
(:meth:`controller.gor.rounds.DecisionRounds.follow`). It owns the dead-link and pause-storm
monitors and the ECMP groups as programmed. It holds the dead-link probes and
counter evidence. On :meth:`LinkFaults.link_down` (an administrative link event from the testbed, or a port
whose counters stall, reported by whoever watches them):

1. both directions of the cable are marked down in :class:`~controller.gor.paths.LinkState`
   (the path engine offers no path through it any more);
2. every ECMP group of both end switches that has the link as a member is rewritten
   without it: the ``FabricIngress.ecmp.members`` entries ``base ..`` get the surviving
   next hops (written first), then the ``FabricIngress.ecmp.groups`` entry gets the new
   size — the data plane re-hashes at once, nothing is sent into the dead link;
3. the engine's hash model gets the same groups, so every source port GOR solves from now
   on is right for the new groups (and the TCCL agents only ever receive those);
4. every leaf gets the detour groups the fabric needs now (:mod:`controller.gor.detour_sync`):
   when the spine end had no other link to that leaf, the other leaves route the leaf's
   prefixes around that spine;
5. the links of both end switches become follow-up links: any of them measuring above
   the safety threshold gets a decision round (the affected flows are re-planned) even
   without an ECN alarm; the decision log gets ``link_down`` with what was rewritten
   (``groups``, ``detours``).

:meth:`LinkFaults.link_up` puts the link back into the groups as programmed. Another
thread reports an event with :meth:`LinkFaults.submit_link_event`; the next tick or reaction
applies it (``GorRuntime.submit_link_event`` asks for a reaction at once).

A group left with no member keeps its last one (the switch has no other way out; its
packets are lost either way) and the failure is logged.

**From the counters** (:meth:`LinkFaults.watch_links`, every tick after the digests):
each link direction's interval becomes evidence (:func:`~controller.gor.deadlinks.link_evidence`)
for the :class:`~controller.gor.deadlinks.DeadLinkDetector`; a direction it declares dead
gets :meth:`link_down` with the reason ``counters: …`` (``link_down`` in the decision log);
one it declared dead that carries traffic again gets :meth:`link_up`. An interval is no
evidence while either end's switch is stale or answered again within ``stale_grace_s``
(:meth:`LinkFaults.observe_stale`, fed from the poller's health), or is *frozen*: it
answers its reads but none of its counters moved while a neighbour sent to it
(:func:`~controller.gor.deadlinks.frozen_switches`; BMv2 under CPU load, its data plane
stands still for seconds), for at most ``freeze_max_s`` of one freeze. Nothing arriving
while either end is stalled (stale or frozen) fails no re-test burst (frames that do
arrive still count), and
:meth:`LinkFaults.stalled` tells the decision rounds to leave its links alone, as for a
switch lost (the loop's ``switch_unsettled``). A direction declared dead
is re-tested while it is out (:class:`~controller.gor.deadlinks.LinkRetests`): every second
three probe frames (``retest_frames``) go out of its port as PacketOuts (:func:`~controller.gor.deadlinks.probe_frame`),
and three re-tests in a row that the peer's rx counter saw arrive bring it back
(:meth:`link_up`, reason ``probes: …``); no traffic is re-admitted to test it. For the
"forwarded but not sent" rule the loop probes: while a port sends nothing and another
member of one of its switch's ECMP groups sends at least ``min_pkts``, sampling is on at
that port (``probes``), so that packets forwarded to it show up as digests.

**Pause storms** (:meth:`LinkFaults.watch_pause`): each sample's PFC frames received go
to the :class:`~controller.gor.pause.PauseStormMonitor`; a storm raised or cleared is
logged (``pause_storm_raised`` with the operator's advice, ``pause_storm_cleared``) and
exported (``gor_pause_storm``). Nothing is re-routed for it.

Example (fakes for the switches, see ``tests/controller/test_gor_faults.py``)::

    >>> loop.faults.link_down("b0r0l0", 4, reason="cable cut")   # doctest: +SKIP
    ['b0r0l0/1: s0,s2,s3', 's1/3: ...']
"""
from __future__ import annotations

import queue
from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Optional

from controller.gor.deadlinks import (DeadLinkDetector, LinkRetests, RetestResult, frozen_switches, link_evidence,
                                     probe_frame)
from controller.gor.decisions import LinkKey
from controller.gor.detour_sync import DetourSync
from controller.gor.pause import PAUSE_STORM_ADVICE, PauseStormMonitor
from controller.gor.restarts import SYMPTOM_MAX_S
from controller.gor.sampling import Sampling
from controller.gor.shared import LoopSettings, LoopState
from p4src.hashmodel import GroupModel

T_GROUPS = "FabricIngress.ecmp.groups"
T_MEMBERS = "FabricIngress.ecmp.members"
A_GROUP = "FabricIngress.ecmp.select_member"
A_GROUP_PORTS_FIRST = "FabricIngress.ecmp.select_member_ports_first"   # a core's, a spine's down (3 tiers)
A_MEMBER = "FabricIngress.ecmp.set_nexthop"


class LinkFaults:
    """Link down/up handling, dead links from the counters and pause storms (see the
    module docstring). It owns the dead-link and pause-storm monitors (their thresholds
    are the ``settings``') and ``programmed_groups``: switch → group id → the ECMP group as
    the plan programmed it (detour groups excluded), taken from the engine's hash model
    when it is built, before any fault rewrote it."""

    def __init__(self, state: LoopState, sampling: Sampling, detours: DetourSync,
                 settings: LoopSettings, follow: Callable[[Iterable[LinkKey]], None]) -> None:
        self.links, self.engine, self.tables, self.sampling = state.links, state.engine, state.tables, sampling
        self.detours, self._out, self._follow = detours, state.out, follow
        self.dead_links = DeadLinkDetector(settings.dead_link_thresholds)
        self.pause = PauseStormMonitor(settings.pause_thresholds)
        self.programmed_groups: dict[str, dict[int, GroupModel]] = {
            n: {gid: g for gid, g in m.groups.items() if gid not in detours.detours.get(n, {})}
            for n, m in state.engine.hash_model.switches.items()}
        self.probes: dict[LinkKey, float] = {}        # dead-link probes: link → since
        self.forwarded: Counter[LinkKey] = Counter()  # digests per egress link since the last tick
        self.rx_armed: set[LinkKey] = set()           # ports whose rx counter has moved
        self.counter_down: set[LinkKey] = set()       # links taken down by the counters
        self.retests = LinkRetests(self.dead_links.thresholds)
        self.stale_at: dict[str, float] = {}          # switch → last tick it was seen stale
        self.stall_from: dict[str, float] = {}        # switch → first tick of its latest stall
        self.frozen_since: dict[str, float] = {}      # switch → first tick of its unbroken freeze
        self.link_events: "queue.Queue[tuple[str, int, bool, str]]" = queue.Queue()

    def count_forwarded(self, link: LinkKey) -> None:
        """One digest showed a packet forwarded to ``link`` (evidence for the
        "forwarded but not sent" rule)."""
        self.forwarded[link] += 1

    def forget_counters(self, link: LinkKey) -> None:
        """Drop the counter evidence of ``link`` and its peer (a restarted switch: its
        counters began again from zero)."""
        self.rx_armed.discard(link)
        self.dead_links.forget(link)
        peer = self.links.peer.get(link)
        if peer is not None:
            self.dead_links.forget(peer)

    def submit_link_event(self, switch: str, port: int, up: bool,
                          reason: str = "administrative") -> None:
        """Queue a link event from another thread (the testbed, a port watcher); the next
        tick applies it (thread-safe)."""
        self.link_events.put((switch, port, up, reason))

    def drain_link_events(self) -> None:
        """Apply the link events queued by :meth:`submit_link_event` (each tick)."""
        while not self.link_events.empty():
            switch, port, up, reason = self.link_events.get_nowait()
            (self.link_up if up else self.link_down)(switch, port, reason)

    def link_down(self, switch: str, port: int, reason: str = "administrative") -> list[str]:
        """Take the cable at ``switch:port`` out of service (see the module docstring);
        returns the groups rewritten (``"b0r0l0/1: s0,s2"``). A link already out because
        the counters declared it dead is from now on the caller's: its re-tests stop and
        only :meth:`link_up` brings it back (an operator's drain is never undone by probes)."""
        if not self.links.is_up((switch, port)):
            for end in [(switch, port), self.links.peer.get((switch, port))]:
                if end is not None and end in self.counter_down:
                    self.counter_down.discard(end)
                    self.retests.stop(end)
            return []
        self.links.link_down(switch, port)
        return self._regroup(switch, port, "link_down", reason)

    def link_up(self, switch: str, port: int, reason: str = "administrative") -> list[str]:
        """Put the cable at ``switch:port`` back into its groups (as programmed)."""
        if self.links.is_up((switch, port)):
            return []
        self.links.link_up(switch, port)
        for end in [(switch, port), self.links.peer.get((switch, port))]:
            if end is not None:
                self.dead_links.forget(end)
                self.counter_down.discard(end)
                self.retests.stop(end)
        return self._regroup(switch, port, "link_up", reason)

    def _regroup(self, switch: str, port: int, event: str, reason: str) -> list[str]:
        ends = [(switch, port)]
        peer = self.links.peer.get((switch, port))
        if peer is not None:
            ends.append(peer)
        done: list[str] = []
        for sw, _ in ends:
            done += self.rewrite_groups(sw)
        detours = self.detours.sync()
        self.engine._spine_groups.clear()
        if self._out.metrics is not None:
            for end in ends:
                self._out.metrics.set_link_down(self.links.name(end), not self.links.is_up(end))
        for sw, _ in ends:
            self._follow(l for l in self.links.capacity_bps if l[0] == sw and self.links.is_up(l))
        if self._out.decision_log is not None:
            self._out.decision_log.record(event, link=self.links.name((switch, port)), reason=reason,
                                          groups=done, detours=detours)
        return done

    def rewrite_groups(self, switch: str) -> list[str]:
        """Rewrite every group of ``switch`` whose live members changed; their names."""
        model = self.engine.hash_model.switches.get(switch)
        if model is None:
            return []
        out = []
        for gid, programmed in sorted(self.programmed_groups.get(switch, {}).items()):
            ports = [self.engine.member_port(switch, m) for m in programmed.members]
            live = [(m, p) for m, p in zip(programmed.members, ports) if self.links.is_up((switch, p))]
            if not live:
                self._out.error(f"{switch}: ECMP group {gid} has no live member left: kept as it is")
                continue
            if tuple(m for m, _ in live) == model.groups[gid].members:
                continue
            try:
                for i, (_, p) in enumerate(live):
                    self.tables.write(switch, T_MEMBERS, {"meta.ecmp_member": programmed.base + i},
                                A_MEMBER, {"nexthop_id": p})
                self.tables.write(switch, T_GROUPS, {"meta.ecmp_group_id": gid},
                                  A_GROUP if programmed.fields is None else A_GROUP_PORTS_FIRST,
                                  {"base": programmed.base, "size": len(live)})
            except Exception as exc:  # noqa: BLE001 — a switch that does not answer
                self._out.error(f"{switch}: ECMP group {gid} not rewritten: {type(exc).__name__}: {exc}")
                continue
            model.groups[gid] = GroupModel(programmed.base, tuple(m for m, _ in live), programmed.fields)
            out.append(f"{switch}/{gid}: {','.join(m for m, _ in live)}")
        return out

    # ------------------------------------------------------------------ from the counters
    def watch_pause(self, link: LinkKey, t_s: float, sample: Any) -> None:
        """Feed one sample's PFC frames received to the pause-storm monitor."""
        ev = self.pause.observe(link, t_s, int(getattr(sample, "pfc_rx", 0) or 0),
                                float(getattr(sample, "dt_s", 0.0) or 0.0))
        if ev is None:
            return
        name = self.links.name(link)
        out = self._out
        if out.metrics is not None:
            out.metrics.set_pause_storm(name, ev.raised)
        if out.decision_log is not None:
            if ev.raised:
                out.decision_log.record("pause_storm_raised", link=name,
                                        frames_per_s=ev.frames_per_s, held_s=ev.held_s,
                                        action=PAUSE_STORM_ADVICE)
            else:
                out.decision_log.record("pause_storm_cleared", link=name,
                                        frames_per_s=ev.frames_per_s, held_s=ev.held_s)

    def observe_stale(self, stale: Iterable[str], t_s: float) -> None:
        """The switches stale at ``t_s`` (the poller's health, each tick before
        :meth:`watch_links`): their links give no evidence until ``stale_grace_s`` after
        they answer again.

        >>> faults.observe_stale(["s1"], 12.5)                   # doctest: +SKIP
        """
        for sw in stale:
            self._mark_stale(sw, t_s)

    def _mark_stale(self, switch: str, t_s: float) -> None:
        if not self._stalled(switch, t_s):
            self.stall_from[switch] = t_s             # a new stall begins
        self.stale_at[switch] = t_s

    def _stalled(self, switch: str, t_s: float) -> bool:
        seen = self.stale_at.get(switch)
        return seen is not None and t_s - seen <= self.dead_links.thresholds.stale_grace_s + 1e-9

    def stalled(self, switch: str, t_s: float, alarm_since: Optional[float] = None) -> bool:
        """``switch`` is stale or frozen, or was less than ``stale_grace_s`` ago, or the
        alarm of a link of it began (``alarm_since``) during that stall or its grace and
        ``t_s`` is less than ``SYMPTOM_MAX_S`` after it: its neighbours' queues and its own
        backlog burst are the stall's doing, and no decision round runs on its links.

        >>> faults.stalled("s1", 12.6), faults.stalled("s1", 12.6, alarm_since=11.0)  # doctest: +SKIP
        (True, True)
        """
        if self._stalled(switch, t_s):
            return True
        last, first = self.stale_at.get(switch), self.stall_from.get(switch)
        if last is None or first is None or alarm_since is None:
            return False
        grace = self.dead_links.thresholds.stale_grace_s
        return first <= alarm_since <= last + grace + 1e-9 and t_s - last < SYMPTOM_MAX_S

    def _watch_frozen(self, by_key: Mapping[LinkKey, Any], t_s: float) -> None:
        """Mark the switches frozen in this interval stale (each for at most
        ``freeze_max_s`` of one unbroken freeze)."""
        th = self.dead_links.thresholds
        frozen = frozen_switches(by_key, self.links.peer, th)
        for sw in list(self.frozen_since):
            if sw not in frozen:
                del self.frozen_since[sw]
        for sw in sorted(frozen):
            since = self.frozen_since.setdefault(sw, t_s)
            if t_s - since <= th.freeze_max_s + 1e-9:
                if not self._stalled(sw, t_s):
                    self._out.error(f"{sw}: frozen: no counter moved while its neighbours sent to it; "
                                    "no dead-link evidence or round from it")
                self._mark_stale(sw, t_s)

    def watch_links(self, t_s: float, samples: Mapping[Any, Any]) -> None:
        """Dead-link evidence of every sampled direction, and the re-tests of those
        declared dead (see the module docstring)."""
        by_key = {(lid.switch, lid.port): s for lid, s in samples.items()}
        for key, s in by_key.items():
            if getattr(s, "rx_pkts", 0) > 0:
                self.rx_armed.add(key)
        forwarded, self.forwarded = self.forwarded, Counter()
        th = self.dead_links.thresholds
        self._watch_frozen(by_key, t_s)
        for key, s in sorted(by_key.items()):
            peer = self.links.peer.get(key)
            if peer is None:
                continue
            ev = self.dead_links.observe(key, t_s, link_evidence(
                s, by_key.get(peer), rx_armed=peer in self.rx_armed,
                forwarded=forwarded.get(key, 0), th=th,
                stale=self._stalled(key[0], t_s) or self._stalled(peer[0], t_s)))
            if ev is None:
                continue
            if ev.dead and self.links.is_up(key):
                self.counter_down.add(key)
                self.link_down(key[0], key[1], ev.reason)
                self.retests.start(key, t_s)
            elif not ev.dead and key in self.counter_down and not self.links.is_up(key):
                self.link_up(key[0], key[1], ev.reason)
        self._retest(by_key, t_s)
        self._probe(by_key, t_s)

    def _retest(self, by_key: Mapping[LinkKey, Any], t_s: float) -> None:
        """Judge the bursts in flight from the peers' rx counters, then send those due."""
        th = self.dead_links.thresholds
        for key in list(self.retests.tests):
            if key not in self.counter_down or self.links.is_up(key):
                self.retests.stop(key)                # back up by other means
                continue
            peer = self.links.peer.get(key)
            got = by_key.get(peer) if peer is not None else None
            fresh = got is not None and not getattr(got, "reset", False) and peer is not None
            rx = int(getattr(got, "rx_pkts", 0)) if fresh else None
            if rx == 0 and peer is not None and (self._stalled(key[0], t_s) or self._stalled(peer[0], t_s)):
                rx = None                             # nothing arrived during a stall: no failure
            res = self.retests.observe(key, t_s, rx)
            if res is RetestResult.HEALED:
                self.link_up(key[0], key[1], f"probes: {th.retest_passes} re-tests in a row arrived at "
                             f"the peer ({th.retest_frames} frames each)")
        for key in self.retests.due(t_s):
            seq = self.retests.sent(key, t_s)
            try:
                conn = self.tables.conn(key[0])
                for i in range(th.retest_frames):
                    conn.packet_out(probe_frame(key, seq * th.retest_frames + i), {"egress_port": key[1]})
            except Exception as exc:  # noqa: BLE001 — a switch that does not take it
                self.retests.not_sent(key, t_s)
                self._out.error(f"{key[0]}: re-test of port {key[1]} not sent: {type(exc).__name__}: {exc}")

    def _siblings(self, link: LinkKey) -> set[LinkKey]:
        """The other member ports of every ECMP group of ``link``'s switch that has it."""
        sw, port = link
        out: set[LinkKey] = set()
        for group in self.programmed_groups.get(sw, {}).values():
            ports = {self.engine.member_port(sw, m) for m in group.members}
            if port in ports:
                out.update((sw, p) for p in ports if p != port)
        return out

    def _probe(self, by_key: Mapping[LinkKey, Any], t_s: float) -> None:
        """Sampling at every up port that sends nothing while a sibling sends ``min_pkts``;
        off again once the port sends or goes down."""
        min_pkts = self.dead_links.thresholds.min_pkts
        for key, s in by_key.items():
            if key not in self.links.peer or not self.links.is_up(key):
                continue
            if s.tx_pkts == 0 and any(getattr(by_key.get(k), "tx_pkts", 0) >= min_pkts
                                      for k in self._siblings(key)):
                self.probes.setdefault(key, t_s)
        for key in list(self.probes):
            s = by_key.get(key)
            if not self.links.is_up(key) or (s is not None and s.tx_pkts >= min_pkts):
                del self.probes[key]
                self.sampling.release(key)
            elif key not in self.sampling:
                self.sampling.enable(key, t_s)


__all__ = ["LinkFaults"]
