"""Tests for p4sim.runtime.digest and the doctests of every runtime module."""
from __future__ import annotations

import doctest
import importlib

import pytest

from p4sim.runtime import DigestQueue, RuntimeStateError


def test_drain_batches_by_name_and_size() -> None:
    q = DigestQueue()
    q.set_config("a", max_list_size=2)
    q.push("a", (1,), now_ns=10)
    q.push("b", (9,))
    q.push("a", (2,))
    q.push("a", (3,))
    assert len(q) == 4
    lists = q.drain()
    assert [(d.list_id, d.digest_name, d.values) for d in lists] == [
        (1, "a", [(1,), (2,)]), (2, "b", [(9,)]), (3, "a", [(3,)])]
    assert lists[0].timestamp_ns == 10
    assert q.drain() == [] and len(q) == 0


def test_drain_one_name_keeps_others() -> None:
    q = DigestQueue()
    q.set_config("a", max_list_size=0)
    for i in range(3):
        q.push("a", (i,))
        q.push("b", (i,))
    lists = q.drain("a")
    assert [d.values for d in lists] == [[(0,), (1,), (2,)]]
    assert [d.values for d in q.drain("b")] == [[(0,), (1,), (2,)]]
    assert lists[0].list_id == 1


def test_values_from_before_the_config_are_never_sent() -> None:
    # A digest() before its DigestEntry exists is dropped, even when nobody drained the
    # queue before the config write (p4sim's P4Runtime streamer drains on its own thread).
    q = DigestQueue()
    q.push("a", (0xAA,))
    q.push("b", (1,))
    q.set_config("a", max_list_size=1)
    q.push("a", (0xBB,))
    assert [(d.digest_name, d.values) for d in q.drain()] == [("b", [(1,)]), ("a", [(0xBB,)])]
    q.push("a", (0xCC,))
    q.set_config("a", max_list_size=2)     # MODIFY of a configured digest keeps its values
    assert [d.values for d in q.drain()] == [[(0xCC,)]]


def test_config_errors() -> None:
    q = DigestQueue()
    with pytest.raises(RuntimeStateError) as info:
        q.set_config("a", max_list_size=-1)
    assert info.value.code == "INVALID_ARGUMENT" and q.get_config("a") is None
    with pytest.raises(RuntimeStateError) as info:
        q.delete_config("a")
    assert info.value.code == "NOT_FOUND"
    q.set_config("a", 100, 5, 200)
    q.push("a", (1,))
    q.delete_config("a")
    assert len(q) == 0


@pytest.mark.parametrize("module", ["errors", "hashes", "tables", "action_profile", "counters",
                                    "meters", "registers", "pre", "digest", "__init__"])
def test_runtime_doctests(module: str) -> None:
    name = "p4sim.runtime" if module == "__init__" else f"p4sim.runtime.{module}"
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0
