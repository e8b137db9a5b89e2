"""Loading a P4 program: parse, check, generate Python once, and expose the six v1model
blocks plus the runtime state (tables, externs, replication engine, digests).

Example::

    >>> prog = load_program("tests/p4sim/stf/lang/arith_wrap.p4")      # doctest: +SKIP
    >>> pv = prog.new_packet(); ctx = PacketContext(b"...")             # doctest: +SKIP
    >>> prog.parser(ctx, pv); prog.ingress(ctx, pv)                     # doctest: +SKIP
"""
from __future__ import annotations

import operator
import random as _random_mod
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from p4sim.engine import rt
from p4sim.engine.codegen import pyname
from p4sim.engine.compiler import Compiler, InstanceInfo
from p4sim.engine.context import CloneRequest, PacketContext
from p4sim.engine.header_widths import odd_header_message, odd_header_of
from p4sim.engine.v1switch_checks import check_v1switch
from p4sim.errors import P4Error, forget_source
from p4sim.frontend import ast as A
from p4sim.frontend.parser import parse_file, parse_text
from p4sim.frontend.types import ExternT, StructLikeT, StructT, strip_new
from p4sim.runtime import hashes
from p4sim.runtime.digest import DigestQueue
from p4sim.runtime.pre import PacketReplicationEngine

V1SWITCH_BLOCKS = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")


@dataclass
class ProgramState:
    """Every runtime object of a loaded program, by fully qualified name."""

    tables: dict[str, Any] = field(default_factory=dict)
    action_profiles: dict[str, Any] = field(default_factory=dict)
    counters: dict[str, Any] = field(default_factory=dict)
    direct_counters: dict[str, Any] = field(default_factory=dict)
    meters: dict[str, Any] = field(default_factory=dict)
    direct_meters: dict[str, Any] = field(default_factory=dict)
    registers: dict[str, Any] = field(default_factory=dict)
    value_sets: dict[str, Any] = field(default_factory=dict)
    pre: PacketReplicationEngine = field(default_factory=PacketReplicationEngine)
    digests: DigestQueue = field(default_factory=DigestQueue)


class _Reject:
    """Sentinel returned by a parser state that transitions to ``reject``."""


_REJECT = _Reject()


def _stack_next(stack: rt.HeaderStack) -> Any:
    if stack.nextIndex >= stack.size:
        raise rt.ParserErrorSignal(_ERR["StackOutOfBounds"])
    return stack.h[stack.nextIndex]


def _stack_last(stack: rt.HeaderStack) -> Any:
    if stack.nextIndex == 0 or stack.nextIndex > stack.size:
        raise rt.ParserErrorSignal(_ERR["StackOutOfBounds"])
    return stack.h[stack.nextIndex - 1]


def _stack_at(stack: rt.HeaderStack, index: int) -> Any:
    if 0 <= index < stack.size:
        return stack.h[index]
    # BMv2 raises an error for an out-of-range index: give a detached element so that
    # the packet keeps going without touching the stack.
    return stack._factory()


_ERR: dict[str, int] = {}


def _lookahead(ctx: PacketContext, width: int) -> int:
    if ctx.offset_bits + width > len(ctx.data) * 8:
        raise rt.ParserErrorSignal(_ERR["PacketTooShort"])
    return rt.read_bits(ctx.data, ctx.offset_bits, width)


def _lookahead_value(ctx: PacketContext, cls: Any) -> Any:
    """A new header or struct ``cls`` read by ``lookahead``: as p4c-bm2-ss compiles it
    (ExpandLookahead), its headers are made valid as ``setValid()`` does."""
    v = cls()
    v._lookahead_set(ctx, _lookahead(ctx, cls._width))
    return v


def _advance(ctx: PacketContext, nbits: int) -> None:
    if ctx.offset_bits + nbits > len(ctx.data) * 8:
        raise rt.ParserErrorSignal(_ERR["PacketTooShort"])
    ctx.offset_bits += nbits


def _pack(fields: Sequence[tuple[int, int]]) -> bytes:
    return hashes.pack_fields([(v & ((1 << w) - 1), w) for v, w in fields])


def _compute_hash(fn: Any, fields: Sequence[tuple[int, int]], base: int, max_value: int) -> int:
    return hashes.compute_hash(fn, [(v & ((1 << w) - 1), w) for v, w in fields], base, max_value)


def _hash_bytes(fn: Any, fields: Sequence[tuple[int, int]], payload: Optional[bytes]) -> int:
    data = _pack(fields)
    if payload:
        data += payload
    return fn(data)


def _digest_values(value: Any) -> tuple:
    if isinstance(value, tuple):
        return value
    names = getattr(value, "__slots__", ())
    out = []
    for n in names:
        if n == "_valid":
            continue
        v = getattr(value, n)
        out.append(_digest_values(v) if hasattr(v, "__slots__") else v)
    return tuple(out)


