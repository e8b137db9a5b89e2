"""Parser states, ``select`` and value sets (the :class:`ParserCompiler`).

Each state is a nested Python function that returns the next state's function, ``None``
for ``accept`` or ``_REJECT``; the parser function loops over them. Parser errors
(extract past the end, ``verify``, no select match, stack overflow) raise
``_ParserErrorSignal(code)``; the v1model driver stores the code in
``standard_metadata.parser_error`` and the packet continues into ingress, as in BMv2.

The statements of a state are compiled by the
:class:`~p4sim.engine.statements.StatementCompiler` the parser compiler is built with;
``packet_in.extract`` and friends are calls (:mod:`p4sim.engine.packet_io`).

Example::

    >>> from p4sim.engine.statements import StatementCompiler
    >>> from p4sim.engine.compile_context import CompileContext
    >>> cx = CompileContext(A.Program([]), None)
    >>> parsers = ParserCompiler(cx, StatementCompiler(cx, None))
    >>> parsers.state_target("accept", {}, None), parsers.state_target("reject", {}, None)
    ('None', '_REJECT')
"""
from __future__ import annotations

from typing import Optional

from p4sim.engine.codegen import Ex, FnCtx, Sym, Writer
from p4sim.engine.compile_context import CompileContext, expr_text
from p4sim.engine.statements import StatementCompiler
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.types import BitT, BoolT, EnumT, P4Type, StructT, TupleT, bit_width, strip_new
from p4sim.runtime.valueset import ValueSet


