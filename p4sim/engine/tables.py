"""Tables: keys, actions, default action, properties and const entries, and the
generated apply function of each table (the :class:`TableCompiler`).

Each table becomes a runtime :class:`p4sim.runtime.tables.Table` (in
``CompileContext.state.tables`` and ``tables_info`` under its fully qualified name) and a
nested function of its control that looks the key up and calls the chosen action with
copy-in/copy-out (:meth:`~p4sim.engine.calls.CallCompiler.invoke`). An inline
``implementation = action_selector(...)`` is instantiated through the
:class:`InlineInstances` given at construction (the compiler).

Example::

    >>> from p4sim.frontend import ast as A
    >>> key_name(A.Call(A.Member(A.Member(A.NameRef("hdr"), "ipv4"), "isValid")))
    'hdr.ipv4.$valid$'
"""
from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any, Optional, Protocol

from p4sim.engine.codegen import FnCtx, Sym, Writer
from p4sim.engine.compile_context import ActionInfo, CompileContext, InstanceInfo, annotation_string, expr_text
from p4sim.engine.entry_priorities import p4c_entry_order, p4runtime_priority
from p4sim.engine.expressions import RefEx
from p4sim.engine.statements import StatementCompiler
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.text import at_name
from p4sim.frontend.types import (
    BitT, BoolT, EnumT, ErrorT, HeaderT, IntT, P4Type, StructLikeT, TableT, bit_width, strip_new,
)
from p4sim.runtime import tables as RT
from p4sim.runtime.action_profile import ActionSelector
from p4sim.runtime.errors import RuntimeStateError


class InlineInstances(Protocol):
    """What a table needs to instantiate ``implementation = action_profile(...)``."""

    def instantiate_inline(self, e: A.Call, hint: str) -> InstanceInfo: ...


def key_name(e: A.Expr) -> str:
    """The control-plane name p4c gives a table key: its source text, with ``h.isValid()``
    spelled ``h.$valid$``."""
    if (isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "isValid"
            and not e.args):
        return expr_text(e.func.expr) + ".$valid$"
    return expr_text(e)


def constant_text(e: A.IntLit) -> str:
    """A literal as p4c's key names write a constant: no width, its value in the base it
    was written in (hexadecimal in lower case).

    Example::

        >>> constant_text(A.IntLit(0xffff, 48, False, text="48w0xFFFF")), constant_text(A.IntLit(7, text="7"))
        ('0xffff', '7')
    """
    digits = re.sub(r"^\d+[ws]", "", e.text or "").lower()
    if digits.startswith("0x"):
        return f"0x{e.value:x}"
    if digits.startswith("0b"):
        return f"0b{e.value:b}"
    if digits.startswith("0o"):
        return f"0o{e.value:o}"
    return str(e.value)


class TableInfo:
    def __init__(self, name: str, fqname: str, decl: A.TableDecl) -> None:
        self.name = name
        self.fqname = fqname
        self.decl = decl
        self.actions: list[ActionInfo] = []
        self.runtime: Optional[RT.Table] = None
        self.key_names: list[str] = []
        self.key_types: list[P4Type] = []   # one per runtime key (P4Info's type_info)
        self.block_path = ""                # the instance path it is declared in



