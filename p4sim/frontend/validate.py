"""Rules p4c checks on the parsed program before type checking, with p4c's messages.

:func:`validate_program` runs right after parsing (``parse_text``/``parse_file``) and needs
no types: where a declaration may stand (p4c's ``ValidateParsedProgram``), where an
``@optional`` parameter may stand (``CheckNamedArgs``), slice bounds written as literals
(``ConstantFolding``), how a table binds its actions (``TypeInference``: an action's
directionless parameters are the control plane's, and a ``@tableonly`` action is never the
default action), ``int`` parameters, calls in select cases, parsers that never end
(``SimplifyParsers``), a switch in an action (p4c-bm2-ss's ``EliminateSwitch``) and what
p4c's type checker refuses in a generic parser or control (:mod:`~p4sim.frontend.generic_blocks`).
Each rule raises :class:`P4Error` at the offending node, so that such a program gets p4c's
reason instead of reaching the checker in a state it does not expect.

Example::

    >>> from p4sim.frontend.parser import parse_text
    >>> validate_program(parse_text("void f() { }", "ok.p4", validate=False))
    >>> try:
    ...     validate_program(parse_text("const bit<8> x = 8w7[1:-1];", "bad.p4", validate=False))
    ... except P4Error as err:
    ...     print(err)
    bad.p4:1:24: error: -1: expected slice indexes to be non-negative
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Optional, Union

from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.generic_blocks import check_generic_block
from p4sim.frontend.text import expr_text
from p4sim.frontend.types import MAX_WIDTH_BITS

# a width p4c cannot hold in an ``int`` (``Constant::fitsInt``)
MAX_INT_WIDTH = (1 << 31) - 1


def check_type_width(kind: str, width: int, loc: A.Loc) -> None:
    """Refuse a ``bit<W>``/``int<W>``/``varbit<W>`` width p4c refuses, before anything is
    sized by it.

    Example::

        >>> check_type_width("bit", 2048, A.Loc("a.p4", 1, 5))
        >>> try:
        ...     check_type_width("bit", 4096, A.Loc("a.p4", 1, 5))
        ... except P4Error as err:
        ...     print(err)
        a.p4:1:5: error: bit<4096>: Compiler only supports widths up to 2048
    """
    if width > MAX_INT_WIDTH:
        raise P4Error(f"{width}: this implementation does not support bitstrings this large", loc)
    if kind != "varbit" and width > MAX_WIDTH_BITS:
        raise P4Error(f"{kind}<{width}>: Compiler only supports widths up to {MAX_WIDTH_BITS}", loc)


def validate_program(program: A.Program) -> None:
    """Apply every rule to ``program``; raise :class:`P4Error` at the first violation."""
    actions = {d.name: d for d in program.decls if isinstance(d, A.ActionDecl)}
    blocks = {d.name for d in program.decls if isinstance(d, (A.ControlDecl, A.ParserDecl))}
    nodes = list(walk(program, ()))
    used_names = {n.name for n, _ in nodes if isinstance(n, A.NameRef)}
    for node, context in nodes:
        if isinstance(node, A.Instantiation):
            _check_instance_place(node, context)
            if not context[1:] and isinstance(node.type, A.NamedType) and node.type.name in blocks:
                # p4c's TypeInference: only packages (main) are instantiated at top level
                raise P4Error(f"{node.name}: cannot instantiate at top-level", node.loc)
        elif isinstance(node, (A.ControlDecl, A.ParserDecl)):
            _check_no_optional(node.ctor_params)
            if node.type_params:
                check_generic_block(node)
            if isinstance(node, A.ControlDecl):
                local = {d.name: d for d in node.locals if isinstance(d, A.ActionDecl)}
                for d in node.locals:
                    if isinstance(d, A.TableDecl):
                        _check_table(d, node.name, local, actions)
            else:
                _check_parser_ends(node)
        elif isinstance(node, A.FunctionDecl):
            _check_no_optional(node.params)
        elif isinstance(node, A.Param):
            _check_param_default(node)
            _check_int_param(node, context)
        elif isinstance(node, A.Slice):
            _check_slice(node)
        elif isinstance(node, A.SwitchStmt):
            action = next((c for c in context if isinstance(c, A.ActionDecl)), None)
            if action is not None and action.name in used_names:
                # p4c-bm2-ss's midend (EliminateSwitch), for an action the program uses
                raise P4Error("SwitchStatement: switch statements not supported in actions on this target",
                              node.loc)
        elif isinstance(node, A.SelectCase):
            for sub, _ in walk(node.keyset, ()):
                if isinstance(sub, A.Call) and isinstance(sub.func, A.NameRef):
                    raise P4Error(f"{expr_text(sub)}: no function calls allowed in this context", sub.loc)


# --------------------------------------------------------------------------- traversal
Context = tuple[A.Node, ...]


def walk(node: A.Node, context: Context) -> Iterator[tuple[A.Node, Context]]:
    """Every node under ``node`` (itself first) with its enclosing nodes, outermost first.

    Example::

        >>> [type(n).__name__ for n, _ in walk(A.Unary("-", A.IntLit(1)), ())]
        ['Unary', 'IntLit']
    """
    yield node, context
    inner = context + (node,)
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        for child in value if isinstance(value, list) else (value,):
            if isinstance(child, A.Node):
                yield from walk(child, inner)


# --------------------------------------------------------------------------- rules
def _check_instance_place(decl: A.Instantiation, context: Context) -> None:
    """p4c's ValidateParsedProgram: no instances in functions, actions, parser states or a
    control's apply block."""
    where = None
    for outer in reversed(context):
        if isinstance(outer, A.Instantiation):
            return  # a declaration inside an instance's initializer
        if isinstance(outer, (A.FunctionDecl, A.MethodDecl)):
            where = "invalid declaration. Instantiations cannot be in a function or method."
        elif isinstance(outer, A.ActionDecl):
            where = "declaration. Instantiations not allowed in actions."
        elif isinstance(outer, A.ParserState):
            where = "invalid declaration. Instantiations cannot be in a parser state."
        elif isinstance(outer, A.ControlDecl) and context[context.index(outer) + 1:][:1] == (outer.body,):
            where = "invalid declaration. Instantiations cannot be in a control 'apply' block."
        if where is not None:
            raise P4Error(f"{decl.name}: {where}", decl.loc)


