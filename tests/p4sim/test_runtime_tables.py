"""Tests for p4sim.runtime.tables: validation codes, lookup semantics, direct resources."""
from __future__ import annotations

import random

import pytest

from p4sim.runtime import (ActionCall, ActionSelector, ActionSpec, DirectCounter, DirectMeter, Exact,
                           GroupRef, KeyField, Lpm, MemberRef, Optional_, Range, RuntimeStateError, Table,
                           Ternary)
from p4sim.runtime.action_profile import ActionProfile

FWD = ActionSpec("I.fwd", [("port", 9)])
DROP = ActionSpec("I.drop")
ONLY_DEFAULT = ActionSpec("I.miss", scope="default_only")
ONLY_TABLE = ActionSpec("I.hit", [("x", 4)], scope="table_only")


def fwd(p: int) -> ActionCall:
    return ActionCall("I.fwd", (p,))


def code_of(fn, *args, **kw) -> str:
    with pytest.raises(RuntimeStateError) as info:
        fn(*args, **kw)
    return info.value.code


def exact_table(size: int = 8, **kw) -> Table:
    return Table("I.mac", [KeyField("dst", "exact", 48), KeyField("vid", "exact", 12)],
                 [FWD, DROP, ONLY_DEFAULT, ONLY_TABLE], default_action=("I.drop", ()), size=size, **kw)


def snapshot(t: Table) -> list:
    return [(e.handle, e.matches, e.priority, e.action) for e in t.entries()] + [t.default_action]


# --------------------------------------------------------------------------- exact
def test_exact_hit_miss_and_default() -> None:
    t = exact_table()
    assert t.mode == "exact"
    e = t.add_entry([Exact(0xAA), Exact(1)], fwd(3))
    assert e.handle == 0
    r = t.lookup((0xAA, 1))
    assert r.hit and r.entry is e and r.action_name == "I.fwd" and r.action_args == (3,)
    hit, entry, name, args = t.lookup([0xAA, 2])
    assert (hit, entry, name, args) == (False, None, "I.drop", ())
    t.set_default_action(ActionCall("I.miss"))
    assert t.lookup((0, 0)).action_name == "I.miss"
    t.reset_default_action()
    assert t.lookup((0, 0)).action_name == "I.drop"


def test_exact_validation_codes_leave_state_unchanged() -> None:
    t = exact_table(size=2)
    t.add_entry([Exact(1), Exact(1)], fwd(1))
    before = snapshot(t)
    cases = [
        ((t.add_entry, [Exact(1)], fwd(1)), "INVALID_ARGUMENT"),                   # key count
        ((t.add_entry, [Exact(1 << 48), Exact(1)], fwd(1)), "OUT_OF_RANGE"),        # too wide
        ((t.add_entry, [Exact(-1), Exact(1)], fwd(1)), "OUT_OF_RANGE"),
        ((t.add_entry, [Lpm(0, 0), Exact(1)], fwd(1)), "INVALID_ARGUMENT"),         # wrong kind
        ((t.add_entry, [Exact(2), Exact(1)], ActionCall("I.nope")), "INVALID_ARGUMENT"),
        ((t.add_entry, [Exact(2), Exact(1)], ActionCall("I.fwd", ())), "INVALID_ARGUMENT"),
        ((t.add_entry, [Exact(2), Exact(1)], ActionCall("I.fwd", (512,))), "OUT_OF_RANGE"),
        ((t.add_entry, [Exact(2), Exact(1)], ActionCall("I.miss")), "INVALID_ARGUMENT"),  # default only
        ((t.add_entry, [Exact(2), Exact(1)], fwd(1), 5), "INVALID_ARGUMENT"),       # priority on exact
        ((t.add_entry, [Exact(2), Exact(1)], MemberRef(1)), "INVALID_ARGUMENT"),
        ((t.add_entry, [Exact(1), Exact(1)], fwd(2)), "ALREADY_EXISTS"),
        ((t.modify_entry, [Exact(9), Exact(9)], fwd(2)), "NOT_FOUND"),
        ((t.modify_entry, [Exact(1), Exact(1)], ActionCall("I.fwd", (1000,))), "OUT_OF_RANGE"),
        ((t.delete_entry, [Exact(9), Exact(9)]), "NOT_FOUND"),
        ((t.set_default_action, ActionCall("I.hit", (1,))), "INVALID_ARGUMENT"),    # table only
        ((t.set_default_action, ActionCall("I.fwd", (1, 2))), "INVALID_ARGUMENT"),
    ]
    for (fn, *args), code in cases:
        assert code_of(fn, *args) == code, (fn.__name__, args)
        assert snapshot(t) == before
    t.add_entry([Exact(2), Exact(1)], ActionCall("I.hit", (1,)))
    assert code_of(t.add_entry, [Exact(3), Exact(1)], fwd(1)) == "RESOURCE_EXHAUSTED"
    assert len(t) == 2


