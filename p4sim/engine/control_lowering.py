"""A control's apply block in the form of :mod:`p4sim.engine.flow_ir`, shaped as p4c's front
and mid end leave it for p4c-bm2-ss's back end:

* constant conditions and constant ``switch`` values choose their branch (p4c's
  ``ConstantFolding``, ``SimplifySwitch``);
* a table applied inside an expression (``b = t.apply().hit && c``) becomes
  ``if (t.apply().hit) tmp = true; else tmp = false;`` first (``SideEffectOrdering``,
  ``TableHit``); ``if (t.apply().hit)``, ``.miss`` and ``!`` stay as they are;
* ``switch (t.apply().action_run)`` gets ``default: {}`` when a label is missing
  (``SwitchAddDefault``, which counts the ``NoAction`` p4c adds to a table without
  ``default_action``); a ``switch`` on a value becomes a hidden table (``EliminateSwitch``);
* an instance of another control is inlined where it is applied, its tables its own
  (``Inline``): its parameters stand for the arguments when every call passes the same
  ones (else for temporaries, copied in and out), its locals are renamed;
* ``return`` and ``exit`` as p4c's ``MoveToElseAfterBranch``/``RemoveReturns`` leave them.

Anything this module cannot follow (a loop, an ``apply`` it cannot resolve) raises
:class:`Unmodelled`, and the caller then says nothing about the control.

Example::

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text("control C(inout bit<8> x) { table t { actions = { NoAction; } } "
    ...                   "apply { t.apply(); x = 1; } }", "c.p4")
    >>> body, locals_ = lower_apply(prog.decls[0], "C", prog)
    >>> [type(s).__name__ for s in body], body[0].table.name
    (['Apply', 'Op'], 'C.t')
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Union

from p4sim.engine.compile_context import annotation_string
from p4sim.engine.flow_ir import (Apply, Case, Exit, If, Inline, Op, Return, Stmt, Switch, Table,
                                  move_after_branch, remove_returns)
from p4sim.engine.liveness import (Path, children, definite_path, expr_reads, lvalue_path, overlaps,
                                   target_path, target_reads)
from p4sim.frontend import ast as A
from p4sim.frontend.text import expr_text


class Unmodelled(Exception):
    """The control holds something the model does not follow (nothing is said about it)."""


def _stmt_reads(s: A.Node, out: set[Path]) -> None:
    """The paths a statement (tree) reads."""
    if isinstance(s, A.AssignStmt):
        expr_reads(s.rhs, out)
        target_reads(s.lhs, out)
        p = lvalue_path(s.lhs)
        if s.compound and p is not None:
            out.add(p)
    elif isinstance(s, A.VarDecl):
        if s.init is not None:
            expr_reads(s.init, out)
    elif isinstance(s, A.Expr):
        expr_reads(s, out)
    else:
        for c in children(s):
            _stmt_reads(c, out)


def _pure(e: A.Node, tables: dict[str, Any]) -> bool:
    """No call in ``e`` but a validity test or a table application (lifted before)."""
    for n in A.iter_nodes(e):
        if isinstance(n, A.Call) and not (isinstance(n.func, A.Member) and (
                n.func.name == "isValid"
                or n.func.name == "apply" and isinstance(n.func.expr, A.NameRef) and n.func.expr.name in tables)):
            return False
    return True


def _table_call(e: A.Node, tables: dict[str, Any]) -> Optional[A.TableDecl]:
    """The table of ``t.apply()``."""
    if (isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "apply"
            and isinstance(e.func.expr, A.NameRef) and not e.args):
        return tables.get(e.func.expr.name)
    return None


def fold(e: A.Expr, constant: Callable[[str], Optional[A.Expr]], depth: int = 0) -> Union[bool, int, None]:
    """The value of a compile-time constant condition or integer p4c folds (``None`` when
    it is not one): literals, named constants (``constant`` gives a name's value), ``!``,
    ``&&``, ``||`` and comparisons. Arithmetic is left alone (its width would matter).

    >>> fold(A.Unary("!", A.NameRef("K")), {"K": A.BoolLit(False)}.get)
    True
    """
    if depth > 50:
        return None
    if isinstance(e, (A.BoolLit, A.IntLit)):
        return e.value
    if isinstance(e, A.NameRef):
        value = constant(e.name)
        return None if value is None else fold(value, constant, depth + 1)
    if isinstance(e, A.Unary):
        v = fold(e.expr, constant, depth + 1)
        if e.op == "!" and isinstance(v, bool):
            return not v
        return v if e.op == "+" else None
    if isinstance(e, A.Binary):
        left, right = fold(e.left, constant, depth + 1), fold(e.right, constant, depth + 1)
        if e.op == "&&":
            return False if left is False else right if left is True else None
        if e.op == "||":
            return True if left is True else right if left is False else None
        if left is None or right is None or isinstance(left, bool) != isinstance(right, bool):
            return None
        compare = {"==": left == right, "!=": left != right}
        if not isinstance(left, bool):
            compare.update({"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right})
        return compare.get(e.op)
    return None


class _Program:
    """Top-level declarations by name."""

    def __init__(self, program: A.Program) -> None:
        decls = program.decls
        self.actions = {d.name: d for d in decls if isinstance(d, A.ActionDecl)}
        self.functions: dict[str, list[A.FunctionDecl]] = {}     # several: overloaded
        for d in decls:
            if isinstance(d, A.FunctionDecl):
                self.functions.setdefault(d.name, []).append(d)
        self.controls = {d.name: d for d in decls if isinstance(d, A.ControlDecl)}
        self.consts = {d.name: d.value for d in decls if isinstance(d, A.ConstDecl)}
        self.types = {d.name: d for d in decls if isinstance(d, (A.StructLikeDecl, A.TypedefDecl))}

    def has_headers(self, t: Any, depth: int = 0) -> bool:
        """Whether values of type ``t`` hold headers (p4c resets them for an ``out``)."""
        if isinstance(t, A.StackType) or depth > 20:
            return True
        d = self.types.get(t.name) if isinstance(t, A.NamedType) else None
        if isinstance(d, A.TypedefDecl):
            return self.has_headers(d.type, depth + 1)
        if isinstance(d, A.StructLikeDecl):
            return d.kind != "struct" or any(self.has_headers(f.type, depth + 1) for f in d.fields)
        return False


class _Shared:
    """What the lowering of one top-level control and the controls it inlines share."""

    def __init__(self, program: A.Program) -> None:
        self.prog = _Program(program)
        self.locals: set[str] = set()
        self.tables: dict[tuple[str, int], Table] = {}
        self.count = 0

    def temp(self, hint: str) -> str:
        self.count += 1
        name = f"${hint}{self.count}"
        self.locals.add(name)
        return name


class _Control:
    """The lowering of one control instance (``fq``: its control-plane path; ``scope``
    tells its tables from another instance's with the same path; ``subst``: its parameters'
    paths in the outer control; ``prefix``: of its locals' names there)."""

    def __init__(self, shared: _Shared, decl: A.ControlDecl, fq: str,
                 subst: dict[str, Path], prefix: str, scope: str = "") -> None:
        self.shared, self.prog, self.decl, self.fq = shared, shared.prog, decl, fq
        self.subst, self.prefix, self.scope = subst, prefix, scope or fq
        self.names: set[str] = set()
        self.tables: dict[str, A.TableDecl] = {}
        self.actions: dict[str, A.ActionDecl] = {}
        self.instances: dict[str, tuple[A.Instantiation, A.ControlDecl]] = {}
        self.consts: dict[str, A.Expr] = {}
        self.other_instances: set[str] = set()
        for d in decl.locals:
            if isinstance(d, A.TableDecl):
                self.tables[d.name] = d
            elif isinstance(d, A.ActionDecl):
                self.actions[d.name] = d
            elif isinstance(d, A.ConstDecl):
                self.consts[d.name] = d.value
            elif isinstance(d, A.VarDecl):
                self.local(d.name)
            elif isinstance(d, A.Instantiation):
                callee = self.prog.controls.get(d.type.name) if isinstance(d.type, A.NamedType) else None
                if callee is not None:
                    self.instances[d.name] = (d, callee)
                else:
                    self.other_instances.add(d.name)

    # ------------------------------------------------------------------ names
    def local(self, name: str) -> None:
        self.names.add(name)
        self.shared.locals.add(self.prefix + name)

    def rename(self, p: Path) -> Path:
        if p[0] in self.subst:
            return self.subst[p[0]] + p[1:]
        if p[0] in self.names:
            return (self.prefix + p[0],) + p[1:]
        return p

    def reads(self, e: A.Node) -> frozenset[Path]:
        out: set[Path] = set()
        expr_reads(e, out)
        return frozenset(self.rename(p) for p in out)

    def path(self, e: A.Expr) -> Optional[Path]:
        p = definite_path(e)
        return None if p is None else self.rename(p)

    def action(self, name: str) -> tuple[Optional[A.ActionDecl], bool]:
        """An action by name, and whether it is this control's own."""
        name = name.lstrip(".")
        if name in self.actions:
            return self.actions[name], True
        return self.prog.actions.get(name), False

    def action_reads(self, name: str) -> frozenset[Path]:
        d, own = self.action(name)
        if d is None:
            return frozenset()
        out: set[Path] = set()
        _stmt_reads(d.body, out)
        params = {p.name for p in d.params}
        return frozenset(self.rename(p) if own else p for p in out if p[0] not in params)

    def table(self, d: A.TableDecl) -> Table:
        key = (self.scope, id(d))
        t = self.shared.tables.get(key)
        if t is not None:
            return t
        ann = annotation_string(d, "name")
        # p4c's message keeps the dot of a global name (@name(".t"))
        name = ann if ann is not None and ann.startswith(".") else f"{self.fq}.{ann or d.name}"
        reads: set[Path] = set()
        for prop in d.properties:
            if prop.name == "key":
                for ke in prop.value:
                    reads |= self.reads(ke.expr)
            elif prop.name in ("actions", "default_action"):
                for ar in prop.value if isinstance(prop.value, list) else [prop.value]:
                    if isinstance(ar, A.ActionRef):
                        reads |= self.action_reads(expr_text(ar.name))
                        for a in ar.args:
                            reads |= self.reads(a.value)
        t = Table(name, getattr(d, "name_loc", None) or d.loc, frozenset(reads))
        self.shared.tables[key] = t
        return t

    def action_names(self, d: A.TableDecl) -> list[str]:
        """The actions of a table as p4c lists them (``NoAction`` added when the table has
        no ``default_action``)."""
        prop = d.prop("actions")
        names = [expr_text(ar.name).lstrip(".") for ar in (prop.value if prop is not None else [])]
        if d.prop("default_action") is None and "NoAction" not in names:
            names.append("NoAction")
        return names

    # ------------------------------------------------------------------ constants
    def constant(self, name: str) -> Optional[A.Expr]:
        """The value of a constant this control sees by ``name``."""
        value = self.consts.get(name)
        if value is None and name not in self.names and name not in self.subst:
            value = self.prog.consts.get(name)
        return value

    def fold(self, e: A.Expr) -> Union[bool, int, None]:
        return fold(e, self.constant)

    # ------------------------------------------------------------------ statements
    def body(self) -> list[Stmt]:
        """The apply block: control-local initializers first, then the statements, after
        ``MoveToElseAfterBranch`` and ``RemoveReturns``, with inlined controls expanded."""
        out: list[Stmt] = []
        for d in self.decl.locals:
            if isinstance(d, A.VarDecl) and d.init is not None:
                self.assign(A.NameRef(d.name, loc=d.loc), d.init, out)
        out += self.block(self.decl.body.stmts if self.decl.body is not None else [])
        out = remove_returns(move_after_branch(out), self.prefix + "$ret")
        self.shared.locals.add(self.prefix + "$ret")
        return self.expand(out)

    def block(self, stmts: list[Any]) -> list[Stmt]:
        out: list[Stmt] = []
        for s in stmts:
            self.stmt(s, out)
        return out

    def branch(self, s: Optional[A.Stmt]) -> list[Stmt]:
        return self.block([s]) if s is not None else []

    def stmt(self, s: Any, out: list[Stmt]) -> None:
        if isinstance(s, A.BlockStmt):
            for x in s.stmts:
                self.stmt(x, out)
        elif isinstance(s, A.ConstDecl):
            self.consts[s.name] = s.value
        elif isinstance(s, A.VarDecl):
            self.local(s.name)
            if s.init is not None:
                self.assign(A.NameRef(s.name, loc=s.loc), s.init, out)
        elif isinstance(s, A.AssignStmt):
            self.assign(s.lhs, s.rhs, out, bool(s.compound))
        elif isinstance(s, A.CallStmt):
            self.call(s.call, out)
        elif isinstance(s, A.IfStmt):
            self.if_(s, out)
        elif isinstance(s, A.SwitchStmt):
            self.switch(s, out)
        elif isinstance(s, A.ExitStmt):
            out.append(Exit())
        elif isinstance(s, A.ReturnStmt):
            out.append(Return())
        elif not isinstance(s, A.EmptyStmt):
            raise Unmodelled(type(s).__name__)

    def lift(self, e: A.Node, out: list[Stmt]) -> frozenset[Path]:
        """``tmp = t.apply().hit`` for each table applied inside ``e``, as p4c's
        ``SideEffectOrdering`` and ``TableHit`` write it; the temporaries are returned."""
        temps: set[Path] = set()
        for n in A.iter_nodes(e):
            d = _table_call(n, self.tables)
            if d is not None:
                tmp = (self.shared.temp("hit"),)
                out.append(If(frozenset(), [Op(frozenset(), tmp, pure=True)],
                              [Op(frozenset(), tmp, pure=True)], hit=self.table(d)))
                temps.add(tmp)
            elif isinstance(n, A.Call) and isinstance(n.func, A.Member) and n.func.name == "apply":
                raise Unmodelled("apply in an expression")
        return frozenset(temps)

    def hit(self, e: A.Expr) -> Optional[A.TableDecl]:
        """The table of ``t.apply().hit``/``.miss`` (or its negation)."""
        if isinstance(e, A.Unary) and e.op == "!":
            return self.hit(e.expr)
        if isinstance(e, A.Member) and e.name in ("hit", "miss"):
            return _table_call(e.expr, self.tables)
        return None

    def assign(self, lhs: A.Expr, rhs: A.Expr, out: list[Stmt], compound: bool = False) -> None:
        if not compound and expr_text(lhs) == expr_text(rhs) and lvalue_path(lhs) is not None:
            return                      # p4c drops x = x
        target: set[Path] = set()
        target_reads(lhs, target)
        kill = self.path(lhs)
        d = self.hit(rhs) if isinstance(rhs, A.Member) and rhs.name == "hit" else None
        if d is not None and kill is not None:
            # TableHit: x = t.apply().hit is if (t.apply().hit) x = true; else x = false;
            t = frozenset(self.rename(p) for p in target)
            out.append(If(frozenset(), [Op(t, kill, pure=True)], [Op(t, kill, pure=True)], hit=self.table(d)))
            return
        extra = self.lift(rhs, out)
        reads = self.reads(rhs) | extra | frozenset(self.rename(p) for p in target)
        if compound and lvalue_path(lhs) is not None:
            reads |= {self.rename(lvalue_path(lhs))}  # type: ignore[arg-type]
        target = target_path(lhs)
        out.append(Op(reads, kill, pure=_pure(rhs, self.tables),
                      target=self.rename(target) if target is not None else None))

    def call(self, c: A.Call, out: list[Stmt]) -> None:
        f = c.func
        if isinstance(f, A.Member) and f.name == "apply" and isinstance(f.expr, A.NameRef):
            name = f.expr.name
            if name in self.tables:
                out.append(Apply(self.table(self.tables[name])))
                return
            if name in self.instances:
                out.append(Inline((name, c)))
                return
            if name in self.prog.controls and name not in self.names and name not in self.subst:
                out.append(Inline((name, c)))   # ``C.apply(...)``: an instance of its own
                return
            if name not in self.other_instances:
                raise Unmodelled(f"{name}.apply")
        extra = self.lift(c, out)
        if isinstance(f, A.NameRef):
            d, _own = self.action(f.name)
            if d is not None:
                out.append(Op(self.reads(c) | extra | self.action_reads(f.name), own=True))
                return
            fns = self.prog.functions.get(f.name, [])
            if fns and all(isinstance(x, (A.EmptyStmt, A.VarDecl)) and getattr(x, "init", None) is None
                           or isinstance(x, A.ReturnStmt) and x.value is None
                           for fn in fns for x in fn.body.stmts):
                return                  # inlined, nothing is left of it
        out.append(Op(self.reads(c) | extra))

    def if_(self, s: A.IfStmt, out: list[Stmt]) -> None:
        value = self.fold(s.cond)
        if isinstance(value, bool):
            out += self.branch(s.then if value else s.other)
            return
        d = self.hit(s.cond)
        if d is not None:
            out.append(If(frozenset(), self.branch(s.then), self.branch(s.other), hit=self.table(d)))
            return
        extra = self.lift(s.cond, out)
        out.append(If(self.reads(s.cond) | extra, self.branch(s.then), self.branch(s.other)))

    def switch(self, s: A.SwitchStmt, out: list[Stmt]) -> None:
        def label(c: A.SwitchCase) -> str:
            return "default" if isinstance(c.label, A.DefaultExpr) else expr_text(c.label).lstrip(".")

        e = s.expr
        d = _table_call(e.expr, self.tables) if isinstance(e, A.Member) and e.name == "action_run" else None
        if d is not None:
            if not s.cases:
                out.append(Apply(self.table(d)))
                return
            cases = [Case([label(c)], self.block(c.body.stmts) if c.body is not None else None) for c in s.cases]
            if cases[-1].body is None:
                cases[-1].body = []
            labels = {c.labels[0] for c in cases}
            if "default" not in labels and any(a not in labels for a in self.action_names(d)):
                cases.append(Case(["default"], []))
            out.append(Switch(frozenset(), self.table(d), cases))
            return
        value = self.fold(e)
        if value is not None:
            found = False
            for c in s.cases:
                found = found or isinstance(c.label, A.DefaultExpr) or self.fold(c.label) == value
                if found and c.body is not None:
                    out += self.block(c.body.stmts)
                    break
            return
        if not s.cases:
            if not _pure(e, self.tables):
                out.append(Op(self.reads(e) | self.lift(e, out)))
            return
        # EliminateSwitch: key = e; switch (hidden_table.apply().action_run) { ... }
        key = (self.shared.temp("key"),)
        out.append(Op(self.reads(e) | self.lift(e, out), key, pure=_pure(e, self.tables)))
        cases = [Case([label(c)], self.block(c.body.stmts)) for c in s.cases if c.body is not None]
        if not any(isinstance(c.label, A.DefaultExpr) for c in s.cases):
            cases.append(Case(["default"], []))
        out.append(Switch(frozenset({key}), Table("switch", hidden=True), cases))

    # ------------------------------------------------------------------ inlining
    def expand(self, stmts: list[Stmt]) -> list[Stmt]:
        out: list[Stmt] = []
        for s in stmts:
            if isinstance(s, Inline):
                out += self.inline(*s.payload)
                continue
            if isinstance(s, If):
                s.then, s.other = self.expand(s.then), self.expand(s.other)
            elif isinstance(s, Switch):
                for c in s.cases:
                    if c.body is not None:
                        c.body = self.expand(c.body)
            out.append(s)
        return out

    def call_sites(self, name: str) -> list[A.Call]:
        body = self.decl.body
        return [n for n in (A.iter_nodes(body) if body is not None else ())
                if isinstance(n, A.Call) and isinstance(n.func, A.Member) and n.func.name == "apply"
                and isinstance(n.func.expr, A.NameRef) and n.func.expr.name == name]

    def inline(self, name: str, call: A.Call) -> list[Stmt]:
        """The body of the control instance ``name`` applied by ``call`` (a control type's
        name: a new instance for this call), with what p4c adds around it."""
        scope = ""
        if name in self.instances:
            inst, callee = self.instances[name]
            ann = annotation_string(inst, "name")
            fq = ann[1:] if ann is not None and ann.startswith(".") else f"{self.fq}.{ann or inst.name}"
            sites = self.call_sites(name)
        else:
            callee, fq, scope, sites = self.prog.controls[name], f"{self.fq}.{name}", f"@{id(call)}", [call]
        params = [p for p in callee.params if not (isinstance(p.type, A.NamedType) and p.type.name.startswith("packet_"))]
        args = _bind(params, call)
        same = len({tuple(expr_text(a.value) for a in site.args) for site in sites}) == 1
        paths = {p.name: self.path(a.value) if a is not None else None for p, a in zip(params, args)}
        located = {p.name: ({paths[p.name]} if paths[p.name] is not None else set(self.reads(a.value)))
                   for p, a in zip(params, args) if a is not None}
        subst: dict[str, Path] = {}
        before: list[Stmt] = []
        after: list[Stmt] = []
        for p, a in zip(params, args):
            alias = any(q != p.name and any(overlaps(x, y) for x in located[p.name] for y in located[q])
                        for q in located) if a is not None else True
            if p.direction == "out" and self.prog.has_headers(p.type):
                before.append(Op(frozenset()))           # p4c invalidates the headers first
            if same and not alias and paths[p.name] is not None:
                subst[p.name] = paths[p.name]  # type: ignore[assignment]
                continue
            tmp = (self.shared.temp(p.name),)
            subst[p.name] = tmp
            if a is not None and p.direction in ("in", "inout", ""):
                before.append(Op(self.reads(a.value), tmp, pure=_pure(a.value, self.tables)))
            if a is not None and p.direction in ("out", "inout") and paths[p.name] is not None \
                    and _writes(callee, p.name):
                after.append(Op(frozenset({tmp}), paths[p.name], pure=True))
        inner = _Control(self.shared, callee, fq, subst, fq + scope + ".", fq + scope)
        return before + inner.body() + after


def _bind(params: list[A.Param], call: A.Call) -> list[Optional[A.Argument]]:
    """The argument of each parameter (positional or by name)."""
    if any(a.name for a in call.args):
        by_name = {a.name: a for a in call.args}
        return [by_name.get(p.name) for p in params]
    return [call.args[i] if i < len(call.args) else None for i in range(len(params))]


def _writes(decl: A.ControlDecl, param: str) -> bool:
    """Whether anything in the control may write its parameter ``param``."""
    def rooted(e: A.Node) -> bool:
        p = lvalue_path(e) if isinstance(e, A.Expr) else None
        return p is not None and p[0] == param

    for n in A.iter_nodes(decl):
        if isinstance(n, A.AssignStmt) and any(isinstance(x, A.NameRef) and x.name == param
                                               for x in A.iter_nodes(n.lhs)):
            return True
        if isinstance(n, A.Call) and (any(rooted(a.value) for a in n.args)
                                      or isinstance(n.func, A.Member) and rooted(n.func.expr)):
            return True
    return False


def lower_apply(decl: A.ControlDecl, fq: str, program: A.Program) -> tuple[list[Stmt], frozenset[str]]:
    """The apply block of control ``decl`` (control-plane path ``fq``) and the names of
    its locals (which do not outlive it); raises :class:`Unmodelled`."""
    shared = _Shared(program)
    body = _Control(shared, decl, fq, {}, "").body()
    return _exits(body), frozenset(shared.locals)


def _exits(stmts: list[Stmt]) -> list[Stmt]:
    """``exit`` as the statement p4c-bm2-ss puts in a hidden action."""
    out: list[Stmt] = []
    for s in stmts:
        if isinstance(s, Exit):
            out.append(Op(frozenset(), exit=True))
            continue
        if isinstance(s, If):
            s.then, s.other = _exits(s.then), _exits(s.other)
        elif isinstance(s, Switch):
            for c in s.cases:
                if c.body is not None:
                    c.body = _exits(c.body)
        out.append(s)
    return out


__all__ = ["Unmodelled", "fold", "lower_apply"]
