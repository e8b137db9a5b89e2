"""Restart reconciliation: a GOR that starts over a running fabric reads back the override
and sampling entries its predecessor wrote, and adopts or deletes each, so that no stale
entry stays in a switch forever.

:meth:`Reconciliation.reconcile` (``GorLoop.reconcile``; ``python -m controller run`` calls
it once before the first tick) does, for every switch, a
P4Runtime Read of ``FabricIngress.override.flows`` and ``FabricIngress.sampling.config``
(wildcard reads, ``SwitchConnection.read_table``):

* **Override entries**, grouped by 5-tuple over all switches. A flow's set is *adopted*
  when its two NICs are known and it is exactly the set :meth:`PathEngine.override_entries`
  writes for one live leaf → spine → leaf path between them (the path is recorded in
  ``overrides``, as for an override this GOR wrote, and the flow is left alone for
  ``cooldown_s`` like a fresh move). Otherwise every entry of the flow is *deleted* (an
  unknown host, a path through a link that is down, a partial set, another action): the
  flow goes back to ECMP and is re-planned if its link is hot.
* **Sampling entries** ``egress_spec = port → sample(one_in_n)`` on a fabric link that is
  up are *adopted* for a grace period of ``max(window_s, 1 s)``: after it, the entry is
  removed unless the link has an alarm, a follow-up round, a move or a probe that needs
  it (the same rule as for sampling this GOR turned on: :meth:`Reconciliation.expire_adopted`,
  each tick). Any other entry (a port that is
  not a fabric link, a link that is down, ``sample_to_cpu``, ``one_in_n = 0``) is deleted.

Before those, the links the predecessor took down and its detours are read back from the
ECMP groups and routes (the ``reconcile_links`` callback:
:meth:`controller.gor.reconcile_links.LinkReconciler.run`), so an override through a link
that is down is deleted and the path engine plans on the fabric as it is.

:class:`Reconciliation` is owned by :class:`controller.gor.loop.GorLoop` and built from the
loop's :class:`~controller.gor.shared.LoopState` (of which it uses the switch tables it reads
and deletes through, the path engine, the ``LinkState``, the ``MoveBook`` it records adopted
overrides in, the NIC → leaf map and the outputs), the
:class:`~controller.gor.sampling.Sampling` it adopts entries into, ``reconcile_links`` and the
settings (``cooldown_s``, ``window_s``). It holds the adopted sampling entries' grace (link → until).

A switch that does not answer is logged and skipped. The decision log gets one
``reconciled`` record with what was adopted and deleted (``down_links``,
``adopted_detours`` too).

Example::

    >>> report = loop.reconciliation.reconcile(t_s=0.0)       # doctest: +SKIP
    >>> report.adopted_overrides, report.deleted_sampling     # doctest: +SKIP
    (1, 2)
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from controller.gor.decisions import FlowKey, LinkKey, OverrideEntry, PathChoice
from controller.gor.orders import OVERRIDE_ACTION, OVERRIDE_TABLE
from controller.gor.sampling import Sampling
from controller.gor.shared import LoopSettings, LoopState
from controller.gor.tables import SAMPLING_ACTION, SAMPLING_KEY, SAMPLING_TABLE
from controller.p4rt.codec import decode


@dataclass(frozen=True, slots=True)
class ReadEntry:
    """One table entry read back: its table, match fields and action as names and integers,
    and the entry itself (to delete it as read).

    >>> ReadEntry("b0r0l0", "t", {"k": 1}, "a", {"p": 2}, None).params["p"]
    2
    """

    switch: str
    table: str
    match: dict[str, int]
    action: str
    params: dict[str, int]
    entry: Any


@dataclass(slots=True)
class ReconcileReport:
    """What :meth:`Reconciliation.reconcile` did, over all switches.

    >>> ReconcileReport().adopted_overrides
    0
    """

    adopted_overrides: int = 0
    deleted_overrides: int = 0
    adopted_sampling: int = 0
    deleted_sampling: int = 0
    failed_switches: list[str] = field(default_factory=list)
    down_links: list[str] = field(default_factory=list)   # "switch:port" the predecessor took down
    adopted_detours: int = 0                                # detour routes adopted


def decode_entry(switch: str, info: Any, te: Any) -> ReadEntry:
    """A P4Runtime ``TableEntry`` as a :class:`ReadEntry` (exact match fields only, which
    is all the two tables have), with the switch's ``P4InfoHelper`` ``info``."""
    table = info.get_name("table", te.table_id)
    match = {info.match_field(table, m.field_id).name: decode(m.exact.value) for m in te.match}
    act = te.action.action
    action = info.get_name("action", act.action_id) if act.action_id else ""
    params = {info.action_param(act.action_id, p.param_id).name: decode(p.value)
              for p in act.params} if act.action_id else {}
    return ReadEntry(switch, table, match, action, params, te)


def override_flow(match: Mapping[str, int]) -> FlowKey:
    """The 5-tuple of an override entry's match (inverse of ``override_match``).

    >>> override_flow({"hdr.ipv4.src_addr": 167772161, "hdr.ipv4.dst_addr": 167837697,
    ...                "hdr.ipv4.protocol": 17, "hdr.udp.src_port": 49152, "hdr.udp.dst_port": 4791})
    FlowKey(src='10.0.0.1', dst='10.1.0.1', proto=17, sport=49152, dport=4791)
    """
    return FlowKey(str(ipaddress.IPv4Address(match["hdr.ipv4.src_addr"])),
                   str(ipaddress.IPv4Address(match["hdr.ipv4.dst_addr"])),
                   match["hdr.ipv4.protocol"], match["hdr.udp.src_port"], match["hdr.udp.dst_port"])


