"""The state every part of the compiler shares, in one explicit place.

A :class:`CompileContext` is created once per program by :class:`~p4sim.engine.compiler.Compiler`
and handed to each of its collaborators (expressions, statements, calls, externs, parsers,
tables, blocks). It holds:

* the program being built: the generated module (``mod``), the writer of the function
  being generated (``w``) and its :class:`~p4sim.engine.codegen.FnCtx` (``fn``), the
  Python objects the generated code refers to (``env``) and the runtime state
  (``state``: tables, externs by fully qualified name);
* the symbol tables: ``scopes`` (innermost last; ``scopes[0]`` is the global scope),
  ``type_bindings`` (type variables of the generic being instantiated) and the instance
  ``path`` that prefixes fully qualified names;
* what the program declares and what a loaded program exposes: error codes, match
  kinds, tables, actions, digest and struct types, the ``main`` package;
* name helpers (fresh Python names, ``@name`` handling) and scope helpers
  (``define``/``lookup`` raising :class:`~p4sim.errors.P4Error` at the offending node).

It also holds the records shared by several collaborators (:class:`InstanceInfo`,
:class:`ActionInfo`, :class:`FunctionInfo`) and the source-text helpers used in error
messages and control-plane names (:func:`expr_text`, :func:`annotation_string`).

Example::

    >>> from p4sim.frontend import ast as A
    >>> cx = CompileContext(A.Program([]), state=None)
    >>> cx.define("x", Sym("const", None, "1", 1), None)
    >>> cx.lookup("x", None).value, cx.tmp("k")
    (1, '_k_1')
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from p4sim.engine.codegen import FnCtx, Sym, Writer
from p4sim.engine.overloads import Overloads
from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.loops import LoopingFunctions
from p4sim.frontend.text import expr_text
from p4sim.frontend.types import P4Type, StructLikeT, bit_width
from p4sim.runtime import hashes as HASHES


def annotation(decl: Any, name: str) -> Optional[A.Annotation]:
    """The annotation ``@name`` of a declaration, or None."""
    for a in getattr(decl, "annotations", None) or []:
        if a.name == name:
            return a
    return None


def annotation_string(decl: Any, name: str) -> Optional[str]:
    """The string argument of annotation ``@name`` (``@name("x")`` or ``@name(x)``)."""
    a = annotation(decl, name)
    if a is None:
        return None
    if a.exprs and isinstance(a.exprs[0], A.StringLit):
        return a.exprs[0].value
    raw = a.raw.strip()
    if raw.startswith('"') and raw.endswith('"'):
        return raw[1:-1]
    return raw or None



# the declarations (p4c: IR::Declaration, not a parameter) that may not reuse the name of a
# parameter in scope: "declaration of 'x' shadows a parameter 'x'" (measured, 1.2.5.16)
_SHADOWING_DECLARATIONS = (A.VarDecl, A.ConstDecl, A.Instantiation, A.ActionDecl, A.TableDecl,
                           A.ValueSetDecl)

# what p4c's parser declares as a type (the rest are objects: functions, actions, constants...)
_TYPE_KINDS = frozenset({"type", "control_decl", "parser_decl", "extern_decl", "package_decl",
                         "control_type", "parser_type", "generic_struct"})


class NotAssignable(P4Error):
    """An expression that cannot be written (a constant, an ``in`` parameter, ...): each
    use reports it as p4c does (an assignment, an ``out`` argument, ``setValid()``)."""

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
        # an extern parameter of a parser or control (``register<bit<8>> r``): no object
        # of its own, ``code`` is the Python parameter the instance given at apply is in
        self.code = ""
        # (a parser or control) the extern instance given for each extern parameter
        self.extern_args: dict[str, "InstanceInfo"] = {}


class ActionInfo:
    """A compiled action (per block instance)."""

    def __init__(self, decl: A.ActionDecl, local_name: str, fqname: str, pyname_: str,
                 ptypes: list[P4Type]) -> None:
        self.decl = decl
        self.local_name = local_name
        self.fqname = fqname
        self.pyname = pyname_
        self.ptypes = ptypes
        self.annotations = decl.annotations
        self.outer: frozenset[str] = frozenset()  # names of the enclosing control it uses
        # its ``/``/``%`` that each call decides (engine/codegen.py DeferredDivision)
        self.deferred_divisions: list[Any] = []
        # the instance path it is declared in ("" at top level): its block, whatever its
        # ``@name`` (a ``@name(".send")`` action of ``ingress`` is still ingress's)
        self.block_path = ""

    @property
    def cp_params(self) -> list[tuple[str, int]]:
        """Directionless parameters (supplied by the control plane) with widths."""
        out = []
        for p, t in zip(self.decl.params, self.ptypes):
            if p.direction == "":
                out.append((p.name, bit_width(t) or 0))
        return out


class FunctionInfo:
    """A compiled function (one instance of a generic function)."""

    def __init__(self, decl: A.FunctionDecl, pyname_: str, ptypes: list[P4Type], return_type: P4Type,
                 outs: list[str]) -> None:
        self.decl = decl
        self.pyname = pyname_
        self.ptypes = ptypes
        self.return_type = return_type
        self.outs = outs
        self.outer: frozenset[str] = frozenset()  # names it uses that are not its own
        # its ``/``/``%`` that each call decides (engine/codegen.py DeferredDivision)
        self.deferred_divisions: list[Any] = []


class CompileContext:
    """The shared state of one compilation (see the module docstring)."""

    def __init__(self, program: A.Program, state: Any, trace: bool = True) -> None:
        # the program being built
        self.program = program
        self.state = state                      # ProgramState: runtime objects by name
        self.trace = trace                      # generate the per-packet trace lines
        self.mod = Writer()                     # the generated module
        self.w = self.mod                       # writer of the function being generated
        self.fn: Optional[FnCtx] = None         # the function being generated
        self.env: dict[str, Any] = {}           # objects the generated code refers to
        self.global_objs: dict[int, str] = {}   # id(object) -> its name in env
        self.counter = 0                        # for fresh Python names
        self.hash_fns: dict[str, Any] = {}
        self.loops = LoopingFunctions(program)  # the functions that run a for loop
        # symbol tables
        # S<args> of a generic struct/header (set by the Compiler, used by TypeResolver)
        self.specialize_struct: Optional[Callable[[Sym, list[P4Type], Any], P4Type]] = None
        self.scopes: list[dict[str, Sym]] = [{}]
        # the actions and functions whose bodies are being compiled, innermost last
        self.declaring: list[Any] = []
        self.type_bindings: list[dict[str, P4Type]] = []
        self.path = ""                          # fully qualified name of the enclosing instance
        # what the program declares, read by the loaded program
        self.error_codes: dict[str, int] = {}
        self.match_kinds: set[str] = set()
        self.match_kind_locs: dict[str, Any] = {}   # where each match kind is declared
        self.tables_info: dict[str, Any] = {}   # fq name -> tables.TableInfo
        self.actions_by_fq: dict[str, ActionInfo] = {}
        self.digest_types: dict[str, StructLikeT] = {}
        self.value_set_decls: dict[str, tuple[A.ValueSetDecl, P4Type]] = {}  # fq -> decl, element type
        # (P4Info object kind, name) of each object whose control-plane name an earlier
        # object of its kind has (p4c's P4Info serializer refuses them: p4sim/p4info.py)
        self.duplicate_names: list[tuple[str, str]] = []
        # errors p4c-bm2-ss's back end gives while it converts the program to JSON, with
        # the instance path they were found in and whether in an action: raised, the
        # first, once the program is compiled, in p4c's order (actions, the ingress and
        # egress bodies, then the checks of the deparser and checksum controls,
        # engine/v1switch_checks.py, then the rest)
        self.backend_errors: list[tuple[str, bool, P4Error]] = []
        # id of a back-end error found in an action -> where that action is declared
        # (p4c-bm2-ss converts the actions in declaration order)
        self.backend_error_actions: dict[int, Any] = {}
        # a constant header-stack index out of range: p4c's type checker checks indices in
        # a later run than its other checks (checkArrays), so the first is raised once the
        # whole program is compiled, before anything of the back end
        self.array_index_errors: list[P4Error] = []
        # a local variable of a type holding a header whose width is not a multiple of 8:
        # p4c-bm2-ss's back end refuses it with the headers and metadata (V1ModelProgram)
        self.local_header_width_errors: list[P4Error] = []
        # p4c's CheckCoreMethods (an emit of what is not a header, stack, union or struct),
        # a pass after those: raised after them
        self.core_method_errors: list[P4Error] = []
        # an instance of an extern the program declares itself: p4c-bm2-ss (without
        # --emit-externs) reports it after the control bodies, and only when they gave no
        # error ("E: unknown extern instance", at the extern's declaration); calls of its
        # methods are errors of the bodies ("Unknown extern method m from type E")
        self.unknown_externs: set[str] = set()
        self.backend_instance_errors: list[P4Error] = []
        self.unreferenced_locals: Optional[set[int]] = None  # engine/arrays.py, computed on first use
        self.direct_action_calls: set[str] = set()  # fq names of actions a control's body calls
        # the same, in the order of their first call, each with the instance path of the
        # block that calls it first (P4Info lists a top-level one as that control's)
        self.direct_action_callers: dict[str, str] = {}
        self.dead_code = 0                          # > 0 inside a branch a constant condition skips
        self.struct_types: list[StructLikeT] = []
        # header types whose width is not a multiple of 8 -> their declaration (engine/header_widths.py)
        self.odd_header_locs: dict[str, Any] = {}
        self.package: Optional[InstanceInfo] = None

    @property
    def late_frontend_errors(self) -> list[P4Error]:
        """The front-end errors p4c finds in passes after its type checking, in its order."""
        return self.array_index_errors + self.core_method_errors

    def defer_backend_error(self, err: P4Error) -> None:
        """Keep ``err`` (a back-end error) to be raised in p4c-bm2-ss's order; in an action,
        with where the action is declared (:attr:`backend_error_actions`)."""
        self.backend_errors.append((self.path, self.in_kind("action"), err))
        fn = self.fn
        while fn is not None and fn.kind != "action":
            fn = fn.parent
        if fn is not None and fn.decl_loc is not None:
            self.backend_error_actions[id(err)] = fn.decl_loc

    @property
    def error_width(self) -> int:
        return max(1, (len(self.error_codes) - 1).bit_length())

    # ------------------------------------------------------------------ names
    def uid(self, base: str) -> str:
        """A fresh Python name made from ``base``."""
        self.counter += 1
        clean = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
        return f"{clean}_{self.counter}"

    def pyvar(self, name: str) -> str:
        return self.uid("v_" + name)

    def tmp(self, base: str) -> str:
        return self.uid("_" + base)

    def global_ref(self, obj: Any, hint: str) -> str:
        """The name under which the generated code sees ``obj`` (one name per object)."""
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
        """The fully qualified (control-plane) name of ``decl``, honouring ``@name``."""
        ann = annotation_string(decl, "name")
        if ann is not None:
            if ann.startswith("."):
                return ann[1:]
            local = ann
        return f"{self.path}.{local}" if self.path else local

    def note_name(self, objects: dict[str, Any], kind: str, fq: str) -> None:
        """Record ``fq`` as a duplicate ``kind`` name (P4Info's word: ``table``,
        ``counter``, ...) when ``objects`` already has an object of that name."""
        if fq in objects:
            self.duplicate_names.append((kind, fq))

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
        # a parser's or control's own locals (beside its parameters, scopes[1])
        block_level = len(self.scopes) == 2 and self.fn is not None and self.fn.kind in ("parser", "control")
        if isinstance(node, A.Param):
            sym.is_param = True
        elif isinstance(node, _SHADOWING_DECLARATIONS) and not block_level:
            # p4c's ResolveReferences::checkShadowing: an error, not its usual warning, for a
            # declaration inside an action, function, state or block; a control's or parser's
            # own local of a parameter's name is only a warning to p4c ("'meta' shadows
            # 'meta'", p4c_warnings), and the local hides the parameter from there on
            for scope in self.scopes:
                old = scope.get(name)
                if old is not None and old.is_param:
                    raise P4Error(f"declaration of '{name}' shadows a parameter '{name}'",
                                  getattr(node, "name_loc", None) or getattr(node, "loc", None))
        scope = self.scopes[-1]
        old = scope.get(name)
        if old is not None:
            if block_level and old.is_param and not isinstance(node, A.Param):
                # uses before this declaration keep the parameter (compiled already), later
                # ones get the local: p4c-bm2-ss 1.2.5.16's JSON, measured
                scope[name] = sym
                return
            if old.kind == "extern_func" and sym.kind == "extern_func":
                old.value.extend(sym.value)
                return
            if old.kind == "function" and sym.kind == "function":
                # overloaded (p4c resolves each call by its arguments)
                prior = old.value.syms if isinstance(old.value, Overloads) else [old]
                scope[name] = Sym("function", None, "", value=Overloads(prior + [sym]), decl=old.decl)
                return
            if len(self.scopes) == 1 and old.kind == sym.kind == "type" and old.decl is node:
                scope[name] = sym        # the same type declaration, defined again
                return
            # p4c-bm2-ss 1.2.5.16's words (measured): at the top level, among a control's
            # or parser's locals, and in a block of statements
            if len(self.scopes) == 1 and (old.kind in _TYPE_KINDS) != (sym.kind in _TYPE_KINDS):
                # p4c's parser keeps types and objects apart: a name that is both
                message = f"Re-declaration of {name} with different type:"
            elif len(self.scopes) == 1:
                message = f"{name} duplicates {name}."
            elif block_level:
                message = f"{name}: Duplicates declaration {name}"
            else:
                message = f"Duplicate declaration of {name}; previous at"
            raise P4Error(message, getattr(node, "loc", None))
        scope[name] = sym

    def lookup_opt(self, name: str, is_global: bool = False) -> Optional[Sym]:
        """The symbol ``name`` denotes here, innermost scope first.

        As in p4c's name resolution, a declaration is not visible inside itself: in the
        body of an action or function, its own name denotes what it would outside it
        (``action hash() { hash(r, HashAlgorithm.crc16, ...); }`` calls v1model's
        ``hash``; ``void f() { f(); }`` names no ``f``, p4c: "declaration not found").
        """
        own = self.declaring[-1] if self.declaring else None
        for scope in ([self.scopes[0]] if is_global else reversed(self.scopes)):
            sym = scope.get(name)
            if sym is not None and (own is None or sym.decl is not own):
                return sym
        return None

    def lookup(self, name: str, node: Any, is_global: bool = False) -> Sym:
        sym = self.lookup_opt(name, is_global)
        if sym is None:
            raise P4Error(f"{name}: declaration not found", getattr(node, "loc", None))   # p4c's ResolveReferences
        return sym

    def note_assign(self, sym: Sym) -> None:
        """Declare ``sym`` nonlocal in the nested functions between its owner and here."""
        if sym.fn is not None and self.fn is not None and sym.fn is not self.fn:
            fn = self.fn
            while fn is not None and fn is not sym.fn:
                fn.nonlocals.add(sym.code)
                fn = fn.parent
