"""p4sim/p4runtime/workers.py: the gRPC server's worker pool keeps ThreadPoolExecutor's
rules (threads made only when none is idle, never more than ``max_workers``, calls beyond
them queued in order), which the stream limits rely on, and a server on it serves."""
from __future__ import annotations

import gc
import threading

import grpc
import pytest

from p4sim.p4runtime.gcpause import SWITCH_GC_THRESHOLD0, switch_thresholds
from p4sim.p4runtime.workers import Call, WorkerPool

WAIT_S = 10.0


def test_calls_run_and_their_callbacks_fire_once() -> None:
    pool = WorkerPool(3, "t")
    try:
        got: list[int] = []
        done = [threading.Event() for _ in range(20)]
        for i in range(20):
            call = pool.submit(got.append, i)
            call.add_done_callback(lambda c, e=done[i]: e.set())
        assert all(e.wait(WAIT_S) for e in done)
        assert sorted(got) == list(range(20))
        assert pool.threads() <= 3
        late: list[Call] = []
        call.add_done_callback(late.append)          # after the end: at once, in this thread
        assert late == [call] and call.done() and not call.cancel()
    finally:
        pool.shutdown()


def test_an_idle_worker_is_reused_not_a_new_thread_made() -> None:
    pool = WorkerPool(8, "t")
    try:
        for _ in range(30):
            ev = threading.Event()
            pool.submit(lambda: None).add_done_callback(lambda c, e=ev: e.set())
            assert ev.wait(WAIT_S)
        assert pool.threads() == 1
    finally:
        pool.shutdown()


def test_calls_beyond_max_workers_wait_in_order_and_a_failing_call_does_not_kill_a_worker() -> None:
    pool = WorkerPool(2, "t")
    gate = threading.Event()
    order: list[int] = []
    try:
        blocked = [threading.Event() for _ in range(2)]
        for e in blocked:
            pool.submit(lambda e=e: (e.set(), gate.wait(WAIT_S)))
        assert all(e.wait(WAIT_S) for e in blocked)
        pool.submit(lambda: 1 / 0)                    # logged, the worker goes on
        ends = [threading.Event() for _ in range(5)]
        for i in range(5):
            pool.submit(order.append, i).add_done_callback(lambda c, e=ends[i]: e.set())
        assert not ends[0].wait(0.2)                  # both workers held: queued, none made
        assert pool.threads() == 2
        gate.set()
        assert all(e.wait(WAIT_S) for e in ends)
        assert sorted(order) == [0, 1, 2, 3, 4]       # two workers: started in order, may end out of it
        assert pool.threads() == 2
    finally:
        gate.set()
        pool.shutdown()


def test_shutdown_ends_the_threads_and_refuses_more() -> None:
    pool = WorkerPool(2, "t")
    ev = threading.Event()
    pool.submit(ev.set)
    assert ev.wait(WAIT_S)
    pool.shutdown(wait=True)
    assert pool._threads and not any(t.is_alive() for t in pool._threads)
    with pytest.raises(RuntimeError):
        pool.submit(ev.set)
    with pytest.raises(ValueError):
        WorkerPool(0)


def test_a_grpc_server_on_the_pool_serves_unary_calls() -> None:
    pool = WorkerPool(4, "t")
    server = grpc.server(pool, options=[("grpc.so_reuseport", 0)])  # type: ignore[arg-type]
    handler = grpc.unary_unary_rpc_method_handler(lambda data, ctx: data[::-1])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", {"Echo": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            call = ch.unary_unary("/t.T/Echo")
            assert [call(b"ab%d" % i, timeout=WAIT_S) for i in range(50)] == [(b"ab%d" % i)[::-1] for i in range(50)]
        assert pool.threads() <= 4
    finally:
        server.stop(None).wait(WAIT_S)
        pool.shutdown(wait=False)


def test_switch_thresholds_raise_only_the_young_generations() -> None:
    old = gc.get_threshold()
    try:
        gc.set_threshold(700, 11, 12)
        switch_thresholds()
        assert gc.get_threshold() == (SWITCH_GC_THRESHOLD0, 11, 12)
    finally:
        gc.set_threshold(*old)


class _ShutdownDuringPut:
    """The pool's queue with ``put`` wrapped: before the first call is put, another thread
    runs ``shutdown`` and is given up to ``race_s`` to finish, which opens the window
    between ``submit``'s check and its put."""

    def __init__(self, pool: WorkerPool, race_s: float) -> None:
        self._pool, self._inner, self._race_s, self._raced = pool, pool._queue, race_s, False

    def put(self, item: object) -> None:
        if item is not None and not self._raced:
            self._raced = True
            t = threading.Thread(target=self._pool.shutdown, kwargs={"wait": False})
            t.start()
            t.join(self._race_s)  # bounded: with the lock held by submit, shutdown waits for it
        self._inner.put(item)


def test_a_call_that_passed_the_shutdown_check_still_runs() -> None:
    """review3: ``submit`` checked for shutdown without the lock, so a call could be queued
    behind shutdown's stop markers and never end (its done callback never fired)."""
    pool = WorkerPool(1, "t")
    warm = threading.Event()
    pool.submit(lambda: None).add_done_callback(lambda call: warm.set())
    assert warm.wait(WAIT_S) and pool.threads() == 1
    pool._queue = _ShutdownDuringPut(pool, race_s=0.5)  # type: ignore[assignment]
    ran = threading.Event()
    pool.submit(ran.set)
    assert ran.wait(WAIT_S), "the call was queued behind the stop marker and never ran"
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)
