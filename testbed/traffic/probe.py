"""Bounded readiness and settling probes for testbed runs (no fixed sleeps): a
condition polled until it holds or a deadline passes, a NIC emulator's raw socket seen
open in its namespace, a counter read until it stops changing.

>>> poll_until(lambda: True, timeout_s=1.0)
True
>>> reads = iter([1, 2, 3, 3, 3])
>>> read_until_stable(lambda: next(reads), interval_s=0.0, timeout_s=5.0)
(3, True)
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


def poll_until(cond: Callable[[], bool], timeout_s: float, interval_s: float = 0.02) -> bool:
    """Evaluate ``cond`` every ``interval_s`` until it is true (True) or ``timeout_s`` has
    passed (False): a bounded probe, not a fixed wait.

    >>> poll_until(lambda: False, timeout_s=0.05, interval_s=0.01)
    False
    """
    deadline = time.monotonic() + timeout_s
    pause = threading.Event()
    while True:
        if cond():
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        pause.wait(min(interval_s, left))


def read_until_stable(read: Callable[[], T], interval_s: float = 0.1, timeout_s: float = 3.0,
                      quiet_reads: int = 2) -> tuple[T, bool]:
    """Read ``read()`` every ``interval_s`` until ``quiet_reads`` reads in a row return the
    same value (the counters have stopped changing: the last frames are in); returns the
    last value and whether it settled before ``timeout_s``."""
    last = read()
    same = 1
    pause = threading.Event()
    deadline = time.monotonic() + timeout_s
    while same < quiet_reads:
        if time.monotonic() >= deadline:
            return last, False
        pause.wait(interval_s)
        now = read()
        same = same + 1 if now == last else 1
        last = now
    return last, True


def packet_socket_open(pid: int) -> bool:
    """True when process ``pid`` holds an AF_PACKET socket of its network namespace (the
    NIC emulator opens and binds its raw socket before it sends or answers anything):
    one of its ``/proc/PID/fd`` links names an inode listed in ``/proc/PID/net/packet``.
    False while it is still starting, or when it has gone.

    >>> packet_socket_open(os.getpid())
    False
    """
    try:
        rows = Path(f"/proc/{pid}/net/packet").read_text().splitlines()[1:]
        inodes = {row.split()[-1] for row in rows if row.split()}
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                return True
    except OSError:
        return False
    return False



__all__ = ["packet_socket_open", "poll_until", "read_until_stable"]
