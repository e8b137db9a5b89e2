"""Per-link utilisation windows of GOR's loop: the last ``window_s`` of telemetry samples
of every link direction, whose mean is the load the decision rounds plan on.

The loop adds each interval's utilisation and length (:meth:`LoadWindows.add`, which
returns the window's mean); a decision round asks for the mean of the last ``proof_s``
only (:meth:`LoadWindows.recent`: is an overload proven?); a restarted switch's windows
are forgotten (:meth:`LoadWindows.forget`: its counters restarted from zero).

A window's mean weighs each interval by its length: it is the packets of the window over
its seconds. Polls come at uneven intervals (a switch's alarm makes GOR poll early, a
loaded machine answers late), and a plain mean of per-interval rates reads high — a short
interval's rate is as noisy as a long one's but counts as much (on the testbed, two
uplinks offered 70 % each read 75-80 %, and GOR kept re-checking them for ever).

>>> w = LoadWindows(window_s=1.0)
>>> [round(w.add(("b0r0l0", 3), t, u, dt), 3) for t, u, dt in [(0.0, 0.2, 0.5), (0.5, 0.4, 0.5), (1.0, 0.9, 0.5)]]
[0.2, 0.3, 0.65]
>>> round(w.add(("b0r0l0", 3), 1.1, 0.1, dt_s=0.1), 3)      # a short interval weighs less
0.6
>>> round(w.recent(("b0r0l0", 3), span_s=0.5), 3)
0.767
>>> w.recent(("s0", 1), span_s=0.5)
0.0
"""
from __future__ import annotations

from collections import deque

from controller.gor.decisions import LinkKey


class LoadWindows:
    """``(t_s, util, dt_s)`` samples of every link, each kept ``window_s`` (see the
    module docstring)."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.samples: dict[LinkKey, deque[tuple[float, float, float]]] = {}

    def add(self, link: LinkKey, t_s: float, util: float, dt_s: float = 1.0) -> float:
        """Add ``link``'s utilisation ``util`` (0..1) over the interval of ``dt_s``
        seconds ending at ``t_s``, drop samples older than ``window_s`` (the newest
        stays); returns the window's mean (weighted by the intervals' lengths)."""
        win = self.samples.setdefault(link, deque())
        win.append((t_s, util, max(dt_s, 0.0)))
        while len(win) > 1 and win[0][0] <= t_s - self.window_s:
            win.popleft()
        return _weighted(win)

    def recent(self, link: LinkKey, span_s: float) -> float:
        """Mean utilisation of ``link`` over its last ``span_s`` of samples (0 if none)."""
        win = self.samples.get(link)
        if not win:
            return 0.0
        last = win[-1][0]
        return _weighted([x for x in win if x[0] >= last - span_s - 1e-9])

    def forget(self, link: LinkKey) -> None:
        """Drop ``link``'s samples (a restarted switch: its counters began again)."""
        self.samples.pop(link, None)


__all__ = ["LoadWindows"]


def _weighted(samples: "deque[tuple[float, float, float]] | list[tuple[float, float, float]]") -> float:
    """Mean utilisation of ``(t_s, util, dt_s)`` samples weighted by ``dt_s`` (a plain
    mean when no interval has a length)."""
    total_s = sum(dt for _, _, dt in samples)
    if total_s <= 0:
        return sum(u for _, u, _ in samples) / len(samples)
    return sum(u * dt for _, u, dt in samples) / total_s

