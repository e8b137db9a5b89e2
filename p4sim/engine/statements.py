"""Statements, assignments and calls (a mixin of :class:`p4sim.engine.compiler.Compiler`).

Calling convention of the generated code: scalar ``in`` arguments are passed by value;
scalar ``out``/``inout`` arguments are returned by the callee (``return (ret, out1, …)``)
and assigned back by the caller (copy-in/copy-out); headers, structs, unions and stacks
are passed by reference (``in`` is read-only in P4_16, so this is observably the same
except when two arguments alias each other), an ``out`` composite is reset at entry.
"""
from __future__ import annotations

from typing import Any, Optional

from p4sim.engine.codegen import Ex, Sym, pyname, zero_value_code
from p4sim.engine.expressions import A_text, RefEx, TypeEx, lit
from p4sim.engine.generics import GenericFunction
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.types import (
    ActionEnumT, ApplyResultT, BitT, BlockT, BoolT, DontCareT, EnumT, ErrorT, ExternT, HeaderT,
    IntT, P4Type, StackT, StructLikeT, TableT, TupleT, TypeVarT, UnionT, VarbitT, VoidT,
    same_type, strip_new,
)


class StmtMixin:
    # ------------------------------------------------------------------ statements
    def stmt(self, s: Any) -> None:
        w = self.w
        if isinstance(s, A.AssignStmt):
            if isinstance(s.lhs, A.DontCare):
                self.value_expr(s.rhs)
                return
            lt = self.lvalue_type(s.lhs)
            lhs = self.freeze_indices(s.lhs) if _has_call(s.rhs) else s.lhs
            rhs = self.value_expr(s.rhs, lt)
            self.assign(lhs, rhs, s)
        elif isinstance(s, A.CallStmt):
            ex = self.call(s.call, None, as_statement=True)
            if ex is not None and ex.code and not isinstance(ex, (RefEx, TypeEx)):
                w.line(ex.code)
        elif isinstance(s, A.BlockStmt):
            self.push_scope()
            self.stmts_or_pass(s.stmts)
            self.pop_scope()
        elif isinstance(s, A.IfStmt):
            c = self.value_expr(s.cond, BoolT())
            w.line(f"if {c.code}:")
            w.indent()
            self.block_body(s.then)
            w.dedent()
            if s.other is not None:
                w.line("else:")
                w.indent()
                self.block_body(s.other)
                w.dedent()
        elif isinstance(s, A.SwitchStmt):
            self.switch_stmt(s)
        elif isinstance(s, A.ExitStmt):
            if self.in_parser():
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
            if not getattr(self, "loop_depth", 0):
                raise P4Error(f"{'break' if isinstance(s, A.BreakStmt) else 'continue'} outside a loop", s.loc)
            w.line("break" if isinstance(s, A.BreakStmt) else "continue")
        elif isinstance(s, A.VarDecl):
            self.local_var(s)
        elif isinstance(s, A.ConstDecl):
            self.const_decl(s)
        elif isinstance(s, A.Instantiation):
            self.local_instantiation(s)
        elif isinstance(s, A.Decl):
            raise P4Unsupported(f"unsupported: declaration of {type(s).__name__} here", s.loc)
        else:
            raise P4Error(f"unexpected statement {type(s).__name__}", s.loc)

    def freeze_indices(self, e: A.Expr) -> A.Expr:
        """The lvalue ``e`` with its run-time stack indices evaluated now into temporaries
        (p4c evaluates the left side of an assignment before the right side, which
        matters when the right side calls something that changes an index)."""
        if isinstance(e, A.Member):
            inner = self.freeze_indices(e.expr)
            return e if inner is e.expr else A.Member(inner, e.name, loc=e.loc)
        if isinstance(e, A.Slice):
            inner = self.freeze_indices(e.expr)
            return e if inner is e.expr else A.Slice(inner, e.hi, e.lo, loc=e.loc)
        if isinstance(e, A.Index):
            inner = self.freeze_indices(e.expr)
            ix = self.value_expr(e.index)
            if ix.const:
                return e if inner is e.expr else A.Index(inner, e.index, loc=e.loc)
            name = "$" + self.tmp("ix")
            pn = self.new_var(name, ix.ty, e, writable=False)
            self.w.line(f"{pn} = {ix.code}")
            return A.Index(inner, A.NameRef(name, loc=e.index.loc), loc=e.loc)
        return e

    def stmts_or_pass(self, stmts: list[Any]) -> None:
        """Compile statements; write ``pass`` when they generate no Python line."""
        n0 = len(self.w.lines)
        for x in stmts:
            self.stmt(x)
        if len(self.w.lines) == n0:
            self.w.line("pass")

    def block_body(self, s: Any) -> None:
        n0 = len(self.w.lines)
        if isinstance(s, A.BlockStmt):
            self.stmt(s)
        else:
            self.push_scope()
            self.stmt(s)
            self.pop_scope()
        if len(self.w.lines) == n0:
            self.w.line("pass")

    def return_stmt(self, s: A.ReturnStmt) -> None:
        fn = self.fn
        if fn.kind in ("state",):
            raise P4Error("return is not allowed in a parser", s.loc)
        parts = []
        rt = fn.return_type
        if s.value is not None:
            if rt is None or isinstance(rt, VoidT):
                raise P4Error("return with a value in a function that returns void", s.loc)
            v = self.value_expr(s.value, rt)
            parts.append(v.code)
        elif rt is not None and not isinstance(rt, VoidT):
            raise P4Error(f"return without a value in a function that returns {rt}", s.loc)
        elif fn.kind == "function" and fn.outs:
            parts.append("None")
        if fn.outs:
            if not parts:
                parts.append("None")
            self.w.line(f"return ({', '.join(parts + fn.outs)},)")
        else:
            self.w.line("return " + (parts[0] if parts else ""))

    def switch_stmt(self, s: A.SwitchStmt) -> None:
        if self.in_parser():
            raise P4Error("switch statements are not allowed in a parser", s.loc)
        sel = self.value_expr(s.expr)
        w = self.w
        tmp = self.tmp("sw")
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
                v = self.value_expr(case.label, sel.ty)
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
        self.loop_depth = getattr(self, "loop_depth", 0) + 1
        try:
            self.block_body(body)
        finally:
            self.loop_depth -= 1

    def for_stmt(self, s: A.ForStmt) -> None:
        """``for (init; cond; update) body`` as ``while True`` with the update run at the
        top of every iteration but the first (so that ``continue`` still updates)."""
        w = self.w
        self.push_scope()
        for x in s.init:
            self.stmt(x)
        first = self.tmp("first")
        w.line(f"{first} = True")
        w.line("while True:")
        w.indent()
        w.line(f"if not {first}:")
        w.indent()
        self.stmts_or_pass(s.update)
        w.dedent()
        w.line(f"{first} = False")
        if s.cond is not None:
            c = self.value_expr(s.cond, BoolT())
            w.line(f"if not ({c.code}): break")
        self.loop_body(s.body)
        w.dedent()
        self.pop_scope()

    def for_in_stmt(self, s: A.ForInStmt) -> None:
        """``for (T x in lo .. hi)`` (inclusive), over a list expression or a header stack."""
        w = self.w
        self.push_scope()
        coll = s.collection
        declared = self.resolve_type(s.typeref) if s.typeref is not None else None
        if isinstance(coll, A.Binary) and coll.op == "..":
            lo = self.value_expr(coll.left, declared)
            t = declared or lo.ty
            hi = self.value_expr(coll.right, t)
            if isinstance(strip_new(t), IntT) or not isinstance(strip_new(t), BitT):
                raise P4Error("for: the range needs a bit<W> or int<W> type", coll.loc)
            items = f"range({lo.code}, {hi.code} + 1)"
        elif isinstance(coll, A.ListExpr):
            if declared is None:
                raise P4Error("for: iterating over a list needs a declared element type", s.loc)
            t = declared
            items = "(" + "".join(self.value_expr(x, t).code + ", " for x in coll.elems) + ")"
        else:
            x = self.value_expr(coll)
            st = strip_new(x.ty)
            if not isinstance(st, StackT):
                raise P4Error(f"for: cannot iterate over a value of type {x.ty}", coll.loc)
            t = declared or st.elem
            items = f"{x.code}.h"
        var = self.new_var(s.name, t, s, writable=False)
        w.line(f"for {var} in {items}:")
        w.indent()
        self.loop_body(s.body)
        w.dedent()
        self.pop_scope()

    def switch_action_label(self, t: ActionEnumT, label: A.Expr) -> str:
        info = t.table
        name = label.name if isinstance(label, A.NameRef) else A_text(label)
        for a in info.actions:
            if a.local_name == name or a.fqname == name:
                return a.fqname
        raise P4Error(f"switch label '{name}' is not an action of table {info.name}", label.loc)

    # ------------------------------------------------------------------ variables
    def local_var(self, d: A.VarDecl) -> None:
        t = self.resolve_type(d.type)
        if isinstance(t, IntT):
            raise P4Error(f"variable {d.name} cannot have type int", d.loc)
        pn = self.new_var(d.name, t, d)
        if d.init is not None:
            v = self.value_expr(d.init, t)
            if strip_new(t).is_composite():
                self.w.line(f"{pn} = {zero_value_code(t)}")
                self.w.line(f"{pn}._set({v.code})")
            else:
                self.w.line(f"{pn} = {v.code}")
        else:
            self.w.line(f"{pn} = {zero_value_code(t)}")

    def new_var(self, name: str, t: P4Type, node: A.Node, writable: bool = True) -> str:
        pn = self.pyvar(name)
        self.define(name, Sym("var", t, pn, fn=self.fn, writable=writable), node)
        return pn

    # ------------------------------------------------------------------ lvalues
    def lvalue_type(self, e: A.Expr) -> P4Type:
        """Type of an assignable expression, checking that it is assignable."""
        if isinstance(e, A.NameRef):
            sym = self.lookup(e.name, e, e.is_global)
            if sym.kind != "var":
                raise P4Error(f"{e.name} cannot be assigned (it is a {sym.kind})", e.loc)
            if not sym.writable:
                raise P4Error(f"{e.name} cannot be assigned: it is a read-only (in or directionless) parameter", e.loc)
            return sym.type
        if isinstance(e, A.Member):
            self.lvalue_type(e.expr)
            return self.value_expr(e).ty
        if isinstance(e, A.Index):
            self.lvalue_type(e.expr)
            return self.value_expr(e).ty
        if isinstance(e, A.Slice):
            self.lvalue_type(e.expr)
            return self.value_expr(e).ty
        if isinstance(e, A.DontCare):
            return DontCareT()
        raise P4Error(f"{A_text(e)} cannot be assigned", e.loc)

    def assign(self, lhs: A.Expr, rhs: Ex, node: A.Node) -> None:
        """Emit ``lhs = rhs`` (rhs already converted to lhs's type)."""
        w = self.w
        if isinstance(lhs, A.DontCare):
            return
        lt = self.lvalue_type(lhs)
        if strip_new(lt).is_composite():
            target = self.value_expr(lhs)
            w.line(f"{target.code}._set({rhs.code})")
            return
        if isinstance(lhs, A.NameRef):
            sym = self.lookup(lhs.name, lhs, lhs.is_global)
            self.note_assign(sym)
            w.line(f"{sym.code} = {rhs.code}")
            return
        if isinstance(lhs, A.Member):
            base = self.value_expr(lhs.expr)
            w.line(f"{base.code}.{pyname(lhs.name)} = {rhs.code}")
            return
        if isinstance(lhs, A.Index):
            base = self.value_expr(lhs.expr)
            raise P4Error(f"{A_text(lhs)}: cannot assign an element of {base.ty}", lhs.loc)
        if isinstance(lhs, A.Slice):
            inner = self.value_expr(lhs.expr)
            it = strip_new(inner.ty)
            hi = self.const_value(lhs.hi)
            lo = self.const_value(lhs.lo)
            width = hi - lo + 1
            mask = ((1 << width) - 1) << lo
            full = it.mask if isinstance(it, BitT) else -1
            new = f"(({inner.code} & {full & ~mask:#x}) | (({rhs.code} << {lo}) & {mask:#x}))"
            if isinstance(it, BitT) and it.signed:
                new = f"_to_signed({new}, {it.width})"
            self.assign(lhs.expr, Ex(new, inner.ty), node)
            return
        raise P4Error(f"{A_text(lhs)} cannot be assigned", lhs.loc)

    # ------------------------------------------------------------------ calls
    def bind_args(self, params: list[A.Param], args: list[A.Argument], node: A.Node,
                  what: str) -> list[Optional[A.Expr]]:
        """Match arguments (positional or named, defaults) to parameters."""
        result: list[Optional[A.Expr]] = [None] * len(params)
        named = any(a.name for a in args)
        if named:
            if not all(a.name for a in args):
                raise P4Error(f"{what}: cannot mix named and positional arguments", node.loc)
            index = {p.name: i for i, p in enumerate(params)}
            for a in args:
                if a.name not in index:
                    raise P4Error(f"{what}: no parameter named '{a.name}'", a.loc)
                result[index[a.name]] = a.value
        else:
            if len(args) > len(params):
                raise P4Error(f"{what}: too many arguments ({len(args)} given, {len(params)} expected)", node.loc)
            for i, a in enumerate(args):
                result[i] = a.value
        for i, p in enumerate(params):
            if result[i] is None:
                if p.default is not None:
                    result[i] = p.default
                elif not any(an.name == "optional" for an in p.annotations):
                    raise P4Error(f"{what}: missing argument for parameter '{p.name}'", node.loc)
        return result

    def call(self, e: A.Call, expected: Optional[P4Type], as_statement: bool) -> Optional[Ex]:
        f = e.func
        callee = self.expr(f)
        if isinstance(callee, RefEx) and callee.member is not None:
            return self.method_call(e, callee, expected, as_statement)
        if isinstance(callee, TypeEx):
            raise P4Error(f"{A_text(f)}: a type cannot be called here (constructor calls are only allowed in instantiations)", e.loc)
        if isinstance(callee, RefEx):
            sym = callee.sym
            if sym.kind == "action":
                return self.direct_action_call(e, sym, as_statement)
            if sym.kind == "function":
                return self.function_call(e, sym, expected, as_statement)
            if sym.kind == "extern_func":
                return self.native_function(e, sym, expected, as_statement)
            raise P4Error(f"{A_text(f)} is not callable", e.loc)
        raise P4Error(f"{A_text(f)} is not callable", e.loc)

    def method_call(self, e: A.Call, callee: RefEx, expected: Optional[P4Type], as_statement: bool) -> Optional[Ex]:
        sym, name = callee.sym, callee.member
        if sym.kind == "hdrmethod":
            t = sym.type
            base = callee.code
            if e.args:
                raise P4Error(f"{name}: takes no arguments", e.loc)
            if name == "isValid":
                return Ex(f"{base}._valid" if not isinstance(t, UnionT) else f"{base}._valid", BoolT())
            if name in ("minSizeInBits", "maxSizeInBits"):
                return Ex(str(t.width_bits) if isinstance(t, HeaderT) else "0", IntT(), True,
                          t.width_bits if isinstance(t, HeaderT) else 0)
            if name in ("minSizeInBytes", "maxSizeInBytes"):
                v = (t.width_bits + 7) // 8 if isinstance(t, HeaderT) else 0
                return Ex(str(v), IntT(), True, v)
            if isinstance(t, UnionT):
                raise P4Error(f"{name}: not a method of header_union", e.loc)
            if not as_statement:
                raise P4Error(f"{name}() does not return a value", e.loc)
            if name == "setValid":
                self.w.line(f"{base}._setvalid(ctx)")
                parent = getattr(callee.base, "union_parent", None)
                if parent:
                    self.w.line(f"{parent}._only({base})")
                return None
            if name == "setInvalid":
                self.w.line(f"{base}._setinvalid(ctx)")
                return None
        if sym.kind == "typemethod":
            t = sym.type
            if name in ("minSizeInBits", "maxSizeInBits") and isinstance(t, HeaderT):
                return Ex(str(t.width_bits), IntT(), True, t.width_bits)
            if name in ("minSizeInBytes", "maxSizeInBytes") and isinstance(t, HeaderT):
                return Ex(str(t.width_bits // 8), IntT(), True, t.width_bits // 8)
            if name == "apply" and isinstance(t, BlockT):
                raise P4Unsupported("unsupported: direct application of a parser/control type (declare an instance)", e.loc)
            raise P4Error(f"{t}.{name}: no such method", e.loc)
        if sym.kind == "stackmethod":
            if len(e.args) != 1:
                raise P4Error(f"{name}: expects one argument", e.loc)
            n = self.const_value(e.args[0].value)
            self.w.line(f"{callee.code}.{name}({n})")
            return None
        if sym.kind == "table":
            if self.in_kind("action"):
                raise P4Error("tables cannot be applied from an action", e.loc)
            if self.in_parser():
                raise P4Error("tables cannot be applied in a parser", e.loc)
            if name != "apply":
                raise P4Error(f"table {sym.value.name} has no method '{name}'", e.loc)
            if e.args:
                raise P4Error("apply: tables take no arguments", e.loc)
            if as_statement:
                self.w.line(f"{sym.code}()")
                return Ex("", ApplyResultT(sym.value))
            return Ex(f"{sym.code}()", ApplyResultT(sym.value))
        if sym.kind == "instance":
            inst = sym.value
            if inst.kind in ("control", "parser"):
                if name != "apply":
                    raise P4Error(f"{inst.name} has no method '{name}'", e.loc)
                return self.block_apply(e, inst)
            if inst.kind == "extern":
                return self.native_method(e, inst, name, expected, as_statement)
        if sym.kind == "packet":
            return self.packet_method(e, sym, name, expected, as_statement)
        raise P4Error(f"{A_text(e.func)}: not a method", e.loc)

    def out_arg(self, p: A.Param, arg: Optional[A.Expr], pt: P4Type, what: str) -> Ex:
        if arg is None or isinstance(arg, A.DontCare):
            return Ex("None", pt)
        lt = self.lvalue_type(arg)
        if not same_type(strip_new(lt), strip_new(pt)) and not isinstance(pt, TypeVarT):
            raise P4Error(f"{what}: argument for {p.direction} parameter '{p.name}' has type {lt}, expected {pt}", arg.loc)
        return self.value_expr(arg)

    def invoke(self, fname: str, params: list[A.Param], ptypes: list[P4Type], args: list[Optional[A.Expr]],
               what: str, node: A.Node, has_return: bool, extra_args: Optional[list[str]] = None,
               tail_args: Optional[list[str]] = None) -> Optional[str]:
        """Emit a call with copy-in/copy-out and return the expression of its result
        (a temporary) when ``has_return``. ``extra_args``/``tail_args`` are argument
        codes put before/after those of ``args`` (e.g. action data from a table)."""
        codes: list[str] = list(extra_args or [])
        outs: list[tuple[A.Expr, P4Type]] = []
        for p, pt, a in zip(params, ptypes, args):
            composite = strip_new(pt).is_composite()
            if p.direction in ("out", "inout"):
                if a is None or isinstance(a, A.DontCare):
                    if composite:
                        codes.append(zero_value_code(pt))
                    else:
                        codes.append(zero_value_code(pt))
                        outs.append((A.DontCare(loc=node.loc), pt))
                    continue
                lt = self.lvalue_type(a)
                if not same_type(strip_new(lt), strip_new(pt)):
                    raise P4Error(f"{what}: argument for {p.direction} parameter '{p.name}' has type {lt}, expected {pt}", a.loc)
                v = self.value_expr(a)
                if composite:
                    codes.append(f"{v.code}._reset()" if p.direction == "out" else v.code)
                else:
                    codes.append(v.code if p.direction == "inout" else zero_value_code(pt))
                    outs.append((a, pt))
            else:
                v = self.value_expr(a, pt) if a is not None else Ex("None", pt)
                codes.append(v.code)
        codes.extend(tail_args or [])
        call = f"{fname}({', '.join(codes)})"
        if not outs:
            if has_return:
                return call
            self.w.line(call)
            return None
        tmp = self.tmp("c")
        self.w.line(f"{tmp} = {call}")
        for i, (a, pt) in enumerate(outs):
            if not isinstance(a, A.DontCare):
                self.assign(a, Ex(f"{tmp}[{i + 1}]", pt), node)
        return f"{tmp}[0]" if has_return else None

    def function_call(self, e: A.Call, sym: Sym, expected: Optional[P4Type], as_statement: bool = False) -> Ex:
        fi = sym.value
        if isinstance(fi, GenericFunction):
            fi = self.generic_function_instance(e, fi)
        elif e.type_args:
            raise P4Error(f"{fi.decl.name} is not generic: it takes no type arguments", e.loc)
        d = fi.decl
        args = self.bind_args(d.params, e.args, e, d.name)
        rt = fi.return_type
        if not fi.outs or as_statement:
            r = self.invoke(fi.pyname, d.params, fi.ptypes, args, d.name, e, True)
            if as_statement:
                if r is not None and not fi.outs:
                    self.w.line(r)
                return Ex("", VoidT())
            return Ex(r or "None", rt)
        # a call with out/inout arguments inside an expression: wrap the call and its
        # copy-out in a local function so that it runs exactly where the expression is
        # evaluated (&&, || and ?: keep their short-circuit behaviour).
        from p4sim.engine.codegen import FnCtx, Writer
        saved_w, saved_fn = self.w, self.fn
        name = self.uid("_call")
        inner = Writer()
        inner.depth = 1
        fn = FnCtx(name, "inline", parent=self.fn)
        self.w, self.fn = inner, fn
        r = self.invoke(fi.pyname, d.params, fi.ptypes, args, d.name, e, True)
        inner.line(f"return {r}")
        self.w, self.fn = saved_w, saved_fn
        self.w.function(f"{name}()", fn, inner)
        return Ex(f"{name}()", rt)

    def direct_action_call(self, e: A.Call, sym: Sym, as_statement: bool) -> None:
        if not as_statement:
            raise P4Error(f"action {sym.value.local_name} does not return a value", e.loc)
        if self.in_parser():
            raise P4Error("actions cannot be called from a parser", e.loc)
        ai = sym.value
        d = ai.decl
        args = self.bind_args(d.params, e.args, e, d.name)
        self.invoke(ai.pyname, d.params, ai.ptypes, args, d.name, e, False)
        return None


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
