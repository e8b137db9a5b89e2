"""Action profiles and action selectors (v1model ``action_profile`` / ``action_selector``).

A profile holds *members* (``member_id`` → an action call) and, for a selector, *groups*
(``group_id`` → a set of member ids). Tables implemented by a profile hold
:class:`~p4sim.runtime.tables.MemberRef` / :class:`~p4sim.runtime.tables.GroupRef`
instead of actions.

BMv2 facts reproduced (``bm_sim/action_profile.cpp``):

* Every member gets a BMv2 *handle* at creation: the lowest free index. Handles are
  freed on deletion and reused, so creation order matters.
* A group is a set of member handles kept sorted. For a packet, the selector hashes the
  table's ``selector`` key fields (packed as for ``hash()``) with its algorithm, keeps
  the low 32 bits ``h`` and picks the ``(h % group_size)``-th smallest member handle.
  The selector's ``output_width`` is recorded but, as in BMv2, not applied.
* An empty group selects nothing: BMv2 logs an error and runs no action (the table
  lookup still counts as a hit); :meth:`ActionSelector.select` returns None.
* A member used by a group or a table entry, or a group used by a table entry, cannot
  be deleted (``FAILED_PRECONDITION``).

Member weights other than 1 are not supported (BMv2 groups are plain sets).

Example::

    >>> from p4sim.runtime.tables import ActionCall
    >>> sel = ActionSelector("MyIngress.ecmp_sel", size=16, algorithm="identity", output_width=14)
    >>> for mid, port in ((10, 1), (11, 2), (12, 3)):
    ...     _ = sel.insert_member(mid, ActionCall("MyIngress.set_port", (port,)))
    >>> sel.insert_group(1, [12, 10, 11])
    >>> sel.select(1, [(4, 8)]).action          # identity hash 4 → 4 % 3 = 1 → 2nd handle
    ActionCall(name='MyIngress.set_port', args=(2,))
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Optional, Sequence

from p4sim.runtime.errors import RuntimeStateError
from p4sim.runtime.hashes import HashFn, get_algorithm, pack_fields

if TYPE_CHECKING:
    from p4sim.runtime.tables import ActionCall, ActionSpec


@dataclass(slots=True)
class Member:
    """A profile member: P4Runtime ``member_id``, BMv2 handle and the action it runs."""

    member_id: int
    handle: int
    action: "ActionCall"


@dataclass(slots=True)
class Group:
    """A selector group: members in the order the control plane gave them.

    ``by_handle`` (the members sorted by BMv2 handle) is what selection indexes.
    """

    group_id: int
    handle: int
    member_ids: list[int] = field(default_factory=list)
    max_size: int = 0
    by_handle: list[Member] = field(default_factory=list)


def _lowest_free(used: set[int]) -> int:
    h = 0
    while h in used:
        h += 1
    return h


class ActionProfile:
    """v1model ``action_profile(size)``: members only.

    ``actions`` (name → :class:`~p4sim.runtime.tables.ActionSpec`) validates member
    actions; when None, the first table bound to the profile provides them.
    """

    has_selector = False

    def __init__(self, name: str, size: int = 0,
                 actions: Optional[Mapping[str, "ActionSpec"]] = None) -> None:
        self.name = name
        self.size = size
        self.actions: Optional[dict[str, "ActionSpec"]] = dict(actions) if actions else None
        self.members: dict[int, Member] = {}
        self.groups: dict[int, Group] = {}
        self._member_handles: set[int] = set()
        self._group_handles: set[int] = set()
        self._member_refs: dict[int, int] = {}   # member_id -> groups + entries using it
        self._group_refs: dict[int, int] = {}    # group_id -> entries using it
        #: bumped by every change of the members or groups (read by :mod:`p4sim.native`)
        self.version = 0

    # ------------------------------------------------------------------ members
    def _validate_action(self, action: "ActionCall") -> None:
        if self.actions is None:
            return
        from p4sim.runtime.tables import validate_action_call
        validate_action_call(self.actions, action, f"action profile {self.name}")

    def insert_member(self, member_id: int, action: "ActionCall") -> Member:
        """Add a member; its handle is the lowest free one."""
        if member_id in self.members:
            raise RuntimeStateError("ALREADY_EXISTS", f"{self.name}: member {member_id} already exists")
        self._validate_action(action)
        if self.size and len(self.members) >= self.size:
            raise RuntimeStateError("RESOURCE_EXHAUSTED", f"{self.name}: profile full ({self.size} members)")
        member = Member(member_id, _lowest_free(self._member_handles), action)
        self._member_handles.add(member.handle)
        self.members[member_id] = member
        self._member_refs[member_id] = 0
        self.version += 1
        return member

    def modify_member(self, member_id: int, action: "ActionCall") -> None:
        """Change a member's action (its handle, hence its place in groups, is kept)."""
        member = self._member(member_id)
        self._validate_action(action)
        member.action = action
        self.version += 1

    def delete_member(self, member_id: int) -> None:
        """Remove an unused member."""
        member = self._member(member_id)
        if self._member_refs[member_id]:
            raise RuntimeStateError("FAILED_PRECONDITION",
                                    f"{self.name}: member {member_id} is still used by a group or table entry")
        del self.members[member_id]
        del self._member_refs[member_id]
        self._member_handles.discard(member.handle)
        self.version += 1

    def _member(self, member_id: int) -> Member:
        member = self.members.get(member_id)
        if member is None:
            raise RuntimeStateError("NOT_FOUND", f"{self.name}: no member {member_id}")
        return member

    def get_member(self, member_id: int) -> Member:
        """The member (``NOT_FOUND`` if absent)."""
        return self._member(member_id)

    # ------------------------------------------------------------------ groups
    def insert_group(self, group_id: int, member_ids: Sequence[int] = (), max_size: int = 0) -> None:
        raise RuntimeStateError("INVALID_ARGUMENT", f"{self.name}: an action profile without selector has no groups")

    def modify_group(self, group_id: int, member_ids: Sequence[int]) -> None:
        raise RuntimeStateError("INVALID_ARGUMENT", f"{self.name}: an action profile without selector has no groups")

    def delete_group(self, group_id: int) -> None:
        raise RuntimeStateError("INVALID_ARGUMENT", f"{self.name}: an action profile without selector has no groups")

    # ------------------------------------------------------------------ references
    def check_ref(self, ref: object) -> None:
        """Raise unless ``ref`` (MemberRef / GroupRef) names something that exists."""
        from p4sim.runtime.tables import GroupRef, MemberRef
        if isinstance(ref, MemberRef):
            self._member(ref.member_id)
        elif isinstance(ref, GroupRef):
            if not self.has_selector:
                raise RuntimeStateError("INVALID_ARGUMENT", f"{self.name}: groups need an action selector")
            if ref.group_id not in self.groups:
                raise RuntimeStateError("NOT_FOUND", f"{self.name}: no group {ref.group_id}")
        else:
            raise RuntimeStateError("INVALID_ARGUMENT",
                                    f"{self.name}: a table with an implementation needs a member or group, not {ref!r}")

    def add_ref(self, ref: object) -> None:
        """Count one more table entry using ``ref`` (call after :meth:`check_ref`)."""
        from p4sim.runtime.tables import MemberRef
        if isinstance(ref, MemberRef):
            self._member_refs[ref.member_id] += 1
        else:
            self._group_refs[ref.group_id] += 1  # type: ignore[attr-defined]

    def drop_ref(self, ref: object) -> None:
        """Count one table entry less using ``ref``."""
        from p4sim.runtime.tables import MemberRef
        if isinstance(ref, MemberRef):
            self._member_refs[ref.member_id] -= 1
        else:
            self._group_refs[ref.group_id] -= 1  # type: ignore[attr-defined]


