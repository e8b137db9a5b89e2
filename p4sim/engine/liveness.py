"""Which values a statement reads and writes, and which assignments p4c's front end drops
because nothing reads what they write (``SimplifyDefUse``, ``LocalCopyPropagation``):
the part of p4c's dead-code removal that decides what p4c-bm2-ss's back end still sees
(:mod:`p4sim.engine.control_graph`, :mod:`p4sim.engine.stack_next`).

A value is named by its *path*: ``hdr.h.a`` is ``("hdr", "h", "a")``, ``hs[1]`` is
``("hs", "[1]")``, the validity bit of ``hdr.h`` is ``("hdr", "h", "$valid")``. A read of a
path reads everything below it (``hdr.h`` reads ``hdr.h.a``); a write kills only what is
below the path written. :class:`Live` is the set of paths some later statement may read;
``nonlocal_all`` stands for every value that outlives the block (its parameters), written
or not, except those ``killed`` on every way to the end.

Example::

    >>> from p4sim.frontend import ast as A
    >>> a = A.Member(A.Member(A.NameRef("hdr"), "h"), "a")
    >>> lvalue_path(a)
    ('hdr', 'h', 'a')
    >>> end = Live(nonlocal_all=True)
    >>> end.kill(("hdr", "h", "a")).covers(("hdr", "h", "a"), frozenset())
    False
    >>> end.covers(("tmp",), frozenset({"tmp"}))
    False
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterator, Optional

from p4sim.frontend import ast as A

Path = tuple[str, ...]

#: header methods that touch the validity bit only
VALIDITY_METHODS = ("isValid", "setValid", "setInvalid")


def lvalue_path(e: A.Expr) -> Optional[Path]:
    """The path of a name, a field or a constant index of one (``None`` otherwise)."""
    if isinstance(e, A.NameRef):
        return (e.name,)
    if isinstance(e, A.Member):
        base = lvalue_path(e.expr)
        return None if base is None else base + (e.name,)
    if isinstance(e, A.Index) and isinstance(e.index, A.IntLit):
        base = lvalue_path(e.expr)
        return None if base is None else base + (f"[{e.index.value}]",)
    return None


def definite_path(e: A.Expr) -> Optional[Path]:
    """The path an assignment to ``e`` surely overwrites: ``None`` when the element is
    chosen at run time (``hs.next``, ``hs.last``, ``hs[i]``)."""
    p = lvalue_path(e)
    if p is None or "next" in p or "last" in p:
        return None
    return p


def _target(e: A.Expr) -> Optional[tuple[Path, bool]]:
    if isinstance(e, A.NameRef):
        return (e.name,), True
    if isinstance(e, (A.Member, A.Index, A.Slice)):
        r = _target(e.expr)
        if r is None or not r[1]:
            return r
        if isinstance(e, A.Member) and e.name not in ("next", "last"):
            return r[0] + (e.name,), True
        if isinstance(e, A.Index) and isinstance(e.index, A.IntLit):
            return r[0] + (f"[{e.index.value}]",), True
        return r[0], False
    return None


def target_path(e: A.Expr) -> Optional[Path]:
    """The path an assignment to ``e`` may write: ``e``'s own, or the stack (or value)
    part of which it writes when that part is chosen at run time (``hs`` for ``hs.next.a``,
    ``x`` for ``x[3:0]``).

    >>> from p4sim.frontend import ast as A
    >>> target_path(A.Member(A.Member(A.NameRef("hs"), "next"), "a"))
    ('hs',)
    """
    r = _target(e)
    return r[0] if r is not None else None


def children(node: A.Node) -> Iterator[A.Node]:
    """The nodes directly below ``node``."""
    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        for child in value if isinstance(value, list) else (value,):
            if isinstance(child, A.Node):
                yield child


def expr_reads(e: A.Node, out: set[Path]) -> None:
    """Add to ``out`` the paths expression ``e`` reads (a method's receiver is read, but
    only its validity bit for ``isValid``/``setValid``/``setInvalid``)."""
    if isinstance(e, A.Call) and isinstance(e.func, A.Member):
        base = lvalue_path(e.func.expr)
        if base is not None and e.func.name in VALIDITY_METHODS:
            out.add(base + ("$valid",))
        else:
            expr_reads(e.func.expr, out)
        for a in e.args:
            expr_reads(a.value, out)
        return
    if isinstance(e, A.Call):
        for a in e.args:
            expr_reads(a.value, out)
        return
    if isinstance(e, (A.NameRef, A.Member, A.Index)):
        p = lvalue_path(e)
        if p is not None:
            out.add(p)
            return
    if isinstance(e, A.TypeRef):
        return
    for c in children(e):
        expr_reads(c, out)


def target_reads(lhs: A.Expr, out: set[Path]) -> None:
    """Paths read while locating an assignment's target (a run-time index, say)."""
    if isinstance(lhs, A.Index):
        if not isinstance(lhs.index, A.IntLit):
            expr_reads(lhs.index, out)
            p = lvalue_path(lhs.expr)
            if p is not None:
                out.add(p)          # hs[i] = ...: any element may be the one written
        target_reads(lhs.expr, out)
    elif isinstance(lhs, (A.Member, A.Slice)):
        target_reads(lhs.expr, out)
        if isinstance(lhs, A.Slice):
            p = lvalue_path(lhs.expr)
            if p is not None:
                out.add(p)          # x[7:4] = ...: the other bits of x are kept


def has_call(e: A.Node) -> bool:
    """Whether ``e`` calls anything but a validity test (p4c keeps such a call even when
    the value is dropped)."""
    for n in A.iter_nodes(e):
        if isinstance(n, A.Call) and not (isinstance(n.func, A.Member) and n.func.name == "isValid"):
            return True
    return False


def overlaps(a: Path, b: Path) -> bool:
    """One path is the other or lies below it."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


@dataclass(frozen=True)
class Live:
    """The values some later statement may read (see the module docstring)."""

    paths: frozenset[Path] = frozenset()
    nonlocal_all: bool = False
    killed: frozenset[Path] = field(default_factory=frozenset)

    def covers(self, path: Path, locals_: frozenset[str]) -> bool:
        """Whether a write to ``path`` may be read later."""
        if any(overlaps(p, path) for p in self.paths):
            return True
        return (self.nonlocal_all and path[0] not in locals_
                and not any(path[:len(k)] == k for k in self.killed))

    def read(self, paths: set[Path] | frozenset[Path]) -> "Live":
        return Live(self.paths | frozenset(paths), self.nonlocal_all, self.killed)

    def kill(self, path: Path) -> "Live":
        kept = frozenset(p for p in self.paths if p[:len(path)] != path)
        killed = self.killed | {path} if self.nonlocal_all else self.killed
        return Live(kept, self.nonlocal_all, killed)

    def union(self, other: "Live") -> "Live":
        if self.nonlocal_all and other.nonlocal_all:
            killed = self.killed & other.killed
        else:
            killed = self.killed if self.nonlocal_all else other.killed
        return Live(self.paths | other.paths, self.nonlocal_all or other.nonlocal_all, killed)


EMPTY = Live()
EVERYTHING = Live(nonlocal_all=True)


__all__ = ["EMPTY", "EVERYTHING", "Live", "Path", "VALIDITY_METHODS", "children", "definite_path",
           "expr_reads", "has_call", "lvalue_path", "overlaps", "target_path", "target_reads"]
