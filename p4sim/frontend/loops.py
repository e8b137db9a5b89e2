"""Which functions of a parsed program run a ``for`` loop, directly or through the
functions they call: what BMv2 can run depends on where p4c inlines them. p4c-bm2-ss
1.2.5.16 keeps a loop inside an action (jumps in the action's primitives), drops it from
an apply block (the control's graph has no loops; ``bmv2-loop`` warns of it in
:mod:`p4sim.frontend.p4c_warnings`), and refuses it in a parser ("ForStatement: not
supported in parser on this target", at the loop; :mod:`p4sim.engine.calls` refuses so).

A call names its function by name and argument count (P4_16 overloads by both).

Example::

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text('''
    ... bit<8> inc(in bit<8> x) { return x + 1; }
    ... bit<8> sum(in bit<8> n) { bit<8> a = 0; for (bit<8> i = 0; i < n; i = i + 1) { a = inc(a); } return a; }
    ... bit<8> twice(in bit<8> n) { return sum(n) + sum(n); }
    ... ''', "l.p4")
    >>> loops = LoopingFunctions(prog)
    >>> [(d.name, loops.first_loop(d).loc.line if loops.first_loop(d) else None) for d in prog.decls]
    [('inc', None), ('sum', 3), ('twice', 3)]
"""
from __future__ import annotations

from typing import Iterator, Optional

from p4sim.frontend import ast as A


def called_functions(node: A.Node) -> Iterator[A.Call]:
    """Every call below ``node`` whose callee is a plain name (a function or an action;
    methods and ``t.apply()`` are members)."""
    for n in A.iter_nodes(node):
        if isinstance(n, A.Call) and isinstance(n.func, A.NameRef):
            yield n


class LoopingFunctions:
    """The ``for`` loop each top-level function runs first (its own, else one of a
    function it calls), computed once per program."""

    def __init__(self, prog: A.Program) -> None:
        self._by_name: dict[tuple[str, int], list[A.FunctionDecl]] = {}
        for d in prog.decls:
            if isinstance(d, A.FunctionDecl):
                self._by_name.setdefault((d.name, len(d.params)), []).append(d)
        self._loop: dict[int, Optional[A.ForStmt]] = {}

    def first_loop(self, fn: A.FunctionDecl) -> Optional[A.ForStmt]:
        """The first ``for`` loop ``fn`` runs, in its body or in a function it calls;
        None when it runs none."""
        return self._first(fn, set())

    def _callees(self, call: A.Call) -> list[A.FunctionDecl]:
        """The top-level functions ``call`` may name (by name and argument count)."""
        name = call.func.name if isinstance(call.func, A.NameRef) else ""
        return self._by_name.get((name, len(call.args)), [])

    def called_loop(self, call: A.Call) -> Optional[tuple[A.FunctionDecl, A.ForStmt]]:
        """The function ``call`` names and the loop it runs, when it runs one."""
        for fn in self._callees(call):
            loop = self.first_loop(fn)
            if loop is not None:
                return fn, loop
        return None

    def _first(self, fn: A.FunctionDecl, visiting: set[int]) -> Optional[A.ForStmt]:
        if id(fn) in self._loop:
            return self._loop[id(fn)]
        if id(fn) in visiting or fn.body is None:      # recursion (p4c refuses it) or a stub
            return None
        visiting.add(id(fn))
        found: Optional[A.ForStmt] = next(
            (n for n in A.iter_nodes(fn.body) if isinstance(n, A.ForStmt)), None)
        if found is None:
            found = next((loop for call in called_functions(fn.body) for callee in self._callees(call)
                          if (loop := self._first(callee, visiting)) is not None), None)
        visiting.discard(id(fn))
        self._loop[id(fn)] = found
        return found


__all__ = ["LoopingFunctions", "called_functions"]
