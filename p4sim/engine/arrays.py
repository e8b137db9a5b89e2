"""Arrays of non-header types (``bit<8>[16]``, ``bool[4]``, ``S[2]`` of a struct): what
p4c-bm2-ss accepts and refuses, reproduced.

P4_16 allows ``T[n]`` for any ``T`` and p4c's front end accepts it, but BMv2 has stacks
of headers and header unions only, and p4c-bm2-ss's back end stops with a compiler bug
on any other array that survives to it (``backends/bmv2/common/header.cpp``):
``bit<8>: unexpected stack element type`` for a local array (or one in a local struct),
``bit<8>: unexpected type in stack`` for an array field of the metadata or headers. What
p4c's front end removes as unused first (``RemoveUnusedDeclarations``: a local never
referenced, a struct type only such a local uses) compiles. p4sim does the same: such a
type resolves (:mod:`p4sim.engine.typerefs`), a local of it that nothing references is
skipped, and every other variable or parameter of it is refused with p4c's message
(:func:`refuse_bmv2_array`). p4sim is stricter in one way: p4c's midend also removes an
array whose every use it can fold away (``arr[3] = 5; x = arr[3];`` becomes ``x = 5``),
and p4c-bm2-ss then compiles the program; p4sim refuses every array a statement names.

Example::

    >>> from p4sim.frontend.types import BitT, StackT, StructT
    >>> array_element(StackT(BitT(8), 16)), nested_array_element(StructT("s", [("a", StackT(BitT(8), 4))]))
    (BitT(width=8, signed=False), BitT(width=8, signed=False))
"""
from __future__ import annotations

from typing import Optional

from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.types import HeaderT, P4Type, StackT, StructLikeT, TypeVarT, UnionT, strip_new

_BUG = " (p4c-bm2-ss stops on it with a compiler bug: BMv2 has stacks of headers and header unions only)"


def array_element(t: P4Type) -> Optional[P4Type]:
    """The element type of ``t`` when ``t`` is an array BMv2 cannot hold, else None."""
    st = strip_new(t)
    if isinstance(st, StackT) and not isinstance(strip_new(st.elem), (HeaderT, UnionT, TypeVarT)):
        return st.elem
    return None


def nested_array_element(t: P4Type, seen: Optional[set[int]] = None) -> Optional[P4Type]:
    """The element type of the first such array among the fields of struct ``t``."""
    st = strip_new(t)
    seen = set() if seen is None else seen
    if not isinstance(st, StructLikeT) or id(st) in seen:
        return None
    seen.add(id(st))
    for _, ft in st.fields:
        elem = array_element(ft)
        if elem is None:
            elem = nested_array_element(ft, seen)
        if elem is not None:
            return elem
    return None


def refuse_bmv2_array(t: P4Type, node: A.Node, local: bool = False) -> None:
    """Refuse a variable (``local``) or parameter of type ``t`` as p4c-bm2-ss refuses
    it. p4c's midend splits a local struct into one local per field, so an array inside
    a local struct gets the message of a local array; inside a parameter's struct (the
    metadata, the headers) it gets the message of a struct field."""
    elem = array_element(t)
    if elem is not None:
        raise P4Error(f"{elem}: unexpected stack element type{_BUG}", node.loc)
    elem = nested_array_element(t)
    if elem is not None:
        what = "unexpected stack element type" if local else "unexpected type in stack"
        raise P4Error(f"{elem}: {what}{_BUG}", node.loc)


def _enclosing_scopes(program: A.Program) -> list[A.Node]:
    """The declarations whose bodies hold local variables (each searched for references)."""
    out: list[A.Node] = []
    for d in program.decls:
        if isinstance(d, (A.ControlDecl, A.ParserDecl, A.ActionDecl, A.FunctionDecl)):
            out.append(d)
    return out


def unreferenced_locals(program: A.Program) -> set[int]:
    """``id()`` of the local variable declarations whose name nothing in their enclosing
    parser, control, action or function refers to (p4c removes them before its back end;
    a name shadowed elsewhere in the same block counts as a reference, so this errs on
    the side of keeping a declaration)."""
    out: set[int] = set()
    for scope in _enclosing_scopes(program):
        nodes = list(A.iter_nodes(scope))
        referenced = {n.name for n in nodes if isinstance(n, A.NameRef)}
        out.update(id(n) for n in nodes if isinstance(n, A.VarDecl) and n.name not in referenced)
    return out
