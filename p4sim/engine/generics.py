"""Generic functions and generic parser/control declarations (the :class:`GenericInstantiator`).

p4sim compiles generics by *monomorphisation*, as p4c's front end specialises them: every
distinct list of type arguments of a generic function gets its own generated Python
function (``fn_max_12`` for ``max<bit<8>>``), and every instance of a generic parser or
control is compiled with its type parameters bound to the instance's type arguments.

Type arguments of a function call are either written (``max<bit<16>>(a, b)``) or
inferred by unifying each parameter's declared type with its argument's type: ``T`` in
``T max<T>(in T a, in T b)`` is ``bit<8>`` for ``max(hdr.h.a, hdr.h.b)``; an untyped
integer literal (``max(hdr.h.a, 1)``) takes the type inferred from the other arguments.
A generic function's body is also checked once with its type parameters left abstract,
as p4c does, so ``T inc<T>(in T x) { return x + 1; }`` is rejected at its declaration.

Example::

    T max<T>(in T a, in T b) { return a > b ? a : b; }    // rejected: > on a T
    T pick<T>(in bool c, in T a, in T b) { return c ? a : b; }
    hdr.h.a = pick(meta.flag, hdr.h.a, 7);              // pick<bit<8>>
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

from p4sim.engine.arguments import bind_args
from p4sim.engine.codegen import Writer
from p4sim.engine.compile_context import CompileContext, FunctionInfo
from p4sim.engine.expressions import ExpressionCompiler
from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.types import (
    DontCareT, IntT, P4Type, StackT, TupleT, TypeVarT, same_type, strip_new,
)


class GenericFunction:
    """A generic function declaration and its instances by type-argument key.

    Example::

        >>> GenericFunction(A.FunctionDecl("f", type_params=["T"])).instances
        {}
    """

    def __init__(self, decl: A.FunctionDecl) -> None:
        self.decl = decl
        self.instances: dict[tuple[str, ...], Any] = {}


def type_key(t: P4Type) -> str:
    """A key that tells two concrete types apart (type names are global in P4_16).

    Example::

        >>> from p4sim.frontend.types import BitT
        >>> type_key(StackT(BitT(8), 2))
        'bit<8>[2]'
    """
    return f"{type(t).__name__}:{t}" if not isinstance(t, StackT) else str(t)


def mentions_typevar(t: P4Type, tvars: dict[str, TypeVarT]) -> bool:
    """Whether ``t`` contains one of the type variables ``tvars`` (by identity)."""
    if isinstance(t, TypeVarT):
        return any(t is v for v in tvars.values())
    if isinstance(t, StackT):
        return mentions_typevar(t.elem, tvars)
    if isinstance(t, TupleT):
        return any(mentions_typevar(x, tvars) for x in t.elems)
    return False


class FunctionBodies(Protocol):
    """What instantiating a generic function needs from the statement compiler."""

    def lvalue_type(self, e: A.Expr) -> P4Type: ...

    def emit_callable(self, d: Any, info: Any, kind: str, rt: Optional[P4Type], module_level: bool) -> None: ...


class GenericInstantiator:
    """Instantiation of generic functions (one generated function per type arguments)."""

    def __init__(self, cx: CompileContext, expressions: ExpressionCompiler, statements: FunctionBodies) -> None:
        self.cx = cx
        self.expressions = expressions
        self.statements = statements
        self.generic_check_depth = 0  # > 0 while a generic body is checked with abstract types

    # ------------------------------------------------------------------ declarations
    def generic_function_decl(self, d: A.FunctionDecl) -> GenericFunction:
        """Record a generic function and check its body with abstract type parameters."""
        g = GenericFunction(d)
        tvars = {tp: TypeVarT(tp) for tp in d.type_params}
        saved_mod = self.cx.mod
        self.cx.mod = Writer()  # the abstract instance is checked, never run
        self.generic_check_depth += 1
        try:
            self._emit_function_instance(d, [tvars[tp] for tp in d.type_params])
        finally:
            self.generic_check_depth -= 1
            self.cx.mod = saved_mod
        return g

    # ------------------------------------------------------------------ calls
    def generic_function_instance(self, e: A.Call, g: GenericFunction) -> Any:
        """The :class:`FunctionInfo` of the instance of ``g`` that call ``e`` needs."""
        d = g.decl
        if e.type_args:
            if len(e.type_args) != len(d.type_params):
                raise P4Error(f"{d.name}: expects {len(d.type_params)} type argument(s), got {len(e.type_args)}", e.loc)
            targs = [self.expressions.resolve_type(t) for t in e.type_args]
            for t, tr in zip(targs, e.type_args):
                if isinstance(strip_new(t), IntT):
                    raise P4Error(f"{d.name}: int cannot be a type argument (give a width: bit<W> or int<W>)", tr.loc)
        else:
            targs = self.infer_type_args(e, d)
        checking = self.generic_check_depth > 0
        key = tuple(type_key(t) for t in targs)
        if not checking and key in g.instances:
            return g.instances[key]
        info = self._emit_function_instance(d, targs)
        if not checking:
            g.instances[key] = info
        return info

    def infer_type_args(self, e: A.Call, d: A.FunctionDecl) -> list[P4Type]:
        """Type arguments of a call without explicit ones, by unification of the
        declared parameter types with the argument types."""
        tvars = {tp: TypeVarT(tp) for tp in d.type_params}
        saved = (self.cx.scopes, self.cx.type_bindings)
        self.cx.scopes, self.cx.type_bindings = [self.cx.scopes[0]], [dict(tvars)]
        try:
            ptypes = [self.expressions.resolve_type(p.type) for p in d.params]
        finally:
            self.cx.scopes, self.cx.type_bindings = saved
        args = bind_args(d.params, e.args, e, d.name)
        bound: dict[str, tuple[P4Type, str]] = {}
        untyped: set[str] = set()
        saved_w = self.cx.w
        self.cx.w = Writer()  # argument types only: code generated here is thrown away
        try:
            for p, pt, a in zip(d.params, ptypes, args):
                if a is None or isinstance(a, A.DontCare) or not mentions_typevar(pt, tvars):
                    continue
                at = self.statements.lvalue_type(a) if p.direction in ("out", "inout") else self.expressions.value_expr(a).ty
                self._unify_param(d, pt, at, tvars, bound, untyped, p, a)
        finally:
            self.cx.w = saved_w
        result = []
        for tp in d.type_params:
            if tp in bound:
                result.append(bound[tp][0])
            elif tp in untyped:
                raise P4Error(f"{d.name}: cannot infer type argument {tp} from an untyped integer "
                              f"(give the literal a width or write {d.name}<...>(...))", e.loc)
            else:
                raise P4Error(f"{d.name}: cannot infer type argument {tp} (write {d.name}<...>(...))", e.loc)
        return result

    def _unify_param(self, d: A.FunctionDecl, pt: P4Type, at: P4Type, tvars: dict[str, TypeVarT],
                     bound: dict[str, tuple[P4Type, str]], untyped: set[str], p: A.Param, a: A.Expr) -> None:
        if isinstance(pt, TypeVarT) and mentions_typevar(pt, tvars):
            if isinstance(at, DontCareT):
                return
            if isinstance(strip_new(at), IntT):
                untyped.add(pt.name)
                return
            if pt.name in bound:
                prev, pname = bound[pt.name]
                if not same_type(prev, at):
                    raise P4Error(f"{d.name}: type argument {pt.name} is {prev} (from '{pname}') but "
                                  f"argument '{p.name}' has type {at}", a.loc)
                return
            bound[pt.name] = (at, p.name)
            return
        sa = strip_new(at)
        if isinstance(pt, StackT) and isinstance(sa, StackT) and pt.size == sa.size:
            self._unify_param(d, pt.elem, sa.elem, tvars, bound, untyped, p, a)
        elif isinstance(pt, TupleT) and isinstance(sa, TupleT) and len(pt.elems) == len(sa.elems):
            for x, y in zip(pt.elems, sa.elems):
                self._unify_param(d, x, y, tvars, bound, untyped, p, a)
        else:
            raise P4Error(f"{d.name}: argument '{p.name}' has type {at}, which does not match {pt}", a.loc)

    def _emit_function_instance(self, d: A.FunctionDecl, targs: list[P4Type]) -> Any:
        """Generate the module-level Python function of ``d`` with its type parameters
        bound to ``targs``; return its :class:`FunctionInfo`."""
        saved = (self.cx.w, self.cx.fn, self.cx.path, self.cx.scopes, self.cx.type_bindings)
        self.cx.fn, self.cx.path = None, ""
        self.cx.scopes = [self.cx.scopes[0]]
        self.cx.type_bindings = [dict(zip(d.type_params, targs))]
        try:
            rt = self.expressions.resolve_type(d.return_type)
            info = FunctionInfo(d, self.cx.uid("fn_" + d.name), [], rt, [])
            self.statements.emit_callable(d, info, "function", rt, module_level=True)
        finally:
            self.cx.w, self.cx.fn, self.cx.path, self.cx.scopes, self.cx.type_bindings = saved
        return info


def block_type_bindings(decl: Any, targs: list[P4Type], node: A.Node) -> dict[str, P4Type]:
    """Bindings of a parser/control declaration's type parameters for one instance."""
    what = "parser" if isinstance(decl, A.ParserDecl) else "control"
    if not decl.type_params:
        if targs:
            raise P4Error(f"{what} {decl.name} is not generic: it takes no type arguments", node.loc)
        return {}
    if not targs:
        raise P4Error(f"{what} {decl.name}: cannot infer type argument(s) {', '.join(decl.type_params)} "
                      f"(write {decl.name}<...>(...))", node.loc)
    if len(targs) != len(decl.type_params):
        raise P4Error(f"{what} {decl.name}: expects {len(decl.type_params)} type argument(s), got {len(targs)}",
                      node.loc)
    for t in targs:
        if isinstance(strip_new(t), IntT):
            raise P4Error(f"{what} {decl.name}: int cannot be a type argument (give a width: bit<W> or int<W>)",
                          node.loc)
    return dict(zip(decl.type_params, targs))

