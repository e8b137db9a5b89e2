"""Expressions and types written back as P4 source text: how p4c names a table key in
P4Info (``hdr.ipv4.dst_addr``) and quotes an expression in a message.

Example::

    >>> from p4sim.frontend import ast as A
    >>> expr_text(A.Slice(A.NameRef("x"), A.IntLit(7, text="7"), A.Unary("-", A.IntLit(1, text="1"))))
    'x[7:-1]'
    >>> expr_text(A.Member(A.NameRef("hdr"), "ipv4"))
    'hdr.ipv4'
    >>> expr_text(A.ListExpr([A.BoolLit(True), A.NameRef("x")]))
    '{ true, x }'
"""
from __future__ import annotations

import re
from dataclasses import replace

from p4sim.errors import source_line
from p4sim.frontend import ast as A


# p4c's printing precedences (lib/dbprint.h: C's order): an operand is parenthesised
# where its operator binds more loosely than its context needs; a binary operator's left
# operand may be of its own precedence, its right operand must bind tighter, so
# ``(a + 1) % b``, ``a - (b - c)`` and ``a - b - c`` print as p4c prints them
_POSTFIX, _PREFIX = 17, 16
_BINARY_PREC = {
    "*": 15, "/": 15, "%": 15,
    "+": 14, "-": 14, "|+|": 14, "|-|": 14, "++": 14,
    "<<": 13, ">>": 13,
    "<": 12, "<=": 12, ">": 12, ">=": 12,
    "==": 11, "!=": 11,
    "&": 10, "^": 9, "|": 8, "&&": 7, "||": 6,
    "&&&": 2, "..": 2,
}
_COND = 5


def expr_text(e: A.Expr) -> str:
    """Source-like text of an expression, parenthesised as p4c prints it; ``?`` for a
    form that has none.

    Example::

        >>> x, y = A.NameRef("x"), A.NameRef("y")
        >>> expr_text(A.Binary("%", A.Binary("+", x, A.IntLit(1, text="1")), y))
        '(x + 1) % y'
        >>> expr_text(A.Binary("-", A.Binary("-", x, y), A.Binary("-", y, x)))
        'x - y - (y - x)'
    """
    return _text(e, 0)


def operand_text(op: str, operand: A.Expr, text: str, right: bool) -> str:
    """``text`` (the operand ``operand`` of binary ``op`` as printed alone), parenthesised
    where p4c's printing puts it in parentheses.

    >>> operand_text("%", A.Binary("+", A.NameRef("x"), A.NameRef("y")), "x + y", False)
    '(x + y)'
    """
    prec = _BINARY_PREC.get(op, 2)
    return _wrap(text, _own_prec(operand), prec + 1 if right else prec)


def _own_prec(e: A.Expr) -> int:
    if isinstance(e, A.Binary):
        return _BINARY_PREC.get(e.op, 2)
    if isinstance(e, (A.Unary, A.Cast)):
        return _PREFIX
    if isinstance(e, A.Ternary):
        return _COND
    return _POSTFIX


def _wrap(text: str, own: int, needed: int) -> str:
    return f"({text})" if own < needed else text


def _text(e: A.Expr, needed: int) -> str:
    if isinstance(e, A.IntLit):
        return e.text or str(e.value)
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.StringLit):
        return f'"{e.value}"'
    if isinstance(e, A.NameRef):
        return ("." if e.is_global else "") + e.name
    if isinstance(e, A.Member):
        return f"{_text(e.expr, _POSTFIX)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{_text(e.expr, _POSTFIX)}[{_text(e.index, 0)}]"
    if isinstance(e, A.Slice):
        return f"{_text(e.expr, _POSTFIX)}[{_text(e.hi, 0)}:{_text(e.lo, 0)}]"
    if isinstance(e, A.Unary):
        return _wrap(f"{e.op}{_text(e.expr, _PREFIX)}", _PREFIX, needed)
    if isinstance(e, A.Binary):
        prec = _BINARY_PREC.get(e.op, 2)
        return _wrap(f"{_text(e.left, prec)} {e.op} {_text(e.right, prec + 1)}", prec, needed)
    if isinstance(e, A.Call):
        return f"{_text(e.func, _POSTFIX)}({', '.join(_text(a.value, 0) for a in e.args)})"
    if isinstance(e, A.Cast):
        return _wrap(f"({type_text(e.type)}){_text(e.expr, _PREFIX)}", _PREFIX, needed)
    if isinstance(e, A.Ternary):
        return _wrap(f"{_text(e.cond, _COND + 1)} ? {_text(e.then, _COND)} : {_text(e.other, _COND)}",
                     _COND, needed)
    if isinstance(e, A.DontCare):
        return "_"
    if isinstance(e, A.ListExpr):   # as p4c prints a list expression: { a, b }
        return "{ " + ", ".join(_text(x, 0) for x in e.elems) + " }" if e.elems else "{}"
    if isinstance(e, A.StructExpr):
        return "{ " + ", ".join(f"{n} = {_text(x, 0)}" for n, x in e.fields) + " }" if e.fields else "{}"
    return "?"


def type_text(t: A.TypeRef) -> str:
    """Source-like text of a type reference (``bit<8>``, a name); ``?`` otherwise."""
    if isinstance(t, A.BitType):
        return f"{'int' if t.signed else 'bit'}<{expr_text(t.width)}>"
    if isinstance(t, (A.NamedType, A.BaseType)):
        return t.name
    return "?"


__all__ = ["expr_text", "operand_text", "type_text"]


def at_name(loc: A.Loc, name: str) -> A.Loc:
    """Where ``name`` is written at or after ``loc`` (p4c points at the name of a
    declaration or parameter; p4sim's nodes start where the declaration starts)."""
    for extra in range(24):   # a declaration may span lines (a tuple typedef, an instance's arguments)
        line = source_line(replace(loc, line=loc.line + extra))
        if line is None:
            break
        m = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])").search(
            line, loc.col - 1 if extra == 0 else 0)
        if m:
            return replace(loc, line=loc.line + extra, col=m.start() + 1)
    return loc
