"""The verdict of a lab checker: a list of passed and failed checks, each failure with a hint
in words a student understands, printed as plain text.

Example::

    >>> r = Report("ECMP hashing")
    >>> r.ok("1000 flows left on the uplink the hash model predicts")
    >>> r.passed
    True
    >>> r.fail("flow 10.0.0.1 -> 10.1.0.2 sport 49152 left on port 3",
    ...        "the hash model says port 4: did you hash src, dst, proto, sport, dport in order?")
    >>> r.passed, r.exit_code
    (False, 1)
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Optional, TextIO

PASS_MARK = "\u2714"   # ✔
FAIL_MARK = "\u2718"   # ✘


@dataclass(frozen=True, slots=True)
class Check:
    """One judged statement: ``Check(True, "PAUSE frame is bit-exact")``."""

    passed: bool
    what: str
    hint: str = ""


@dataclass(slots=True)
class Report:
    """Results of one ``make check``. A report with no checks at all has not passed.

    >>> r = Report("PFC"); r.note("switch up"); r.ok("PAUSE at XOFF"); r.passed
    True
    """

    title: str
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def ok(self, what: str) -> None:
        """Record a check that passed."""
        self.checks.append(Check(True, what))

    def fail(self, what: str, hint: str = "") -> None:
        """Record a check that failed; ``hint`` says what to look at in the student's files."""
        self.checks.append(Check(False, what, hint))

    def expect(self, condition: bool, what: str, hint: str = "") -> bool:
        """``ok(what)`` when ``condition`` holds, else ``fail(what, hint)``; returns it.

        >>> Report("x").expect(1 + 1 == 2, "arithmetic works")
        True
        """
        if condition:
            self.ok(what)
        else:
            self.fail(what, hint)
        return condition

    def note(self, text: str) -> None:
        """An informative line printed before the checks (what was set up, measured …)."""
        self.notes.append(text)

    @property
    def passed(self) -> bool:
        """True when there is at least one check and none failed."""
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        """The failed checks, in order."""
        return [c for c in self.checks if not c.passed]

    @property
    def exit_code(self) -> int:
        """0 when passed, 1 otherwise (what ``make check`` exits with)."""
        return 0 if self.passed else 1

    def render(self) -> str:
        """The report as plain text (what :meth:`print` writes).

        >>> r = Report("T"); r.fail("a", "b"); print(r.render().splitlines()[-1])
        RESULT: 0 of 1 checks passed - keep going, the hints above say where to look.
        """
        lines = [f"== {self.title} =="]
        lines += [f"  {n}" for n in self.notes]
        for c in self.checks:
            lines.append(f"{PASS_MARK if c.passed else FAIL_MARK} {c.what}")
            if not c.passed and c.hint:
                lines += [f"    hint: {h}" if i == 0 else f"          {h}"
                          for i, h in enumerate(c.hint.splitlines())]
        n_ok = sum(c.passed for c in self.checks)
        if self.passed:
            lines.append(f"RESULT: all {n_ok} checks passed - well done.")
        elif not self.checks:
            lines.append("RESULT: nothing was checked (the checker stopped early).")
        else:
            lines.append(f"RESULT: {n_ok} of {len(self.checks)} checks passed - keep going, "
                         "the hints above say where to look.")
        return "\n".join(lines)

    def print(self, file: Optional[TextIO] = None) -> None:
        """Write :meth:`render` to ``file`` (stdout by default)."""
        print(self.render(), file=file or sys.stdout, flush=True)
