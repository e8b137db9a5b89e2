"""C's copy of every table (``p4n_table_dump``, read by ``NativeSwitch.table_mismatches``)
against the Python tables themselves, entry by entry, after every batch of a random mix
of inserts (one at a time, and runs through ``Table.add_canonical_entries`` as the
P4Runtime server's write runs make them), deletes, deletes put back with their handle,
modifies, default-action changes and clears, on exact tables of one and two keys, an
exact table with a direct counter, an LPM table and a ternary+range table. The packet
tests (test_native_table_bulk.py, test_native_table_sync.py) see a missed update only
when a probe hits it; this one sees any: an entry missing or left over in C, another
action, arguments, priority or key, a slot the hit write-back maps to another entry, an
entry C's exact index does not find, another default action."""
from __future__ import annotations

import random
from typing import Any

import pytest

from p4sim.engine.program import load_program_text
from p4sim.native import compiler_status
from p4sim.native.switch import NativeSwitch
from p4sim.runtime import tables as runtime_tables
from p4sim.runtime.tables import ActionCall, Exact
from test_native_table_bulk import BASE, KEYS, PROGRAM, Mirror, _random_batch

pytestmark = pytest.mark.skipif(not compiler_status()[0], reason="no C compiler")


def _canonical_run(t: Any, keys: list[int], port: int) -> list[tuple]:
    """``Table.add_canonical_entries`` items of dmac INSERTs (the write plans' shape)."""
    call = ActionCall("I.fwd", (port,))
    items = []
    for k in keys:
        matches = (Exact(BASE + k),)
        ident, mask, value, ranges, prio = t._ident(matches, 0, False)
        items.append((matches, call, prio, ident, mask, value, ranges, 0, b""))
    return items


def _mismatches(nat: NativeSwitch) -> dict[str, list[str]]:
    nat._sync()
    return {t.name: got for i, t in enumerate(nat._tables) if (got := nat.table_mismatches(i))}


def test_native_tables_equal_python_tables_after_every_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_tables, "CHANGE_LOG_MIN", 512)     # a big batch outruns the log
    prog = load_program_text(PROGRAM, "state.p4")
    nat = NativeSwitch(prog)
    m = Mirror([prog])
    live: dict[str, dict[Any, Any]] = {n: {} for n in ("dmac", "counted", "pair", "smac", "acl")}
    dmac = prog.state.tables["I.dmac"]
    r = random.Random(3607)
    runs = 0
    for batch in range(40):
        if batch % 4 == 1:
            # a write run: INSERTs installed in one call, sometimes stopped by a key present
            free = [k for k in range(KEYS) if k not in live["dmac"]]
            fresh = r.sample(free, min(len(free), r.choice((1, 50, 100, 700))))
            if live["dmac"] and r.random() < 0.3:
                fresh.insert(len(fresh) // 2, next(iter(live["dmac"])))
            done = dmac.add_canonical_entries(_canonical_run(dmac, fresh, 1 + batch % 8))
            for k in fresh[:done]:
                live["dmac"][k] = ((Exact(BASE + k),), 0)
            runs += done
        elif batch == 30:
            m.do("clear", "dmac")
            live["dmac"].clear()
        else:
            _random_batch(r, m, live, r.choice((1, 20, 100, 400)), [])
        assert _mismatches(nat) == {}, f"batch {batch}"
        assert len(dmac) == len(live["dmac"])
    assert runs > 500


def test_a_missed_update_is_seen() -> None:
    """The check fails on each kind of update the copy could miss."""
    prog = load_program_text(PROGRAM, "state.p4")
    nat = NativeSwitch(prog)
    dmac = prog.state.tables["I.dmac"]
    ti = nat._tables.index(dmac)

    def missed(change: Any) -> list[str]:
        change()
        nat._tver[ti] = dmac.version           # as if the copy had skipped it
        got = nat.table_mismatches(ti)
        nat._tver[ti] = -1                     # copied whole again at the next sync
        nat._sync()
        assert nat.table_mismatches(ti) == []
        return got

    dmac.add_canonical_entries(_canonical_run(dmac, list(range(10)), 3))
    nat._sync()
    assert nat.table_mismatches(ti) == []
    assert "not in C" in " ".join(missed(lambda: dmac.add_canonical_entries(_canonical_run(dmac, [10], 3))))
    assert "in C, not in Python" in " ".join(missed(lambda: dmac.delete_entry([Exact(BASE + 4)])))
    assert "C holds" in " ".join(missed(lambda: dmac.modify_entry([Exact(BASE + 5)], ActionCall("I.drop", ()))))
    assert "C holds" in " ".join(missed(lambda: dmac.modify_entry([Exact(BASE + 6)], ActionCall("I.fwd", (7,)))))
    assert "default action" in " ".join(missed(lambda: dmac.set_default_action(ActionCall("I.fwd", (2,)))))
    # a delete and an insert that takes the freed handle, both missed: the slot C holds
    # for that handle is another key's
    dmac.add_entry([Exact(BASE + 4)], ActionCall("I.fwd", (3,)))     # handle 4 in use again
    nat._sync()
    got = missed(lambda: (dmac.delete_entry([Exact(BASE + 7)]),
                          dmac.add_entry([Exact(BASE + 99)], ActionCall("I.fwd", (1,)))))
    assert any(line.startswith("handle 7: C holds") for line in got), got
