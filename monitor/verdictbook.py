"""The record of a monitor's evaluations — the verdicts named and cleared, and whether
each evaluation found the fabric quiet — with the bounded waits scenarios and tests use.
One owner for both ways of running the monitor: :class:`monitor.service.Monitor` adds to
it after each evaluation, :class:`monitor.remote.MonitorProcess` from its child's lines.

>>> from monitor.evidence import Verdict
>>> book = VerdictBook()
>>> book.add([Verdict("hung_switch", "switch s1", 0.9, (), 1.0)], [], quiet=False)
>>> book.wait_verdict(lambda v: v.kind == "hung_switch", 0.1).component
'switch s1'
>>> book.add([], [], quiet=True); book.evaluations
2
>>> book.end(); book.wait_evaluations(1, 5.0)         # ended: no wait
False
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Iterable, Optional

from monitor.evidence import Verdict


class VerdictBook:
    """Verdicts named (:attr:`verdicts`) and cleared (:attr:`cleared`) in order, one
    quiet flag per evaluation (:attr:`quiet`: no bad link, no silent switch, no fault
    active in the localiser), and waits that return early once :meth:`end` was called
    (the monitor behind it stopped)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.verdicts: list[Verdict] = []
        self.cleared: list[Verdict] = []
        self.quiet: list[bool] = []
        self.ended = False

    @property
    def evaluations(self) -> int:
        """Evaluations recorded so far."""
        return len(self.quiet)

    def add(self, named: Iterable[Verdict], cleared: Iterable[Verdict], quiet: bool) -> None:
        """Record one evaluation and wake the waiters."""
        with self.cond:
            self.verdicts.extend(named)
            self.cleared.extend(cleared)
            self.quiet.append(quiet)
            self.cond.notify_all()

    def end(self) -> None:
        """No evaluation will come any more: every wait returns."""
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def _until(self, done: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0 or self.ended:
                    return False
                self.cond.wait(left)
        return True

    def wait_evaluations(self, n: int, timeout_s: float) -> bool:
        """Until ``n`` more evaluations are recorded (bounded)."""
        with self.cond:
            target = self.evaluations + n
        return self._until(lambda: self.evaluations >= target, timeout_s)

    def wait_verdict(self, predicate: Callable[[Verdict], bool], timeout_s: float,
                     since: int = 0) -> Optional[Verdict]:
        """The first verdict from index ``since`` of :attr:`verdicts` that satisfies
        ``predicate``, waiting at most ``timeout_s``; ``None`` if none came."""
        found: list[Verdict] = []

        def seen() -> bool:
            found[:] = [v for v in self.verdicts[since:] if predicate(v)][:1]
            return bool(found)
        self._until(seen, timeout_s)
        return found[0] if found else None

    def wait_quiet(self, timeout_s: float, clean_evaluations: int = 3) -> bool:
        """Until ``clean_evaluations`` evaluations in a row, all recorded after the call,
        were quiet (bounded): the fabric is back to health, so what comes next is not the
        last fault's tail."""
        with self.cond:
            first = len(self.quiet)

        def calm() -> bool:
            run = 0
            for q in self.quiet[first:]:
                run = run + 1 if q else 0
                if run >= clean_evaluations:
                    return True
            return False
        return self._until(calm, timeout_s)


class MonitorWaits:
    """What a monitor offers the ones waiting on it, over its ``book`` (a
    :class:`VerdictBook`): the base of :class:`monitor.service.Monitor` and
    :class:`monitor.remote.MonitorProcess`, so the two answer alike."""

    book: VerdictBook

    @property
    def verdicts(self) -> list[Verdict]:
        """Every verdict named, in order."""
        return self.book.verdicts

    @property
    def cleared(self) -> list[Verdict]:
        """Every verdict cleared, in order."""
        return self.book.cleared

    @property
    def evaluations(self) -> int:
        """Evaluations run so far."""
        return self.book.evaluations

    def wait_evaluations(self, n: int, timeout_s: float) -> bool:
        """Until ``n`` more evaluations have run (bounded; False at once once the monitor
        stopped)."""
        return self.book.wait_evaluations(n, timeout_s)

    def wait_verdict(self, predicate: Callable[[Verdict], bool], timeout_s: float,
                     since: int = 0) -> Optional[Verdict]:
        """The first verdict from index ``since`` of :attr:`verdicts` that satisfies
        ``predicate``, waiting at most ``timeout_s``; ``None`` if none came."""
        return self.book.wait_verdict(predicate, timeout_s, since)

    def wait_quiet(self, timeout_s: float, clean_evaluations: int = 3) -> bool:
        """Until ``clean_evaluations`` evaluations in a row saw no bad link, no silent
        switch and no fault active in the localiser (bounded)."""
        return self.book.wait_quiet(timeout_s, clean_evaluations)


__all__ = ["MonitorWaits", "VerdictBook"]
