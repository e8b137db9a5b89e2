"""Tests for p4sim.runtime.action_profile: members, groups, BMv2 member selection."""
from __future__ import annotations

import pytest

from p4sim.runtime import (ActionCall, ActionProfile, ActionSelector, ActionSpec, RuntimeStateError,
                           crc16, pack_fields)

SPECS = {"I.fwd": ActionSpec("I.fwd", [("port", 9)])}


def fwd(p: int) -> ActionCall:
    return ActionCall("I.fwd", (p,))


def code_of(fn, *args, **kw) -> str:
    with pytest.raises(RuntimeStateError) as info:
        fn(*args, **kw)
    return info.value.code


def state(p: ActionProfile) -> tuple:
    return ({k: (m.handle, m.action) for k, m in p.members.items()},
            {k: (g.handle, list(g.member_ids), [m.member_id for m in g.by_handle]) for k, g in p.groups.items()})


def test_member_handles_lowest_free() -> None:
    p = ActionProfile("I.p", actions=SPECS)
    assert [p.insert_member(m, fwd(m)).handle for m in (10, 20, 30)] == [0, 1, 2]
    p.delete_member(10)
    assert p.insert_member(40, fwd(4)).handle == 0
    assert p.insert_member(50, fwd(5)).handle == 3


def test_member_errors_leave_state() -> None:
    p = ActionProfile("I.p", size=2, actions=SPECS)
    p.insert_member(1, fwd(1))
    before = state(p)
    assert code_of(p.insert_member, 1, fwd(2)) == "ALREADY_EXISTS"
    assert code_of(p.insert_member, 2, ActionCall("I.zz")) == "INVALID_ARGUMENT"
    assert code_of(p.insert_member, 2, ActionCall("I.fwd", (512,))) == "OUT_OF_RANGE"
    assert code_of(p.modify_member, 9, fwd(2)) == "NOT_FOUND"
    assert code_of(p.modify_member, 1, ActionCall("I.fwd", ())) == "INVALID_ARGUMENT"
    assert code_of(p.delete_member, 9) == "NOT_FOUND"
    assert state(p) == before
    p.insert_member(2, fwd(2))
    assert code_of(p.insert_member, 3, fwd(3)) == "RESOURCE_EXHAUSTED"


def test_selection_uses_handle_order_not_list_order() -> None:
    s = ActionSelector("I.s", algorithm="identity", output_width=8, actions=SPECS)
    for mid in (7, 5, 9):                   # handles 0, 1, 2
        s.insert_member(mid, fwd(mid))
    s.insert_group(1, [9, 5, 7])
    picks = [s.select(1, [(h, 8)]).member_id for h in range(3)]
    assert picks == [7, 5, 9]
    # deleting and re-creating a member moves it to the lowest free handle
    s.modify_group(1, [9, 7])
    s.delete_member(5)
    s.insert_member(6, fwd(6))              # handle 1
    s.modify_group(1, [9, 7, 6])
    assert [s.select(1, [(h, 8)]).member_id for h in range(3)] == [7, 6, 9]


def test_selection_crc16_over_packed_fields() -> None:
    s = ActionSelector("I.s", algorithm="crc16", output_width=14, actions=SPECS)
    for mid in range(4):
        s.insert_member(mid, fwd(mid))
    s.insert_group(1, [0, 1, 2, 3])
    fields = [(0x0A000001, 32), (0x0A000002, 32), (17, 8), (3000, 16), (4791, 16)]
    h = crc16(pack_fields(fields))
    assert s.selector_hash(fields) == h
    assert s.select(1, fields).member_id == h % 4


def test_custom_selector_hash_is_32_bits() -> None:
    s = ActionSelector("I.s", algorithm="identity", output_width=8, actions=SPECS)
    s.insert_member(1, fwd(1))
    assert s.selector_hash([(0x1122334455667788, 64)]) == 0x55667788


def test_group_errors_leave_state() -> None:
    s = ActionSelector("I.s", max_group_size=2, actions=SPECS)
    for mid in (1, 2, 3):
        s.insert_member(mid, fwd(mid))
    s.insert_group(10, [1])
    before = state(s)
    assert code_of(s.insert_group, 10, [2]) == "ALREADY_EXISTS"
    assert code_of(s.insert_group, 11, [1, 1]) == "INVALID_ARGUMENT"
    assert code_of(s.insert_group, 11, [1, 9]) == "NOT_FOUND"
    assert code_of(s.insert_group, 11, [1, 2, 3]) == "RESOURCE_EXHAUSTED"
    assert code_of(s.insert_group, 11, [1], max_size=3) == "INVALID_ARGUMENT"
    assert code_of(s.modify_group, 12, [1]) == "NOT_FOUND"
    assert code_of(s.modify_group, 10, [1, 2, 3]) == "RESOURCE_EXHAUSTED"
    assert code_of(s.delete_group, 12) == "NOT_FOUND"
    assert code_of(s.select, 12, []) == "NOT_FOUND"
    assert state(s) == before
    g = ActionSelector("I.g", actions=SPECS)
    g.insert_member(1, fwd(1))
    g.insert_member(2, fwd(2))
    assert code_of(g.insert_group, 5, [1, 2], max_size=1) == "RESOURCE_EXHAUSTED"


def test_member_in_group_cannot_be_deleted_until_group_changes() -> None:
    s = ActionSelector("I.s", actions=SPECS)
    s.insert_member(1, fwd(1))
    s.insert_member(2, fwd(2))
    s.insert_group(10, [1, 2])
    assert code_of(s.delete_member, 1) == "FAILED_PRECONDITION"
    s.modify_group(10, [2])
    s.delete_member(1)
    s.delete_group(10)
    s.delete_member(2)
    assert s.members == {} and s.groups == {}


def test_empty_group_selects_nothing() -> None:
    s = ActionSelector("I.s", actions=SPECS)
    s.insert_group(1)
    assert s.select(1, [(5, 8)]) is None


def test_selector_random_refused() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        ActionSelector("I.s", algorithm="random")
