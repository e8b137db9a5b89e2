"""Abstract syntax tree of P4_16 programs, as produced by :mod:`p4sim.frontend.parser`.

Every node carries ``loc`` (file, line, column of its first token) so that later passes
can report ``file:line:col: error: ...``.  The checker (:mod:`p4sim.frontend.checker`)
adds attributes to nodes after parsing (``ty`` on expressions, ``decl`` on names); the
dataclasses therefore do not use ``slots``.

Example::

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text("const bit<8> X = 8w5;", "x.p4")
    >>> prog.decls[0].name
    'X'
"""
from __future__ import annotations

import dataclasses

from dataclasses import dataclass, field
from typing import Iterator, Optional, Union


@dataclass(frozen=True)
class Loc:
    """A position in a source file (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NO_LOC = Loc("<builtin>", 0, 0)


@dataclass(eq=False)
class Node:
    loc: Loc = field(default=NO_LOC, kw_only=True)


# --------------------------------------------------------------------------- annotations
@dataclass(eq=False)
class Annotation(Node):
    """``@name``, ``@name(expr, ...)`` (unstructured: ``exprs`` parsed when possible,
    ``raw`` always kept), ``@name[k=v, ...]`` (structured: ``kv``) or ``@name[e, ...]``."""

    name: str
    raw: str = ""                      # text between the parentheses, as written
    exprs: Optional[list["Expr"]] = None  # parsed body of ( ... ) or [ ... ] when it parses
    kv: Optional[dict[str, "Expr"]] = None  # structured key=value form
    structured: bool = False
    # a syntax error in the body that p4c reports only where it reads the body, not while
    # parsing the program (``@p4runtime_translation``: P4Info, for a type it keeps)
    deferred_error: Optional[tuple[str, Optional["Loc"]]] = None


# --------------------------------------------------------------------------- types (syntax)
@dataclass(eq=False)
class TypeRef(Node):
    pass


@dataclass(eq=False)
class NamedType(TypeRef):
    """A type named by identifier (``H``, ``.H``, ``register<bit<8>>``, ``packet_in``)."""

    name: str
    args: list[TypeRef] = field(default_factory=list)
    is_global: bool = False


@dataclass(eq=False)
class BitType(TypeRef):
    """``bit<W>`` (signed False), ``int<W>`` (signed True), ``bit`` alone is bit<1>.
    ``width`` is an expression (usually IntLit; may be a parenthesised constant expr)."""

    width: "Expr"
    signed: bool = False


@dataclass(eq=False)
class VarbitType(TypeRef):
    width: "Expr"


@dataclass(eq=False)
class BaseType(TypeRef):
    """``bool``, ``void``, ``string``, ``error``, ``match_kind``, ``int`` (arbitrary precision)."""

    name: str


@dataclass(eq=False)
class TupleType(TypeRef):
    elems: list[TypeRef]


@dataclass(eq=False)
class StackType(TypeRef):
    """``T[size]``"""

    elem: TypeRef
    size: "Expr"


@dataclass(eq=False)
class DontCareType(TypeRef):
    """``_`` used as a type argument."""


# --------------------------------------------------------------------------- expressions
@dataclass(eq=False)
class Expr(Node):
    pass


@dataclass(eq=False)
class IntLit(Expr):
    """Integer literal. ``width``/``signed`` are None for an untyped literal (``5``);
    ``8w5`` → width 8, signed False; ``8s5`` → width 8, signed True."""

    value: int
    width: Optional[int] = None
    signed: Optional[bool] = None
    text: str = ""


@dataclass(eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False)
class StringLit(Expr):
    value: str


@dataclass(eq=False)
class NameRef(Expr):
    """An identifier in expression position; ``is_global`` for a leading dot (``.x``)."""

    name: str
    is_global: bool = False


@dataclass(eq=False)
class TypeNameExpr(Expr):
    """A type used in expression position where the grammar allows it, e.g. the callee
    of a constructor call ``register<bit<8>>(4)`` or ``bit<8>`` in ``(bit<8>)x`` is a Cast,
    but ``.minSizeInBits()`` applied to a type uses this node."""

    type: TypeRef


@dataclass(eq=False)
class Member(Expr):
    """``expr.name``; ``name_loc``: where ``name`` is written (p4c points there)."""

    expr: Expr
    name: str
    name_loc: Loc = field(default=NO_LOC, kw_only=True)


@dataclass(eq=False)
class Index(Expr):
    """``expr[index]``"""

    expr: Expr
    index: Expr


@dataclass(eq=False)
class Slice(Expr):
    """``expr[hi:lo]``; ``plus`` when written ``expr[lo +: width]`` (hi is then lo + width - 1)."""

    expr: Expr
    hi: Expr
    lo: Expr
    plus: bool = False


@dataclass(eq=False)
class DontCare(Expr):
    """``_`` as an expression (an out argument that is discarded, or a keyset)."""


@dataclass(eq=False)
class Argument(Node):
    """A call argument, positional (``name`` None) or named (``name = value``)."""

    value: Expr
    name: Optional[str] = None


@dataclass(eq=False)
class Call(Expr):
    """``func<type_args>(args)``: function, action, method, extern constructor or
    parser/control/package instantiation (the checker decides which)."""

    func: Expr
    args: list[Argument] = field(default_factory=list)
    type_args: list[TypeRef] = field(default_factory=list)


@dataclass(eq=False)
class Unary(Expr):
    """op in ``!``, ``~``, ``-``, ``+``"""

    op: str
    expr: Expr


@dataclass(eq=False)
class Binary(Expr):
    """op in ``* / % + - |+| |-| << >> <= >= < > == != & ^ | ++ && || &&& ..``"""

    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(eq=False)
class Cast(Expr):
    type: TypeRef
    expr: Expr


@dataclass(eq=False)
class ListExpr(Expr):
    """``{a, b, c}`` (a tuple/list/struct initializer by position)."""

    elems: list[Expr]


@dataclass(eq=False)
class StructExpr(Expr):
    """``{a = 1, b = 2}``, optionally typed ``(T){...}`` is parsed as Cast(T, StructExpr);
    ``dots``: written ``{a = 1, ...}`` (the other fields take their default values)."""

    fields: list[tuple[str, Expr]]
    dots: bool = field(default=False, kw_only=True)


@dataclass(eq=False)
class DefaultExpr(Expr):
    """``default`` in a select case or keyset, and ``...`` in initializers."""


# --------------------------------------------------------------------------- statements
@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class AssignStmt(Stmt):
    """``lhs = rhs``; ``compound`` is the operator of a rewritten ``lhs op= rhs`` (``"+"``)."""

    lhs: Expr
    rhs: Expr
    compound: str = ""


@dataclass(eq=False)
class CallStmt(Stmt):
    """A method/function/action call (or ``t.apply()``) used as a statement."""

    call: Call


@dataclass(eq=False)
class BlockStmt(Stmt):
    stmts: list[Union[Stmt, "Decl"]]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class IfStmt(Stmt):
    cond: Expr
    then: Stmt
    other: Optional[Stmt] = None


@dataclass(eq=False)
class SwitchCase(Node):
    """``label: body`` — label is an Expr (action name as NameRef, or a value) or
    DefaultExpr; body None means fall-through to the next case."""

    label: Expr
    body: Optional[BlockStmt]


@dataclass(eq=False)
class SwitchStmt(Stmt):
    expr: Expr
    cases: list[SwitchCase]


@dataclass(eq=False)
class ExitStmt(Stmt):
    pass


@dataclass(eq=False)
class ReturnStmt(Stmt):
    value: Optional[Expr] = None


@dataclass(eq=False)
class EmptyStmt(Stmt):
    pass


@dataclass(eq=False)
class ForStmt(Stmt):
    """``for (init; cond; update) body`` — init holds VarDecl/AssignStmt/CallStmt nodes,
    update AssignStmt/CallStmt nodes; cond None means "forever"."""

    init: list[Node]
    cond: Optional[Expr]
    update: list[Stmt]
    body: Stmt


@dataclass(eq=False)
class ForInStmt(Stmt):
    """``for (T x in collection) body`` (p4c's grammar requires the type);
    the collection is a Range (``lo .. hi``), a list expression or a header stack."""

    typeref: Optional["TypeRef"]
    name: str
    collection: Expr
    body: Stmt


@dataclass(eq=False)
class BreakStmt(Stmt):
    pass


@dataclass(eq=False)
class ContinueStmt(Stmt):
    pass


# --------------------------------------------------------------------------- declarations
@dataclass(eq=False)
class Decl(Node):
    name: str = ""
    annotations: list[Annotation] = field(default_factory=list, kw_only=True)


@dataclass(eq=False)
class Param(Node):
    """A parameter. ``direction`` is "" (directionless), "in", "out" or "inout"."""

    direction: str
    type: TypeRef
    name: str
    default: Optional[Expr] = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class ConstDecl(Decl):
    type: TypeRef = None  # type: ignore[assignment]
    value: Expr = None  # type: ignore[assignment]


@dataclass(eq=False)
class VarDecl(Decl):
    """``T name = init;``; ``name_loc``: where ``name`` is written (p4c points there)."""

    type: TypeRef = None  # type: ignore[assignment]
    init: Optional[Expr] = None
    name_loc: Optional[Loc] = field(default=None, kw_only=True)


@dataclass(eq=False)
class TypedefDecl(Decl):
    """``typedef T name;`` (is_newtype False) or ``type T name;`` (is_newtype True)."""

    type: TypeRef = None  # type: ignore[assignment]
    is_newtype: bool = False


@dataclass(eq=False)
class StructField(Node):
    type: TypeRef
    name: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class StructLikeDecl(Decl):
    """``header``, ``header_union`` or ``struct`` (``kind``); ``name_loc``: where the name
    is written (p4c points there)."""

    kind: str = "struct"
    fields: list[StructField] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    name_loc: Loc = field(default=NO_LOC, kw_only=True)


@dataclass(eq=False)
class EnumDecl(Decl):
    """``enum E { A, B }`` or serializable ``enum bit<8> E { A = 1, B = 2 }``."""

    members: list[str] = field(default_factory=list)
    underlying: Optional[TypeRef] = None
    values: Optional[list[Expr]] = None


@dataclass(eq=False)
class ErrorDecl(Decl):
    """``error { A, B }`` — several declarations are merged."""

    members: list[str] = field(default_factory=list)


@dataclass(eq=False)
class MatchKindDecl(Decl):
    """``match_kind { a, b }``; ``member_locs``: where each member is written."""

    members: list[str] = field(default_factory=list)
    member_locs: list[Loc] = field(default_factory=list, kw_only=True)


@dataclass(eq=False)
class MethodDecl(Decl):
    """A method (or constructor, when ``return_type`` is None and name equals the
    extern's name) of an extern; ``is_abstract`` for ``abstract`` methods."""

    return_type: Optional[TypeRef] = None
    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    is_abstract: bool = False


@dataclass(eq=False)
class ExternDecl(Decl):
    type_params: list[str] = field(default_factory=list)
    methods: list[MethodDecl] = field(default_factory=list)


@dataclass(eq=False)
class FunctionProto(Decl):
    """An extern function declaration (``extern T f<...>(params);``)."""

    return_type: TypeRef = None  # type: ignore[assignment]
    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False)
class FunctionDecl(Decl):
    return_type: TypeRef = None  # type: ignore[assignment]
    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    body: BlockStmt = None  # type: ignore[assignment]


@dataclass(eq=False)
class ActionDecl(Decl):
    params: list[Param] = field(default_factory=list)
    body: BlockStmt = None  # type: ignore[assignment]


@dataclass(eq=False)
class KeyElement(Node):
    expr: Expr
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class ActionRef(Node):
    """An action named in a table (``a``, ``a(1, 2)`` with bound args)."""

    name: Expr  # NameRef (possibly global) or Member for qualified names
    args: list[Argument] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    has_parens: bool = False


@dataclass(eq=False)
class TableEntry(Node):
    """A ``const entries`` / ``entries`` element: ``keyset : action``; ``priority`` when
    written as ``priority=N : keyset : action``; ``is_const`` for ``const`` entries."""

    keys: list[Expr]  # one per key element; Mask/Range are Binary &&& / ..; DefaultExpr/DontCare
    action: ActionRef
    priority: Optional[Expr] = None
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableProperty(Node):
    """One table property. ``name`` is ``key``, ``actions``, ``entries``,
    ``default_action``, ``size``, ``implementation``, ``counters``, ``meters``,
    ``support_timeout`` or any custom name. ``value`` holds:
    key → list[KeyElement]; actions → list[ActionRef]; entries → list[TableEntry];
    default_action → ActionRef; any other → Expr."""

    name: str
    value: object
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableDecl(Decl):
    """``table name { properties }``; ``name_loc`` is where the name is written (p4c
    points there)."""

    properties: list[TableProperty] = field(default_factory=list)
    name_loc: Optional[Loc] = field(default=None, kw_only=True)

    def prop(self, name: str) -> Optional[TableProperty]:
        for p in self.properties:
            if p.name == name:
                return p
        return None


@dataclass(eq=False)
class ValueSetDecl(Decl):
    """``value_set<T>(size) name;``"""

    elem_type: TypeRef = None  # type: ignore[assignment]
    size: Expr = None  # type: ignore[assignment]


@dataclass(eq=False)
class Instantiation(Decl):
    """``T(args) name;`` or ``T(args) name = { abstract method bodies };``"""

    type: TypeRef = None  # type: ignore[assignment]
    args: list[Argument] = field(default_factory=list)
    initializer: Optional[list[Decl]] = None


# parsers ------------------------------------------------------------------------------
@dataclass(eq=False)
class SelectCase(Node):
    """``keyset : state`` — keyset is an Expr (value, Binary &&&, Binary .., DefaultExpr,
    DontCare, or ListExpr of those for tuple keys)."""

    keyset: Expr
    state: str


@dataclass(eq=False)
class Transition(Node):
    """``transition state;`` (``state`` set) or ``transition select(keys) {cases}``."""

    state: Optional[str] = None
    select_keys: Optional[list[Expr]] = None
    cases: list[SelectCase] = field(default_factory=list)


@dataclass(eq=False)
class ParserState(Decl):
    stmts: list[Union[Stmt, Decl]] = field(default_factory=list)
    transition: Optional[Transition] = None


@dataclass(eq=False)
class ParserTypeDecl(Decl):
    """``parser P<T>(params);`` — a parser type (prototype)."""

    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False)
