"""Calls: functions, actions, methods of tables, headers, stacks and instances, and the
calling convention of the generated code (the :class:`CallCompiler`).

Arguments are passed by value, as P4_16 says: ``in`` ones copied in, ``out``/``inout`` ones
returned by the callee (``return (ret, out1, …)``, or on the ``ExitSignal`` of an ``exit``)
and assigned back by the caller (copy-in/copy-out). A header, struct, union or stack is
passed by reference where no copy could show (see :mod:`p4sim.engine.aliasing`).

The call compiler owns the :class:`ExpressionCompiler` (built with this call compiler as
its :class:`~p4sim.engine.expressions.CallSite`, since arguments are expressions and an
expression may be a call) and the collaborators a call is dispatched to: the extern
functions and objects (:class:`NativeExterns`), ``packet_in``/``packet_out``
(:class:`PacketExterns`) and the instances of generic functions
(:class:`GenericInstantiator`). It reaches assignments and function bodies through the
:class:`StatementSite` it was built with (the statement compiler).

Example::

    >>> from p4sim.engine.statements import StatementCompiler   # builds its CallCompiler
    >>> from p4sim.frontend.types import HeaderT
    >>> cx = CompileContext(A.Program([]), None)
    >>> calls = StatementCompiler(cx, instances=None).calls
    >>> cx.define("h", Sym("var", HeaderT("h_t", []), "v_h"), None)
    >>> calls.call(A.Call(A.Member(A.NameRef("h"), "isValid")), None, as_statement=False).code
    'v_h._valid'
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

from p4sim.engine.aliasing import needs_copy
from p4sim.engine.arguments import bind_args, call_order
from p4sim.engine.codegen import Ex, FnCtx, Sym, Writer, zero_value_code
from p4sim.engine.compile_context import CompileContext, NotAssignable, expr_text
from p4sim.engine.expressions import ExpressionCompiler, RefEx, TypeEx, deferred_division_error
from p4sim.engine.generics import GenericFunction, GenericInstantiator
from p4sim.engine.natives import NativeExterns
from p4sim.engine.overloads import Overloads
from p4sim.engine.packet_io import PacketExterns
from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.types import (
    ApplyResultT, BoolT, ExternT, HeaderT, IntT, P4Type, UnionT, VoidT, same_type, strip_new,
)


def _declared_after(node: Any, other: Any) -> bool:
    """Whether ``node`` comes after ``other`` in the same source file."""
    a, b = getattr(node, "loc", None), getattr(other, "loc", None)
    return a is not None and b is not None and a.file == b.file and (a.line, a.col) > (b.line, b.col)


def param_in_locals(ctl: A.ControlDecl, pname: str, controls: dict[str, A.ControlDecl], depth: int = 0) -> bool:
    """Whether the parameter ``pname`` of the control ``ctl`` is named in one of its local
    declarations (an action, a table, an instance's arguments), itself or through a control
    it applies that names it so. p4c's inliner puts a control's locals where its instance is
    declared and its apply body where it is applied: a parameter named by the locals then
    refers to the extern given for it at the instance's declaration.

    Example::

        >>> from p4sim.frontend.parser import parse_text
        >>> prog = parse_text("extern R { R(); void w(); }"
        ...                   "control K(R r) { action a() { r.w(); } apply { a(); } }"
        ...                   "control B(R r) { apply { r.w(); } }", "k.p4")
        >>> _, k, b = prog.decls
        >>> param_in_locals(k, "r", {}), param_in_locals(b, "r", {})
        (True, False)
    """
    if depth > 16:
        return False
    for d in ctl.locals:
        if any(isinstance(n, A.NameRef) and n.name == pname for n in A.iter_nodes(d)):
            return True
    instances = {d.name: d for d in ctl.locals if isinstance(d, A.Instantiation)}
    for n in A.iter_nodes(ctl.body):
        if not (isinstance(n, A.Call) and isinstance(n.func, A.Member) and n.func.name == "apply"
                and isinstance(n.func.expr, A.NameRef) and n.func.expr.name in instances):
            continue
        nested = controls.get(getattr(instances[n.func.expr.name].type, "name", ""))
        if nested is None:
            continue
        for param, arg in zip(nested.params, n.args):
            if (arg.name is None and isinstance(arg.value, A.NameRef) and arg.value.name == pname
                    and param_in_locals(nested, param.name, controls, depth + 1)):
                return True
    return False


def _may_have_effects(e: A.Expr) -> bool:
    """Whether evaluating ``e`` may call something (a call anywhere inside it)."""
    if isinstance(e, A.Call):
        return True
    for v in vars(e).values():
        for x in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(x, A.Expr) and _may_have_effects(x):
                return True
    return False


def extern_type_text(t: P4Type) -> str:
    """An extern type as P4 writes it (``register<bit<8>>``)."""
    if isinstance(t, ExternT) and t.type_args:
        return f"{t.name}<{', '.join(str(a) for a in t.type_args.values())}>"
    return str(t)


class StatementSite(Protocol):
    """What calls (and the collaborators they dispatch to) need from the statement
    compiler: assignable expressions, assignments, and the bodies of functions."""

    def lvalue_type(self, e: A.Expr) -> P4Type: ...

    def assign(self, lhs: A.Expr, rhs: Ex, node: A.Node) -> None: ...

    def emit_callable(self, d: Any, info: Any, kind: str, rt: Optional[P4Type], module_level: bool) -> None: ...

    @property
    def instances(self) -> Any: ...   # instantiate_inline(call, name), for C.apply(...)


class CallCompiler:
    """Compiles calls (see the module docstring)."""

    def __init__(self, cx: CompileContext, statements: StatementSite) -> None:
        self.cx = cx
        self.statements = statements
        self.expressions = ExpressionCompiler(cx, calls=self)
        self.natives = NativeExterns(cx, self.expressions, statements)
        self.packets = PacketExterns(cx, self.expressions, statements)
        self.generics = GenericInstantiator(cx, self.expressions, statements)

    def call(self, e: A.Call, expected: Optional[P4Type], as_statement: bool) -> Optional[Ex]:
        f = e.func
        callee = self.expressions.expr(f)
        if isinstance(callee, RefEx) and callee.member is not None:
            return self.method_call(e, callee, expected, as_statement)
        if isinstance(callee, TypeEx):
            raise P4Error(f"{expr_text(f)}: a type cannot be called here (constructor calls are only allowed in instantiations)", e.loc)
        if isinstance(callee, RefEx):
            sym = callee.sym
            if sym.kind == "action":
                if not self.cx.in_kind("action") and not self.cx.dead_code:   # in P4Info
                    self.cx.direct_action_calls.add(sym.value.fqname)
                    self.cx.direct_action_callers.setdefault(sym.value.fqname, self.cx.path)
                return self.direct_action_call(e, sym, as_statement)
            if sym.kind == "function":
                if isinstance(sym.value, Overloads):
                    sym = sym.value.choose(e)
                return self.function_call(e, sym, expected, as_statement)
            if sym.kind == "extern_func":
                return self.natives.native_function(e, sym, expected, as_statement)
            raise P4Error(f"{expr_text(f)} is not callable", e.loc)
        raise P4Error(f"{expr_text(f)} is not callable", e.loc)

    def method_call(self, e: A.Call, callee: RefEx, expected: Optional[P4Type], as_statement: bool) -> Optional[Ex]:
        sym, name = callee.sym, callee.member
        if sym.kind == "hdrmethod":
            t = sym.type
            base = callee.code
            if e.args:
                raise P4Error(f"{name}: takes no arguments", e.loc)
            if isinstance(t, HeaderT) and name in ("isValid", "setValid", "setInvalid") and \
                    self.named_constant(e.func):
                # a header of a constant (``const h_t k = {8w1, 8w2};``: valid)
                if name != "isValid":
                    raise P4Error(f"{expr_text(e.func)}: must be applied to a left-value", e.loc)
                raise P4Error(f"{expr_text(e.func)}: isValid() of a constant header: p4c-bm2-ss cannot "
                              "compile it (it stops with a compiler bug)", e.loc)
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
            if isinstance(e.func, A.Member):
                try:
                    self.statements.lvalue_type(e.func.expr)
                except NotAssignable:       # p4c's type checker (1.2.5.16)
                    raise P4Error(f"{expr_text(e.func)}: must be applied to a left-value", e.loc) from None
            if name == "setValid":
                self.cx.w.line(f"{base}._setvalid(ctx)")
                parent = getattr(callee.base, "union_parent", None)
                if parent:
                    self.cx.w.line(f"{parent}._only({base})")
                return None
            if name == "setInvalid":
                self.cx.w.line(f"{base}._setinvalid(ctx)")
                return None
        if sym.kind == "typemethod":
            t = sym.type
            if name in ("minSizeInBits", "maxSizeInBits") and isinstance(t, HeaderT):
                return Ex(str(t.width_bits), IntT(), True, t.width_bits)
            if name in ("minSizeInBytes", "maxSizeInBytes") and isinstance(t, HeaderT):
                return Ex(str(t.width_bits // 8), IntT(), True, t.width_bits // 8)
            raise P4Error(f"{t}.{name}: no such method", e.loc)
        if sym.kind in ("control_decl", "parser_decl") and name == "apply":
            return self.block_apply(e, self.direct_instance(e, sym.decl.name))
        if sym.kind == "stackmethod":
            if len(e.args) != 1:
                raise P4Error(f"{name}: expects one argument", e.loc)
            n = self.expressions.const_value(e.args[0].value)
            self.cx.w.line(f"{callee.code}.{name}({n})")
            return None
        if sym.kind == "table":
            if self.cx.in_kind("action"):
                raise P4Error("tables cannot be applied from an action", e.loc)
            if self.cx.in_parser():
                raise P4Error("tables cannot be applied in a parser", e.loc)
            if name != "apply":
                raise P4Error(f"table {sym.value.name} has no method '{name}'", e.loc)
            if e.args:
                raise P4Error("apply: tables take no arguments", e.loc)
            if as_statement:
                self.cx.w.line(f"{sym.code}()")
                return Ex("", ApplyResultT(sym.value))
            return Ex(f"{sym.code}()", ApplyResultT(sym.value))
        if sym.kind == "instance":
            inst = sym.value
            if inst.kind in ("control", "parser"):
                if name != "apply":
                    raise P4Error(f"{inst.name} has no method '{name}'", e.loc)
                return self.block_apply(e, inst, sym.decl)
            if inst.kind == "extern":
                return self.natives.native_method(e, inst, name, expected, as_statement)
        if sym.kind == "packet":
            return self.packets.packet_method(e, sym, name, expected, as_statement)
        raise P4Error(f"{expr_text(e.func)}: not a method", e.loc)

    def named_constant(self, method: A.Expr) -> bool:
        """Whether the object of ``method`` (``k.isValid``, ``k.f.isValid``) is, or is part of,
        a declared constant (p4c folds one written in place, ``((h_t){...}).isValid()``)."""
        root = method.expr if isinstance(method, A.Member) else None
        while isinstance(root, (A.Member, A.Index)):
            root = root.expr
        if not isinstance(root, A.NameRef):
            return False
        sym = self.cx.lookup_opt(root.name, root.is_global)
        return sym is not None and sym.kind == "const"

    def invoke(self, fname: str, params: list[A.Param], ptypes: list[P4Type], args: list[Optional[A.Expr]],
               what: str, node: A.Node, has_return: bool, extra_args: Optional[list[str]] = None,
               tail_args: Optional[list[str]] = None, callee_outer: frozenset[str] = frozenset(),
               exit_copies_aliased: bool = True, order: Optional[list[int]] = None) -> Optional[str]:
        """Emit a call with copy-in/copy-out and return the expression of its result
        (a temporary) when ``has_return``. ``extra_args``/``tail_args`` are argument
        codes put before/after those of ``args`` (e.g. action data from a table).

        The callee returns ``(result, out1, …)`` with one value per ``out``/``inout``
        parameter, or leaves them on the :class:`~p4sim.engine.rt.ExitSignal` it raises
        on ``exit``; either way they are copied out. A header or struct argument is
        copied only where :func:`~p4sim.engine.aliasing.needs_copy` says it shows;
        otherwise it is passed by reference (an ``out`` one reset first) and not copied out.
        ``exit_copies_aliased=False`` (a control applied from another): on ``exit`` only
        the arguments p4c's inliner substitutes are copied out, not those it copies because
        they alias (BMv2 runs the inlined control, whose copy-out ``exit`` skips).
        ``order``: per parameter, where its argument is written in the call
        (:func:`~p4sim.engine.arguments.call_order`); copy-out follows it, as p4c's does:
        ``f(y=a, x=a)`` leaves ``a`` with ``x``'s value."""
        codes: list[str] = list(extra_args or [])
        outs: list[tuple[Optional[A.Expr], P4Type]] = []   # per out/inout parameter; None: nothing to copy
        for p, pt, a in zip(params, ptypes, args):
            composite = strip_new(pt).is_composite()
            if p.direction in ("out", "inout"):
                if a is None or isinstance(a, A.DontCare):
                    codes.append(zero_value_code(pt))
                    outs.append((None, pt))
                    continue
                try:
                    lt = self.statements.lvalue_type(a)
                except NotAssignable:
                    if not isinstance(node, A.Call):
                        raise
                    raise P4Error(f"'{expr_text(node)}'", node.loc) from None  # p4c: the call
                if not same_type(strip_new(lt), strip_new(pt)):
                    raise P4Error(f"{what}: argument for {p.direction} parameter '{p.name}' has type {lt}, expected {pt}", a.loc)
                v = self.expressions.value_expr(a)
                if composite and not needs_copy(a, args, callee_outer):
                    codes.append(f"{v.code}._reset()" if p.direction == "out" else v.code)
                    outs.append((None, pt))
                elif composite:
                    codes.append(f"{v.code}._copy()" if p.direction == "inout" else zero_value_code(pt))
                    outs.append((a, pt))
                else:
                    codes.append(v.code if p.direction == "inout" else zero_value_code(pt))
                    outs.append((a, pt))
            else:
                v = self.expressions.value_expr(a, pt) if a is not None else Ex("None", pt)
                copy = composite and a is not None and needs_copy(a, args, callee_outer)
                codes.append(f"{v.code}._copy()" if copy else v.code)
        codes.extend(tail_args or [])
        call = f"{fname}({', '.join(codes)})"
        copies = [(i, a, pt) for i, (a, pt) in enumerate(outs) if a is not None]
        if order is not None:
            out_params = [j for j, p in enumerate(params) if p.direction in ("out", "inout")]
            copies.sort(key=lambda c: order[out_params[c[0]]])
        w = self.cx.w
        if not outs or (not copies and not has_return):
            if has_return and not outs:
                return call
            w.line(call)
            return None
        tmp = self.cx.tmp("c")
        if not copies:
            w.line(f"{tmp} = {call}")
            return f"{tmp}[0]"
        # exit in the callee: its out/inout values ride on the signal, copied out here too
        exited = self.cx.tmp("x")
        w.line(f"{exited} = None")
        w.line("try:")
        w.line(f"    {tmp} = {call}")
        w.line("except _ExitSignal as _xs:")
        w.line(f"    {tmp}, {exited} = _xs.outs, _xs")
        aliased = [] if exit_copies_aliased else [(i, a, pt) for i, a, pt in copies
                                                  if needs_copy(a, args, callee_outer)]
        if aliased:
            w.line(f"if {exited} is not None:")
            w.indent()
            for i, a, pt in copies:
                if all(i != j for j, _, _ in aliased):
                    self.statements.assign(a, Ex(f"{tmp}[{i + 1}]", pt), node)
            w.line(f"raise {exited}")
            w.dedent()
        for i, a, pt in copies:
            self.statements.assign(a, Ex(f"{tmp}[{i + 1}]", pt), node)
        w.line(f"if {exited} is not None: raise {exited}")
        return f"{tmp}[0]" if has_return else None

    def function_call(self, e: A.Call, sym: Sym, expected: Optional[P4Type], as_statement: bool = False) -> Ex:
        fi = sym.value
        if isinstance(fi, GenericFunction):
            fi = self.generics.generic_function_instance(e, fi)
        elif e.type_args:
            raise P4Error(f"{fi.decl.name} is not generic: it takes no type arguments", e.loc)
        d = fi.decl
        if self.cx.in_parser():
            loop = self.cx.loops.first_loop(d)
            if loop is not None:            # p4c-bm2-ss's refusal, at the loop
                raise P4Error("ForStatement: not supported in parser on this target", loop.loc)
        args = bind_args(d.params, e.args, e, d.name)
        self.check_deferred_divisions(fi, d.params, fi.ptypes, args)
        rt = fi.return_type
        outer = getattr(fi, "outer", frozenset())
        if not fi.outs or as_statement:
            r = self.invoke(fi.pyname, d.params, fi.ptypes, args, d.name, e, True, callee_outer=outer,
                            order=call_order(d.params, e.args))
            if as_statement:
                if r is not None and not fi.outs:
                    self.cx.w.line(r)
                return Ex("", VoidT())
            return Ex(r or "None", rt)
        # a call with out/inout arguments inside an expression: wrap the call and its
        # copy-out in a local function so that it runs exactly where the expression is
        # evaluated (&&, || and ?: keep their short-circuit behaviour).
        saved_w, saved_fn = self.cx.w, self.cx.fn
        name = self.cx.uid("_call")
        inner = Writer()
        inner.depth = 1
        fn = FnCtx(name, "inline", parent=self.cx.fn)
        self.cx.w, self.cx.fn = inner, fn
        r = self.invoke(fi.pyname, d.params, fi.ptypes, args, d.name, e, True, callee_outer=outer,
                        order=call_order(d.params, e.args))
        inner.line(f"return {r}")
        self.cx.w, self.cx.fn = saved_w, saved_fn
        self.cx.w.function(f"{name}()", fn, inner)
        return Ex(f"{name}()", rt)

    def direct_action_call(self, e: A.Call, sym: Sym, as_statement: bool) -> None:
        if not as_statement:
            raise P4Error(f"action {sym.value.local_name} does not return a value", e.loc)
        if self.cx.in_parser():
            raise P4Error("actions cannot be called from a parser", e.loc)
        ai = sym.value
        d = ai.decl
        args = bind_args(d.params, e.args, e, d.name)
        self.check_deferred_divisions(ai, d.params, ai.ptypes, args)
        self.invoke(ai.pyname, d.params, ai.ptypes, args, d.name, e, False, callee_outer=ai.outer,
                    order=call_order(d.params, e.args))
        return None

    def check_deferred_divisions(self, info: Any, params: list[A.Param], ptypes: list[P4Type],
                                 args: list[Optional[A.Expr]]) -> None:
        """p4c-bm2-ss's CompileTimeOperations on the callee's inlined body: each ``/``/``%``
        it left to its calls (``in`` parameters as operands) with this call's arguments,
        a constant argument substituted; raises its error where one is left."""
        pending = getattr(info, "deferred_divisions", [])
        if not pending:
            return
        values: dict[str, Optional[int]] = {}
        texts: dict[str, str] = {}
        for p, t, a in zip(params, ptypes, args):
            if p.direction == "in" and a is not None:
                texts[p.name] = expr_text(a)
                if not _may_have_effects(a):
                    x = self.expressions.value_expr(a, t)
                    values[p.name] = int(x.value) if x.const else None
        for d in pending:
            err = deferred_division_error(d, values, texts)
            if err is not None:
                raise err

    def direct_instance(self, e: A.Call, type_name: str) -> Any:
        """The instance p4c's InstantiateDirectCalls declares for ``C.apply(...)``: one per
        call, without constructor arguments, named ``C`` for the control plane."""
        base = e.func.expr if isinstance(e.func, A.Member) else None
        type_args = list(base.type.args) if isinstance(base, A.TypeNameExpr) and isinstance(base.type, A.NamedType) else []
        ctor = A.Call(A.NameRef(type_name, loc=e.loc), [], type_args, loc=e.loc)
        return self.statements.instances.instantiate_inline(ctor, type_name)

    def block_apply(self, e: A.Call, inst: Any, site: Any = None) -> Optional[Ex]:
        """Apply a parser or control instance (``site``: its instantiation, when it has one)."""
        decl = inst.decl
        args = bind_args(decl.params, e.args, e, inst.name)
        params, ptypes, bargs, externs, order = [], [], [], [], []
        for p, t, a, k in zip(decl.params, inst.ptypes, args, call_order(decl.params, e.args)):
            if isinstance(t, ExternT) and t.name in ("packet_in", "packet_out"):
                continue
            if isinstance(t, ExternT):
                externs.append(self.extern_argument(inst, p, t, a, e, site))
                continue
            params.append(p)
            ptypes.append(t)
            bargs.append(a)
            order.append(k)
        self.invoke(inst.pyfunc, params, ptypes, bargs, inst.name, e, False, extra_args=["ctx"],
                    tail_args=externs, exit_copies_aliased=False, order=order)
        return None

    def _controls(self) -> dict[str, A.ControlDecl]:
        return {d.name: d for d in self.cx.program.decls if isinstance(d, A.ControlDecl)}

    def extern_argument(self, inst: Any, p: A.Param, t: ExternT, a: Optional[A.Expr], e: A.Call,
                        site: Any = None) -> str:
        """The Python code of the extern instance an apply gives for the extern parameter
        ``p`` of ``inst`` (a parser or control instance, instantiated at ``site``). p4c
        substitutes the instance in the body: it refuses an instance applied with two
        different ones, and stops (a compiler bug) on one declared after ``site`` when the
        control's local declarations name ``p`` (:func:`param_in_locals`; named only in its
        apply body, p4c-bm2-ss 1.2.5.16 compiles it)."""
        x = self.expressions.expr(a) if a is not None else None
        if not (isinstance(x, RefEx) and x.sym.kind == "instance" and x.sym.value.kind == "extern"):
            where = a if a is not None else e
            raise P4Error(f"{inst.name}: argument for parameter '{p.name}' must be an instance of "
                          f"{extern_type_text(t)}", where.loc)
        given = x.sym.value
        gt = given.type
        if not (isinstance(gt, ExternT) and gt.name == t.name and gt.type_args.keys() == t.type_args.keys()
                and all(same_type(gt.type_args[k], t.type_args[k]) for k in t.type_args)):
            raise P4Error(f"{inst.name}: argument for parameter '{p.name}' has type "
                          f"{extern_type_text(gt)}, expected {extern_type_text(t)}", a.loc if a else e.loc)
        if (given.obj is not None and _declared_after(x.sym.decl, site) and isinstance(inst.decl, A.ControlDecl)
                and param_in_locals(inst.decl, p.name, self._controls())):
            raise P4Error(f"{given.name}: declared after {inst.name}, whose parameter '{p.name}' it is "
                          f"given for: p4c-bm2-ss cannot substitute it (it stops with a compiler bug); "
                          f"declare {given.name} first", a.loc if a else e.loc)
        bound = inst.extern_args.setdefault(p.name, given)
        if bound is not given:
            raise P4Error(f"{p.name}: non-directional parameters must be substitued with the same value in "
                          f"all invocations; two different substitutions are {given.name} and {bound.name}",
                          p.loc)
        return given.code or self.cx.global_ref(given.obj, "X_" + given.name)