def test_modify_delete_and_handle_reuse() -> None:
    t = exact_table()
    a = t.add_entry([Exact(1), Exact(0)], fwd(1))
    b = t.add_entry([Exact(2), Exact(0)], fwd(2))
    c = t.add_entry([Exact(3), Exact(0)], fwd(3))
    assert [a.handle, b.handle, c.handle] == [0, 1, 2]
    t.modify_entry([Exact(2), Exact(0)], fwd(7))
    assert t.lookup((2, 0)).action_args == (7,)
    assert t.get_entry([Exact(2), Exact(0)]) is b and b.handle == 1
    removed = t.delete_entry([Exact(1), Exact(0)])
    assert removed is a and t.lookup((1, 0)).hit is False
    assert t.get_entry([Exact(1), Exact(0)]) is None
    d = t.add_entry([Exact(4), Exact(0)], fwd(4))
    assert d.handle == 0                 # lowest free handle, as BMv2
    assert [e.handle for e in t.entries()] == [0, 1, 2]
    t.clear()
    assert len(t) == 0


def test_const_table_and_const_default() -> None:
    t = Table("I.c", [KeyField("k", "exact", 8)], [FWD, DROP], default_action=("I.drop", ()),
              default_is_const=True, is_const=True)
    t.add_entry([Exact(1)], fwd(1), const=True)
    before = snapshot(t)
    assert code_of(t.add_entry, [Exact(2)], fwd(1)) == "PERMISSION_DENIED"
    assert code_of(t.modify_entry, [Exact(1)], fwd(2)) == "PERMISSION_DENIED"
    assert code_of(t.delete_entry, [Exact(1)]) == "PERMISSION_DENIED"
    assert code_of(t.set_default_action, ActionCall("I.fwd", (1,))) == "PERMISSION_DENIED"
    t.clear()                            # const entries survive
    assert snapshot(t) == before
    assert t.lookup((1,)).action_args == (1,)


def test_keyless_table() -> None:
    t = Table("I.k", [], [FWD], default_action=("I.fwd", (5,)))
    assert t.lookup(()).action_args == (5,)
    assert code_of(t.add_entry, [], fwd(1)) == "INVALID_ARGUMENT"


def test_default_none_means_no_action() -> None:
    t = Table("I.n", [KeyField("k", "exact", 8)], [FWD])
    assert t.lookup((1,)) == (False, None, None, ())


# --------------------------------------------------------------------------- lpm
def lpm_table(**kw) -> Table:
    return Table("I.lpm", [KeyField("vrf", "exact", 8), KeyField("dst", "lpm", 32)], [FWD, DROP],
                 default_action=("I.drop", ()), **kw)


