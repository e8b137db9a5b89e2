"""Warnings as p4c-bm2-ss gives them on a program it compiles: printed on stderr as
``file:line:col: [--Wwarn=KIND] warning: MESSAGE`` (and ``[--Winfo=KIND] info:``), the
source line and carets under the name; compilation still succeeds (exit status 0).

The ones p4c's testdata shows most for v1model programs, with p4c's texts and order:

* ``unused`` (front end, WarnAboutUnusedDeclarations): a ``typedef``/``type``, constant,
  variable, action (and its parameters), function, value set, extern instance, table
  (``table 't' is unused``), control or parser (``control 'C' is unused``) that nothing
  refers to. Never for structs, headers, enums, errors, externs, parser states, the
  parameters of controls, parsers and functions, ``main``, names starting with ``__``,
  the system files (core.p4, v1model.p4), or under ``@noWarn("unused")``.
* ``ignore-prop`` and ``mismatch`` (front end): a table key that is a constant
  (``KeyElement: constant key element``; after the infos below, ``8w255: Constant key
  field`` at the literal it folds to).
* ``removed`` infos: ``removing table 't'`` (control, parser) for what the front end
  then deletes (RemoveAllUnusedDeclarations, repeated until nothing more goes).
* ``unsupported`` (BMv2 back end): ``Explicit transition to reject not supported on this
  target`` at each ``reject`` of a transition, and a struct value set field whose
  ``@match`` is not ``exact`` ("the annotation will be ignored").
* ``unused`` (BMv2 back end): ``Unused action parameter p`` for an action a table uses.

``--Wdisable`` silences every warning (infos stay), ``--Wdisable=KIND`` one kind (also
``removed``), as in p4c.

Example::

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text("typedef bit<8> byte_t;\\ncontrol C() { apply { } }", "w.p4")
    >>> [str(d) for d in program_warnings(prog)]
    ["w.p4:1:16: [--Wwarn=unused] warning: 'byte_t' is unused", "w.p4:2:9: [--Wwarn=unused] warning: control 'C' is unused", "w.p4:2:9: [--Winfo=removed] info: removing control 'C'"]
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Sequence

from p4sim.errors import source_line
from p4sim.frontend import ast as A
from p4sim.frontend.loops import LoopingFunctions, called_functions
from p4sim.frontend.text import at_name, expr_text
from p4sim.frontend.uses import removed_blocks_and_tables, used_declarations

_SYSTEM_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "p4include")


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One warning (``level`` "warning") or info, located at a name of ``width`` chars."""

    loc: A.Loc
    kind: str
    message: str
    level: str = "warning"
    width: int = 1
    other: Optional[A.Loc] = None   # a second place p4c shows (the declaration shadowed)
    other_width: int = 1

    def __str__(self) -> str:
        tag = "Wwarn" if self.level == "warning" else "Winfo"
        return f"{self.loc}: [--{tag}={self.kind}] {self.level}: {self.message}"

    def render(self) -> str:
        """The line, the source line and carets under the name."""
        text = _at(str(self), self.loc, self.width)
        if self.other is not None:
            text += "\n" + _at(str(self.other), self.other, self.other_width)
        return text


def _at(head: str, loc: A.Loc, width: int) -> str:
    """``head``, then the source line of ``loc`` and carets under its ``width`` chars."""
    line = source_line(loc)
    if line is None:
        return head
    return f"{head}\n{line.rstrip()}\n{' ' * (max(loc.col, 1) - 1)}{'^' * max(width, 1)}"


@dataclass(frozen=True, slots=True)
class WarningFilter:
    """``--Wdisable`` (``all_warnings``) and ``--Wdisable=KIND`` (``kinds``).

    >>> WarningFilter.from_options(["unused"]).shows(Diagnostic(A.Loc("a", 1, 1), "unused", "x"))
    False
    """

    all_warnings: bool = False
    kinds: frozenset[str] = frozenset()

    @classmethod
    def from_options(cls, disabled: Optional[Sequence[Optional[str]]]) -> "WarningFilter":
        values = list(disabled or [])
        return cls(any(not v for v in values), frozenset(v for v in values if v))

    def shows(self, d: Diagnostic) -> bool:
        if d.kind in self.kinds:
            return False
        return not (self.all_warnings and d.level == "warning")


def _is_system(loc: A.Loc) -> bool:
    return os.path.abspath(loc.file).startswith(_SYSTEM_DIR + os.sep)


def _no_warn(anns: Iterable[A.Annotation]) -> bool:
    return any(a.name == "noWarn" and "unused" in a.raw for a in anns)


