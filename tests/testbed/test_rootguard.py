"""The root-namespace guard's nft table (:mod:`testbed.rootguard`) belongs to one testbed
run: a stale state (a testbed whose launcher died, its state file kept) must never name,
and so delete at ``down``, the table of a live testbed whose owner got the same PID.

Root and ``nft`` are needed (skipped otherwise); run under ``flock /tmp/astral-net.lock``
(it loads nft tables). The interfaces named do not exist: the table holds names only, and
the sysctls that cannot be written are reported on stderr, as ``up`` does."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from testbed.net import TestbedState, guard_root_namespace, leftovers, teardown
from testbed.rootguard import TABLE_PREFIX, nft_command, remove_table, table_exists, table_name

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not nft_command(),
                                reason="needs root and nft (nftables)")

RECYCLED_PID = 4242


def test_names_differ_for_one_pid() -> None:
    assert table_name(RECYCLED_PID) != table_name(RECYCLED_PID)
    assert table_name(RECYCLED_PID).startswith(f"{TABLE_PREFIX}{RECYCLED_PID}_")


def test_a_stale_state_never_deletes_a_live_testbeds_table(tmp_path: Path) -> None:
    """Testbed A (pid 4242) dies with its table loaded and its state file kept; testbed B
    gets pid 4242 and guards its own ports; ``down`` of A's stale state must leave B's
    table loaded, holding B's interface only (before: one name for both, so A's ``down``
    deleted B's table and B's hosts reached the root namespace again, and B's ports were
    merged into A's leftover table)."""
    stale = TestbedState(owner_pid=RECYCLED_PID, interfaces=["sa3stale-eth1"])
    live = TestbedState(owner_pid=RECYCLED_PID, interfaces=["sa3live-eth1"])
    try:
        guard_root_namespace(stale, tmp_path / "stale.json")
        guard_root_namespace(live, tmp_path / "live.json")
        assert leftovers(live)["tables"] == [live.guard_table]
        teardown(stale)
        assert table_exists(live.guard_table), "down of a stale state deleted a live testbed's table"
        assert leftovers(stale)["tables"] == []
        listing = os.popen(f"nft list table inet {live.guard_table}").read()
        assert "sa3live-eth1" in listing and "sa3stale-eth1" not in listing, listing
    finally:
        remove_table(stale.guard_table)
        remove_table(live.guard_table)
