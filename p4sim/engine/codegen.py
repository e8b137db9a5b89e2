"""Building blocks of the code generator: scopes and symbols, typed expression results,
an indenting writer for the generated Python, and the generated classes of P4 structs,
headers and unions.

Example::

    >>> w = Writer()
    >>> w.line("x = 1")
    >>> w.text()
    'x = 1\\n'
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import Any, Optional

from p4sim.frontend.types import (
    BitT, BoolT, EnumT, ErrorT, HeaderT, P4Type, StackT, StructLikeT, StructT, UnionT, VarbitT, lookahead_width,
    packed_width, strip_new,
)


def pyname(name: str) -> str:
    """A P4 field name as a Python attribute name (keywords and our own slots escaped)."""
    if keyword.iskeyword(name) or name in ("_valid", "h", "nextIndex", "size") or name.startswith("__"):
        return name + "_"
    return name


@dataclass
class FnCtx:
    """A Python function being generated (for ``nonlocal`` bookkeeping and returns)."""

    name: str
    kind: str  # control, parser, state, action, function, table
    nonlocals: set[str] = field(default_factory=set)
    outs: list[str] = field(default_factory=list)  # python names of scalar out/inout params
    return_type: Optional[P4Type] = None
    parent: Optional["FnCtx"] = None
    decl_loc: Any = None     # where the action or function is declared (back-end error order)
    # an action's or function's ``in`` parameters, and the ``/``/``%`` whose run-time
    # operands are only those: p4c inlines the call, so each call's arguments decide
    # (:class:`DeferredDivision`)
    in_params: set[str] = field(default_factory=set)
    deferred_divisions: list["DeferredDivision"] = field(default_factory=list)


@dataclass
class DeferredDivision:
    """A ``/`` or ``%`` in an action or function body with an ``in`` parameter as an
    operand: p4c inlines each call (the arguments substituted) before its strength
    reduction and CompileTimeOperations, so ``(x + 1) % N`` compiles where every call
    passes a power of two for ``N``. ``left``/``right``: ``("param", name)``,
    ``("const", value)`` or ``("dyn", None)`` (a run-time value whatever the call
    passes); ``texts``: each operand as written; ``loc``: where p4c reports it.

    >>> DeferredDivision("%", ("const", 5), ("param", "N"), ("5", "N"), None).params()
    ['N']
    """

    op: str
    left: tuple[str, Any]
    right: tuple[str, Any]
    texts: tuple[str, str]
    loc: Any

    def params(self) -> list[str]:
        return [v for k, v in (self.left, self.right) if k == "param"]


@dataclass
class Sym:
    """What a name denotes in a scope."""

    kind: str  # var, const, type, action, function, extern_func, table, instance, packet,
    #            parser_decl, control_decl, extern_decl, package_decl, valueset, state
    type: Optional[P4Type] = None
    code: str = ""          # Python expression that reads it
    value: Any = None       # compile-time value (const) or declaration/instance info
    fn: Optional[FnCtx] = None  # owning Python function of a variable
    writable: bool = True
    decl: Any = None
    is_param: bool = False  # a parameter of a block, action or function (set by define)


@dataclass
class Ex:
    """A compiled expression: Python source, its P4 type, and its value when constant."""

    code: str
    ty: P4Type
    const: bool = False
    value: Any = None


class Writer:
    """Collects generated Python lines with indentation."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def indent(self) -> None:
        self.depth += 1

    def dedent(self) -> None:
        self.depth -= 1

    def extend(self, other: "Writer") -> None:
        for ln in other.lines:
            self.lines.append("    " * self.depth + ln)

    def function(self, header: str, fn: "FnCtx", body: "Writer") -> None:
        """Write ``def header:``, the ``nonlocal`` line ``fn`` collected, and ``body``
        (generated at depth 1)."""
        self.line(f"def {header}:")
        if fn.nonlocals:
            self.line(f"    nonlocal {', '.join(sorted(fn.nonlocals))}")
        self.extend(body)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def zero_value_code(t: P4Type) -> str:
    """Python source of the initial (all-zero / invalid) value of a type."""
    t = strip_new(t)
    if isinstance(t, BitT):
        return "0"
    if isinstance(t, BoolT):
        return "False"
    if isinstance(t, ErrorT):
        return "0"
    if isinstance(t, EnumT):
        return "0" if t.underlying is not None else repr(t.members[0] if t.members else "")
    if isinstance(t, VarbitT):
        return "(0, 0)"
    if isinstance(t, StructLikeT):
        return f"{t.pyclass}()"
    if isinstance(t, StackT):
        # (a stack of a type parameter, T[n], only occurs in a generic body being checked)
        return f"_HeaderStack({getattr(t.elem, 'pyclass', 'None')}, {t.size})"
    return "None"