def external_name(d: Any) -> str:
    """The name p4c's messages give a declaration: its ``@name`` as written (``".dc"`` for
    ``@name(".dc")``, measured on p4c-bm2-ss 1.2.5.16: "'.dc' is unused"), else its name."""
    for a in getattr(d, "annotations", None) or []:
        if a.name == "name":
            if a.exprs and isinstance(a.exprs[0], A.StringLit):
                return a.exprs[0].value
            raw = a.raw.strip().strip('"')
            if raw:
                return raw
    return d.name


def _diag(loc: A.Loc, name: str, message: str, kind: str = "unused", level: str = "warning") -> Diagnostic:
    return Diagnostic(at_name(loc, name), kind, message, level, len(name))


# --------------------------------------------------------------------------- front end: shadow
def _shadowed_parameters(prog: A.Program) -> list[Diagnostic]:
    """A control's or parser's own local named like one of its parameters (constructor
    parameters too): p4c's ResolveReferences warns ``'meta' shadows 'meta'`` at the local,
    then shows the parameter, and compiles (measured on p4c-bm2-ss 1.2.5.16). The same
    inside an action, function, state or block is an error (the compiler's)."""
    out = []
    for d in prog.decls:
        if not isinstance(d, (A.ControlDecl, A.ParserDecl)) or _is_system(d.loc):
            continue
        params = {p.name: p for p in list(d.ctor_params) + list(d.params)}
        for loc in d.locals:
            p = params.get(loc.name)
            if p is not None:
                out.append(Diagnostic(at_name(loc.loc, loc.name), "shadow", f"'{loc.name}' shadows '{p.name}'",
                                      width=len(loc.name), other=at_name(p.loc, p.name), other_width=len(p.name)))
    return out


# --------------------------------------------------------------------------- front end: unused
class _Unused:
    def __init__(self, used: set[int]) -> None:
        self.used = used
        self.out: list[Diagnostic] = []

    def unused(self, d: Any, silenced: bool) -> bool:
        return id(d) not in self.used and not silenced and not _is_system(d.loc)

    def decl(self, d: Any, silenced: bool, top: bool = False) -> None:
        silenced = silenced or _no_warn(getattr(d, "annotations", []))
        if isinstance(d, A.ControlDecl) or isinstance(d, A.ParserDecl):
            kind = "control" if isinstance(d, A.ControlDecl) else "parser"
            if self.unused(d, silenced):
                self.out.append(_diag(d.loc, d.name, f"{kind} '{d.name}' is unused"))
            for loc in d.locals:
                self.decl(loc, silenced)
            if isinstance(d, A.ControlDecl):
                self.body(d.body, silenced)
            else:
                for st in d.states:
                    self.body(st.stmts, silenced or _no_warn(st.annotations))
            return
        if isinstance(d, A.TableDecl):
            if self.unused(d, silenced):
                self.out.append(_diag(d.loc, d.name, f"table '{external_name(d)}' is unused"))
            return
        warned = isinstance(d, (A.TypedefDecl, A.ConstDecl, A.VarDecl, A.ActionDecl, A.FunctionDecl,
                                A.ValueSetDecl, A.Instantiation))
        if warned and not (top and d.name == "main") and not d.name.startswith("__") \
                and not _static_assert(d) and self.unused(d, silenced):
            self.out.append(_diag(d.loc, d.name, f"'{external_name(d)}' is unused"))
        if isinstance(d, A.ActionDecl):
            for p in d.params:
                if self.unused(p, silenced or _no_warn(p.annotations)):
                    self.out.append(_diag(p.loc, p.name, f"'{p.name}' is unused"))
        if isinstance(d, (A.ActionDecl, A.FunctionDecl)):
            self.body(d.body, silenced)

    def body(self, node: Any, silenced: bool) -> None:
        for n in _walk_stmts(node):
            if isinstance(n, A.VarDecl) or isinstance(n, A.ConstDecl):
                self.decl(n, silenced or _no_warn(n.annotations))


def _static_assert(d: Any) -> bool:
    value = getattr(d, "value", None)
    return isinstance(d, A.ConstDecl) and isinstance(value, A.Call) and \
        isinstance(value.func, A.NameRef) and value.func.name == "static_assert"


def _walk_stmts(node: Any) -> Iterator[Any]:
    """Statements and local declarations, in order, inside blocks, ifs, switches, loops."""
    if isinstance(node, list):
        for n in node:
            yield from _walk_stmts(n)
    elif isinstance(node, A.BlockStmt):
        yield from _walk_stmts(node.stmts)
    elif isinstance(node, A.IfStmt):
        yield from _walk_stmts([node.then, node.other] if node.other is not None else [node.then])
    elif isinstance(node, A.SwitchStmt):
        yield from _walk_stmts([c.body for c in node.cases if c.body is not None])
    elif isinstance(node, (A.ForStmt, A.ForInStmt)):
        yield from _walk_stmts(list(getattr(node, "init", [])) + [node.body])
    elif node is not None:
        yield node


