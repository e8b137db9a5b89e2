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


def expr_text(e: A.Expr) -> str:
    """Source-like text of an expression; ``?`` for a form that has none."""
    if isinstance(e, A.IntLit):
        return e.text or str(e.value)
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.StringLit):
        return f'"{e.value}"'
    if isinstance(e, A.NameRef):
        return ("." if e.is_global else "") + e.name
    if isinstance(e, A.Member):
        return f"{expr_text(e.expr)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, A.Slice):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, A.Unary):
        return f"{e.op}{expr_text(e.expr)}"
    if isinstance(e, A.Binary):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, A.Call):
        return f"{expr_text(e.func)}({', '.join(expr_text(a.value) for a in e.args)})"
    if isinstance(e, A.Cast):
        return f"({type_text(e.type)}){expr_text(e.expr)}"
    if isinstance(e, A.DontCare):
        return "_"
    if isinstance(e, A.ListExpr):   # as p4c prints a list expression: { a, b }
        return "{ " + ", ".join(map(expr_text, e.elems)) + " }" if e.elems else "{}"
    if isinstance(e, A.StructExpr):
        return "{ " + ", ".join(f"{n} = {expr_text(x)}" for n, x in e.fields) + " }" if e.fields else "{}"
    return "?"


def type_text(t: A.TypeRef) -> str:
    """Source-like text of a type reference (``bit<8>``, a name); ``?`` otherwise."""
    if isinstance(t, A.BitType):
        return f"{'int' if t.signed else 'bit'}<{expr_text(t.width)}>"
    if isinstance(t, (A.NamedType, A.BaseType)):
        return t.name
    return "?"


__all__ = ["expr_text", "type_text"]


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
