"""Expression checking and code generation: the :class:`ExpressionCompiler`.

Every expression becomes an :class:`Ex`: the Python source that computes it, its P4 type
and, when it is a compile-time constant, its value (folded at compile time). Values of
``bit<W>`` are Python ints in ``[0, 2**W)``, ``int<W>`` ints in ``[-2**(W-1), 2**(W-1))``,
so every operation masks or sign-wraps its result.

The expression compiler reads names and types from the shared
:class:`~p4sim.engine.compile_context.CompileContext`, resolves type references with its
:class:`~p4sim.engine.typerefs.TypeResolver`, and hands a call (``f(x)``, ``t.apply()``,
``h.isValid()``) to the :class:`CallSite` it was built with (the call compiler, which in
turn compiles the arguments here).

Example::

    >>> from p4sim.engine.compile_context import CompileContext
    >>> exprs = ExpressionCompiler(CompileContext(A.Program([]), None), calls=None)
    >>> x = exprs.expr(A.Binary("+", A.IntLit(250, width=8), A.IntLit(10, width=8)))
    >>> x.code, x.ty, x.value
    ('4', BitT(width=8, signed=False), 4)
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

from p4sim.engine.arith import arith_code, const_wrap, fold, lit, wrap
from p4sim.engine.codegen import DeferredDivision, Ex, FnCtx, Sym, pyname, zero_value_code
from p4sim.engine.compile_context import CompileContext, expr_text
from p4sim.engine.typerefs import TypeResolver
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.text import operand_text
from p4sim.frontend.types import (
    MAX_WIDTH_BITS, ActionEnumT, ApplyResultT, BitT, BlockT, BoolT, DontCareT, EnumT, ErrorT, IntT, NewT, P4Type,
    SetT, StackT, StringT, StructLikeT, StructT, TupleT, UnionT, VoidT, same_type, strip_new,
)

#: p4c-bm2-ss refuses a shift amount wider than this (``LowerExpressions::maxShiftWidth``)
BMV2_MAX_SHIFT_BITS = 8


class TypeEx(Ex):
    """A type used where an expression is expected (``E.A``, ``error.X``, ``T.apply``)."""

    def __init__(self, t: P4Type) -> None:
        super().__init__("", t)
        self.type_value = t


class RefEx(Ex):
    """A reference to a non-value (table, instance, action, function, packet, method)."""

    def __init__(self, sym: Sym, code: str = "", member: Optional[str] = None, base: Any = None) -> None:
        super().__init__(code, sym.type if sym.type is not None else VoidT())
        self.sym = sym
        self.member = member
        self.base = base


ARITH_OPS = {"+", "-", "*", "/", "%", "|+|", "|-|", "&", "|", "^"}
CMP_OPS = {"==", "!=", "<", ">", "<=", ">="}


def const_code(value: Any, t: P4Type) -> str:
    """Python source of the compile-time value ``value`` of type ``t``.

    A struct or header value (a tuple of its field values, in field order) becomes a new
    object at each use, so that a constant is never shared with what it initializes; a
    tuple becomes a Python tuple; anything else a literal.

    Example::

        >>> const_code((3, True), TupleT([BitT(8), BoolT()]))
        '(3, True, )'
    """
    st = strip_new(t)
    if isinstance(st, StructLikeT):
        fields = "".join(const_code(v, ft) + ", " for v, (_, ft) in zip(value, st.fields))
        return f"{st.pyclass}._from(({fields}))"
    if isinstance(st, TupleT):
        return "(" + "".join(const_code(v, et) + ", " for v, et in zip(value, st.elems)) + ")"
    return lit(value)


def _aggregate(code: str, t: Optional[P4Type], xs: list[Ex]) -> Ex:
    """The :class:`Ex` of a struct, header or tuple built from ``xs``: a compile-time
    constant, with the tuple of their values, when all of them are (p4c folds such a list
    or structure expression, e.g. the initializer of ``const S k = {8w1};``)."""
    if all(x.const for x in xs):
        return Ex(code, t, True, tuple(x.value for x in xs))  # type: ignore[arg-type]
    return Ex(code, t)  # type: ignore[arg-type]


class CallSite(Protocol):
    """What the expression compiler needs to compile a call inside an expression."""

    def call(self, e: A.Call, expected: Optional[P4Type], as_statement: bool) -> Optional[Ex]: ...


def _reduced_by_p4c(op: str, left: Ex, right: Ex) -> bool:
    """Whether p4c's StrengthReduction removes a ``/`` or ``%`` of a run-time value (what
    is left fails its CompileTimeOperations): a constant 0 divided, a constant divisor 1,
    or a constant power of two (a shift, a mask: only unsigned operands reach here).

    >>> _reduced_by_p4c("/", Ex("x", None), Ex("8", None, True, 8))
    True
    >>> _reduced_by_p4c("%", Ex("x", None), Ex("y", None))
    False
    """
    if left.const and left.value == 0:
        return True
    if right.const:
        v = int(right.value)
        return v > 0 and v & (v - 1) == 0
    return False


def deferred_division_error(d: DeferredDivision, values: dict[str, Optional[int]],
                            texts: Optional[dict[str, str]] = None) -> Optional[P4Error]:
    """The error p4c-bm2-ss gives for deferred division ``d`` once a call's arguments are
    substituted (``values``: each ``in`` parameter's constant argument, None if it is
    not a compile-time constant; ``texts``: the arguments as written), or None where it
    compiles (folded, or reduced to a shift or a mask). As p4c, the message quotes the
    inlined expression: a constant argument as its value.

    >>> d = DeferredDivision("%", ("dyn", None), ("param", "N"), ("x", "N"), None)
    >>> deferred_division_error(d, {"N": 4}) is None
    True
    >>> str(deferred_division_error(d, {"N": 3}))
    'error: x % 3: could not evaluate expression at compilation time'
    >>> str(deferred_division_error(d, {"N": None}, {"N": "hdr.a"}))
    'error: x % hdr.a: could not evaluate expression at compilation time'
    """
    def side(spec: tuple[str, Any]) -> Ex:
        kind, v = spec
        value = v if kind == "const" else values.get(v) if kind == "param" else None
        return Ex("", None, True, value) if value is not None else Ex("", None)
    left, right = side(d.left), side(d.right)
    if left.const and right.const:
        if right.value == 0:
            return P4Error(f"{d.op}: division by zero", d.loc)
        return None
    if _reduced_by_p4c(d.op, left, right):
        return None

    def text(spec: tuple[str, Any], written: str, x: Ex) -> str:
        if spec[0] != "param":
            return written
        return str(x.value) if x.const else (texts or {}).get(spec[1], written)
    quoted = f"{text(d.left, d.texts[0], left)} {d.op} {text(d.right, d.texts[1], right)}"
    return P4Error(f"{quoted}: could not evaluate expression at compilation time", d.loc)


class ExpressionCompiler:
    """Compiles expressions to :class:`Ex` (see the module docstring)."""

    def __init__(self, cx: CompileContext, calls: CallSite) -> None:
        self.cx = cx
        self.calls = calls
        self.types = TypeResolver(cx, self.const_value)

    def resolve_type(self, t: A.TypeRef) -> P4Type:
        """The checker's type of a type reference (``bit<W>``, ``H[4]``, a typedef...)."""
        return self.types.resolve(t)

    # ------------------------------------------------------------------ conversions
    def coerce(self, ex: Ex, target: Optional[P4Type], node: A.Node, what: str = "expression") -> Ex:
        """Implicit conversion of ``ex`` to ``target`` where P4_16 allows it."""
        if target is None or isinstance(target, (DontCareT,)) or isinstance(ex.ty, DontCareT):
            return ex
        src = ex.ty
        if same_type(src, target):
            return ex
        ts, tt = strip_new(src), strip_new(target)
        if isinstance(ts, IntT):
            if isinstance(tt, BitT) and ex.const:
                v = const_wrap(ex.value, tt)
                return Ex(lit(v), target, True, v)
            if isinstance(tt, BitT):
                return Ex(f"_to_signed({ex.code}, {tt.width})" if tt.signed else wrap(ex.code, tt), target)
            if isinstance(tt, IntT):
                return ex
        if isinstance(tt, IntT) and isinstance(ts, BitT):
            return Ex(ex.code, src, ex.const, ex.value)
        if isinstance(src, NewT) or isinstance(target, NewT):
            if same_type(ts, tt):
                return Ex(ex.code, target, ex.const, ex.value)
        if isinstance(ts, TupleT) and isinstance(tt, (StructLikeT, TupleT)):
            return ex  # handled by the list-expression compiler with the expected type
        if isinstance(ts, SetT):
            return ex
        if isinstance(ts, EnumT) and isinstance(tt, EnumT) and ts.name == tt.name:
            return ex
        if isinstance(ts, EnumT) and ts.underlying is not None and isinstance(tt, BitT) and same_type(ts.underlying, tt):
            # a serializable enum converts to its underlying type implicitly (P4_16 1.2.x, p4-spec #774)
            return Ex(ex.code, target, ex.const, ex.value)
        raise P4Error(f"{what}: cannot convert type {src} to {target}", node.loc)

    # ------------------------------------------------------------------ entry point
    def expr(self, e: A.Expr, expected: Optional[P4Type] = None) -> Ex:
        method = getattr(self, "_x_" + type(e).__name__, None)
        if method is None:
            raise P4Error(f"unexpected expression {type(e).__name__}", e.loc)
        ex = method(e, expected)
        if expected is not None and not isinstance(ex, (TypeEx, RefEx)):
            ex = self.coerce(ex, expected, e)
        return ex

    def value_expr(self, e: A.Expr, expected: Optional[P4Type] = None) -> Ex:
        ex = self.expr(e, expected)
        if isinstance(ex, TypeEx) or (isinstance(ex, RefEx) and ex.sym.kind not in ("var",)):
            raise P4Error(f"{expr_text(e)} is not a value", e.loc)
        return ex

    def const_value(self, e: A.Expr, expected: Optional[P4Type] = None) -> Any:
        ex = self.value_expr(e, expected)
        if not ex.const:
            raise P4Error(f"{expr_text(e)}: expected a compile-time constant", e.loc)
        return ex.value

    # ------------------------------------------------------------------ leaves
    def _x_IntLit(self, e: A.IntLit, expected: Optional[P4Type]) -> Ex:
        if e.width is None:
            return Ex(lit(e.value), IntT(), True, e.value)
        if e.width <= 0:
            raise P4Error(f"{e.text}: width must be positive", e.loc)
        t = BitT(e.width, bool(e.signed))
        # p4c only warns when a typed literal does not fit (8w256) and truncates it
        v = const_wrap(e.value, t)
        return Ex(lit(v), t, True, v)

    def _x_BoolLit(self, e: A.BoolLit, expected: Optional[P4Type]) -> Ex:
        return Ex(lit(e.value), BoolT(), True, e.value)

    def _x_StringLit(self, e: A.StringLit, expected: Optional[P4Type]) -> Ex:
        return Ex(repr(e.value), StringT(), True, e.value)

    def _x_DontCare(self, e: A.DontCare, expected: Optional[P4Type]) -> Ex:
        return Ex("None", DontCareT(), True, None)

    def _x_DefaultExpr(self, e: A.DefaultExpr, expected: Optional[P4Type]) -> Ex:
        return Ex("None", SetT(expected or DontCareT()), True, None)

    def _x_NameRef(self, e: A.NameRef, expected: Optional[P4Type]) -> Ex:
        if e.name == "error" and not e.is_global:
            return TypeEx(ErrorT())
        sym = self.cx.lookup(e.name, e, e.is_global)
        if sym.kind == "var":
            return Ex(sym.code, sym.type)
        if sym.kind == "const":
            if sym.value is None and sym.code:
                return Ex(sym.code, sym.type)
            return Ex(lit(sym.value) if not isinstance(sym.value, (tuple, list)) else sym.code or repr(sym.value),
                      sym.type, True, sym.value)
        if sym.kind == "type":
            return TypeEx(sym.type)
        if sym.kind == "packet":
            return RefEx(sym, "ctx")
        return RefEx(sym, sym.code)

    def _x_TypeNameExpr(self, e: A.TypeNameExpr, expected: Optional[P4Type]) -> Ex:
        return TypeEx(self.resolve_type(e.type))

    # ------------------------------------------------------------------ members
    def _x_Member(self, e: A.Member, expected: Optional[P4Type]) -> Ex:
        base = self.expr(e.expr)
        name = e.name
        if isinstance(base, TypeEx):
            t = base.type_value
            if isinstance(t, ErrorT):
                if name not in self.cx.error_codes:
                    raise P4Error(f"error.{name}: no such error", e.loc)
                code = self.cx.error_codes[name]
                return Ex(lit(code), ErrorT(), True, code)
            st = t
            if isinstance(st, EnumT):
                if name not in st.members:
                    raise P4Error(f"{st.name}.{name}: no such enum member", e.loc)
                if st.underlying is not None:
                    v = st.values[name]
                    return Ex(lit(v), st, True, v)
                return Ex(repr(name), st, True, name)
            if isinstance(st, BlockT) and name == "apply" and st.kind in ("control", "parser"):
                # a control or parser is applied directly by its own name only (p4c's type
                # checker sees a type through a typedef, and a type has no fields)
                raise P4Error(f"Cannot extract field apply from {expr_text(e.expr)} which has type "
                              f"Type({st.kind} {st.name})", e.name_loc if e.name_loc.line else e.loc)
            if isinstance(st, StructLikeT) or isinstance(st, BlockT):
                return RefEx(Sym("typemethod", st, decl=st), "", name, base)
            raise P4Error(f"{t}.{name}: not a member", e.loc)
        if isinstance(base, RefEx):
            return RefEx(base.sym, base.code, name, base)
        t = strip_new(base.ty)
        if isinstance(t, StructLikeT):
            ft = t.field_type(name)
            if ft is None:
                if name in ("isValid", "setValid", "setInvalid") and isinstance(t, StructT):
                    # p4c: validity is a method of headers and header unions only
                    raise P4Error(f"Field {name} is not a member of structure struct {t.name}",
                                  e.name_loc if e.name_loc.line else e.loc)
                if name in ("isValid", "setValid", "setInvalid", "minSizeInBits", "minSizeInBytes",
                            "maxSizeInBits", "maxSizeInBytes"):
                    return RefEx(Sym("hdrmethod", t), base.code, name, base)
                raise P4Error(f"{expr_text(e)}: type {t.name} has no field '{name}'", e.loc)
            if base.const and isinstance(base.value, tuple) and len(base.value) == len(t.fields):
                # a field of a constant (``K.v`` of ``const S K = {8w1};``) is a constant
                v = base.value[[n for n, _ in t.fields].index(name)]
                return Ex(const_code(v, ft), ft, True, v)
            fx = Ex(f"{base.code}.{pyname(name)}", ft)
            if isinstance(t, UnionT):
                fx.union_parent = base.code  # type: ignore[attr-defined]
            return fx
        if isinstance(t, StackT):
            if name == "size":
                return Ex(str(t.size), BitT(32), True, t.size)
            if name == "lastIndex":
                return Ex(f"(({base.code}.nextIndex - 1) & 0xffffffff)", BitT(32))
            if name == "next":
                if not self.cx.in_parser():
                    raise P4Error(f"{expr_text(e)}: 'next' can only be used in a parser", e.loc)
                return Ex(f"_stack_next({base.code})", t.elem)
            if name == "last":
                if not self.cx.in_parser():
                    raise P4Error(f"{expr_text(e)}: 'last' can only be used in a parser", e.loc)
                return Ex(f"_stack_last({base.code})", t.elem)
            if name in ("push_front", "pop_front"):
                if self.cx.in_parser():     # p4c's type checker (1.2.5.16)
                    raise P4Error(f"{expr_text(e)}: 'push_front' and 'pop_front' for stacks cannot be used "
                                  "in a parser", e.loc)
                return RefEx(Sym("stackmethod", t), base.code, name, base)
            raise P4Error(f"{expr_text(e)}: header stack has no member '{name}'", e.loc)
        if isinstance(t, ApplyResultT):
            if name == "hit":
                return Ex(f"{base.code}[0]", BoolT())
            if name == "miss":
                return Ex(f"(not {base.code}[0])", BoolT())
            if name == "action_run":
                return Ex(f"{base.code}[1]", ActionEnumT(t.table))
            raise P4Error(f"{expr_text(e)}: apply result has no member '{name}'", e.loc)
        if isinstance(t, TupleT):
            raise P4Error(f"{expr_text(e)}: tuples have no fields", e.loc)
        raise P4Error(f"{expr_text(e)}: type {base.ty} has no member '{name}'", e.loc)

    def _x_Index(self, e: A.Index, expected: Optional[P4Type]) -> Ex:
        base = self.value_expr(e.expr)
        t = strip_new(base.ty)
        idx = self.value_expr(e.index)
        if isinstance(t, StackT):
            if idx.const:
                i = int(idx.value)
                if i < 0:               # p4c's type checker (1.2.5.16), after its other checks
                    self.cx.array_index_errors.append(P4Error(f"{expr_text(e)}: Negative array index {i}", e.loc))
                    i = 0
                elif i >= t.size:
                    self.cx.array_index_errors.append(P4Error(
                        f"Array index {self.p4c_text(e.index, True)} larger or equal to array size {t.size}",
                        e.index.loc))
                    i = 0
                return Ex(f"{base.code}.h[{i}]", t.elem)
            return Ex(f"_stack_at({base.code}, {idx.code})", t.elem)
        if isinstance(t, TupleT):
            if not idx.const:
                raise P4Error(f"{expr_text(e)}: tuple index must be a constant", e.loc)
            i = int(idx.value)
            if not 0 <= i < len(t.elems):
                raise P4Error(f"{expr_text(e)}: index {i} out of bounds", e.loc)
            if base.const and isinstance(base.value, tuple):
                return Ex(const_code(base.value[i], t.elems[i]), t.elems[i], True, base.value[i])
            return Ex(f"{base.code}[{i}]", t.elems[i])
        raise P4Error(f"{expr_text(e)}: cannot index a value of type {base.ty}", e.loc)

    def _x_Slice(self, e: A.Slice, expected: Optional[P4Type]) -> Ex:
        base = self.value_expr(e.expr)
        t = strip_new(base.ty)
        hi, lo = self.slice_bounds(e)
        if isinstance(t, IntT) and base.const:
            width = hi - lo + 1
            v = (base.value >> lo) & ((1 << width) - 1)
            return Ex(lit(v), BitT(width), True, v)
        if not isinstance(t, BitT):
            raise P4Error(f"{expr_text(e)}: cannot slice a value of type {base.ty}", e.loc)
        if not (0 <= lo <= hi < t.width):
            raise P4Error(f"{expr_text(e)}: slice [{hi}:{lo}] out of range for {t}", e.loc)
        width = hi - lo + 1
        rt = BitT(width)
        if base.const:
            v = (base.value >> lo) & rt.mask
            return Ex(lit(v), rt, True, v)
        return Ex(f"(({base.code} >> {lo}) & {rt.mask:#x})" if lo else f"({base.code} & {rt.mask:#x})", rt)

    def slice_bounds(self, e: A.Slice) -> tuple[int, int]:
        """The constant bounds of ``e[hi:lo]``, checked as p4c's ConstantFolding checks
        them once named constants are folded in (literal bounds: frontend/validate.py)."""
        bounds = []
        for b in (e.hi, e.lo):
            if e.plus and not self.value_expr(b).const:
                # p4c's front end keeps a PlusSlice with a variable lsb, which p4c-bm2-ss's
                # back end cannot convert (ExpressionConverter: "Unhandled case")
                raise P4Unsupported(f"unsupported: {expr_text(e.expr)}[{expr_text(e.lo)} +: ...] with a "
                                    "non-constant lsb (p4c-bm2-ss cannot compile it)", e.lo.loc)
            x = self.value_expr(b)
            if not x.const:   # p4c's TypeInference (Slice)
                if not isinstance(strip_new(x.ty), (BitT, IntT)):
                    raise P4Error(f"{expr_text(b)}: expected an integer value", b.loc)
                raise P4Error(f"{expr_text(b)}: slice bit index values must be constants", b.loc)
            v = x.value
            if not isinstance(v, int) or isinstance(v, bool):
                text = f'"{v}"' if isinstance(v, str) else expr_text(b)
                raise P4Error(f"{text}: expected an integer value", b.loc)
            bounds.append(v)
        hi, lo = bounds
        if hi < lo:
            raise P4Error(f"{expr_text(e.expr)}[{hi}:{lo}]: bit slicing should be specified as [msb:lsb]", e.loc)
        if lo < 0:
            raise P4Error(f"{lo}: expected slice indexes to be non-negative", e.lo.loc)
        if hi > MAX_WIDTH_BITS:
            raise P4Error(f"{expr_text(e.expr)}[{hi}:{lo}]: Compiler only supports widths up to {MAX_WIDTH_BITS}",
                          e.loc)
        return hi, lo

    # ------------------------------------------------------------------ operators
    def _x_Unary(self, e: A.Unary, expected: Optional[P4Type]) -> Ex:
        x = self.value_expr(e.expr, expected if e.op in ("-", "+", "~") else None)
        t = strip_new(x.ty)
        if e.op == "!":
            if not isinstance(t, BoolT):
                raise P4Error(f"!: operand must be bool, not {x.ty}", e.loc)
            return Ex(lit(not x.value), BoolT(), True, not x.value) if x.const else Ex(f"(not {x.code})", BoolT())
        if e.op == "+":
            return x
        if not isinstance(t, (BitT, IntT)):
            raise P4Error(f"{e.op}: operand must be numeric, not {x.ty}", e.loc)
        if e.op == "-":
            if x.const:
                v = const_wrap(-x.value, t)
                return Ex(lit(v), x.ty, True, v)
            if isinstance(t, BitT) and t.signed:
                return Ex(f"_to_signed(-{x.code}, {t.width})", x.ty)
            return Ex(wrap(f"-{x.code}", t), x.ty)
        if e.op == "~":
            if isinstance(t, IntT):
                if x.const:
                    return Ex(lit(~x.value), t, True, ~x.value)
                raise P4Error("~: operand of type int must be a constant", e.loc)
            if x.const:
                v = const_wrap(~x.value, t)
                return Ex(lit(v), x.ty, True, v)
            if t.signed:
                return Ex(f"(~{x.code})", x.ty)
            return Ex(f"({x.code} ^ {t.mask:#x})", x.ty)
        raise P4Error(f"unknown operator {e.op}", e.loc)

    def _unify(self, e: A.Binary, l: Ex, r: Ex) -> tuple[Ex, Ex, P4Type]:
        lt, rt = strip_new(l.ty), strip_new(r.ty)
        if isinstance(lt, IntT) and not isinstance(rt, IntT):
            l = self.coerce(l, r.ty, e.left)
            return l, r, r.ty
        if isinstance(rt, IntT) and not isinstance(lt, IntT):
            r = self.coerce(r, l.ty, e.right)
            return l, r, l.ty
        if not same_type(l.ty, r.ty):
            if same_type(lt, rt) and (isinstance(l.ty, NewT) or isinstance(r.ty, NewT)):
                return l, r, l.ty
            if isinstance(lt, BitT) and isinstance(rt, BitT) and lt.signed == rt.signed \
                    and not isinstance(l.ty, NewT) and not isinstance(r.ty, NewT):
                if l.const and r.const:     # p4c's ConstantFolding, before type inference
                    raise P4Error(f"{self.p4c_text(e)}: operands have different types: {l.ty} and {r.ty}", e.loc)
                # p4c's TypeInference (binaryArith), the expression as it prints it
                raise P4Error(f"{self.p4c_text(e)}: Cannot operate on values with different widths "
                              f"{lt.width} and {rt.width}", e.loc)
            raise P4Error(f"{e.op}: cannot operate on values of different types {l.ty} and {r.ty}", e.loc)
        return l, r, l.ty

    def p4c_text(self, e: A.Expr, alone: bool = False) -> str:
        """``e`` as p4c's type checker quotes it, after its front end put the value of
        each constant in its place: inside an expression a constant is its value alone
        (``hdr.x < 1``); a constant quoted ``alone`` keeps its width (``8w1``, and a
        named constant of type ``bit<4>`` is ``4w0``)."""
        def value_of(n: A.Expr) -> Optional[tuple[int, Optional[P4Type]]]:
            if isinstance(n, A.IntLit):
                return n.value, None
            sym = self.cx.lookup_opt(n.name) if isinstance(n, A.NameRef) else None
            if sym is not None and sym.kind == "const" and isinstance(sym.value, int) \
                    and not isinstance(sym.value, bool):
                return sym.value, sym.type
            return None

        def folded(n: A.Expr) -> A.Expr:
            v = value_of(n)
            if v is not None:
                return A.IntLit(v[0], text=str(v[0]))
            if isinstance(n, A.Binary):
                return A.Binary(n.op, folded(n.left), folded(n.right))
            if isinstance(n, A.Unary):
                return A.Unary(n.op, folded(n.expr))
            if isinstance(n, A.Cast):
                return A.Cast(n.type, folded(n.expr))
            return n
        if alone:
            v = value_of(e)
            if isinstance(e, A.IntLit):    # p4c writes a hexadecimal one in lower case
                return (e.text or str(e.value)).lower()
            if v is not None and isinstance(strip_new(v[1]), BitT):
                t = strip_new(v[1])
                return f"{t.width}{'s' if t.signed else 'w'}{v[0]}"
            return expr_text(e)
        return expr_text(folded(e))

    def _comparison_error(self, e: A.Binary, l: Ex, err: P4Error) -> P4Error:
        """p4c's TypeInference message for a comparison of two ``bit``/``int`` values of
        different widths (``err``, p4sim's own, otherwise)."""
        if "cannot convert type" not in str(err):
            return err
        try:
            r = self.value_expr(e.right)
        except P4Error:
            return err
        lt, rt = strip_new(l.ty), strip_new(r.ty)
        if not (isinstance(lt, BitT) and isinstance(rt, BitT)) or isinstance(l.ty, NewT) or isinstance(r.ty, NewT):
            return err
        if e.op in ("==", "!="):
            return P4Error(f"'{self.p4c_text(e.left, True)}' with type '{l.ty}' cannot be compared to "
                           f"'{self.p4c_text(e.right, True)}' with type '{r.ty}'", e.loc)
        return P4Error(f"{self.p4c_text(e)}: not defined on {l.ty} and {r.ty}", e.loc)

    def _x_Binary(self, e: A.Binary, expected: Optional[P4Type]) -> Ex:
        op = e.op
        if op in ("&&", "||"):
            l = self.value_expr(e.left, BoolT())
            r = self.value_expr(e.right, BoolT())
            if l.const and r.const:
                v = (l.value and r.value) if op == "&&" else (l.value or r.value)
                return Ex(lit(bool(v)), BoolT(), True, bool(v))
            return Ex(f"({l.code} {'and' if op == '&&' else 'or'} {r.code})", BoolT())
        if op in ("&&&", ".."):
            l = self.value_expr(e.left, expected)
            r = self.value_expr(e.right, expected if expected is not None else l.ty)
            l, r, t = self._unify(e, l, r)
            return Ex(f"({l.code}, {r.code})", SetT(t), l.const and r.const,
                      (op, l.value, r.value) if l.const and r.const else None)
        if op == "++":
            l = self.value_expr(e.left)
            r = self.value_expr(e.right)
            lt, rt = strip_new(l.ty), strip_new(r.ty)
            if not isinstance(lt, BitT) or not isinstance(rt, BitT):
                raise P4Error(f"++: operands must be bit<W> or int<W>, not {l.ty} and {r.ty}", e.loc)
            t = BitT(lt.width + rt.width, lt.signed)
            if l.const and r.const:
                v = const_wrap(((l.value & lt.mask) << rt.width) | (r.value & rt.mask), t)
                return Ex(lit(v), t, True, v)
            code = f"((({l.code} & {lt.mask:#x}) << {rt.width}) | ({r.code} & {rt.mask:#x}))"
            if t.signed:
                code = f"_to_signed({code}, {t.width})"
            return Ex(code, t)
        if op in ("<<", ">>"):
            l = self.value_expr(e.left, expected if expected is not None and not isinstance(strip_new(expected), BoolT) else None)
            r = self.value_expr(e.right)
            lt, rt = strip_new(l.ty), strip_new(r.ty)
            if not isinstance(lt, (BitT, IntT)):
                raise P4Error(f"{op}: left operand must be numeric, not {l.ty}", e.loc)
            if isinstance(r.ty, NewT) and not r.const:    # p4c's type checker: not a bit<S>
                raise P4Error(f"{expr_text(e.right)}: The right operand of shift must be either an "
                              "expression of type bit<S> or a compile-time known value that is a "
                              f"non-negative integer, but is {r.ty}", e.right.loc)
            if isinstance(rt, BitT) and rt.signed:
                raise P4Error(f"{op}: shift amount must be unsigned", e.loc)
            if not isinstance(rt, (BitT, IntT)):
                raise P4Error(f"{op}: shift amount must be numeric, not {r.ty}", e.loc)
            if isinstance(rt, IntT) and r.const and r.value < 0:
                raise P4Error(f"{expr_text(e)}: Shifts with negative amounts are not permitted", e.loc)
            if l.const and r.const and r.value > MAX_WIDTH_BITS:
                # p4c's ConstantFolding refuses to fold it (and nothing else can)
                raise P4Error(f"{expr_text(e)}: Compiler only supports widths up to {MAX_WIDTH_BITS}", e.loc)
            if isinstance(lt, IntT):
                if not (l.const and r.const):
                    raise P4Error(f"{op}: shifting an int requires constant operands", e.loc)
                v = l.value << r.value if op == "<<" else l.value >> r.value
                return Ex(lit(v), IntT(), True, v)
            if l.const and r.const:
                if op == "<<":
                    v = 0 if r.value >= lt.width else const_wrap(l.value << r.value, lt)
                else:
                    v = (-1 if l.value < 0 else 0) if r.value >= lt.width else l.value >> r.value
                return Ex(lit(v), l.ty, True, v)
            if l.const and l.value == 0:
                # p4c's StrengthReduction: 0 shifted is 0 (the amount still runs: a call)
                return Ex(f"({r.code}, 0)[1]", l.ty)
            # p4c-bm2-ss (backends/bmv2/common/lower.cpp) refuses a shift it cannot fold
            # whose amount is wider than 8 bits, or an int amount above 256
            if isinstance(rt, BitT) and rt.width > BMV2_MAX_SHIFT_BITS:
                raise P4Error(f"{op}: shift amount of type {r.ty} limited to "
                              f"{BMV2_MAX_SHIFT_BITS} bits on this target (as p4c-bm2-ss); "
                              f"cast it, e.g. (bit<{BMV2_MAX_SHIFT_BITS}>)", e.loc)
            if isinstance(rt, IntT) and r.const and r.value > 1 << BMV2_MAX_SHIFT_BITS:
                raise P4Error(f"{op}: shift amount limited to {1 << BMV2_MAX_SHIFT_BITS} on this "
                              "target (as p4c-bm2-ss)", e.loc)
            if r.const:
                if r.value >= lt.width:
                    return Ex(lit(0) if op == "<<" or not lt.signed else f"(-1 if {l.code} < 0 else 0)", l.ty)
                if op == "<<":
                    code = f"_to_signed({l.code} << {r.value}, {lt.width})" if lt.signed else wrap(f"{l.code} << {r.value}", lt)
                else:
                    code = f"({l.code} >> {r.value})"
                return Ex(code, l.ty)
            if op == "<<":
                return Ex(f"_shl{'_signed' if lt.signed else ''}({l.code}, {r.code}, {lt.width})", l.ty)
            return Ex(f"_shr({l.code}, {r.code}, {lt.width})", l.ty)
        if op in CMP_OPS:
            l = self.value_expr(e.left)
            ls = strip_new(l.ty)
            if isinstance(ls, EnumT) and ls.underlying is not None and not isinstance(e.right, A.IntLit):
                # a serializable enum against its underlying type: compared as that type
                r = self.value_expr(e.right)
                if isinstance(strip_new(r.ty), BitT):
                    l = self.coerce(l, ls.underlying, e.left)
                r = self.coerce(r, l.ty, e.right)
            else:
                try:
                    r = self.value_expr(e.right, l.ty if not isinstance(ls, IntT) else None)
                except P4Error as err:
                    raise self._comparison_error(e, l, err) from None
            if isinstance(strip_new(l.ty), IntT) and not isinstance(strip_new(r.ty), IntT):
                l = self.coerce(l, r.ty, e.left)
            lt, rt = strip_new(l.ty), strip_new(r.ty)
            if op in ("==", "!="):
                if isinstance(lt, TupleT) and isinstance(rt, (StructLikeT, TupleT)):
                    l = self.value_expr(e.left, r.ty)
                    lt = strip_new(l.ty)
                if isinstance(rt, TupleT) and isinstance(lt, StructLikeT):
                    r = self.value_expr(e.right, l.ty)
                    rt = strip_new(r.ty)
                if isinstance(lt, (StructLikeT, StackT)):
                    if not same_type(lt, rt):
                        raise P4Error(f"{op}: cannot compare {l.ty} and {r.ty}", e.loc)
                    code = f"{l.code}._eq({r.code})"
                    return Ex(code if op == "==" else f"(not {code})", BoolT())
                if not (same_type(lt, rt) or (isinstance(lt, BoolT) and isinstance(rt, BoolT))):
                    if not ((isinstance(lt, ActionEnumT) or isinstance(rt, ActionEnumT))):
                        l, r, _ = self._unify(e, l, r)
            else:
                l, r, t = self._unify(e, l, r)
                if not isinstance(strip_new(t), (BitT, IntT)):
                    raise P4Error(f"{op}: operands must be numeric, not {t}", e.loc)
            pyop = op
            if l.const and r.const:
                v = eval(f"{l.value!r} {pyop} {r.value!r}")  # noqa: S307 - two literals
                return Ex(lit(v), BoolT(), True, v)
            return Ex(f"({l.code} {pyop} {r.code})", BoolT())
        if op in ARITH_OPS:
            l = self.value_expr(e.left)
            r = self.value_expr(e.right)
            for side, x in ((e.left, l), (e.right, r)):
                if isinstance(x.ty, NewT) and not isinstance(strip_new(x.ty), EnumT):
                    # p4c's TypeInference binaryArith: a `type` is not a bit<W>
                    raise P4Error(f"{op}: cannot be applied to expression '{expr_text(side)}' "
                                  f"with type '{x.ty}'", side.loc)
            l, r, t = self._unify(e, l, r)
            st = strip_new(t)
            if not isinstance(st, (BitT, IntT)):
                if isinstance(st, BoolT) and op in ("&", "|", "^"):
                    raise P4Error(f"{op}: operands must be numeric, not bool", e.loc)
                raise P4Error(f"{op}: operands must be numeric, not {t}", e.loc)
            if op in ("/", "%"):
                if isinstance(st, BitT) and st.signed:
                    raise P4Error(f"{op}: division is not defined on signed values", e.loc)
                if r.const and r.value == 0:
                    raise P4Error(f"{op}: division by zero", e.loc)
                if isinstance(st, IntT) and l.const and r.const and (l.value < 0 or r.value < 0):
                    raise P4Error(f"{op}: division of negative values is not defined", e.loc)
                if not (l.const and r.const) and not _reduced_by_p4c(op, l, r) \
                        and not self._defer_division(op, e, l, r):
                    # p4c-bm2-ss's CompileTimeOperations: BMv2 has no run-time / or %
                    raise P4Error(f"{self.p4c_text(e)}: could not evaluate expression at "
                                  "compilation time", e.loc)
            if l.const and r.const:
                v = fold(op, l.value, r.value, st)
                return Ex(lit(v), t, True, v)
            return Ex(arith_code(op, l.code, r.code, st), t)
        raise P4Error(f"unknown operator {op}", e.loc)

    def _defer_division(self, op: str, e: A.Binary, l: Ex, r: Ex) -> bool:
        """Record a ``/``/``%`` with an ``in`` parameter of the action or function being
        compiled as an operand, for its calls to decide
        (:class:`~p4sim.engine.codegen.DeferredDivision`); False if it has none."""
        fn: Optional[FnCtx] = None
        specs: list[tuple[str, Any]] = []
        for side, x in ((e.left, l), (e.right, r)):
            if x.const:
                specs.append(("const", x.value))
                continue
            sym = self.cx.lookup_opt(side.name) if isinstance(side, A.NameRef) else None
            owner = sym.fn if sym is not None and sym.kind == "var" else None
            if owner is None or side.name not in owner.in_params or (fn is not None and owner is not fn):
                specs.append(("dyn", None))     # a run-time value whatever the call passes
                continue
            fn = owner
            specs.append(("param", side.name))
        if fn is None:
            return False
        fn.deferred_divisions.append(DeferredDivision(op, specs[0], specs[1],
                                                      (operand_text(op, e.left, self.p4c_text(e.left), False),
                                                       operand_text(op, e.right, self.p4c_text(e.right), True)),
                                                      e.loc))
        return True

    def _x_Ternary(self, e: A.Ternary, expected: Optional[P4Type]) -> Ex:
        c = self.value_expr(e.cond, BoolT())
        a = self.value_expr(e.then, expected)
        b = self.value_expr(e.other, expected if expected is not None else (a.ty if not isinstance(strip_new(a.ty), IntT) else None))
        if isinstance(strip_new(a.ty), IntT) and not isinstance(strip_new(b.ty), IntT):
            a = self.coerce(a, b.ty, e.then)
        if isinstance(strip_new(a.ty), IntT) and isinstance(strip_new(b.ty), IntT) and not c.const:
            raise P4Error("?: the type of the result cannot be inferred (both branches are untyped integers)", e.loc)
        if not same_type(strip_new(a.ty), strip_new(b.ty)):
            raise P4Error(f"?: branches have different types {a.ty} and {b.ty}", e.loc)
        if c.const:
            return a if c.value else b
        return Ex(f"({a.code} if {c.code} else {b.code})", a.ty)

    def _x_Cast(self, e: A.Cast, expected: Optional[P4Type]) -> Ex:
        t = self.resolve_type(e.type)
        st = strip_new(t)
        if isinstance(e.expr, (A.ListExpr, A.StructExpr)):
            return self.value_expr(e.expr, t)
        x = self.value_expr(e.expr, None)
        xs = strip_new(x.ty)
        if isinstance(st, BitT):
            if isinstance(xs, BoolT):
                if st.width != 1:
                    raise P4Error(f"cast: cannot cast bool to {t} (only bit<1>)", e.loc)
                return Ex(lit(int(x.value)), t, True, int(x.value)) if x.const else Ex(f"int({x.code})", t)
            if isinstance(xs, EnumT):
                if xs.underlying is None:
                    raise P4Error(f"cast: cannot cast enum {xs.name} to {t}", e.loc)
                xs = xs.underlying
            if isinstance(xs, (BitT, IntT)):
                if isinstance(xs, BitT) and xs.signed != st.signed and xs.width != st.width:
                    raise P4Error(f"cast: cannot cast {x.ty} to {t} directly (change sign and width in two steps)", e.loc)
                if x.const:
                    v = const_wrap(x.value, st)
                    return Ex(lit(v), t, True, v)
                code = f"_to_signed({x.code}, {st.width})" if st.signed else wrap(x.code, st)
                if isinstance(xs, BitT) and not xs.signed and not st.signed and xs.width <= st.width:
                    code = x.code
                return Ex(code, t)
            raise P4Error(f"cast: cannot cast {x.ty} to {t}", e.loc)
        if isinstance(st, BoolT):
            if isinstance(xs, BoolT):
                return Ex(x.code, t, x.const, x.value)
            if isinstance(xs, BitT) and xs.width == 1 or isinstance(xs, IntT):
                return Ex(lit(bool(x.value)), t, True, bool(x.value)) if x.const else Ex(f"({x.code} != 0)", t)
            raise P4Error(f"cast: cannot cast {x.ty} to bool", e.loc)
        if isinstance(st, IntT):
            return Ex(x.code, t, x.const, x.value)
        if isinstance(st, EnumT) and st.underlying is not None:
            if isinstance(xs, (BitT, IntT)) or (isinstance(xs, EnumT) and xs.name == st.name):
                if x.const:
                    v = const_wrap(x.value, st.underlying)
                    return Ex(lit(v), t, True, v)
                return Ex(wrap(x.code, st.underlying), t)
        if same_type(st, xs):
            return Ex(x.code, t, x.const, x.value)
        if isinstance(st, StructLikeT):     # p4c's type checker (1.2.5.16), at the type
            raise P4Error(f"{t}: cast not supported", getattr(e.type, "loc", None) or e.loc)
        raise P4Error(f"cast: cannot cast {x.ty} to {t}", e.loc)

    # ------------------------------------------------------------------ aggregates
    def _x_ListExpr(self, e: A.ListExpr, expected: Optional[P4Type]) -> Ex:
        st = strip_new(expected) if expected is not None else None
        if isinstance(st, StructLikeT) and not isinstance(st, UnionT) and e.elems and isinstance(e.elems[-1], A.DefaultExpr):
            given = e.elems[:-1]     # `{ a, ... }`: the other fields take their default values (p4c's DefaultValues)
            if len(given) > len(st.fields):
                raise P4Error(f"initializer has {len(given)} elements but {st.name} has {len(st.fields)} fields", e.loc)
            xs = [self.value_expr(x, ft) for x, (_, ft) in zip(given, st.fields)]
            codes = [x.code for x in xs] + [zero_value_code(ft) for _, ft in st.fields[len(given):]]
            return Ex(f"{st.pyclass}._from(({''.join(c + ', ' for c in codes)}))", expected)  # type: ignore[arg-type]
        if isinstance(st, StructLikeT) and not isinstance(st, UnionT):
            if len(e.elems) != len(st.fields):
                raise P4Error(f"initializer has {len(e.elems)} elements but {st.name} has {len(st.fields)} fields", e.loc)
            xs = [self.value_expr(x, ft) for x, (_, ft) in zip(e.elems, st.fields)]
            return _aggregate(f"{st.pyclass}._from(({''.join(x.code + ', ' for x in xs)}))", expected, xs)
        if isinstance(st, TupleT):
            if len(e.elems) != len(st.elems):
                raise P4Error(f"initializer has {len(e.elems)} elements but the tuple has {len(st.elems)}", e.loc)
            xs = [self.value_expr(x, ft) for x, ft in zip(e.elems, st.elems)]
            return _aggregate("(" + "".join(x.code + ", " for x in xs) + ")", expected, xs)
        if isinstance(st, SetT):
            xs = [self.value_expr(x) for x in e.elems]
            return Ex("(" + "".join(x.code + ", " for x in xs) + ")", TupleT([x.ty for x in xs]))
        xs = [self.value_expr(x) for x in e.elems]
        code = "(" + "".join(x.code + ", " for x in xs) + ")"
        ex = Ex(code, TupleT([x.ty for x in xs]))
        ex.elems = xs  # type: ignore[attr-defined]
        ex.nodes = list(e.elems)  # type: ignore[attr-defined]
        return ex

    def _x_StructExpr(self, e: A.StructExpr, expected: Optional[P4Type]) -> Ex:
        st = strip_new(expected) if expected is not None else None
        if not isinstance(st, StructLikeT):
            raise P4Error("a structure initializer needs a struct or header type here (use a cast: (T){...})", e.loc)
        given = dict(e.fields)
        for n in given:
            if st.field_type(n) is None:
                raise P4Error(f"{st.name} has no field '{n}'", e.loc)
        if set(given) != {n for n, _ in st.fields} and not e.dots:
            missing = [n for n, _ in st.fields if n not in given]
            raise P4Error(f"initializer for {st.name} is missing field(s) {', '.join(missing)}", e.loc)
        xs = [self.value_expr(given[n], ft) for n, ft in st.fields if n in given]
        values = iter(xs)
        codes = [next(values).code if n in given else zero_value_code(ft) for n, ft in st.fields]
        code = f"{st.pyclass}._from(({''.join(c + ', ' for c in codes)}))"
        return Ex(code, expected) if e.dots else _aggregate(code, expected, xs)  # type: ignore[arg-type]

    def _x_Call(self, e: A.Call, expected: Optional[P4Type]) -> Ex:
        return self.calls.call(e, expected, as_statement=False)
