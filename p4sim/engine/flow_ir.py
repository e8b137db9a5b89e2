"""A control's apply block as p4c-bm2-ss's back end sees it, in a small statement form
built by :mod:`p4sim.engine.control_lowering` and read by :mod:`p4sim.engine.control_graph`.

Only what shapes BMv2's control-flow graph is kept: table applications, ``if`` and
``switch``, and the other statements (:class:`Op`), which p4c-bm2-ss gathers into hidden
tables of their own (``SynthesizeActions``: a run of assignments and extern calls becomes
one action; ``MoveActionsToTables``: each action called directly gets a table). Blocks are
flat lists, as p4c's ``SimplifyControlFlow`` leaves them. The passes here redo, on that
form, what p4c's front end does to it first:

* :func:`move_after_branch`: p4c's ``MoveToElseAfterBranch`` (what follows an ``if``
  one branch of which ends in ``return``/``exit`` moves into the other branch);
* :func:`remove_returns`: p4c's ``RemoveReturns`` (``return`` sets a flag, the statements
  after a statement that may have returned are guarded by ``if (!flag)``);
* :func:`remove_dead`: assignments whose value nothing reads are dropped
  (``SimplifyDefUse``/``LocalCopyPropagation``), then ``if`` statements left empty
  (``SimplifyControlFlow``).

Example::

    >>> body = [If(frozenset(), [Return()], []), Op(frozenset(), ("x",), pure=True)]
    >>> body = remove_returns(move_after_branch(body), "$ret")
    >>> [type(s).__name__ for s in body]
    ['Op', 'If', 'If']
    >>> remove_dead(body, frozenset({"$ret", "x"}))
    []
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

from p4sim.engine.liveness import EVERYTHING, Live, Path
from p4sim.frontend.ast import Loc

Paths = frozenset[Path]


@dataclass(eq=False)
class Table:
    """A table of the program (one per control instance), or a hidden one p4c-bm2-ss
    makes (``hidden``): ``reads`` are what applying it may read (keys, actions)."""

    name: str
    loc: Optional[Loc] = None
    reads: Paths = frozenset()
    hidden: bool = False


@dataclass(eq=False)
class Op:
    """A statement that becomes (part of) a hidden table: it reads ``reads`` and surely
    overwrites ``kill`` (may write ``target``, when not surely); ``pure`` when dropping it
    changes nothing else (no call); ``own`` for a direct action call (a table of its own);
    ``exit`` for ``exit``."""

    reads: Paths
    kill: Optional[Path] = None
    pure: bool = False
    own: bool = False
    exit: bool = False
    target: Optional[Path] = None

    @property
    def written(self) -> Optional[Path]:
        """What an assignment writes, for telling whether anything reads it."""
        return self.kill if self.kill is not None else self.target


@dataclass(eq=False)
class Apply:
    """``t.apply();``"""

    table: Table


@dataclass(eq=False)
class If:
    """``if``: ``hit`` is the table of ``if (t.apply().hit)`` (``.miss``, ``!``), whose
    node in BMv2's graph is the table itself."""

    reads: Paths
    then: list["Stmt"]
    other: list["Stmt"]
    hit: Optional[Table] = None


@dataclass(eq=False)
class Case:
    """A switch case; ``body`` ``None`` falls through to the next case's body."""

    labels: list[str]
    body: Optional[list["Stmt"]]


@dataclass(eq=False)
class Switch:
    """``switch (t.apply().action_run)``; a switch on a value has a hidden ``table``."""

    reads: Paths
    table: Table
    cases: list[Case]


@dataclass(eq=False)
class Return:
    """``return`` (gone after :func:`remove_returns`)."""


@dataclass(eq=False)
class Exit:
    """``exit`` (an :class:`Op` with ``exit`` once the body is complete)."""


@dataclass(eq=False)
class Inline:
    """A control instance's ``apply`` call, replaced by its body when inlining."""

    payload: Any = None


Stmt = Union[Op, Apply, If, Switch, Return, Exit, Inline]


# ------------------------------------------------------------------------ MoveToElseAfterBranch
@dataclass
class _Mover:
    """p4c's ``MoveToElseAfterBranch``, one visit of a body (its flags as p4c keeps them)."""

    jumped: bool = False
    moved: bool = False
    seen: set[int] = field(default_factory=set)

    def block(self, stmts: list[Stmt]) -> None:
        self.moved = False
        i = 0
        while i < len(stmts):
            if self.moved:
                del stmts[i:]
                break
            self.stmt(stmts, i)
            i += 1
        self.moved = False

    def stmt(self, stmts: list[Stmt], i: int) -> None:
        s = stmts[i]
        if id(s) in self.seen:
            return
        self.seen.add(id(s))
        if isinstance(s, (Return, Exit)):
            self.jumped = True
        elif isinstance(s, If):
            self.if_(stmts, i, s)
        elif isinstance(s, Switch):
            can_fall = False
            for c in s.cases:
                self.jumped = False
                if c.body is not None:
                    self.block(c.body)
                can_fall |= not self.jumped
            self.jumped = not can_fall

    def if_(self, stmts: list[Stmt], i: int, s: If) -> None:
        self.jumped = False
        self.block(s.then)
        jump_in_then = self.jumped
        moved = False
        if self.jumped and i + 1 < len(stmts):
            s.other.extend(stmts[i + 1:])
            moved = True
        self.jumped = False
        self.block(s.other)
        if self.jumped and not jump_in_then:
            if i + 1 < len(stmts):
                s.then.extend(stmts[i + 1:])
                moved = True
            self.block(s.then)          # p4c visits only what it has not seen yet
        self.jumped = self.jumped and jump_in_then
        self.moved = self.moved or moved


