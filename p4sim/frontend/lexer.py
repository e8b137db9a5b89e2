"""Tokens of P4_16 source text (the output of :mod:`p4sim.frontend.preprocess`).

Honours ``#line N "file"`` markers so that every token's :class:`Loc` points into the file
the user wrote. ``>`` is always a single token (``>>`` is recognised by the parser from two
adjacent ``>``), which lets ``bit<bit<8>>``-style type argument lists close naturally.

Example::

    >>> [t.text for t in tokenize("bit<8> x = 8w5;", "a.p4")][:6]
    ['bit', '<', '8', '>', 'x', '=']
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from p4sim.errors import P4Error
from p4sim.frontend.ast import Loc

# Reserved words. Soft keywords (key, actions, entries, state, type, apply, priority, …)
# are lexed as identifiers and recognised by the parser where the grammar expects them.
KEYWORDS = frozenset("""
abstract action bit bool break const continue control default else enum error exit extern
false for header header_union if in inout int list match_kind out package parser return
select string struct switch table this transition true tuple typedef value_set varbit void
""".split())

# Longest first so that the regular expression alternation picks the longest operator.
# The compound assignments (``+=`` … ``|-|=``) are tokens as in p4c's lexer, except ``>>=``:
# like ``>>`` it is read by the parser from ``>`` followed by an adjacent ``>=``.
OPERATORS = sorted("""
|+|= |-|= <<= &&& |+| |-| ... .. ++ << <= >= == != && || += -= *= /= %= &= |= ^= +: = < > ! ~ - + * / % & | ^
? : ; , . ( ) [ ] { } @ _
""".split(), key=len, reverse=True)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(
    r"(?:(\d+)([ws]))?"
    r"(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[dD][0-9_]+|[0-9][0-9_]*)")
_LINE_MARKER = re.compile(r'#\s*line\s+(\d+)(?:\s+"([^"]*)")?[^\n]*')
_OP = re.compile("|".join(re.escape(o) for o in OPERATORS if o != "_"))
# p4c's maximumWidthSupported (ir/configuration.h), the widest typed literal it reads
MAX_LITERAL_WIDTH_BITS = 2048
_BASES = {"x": 16, "o": 8, "b": 2, "d": 10}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}


@dataclass(slots=True)
class Token:
    """One token: ``kind`` is ``ident``, ``kw``, ``int``, ``string``, ``op``, ``bad`` (a
    character that starts no token) or ``eof``.

    ``value`` is the spelling (ident/kw/op), the integer value (int) or the unescaped text
    (string); ``text`` is always the source spelling. ``width``/``signed`` come from
    ``8w5``/``8s5`` prefixes.

    Example::

        >>> Token("op", ">", Loc("a.p4", 1, 3), ">").value
        '>'
    """

    kind: str
    value: object
    loc: Loc
    text: str
    width: Optional[int] = None
    signed: Optional[bool] = None

    @property
    def end_col(self) -> int:
        return self.loc.col + len(self.text)

    def describe(self) -> str:
        """How a syntax error names this token (``'}'``, ``identifier "x"``, …)."""
        if self.kind == "eof":
            return "end of file"
        if self.kind == "ident":
            return f'identifier "{self.text}"'
        if self.kind == "int":
            return f'integer "{self.text}"'
        if self.kind == "string":
            return f"string literal {self.text}"
        return f"'{self.text}'"


def parse_int(text: str, loc: Loc) -> tuple[int, Optional[int], Optional[bool]]:
    """Value, width and signedness of an integer literal such as ``16w0x1_0``.

    Example::

        >>> parse_int("8s0b101", Loc("a", 1, 1))
        (5, 8, True)
    """
    m = _NUMBER.fullmatch(text)
    if m is None:
        raise P4Error(f"invalid integer literal '{text}'", loc)
    width_s, ws, digits = m.groups()
    digits = digits.replace("_", "")
    base = 10
    if len(digits) > 1 and digits[0] == "0" and digits[1].lower() in _BASES:
        base = _BASES[digits[1].lower()]
        digits = digits[2:]
    if not digits:
        raise P4Error(f"invalid integer literal '{text}'", loc)
    value = int(digits, base)
    if width_s is None:
        return value, None, None
    width = int(width_s)
    if width > MAX_LITERAL_WIDTH_BITS:
        # p4c's parseConstantWithWidth (frontends/common/constantParsing.cpp)
        raise P4Error(f"{text}: {width} size too large", loc)
    if width == 0 and ws == "s":
        raise P4Error(f"invalid integer literal '{text}': signed width must be > 0", loc)
    return value, width, ws == "s"


def tokenize(text: str, filename: str = "<input>") -> list[Token]:
    """Split preprocessed ``text`` into tokens, ending with an ``eof`` token.

    Raises :class:`P4Error` for unterminated comments or strings and malformed integer
    literals; a character that cannot start a token becomes a ``bad`` token.
    """
    toks: list[Token] = []
    file, line, line_start = filename, 1, 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
            line_start = i
            continue
        if ch in " \t\r\f\v":
            i += 1
            continue
        col = i - line_start + 1
        loc = Loc(file, line, col)
        if ch == "#" and text[line_start:i].strip() == "":
            m = _LINE_MARKER.match(text, i)
            if m is None:
                raise P4Error("unexpected character '#'", loc)
            line = int(m.group(1)) - 1
            if m.group(2) is not None:
                file = m.group(2)
            i = m.end()
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise P4Error("unterminated comment", loc)
            chunk = text[i:j]
            nl = chunk.count("\n")
            if nl:
                line += nl
                line_start = i + chunk.rfind("\n") + 1
            i = j + 2
            continue
        if ch.isdigit():
            m = _NUMBER.match(text, i)
            assert m is not None
            end = m.end()
            if end < n and (text[end].isalnum() or text[end] == "_"):
                bad = _IDENT.match(text, i) or re.compile(r"\w+").match(text, i)
                assert bad is not None
                raise P4Error(f"invalid integer literal '{bad.group(0)}'", loc)
            spelling = m.group(0)
            value, width, signed = parse_int(spelling, loc)
            toks.append(Token("int", value, loc, spelling, width, signed))
            i = end
            continue
        if ch.isalpha() or ch == "_":
            m = _IDENT.match(text, i)
            assert m is not None
            word = m.group(0)
            if word == "_":
                toks.append(Token("op", "_", loc, "_"))
            else:
                toks.append(Token("kw" if word in KEYWORDS else "ident", word, loc, word))
            i = m.end()
            continue
        if ch == '"':
            # as p4c's lexer, a string literal may span lines (its newlines are kept)
            j = i + 1
            out: list[str] = []
            while True:
                if j >= n:
                    raise P4Error("unterminated string literal", loc)
                c = text[j]
                if c == '"':
                    break
                if c == "\\" and j + 1 < n:
                    out.append(_ESCAPES.get(text[j + 1], "\\" + text[j + 1]))
                    j += 2
                else:
                    out.append(c)
                    j += 1
                if text[j - 1] == "\n":
                    line += 1
                    line_start = j
            toks.append(Token("string", "".join(out), loc, text[i:j + 1]))
            i = j + 1
            continue
        m = _OP.match(text, i)
        if m is not None:
            op = m.group(0)
            toks.append(Token("op", op, loc, op))
            i = m.end()
            continue
        # as p4c's lexer: a character no token starts with is a token of its own, allowed
        # in a free-form annotation's body (``@note(that's it)``); the parser refuses it
        # anywhere else with "unexpected character"
        toks.append(Token("bad", ch, loc, ch))
        i += 1
    toks.append(Token("eof", "", Loc(file, line, i - line_start + 1), ""))
    return toks
