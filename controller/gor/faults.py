"""Link failures in GOR's loop: a link that goes down leaves the ECMP groups of the
switches at both ends, the published hash model follows, and the flows are re-planned.

:class:`LinkFaults` is mixed into :class:`controller.gor.loop.GorLoop`. On
:meth:`LinkFaults.link_down` (an administrative link event from the testbed, or a port
whose counters stall, reported by whoever watches them):

1. both directions of the cable are marked down in :class:`~controller.gor.paths.LinkState`
   (the path engine offers no path through it any more);
2. every ECMP group of both end switches that has the link as a member is rewritten
   without it: the ``FabricIngress.ecmp.members`` entries ``base ..`` get the surviving
   next hops (written first), then the ``FabricIngress.ecmp.groups`` entry gets the new
   size — the data plane re-hashes at once, nothing is sent into the dead link;
3. the engine's hash model gets the same groups, so every source port GOR solves from now
   on is right for the new groups (and the TCCL agents only ever receive those);
4. the links of both end switches become follow-up links: any of them measuring above
   the safety threshold gets a decision round (the affected flows are re-planned) even
   without an ECN alarm; the decision log gets ``link_down`` with what was rewritten.

:meth:`LinkFaults.link_up` puts the link back into the groups as programmed. Another
thread reports an event with :meth:`LinkFaults.submit_link_event`; the next tick applies it.

A group left with no member keeps its last one (the switch has no other way out; its
packets are lost either way) and the failure is logged.
"""
from __future__ import annotations

import queue
from typing import Any, Mapping, Optional

from controller.gor.decisions import LinkKey
from controller.gor.log import DecisionLog
from controller.gor.paths import LinkState, PathEngine
from p4src.hashmodel import GroupModel

T_GROUPS = "FabricIngress.ecmp.groups"
T_MEMBERS = "FabricIngress.ecmp.members"
A_GROUP = "FabricIngress.ecmp.select_member"
A_MEMBER = "FabricIngress.ecmp.set_nexthop"


class LinkFaults:
    """Link down/up handling, mixed into :class:`controller.gor.loop.GorLoop`."""

    links: LinkState
    engine: PathEngine
    decision_log: Optional[DecisionLog]
    follow_up: set[LinkKey]
    programmed_groups: dict[str, dict[int, GroupModel]]
    link_events: "queue.Queue[tuple[str, int, bool, str]]"

    def link_name(self, link: LinkKey) -> str: ...
    def _error(self, msg: str) -> None: ...
    def _write(self, switch: str, table: str, match: Mapping[str, Any], action: str,
               params: Mapping[str, Any]) -> None: ...

    def submit_link_event(self, switch: str, port: int, up: bool,
                          reason: str = "administrative") -> None:
        """Queue a link event from another thread (the testbed, a port watcher); the next
        tick applies it (thread-safe)."""
        self.link_events.put((switch, port, up, reason))

    def _drain_link_events(self) -> None:
        while not self.link_events.empty():
            switch, port, up, reason = self.link_events.get_nowait()
            (self.link_up if up else self.link_down)(switch, port, reason)

    def link_down(self, switch: str, port: int, reason: str = "administrative") -> list[str]:
        """Take the cable at ``switch:port`` out of service (see the module docstring);
        returns the groups rewritten (``"b0r0l0/1: s0,s2"``)."""
        if not self.links.is_up((switch, port)):
            return []
        self.links.link_down(switch, port)
        return self._regroup(switch, port, "link_down", reason)

    def link_up(self, switch: str, port: int, reason: str = "administrative") -> list[str]:
        """Put the cable at ``switch:port`` back into its groups (as programmed)."""
        if self.links.is_up((switch, port)):
            return []
        self.links.link_up(switch, port)
        return self._regroup(switch, port, "link_up", reason)

    def _regroup(self, switch: str, port: int, event: str, reason: str) -> list[str]:
        ends = [(switch, port)]
        peer = self.links.peer.get((switch, port))
        if peer is not None:
            ends.append(peer)
        done: list[str] = []
        for sw, _ in ends:
            done += self._rewrite_groups(sw)
        self.engine._spine_groups.clear()
        for sw, _ in ends:
            self.follow_up.update(l for l in self.links.capacity_bps
                                  if l[0] == sw and self.links.is_up(l))
        if self.decision_log is not None:
            self.decision_log.record(event, link=self.link_name((switch, port)), reason=reason,
                                     groups=done)
        return done

    def _rewrite_groups(self, switch: str) -> list[str]:
        """Rewrite every group of ``switch`` whose live members changed; their names."""
        model = self.engine.hash_model.switches.get(switch)
        if model is None:
            return []
        out = []
        for gid, programmed in sorted(self.programmed_groups.get(switch, {}).items()):
            ports = [self.engine.member_port(switch, m) for m in programmed.members]
            live = [(m, p) for m, p in zip(programmed.members, ports) if self.links.is_up((switch, p))]
            if not live:
                self._error(f"{switch}: ECMP group {gid} has no live member left: kept as it is")
                continue
            if tuple(m for m, _ in live) == model.groups[gid].members:
                continue
            try:
                for i, (_, p) in enumerate(live):
                    self._write(switch, T_MEMBERS, {"meta.ecmp_member": programmed.base + i},
                                A_MEMBER, {"nexthop_id": p})
                self._write(switch, T_GROUPS, {"meta.ecmp_group_id": gid}, A_GROUP,
                            {"base": programmed.base, "size": len(live)})
            except Exception as exc:  # noqa: BLE001 — a switch that does not answer
                self._error(f"{switch}: ECMP group {gid} not rewritten: {type(exc).__name__}: {exc}")
                continue
            model.groups[gid] = GroupModel(programmed.base, tuple(m for m, _ in live))
            out.append(f"{switch}/{gid}: {','.join(m for m, _ in live)}")
        return out


__all__ = ["LinkFaults"]