class ActionSelector(ActionProfile):
    """v1model ``action_selector(algorithm, size, output_width)``: members and groups.

    ``max_group_size`` (P4Info ``max_group_size``, 0 = unlimited) bounds every group.
    """

    has_selector = True

    def __init__(self, name: str, size: int = 0, algorithm: str = "crc16", output_width: int = 32,
                 max_group_size: int = 0, actions: Optional[Mapping[str, "ActionSpec"]] = None) -> None:
        super().__init__(name, size, actions)
        self.algorithm = algorithm
        self.output_width = output_width
        self.max_group_size = max_group_size
        self.hash_fn: HashFn = get_algorithm(algorithm)

    def _check_members(self, group_id: int, member_ids: Sequence[int], max_size: int) -> list[Member]:
        if len(set(member_ids)) != len(member_ids):
            raise RuntimeStateError("INVALID_ARGUMENT", f"{self.name}: group {group_id} lists a member twice")
        members = [self._member(m) for m in member_ids]
        limit = max_size or self.max_group_size
        if self.max_group_size and max_size > self.max_group_size:
            raise RuntimeStateError("INVALID_ARGUMENT",
                                    f"{self.name}: group max_size {max_size} exceeds {self.max_group_size}")
        if limit and len(members) > limit:
            raise RuntimeStateError("RESOURCE_EXHAUSTED",
                                    f"{self.name}: group {group_id} has {len(members)} members, max {limit}")
        return members

    def insert_group(self, group_id: int, member_ids: Sequence[int] = (), max_size: int = 0) -> None:
        """Create a group with the given members (all must exist)."""
        if group_id in self.groups:
            raise RuntimeStateError("ALREADY_EXISTS", f"{self.name}: group {group_id} already exists")
        if max_size < 0:
            raise RuntimeStateError("INVALID_ARGUMENT", f"{self.name}: negative group max_size")
        members = self._check_members(group_id, member_ids, max_size)
        group = Group(group_id, _lowest_free(self._group_handles), list(member_ids), max_size,
                      sorted(members, key=lambda m: m.handle))
        self._group_handles.add(group.handle)
        self.groups[group_id] = group
        self._group_refs[group_id] = 0
        for m in member_ids:
            self._member_refs[m] += 1
        self.version += 1

    def modify_group(self, group_id: int, member_ids: Sequence[int]) -> None:
        """Replace a group's members."""
        group = self._group(group_id)
        members = self._check_members(group_id, member_ids, group.max_size)
        for m in group.member_ids:
            self._member_refs[m] -= 1
        for m in member_ids:
            self._member_refs[m] += 1
        group.member_ids = list(member_ids)
        group.by_handle = sorted(members, key=lambda m: m.handle)
        self.version += 1

    def delete_group(self, group_id: int) -> None:
        """Remove a group no table entry uses (its members stay)."""
        group = self._group(group_id)
        if self._group_refs[group_id]:
            raise RuntimeStateError("FAILED_PRECONDITION", f"{self.name}: group {group_id} is still used by a table entry")
        for m in group.member_ids:
            self._member_refs[m] -= 1
        del self.groups[group_id]
        del self._group_refs[group_id]
        self._group_handles.discard(group.handle)
        self.version += 1

    def _group(self, group_id: int) -> Group:
        group = self.groups.get(group_id)
        if group is None:
            raise RuntimeStateError("NOT_FOUND", f"{self.name}: no group {group_id}")
        return group

    def get_group(self, group_id: int) -> Group:
        """The group (``NOT_FOUND`` if absent)."""
        return self._group(group_id)

    def selector_hash(self, selector_fields: Iterable[tuple[int, int]]) -> int:
        """The 32-bit hash BMv2 computes over the ``selector`` key fields ``(value, width)``."""
        return self.hash_fn(pack_fields(selector_fields)) & 0xFFFFFFFF

    def select(self, group_id: int, selector_fields: Iterable[tuple[int, int]]) -> Optional[Member]:
        """The member BMv2 would choose for a packet; None for an empty group."""
        members = self._group(group_id).by_handle
        if not members:
            return None
        return members[self.selector_hash(selector_fields) % len(members)]