class TableCompiler:
    """Compiles table declarations (see the module docstring)."""

    def __init__(self, cx: CompileContext, statements: StatementCompiler, instances: InlineInstances) -> None:
        self.cx = cx
        self.expressions = statements.expressions
        self.calls = statements.calls
        self.instances = instances

    def p4c_key_name(self, e: A.Expr) -> str:
        """The control-plane name p4c's TableKeyNames gives a key: as :func:`key_name`, but
        a struct field with ``@name("n")`` is named ``n`` (``@name(".n")``: ``n`` alone,
        the left side dropped, as in P4_14-translated programs), and a constant is written
        without its width, in the base it was written in (``hdr.e.a & 0xffff``)."""
        if isinstance(e, A.Member):
            try:
                base_t = strip_new(self.expressions.value_expr(e.expr).ty)
            except P4Error:
                base_t = None
            fname = e.name
            if isinstance(base_t, StructLikeT):   # the field's externalName()
                field = SimpleNamespace(annotations=base_t.annotations.get(e.name, []))
                fname = annotation_string(field, "name") or fname
            if fname.startswith("."):
                return fname[1:]
            return f"{self.p4c_key_name(e.expr)}.{fname}"
        if (isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "isValid"
                and not e.args):
            return self.p4c_key_name(e.func.expr) + ".$valid$"
        if isinstance(e, A.Binary) and e.op == "&":
            return f"{self.p4c_key_name(e.left)} & {self.p4c_key_name(e.right)}"
        if isinstance(e, A.IntLit):
            return constant_text(e)
        if isinstance(e, A.NameRef):
            sym = self.cx.lookup_opt(e.name)
            init = getattr(getattr(sym, "decl", None), "value", None) if sym is not None and sym.kind == "const" else None
            if isinstance(init, A.IntLit):   # p4c's constant folding puts the value there first
                return constant_text(init)
        return key_name(e)

    def _key_header(self, e: A.Expr) -> Optional[str]:
        """The code of the header whose field the key ``e`` is (``h.f`` or ``h.f & MASK``, which
        p4c-bm2-ss writes as the field with a mask), or None when it is something else (a
        slice ``h.f[3:0]`` or any other expression p4c computes into a temporary first, from
        the PHV's field: measured, the previous packet's value)."""
        while True:
            if isinstance(e, A.Binary) and e.op == "&":
                try:
                    self.expressions.const_value(e.right)
                except P4Error:
                    return None
                e = e.left
            else:
                break
        if not isinstance(e, A.Member):
            return None
        base = self.expressions.value_expr(e.expr)
        return base.code if isinstance(strip_new(base.ty), HeaderT) else None

    def table_decl(self, d: A.TableDecl) -> None:
        fq = self.cx.fq_name(d, d.name)
        info = TableInfo(d.name, fq, d)
        info.block_path = self.cx.path
        pyn = self.cx.uid("tbl_" + d.name)
        # properties other than the ones read below are allowed and ignored, as BMv2 does
        # keys
        key_codes: list[str] = []
        keys: list[RT.KeyField] = []
        key_types: list[P4Type] = info.key_types
        kp = d.prop("key")
        body = Writer()
        body.depth = 1
        saved_w = self.cx.w
        saved_fn = self.cx.fn
        fn = FnCtx(pyn, "table", parent=self.cx.fn)
        self.cx.w, self.cx.fn = body, fn
        if kp is not None:
            for ke in kp.value:
                x = self.expressions.value_expr(ke.expr)
                t = strip_new(x.ty)
                if ke.match_kind not in self.cx.match_kinds:
                    raise P4Error(f"{ke.match_kind}: unknown match kind", ke.loc)
                if isinstance(t, BoolT):
                    code, width = f"int({x.code})", 1
                elif isinstance(t, BitT):
                    code, width = (f"({x.code} & {t.mask:#x})" if t.signed else x.code), t.width
                elif isinstance(t, EnumT) and t.underlying is not None:
                    code, width = x.code, t.underlying.width
                elif isinstance(t, ErrorT):
                    code, width = x.code, self.cx.error_width
                else:
                    raise P4Error(f"table {d.name}: key {expr_text(ke.expr)} of type {x.ty} cannot be matched", ke.loc)
                name = self.cx.annotation_name(ke) or self.p4c_key_name(ke.expr)
                if ke.match_kind not in RT.MATCH_KINDS:   # p4c-bm2-ss, at the match kind's declaration
                    raise P4Error(f"{ke.match_kind}: match type not supported on this target",
                                  self.cx.match_kind_locs.get(ke.match_kind, ke.loc))
                keys.append(RT.KeyField(name, ke.match_kind, width))
                if ke.match_kind == "selector" and isinstance(ke.expr, A.Member):
                    base = self.expressions.value_expr(ke.expr.expr)
                    if isinstance(strip_new(base.ty), HeaderT):
                        # a field of an invalid header is left out of the selector hash, unlike
                        # hash() data (NativeExterns.flat_fields): p4c-bm2-ss emits the selector's
                        # "input" as the key fields themselves (backends/bmv2/common/control.h,
                        # handleTableImplementation: ctxt->conv->convert(ke->expression), no
                        # temporaries), BMv2 loads them with push_back_field (P4Objects.cpp,
                        # process_cfg_selector) and BufBuilder skips fields of invalid headers
                        # (src/bm_sim/calculations.cpp)
                        code = f"({code} if {base.code}._valid else None)"
                else:
                    base_code = self._key_header(ke.expr)
                    if base_code is not None:
                        # BMv2 builds a key field of an invalid header as 0 (MatchKeyBuilder,
                        # src/bm_sim/match_units.cpp), though the header's PHV keeps the
                        # previous packet's field (issue 35 class 14)
                        code = f"({code} if {base_code}._valid else 0)"
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
            if any(other is not ai and other.fqname == ai.fqname for other in info.actions):
                # two actions with one name (``@name(".foo")`` on both): p4c-bm2-ss's JSON
                # writer fails on the table's per-action ``next_tables`` object
                raise P4Error("Attempt to add to json object a value for a label which already exists "
                              f"{ai.fqname} (p4c-bm2-ss fails writing the next_tables of table {d.name}: "
                              f"two of its actions are named {ai.fqname})", ar.loc)
            info.actions.append(ai)
            bound[ai.fqname] = ar.args
            given: list = [a.value for a in ar.args] + [None] * (len(ai.decl.params) - len(ar.args))
            self.calls.check_deferred_divisions(ai, ai.decl.params, ai.ptypes, given)
            for arg in ar.args:
                self.refuse_table_apply(arg.value)
        specs = []
        for ai in info.actions:
            scope = "table_and_default"
            # p4c takes the scope from the actions list's element only, never from the
            # action's declaration (control-plane/p4RuntimeSerializer.cpp)
            ref = next(ar for ar in ap.value if self.resolve_action_ref(ar) is ai)
            names = {an.name for an in ref.annotations}
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
            # p4c reads size 0 as its default (P4Info size and BMv2 max_size 1024)
            size = int(self.expressions.const_value(sp.value)) or 1024
        impl = None
        ip = d.prop("implementation")
        if ip is not None:
            impl = self.table_resource(ip.value, ("action_profile", "action_selector"), d.name, ip)
        dc = d.prop("counters")
        dcounter = self.table_resource(dc.value, ("direct_counter",), d.name, dc) if dc is not None else None
        dm = d.prop("meters")
        dmeter = self.table_resource(dm.value, ("direct_meter",), d.name, dm) if dm is not None else None
        st = d.prop("support_timeout")
        timeout = bool(self.expressions.const_value(st.value)) if st is not None else False
        ep = d.prop("entries")
        try:
            table = RT.Table(fq, keys, specs, default_action=default, default_is_const=default_const, size=size,
                             is_const=False, selector=impl if isinstance(impl, ActionSelector) else None,
                             profile=impl if impl is not None and not isinstance(impl, ActionSelector) else None,
                             direct_counter=dcounter, direct_meter=dmeter, support_timeout=timeout)
        except RuntimeStateError as exc:  # e.g. a default action the table cannot take
            raise P4Error(f"table {d.name}: {exc.message}", dp.loc if dp is not None else d.loc) from None
        info.runtime = table
        if ep is not None:
            given = self.entry_priorities(d, ep.value, ep.is_const, table.needs_priority)
            self.load_const_entries(table, info, ep.value, keys, key_types, ep.is_const, given)
            table.is_const = ep.is_const
            table.initial_entries = bool(ep.value)
        if not any(a.name == "hidden" for a in d.annotations):
            self.cx.note_name(self.cx.tables_info, "table", fq)
        self.cx.state.tables[fq] = table
        self.cx.tables_info[fq] = info
        tref = self.cx.global_ref(table, "T_" + d.name)
        # generate the apply function
        body.line(f"_r = {tref}.apply(({''.join(c + ', ' for c in key_codes)}), ctx.std.packet_length, ctx.now_us)")
        if dmeter is not None:
            body.line(f"ctx.dmeter[{dmeter.name!r}] = {tref}.last_meter_color")
        body.line("_an = _r[2]")
        if self.cx.trace:
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
            self.calls.invoke(ai.pyname, params[:len(nb)], ai.ptypes[:len(nb)], [a.value for a in nb],
                        f"action {ai.local_name}", d, False, tail_args=arg_codes, callee_outer=ai.outer)
            if len(body.lines) == n0:
                body.line("pass")
            body.dedent()
            first = False
        body.line("return (_r[0], _an)")
        self.cx.w, self.cx.fn = saved_w, saved_fn
        self.cx.w.function(f"{pyn}()", fn, body)
        self.cx.define(d.name, Sym("table", TableT(fq), pyn, value=info, decl=d), d)

    def table_resource(self, e: A.Expr, kinds: tuple[str, ...], table: str,
                       prop: Optional[A.TableProperty] = None) -> Any:
        if isinstance(e, A.Call):
            # an instance constructed in the property: P4Runtime names it by the property's
            # @name, as written (a leading dot dropped, no control prefix: `@name("ap")`
            # in MyIngress is "ap"; measured on p4c-bm2-ss 1.2.5.16)
            given = annotation_string(prop, "name") if prop is not None else None
            inst = self.instances.instantiate_inline(
                e, f"{table}_impl", fq=given.lstrip(".") if given else None)
        else:
            x = self.expressions.expr(e)
            if not isinstance(x, RefEx) or x.sym.kind != "instance" or x.sym.value.kind != "extern":
                raise P4Error(f"table {table}: {expr_text(e)} is not an extern instance", e.loc)
            inst = x.sym.value
            if inst.obj is None:     # an extern parameter of the control
                raise P4Unsupported(f"unsupported: table {table}: {expr_text(e)} is a parameter of the "
                                    "control (give the table an instance the control declares)", e.loc)
        if inst.decl.name not in kinds:
            raise P4Error(f"table {table}: {inst.name} must be one of {', '.join(kinds)}", e.loc)
        return inst.obj

    def resolve_action_ref(self, ar: A.ActionRef) -> ActionInfo:
        x = self.expressions.expr(ar.name)
        if not isinstance(x, RefEx) or x.sym.kind != "action":
            raise P4Error(f"{expr_text(ar.name)} is not an action", ar.loc)
        return x.sym.value

    def global_noaction(self) -> Optional[ActionInfo]:
        sym = self.cx.scopes[0].get("NoAction")
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
            v = self.expressions.const_value(a.value, t)
            st = strip_new(t)
            if isinstance(st, BoolT):
                v = int(v)
            elif isinstance(st, BitT) and st.signed:
                v &= st.mask
            vals.append(v)
        return tuple(vals)

    def refuse_table_apply(self, e: A.Node) -> None:
        """p4c's SideEffectOrdering refuses ``t.apply()`` inside an action's bound argument."""
        if isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "apply" \
                and isinstance(e.func.expr, A.NameRef):
            sym = self.cx.lookup_opt(e.func.expr.name, e.func.expr.is_global)
            if sym is not None and sym.kind == "table":
                raise P4Error(f"{expr_text(e)}: table invocation in action argument", e.loc)
        for value in vars(e).values():
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, A.Node):
                    self.refuse_table_apply(child)

    def entry_priorities(self, d: A.TableDecl, entries: list[A.TableEntry], is_const: bool,
                         needs_priority: bool) -> Optional[list[int]]:
        """The priority of each initial entry when some are written (``priority = N``), as
        p4c's front end computes them (DoEntryPriorities): refused in ``const entries``;
        otherwise the key must need priorities, the first entry must have one, and each
        entry without one takes the previous one's minus ``priority_delta`` (plus, when
        ``largest_priority_wins = false``), which must not go below 0. None: none written."""
        with_priority = next((en for en in entries if en.priority is not None), None)
        if with_priority is None:
            return None
        if is_const:
            raise P4Error("Entry: Table with 'const' entries cannot have priorities", with_priority.loc)
        if not needs_priority:
            kp = d.prop("key")
            raise P4Error("Key key match type does not require priorities, but some are specified",
                          kp.loc if kp is not None else d.loc)
        if entries[0].priority is None:
            raise P4Error("Entry entry must have a priority", entries[0].loc)
        lp, dp = d.prop("largest_priority_wins"), d.prop("priority_delta")
        largest = bool(self.expressions.const_value(lp.value)) if lp is not None else True
        delta = int(self.expressions.const_value(dp.value)) if dp is not None else 1
        if delta < 0:
            raise P4Error(f"{expr_text(dp.value)} must be a positive value", dp.value.loc)
        out: list[int] = []
        current = 0
        for en in entries:
            if en.priority is not None:
                current = int(self.expressions.const_value(en.priority))
            out.append(current)
            current = current - delta if largest else current + delta
            if current < 0 or current >= 1 << 64:  # p4c computes in size_t
                raise P4Error(f"{d.name} Overflow in priority computation", d.loc)
        return out

    def load_const_entries(self, table: RT.Table, info: TableInfo, entries: list[A.TableEntry],
                           keys: list[RT.KeyField], key_types: list[P4Type], is_const: bool = True,
                           given: Optional[list[int]] = None) -> None:
        needs_prio = table.needs_priority
        lp = info.decl.prop("largest_priority_wins")
        largest = bool(self.expressions.const_value(lp.value)) if lp is not None else True
        # p4c's order of the entries (sorted when the written priorities are out of
        # order); BMv2's priority of each is its ``@priority(N)`` or its 1-based position
        # in that order, the smallest winning (see p4sim/engine/entry_priorities.py)
        def prio_ann(en: A.TableEntry) -> Optional[A.Annotation]:
            return next((a for a in en.annotations + en.action.annotations if a.name == "priority"), None)

        if entries and not keys:   # p4c's TypeInference, at the table's name
            raise P4Error(f"Entries cannot be specified for a table with no key {info.decl.name}",
                          at_name(info.decl.loc, info.decl.name))
        for position, i in enumerate(p4c_entry_order(given, largest, len(entries)), start=1):
            en = entries[i]
            kexprs = en.keys
            if len(kexprs) < len(keys):   # p4c's type checker (1.2.5.16): a lone _ is one key too
                # a constant alone keeps its width (8w1), inside a mask or range its value (4369 &&& 15)
                shown = ", ".join("DefaultExpression" if isinstance(k, (A.DefaultExpr, A.DontCare))
                                  else self.expressions.p4c_text(k, not isinstance(k, A.Binary)) for k in kexprs)
                raise P4Error(f"{{ {shown} }}: Size of entry keyset must match the table key set size", en.loc)
            if len(kexprs) > len(keys):
                raise P4Error("'Entry'", en.loc)
            matches = []
            for ke, kf, kt in zip(kexprs, keys, key_types):
                matches.append(self.const_match(ke, kf, kt))
            ai = self.resolve_action_ref(en.action)
            if ai not in info.actions:
                raise P4Error(f"entry action {ai.local_name} is not in the actions of table {info.name}", en.loc)
            args = self.const_action_args(ai, en.action) if en.action.args or ai.cp_params else ()
            prio = 0
            if needs_prio:
                an = prio_ann(en)
                bmv2 = int(self.expressions.const_value(an.exprs[0])) if an is not None and an.exprs else position
                prio = p4runtime_priority(bmv2)
            try:
                # initial entries of a non-const `entries` property stay writable by the control plane
                table.add_entry(matches, RT.ActionCall(ai.fqname, args), prio, const=is_const)
            except Exception as exc:  # duplicate keys etc.
                raise P4Error(f"table {info.name}: invalid entry: {exc}", en.loc) from None

    def keyset_value(self, e: A.Expr, kt: P4Type, mask: bool = False) -> int:
        """A constant of a keyset for a key of type ``kt``; as in p4c's typeSet, a
        serializable enum member stands for its value where the key has the enum's
        underlying type (``E.A &&& 0xF0`` for a ``bit<8>`` key), and the mask of a
        serializable enum key may be an integer (``E.B &&& 0xff00``)."""
        x = self.expressions.value_expr(e)
        st, skt = strip_new(x.ty), strip_new(kt)
        if x.const and isinstance(st, EnumT) and st.underlying is not None and \
                isinstance(skt, BitT) and st.underlying == skt:
            return int(x.value)
        if mask and x.const and isinstance(st, IntT) and isinstance(skt, EnumT) and skt.underlying is not None:
            return int(x.value)
        return int(self.expressions.const_value(e, kt))

    def const_match(self, e: A.Expr, kf: RT.KeyField, kt: P4Type) -> Any:
        w = kf.width
        full = (1 << w) - 1
        mk = kf.match_kind
        if mk == "exact" and isinstance(strip_new(kt), ErrorT) and not isinstance(e, (A.DefaultExpr, A.DontCare)):
            # p4c-bm2-ss writes an exact key of an entry only from a number or a boolean
            raise P4Error(f"{expr_text(e)}: unsupported exact key expression", e.loc)
        if isinstance(e, (A.DefaultExpr, A.DontCare)):
            if mk == "exact":
                raise P4Error("default/_ cannot be used for an exact key", e.loc)
            return {"lpm": RT.Lpm(0, 0), "ternary": RT.Ternary(0, 0), "range": RT.Range(0, full),
                    "optional": RT.Optional_(None)}[mk]
        if isinstance(e, A.Binary) and e.op == "&&&":
            v = self.keyset_value(e.left, kt) & full
            m = self.keyset_value(e.right, kt, mask=True) & full
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
            return RT.Range(self.keyset_value(e.left, kt) & full, self.keyset_value(e.right, kt) & full)
        v = self.keyset_value(e, kt)
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
