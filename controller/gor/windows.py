"""Per-link utilisation windows of GOR's loop: the last ``window_s`` of telemetry samples
of every link direction, whose mean is the load the decision rounds plan on.

The loop adds each interval's utilisation (:meth:`LoadWindows.add`, which returns the
window's mean); a decision round asks for the mean of the last ``proof_s`` only
(:meth:`LoadWindows.recent`: is an overload proven?); a restarted switch's windows are
forgotten (:meth:`LoadWindows.forget`: its counters restarted from zero).

>>> w = LoadWindows(window_s=1.0)
>>> [w.add(("b0r0l0", 3), t, u) for t, u in [(0.0, 0.2), (0.5, 0.4), (1.0, 0.9)]]
[0.2, 0.30000000000000004, 0.65]
>>> w.recent(("b0r0l0", 3), span_s=0.5)
0.65
>>> w.recent(("s0", 1), span_s=0.5)
0.0
"""
from __future__ import annotations

from collections import deque

from controller.gor.decisions import LinkKey


class LoadWindows:
    """``(t_s, util)`` samples of every link, each kept ``window_s`` (see the module
    docstring)."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.samples: dict[LinkKey, deque[tuple[float, float]]] = {}

    def add(self, link: LinkKey, t_s: float, util: float) -> float:
        """Add ``link``'s utilisation ``util`` (0..1) at ``t_s``, drop samples older than
        ``window_s`` (the newest stays); returns the window's mean."""
        win = self.samples.setdefault(link, deque())
        win.append((t_s, util))
        while len(win) > 1 and win[0][0] <= t_s - self.window_s:
            win.popleft()
        return sum(u for _, u in win) / len(win)

    def recent(self, link: LinkKey, span_s: float) -> float:
        """Mean utilisation of ``link`` over its last ``span_s`` of samples (0 if none)."""
        win = self.samples.get(link)
        if not win:
            return 0.0
        last = win[-1][0]
        recent = [u for t, u in win if t >= last - span_s - 1e-9]
        return sum(recent) / len(recent)

    def forget(self, link: LinkKey) -> None:
        """Drop ``link``'s samples (a restarted switch: its counters began again)."""
        self.samples.pop(link, None)


__all__ = ["LoadWindows"]
