"""What p4c-bm2-ss's preprocessor step does to a program path that a shell reads otherwise.

p4c-bm2-ss 1.2.5.16 runs the C preprocessor through ``popen``, one command line for
``/bin/sh``: ``cpp ... -I<dir> ... <file>``, the include folders as given and the file with
its non-ASCII bytes written as octal escapes (``é`` is ``\\303\\251``). The shell then
reads that line: it splits words at blanks, drops the backslashes (``\\303`` is ``303``),
expands ``$name`` and stops at an unquoted ``(`` or ``)``. So p4c refuses, whatever the
program says, a file whose path has a non-ASCII character, a blank, ``$``, a quote or a
parenthesis, and any include folder with a blank or a parenthesis (measured on 1.2.5.16
with programs of our own: ``é.p4``, ``a b.p4``, ``a$b.p4``, ``k (p4)/a.p4``, ``-I "sp ace"``;
a non-ASCII include folder passes, it is not escaped). What it prints (cpp's, the shell's,
then p4c's two lines)::

    cc1: fatal error: 303251.p4: No such file or directory
    compilation terminated.
    [--Werror=I/O error] error: Preprocessor returned exit code 256; aborting compilation
    [--Werror=overlimit] error: 1 errors encountered, aborting compilation

or, for a parenthesis, ``sh: 1: Syntax error: "(" unexpected`` and exit code 512.
``p4sim-p4c-bm2-ss`` and ``p4sim-p4c`` (:mod:`p4sim.tutorials.p4c`) refuse the same paths
with the same lines, so they never accept what p4c refuses (issue 35, second corpus).
``python -m p4sim`` and the simulator read any path.

Example::

    >>> cpp_failure("ok/a.p4", ["ok"]) is None
    True
    >>> cpp_failure("é.p4", [])[0]
    'cc1: fatal error: 303251.p4: No such file or directory'
    >>> cpp_failure("k (p4)/a.p4", ["k (p4)"])[0]
    'sh: 1: Syntax error: "(" unexpected'
"""
from __future__ import annotations

import os
import re
import shlex
from typing import Optional, Sequence

_SYNTAX = "()"          # the shell stops at these, unquoted
_OTHER_META = ";&|<>`"  # would run or redirect something: refused as a syntax error too


def _escaped(path: str) -> str:
    """The path as p4c writes it into the command line: printable ASCII as it is, every
    other byte of its UTF-8 as a backslash and three octal digits."""
    out = []
    for byte in path.encode("utf-8", "surrogateescape"):
        out.append(chr(byte) if 0x20 <= byte < 0x7F else f"\\{byte:03o}")
    return "".join(out)


def _unquoted_meta(line: str) -> Optional[str]:
    """The first shell operator character outside quotes (``None`` when there is none)."""
    quote = ""
    escaped = False
    for ch in line:
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in _SYNTAX + _OTHER_META:
            return ch
    return None


def _tail(code: int) -> list[str]:
    return [f"[--Werror=I/O error] error: Preprocessor returned exit code {code}; aborting compilation",
            "[--Werror=overlimit] error: 1 errors encountered, aborting compilation"]


def cpp_failure(program: str, include_dirs: Sequence[str]) -> Optional[list[str]]:
    """The lines p4c-bm2-ss prints when its preprocessor command line cannot name
    ``program`` (see the module docstring), or ``None`` when the path reaches cpp intact
    (or the shell hands cpp a file that exists, which this does not follow)."""
    words = [f"-I{d}" for d in include_dirs] + [_escaped(program)]
    line = " ".join(words)
    meta = _unquoted_meta(line)
    if meta is not None:
        return [f'sh: 1: Syntax error: "{meta}" unexpected'] + _tail(512)
    expanded = re.sub(r"\$(\{[^}]*\}|\w+)", "", line)   # no such variable in p4c's environment
    try:
        argv = shlex.split(expanded, posix=True)
    except ValueError:                                   # an unclosed quote
        return ["sh: 1: Syntax error: Unterminated quoted string"] + _tail(512)
    inputs = [w for w in argv if not w.startswith("-")]
    if inputs[:1] == [program] and len(inputs) == 1:
        return None
    if not inputs:
        return None
    first = inputs[0]
    if first != program and os.path.exists(first):
        return None
    if first == program:
        return None
    return [f"cc1: fatal error: {first}: No such file or directory", "compilation terminated."] + _tail(256)


__all__ = ["cpp_failure"]
