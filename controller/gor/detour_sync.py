"""Leaves' detour groups follow the links GOR has taken down (mixed into
:class:`controller.gor.loop.GorLoop`).

Rewriting the ECMP groups at the two ends of a dead cable (:mod:`controller.gor.faults`)
is not enough when the spine end had no other link to that leaf: every other leaf still
hashes part of the leaf's traffic onto that spine, which can only drop it. After each
link event :meth:`DetourSync._sync_detours` computes the detours of the fabric with the
links that are down now (:func:`controller.fabric.detours.fabric_detours`) and brings
every leaf's switch to them, in an order that never points a route at a missing group:

1. member entries, then the group entry, of each new or changed detour group;
2. routes of the destination prefixes to their group (insert, or modify);
3. routes no detour needs any more are deleted (the prefix falls back to
   ``10.0.0.0/8`` → the uplink group);
4. groups no route uses any more are deleted, then their member entries that no group
   references.

The engine's hash model gets the same groups and routes (``SwitchHashModel.routes``), so
GOR's and TCCL's predictions and source ports follow at once. A switch that does not
answer keeps its old detours in GOR's record and is tried again at the next link event
or restore (``detours_pending``); the decision log's ``link_down`` / ``link_up`` record
lists the detours written (``detours``).

    >>> loop.link_down("b0r0l0", 4)                        # doctest: +SKIP
    ['b0r0l0/1: s0', 's1/...']
    >>> loop.detours["b1r0l0"][2].group.members            # doctest: +SKIP
    ('s0',)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional

from controller.fabric.detours import Detour, fabric_detours, leaf_prefixes
from controller.fabric.entries import T_GROUPS, T_MEMBERS, T_ROUTES
from controller.gor.linkstate import LinkState
from controller.gor.paths import PathEngine
from controller.gor.tables import is_not_found
from p4src.hashmodel import GroupModel, RouteModel

A_ROUTE = "FabricIngress.forwarding.set_ecmp_group"
A_GROUP = "FabricIngress.ecmp.select_member"
A_MEMBER = "FabricIngress.ecmp.set_nexthop"
ROUTE_KEY = "hdr.ipv4.dst_addr"


def _same(a: Mapping[int, Detour], b: Mapping[int, Detour]) -> bool:
    """Equal detours: the same groups and, per group, the same prefixes in any order."""
    return ({g: (d.group, frozenset(d.prefixes)) for g, d in a.items()}
            == {g: (d.group, frozenset(d.prefixes)) for g, d in b.items()})


class DetourSync:
    """Detour groups of the leaves, kept in step with the down links."""

    links: LinkState
    engine: PathEngine
    detours: dict[str, dict[int, Detour]]
    detours_pending: set[str]
    _leaf_prefixes: Optional[dict[str, tuple[str, ...]]] = None

    if TYPE_CHECKING:  # provided by the other parts of GorLoop (stubs here would shadow them)
        def _error(self, msg: str) -> None: ...
        def _conn(self, switch: str) -> Any: ...
        def _write(self, switch: str, table: str, match: Mapping[str, Any], action: str,
                   params: Mapping[str, Any]) -> None: ...

    def _sync_detours(self, only: Optional[str] = None) -> list[str]:
        """Bring every leaf's detours (or only those of ``only``) to the down links now;
        returns what changed (``"b1r0l0: 10.0.0.0/24 -> s0"``)."""
        if self._leaf_prefixes is None:
            self._leaf_prefixes = leaf_prefixes(self.engine.fabric)   # once: it reads every NIC
        want = fabric_detours(self.engine.fabric, frozenset(self.links.down), self._leaf_prefixes)
        done: list[str] = []
        for leaf in sorted(set(want) | set(self.detours) | self.detours_pending):
            if only is not None and leaf != only:
                continue
            new, old = want.get(leaf, {}), self.detours.get(leaf, {})
            if _same(new, old) and leaf not in self.detours_pending:
                continue
            try:
                self._write_detours(leaf, old, new)
            except Exception as exc:  # noqa: BLE001 — a switch that does not answer
                self._error(f"{leaf}: detours not written: {type(exc).__name__}: {exc}")
                self.detours_pending.add(leaf)
                continue
            self.detours_pending.discard(leaf)
            if new:
                self.detours[leaf] = new
            else:
                self.detours.pop(leaf, None)
            self._model_detours(leaf, old, new)
            done.append(f"{leaf}: " + ("; ".join(
                f"{','.join(d.prefixes)} -> {','.join(d.group.members)}" for d in new.values())
                or "none"))
        return done

    def _write_detours(self, leaf: str, old: Mapping[int, Detour],
                       new: Mapping[int, Detour]) -> None:
        force = leaf in self.detours_pending       # state on the switch unknown: rewrite all
        for gid, d in sorted(new.items()):
            if force or old.get(gid) is None or old[gid].group != d.group:
                for i, port in enumerate(d.group.ports):
                    self._write(leaf, T_MEMBERS, {"meta.ecmp_member": d.group.base + i},
                                A_MEMBER, {"nexthop_id": port})
                self._write(leaf, T_GROUPS, {"meta.ecmp_group_id": gid}, A_GROUP,
                            {"base": d.group.base, "size": d.group.size})
        new_routes = {p: gid for gid, d in new.items() for p in d.prefixes}
        old_routes = {p: gid for gid, d in old.items() for p in d.prefixes}
        for prefix, gid in sorted(new_routes.items()):
            if force or old_routes.get(prefix) != gid:
                self._write(leaf, T_ROUTES, {ROUTE_KEY: prefix}, A_ROUTE, {"group_id": gid})
        for prefix in sorted(old_routes.keys() - new_routes.keys()):
            self._delete_entry(leaf, T_ROUTES, {ROUTE_KEY: prefix})
        for gid in sorted(old.keys() - new.keys()):
            self._delete_entry(leaf, T_GROUPS, {"meta.ecmp_group_id": gid})
        used = {i for g in self._groups_after(leaf, old, new).values()
                for i in range(g.base, g.base + g.size)}
        for d in old.values():
            for i in range(d.group.base, d.group.base + d.group.size):
                if i not in used:
                    self._delete_entry(leaf, T_MEMBERS, {"meta.ecmp_member": i})

    def _groups_after(self, leaf: str, old: Mapping[int, Detour],
                      new: Mapping[int, Detour]) -> dict[int, GroupModel]:
        model = self.engine.hash_model.switches[leaf]
        groups = {gid: g for gid, g in model.groups.items() if gid not in old}
        groups.update({gid: GroupModel(d.group.base, d.group.members) for gid, d in new.items()})
        return groups

    def _model_detours(self, leaf: str, old: Mapping[int, Detour],
                       new: Mapping[int, Detour]) -> None:
        model = self.engine.hash_model.switches[leaf]
        model.groups = self._groups_after(leaf, old, new)
        model.routes = tuple(RouteModel(p, gid) for gid, d in sorted(new.items())
                             for p in d.prefixes)

    def _delete_entry(self, switch: str, table: str, match: Mapping[str, Any]) -> None:
        """DELETE an entry; one that is not there is fine."""
        conn = self._conn(switch)
        try:
            conn.delete(conn.table_entry(table, match))
        except Exception as exc:  # noqa: BLE001
            if not is_not_found(exc):
                raise


__all__ = ["DetourSync"]
