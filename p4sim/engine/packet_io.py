"""The ``packet_in``/``packet_out`` externs of core.p4: ``extract``, ``lookahead``,
``advance`` and ``emit`` (the :class:`PacketExterns`).

The generated code reads the packet through the parser cursor of the per-packet context
(``ctx``) and writes the deparsed headers to it; a read past the end raises
``_ParserErrorSignal(_ERR_PacketTooShort)`` (see :mod:`p4sim.engine.program`).

Example::

    >>> from p4sim.engine.statements import StatementCompiler
    >>> from p4sim.engine.compile_context import CompileContext
    >>> packets = StatementCompiler(CompileContext(A.Program([]), None), None).calls.packets
    >>> sym = Sym("packet", None, "ctx", value="packet_in")
    >>> packets.packet_method(A.Call(A.NameRef("p"), [A.Argument(A.IntLit(16))]), sym, "advance", None, True)
    >>> packets.cx.w.text()
    '_advance(ctx, 16)\\n'
"""
from __future__ import annotations

from typing import Optional, Protocol

from p4sim.engine.codegen import Ex, Sym, pyname, zero_value_code
from p4sim.engine.compile_context import CompileContext, expr_text
from p4sim.engine.expressions import ExpressionCompiler
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.types import (
    BitT, BoolT, HeaderT, P4Type, StackT, StructLikeT, StructT, TupleT, UnionT, lookahead_width, strip_new,
)


class LValues(Protocol):
    """What ``extract`` needs from the statement compiler: the type of its target, and a
    local to extract into for ``extract<T>(_)``."""

    def lvalue_type(self, e: A.Expr) -> P4Type: ...

    def new_var(self, name: str, t: P4Type, node: A.Node, writable: bool = True) -> str: ...


