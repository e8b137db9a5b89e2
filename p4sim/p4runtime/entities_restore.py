"""Exact undo of deletions in runtime objects, for the undo closures of
:class:`p4sim.p4runtime.entities.EntityStore`.

Re-inserting a deleted table entry or action profile member through the public API
would give it the lowest *free* handle, which is not always the handle it had, and
handles decide BMv2 behaviour (tie-breaks between equal-priority entries, the member an
action selector picks). These helpers put the very same object back with its handle,
its counters and its meter state. They reach into the runtime classes' private fields;
they are kept here, in one place, until the runtime offers ``restore_*`` methods.

Example::

    >>> from p4sim.runtime import Table, KeyField, ActionSpec, ActionCall, Exact
    >>> t = Table("t", [KeyField("k", "exact", 8)], [ActionSpec("a")])
    >>> e0 = t.add_entry([Exact(1)], ActionCall("a")); e1 = t.add_entry([Exact(2)], ActionCall("a"))
    >>> _ = t.delete_entry([Exact(2)]); _ = t.delete_entry([Exact(1)])
    >>> restore_table_entry(t, e1); t.get_entry([Exact(2)]).handle
    1
"""
from __future__ import annotations

import copy
import heapq
from typing import Any, Callable

from p4sim.runtime.action_profile import ActionProfile, Group, Member
from p4sim.runtime.tables import Table, TableEntryState


def restore_table_entry(table: Table, entry: TableEntryState) -> None:
    """Put back an entry removed by ``delete_entry``, with its original handle."""
    h = entry.handle
    free = table._free_handles
    if h in free:
        free.remove(h)
        heapq.heapify(free)
    elif h >= table._next_handle:
        for x in range(table._next_handle, h):
            heapq.heappush(free, x)
        table._next_handle = h + 1
    if table.implementation is not None:
        table.implementation.add_ref(entry.action)
    entry._result = table._result_for(entry)      # Table._remove clears it
    table._entries[h] = entry
    table._by_ident[entry._ident] = entry
    table._index_add(entry)


def restore_member(profile: ActionProfile, member: Member) -> None:
    """Put back a member removed by ``delete_member`` (same object, same handle)."""
    profile.members[member.member_id] = member
    profile._member_refs[member.member_id] = 0
    profile._member_handles.add(member.handle)
    profile.version += 1


def restore_group(profile: ActionProfile, group: Group) -> None:
    """Put back a group removed by ``delete_group`` (its members must exist)."""
    profile.groups[group.group_id] = group
    profile._group_refs[group.group_id] = 0
    profile._group_handles.add(group.handle)
    for m in group.member_ids:
        profile._member_refs[m] += 1
    profile.version += 1


def meter_cells(meter_array: Any) -> dict[int, Any]:
    """The configured cells of a ``MeterArray`` (index → cell object), a snapshot."""
    return dict(meter_array._cells)


def restore_meter_cells(meter_array: Any, cells: dict[int, Any]) -> None:
    """Undo of ``set_config`` / ``reset_config``: the snapshot's cell objects come back."""
    meter_array._cells.clear()
    meter_array._cells.update(cells)


def snapshot(obj: Any) -> Callable[[], None]:
    """A closure that puts ``obj``'s attributes back as they are now (deep copy).

    For small objects whose every change is worth undoing wholesale (the packet
    replication engine, the digest queue).
    """
    saved = copy.deepcopy(obj.__dict__)

    def undo() -> None:
        obj.__dict__.clear()
        obj.__dict__.update(saved)
    return undo