class ParserCompiler:
    """Compiles the states of a parser declaration into its generated function."""

    def __init__(self, cx: CompileContext, statements: StatementCompiler) -> None:
        self.cx = cx
        self.statements = statements
        self.expressions = statements.expressions

    def parser_states(self, decl: A.ParserDecl) -> None:
        w = self.cx.w
        names = {s.name for s in decl.states}
        if "start" not in names:
            raise P4Error(f"parser {decl.name} has no start state", decl.loc)
        state_fn = {s.name: self.cx.uid("st_" + s.name) for s in decl.states}
        self.cx.push_scope()
        for s in decl.states:
            if s.name in ("accept", "reject"):
                raise P4Error(f"state {s.name} cannot be redefined", s.loc)
            self.cx.define(s.name, Sym("state", None, state_fn[s.name], decl=s), s)
        for s in decl.states:
            self.parser_state(s, state_fn)
        self.cx.pop_scope()
        w.line(f"_st = {state_fn['start']}")
        w.line("while _st is not None and _st is not _REJECT:")
        w.line("    _st = _st()")

    def parser_state(self, s: A.ParserState, state_fn: dict[str, str]) -> None:
        saved_w, saved_fn = self.cx.w, self.cx.fn
        fn = FnCtx(state_fn[s.name], "state", parent=self.cx.fn)
        body = Writer()
        body.depth = 1
        self.cx.w, self.cx.fn = body, fn
        self.cx.push_scope()
        if self.cx.trace:
            body.line(f"if ctx.log: ctx.log('Parser state ' + {s.name!r})")
        for st in s.stmts:
            self.statements.stmt(st)
        tr = s.transition
        if tr is None:
            raise P4Error(f"state {s.name} has no transition", s.loc)
        if tr.state is not None:
            body.line("return " + self.state_target(tr.state, state_fn, tr))
        else:
            self.select(tr, state_fn)
        self.cx.pop_scope()
        self.cx.w, self.cx.fn = saved_w, saved_fn
        self.cx.w.function(f"{state_fn[s.name]}()", fn, body)

    def state_target(self, name: str, state_fn: dict[str, str], node: A.Node) -> str:
        if name == "accept":
            return "None"
        if name == "reject":
            return "_REJECT"
        if name not in state_fn:
            raise P4Error(f"transition to unknown state '{name}'", node.loc)
        return state_fn[name]

    def select(self, tr: A.Transition, state_fn: dict[str, str]) -> None:
        w = self.cx.w
        keys = [self.expressions.value_expr(k) for k in tr.select_keys or []]
        tmps = []
        for k in keys:
            t = self.cx.tmp("k")
            w.line(f"{t} = {k.code}")
            tmps.append(t)
        # p4c's constant folding decides a select on constants, case by case until one
        # surely matches, and words its error for a range or mask that is not constant
        # differently from the mid end's (SimplifySelectCases) that comes later
        folding = bool(keys) and all(k.const for k in keys)
        dead = False
        for case in tr.cases:
            target = self.state_target(case.state, state_fn, case)
            ks = case.keyset
            if isinstance(ks, (A.DefaultExpr, A.DontCare)):
                w.line(f"return {target}")
                return
            vs = self.cx.lookup_opt(ks.name) if isinstance(ks, A.NameRef) else None
            if vs is not None and vs.kind == "valueset" and isinstance(strip_new(vs.type), (StructT, TupleT)):
                w.line(f"if {self.struct_valueset_cond(ks, vs, keys, tmps)}: return {target}")
                continue
            if len(keys) > 1:
                if not isinstance(ks, A.ListExpr):
                    raise P4Error(f"select has {len(keys)} keys; the case needs a tuple keyset", case.loc)
                parts = ks.elems
                if len(parts) != len(keys):
                    raise P4Error(f"keyset has {len(parts)} elements, select has {len(keys)} keys", case.loc)
            else:
                parts = [ks.elems[0]] if isinstance(ks, A.ListExpr) and len(ks.elems) == 1 else [ks]
            conds = []
            for part, key, tmp in zip(parts, keys, tmps):
                c = self.keyset_cond(part, key, tmp, folding, dead)
                if c != "True":
                    conds.append(c)
            w.line(f"if {' and '.join(conds) if conds else 'True'}: return {target}")
            if folding and self.case_surely_matches(parts, keys):
                # constant folding drops the cases after it: the mid end never sees them
                folding, dead = False, True
        w.line("raise _ParserErrorSignal(_ERR_NoMatch)")

    def struct_valueset_cond(self, ks: A.NameRef, vs: Sym, keys: list[Ex], tmps: list[str]) -> str:
        """A value set of a struct (or tuple) type matched by the select's keys, one per
        bit field of the type flattened (p4c types such a case label as the tuple of the
        flattened fields): the keys are concatenated, as BMv2 keys a parse value set of
        the type's width."""
        st = strip_new(vs.type)
        leaves = value_set_fields(st, ks.loc)
        if len(leaves) != len(keys):
            what = "fields" if isinstance(st, StructT) else "elements"
            raise P4Error(f"{ks.name}: value_set of {st} has {len(leaves)} {what}, "
                          f"the select has {len(keys)} keys", ks.loc)
        parts = []
        shift = sum(bit_width(ft) or 0 for _, ft in leaves)
        for (fname, ft), key, tmp in zip(leaves, keys, tmps):
            fw = bit_width(ft) or 0
            if bit_width(key.ty) != fw:
                raise P4Error(f"{ks.name}: field '{fname}' of {st} is {ft}, its key is {key.ty}", ks.loc)
            shift -= fw
            v = f"(int({tmp}) & {(1 << fw) - 1:#x})"
            parts.append(f"({v} << {shift})" if shift else v)
        return f"{vs.code}.match({' | '.join(parts) or '0'})"

    def require_constant(self, x: A.Expr, x_ex: Ex, folding: bool = False, dead: bool = False) -> None:
        """p4c-bm2-ss's SimplifySelectCases (requireConstants): a select case's values,
        masks and range bounds are compile-time constants. ``folding``: the select's keys
        are constants and no earlier case surely matched; p4c's constant folding then finds
        a range's or mask's bound first, with its own words (measured on 1.2.5.16); ``dead``:
        a case after one that surely matches constant keys, which folding drops unchecked."""
        if not x_ex.const and not dead:
            if folding:
                raise P4Error(f"{expr_text(x)}: expression must evaluate to a constant", x.loc)
            raise P4Error(f"{expr_text(x)}: must be a compile-time constant", x.loc)

    def case_surely_matches(self, parts: list[A.Expr], keys: list[Ex]) -> bool:
        """Whether constant folding decides that a case matches constant ``keys``: every
        part a default, or a constant (value, range, mask) that holds the key's value."""
        for part, key in zip(parts, keys):
            if isinstance(part, (A.DefaultExpr, A.DontCare)):
                continue
            if isinstance(part, A.Binary) and part.op in ("&&&", ".."):
                a = self.expressions.value_expr(part.left, key.ty)
                b = self.expressions.value_expr(part.right, key.ty)
                if not (a.const and b.const and isinstance(key.value, int)):
                    return False
                if part.op == ".." and not a.value <= key.value <= b.value:
                    return False
                if part.op == "&&&" and (a.value & b.value) != (key.value & b.value):
                    return False
                continue
            v = self.expressions.value_expr(part, key.ty)
            if not (v.const and v.value == key.value):
                return False
        return True

    def keyset_cond(self, part: A.Expr, key: Ex, tmp: str, folding: bool = False, dead: bool = False) -> str:
        if isinstance(part, (A.DefaultExpr, A.DontCare)):
            return "True"
        kt = key.ty
        if isinstance(part, A.Binary) and part.op == "&&&":
            v = self.expressions.value_expr(part.left, kt)
            m = self.expressions.value_expr(part.right, kt)
            self.require_constant(part.left, v, folding, dead)
            self.require_constant(part.right, m, folding, dead)
            return f"({tmp} & {m.code}) == ({v.code} & {m.code})"
        if isinstance(part, A.Binary) and part.op == "..":
            lo = self.expressions.value_expr(part.left, kt)
            hi = self.expressions.value_expr(part.right, kt)
            self.require_constant(part.left, lo, folding, dead)
            self.require_constant(part.right, hi, folding, dead)
            return f"{lo.code} <= {tmp} <= {hi.code}"
        if isinstance(part, A.NameRef):
            sym = self.cx.lookup_opt(part.name)
            if sym is not None and sym.kind == "valueset":
                return f"{sym.code}.match({tmp})"
        v = self.expressions.value_expr(part, kt)
        # on a constant bool key p4c's constant folding needs the case constant too
        self.require_constant(part, v, folding and isinstance(strip_new(kt), BoolT), dead)
        return f"{tmp} == {v.code}"

    def value_set_decl(self, d: A.ValueSetDecl) -> None:
        t = self.expressions.resolve_type(d.elem_type)
        size = int(self.expressions.const_value(d.size))
        fq = self.cx.fq_name(d, d.name)
        st = strip_new(t)
        width = bit_width(t)
        if isinstance(st, (StructT, TupleT)):
            # p4c-bm2-ss: one parse value set of the flattened fields' width
            width = sum(bit_width(ft) or 0 for _, ft in value_set_fields(st, d.loc))
        if width is None or isinstance(st, BoolT):
            raise P4Unsupported(f"unsupported: value_set of {t}", d.loc)
        vs = ValueSet(fq, width, size)
        self.cx.note_name(self.cx.state.value_sets, "value set", fq)
        self.cx.state.value_sets[fq] = vs
        self.cx.value_set_decls[fq] = (d, t)
        ref = self.cx.global_ref(vs, "VS_" + d.name)
        self.cx.define(d.name, Sym("valueset", t, ref, value=vs, decl=d), d)


