"""BMv2's control-flow graph of the ingress and egress controls, and the two shapes of it
p4c-bm2-ss refuses (p4c's ``backends/bmv2/common/controlFlowGraph.cpp``,
``CFG::checkImplementable``), with its messages, at the table's name:

* a path from a table back to the same table (``t.apply(); t.apply();``, or a table in an
  ``if`` branch and again after it): "Program can not be implemented on this target since
  it contains a path from table MyIngress.t back to itself";
* one table at two places of the graph whose next nodes differ (BMv2 keeps one
  ``next_tables`` per table): "Program is not supported by this target, because table
  MyIngress.t has multiple successors". Two applications go to the same next nodes when
  both are followed by the same node (``if (c) { t.apply(); } else { t.apply(); }``, or
  each by an application of one same table) and leave the table the same way (as many
  edges: a plain ``apply`` has one, ``if (t.apply().hit)`` two, a ``switch`` one per label
  plus one for no label).

The graph is built as p4c-bm2-ss builds it (``CFGBuilder``) from the apply block in the
form :mod:`p4sim.engine.control_lowering` gives it: a node per table application, per
``if``, and per hidden table p4c makes of other statements (a run of assignments and
extern calls, each direct action call), the nodes numbered and searched in p4c's order so
that the first refusal is p4c's.

Example::

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text("control C() { table t { actions = { NoAction; } } "
    ...                   "apply { t.apply(); t.apply(); } }", "c.p4")
    >>> check_control_graph(prog.decls[0], "C", prog)
    Traceback (most recent call last):
    ...
    p4sim.errors.P4Error: c.p4:1:21: error: Program can not be implemented on this target since it contains a path from table C.t back to itself
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping, Optional

from p4sim.engine.control_lowering import Unmodelled, lower_apply
from p4sim.engine.flow_ir import Apply, If, Op, Stmt, Switch, Table, remove_dead
from p4sim.errors import P4Error
from p4sim.frontend import ast as A


class _Node:
    """A node of the graph: ``table`` for a table node (hidden ones included)."""

    def __init__(self, number: int, table: Optional[Table]) -> None:
        self.number = number
        self.table = table
        self.preds: list[_Edge] = []
        self.succs: list[_Node] = []

    def add_preds(self, live: list["_Edge"]) -> None:
        for e in live:
            if e not in self.preds:
                self.preds.append(e)


class _Edge:
    """An edge out of ``node`` (p4c keeps each as its own object: a set counts them)."""

    def __init__(self, node: _Node) -> None:
        self.node = node


def _merge(a: list[_Edge], b: list[_Edge]) -> list[_Edge]:
    return a + [e for e in b if e not in a]


class _Graph:
    """p4c-bm2-ss's ``CFG`` of one control (``CFG::build``)."""

    def __init__(self, body: list[Stmt]) -> None:
        self.nodes: list[_Node] = []
        self.entry = self.node(None)
        self.exit = self.node(None)
        self.exit.add_preds(self.build(body, [_Edge(self.entry)]))
        for n in self.nodes:
            for e in n.preds:
                e.node.succs.append(n)

    def node(self, table: Optional[Table]) -> _Node:
        n = _Node(len(self.nodes), table)
        self.nodes.append(n)
        return n

    def build(self, stmts: list[Stmt], live: list[_Edge]) -> list[_Edge]:
        i = 0
        while i < len(stmts):
            s = stmts[i]
            i += 1
            if isinstance(s, Op):
                if not s.own:           # SynthesizeActions: one action for the whole run
                    while i < len(stmts) and isinstance(stmts[i], Op) and not stmts[i].own:  # type: ignore[union-attr]
                        i += 1
                n = self.node(Table("tbl_act", hidden=True))
                n.add_preds(live)
                live = [_Edge(n)]
            elif isinstance(s, Apply):
                n = self.node(s.table)
                n.add_preds(live)
                live = [_Edge(n)]
            elif isinstance(s, If):
                n = self.node(s.hit)
                n.add_preds(live)
                result = list(self.build(s.then, [_Edge(n)]))
                live = _merge(result, self.build(s.other, [_Edge(n)]))
            elif isinstance(s, Switch):
                n = self.node(s.table)
                n.add_preds(live)
                result = [_Edge(n)]     # no label matches
                labels: list[_Edge] = []
                live = []
                for c in s.cases:
                    labels = labels + [_Edge(n)]
                    if c.body is not None:
                        live = self.build(c.body, labels)
                        labels = []
                    result = _merge(result, live)
                live = result
        return live

    # ------------------------------------------------------------------ checkImplementable
    def loop(self) -> Optional[Table]:
        """The first table with a path back to itself (p4c's ``CFG::dfs`` from every node
        in turn, successors in p4c's order)."""
        visited: set[int] = set()
        on_path: set[int] = set()
        for start in self.nodes:
            found = self._dfs(start, visited, on_path)
            if found is not None:
                return found
        return None

    def _dfs(self, start: _Node, visited: set[int], on_path: set[int]) -> Optional[Table]:
        def arrive(n: _Node) -> tuple[bool, Optional[Table]]:
            """p4c's ``dfs`` on entering ``n``: (explore it?, the table found again)."""
            if n.table is not None and id(n.table) in on_path:
                return False, n.table
            if n.number in visited:
                return False, None
            if n.table is not None:
                on_path.add(id(n.table))
            return True, None

        go, found = arrive(start)
        if not go:
            return found
        stack: list[tuple[_Node, Iterator[_Node]]] = [(start, iter(start.succs))]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                if node.table is not None:
                    on_path.discard(id(node.table))
                visited.add(node.number)
                continue
            go, found = arrive(nxt)
            if found is not None:
                return found
            if go:
                stack.append((nxt, iter(nxt.succs)))
        return None

    def split(self) -> Optional[Table]:
        """The first table whose nodes do not all have the same successors."""
        by_table: dict[int, list[_Node]] = {}
        for n in self.nodes:
            if n.table is not None and not n.table.hidden:
                by_table.setdefault(id(n.table), []).append(n)
        for nodes in by_table.values():
            first = nodes[0]
            for other in nodes[1:]:
                if not _same(first.succs, other.succs):
                    return other.table
        return None