def _format_log(msg: str, values: tuple) -> str:
    parts = msg.split("{}")
    out = parts[0]
    for i, p in enumerate(parts[1:]):
        out += (str(values[i]) if i < len(values) else "{}") + p
    return out


def _source_order(errors: list[P4Error], sites: Optional[dict[int, Any]] = None
                  ) -> Callable[[P4Error], tuple[int, int, int]]:
    """A sort key putting ``errors`` in source order of their sites (``sites``: an error's
    id -> the place that orders it, e.g. its action's declaration; else the error's own
    place): by line and column within a file, the files in the order their first error
    was found (compile order).

    >>> a, b = P4Error("a", A.Loc("p.p4", 9, 1)), P4Error("b", A.Loc("p.p4", 3, 5))
    >>> [e.message for e in sorted([a, b], key=_source_order([a, b]))]
    ['b', 'a']
    >>> [e.message for e in sorted([a, b], key=_source_order([a, b], {id(b): A.Loc("p.p4", 20, 1)}))]
    ['a', 'b']
    """
    sites = sites or {}

    def site(err: P4Error) -> Any:
        return sites.get(id(err), err.loc)
    files: dict[str, int] = {}
    for err in errors:
        loc = site(err)
        files.setdefault(loc.file if loc is not None else "", len(files))

    def key(err: P4Error) -> tuple[int, int, int]:
        loc = site(err)
        if loc is None:
            return (files[""], 0, 0)
        return (files[loc.file], loc.line, loc.col)
    return key


