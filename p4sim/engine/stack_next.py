"""p4c-bm2-ss's refusal of a field of ``stack.next`` in a parser: "hdr.s.next
uninitialized: next field read", at ``hdr.s.next``.

BMv2's JSON has no name for a field of the next element of a stack (only ``extract``
into it and ``.last``'s fields), so p4c-bm2-ss's expression converter refuses every
``stack.next.f`` it meets (p4c's ``backends/bmv2/common/expression.cpp``,
``ExpressionConverter::postorder(const IR::Member *)``), whether read or written: in a
``select``, an assignment, ``verify``, an ``extract``'s size, and ``stack.next.isValid()``.
It also meets them where p4c's mid end writes a whole header field by field:
``stack.next = { 8w0 }``, ``= (h_t){ ... }`` and ``= pkt.lookahead<h_t>()``. What p4c-bm2-ss
accepts next to that, and so does this check: ``pkt.extract(stack.next)`` (and
``extract(stack.next.u)`` for a stack of unions), ``stack.next.setValid()``/``setInvalid()``,
``stack.next = h`` (a header copied whole), ``stack.last.f``, a function given
``stack.next`` (the callee gets a copy), a parser state no transition reaches, a
branch of ``if (false)``, and an assignment whose value nothing reads (p4c's front end
removes it first: an unused local, a field written again before any read; see
:mod:`p4sim.engine.liveness`). A sub-parser's states are checked where it is applied,
named with the caller's arguments as p4c inlines them.

Example::

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text("header h_t { bit<8> a; } struct s_t { h_t[2] s; } "
    ...                   "parser P(out s_t hdr) { state start { "
    ...                   "transition select(hdr.s.next.a) { default: accept; } } }", "p.p4")
    >>> check_next_reads(prog.decls[2], prog)
    Traceback (most recent call last):
    ...
    p4sim.errors.P4Error: p.p4:1:107: error: hdr.s.next uninitialized: next field read
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from p4sim.engine.control_lowering import fold
from p4sim.engine.liveness import (EMPTY, EVERYTHING, Live, Path, children, definite_path, expr_reads,
                                   has_call, lvalue_path, target_path, target_reads)
from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.text import expr_text

#: members of ``stack.next`` p4c-bm2-ss converts without naming a field of it
NOT_A_FIELD = ("setValid", "setInvalid", "minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")


class _Types:
    """Declared types by name, read syntactically (typedefs followed)."""

    def __init__(self, program: A.Program) -> None:
        self.decls = {d.name: d for d in program.decls if isinstance(d, (A.StructLikeDecl, A.TypedefDecl))}
        self.parsers = {d.name: d for d in program.decls if isinstance(d, A.ParserDecl)}
        self.consts = {d.name: d.value for d in program.decls if isinstance(d, A.ConstDecl)}

    def resolve(self, t: Optional[A.TypeRef]) -> Optional[A.TypeRef]:
        for _ in range(20):
            d = self.decls.get(t.name) if isinstance(t, A.NamedType) else None
            if not isinstance(d, A.TypedefDecl):
                return t
            t = d.type
        return None

    def of(self, e: A.Expr, env: dict[str, A.TypeRef]) -> Optional[A.TypeRef]:
        """The type of a name, a field or an element (``None`` when not followed)."""
        if isinstance(e, A.NameRef):
            return self.resolve(env.get(e.name))
        if isinstance(e, A.Index):
            t = self.of(e.expr, env)
            return self.resolve(t.elem) if isinstance(t, A.StackType) else None
        if isinstance(e, A.Member):
            t = self.of(e.expr, env)
            if isinstance(t, A.StackType):
                return self.resolve(t.elem) if e.name in ("next", "last") else None
            d = self.decls.get(t.name) if isinstance(t, A.NamedType) else None
            if isinstance(d, A.StructLikeDecl):
                for f in d.fields:
                    if f.name == e.name:
                        return self.resolve(f.type)
        return None

    def is_next(self, e: A.Expr, env: dict[str, A.TypeRef]) -> bool:
        """Whether ``e`` is ``stack.next``."""
        return (isinstance(e, A.Member) and e.name == "next"
                and isinstance(self.of(e.expr, env), A.StackType))


def _is_extract(c: A.Call) -> bool:
    return isinstance(c.func, A.Member) and c.func.name == "extract"


class _Parser:
    """One parser (or sub-parser, with ``names``: its parameters → the caller's text)."""

    def __init__(self, types: _Types, decl: A.ParserDecl, names: dict[str, str]) -> None:
        self.types, self.decl, self.names = types, decl, names
        self.env: dict[str, A.TypeRef] = {p.name: p.type for p in decl.params}
        self.locals: set[str] = set()
        self.consts: dict[str, A.Expr] = {}
        self.subparsers: dict[str, A.ParserDecl] = {}
        for d in list(decl.locals) + [s for st in decl.states for s in A.iter_nodes(st)]:
            if isinstance(d, A.VarDecl):
                self.env[d.name] = d.type
                self.locals.add(d.name)
            elif isinstance(d, A.ConstDecl):
                self.consts[d.name] = d.value
            elif isinstance(d, A.Instantiation) and isinstance(d.type, A.NamedType) \
                    and d.type.name in types.parsers:
                self.subparsers[d.name] = types.parsers[d.type.name]
        self.states = {s.name: s for s in decl.states}
        self.dead: set[int] = set()

    def constant(self, name: str) -> Optional[A.Expr]:
        if name in self.consts:
            return self.consts[name]
        return None if name in self.env else self.types.consts.get(name)

    def branches(self, s: A.IfStmt) -> list[Any]:
        """The branches of an ``if`` p4c keeps (one when the condition is a constant)."""
        value = fold(s.cond, self.constant)
        if value is True:
            return [s.then]
        if value is False:
            return [s.other] if s.other is not None else []
        return [b for b in (s.then, s.other) if b is not None]

    def reachable(self) -> list[A.ParserState]:
        seen: set[str] = set()
        todo = ["start"]
        while todo:
            name = todo.pop()
            st = self.states.get(name)
            if name in seen or st is None:
                continue
            seen.add(name)
            tr = st.transition
            if tr is not None:
                todo += [tr.state] if tr.state is not None else [c.state for c in tr.cases]
        return [s for s in self.decl.states if s.name in seen]

    # ------------------------------------------------------------------ liveness
    def effect(self, s: Any) -> tuple[set[Path], Optional[Path], bool]:
        """What a statement reads, the path it surely overwrites, and whether it is an
        assignment p4c may drop."""
        reads: set[Path] = set()
        if isinstance(s, A.AssignStmt):
            expr_reads(s.rhs, reads)
            target_reads(s.lhs, reads)
            if s.compound and lvalue_path(s.lhs) is not None:
                reads.add(lvalue_path(s.lhs))  # type: ignore[arg-type]
            return reads, definite_path(s.lhs), not has_call(s.rhs)
        if isinstance(s, A.VarDecl):
            if s.init is None:
                return reads, None, False
            expr_reads(s.init, reads)
            return reads, (s.name,), not has_call(s.init)
        if isinstance(s, A.CallStmt) and _is_extract(s.call) and s.call.args:
            for a in s.call.args[1:]:
                expr_reads(a.value, reads)
            return reads, definite_path(s.call.args[0].value), False
        if isinstance(s, A.Node):
            _node_reads(s, reads)
        return reads, None, False

    def block(self, stmts: list[Any], after: Live, out: dict[int, Live]) -> Live:
        """The values live before ``stmts`` (``out``: those live after each statement)."""
        live = after
        for s in reversed(list(A.flat_statements(stmts))):
            if isinstance(s, A.IfStmt):
                value = fold(s.cond, self.constant)
                then = self.block([s.then], live, out) if value is not False else None
                other = self.block([s.other], live, out) if s.other is not None and value is not True else live
                if value is True:
                    live = then  # type: ignore[assignment]
                elif value is False:
                    live = other
                else:
                    reads: set[Path] = set()
                    expr_reads(s.cond, reads)
                    live = then.union(other).read(reads)  # type: ignore[union-attr]
                continue
            out[id(s)] = live
            if id(s) in self.dead:
                continue
            reads, kill, _ = self.effect(s)
            live = (live.kill(kill) if kill is not None else live).read(reads)
        return live

    def state_entry(self, st: A.ParserState, live_in: dict[str, Live], out: dict[int, Live]) -> Live:
        tr = st.transition
        after = EMPTY
        reads: set[Path] = set()
        targets = [] if tr is None else [tr.state] if tr.state is not None else [c.state for c in tr.cases]
        if tr is not None and tr.select_keys:
            for k in tr.select_keys:
                expr_reads(k, reads)
        for t in targets or ["reject"]:
            after = after.union(live_in.get(t, EVERYTHING) if t in self.states else EVERYTHING)
        return self.block(st.stmts, after.read(reads), out)

    def liveness(self, states: list[A.ParserState]) -> Optional[dict[int, Live]]:
        """The values live after each statement (``None`` if it does not settle)."""
        live_in = {s.name: EMPTY for s in states}
        for _ in range(100):
            out: dict[int, Live] = {}
            changed = False
            for st in reversed(states):
                entry = self.state_entry(st, live_in, out)
                if entry != live_in[st.name]:
                    live_in[st.name], changed = entry, True
            if not changed:
                return out
        return None

    def find_dead(self, states: list[A.ParserState]) -> None:
        """The assignments p4c drops, until no more is found."""
        while True:
            after = self.liveness(states)
            if after is None:
                self.dead = set()
                return
            new = {id(s) for st in states for s in _statements(st.stmts)
                   if id(s) not in self.dead and isinstance(s, (A.AssignStmt, A.VarDecl))
                   and self._droppable(s, after)}
            if not new:
                return
            self.dead |= new

    def _droppable(self, s: Any, after: dict[int, Live]) -> bool:
        _, kill, pure = self.effect(s)
        written = kill if kill is not None else target_path(s.lhs) if isinstance(s, A.AssignStmt) else None
        return pure and written is not None and id(s) in after \
            and not after[id(s)].covers(written, frozenset(self.locals))

    # ------------------------------------------------------------------ the check
    def message(self, x: A.Expr) -> P4Error:
        text = expr_text(x)
        root = text.split(".", 1)[0].split("[", 1)[0]
        if root in self.names:
            text = self.names[root] + text[len(root):]
        return P4Error(f"{text} uninitialized: next field read", x.loc)

    def check_expr(self, e: A.Node) -> None:
        for n in A.iter_nodes(e):
            if isinstance(n, A.Member) and n.name not in NOT_A_FIELD and self.types.is_next(n.expr, self.env):
                raise self.message(n.expr)

    def check_stmt(self, s: Any) -> None:
        if id(s) in self.dead:
            return
        if isinstance(s, A.IfStmt):
            self.check_expr(s.cond)
            for b in self.branches(s):
                for x in A.flat_statements([b]):
                    self.check_stmt(x)
            return
        if isinstance(s, A.AssignStmt) and self.types.is_next(s.lhs, self.env):
            rhs = s.rhs.expr if isinstance(s.rhs, A.Cast) else s.rhs
            if isinstance(rhs, (A.ListExpr, A.StructExpr)) or (
                    isinstance(rhs, A.Call) and isinstance(rhs.func, A.Member) and rhs.func.name == "lookahead"):
                raise self.message(s.lhs)   # written field by field
        if isinstance(s, A.CallStmt):
            c = s.call
            if isinstance(c.func, A.Member) and c.func.name == "apply" and isinstance(c.func.expr, A.NameRef) \
                    and c.func.expr.name in self.subparsers:
                self.check_expr(c)
                self.subparser(self.subparsers[c.func.expr.name], c)
                return
            if _is_extract(c):
                for a in c.args[1:]:
                    self.check_expr(a.value)
                return
        self.check_expr(s)

    def subparser(self, decl: A.ParserDecl, call: A.Call) -> None:
        names = {}
        for p, a in zip(decl.params, call.args):
            if lvalue_path(a.value) is not None:
                text = expr_text(a.value)
                root = text.split(".", 1)[0].split("[", 1)[0]
                names[p.name] = self.names.get(root, root) + text[len(root):]
        _Parser(self.types, decl, names).check()

    def check(self) -> None:
        states = self.reachable()
        self.find_dead(states)
        for st in states:
            for s in A.flat_statements(st.stmts):
                self.check_stmt(s)
            tr = st.transition
            for k in tr.select_keys or [] if tr is not None else []:
                self.check_expr(k)


def _node_reads(s: A.Node, out: set[Path]) -> None:
    """The paths the expressions of a statement read."""
    for c in children(s):
        if isinstance(c, A.Expr):
            expr_reads(c, out)
        else:
            _node_reads(c, out)


def _statements(stmts: list[Any]) -> Iterator[Any]:
    for s in A.flat_statements(stmts):
        yield s
        if isinstance(s, A.IfStmt):
            yield from _statements([b for b in (s.then, s.other) if b is not None])


def check_next_reads(parser: A.ParserDecl, program: A.Program) -> None:
    """Raise :class:`P4Error` at the first ``stack.next`` whose field p4c-bm2-ss would have
    to name (states in order, then the sub-parsers they apply)."""
    _Parser(_Types(program), parser, {}).check()


__all__ = ["check_next_reads"]
