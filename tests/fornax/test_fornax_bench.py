"""The ``fornax`` bench (:mod:`bench.fornax_bench`): its inputs (10^5 distinct connections,
frames the program parses as their connection, a policy whose change touches exactly one
VM's scope), the memory it measures, and ``fornax.scale`` end to end at a small scale."""
from __future__ import annotations

import pytest

from bench.fornax_bench import (LOCAL_VMS, bench_policy, conn_frame, conn_tuple, deep_size,
                                 run_scale)
from bench.results import BenchCheckError
from fornax.baseline import BaselineManager
from fornax.nicview import NicView
from fornax.policy import parse_policy
from fornax.sessions import SessionStore
from fornax.softpath import parse_frame
from p4src.smartnic.model import SessionKey


def test_connections_are_distinct_and_their_frames_say_so() -> None:
    tuples = {conn_tuple(c) for c in range(101_000)}
    assert len(tuples) == 101_000
    for c in (0, 1, 12345, 100_999):
        pkt = parse_frame(conn_frame(c, "syn"), 2 + c % LOCAL_VMS)
        assert pkt is not None and pkt.tcp_flags == 0x02
        assert (pkt.src_ip, pkt.src_port, pkt.dst_ip, pkt.dst_port) == conn_tuple(c)


def test_the_change_touches_one_scope() -> None:
    view = NicView("nicA")
    view.load(parse_policy(bench_policy(), "b"))
    changed = view.load(parse_policy(bench_policy(change=True), "b"))
    assert changed == {view.scope_of_vm["v0"], view.pair_scope_of_vpc["blue"]}


def test_deep_size_counts_what_is_not_shared() -> None:
    shared = ["x" * 1000]
    assert deep_size([shared[0]], {id(shared[0])}) < deep_size([shared[0]], set()) - 900


def test_both_managers_at_a_small_scale() -> None:
    """``fornax.scale`` end to end at 200 sessions (a child p4sim, the managers over
    P4Runtime): counts, not times — FORNAX re-evaluates exactly the affected sessions that
    carried a packet, the baseline walks every flow of the table."""
    n = 200
    fx = run_scale("fornax", n, window_s=2.0)
    base = run_scale("baseline", n, window_s=2.0)
    affected = len(range(0, n, LOCAL_VMS))
    assert fx["policy_change_work"] == affected
    assert base["policy_change_work"] >= 2 * n - 2        # two flows per connection, churn aside
    for out in (fx, base):
        assert out["session_setup_per_s"] > 0 and out["manager_cpu_s_per_min"] > 0
        assert out["policy_change_converge_s"] >= 0
    assert 0 < fx["policy_change_rebuild_s"] < 300


def test_a_session_costs_the_manager_tens_of_bytes() -> None:
    """The store's memory grows by the dict entry of a 16-byte key and one int per session
    (the per-slot arrays are fixed: 5 bytes per slot of the table)."""
    store = SessionStore(capacity=1 << 18)
    empty = deep_size(store, set())
    assert empty < 6 * (1 << 18)
    for c in range(10_000):
        src, sport, dst, dport = conn_tuple(c)
        store.add(SessionKey(100, 6, src, dst, sport, dport))
    per_session = (deep_size(store, set()) - empty) / 10_000
    assert 16 < per_session < 200, per_session


def test_a_failed_walk_fails_the_bench_instead_of_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """A baseline walk that raises (under load its Read of the whole table can pass its
    deadline) ends the run with BenchCheckError, not an hour's wait for a walk."""
    def broken(self: BaselineManager) -> dict[str, float]:
        raise RuntimeError("DEADLINE_EXCEEDED (simulated)")
    monkeypatch.setattr(BaselineManager, "walk", broken)
    with pytest.raises(BenchCheckError, match="the walk failed"):
        run_scale("baseline", 100, window_s=1.0)
