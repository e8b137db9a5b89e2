"""What p4c-bm2-ss's simple_switch back end refuses in the blocks of a ``V1Switch`` package,
checked once the blocks are known (:class:`p4sim.engine.program.V1ModelProgram`), with
p4c-bm2-ss 1.2.5.16's messages (measured on p4c's own test programs):

* the headers type ``H`` is not a struct: "H: expected type to be a struct";
* a statement in the verify/compute checksum controls other than a checksum call:
  "...: Only calls to verify_checksum or verify_checksum_with_payload allowed" (update_…
  in the compute control);
* a checksum call in any other block: "update_checksum: unknown extern function" (p4c
  points at v1model.p4's declaration; p4sim at the call);
* an ``if`` (its condition not a constant) or a ``switch`` in the deparser:
  "IfStatement: not supported within a deparser on this target";
* a call in a parser state that BMv2's parser cannot do (``mark_to_drop``, ``hash``, a
  register method, ...): "...: not supported in parser on this target"
  (:mod:`p4sim.engine.parser_calls`);
* a field of ``stack.next`` outside an extract: "hdr.s.next uninitialized: next field
  read" (:mod:`p4sim.engine.stack_next`);
* a table BMv2's control graph cannot hold: "... path from table MyIngress.t back to
  itself", "... table MyIngress.t has multiple successors" (:mod:`p4sim.engine.control_graph`).

Example::

    >>> check_v1switch({})          # no blocks, nothing to say
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from p4sim.engine.control_graph import check_control_graphs
from p4sim.engine.parser_calls import check_parser_calls
from p4sim.engine.stack_next import check_next_reads
from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.text import expr_text
from p4sim.frontend.types import StructT, strip_new

VERIFY = ("verify_checksum", "verify_checksum_with_payload")
UPDATE = ("update_checksum", "update_checksum_with_payload")


def _called(s: Any) -> str:
    """The name a call statement calls directly (``""`` for a method or anything else)."""
    if isinstance(s, A.CallStmt) and isinstance(s.call.func, A.NameRef):
        return s.call.func.name
    return ""


def _shown(s: Any) -> str:
    """A statement as p4c's message names it."""
    if isinstance(s, A.AssignStmt):
        return f"{expr_text(s.lhs)} = {expr_text(s.rhs)}"
    if isinstance(s, A.CallStmt):
        return expr_text(s.call)
    return {"IfStmt": "IfStatement", "SwitchStmt": "SwitchStatement", "ForStmt": "ForStatement",
            "ExitStmt": "exit", "ReturnStmt": "return"}.get(type(s).__name__, type(s).__name__)


def _checksum_block(decl: Any, allowed: tuple[str, ...]) -> None:
    for s in A.flat_statements(decl.body.stmts if decl.body is not None else []):
        if isinstance(s, (A.EmptyStmt, A.VarDecl, A.ConstDecl)) or _called(s) in allowed:
            continue                        # declarations: p4c's midend moves them out
        raise P4Error(f"{_shown(s)}: Only calls to {allowed[0]} or {allowed[1]} allowed", s.loc)


def _constant(cond: Any, consts: set[str]) -> bool:
    return isinstance(cond, A.BoolLit) or (isinstance(cond, A.NameRef) and cond.name in consts)


def _deparser(decl: Any, consts: set[str], headers: frozenset[str] = frozenset()) -> None:
    for n in A.iter_nodes(decl.body) if decl.body is not None else ():
        if isinstance(n, A.IfStmt) and not _constant(n.cond, consts) or isinstance(n, A.SwitchStmt):
            raise P4Error(f"{_shown(n)}: not supported within a deparser on this target", n.loc)
    _deparser_locals(decl, consts, headers)