def gen_struct_class(t: StructLikeT) -> str:
    """Python source of the class that holds values of a struct, header or union type."""
    w = Writer()
    names = [pyname(n) for n, _ in t.fields]
    slots = (["_valid"] if isinstance(t, HeaderT) else []) + names
    cls = t.pyclass
    w.line(f"class {cls}:")
    w.indent()
    w.line(f"__slots__ = {tuple(slots)!r}")
    w.line(f"_p4name = {t.name!r}")
    w.line(f"_p4fields = {tuple(n for n, _ in t.fields)!r}")
    # __init__
    w.line("def __init__(self):")
    w.indent()
    if isinstance(t, HeaderT):
        w.line("self._valid = False")
    for (n, ft), pn in zip(t.fields, names):
        w.line(f"self.{pn} = {zero_value_code(ft)}")
    if not slots:
        w.line("pass")
    w.dedent()
    composite = {pn for (n, ft), pn in zip(t.fields, names) if strip_new(ft).is_composite()}
    # _copy
    w.line("def _copy(self):")
    w.indent()
    w.line(f"n = {cls}.__new__({cls})")
    for s in slots:
        w.line(f"n.{s} = self.{s}._copy()" if s in composite else f"n.{s} = self.{s}")
    w.line("return n")
    w.dedent()
    # _set
    w.line("def _set(self, o):")
    w.indent()
    for s in slots:
        w.line(f"self.{s}._set(o.{s})" if s in composite else f"self.{s} = o.{s}")
    if not slots:
        w.line("pass")
    w.dedent()
    # _reset: out parameters and header invalidation
    w.line("def _reset(self):")
    w.indent()
    if isinstance(t, HeaderT):
        w.line("self._valid = False")
    else:
        for (n, ft), pn in zip(t.fields, names):
            if pn in composite:
                w.line(f"self.{pn}._reset()")
            else:
                w.line(f"self.{pn} = {zero_value_code(ft)}")
    w.line("return self")
    w.dedent()
    # _eq
    w.line("def _eq(self, o):")
    w.indent()
    if isinstance(t, HeaderT):
        w.line("if self._valid != o._valid: return False")
        w.line("if not self._valid: return True")
    conds = [f"self.{pn}._eq(o.{pn})" if pn in composite else f"self.{pn} == o.{pn}" for pn in names]
    w.line("return " + (" and ".join(conds) if conds else "True"))
    w.dedent()
    # _from: build from a tuple of field values
    w.line("@staticmethod")
    w.line("def _from(vals):")
    w.indent()
    w.line(f"n = {cls}()")
    if isinstance(t, HeaderT):
        w.line("n._valid = True")
    for i, pn in enumerate(names):
        w.line(f"n.{pn}._set(vals[{i}])" if pn in composite else f"n.{pn} = vals[{i}]")
    w.line("return n")
    w.dedent()
    if isinstance(t, HeaderT):
        _gen_header_io(w, t, names)
    elif isinstance(t, StructT) and packed_width(t) is not None:
        _gen_packed_io(w, list(zip(t.fields, names)), packed_width(t) or 0, header=False)
        w.line("def _lookahead_set(self, ctx, v):")
        w.line("    self._load(v)")
    elif isinstance(t, StructT) and lookahead_width(t) is not None:
        _gen_lookahead_set(w, list(zip(t.fields, names)), lookahead_width(t) or 0)
    if isinstance(t, UnionT):
        w.line("def _emit(self, ctx):")
        w.indent()
        for pn in names:
            w.line(f"self.{pn}._emit(ctx)")
        if not names:
            w.line("pass")
        w.dedent()
        w.line("@property")
        w.line("def _valid(self):")
        w.indent()
        w.line("return " + (" or ".join(f"self.{pn}._valid" for pn in names) or "False"))
        w.dedent()
        w.line("def _only(self, keep):")
        w.indent()
        for pn in names:
            w.line(f"if self.{pn} is not keep: self.{pn}._valid = False")
        w.line("pass")
        w.dedent()
    if isinstance(t, StructLikeT) and not isinstance(t, (HeaderT, UnionT)):
        w.line("def _emit(self, ctx):")
        w.indent()
        emitted = False
        for (n, ft), pn in zip(t.fields, names):
            if isinstance(strip_new(ft), (HeaderT, UnionT, StackT)) or (
                    isinstance(strip_new(ft), StructLikeT)):
                w.line(f"self.{pn}._emit(ctx)")
                emitted = True
        if not emitted:
            w.line("pass")
        w.dedent()
    w.dedent()
    return w.text()