class PacketExterns:
    """Compiles the methods of ``packet_in`` and ``packet_out`` parameters."""

    def __init__(self, cx: CompileContext, expressions: ExpressionCompiler, statements: LValues) -> None:
        self.cx = cx
        self.expressions = expressions
        self.statements = statements

    def packet_method(self, e: A.Call, sym: Sym, name: str, expected: Optional[P4Type], as_statement: bool) -> Optional[Ex]:
        w = self.cx.w
        kind = sym.value
        if kind == "packet_in":
            if name == "extract":
                if len(e.args) not in (1, 2):
                    raise P4Error("extract: expects 1 or 2 arguments", e.loc)
                target = e.args[0].value
                if isinstance(target, A.DontCare):
                    # extract<T>(_): a T is read (and checked) but kept nowhere
                    if len(e.type_args) != 1:
                        raise P4Error("extract: _ needs a type argument, as in extract<T>(_)", target.loc)
                    lt = self.expressions.resolve_type(e.type_args[0])
                    if not isinstance(strip_new(lt), HeaderT):
                        raise P4Error(f"extract: argument must be a header, not {lt}", target.loc)
                    target = A.NameRef("$" + self.cx.tmp("discard"), loc=target.loc)
                    pn = self.statements.new_var(target.name, lt, e, writable=True)
                    w.line(f"{pn} = {zero_value_code(lt)}")
                else:
                    lt = self.statements.lvalue_type(target)
                st = strip_new(lt)
                if not isinstance(st, HeaderT):
                    raise P4Error(f"extract: argument must be a header, not {lt}", target.loc)
                vl = None
                if len(e.args) == 2:
                    if not st.has_varbit:
                        raise P4Error("extract: the two-argument form needs a header with a varbit field", e.loc)
                    vl = self.expressions.value_expr(e.args[1].value).code
                elif st.has_varbit:
                    raise P4Error("extract: a header with a varbit field needs the size argument", e.loc)
                union_next = (isinstance(target, A.Member) and isinstance(target.expr, A.Member)
                              and target.expr.name == "next" and isinstance(
                                  strip_new(self.expressions.value_expr(target.expr.expr).ty), StackT))
                if union_next:
                    # hs.next.a of a stack of header unions: the element's member, then the
                    # element's other members invalid and nextIndex moved on (BMv2's
                    # extract into a union stack)
                    stack = self.expressions.value_expr(target.expr.expr)
                    tmp = self.cx.tmp("e")
                    member = f"{tmp}.{pyname(target.name)}"
                    w.line(f"{tmp} = _stack_next({stack.code})")
                    w.line(f"{member}._extract(ctx{', ' + vl if vl else ''})")
                    w.line(f"{tmp}._only({member})")
                    w.line(f"{stack.code}.nextIndex += 1")
                elif isinstance(target, A.Member) and target.name == "next":
                    stack = self.expressions.value_expr(target.expr)
                    tmp = self.cx.tmp("e")
                    w.line(f"{tmp} = _stack_next({stack.code})")
                    w.line(f"{tmp}._extract(ctx{', ' + vl if vl else ''})")
                    w.line(f"{stack.code}.nextIndex += 1")
                else:
                    x = self.expressions.value_expr(target)
                    w.line(f"{x.code}._extract(ctx{', ' + vl if vl else ''})")
                    parent = getattr(x, "union_parent", None)
                    if parent:
                        w.line(f"{parent}._only({x.code})")
                if self.cx.trace:
                    w.line(f"if ctx.log: ctx.log('Extracting header ' + {expr_text(target)!r})")
                return None
            if name == "lookahead":
                if len(e.type_args) != 1 or e.args:
                    raise P4Error("lookahead: expects one type argument and no arguments", e.loc)
                t = self.expressions.resolve_type(e.type_args[0])
                st = strip_new(t)
                if isinstance(st, (BitT,)):
                    code = f"_lookahead(ctx, {st.width})"
                    if st.signed:
                        code = f"_to_signed({code}, {st.width})"
                    return Ex(code, t)
                if isinstance(st, BoolT):
                    return Ex("bool(_lookahead(ctx, 1))", t)
                if isinstance(st, (HeaderT, StructT)) and lookahead_width(st) is not None:
                    # as p4c's ExpandLookahead: one read, then sliced into the fields (and a
                    # header stack's elements), each header made valid as setValid() does;
                    # assigned, the value goes straight into its target (Statements.assign)
                    ex = Ex(f"_lookahead_value(ctx, {st.pyclass})", t)
                    ex.lookahead_bits = f"_lookahead(ctx, {st.pyclass}._width)"  # type: ignore[attr-defined]
                    return ex
                raise P4Unsupported(f"unsupported: lookahead of {t}", e.loc)
            if name == "advance":
                if len(e.args) != 1:
                    raise P4Error("advance: expects one argument", e.loc)
                n = self.expressions.value_expr(e.args[0].value, BitT(32))
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
            x = self.expressions.value_expr(e.args[0].value)
            st = strip_new(x.ty)
            if not isinstance(st, (StructLikeT, StackT)) or not _emittable(st):
                # p4c's CheckCoreMethods, a pass after its type checking: raised once the
                # whole program is compiled (CompileContext.late_frontend_errors)
                self.cx.core_method_errors.append(P4Error(
                    f"{expr_text(e)}: argument must be a header, stack or union, or a struct or "
                    "tuple of such types", e.loc))
                return None
            w.line(f"{x.code}._emit(ctx)")
            return None
        raise P4Error(f"{kind} has no method '{name}'", e.loc)


def _emittable(t: P4Type) -> bool:
    """Whether ``emit`` takes a value of type ``t``: a header, stack or union, or a struct
    or tuple of such (p4c's CheckCoreMethods)."""
    t = strip_new(t)
    if isinstance(t, StructT):
        return all(_emittable(ft) for _, ft in t.fields)
    if isinstance(t, TupleT):
        return all(_emittable(et) for et in t.elems)
    return isinstance(t, (HeaderT, StackT, UnionT))