def _is_destination(dests: list[_Node], node: _Node) -> bool:
    return any(d is node or (d.table is not None and d.table is node.table) for d in dests)


def _same(a: list[_Node], b: list[_Node]) -> bool:
    """p4c's ``EdgeSet::checkSame``: as many edges, and the same nodes (two nodes of one
    table are the same)."""
    return (len(a) == len(b) and all(_is_destination(b, n) for n in a)
            and all(_is_destination(a, n) for n in b))


def check_control_graph(decl: A.ControlDecl, fq: str, program: A.Program) -> None:
    """Raise :class:`P4Error` when p4c-bm2-ss cannot map control ``decl`` (control-plane
    path ``fq``) onto BMv2's graph; say nothing when the model does not follow it."""
    try:
        body, locals_ = lower_apply(decl, fq, program)
    except Unmodelled:
        return
    graph = _Graph(remove_dead(body, locals_))
    table = graph.loop()
    if table is not None:
        raise P4Error("Program can not be implemented on this target since it contains a path from "
                      f"table {table.name} back to itself", table.loc)
    table = graph.split()
    if table is not None:
        raise P4Error(f"Program is not supported by this target, because table {table.name} "
                      "has multiple successors", table.loc)


def check_control_graphs(blocks: Mapping[str, Any], program: A.Program) -> None:
    """:func:`check_control_graph` on the ingress then the egress block (role →
    instance with ``decl`` and ``fqname``)."""
    for role in ("ingress", "egress"):
        inst = blocks.get(role)
        decl = getattr(inst, "decl", None)
        if isinstance(decl, A.ControlDecl) and decl.body is not None:
            check_control_graph(decl, inst.fqname, program)


__all__ = ["check_control_graph", "check_control_graphs"]
