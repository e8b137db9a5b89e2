"""The checker and code generator: walks a parsed P4_16 program once, resolving names,
checking and inferring types, folding constants, and emitting Python source for every
parser, control, action, table and function instance of a v1model program.

Each expression is compiled to an :class:`~p4sim.engine.codegen.Ex` (Python source +
P4 type + constant value); statements are written to a :class:`~p4sim.engine.codegen.Writer`.
Errors raise :class:`p4sim.errors.P4Error` at the offending node.

The :class:`Compiler` handles the top-level declarations (types, errors, match kinds,
constants, externs, instantiations and the ``main`` package) and is made of owned
collaborators, each in its own module, sharing one explicit
:class:`~p4sim.engine.compile_context.CompileContext`::

    Compiler                        compiler.py      top-level declarations, instances
    ├── StatementCompiler           statements.py    statements, assignments, bodies
    │   └── CallCompiler            calls.py         calls, copy-in/copy-out
    │       ├── ExpressionCompiler  expressions.py   expressions (+ typerefs.py: types)
    │       ├── NativeExterns       natives.py       v1model externs
    │       ├── PacketExterns       packet_io.py     packet_in / packet_out
    │       └── GenericInstantiator generics.py      generic functions
    └── BlockCompiler               blocks.py        parsers, controls, actions, functions
        ├── ParserCompiler          parsers.py       parser states, select, value sets
        └── TableCompiler           tables.py        tables and their entries

A collaborator that must call back into the one that owns it (an expression may be a
call, a call's function body is statements, a control declares instances) is given its
owner at construction, typed by a small ``Protocol`` naming the methods it uses; the
modules import each other in one direction only.

Example::

    >>> from p4sim.engine.program import load_program   # the public entry point
"""
from __future__ import annotations

from typing import Any, Optional

from p4sim.engine.arguments import bind_args
from p4sim.engine.blocks import BlockCompiler
from p4sim.engine.codegen import Sym, Writer, gen_struct_class
from p4sim.engine.compile_context import (
    CompileContext, InstanceInfo, annotation, annotation_string, expr_text,
)
from p4sim.engine.expressions import RefEx
from p4sim.engine.statements import StatementCompiler
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.text import at_name
from p4sim.frontend.undeclared import first_undeclared
from p4sim.frontend.types import (
    BitT, BlockT, DontCareT, EnumT, ExternT, HeaderT, NewT, P4Type, StructLikeT, StructT, TupleT, UnionT, VarbitT,
    packed_width, strip_new,
)


def _holds_dont_care(t: P4Type) -> bool:
    """Whether ``t`` is ``_`` or a tuple with ``_`` in it.

    >>> _holds_dont_care(TupleT([BitT(8), DontCareT()]))
    True
    """
    t = strip_new(t)
    if isinstance(t, TupleT):
        return any(_holds_dont_care(e) for e in t.elems)
    return isinstance(t, DontCareT)


# the v1model versions p4c-bm2-ss knows (backends/bmv2/common/v1model.h)
V1MODEL_VERSIONS = (20180101, 20200408)

__all__ = ["Compiler", "InstanceInfo", "annotation", "annotation_string", "expr_text"]


