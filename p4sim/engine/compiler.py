"""The checker and code generator: walks a parsed P4_16 program once, resolving names,
checking and inferring types, folding constants, and emitting Python source for every
parser, control, action, table and function instance of a v1model program.

Each expression is compiled to an :class:`~p4sim.engine.codegen.Ex` (Python source +
P4 type + constant value); statements are written to a :class:`~p4sim.engine.codegen.Writer`.
Errors raise :class:`p4sim.errors.P4Error` at the offending node.

Example::

    >>> from p4sim.engine.program import load_program   # the public entry point
"""
from __future__ import annotations

from typing import Any, Optional

from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.types import (
    ActionEnumT, ApplyResultT, BitT, BlockT, BoolT, DontCareT, EnumT, ErrorT, ExternT, HeaderT,
    IntT, MatchKindT, NewT, P4Type, SetT, StackT, StringT, StructLikeT, StructT, TableT, TupleT,
    TypeVarT, UnionT, VarbitT, VoidT, bit_width, same_type, strip_new,
)
from p4sim.engine.codegen import Ex, FnCtx, Sym, Writer, gen_struct_class, pyname, zero_value_code

CORE_ERRORS = ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
               "ParserTimeout", "ParserInvalidArgument"]

ARITH_OPS = {"+", "-", "*", "/", "%", "|+|", "|-|", "&", "|", "^"}
CMP_OPS = {"==", "!=", "<", ">", "<=", ">="}


def _err(msg: str, node: Optional[A.Node]) -> P4Error:
    return P4Error(msg, node.loc if node is not None else None)


def _unsup(msg: str, node: Optional[A.Node]) -> P4Unsupported:
    return P4Unsupported(msg, node.loc if node is not None else None)


def expr_text(e: A.Expr) -> str:
    """Source-like text of an expression (p4c uses it to name table keys)."""
    if isinstance(e, A.NameRef):
        return ("." if e.is_global else "") + e.name
    if isinstance(e, A.Member):
        return f"{expr_text(e.expr)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, A.Slice):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, A.Call):
        return f"{expr_text(e.func)}(" + ", ".join(expr_text(a.value) for a in e.args) + ")"
    if isinstance(e, A.IntLit):
        return e.text or str(e.value)
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.Binary):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, A.Unary):
        return f"{e.op}{expr_text(e.expr)}"
    if isinstance(e, A.Cast):
        return f"({_type_text(e.type)}){expr_text(e.expr)}"
    return "?"


def _type_text(t: A.TypeRef) -> str:
    if isinstance(t, A.BitType):
        return f"{'int' if t.signed else 'bit'}<{expr_text(t.width)}>"
    if isinstance(t, A.NamedType):
        return t.name
    if isinstance(t, A.BaseType):
        return t.name
    return "?"


def annotation(decl: Any, name: str) -> Optional[A.Annotation]:
    for a in getattr(decl, "annotations", None) or []:
        if a.name == name:
            return a
    return None


def annotation_string(decl: Any, name: str) -> Optional[str]:
    a = annotation(decl, name)
    if a is None:
        return None
    if a.exprs and isinstance(a.exprs[0], A.StringLit):
        return a.exprs[0].value
    raw = a.raw.strip()
    if raw.startswith('"') and raw.endswith('"'):
        return raw[1:-1]
    return raw or None


class InstanceInfo:
    """A parser/control/extern instance created at compile time."""

    def __init__(self, kind: str, name: str, fqname: str, decl: Any, type_: P4Type,
                 pyfunc: str = "", obj: Any = None) -> None:
        self.kind = kind      # parser, control, extern, package
        self.name = name
        self.fqname = fqname
        self.decl = decl
        self.type = type_
        self.pyfunc = pyfunc  # generated Python function (parser/control)
        self.obj = obj        # runtime object (extern) or list of args (package)
        self.params: list[A.Param] = []
        self.args: list[Any] = []