def _typed_literal(e: Any, consts: dict[str, A.ConstDecl],
                   width: Optional[tuple[int, bool]] = None) -> Optional[tuple[str, A.Loc, int]]:
    """A key that folds to a literal, as p4c prints it once typed (``8w255``, ``8w0xf``,
    ``true``), where the literal is written, and its written length; None otherwise."""
    if isinstance(e, A.BoolLit):
        return ("true" if e.value else "false"), e.loc, len("true" if e.value else "false")
    if isinstance(e, A.NameRef) and e.name in consts:
        decl = consts[e.name]
        t = decl.type
        if isinstance(t, A.BitType) and isinstance(t.width, A.IntLit):
            return _typed_literal(decl.value, {}, (t.width.value, t.signed))
        return _typed_literal(decl.value, {}) if isinstance(t, A.BaseType) and t.name == "bool" else None
    if isinstance(e, A.Cast) and isinstance(e.type, A.BitType) and isinstance(e.type.width, A.IntLit):
        return _typed_literal(e.expr, consts, (e.type.width.value, e.type.signed))
    if isinstance(e, A.IntLit) and (e.width is not None or width is not None):
        bits, signed = (e.width, bool(e.signed)) if e.width is not None else width  # type: ignore[misc]
        digits = re.sub(r"^\d+[ws]", "", e.text or str(e.value)).lower()
        value = e.value & ((1 << bits) - 1) if not signed else e.value
        shown = (f"0x{value:x}" if digits.startswith("0x") else f"0b{value:b}" if digits.startswith("0b")
                 else str(value))
        return f"{bits}{'s' if signed else 'w'}{shown}", e.loc, len(e.text or str(e.value))
    return None