def _deparser_locals(decl: Any, consts: set[str], headers: frozenset[str]) -> None:
    """BMv2's deparser runs emits, extern calls and assignments of constants only: a local
    of the deparser that is given a value that is not a constant (its initializer becomes
    an assignment), or has ``setValid()``/``setInvalid()`` called, and is read later is
    refused at that statement (p4c-bm2-ss 1.2.5.16, measured: ``t = hdr.h: not supported
    within a deparser on this target``) when it is written again later (else p4c's copy
    propagation reads the value itself: ``h_t t = hdr.h; pkt.emit(t);`` is accepted); a
    local of a header type (``headers``: their names) declared without a value gets p4c's
    ``t.setInvalid()`` there. A local read nowhere after is left alone (p4c's mid end
    removes what writes it)."""
    # the control's own locals first (p4c moves their initialisation to the body's start)
    locals_ = [d for d in getattr(decl, "locals", []) if isinstance(d, A.VarDecl)]
    stmts = locals_ + list(A.flat_statements(decl.body.stmts if decl.body is not None else []))
    names = {s.name for s in stmts if isinstance(s, A.VarDecl)}

    def root(e: Any) -> str:
        while isinstance(e, (A.Member, A.Index, A.Slice)):
            e = e.expr
        return e.name if isinstance(e, A.NameRef) else ""

    def read_later(name: str, i: int) -> bool:
        return any(isinstance(n, A.NameRef) and n.name == name
                   for s in stmts[i + 1:] for n in A.iter_nodes(s))

    def plain(e: Any) -> bool:
        return isinstance(e, (A.IntLit, A.BoolLit)) or _constant(e, consts)

    def written(s: Any, name: str) -> bool:
        if isinstance(s, A.AssignStmt):
            return root(s.lhs) == name
        return isinstance(s, A.CallStmt) and isinstance(s.call.func, A.Member) \
            and s.call.func.name in ("setValid", "setInvalid") and root(s.call.func.expr) == name

    def kept(name: str, i: int) -> bool:
        """Whether p4c's copy propagation keeps the value given at ``i``: the local is
        written again later (else every read becomes the value's and the copy goes)."""
        return read_later(name, i) and any(written(s, name) for s in stmts[i + 1:])

    for i, s in enumerate(stmts):
        shown = ""
        if isinstance(s, A.VarDecl) and s.init is not None and not plain(s.init) and kept(s.name, i):
            shown = f"{s.name} = {expr_text(s.init)}"
        elif isinstance(s, A.VarDecl) and s.init is None and isinstance(s.type, A.NamedType) \
                and s.type.name in headers and read_later(s.name, i):
            shown = f"{s.name}.setInvalid()"
        elif isinstance(s, A.AssignStmt) and root(s.lhs) in names and not plain(s.rhs) \
                and kept(root(s.lhs), i):
            shown = _shown(s)
        elif isinstance(s, A.CallStmt) and isinstance(s.call.func, A.Member) \
                and s.call.func.name in ("setValid", "setInvalid") and root(s.call.func.expr) in names \
                and read_later(root(s.call.func.expr), i):
            shown = _shown(s)
        if shown:
            raise P4Error(f"{shown}: not supported within a deparser on this target", s.loc)


def _no_checksum_calls(decl: Any) -> None:
    nodes = [decl.body] if getattr(decl, "body", None) is not None else []
    nodes += [d for d in getattr(decl, "locals", []) if isinstance(d, A.ActionDecl)]
    nodes += list(getattr(decl, "states", []))
    for node in nodes:
        for n in A.iter_nodes(node):
            if isinstance(n, A.Call) and isinstance(n.func, A.NameRef) and n.func.name in VERIFY + UPDATE:
                raise P4Error(f"{n.func.name}: unknown extern function", n.loc)


def check_v1switch(blocks: Mapping[str, Any], headers_type: Any = None,
                   headers_loc: Any = None, consts: frozenset[str] = frozenset(),
                   program: Optional[A.Program] = None) -> None:
    """Raise :class:`P4Error` for the first thing p4c-bm2-ss refuses in ``blocks`` (role →
    instance with ``decl``: parser, verify_checksum, ingress, egress, compute_checksum,
    deparser); ``headers_type``: the parser's ``H``; ``consts``: names of constants;
    ``program``: the whole program, for the checks that follow the blocks into the parsers
    and controls they apply (:mod:`p4sim.engine.stack_next`,
    :mod:`p4sim.engine.control_graph`)."""
    if headers_type is not None and not isinstance(strip_new(headers_type), StructT):
        raise P4Error(f"{headers_type}: expected type to be a struct", headers_loc)
    decls = {role: getattr(inst, "decl", None) for role, inst in blocks.items()}
    # p4c-bm2-ss's order (measured on 1.2.5.16): the deparser, then the compute control,
    # then the verify control
    if decls.get("deparser") is not None:
        headers = frozenset(d.name for d in (program.decls if program is not None else [])
                            if isinstance(d, A.StructLikeDecl) and d.kind == "header")
        _deparser(decls["deparser"], set(consts), headers)
    if decls.get("compute_checksum") is not None:
        _checksum_block(decls["compute_checksum"], UPDATE)
    if decls.get("verify_checksum") is not None:
        _checksum_block(decls["verify_checksum"], VERIFY)
    for role in ("parser", "ingress", "egress", "deparser"):
        if decls.get(role) is not None:
            _no_checksum_calls(decls[role])
    if program is not None:
        if isinstance(decls.get("parser"), A.ParserDecl):
            check_parser_calls(decls["parser"], program)
            check_next_reads(decls["parser"], program)
        check_control_graphs(blocks, program)


__all__ = ["check_v1switch"]
