"""Diagnostics for P4 programs: ``file:line:col: error: message`` with the source line
and a caret, as p4c prints them.

Example::

    >>> from p4sim.frontend.ast import Loc
    >>> err = P4Error("unknown name 'x'", Loc("a.p4", 3, 5))
    >>> str(err)
    "a.p4:3:5: error: unknown name 'x'"
"""
from __future__ import annotations

import os
from typing import Optional

from p4sim.frontend.ast import Loc


class P4Error(Exception):
    """A compile-time problem in a P4 program. ``kind`` is ``error`` or ``unsupported``."""

    kind = "error"

    def __init__(self, message: str, loc: Optional[Loc] = None) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc

    def __str__(self) -> str:
        where = f"{self.loc}: " if self.loc is not None and self.loc.line > 0 else ""
        return f"{where}{self.kind}: {self.message}"

    def render(self) -> str:
        """The message followed by the offending source line and a caret under the column."""
        text = str(self)
        line = source_line(self.loc) if self.loc is not None else None
        if line is not None:
            caret = " " * (max(self.loc.col, 1) - 1) + "^"
            text += "\n" + line.rstrip("\n") + "\n" + caret
        return text


class P4Unsupported(P4Error):
    """A valid P4 construct that p4sim does not implement (never silently mis-executed)."""

    kind = "unsupported"

    def __init__(self, message: str, loc: Optional[Loc] = None) -> None:
        if message.startswith("unsupported: "):
            message = message[len("unsupported: "):]
        super().__init__(message, loc)


class P4FatalError(P4Error):
    """A preprocessor error that cpp calls fatal (an ``#include`` it cannot find): p4c
    prints cpp's line as it is, ``file:line:col: fatal error: x.p4: No such file or directory``.

        >>> str(P4FatalError("x.p4: No such file or directory", Loc("a.p4", 3, 10)))
        'a.p4:3:10: fatal error: x.p4: No such file or directory'
    """

    kind = "fatal error"


class P4RuntimeError(Exception):
    """A problem while executing a packet that the target cannot recover from
    (e.g. an assert() that fails). Per-packet problems with a defined v1model behaviour
    (parser errors, out-of-bounds stack accesses) are not reported this way."""


# Text of files seen by the front end, so that errors can quote the offending line even
# for sources that only existed in memory (tests, generated code).
_SOURCES: dict[str, list[str]] = {}


def remember_source(path: str, text: str) -> None:
    """Keep a file's text so that later diagnostics can print its lines."""
    _SOURCES[path] = text.splitlines()


def forget_source(path: str) -> None:
    """Drop what :func:`remember_source` kept for ``path``: its lines are read from the file
    again (``p4sim-p4c-bm2-ss`` compiles the preprocessed text under the program's name,
    and its diagnostics quote the program's own lines)."""
    _SOURCES.pop(path, None)


def source_line(loc: Loc) -> Optional[str]:
    lines = _SOURCES.get(loc.file)
    if lines is None and os.path.isfile(loc.file):
        try:
            with open(loc.file, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return None
        _SOURCES[loc.file] = lines
    if lines is None or not 1 <= loc.line <= len(lines):
        return None
    return lines[loc.line - 1]