def _fw(t: P4Type) -> int:
    """Width of a header field's type (bit/int, bool, serializable enum, struct of them)."""
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, StructLikeT):
        return packed_width(t) or 0
    return t.width if isinstance(t, BitT) else 1


def _gen_packed_io(w: Writer, fields: list[tuple[tuple[str, P4Type], str]], width: int, header: bool) -> None:
    """``_load`` (fields from an integer of ``width`` bits, MSB first), ``_bits`` (the
    reverse), ``_flat`` (``(value, width)`` of every leaf field, in order) and ``_width``
    of a fixed-width header or of a struct of such fields (a header's struct field, a
    ``lookahead`` of a struct): p4c-bm2-ss flattens such a struct into its fields."""
    w.line("def _load(self, v):")
    w.indent()
    shift = width
    for (n, ft), pn in fields:
        ft2 = strip_new(ft)
        fw = _fw(ft2)
        shift -= fw
        val = _bits_at("v", shift, fw)
        if isinstance(ft2, StructLikeT):
            w.line(f"self.{pn}._load({val})")
            continue
        w.line(f"self.{pn} = {_leaf_value(ft2, val, fw)}")
    if header:
        w.line("self._valid = True")
    elif not fields:
        w.line("pass")
    w.dedent()
    w.line("def _bits(self):")
    w.indent()
    parts = []
    shift = width
    for (n, ft), pn in fields:
        ft2 = strip_new(ft)
        fw = _fw(ft2)
        shift -= fw
        v = f"(self.{pn} & {(1 << fw) - 1:#x})" if (isinstance(ft2, BitT) and ft2.signed) else (
            f"int(self.{pn})" if isinstance(ft2, BoolT) else
            f"self.{pn}._bits()" if isinstance(ft2, StructLikeT) else f"self.{pn}")
        parts.append(f"({v} << {shift})" if shift else v)
    w.line("return " + (" | ".join(parts) if parts else "0"))
    w.dedent()
    w.line("def _flat(self):")
    w.indent()
    items = []
    for (n, ft), pn in fields:
        ft2 = strip_new(ft)
        items.append(f"*self.{pn}._flat()" if isinstance(ft2, StructLikeT) else f"(self.{pn}, {_fw(ft2)})")
    w.line("return [" + ", ".join(items) + "]")
    w.dedent()
    w.line(f"_width = {width}")


def _bits_at(v: str, shift: int, width: int) -> str:
    """Python source of the ``width`` bits of ``v`` above its ``shift`` lowest ones."""
    return f"({v} >> {shift}) & {(1 << width) - 1:#x}" if shift else f"{v} & {(1 << width) - 1:#x}"


def _leaf_value(t: P4Type, val: str, width: int) -> str:
    """Python source of a field value of type ``t`` from its bits ``val``."""
    if isinstance(t, BitT) and t.signed:
        return f"_to_signed({val}, {width})"
    if isinstance(t, BoolT):
        return f"bool({val})"
    return val


def _gen_lookahead_set(w: Writer, fields: list[tuple[tuple[str, P4Type], str]], width: int) -> None:
    """``_lookahead_set(ctx, v)`` and ``_width`` of a struct that holds headers or header
    stacks: as p4c's ExpandLookahead writes ``s = pkt.lookahead<S>()`` for p4c-bm2-ss,
    every field from the ``width`` bits ``v`` (MSB first), each header (stack element)
    made valid as ``setValid()`` does (BMv2's add_header); a stack's nextIndex stays."""
    w.line("def _lookahead_set(self, ctx, v):")
    w.indent()
    shift = width
    for (n, ft), pn in fields:
        ft2 = strip_new(ft)
        fw = lookahead_width(ft2) or 0
        shift -= fw
        if isinstance(ft2, StackT):
            ew = fw // ft2.size
            for i in range(ft2.size):
                w.line(f"self.{pn}.h[{i}]._lookahead_set(ctx, {_bits_at('v', shift + fw - (i + 1) * ew, ew)})")
        elif isinstance(ft2, StructLikeT):
            w.line(f"self.{pn}._lookahead_set(ctx, {_bits_at('v', shift, fw)})")
        else:
            w.line(f"self.{pn} = {_leaf_value(ft2, _bits_at('v', shift, fw), fw)}")
    if not fields:
        w.line("pass")
    w.dedent()
    w.line(f"_width = {width}")


