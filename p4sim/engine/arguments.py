"""Matching the arguments of a call, an instantiation or an extern method to the
declared parameters: positional or named, with defaults and ``@optional`` parameters.

Example::

    >>> from p4sim.frontend import ast as A
    >>> params = [A.Param("in", A.BaseType("bool"), "a"), A.Param("in", A.BaseType("bool"), "b")]
    >>> args = [A.Argument(A.BoolLit(True), name="b"), A.Argument(A.BoolLit(False), name="a")]
    >>> [x.value for x in bind_args(params, args, A.NameRef("f"), "f")]
    [False, True]
"""
from __future__ import annotations

from typing import Optional

from p4sim.errors import P4Error
from p4sim.frontend import ast as A


def bind_args(params: list[A.Param], args: list[A.Argument], node: A.Node,
              what: str) -> list[Optional[A.Expr]]:
    """The argument expression of each parameter (None: an ``@optional`` one left out);
    raises :class:`~p4sim.errors.P4Error` at ``node`` naming ``what``."""
    result: list[Optional[A.Expr]] = [None] * len(params)
    named = any(a.name for a in args)
    if named:
        if not all(a.name for a in args):
            raise P4Error(f"{what}: cannot mix named and positional arguments", node.loc)
        index = {p.name: i for i, p in enumerate(params)}
        for a in args:
            if a.name not in index:
                raise P4Error(f"{what}: no parameter named '{a.name}'", a.loc)
            result[index[a.name]] = a.value
    else:
        if len(args) > len(params):
            raise P4Error(f"{what}: too many arguments ({len(args)} given, {len(params)} expected)", node.loc)
        for i, a in enumerate(args):
            result[i] = a.value
    for i, p in enumerate(params):
        if result[i] is None:
            if p.default is not None:
                result[i] = p.default
            elif not any(an.name == "optional" for an in p.annotations):
                raise P4Error(f"{what}: missing argument for parameter '{p.name}'", node.loc)
    return result


def call_order(params: list[A.Param], args: list[A.Argument]) -> list[int]:
    """Per parameter, where its argument is written in the call: with named arguments the
    order of the call, not of the declaration (p4c evaluates and copies out arguments in
    the order they are written; a parameter left to its default comes after them).

    >>> params = [A.Param("inout", A.BaseType("bool"), "x"), A.Param("inout", A.BaseType("bool"), "y")]
    >>> call_order(params, [A.Argument(A.BoolLit(True), name="y"), A.Argument(A.BoolLit(False), name="x")])
    [1, 0]
    >>> call_order(params, [A.Argument(A.BoolLit(True)), A.Argument(A.BoolLit(False))])
    [0, 1]
    """
    written = {a.name: i for i, a in enumerate(args) if a.name}
    if not written:
        return list(range(len(params)))
    return [written.get(p.name, len(args) + i) for i, p in enumerate(params)]

