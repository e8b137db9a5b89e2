"""P4Runtime entities ↔ the runtime state of a loaded program: what a ``Write`` update
does to ``program.state`` and what a ``Read`` returns.

:class:`EntityStore` is the only object the P4Runtime server needs for Write and Read.
``write(update)`` applies one INSERT/MODIFY/DELETE or raises
:class:`p4sim.runtime.errors.RuntimeStateError` with the state unchanged, and returns an
undo closure that reverts it exactly (a batch that must be all-or-nothing runs the
undos of its applied updates in reverse order). ``read(entity)`` validates the request
and returns the matching entities, wildcards as the spec defines them per entity kind.

The work is split by entity kind: ``entities_tables`` (table entries, direct counters
and meters), ``entities_profiles`` (action profile members and groups, one-shot
selector entries), ``entities_externs`` (counters, meters, registers, multicast groups,
clone sessions, digests); ``entities_index`` maps P4Info ids to runtime objects.

By default the store answers as BMv2's P4Runtime server (simple_switch_grpc + PI) does,
code for code (the measured table and the decisions are in p4sim/README.md, "P4Runtime
conformance"): register reads and writes, wildcard counter/meter writes, clone-session
truncation, wildcard digest / direct-resource / PRE reads, member and group reads of a
one-shot selector and ``is_const`` in reads are refused or left out as BMv2 does.
``extras=True`` (``python -m p4sim switch --p4runtime-extras``) turns them back on.
Value sets are not served (``UNIMPLEMENTED``, as BMv2).

Example::

    >>> from p4sim.engine.program import load_program_text           # doctest: +SKIP
    >>> from p4sim.p4info import build_p4info                         # doctest: +SKIP
    >>> prog = load_program_text(SOURCE); store = EntityStore(prog, build_p4info(prog))  # doctest: +SKIP
    >>> undo = store.write(update)          # raises RuntimeStateError on failure  # doctest: +SKIP
    >>> entries = list(store.read(p4runtime_pb2.Entity(table_entry={})))          # doctest: +SKIP
    >>> undo()                              # the write is reverted                 # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Sequence

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.entities_externs import ExternStore
from p4sim.p4runtime.entities_index import ProgramIndex
from p4sim.p4runtime.entities_profiles import ProfileStore
from p4sim.p4runtime.entities_tables import TableStore
from p4sim.p4runtime.entities_values import AddWire, NewEntity, fail
from p4sim.p4runtime.wirewrites import WireEntry

_WRITE_TYPES = frozenset((pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE))

Undo = Callable[[], None]


class EntityStore:
    """P4Runtime Write/Read on one program's runtime state.

    ``clock_ns`` (optional) gives the switch's current time in the same base as table
    entries' ``last_hit_ns`` (the v1model driver's clock in µs × 1000); it is only used
    to answer ``time_since_last_hit`` and to stamp new entries for idle timeouts.
    ``extras`` enables what BMv2 lacks (see the module docstring). ``fast=False`` turns
    off the per-table write plans (:mod:`.entities_fast`), which give the same answers
    and state faster; the tests that pin that equivalence use it.
    """

    def __init__(self, program: Any, p4info: p4info_pb2.P4Info,
                 clock_ns: Optional[Callable[[], int]] = None, extras: bool = False,
                 fast: bool = True) -> None:
        self.program = program
        self.extras = extras
        self.index = ProgramIndex(program, p4info)
        self.profiles = ProfileStore(self.index, extras)
        self.tables = TableStore(self.index, self.profiles, clock_ns, extras, fast)
        self.externs = ExternStore(self.index, program.state, extras)
        t, p, x = self.tables, self.profiles, self.externs
        self._write_table = t.write
        self._writers: dict[str, Callable[[int, Any], Undo]] = {
            "table_entry": t.write,
            "action_profile_member": p.write_member,
            "action_profile_group": p.write_group,
            "counter_entry": x.write_counter,
            "direct_counter_entry": t.write_direct_counter,
            "meter_entry": x.write_meter,
            "direct_meter_entry": t.write_direct_meter,
            "register_entry": x.write_register,
            "packet_replication_engine_entry": x.write_pre,
            "digest_entry": x.write_digest,
        }
        self._readers: dict[str, Callable[[Any], Iterator[pb.Entity]]] = {
            "table_entry": t.read,
            "action_profile_member": p.read_members,
            "action_profile_group": p.read_groups,
            "counter_entry": x.read_counters,
            "direct_counter_entry": t.read_direct_counters,
            "meter_entry": x.read_meters,
            "direct_meter_entry": t.read_direct_meters,
            "register_entry": x.read_registers,
            "packet_replication_engine_entry": x.read_pre,
            "digest_entry": x.read_digests,
        }

    @staticmethod
    def _kind(entity: pb.Entity, read: bool) -> str:
        kind = entity.WhichOneof("entity")
        if kind is None:
            fail("UNKNOWN", "Incorrect entity type: the entity is empty")
        if kind == "extern_entry":
            if read:
                fail("UNKNOWN", "Incorrect entity type: extern entries are not supported by v1model")
            fail("UNIMPLEMENTED", "extern entries are not supported by v1model")
        if kind == "value_set_entry":
            verb = "reads" if read else "writes"
            fail("UNIMPLEMENTED", f"ValueSet {verb} are not supported yet (as in BMv2)")
        return kind

    def write(self, update: pb.Update) -> Undo:
        """Apply one update; raise ``RuntimeStateError`` (state unchanged) or return its undo."""
        utype = update.type
        if utype not in _WRITE_TYPES:
            # an enum number proto3 keeps but the proto does not name (found by fuzz/)
            name = pb.Update.Type.Name(utype) if utype in pb.Update.Type.values() else str(utype)
            fail("INVALID_ARGUMENT", f"update type {name} is not a write")
        entity = update.entity
        if entity.WhichOneof("entity") == "table_entry":      # most writes: no more lookups
            return self._write_table(utype, entity.table_entry)
        kind = self._kind(entity, read=False)
        return self._writers[kind](utype, getattr(entity, kind))

    def write_run(self, updates: Sequence[pb.Update], start: int, stop: int,
                  wire: Optional[Sequence[Optional[WireEntry]]] = None) -> int:
        """Apply updates from ``start`` while each is one the fast path applies without an
        undo (a planned table-entry INSERT, MODIFY or DELETE: :meth:`TableStore.write_run`), for a
        CONTINUE_ON_ERROR batch; return the index of the first update not applied, which
        the caller gives to :meth:`write` (it applies it, or raises with its code and the
        state unchanged). Applying ``updates[i]`` here or with :meth:`write` leaves the
        same state. ``wire``: the request's updates read from its bytes
        (:func:`~p4sim.p4runtime.wirewrites.parse_updates`), None where not.

        >>> i = store.write_run(updates, 0, len(updates))     # doctest: +SKIP
        """
        return self.tables.write_run(updates, start, stop, wire)

    def wire_updates(self, request: pb.WriteRequest,
                     data: Optional[bytes] = None) -> Optional[list[Optional[WireEntry]]]:
        """The ``wire`` argument of :meth:`write_run` for ``request``, parsed from ``data``
        when given (:meth:`TableStore.wire_updates`)."""
        return self.tables.wire_updates(request, data)

    def split_write(self, data: bytes) -> Optional[tuple[pb.WriteRequest, Sequence[pb.Update], list[WireEntry]]]:
        """The WriteRequest ``data`` split when every update is read from its bytes
        (:meth:`TableStore.split_write`), else None."""
        return self.tables.split_write(data)

    def read_counter_runs(self, runs: Sequence[Sequence[pb.CounterEntry]], add_wire: AddWire) -> None:
        """Runs of indexed cells of counters, consecutive in a Read, encoded at once
        (:meth:`ExternStore.read_counter_runs_wire`; the server's ``counter_run`` finds them)."""
        self.externs.read_counter_runs_wire(runs, add_wire)

    def read(self, entity: pb.Entity, new_entity: NewEntity = pb.Entity,
             add_wire: Optional[AddWire] = None) -> Iterator[pb.Entity]:
        """Entities matching ``entity`` (wildcards per kind), each made by ``new_entity``
        (the server passes its response's ``entities.add``). The request is validated and
        the answer collected before this returns, so errors are raised here. With
        ``add_wire``, counter entries go to it already encoded (:mod:`.wirecounters`) and
        are not in the iterator."""
        kind = self._kind(entity, read=True)
        if add_wire is not None and kind == "counter_entry":
            self.externs.read_counters_wire(entity.counter_entry, add_wire)
            return iter(())
        return iter(list(self._readers[kind](getattr(entity, kind), new_entity)))
