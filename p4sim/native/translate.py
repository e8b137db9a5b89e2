"""Translate the Python the engine generated for a program into C.

The native path keeps ONE source of P4 semantics: :mod:`p4sim.engine` decides everything
a P4 construct means (casts, masks, copy-in/copy-out, exit, parser errors, which field of
which header is hashed) when it writes Python; this module only re-expresses that Python
in C, construct by construct, with Python's integer semantics (every scalar is a signed
128-bit ``p4i``, wrapping, and the generated code masks after every operation as it does
for Python's unbounded ints). The classes of structs and headers are written from the
same P4 types :func:`p4sim.engine.codegen.gen_struct_class` writes them from.

Whatever it does not know (a construct, a width over :data:`MAX_WIDTH`, a varbit, an
extern it has no C for) raises :class:`NativeUnsupported` with the reason: the program
then runs on the Python engine (:mod:`p4sim.native.switch`), said once.

Example::

    >>> from p4sim.engine import load_program              # doctest: +SKIP
    >>> unit = translate(load_program("p4src/fabric.p4", ["p4src", "p4src/include"]))  # doctest: +SKIP
    >>> "int ctl_FabricIngress" in unit.c_source            # doctest: +SKIP
    True
"""
from __future__ import annotations

import ast
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Union

from p4sim.engine.codegen import pyname
from p4sim.frontend.types import (
    BitT, BoolT, EnumT, ErrorT, HeaderT, P4Type, StackT, StructLikeT, StructT, UnionT, VarbitT,
    lookahead_width, packed_width, strip_new,
)
from p4sim.runtime import hashes as H
from p4sim.runtime.counters import CounterArray
from p4sim.runtime.meters import MeterArray
from p4sim.runtime.registers import RegisterArray
from p4sim.runtime.tables import Table
from p4sim.runtime.valueset import ValueSet

MAX_WIDTH = 120
"""Widest bit<W>/int<W> the native path holds (a p4i keeps Python's semantics below 127
bits; 120 leaves room for bit reads at any alignment)."""
MAX_REGISTER_WIDTH = 64

_AST_PARSE_LOCK = threading.Lock()
"""Serialises ``ast.parse``: CPython 3.11 as Debian 12 ships it (3.11.2) keeps the AST
converter's recursion depth in interpreter-wide state, so two threads parsing at once can
fail with ``SystemError: AST constructor recursion depth mismatch`` (cpython gh-106905,
pytest-dev/pytest#10763). Switches translate programs from gRPC worker threads, and the
tests prebuild programs in a thread pool."""


class NativeUnsupported(Exception):
    """The program (or a construct in it) has no C translation; the message says why."""


# --------------------------------------------------------------------------- types
@dataclass(frozen=True)
class Ref:
    """A reference to a struct / header / union object (C: pointer)."""
    cls: str


@dataclass(frozen=True)
class Stk:
    """A header stack (C: pointer to its struct)."""
    cls: str
    size: int


@dataclass(frozen=True)
class Wide:
    """A value wider than :data:`MAX_WIDTH` (C: an array of 64-bit words, least
    significant first), which the code may only move, compare, match, hash and emit."""
    width: int

    @property
    def words(self) -> int:
        return (self.width + 63) // 64


@dataclass(frozen=True)
class Tup:
    elems: tuple


INT = "int"          # every scalar: bit/int/bool/error/enum (strings interned)
NONE = "none"
LOOKUP = "lookup"    # a table's LookupResult
ARGS = "args"        # its action arguments
STATE = "state"      # a parser state function (C: its id)
EXC = "exc"          # a caught _ExitSignal (C: flag)
OPT = "opt"          # ctx.truncate_bytes / recirculate / resubmit (None or int)
CTX = "ctx"
T = Union[str, Ref, Stk, Tup, None]


@dataclass
class ClassInfo:
    name: str                 # Python class name (S_x_N)
    t: StructLikeT
    kind: str                 # header, struct, header_union
    fields: list[tuple[str, str, Any, P4Type]]   # (python attr, C member, type T, P4 type)

    def field(self, attr: str) -> tuple[str, Any, P4Type]:
        for a, c, ty, pt in self.fields:
            if a == attr:
                return c, ty, pt
        raise NativeUnsupported(f"class {self.name} has no field {attr}")


@dataclass
class Fn:
    name: str
    node: ast.FunctionDef
    parent: Optional["Fn"]
    params: list[str]
    locals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    children: list["Fn"] = field(default_factory=list)
    ptypes: list[Any] = field(default_factory=list)
    ret: Any = None          # None: unknown yet; "void"; INT; STATE; Tup; Ref (value)
    called: bool = False
    state_id: int = 0


@dataclass
class TranslatedUnit:
    """The C of one program and what the binding needs to connect its state."""
    c_source: str
    tables: list[Table]
    registers: list[RegisterArray]
    counters: list[CounterArray]
    meters: list[MeterArray]
    value_sets: list[ValueSet]
    hashes: list[Any]
    strings: list[str]
    direct_meters: list[str]
    phv_classes: tuple[str, str, str]
    max_args: int


def _cint(v: int) -> str:
    """A p4i literal for a Python int."""
    if -(1 << 62) < v < (1 << 62):
        return f"((p4i){v}LL)"
    if v < 0:
        return f"(-{_cint(-v)})"
    if v >= 1 << 126:
        raise NativeUnsupported(f"constant {v:#x} is wider than the native path's {MAX_WIDTH} bits")
    hi, lo = v >> 64, v & ((1 << 64) - 1)
    return f"((((p4i){hi}ULL) << 64) | (p4i){lo}ULL)"


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _attr_chain(node: ast.AST) -> Optional[list[str]]:
    out: list[str] = []
    while isinstance(node, ast.Attribute):
        out.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        out.append(node.id)
        return out[::-1]
    return None


def _is_ctx_log(node: ast.AST) -> bool:
    return _attr_chain(node) == ["ctx", "log"]


def _field_width(t: P4Type) -> int:
    """Width of a header field's type (codegen._fw)."""
    t = strip_new(t)
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, StructLikeT):
        return packed_width(t) or 0
    return t.width if isinstance(t, BitT) else 1


