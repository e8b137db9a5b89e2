"""What p4c-bm2-ss's BMv2 back end can put in a parser state: its ``ParserConverter`` turns
a call statement into a parser operation only for ``extract``, ``lookahead`` and
``advance`` of ``packet_in``, the built-in header methods (``setValid``, ``setInvalid``,
``push_front``, ``pop_front``) and the extern functions ``verify`` and ``log_msg``; any
other extern call in a state (``mark_to_drop``, ``hash``, ``random``, ``digest``,
``clone``, ``truncate``, ``assert``, a register/counter/meter method, ...) is refused
with "<call>: not supported in parser on this target" (p4c: backends/bmv2/common/parser.cpp).
Functions are inlined first, so their bodies are checked where they are called; applying
a sub-parser inlines its states, which are checked too.

Example::

    >>> check_parser_calls(A.ParserDecl(name="P"), A.Program([]))   # no states: fine
"""
from __future__ import annotations

from typing import Any, Iterator

from p4sim.engine.overloads import fits
from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.text import expr_text

#: methods the back end turns into parser operations
PARSER_METHODS = frozenset({"extract", "lookahead", "advance", "setValid", "setInvalid",
                            "push_front", "pop_front", "apply"})
#: extern functions the back end turns into parser operations
PARSER_FUNCTIONS = frozenset({"verify", "log_msg"})


def _calls(node: Any) -> Iterator[A.CallStmt]:
    for n in A.iter_nodes(node):
        if isinstance(n, A.CallStmt):
            yield n


def _refused(call: A.Call, externs: set[str]) -> bool:
    f = call.func
    if isinstance(f, A.Member):
        return f.name not in PARSER_METHODS
    if isinstance(f, A.NameRef):
        return f.name in externs and f.name not in PARSER_FUNCTIONS
    return False


def check_parser_calls(decl: A.ParserDecl, program: A.Program) -> None:
    """Raise :class:`P4Error` at the first call statement in ``decl``'s states (or in a
    function or sub-parser they reach) that p4c-bm2-ss cannot put in a parser."""
    externs = {d.name for d in program.decls if isinstance(d, A.FunctionProto)}
    functions: dict[str, list[A.FunctionDecl]] = {}     # several: overloaded
    for d in program.decls:
        if isinstance(d, A.FunctionDecl):
            functions.setdefault(d.name, []).append(d)
    parsers = {d.name: d for d in program.decls if isinstance(d, A.ParserDecl)}
    seen: set[int] = set()

    def visit(node: Any) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        for s in _calls(node):
            f = s.call.func
            if _refused(s.call, externs):
                raise P4Error(f"{expr_text(s.call)}: not supported in parser on this target", s.loc)
            if isinstance(f, A.NameRef):
                for fn in functions.get(f.name, []):
                    if fits(fn.params, s.call.args):
                        visit(fn.body)          # inlined into the state

    for d in decl.locals:
        if isinstance(d, A.Instantiation) and isinstance(d.type, A.NamedType) and d.type.name in parsers:
            sub = parsers[d.type.name]
            if sub is not decl:
                check_parser_calls(sub, program)
    for st in decl.states:
        visit(st)


__all__ = ["check_parser_calls"]
