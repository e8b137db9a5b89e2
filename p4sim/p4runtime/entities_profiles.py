"""``ActionProfileMember`` / ``ActionProfileGroup`` entities and one-shot action selector
programming (``ActionProfileActionSet``), for :class:`p4sim.p4runtime.entities.EntityStore`.

One-shot entries are programmed as BMv2's PI does it: hidden members (one per action,
in the order given) and a hidden group are created in the selector, and the entry points
at the group. Hidden members and groups are not returned by member/group reads; the
table entry reads back with the original action set (spec: read-write symmetry). As the
spec demands, a selector is programmed either with one-shots or with members/groups,
never both (``INVALID_ARGUMENT``); as BMv2, member and group reads of a selector in
one-shot mode are refused too (``INVALID_ARGUMENT``) unless ``extras``.

As BMv2 (simple_switch_grpc + PI, measured): weights above 1 are accepted and read back
as written (the data plane selects among the group's members, each once); groups of an
action profile without selector are accepted and read back, but no table entry can use
them; deleting a member or group still in use is ``UNKNOWN`` ("Error when deleting …
on target"). Watch ports are ``UNIMPLEMENTED``.

Example::

    >>> store = ProfileStore(index)                                       # doctest: +SKIP
    >>> undo = store.write_member(pb.Update.INSERT, member_msg)           # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.entities_actions import decode_action, encode_action
from p4sim.p4runtime.entities_index import ProfileInfo, ProgramIndex, TableInfo
from p4sim.p4runtime.entities_restore import restore_group, restore_member
from p4sim.p4runtime.entities_values import NewEntity, fail
from p4sim.runtime.errors import RuntimeStateError
from p4sim.runtime.tables import ActionCall, GroupRef, MemberRef

Undo = Callable[[], None]


@dataclass(slots=True)
class OneShot:
    """The hidden group and members behind one one-shot table entry."""

    group_id: int
    member_ids: list[int]
    action_set: pb.ActionProfileActionSet


@dataclass(slots=True)
class _Hidden:
    members: set[int] = field(default_factory=set)
    groups: set[int] = field(default_factory=set)


def _lowest_unused(used: Iterable[int]) -> int:
    taken = set(used)
    i = 1
    while i in taken:
        i += 1
    return i


def _check_weight(weight: int, watch: str | None, what: str) -> None:
    if weight <= 0:
        fail("INVALID_ARGUMENT", f"Member weight must be a positive integer value: {what}: got {weight}")
    if watch:
        fail("UNIMPLEMENTED", f"{what}: watch ports are not supported")


class ProfileStore:
    """Members, groups and one-shot bookkeeping of every action profile of a program."""

    def __init__(self, index: ProgramIndex, extras: bool = False) -> None:
        self.index = index
        self.extras = extras
        self._hidden: dict[str, _Hidden] = {pi.name: _Hidden() for pi in index.profiles.values()}
        # (profile name, group id) -> {member id: weight} as written (read-back of weights)
        self._weights: dict[tuple[str, int], dict[int, int]] = {}
        # groups of profiles without selector (control-plane only, as BMv2 keeps them):
        # profile name -> group id -> (members with weights, max_size)
        self._plain: dict[str, dict[int, tuple[dict[int, int], int]]] = {
            pi.name: {} for pi in index.profiles.values()}

    # ------------------------------------------------------------------ modes
    def _oneshot_mode(self, pi: ProfileInfo) -> bool:
        return bool(self._hidden[pi.name].groups)

    def _manual_mode(self, pi: ProfileInfo) -> bool:
        h = self._hidden[pi.name]
        prof = pi.profile
        return any(m not in h.members for m in prof.members) or any(g not in h.groups for g in prof.groups)

    def check_manual_ref(self, ti: TableInfo) -> None:
        """A table entry names a member/group: refused while the selector is one-shot."""
        pi = self.index.profile_by_name.get(ti.table.implementation.name)
        if pi is not None and self._oneshot_mode(pi):
            fail("INVALID_ARGUMENT", f"{pi.name} is programmed with one-shot entries; "
                                     f"member and group references cannot be mixed in")

    def _profile_for_write(self, profile_id: int, groups: bool) -> ProfileInfo:
        pi = self.index.profile(profile_id)
        if self._oneshot_mode(pi):
            fail("INVALID_ARGUMENT", f"{pi.name} is programmed with one-shot entries; "
                                     f"members and groups cannot be mixed in")
        return pi

    def _member_action(self, pi: ProfileInfo, msg: pb.ActionProfileMember) -> ActionCall:
        if not msg.HasField("action"):
            fail("INVALID_ARGUMENT", f"{pi.name}: member {msg.member_id} needs an action")
        if pi.table is None:
            fail("INVALID_ARGUMENT", f"{pi.name} implements no table, so it has no actions")
        return decode_action(self.index, pi.table, msg.action, default=False)

    # ------------------------------------------------------------------ members
    def write_member(self, utype: int, msg: pb.ActionProfileMember) -> Undo:
        pi = self._profile_for_write(msg.action_profile_id, groups=False)
        prof = pi.profile
        mid = msg.member_id
        if mid == 0:
            fail("INVALID_ARGUMENT", f"{pi.name}: member id 0 is invalid")
        if utype == pb.Update.INSERT:
            if mid in prof.members:
                fail("ALREADY_EXISTS", f"{pi.name}: member {mid} already exists")
            prof.insert_member(mid, self._member_action(pi, msg))
            return lambda: prof.delete_member(mid)
        if utype == pb.Update.MODIFY:
            member = prof.get_member(mid)
            call = self._member_action(pi, msg)
            old = member.action
            prof.modify_member(mid, call)
            return lambda: prof.modify_member(mid, old)
        if utype == pb.Update.DELETE:
            member = prof.get_member(mid)
            if any(mid in ms for ms, _ in self._plain[pi.name].values()):
                fail("UNKNOWN", f"Error when deleting member on target: {pi.name}: member {mid} is in a group")
            try:
                prof.delete_member(mid)
            except RuntimeStateError as e:
                if e.code != "FAILED_PRECONDITION":
                    raise
                fail("UNKNOWN", f"Error when deleting member on target: {e.message}")
            return lambda: restore_member(prof, member)
        fail("INVALID_ARGUMENT", f"unknown update type {utype}")

    def _refuse_oneshot_read(self, pi: ProfileInfo) -> None:
        if not self.extras and self._oneshot_mode(pi):
            fail("INVALID_ARGUMENT", f"Invalid attempt to mix action selector programming modes: {pi.name} is "
                                     f"programmed with one-shot entries (as in BMv2; python -m p4sim switch "
                                     f"--p4runtime-extras reads it as empty)")

    def read_members(self, msg: pb.ActionProfileMember, new_entity: NewEntity = pb.Entity) -> Iterator[pb.Entity]:
        profiles = ([self.index.profile(msg.action_profile_id)] if msg.action_profile_id
                    else list(self.index.profiles.values()))
        for pi in profiles:
            self._refuse_oneshot_read(pi)
        for pi in profiles:
            hidden = self._hidden[pi.name].members
            ids = [msg.member_id] if msg.member_id else sorted(pi.profile.members)
            for mid in ids:
                member = pi.profile.members.get(mid)
                if member is None or mid in hidden:
                    continue
                ent = new_entity()
                m = ent.action_profile_member
                m.action_profile_id = pi.profile_id
                m.member_id = mid
                m.action.CopyFrom(encode_action(self.index, member.action))
                yield ent

    # ------------------------------------------------------------------ groups
    def write_group(self, utype: int, msg: pb.ActionProfileGroup) -> Undo:
        pi = self._profile_for_write(msg.action_profile_id, groups=True)
        prof = pi.profile
        gid = msg.group_id
        if gid == 0:
            fail("INVALID_ARGUMENT", f"{pi.name}: group id 0 is invalid")
        if utype not in (pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE):
            fail("INVALID_ARGUMENT", f"unknown update type {utype}")
        key = (pi.name, gid)
        old_weights = self._weights.get(key)

        def restore_weights() -> None:
            if old_weights is None:
                self._weights.pop(key, None)
            else:
                self._weights[key] = old_weights
        if not prof.has_selector:
            return self._write_plain_group(utype, pi, msg)
        if utype == pb.Update.DELETE:
            group = prof.get_group(gid)
            try:
                prof.delete_group(gid)
            except RuntimeStateError as e:
                if e.code != "FAILED_PRECONDITION":
                    raise
                fail("UNKNOWN", f"Error when deleting group on target: {e.message}")
            self._weights.pop(key, None)

            def undo_delete() -> None:
                restore_group(prof, group)
                restore_weights()
            return undo_delete
        weights = self._members(pi, gid, msg)
        mids = list(weights)
        if utype == pb.Update.INSERT:
            if gid in prof.groups:
                fail("ALREADY_EXISTS", f"{pi.name}: group {gid} already exists")
            # max_size 0 is accepted even with a P4Info max_group_size (that maximum applies)
            prof.insert_group(gid, mids, msg.max_size)
            self._weights[key] = weights

            def undo_insert() -> None:
                prof.delete_group(gid)
                restore_weights()
            return undo_insert
        group = prof.get_group(gid)
        if msg.max_size != group.max_size:
            fail("INVALID_ARGUMENT", f"{pi.name}: group {gid} max_size cannot change "
                                     f"({group.max_size} → {msg.max_size})")
        old = list(group.member_ids)
        prof.modify_group(gid, mids)
        self._weights[key] = weights

        def undo_modify() -> None:
            prof.modify_group(gid, old)
            restore_weights()
        return undo_modify

    @staticmethod
    def _members(pi: ProfileInfo, gid: int, msg: pb.ActionProfileGroup) -> dict[int, int]:
        """Member id → weight of a group write (weights checked, order kept)."""
        weights: dict[int, int] = {}
        for m in msg.members:
            _check_weight(m.weight, m.watch_port or (str(m.watch) if m.watch else None),
                          f"{pi.name} group {gid} member {m.member_id}")
            if m.member_id in weights:
                fail("INVALID_ARGUMENT", f"{pi.name}: group {gid} lists member {m.member_id} twice")
            weights[m.member_id] = m.weight
        return weights

    def _write_plain_group(self, utype: int, pi: ProfileInfo, msg: pb.ActionProfileGroup) -> Undo:
        """A group of an action profile without selector: kept for reads only (BMv2 accepts it)."""
        groups = self._plain[pi.name]
        gid = msg.group_id
        old = groups.get(gid)

        def undo() -> None:
            if old is None:
                groups.pop(gid, None)
            else:
                groups[gid] = old
        if utype == pb.Update.DELETE:
            if old is None:
                fail("NOT_FOUND", f"Group id does not exist: {pi.name}: no group {gid}")
            del groups[gid]
            return undo
        if utype == pb.Update.INSERT and old is not None:
            fail("ALREADY_EXISTS", f"Duplicate group id: {pi.name}: group {gid} already exists")
        if utype == pb.Update.MODIFY and old is None:
            fail("NOT_FOUND", f"Group id does not exist: {pi.name}: no group {gid}")
        weights = self._members(pi, gid, msg)
        for mid in weights:
            if mid not in pi.profile.members:
                fail("NOT_FOUND", f"Member id does not exist: {pi.name}: no member {mid}")
        if msg.max_size and len(weights) > msg.max_size:
            fail("RESOURCE_EXHAUSTED", f"Sum of member weights exceeds maximum group size: {pi.name}: "
                                       f"group {gid} has {len(weights)} members, max {msg.max_size}")
        groups[gid] = (weights, msg.max_size)
        return undo

    def read_groups(self, msg: pb.ActionProfileGroup, new_entity: NewEntity = pb.Entity) -> Iterator[pb.Entity]:
        profiles = ([self.index.profile(msg.action_profile_id)] if msg.action_profile_id
                    else list(self.index.profiles.values()))
        for pi in profiles:
            self._refuse_oneshot_read(pi)
        for pi in profiles:
            if not pi.profile.has_selector:
                plain = self._plain[pi.name]
                for gid in ([msg.group_id] if msg.group_id else sorted(plain)):
                    if gid in plain:
                        weights, max_size = plain[gid]
                        yield self._group_entity(pi, gid, weights, max_size, new_entity)
                continue
            hidden = self._hidden[pi.name].groups
            ids = [msg.group_id] if msg.group_id else sorted(pi.profile.groups)
            for gid in ids:
                group = pi.profile.groups.get(gid)
                if group is None or gid in hidden:
                    continue
                written = self._weights.get((pi.name, gid), {})
                weights = {mid: written.get(mid, 1) for mid in group.member_ids}
                yield self._group_entity(pi, gid, weights, group.max_size, new_entity)

    @staticmethod
    def _group_entity(pi: ProfileInfo, gid: int, weights: dict[int, int], max_size: int,
                      new_entity: NewEntity = pb.Entity) -> pb.Entity:
        ent = new_entity()
        g = ent.action_profile_group
        g.action_profile_id = pi.profile_id
        g.group_id = gid
        for mid, weight in weights.items():
            g.members.add(member_id=mid, weight=weight)
        g.max_size = max_size
        return ent

    # ------------------------------------------------------------------ one-shot
    def create_oneshot(self, ti: TableInfo, action_set: pb.ActionProfileActionSet
                       ) -> tuple[GroupRef, OneShot, Undo]:
        """Hidden members + group for a one-shot entry; returns the group reference, the
        record to keep with the entry and the undo of the creation."""
        impl = ti.table.implementation
        pi = self.index.profile_by_name.get(impl.name) if impl is not None else None
        if pi is None or not impl.has_selector:
            fail("INVALID_ARGUMENT", f"table {ti.name}: one-shot programming needs an action selector")
        if self._manual_mode(pi):
            fail("INVALID_ARGUMENT", f"{pi.name} is programmed with members and groups; "
                                     f"one-shot entries cannot be mixed in")
        if not action_set.action_profile_actions:
            fail("INVALID_ARGUMENT", f"'action' field must be set: table {ti.name}: the one-shot action set is empty")
        calls = []
        canonical = pb.ActionProfileActionSet()     # read back with canonical bytestrings
        for i, apa in enumerate(action_set.action_profile_actions):
            watch = apa.watch_port or (str(apa.watch) if apa.watch else None)
            _check_weight(apa.weight, watch, f"table {ti.name} one-shot action {i}")
            calls.append(decode_action(self.index, ti, apa.action, default=False))
            out = canonical.action_profile_actions.add(weight=apa.weight)
            out.action.CopyFrom(encode_action(self.index, calls[-1]))
        if pi.max_group_size and len(calls) > pi.max_group_size:
            fail("INVALID_ARGUMENT", f"table {ti.name}: {len(calls)} one-shot actions exceed "
                                     f"max_group_size {pi.max_group_size}")
        prof = pi.profile
        hidden = self._hidden[pi.name]
        created: list[int] = []

        def undo_members() -> None:
            for mid in reversed(created):
                prof.delete_member(mid)
                hidden.members.discard(mid)
        try:
            for call in calls:
                mid = _lowest_unused(prof.members)
                prof.insert_member(mid, call)
                created.append(mid)
                hidden.members.add(mid)
            gid = _lowest_unused(prof.groups)
            prof.insert_group(gid, created)
        except Exception:
            undo_members()
            raise
        hidden.groups.add(gid)
        record = OneShot(gid, list(created), canonical)

        def undo() -> None:
            prof.delete_group(gid)
            hidden.groups.discard(gid)
            undo_members()
        return GroupRef(gid), record, undo

    def delete_oneshot(self, ti: TableInfo, record: OneShot) -> Undo:
        """Remove the hidden group and members of a one-shot entry no longer in use."""
        prof = ti.table.implementation
        hidden = self._hidden[prof.name]
        group = prof.get_group(record.group_id)
        prof.delete_group(record.group_id)
        hidden.groups.discard(record.group_id)
        members = [prof.get_member(mid) for mid in record.member_ids]
        for m in members:
            prof.delete_member(m.member_id)
            hidden.members.discard(m.member_id)

        def undo() -> None:
            for m in members:
                restore_member(prof, m)
                hidden.members.add(m.member_id)
            restore_group(prof, group)
            hidden.groups.add(record.group_id)
        return undo

    @staticmethod
    def encode_ref(action: MemberRef | GroupRef, out: pb.TableAction) -> None:
        if isinstance(action, MemberRef):
            out.action_profile_member_id = action.member_id
        else:
            out.action_profile_group_id = action.group_id