class Reconciliation:
    """Read-back of a predecessor's entries (see the module docstring). ``cooldown_s``: how
    long an adopted override's flow is left alone; an adopted sampling entry's grace is
    ``max(window_s, 1 s)``."""

    def __init__(self, state: LoopState, sampling: Sampling,
                 reconcile_links: Callable[[ReconcileReport], None], settings: LoopSettings) -> None:
        self.tables, self.engine, self.links, self.sampling = state.tables, state.engine, state.links, sampling
        self.book, self.leaf_of, self._out = state.book, state.leaf_of, state.out
        self._reconcile_links, self.settings = reconcile_links, settings
        self.adopted_sampling: dict[LinkKey, float] = {}   # reconciled entries: link → until

    def reconcile(self, t_s: float = 0.0) -> ReconcileReport:
        """Adopt or delete every override and sampling entry found in the switches (see
        the module docstring); call once at start, before the first tick."""
        report = ReconcileReport()
        self._reconcile_links(report)          # down links first: overrides through them go
        overrides: dict[FlowKey, list[ReadEntry]] = {}
        for sw, conn in sorted(self.tables.connections.items()):
            try:
                info = conn.p4info if conn.p4info is not None else conn.fetch_pipeline()
                for te in conn.read_table(OVERRIDE_TABLE):
                    e = decode_entry(sw, info, te)
                    try:
                        overrides.setdefault(override_flow(e.match), []).append(e)
                    except (KeyError, ValueError):
                        self._delete(e, report, "override")
                sampling = [decode_entry(sw, info, te) for te in conn.read_table(SAMPLING_TABLE)]
            except Exception as exc:  # noqa: BLE001 — a switch that does not answer
                self._out.error(f"{sw}: reconciliation read failed: {type(exc).__name__}: {exc}")
                if sw not in report.failed_switches:
                    report.failed_switches.append(sw)
                continue
            for e in sampling:
                if self._adopt_sampling(e, t_s):
                    report.adopted_sampling += 1
                else:
                    self._delete(e, report, "sampling")
        records: list[dict[str, Any]] = []
        for flow, entries in sorted(overrides.items(), key=lambda kv: str(kv[0])):
            path = self._override_path(flow, entries)
            if path is not None:
                self.book.overrides[flow] = path
                self.book.rest(flow, t_s + self.settings.cooldown_s)
                report.adopted_overrides += len(entries)
            else:
                for e in entries:
                    self._delete(e, report, "override")
            records.append({"flow": str(flow), "adopted": path is not None,
                            "entries": [f"{e.switch}:{e.params.get('nexthop_id')}" for e in entries]})
        if self._out.decision_log is not None:
            self._out.decision_log.record(
                "reconciled", adopted_overrides=report.adopted_overrides,
                deleted_overrides=report.deleted_overrides,
                adopted_sampling=report.adopted_sampling, deleted_sampling=report.deleted_sampling,
                sampling=sorted(f"{s}:{p}" for s, p in self.adopted_sampling),
                overrides=records, down_links=report.down_links,
                adopted_detours=report.adopted_detours, failed=report.failed_switches)
        return report

    def _override_path(self, flow: FlowKey, entries: list[ReadEntry]) -> Optional[PathChoice]:
        """The live path whose override entries are exactly ``entries``, else None."""
        if any(e.action != OVERRIDE_ACTION or "nexthop_id" not in e.params for e in entries):
            return None
        src, dst = self.leaf_of.get(flow.src), self.leaf_of.get(flow.dst)
        if src is None or dst is None or src == dst:
            return None
        found = {OverrideEntry(e.switch, e.params["nexthop_id"]) for e in entries}
        if len(found) != len(entries):
            return None
        for end in dict.fromkeys((dst, *self.engine.port_leaves_of(flow.dst))):
            if end == src:
                continue
            for path in self.engine.candidate_paths(src, end):
                if set(self.engine.override_entries(path, flow.dst)) == found:
                    return path
        return None

    def _adopt_sampling(self, e: ReadEntry, t_s: float) -> bool:
        port = e.match.get(SAMPLING_KEY)
        one_in_n = e.params.get("one_in_n", 0)
        link = (e.switch, port) if port is not None else None
        if (link is None or e.action != SAMPLING_ACTION or one_in_n <= 0
                or link not in self.links.capacity_bps or not self.links.is_up(link)):
            return False
        self.sampling.adopt(link, one_in_n, t_s)
        self.adopted_sampling[link] = t_s + max(self.settings.window_s, 1.0)
        return True

    def _delete(self, e: ReadEntry, report: ReconcileReport, kind: str) -> None:
        try:
            self.tables.connections[e.switch].delete(e.entry)
        except Exception as exc:  # noqa: BLE001
            self._out.error(f"{e.switch}: stale {kind} entry {e.match} not deleted: {exc}")
            return
        if kind == "override":
            report.deleted_overrides += 1
        else:
            report.deleted_sampling += 1

    def expire_adopted(self, t_s: float) -> None:
        """End the grace of adopted sampling entries (each tick)."""
        for link, until in list(self.adopted_sampling.items()):
            if t_s >= until:
                del self.adopted_sampling[link]
                self.sampling.release(link)


__all__ = ["ReadEntry", "ReconcileReport", "Reconciliation", "decode_entry", "override_flow"]
