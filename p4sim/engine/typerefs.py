"""Type references of the source (``bit<W>``, ``H[4]``, ``T``, ``register<bit<32>>``)
resolved to the checker's types (:mod:`p4sim.frontend.types`).

A width or a stack size is a compile-time expression, so the resolver is given the
expression compiler's ``const_value``; names are looked up in the shared
:class:`~p4sim.engine.compile_context.CompileContext` (type variables of the generic being
instantiated first).

Example::

    >>> from p4sim.engine.compile_context import CompileContext
    >>> from p4sim.frontend import ast as A
    >>> types = TypeResolver(CompileContext(A.Program([]), None), lambda e, t=None: e.value)
    >>> types.resolve(A.BitType(A.IntLit(8)))
    BitT(width=8, signed=False)
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from p4sim.engine.compile_context import CompileContext
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.types import (
    BitT, BlockT, BoolT, DontCareT, EnumT, ErrorT, ExternT, HeaderT, IntT, MatchKindT, P4Type, StackT,
    StringT, StructT, TupleT, TypeVarT, UnionT, VarbitT, VoidT, strip_new,
)

#: evaluates a compile-time constant expression (optionally of an expected type)
ConstValue = Callable[[A.Expr, Optional[P4Type]], Any]


class TypeResolver:
    """Resolves :class:`~p4sim.frontend.ast.TypeRef` nodes in the current scopes."""

    def __init__(self, cx: CompileContext, const_value: ConstValue) -> None:
        self.cx = cx
        self.const_value = const_value

    def resolve(self, t: A.TypeRef) -> P4Type:
        if isinstance(t, A.BitType):
            w = self.const_value(t.width, None)
            if not isinstance(w, int) or isinstance(w, bool):
                raise P4Error(f"width must be an integer, not {w}", t.loc)
            if w < 0:        # p4c's Type_Bits::get; bit<0> is a type (its one value is 0)
                raise P4Error(f"Width {w} of type cannot be negative", t.loc)
            if t.signed and w == 0:
                raise P4Error("Width of signed type cannot be zero", t.loc)
            return BitT(w, t.signed)
        if isinstance(t, A.VarbitType):
            return VarbitT(int(self.const_value(t.width, None)))
        if isinstance(t, A.BaseType):
            return {"bool": BoolT(), "void": VoidT(), "string": StringT(), "error": ErrorT(),
                    "match_kind": MatchKindT(), "int": IntT()}.get(t.name) or self._bad_type(t)
        if isinstance(t, A.TupleType):
            return TupleT([self.resolve(x) for x in t.elems])
        if isinstance(t, A.StackType):
            elem = self.resolve(t.elem)
            size = self.const_value(t.size, None)
            # T[n]: checked per instance; an array of another type resolves, but a variable
            # or parameter of it is refused as p4c-bm2-ss refuses it (engine/arrays.py)
            if not isinstance(strip_new(elem), (HeaderT, UnionT, TypeVarT, BitT, BoolT, EnumT, ErrorT,
                                                StructT, StackT)):
                raise P4Error(f"header stack elements must be headers or header unions, not {elem}", t.loc)
            if size <= 0:
                raise P4Error("header stack size must be positive", t.loc)
            return StackT(elem, int(size))
        if isinstance(t, A.DontCareType):
            return DontCareT()
        if isinstance(t, A.NamedType):
            return self._named(t)
        raise P4Error(f"unexpected type {type(t).__name__}", t.loc)

    def _named(self, t: A.NamedType) -> P4Type:
        if t.name == "list" and self.cx.lookup_opt("list") is None:
            raise P4Unsupported("unsupported: list types", t.loc)
        for b in reversed(self.cx.type_bindings):
            if t.name in b and not t.args:
                return b[t.name]
        sym = self.cx.lookup(t.name, t, t.is_global)
        if sym.kind == "type":
            if t.args:
                raise P4Error(f"{t.name} is not generic", t.loc)
            return sym.type
        if sym.kind == "typevar":
            return sym.type
        if sym.kind == "generic_struct":
            if not t.args or self.cx.specialize_struct is None:
                raise P4Error(f"{t.name}: a generic type needs type arguments", t.loc)
            return self.cx.specialize_struct(sym, [self.resolve(a) for a in t.args], t)
        if sym.kind == "extern_decl":
            d = sym.decl
            args = [self.resolve(a) for a in t.args]
            if args and len(args) != len(d.type_params):
                raise P4Error(f"{t.name} expects {len(d.type_params)} type arguments", t.loc)
            return ExternT(d.name, d, dict(zip(d.type_params, args)))
        if sym.kind in ("parser_decl", "control_decl", "package_decl", "parser_type", "control_type"):
            return BlockT(sym.kind.split("_")[0], t.name, sym.decl)
        raise P4Error(f"{t.name} is not a type", t.loc)

    @staticmethod
    def _bad_type(t: A.BaseType) -> P4Type:
        raise P4Error(f"unknown type {t.name}", t.loc)
