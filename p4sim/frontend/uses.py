"""Which declarations of a parsed program something refers to, resolved by scope as p4c's
``CollectUsedDeclarations`` resolves them (every name in an expression or a type, the
actions of tables, the controls ``main`` is built from), for the ``unused`` warnings of
:mod:`p4sim.frontend.warnings`.

A reference marks the innermost visible declaration of its name (all overloads of it);
a declaration does not refer to itself: inside it, its name denotes what it would outside
(p4c's name resolution: ``action hash() { hash(...); }`` calls v1model's ``hash``).
Declarations in ``skip`` are not walked, which is how p4c's RemoveAllUnusedDeclarations
sees the program once they are removed.

Example::

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text("const bit<8> A = 1; const bit<8> B = A; control C() { apply { } }", "u.p4")
    >>> used = used_declarations(prog)
    >>> [d.name for d in prog.decls if id(d) in used]
    ['A']
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Optional

from p4sim.frontend import ast as A

# declarations that open a scope of their own for what they declare inside
_BLOCKS = (A.ControlDecl, A.ParserDecl, A.ActionDecl, A.FunctionDecl, A.FunctionProto, A.ExternDecl,
           A.MethodDecl, A.ParserTypeDecl, A.ControlTypeDecl, A.PackageTypeDecl, A.StructLikeDecl)


class _Scope:
    def __init__(self, parent: Optional["_Scope"]) -> None:
        self.parent = parent
        self.names: dict[str, list[Any]] = {}

    def add(self, name: str, decl: Any) -> None:
        if name:
            self.names.setdefault(name, []).append(decl)

    def lookup(self, name: str, own: Any = None) -> list[Any]:
        """The declarations of ``name`` in the innermost scope that has one other than
        ``own`` (the declaration the name is used in, which p4c never resolves to)."""
        scope: Optional[_Scope] = self
        while scope is not None:
            found = [d for d in scope.names.get(name, ()) if d is not own]
            if found:
                return found
            scope = scope.parent
        return []


class _Resolver:
    def __init__(self, skip: set[int], fold: bool) -> None:
        self.used: set[int] = set()
        self.skip = skip
        self.fold = fold   # leave out the dead branch of `if (true|false)` and `true|false ? a : b`
        self.top = _Scope(None)
        self.own: Any = None   # the innermost declaration being walked

    def mark(self, name: str, scope: _Scope, is_global: bool = False) -> None:
        for decl in (self.top if is_global else scope).lookup(name, self.own):
            self.used.add(id(decl))

    # ------------------------------------------------------------------ declarations
    def decl(self, d: Any, scope: _Scope) -> None:
        if id(d) in self.skip:
            return
        saved, self.own = self.own, d
        try:
            self._decl(d, scope)
        finally:
            self.own = saved

    def _decl(self, d: Any, scope: _Scope) -> None:
        if isinstance(d, _BLOCKS):
            inner = _Scope(scope)
            for name in getattr(d, "type_params", []) or []:
                inner.add(name, name)
            params = list(getattr(d, "params", []) or []) + list(getattr(d, "ctor_params", []) or [])
            for p in params:
                self.walk(p.type, inner)
                if p.default is not None:
                    self.walk(p.default, inner)
                inner.add(p.name, p)
            self._block_body(d, inner)
            return
        if isinstance(d, A.Instantiation):
            self.walk(d.type, scope)
            self.walk(d.args, scope)
            for m in d.initializer or []:
                self.decl(m, _Scope(scope))
            return
        self.walk([getattr(d, f.name) for f in dataclasses.fields(d)
                   if f.name not in ("name", "annotations", "loc")], scope)

    def _block_body(self, d: Any, inner: _Scope) -> None:
        if isinstance(d, (A.ControlDecl, A.ParserDecl)):
            # the locals in a scope inside the parameters', each visible from its declaration
            # on: a local named like a parameter hides it only there (p4c, measured)
            inner = _Scope(inner)
            if isinstance(d, A.ParserDecl):
                for st in d.states:
                    inner.add(st.name, st)
            for loc in d.locals:
                self.decl(loc, inner)
                inner.add(loc.name, loc)
            if isinstance(d, A.ControlDecl):
                self.walk(d.body, inner)
            else:
                for st in d.states:
                    state_scope = _Scope(inner)
                    self._stmts(st.stmts, state_scope)
                    self.walk(st.transition, state_scope)
        elif isinstance(d, A.StructLikeDecl):
            for f in d.fields:
                self.walk(f.type, inner)
        elif isinstance(d, A.ExternDecl):
            for m in d.methods:
                self.decl(m, inner)
        elif isinstance(d, (A.ActionDecl, A.FunctionDecl)):
            self.walk(getattr(d, "return_type", None), inner)
            self.walk(d.body, inner)
        else:
            self.walk(getattr(d, "return_type", None), inner)

    def _stmts(self, stmts: Iterable[Any], scope: _Scope) -> None:
        for s in stmts:
            if isinstance(s, A.Decl):
                self.decl(s, scope)
                scope.add(s.name, s)
            else:
                self.walk(s, scope)

    # ------------------------------------------------------------------ statements and expressions
    def walk(self, node: Any, scope: _Scope) -> None:
        if isinstance(node, (list, tuple)):
            for n in node:
                self.walk(n, scope)
            return
        if not isinstance(node, A.Node) or isinstance(node, A.Annotation):
            return
        if isinstance(node, A.NameRef):
            self.mark(node.name, scope, node.is_global)
        elif isinstance(node, A.NamedType):
            self.mark(node.name, scope, node.is_global)
            self.walk(node.args, scope)
        elif isinstance(node, A.Member):
            self.walk(node.expr, scope)
        elif isinstance(node, A.BlockStmt):
            self._stmts(node.stmts, _Scope(scope))
        elif isinstance(node, A.ForStmt):
            inner = _Scope(scope)
            self._stmts(node.init, inner)
            self.walk([node.cond, node.update, node.body], inner)
        elif isinstance(node, A.Decl):
            self.decl(node, scope)
        elif self.fold and isinstance(node, (A.IfStmt, A.Ternary)) and isinstance(node.cond, A.BoolLit):
            live = node.then if node.cond.value else node.other
            self.walk(live, scope)
        else:
            for f in dataclasses.fields(node):
                if f.name not in ("loc", "annotations"):
                    self.walk(getattr(node, f.name), scope)


def used_declarations(prog: A.Program, skip: Optional[set[int]] = None, fold: bool = False) -> set[int]:
    """``id()`` of every declaration (and parameter) something in ``prog`` refers to;
    with ``fold``, not counting the dead branch of a literal ``true``/``false`` condition
    (p4c's front end folds those away before it removes what is unused)."""
    r = _Resolver(skip or set(), fold)
    for d in prog.decls:
        r.top.add(d.name, d)
    for d in prog.decls:
        r.decl(d, r.top)
    return r.used


def removed_blocks_and_tables(prog: A.Program) -> list[A.Decl]:
    """The controls, parsers and tables p4c's front end deletes (RemoveAllUnusedDeclarations
    after ConstantFolding, repeated until nothing more goes), in the order it reports them.

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text("control C() { table t { actions = { } } table u { actions = { } } "
    ...                   "apply { if (false) { t.apply(); } u.apply(); } } control D() { C() c; apply { c.apply(); } }", "r.p4")
    >>> [d.name for d in removed_blocks_and_tables(prog)]
    ['t', 'D', 'C']
    """
    out: list[A.Decl] = []
    gone: set[int] = set()
    while True:
        used = used_declarations(prog, gone, fold=True)
        fresh: list[A.Decl] = []
        for d in prog.decls:
            if isinstance(d, (A.ControlDecl, A.ParserDecl)) and id(d) not in gone:
                if id(d) not in used:
                    fresh.append(d)
                    continue
                fresh += [t for t in d.locals if isinstance(t, A.TableDecl) and id(t) not in used
                          and id(t) not in gone]
        if not fresh:
            return out
        gone.update(id(d) for d in fresh)
        out += fresh


# what p4c's RemoveAllUnusedDeclarations deletes when nothing refers to it (measured on
# p4c-bm2-ss 1.2.5.16: an action, `type`/`typedef`, function, constant, variable, value
# set, table, control, parser; never an extern instance, extern, struct or header)
_REMOVABLE = (A.ActionDecl, A.TypedefDecl, A.FunctionDecl, A.ConstDecl, A.VarDecl, A.ValueSetDecl,
              A.TableDecl, A.ControlDecl, A.ParserDecl)


def removed_declarations(prog: A.Program) -> set[int]:
    """``id()`` of the declarations p4c's front end deletes as unused, repeated until
    nothing more goes (a table nobody applies, then the actions only it used, then the
    types only those used). A variable whose initializer calls something stays.

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text("type bit<8> t_t; typedef t_t u_t; control C() { action a(t_t x) { } "
    ...                   "table t { actions = { a; } } apply { } } package S(C c); S(C()) main;", "r.p4")
    >>> sorted(d.name for d in A.iter_nodes(prog) if id(d) in removed_declarations(prog))
    ['a', 't', 't_t', 'u_t']
    """
    candidates = [n for n in A.iter_nodes(prog) if isinstance(n, _REMOVABLE) and
                  not (isinstance(n, A.VarDecl) and n.init is not None and
                       any(isinstance(c, A.Call) for c in A.iter_nodes(n.init)))]
    gone: set[int] = set()
    while True:
        used = used_declarations(prog, gone, fold=True)
        fresh = {id(n) for n in candidates if id(n) not in gone and id(n) not in used}
        if not fresh:
            return gone
        gone |= fresh