class CompiledProgram:
    """A loaded v1model program (see the module docstring)."""

    def __init__(self, source_path: str, module_source: str, compiler: Compiler, state: ProgramState,
                 seed: Optional[int] = None, defer_backend_checks: bool = False) -> None:
        self.path = source_path
        self.source = module_source
        self.state = state
        self.error_codes = dict(compiler.error_codes)
        self.tables_info = compiler.tables_info
        self.actions = compiler.actions_by_fq
        self.digest_types = compiler.digest_types
        self.value_set_decls = compiler.value_set_decls  # fq -> (declaration, element type)
        self.duplicate_names = compiler.duplicate_names  # (P4Info kind, name), for P4Info
        self.direct_action_calls = compiler.direct_action_calls  # actions a control body calls
        self.direct_action_callers = compiler.direct_action_callers  # and the block calling each first
        self.struct_types = {t.name: t for t in compiler.struct_types}
        self.ast = compiler.program  # the parsed program (annotations for P4Info)
        self.rng = _random_mod.Random(seed)
        env: dict[str, Any] = dict(compiler.env)
        env.update({
            "_to_signed": rt.to_signed, "_read_bits": rt.read_bits, "_shl": rt.shl,
            "_shl_signed": rt.shl_signed, "_shr": rt.shr, "_sat_add_u": rt.sat_add_unsigned,
            "_sat_add_s": rt.sat_add_signed, "_sat_sub_u": rt.sat_sub_unsigned,
            "_sat_sub_s": rt.sat_sub_signed, "_div_u": rt.div_unsigned, "_mod_u": rt.mod_unsigned,
            "_HeaderStack": rt.HeaderStack, "_ParserErrorSignal": rt.ParserErrorSignal,
            "_ExitSignal": rt.ExitSignal, "_AssertionFailed": rt.AssertionFailed, "_REJECT": _REJECT,
            "_stack_next": _stack_next, "_stack_last": _stack_last, "_stack_at": _stack_at,
            "_lookahead": _lookahead, "_lookahead_value": _lookahead_value, "_advance": _advance,
            "_compute_hash": _compute_hash, "_hash_bytes": _hash_bytes, "_pack_fields": _pack,
            "_random": self._random, "_digest_values": _digest_values, "_CloneRequest": CloneRequest,
            "_format_log": _format_log,
        })
        for name, code in self.error_codes.items():
            env["_ERR_" + name] = code
            _ERR.setdefault(name, code)
        code = compile(module_source, f"<p4sim:{source_path}>", "exec")
        exec(code, env)  # noqa: S102 - our own generated code
        self.env = env
        pkg = compiler.package
        assert pkg is not None
        if pkg.decl.name != "V1Switch":
            raise P4Error(f"package {pkg.decl.name} is not supported: p4sim runs v1model programs (V1Switch)", None)
        if len(pkg.args) != 6:
            raise P4Error("V1Switch expects 6 blocks", None)
        self.blocks: dict[str, InstanceInfo] = dict(zip(V1SWITCH_BLOCKS, pkg.args))
        parser = self.blocks["parser"]
        ptypes = [t for t in parser.ptypes if not (isinstance(t, ExternT) and t.name.startswith("packet_"))]
        if len(ptypes) != 3:
            raise P4Error("the v1model parser must have the parameters (packet_in, out H, inout M, inout standard_metadata_t)", None)
        self.headers_type, self.metadata_type, self.std_type = (strip_new(t) for t in ptypes)
        for t in (self.headers_type, self.metadata_type):
            odd = odd_header_of(t)
            if odd is not None:
                raise P4Error(odd_header_message(odd), compiler.cx.odd_header_locs.get(odd.name))
        if compiler.cx.local_header_width_errors:   # a local of such a type: the same pass
            raise compiler.cx.local_header_width_errors[0]
        self._backend: Optional[Compiler] = compiler
        # a headers type that is not a struct leaves nothing to build P4Info from: its
        # back-end error ("H: expected type to be a struct") cannot wait
        if not defer_backend_checks or not isinstance(self.headers_type, StructT):
            self.check_backend()
        self._hdr_cls = env[self.headers_type.pyclass]
        self._meta_cls = env[self.metadata_type.pyclass]
        self._std_cls = env[self.std_type.pyclass]
        self._calls = {name: self._make_call(inst) for name, inst in self.blocks.items()}
        self._field_lists = self._collect_field_lists(compiler)

    def check_backend(self) -> None:
        """p4c-bm2-ss's back-end checks (its JSON converter's errors, in its order); run
        by the constructor unless ``defer_backend_checks`` (p4c-bm2-ss writes and checks
        P4Info first, so ``--p4runtime-files`` reports a P4Info error before them)."""
        compiler, self._backend = self._backend, None
        if compiler is None:
            return
        parser = self.blocks["parser"]
        hparam = [p for p in getattr(parser.decl, "params", []) if p.direction == "out"][:1]
        deferred = compiler.cx.backend_errors
        in_actions = [err for _, in_action, err in deferred if in_action]
        if in_actions:                        # p4c-bm2-ss converts the actions first, in the
            sites = compiler.cx.backend_error_actions              # order they are declared
            raise min(in_actions, key=_source_order(in_actions, sites))
        for role in ("ingress", "egress"):    # then these bodies
            top = getattr(self.blocks[role], "fqname", None)
            first = next((err for path, _, err in deferred if path.split(".", 1)[0] == top), None)
            if first is not None:
                raise first
        check_v1switch(self.blocks, self.headers_type, hparam[0].loc if hparam else None,
                       frozenset(d.name for d in compiler.program.decls if isinstance(d, A.ConstDecl)),
                       compiler.program)
        if deferred:
            raise deferred[0][2]
        if compiler.cx.backend_instance_errors:
            raise compiler.cx.backend_instance_errors[0]

    # ------------------------------------------------------------------ packets
    def new_packet(self) -> rt.PacketVars:
        return rt.PacketVars(self._hdr_cls(), self._meta_cls(), self._std_cls())

    def copy_packet(self, pv: rt.PacketVars) -> rt.PacketVars:
        return rt.PacketVars(pv.hdr._copy(), pv.meta._copy(), pv.std._copy())

    def invalidate_headers(self, hdr: Any) -> None:
        """Make every header of a headers struct invalid, fields kept (BMv2's
        ``PHV::reset`` and ``reset_header_stacks`` when a packet leaves)."""
        hdr._reset()

    def copy_headers(self, dst: Any, src: Any) -> None:
        """Copy validity and valid headers' fields (BMv2's ``PHV::copy_headers``)."""
        rt.copy_headers(dst, src)

    def error_code(self, name: str) -> int:
        return self.error_codes[name]

    def _random(self, lo: int, hi: int) -> int:
        return lo if hi <= lo else self.rng.randint(lo, hi)

    def _make_call(self, inst: InstanceInfo) -> Any:
        fn = self.env[inst.pyfunc]
        picks = []
        for t in inst.ptypes:
            st = strip_new(t)
            if isinstance(st, ExternT):
                continue
            if st is self.headers_type or (isinstance(st, StructLikeT) and st.name == self.headers_type.name):
                picks.append("hdr")
            elif isinstance(st, StructLikeT) and st.name == self.metadata_type.name:
                picks.append("meta")
            elif isinstance(st, StructLikeT) and st.name == self.std_type.name:
                picks.append("std")
            else:
                raise P4Error(f"block {inst.fqname}: parameter of type {t} does not match the V1Switch signature", None)
        getters = tuple(picks)

        get_args = operator.attrgetter(*getters) if getters else (lambda pv: ())
        single = len(getters) == 1

        def call(ctx: PacketContext, pv: rt.PacketVars) -> None:
            ctx.std = pv.std
            args = get_args(pv)
            try:
                if single:
                    fn(ctx, args)
                else:
                    fn(ctx, *args)
            except rt.ExitSignal:
                pass
        return call

    def parser(self, ctx: PacketContext, pv: rt.PacketVars) -> None:
        try:
            self._calls["parser"](ctx, pv)
        except rt.ParserErrorSignal as e:
            pv.std.parser_error = e.code
            if ctx.log:
                ctx.log(f"Parser error: {self._error_name(e.code)}")

    def _error_name(self, code: int) -> str:
        for n, c in self.error_codes.items():
            if c == code:
                return n
        return str(code)

    def verify_checksum(self, ctx: PacketContext, pv: rt.PacketVars) -> None:
        self._calls["verify_checksum"](ctx, pv)

    def ingress(self, ctx: PacketContext, pv: rt.PacketVars) -> None:
        self._calls["ingress"](ctx, pv)

    def egress(self, ctx: PacketContext, pv: rt.PacketVars) -> None:
        self._calls["egress"](ctx, pv)

    def compute_checksum(self, ctx: PacketContext, pv: rt.PacketVars) -> None:
        self._calls["compute_checksum"](ctx, pv)

    def deparser(self, ctx: PacketContext, pv: rt.PacketVars) -> None:
        self._calls["deparser"](ctx, pv)

    # ------------------------------------------------------------------ field lists
    def _collect_field_lists(self, compiler: Any) -> dict[int, list[tuple[str, ...]]]:
        """``@field_list(i, ...)`` of the user metadata's fields, as p4c-bm2-ss collects them:
        its midend flattens nested structs (``FlattenInterfaceStructs``) and each leaf field
        carries the annotations of the struct fields above it, then its own; the back end
        takes the first ``@field_list`` of each leaf (``simpleSwitch.cpp``). So a field of a
        nested struct (``meta.resubmit_meta.i``) is preserved by its own annotation or its
        parent field's. Values: attribute paths from ``meta``."""
        out: dict[int, list[tuple[str, ...]]] = {}

        def walk(st: StructLikeT, path: tuple[str, ...], inherited: list[Any]) -> None:
            for fname, ftype in st.fields:
                anns = inherited + [a for a in st.annotations.get(fname, [])
                                    if a.name != "name"]
                sub = strip_new(ftype)
                if isinstance(sub, StructLikeT) and sub.kind == "struct":
                    walk(sub, path + (pyname(fname),), anns)
                    continue
                first = next((a for a in anns if a.name == "field_list"), None)
                if first is None:
                    continue
                if first.exprs is None and first.raw.strip():
                    raise P4Error(f"@field_list({first.raw}): expected constant list indices",
                                  first.loc)
                # indices are compile-time constants: literals or named constants
                for i in [int(compiler.const_value(x)) for x in first.exprs or []]:
                    out.setdefault(i, []).append(path + (pyname(fname),))

        walk(self.metadata_type, (), [])
        return out

    def preserve_field_list(self, index: int, src: rt.PacketVars, dst: rt.PacketVars) -> None:
        for path in self._field_lists.get(index, []):
            s, d = src.meta, dst.meta
            for attr in path[:-1]:
                s, d = getattr(s, attr), getattr(d, attr)
            v = getattr(s, path[-1])
            if hasattr(v, "_copy"):
                getattr(d, path[-1])._set(v)
            else:
                setattr(d, path[-1], v)


