"""Statements, local variables, assignments and the bodies of functions and actions:
the :class:`StatementCompiler`.

Statements are written to the writer of the function being generated
(``CompileContext.w``). The statement compiler owns the :class:`CallCompiler` (which owns
the :class:`ExpressionCompiler`): a statement compiles expressions, an expression may call
a function, and a function's body is statements again, so the call compiler is built
with this statement compiler as its :class:`~p4sim.engine.calls.StatementSite`. A local
instantiation (``counter(8, CounterType.packets) c;`` in a statement list) is handed to
the :class:`LocalInstances` given at construction (the compiler).

Example::

    >>> from p4sim.engine.compile_context import CompileContext
    >>> stmts = StatementCompiler(CompileContext(A.Program([]), None), instances=None)
    >>> stmts.stmt(A.VarDecl(name="x", type=A.BitType(A.IntLit(8)), init=A.IntLit(300)))
    >>> stmts.cx.w.text()
    'v_x_1 = 44\\n'
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

from p4sim.engine.aliasing import outer_names
from p4sim.engine.arrays import array_element, nested_array_element, refuse_bmv2_array, unreferenced_locals
from p4sim.engine.calls import CallCompiler
from p4sim.engine.codegen import Ex, FnCtx, Sym, Writer, pyname, zero_value_code
from p4sim.engine.compile_context import CompileContext, NotAssignable, expr_text
from p4sim.engine.expressions import ExpressionCompiler, RefEx, TypeEx, const_code
from p4sim.engine.header_widths import odd_header_message, odd_header_of
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.types import (
    ActionEnumT, BitT, BlockT, BoolT, DontCareT, ExternT, IntT, P4Type, StructLikeT, TupleT, VoidT, strip_new,
)


def refuse_instance_variable(d: A.VarDecl, t: P4Type) -> None:
    """p4c's type checker: a variable cannot have an extern, parser or control type (those
    are instantiated, ``register<bit<8>>(4) r;``, not declared ``register<bit<8>> r;``).

    Example::

        >>> refuse_instance_variable(A.VarDecl(name="x"), BitT(8))   # a plain type: fine
    """
    if isinstance(t, ExternT):
        generic = bool(getattr(t.decl, "type_params", None))
        if generic and not t.type_args:
            raise P4Error(f"Unspecified type parameters for {t.name} in {d.name}", t.decl.loc)
        shown = f"{t.name}<...>" if generic else t.name
    elif isinstance(t, BlockT) and t.kind in ("control", "parser"):
        shown = f"{t.kind} {t.name}"
    else:
        return
    raise P4Error(f"{d.name}: cannot declare variables of type '{shown}' (consider using an instantiation)",
                  d.name_loc or d.loc)


def _check_assigned_slices(lhs: A.Expr) -> None:
    """p4c's front end folds a named constant in a slice's bounds where the slice is read,
    not on the left of an assignment: ``x[I:I] = 1`` with ``const bit<3> I`` (global or
    local) is refused, ``x[2+1:1] = 1`` compiles, and so does a slice with named bounds
    given as an ``out`` argument (measured on p4c-bm2-ss 1.2.5.16)."""
    e = lhs
    while isinstance(e, (A.Slice, A.Member, A.Index)):
        if isinstance(e, A.Slice):
            for bound in (e.hi, e.lo):
                if any(isinstance(n, A.NameRef) for n in A.iter_nodes(bound)):
                    raise P4Error(f"{expr_text(bound)}: slice bit index values must be constants", bound.loc)
        e = e.expr

class LocalInstances(Protocol):
    """What the statement compiler needs to instantiate a parser, control or extern."""

    def local_instantiation(self, d: A.Instantiation) -> None: ...

    def instantiate_inline(self, e: A.Call, hint: str) -> Any: ...


def always_returns(s: Any) -> bool:
    """Whether every path through statement ``s`` ends in ``return`` or ``exit``."""
    if isinstance(s, (A.ReturnStmt, A.ExitStmt)):
        return True
    if isinstance(s, A.BlockStmt):
        return any(always_returns(x) for x in s.stmts)
    if isinstance(s, A.IfStmt):
        return s.other is not None and always_returns(s.then) and always_returns(s.other)
    if isinstance(s, A.SwitchStmt):
        has_default = any(isinstance(c.label, A.DefaultExpr) for c in s.cases)
        return has_default and all(c.body is None or always_returns(c.body) for c in s.cases)
    return False


class StatementCompiler:
    """Compiles statements and callable bodies (see the module docstring)."""

    def __init__(self, cx: CompileContext, instances: LocalInstances) -> None:
        self.cx = cx
        self.instances = instances
        self.loop_depth = 0  # > 0 inside a loop body (break/continue allowed)
        self.calls = CallCompiler(cx, statements=self)
        self.expressions: ExpressionCompiler = self.calls.expressions

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Any) -> None:
        w = self.cx.w
        if isinstance(s, A.AssignStmt):
            if isinstance(s.lhs, A.DontCare):
                self.expressions.value_expr(s.rhs)
                return
            _check_assigned_slices(s.lhs)
            try:
                lt = self.lvalue_type(s.lhs)
            except NotAssignable:       # p4c's type checker (1.2.5.16), the whole target
                raise P4Error(f"Expression {expr_text(s.lhs)} cannot be the target of an assignment",
                              s.lhs.loc) from None
            if s.compound and not isinstance(lt, BitT):
                # p4c's TypeInference on OpAssignmentStatement: bit<W>/int<W> only
                raise P4Error(f"{s.compound}=: cannot be applied to '{expr_text(s.lhs)}' with type '{lt}'", s.lhs.loc)
            # p4c evaluates the right side first when only it has calls (SideEffectOrdering
            # keeps the assignment whole and InlineFunctions puts the callee's body and
            # copy-out before it), so a call that changes a stack index moves the target;
            # calls on the left side are hoisted first, left to right
            lhs = self.freeze_indices(s.lhs) if _has_call(s.lhs) and _has_call(s.rhs) else s.lhs
            try:
                rhs = self.expressions.value_expr(s.rhs, lt)
            except P4Error as err:
                raise self._assignment_width_error(s, lt, err) from None
            self.assign(lhs, rhs, s)
        elif isinstance(s, A.CallStmt):
            ex = self.calls.call(s.call, None, as_statement=True)
            if ex is not None and ex.code and not isinstance(ex, (RefEx, TypeEx)):
                w.line(ex.code)
        elif isinstance(s, A.BlockStmt):
            self.cx.push_scope()
            self.stmts_or_pass(s.stmts)
            self.cx.pop_scope()
        elif isinstance(s, A.IfStmt):
            c = self.expressions.value_expr(s.cond, BoolT())
            # a branch a constant condition never takes is dead code, which p4c's front end
            # removes (with the actions only it calls, for P4Info)
            dead_then, dead_else = c.const and c.value is False, c.const and c.value is True
            w.line(f"if {c.code}:")
            w.indent()
            self.cx.dead_code += dead_then
            self.block_body(s.then)
            self.cx.dead_code -= dead_then
            w.dedent()
            if s.other is not None:
                w.line("else:")
                w.indent()
                self.cx.dead_code += dead_else
                self.block_body(s.other)
                self.cx.dead_code -= dead_else
                w.dedent()
        elif isinstance(s, A.SwitchStmt):
            self.switch_stmt(s)
        elif isinstance(s, A.ExitStmt):
            if self.cx.in_parser():
                raise P4Error("exit is not allowed in a parser", s.loc)
            w.line("raise _ExitSignal()")
        elif isinstance(s, A.ReturnStmt):
            self.return_stmt(s)
        elif isinstance(s, A.EmptyStmt):
            w.line("pass")
        elif isinstance(s, A.ForStmt):
            self.for_stmt(s)
        elif isinstance(s, A.ForInStmt):
            self.for_in_stmt(s)
        elif isinstance(s, (A.BreakStmt, A.ContinueStmt)):
            if not self.loop_depth:
                raise P4Error(f"{'break' if isinstance(s, A.BreakStmt) else 'continue'} outside a loop", s.loc)
            w.line("break" if isinstance(s, A.BreakStmt) else "continue")
        elif isinstance(s, A.VarDecl):
            self.local_var(s)
        elif isinstance(s, A.ConstDecl):
            self.const_decl(s)
        elif isinstance(s, A.Instantiation):
            self.instances.local_instantiation(s)
        elif isinstance(s, A.Decl):
            raise P4Unsupported(f"unsupported: declaration of {type(s).__name__} here", s.loc)
        else:
            raise P4Error(f"unexpected statement {type(s).__name__}", s.loc)

    def freeze_indices(self, e: A.Expr) -> A.Expr:
        """The lvalue ``e`` with its run-time stack indices evaluated now into temporaries
        (when both sides of an assignment have calls, p4c evaluates the left side's
        first)."""
        if isinstance(e, A.Member):
            inner = self.freeze_indices(e.expr)
            return e if inner is e.expr else A.Member(inner, e.name, loc=e.loc)
        if isinstance(e, A.Slice):
            inner = self.freeze_indices(e.expr)
            return e if inner is e.expr else A.Slice(inner, e.hi, e.lo, loc=e.loc)
        if isinstance(e, A.Index):
            inner = self.freeze_indices(e.expr)
            ix = self.expressions.value_expr(e.index)
            if ix.const:
                return e if inner is e.expr else A.Index(inner, e.index, loc=e.loc)
            name = "$" + self.cx.tmp("ix")
            pn = self.new_var(name, ix.ty, e, writable=False)
            self.cx.w.line(f"{pn} = {ix.code}")
            return A.Index(inner, A.NameRef(name, loc=e.index.loc), loc=e.loc)
        return e

    def stmts_or_pass(self, stmts: list[Any]) -> None:
        """Compile statements; write ``pass`` when they generate no Python line."""
        n0 = len(self.cx.w.lines)
        for x in stmts:
            self.stmt(x)
        if len(self.cx.w.lines) == n0:
            self.cx.w.line("pass")

    def block_body(self, s: Any) -> None:
        n0 = len(self.cx.w.lines)
        if isinstance(s, A.BlockStmt):
            self.stmt(s)
        else:
            self.cx.push_scope()
            self.stmt(s)
            self.cx.pop_scope()
        if len(self.cx.w.lines) == n0:
            self.cx.w.line("pass")

    def return_stmt(self, s: A.ReturnStmt) -> None:
        fn = self.cx.fn
        if fn.kind in ("state",):
            raise P4Error("return is not allowed in a parser", s.loc)
        parts = []
        rt = fn.return_type
        if s.value is not None:
            if rt is None or isinstance(rt, VoidT):
                raise P4Error("return with a value in a function that returns void", s.loc)
            v = self.expressions.value_expr(s.value, rt)
            parts.append(v.code)
        elif rt is not None and not isinstance(rt, VoidT):
            raise P4Error(f"return without a value in a function that returns {rt}", s.loc)
        elif fn.kind == "function" and fn.outs:
            parts.append("None")
        if fn.outs:
            if not parts:
                parts.append("None")
            self.cx.w.line(f"return ({', '.join(parts + fn.outs)},)")
        else:
            self.cx.w.line("return " + (parts[0] if parts else ""))

    def switch_stmt(self, s: A.SwitchStmt) -> None:
        if self.cx.in_parser():
            raise P4Error("switch statements are not allowed in a parser", s.loc)
        sel = self.expressions.value_expr(s.expr)
        w = self.cx.w
        tmp = self.cx.tmp("sw")
        w.line(f"{tmp} = {sel.code}")
        is_action = isinstance(sel.ty, ActionEnumT)
        pending: list[str] = []
        first = True
        seen_default = False
        for case in s.cases:
            if isinstance(case.label, A.DefaultExpr):
                if seen_default:
                    raise P4Error("switch: more than one default label", case.loc)
                seen_default = True
                cond = "True"
            elif is_action:
                aname = self.switch_action_label(sel.ty, case.label)
                cond = f"{tmp} == {aname!r}"
            else:
                v = self.expressions.value_expr(case.label, sel.ty)
                if not v.const:
                    raise P4Error("switch label must be a compile-time constant", case.label.loc)
                cond = f"{tmp} == {v.code}"
            pending.append(cond)
            if case.body is None:
                continue
            full = " or ".join(pending) if "True" not in pending else "True"
            pending = []
            w.line(("if " if first else "elif ") + full + ":")
            first = False
            w.indent()
            self.block_body(case.body)
            w.dedent()

    def loop_body(self, body: Any) -> None:
        self.loop_depth = self.loop_depth + 1
        try:
            self.block_body(body)
        finally:
            self.loop_depth -= 1

    def for_stmt(self, s: A.ForStmt) -> None:
        """``for (init; cond; update) body`` as ``while True`` with the update run at the
        top of every iteration but the first (so that ``continue`` still updates)."""
        if self.cx.in_parser():             # not a parser statement (p4c: a syntax error)
            raise P4Error("for statements are not allowed in a parser", s.loc)
        w = self.cx.w
        self.cx.push_scope()
        for x in s.init:
            self.stmt(x)
        first = self.cx.tmp("first")
        w.line(f"{first} = True")
        w.line("while True:")
        w.indent()
        w.line(f"if not {first}:")
        w.indent()
        self.stmts_or_pass(s.update)
        w.dedent()
        w.line(f"{first} = False")
        if s.cond is not None:
            c = self.expressions.value_expr(s.cond, BoolT())
            w.line(f"if not ({c.code}): break")
        self.loop_body(s.body)
        w.dedent()
        self.cx.pop_scope()

    def for_in_stmt(self, s: A.ForInStmt) -> None:
        """``for (T x in ...)`` is valid P4_16, but p4c-bm2-ss refuses it in its mid end
        (backends/bmv2/common/check_unsupported.h); C-style ``for`` loops are kept."""
        raise P4Error("BMV2 does not support for-in loops", s.loc)

    def switch_action_label(self, t: ActionEnumT, label: A.Expr) -> str:
        info = t.table
        name = label.name if isinstance(label, A.NameRef) else expr_text(label)
        for a in info.actions:
            if a.local_name == name or a.fqname == name:
                return a.fqname
        raise P4Error(f"switch label '{name}' is not an action of table {info.name}", label.loc)

    # ------------------------------------------------------------------ variables
    def local_var(self, d: A.VarDecl) -> None:
        t = self.expressions.resolve_type(d.type)
        if isinstance(t, IntT):
            raise P4Error(f"variable {d.name} cannot have type int", d.loc)
        refuse_instance_variable(d, t)
        if array_element(t) is not None or nested_array_element(t) is not None:
            if self.cx.unreferenced_locals is None:
                self.cx.unreferenced_locals = unreferenced_locals(self.cx.program)
            if d.init is None and id(d) in self.cx.unreferenced_locals:
                return  # p4c's front end removes it before its back end could refuse it
            refuse_bmv2_array(t, d, local=True)
        odd = odd_header_of(t)
        if odd is not None:
            if self.cx.unreferenced_locals is None:
                self.cx.unreferenced_locals = unreferenced_locals(self.cx.program)
            if id(d) not in self.cx.unreferenced_locals:   # a back-end error: after the front end's
                self.cx.local_header_width_errors.append(
                    P4Error(odd_header_message(odd), self.cx.odd_header_locs.get(odd.name, d.loc)))
        pn = self.new_var(d.name, t, d)
        if d.init is not None:
            self.cx.declaring.append(d)   # `bit<8> i = i;` reads an outer i, as in p4c
            try:
                v = self.expressions.value_expr(d.init, t)
            finally:
                self.cx.declaring.pop()
            if strip_new(t).is_composite():
                self.cx.w.line(f"{pn} = {zero_value_code(t)}")
                self.cx.w.line(f"{pn}._set({v.code})")
            else:
                self.cx.w.line(f"{pn} = {v.code}")
        else:
            self.cx.w.line(f"{pn} = {zero_value_code(t)}")

    def new_var(self, name: str, t: P4Type, node: A.Node, writable: bool = True) -> str:
        pn = self.cx.pyvar(name)
        self.cx.define(name, Sym("var", t, pn, fn=self.cx.fn, writable=writable, decl=node), node)
        return pn

    # ------------------------------------------------------------------ lvalues
    def lvalue_type(self, e: A.Expr) -> P4Type:
        """Type of an assignable expression, checking that it is assignable (else
        :class:`NotAssignable`, which each use words as p4c does)."""
        if isinstance(e, A.NameRef):
            sym = self.cx.lookup(e.name, e, e.is_global)
            if sym.kind != "var":
                raise NotAssignable(f"{e.name} cannot be assigned (it is a {sym.kind})", e.loc)
            if not sym.writable:
                raise NotAssignable(f"{e.name} cannot be assigned: it is a read-only (in or directionless) "
                                    "parameter", e.loc)
            return sym.type
        if isinstance(e, A.Member):
            self.lvalue_type(e.expr)
            return self.expressions.value_expr(e).ty
        if isinstance(e, A.Index):
            self.lvalue_type(e.expr)
            return self.expressions.value_expr(e).ty
        if isinstance(e, A.Slice):
            self.lvalue_type(e.expr)
            return self.expressions.value_expr(e).ty
        if isinstance(e, A.DontCare):
            return DontCareT()
        raise P4Error(f"{expr_text(e)} cannot be assigned", e.loc)

    def assign(self, lhs: A.Expr, rhs: Ex, node: A.Node) -> None:
        """Emit ``lhs = rhs`` (rhs already converted to lhs's type)."""
        w = self.cx.w
        if isinstance(lhs, A.DontCare):
            return
        lt = self.lvalue_type(lhs)
        if strip_new(lt).is_composite():
            target = self.expressions.value_expr(lhs)
            bits = getattr(rhs, "lookahead_bits", None)
            if bits is not None:
                # ``x = pkt.lookahead<T>()``: p4c-bm2-ss assigns the fields of x one by one
                # (ExpandLookahead), so a header stack in x keeps its nextIndex
                w.line(f"{target.code}._lookahead_set(ctx, {bits})")
                return
            w.line(f"{target.code}._set({rhs.code})")
            return
        if isinstance(lhs, A.NameRef):
            sym = self.cx.lookup(lhs.name, lhs, lhs.is_global)
            self.cx.note_assign(sym)
            w.line(f"{sym.code} = {rhs.code}")
            return
        if isinstance(lhs, A.Member):
            base = self.expressions.value_expr(lhs.expr)
            w.line(f"{base.code}.{pyname(lhs.name)} = {rhs.code}")
            return
        if isinstance(lhs, A.Index):
            base = self.expressions.value_expr(lhs.expr)
            raise P4Error(f"{expr_text(lhs)}: cannot assign an element of {base.ty}", lhs.loc)
        if isinstance(lhs, A.Slice):
            inner = self.expressions.value_expr(lhs.expr)
            it = strip_new(inner.ty)
            hi, lo = self.expressions.slice_bounds(lhs)
            width = hi - lo + 1
            mask = ((1 << width) - 1) << lo
            full = it.mask if isinstance(it, BitT) else -1
            new = f"(({inner.code} & {full & ~mask:#x}) | (({rhs.code} << {lo}) & {mask:#x}))"
            if isinstance(it, BitT) and it.signed:
                new = f"_to_signed({new}, {it.width})"
            self.assign(lhs.expr, Ex(new, inner.ty), node)
            return
        raise P4Error(f"{expr_text(lhs)} cannot be assigned", lhs.loc)

    # ------------------------------------------------------------------ declarations
    def const_decl(self, d: A.ConstDecl) -> None:
        """A ``const`` declaration: its value is folded now; one of a struct, header or tuple
        type (``const S k = {8w1};``) is built afresh wherever it is read.

        As in p4c's constant folding, an ``error.X`` in the initializer is not a value it
        can fold: p4c refuses ``const error e = error.NoError;`` ("Cannot evaluate
        initializer for constant"), as ``{error.NoError}`` in a struct constant."""
        t = self.expressions.resolve_type(d.type)
        v = self.expressions.value_expr(d.value, t)
        if not v.const:
            raise P4Error(f"{d.name}: initializer is not a compile-time constant", d.value.loc)
        if any(isinstance(n, A.Member) and isinstance(n.expr, A.NameRef) and n.expr.name == "error"
               and not n.expr.is_global for n in A.iter_nodes(d.value)):
            raise P4Error(f"{expr_text(d.value)}: Cannot evaluate initializer for constant", d.value.loc)
        code = v.code
        if isinstance(strip_new(t), (StructLikeT, TupleT)):
            code = const_code(v.value, t)
        elif isinstance(v.value, (tuple, list)) or not isinstance(v.value, (int, bool, str)):
            code = self.cx.global_ref(v.value, "K_" + d.name) if v.value is not None else v.code
        self.cx.define(d.name, Sym("const", t, code, v.value), d)

    # ------------------------------------------------------------------ functions and actions
    def emit_callable(self, d: Any, info: Any, kind: str, rt: Optional[P4Type], module_level: bool) -> None:
        """Generate a Python function for an action or function declaration."""
        saved_w, saved_fn = self.cx.w, self.cx.fn
        fn = FnCtx(info.pyname, kind, return_type=rt, parent=self.cx.fn)
        fn.decl_loc = d.loc
        fn.in_params = {p.name for p in d.params if p.direction == "in"}
        body = Writer()
        body.depth = 1
        self.cx.w, self.cx.fn = body, fn
        self.cx.push_scope()
        pnames = []
        ptypes = []
        for p in d.params:
            t = self.expressions.resolve_type(p.type)
            refuse_bmv2_array(t, p)
            ptypes.append(t)
            pn = self.cx.pyvar(p.name)
            writable = p.direction in ("out", "inout")
            self.cx.define(p.name, Sym("var", t, pn, fn=fn, writable=writable), p)
            pnames.append(pn)
            if p.direction in ("out", "inout"):
                fn.outs.append(pn)
        info.ptypes = ptypes
        info.outs = fn.outs
        info.deferred_divisions = fn.deferred_divisions
        self.cx.declaring.append(d)   # its own name does not denote it in its body
        try:
            info.outer = outer_names(d, self._callee_outer)
            for s in d.body.stmts:
                self.stmt(s)
        finally:
            self.cx.declaring.pop()
        if kind == "function" and rt is not None and not isinstance(rt, VoidT) and not always_returns(d.body):
            raise P4Error(f"function {d.name} does not return a value on all paths", d.loc)
        if fn.outs:
            body.line(f"return (None, {', '.join(fn.outs)},)")
            body = exit_copies_out(body, fn.outs)
        elif not body.lines:
            body.line("pass")
        self.cx.pop_scope()
        self.cx.w, self.cx.fn = saved_w, saved_fn
        out = self.cx.mod if module_level else self.cx.w
        out.function(f"{info.pyname}({', '.join(pnames)})", fn, body)


    def _assignment_width_error(self, s: A.AssignStmt, lt: P4Type, err: P4Error) -> P4Error:
        """p4c's TypeInference message for ``lhs = rhs`` (or ``lhs op= rhs``) whose
        ``bit``/``int`` right side has another width: the statement, quoted as p4c prints
        it (``'hdr.h.a = 16w3'``, ``'hdr.h.a = 3 + meta.w'``); ``err`` otherwise."""
        written = s.rhs.right if s.compound and isinstance(s.rhs, A.Binary) else s.rhs
        try:
            rt = strip_new(self.expressions.value_expr(written).ty)
        except P4Error:
            return err
        if not (isinstance(lt, BitT) and isinstance(rt, BitT)) or lt.width == rt.width \
                or lt.signed != rt.signed:
            return err
        ex = self.expressions
        rhs = ex.p4c_text(written, alone=not isinstance(written, (A.Binary, A.Unary)))
        return P4Error(f"'{ex.p4c_text(s.lhs, alone=True)} {s.compound}= {rhs}'", s.loc)

    def _callee_outer(self, name: str) -> frozenset[str]:
        sym = self.cx.lookup_opt(name)
        return getattr(sym.value, "outer", frozenset()) if sym is not None and sym.kind in ("action", "function") else frozenset()


def exit_copies_out(body: Writer, outs: list[str]) -> Writer:
    """``body`` (at depth 1) in a ``try`` that, on ``exit``, leaves the values of the
    ``out``/``inout`` parameters ``outs`` on the signal for the caller's copy-out.

    Example::

        >>> w = Writer(); w.depth = 1; w.line("raise _ExitSignal()")
        >>> print(exit_copies_out(w, ["p_x"]).text().rstrip())
            try:
                raise _ExitSignal()
            except _ExitSignal as _xs:
                _xs.outs = (None, p_x,)
                raise
    """
    out = Writer()
    out.lines = ["    try:"] + ["    " + line for line in body.lines] + [
        "    except _ExitSignal as _xs:", f"        _xs.outs = (None, {', '.join(outs)},)", "        raise"]
    return out


def _has_call(e: Any) -> bool:
    """Whether expression ``e`` contains a call (which may have side effects)."""
    if isinstance(e, A.Call):
        return True
    if isinstance(e, A.Node):
        for v in vars(e).values():
            if isinstance(v, A.Node) and _has_call(v):
                return True
            if isinstance(v, list) and any(isinstance(x, A.Node) and _has_call(x) for x in v):
                return True
            if isinstance(v, A.Argument) and _has_call(v.value):
                return True
    return False
