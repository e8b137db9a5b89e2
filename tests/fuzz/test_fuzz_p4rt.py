"""The P4Runtime campaign at ``make test`` size (fuzz/p4rt.py, ``--size small``) against a
live ``python -m p4sim switch``: no finding, and the campaign really exercised every
kind of message (accepted writes among them, so "refused writes change nothing" was
tested against a non-empty state). Its checks are tested on their own below."""
from __future__ import annotations

import pytest
from p4.v1 import p4runtime_pb2 as pb

from fuzz.p4rt import SIZES, is_bmv2_unknown, run_p4rt
from fuzz.p4rt_state import changed_keys, entity_key, to_snapshot


def test_small_campaign_finds_nothing(tmp_path) -> None:
    result = run_p4rt(1, SIZES["small"], work_dir=tmp_path, size="small")
    assert result.inputs == SIZES["small"]
    assert result.ok, [(f.kind, f.what, f.index, f.message[:300]) for f in result.findings]
    c = result.counts
    assert c["switch_alive_at_end"] == 1
    assert c.get("Write.OK", 0) + c.get("Write.update.OK", 0) > 10, c
    assert c.get("Write.update.ALREADY_EXISTS", 0) > 0 and c.get("Write.update.NOT_FOUND", 0) > 0, c
    assert min(c["write"], c["read"], c["stream"], c["setfpc"]) > 0, c
    assert result.rate_per_s > 0


def _table_entry(value: bytes, action_id: int = 1) -> pb.Entity:
    e = pb.Entity()
    e.table_entry.table_id = 7
    e.table_entry.match.add(field_id=1).exact.value = value
    e.table_entry.action.action.action_id = action_id
    return e


def test_entity_key_ignores_leading_zero_bytes_and_the_action() -> None:
    assert entity_key(_table_entry(b"\x00\x05")) == entity_key(_table_entry(b"\x05", 2))
    assert entity_key(_table_entry(b"\x05")) != entity_key(_table_entry(b"\x06"))


def test_a_changed_entry_is_a_changed_key() -> None:
    before = to_snapshot([_table_entry(b"\x05", 1)])
    after = to_snapshot([_table_entry(b"\x05", 2), _table_entry(b"\x06")])
    assert changed_keys(before, after) == sorted([entity_key(_table_entry(b"\x05")),
                                                  entity_key(_table_entry(b"\x06"))], key=repr)
    assert changed_keys(before, before) == []


@pytest.mark.parametrize("message, bmv2", [
    ("Error when adding match entry to target", True),
    ("Error in second phase of device update", True),
    ("Incorrect entity type: the entity is empty", True),
    ("Exception calling application: boom", False),
    ("", False),
])
def test_only_bmv2s_own_unknowns_are_tolerated(message: str, bmv2: bool) -> None:
    assert is_bmv2_unknown(message) is bmv2
