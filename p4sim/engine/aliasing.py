"""When a header or struct argument must really be copied in and out of a call.

P4_16 passes every ``in``/``out``/``inout`` argument by value: copy-in at the call,
copy-out (left to right) when the callee returns, and also when it ends with ``exit``.
Copying a composite on every call would be slow, and passing it by reference is
observably the same unless the callee can reach the argument's storage by another name
while it runs. That happens in two ways, which :func:`needs_copy` tests:

* two arguments of the same call share a root variable (``a(hdr.h, hdr)``), or
* the callee (an action declared in a control, or what it calls) names the argument's
  root variable directly (``action a(inout h_t x) { hdr.h.a = 1; ... }`` called as
  ``a(hdr.h)``): :func:`outer_names` lists the names a body uses that are not its own.

Copying when neither holds would change nothing but the speed.

Example::

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text("action a(inout bit<8> x) { bit<8> y = x; hdr.f = y; }", "a.p4", validate=False)
    >>> sorted(outer_names(prog.decls[0], lambda name: frozenset()))
    ['hdr']
    >>> needs_copy(A.Member(A.NameRef("hdr"), "h"), [A.NameRef("meta")], frozenset({"hdr"}))
    True
"""
from __future__ import annotations

from typing import Callable, Optional

from p4sim.frontend import ast as A


def arg_root(e: Optional[A.Expr]) -> Optional[str]:
    """The variable an argument expression is part of (``hdr`` for ``hdr.s[1].f``).

    Example::

        >>> arg_root(A.Index(A.Member(A.NameRef("hdr"), "s"), A.IntLit(1)))
        'hdr'
    """
    while isinstance(e, (A.Member, A.Index, A.Slice)):
        e = e.expr
    return e.name if isinstance(e, A.NameRef) else None


def outer_names(decl: A.Node, callee_outer: Callable[[str], frozenset[str]]) -> frozenset[str]:
    """Names ``decl``'s body uses that are not its parameters or locals, with those of
    the actions and functions it calls (``callee_outer(name)``, empty when unknown)."""
    own = {p.name for p in getattr(decl, "params", [])}
    used: set[str] = set()
    for node in A.iter_nodes(getattr(decl, "body", decl)):
        if isinstance(node, (A.VarDecl, A.ConstDecl)):
            own.add(node.name)
        elif isinstance(node, A.NameRef):
            used.add(node.name)
            used.update(callee_outer(node.name))
    return frozenset(used - own)


def needs_copy(arg: A.Expr, others: list[Optional[A.Expr]], callee_outer: frozenset[str]) -> bool:
    """Whether composite argument ``arg`` must be copied in (and out) rather than passed
    by reference, given the call's other arguments and the callee's :func:`outer_names`."""
    root = arg_root(arg)
    if root is None:
        return True
    return root in callee_outer or any(arg_root(o) == root for o in others if o is not arg)