def move_after_branch(body: list[Stmt]) -> list[Stmt]:
    """p4c's ``MoveToElseAfterBranch`` on ``body`` (changed in place and returned)."""
    _Mover().block(body)
    return body


# ------------------------------------------------------------------------ RemoveReturns
NO, YES, MAYBE = "no", "yes", "maybe"


def _has_return(stmts: list[Stmt]) -> bool:
    for s in stmts:
        if isinstance(s, Return):
            return True
        if isinstance(s, If) and (_has_return(s.then) or _has_return(s.other)):
            return True
        if isinstance(s, Switch) and any(c.body and _has_return(c.body) for c in s.cases):
            return True
    return False


def _returns_block(stmts: list[Stmt], flag: Path) -> tuple[list[Stmt], str]:
    block: list[Stmt] = []
    current = block
    ret = NO
    for s in stmts:
        s2, r = _returns_stmt(s, flag)
        current.extend(s2)
        if r == YES:
            ret = r
            break
        if r == MAYBE:
            guard = If(frozenset({flag}), [], [])
            block.append(guard)         # p4c adds every guard to the outer block
            current = guard.then
            ret = r
    return block, ret


def _returns_stmt(s: Stmt, flag: Path) -> tuple[list[Stmt], str]:
    if isinstance(s, Return):
        return [Op(frozenset(), flag, pure=True)], YES
    if isinstance(s, Exit):
        return [s], YES
    if isinstance(s, If):
        s.then, rt = _returns_block(s.then, flag)
        s.other, rf = _returns_block(s.other, flag)
        return [s], rt if rt == rf and rt != MAYBE else MAYBE
    if isinstance(s, Switch):
        r = NO
        for c in s.cases:
            if c.body is not None:
                c.body, rc = _returns_block(c.body, flag)
                if rc != NO:
                    r = MAYBE
        return [s], r
    return [s], NO


def remove_returns(body: list[Stmt], flag: str) -> list[Stmt]:
    """p4c's ``RemoveReturns`` for a control whose body has a ``return``: the flag
    (a local named ``flag``) is cleared first, set by each ``return``."""
    if not _has_return(body):
        return body
    block, _ = _returns_block(body, (flag,))
    return [Op(frozenset(), (flag,), pure=True)] + block


# ------------------------------------------------------------------------ dead code
class _Liveness:
    """One backward pass over a body: the values live after each :class:`Op`."""

    def __init__(self) -> None:
        self.after: dict[int, Live] = {}

    def block(self, stmts: list[Stmt], after: Live) -> Live:
        live = after
        for s in reversed(stmts):
            live = self.stmt(s, live)
        return live

    def stmt(self, s: Stmt, after: Live) -> Live:
        if isinstance(s, Op):
            self.after[id(s)] = after
            if s.exit:
                return EVERYTHING.read(s.reads)
            live = after.kill(s.kill) if s.kill is not None else after
            return live.read(s.reads)
        if isinstance(s, Apply):
            return after.read(s.table.reads)
        if isinstance(s, If):
            live = self.block(s.then, after).union(self.block(s.other, after))
            return live.read(s.reads | (s.hit.reads if s.hit is not None else frozenset()))
        if isinstance(s, Switch):
            live = after
            entry = after
            for c in reversed(s.cases):
                if c.body is not None:
                    entry = self.block(c.body, after)
                live = live.union(entry)
            return live.read(s.reads | s.table.reads)
        return after


def _drop(stmts: list[Stmt], dead: set[int]) -> list[Stmt]:
    out: list[Stmt] = []
    for s in stmts:
        if id(s) in dead:
            continue
        if isinstance(s, If):
            s.then, s.other = _drop(s.then, dead), _drop(s.other, dead)
            if s.hit is None and not s.then and not s.other:
                continue                # SimplifyControlFlow: nothing left to choose
        elif isinstance(s, Switch):
            for c in s.cases:
                if c.body is not None:
                    c.body = _drop(c.body, dead)
        out.append(s)
    return out


def _ops(stmts: list[Stmt]) -> list[Op]:
    out: list[Op] = []
    for s in stmts:
        if isinstance(s, Op):
            out.append(s)
        elif isinstance(s, If):
            out += _ops(s.then) + _ops(s.other)
        elif isinstance(s, Switch):
            for c in s.cases:
                out += _ops(c.body or [])
    return out


def remove_dead(body: list[Stmt], locals_: frozenset[str], end: Live = EVERYTHING) -> list[Stmt]:
    """``body`` without the assignments nothing reads (``end``: what is live after it;
    ``locals_``: names that do not outlive it), repeated until none is left, and without
    the ``if`` statements that become empty."""
    body = _drop(body, set())
    while True:
        lv = _Liveness()
        lv.block(body, end)
        dead = {id(op) for op in _ops(body)
                if op.pure and op.written is not None and not lv.after[id(op)].covers(op.written, locals_)}
        body = _drop(body, dead)
        if not dead:
            return body


__all__ = ["Apply", "Case", "Exit", "If", "Inline", "Op", "Return", "Stmt", "Switch", "Table",
           "move_after_branch", "remove_dead", "remove_returns"]