class Compiler:
    """Checks a parsed program and generates the Python module that executes it."""

    def __init__(self, program: A.Program, state: Any, trace: bool = True) -> None:
        self.cx = CompileContext(program, state, trace)
        self.cx.specialize_struct = self.specialize_struct
        self.statements = StatementCompiler(self.cx, instances=self)
        self.expressions = self.statements.expressions
        self.natives = self.statements.calls.natives
        self.blocks = BlockCompiler(self.cx, self.statements, instances=self)

    # ------------------------------------------------------------------ results
    # what a loaded program (p4sim.engine.program.CompiledProgram) reads
    @property
    def program(self) -> A.Program:
        return self.cx.program

    @property
    def mod(self) -> Writer:
        """The generated module."""
        return self.cx.mod

    @property
    def env(self) -> dict[str, Any]:
        return self.cx.env

    @property
    def error_codes(self) -> dict[str, int]:
        return self.cx.error_codes

    @property
    def tables_info(self) -> dict[str, Any]:
        return self.cx.tables_info

    @property
    def actions_by_fq(self) -> dict[str, Any]:
        return self.cx.actions_by_fq

    @property
    def digest_types(self) -> dict[str, StructLikeT]:
        return self.cx.digest_types

    @property
    def direct_action_calls(self) -> set[str]:
        return self.cx.direct_action_calls

    @property
    def direct_action_callers(self) -> dict[str, str]:
        return self.cx.direct_action_callers

    @property
    def duplicate_names(self) -> list[tuple[str, str]]:
        return self.cx.duplicate_names

    @property
    def value_set_decls(self) -> dict[str, tuple[A.ValueSetDecl, P4Type]]:
        return self.cx.value_set_decls

    @property
    def struct_types(self) -> list[StructLikeT]:
        return self.cx.struct_types

    @property
    def package(self) -> Optional[InstanceInfo]:
        return self.cx.package

    def const_value(self, e: A.Expr, expected: Optional[P4Type] = None) -> Any:
        """The value of a compile-time constant expression in the global scope."""
        return self.expressions.const_value(e, expected)

    # ------------------------------------------------------------------ top level
    def compile(self) -> None:
        """Check and compile every top-level declaration."""
        try:
            for d in self.cx.program.decls:
                self.top_decl(d)
        except P4Error as err:
            if not err.message.endswith(": declaration not found"):
                raise
            # p4c reports the names nothing declares in source order, before anything else
            raise (first_undeclared(self.cx.program) or err) from None
        if self.cx.late_frontend_errors:
            raise self.cx.late_frontend_errors[0]
        if self.cx.package is None:
            raise P4Error("no package instantiation named 'main' (expected: V1Switch(...) main;)", None)

    def top_decl(self, d: Any) -> None:
        if isinstance(d, A.ConstDecl):
            if d.name == "__v1model_version":
                self.check_v1model_version(d)
            self.statements.const_decl(d)
        elif isinstance(d, A.TypedefDecl):
            t = self.expressions.resolve_type(d.type)
            if isinstance(t, ExternT) and t.decl.type_params and not t.type_args:
                raise P4Error(f"{t.name}: no type parameters supplied for generic type", d.type.loc)
            if d.is_newtype:
                t = NewT(d.name, t)
            self.cx.define(d.name, Sym("type", t, decl=d), d)
        elif isinstance(d, A.StructLikeDecl):
            self.struct_decl(d)
        elif isinstance(d, A.EnumDecl):
            self.enum_decl(d)
        elif isinstance(d, A.ErrorDecl):
            for m in d.members:
                if m in self.cx.error_codes:
                    raise P4Error(f"error.{m} declared twice", d.loc)
                self.cx.error_codes[m] = len(self.cx.error_codes)
        elif isinstance(d, A.MatchKindDecl):
            self.cx.match_kinds.update(d.members)
            for m, loc in zip(d.members, d.member_locs):
                self.cx.match_kind_locs.setdefault(m, loc)
        elif isinstance(d, A.ExternDecl):
            self.cx.define(d.name, Sym("extern_decl", None, decl=d), d)
        elif isinstance(d, A.FunctionProto):
            self.cx.define(d.name, Sym("extern_func", None, value=[d], decl=d), d)
        elif isinstance(d, A.FunctionDecl):
            self.blocks.function_decl(d)
        elif isinstance(d, A.ActionDecl):
            self.blocks.action_decl(d, module_level=True)
        elif isinstance(d, A.ParserTypeDecl):
            self.cx.define(d.name, Sym("parser_type", None, decl=d), d)
        elif isinstance(d, A.ControlTypeDecl):
            self.cx.define(d.name, Sym("control_type", None, decl=d), d)
        elif isinstance(d, A.PackageTypeDecl):
            self.cx.define(d.name, Sym("package_decl", None, decl=d), d)
        elif isinstance(d, A.ParserDecl):
            self.cx.define(d.name, Sym("parser_decl", None, decl=d), d)
        elif isinstance(d, A.ControlDecl):
            self.cx.define(d.name, Sym("control_decl", None, decl=d), d)
        elif isinstance(d, A.Instantiation):
            self.top_instantiation(d)
        elif isinstance(d, A.ValueSetDecl):
            raise P4Error("value_set can only be declared in a parser", d.loc)
        else:
            raise P4Unsupported(f"unsupported: top-level {type(d).__name__}", d.loc)

    def check_v1model_version(self, d: A.ConstDecl) -> None:
        """The ``V1MODEL_VERSION`` a program defines before including v1model.p4, checked
        as p4c's GetV1ModelVersion checks it."""
        v = self.expressions.const_value(d.value)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise P4Error(f"{expr_text(d.value)}: expected v1model version to be a non-negative number", d.value.loc)
        if not V1MODEL_VERSIONS[0] <= v <= V1MODEL_VERSIONS[1]:
            raise P4Error(f"{expr_text(d.value)}: unknown v1model version; initial supported version is "
                          f"{V1MODEL_VERSIONS[0]}, latest is {V1MODEL_VERSIONS[1]}", d.value.loc)

    def struct_decl(self, d: A.StructLikeDecl) -> None:
        if d.type_params:
            # ``struct S<T>``: specialised for each list of type arguments it is used with,
            # as p4c's SpecializeGenericTypes does (TypeResolver calls specialize_struct)
            self.cx.define(d.name, Sym("generic_struct", None, value={}, decl=d), d)
            return
        self.build_struct(d, d.name, define=True)

    def _check_field_list_names(self, annotations: list[A.Annotation]) -> None:
        """A name in ``@field_list(...)`` that the program never declares: p4c's
        ResolveReferences says "declaration not found" there, at the struct field, before it
        reads any control (a name declared later in the file is left to the use)."""
        for a in annotations:
            if a.name != "field_list":
                continue
            for x in a.exprs or []:
                if isinstance(x, A.NameRef) and self.cx.lookup_opt(x.name) is None and not any(
                        getattr(d, "name", None) == x.name for d in self.cx.program.decls):
                    raise P4Error(f"{x.name}: declaration not found", x.loc)

    def specialize_struct(self, sym: Sym, args: list[P4Type], node: A.Node) -> StructLikeT:
        """The type ``S<args>`` of a generic struct, header or union ``S``."""
        d = sym.decl
        if len(args) != len(d.type_params):
            raise P4Error(f"{d.name} expects {len(d.type_params)} type arguments", node.loc)
        key = tuple(f"{type(a).__name__}:{a}" for a in args)
        name = f"{d.name}<{', '.join(str(a) for a in args)}>"
        if key in sym.value and sym.value[key] is None:  # being built: S<T> holds an S<T>
            raise P4Error(f"Self-referencing types not supported: '{name}' within '{d.kind} {d.name}'", node.loc)
        if key not in sym.value:
            saved = self.cx.type_bindings
            self.cx.type_bindings = [dict(zip(d.type_params, args))]
            sym.value[key] = None
            try:
                sym.value[key] = self.build_struct(d, name, define=False)
            except BaseException:
                del sym.value[key]
                raise
            finally:
                self.cx.type_bindings = saved
        return sym.value[key]

    def build_struct(self, d: A.StructLikeDecl, name: str, define: bool) -> StructLikeT:
        cls = {"struct": StructT, "header": HeaderT, "header_union": UnionT}[d.kind]
        t = cls(name, [])
        t.pyclass = self.cx.uid("S_" + d.name)
        if define:
            self.cx.define(d.name, Sym("type", t, decl=d), d)
        seen = set()
        for f in d.fields:
            if f.name in seen:
                raise P4Error(f"{d.kind} {d.name}: duplicate field '{f.name}'", f.loc)
            seen.add(f.name)
            ft = self.expressions.resolve_type(f.type)
            sft = strip_new(ft)
            if sft is t:
                raise P4Error(f"Self-referencing types not supported: '{d.name}' within '{d.kind} {d.name}'",
                              f.type.loc)
            if _holds_dont_care(sft):   # S<_>: p4c's type checker (a tuple field is a struct to it)
                raise P4Error(f"Field '{f.name}' of '{d.kind} {d.name}' cannot have type '_'", f.loc)
            if d.kind == "header" and not isinstance(sft, VarbitT) and packed_width(sft) is None:
                raise P4Error(f"header {d.name}: field '{f.name}' has type {ft}, which is not allowed in a header", f.loc)
            if d.kind == "header_union" and not isinstance(sft, HeaderT):
                raise P4Error(f"header_union {d.name}: field '{f.name}' must be a header", f.loc)
            t.fields.append((f.name, ft))
            t.annotations[f.name] = f.annotations
            self._check_field_list_names(f.annotations)
        if d.kind == "header":
            if t.has_varbit and any(isinstance(strip_new(ft), StructT) for _, ft in t.fields):
                raise P4Unsupported(f"unsupported: header {d.name}: a struct field in a header with a varbit field", d.loc)
            if sum(1 for _, ft in t.fields if isinstance(strip_new(ft), VarbitT)) > 1:
                raise P4Error(f"header {d.name}: at most one varbit field is allowed", d.loc)
            if t.width_bits % 8:
                # refused only where an instance reaches BMv2 (engine/header_widths.py)
                self.cx.odd_header_locs[d.name] = d.name_loc if d.name_loc.line else d.loc
        self.cx.struct_types.append(t)
        self.cx.mod.lines.extend(gen_struct_class(t).splitlines())
        self.cx.mod.line("")
        return t

    def enum_decl(self, d: A.EnumDecl) -> None:
        if len(set(d.members)) != len(d.members):
            raise P4Error(f"enum {d.name}: duplicate member", d.loc)
        if d.underlying is not None:
            ut = strip_new(self.expressions.resolve_type(d.underlying))
            if not isinstance(ut, BitT):
                raise P4Error(f"enum {d.name}: underlying type must be bit<W> or int<W>", d.loc)
            values = {}
            for m, e in zip(d.members, d.values or []):
                values[m] = self.expressions.const_value(e, ut)
            t = EnumT(d.name, list(d.members), ut, values)
        else:
            t = EnumT(d.name, list(d.members))
        self.cx.define(d.name, Sym("type", t, decl=d), d)

    # ------------------------------------------------------------------ instances
    def instance_type_args(self, t: A.TypeRef) -> tuple[Sym, list[P4Type]]:
        if not isinstance(t, A.NamedType):
            raise P4Error("only parsers, controls, packages and externs can be instantiated", t.loc)
        sym = self.cx.lookup(t.name, t, t.is_global)
        return sym, [self.expressions.resolve_type(a) for a in t.args]

    def typedef_target(self, sym: Sym, targs: list[P4Type], t: A.NamedType, node: Any,
                       inline: bool) -> tuple[Sym, list[P4Type]]:
        """What a ``typedef`` of an extern, parser or control type instantiates, as the
        type itself: ``typedef register<bit<8>> R; R(4) r;`` is ``register<bit<8>>(4) r;``
        (the typedef's type arguments, none of its own). p4c-bm2-ss stops with a compiler
        bug on a constructor call through a typedef inside an expression (``inline``:
        ``implementation = AP(4)``, ``V1Switch(P(), ...)``)."""
        st = sym.type
        if isinstance(st, ExternT):
            base = Sym("extern_decl", None, decl=st.decl)
            bound = [st.type_args[p] for p in st.decl.type_params if p in st.type_args]
        elif isinstance(st, BlockT) and isinstance(st.decl, (A.ParserDecl, A.ControlDecl)):
            if st.decl.type_params:
                raise P4Unsupported(f"unsupported: instantiating {t.name}, a typedef of the generic "
                                    f"{st.kind} {st.name}", node.loc)
            base, bound = Sym(f"{st.kind}_decl", None, decl=st.decl), []
        else:
            return sym, targs
        if targs:
            raise P4Error(f"{t.name}<...>: Type {st.name}{'<...>' if bound else ''} is not generic and thus "
                          "it cannot be specialized using type arguments", t.loc)
        if inline:
            raise P4Error(f"{t.name}(...): p4c-bm2-ss cannot compile a constructor call through a typedef "
                          f"here (it stops with a compiler bug); declare an instance of {t.name} and use it",
                          node.loc)
        return base, bound

    def make_instance(self, t: A.TypeRef, args: list[A.Argument], name: str, fq: str, node: Any,
                      annotations: Optional[list] = None, inline: bool = False) -> InstanceInfo:
        sym, targs = self.instance_type_args(t)
        if sym.kind == "type" and isinstance(t, A.NamedType):
            sym, targs = self.typedef_target(sym, targs, t, node, inline)
        if sym.kind in ("parser_decl", "control_decl"):
            return self.blocks.compile_block(sym.decl, fq, args, node, targs)
        if sym.kind == "extern_decl":
            d = sym.decl
            if targs and len(targs) != len(d.type_params):   # p4c's type checker, 1.2.5.16
                shown = f"{d.name}<{', '.join(str(a) for a in targs)}>"
                raise P4Error(f"{shown}: Type {d.name} has {len(d.type_params)} type parameter(s), "
                              f"but it is specialized with {len(targs)}", getattr(t, "loc", None) or node.loc)
            if d.type_params and not targs:
                raise P4Error(f"{d.name} needs type arguments ({', '.join(d.type_params)})", node.loc)
            obj = self.natives.instantiate_extern(d, targs, args, fq, node)
            inst = InstanceInfo("extern", name, fq, d, ExternT(d.name, d, dict(zip(d.type_params, targs))), obj=obj)
            return inst
        if sym.kind == "package_decl":
            d = sym.decl
            bound = bind_args(d.params, args, node, d.name)
            inst = InstanceInfo("package", name, fq, d, BlockT("package", d.name, d))
            for p, a in zip(d.params, bound):
                inst.args.append(self.package_arg(a, p) if a is not None else None)  # None: @optional left out
            inst.params = d.params
            return inst
        raise P4Error(f"{t.name if isinstance(t, A.NamedType) else '?'} cannot be instantiated", node.loc)

    def package_arg(self, a: A.Expr, p: A.Param) -> InstanceInfo:
        inst = self._package_arg(a, p)
        self._check_directions(inst, p, a)
        return inst

    def _check_directions(self, inst: InstanceInfo, p: A.Param, arg: A.Expr) -> None:
        """p4c's type unification of a block with the package's parameter type: as many
        parameters as the prototype (``control C(inout H h, inout M m)`` as v1model's
        egress is refused), each with the prototype's direction (``control
        MyVerifyChecksum(in H hdr, ...)`` for v1model's ``inout H hdr`` is refused)."""
        proto_name = getattr(p.type, "name", None)
        protos = [d for d in self.cx.program.decls
                  if isinstance(d, (A.ControlTypeDecl, A.ParserTypeDecl)) and d.name == proto_name]
        params = getattr(inst.decl, "params", None)
        if not protos or params is None:
            return
        if inst.kind in ("parser", "control") and len(params) != len(protos[0].params):
            # p4c-bm2-ss 1.2.5.16 (measured): at the package's declaration, then "Type of
            # argument 'C' (control C) does not match type of parameter 'eg'" at the argument
            raise P4Error(f"Cannot unify functions with different number of arguments: {inst.decl.name} to "
                          f"{proto_name}", arg.loc)
        for actual, wanted in zip(params, protos[0].params):
            if actual.direction != wanted.direction:
                raise P4Error(f"Cannot unify '{actual.direction}' parameter '{actual.name}' with "
                              f"'{wanted.direction}' parameter '{wanted.name}' because they have "
                              "different directions", at_name(actual.loc, actual.name))

    def _package_arg(self, a: A.Expr, p: A.Param) -> InstanceInfo:
        if isinstance(a, A.Call):
            func = a.func
            tname = func.name if isinstance(func, A.NameRef) else None
            if tname is None:
                raise P4Error("package arguments must be instances or constructor calls", a.loc)
            return self.make_instance(A.NamedType(tname, list(a.type_args), loc=a.loc), a.args, tname, tname, a,
                                      inline=True)
        x = self.expressions.expr(a)
        if isinstance(x, RefEx) and x.sym.kind == "instance":
            return x.sym.value
        raise P4Error(f"{expr_text(a)} is not an instance", a.loc)

    def instantiate_inline(self, e: A.Call, hint: str, fq: Optional[str] = None) -> InstanceInfo:
        """An instance constructed in place (a table property); ``fq``, when given, is its
        control-plane name instead of ``<control>.<hint>``."""
        if not isinstance(e.func, A.NameRef):
            raise P4Error("expected a constructor call", e.loc)
        if fq is None:
            fq = f"{self.cx.path}.{hint}" if self.cx.path else hint
        return self.make_instance(A.NamedType(e.func.name, list(e.type_args), loc=e.loc), e.args, hint, fq, e,
                                  inline=True)

    def top_instantiation(self, d: A.Instantiation) -> None:
        fq = self.cx.fq_name(d, d.name)
        inst = self.make_instance(d.type, d.args, d.name, fq, d, d.annotations)
        self.cx.define(d.name, Sym("instance", inst.type, value=inst, decl=d), d)
        if inst.kind == "package" and d.name == "main":
            self.cx.package = inst

    def local_instantiation(self, d: A.Instantiation) -> None:
        if d.initializer:
            raise P4Unsupported("unsupported: instantiation with abstract method implementations", d.loc)
        fq = self.cx.fq_name(d, d.name)
        inst = self.make_instance(d.type, d.args, d.name, fq, d, d.annotations)
        if inst.kind == "package":
            raise P4Error("packages can only be instantiated at the top level", d.loc)
        self.cx.define(d.name, Sym("instance", inst.type, value=inst, decl=d), d)
