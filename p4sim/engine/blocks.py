"""Parsers, controls, actions and functions: the :class:`BlockCompiler`.

A parser or control *instance* becomes one Python function
``def <name>(ctx, <params>)``; its actions, tables and parser states are nested
functions (closures over the block's parameters and locals). Every instance gets its
own runtime objects (tables, externs) under its fully qualified name.

The block compiler owns the :class:`~p4sim.engine.parsers.ParserCompiler` (states) and the
:class:`~p4sim.engine.tables.TableCompiler`; bodies are compiled by the
:class:`~p4sim.engine.statements.StatementCompiler` it is built with, and local
instantiations (``counter(...) c;`` among a control's locals) are handed to the
:class:`BlockInstances` given at construction (the compiler).

Example::

    >>> from p4sim.engine.compiler import Compiler   # builds the BlockCompiler
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

from p4sim.engine.arguments import bind_args
from p4sim.engine.arrays import refuse_bmv2_array
from p4sim.engine.codegen import FnCtx, Sym, Writer
from p4sim.engine.compile_context import ActionInfo, CompileContext, FunctionInfo, InstanceInfo
from p4sim.engine.generics import block_type_bindings
from p4sim.engine.parsers import ParserCompiler
from p4sim.engine.statements import StatementCompiler, exit_copies_out
from p4sim.engine.tables import InlineInstances, TableCompiler, TableInfo
from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.types import BlockT, ExternT, P4Type, VoidT, strip_new

__all__ = ["ActionInfo", "BlockCompiler", "BlockInstances", "FunctionInfo", "TableInfo"]


class BlockInstances(InlineInstances, Protocol):
    """What a block needs to instantiate the parsers, controls and externs it declares."""

    def local_instantiation(self, d: A.Instantiation) -> None: ...


class BlockCompiler:
    """Compiles parser and control instances, actions and functions."""

    def __init__(self, cx: CompileContext, statements: StatementCompiler, instances: BlockInstances) -> None:
        self.cx = cx
        self.statements = statements
        self.expressions = statements.expressions
        self.generics = statements.calls.generics
        self.instances = instances
        self.parsers = ParserCompiler(cx, statements)
        self.tables = TableCompiler(cx, statements, instances)

    # ------------------------------------------------------------------ functions
    def function_decl(self, d: A.FunctionDecl) -> None:
        if d.type_params:
            g = self.generics.generic_function_decl(d)
            self.cx.define(d.name, Sym("function", None, "", value=g, decl=d), d)
            return
        rt = self.expressions.resolve_type(d.return_type)
        pyn = self.cx.uid("fn_" + d.name)
        info = FunctionInfo(d, pyn, [], rt, [])
        self.cx.define(d.name, Sym("function", rt, pyn, value=info, decl=d), d)
        self.statements.emit_callable(d, info, "function", rt, module_level=True)

    # ------------------------------------------------------------------ actions
    def action_decl(self, d: A.ActionDecl, module_level: bool) -> ActionInfo:
        local = d.name
        fq = self.cx.fq_name(d, local)
        pyn = self.cx.uid("act_" + d.name)
        info = ActionInfo(d, local, fq, pyn, [])
        info.block_path = "" if module_level else self.cx.path
        self.cx.define(local, Sym("action", None, pyn, value=info, decl=d), d)
        self.statements.emit_callable(d, info, "action", VoidT(), module_level)
        # directionless params come after directed ones (P4_16 rule)
        seen_dirless = False
        for p in d.params:
            if p.direction == "":
                seen_dirless = True
            elif seen_dirless:
                raise P4Error(f"action {d.name}: directionless parameters must come after directed ones", p.loc)
        self.cx.actions_by_fq.setdefault(fq, info)
        return info

    # ------------------------------------------------------------------ blocks
    def compile_block(self, decl: Any, fqname: str, ctor_args: list[A.Argument], node: A.Node,
                      type_args: Optional[list[P4Type]] = None) -> Any:
        """Generate the Python function of one parser/control instance (a generic
        declaration's type parameters bound to ``type_args``)."""
        bindings = block_type_bindings(decl, list(type_args or []), node)
        kind = "parser" if isinstance(decl, A.ParserDecl) else "control"
        pyn = self.cx.uid(("prs_" if kind == "parser" else "ctl_") + fqname.replace(".", "_"))
        inst = InstanceInfo(kind, fqname.rsplit(".", 1)[-1], fqname, decl, BlockT(kind, decl.name, decl), pyfunc=pyn)
        inst.params = decl.params
        saved = (self.cx.w, self.cx.fn, self.cx.path, self.cx.scopes, self.cx.type_bindings)
        ctor_syms = self.constructor_arguments(decl, ctor_args, node, bindings)
        self.cx.scopes = [self.cx.scopes[0]]
        self.cx.type_bindings = [bindings] if bindings else []
        self.cx.path = fqname
        fn = FnCtx(pyn, kind)
        body = Writer()
        body.depth = 1
        self.cx.w, self.cx.fn = body, fn
        self.cx.push_scope()
        for p, sym in zip(decl.ctor_params, ctor_syms):
            self.cx.define(p.name, sym, p)
        pnames = []
        ptypes = []
        extern_pnames = []   # after the others: the callers pass them last (CallCompiler.block_apply)
        for p in decl.params:
            t = self.expressions.resolve_type(p.type)
            refuse_bmv2_array(t, p)
            ptypes.append(t)
            if isinstance(t, ExternT) and t.name in ("packet_in", "packet_out"):
                self.cx.define(p.name, Sym("packet", t, "ctx", value=t.name), p)
                continue
            if isinstance(t, ExternT):
                pinst = self.extern_param(p, t, fqname)
                self.cx.define(p.name, Sym("instance", t, value=pinst, decl=p), p)
                extern_pnames.append(pinst.code)
                continue
            pn = self.cx.pyvar(p.name)
            self.cx.define(p.name, Sym("var", t, pn, fn=fn, writable=p.direction in ("out", "inout")), p)
            pnames.append(pn)
            if p.direction in ("out", "inout"):
                fn.outs.append(pn)
        inst.ptypes = ptypes
        for local in decl.locals:
            self.block_local(local)
        if kind == "control":
            self.cx.push_scope()
            for s in decl.body.stmts:
                self.statements.stmt(s)
            self.cx.pop_scope()
        else:
            self.parsers.parser_states(decl)
        if fn.outs:
            body.line(f"return (None, {', '.join(fn.outs)},)")
            body = exit_copies_out(body, fn.outs)
        if not body.lines:
            body.line("pass")
        self.cx.pop_scope()
        self.cx.w, self.cx.fn, self.cx.path, self.cx.scopes, self.cx.type_bindings = saved
        self.cx.mod.line(f"def {pyn}(ctx{''.join(', ' + p for p in pnames + extern_pnames)}):")
        self.cx.mod.lines.extend(body.lines)
        self.cx.mod.line("")
        inst.outs = fn.outs
        return inst

    def extern_param(self, p: A.Param, t: ExternT, fqname: str) -> InstanceInfo:
        """What an extern parameter of a parser or control (``register<bit<8>> r``)
        denotes in its body: the instance each apply gives, passed at run time (p4c's
        inliner substitutes it, the same one at every apply of an instance). As in p4c,
        such a parameter has no direction."""
        if p.direction:
            raise P4Error(f"{p.name}: a parameter with type {t.name} cannot have a direction", p.loc)
        pinst = InstanceInfo("extern", p.name, f"{fqname}.{p.name}", t.decl, t)
        pinst.code = self.cx.pyvar(p.name)
        return pinst

    def constructor_arguments(self, decl: Any, ctor_args: list[A.Argument], node: A.Node,
                              bindings: dict[str, P4Type]) -> list[Sym]:
        """What each constructor parameter of a parser/control instance denotes, with the
        arguments read where the instance is declared (a local constant, an extern or a
        control instance of the enclosing block: ``C2(c1) c2;``)."""
        saved = self.cx.type_bindings
        self.cx.type_bindings = saved + ([bindings] if bindings else [])
        try:
            syms = []
            for p, a in zip(decl.ctor_params, bind_args(decl.ctor_params, ctor_args, node, decl.name)):
                t = self.expressions.resolve_type(p.type)
                if isinstance(strip_new(t), (ExternT, BlockT)):
                    syms.append(self.expressions.expr(a).sym)
                    continue
                v = self.expressions.value_expr(a, t)
                if not v.const:
                    raise P4Error(f"{decl.name}: constructor argument '{p.name}' must be a compile-time constant",
                                  a.loc)
                syms.append(Sym("const", t, v.code, v.value))
            return syms
        finally:
            self.cx.type_bindings = saved

    def block_local(self, d: Any) -> None:
        if isinstance(d, A.ConstDecl):
            self.statements.const_decl(d)
        elif isinstance(d, A.VarDecl):
            self.statements.local_var(d)
        elif isinstance(d, A.ActionDecl):
            self.action_decl(d, module_level=False)
        elif isinstance(d, A.TableDecl):
            self.tables.table_decl(d)
        elif isinstance(d, A.Instantiation):
            self.instances.local_instantiation(d)
        elif isinstance(d, A.ValueSetDecl):
            self.parsers.value_set_decl(d)
        elif isinstance(d, A.FunctionDecl):
            raise P4Unsupported("unsupported: function declared inside a block", d.loc)
        else:
            raise P4Error(f"{type(d).__name__} cannot be declared here", d.loc)
