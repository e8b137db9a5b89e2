"""Restart reconciliation of links: a GOR that starts over a fabric where its predecessor
took links down learns them from the switches' ECMP state (:class:`LinkReconciler`, owned
by :class:`controller.gor.loop.GorLoop`; :meth:`Reconciliation.reconcile
<controller.gor.reconcile.Reconciliation.reconcile>` calls it first).

A new GOR begins with every link up and the groups as planned, but the switches hold what
the predecessor wrote. For every switch :meth:`LinkReconciler.run` reads
``FabricIngress.ecmp.groups`` and ``FabricIngress.ecmp.members`` (and, on leaves, the
routes to a group other than the uplink group):

* a planned group whose entry holds fewer members than planned: each planned member
  port missing from it is a link the predecessor took down — marked down here (both
  directions), so the path engine avoids it and the group is kept as it is;
* a leaf's routes to another group are the predecessor's detours: adopted as this GOR's
  own (:meth:`DetourSync.adopt <controller.gor.detour_sync.DetourSync.adopt>`), with the
  engine's hash model.

Then every switch's groups and every leaf's detours are brought to the links now known
down (writes only where the switches differ: a consistent predecessor costs no write).
The links come back as usual: an administrative ``link_up``, or the counters.

    >>> report = loop.reconcile(t_s=0.0)                      # doctest: +SKIP
    >>> report.down_links, report.adopted_detours             # doctest: +SKIP
    (['b0r0l0:4'], 3)
"""
from __future__ import annotations

import ipaddress
from typing import Any, Mapping, Optional

from controller.fabric.detours import Detour
from controller.fabric.ecmp import LEAF_UPLINK_GROUP, link_group
from controller.fabric.entries import T_GROUPS, T_MEMBERS, T_ROUTES
from controller.gor.detour_sync import DetourSync
from controller.gor.faults import LinkFaults
from controller.gor.reconcile import ReconcileReport
from controller.gor.shared import LoopState
from controller.p4rt.codec import decode
from p4src.hashmodel import GroupModel

A_ROUTE_GROUP = "FabricIngress.forwarding.set_ecmp_group"


def _entries(conn: Any, info: Any, table: str) -> list[tuple[dict[str, Any], str, dict[str, int]]]:
    """``(match, action, params)`` of every entry of ``table``; an LPM field reads as
    ``"a.b.c.d/len"``, an exact one as its integer."""
    out = []
    for te in conn.read_table(table):
        match: dict[str, Any] = {}
        for m in te.match:
            name = info.match_field(table, m.field_id).name
            if m.HasField("lpm"):
                match[name] = f"{ipaddress.IPv4Address(decode(m.lpm.value))}/{m.lpm.prefix_len}"
            else:
                match[name] = decode(m.exact.value)
        act = te.action.action
        action = info.get_name("action", act.action_id) if act.action_id else ""
        params = {info.action_param(act.action_id, p.param_id).name: decode(p.value)
                  for p in act.params} if act.action_id else {}
        out.append((match, action, params))
    return out


class LinkReconciler:
    """Down links and detours read back from the switches (see the module docstring).

    Constructed with the loop's :class:`~controller.gor.shared.LoopState` (the switch
    tables it reads, the path engine, the ``LinkState`` it marks links down in), the
    :class:`~controller.gor.detour_sync.DetourSync` and the
    :class:`~controller.gor.faults.LinkFaults` (the ECMP groups as programmed, and
    ``rewrite_groups``: bring a switch's groups to the links now down).
    """

    def __init__(self, state: LoopState, detours: DetourSync, faults: LinkFaults) -> None:
        self.tables, self.engine, self.links, self._out = state.tables, state.engine, state.links, state.out
        self.programmed_groups: Mapping[str, Mapping[int, GroupModel]] = faults.programmed_groups
        self.detours, self._rewrite_groups = detours, faults.rewrite_groups

    def run(self, report: ReconcileReport) -> None:
        """Learn the down links and detours from every switch into ``report``, then bring
        every switch's groups and every leaf's detours to them."""
        for sw, conn in sorted(self.tables.connections.items()):
            try:
                info = conn.p4info if conn.p4info is not None else conn.fetch_pipeline()
                groups = {m["meta.ecmp_group_id"]: p for m, _, p in _entries(conn, info, T_GROUPS)}
                members = {m["meta.ecmp_member"]: p.get("nexthop_id")
                           for m, _, p in _entries(conn, info, T_MEMBERS)}
                routes = ([(m, a, p) for m, a, p in _entries(conn, info, T_ROUTES)
                           if a == A_ROUTE_GROUP and p.get("group_id") != LEAF_UPLINK_GROUP]
                          if self.engine.fabric.switch(sw).role == "leaf" else [])
            except Exception as exc:  # noqa: BLE001 — a switch that does not answer
                self._out.error(f"{sw}: link reconciliation read failed: {type(exc).__name__}: {exc}")
                if sw not in report.failed_switches:
                    report.failed_switches.append(sw)
                continue
            for gid, planned in sorted(self.programmed_groups.get(sw, {}).items()):
                g = groups.get(gid)
                if g is None:
                    continue                       # an empty switch: the recovery's job
                live = {members.get(planned.base + i) for i in range(g.get("size", 0))}
                for m in planned.members:
                    port = self.engine.member_port(sw, m)
                    if port not in live and self.links.is_up((sw, port)):
                        self.links.link_down(sw, port)
                        report.down_links.append(f"{sw}:{port}")
            adopted = self._read_detours(sw, routes, groups, members)
            if adopted:
                self.detours.adopt(sw, adopted)
                report.adopted_detours += sum(len(d.prefixes) for d in adopted.values())
        for sw in sorted(self.tables.connections):
            self._rewrite_groups(sw)
        self.detours.sync()

    def _read_detours(self, leaf: str, routes: list[tuple[dict[str, Any], str, dict[str, int]]],
                      groups: Mapping[int, Mapping[str, int]],
                      members: Mapping[int, Optional[int]]) -> dict[int, Detour]:
        """The predecessor's detours of ``leaf`` from its routes, groups and members."""
        prefixes: dict[int, list[str]] = {}
        for match, _, params in routes:
            prefixes.setdefault(params["group_id"], []).append(str(match.get("hdr.ipv4.dst_addr")))
        out: dict[int, Detour] = {}
        sw = self.engine.fabric.switch(leaf)
        for gid, nets in sorted(prefixes.items()):
            g = groups.get(gid)
            ports = [members.get(g["base"] + i) for i in range(g.get("size", 0))] if g else []
            if not ports or any(p is None or p not in sw.ports for p in ports):
                self._out.error(f"{leaf}: route to group {gid} without a valid group: left as it is")
                continue
            out[gid] = Detour(link_group(sw, gid, g["base"], [int(p) for p in ports if p is not None]),
                              tuple(sorted(nets)))
        return out


__all__ = ["LinkReconciler"]
