"""Parsers, controls, actions, tables and functions (a mixin of the Compiler).

A parser or control *instance* becomes one Python function
``def <name>(ctx, <params>)``; its actions, tables and parser states are nested
functions (closures over the block's parameters and locals). Every instance gets its
own runtime objects (tables, externs) under its fully qualified name.
"""
from __future__ import annotations

from typing import Any, Optional

from p4sim.engine.codegen import Ex, FnCtx, Sym, Writer, pyname, zero_value_code
from p4sim.engine.expressions import A_text, RefEx, TypeEx, lit
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.types import (
    BitT, BlockT, BoolT, DontCareT, EnumT, ErrorT, ExternT, HeaderT, IntT, P4Type, SetT, StackT,
    StructLikeT, TupleT, UnionT, VoidT, bit_width, same_type, strip_new,
)
from p4sim.runtime import tables as RT


def always_returns(s: Any) -> bool:
    """Whether every path through statement ``s`` ends in ``return`` or ``exit``."""
    if isinstance(s, (A.ReturnStmt, A.ExitStmt)):
        return True
    if isinstance(s, A.BlockStmt):
        return any(always_returns(x) for x in s.stmts)
    if isinstance(s, A.IfStmt):
        return s.other is not None and always_returns(s.then) and always_returns(s.other)
    if isinstance(s, A.SwitchStmt):
        has_default = any(isinstance(c.label, A.DefaultExpr) for c in s.cases)
        return has_default and all(c.body is None or always_returns(c.body) for c in s.cases)
    return False


def key_name(e: A.Expr) -> str:
    """The control-plane name p4c gives a table key: its source text, with ``h.isValid()``
    spelled ``h.$valid$``."""
    if (isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "isValid"
            and not e.args):
        return A_text(e.func.expr) + ".$valid$"
    return A_text(e)


class ActionInfo:
    """A compiled action (per block instance)."""

    def __init__(self, decl: A.ActionDecl, local_name: str, fqname: str, pyname_: str,
                 ptypes: list[P4Type]) -> None:
        self.decl = decl
        self.local_name = local_name
        self.fqname = fqname
        self.pyname = pyname_
        self.ptypes = ptypes
        self.annotations = decl.annotations

    @property
    def cp_params(self) -> list[tuple[str, int]]:
        """Directionless parameters (supplied by the control plane) with widths."""
        out = []
        for p, t in zip(self.decl.params, self.ptypes):
            if p.direction == "":
                out.append((p.name, bit_width(t) or 0))
        return out


class FunctionInfo:
    def __init__(self, decl: A.FunctionDecl, pyname_: str, ptypes: list[P4Type], return_type: P4Type,
                 outs: list[str]) -> None:
        self.decl = decl
        self.pyname = pyname_
        self.ptypes = ptypes
        self.return_type = return_type
        self.outs = outs


class TableInfo:
    def __init__(self, name: str, fqname: str, decl: A.TableDecl) -> None:
        self.name = name
        self.fqname = fqname
        self.decl = decl
        self.actions: list[ActionInfo] = []
        self.runtime: Optional[RT.Table] = None
        self.key_names: list[str] = []