class Translator:
    """Generated Python of a :class:`~p4sim.engine.program.CompiledProgram` → C."""

    def __init__(self, program: Any) -> None:
        self.prog = program
        self.env = program.env
        self.strings: dict[str, int] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.stack_types: dict[tuple[str, int], str] = {}
        self.tuple_types: dict[tuple, str] = {}
        self.fns: dict[str, Fn] = {}
        self.globals: dict[str, tuple[str, int]] = {}
        self.tables: list[Table] = []
        self.registers: list[RegisterArray] = []
        self.counters: list[CounterArray] = []
        self.meters: list[MeterArray] = []
        self.value_sets: list[ValueSet] = []
        self.hashes: list[Any] = []
        self.direct_meters: dict[str, int] = {}
        self.max_args = 1
        self.tmp_counter = 0
        self.labels = 0
        self.temps: list[str] = []
        self.handler: list[str] = ["__out"]
        self.mode = "infer"
        self.changed = False
        self.out: list[str] = []

    # ------------------------------------------------------------------ entry
    def run(self) -> TranslatedUnit:
        with _AST_PARSE_LOCK:
            tree = ast.parse(self.prog.source)
        self._collect_classes()
        self._collect_globals()
        self.module_fns: list[Fn] = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.module_fns.append(self._scan_fn(node, None))
            elif isinstance(node, ast.ClassDef):
                if node.name not in self.classes:
                    raise NativeUnsupported(f"class {node.name} of the generated code has no P4 type")
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            else:
                raise NativeUnsupported(f"module-level statement {ast.dump(node)[:60]}")
        self._seed_entry_points()
        for _ in range(50):
            self.changed = False
            for fn in self._all_fns():
                if fn.called:
                    self._infer_fn(fn)
            if not self.changed:
                break
        else:
            raise NativeUnsupported("type inference did not settle")
        body = self._emit_all()
        decls = self._emit_types()
        src = "\n".join([f"#define P4N_MAXARGS {self.max_args}", "#include \"rt_head.h\""] + decls + body)
        return TranslatedUnit(
            c_source=src, tables=self.tables, registers=self.registers, counters=self.counters,
            meters=self.meters, value_sets=self.value_sets, hashes=self.hashes,
            strings=sorted(self.strings, key=self.strings.__getitem__),
            direct_meters=sorted(self.direct_meters, key=self.direct_meters.__getitem__),
            phv_classes=(self.prog.headers_type.pyclass, self.prog.metadata_type.pyclass,
                         self.prog.std_type.pyclass),
            max_args=self.max_args)

    def sid(self, s: str) -> int:
        """The interned id of a string constant (0 is None / no action)."""
        if s not in self.strings:
            self.strings[s] = len(self.strings) + 1
        return self.strings[s]

    # ------------------------------------------------------------------ classes
    def _collect_classes(self) -> None:
        seen: dict[str, StructLikeT] = {}

        def walk(t: P4Type) -> None:
            t = strip_new(t)
            if isinstance(t, StackT):
                walk(t.elem)
            elif isinstance(t, StructLikeT) and t.pyclass and t.pyclass not in seen:
                seen[t.pyclass] = t
                for _, ft in t.fields:
                    walk(ft)

        for t in list(getattr(self.prog, "struct_types", {}).values()):
            walk(t)
        for t in (self.prog.headers_type, self.prog.metadata_type, self.prog.std_type):
            walk(t)
        for t in getattr(self.prog, "digest_types", {}).values():
            walk(t)
        for lst in getattr(self.prog, "struct_type_list", ()):
            walk(lst)
        for cls, t in seen.items():
            fields = []
            for n, ft in t.fields:
                attr = _pyname(n)
                fields.append((attr, "f_" + attr, self._ftype(ft, f"{t.name}.{n}"), ft))
            self.classes[cls] = ClassInfo(cls, t, t.kind, fields)

    def _ftype(self, ft: P4Type, where: str) -> Any:
        t = strip_new(ft)
        if isinstance(t, VarbitT):
            raise NativeUnsupported(f"{where} is a varbit (the native path has no varbit)")
        if isinstance(t, BitT):
            if t.width > MAX_WIDTH:
                if t.signed:
                    raise NativeUnsupported(f"{where} is {t} (the native path holds at most {MAX_WIDTH} bits)")
                return Wide(t.width)
            return INT
        if isinstance(t, (BoolT, ErrorT)):
            return INT
        if isinstance(t, EnumT):
            if t.underlying is None:
                for m in t.members:
                    self.sid(m)
            return INT
        if isinstance(t, StackT):
            elem = strip_new(t.elem)
            if not isinstance(elem, StructLikeT):
                raise NativeUnsupported(f"{where}: a stack of {elem}")
            return Stk(elem.pyclass, t.size)
        if isinstance(t, StructLikeT):
            return Ref(t.pyclass)
        raise NativeUnsupported(f"{where} has type {t}")

    # ------------------------------------------------------------------ globals
    def _collect_globals(self) -> None:
        static = {H.crc16: "P4H_CRC16", H.crc32: "P4H_CRC32", H.crc_ccitt: "P4H_CRCCCITT",
                  H.csum16: "P4H_CSUM16", H.xor16: "P4H_XOR16", H.xor32: "P4H_XOR32",
                  H.identity: "P4H_IDENTITY"}
        source = self.prog.source
        for name, obj in self.env.items():
            if not name.startswith("G_") or name not in source:
                continue
            if isinstance(obj, Table):
                self.globals[name] = ("table", len(self.tables))
                self.tables.append(obj)
                for a in obj.actions.values():
                    self.sid(a.name)
                    self.max_args = max(self.max_args, len(a.params))
                if len(obj.keys) > 60:
                    raise NativeUnsupported(f"table {obj.name} has more than 60 keys")
                for a in obj.actions.values():
                    for pname, w in a.params:
                        if w > MAX_WIDTH:
                            raise NativeUnsupported(f"action {a.name}: parameter {pname} is {w} bits wide")
                for k in obj.keys:
                    if k.width > 128:
                        raise NativeUnsupported(f"table {obj.name}: key {k.name} is {k.width} bits wide")
                if obj.direct_meter is not None or obj.direct_counter is not None:
                    pass
            elif isinstance(obj, RegisterArray):
                if obj.width > MAX_REGISTER_WIDTH:
                    raise NativeUnsupported(f"register {obj.name} is {obj.width} bits wide (the native path keeps registers up to {MAX_REGISTER_WIDTH} bits)")
                self.globals[name] = ("register", len(self.registers))
                self.registers.append(obj)
            elif isinstance(obj, CounterArray):
                self.globals[name] = ("counter", len(self.counters))
                self.counters.append(obj)
            elif isinstance(obj, MeterArray):
                self.globals[name] = ("meter", len(self.meters))
                self.meters.append(obj)
            elif isinstance(obj, ValueSet):
                if obj.width > MAX_WIDTH:
                    raise NativeUnsupported(f"value set {obj.name} is {obj.width} bits wide")
                self.globals[name] = ("valueset", len(self.value_sets))
                self.value_sets.append(obj)
            elif isinstance(obj, H.CustomCrc) or obj in static:
                self.globals[name] = ("hash", len(self.hashes))
                self.hashes.append(obj)
            else:
                raise NativeUnsupported(f"extern object {name} ({type(obj).__name__}) has no C implementation")

    # ------------------------------------------------------------------ functions
    def _scan_fn(self, node: ast.FunctionDef, parent: Optional[Fn]) -> Fn:
        if node.decorator_list or node.args.vararg or node.args.kwarg or node.args.kwonlyargs or node.args.defaults:
            raise NativeUnsupported(f"function {node.name}: decorators or special parameters")
        fn = Fn(node.name, node, parent, [a.arg for a in node.args.args])
        if node.name in self.fns:
            raise NativeUnsupported(f"function {node.name} defined twice")
        self.fns[node.name] = fn
        assigned: set[str] = set(fn.params)

        def visit(stmts: list[ast.stmt]) -> None:
            for s in stmts:
                if isinstance(s, ast.FunctionDef):
                    assigned.add(s.name)
                    fn.children.append(self._scan_fn(s, fn))
                    continue
                if isinstance(s, ast.Nonlocal):
                    fn.nonlocals.update(s.names)
                    continue
                if isinstance(s, (ast.If, ast.While)):
                    scan(s.test)
                    visit(s.body)
                    visit(s.orelse)
                elif isinstance(s, ast.Try):
                    visit(s.body)
                    for h in s.handlers:
                        if h.name:
                            assigned.add(h.name)
                        visit(h.body)
                    visit(s.orelse)
                    visit(s.finalbody)
                else:
                    scan(s)

        def scan(n: ast.AST) -> None:
            for sub in ast.walk(n):
                if isinstance(sub, (ast.FunctionDef, ast.Lambda, ast.ClassDef, ast.For, ast.With)):
                    raise NativeUnsupported(f"{type(sub).__name__} in a statement of {node.name}")
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    assigned.add(sub.id)
        visit(node.body)
        fn.locals = assigned - fn.nonlocals
        fn.ptypes = [None] * len(fn.params)
        return fn

    def _all_fns(self) -> Iterator[Fn]:
        def rec(f: Fn) -> Iterator[Fn]:
            yield f
            for c in f.children:
                yield from rec(c)
        for f in self.module_fns:
            yield from rec(f)

    def _seed_entry_points(self) -> None:
        hdr, meta, std = (self.prog.headers_type.pyclass, self.prog.metadata_type.pyclass,
                          self.prog.std_type.pyclass)
        for need in (hdr, meta, std):
            if need not in self.classes:
                raise NativeUnsupported(f"class {need} not found")
        self.entry: dict[str, tuple[str, list[str]]] = {}
        for block, inst in self.prog.blocks.items():
            fn = self.fns.get(inst.pyfunc)
            if fn is None:
                raise NativeUnsupported(f"block {block}: function {inst.pyfunc} not in the generated code")
            picks = []
            for t in inst.ptypes:
                st = strip_new(t)
                if getattr(st, "name", "").startswith("packet_") and not isinstance(st, StructLikeT):
                    continue
                if not isinstance(st, StructLikeT):
                    continue
                if st.name == self.prog.headers_type.name:
                    picks.append("hdr")
                elif st.name == self.prog.metadata_type.name:
                    picks.append("meta")
                elif st.name == self.prog.std_type.name:
                    picks.append("std")
                else:
                    raise NativeUnsupported(f"block {block}: parameter type {st.name}")
            if len(picks) != len(fn.params) - 1:
                raise NativeUnsupported(f"block {block}: {len(fn.params) - 1} parameters, {len(picks)} picked")
            cls = {"hdr": hdr, "meta": meta, "std": std}
            fn.ptypes = [CTX] + [Ref(cls[p]) for p in picks]
            fn.called = True
            self.entry[block] = (fn.name, picks)

    # ------------------------------------------------------------------ scoping
    def _owner(self, fn: Fn, name: str) -> Optional[Fn]:
        f: Optional[Fn] = fn
        while f is not None:
            if name in f.locals:
                return f
            f = f.parent
        return None

    def _vtypes(self, f: Fn) -> dict[str, Any]:
        d = getattr(f, "_vt", None)
        if d is None:
            d = {}
            f._vt = d  # type: ignore[attr-defined]
            for p, t in zip(f.params, f.ptypes):
                if t is not None:
                    d[p] = t
        return d

    def _set_var(self, fn: Fn, name: str, ty: Any) -> None:
        if ty is None:
            return
        owner = self._owner(fn, name)
        if owner is None:
            raise NativeUnsupported(f"{fn.name}: assignment to {name}, not a local")
        vt = self._vtypes(owner)
        old = vt.get(name)
        new = self._merge(old, ty, f"{owner.name}.{name}")
        if new != old:
            vt[name] = new
            self.changed = True

    def _merge(self, old: Any, new: Any, where: str) -> Any:
        if old is None or old == new:
            return new
        if new is None:
            return old
        if old == NONE:
            return new
        if new == NONE:
            return old
        if isinstance(old, Tup) and isinstance(new, Tup) and len(old.elems) == len(new.elems):
            return Tup(tuple(self._merge(a, b, where) for a, b in zip(old.elems, new.elems)))
        raise NativeUnsupported(f"{where} takes two types ({old}, {new})")

    def _var_type(self, fn: Fn, name: str) -> Any:
        owner = self._owner(fn, name)
        if owner is None:
            return None
        return self._vtypes(owner).get(name)

    # ------------------------------------------------------------------ inference
    def _infer_fn(self, fn: Fn) -> None:
        vt = self._vtypes(fn)
        for p, t in zip(fn.params, fn.ptypes):
            if t is not None and vt.get(p) != t:
                vt[p] = self._merge(vt.get(p), t, f"{fn.name}.{p}")
        self.cur = fn
        self.mode = "infer"
        self.handler = ["__out"]
        self._stmts(fn.node.body, fn)

    # ------------------------------------------------------------------ emission
    def _emit_all(self) -> list[str]:
        out: list[str] = []
        protos: list[str] = []
        bodies: list[str] = []
        for fn in self.module_fns:
            if not fn.called:
                continue
            protos.append(self._signature(fn, top=True) + ";")
        for fn in self.module_fns:
            if not fn.called:
                continue
            bodies.extend(self._emit_fn(fn, top=True))
        out.extend(protos)
        out.extend(bodies)
        out.extend(self._emit_blocks())
        return out

    def _ret_ctype(self, fn: Fn) -> Optional[str]:
        r = fn.ret
        if r in (None, "void", NONE):
            return None
        return self._ctype(r, value=True)

    def _ctype(self, t: Any, value: bool = False) -> str:
        """The C type of a value of type ``t`` (a pointer for structs unless ``value``),
        with a trailing space or star so that a name can follow."""
        if t in (INT, NONE, EXC, OPT):
            return "p4i "
        if t == STATE:
            return "int "
        if isinstance(t, Ref):
            return f"{t.cls} " if value else f"{t.cls} *"
        if isinstance(t, Stk):
            return f"{self._stack_ctype(t)} " if value else f"{self._stack_ctype(t)} *"
        if isinstance(t, Tup):
            return self._tuple_ctype(t) + " "
        if t == LOOKUP:
            return "p4res "
        raise NativeUnsupported(f"no C type for {t}")

    def _stack_ctype(self, t: Stk) -> str:
        key = (t.cls, t.size)
        if key not in self.stack_types:
            self.stack_types[key] = f"STK_{t.cls}_{t.size}"
        return self.stack_types[key]

    def _tuple_ctype(self, t: Tup) -> str:
        key = t.elems
        if key not in self.tuple_types:
            self.tuple_types[key] = f"TUP_{len(self.tuple_types)}"
        return self.tuple_types[key]

    def _signature(self, fn: Fn, top: bool) -> str:
        params = []
        for p, t in zip(fn.params, fn.ptypes):
            if t is None:
                raise NativeUnsupported(f"{fn.name}: type of parameter {p} unknown")
            if t == CTX:
                params.append("p4ctx *ctx")
            else:
                params.append(f"{self._ctype(t)}{p}")
        rt = self._ret_ctype(fn)
        if rt is not None:
            params.append(f"{rt}*__ret")
        qual = "static int " if top else "int "
        return f"{qual}{fn.name}({', '.join(params) or 'void'})"

    def _emit_fn(self, fn: Fn, top: bool) -> list[str]:
        lines: list[str] = [self._signature(fn, top) + " {"]
        vt = self._vtypes(fn)
        lines.append("    int __rc = 0; (void)__rc;")
        self.cur = fn
        self.mode = "emit"
        self.labels = 0
        self.temps: list[str] = []
        for name in sorted(fn.locals - set(fn.params)):
            if name in {c.name for c in fn.children}:
                continue
            t = vt.get(name)
            if t is None:
                continue   # assigned but never typed: unused
            ct = self._ctype(t)
            init = " = 0" if ct in ("p4i ", "int ") else (" = NULL" if ct.endswith("*") else "")
            if t == LOOKUP:
                lines.append(f"    p4res {name}; {name}.hit = 0;")
            elif isinstance(t, Tup):
                lines.append(f"    {ct}{name}; memset(&{name}, 0, sizeof {name});")
            else:
                lines.append(f"    {ct}{name}{init};")
        called_children = [c for c in fn.children if c.called]
        for c in called_children:
            lines.append("    auto " + self._signature(c, top=False)[0:] + ";")
        for c in called_children:
            saved = (self.cur, self.mode, self.labels, self.temps)
            lines.extend("    " + ln for ln in self._emit_fn(c, top=False))
            self.cur, self.mode, self.labels, self.temps = saved
        self.handler = ["__out"]
        body = self._stmts(fn.node.body, fn)
        lines.extend("    " + t for t in self.temps)
        lines.extend("    " + ln for ln in body)
        lines.append("  __out:")
        lines.append("    return __rc;")
        lines.append("}")
        return lines

    # ------------------------------------------------------------------ statements
    def _stmts(self, stmts: list[ast.stmt], fn: Fn) -> list[str]:
        out: list[str] = []
        for s in stmts:
            out.extend(self._stmt(s, fn))
        return out

    def _raise(self, code: str) -> str:
        return f"{{ __rc = {code}; goto {self.handler[-1]}; }}"

    def _check_rc(self, call: str) -> str:
        return f"{{ int __r = {call}; if (__r) {{ __rc = __r; goto {self.handler[-1]}; }} }}"

    def _stmt(self, s: ast.stmt, fn: Fn) -> list[str]:
        emit = self.mode == "emit"
        if isinstance(s, (ast.FunctionDef, ast.Nonlocal, ast.Pass)):
            return []
        if isinstance(s, ast.If):
            if _is_ctx_log(s.test):
                return []
            c, _ = self._expr(s.test, fn)
            body = self._stmts(s.body, fn)
            orelse = self._stmts(s.orelse, fn)
            if not emit:
                return []
            out = [f"if ({c}) {{"] + ["    " + x for x in body] + ["}"]
            if orelse:
                out[-1] = "} else {"
                out += ["    " + x for x in orelse] + ["}"]
            return out
        if isinstance(s, ast.While):
            if s.orelse:
                raise NativeUnsupported("while ... else")
            c, _ = self._expr(s.test, fn)
            body = self._stmts(s.body, fn)
            return [f"while ({c}) {{"] + ["    " + x for x in body] + ["}"] if emit else []
        if isinstance(s, ast.Break):
            return ["break;"]
        if isinstance(s, ast.Continue):
            return ["continue;"]
        if isinstance(s, ast.Return):
            return self._return(s, fn)
        if isinstance(s, ast.Raise):
            return self._raise_stmt(s, fn)
        if isinstance(s, ast.Try):
            return self._try(s, fn)
        if isinstance(s, ast.Expr):
            return self._expr_stmt(s.value, fn)
        if isinstance(s, ast.Assign):
            return self._assign(s, fn)
        if isinstance(s, ast.AugAssign):
            return self._augassign(s, fn)
        raise NativeUnsupported(f"statement {type(s).__name__} in {fn.name}")

    def _return(self, s: ast.Return, fn: Fn) -> list[str]:
        emit = self.mode == "emit"
        if s.value is None or (isinstance(s.value, ast.Constant) and s.value.value is None
                                and not fn.name.startswith("st_")):
            self._set_ret(fn, "void")
            return ["goto __out;"] if emit else []
        if fn.name.startswith("st_"):
            v = s.value
            if isinstance(v, ast.Constant) and v.value is None:
                sid = "0"
            elif _is_name(v, "_REJECT"):
                sid = "-1"
            elif isinstance(v, ast.Name) and v.id in self.fns and v.id.startswith("st_"):
                target = self.fns[v.id]
                target.called = True
                sid = str(self._state_id(target))
            else:
                raise NativeUnsupported(f"{fn.name}: return of {ast.dump(v)[:60]}")
            self._set_ret(fn, STATE)
            return [f"*__ret = {sid}; goto __out;"] if emit else []
        c, t = self._expr(s.value, fn)
        if t is None and self.mode != "emit":
            return []
        if isinstance(t, Ref):
            t2 = t
            self._set_ret(fn, t2)
            return [f"*__ret = *({c}); goto __out;"] if emit else []
        if isinstance(t, Tup):
            self._set_ret(fn, t)
            return [f"*__ret = {c}; goto __out;"] if emit else []
        if t in (INT, NONE):
            self._set_ret(fn, INT)
            return [f"*__ret = {c}; goto __out;"] if emit else []
        raise NativeUnsupported(f"{fn.name}: return of type {t}")

    def _set_ret(self, fn: Fn, t: Any) -> None:
        if t == NONE:
            t = "void"
        if fn.ret is None or fn.ret == t:
            new = t
        elif "void" in (fn.ret, t):
            raise NativeUnsupported(f"{fn.name} returns both nothing and a value")
        else:
            new = self._merge(fn.ret, t, f"return of {fn.name}")
        if new != fn.ret:
            fn.ret = new
            self.changed = True

    def _state_id(self, fn: Fn) -> int:
        if not fn.state_id:
            sibs = fn.parent.children if fn.parent else []
            fn.state_id = 1 + [c.name for c in sibs].index(fn.name)
        return fn.state_id

    def _raise_stmt(self, s: ast.Raise, fn: Fn) -> list[str]:
        exc = s.exc
        if exc is None:
            return [self._raise("P4N_EXIT")]
        if isinstance(exc, ast.Name):            # raise _x_22 (a caught exit)
            return [self._raise("P4N_EXIT")]
        if isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name):
            name = exc.func.id
            if name == "_ExitSignal" and not exc.args:
                return [self._raise("P4N_EXIT")]
            if name == "_ParserErrorSignal" and len(exc.args) == 1:
                c, _ = self._expr(exc.args[0], fn)
                return [f"{{ ctx->perr = (int)({c}); __rc = P4N_PERR; goto {self.handler[-1]}; }}"] if self.mode == "emit" else []
            if name == "_AssertionFailed" and len(exc.args) == 1 and isinstance(exc.args[0], ast.Constant):
                sid = self.sid(str(exc.args[0].value))
                return [f"{{ ctx->err_arg = {sid}; __rc = P4N_ASSERT; goto {self.handler[-1]}; }}"]
        raise NativeUnsupported(f"{fn.name}: raise {ast.dump(exc)[:80]}")

    def _try(self, s: ast.Try, fn: Fn) -> list[str]:
        if s.orelse or s.finalbody or len(s.handlers) != 1:
            raise NativeUnsupported(f"{fn.name}: try with else/finally/several handlers")
        h = s.handlers[0]
        if not _is_name(h.type, "_ExitSignal"):
            raise NativeUnsupported(f"{fn.name}: except {ast.dump(h.type)[:40]}")
        self.labels += 1
        lh, lend = f"__h{self.labels}_{fn.name}", f"__e{self.labels}_{fn.name}"
        outer = self.handler[-1]
        self.handler.append(lh)
        body = self._stmts(s.body, fn)
        self.handler.pop()
        if h.name:
            self._set_var(fn, h.name, EXC)
        hbody = self._stmts(h.body, fn)
        if self.mode != "emit":
            return []
        return (["{"] + ["    " + x for x in body] + ["}", f"goto {lend};", f"{lh}:",
                f"if (__rc != P4N_EXIT) goto {outer};", "__rc = 0;"]
                + ([f"{h.name} = 1;"] if h.name else [])
                + ["{"] + ["    " + x for x in hbody] + ["}", f"{lend}: ;"])

    # ------------------------------------------------------------------ assignments
    def _assign(self, s: ast.Assign, fn: Fn) -> list[str]:
        if len(s.targets) != 1:
            raise NativeUnsupported(f"{fn.name}: chained assignment")
        tgt = s.targets[0]
        emit = self.mode == "emit"
        # _c_21, _x_22 = _xs.outs, _xs   (after a callee's exit: its outs are in _c_21)
        if isinstance(tgt, ast.Tuple):
            if (isinstance(s.value, ast.Tuple) and len(tgt.elts) == 2 and len(s.value.elts) == 2
                    and isinstance(s.value.elts[0], ast.Attribute) and s.value.elts[0].attr == "outs"
                    and isinstance(s.value.elts[1], ast.Name)):
                x = tgt.elts[1]
                assert isinstance(x, ast.Name)
                self._set_var(fn, x.id, EXC)
                return [f"{x.id} = 1;"] if emit else []
            raise NativeUnsupported(f"{fn.name}: tuple assignment")
        # _xs.outs = (...): the outs of an exit are what the caller's result holds
        if isinstance(tgt, ast.Attribute) and tgt.attr == "outs":
            c, t = self._expr(s.value, fn)
            self._set_ret(fn, t)
            return [f"*__ret = {c};"] if emit else []
        # ctx.<side effect>
        chain = _attr_chain(tgt)
        if chain and chain[0] == "ctx" and len(chain) == 2:
            return self._ctx_assign(chain[1], s.value, fn)
        if isinstance(tgt, ast.Subscript) and _attr_chain(tgt.value) == ["ctx", "dmeter"]:
            k = tgt.slice
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                raise NativeUnsupported("ctx.dmeter with a computed key")
            idx = self.direct_meters.setdefault(k.value, len(self.direct_meters))
            c, _ = self._expr(s.value, fn)
            return [f"ctx->dmeter[{idx}] = {c};"] if emit else []
        if (isinstance(tgt, ast.Name) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name)
                and s.value.func.id in self.fns and not s.value.func.id.startswith("st_")):
            c, t = self._user_call(self.fns[s.value.func.id], s.value, fn, into=tgt.id)
            if isinstance(t, tuple) and t[0] == "into":
                self._set_var(fn, tgt.id, t[1])
                return [f"(void){c};"] if emit else []
        else:
            c, t = self._expr(s.value, fn)
        if isinstance(tgt, ast.Name):
            if isinstance(t, (Ref, Stk)):
                self._set_var(fn, tgt.id, t)
                return [f"{tgt.id} = {c};"] if emit else []
            if t == STATE:
                self._set_var(fn, tgt.id, STATE)
                return [f"{tgt.id} = {c};"] if emit else []
            if t == NONE:
                self._set_var(fn, tgt.id, NONE)
                if not emit:
                    return []
                vt = self._var_type(fn, tgt.id)
                if isinstance(vt, (Tup,)) or vt == LOOKUP:
                    return [f"memset(&{tgt.id}, 0, sizeof {tgt.id});"]
                if isinstance(vt, (Ref, Stk)):
                    return [f"{tgt.id} = NULL;"]
                return [f"{tgt.id} = 0;"]
            if t is None:
                return []
            self._set_var(fn, tgt.id, t)
            return [f"{tgt.id} = {c};"] if emit else []
        lc, lt = self._expr(tgt, fn, store=True)
        if lt is None or t is None:
            return []
        if isinstance(lt, Wide):
            return [self._wide_assign(lc, lt, c, t, s.value)] if emit else []
        if isinstance(lt, Ref):
            if not isinstance(t, Ref) or t.cls != lt.cls:
                raise NativeUnsupported(f"{fn.name}: assigning {t} to a {lt} field")
            return [f"*({lc}) = *({c});"] if emit else []
        if lt != INT:
            raise NativeUnsupported(f"{fn.name}: assignment to {lt}")
        if t not in (INT, NONE):
            raise NativeUnsupported(f"{fn.name}: assigning {t} to a scalar")
        return [f"{lc} = {c};"] if emit else []

    def _wide_words(self, value: int, w: Wide) -> list[int]:
        if value < 0 or value >> w.width:
            raise NativeUnsupported(f"constant {value:#x} does not fit {w.width} bits")
        return [(value >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(w.words)]

    def _wide_assign(self, lc: str, lt: Wide, c: str, t: Any, node: ast.expr) -> str:
        if isinstance(t, Wide) and t.width == lt.width:
            return f"memcpy({lc}, {c}, sizeof(uint64_t) * {lt.words});"
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            words = self._wide_words(node.value, lt)
            return "{ " + " ".join(f"({lc})[{i}] = {v}ULL;" for i, v in enumerate(words)) + " }"
        raise NativeUnsupported(f"a {lt.width}-bit value computed from {t} (the native path only moves such values)")

    def _ctx_assign(self, attr: str, value: ast.expr, fn: Fn) -> list[str]:
        emit = self.mode == "emit"
        if attr == "clone":
            if not (isinstance(value, ast.Call) and _is_name(value.func, "_CloneRequest") and len(value.args) == 3):
                raise NativeUnsupported("ctx.clone = something else than _CloneRequest(...)")
            sess, _ = self._expr(value.args[1], fn)
            fl = value.args[2]
            if isinstance(fl, ast.Constant) and fl.value is None:
                flc = "ctx->clone_fl_set = 0;"
            else:
                fc, _ = self._expr(fl, fn)
                flc = f"ctx->clone_fl_set = 1; ctx->clone_fl = {fc};"
            return [f"{{ ctx->clone_set = 1; ctx->clone_session = {sess}; {flc} }}"] if emit else []
        if attr in ("recirculate", "resubmit", "truncate_bytes"):
            c, t = self._expr(value, fn)
            short = {"recirculate": "recirc", "resubmit": "resubmit", "truncate_bytes": "trunc"}[attr]
            if t == NONE:
                return [f"ctx->{short}_set = 0;"] if emit else []
            return [f"{{ p4i __v = {c}; ctx->{short} = __v; ctx->{short}_set = 1; }}"] if emit else []
        if attr == "packet_length_delta":
            c, _ = self._expr(value, fn)
            return [f"ctx->length_delta = {c};"] if emit else []
        raise NativeUnsupported(f"{fn.name}: ctx.{attr} = ...")

    def _augassign(self, s: ast.AugAssign, fn: Fn) -> list[str]:
        if not isinstance(s.op, (ast.Add, ast.Sub)):
            raise NativeUnsupported(f"{fn.name}: augmented assignment {type(s.op).__name__}")
        op = "+=" if isinstance(s.op, ast.Add) else "-="
        chain = _attr_chain(s.target)
        c, _ = self._expr(s.value, fn)
        if chain == ["ctx", "packet_length_delta"]:
            return [f"ctx->length_delta {op} {c};"] if self.mode == "emit" else []
        lc, lt = self._expr(s.target, fn, store=True)
        if lt != INT:
            raise NativeUnsupported(f"{fn.name}: augmented assignment to {lt}")
        if isinstance(s.target, ast.Name):
            self._set_var(fn, s.target.id, INT)
        return [f"{lc} {op} {c};"] if self.mode == "emit" else []

    # ------------------------------------------------------------------ expression statements
    def _expr_stmt(self, e: ast.expr, fn: Fn) -> list[str]:
        emit = self.mode == "emit"
        if isinstance(e, ast.Constant):
            return []
        if isinstance(e, ast.Call):
            f = e.func
            if _is_ctx_log(f):
                return []
            chain = _attr_chain(f)
            if chain == ["ctx", "digests", "append"]:
                return self._digest(e, fn)
            if isinstance(f, ast.Attribute) and f.attr in ("push_front", "pop_front"):
                sc, st = self._expr(f.value, fn)
                if not isinstance(st, Stk):
                    raise NativeUnsupported(f"{f.attr} of {st}")
                n, _ = self._expr(e.args[0], fn)
                return [f"{self._stack_ctype(st)}_{f.attr}({sc}, {n});"] if emit else []
            if isinstance(f, ast.Attribute) and f.attr == "_only":
                uc, ut = self._expr(f.value, fn)
                kc, kt = self._expr(e.args[0], fn)
                if not isinstance(ut, Ref):
                    raise NativeUnsupported("_only of a non-union")
                ci = self.classes[ut.cls]
                if not emit:
                    return []
                return [f"{{ {ut.cls} *__u = {uc}; void *__k = (void *)({kc}); "
                        + " ".join(f"if ((void *)&__u->{m} != __k) __u->{m}._valid = 0;" for _, m, _t, _p in ci.fields)
                        + " }"]
        c, t = self._expr(e, fn, stmt=True)
        return [f"(void)({c});"] if emit and c else []

    def _digest(self, e: ast.Call, fn: Fn) -> list[str]:
        arg = e.args[0]
        if not (isinstance(arg, ast.Tuple) and len(arg.elts) == 3 and isinstance(arg.elts[0], ast.Constant)):
            raise NativeUnsupported("digest of an unexpected shape")
        name = str(arg.elts[0].value)
        dv = arg.elts[2]
        if not (isinstance(dv, ast.Call) and _is_name(dv.func, "_digest_values") and len(dv.args) == 1):
            raise NativeUnsupported("digest values of an unexpected shape")
        val = dv.args[0]
        vals: list[str] = []
        if (isinstance(val, ast.Call) and isinstance(val.func, ast.Attribute) and val.func.attr == "_from"
                and isinstance(val.args[0], ast.Tuple)):
            cls = val.func.value.id if isinstance(val.func.value, ast.Name) else ""
            ci = self.classes.get(cls)
            if ci is None:
                raise NativeUnsupported(f"digest of class {cls}")
            for (attr, _m, ft, _pt), x in zip(ci.fields, val.args[0].elts):
                if ft != INT:
                    raise NativeUnsupported(f"digest {name}: field {attr} is not a scalar")
                c, t = self._expr(x, fn)
                vals.append(c)
        else:
            c, t = self._expr(val, fn)
            if not isinstance(t, Ref):
                raise NativeUnsupported(f"digest {name} of {t}")
            for attr, m, ft, _pt in self.classes[t.cls].fields:
                if ft != INT:
                    raise NativeUnsupported(f"digest {name}: field {attr} is not a scalar")
                vals.append(f"({c})->{m}")
        if len(vals) > 64:
            raise NativeUnsupported(f"digest {name} has more than 64 fields")
        sid = self.sid(name)
        if self.mode != "emit":
            return []
        body = " ".join(f"ctx->digest_vals[{i}] = {v};" for i, v in enumerate(vals))
        return [f"{{ {body} ctx->digest_set = 1; ctx->digest_name = {sid}; ctx->digest_n = {len(vals)}; }}"]

    # ------------------------------------------------------------------ expressions
    def _tmp(self, ctype: str) -> str:
        self.tmp_counter += 1
        name = f"__t{self.tmp_counter}"
        if self.mode == "emit":
            self.temps.append(f"{ctype} {name};")
        return name

    def _expr(self, e: ast.expr, fn: Fn, store: bool = False, stmt: bool = False) -> tuple[str, Any]:
        if isinstance(e, ast.Constant):
            v = e.value
            if v is None:
                return "0", NONE
            if isinstance(v, bool):
                return ("1" if v else "0"), INT
            if isinstance(v, int):
                return _cint(v), INT
            if isinstance(v, str):
                return f"((p4i){self.sid(v)})", INT
            raise NativeUnsupported(f"constant {v!r}")
        if isinstance(e, ast.Name):
            return self._name(e.id, fn)
        if isinstance(e, ast.Attribute):
            return self._attribute(e, fn)
        if isinstance(e, ast.Subscript):
            return self._subscript(e, fn)
        if isinstance(e, ast.BinOp):
            return self._binop(e, fn)
        if isinstance(e, ast.UnaryOp):
            c, t = self._expr(e.operand, fn)
            if isinstance(e.op, ast.Not):
                return f"(!({c}))", INT
            if isinstance(e.op, ast.USub):
                return f"(-({c}))", INT
            if isinstance(e.op, ast.Invert):
                return f"(~({c}))", INT
            if isinstance(e.op, ast.UAdd):
                return c, INT
        if isinstance(e, ast.BoolOp):
            # (ctx.dmeter.get(K) or 0)
            if isinstance(e.op, ast.Or) and len(e.values) == 2 and isinstance(e.values[1], ast.Constant) \
                    and e.values[1].value == 0:
                c, t = self._expr(e.values[0], fn)
                if t == OPT:
                    return f"({{ p4i __o = {c}; __o < 0 ? 0 : __o; }})", INT
            op = " && " if isinstance(e.op, ast.And) else " || "
            parts = [self._expr(v, fn) for v in e.values]
            if self.mode != "emit" and any(t is None for _, t in parts):
                return "0", None
            for c, t in parts:
                if t not in (INT,):
                    raise NativeUnsupported(f"{fn.name}: boolean operator on {t}")
            return "(" + op.join(f"({c} != 0)" for c, _ in parts) + ")", INT
        if isinstance(e, ast.Compare):
            return self._compare(e, fn)
        if isinstance(e, ast.IfExp):
            c, _ = self._expr(e.test, fn)
            a, ta = self._expr(e.body, fn)
            b, tb = self._expr(e.orelse, fn)
            t = self._merge(ta, tb, f"{fn.name}: conditional expression")
            if isinstance(t, Ref) and (ta == NONE or tb == NONE):
                raise NativeUnsupported("conditional of a struct and None")
            return f"(({c}) ? ({a}) : ({b}))", t
        if isinstance(e, ast.Call):
            return self._call(e, fn, stmt)
        if isinstance(e, ast.Tuple):
            parts = [self._expr(x, fn) for x in e.elts]
            t = Tup(tuple(INT if pt == NONE else pt for _, pt in parts))
            if any(pt is None for _, pt in parts):
                return "", None
            if self.mode != "emit":
                self._tuple_ctype(t)
                return "", t
            ct = self._tuple_ctype(t)
            inits = ", ".join(f".e{i} = {c if pt != NONE else '0'}" for i, (c, pt) in enumerate(parts))
            return f"(({ct}){{ {inits} }})", t
        raise NativeUnsupported(f"{fn.name}: expression {type(e).__name__}")

    def _name(self, name: str, fn: Fn) -> tuple[str, Any]:
        if name == "ctx":
            return "ctx", CTX
        if name == "_REJECT":
            return "-1", STATE
        if name.startswith("_ERR_"):
            code = self.prog.error_codes.get(name[5:])
            if code is None:
                raise NativeUnsupported(f"unknown error {name}")
            return _cint(code), INT
        owner = self._owner(fn, name)
        if owner is not None and name not in {c.name for c in owner.children}:
            return name, self._vtypes(owner).get(name)
        if name in self.fns:
            f = self.fns[name]
            if name.startswith("st_"):
                f.called = True
                return str(self._state_id(f)), STATE
            return name, ("fn", name)
        if name in self.classes:
            return name, ("class", name)
        if name in self.globals:
            return name, ("global",) + self.globals[name]
        raise NativeUnsupported(f"{fn.name}: unknown name {name}")

    def _attribute(self, e: ast.Attribute, fn: Fn) -> tuple[str, Any]:
        base, bt = self._expr(e.value, fn)
        a = e.attr
        if bt == CTX:
            if a == "std":
                return f"(({self.prog.std_type.pyclass} *)ctx->std)", Ref(self.prog.std_type.pyclass)
            if a == "now_us":
                return "ctx->now_us", INT
            if a == "packet_length_delta":
                return "ctx->length_delta", INT
            if a in ("truncate_bytes", "recirculate", "resubmit"):
                short = {"recirculate": "recirc", "resubmit": "resubmit", "truncate_bytes": "trunc"}[a]
                return f"(ctx->{short}_set ? ctx->{short} : (p4i)-1)", OPT
            raise NativeUnsupported(f"ctx.{a}")
        if isinstance(bt, Ref):
            ci = self.classes[bt.cls]
            if a == "_valid":
                if ci.kind == "header":
                    return f"({base})->_valid", INT
                if ci.kind == "header_union":
                    return f"U_valid_{bt.cls}({base})", INT
                raise NativeUnsupported(f"_valid of struct {bt.cls}")
            m, ft, _pt = ci.field(a)
            if ft == INT:
                return f"({base})->{m}", INT
            if isinstance(ft, Wide):
                return f"(({base})->{m})", ft
            return f"(&({base})->{m})", ft
        if isinstance(bt, Stk):
            if a == "nextIndex":
                return f"({base})->nextIndex", INT
            if a == "size":
                return str(bt.size), INT
            if a == "h":
                return base, ("stack_h", bt)
        if isinstance(bt, tuple) and bt[0] == "global" and bt[1] == "table" and a == "last_meter_color":
            return f"((p4i)ctx->sw->tables[{bt[2]}].last_color)", OPT
        if isinstance(bt, tuple) and bt[0] == "class":
            return f"{bt[1]}.{a}", ("classattr", bt[1], a)
        if isinstance(bt, tuple):
            return f"{base}.{a}", ("method", bt, a, base)
        if isinstance(bt, (Ref, Stk)) or bt in (INT,):
            pass
        return f"{base}.{a}", ("method", bt, a, base)

    def _subscript(self, e: ast.Subscript, fn: Fn) -> tuple[str, Any]:
        base, bt = self._expr(e.value, fn)
        if bt is None and self.mode != "emit":
            return "0", None
        if not isinstance(e.slice, ast.Constant) or not isinstance(e.slice.value, int):
            # stack.h[i] with a computed index never appears (codegen uses _stack_at)
            raise NativeUnsupported(f"{fn.name}: subscript with a computed index")
        i = e.slice.value
        if bt == LOOKUP:
            if i == 0:
                return f"(p4i)({base}).hit", INT
            if i == 2:
                return f"(p4i)({base}).act", INT
            if i == 3:
                return base, ARGS
            raise NativeUnsupported("lookup result element")
        if bt == ARGS:
            if i >= self.max_args:
                raise NativeUnsupported("action argument index")
            return f"({base}).args[{i}]", INT
        if isinstance(bt, Tup):
            if i >= len(bt.elems):
                raise NativeUnsupported("tuple index out of range")
            return f"({base}).e{i}", bt.elems[i]
        if isinstance(bt, tuple) and bt[0] == "stack_h":
            st = bt[1]
            if not 0 <= i < st.size:
                raise NativeUnsupported("stack index out of range")
            return f"(&({base})->h[{i}])", Ref(st.cls)
        raise NativeUnsupported(f"{fn.name}: subscript of {bt}")

    def _binop(self, e: ast.BinOp, fn: Fn) -> tuple[str, Any]:
        a, ta = self._expr(e.left, fn)
        b, tb = self._expr(e.right, fn)
        if ta != INT or tb != INT:
            if ta is None or tb is None:
                return "0", INT
            raise NativeUnsupported(f"{fn.name}: {type(e.op).__name__} of {ta} and {tb}")
        op = e.op
        simple = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
        for k, v in simple.items():
            if isinstance(op, k):
                return f"({a} {v} {b})", INT
        if isinstance(op, ast.LShift):
            return f"p4_shl_raw({a}, {b})", INT
        if isinstance(op, ast.RShift):
            return f"p4_shr_raw({a}, {b})", INT
        if isinstance(op, ast.FloorDiv):
            return f"p4_floordiv({a}, {b})", INT
        if isinstance(op, ast.Mod):
            return f"p4_pymod({a}, {b})", INT
        raise NativeUnsupported(f"{fn.name}: operator {type(op).__name__}")

    def _compare(self, e: ast.Compare, fn: Fn) -> tuple[str, Any]:
        parts = []
        left = e.left
        lc, lt = self._expr(left, fn)
        for op, right in zip(e.ops, e.comparators):
            rc, rt = self._expr(right, fn)
            if isinstance(op, (ast.Is, ast.IsNot)):
                neg = isinstance(op, ast.IsNot)
                if rt == NONE:
                    if lt == OPT:
                        cond = f"({lc} < 0)"
                    elif lt in (STATE, EXC, INT, NONE):
                        cond = f"({lc} == 0)"
                    else:
                        raise NativeUnsupported(f"{fn.name}: 'is None' of {lt}")
                elif rt == STATE and lt == STATE:
                    cond = f"({lc} == {rc})"
                else:
                    raise NativeUnsupported(f"{fn.name}: 'is' between {lt} and {rt}")
                parts.append(f"(!{cond})" if neg else cond)
            else:
                ops = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
                sym = next((v for k, v in ops.items() if isinstance(op, k)), None)
                if sym is None:
                    raise NativeUnsupported(f"{fn.name}: comparison {type(op).__name__}")
                if (isinstance(lt, Wide) or isinstance(rt, Wide)) and sym in ("==", "!="):
                    parts.append(self._wide_compare(lc, lt, left, rc, rt, right, sym))
                elif lt not in (INT, NONE) or rt not in (INT, NONE):
                    if lt is None or rt is None:
                        parts.append("0")
                    else:
                        raise NativeUnsupported(f"{fn.name}: comparison of {lt} and {rt}")
                else:
                    parts.append(f"({lc} {sym} {rc})")
            lc, lt, left = rc, rt, right
        return "(" + " && ".join(parts) + ")", INT

    def _wide_compare(self, lc: str, lt: Any, ln: ast.expr, rc: str, rt: Any, rn: ast.expr, sym: str) -> str:
        if isinstance(lt, Wide) and isinstance(rt, Wide) and lt.width == rt.width:
            eq = f"(!memcmp({lc}, {rc}, sizeof(uint64_t) * {lt.words}))"
        else:
            w, c, other = (lt, lc, rn) if isinstance(lt, Wide) else (rt, rc, ln)
            if not (isinstance(other, ast.Constant) and isinstance(other.value, int)):
                raise NativeUnsupported(f"comparison of a {w.width}-bit value with a computed one")
            words = self._wide_words(other.value, w)
            eq = "(" + " && ".join(f"({c})[{i}] == {v}ULL" for i, v in enumerate(words)) + ")"
        return eq if sym == "==" else f"(!{eq})"

    # ------------------------------------------------------------------ calls
    def _call(self, e: ast.Call, fn: Fn, stmt: bool) -> tuple[str, Any]:
        emit = self.mode == "emit"
        f = e.func
        if e.keywords:
            raise NativeUnsupported(f"{fn.name}: keyword arguments")
        if isinstance(f, ast.Name):
            n = f.id
            if n in ("int",) and len(e.args) == 1:
                return self._expr(e.args[0], fn)
            if n == "bool" and len(e.args) == 1:
                c, _ = self._expr(e.args[0], fn)
                return f"(({c}) != 0)", INT
            if n == "min" and len(e.args) == 2:
                a, _ = self._expr(e.args[0], fn)
                b, _ = self._expr(e.args[1], fn)
                return f"p4_min({a}, {b})", INT
            helpers2 = {"_to_signed": "p4_to_signed"}
            helpers3 = {"_shl": "p4_shl", "_shl_signed": "p4_shl_signed", "_shr": "p4_shr",
                        "_sat_add_u": "p4_sat_add_u", "_sat_add_s": "p4_sat_add_s",
                        "_sat_sub_u": "p4_sat_sub_u", "_sat_sub_s": "p4_sat_sub_s"}
            if n in helpers2 or n in helpers3:
                args = [self._expr(x, fn)[0] for x in e.args]
                cname = helpers2.get(n) or helpers3[n]
                last = e.args[-1]
                if not isinstance(last, ast.Constant):
                    raise NativeUnsupported(f"{n} with a computed width")
                args[-1] = str(int(last.value))
                return f"{cname}({', '.join(args)})", INT
            if n in ("_div_u", "_mod_u"):
                a, _ = self._expr(e.args[0], fn)
                b, _ = self._expr(e.args[1], fn)
                return f"p4{n}({a}, {b})", INT
            if n == "_random":
                a, _ = self._expr(e.args[0], fn)
                b, _ = self._expr(e.args[1], fn)
                return f"p4mt_randint(&ctx->sw->rng, {a}, {b})", INT
            if n in ("_stack_next", "_stack_last"):
                sc, st = self._expr(e.args[0], fn)
                if not isinstance(st, Stk):
                    raise NativeUnsupported(f"{n} of {st}")
                err = self.prog.error_codes["StackOutOfBounds"]
                if n == "_stack_next":
                    cond, idx = f"__s->nextIndex >= {st.size}", "__s->nextIndex"
                else:
                    cond, idx = f"__s->nextIndex == 0 || __s->nextIndex > {st.size}", "__s->nextIndex - 1"
                code = (f"({{ {self._stack_ctype(st)} *__s = {sc}; if ({cond}) {{ ctx->perr = {err}; "
                        f"__rc = P4N_PERR; goto {self.handler[-1] }; }} &__s->h[(int)({idx})]; }})")
                return code, Ref(st.cls)
            if n == "_stack_at":
                sc, st = self._expr(e.args[0], fn)
                ic, _ = self._expr(e.args[1], fn)
                if not isinstance(st, Stk):
                    raise NativeUnsupported(f"_stack_at of {st}")
                scratch = self._tmp(st.cls)
                return (f"({{ {self._stack_ctype(st)} *__s = {sc}; p4i __i = {ic}; (__i >= 0 && __i < {st.size}) "
                        f"? &__s->h[(int)__i] : (init_{st.cls}(&{scratch}), &{scratch}); }})"), Ref(st.cls)
            if n == "_lookahead":
                w = e.args[1]
                if not isinstance(w, ast.Constant) or w.value > MAX_WIDTH:
                    raise NativeUnsupported("lookahead wider than the native path's values")
                err = self.prog.error_codes["PacketTooShort"]
                return (f"({{ if (ctx->offset_bits + {w.value} > ctx->len * 8) {{ ctx->perr = {err}; __rc = P4N_PERR; "
                        f"goto {self.handler[-1] }; }} p4_read_bits(ctx->data, ctx->offset_bits, {w.value}); }})"), INT
            if n == "_lookahead_value":
                cls = e.args[1].id if isinstance(e.args[1], ast.Name) else ""
                if cls not in self.classes:
                    raise NativeUnsupported("lookahead of an unknown class")
                width = lookahead_width(self.classes[cls].t)
                if width is None:
                    raise NativeUnsupported("lookahead of a type without a width")
                err = self.prog.error_codes["PacketTooShort"]
                tmp = self._tmp(cls)
                return (f"({{ if (ctx->offset_bits + {width} > ctx->len * 8) {{ ctx->perr = {err}; __rc = P4N_PERR; "
                        f"goto {self.handler[-1] }; }} init_{cls}(&{tmp}); lookahead_{cls}(ctx, &{tmp}, ctx->offset_bits); &{tmp}; }})"), Ref(cls)
            if n == "_advance":
                c, _ = self._expr(e.args[1], fn)
                err = self.prog.error_codes["PacketTooShort"]
                return (f"({{ p4i __n = {c}; if (ctx->offset_bits + __n > ctx->len * 8) {{ ctx->perr = {err}; __rc = P4N_PERR; "
                        f"goto {self.handler[-1] }; }} ctx->offset_bits += (int64_t)__n; 0; }})"), INT
            if n in ("_compute_hash", "_hash_bytes"):
                return self._hash_call(e, fn, n)
            if n in self.classes:
                if e.args:
                    raise NativeUnsupported("class call with arguments")
                tmp = self._tmp(n)
                return f"(init_{n}(&{tmp}), &{tmp})", Ref(n)
            if n in self.fns:
                return self._user_call(self.fns[n], e, fn)
            if self._owner(fn, n) is not None and self._var_type(fn, n) == STATE:
                return self._state_dispatch(n, fn)
            raise NativeUnsupported(f"{fn.name}: call of {n}")
        if isinstance(f, ast.Attribute):
            return self._method_call(e, f, fn)
        raise NativeUnsupported(f"{fn.name}: call of {type(f).__name__}")

    def _state_dispatch(self, var: str, fn: Fn) -> tuple[str, Any]:
        # `_st = _st()`: run the state function whose id _st holds
        owner = self._owner(fn, var)
        states = [c for c in (owner.children if owner else []) if c.name.startswith("st_")]
        for s in states:
            s.called = True
            s.ptypes = []
            self._state_id(s)
        cases = " ".join(f"case {s.state_id}: __r = {s.name}(&__n); break;" for s in states)
        emit = self.mode == "emit"
        return (f"({{ int __n = 0, __r = 0; switch ({var}) {{ {cases} default: break; }} "
                f"if (__r) {{ __rc = __r; goto {self.handler[-1] }; }} __n; }})"), STATE

    def _user_call(self, callee: Fn, e: ast.Call, fn: Fn, into: Optional[str] = None) -> tuple[str, Any]:
        """A call of a generated function; ``into``: the local its result goes to (the
        callee writes its return value, or the outs of an exit, straight there)."""
        if len(e.args) != len(callee.params):
            raise NativeUnsupported(f"{fn.name}: call of {callee.name} with {len(e.args)} arguments")
        if not callee.called:
            callee.called = True
            self.changed = True
        args = []
        for i, a in enumerate(e.args):
            c, t = self._expr(a, fn)
            if t is None:
                return "0", None
            if t == NONE:
                t = INT
            old = callee.ptypes[i]
            new = self._merge(old, t, f"parameter {callee.params[i]} of {callee.name}")
            if new != old:
                callee.ptypes[i] = new
                self.changed = True
            args.append(c)
        r = callee.ret
        emit = self.mode == "emit"
        h = self.handler[-1]
        if into is not None and isinstance(r, Tup):
            call = f"{callee.name}({', '.join(args + ['&' + into])})"
            return f"({{ int __r = {call}; if (__r) {{ __rc = __r; goto {h}; }} 0; }})", ("into", r)
        if r in (None, "void", NONE):
            if r is None and self.mode != "emit":
                return "0", None
            call = f"{callee.name}({', '.join(args)})"
            return f"({{ int __r = {call}; if (__r) {{ __rc = __r; goto {h}; }} 0; }})", INT
        rct = self._ctype(r, value=True)
        if isinstance(r, Ref):
            tmp = self._tmp(r.cls)
            call = f"{callee.name}({', '.join(args + ['&' + tmp])})"
            return f"({{ int __r = {call}; if (__r) {{ __rc = __r; goto {h}; }} &{tmp}; }})", r
        call = f"{callee.name}({', '.join(args + ['&__v'])})"
        return f"({{ {rct}__v; int __r = {call}; if (__r) {{ __rc = __r; goto {h}; }} __v; }})", r

    def _method_call(self, e: ast.Call, f: ast.Attribute, fn: Fn) -> tuple[str, Any]:
        a = f.attr
        emit = self.mode == "emit"
        h = self.handler[-1]
        if _is_ctx_log(f):
            return "0", INT
        chain = _attr_chain(f)
        if chain == ["ctx", "payload"]:
            raise NativeUnsupported("ctx.payload() outside a checksum")
        if chain == ["ctx", "dmeter", "get"]:
            k = e.args[0]
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                raise NativeUnsupported("ctx.dmeter with a computed key")
            idx = self.direct_meters.setdefault(k.value, len(self.direct_meters))
            return f"ctx->dmeter[{idx}]", OPT
        base, bt = self._expr(f.value, fn)
        args = [self._expr(x, fn) for x in e.args]
        if isinstance(bt, tuple) and bt[0] == "class":
            cls = bt[1]
            if a == "_from":
                if len(e.args) != 1 or not isinstance(e.args[0], ast.Tuple):
                    raise NativeUnsupported("_from of a non-tuple")
                ci = self.classes[cls]
                tmp = self._tmp(cls)
                parts = [f"init_{cls}(&{tmp});"]
                if ci.kind == "header":
                    parts.append(f"{tmp}._valid = 1;")
                for (attr, m, ft, _pt), x in zip(ci.fields, e.args[0].elts):
                    c, t = self._expr(x, fn)
                    if ft == INT:
                        parts.append(f"{tmp}.{m} = {c};")
                    else:
                        parts.append(f"{tmp}.{m} = *({c});")
                return f"({{ {' '.join(parts)} &{tmp}; }})", Ref(cls)
            raise NativeUnsupported(f"{cls}.{a}")
        if isinstance(bt, tuple) and bt[0] == "global":
            kind, idx = bt[1], bt[2]
            if kind == "table" and a == "apply":
                return self._table_apply(idx, e, fn)
            if kind == "register" and a == "read":
                return f"p4reg_read(&ctx->sw->regs[{idx}], {args[0][0]})", INT
            if kind == "register" and a == "write":
                return f"(p4reg_write(&ctx->sw->regs[{idx}], {args[0][0]}, {args[1][0]}), 0)", INT
            if kind == "counter" and a == "count":
                return f"(p4ctr_count(&ctx->sw->ctrs[{idx}], {args[0][0]}, {args[1][0]}), 0)", INT
            if kind == "meter" and a == "execute":
                return (f"({{ int __c = p4n_meter_execute(ctx, {idx}, {args[0][0]}, {args[1][0]}, {args[2][0]}); "
                        f"if (__c < 0) {{ __rc = P4N_FAIL; goto {h}; }} (p4i)__c; }})"), INT
            if kind == "valueset" and a == "match":
                return f"p4vs_match(&ctx->sw->vss[{idx}], {args[0][0]})", INT
            raise NativeUnsupported(f"{kind}.{a}")
        if isinstance(bt, Stk):
            if a == "_emit":
                return f"(emit_{self._stack_ctype(bt)}(ctx, {base}), 0)", INT
            if a == "_reset":
                return f"(reset_{self._stack_ctype(bt)}({base}), {base})", bt
            if a == "_copy":
                tmp = self._tmp(self._stack_ctype(bt))
                return f"({tmp} = *({base}), &{tmp})", bt
            if a == "_set":
                return f"(*({base}) = *({args[0][0]}), 0)", INT
            if a == "_eq":
                return f"eq_{self._stack_ctype(bt)}({base}, {args[0][0]})", INT
            raise NativeUnsupported(f"stack.{a}")
        if isinstance(bt, Ref):
            cls = bt.cls
            ci = self.classes[cls]
            if a == "_extract":
                if len(e.args) != 1:
                    raise NativeUnsupported("extract with a varbit length")
                return f"({{ int __r = extract_{cls}(ctx, {base}); if (__r) {{ __rc = __r; goto {h}; }} 0; }})", INT
            if a == "_emit":
                return f"(emit_{cls}(ctx, {base}), 0)", INT
            if a == "_setvalid":
                return f"(setvalid_{cls}(ctx, {base}), 0)", INT
            if a == "_setinvalid":
                return f"(setinvalid_{cls}(ctx, {base}), 0)", INT
            if a == "_copy":
                tmp = self._tmp(cls)
                return f"({tmp} = *({base}), &{tmp})", bt
            if a == "_set":
                c, t = args[0]
                if t is None and self.mode != "emit":
                    return "0", INT
                if not isinstance(t, Ref) or t.cls != cls:
                    raise NativeUnsupported(f"_set of {cls} from {t}")
                return f"(*({base}) = *({c}), 0)", INT
            if a == "_reset":
                return f"(reset_{cls}({base}), {base})", bt
            if a == "_eq":
                return f"eq_{cls}({base}, {args[0][0]})", INT
            if a == "_lookahead_set":
                raise NativeUnsupported("_lookahead_set in a function body")
            raise NativeUnsupported(f"{cls}.{a}")
        raise NativeUnsupported(f"{fn.name}: method {a} of {bt}")

    def _table_apply(self, idx: int, e: ast.Call, fn: Fn) -> tuple[str, Any]:
        keys = e.args[0]
        if not isinstance(keys, ast.Tuple):
            raise NativeUnsupported("table keys not a tuple")
        tbl = self.tables[idx]
        if len(keys.elts) != len(tbl.keys):
            raise NativeUnsupported(f"table {tbl.name}: {len(keys.elts)} key values for {len(tbl.keys)} keys")
        parts = []
        for i, k in enumerate(keys.elts):
            if isinstance(k, ast.IfExp) and isinstance(k.orelse, ast.Constant) and k.orelse.value is None:
                c, _ = self._expr(k.test, fn)
                v, _ = self._expr(k.body, fn)
                parts.append(f"__kv[{i}] = ({c}) != 0; __k[{i}] = __kv[{i}] ? (p4u)({v}) : 0;")
            else:
                v, t = self._expr(k, fn)
                if isinstance(t, Wide):
                    if t.width > 128:
                        raise NativeUnsupported(f"table key of {t.width} bits")
                    v = f"p4w_u128({v})"
                parts.append(f"__kv[{i}] = 1; __k[{i}] = (p4u)({v});")
        nb, _ = self._expr(e.args[1], fn)
        now, _ = self._expr(e.args[2], fn)
        n = max(1, len(keys.elts))
        res = self._tmp("p4res")
        h = self.handler[-1]
        return (f"({{ p4u __k[{n}]; int __kv[{n}]; {' '.join(parts)} "
                f"if (p4n_table_apply(ctx, {idx}, __k, __kv, {nb}, {now}, &{res})) {{ __rc = P4N_FAIL; goto {h}; }} {res}; }})"), LOOKUP

    def _hash_call(self, e: ast.Call, fn: Fn, n: str) -> tuple[str, Any]:
        g = e.args[0]
        if not isinstance(g, ast.Name) or g.id not in self.globals or self.globals[g.id][0] != "hash":
            raise NativeUnsupported(f"{n} with an unknown algorithm")
        hidx = self.globals[g.id][1]
        stmts, maxbits = self._field_list(e.args[1], fn, "__fl")
        nbytes = (maxbits + 7) // 8 + 8
        pre = f"uint8_t __flb[{nbytes}]; memset(__flb, 0, sizeof __flb); p4bits __fl = {{ __flb, 0, {nbytes} }}; {' '.join(stmts)}"
        if n == "_compute_hash":
            base, _ = self._expr(e.args[2], fn)
            mx, _ = self._expr(e.args[3], fn)
            return f"({{ {pre} p4_compute_hash(&ctx->sw->hashes[{hidx}], &__fl, {base}, {mx}); }})", INT
        payload = e.args[2]
        if isinstance(payload, ast.Constant) and payload.value is None:
            return f"({{ {pre} (p4i)p4hash_run(&ctx->sw->hashes[{hidx}], __fl.buf, p4b_nbytes(&__fl)); }})", INT
        if _attr_chain(payload.func if isinstance(payload, ast.Call) else payload) == ["ctx", "payload"]:
            return (f"({{ {pre} int64_t __pl = ctx->len - (ctx->offset_bits >> 3); if (__pl < 0) __pl = 0; "
                    f"p4bits __fb = {{ NULL, 0, 0 }}; p4b_put_bytes(&__fb, __fl.buf, p4b_nbytes(&__fl)); "
                    f"p4b_put_bytes(&__fb, ctx->data + (ctx->offset_bits >> 3), __pl); "
                    f"p4i __h = (p4i)p4hash_run(&ctx->sw->hashes[{hidx}], __fb.buf, p4b_nbytes(&__fb)); free(__fb.buf); __h; }})"), INT
        raise NativeUnsupported("_hash_bytes with an unexpected payload")

    def _field_list(self, e: ast.expr, fn: Fn, fl: str) -> tuple[list[str], int]:
        """C statements appending a field list expression to the bit writer ``fl``, and
        the most bits it can hold."""
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
            a, na = self._field_list(e.left, fn, fl)
            b, nb = self._field_list(e.right, fn, fl)
            return a + b, na + nb
        if isinstance(e, ast.IfExp):
            c, _ = self._expr(e.test, fn)
            a, na = self._field_list(e.body, fn, fl)
            b, nb = self._field_list(e.orelse, fn, fl)
            return [f"if ({c}) {{ {' '.join(a)} }} else {{ {' '.join(b)} }}"], max(na, nb)
        if isinstance(e, ast.List):
            out: list[str] = []
            total = 0
            for x in e.elts:
                if isinstance(x, ast.Tuple) and len(x.elts) == 2:
                    w = x.elts[1]
                    if not isinstance(w, ast.Constant) or not isinstance(w.value, int):
                        raise NativeUnsupported("field list with a computed width")
                    v, t = self._expr(x.elts[0], fn)
                    if isinstance(t, Wide) and t.width == w.value:
                        out.append(f"p4w_put(&{fl}, {v}, {w.value});")
                        total += w.value
                        continue
                    if w.value > MAX_WIDTH:
                        raise NativeUnsupported("field list element wider than the native path's values")
                    if t not in (INT,):
                        raise NativeUnsupported(f"field list element of type {t}")
                    out.append(f"p4b_put(&{fl}, {v}, {w.value});")
                    total += w.value
                elif isinstance(x, ast.Starred):
                    a, na = self._field_list(x.value, fn, fl)
                    out += a
                    total += na
                else:
                    raise NativeUnsupported("field list element of an unexpected shape")
            return out, total
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "_flat":
            c, t = self._expr(e.func.value, fn)
            if not isinstance(t, Ref):
                raise NativeUnsupported("_flat of a non-struct")
            w = packed_width(self.classes[t.cls].t) if self.classes[t.cls].kind != "header" else \
                self.classes[t.cls].t.width_bits  # type: ignore[attr-defined]
            return [f"flat_{t.cls}(&{fl}, {c});"], int(w or 0)
        raise NativeUnsupported(f"field list {ast.dump(e)[:60]}")

    # ------------------------------------------------------------------ types and classes
    def _class_order(self) -> list[str]:
        order: list[str] = []
        seen: set[str] = set()

        def visit(cls: str) -> None:
            if cls in seen:
                return
            seen.add(cls)
            for _a, _m, ft, _pt in self.classes[cls].fields:
                if isinstance(ft, Ref):
                    visit(ft.cls)
                elif isinstance(ft, Stk):
                    visit(ft.cls)
            order.append(cls)
        for cls in sorted(self.classes):
            visit(cls)
        return order

    def _emit_types(self) -> list[str]:
        out: list[str] = []
        order = self._class_order()
        for cls in order:
            out.append(f"typedef struct {cls} {cls};")
        stacks_of: dict[str, list[Stk]] = {}
        for ci in self.classes.values():
            for _a, _m, ft, _pt in ci.fields:
                if isinstance(ft, Stk):
                    self._stack_ctype(ft)
        for (cls, size) in self.stack_types:
            stacks_of.setdefault(cls, []).append(Stk(cls, size))
        for cls in order:
            ci = self.classes[cls]
            members = []
            if ci.kind == "header":
                members.append("p4i _valid;")
            for _a, m, ft, _pt in ci.fields:
                if ft == INT:
                    members.append(f"p4i {m};")
                elif isinstance(ft, Wide):
                    members.append(f"uint64_t {m}[{ft.words}];")
                elif isinstance(ft, Ref):
                    members.append(f"{ft.cls} {m};")
                else:
                    members.append(f"{self._stack_ctype(ft)} {m};")
            if not members:
                members.append("char _empty;")
            out.append(f"struct {cls} {{ {' '.join(members)} }};")
            for st in stacks_of.get(cls, []):
                sct = self._stack_ctype(st)
                out.append(f"typedef struct {sct} {{ {cls} h[{st.size}]; p4i nextIndex; }} {sct};")
        out.append(self._ctx_decl())
        for cls in order:
            out.extend(self._class_functions(self.classes[cls]))
            for st in stacks_of.get(cls, []):
                out.extend(self._stack_functions(st))
        for elems, name in self.tuple_types.items():
            members = " ".join(f"{self._ctype(t)}e{i};" for i, t in enumerate(elems))
            out.append(f"typedef struct {{ {members or 'char _empty;'} }} {name};")
        return out

    def _ctx_decl(self) -> str:
        return f"#define P4N_NDMETERS {max(1, len(self.direct_meters))}\n#include \"rt_ctx.h\""

    def _zero(self, pt: P4Type) -> str:
        t = strip_new(pt)
        if isinstance(t, EnumT) and t.underlying is None:
            return str(self.sid(t.members[0])) if t.members else "0"
        return "0"

    def _class_functions(self, ci: ClassInfo) -> list[str]:
        cls = ci.name
        out: list[str] = []
        # init (__init__)
        body = []
        if ci.kind == "header":
            body.append("p->_valid = 0;")
        for _a, m, ft, pt in ci.fields:
            if ft == INT:
                body.append(f"p->{m} = {self._zero(pt)};")
            elif isinstance(ft, Wide):
                body.append(f"memset(p->{m}, 0, sizeof p->{m});")
            elif isinstance(ft, Ref):
                body.append(f"init_{ft.cls}(&p->{m});")
            else:
                body.append(f"init_{self._stack_ctype(ft)}(&p->{m});")
        out.append(f"static inline void init_{cls}({cls} *p) {{ {' '.join(body)} (void)p; }}")
        # reset
        body = []
        if ci.kind == "header":
            body.append("p->_valid = 0;")
        else:
            for _a, m, ft, pt in ci.fields:
                if ft == INT:
                    body.append(f"p->{m} = {self._zero(pt)};")
                elif isinstance(ft, Wide):
                    body.append(f"memset(p->{m}, 0, sizeof p->{m});")
                elif isinstance(ft, Ref):
                    body.append(f"reset_{ft.cls}(&p->{m});")
                else:
                    body.append(f"reset_{self._stack_ctype(ft)}(&p->{m});")
        out.append(f"static inline void reset_{cls}({cls} *p) {{ {' '.join(body)} (void)p; }}")
        # eq
        conds = []
        for _a, m, ft, _pt in ci.fields:
            if ft == INT:
                conds.append(f"a->{m} == b->{m}")
            elif isinstance(ft, Wide):
                conds.append(f"!memcmp(a->{m}, b->{m}, sizeof a->{m})")
            elif isinstance(ft, Ref):
                conds.append(f"eq_{ft.cls}(&a->{m}, &b->{m})")
            else:
                conds.append(f"eq_{self._stack_ctype(ft)}(&a->{m}, &b->{m})")
        pre = ""
        if ci.kind == "header":
            pre = "if (a->_valid != b->_valid) return 0; if (!a->_valid) return 1; "
        out.append(f"static inline int eq_{cls}(const {cls} *a, const {cls} *b) {{ {pre}return {' && '.join(conds) or '1'}; }}")
        # copyh (rt.copy_headers): validity and valid headers' fields; an invalid header of
        # dst keeps its fields (BMv2's PHV::copy_headers)
        if ci.kind == "header":
            body = ["if (s->_valid) *d = *s; else d->_valid = 0;"]
        else:
            body = []
            for _a, m, ft, _pt in ci.fields:
                if ft == INT:
                    body.append(f"d->{m} = s->{m};")
                elif isinstance(ft, Wide):
                    body.append(f"memcpy(d->{m}, s->{m}, sizeof d->{m});")
                elif isinstance(ft, Ref):
                    body.append(f"copyh_{ft.cls}(&d->{m}, &s->{m});")
                else:
                    body.append(f"copyh_{self._stack_ctype(ft)}(&d->{m}, &s->{m});")
        out.append(f"static inline void copyh_{cls}({cls} *d, const {cls} *s) {{ {' '.join(body)} (void)d; (void)s; }}")
        t = ci.t
        if ci.kind == "header":
            nbytes = (t.width_bits + 7) >> 3  # type: ignore[attr-defined]
            zero = " ".join(f"p->{m} = 0;" if ft == INT else (f"memset(p->{m}, 0, sizeof p->{m});" if isinstance(ft, Wide)
                            else f"init_{ft.cls}(&p->{m});") for _a, m, ft, _pt in ci.fields)
            out.append(f"static inline void setvalid_{cls}(p4ctx *ctx, {cls} *p) {{ if (!p->_valid) {{ {zero} p->_valid = 1; ctx->length_delta += {nbytes}; }} }}")
            out.append(f"static inline void setinvalid_{cls}(p4ctx *ctx, {cls} *p) {{ if (p->_valid) {{ p->_valid = 0; ctx->length_delta -= {nbytes}; }} }}")
            width = t.width_bits  # type: ignore[attr-defined]
            err = self.prog.error_codes.get("PacketTooShort", 1)
            loads = self._leaf_loads(ci, "p", "o")
            out.append(f"static inline int extract_{cls}(p4ctx *ctx, {cls} *p) {{ int64_t o = ctx->offset_bits; "
                       f"if (o + {width} > ctx->len * 8) {{ ctx->perr = {err}; return P4N_PERR; }} "
                       f"{' '.join(loads)} p->_valid = 1; ctx->offset_bits = o + {width}; return 0; }}")
            pad = nbytes * 8 - width
            puts = ([f"p4b_put(&ctx->emitted, 0, {pad});"] if pad else []) + self._leaf_puts(ci, "p", "&ctx->emitted")
            out.append(f"static inline void emit_{cls}(p4ctx *ctx, const {cls} *p) {{ if (p->_valid) {{ {' '.join(puts)} }} }}")
            out.append(f"static inline void flat_{cls}(p4bits *fl, const {cls} *p) {{ {' '.join(self._leaf_puts(ci, 'p', 'fl'))} }}")
            out.append(f"static inline void lookahead_{cls}(p4ctx *ctx, {cls} *p, int64_t o) {{ setvalid_{cls}(ctx, p); {' '.join(self._leaf_loads(ci, 'p', 'o'))} }}")
        elif ci.kind == "header_union":
            out.append(f"static inline p4i U_valid_{cls}(const {cls} *p) {{ return {' || '.join(f'p->{m}._valid' for _a, m, _f, _p in ci.fields) or '0'}; }}")
            out.append(f"static inline void emit_{cls}(p4ctx *ctx, const {cls} *p) {{ {' '.join(f'emit_{ft.cls}(ctx, &p->{m});' for _a, m, ft, _p in ci.fields)} (void)ctx; }}")
        else:
            emits = []
            for _a, m, ft, _pt in ci.fields:
                if isinstance(ft, Ref):
                    emits.append(f"emit_{ft.cls}(ctx, &p->{m});")
                elif isinstance(ft, Stk):
                    emits.append(f"emit_{self._stack_ctype(ft)}(ctx, &p->{m});")
            out.append(f"static inline void emit_{cls}(p4ctx *ctx, const {cls} *p) {{ {' '.join(emits)} (void)ctx; (void)p; }}")
            if packed_width(t) is not None:
                out.append(f"static inline void flat_{cls}(p4bits *fl, const {cls} *p) {{ {' '.join(self._leaf_puts(ci, 'p', 'fl'))} (void)fl; (void)p; }}")
                out.append(f"static inline void lookahead_{cls}(p4ctx *ctx, {cls} *p, int64_t o) {{ {' '.join(self._leaf_loads(ci, 'p', 'o'))} (void)ctx; (void)o; }}")
            elif lookahead_width(t) is not None:
                parts = []
                off = 0
                for _a, m, ft, pt in ci.fields:
                    w = lookahead_width(pt) or 0
                    if isinstance(ft, Stk):
                        ew = w // ft.size
                        for i in range(ft.size):
                            parts.append(f"lookahead_{ft.cls}(ctx, &p->{m}.h[{i}], o + {off + i * ew});")
                    elif isinstance(ft, Ref):
                        parts.append(f"lookahead_{ft.cls}(ctx, &p->{m}, o + {off});")
                    else:
                        parts.append(f"p->{m} = {self._leaf_value(pt, f'p4_read_bits(ctx->data, o + {off}, {w})', w)};")
                    off += w
                out.append(f"static inline void lookahead_{cls}(p4ctx *ctx, {cls} *p, int64_t o) {{ {' '.join(parts)} }}")
        return out

    def _leaf_value(self, pt: P4Type, val: str, w: int) -> str:
        t = strip_new(pt)
        if isinstance(t, BitT) and t.signed:
            return f"p4_to_signed({val}, {w})"
        if isinstance(t, BoolT):
            return f"(({val}) != 0)"
        return val

    def _leaf_loads(self, ci: ClassInfo, p: str, o: str, base: int = 0) -> list[str]:
        """Assignments of every leaf field read from the packet at bit ``o`` + offset."""
        out = []
        off = base
        for _a, m, ft, pt in ci.fields:
            w = _field_width(pt)
            if isinstance(ft, Ref):
                out += self._leaf_loads(self.classes[ft.cls], f"(&{p}->{m})", o, off)
            elif isinstance(ft, Wide):
                out.append(f"p4w_read(ctx->data, {o} + {off}, {w}, {p}->{m});")
            else:
                if w > MAX_WIDTH:
                    raise NativeUnsupported(f"field {m} of {ci.name} is {w} bits wide")
                out.append(f"{p}->{m} = {self._leaf_value(pt, f'p4_read_bits(ctx->data, {o} + {off}, {w})', w)};")
            off += w
        return out

    def _leaf_puts(self, ci: ClassInfo, p: str, bits: str) -> list[str]:
        out = []
        for _a, m, ft, pt in ci.fields:
            w = _field_width(pt)
            if isinstance(ft, Ref):
                out += self._leaf_puts(self.classes[ft.cls], f"(&{p}->{m})", bits)
            elif isinstance(ft, Wide):
                out.append(f"p4w_put({bits}, {p}->{m}, {w});")
            else:
                out.append(f"p4b_put({bits}, {p}->{m}, {w});")
        return out

    def _stack_functions(self, st: Stk) -> list[str]:
        sct = self._stack_ctype(st)
        cls, n = st.cls, st.size
        return [
            f"static inline void init_{sct}({sct} *s) {{ for (int i = 0; i < {n}; i++) init_{cls}(&s->h[i]); s->nextIndex = 0; }}",
            f"static inline void reset_{sct}({sct} *s) {{ for (int i = 0; i < {n}; i++) reset_{cls}(&s->h[i]); s->nextIndex = 0; }}",
            f"static inline int eq_{sct}(const {sct} *a, const {sct} *b) {{ for (int i = 0; i < {n}; i++) if (!eq_{cls}(&a->h[i], &b->h[i])) return 0; return 1; }}",
            f"static inline void copyh_{sct}({sct} *d, const {sct} *s) {{ for (int i = 0; i < {n}; i++) copyh_{cls}(&d->h[i], &s->h[i]); d->nextIndex = s->nextIndex; }}",
            f"static inline void emit_{sct}(p4ctx *ctx, const {sct} *s) {{ for (int i = 0; i < {n}; i++) emit_{cls}(ctx, &s->h[i]); }}",
            f"static inline void {sct}_push_front({sct} *s, p4i count) {{ int c = count < {n} ? (int)count : {n}; "
            f"for (int i = {n} - 1; i >= 0; i--) {{ if (i >= c) s->h[i] = s->h[i - c]; else reset_{cls}(&s->h[i]); }} "
            f"s->nextIndex = s->nextIndex + c < {n} ? s->nextIndex + c : {n}; }}",
            f"static inline void {sct}_pop_front({sct} *s, p4i count) {{ int c = count < {n} ? (int)count : {n}; "
            f"for (int i = 0; i < {n}; i++) {{ if (i + c < {n}) s->h[i] = s->h[i + c]; else reset_{cls}(&s->h[i]); }} "
            f"s->nextIndex = s->nextIndex - c > 0 ? s->nextIndex - c : 0; }}",
        ]

    # ------------------------------------------------------------------ the six blocks
    def _emit_blocks(self) -> list[str]:
        hdr, meta, std = (self.prog.headers_type.pyclass, self.prog.metadata_type.pyclass,
                          self.prog.std_type.pyclass)
        out = [f"typedef struct p4phv {{ {hdr} hdr; {meta} meta; {std} std; }} p4phv;",
               f"typedef {std} p4std;",
               f"typedef {hdr} p4hdrs;",
               f"static void prog_init_phv(p4phv *pv) {{ init_{hdr}(&pv->hdr); init_{meta}(&pv->meta); init_{std}(&pv->std); }}",
               # CompiledProgram.invalidate_headers / copy_headers (the PHV pool, rt_driver.h)
               f"static void prog_invalidate_headers(p4hdrs *h) {{ reset_{hdr}(h); }}",
               f"static void prog_copy_headers(p4hdrs *d, const p4hdrs *s) {{ copyh_{hdr}(d, s); }}"]
        for block, (fname, picks) in self.entry.items():
            fn = self.fns[fname]
            args = ["ctx"] + [f"&pv->{p}" for p in picks]
            rt = self._ret_ctype(fn)
            decl = ""
            if rt is not None:
                decl = f"{rt}__ret; memset(&__ret, 0, sizeof __ret); "
                args.append("&__ret")
            tail = "if (rc == P4N_EXIT) rc = 0;"
            if block == "parser":
                tail += " if (rc == P4N_PERR) { pv->std.f_parser_error = ctx->perr; rc = 0; }"
            out.append(f"static int prog_{block}(p4ctx *ctx, p4phv *pv) {{ ctx->std = &pv->std; {decl}"
                       f"int rc = {fname}({', '.join(args)}); {tail} return rc; }}")
        # field lists (CompiledProgram.preserve_field_list)
        cases = []
        ci = self.classes[meta]
        for index, paths in sorted(self.prog._field_lists.items()):
            stmts = []
            for path in paths:
                if len(path) != 1:
                    raise NativeUnsupported(f"@field_list on a field of a nested struct ({'.'.join(path)})")
                m, ft, _pt = ci.field(path[0])
                stmts.append(f"dst->meta.{m} = src->meta.{m};")
            cases.append(f"case {int(index)}: {' '.join(stmts)} break;")
        out.append(f"static void prog_preserve(p4i index, const p4phv *src, p4phv *dst) {{ switch ((long long)index) {{ {' '.join(cases)} default: break; }} (void)src; (void)dst; }}")
        # standard_metadata fields the driver writes (absent ones read as 0)
        sci = self.classes[std]
        for f in ("ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
                  "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth",
                  "ingress_global_timestamp", "egress_global_timestamp", "mcast_grp", "egress_rid",
                  "parser_error", "priority"):
            try:
                m, ft, _pt = sci.field(_pyname(f))
            except NativeUnsupported:
                out.append(f"#define STD_GET_{f}(pv) ((p4i)0)\n#define STD_SET_{f}(pv, v) ((void)(v))")
                continue
            out.append(f"#define STD_GET_{f}(pv) ((pv)->std.{m})\n#define STD_SET_{f}(pv, v) ((pv)->std.{m} = (v))")
        out.append("#include \"rt_driver.h\"")
        return out


def _pyname(name: str) -> str:
    return pyname(name)


def translate(program: Any) -> TranslatedUnit:
    """The C of ``program`` (raises :class:`NativeUnsupported` with the reason)."""
    return Translator(program).run()
