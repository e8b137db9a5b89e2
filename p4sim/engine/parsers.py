"""Parser states, select and the packet_in/packet_out methods (a mixin of the Compiler).

Each state is a nested Python function that returns the next state's function, ``None``
for ``accept`` or ``_REJECT``; the parser function loops over them. Parser errors
(extract past the end, ``verify``, no select match, stack overflow) raise
``_ParserErrorSignal(code)``; the v1model driver stores the code in
``standard_metadata.parser_error`` and the packet continues into ingress, as in BMv2.
"""
from __future__ import annotations

from typing import Any, Optional

from p4sim.engine.codegen import Ex, FnCtx, Sym, Writer
from p4sim.engine.expressions import A_text, RefEx, TypeEx, lit
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.types import (
    BitT, BoolT, EnumT, ExternT, HeaderT, IntT, P4Type, SetT, StackT, StructLikeT, TupleT, UnionT,
    VarbitT, VoidT, bit_width, same_type, strip_new,
)


class ParserMixin:
    def parser_states(self, decl: A.ParserDecl) -> None:
        w = self.w
        names = {s.name for s in decl.states}
        if "start" not in names:
            raise P4Error(f"parser {decl.name} has no start state", decl.loc)
        state_fn = {s.name: self.uid("st_" + s.name) for s in decl.states}
        self.push_scope()
        for s in decl.states:
            if s.name in ("accept", "reject"):
                raise P4Error(f"state {s.name} cannot be redefined", s.loc)
            self.define(s.name, Sym("state", None, state_fn[s.name], decl=s), s)
        for s in decl.states:
            self.parser_state(s, state_fn)
        self.pop_scope()
        w.line(f"_st = {state_fn['start']}")
        w.line("while _st is not None and _st is not _REJECT:")
        w.line("    _st = _st()")

    def parser_state(self, s: A.ParserState, state_fn: dict[str, str]) -> None:
        saved_w, saved_fn = self.w, self.fn
        fn = FnCtx(state_fn[s.name], "state", parent=self.fn)
        body = Writer()
        body.depth = 1
        self.w, self.fn = body, fn
        self.push_scope()
        if self.trace:
            body.line(f"if ctx.log: ctx.log('Parser state ' + {s.name!r})")
        for st in s.stmts:
            self.stmt(st)
        tr = s.transition
        if tr is None:
            raise P4Error(f"state {s.name} has no transition", s.loc)
        if tr.state is not None:
            body.line("return " + self.state_target(tr.state, state_fn, tr))
        else:
            self.select(tr, state_fn)
        self.pop_scope()
        self.w, self.fn = saved_w, saved_fn
        self.w.function(f"{state_fn[s.name]}()", fn, body)

    def state_target(self, name: str, state_fn: dict[str, str], node: A.Node) -> str:
        if name == "accept":
            return "None"
        if name == "reject":
            return "_REJECT"
        if name not in state_fn:
            raise P4Error(f"transition to unknown state '{name}'", node.loc)
        return state_fn[name]

    def select(self, tr: A.Transition, state_fn: dict[str, str]) -> None:
        w = self.w
        keys = [self.value_expr(k) for k in tr.select_keys or []]
        tmps = []
        for k in keys:
            t = self.tmp("k")
            w.line(f"{t} = {k.code}")
            tmps.append(t)
        for case in tr.cases:
            target = self.state_target(case.state, state_fn, case)
            ks = case.keyset
            if isinstance(ks, (A.DefaultExpr, A.DontCare)):
                w.line(f"return {target}")
                return
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
                c = self.keyset_cond(part, key, tmp)
                if c != "True":
                    conds.append(c)
            w.line(f"if {' and '.join(conds) if conds else 'True'}: return {target}")
        w.line("raise _ParserErrorSignal(_ERR_NoMatch)")

    def keyset_cond(self, part: A.Expr, key: Ex, tmp: str) -> str:
        if isinstance(part, (A.DefaultExpr, A.DontCare)):
            return "True"
        kt = key.ty
        if isinstance(part, A.Binary) and part.op == "&&&":
            v = self.value_expr(part.left, kt)
            m = self.value_expr(part.right, kt)
            return f"({tmp} & {m.code}) == ({v.code} & {m.code})"
        if isinstance(part, A.Binary) and part.op == "..":
            lo = self.value_expr(part.left, kt)
            hi = self.value_expr(part.right, kt)
            return f"{lo.code} <= {tmp} <= {hi.code}"
        if isinstance(part, A.NameRef):
            sym = self.lookup_opt(part.name)
            if sym is not None and sym.kind == "valueset":
                return f"{sym.code}.match({tmp})"
        v = self.value_expr(part, kt)
        return f"{tmp} == {v.code}"

    def value_set_decl(self, d: A.ValueSetDecl) -> None:
        from p4sim.runtime.valueset import ValueSet
        t = self.resolve_type(d.elem_type)
        size = int(self.const_value(d.size))
        fq = self.fq_name(d, d.name)
        width = bit_width(t)
        if width is None:
            raise P4Unsupported(f"unsupported: value_set of {t}", d.loc)
        vs = ValueSet(fq, width, size)
        self.state.value_sets[fq] = vs
        ref = self.global_ref(vs, "VS_" + d.name)
        self.define(d.name, Sym("valueset", t, ref, value=vs, decl=d), d)

    # ------------------------------------------------------------------ packet_in / packet_out
    def packet_method(self, e: A.Call, sym: Sym, name: str, expected: Optional[P4Type], as_statement: bool) -> Optional[Ex]:
        w = self.w
        kind = sym.value
        if kind == "packet_in":
            if name == "extract":
                if len(e.args) not in (1, 2):
                    raise P4Error("extract: expects 1 or 2 arguments", e.loc)
                target = e.args[0].value
                lt = self.lvalue_type(target)
                st = strip_new(lt)
                if not isinstance(st, HeaderT):
                    raise P4Error(f"extract: argument must be a header, not {lt}", target.loc)
                vl = None
                if len(e.args) == 2:
                    if not st.has_varbit:
                        raise P4Error("extract: the two-argument form needs a header with a varbit field", e.loc)
                    vl = self.value_expr(e.args[1].value).code
                elif st.has_varbit:
                    raise P4Error("extract: a header with a varbit field needs the size argument", e.loc)
                if isinstance(target, A.Member) and target.name == "next":
                    stack = self.value_expr(target.expr)
                    tmp = self.tmp("e")
                    w.line(f"{tmp} = _stack_next({stack.code})")
                    w.line(f"{tmp}._extract(ctx{', ' + vl if vl else ''})")
                    w.line(f"{stack.code}.nextIndex += 1")
                else:
                    x = self.value_expr(target)
                    w.line(f"{x.code}._extract(ctx{', ' + vl if vl else ''})")
                    parent = getattr(x, "union_parent", None)
                    if parent:
                        w.line(f"{parent}._only({x.code})")
                if self.trace:
                    w.line(f"if ctx.log: ctx.log('Extracting header ' + {A_text(target)!r})")
                return None
            if name == "lookahead":
                if len(e.type_args) != 1 or e.args:
                    raise P4Error("lookahead: expects one type argument and no arguments", e.loc)
                t = self.resolve_type(e.type_args[0])
                st = strip_new(t)
                if isinstance(st, (BitT,)):
                    code = f"_lookahead(ctx, {st.width})"
                    if st.signed:
                        code = f"_to_signed({code}, {st.width})"
                    return Ex(code, t)
                if isinstance(st, BoolT):
                    return Ex(f"bool(_lookahead(ctx, 1))", t)
                if isinstance(st, HeaderT) and not st.has_varbit:
                    return Ex(f"_lookahead_header(ctx, {st.pyclass})", t)
                raise P4Unsupported(f"unsupported: lookahead of {t}", e.loc)
            if name == "advance":
                if len(e.args) != 1:
                    raise P4Error("advance: expects one argument", e.loc)
                n = self.value_expr(e.args[0].value, BitT(32))
                w.line(f"_advance(ctx, {n.code})")
                return None
            if name == "length":
                raise P4Unsupported("unsupported: packet_in.length() (BMv2 does not implement it)", e.loc)
            raise P4Error(f"packet_in has no method '{name}'", e.loc)
        if kind == "packet_out":
            if name != "emit":
                raise P4Error(f"packet_out has no method '{name}'", e.loc)
            if len(e.args) != 1:
                raise P4Error("emit: expects one argument", e.loc)
            x = self.value_expr(e.args[0].value)
            st = strip_new(x.ty)
            if not isinstance(st, (StructLikeT, StackT)):
                raise P4Error(f"emit: argument must be a header, header stack, union or struct, not {x.ty}", e.loc)
            w.line(f"{x.code}._emit(ctx)")
            return None
        raise P4Error(f"{kind} has no method '{name}'", e.loc)