def _gen_header_io(w: Writer, t: HeaderT, names: list[str]) -> None:
    """extract/emit/flatten methods of a header class."""
    fields = list(zip(t.fields, names))
    nbytes_hdr = (t.width_bits + 7) >> 3
    # setValid()/setInvalid() as BMv2's add_header/remove_header: a header that becomes
    # valid is zeroed, and the packet length register moves by the header's size.
    w.line("def _setvalid(self, ctx):")
    w.indent()
    w.line("if not self._valid:")
    for (n, ft), pn in fields:
        ft2 = strip_new(ft)
        w.line(f"    self.{pn} = {zero_value_code(ft2)}")
    w.line("    self._valid = True")
    w.line(f"    ctx.packet_length_delta += {nbytes_hdr}")
    w.dedent()
    w.line("def _setinvalid(self, ctx):")
    w.indent()
    w.line("if self._valid:")
    w.line("    self._valid = False")
    w.line(f"    ctx.packet_length_delta -= {nbytes_hdr}")
    w.dedent()
    if not t.has_varbit:
        width = t.width_bits
        nbytes = (width + 7) >> 3
        _gen_packed_io(w, fields, width, header=True)
        # lookahead<H>() as p4c-bm2-ss compiles it: setValid(), then the fields
        w.line("def _lookahead_set(self, ctx, v):")
        w.line("    self._setvalid(ctx)")
        w.line("    self._load(v)")
        w.line("def _emit(self, ctx):")
        w.indent()
        w.line("if self._valid:")
        w.line(f"    ctx.emitted += self._bits().to_bytes({nbytes}, 'big')")
        w.dedent()
        w.line("def _extract(self, ctx, varbit_len=None):")
        w.indent()
        w.line("o = ctx.offset_bits")
        w.line(f"if o + {width} > len(ctx.data) * 8: raise _ParserErrorSignal(_ERR_PacketTooShort)")
        w.line("if o & 7 == 0:")
        w.line(f"    self._load(int.from_bytes(ctx.data[o >> 3:(o >> 3) + {nbytes}], 'big'))")
        w.line("else:")
        w.line(f"    self._load(_read_bits(ctx.data, o, {width}))")
        w.line(f"ctx.offset_bits = o + {width}")
        w.dedent()
    else:
        w.line("def _extract(self, ctx, varbit_len=None):")
        w.indent()
        w.line("o = ctx.offset_bits")
        w.line("n = len(ctx.data) * 8")
        fixed = sum(_fw(strip_new(ft)) for (_, ft), _ in fields if not isinstance(strip_new(ft), VarbitT))
        max_vb = next(strip_new(ft).max_width for (_, ft), _ in fields if isinstance(strip_new(ft), VarbitT))
        # BMv2's order of checks: a size that is not a whole number of bytes, then the
        # whole header against the packet, then the size against the varbit's maximum
        w.line("vl = int(varbit_len or 0)")
        w.line("if vl & 7: raise _ParserErrorSignal(_ERR_ParserInvalidArgument)")
        w.line(f"if o + {fixed} + vl > n: raise _ParserErrorSignal(_ERR_PacketTooShort)")
        w.line(f"if vl > {max_vb}: raise _ParserErrorSignal(_ERR_HeaderTooShort)")
        for (n, ft), pn in fields:
            ft2 = strip_new(ft)
            if isinstance(ft2, VarbitT):
                w.line(f"self.{pn} = (vl, _read_bits(ctx.data, o, vl) if vl else 0)")
                w.line("o += vl")
            else:
                fw = _fw(ft2)
                w.line(f"if o + {fw} > n: raise _ParserErrorSignal(_ERR_PacketTooShort)")
                val = f"_read_bits(ctx.data, o, {fw})"
                if isinstance(ft2, BitT) and ft2.signed:
                    val = f"_to_signed({val}, {fw})"
                elif isinstance(ft2, BoolT):
                    val = f"bool({val})"
                w.line(f"self.{pn} = {val}")
                w.line(f"o += {fw}")
        w.line("self._valid = True")
        w.line("ctx.offset_bits = o")
        w.dedent()
        w.line("def _flat(self):")
        w.indent()
        items = []
        for (n, ft), pn in fields:
            ft2 = strip_new(ft)
            if isinstance(ft2, VarbitT):
                items.append(f"(self.{pn}[1], self.{pn}[0])")
            else:
                fw = _fw(ft2)
                items.append(f"(self.{pn}, {fw})")
        w.line("return [" + ", ".join(items) + "]")
        w.dedent()
        w.line("def _emit(self, ctx):")
        w.indent()
        w.line("if self._valid:")
        w.line("    ctx.emitted += _pack_fields(self._flat())")
        w.dedent()
        w.line("_width = None")