def load_program(path: str, include_dirs: Sequence[str] = (), seed: Optional[int] = None,
                 trace: bool = True) -> CompiledProgram:
    """Parse, check and compile ``path``; raises :class:`p4sim.errors.P4Error`."""
    program = parse_file(path, list(include_dirs))
    return compile_program(program, path, seed=seed, trace=trace)


def load_program_text(text: str, filename: str = "<input>", include_dirs: Sequence[str] = (),
                      seed: Optional[int] = None) -> CompiledProgram:
    program = parse_text(text, filename, list(include_dirs))
    return compile_program(program, filename, seed=seed)


def load_preprocessed(source: str, path: str, seed: Optional[int] = None,
                      defer_backend_checks: bool = False) -> CompiledProgram:
    """Compile ``source``, the preprocessed text of the file at ``path`` (its ``#line``
    markers keep the file's positions), as ``p4sim-p4c-bm2-ss`` does: diagnostics quote,
    and look for a name in, the file's own lines, not the preprocessed text's
    (``defer_backend_checks``: see :meth:`CompiledProgram.check_backend`)."""
    try:
        program = parse_text(source, path)
    finally:   # parsing kept the preprocessed text as the file's lines
        forget_source(path)
    return compile_program(program, path, seed=seed, defer_backend_checks=defer_backend_checks)


def compile_program(program: Any, path: str, seed: Optional[int] = None, trace: bool = True,
                    defer_backend_checks: bool = False) -> CompiledProgram:
    state = ProgramState()
    comp = Compiler(program, state, trace=trace)
    comp.compile()
    return CompiledProgram(path, comp.mod.text(), comp, state, seed, defer_backend_checks)