class BlockMixin:
    # ------------------------------------------------------------------ functions
    def function_decl(self, d: A.FunctionDecl) -> None:
        if d.type_params:
            g = self.generic_function_decl(d)
            self.define(d.name, Sym("function", None, "", value=g, decl=d), d)
            self.generic_functions[d.name] = g
            return
        rt = self.resolve_type(d.return_type)
        pyn = self.uid("fn_" + d.name)
        info = FunctionInfo(d, pyn, [], rt, [])
        self.define(d.name, Sym("function", rt, pyn, value=info, decl=d), d)
        self.emit_callable(d, info, "function", rt, module_level=True)

    def emit_callable(self, d: Any, info: Any, kind: str, rt: Optional[P4Type], module_level: bool) -> None:
        """Generate a Python function for an action or function declaration."""
        saved_w, saved_fn = self.w, self.fn
        fn = FnCtx(info.pyname, kind, return_type=rt, parent=self.fn)
        body = Writer()
        body.depth = 1
        self.w, self.fn = body, fn
        self.push_scope()
        pnames = []
        ptypes = []
        for p in d.params:
            t = self.resolve_type(p.type)
            ptypes.append(t)
            pn = self.pyvar(p.name)
            writable = p.direction in ("out", "inout")
            self.define(p.name, Sym("var", t, pn, fn=fn, writable=writable), p)
            pnames.append(pn)
            if p.direction in ("out", "inout") and not strip_new(t).is_composite():
                fn.outs.append(pn)
        info.ptypes = ptypes
        info.outs = fn.outs
        for s in d.body.stmts:
            self.stmt(s)
        if kind == "function" and rt is not None and not isinstance(rt, VoidT) and not always_returns(d.body):
            raise P4Error(f"function {d.name} does not return a value on all paths", d.loc)
        if fn.outs:
            body.line(f"return (None, {', '.join(fn.outs)},)")
        elif not body.lines:
            body.line("pass")
        self.pop_scope()
        self.w, self.fn = saved_w, saved_fn
        out = self.mod if module_level else self.w
        out.function(f"{info.pyname}({', '.join(pnames)})", fn, body)

    # ------------------------------------------------------------------ actions
    def action_decl(self, d: A.ActionDecl, module_level: bool) -> ActionInfo:
        local = d.name
        fq = self.fq_name(d, local)
        pyn = self.uid("act_" + d.name)
        info = ActionInfo(d, local, fq, pyn, [])
        self.define(local, Sym("action", None, pyn, value=info, decl=d), d)
        self.emit_callable(d, info, "action", VoidT(), module_level)
        # directionless params come after directed ones (P4_16 rule)
        seen_dirless = False
        for p in d.params:
            if p.direction == "":
                seen_dirless = True
            elif seen_dirless:
                raise P4Error(f"action {d.name}: directionless parameters must come after directed ones", p.loc)
        self.actions_by_fq.setdefault(fq, info)
        return info

    # ------------------------------------------------------------------ tables
    def table_decl(self, d: A.TableDecl) -> None:
        fq = self.fq_name(d, d.name)
        info = TableInfo(d.name, fq, d)
        pyn = self.uid("tbl_" + d.name)
        # properties other than the ones read below are allowed and ignored, as BMv2 does
        # keys
        key_codes: list[str] = []
        keys: list[RT.KeyField] = []
        key_types: list[P4Type] = []
        kp = d.prop("key")
        body = Writer()
        body.depth = 1
        saved_w = self.w
        saved_fn = self.fn
        fn = FnCtx(pyn, "table", parent=self.fn)
        self.w, self.fn = body, fn
        if kp is not None:
            for ke in kp.value:
                x = self.value_expr(ke.expr)
                t = strip_new(x.ty)
                if ke.match_kind not in self.match_kinds:
                    raise P4Error(f"{ke.match_kind}: unknown match kind", ke.loc)
                if isinstance(t, BoolT):
                    code, width = f"int({x.code})", 1
                elif isinstance(t, BitT):
                    code, width = (f"({x.code} & {t.mask:#x})" if t.signed else x.code), t.width
                elif isinstance(t, EnumT) and t.underlying is not None:
                    code, width = x.code, t.underlying.width
                elif isinstance(t, ErrorT):
                    code, width = x.code, self.error_width
                else:
                    raise P4Error(f"table {d.name}: key {A_text(ke.expr)} of type {x.ty} cannot be matched", ke.loc)
                name = self.annotation_name(ke) or key_name(ke.expr)
                if ke.match_kind not in RT.MATCH_KINDS:
                    raise P4Unsupported(f"unsupported: match kind {ke.match_kind}", ke.loc)
                keys.append(RT.KeyField(name, ke.match_kind, width))
                if ke.match_kind == "selector" and isinstance(ke.expr, A.Member):
                    base = self.value_expr(ke.expr.expr)
                    if isinstance(strip_new(base.ty), HeaderT):
                        # a field of an invalid header is left out of the selector hash, unlike
                        # hash() data (NativeMixin.flat_fields): p4c-bm2-ss emits the selector's
                        # "input" as the key fields themselves (backends/bmv2/common/control.h,
                        # handleTableImplementation: ctxt->conv->convert(ke->expression), no
                        # temporaries), BMv2 loads them with push_back_field (P4Objects.cpp,
                        # process_cfg_selector) and BufBuilder skips fields of invalid headers
                        # (src/bm_sim/calculations.cpp)
                        code = f"({code} if {base.code}._valid else None)"
                key_codes.append(code)
                key_types.append(x.ty)
                info.key_names.append(name)
        # actions
        ap = d.prop("actions")
        if ap is None:
            raise P4Error(f"table {d.name} has no actions property", d.loc)
        bound: dict[str, list[A.Argument]] = {}
        for ar in ap.value:
            ai = self.resolve_action_ref(ar)
            if len(ar.args) > len(ai.decl.params):
                raise P4Error(f"action {ai.local_name}: expected {len(ai.decl.params)} arguments, got {len(ar.args)}", ar.loc)
            info.actions.append(ai)
            bound[ai.fqname] = ar.args
        specs = []
        for ai in info.actions:
            scope = "table_and_default"
            names = {an.name for an in ai.annotations}
            ref = next(ar for ar in ap.value if self.resolve_action_ref(ar) is ai)
            names |= {an.name for an in ref.annotations}
            if "defaultonly" in names:
                scope = "default_only"
            elif "tableonly" in names:
                scope = "table_only"
            nb = len(bound[ai.fqname])
            cp = [(p.name, bit_width(t) or 0) for p, t in zip(ai.decl.params, ai.ptypes) if p.direction == ""]
            # bound (directionless) arguments written in the actions list are not control-plane params
            ndirected = sum(1 for p in ai.decl.params if p.direction != "")
            cp = cp[max(0, nb - ndirected):] if nb > ndirected else cp
            specs.append(RT.ActionSpec(ai.fqname, cp, scope))
        # default action
        default: Optional[tuple[str, tuple[int, ...]]] = None
        default_const = False
        dp = d.prop("default_action")
        if dp is not None:
            ai = self.resolve_action_ref(dp.value)
            if ai not in info.actions:
                raise P4Error(f"table {d.name}: default action {ai.local_name} is not in the actions list", dp.loc)
            default = (ai.fqname, self.const_action_args(ai, dp.value))
            default_const = dp.is_const
        else:
            noaction = self.global_noaction()
            default = (noaction.fqname, ()) if noaction is not None else None
            if noaction is not None and noaction not in info.actions:
                specs.append(RT.ActionSpec(noaction.fqname, [], "default_only"))
                info.actions.append(noaction)
                bound[noaction.fqname] = []
        size = 1024
        sp = d.prop("size")
        if sp is not None:
            size = int(self.const_value(sp.value))
        impl = None
        ip = d.prop("implementation")
        if ip is not None:
            impl = self.table_resource(ip.value, ("action_profile", "action_selector"), d.name)
        dc = d.prop("counters")
        dcounter = self.table_resource(dc.value, ("direct_counter",), d.name) if dc is not None else None
        dm = d.prop("meters")
        dmeter = self.table_resource(dm.value, ("direct_meter",), d.name) if dm is not None else None
        st = d.prop("support_timeout")
        timeout = bool(self.const_value(st.value)) if st is not None else False
        ep = d.prop("entries")
        from p4sim.runtime.action_profile import ActionSelector
        table = RT.Table(fq, keys, specs, default_action=default, default_is_const=default_const, size=size,
                         is_const=False, selector=impl if isinstance(impl, ActionSelector) else None,
                         profile=impl if impl is not None and not isinstance(impl, ActionSelector) else None,
                         direct_counter=dcounter, direct_meter=dmeter, support_timeout=timeout)
        info.runtime = table
        if ep is not None:
            self.load_const_entries(table, info, ep.value, keys, key_types, ep.is_const)
            table.is_const = ep.is_const
        self.state.tables[fq] = table
        self.tables_info[fq] = info
        tref = self.global_ref(table, "T_" + d.name)
        # generate the apply function
        body.line(f"_r = {tref}.apply(({''.join(c + ', ' for c in key_codes)}), ctx.std.packet_length, ctx.now_us)")
        if dmeter is not None:
            body.line(f"ctx.dmeter[{dmeter.name!r}] = {tref}.last_meter_color")
        body.line("_an = _r[2]")
        if self.trace:
            body.line(f"if ctx.log: ctx.log('Applying table ' + {fq!r} + (' hit, action ' if _r[0] else ' miss, default action ') + str(_an) + ' ' + str(_r[3]))")
        first = True
        for ai in info.actions:
            nb = bound[ai.fqname]
            dargs = [p for p in ai.decl.params if p.direction != ""]
            params = ai.decl.params
            ncp = len(params) - len(nb)
            arg_codes: list[str] = []
            for j in range(ncp):
                pt = ai.ptypes[len(nb) + j]
                if isinstance(strip_new(pt), BoolT):
                    arg_codes.append(f"bool(_r[3][{j}])")
                elif isinstance(strip_new(pt), BitT) and strip_new(pt).signed:
                    arg_codes.append(f"_to_signed(_r[3][{j}], {strip_new(pt).width})")
                else:
                    arg_codes.append(f"_r[3][{j}]")
            if dargs and len(nb) < len(dargs):
                raise P4Error(f"table {d.name}: action {ai.local_name} has directed parameters that must be bound in the actions list", d.loc)
            body.line(f"{'if' if first else 'elif'} _an == {ai.fqname!r}:")
            body.indent()
            # bound arguments (written in the actions list) with copy-in/copy-out, then
            # the action data from the control plane
            n0 = len(body.lines)
            self.invoke(ai.pyname, params[:len(nb)], ai.ptypes[:len(nb)], [a.value for a in nb],
                        f"action {ai.local_name}", d, False, tail_args=arg_codes)
            if len(body.lines) == n0:
                body.line("pass")
            body.dedent()
            first = False
        body.line("return (_r[0], _an)")
        self.w, self.fn = saved_w, saved_fn
        self.w.function(f"{pyn}()", fn, body)
        from p4sim.frontend.types import TableT
        self.define(d.name, Sym("table", TableT(fq), pyn, value=info, decl=d), d)

    def table_resource(self, e: A.Expr, kinds: tuple[str, ...], table: str) -> Any:
        if isinstance(e, A.Call):
            inst = self.instantiate_inline(e, f"{table}_impl")
        else:
            x = self.expr(e)
            if not isinstance(x, RefEx) or x.sym.kind != "instance" or x.sym.value.kind != "extern":
                raise P4Error(f"table {table}: {A_text(e)} is not an extern instance", e.loc)
            inst = x.sym.value
        if inst.decl.name not in kinds:
            raise P4Error(f"table {table}: {inst.name} must be one of {', '.join(kinds)}", e.loc)
        return inst.obj

    def resolve_action_ref(self, ar: A.ActionRef) -> ActionInfo:
        x = self.expr(ar.name)
        if not isinstance(x, RefEx) or x.sym.kind != "action":
            raise P4Error(f"{A_text(ar.name)} is not an action", ar.loc)
        return x.sym.value

    def global_noaction(self) -> Optional[ActionInfo]:
        sym = self.scopes[0].get("NoAction")
        return sym.value if sym is not None and sym.kind == "action" else None

    def const_action_args(self, ai: ActionInfo, ar: A.ActionRef) -> tuple[int, ...]:
        params = [(p, t) for p, t in zip(ai.decl.params, ai.ptypes) if p.direction == ""]
        ndirected = len(ai.decl.params) - len(params)
        args = ar.args
        if ndirected and len(args) == len(ai.decl.params):
            # ``default_action = a(hdr.f, 5)``: the directed arguments repeat the binding
            # of the actions list; only the directionless ones are action data
            args = args[ndirected:]
        ar = A.ActionRef(ar.name, args, annotations=ar.annotations, has_parens=ar.has_parens, loc=ar.loc)
        if ar.args and len(ar.args) != len(params):
            raise P4Error(f"action {ai.local_name}: expected {len(params)} arguments, got {len(ar.args)}", ar.loc)
        if not ar.args and params and ar.has_parens:
            raise P4Error(f"action {ai.local_name}: expected {len(params)} arguments, got 0", ar.loc)
        if not ar.args and params:
            raise P4Error(f"action {ai.local_name}: missing arguments", ar.loc)
        vals = []
        for (p, t), a in zip(params, ar.args):
            v = self.const_value(a.value, t)
            st = strip_new(t)
            if isinstance(st, BoolT):
                v = int(v)
            elif isinstance(st, BitT) and st.signed:
                v &= st.mask
            vals.append(v)
        return tuple(vals)

    def load_const_entries(self, table: RT.Table, info: TableInfo, entries: list[A.TableEntry],
                           keys: list[RT.KeyField], key_types: list[P4Type], is_const: bool = True) -> None:
        n = len(entries)
        needs_prio = table.needs_priority
        # legacy ``@priority(N)`` annotations (no ``priority =``): BMv2 priorities where
        # the smallest value wins; unannotated entries take their 1-based position
        legacy: Optional[list[int]] = None
        def prio_ann(en: A.TableEntry) -> Optional[A.Annotation]:
            return next((a for a in en.annotations + en.action.annotations if a.name == "priority"), None)

        if needs_prio and all(en.priority is None for en in entries) and any(
                prio_ann(en) is not None for en in entries):
            legacy = []
            for i, en in enumerate(entries):
                an = prio_ann(en)
                legacy.append(int(self.const_value(an.exprs[0])) if an is not None and an.exprs else i + 1)
        for i, en in enumerate(entries):
            if len(en.keys) == 1 and len(keys) > 1 and isinstance(en.keys[0], A.ListExpr):
                kexprs = en.keys[0].elems
            else:
                kexprs = en.keys
            if len(kexprs) == 1 and isinstance(kexprs[0], (A.DefaultExpr, A.DontCare)) and len(keys) > 1:
                kexprs = kexprs * len(keys)
            if len(kexprs) != len(keys):
                raise P4Error(f"entry has {len(kexprs)} keys, table {info.name} has {len(keys)}", en.loc)
            matches = []
            for ke, kf, kt in zip(kexprs, keys, key_types):
                matches.append(self.const_match(ke, kf, kt))
            ai = self.resolve_action_ref(en.action)
            if ai not in info.actions:
                raise P4Error(f"entry action {ai.local_name} is not in the actions of table {info.name}", en.loc)
            args = self.const_action_args(ai, en.action) if en.action.args or ai.cp_params else ()
            if en.priority is not None:
                prio = int(self.const_value(en.priority))
            elif legacy is not None:
                prio = max(legacy) + 1 - legacy[i]
            elif needs_prio:
                prio = n - i  # earlier entries win
            else:
                prio = 0
            try:
                # initial entries of a non-const `entries` property stay writable by the control plane
                table.add_entry(matches, RT.ActionCall(ai.fqname, args), prio, const=is_const)
            except Exception as exc:  # duplicate keys etc.
                raise P4Error(f"table {info.name}: invalid entry: {exc}", en.loc) from None

    def const_match(self, e: A.Expr, kf: RT.KeyField, kt: P4Type) -> Any:
        w = kf.width
        full = (1 << w) - 1
        mk = kf.match_kind
        if isinstance(e, (A.DefaultExpr, A.DontCare)):
            if mk == "exact":
                raise P4Error("default/_ cannot be used for an exact key", e.loc)
            return {"lpm": RT.Lpm(0, 0), "ternary": RT.Ternary(0, 0), "range": RT.Range(0, full),
                    "optional": RT.Optional_(None)}[mk]
        if isinstance(e, A.Binary) and e.op == "&&&":
            v = self.const_value(e.left, kt) & full
            m = self.const_value(e.right, kt) & full
            if mk == "ternary":
                return RT.Ternary(v & m, m)
            if mk == "lpm":
                plen = bin(m).count("1")
                if m != (full ^ ((1 << (w - plen)) - 1)):
                    raise P4Error("lpm entry mask is not a prefix", e.loc)
                return RT.Lpm(v & m, plen)
            raise P4Error(f"a mask cannot be used for a {mk} key", e.loc)
        if isinstance(e, A.Binary) and e.op == "..":
            if mk != "range":
                raise P4Error(f"a range cannot be used for a {mk} key", e.loc)
            return RT.Range(self.const_value(e.left, kt) & full, self.const_value(e.right, kt) & full)
        v = self.const_value(e, kt)
        v = int(v) & full
        if mk == "exact":
            return RT.Exact(v)
        if mk == "lpm":
            return RT.Lpm(v, w)
        if mk == "ternary":
            return RT.Ternary(v, full)
        if mk == "range":
            return RT.Range(v, v)
        if mk == "optional":
            return RT.Optional_(v)
        raise P4Unsupported(f"unsupported: const entries for {mk} keys", e.loc)

    # ------------------------------------------------------------------ blocks
    def compile_block(self, decl: Any, fqname: str, ctor_args: list[A.Argument], node: A.Node,
                      type_args: Optional[list[P4Type]] = None) -> Any:
        """Generate the Python function of one parser/control instance (a generic
        declaration's type parameters bound to ``type_args``)."""
        from p4sim.engine.compiler import InstanceInfo
        bindings = self.block_type_bindings(decl, list(type_args or []), node)
        kind = "parser" if isinstance(decl, A.ParserDecl) else "control"
        pyn = self.uid(("prs_" if kind == "parser" else "ctl_") + fqname.replace(".", "_"))
        inst = InstanceInfo(kind, fqname.rsplit(".", 1)[-1], fqname, decl, BlockT(kind, decl.name, decl), pyfunc=pyn)
        inst.params = decl.params
        saved = (self.w, self.fn, self.path, self.scopes, self.type_bindings)
        self.scopes = [self.scopes[0]]
        self.type_bindings = [bindings] if bindings else []
        self.path = fqname
        fn = FnCtx(pyn, kind)
        body = Writer()
        body.depth = 1
        self.w, self.fn = body, fn
        self.push_scope()
        # constructor parameters
        cargs = self.bind_args(decl.ctor_params, ctor_args, node, decl.name)
        for p, a in zip(decl.ctor_params, cargs):
            t = self.resolve_type(p.type)
            if isinstance(strip_new(t), ExternT):
                x = self.expr(a)
                self.define(p.name, x.sym, p)
                continue
            v = self.value_expr(a, t)
            if not v.const:
                raise P4Error(f"{decl.name}: constructor argument '{p.name}' must be a compile-time constant", a.loc)
            self.define(p.name, Sym("const", t, v.code, v.value), p)
        pnames = []
        ptypes = []
        for p in decl.params:
            t = self.resolve_type(p.type)
            ptypes.append(t)
            if isinstance(t, ExternT) and t.name in ("packet_in", "packet_out"):
                self.define(p.name, Sym("packet", t, "ctx", value=t.name), p)
                continue
            pn = self.pyvar(p.name)
            self.define(p.name, Sym("var", t, pn, fn=fn, writable=p.direction in ("out", "inout")), p)
            pnames.append(pn)
            if p.direction in ("out", "inout") and not strip_new(t).is_composite():
                fn.outs.append(pn)
        inst.ptypes = ptypes
        for local in decl.locals:
            self.block_local(local)
        if kind == "control":
            self.push_scope()
            for s in decl.body.stmts:
                self.stmt(s)
            self.pop_scope()
        else:
            self.parser_states(decl)
        if fn.outs:
            body.line(f"return (None, {', '.join(fn.outs)},)")
        if not body.lines:
            body.line("pass")
        self.pop_scope()
        self.w, self.fn, self.path, self.scopes, self.type_bindings = saved
        self.mod.line(f"def {pyn}(ctx{''.join(', ' + p for p in pnames)}):")
        self.mod.lines.extend(body.lines)
        self.mod.line("")
        inst.outs = fn.outs
        return inst

    def block_local(self, d: Any) -> None:
        if isinstance(d, A.ConstDecl):
            self.const_decl(d)
        elif isinstance(d, A.VarDecl):
            self.local_var(d)
        elif isinstance(d, A.ActionDecl):
            self.action_decl(d, module_level=False)
        elif isinstance(d, A.TableDecl):
            self.table_decl(d)
        elif isinstance(d, A.Instantiation):
            self.local_instantiation(d)
        elif isinstance(d, A.ValueSetDecl):
            self.value_set_decl(d)
        elif isinstance(d, A.FunctionDecl):
            raise P4Unsupported("unsupported: function declared inside a block", d.loc)
        else:
            raise P4Error(f"{type(d).__name__} cannot be declared here", d.loc)

    def block_apply(self, e: A.Call, inst: Any) -> Optional[Ex]:
        decl = inst.decl
        args = self.bind_args(decl.params, e.args, e, inst.name)
        params, ptypes, bargs = [], [], []
        for p, t, a in zip(decl.params, inst.ptypes, args):
            if isinstance(t, ExternT) and t.name in ("packet_in", "packet_out"):
                continue
            params.append(p)
            ptypes.append(t)
            bargs.append(a)
        self.invoke(inst.pyfunc, params, ptypes, bargs, inst.name, e, False, extra_args=["ctx"])
        return None
