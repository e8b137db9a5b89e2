"""v1model and core externs: how each extern function call, extern object instantiation
and method call is executed: the :class:`NativeExterns`.

The declarations come from ``p4include/v1model.p4``; argument checking uses them, and the
behaviour here follows BMv2 simple_switch (see ``../shared/docs/reference-facts.md``).
Anything declared there but not implemented here is reported as ``unsupported``.

An extern function ``f`` is compiled by the method ``_fn_f``; arguments are compiled by
the :class:`~p4sim.engine.expressions.ExpressionCompiler`, outputs written with the
:class:`Assignments` given at construction (the statement compiler). Runtime objects
(counters, meters, registers, action profiles) go to ``CompileContext.state``.

Example::

    >>> from p4sim.engine.statements import StatementCompiler
    >>> from p4sim.engine.compile_context import CompileContext
    >>> natives = StatementCompiler(CompileContext(A.Program([]), None), None).calls.natives
    >>> natives._fn_truncate(None, None, [A.IntLit(64)])
    >>> natives.cx.w.text()
    'ctx.truncate_bytes = 64 if ctx.truncate_bytes is None else min(ctx.truncate_bytes, 64)\\n'
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

from p4sim.engine.arguments import bind_args
from p4sim.engine.codegen import Ex, Sym
from p4sim.engine.compile_context import CompileContext, expr_text
from p4sim.engine.expressions import ExpressionCompiler
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.types import (
    BitT, BoolT, EnumT, ErrorT, ExternT, HeaderT, IntT, P4Type, StackT, StringT, StructLikeT,
    TupleT, TypeVarT, UnionT, VarbitT, bit_width, same_type, strip_new,
)
from p4sim.runtime.action_profile import ActionProfile, ActionSelector
from p4sim.runtime.counters import CounterArray, DirectCounter
from p4sim.runtime.meters import DirectMeter, MeterArray
from p4sim.runtime.registers import RegisterArray

# p4c-bm2-ss appends this to its messages about v1model externs (ExternConverter::modelError)
MODEL_HINT = "Are you using an up-to-date v1model.p4?"

# v1model.p4 declares them, p4sim does not run them
V1MODEL_UNIMPLEMENTED = frozenset({"Checksum16"})

COUNTER_UNITS = {"packets": "packets", "bytes": "bytes", "packets_and_bytes": "packets_and_bytes"}


class Assignments(Protocol):
    """What extern calls need from the statement compiler: writing their outputs."""

    def lvalue_type(self, e: A.Expr) -> P4Type: ...

    def assign(self, lhs: A.Expr, rhs: Ex, node: A.Node) -> None: ...


class NativeExterns:
    """The v1model/core extern functions, extern instantiations and extern methods."""

    def __init__(self, cx: CompileContext, expressions: ExpressionCompiler, statements: Assignments) -> None:
        self.cx = cx
        self.expressions = expressions
        self.statements = statements

    # ------------------------------------------------------------------ helpers
    def args_for(self, e: A.Call, decl: Any, what: str) -> list[Optional[A.Expr]]:
        return bind_args(decl.params, e.args, e, what)

    def flat_fields(self, node: A.Expr, what: str, copy_in: bool = False) -> str:
        """Source of a list of (value, width) pairs for hash/checksum data, as BMv2
        builds a calculation's input.

        BMv2's ``BufBuilder`` (``src/bm_sim/calculations.cpp``) skips a header, or a field
        of a header, that the JSON names directly when the header is invalid. Checksum
        field lists, and ``hash()`` data that is a header or a struct rather than a list,
        are named directly: skipped.

        ``copy_in`` (``hash()`` with a list; it applies to the list's elements and nested
        lists): p4c-bm2-ss turns the list into a struct expression (midend
        ``EliminateTuples``) and ``RemoveComplexExpressions`` copies every component into
        a temporary before the call (in ingress and egress only), so the calculation
        hashes ``scalars.tmp…``. A field of an invalid header is hashed with the value a
        read of it yields, not skipped: 0 for a header never extracted, the old value
        after ``setInvalid()`` (which keeps the fields, as BMv2's ``mark_invalid``). A
        whole header in the list is copied with its validity, so an invalid one is still
        skipped (read from p4c's and BMv2's sources, not measured)."""
        if isinstance(node, A.ListExpr):
            parts = [self.flat_fields(x, what, copy_in) for x in node.elems]
            return "(" + " + ".join(parts) + ")" if parts else "[]"
        x = self.expressions.value_expr(node)
        t = strip_new(x.ty)
        if isinstance(t, HeaderT):
            return f"({x.code}._flat() if {x.code}._valid else [])"
        if isinstance(t, StructLikeT) and not isinstance(t, UnionT):
            # a struct's own fields are never header fields: no copy-in rule to pass down
            parts = [self.flat_fields(A.Member(node, n, loc=node.loc), what) for n, _ in t.fields]
            return "(" + " + ".join(parts) + ")" if parts else "[]"
        if isinstance(t, StackT):
            return f"[f for _h in {x.code}.h if _h._valid for f in _h._flat()]"
        if isinstance(t, TupleT):
            return f"[f for _v, _w in zip({x.code}, {[bit_width(et) or 0 for et in t.elems]!r}) for f in [(_v, _w)]]"
        if isinstance(t, IntT):
            raise P4Error(f"{what}: {expr_text(node)} has no width (use a typed constant such as 8w0)", node.loc)
        if isinstance(t, VarbitT):
            # a varbit value is (length_bits, value): it contributes its current length
            item = f"[({x.code}[1], {x.code}[0])]"
            if isinstance(node, A.Member) and not copy_in:
                base = self.expressions.value_expr(node.expr)
                if isinstance(strip_new(base.ty), HeaderT):
                    return f"({item} if {base.code}._valid else [])"
            return item
        w = bit_width(t)
        if w is None:
            raise P4Error(f"{what}: {expr_text(node)} of type {x.ty} cannot be part of a field list", node.loc)
        code = x.code
        if isinstance(t, BoolT):
            code = f"int({code})"
        elif isinstance(t, BitT) and t.signed:
            code = f"({code} & {t.mask:#x})"
        # a field of a header named directly: skipped when the header is invalid; copied
        # in (an element of a hash() list): the value a read yields (docstring)
        if isinstance(node, A.Member) and not copy_in:
            base = self.expressions.value_expr(node.expr)
            if isinstance(strip_new(base.ty), HeaderT):
                return f"([({code}, {w})] if {base.code}._valid else [])"
        return f"[({code}, {w})]"

    def enum_member(self, e: A.Expr, enum: str) -> str:
        x = self.expressions.value_expr(e)
        t = strip_new(x.ty)
        if not isinstance(t, EnumT) or t.name != enum or not x.const:
            raise P4Error(f"{expr_text(e)}: expected a constant of enum {enum}", e.loc)
        return x.value

    # ------------------------------------------------------------------ extern functions
    def check_extern_args(self, params: list[A.Param], args: list[Optional[A.Expr]],
                          bindings: dict[str, P4Type], type_params: list[str], what: str,
                          call: Optional[A.Call] = None) -> None:
        """Check arguments against an extern's declared parameter types, as for any call:
        ``out``/``inout`` arguments must be lvalues of exactly the parameter's type, ``in``
        and directionless ones must convert to it. Parameters whose type is a still-unbound
        type variable (``hash``'s ``D``, ``digest``'s ``T``...) are checked by the extern's
        own implementation. ``call``: an extern method's call, which p4c's type checker
        names when an argument does not convert to its parameter's bound type (its
        message is the call, ``'r.write(0, x)'``; the cause follows on its next lines)."""
        scope = {tp: TypeVarT(tp) for tp in type_params}
        scope.update(bindings)
        self.cx.type_bindings.append(scope)
        try:
            for p, a in zip(params, args):
                if a is None or isinstance(a, A.DontCare):
                    continue
                pt = self.expressions.resolve_type(p.type)
                if _has_typevar(pt):
                    continue
                if p.direction in ("out", "inout"):
                    lt = self.statements.lvalue_type(a)
                    if not same_type(strip_new(lt), strip_new(pt)):
                        raise P4Error(f"{what}: argument for {p.direction} parameter '{p.name}' has type {lt}, "
                                      f"expected {pt}", a.loc)
                else:
                    try:
                        self.expressions.value_expr(a, pt)
                    except P4Error as err:
                        if call is None or "cannot convert type" not in err.message:
                            raise
                        raise P4Error(f"'{expr_text(call)}'", call.loc) from err
        finally:
            self.cx.type_bindings.pop()

    def native_function(self, e: A.Call, sym: Sym, expected: Optional[P4Type], as_statement: bool) -> Optional[Ex]:
        overloads = sym.value
        name = overloads[0].name
        decl = next((d for d in overloads if self._arity_ok(d, e)), None)
        if decl is None:
            raise P4Error(f"{name}: no overload takes {len(e.args)} arguments", e.loc)
        args = self.args_for(e, decl, name)
        self.check_extern_args(decl.params, args, {}, decl.type_params, name)
        impl = getattr(self, "_fn_" + name, None)
        if impl is None and decl.loc is not None and decl.loc.file.endswith(("v1model.p4", "core.p4")):
            raise P4Unsupported(f"unsupported: extern function {name}", e.loc)
        if impl is None:
            # declared by the program: p4c-bm2-ss (without --emit-externs) has no converter;
            # its back end says so at the declaration, in statement order (deferred)
            if not as_statement:
                # a value it returns: p4c-bm2-ss's expression converter, at the call
                raise P4Error(f"{expr_text(e)}: not supported", e.loc)
            err = P4Error(f"{name}: unknown extern function", decl.loc or e.loc)
            self.cx.defer_backend_error(err)
            return None
        return impl(e, decl, args)

    @staticmethod
    def _arity_ok(d: Any, e: A.Call) -> bool:
        required = sum(1 for p in d.params if p.default is None and not any(a.name == "optional" for a in p.annotations))
        return required <= len(e.args) <= len(d.params)

    def _out_assign(self, target: Optional[A.Expr], value_code: str, what: str) -> None:
        if target is None or isinstance(target, A.DontCare):
            return
        t = self.statements.lvalue_type(target)
        st = strip_new(t)
        if isinstance(st, BitT):
            code = f"_to_signed({value_code}, {st.width})" if st.signed else f"(({value_code}) & {st.mask:#x})"
        elif isinstance(st, EnumT) and st.underlying is not None:
            code = f"(({value_code}) & {st.underlying.mask:#x})"
        elif isinstance(st, EnumT):
            # p4c-bm2-ss makes a plain enum a bit<32> numbered in declaration order (0, 1, ..):
            # the output's number names that member (a meter's color into `enum { GREEN,
            # YELLOW, RED }`, as sonic-pins' p4_pdpi does); a number past the last member
            # stays a number, which equals no member, as on BMv2
            members = tuple(st.members)
            code = (f"(lambda _v: {members!r}[_v] if _v < {len(members)} else _v)"
                    f"(({value_code}) & 0xffffffff)")
        elif isinstance(st, BoolT):
            code = f"bool({value_code})"
        else:
            raise P4Error(f"{what}: output must be a bit<W> or int<W> value, not {t}", target.loc)
        self.statements.assign(target, Ex(code, t), target)

    def _fn_verify(self, e: A.Call, d: Any, args: list) -> None:
        c = self.expressions.value_expr(args[0], BoolT())
        err = self.expressions.value_expr(args[1])
        if not isinstance(strip_new(err.ty), ErrorT):
            raise P4Error("verify: second argument must be an error", args[1].loc)
        self.cx.w.line(f"if not {c.code}: raise _ParserErrorSignal({err.code})")

    def _fn_mark_to_drop(self, e: A.Call, d: Any, args: list) -> None:
        if len(args) != 1 or args[0] is None:
            # v1model.p4 still declares the deprecated no-argument form; p4c-bm2-ss's
            # back end refuses it (simple_switch's ExternConverter_mark_to_drop) as it
            # converts the body: deferred, to be given in p4c's order (CompileContext)
            self.cx.defer_backend_error(
                P4Error(f"Expected 1 argument for {expr_text(e)}. {MODEL_HINT}", e.loc))
            return
        code = self.expressions.value_expr(args[0]).code
        self.cx.w.line(f"{code}.egress_spec = 511")
        self.cx.w.line(f"{code}.mcast_grp = 0")

    def _fn_hash(self, e: A.Call, d: Any, args: list) -> None:
        algo = self.enum_member(args[1], "HashAlgorithm")
        if algo == "random":
            raise P4Unsupported("unsupported: HashAlgorithm.random (BMv2 refuses to load it)", args[1].loc)
        base = self.expressions.value_expr(args[2])
        mx = self.expressions.value_expr(args[4])
        if not isinstance(args[3], A.ListExpr):
            # p4c-bm2-ss turns the data into a field list only from a list or a struct-like
            # value (convertToList); anything else: "expected a struct" ([--Werror=legacy])
            t = strip_new(self.expressions.value_expr(args[3]).ty)
            if not isinstance(t, (StructLikeT, TupleT)):
                raise P4Error(f"{expr_text(args[3])}: expected a struct", args[3].loc)
        data = self.flat_fields(args[3], "hash", copy_in=isinstance(args[3], A.ListExpr))
        h = self.cx.global_ref(self.cx.hash_fn(algo), "H_" + algo)
        self._out_assign(args[0], f"_compute_hash({h}, {data}, {base.code}, {mx.code})", "hash")

    def _fn_random(self, e: A.Call, d: Any, args: list) -> None:
        t = self.statements.lvalue_type(args[0])
        lo = self.expressions.value_expr(args[1], t)
        hi = self.expressions.value_expr(args[2], t)
        lo_code, hi_code = lo.code, hi.code
        st = strip_new(t)
        if isinstance(st, EnumT) and st.underlying is None:   # bounds by their numbers (p4c-bm2-ss)
            members = tuple(st.members)
            lo_code, hi_code = f"{members!r}.index({lo_code})", f"{members!r}.index({hi_code})"
        self._out_assign(args[0], f"_random({lo_code}, {hi_code})", "random")

    def _fn_digest(self, e: A.Call, d: Any, args: list) -> None:
        recv = self.expressions.value_expr(args[0], BitT(32))
        dt = self.expressions.resolve_type(e.type_args[0]) if e.type_args else None
        data = self.expressions.value_expr(args[1], dt)
        t = strip_new(data.ty)
        name = t.name if isinstance(t, StructLikeT) else "digest"
        if isinstance(t, StructLikeT):
            self.cx.digest_types.setdefault(name, t)
        self.cx.w.line(f"ctx.digests.append(({name!r}, {recv.code}, _digest_values({data.code})))")

    def _clone(self, kind_expr: A.Expr, session: A.Expr, field_list: Optional[str]) -> None:
        kind = self.enum_member(kind_expr, "CloneType")
        s = self.expressions.value_expr(session, BitT(32))
        self.cx.w.line(f"ctx.clone = _CloneRequest({kind!r}, {s.code}, {field_list or 'None'})")

    def _fn_clone(self, e: A.Call, d: Any, args: list) -> None:
        self._clone(args[0], args[1], None)

    def _fn_clone3(self, e: A.Call, d: Any, args: list) -> None:
        self._deprecated_data_form(e, "clone3")

    def _deprecated_data_form(self, e: A.Call, name: str) -> None:
        """``resubmit(data)``, ``recirculate(data)`` and ``clone3(type, session, data)``
        are declared (deprecated) in v1model.p4, but p4c-bm2-ss has no converter for them
        and refuses them as an unknown extern function as it converts the body (p4c reports
        it at the declaration in its own v1model.p4; p4sim at the call), in p4c's order
        (:meth:`CompileContext.defer_backend_error`)."""
        self.cx.defer_backend_error(P4Error(f"{name}: unknown extern function", e.loc))

    def _fn_clone_preserving_field_list(self, e: A.Call, d: Any, args: list) -> None:
        idx = self.expressions.const_value(args[2])
        self._clone(args[0], args[1], str(int(idx)))

    def _fn_resubmit(self, e: A.Call, d: Any, args: list) -> None:
        self._deprecated_data_form(e, "resubmit")

    def _fn_recirculate(self, e: A.Call, d: Any, args: list) -> None:
        self._deprecated_data_form(e, "recirculate")

    def _fn_resubmit_preserving_field_list(self, e: A.Call, d: Any, args: list) -> None:
        self.cx.w.line(f"ctx.resubmit = {int(self.expressions.const_value(args[0]))}")

    def _fn_recirculate_preserving_field_list(self, e: A.Call, d: Any, args: list) -> None:
        self.cx.w.line(f"ctx.recirculate = {int(self.expressions.const_value(args[0]))}")

    def _fn_truncate(self, e: A.Call, d: Any, args: list) -> None:
        n = self.expressions.value_expr(args[0], BitT(32))
        # BMv2 keeps the smallest length of all truncate() calls on a packet
        self.cx.w.line(f"ctx.truncate_bytes = {n.code} if ctx.truncate_bytes is None else min(ctx.truncate_bytes, {n.code})")

    def _fn_assert(self, e: A.Call, d: Any, args: list) -> None:
        c = self.expressions.value_expr(args[0], BoolT())
        self.cx.w.line(f"if not {c.code}: raise _AssertionFailed({str(e.loc)!r})")

    _fn_assume = _fn_assert

    def _fn_log_msg(self, e: A.Call, d: Any, args: list) -> None:
        msg = self.expressions.value_expr(args[0], StringT())
        if len(args) > 1 and args[1] is not None:
            data = self.expressions.value_expr(args[1])
            vals = data.code if isinstance(strip_new(data.ty), TupleT) else f"({data.code},)"
            self.cx.w.line(f"if ctx.log: ctx.log(_format_log({msg.code}, {vals}))")
        else:
            self.cx.w.line(f"if ctx.log: ctx.log({msg.code})")

    def _simple_fields(self, node: A.Expr, fn: str) -> None:
        """p4c-bm2-ss's rule for a checksum's data (EnsureExpressionIsSimple): lists, struct
        expressions, names, members, indexes and constants; anything computed is refused
        ("Computations are not supported in verify_checksum / update_checksum")."""
        if isinstance(node, A.ListExpr):
            for x in node.elems:
                self._simple_fields(x, fn)
            return
        if isinstance(node, A.StructExpr):
            for _name, x in node.fields:
                self._simple_fields(x, fn)
            return
        if isinstance(node, A.Member):
            if not isinstance(node.expr, A.TypeNameExpr):
                self._simple_fields(node.expr, fn)
            return
        if isinstance(node, A.Index):
            self._simple_fields(node.expr, fn)
            self._simple_fields(node.index, fn)
            return
        if isinstance(node, A.NameRef) or self.expressions.value_expr(node).const:
            return                          # a constant: p4c folds it (a cast of one too)
        raise P4Error(f"{expr_text(node)}: Computations are not supported in {fn}", node.loc)

    def _checksum(self, e: A.Call, args: list, verify: bool, payload: bool) -> None:
        cond = self.expressions.value_expr(args[0], BoolT())
        algo = self.enum_member(args[3], "HashAlgorithm")
        self._simple_fields(args[1], "verify_checksum" if verify else "update_checksum")
        data = self.flat_fields(args[1], "checksum")
        h = self.cx.global_ref(self.cx.hash_fn(algo), "H_" + algo)
        ct = self.expressions.value_expr(args[2]) if verify else None
        target_t = self.statements.lvalue_type(args[2]) if not verify else ct.ty
        width = bit_width(target_t)
        if width is None:
            raise P4Error("checksum: the checksum field must be bit<W>", args[2].loc)
        computed = f"(_hash_bytes({h}, {data}, {'ctx.payload()' if payload else 'None'}) & {(1 << width) - 1:#x})"
        if verify:
            self.cx.w.line(f"if {cond.code} and {computed} != {ct.code}: ctx.std.checksum_error = 1")
        else:
            self.cx.w.line(f"if {cond.code}:")
            self.cx.w.indent()
            self.statements.assign(args[2], Ex(computed, target_t), e)
            self.cx.w.dedent()

    def _fn_verify_checksum(self, e: A.Call, d: Any, args: list) -> None:
        self._checksum(e, args, True, False)

    def _fn_update_checksum(self, e: A.Call, d: Any, args: list) -> None:
        self._checksum(e, args, False, False)

    def _fn_verify_checksum_with_payload(self, e: A.Call, d: Any, args: list) -> None:
        self._checksum(e, args, True, True)

    def _fn_update_checksum_with_payload(self, e: A.Call, d: Any, args: list) -> None:
        self._checksum(e, args, False, True)

    def _fn_static_assert(self, e: A.Call, d: Any, args: list) -> Ex:
        v = self.expressions.const_value(args[0], BoolT())
        if not v:
            msg = self.expressions.const_value(args[1]) if len(args) > 1 and args[1] is not None else "static_assert failed"
            raise P4Error(str(msg), e.loc)
        return Ex("True", BoolT(), True, True)

    # ------------------------------------------------------------------ extern objects
    def instantiate_extern(self, decl: A.ExternDecl, type_args: list[P4Type], args: list[A.Argument],
                           fq: str, node: A.Node) -> Any:
        name = decl.name
        ctors = [m for m in decl.methods if m.name == name and m.return_type is None]
        ctor = next((c for c in ctors if self._arity_ok(c, A.Call(A.NameRef(name), args))), None)
        if ctor is None:
            raise P4Error(f"{name}: no constructor takes {len(args)} arguments", node.loc)
        bindings = dict(zip(decl.type_params, type_args))
        self.cx.type_bindings.append(bindings)
        try:
            vals = []
            for p, a in zip(ctor.params, bind_args(ctor.params, args, node, name)):
                pt = self.expressions.resolve_type(p.type)
                if a is None:  # an omitted @optional argument
                    vals.append(None)
                    continue
                vals.append(self.expressions.const_value(a, pt if not isinstance(pt, TypeVarT) else None))
        finally:
            self.cx.type_bindings.pop()
        if name == "counter":
            obj = CounterArray(fq, int(vals[0]), vals[1])
            self.cx.note_name(self.cx.state.counters, "counter", fq)
            self.cx.state.counters[fq] = obj
        elif name == "direct_counter":
            obj = DirectCounter(fq, vals[0])
            self.cx.note_name(self.cx.state.direct_counters, "direct counter", fq)
            self.cx.state.direct_counters[fq] = obj
        elif name == "meter":
            obj = MeterArray(fq, int(vals[0]), vals[1])
            self.cx.note_name(self.cx.state.meters, "meter", fq)
            self.cx.state.meters[fq] = obj
        elif name == "direct_meter":
            obj = DirectMeter(fq, vals[0])
            self.cx.note_name(self.cx.state.direct_meters, "direct meter", fq)
            self.cx.state.direct_meters[fq] = obj
        elif name == "register":
            rt0 = strip_new(type_args[0]) if type_args else None
            if isinstance(rt0, EnumT) and rt0.underlying is not None:
                rt0 = rt0.underlying  # p4c's EliminateSerEnums runs before the back end
            if not isinstance(rt0, BitT):
                # simple_switch's ExternConverter_register (a struct, a bool, ...)
                raise P4Error("register: Only registers with bit or int types are currently supported", node.loc)
            w = rt0.width
            obj = RegisterArray(fq, int(vals[0]), w)
            obj.signed = bool(rt0.signed)   # P4Info's type_spec: bitstring int, not bit
            self.cx.note_name(self.cx.state.registers, "register", fq)
            self.cx.state.registers[fq] = obj
        elif name == "action_profile":
            obj = ActionProfile(fq, int(vals[0]))
            self.cx.note_name(self.cx.state.action_profiles, "action profile", fq)
            self.cx.state.action_profiles[fq] = obj
        elif name == "action_selector":
            algo = vals[0]
            obj = ActionSelector(fq, int(vals[1]), algorithm=algo, output_width=int(vals[2]))
            self.cx.note_name(self.cx.state.action_profiles, "action profile", fq)
            self.cx.state.action_profiles[fq] = obj
        elif name in V1MODEL_UNIMPLEMENTED:
            raise P4Unsupported(f"unsupported: extern {name} (p4sim implements the v1model externs)", node.loc)
        else:
            # an extern the program declares itself: p4c-bm2-ss converts only those it
            # knows (without --emit-externs); it reports it at the extern's declaration,
            # after the control bodies and only if they gave no error (deferred)
            self.cx.unknown_externs.add(name)
            self.cx.backend_instance_errors.append(
                P4Error(f"{name}: unknown extern instance", decl.loc or node.loc))
            return None
        return obj

    def native_method(self, e: A.Call, inst: Any, name: str, expected: Optional[P4Type], as_statement: bool) -> Optional[Ex]:
        decl = inst.decl
        methods = [m for m in decl.methods if m.name == name and m.return_type is not None]
        m = next((x for x in methods if self._arity_ok(x, e)), None)
        if m is None:
            raise P4Error(f"{decl.name} has no method {name} taking {len(e.args)} arguments", e.loc)
        args = bind_args(m.params, e.args, e, f"{inst.name}.{name}")
        bindings = inst.type.type_args if isinstance(inst.type, ExternT) else {}
        self.check_extern_args(m.params, args, bindings, m.type_params, name, call=e)
        if decl.name in self.cx.unknown_externs:
            # p4c-bm2-ss's back end, at the method's declaration, in statement order
            err = P4Error(f"Unknown extern method {name} from type {decl.name}", m.loc or e.loc)
            if not as_statement:
                raise err
            self.cx.defer_backend_error(err)
            return None
        ref = inst.code or self.cx.global_ref(inst.obj, "X_" + inst.name)
        key = (decl.name, name)
        w = self.cx.w
        targs = inst.type.type_args if isinstance(inst.type, ExternT) else {}
        if key == ("counter", "count"):
            i = self.expressions.value_expr(args[0])
            w.line(f"{ref}.count({i.code}, ctx.std.packet_length)")
        elif key == ("direct_counter", "count"):
            pass  # BMv2 counts direct counters on every table hit
        elif key == ("meter", "execute_meter"):
            i = self.expressions.value_expr(args[0])
            self._out_assign(args[1], f"{ref}.execute({i.code}, ctx.std.packet_length, ctx.now_us)", name)
        elif key == ("direct_meter", "read"):
            # the table that owns the meter leaves the colour of its hit under the meter's name
            meter = repr(inst.obj.name) if inst.obj is not None else f"{ref}.name"
            self._out_assign(args[0], f"(ctx.dmeter.get({meter}) or 0)", name)
        elif key == ("register", "read"):
            i = self.expressions.value_expr(args[1])
            self._out_assign(args[0], f"{ref}.read({i.code})", name)
        elif key == ("register", "write"):
            i = self.expressions.value_expr(args[0])
            t = targs.get("T")
            v = self.expressions.value_expr(args[1], t)
            code = v.code
            st = strip_new(v.ty)
            if isinstance(st, BoolT):
                code = f"int({code})"
            elif isinstance(st, BitT) and st.signed:
                code = f"({code} & {st.mask:#x})"
            w.line(f"{ref}.write({i.code}, {code})")
        else:
            raise P4Unsupported(f"unsupported: {decl.name}.{name}", e.loc)
        return None


def _has_typevar(t: P4Type) -> bool:
    t = strip_new(t)
    if isinstance(t, TypeVarT):
        return True
    if isinstance(t, TupleT):
        return any(_has_typevar(x) for x in t.elems)
    return False