def _check_no_optional(params: list[A.Param]) -> None:
    for p in params:
        if any(an.name == "optional" for an in p.annotations):
            raise P4Error(f"{p.name}: optional parameter not allowed here", p.loc)


def _check_param_default(p: A.Param) -> None:
    if p.default is None:
        return
    if any(an.name == "optional" for an in p.annotations):
        raise P4Error(f"{p.name}: optional parameters cannot have default values", p.loc)
    if p.direction in ("out", "inout"):
        raise P4Error(f"{p.name}: out parameters cannot have default values", p.loc)


def _check_int_param(p: A.Param, context: Context) -> None:
    """p4c's TypeInference on a parameter of type ``int`` (arbitrary precision)."""
    if not (isinstance(p.type, A.BaseType) and p.type.name == "int"):
        return
    if p.direction:
        raise P4Error(f"{p.name}: parameters with type int must be directionless", p.loc)
    if context and isinstance(context[-1], A.ActionDecl):
        raise P4Error(f"{p.name}: actions cannot have parameters with type int", p.loc)


def _check_parser_ends(parser: A.ParserDecl) -> None:
    """p4c's SimplifyParsers: from ``start``, ``accept`` or ``reject`` must be reachable."""
    states = {s.name: s for s in parser.states}
    if "start" not in states:
        return  # the checker names the missing start state
    seen, todo = set(), ["start"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        st = states.get(name)
        if st is None and name not in ("accept", "reject"):
            return  # an unknown state: the checker names it first, as p4c does
        tr = st.transition if st is not None else None
        if tr is not None:
            todo += [tr.state] if tr.state is not None else [c.state for c in tr.cases]
    if not seen & {"accept", "reject"}:
        raise P4Error(f"parser {parser.name}: Parser never reaches accept or reject state", parser.loc)


def _literal_int(e: A.Expr) -> Optional[int]:
    """The value of an integer literal, possibly negated (``-1``); None for anything else."""
    if isinstance(e, A.IntLit):
        return e.value
    if isinstance(e, A.Unary) and e.op in ("-", "+"):
        v = _literal_int(e.expr)
        return None if v is None else (-v if e.op == "-" else v)
    return None


def _check_slice(e: A.Slice) -> None:
    """p4c's ConstantFolding on ``x[m:l]`` with literal bounds."""
    for bound in (e.hi, e.lo):
        if isinstance(bound, (A.StringLit, A.BoolLit)):
            raise P4Error(f"{expr_text(bound)}: expected an integer value", bound.loc)
    m, lo = _literal_int(e.hi), _literal_int(e.lo)
    if m is None or lo is None:
        return
    if m < lo:
        raise P4Error(f"{expr_text(e)}: bit slicing should be specified as [msb:lsb]", e.loc)
    if lo < 0:
        raise P4Error(f"{expr_text(e.lo)}: expected slice indexes to be non-negative", e.lo.loc)
    if m > MAX_WIDTH_BITS:
        raise P4Error(f"{expr_text(e)}: Compiler only supports widths up to {MAX_WIDTH_BITS}", e.loc)


def _annotated(node: Union[A.ActionRef, A.ActionDecl], name: str) -> bool:
    return any(an.name == name for an in node.annotations)


def _check_table(table: A.TableDecl, control: str, local: dict[str, A.ActionDecl],
                 toplevel: dict[str, A.ActionDecl]) -> None:
    """How ``table`` (declared in ``control``) refers to its actions (p4c's TypeInference on
    tables; the scope annotations as its P4Runtime serializer reads them: on the actions
    list's element, not on the action's declaration)."""
    def resolve(ref: A.ActionRef) -> Optional[A.ActionDecl]:
        name = ref.name
        if not isinstance(name, A.NameRef):
            return None
        return toplevel.get(name.name) if name.is_global else local.get(name.name, toplevel.get(name.name))

    kp = table.prop("key")
    for ke in kp.value if kp is not None and isinstance(kp.value, list) else []:
        complex_part = None if _annotated(ke, "name") else _unnameable(ke.expr)
        if complex_part is not None:
            raise P4Error(f"{expr_text(complex_part)}: Complex key expression requires a @name annotation",
                          complex_part.loc)
    listed: dict[int, A.ActionRef] = {}
    ap = table.prop("actions")
    for ref in ap.value if ap is not None and isinstance(ap.value, list) else []:
        decl = resolve(ref)
        if decl is None:
            continue
        listed[id(decl)] = ref
        if _annotated(ref, "tableonly") and _annotated(ref, "defaultonly"):
            owner = f"{control}." if decl is local.get(decl.name) else ""
            raise P4Error(f"Table '{control}.{table.name}' has an action reference ('{owner}{decl.name}') "
                          "which is annotated with both '@tableonly' and '@defaultonly'", ref.loc)
        if any(a.name is not None for a in ref.args):
            continue
        for param, arg in zip(decl.params, ref.args):
            if param.direction == "":
                raise P4Error(f"{expr_text(arg.value)}: parameter {param.name} cannot be bound: "
                              "it is set by the control plane", arg.loc)
    dp = table.prop("default_action")
    if dp is None or not isinstance(dp.value, A.ActionRef):
        return
    decl = resolve(dp.value)
    ref = listed.get(id(decl)) if decl is not None else None
    if ref is not None and _annotated(ref, "tableonly"):
        raise P4Error("default_action: Action marked with tableonly used as default action", dp.loc)
    if decl is not None and not any(a.name is not None for a in dp.value.args):
        for param, arg in zip(decl.params, dp.value.args):
            if param.direction in ("out", "inout") and not _is_lvalue(arg.value):
                raise P4Error(f"{expr_text(arg.value)}: must be a left-value", arg.loc)
    ep = table.prop("entries")
    for entry in ep.value if ep is not None and isinstance(ep.value, list) else []:
        edecl = resolve(entry.action)
        eref = listed.get(id(edecl)) if edecl is not None else None
        if eref is not None and _annotated(eref, "defaultonly"):
            raise P4Error("Entry: Action marked with defaultonly used in table", entry.loc)


def _unnameable(e: A.Expr) -> Optional[A.Expr]:
    """The innermost part of a table key p4c cannot name (its KeyNameGenerator: names,
    fields, indexes, constants, slices, ``&`` and ``isValid()``; anything else needs
    ``@name``), or None.

    >>> field = A.Member(A.NameRef("h"), "a")
    >>> _unnameable(A.Binary("&", field, A.IntLit(15))) is None
    True
    >>> expr_text(_unnameable(A.Binary("+", field, A.IntLit(1))))
    'h.a + 1'
    """
    parts: list[A.Expr]
    if isinstance(e, (A.NameRef, A.IntLit)):
        return None
    if isinstance(e, A.Member):
        parts = [e.expr]
    elif isinstance(e, A.Index):
        parts = [e.expr, e.index]
    elif isinstance(e, A.Slice):
        parts = [e.expr, e.hi, e.lo]
    elif isinstance(e, A.Binary) and e.op == "&":
        parts = [e.left, e.right]
    elif isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "isValid" and not e.args:
        parts = [e.func.expr]
    elif isinstance(e, A.Call):
        inner = next((p for p in (_unnameable(a.value) for a in e.args) if p is not None), None)
        return inner or e
    else:
        parts = [c for c in (getattr(e, f, None) for f in ("expr", "left", "right", "cond", "then", "other"))
                 if isinstance(c, A.Expr)]
        return next((p for p in (_unnameable(c) for c in parts) if p is not None), e)
    return next((p for p in (_unnameable(c) for c in parts) if p is not None), None)


def _is_lvalue(e: A.Expr) -> bool:
    if isinstance(e, (A.NameRef, A.DontCare)):
        return True
    if isinstance(e, (A.Member, A.Index, A.Slice)):
        return _is_lvalue(e.expr)
    return False


