"""Leaves' detour groups follow the links GOR has taken down (:class:`DetourSync`, owned by
:class:`controller.gor.loop.GorLoop`, built from the loop's
:class:`~controller.gor.shared.LoopState`: the path engine, the ``LinkState``, the switch
tables it writes with and the outputs).

Rewriting the ECMP groups at the two ends of a dead cable (:mod:`controller.gor.faults`)
is not enough when the spine end had no other link to that leaf: every other leaf still
hashes part of the leaf's traffic onto that spine, which can only drop it. After each
link event :meth:`DetourSync.sync` computes the detours of the fabric with the
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
or restore (:attr:`DetourSync.pending`); the decision log's ``link_down`` / ``link_up`` record
lists the detours written (``detours``).

Public methods: :meth:`DetourSync.sync`, :meth:`DetourSync.adopt` (a predecessor's detours
read back at restart), :meth:`DetourSync.reinstall` (a restored switch); the detours in
force are :attr:`DetourSync.detours` (leaf → group id → ``Detour``), the leaves whose
switch did not answer :attr:`DetourSync.pending`.

    >>> loop.link_down("b0r0l0", 4)                        # doctest: +SKIP
    ['b0r0l0/1: s0', 's1/...']
    >>> loop.detour_sync.detours["b1r0l0"][2].group.members   # doctest: +SKIP
    ('s0',)
"""
from __future__ import annotations

from typing import Mapping, Optional

from controller.fabric.detours import Detour, fabric_detours, leaf_prefixes
from controller.fabric.entries import T_GROUPS, T_MEMBERS, T_ROUTES
from controller.gor.shared import LoopState
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
    """Detour groups of the leaves, kept in step with the down links (see the module
    docstring). It starts from ``installed``, the detours the fabric plan installed
    (``fabric_detours(fabric)``: leaf → group id → ``Detour``)."""

    def __init__(self, state: LoopState, installed: Mapping[str, Mapping[int, Detour]]) -> None:
        self.engine, self.links, self.tables, self._out = state.engine, state.links, state.tables, state.out
        self.detours: dict[str, dict[int, Detour]] = {n: dict(d) for n, d in installed.items()}
        self.pending: set[str] = set()           # leaves whose switch state is unknown
        self._leaf_prefixes: Optional[dict[str, tuple[str, ...]]] = None

    def adopt(self, leaf: str, detours: Mapping[int, Detour]) -> None:
        """Take ``detours`` found in ``leaf``'s switch (a predecessor's) as GOR's own, in
        the engine's hash model too."""
        self._model_detours(leaf, {}, detours)
        self.detours[leaf] = dict(detours)

    def reinstall(self, leaf: str) -> bool:
        """Write ``leaf``'s detours again, all of them (a restored switch: the plan it got
        has none); False when the switch did not take them (tried again later)."""
        if leaf not in self.detours and leaf not in self.pending:
            return True
        self.pending.add(leaf)
        self.sync(only=leaf)
        return leaf not in self.pending

    def sync(self, only: Optional[str] = None) -> list[str]:
        """Bring every leaf's detours (or only those of ``only``) to the down links now;
        returns what changed (``"b1r0l0: 10.0.0.0/24 -> s0"``)."""
        if self._leaf_prefixes is None:
            self._leaf_prefixes = leaf_prefixes(self.engine.fabric)   # once: it reads every NIC
        want = fabric_detours(self.engine.fabric, frozenset(self.links.down), self._leaf_prefixes)
        done: list[str] = []
        for leaf in sorted(set(want) | set(self.detours) | self.pending):
            if only is not None and leaf != only:
                continue
            new, old = want.get(leaf, {}), self.detours.get(leaf, {})
            if _same(new, old) and leaf not in self.pending:
                continue
            try:
                self._write_detours(leaf, old, new)
            except Exception as exc:  # noqa: BLE001 — a switch that does not answer
                self._out.error(f"{leaf}: detours not written: {type(exc).__name__}: {exc}")
                self.pending.add(leaf)
                continue
            self.pending.discard(leaf)
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
        force = leaf in self.pending       # state on the switch unknown: rewrite all
        for gid, d in sorted(new.items()):
            if force or old.get(gid) is None or old[gid].group != d.group:
                for i, port in enumerate(d.group.ports):
                    self.tables.write(leaf, T_MEMBERS, {"meta.ecmp_member": d.group.base + i},
                                      A_MEMBER, {"nexthop_id": port})
                self.tables.write(leaf, T_GROUPS, {"meta.ecmp_group_id": gid}, A_GROUP,
                                  {"base": d.group.base, "size": d.group.size})
        new_routes = {p: gid for gid, d in new.items() for p in d.prefixes}
        old_routes = {p: gid for gid, d in old.items() for p in d.prefixes}
        for prefix, gid in sorted(new_routes.items()):
            if force or old_routes.get(prefix) != gid:
                self.tables.write(leaf, T_ROUTES, {ROUTE_KEY: prefix}, A_ROUTE, {"group_id": gid})
        for prefix in sorted(old_routes.keys() - new_routes.keys()):
            self.tables.delete_if_present(leaf, T_ROUTES, {ROUTE_KEY: prefix})
        for gid in sorted(old.keys() - new.keys()):
            self.tables.delete_if_present(leaf, T_GROUPS, {"meta.ecmp_group_id": gid})
        used = {i for g in self._groups_after(leaf, old, new).values()
                for i in range(g.base, g.base + g.size)}
        for d in old.values():
            for i in range(d.group.base, d.group.base + d.group.size):
                if i not in used:
                    self.tables.delete_if_present(leaf, T_MEMBERS, {"meta.ecmp_member": i})

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


__all__ = ["DetourSync"]
