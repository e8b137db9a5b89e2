"""Functions overloaded in one scope, as p4c allows: ``bit<8> f(in bit<8> x)`` and
``bit<8> f(in bit<8> x, in bit<8> y)`` may both be declared, and each call names the one
whose parameters its arguments fit (by count, and by name for named arguments; a
parameter with a default value may be left out). p4c's messages when the arguments fit
none or several (frontends/p4/typeChecking, ``ResolveReferences``): "f: declaration not
found", "f: multiple matching declarations" (at the called name). Declaring two that
fit the same calls is not itself an error.

Example::

    >>> from p4sim.frontend import ast as A
    >>> one = Sym("function", decl=A.FunctionDecl("f", params=[A.Param("in", None, "x")]))
    >>> two = Sym("function", decl=A.FunctionDecl("f", params=[A.Param("in", None, "x"),
    ...                                                      A.Param("in", None, "y")]))
    >>> call = A.Call(A.NameRef("f"), [A.Argument(A.NameRef("a"))])
    >>> Overloads([one, two]).choose(call) is one
    True
"""
from __future__ import annotations

from p4sim.engine.arguments import bind_args
from p4sim.engine.codegen import Sym
from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.text import expr_text


def fits(params: list[A.Param], args: list[A.Argument]) -> bool:
    """Whether a call with ``args`` can bind to ``params``."""
    try:
        bind_args(params, args, A.Call(A.NameRef("")), "")
    except P4Error:
        return False
    return True


class Overloads:
    """The function symbols declared under one name in one scope, in order."""

    def __init__(self, syms: list[Sym]) -> None:
        self.syms = syms

    @property
    def outer(self) -> frozenset[str]:
        """The outer names any of them uses (see :mod:`p4sim.engine.aliasing`)."""
        out: frozenset[str] = frozenset()
        for s in self.syms:
            out |= getattr(s.value, "outer", frozenset())
        return out

    def choose(self, e: A.Call) -> Sym:
        """The symbol ``e`` calls; :class:`P4Error` when none or several fit."""
        found = [s for s in self.syms if fits(s.decl.params, e.args)]
        if len(found) == 1:
            return found[0]
        what = "declaration not found" if not found else "multiple matching declarations"
        raise P4Error(f"{expr_text(e.func)}: {what}", e.func.loc)


__all__ = ["Overloads", "fits"]
