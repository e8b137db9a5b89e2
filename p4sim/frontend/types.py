"""P4_16 types as the checker and the code generator see them (after typedefs are resolved).

Example::

    >>> BitT(8).mask
    255
    >>> str(StackT(HeaderT("h_t", []), 4))
    'h_t[4]'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


class P4Type:
    """Base of every type."""

    def is_composite(self) -> bool:
        return False


# p4c's ``maximumWidthSupported`` (ir/configuration.h): no bit<W>/int<W> is wider
MAX_WIDTH_BITS = 2048


@dataclass(eq=True, frozen=True)
class BitT(P4Type):
    """``bit<W>`` or ``int<W>``; a width over :data:`MAX_WIDTH_BITS` is refused here, as
    p4c's ``Type_Bits::get`` does, before anything is sized by it (a width written as a
    literal is refused earlier, at its position, by the parser)."""

    width: int
    signed: bool = False

    def __post_init__(self) -> None:
        if self.width > MAX_WIDTH_BITS:
            from p4sim.errors import P4Error

            raise P4Error(f"{self}: Compiler only supports widths up to {MAX_WIDTH_BITS}")

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(eq=True, frozen=True)
class IntT(P4Type):
    """Arbitrary-precision integer: the type of an untyped literal (``5``)."""

    def __str__(self) -> str:
        return "int"


@dataclass(eq=True, frozen=True)
class VarbitT(P4Type):
    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(eq=True, frozen=True)
class BoolT(P4Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(eq=True, frozen=True)
class StringT(P4Type):
    def __str__(self) -> str:
        return "string"


@dataclass(eq=True, frozen=True)
class VoidT(P4Type):
    def __str__(self) -> str:
        return "void"


@dataclass(eq=True, frozen=True)
class ErrorT(P4Type):
    def __str__(self) -> str:
        return "error"


@dataclass(eq=True, frozen=True)
class MatchKindT(P4Type):
    def __str__(self) -> str:
        return "match_kind"


@dataclass(eq=True, frozen=True)
class DontCareT(P4Type):
    def __str__(self) -> str:
        return "_"


@dataclass(eq=False)
class EnumT(P4Type):
    """An enum; ``underlying`` is set for serializable enums (values are ints then,
    otherwise the runtime value of a member is its name)."""

    name: str
    members: list[str]
    underlying: Optional[BitT] = None
    values: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class StructLikeT(P4Type):
    name: str
    fields: list[tuple[str, P4Type]]
    kind: str = "struct"
    annotations: dict[str, list[Any]] = field(default_factory=dict)  # field → annotations
    pyclass: str = ""  # name of the generated Python class

    def field_type(self, name: str) -> Optional[P4Type]:
        for n, t in self.fields:
            if n == name:
                return t
        return None

    def is_composite(self) -> bool:
        return True

    def __str__(self) -> str:
        return self.name


class StructT(StructLikeT):
    def __init__(self, name: str, fields: list[tuple[str, P4Type]]) -> None:
        super().__init__(name, fields, "struct")


class HeaderT(StructLikeT):
    def __init__(self, name: str, fields: list[tuple[str, P4Type]]) -> None:
        super().__init__(name, fields, "header")

    @property
    def width_bits(self) -> int:
        total = 0
        for _, t in self.fields:
            t = strip_new(t)
            if isinstance(t, VarbitT):
                total += t.max_width
            else:
                total += packed_width(t) or 0
        return total

    @property
    def has_varbit(self) -> bool:
        return any(isinstance(strip_new(t), VarbitT) for _, t in self.fields)


class UnionT(StructLikeT):
    def __init__(self, name: str, fields: list[tuple[str, P4Type]]) -> None:
        super().__init__(name, fields, "header_union")


@dataclass(eq=False)
class StackT(P4Type):
    elem: P4Type
    size: int

    def is_composite(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"{self.elem}[{self.size}]"


@dataclass(eq=False)
class TupleT(P4Type):
    elems: list[P4Type]

    def __str__(self) -> str:
        return "tuple<" + ", ".join(map(str, self.elems)) + ">"


@dataclass(eq=False)
class NewT(P4Type):
    """``type bit<32> ip_t;`` — a new type; values are those of ``base``."""

    name: str
    base: P4Type

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class ExternT(P4Type):
    name: str
    decl: Any
    type_args: dict[str, P4Type] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class BlockT(P4Type):
    """A parser, control or package type (``kind``)."""

    kind: str
    name: str
    decl: Any

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class TableT(P4Type):
    name: str

    def __str__(self) -> str:
        return f"table {self.name}"


@dataclass(eq=False)
class ApplyResultT(P4Type):
    table: Any

    def __str__(self) -> str:
        return "apply_result"


@dataclass(eq=False)
class ActionEnumT(P4Type):
    table: Any

    def __str__(self) -> str:
        return "action_list"


@dataclass(eq=False)
class TypeVarT(P4Type):
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class SetT(P4Type):
    """The type of a keyset expression (``a &&& b``, ``a .. b``, ``default``)."""

    elem: P4Type


def strip_new(t: P4Type) -> P4Type:
    """The representation type of ``t`` (a ``type`` declaration's base)."""
    while isinstance(t, NewT):
        t = t.base
    return t


def bit_width(t: P4Type) -> Optional[int]:
    t = strip_new(t)
    if isinstance(t, BitT):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    return None


def packed_width(t: P4Type) -> Optional[int]:
    """Bits of a value that can be a header field: :func:`bit_width`, or the sum of a
    struct's fields when each is one (P4_16 allows such a struct in a header);
    None for anything else.

    Example::

        >>> packed_width(StructT("s", [("a", BitT(4)), ("b", StructT("t", [("c", BoolT())]))]))
        5
    """
    t = strip_new(t)
    if isinstance(t, StructT):
        widths = [packed_width(ft) for _, ft in t.fields]
        return None if any(w is None for w in widths) else sum(w or 0 for w in widths)
    return bit_width(t)


def lookahead_width(t: P4Type) -> Optional[int]:
    """Bits ``lookahead<T>()`` reads for a ``T`` p4c-bm2-ss can split into its fields
    (p4c's ExpandLookahead): :func:`packed_width`, or the sum over a header (no varbit),
    a struct of such fields, or a stack of headers; None for anything else.

    Example::

        >>> lookahead_width(StructT("s", [("h", StackT(HeaderT("h1", [("f", BitT(8))]), 3))]))
        24
    """
    t = strip_new(t)
    if isinstance(t, HeaderT):
        return None if t.has_varbit else t.width_bits
    if isinstance(t, StackT):
        w = lookahead_width(t.elem) if isinstance(strip_new(t.elem), HeaderT) else None
        return None if w is None else w * t.size
    if isinstance(t, StructT):
        widths = [lookahead_width(ft) for _, ft in t.fields]
        return None if any(w is None for w in widths) else sum(w or 0 for w in widths)
    return bit_width(t)


def same_type(a: P4Type, b: P4Type) -> bool:
    if a is b:
        return True
    if isinstance(a, (BitT, IntT, BoolT, StringT, VoidT, ErrorT, MatchKindT, VarbitT)):
        return a == b
    if isinstance(a, StackT) and isinstance(b, StackT):
        return a.size == b.size and same_type(a.elem, b.elem)
    if isinstance(a, TupleT) and isinstance(b, TupleT):
        return len(a.elems) == len(b.elems) and all(same_type(x, y) for x, y in zip(a.elems, b.elems))
    if isinstance(a, StructLikeT) and isinstance(b, StructLikeT):
        return a.name == b.name and a.kind == b.kind
    if isinstance(a, EnumT) and isinstance(b, EnumT):
        return a.name == b.name
    if isinstance(a, NewT) and isinstance(b, NewT):
        return a.name == b.name
    if isinstance(a, ExternT) and isinstance(b, ExternT):
        return a.name == b.name
    return False
