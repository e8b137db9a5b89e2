"""NicPort.run holds its step_lock around every step (the TCCL agent moves flows under it)."""
from __future__ import annotations

import socket
from types import TracebackType
from typing import Optional

from host.nic.io import DatagramIO, NicPort


class CountingLock:
    def __init__(self) -> None:
        self.entered = 0
        self.held = False

    def __enter__(self) -> "CountingLock":
        assert not self.held
        self.held = True
        self.entered += 1
        return self

    def __exit__(self, t: Optional[type[BaseException]], e: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.held = False


def test_every_step_of_run_holds_the_step_lock() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    lock = CountingLock()
    port = NicPort(DatagramIO(a), line_rate_bps=1e8, step_lock=lock)
    steps = []
    real_step = port.step

    def step(now: float) -> int:
        assert lock.held
        steps.append(now)
        return real_step(now)

    port.step = step  # type: ignore[method-assign]
    ticks = iter(i * 0.001 for i in range(1000))
    port.run(0.01, clock=lambda: next(ticks), max_idle_s=0.0)
    assert steps and lock.entered == len(steps)
    a.close()
    b.close()
