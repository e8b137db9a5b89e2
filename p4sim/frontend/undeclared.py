"""The first name, in source order, that nothing in the program declares.

p4c's ResolveReferences walks the whole program before anything else of the front end, so
of several names nothing declares it reports the first in the file (with its includes, in
their order) first. p4sim resolves names as it compiles, blocks in ``V1Switch``'s order:
onos's ``fabric.p4`` without ``-DCPU_PORT`` got "CPU_PORT: declaration not found" in its
parser (``parser.p4``, included last) where p4c-bm2-ss 1.2.5.16 gives the one of the
``acl.p4`` it includes before (issue 35, second corpus). Once p4sim has found some name
undeclared, :func:`first_undeclared` gives the error p4c gives first: the first name used
(in an expression or as a type) that no declaration, parameter, field, member or state of
the whole program has. A name declared somewhere, but not where it is used, is left to the
compiler's own resolution.

Example::

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text("const bit<8> A = B; const bit<8> C = D;", "x.p4")
    >>> str(first_undeclared(prog))
    'x.p4:1:18: error: B: declaration not found'
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Optional

from p4sim.errors import P4Error
from p4sim.frontend import ast as A

# names the language itself gives meaning to, declared by no source
_BUILTIN = frozenset({"accept", "reject", "error", "this", "_", "packet_in", "packet_out"})


def _children(node: Any) -> Iterator[Any]:
    for f in dataclasses.fields(node):
        v = getattr(node, f.name)
        if isinstance(v, A.Node):
            yield v
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, A.Node):
                    yield x


def _walk(node: Any) -> Iterator[Any]:
    """``node`` and what is below it, depth first, annotations left out but the names of
    ``@field_list(...)``, which p4c resolves where they stand."""
    if isinstance(node, A.Annotation):
        if node.name == "field_list":       # its names are resolved, in place
            for x in node.exprs or []:
                yield from _walk(x)
        return
    yield node
    for child in _children(node):
        yield from _walk(child)


def _declared(program: A.Program) -> set[str]:
    """Every identifier the program spells anywhere but as a use: declaration, parameter,
    field, member, state names (a superset: a use is reported only if absent from it)."""
    names: set[str] = set(_BUILTIN)
    for d in program.decls:
        for n in A.iter_nodes(d):
            if isinstance(n, (A.NameRef, A.NamedType, A.Annotation)):
                continue                    # uses, and annotations (which declare nothing)
            for f in dataclasses.fields(n):
                v = getattr(n, f.name)
                if isinstance(v, str):
                    names.add(v)
                elif isinstance(v, (list, tuple)):
                    names.update(x for x in v if isinstance(x, str))
    return names


def first_undeclared(program: A.Program) -> Optional[P4Error]:
    """"NAME: declaration not found" at the first use, in source order, of a name nothing
    in ``program`` declares; ``None`` when every name used is declared somewhere."""
    declared = _declared(program)
    for d in program.decls:
        for n in _walk(d):
            if isinstance(n, (A.NameRef, A.NamedType)) and n.name not in declared:
                return P4Error(f"{n.name}: declaration not found", n.loc)
    return None


__all__ = ["first_undeclared"]