def test_lpm_longest_prefix_wins() -> None:
    t = lpm_table()
    assert t.mode == "lpm"
    t.add_entry([Exact(0), Lpm(0, 0)], fwd(1))
    t.add_entry([Exact(0), Lpm(0x0A000000, 8)], fwd(2))
    t.add_entry([Exact(0), Lpm(0x0A010000, 16)], fwd(3))
    t.add_entry([Exact(0), Lpm(0x0A010203, 32)], fwd(4))
    t.add_entry([Exact(1), Lpm(0x0A010000, 16)], fwd(5))
    look = lambda vrf, ip: t.lookup((vrf, ip)).action_args  # noqa: E731
    assert look(0, 0x0A010203) == (4,)
    assert look(0, 0x0A010204) == (3,)
    assert look(0, 0x0A020304) == (2,)
    assert look(0, 0x0B000000) == (1,)
    assert look(1, 0x0A01FFFF) == (5,)
    assert t.lookup((1, 0x0A020000)).hit is False
    t.delete_entry([Exact(0), Lpm(0x0A010000, 16)])
    assert look(0, 0x0A010204) == (2,)
    t.delete_entry([Exact(0), Lpm(0, 0)])
    assert t.lookup((0, 0x0B000000)).hit is False


def test_lpm_validation() -> None:
    t = lpm_table()
    t.add_entry([Exact(0), Lpm(0x0A000000, 8)], fwd(1))
    before = snapshot(t)
    assert code_of(t.add_entry, [Exact(0), Lpm(0x0A000001, 8)], fwd(1)) == "INVALID_ARGUMENT"
    assert code_of(t.add_entry, [Exact(0), Lpm(0, 33)], fwd(1)) == "INVALID_ARGUMENT"
    assert code_of(t.add_entry, [Exact(0), Lpm(1 << 32, 32)], fwd(1)) == "OUT_OF_RANGE"
    assert code_of(t.add_entry, [Exact(0), Lpm(0x0A000000, 8)], fwd(2)) == "ALREADY_EXISTS"
    assert code_of(t.add_entry, [Exact(0), Ternary(0, 0)], fwd(2)) == "INVALID_ARGUMENT"
    assert snapshot(t) == before
    # same value, different prefix length: a different entry
    t.add_entry([Exact(0), Lpm(0x0A000000, 16)], fwd(2))
    assert len(t) == 2


# --------------------------------------------------------------------------- ternary / range / optional
def acl_table(**kw) -> Table:
    return Table("I.acl", [KeyField("src", "ternary", 32), KeyField("dport", "range", 16),
                           KeyField("proto", "optional", 8)], [FWD, DROP],
                 default_action=("I.drop", ()), **kw)


def test_priority_highest_wins() -> None:
    t = acl_table()
    assert t.mode == "general" and t.needs_priority
    t.add_entry([Ternary(0, 0), Range(0, 65535), Optional_(None)], fwd(1), priority=1)
    t.add_entry([Ternary(0x0A000000, 0xFF000000), Range(0, 65535), Optional_(None)], fwd(2), priority=10)
    t.add_entry([Ternary(0x0A000000, 0xFF000000), Range(1000, 2000), Optional_(6)], fwd(3), priority=20)
    look = lambda *k: t.lookup(k).action_args  # noqa: E731
    assert look(0x0A000001, 1500, 6) == (3,)
    assert look(0x0A000001, 1500, 17) == (2,)
    assert look(0x0A000001, 2001, 6) == (2,)
    assert look(0x0A000001, 999, 6) == (2,)
    assert look(0x0B000001, 1500, 6) == (1,)
    t.modify_entry([Ternary(0, 0), Range(0, 65535), Optional_(None)], fwd(9), priority=1)
    assert look(0x0B000001, 1500, 6) == (9,)


def test_equal_priority_lowest_handle_wins() -> None:
    t = acl_table()
    a = t.add_entry([Ternary(0, 0), Range(0, 65535), Optional_(None)], fwd(1), priority=5)
    t.add_entry([Ternary(1, 1), Range(0, 65535), Optional_(None)], fwd(2), priority=5)
    assert t.lookup((1, 0, 0)).action_args == (1,)
    t.delete_entry(a.matches, 5)
    t.add_entry([Ternary(0, 1), Range(0, 65535), Optional_(None)], fwd(3), priority=5)  # reuses handle 0
    assert t.lookup((1, 0, 0)).action_args == (2,)
    assert t.lookup((0, 0, 0)).action_args == (3,)
    t.add_entry([Ternary(0, 0), Range(0, 65535), Optional_(None)], fwd(4), priority=5)   # handle 2
    assert t.lookup((1, 0, 0)).action_args == (2,)