def _constant_keys(prog: A.Program) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Table keys that are constants: p4c's type checker warns ``constant key element``
    (ignore-prop) at the key, and later CheckConstants ``Constant key field`` (mismatch)
    at the literal it folds to (a named constant's value, where it is declared)."""
    consts = {d.name: d for d in prog.decls if isinstance(d, A.ConstDecl)}
    first: list[Diagnostic] = []
    second: list[Diagnostic] = []
    for control in (d for d in prog.decls if isinstance(d, A.ControlDecl) and not _is_system(d.loc)):
        local = dict(consts)
        local.update({d.name: d for d in control.locals if isinstance(d, A.ConstDecl)})
        for table in (t for t in control.locals if isinstance(t, A.TableDecl)):
            key = table.prop("key")
            for ke in key.value if key is not None and isinstance(key.value, list) else []:
                folded = _typed_literal(ke.expr, local)
                if folded is None:
                    continue
                text, loc, width = folded
                first.append(Diagnostic(ke.loc, "ignore-prop", "KeyElement: constant key element",
                                        width=len(expr_text(ke.expr))))
                second.append(Diagnostic(loc, "mismatch", f"{text}: Constant key field", width=width))
    return first, second


def _removed(prog: A.Program) -> list[Diagnostic]:
    """The ``removing ...`` infos of RemoveAllUnusedDeclarations."""
    kinds = {A.ControlDecl: "control", A.ParserDecl: "parser", A.TableDecl: "table"}
    return [_diag(d.loc, d.name, f"removing {kinds[type(d)]} '{external_name(d)}'", "removed", "info")
            for d in removed_blocks_and_tables(prog) if not _is_system(d.loc)]


# --------------------------------------------------------------------------- BMv2 back end
def _backend(prog: A.Program, table_actions: Sequence[A.ActionDecl]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    structs = {d.name: d for d in prog.decls if isinstance(d, A.StructLikeDecl)}
    for parser in (d for d in prog.decls if isinstance(d, A.ParserDecl) and not _is_system(d.loc)):
        for vs in (x for x in parser.locals if isinstance(x, A.ValueSetDecl)):
            st = structs.get(getattr(vs.elem_type, "name", ""))
            for f in st.fields if st is not None else []:
                match = next((a for a in f.annotations if a.name == "match"), None)
                if match is not None and match.raw.strip() != "exact":
                    out.append(_diag(f.loc, f.name, "This backend only supports exact matches in value_sets but "
                                     f"the match on '{f.name}' is not exact; the annotation will be ignored",
                                     "unsupported"))
        for st in parser.states:
            tr = st.transition
            targets = [(tr.loc, tr.state)] if tr is not None and tr.state else []
            targets += [(c.loc, c.state) for c in (tr.cases if tr is not None else [])]
            for loc, state in targets:
                if state == "reject":
                    out.append(_diag(loc, "reject", "Explicit transition to reject not supported on this target",
                                     "unsupported"))
    looping = LoopingFunctions(prog)
    for control in (d for d in prog.decls if isinstance(d, A.ControlDecl) and not _is_system(d.loc)):
        for call in called_functions(control.body):
            called = looping.called_loop(call)
            if called is not None:
                # as below: p4c-bm2-ss inlines the function into the apply block and drops
                # its loop (measured: no jump in the JSON; called from an action, it keeps it)
                out.append(Diagnostic(call.loc, "bmv2-loop",
                                      f"for loop in function {called[0].name}, called from an "
                                      "apply block: BMv2 does not run it as written (p4c-bm2-ss "
                                      "1.2.5.16 compiles only loops inside actions; call the "
                                      "function from an action)", width=len(called[0].name)))
        for loop in (n for n in A.iter_nodes(control.body) if isinstance(n, A.ForStmt)):
            # not p4c's: p4c-bm2-ss 1.2.5.16 accepts the loop and writes JSON that does not
            # run it (BMv2's JSON has no loops outside actions; measured with
            # tests/p4sim/stf/corpus_regress/for_loops: p4sim runs P4_16's semantics)
            out.append(Diagnostic(loop.loc, "bmv2-loop",
                                  "for loop in an apply block: BMv2 does not run it as written "
                                  "(p4c-bm2-ss 1.2.5.16 compiles only loops inside actions; "
                                  "move the loop into an action)", width=3))
    by_name: dict[str, list[A.ActionDecl]] = {}
    for d in prog.decls:
        for a in [d] + list(getattr(d, "locals", None) or []):
            if isinstance(a, A.ActionDecl):
                by_name.setdefault(a.name, []).append(a)
    memo: dict[int, set[int]] = {}
    for action in table_actions:
        if _is_system(action.loc):
            continue
        unused = _unused_action_params(action, by_name, memo)
        for p in action.params:
            if id(p) in unused:
                out.append(_diag(p.loc, p.name, f"Unused action parameter {p.name}"))
    return out


def _unused_action_params(action: A.ActionDecl, by_name: dict[str, list[A.ActionDecl]],
                          memo: dict[int, set[int]]) -> set[int]:
    """``id()`` of the directionless parameters of ``action`` that p4c-bm2-ss's back end
    finds unused: never named, or named only as the argument of another action's parameter
    that is itself unused (p4c's front end inlines the call; the copy into the callee's
    parameter is then dead and removed). Measured on 1.2.5.16: ``action outer(bit<8> q) {
    inner(q); }`` with ``inner``'s ``q`` unused warns "Unused action parameter q"."""
    if id(action) in memo:
        return memo[id(action)]
    memo[id(action)] = set()          # a recursive call (refused elsewhere) counts as a use
    used = used_declarations(A.Program([action]))
    dropped: dict[str, int] = {}      # parameter name -> references that are dropped arguments
    for call in (n for n in A.iter_nodes(action.body) if isinstance(n, A.Call)):
        callees = by_name.get(call.func.name, []) if isinstance(call.func, A.NameRef) else []
        if len(callees) != 1 or callees[0] is action:
            continue
        callee = callees[0]
        gone = _unused_action_params(callee, by_name, memo)
        for arg, param in zip(call.args, callee.params):
            if arg.name is None and isinstance(arg.value, A.NameRef) and id(param) in gone:
                dropped[arg.value.name] = dropped.get(arg.value.name, 0) + 1
    refs: dict[str, int] = {}
    for n in A.iter_nodes(action.body):
        if isinstance(n, A.NameRef):
            refs[n.name] = refs.get(n.name, 0) + 1
    result = {id(p) for p in action.params if p.direction == "" and
              (id(p) not in used or (dropped.get(p.name, 0) and dropped[p.name] == refs.get(p.name, 0)))}
    memo[id(action)] = result
    return result


def program_warnings(prog: A.Program, table_actions: Sequence[A.ActionDecl] = ()) -> list[Diagnostic]:
    """Every warning and info of ``prog`` in p4c-bm2-ss's order; ``table_actions`` are the
    actions tables use, in the order the BMv2 JSON lists them (for ``Unused action
    parameter``)."""
    unused = _Unused(used_declarations(prog))
    for d in prog.decls:
        unused.decl(d, False, top=True)
    key_elements, key_fields = _constant_keys(prog)
    return _shadowed_parameters(prog) + unused.out + key_elements + _removed(prog) + key_fields + _backend(prog, table_actions)