class ParserDecl(Decl):
    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    ctor_params: list[Param] = field(default_factory=list)
    locals: list[Decl] = field(default_factory=list)
    states: list[ParserState] = field(default_factory=list)


@dataclass(eq=False)
class ControlTypeDecl(Decl):
    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False)
class ControlDecl(Decl):
    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    ctor_params: list[Param] = field(default_factory=list)
    locals: list[Decl] = field(default_factory=list)
    body: BlockStmt = None  # type: ignore[assignment]


@dataclass(eq=False)
class PackageTypeDecl(Decl):
    type_params: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False)
class Program(Node):
    decls: list[Decl]


def iter_nodes(node: Node) -> Iterator[Node]:
    """``node`` and every node below it, depth first (fields that are nodes or lists of
    nodes).

    >>> [type(n).__name__ for n in iter_nodes(Member(NameRef("hdr"), "ipv4"))]
    ['Member', 'NameRef']
    """
    yield node
    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        for child in value if isinstance(value, list) else (value,):
            if isinstance(child, Node):
                yield from iter_nodes(child)


def flat_statements(stmts: list[Stmt]) -> Iterator[Stmt]:
    """The statements of a block in order, nested ``{ ... }`` blocks opened.

    >>> [type(s).__name__ for s in flat_statements([BlockStmt([ExitStmt()]), ExitStmt()])]
    ['ExitStmt', 'ExitStmt']
    """
    for s in stmts:
        if isinstance(s, BlockStmt):
            yield from flat_statements(s.stmts)
        else:
            yield s