def test_ternary_validation() -> None:
    t = acl_table()
    m = [Ternary(0, 0), Range(0, 65535), Optional_(None)]
    t.add_entry(m, fwd(1), priority=3)
    before = snapshot(t)
    assert code_of(t.add_entry, [Ternary(3, 1), Range(0, 1), Optional_(None)], fwd(1), 1) == "INVALID_ARGUMENT"
    assert code_of(t.add_entry, [Ternary(0, 1 << 32), Range(0, 1), Optional_(None)], fwd(1), 1) == "OUT_OF_RANGE"
    assert code_of(t.add_entry, [Ternary(0, 0), Range(5, 4), Optional_(None)], fwd(1), 1) == "INVALID_ARGUMENT"
    assert code_of(t.add_entry, [Ternary(0, 0), Range(0, 1 << 16), Optional_(None)], fwd(1), 1) == "OUT_OF_RANGE"
    assert code_of(t.add_entry, [Ternary(0, 0), Range(0, 1), Optional_(256)], fwd(1), 1) == "OUT_OF_RANGE"
    assert code_of(t.add_entry, [Ternary(0, 0), Range(0, 1), Optional_(None)], fwd(1), 0) == "INVALID_ARGUMENT"
    assert code_of(t.add_entry, m, fwd(2), 3) == "ALREADY_EXISTS"
    assert code_of(t.delete_entry, m, 4) == "NOT_FOUND"
    assert snapshot(t) == before
    t.add_entry(m, fwd(2), priority=4)        # same key, other priority: another entry
    assert len(t) == 2


def test_const_entries_priority_optional_for_exact() -> None:
    t = Table("I.c", [KeyField("k", "exact", 8)], [FWD], is_const=True)
    e = t.add_entry([Exact(1)], fwd(1), priority=7, const=True)
    assert e.priority == 0 and e.is_const


def test_general_lookup_matches_bruteforce() -> None:
    rng = random.Random(7)
    t = Table("I.t", [KeyField("a", "ternary", 8), KeyField("b", "lpm", 8), KeyField("c", "exact", 4)],
              [FWD], size=4096)
    ref = []
    for i in range(300):
        mask = rng.randrange(256)
        plen = rng.randrange(9)
        lmask = (0xFF << (8 - plen)) & 0xFF
        m = [Ternary(rng.randrange(256) & mask, mask), Lpm(rng.randrange(256) & lmask, plen),
             Exact(rng.randrange(16))]
        prio = rng.randrange(1, 20)
        try:
            e = t.add_entry(m, fwd(i), priority=prio)
        except RuntimeStateError as err:
            assert err.code == "ALREADY_EXISTS"
            continue
        ref.append((e, mask, m[0].value, lmask, m[1].value, m[2].value))
    for _ in range(2000):
        a, b, c = rng.randrange(256), rng.randrange(256), rng.randrange(16)
        cands = [e for e, tm, tv, lm, lv, ev in ref if a & tm == tv and b & lm == lv and c == ev]
        want = min(cands, key=lambda e: (-e.priority, e.handle)) if cands else None
        assert t.lookup((a, b, c)).entry is want


# --------------------------------------------------------------------------- direct resources, apply
def test_apply_direct_counter_meter_and_idle() -> None:
    t = exact_table(direct_counter=DirectCounter("I.dc"), direct_meter=DirectMeter("I.dm", "bytes"),
                    support_timeout=True)
    e = t.add_entry([Exact(1), Exact(1)], fwd(1), idle_timeout_ns=10**9)
    assert e.counter is not None and e.meter is not None
    t.apply((1, 1), nbytes=100, now_us=5)
    t.apply((1, 1), nbytes=60, now_us=7)
    t.apply((2, 2), nbytes=1000, now_us=9)                 # miss: not counted
    assert e.counter.read() == (2, 160)
    assert e.last_hit_ns == 7000
    assert t.last_meter_color is None                      # miss
    from p4sim.runtime import MeterConfig
    e.meter.set_config(MeterConfig(cir=0, cburst=100, pir=0, pburst=150))
    t.apply((1, 1), nbytes=100, now_us=10)
    assert t.last_meter_color == 0
    t.apply((1, 1), nbytes=100, now_us=10)
    assert t.last_meter_color == 2                         # peak 50 < 100 → RED
    # modify keeps the counter
    t.modify_entry([Exact(1), Exact(1)], fwd(2))
    assert e.counter.read() == (4, 360)
    assert code_of(exact_table().add_entry, [Exact(1), Exact(1)], fwd(1), idle_timeout_ns=5) == "INVALID_ARGUMENT"