def value_set_fields(t: P4Type, loc: Optional[A.Loc] = None, prefix: str = "") -> list[tuple[str, P4Type]]:
    """The bit fields of a value set's struct or tuple element type, nested structs and
    tuples flattened in declaration order (how p4c types the case label and how
    p4c-bm2-ss packs the parse value set's key). A field that is not ``bit<W>`` or
    ``int<W>`` is refused (p4c refuses an enum field in a select, and crashes on a bool).

    >>> inner = StructT("in_t", [("a", BitT(8))])
    >>> value_set_fields(StructT("s_t", [("i", inner), ("b", BitT(16))]))
    [('i.a', BitT(width=8, signed=False)), ('b', BitT(width=16, signed=False))]
    """
    st = strip_new(t)
    if isinstance(st, StructT):
        named: list[tuple[str, P4Type]] = list(st.fields)
    elif isinstance(st, TupleT):
        named = [(str(i), et) for i, et in enumerate(st.elems)]
    else:
        return [(prefix or str(t), t)]
    out: list[tuple[str, P4Type]] = []
    for name, ft in named:
        full = f"{prefix}.{name}" if prefix else name
        leaf = strip_new(ft)
        if isinstance(leaf, (StructT, TupleT)):
            out.extend(value_set_fields(leaf, loc, full))
        elif isinstance(leaf, BitT):
            out.append((full, ft))
        elif isinstance(leaf, EnumT):   # p4c's type check of the select refuses it
            raise P4Error(f"Type not supported {ft} for struct field {name} in 'select'", loc)
        else:
            raise P4Error(f"value_set of {t}: field '{full}' is {ft}; "
                          f"a value set's fields must be bit<W> or int<W>", loc)
    return out