from p4sim.engine.blocks import BlockMixin  # noqa: E402
from p4sim.engine.expressions import ExprMixin, RefEx, TypeEx  # noqa: E402
from p4sim.engine.generics import GenericMixin  # noqa: E402
from p4sim.engine.natives import NativeMixin  # noqa: E402
from p4sim.engine.parsers import ParserMixin  # noqa: E402
from p4sim.engine.statements import StmtMixin  # noqa: E402
from p4sim.runtime import hashes as HASHES  # noqa: E402


class Compiler(ExprMixin, StmtMixin, BlockMixin, ParserMixin, NativeMixin, GenericMixin):
    """Checks a parsed program and generates the Python module that executes it."""

    def __init__(self, program: A.Program, state: Any, trace: bool = True) -> None:
        self.program = program
        self.state = state
        self.trace = trace
        self.scopes: list[dict[str, Sym]] = [{}]
        self.mod = Writer()
        self.w = self.mod
        self.fn: Optional[FnCtx] = None
        self.env: dict[str, Any] = {}
        self.counter = 0
        self.path = ""
        self.error_codes: dict[str, int] = {}
        self.match_kinds: set[str] = set()
        self.type_bindings: list[dict[str, P4Type]] = []
        self.tables_info: dict[str, Any] = {}
        self.actions_by_fq: dict[str, Any] = {}
        self.generic_functions: dict[str, Any] = {}
        self.generic_check_depth = 0  # > 0 while a generic body is checked with abstract types
        self.digest_types: dict[str, StructLikeT] = {}
        self.struct_types: list[StructLikeT] = []
        self.package: Optional[InstanceInfo] = None
        self.blocks: dict[str, InstanceInfo] = {}
        self.hash_fns: dict[str, Any] = {}
        self.global_objs: dict[int, str] = {}

    @property
    def error_width(self) -> int:
        return max(1, (len(self.error_codes) - 1).bit_length())

    # ------------------------------------------------------------------ names
    def uid(self, base: str) -> str:
        self.counter += 1
        clean = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
        return f"{clean}_{self.counter}"

    def pyvar(self, name: str) -> str:
        return self.uid("v_" + name)

    def tmp(self, base: str) -> str:
        return self.uid("_" + base)

    def global_ref(self, obj: Any, hint: str) -> str:
        key = id(obj)
        if key in self.global_objs:
            return self.global_objs[key]
        name = self.uid("G_" + hint)
        self.env[name] = obj
        self.global_objs[key] = name
        return name

    def hash_fn(self, algo: str) -> Any:
        fn = self.hash_fns.get(algo)
        if fn is None:
            fn = HASHES.get_algorithm(algo)
            self.hash_fns[algo] = fn
        return fn

    def fq_name(self, decl: Any, local: str) -> str:
        ann = annotation_string(decl, "name")
        if ann is not None:
            if ann.startswith("."):
                return ann[1:]
            local = ann
        return f"{self.path}.{local}" if self.path else local

    def annotation_name(self, node: Any) -> Optional[str]:
        return annotation_string(node, "name")

    def in_kind(self, *kinds: str) -> bool:
        """Whether the code being generated is inside a function of one of these kinds."""
        fn = self.fn
        while fn is not None:
            if fn.kind in kinds:
                return True
            fn = fn.parent
        return False

    def in_parser(self) -> bool:
        return self.in_kind("parser", "state")

    # ------------------------------------------------------------------ scopes
    def push_scope(self) -> None:
        self.scopes.append({})

    def pop_scope(self) -> None:
        self.scopes.pop()

    def define(self, name: str, sym: Sym, node: Any) -> None:
        scope = self.scopes[-1]
        old = scope.get(name)
        if old is not None:
            if old.kind == "extern_func" and sym.kind == "extern_func":
                old.value.extend(sym.value)
                return
            if len(self.scopes) > 1 or old.kind not in ("type",) or sym.kind != "type":
                raise P4Error(f"re-declaration of '{name}'", getattr(node, "loc", None))
        scope[name] = sym

    def lookup_opt(self, name: str, is_global: bool = False) -> Optional[Sym]:
        if is_global:
            return self.scopes[0].get(name)
        for scope in reversed(self.scopes):
            sym = scope.get(name)
            if sym is not None:
                return sym
        return None

    def lookup(self, name: str, node: Any, is_global: bool = False) -> Sym:
        sym = self.lookup_opt(name, is_global)
        if sym is None:
            raise P4Error(f"'{name}' is not declared", getattr(node, "loc", None))
        return sym

    def note_assign(self, sym: Sym) -> None:
        if sym.fn is not None and self.fn is not None and sym.fn is not self.fn:
            fn = self.fn
            while fn is not None and fn is not sym.fn:
                fn.nonlocals.add(sym.code)
                fn = fn.parent

    # ------------------------------------------------------------------ types
    def resolve_type(self, t: A.TypeRef) -> P4Type:
        if isinstance(t, A.BitType):
            w = self.const_value(t.width)
            if not isinstance(w, int) or isinstance(w, bool) or w <= 0:
                raise P4Error(f"width must be a positive integer, not {w}", t.loc)
            if t.signed and w < 1:
                raise P4Error("int<W> needs W >= 1", t.loc)
            return BitT(w, t.signed)
        if isinstance(t, A.VarbitType):
            return VarbitT(int(self.const_value(t.width)))
        if isinstance(t, A.BaseType):
            return {"bool": BoolT(), "void": VoidT(), "string": StringT(), "error": ErrorT(),
                    "match_kind": MatchKindT(), "int": IntT()}.get(t.name) or self._bad_type(t)
        if isinstance(t, A.TupleType):
            return TupleT([self.resolve_type(x) for x in t.elems])
        if isinstance(t, A.StackType):
            elem = self.resolve_type(t.elem)
            size = self.const_value(t.size)
            if not isinstance(strip_new(elem), (HeaderT, UnionT, TypeVarT)):  # T[n]: checked per instance
                raise P4Error(f"header stack elements must be headers or header unions, not {elem}", t.loc)
            if size <= 0:
                raise P4Error("header stack size must be positive", t.loc)
            return StackT(elem, int(size))
        if isinstance(t, A.DontCareType):
            return DontCareT()
        if isinstance(t, A.NamedType):
            for b in reversed(self.type_bindings):
                if t.name in b and not t.args:
                    return b[t.name]
            sym = self.lookup(t.name, t, t.is_global)
            if sym.kind == "type":
                if t.args:
                    raise P4Error(f"{t.name} is not generic", t.loc)
                return sym.type
            if sym.kind == "typevar":
                return sym.type
            if sym.kind == "extern_decl":
                d = sym.decl
                args = [self.resolve_type(a) for a in t.args]
                if args and len(args) != len(d.type_params):
                    raise P4Error(f"{t.name} expects {len(d.type_params)} type arguments", t.loc)
                return ExternT(d.name, d, dict(zip(d.type_params, args)))
            if sym.kind in ("parser_decl", "control_decl", "package_decl", "parser_type", "control_type"):
                return BlockT(sym.kind.split("_")[0], t.name, sym.decl)
            raise P4Error(f"{t.name} is not a type", t.loc)
        raise P4Error(f"unexpected type {type(t).__name__}", t.loc)

    def _bad_type(self, t: A.BaseType) -> P4Type:
        raise P4Error(f"unknown type {t.name}", t.loc)

    # ------------------------------------------------------------------ top level
    def compile(self) -> None:
        for d in self.program.decls:
            self.top_decl(d)
        if self.package is None:
            raise P4Error("no package instantiation named 'main' (expected: V1Switch(...) main;)", None)

    def const_decl(self, d: A.ConstDecl) -> None:
        t = self.resolve_type(d.type)
        v = self.value_expr(d.value, t)
        if not v.const:
            raise P4Error(f"{d.name}: initializer is not a compile-time constant", d.value.loc)
        code = v.code
        if isinstance(v.value, (tuple, list)) or not isinstance(v.value, (int, bool, str)):
            code = self.global_ref(v.value, "K_" + d.name) if v.value is not None else v.code
        self.define(d.name, Sym("const", t, code, v.value), d)

    def top_decl(self, d: Any) -> None:
        if isinstance(d, A.ConstDecl):
            self.const_decl(d)
        elif isinstance(d, A.TypedefDecl):
            t = self.resolve_type(d.type)
            if d.is_newtype:
                t = NewT(d.name, t)
            self.define(d.name, Sym("type", t, decl=d), d)
        elif isinstance(d, A.StructLikeDecl):
            self.struct_decl(d)
        elif isinstance(d, A.EnumDecl):
            self.enum_decl(d)
        elif isinstance(d, A.ErrorDecl):
            for m in d.members:
                if m in self.error_codes:
                    raise P4Error(f"error.{m} declared twice", d.loc)
                self.error_codes[m] = len(self.error_codes)
        elif isinstance(d, A.MatchKindDecl):
            self.match_kinds.update(d.members)
        elif isinstance(d, A.ExternDecl):
            self.define(d.name, Sym("extern_decl", None, decl=d), d)
        elif isinstance(d, A.FunctionProto):
            self.define(d.name, Sym("extern_func", None, value=[d], decl=d), d)
        elif isinstance(d, A.FunctionDecl):
            self.function_decl(d)
        elif isinstance(d, A.ActionDecl):
            self.action_decl(d, module_level=True)
        elif isinstance(d, A.ParserTypeDecl):
            self.define(d.name, Sym("parser_type", None, decl=d), d)
        elif isinstance(d, A.ControlTypeDecl):
            self.define(d.name, Sym("control_type", None, decl=d), d)
        elif isinstance(d, A.PackageTypeDecl):
            self.define(d.name, Sym("package_decl", None, decl=d), d)
        elif isinstance(d, A.ParserDecl):
            self.define(d.name, Sym("parser_decl", None, decl=d), d)
        elif isinstance(d, A.ControlDecl):
            self.define(d.name, Sym("control_decl", None, decl=d), d)
        elif isinstance(d, A.Instantiation):
            self.top_instantiation(d)
        elif isinstance(d, A.ValueSetDecl):
            raise P4Error("value_set can only be declared in a parser", d.loc)
        else:
            raise P4Unsupported(f"unsupported: top-level {type(d).__name__}", d.loc)

    def struct_decl(self, d: A.StructLikeDecl) -> None:
        if d.type_params:
            raise P4Unsupported(f"unsupported: generic {d.kind} {d.name}", d.loc)
        cls = {"struct": StructT, "header": HeaderT, "header_union": UnionT}[d.kind]
        t = cls(d.name, [])
        t.pyclass = self.uid("S_" + d.name)
        self.define(d.name, Sym("type", t, decl=d), d)
        seen = set()
        for f in d.fields:
            if f.name in seen:
                raise P4Error(f"{d.kind} {d.name}: duplicate field '{f.name}'", f.loc)
            seen.add(f.name)
            ft = self.resolve_type(f.type)
            sft = strip_new(ft)
            if d.kind == "header" and not isinstance(sft, (BitT, VarbitT, BoolT)) and not (
                    isinstance(sft, EnumT) and sft.underlying is not None):
                raise P4Error(f"header {d.name}: field '{f.name}' has type {ft}, which is not allowed in a header", f.loc)
            if d.kind == "header_union" and not isinstance(sft, HeaderT):
                raise P4Error(f"header_union {d.name}: field '{f.name}' must be a header", f.loc)
            t.fields.append((f.name, ft))
            t.annotations[f.name] = f.annotations
        if d.kind == "header":
            if sum(1 for _, ft in t.fields if isinstance(strip_new(ft), VarbitT)) > 1:
                raise P4Error(f"header {d.name}: at most one varbit field is allowed", d.loc)
            if t.width_bits % 8 and not t.has_varbit:
                raise P4Unsupported(f"unsupported: header {d.name} is {t.width_bits} bits wide, not a multiple of 8 (BMv2 requires byte-aligned headers)", d.loc)
        self.struct_types.append(t)
        self.mod.lines.extend(gen_struct_class(t).splitlines())
        self.mod.line("")

    def enum_decl(self, d: A.EnumDecl) -> None:
        if len(set(d.members)) != len(d.members):
            raise P4Error(f"enum {d.name}: duplicate member", d.loc)
        if d.underlying is not None:
            ut = strip_new(self.resolve_type(d.underlying))
            if not isinstance(ut, BitT):
                raise P4Error(f"enum {d.name}: underlying type must be bit<W> or int<W>", d.loc)
            values = {}
            for m, e in zip(d.members, d.values or []):
                values[m] = self.const_value(e, ut)
            t = EnumT(d.name, list(d.members), ut, values)
        else:
            t = EnumT(d.name, list(d.members))
        self.define(d.name, Sym("type", t, decl=d), d)

    # ------------------------------------------------------------------ instances
    def instance_type_args(self, t: A.TypeRef) -> tuple[Sym, list[P4Type]]:
        if not isinstance(t, A.NamedType):
            raise P4Error("only parsers, controls, packages and externs can be instantiated", t.loc)
        sym = self.lookup(t.name, t, t.is_global)
        return sym, [self.resolve_type(a) for a in t.args]

    def make_instance(self, t: A.TypeRef, args: list[A.Argument], name: str, fq: str, node: Any,
                      annotations: Optional[list] = None) -> InstanceInfo:
        sym, targs = self.instance_type_args(t)
        if sym.kind in ("parser_decl", "control_decl"):
            return self.compile_block(sym.decl, fq, args, node, targs)
        if sym.kind == "extern_decl":
            d = sym.decl
            if d.type_params and not targs:
                raise P4Error(f"{d.name} needs type arguments ({', '.join(d.type_params)})", node.loc)
            obj = self.instantiate_extern(d, targs, args, fq, node)
            inst = InstanceInfo("extern", name, fq, d, ExternT(d.name, d, dict(zip(d.type_params, targs))), obj=obj)
            return inst
        if sym.kind == "package_decl":
            d = sym.decl
            bound = self.bind_args(d.params, args, node, d.name)
            inst = InstanceInfo("package", name, fq, d, BlockT("package", d.name, d))
            for p, a in zip(d.params, bound):
                inst.args.append(self.package_arg(a, p))
            inst.params = d.params
            return inst
        raise P4Error(f"{t.name if isinstance(t, A.NamedType) else '?'} cannot be instantiated", node.loc)

    def package_arg(self, a: A.Expr, p: A.Param) -> InstanceInfo:
        if isinstance(a, A.Call):
            func = a.func
            tname = func.name if isinstance(func, A.NameRef) else None
            if tname is None:
                raise P4Error("package arguments must be instances or constructor calls", a.loc)
            return self.make_instance(A.NamedType(tname, list(a.type_args), loc=a.loc), a.args, tname, tname, a)
        x = self.expr(a)
        if isinstance(x, RefEx) and x.sym.kind == "instance":
            return x.sym.value
        raise P4Error(f"{A_text(a)} is not an instance", a.loc)

    def instantiate_inline(self, e: A.Call, hint: str) -> InstanceInfo:
        if not isinstance(e.func, A.NameRef):
            raise P4Error("expected a constructor call", e.loc)
        fq = f"{self.path}.{hint}" if self.path else hint
        return self.make_instance(A.NamedType(e.func.name, list(e.type_args), loc=e.loc), e.args, hint, fq, e)

    def top_instantiation(self, d: A.Instantiation) -> None:
        fq = self.fq_name(d, d.name)
        inst = self.make_instance(d.type, d.args, d.name, fq, d, d.annotations)
        self.define(d.name, Sym("instance", inst.type, value=inst, decl=d), d)
        if inst.kind == "package" and d.name == "main":
            self.package = inst

    def local_instantiation(self, d: A.Instantiation) -> None:
        if d.initializer:
            raise P4Unsupported("unsupported: instantiation with abstract method implementations", d.loc)
        fq = self.fq_name(d, d.name)
        inst = self.make_instance(d.type, d.args, d.name, fq, d, d.annotations)
        if inst.kind == "package":
            raise P4Error("packages can only be instantiated at the top level", d.loc)
        self.define(d.name, Sym("instance", inst.type, value=inst, decl=d), d)