# --------------------------------------------------------------------------- action profile / selector tables
def ecmp_table() -> tuple[Table, ActionSelector]:
    sel = ActionSelector("I.ecmp_sel", size=8, algorithm="identity", output_width=16)
    t = Table("I.ecmp", [KeyField("dst", "exact", 8), KeyField("sport", "selector", 16)],
              [FWD, DROP], default_action=("I.drop", ()), selector=sel)
    return t, sel


def test_selector_table_lookup() -> None:
    t, sel = ecmp_table()
    for mid, port in ((1, 11), (2, 12), (3, 13)):
        sel.insert_member(mid, fwd(port))
    sel.insert_group(100, [3, 1, 2])
    t.add_entry([Exact(5)], GroupRef(100))
    t.add_entry([Exact(6)], MemberRef(2))
    # identity hash of the 16-bit sport; member = (h % 3)-th smallest handle
    assert [t.lookup((5, sp)).action_args for sp in range(4)] == [(11,), (12,), (13,), (11,)]
    assert t.lookup((6, 0)).action_args == (12,)
    sel.modify_member(2, fwd(42))
    assert t.lookup((6, 0)).action_args == (42,)
    assert t.lookup((7, 0)).hit is False
    # a selector field of an invalid header (None) is skipped: empty input, identity hash 0
    assert t.lookup((5, None)).action_args == (11,)


def test_selector_table_reference_rules() -> None:
    t, sel = ecmp_table()
    sel.insert_member(1, fwd(1))
    sel.insert_group(10, [1])
    sel.insert_group(11, [])
    before = snapshot(t)
    assert code_of(t.add_entry, [Exact(1)], fwd(1)) == "INVALID_ARGUMENT"
    assert code_of(t.add_entry, [Exact(1)], MemberRef(9)) == "NOT_FOUND"
    assert code_of(t.add_entry, [Exact(1)], GroupRef(9)) == "NOT_FOUND"
    assert snapshot(t) == before
    t.add_entry([Exact(1)], GroupRef(10))
    t.add_entry([Exact(2)], MemberRef(1))
    t.add_entry([Exact(3)], GroupRef(11))
    assert t.lookup((3, 0)) == (True, t.get_entry([Exact(3)]), None, ())   # empty group: no action
    assert code_of(sel.delete_group, 10) == "FAILED_PRECONDITION"
    assert code_of(sel.delete_member, 1) == "FAILED_PRECONDITION"
    t.delete_entry([Exact(1)])
    sel.delete_group(10)
    assert code_of(sel.delete_member, 1) == "FAILED_PRECONDITION"       # entry 2 uses it
    t.modify_entry([Exact(2)], GroupRef(11))
    sel.delete_member(1)
    assert code_of(sel.delete_group, 11) == "FAILED_PRECONDITION"


def test_profile_without_selector_rejects_groups() -> None:
    prof = ActionProfile("I.prof", size=2)
    t = Table("I.p", [KeyField("k", "exact", 8)], [FWD], profile=prof)
    prof.insert_member(1, fwd(1))
    assert code_of(prof.insert_member, 2, ActionCall("I.fwd", (999,))) == "OUT_OF_RANGE"   # actions from the table
    assert code_of(t.add_entry, [Exact(1)], GroupRef(1)) == "INVALID_ARGUMENT"
    assert code_of(prof.insert_group, 1, [1]) == "INVALID_ARGUMENT"
    t.add_entry([Exact(1)], MemberRef(1))
    assert t.lookup((1,)).action_args == (1,)
