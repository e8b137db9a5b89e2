"""P4Info ids → the runtime objects of a loaded program (used by
:mod:`p4sim.p4runtime.entities`).

P4Info names objects by fully qualified name, exactly as ``program.state`` does, so the
index is built by matching names; an id of the P4Info that the program does not have is
left out. An unknown id is ``INVALID_ARGUMENT`` ("Invalid P4 id", BMv2's code), except
for digests (``NOT_FOUND``, as BMv2). A match field or parameter whose ``type_name`` names
a ``@p4runtime_translation`` type of the program is marked, with the width the program
gives it (:mod:`p4sim.p4runtime.entities_translated` says what is done with it).

Example::

    >>> idx = ProgramIndex(program, build_p4info(program))        # doctest: +SKIP
    >>> idx.table(33554433).table.name                              # doctest: +SKIP
    'MyIngress.ipv4_lpm'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from p4.config.v1 import p4info_pb2 as P

from p4sim.p4info_newtypes import NewTypes
from p4sim.p4runtime.entities_values import fail

_MATCH_KINDS = {P.MatchField.EXACT: "exact", P.MatchField.LPM: "lpm", P.MatchField.TERNARY: "ternary",
                P.MatchField.RANGE: "range", P.MatchField.OPTIONAL: "optional"}
_SCOPES = {P.ActionRef.TABLE_AND_DEFAULT: "table_and_default", P.ActionRef.TABLE_ONLY: "table_only",
           P.ActionRef.DEFAULT_ONLY: "default_only"}


@dataclass(slots=True)
class MatchFieldInfo:
    """One control-plane match field: ``MatchFieldInfo(1, "hdr.eth.dst", 48, "exact", 0)``."""

    field_id: int
    name: str
    width: int
    kind: str
    pos: int          # position among the table's non-selector keys
    translated: bool = False   # a @p4runtime_translation type: ``width`` is the controller's
    program_width: int = 0     # the key's width in the program (BMv2's JSON)


@dataclass(slots=True)
class ActionInfo:
    """An action: ``params`` maps param id → (position, name, bitwidth)."""

    action_id: int
    name: str
    params: dict[int, tuple[int, str, int]] = field(default_factory=dict)
    translated: frozenset[int] = frozenset()   # ids of parameters of a translated type


@dataclass(slots=True)
class TableInfo:
    """A table: runtime object, match fields in key order, allowed actions (id → scope)."""

    table_id: int
    name: str
    table: Any
    fields: list[MatchFieldInfo]
    by_field_id: dict[int, MatchFieldInfo]
    action_scopes: dict[int, str]


@dataclass(slots=True)
class ProfileInfo:
    """An action profile / selector and the first table it implements (gives its actions)."""

    profile_id: int
    name: str
    profile: Any
    table: Optional[TableInfo]
    max_group_size: int = 0


@dataclass(slots=True)
class ExternInfo:
    """An indexed extern (counter, meter, register) or a digest (``obj`` is its name)."""

    extern_id: int
    name: str
    obj: Any


class ProgramIndex:
    """Every P4Runtime-visible object of ``program``, by P4Info id."""

    def __init__(self, program: Any, p4info: P.P4Info) -> None:
        state = program.state
        self.actions: dict[int, ActionInfo] = {}
        # type_name is the declared name (new_types is keyed by the @name): ask the program
        translated = NewTypes(getattr(program, "ast", None)).translated_names()
        for a in p4info.actions:
            self.actions[a.preamble.id] = ActionInfo(
                a.preamble.id, a.preamble.name,
                {p.id: (i, p.name, p.bitwidth) for i, p in enumerate(a.params)},
                frozenset(p.id for p in a.params if p.type_name.name in translated))
        self.action_id_by_name = {ai.name: ai.action_id for ai in self.actions.values()}
        self.tables: dict[int, TableInfo] = {}
        for t in p4info.tables:
            rt = state.tables.get(t.preamble.name)
            if rt is None:
                continue
            widths = [k.width for k in rt.keys if k.match_kind != "selector"]
            fields = [MatchFieldInfo(mf.id, mf.name, mf.bitwidth, _MATCH_KINDS.get(mf.match_type, "other"), i,
                                     mf.type_name.name in translated, widths[i] if i < len(widths) else mf.bitwidth)
                      for i, mf in enumerate(t.match_fields)]
            self.tables[t.preamble.id] = TableInfo(
                t.preamble.id, t.preamble.name, rt, fields, {f.field_id: f for f in fields},
                {ar.id: _SCOPES.get(ar.scope, "table_and_default") for ar in t.action_refs})
        self.table_by_name = {ti.name: ti for ti in self.tables.values()}
        self.profiles: dict[int, ProfileInfo] = {}
        for ap in p4info.action_profiles:
            obj = state.action_profiles.get(ap.preamble.name)
            if obj is None:
                continue
            owner = next((self.tables[i] for i in ap.table_ids if i in self.tables), None)
            self.profiles[ap.preamble.id] = ProfileInfo(ap.preamble.id, ap.preamble.name, obj, owner,
                                                        ap.max_group_size)
        self.profile_by_name = {pi.name: pi for pi in self.profiles.values()}
        self.counters = self._externs(p4info.counters, state.counters)
        self.meters = self._externs(p4info.meters, state.meters)
        self.registers = self._externs(p4info.registers, state.registers)
        self.digests = {d.preamble.id: ExternInfo(d.preamble.id, d.preamble.name, d.preamble.name)
                        for d in p4info.digests}
        self.direct_counters = {d.preamble.id: self.tables[d.direct_table_id]
                                for d in p4info.direct_counters if d.direct_table_id in self.tables}
        self.direct_meters = {d.preamble.id: self.tables[d.direct_table_id]
                              for d in p4info.direct_meters if d.direct_table_id in self.tables}

    @staticmethod
    def _externs(items: Any, objects: dict[str, Any]) -> dict[int, ExternInfo]:
        return {m.preamble.id: ExternInfo(m.preamble.id, m.preamble.name, objects[m.preamble.name])
                for m in items if m.preamble.name in objects}

    # ------------------------------------------------------------------ lookups (Invalid P4 id)
    def table(self, table_id: int) -> TableInfo:
        ti = self.tables.get(table_id)
        if ti is None:
            fail("INVALID_ARGUMENT", f"Invalid P4 id: no table with id {table_id}")
        return ti

    def profile(self, profile_id: int) -> ProfileInfo:
        pi = self.profiles.get(profile_id)
        if pi is None:
            fail("INVALID_ARGUMENT", f"Invalid P4 id: no action profile with id {profile_id}")
        return pi

    @staticmethod
    def extern(kind: str, objects: dict[int, ExternInfo], extern_id: int) -> ExternInfo:
        ei = objects.get(extern_id)
        if ei is None:
            if kind == "digest":
                fail("NOT_FOUND", f"{extern_id} is not a valid digest id")
            fail("INVALID_ARGUMENT", f"Invalid P4 id: no {kind} with id {extern_id}")
        return ei
