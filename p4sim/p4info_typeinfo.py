"""When p4c writes ``type_info {}`` into a P4Info that has no named types.

p4c's P4Runtime serializer creates the (possibly empty) ``type_info`` message as a side
effect of serializing certain objects (``control-plane/p4RuntimeSerializer.cpp`` and
``p4RuntimeArchStandard.h``): a table, an action parameter, a controller header field,
any extern instance, or an extern function called from a control's body (after p4c's
front end has inlined the actions and functions that body calls directly). A program
with none of these, e.g. a parser and value sets only, has no ``type_info`` at all.
:func:`p4c_writes_type_info` tells which case a program is in.

Example::

    >>> from p4.config.v1 import p4info_pb2 as P
    >>> p4c_writes_type_info(None, P.P4Info())
    False
    >>> p4c_writes_type_info(None, P.P4Info(tables=[P.Table()]))
    True
"""
from __future__ import annotations

from typing import Any, Iterable

from p4.config.v1 import p4info_pb2 as P

from p4sim.frontend import ast as A


def _decls(prog: Any) -> list[A.Decl]:
    return list(getattr(getattr(prog, "ast", None), "decls", None) or [])


def _called_names(node: A.Node) -> Iterable[str]:
    for n in A.iter_nodes(node):
        if isinstance(n, A.Call) and isinstance(n.func, A.NameRef):
            yield n.func.name


def _control_calls_extern_function(prog: Any) -> bool:
    """An extern function called from a control's body, directly or through the actions
    and functions the body calls (p4c inlines those into the body)."""
    decls = _decls(prog)
    extern_functions = {d.name for d in decls if isinstance(d, A.FunctionProto)}
    if not extern_functions:
        return False
    top_callables = {d.name: d for d in decls if isinstance(d, (A.ActionDecl, A.FunctionDecl))}
    for control in (d for d in decls if isinstance(d, A.ControlDecl) and d.body is not None):
        callables = dict(top_callables)
        callables.update({d.name: d for d in control.locals if isinstance(d, A.ActionDecl)})
        todo, seen = [control.body], set()
        while todo:
            node = todo.pop()
            for name in _called_names(node):
                if name in extern_functions:
                    return True
                if name in callables and name not in seen:
                    seen.add(name)
                    todo.append(callables[name].body)
    return False


def _has_extern_instance(prog: Any) -> bool:
    decls = _decls(prog)
    externs = {d.name for d in decls if isinstance(d, A.ExternDecl)}
    scopes: list[list[A.Decl]] = [decls]
    scopes += [d.locals for d in decls if isinstance(d, (A.ControlDecl, A.ParserDecl))]
    return any(isinstance(d, A.Instantiation) and isinstance(d.type, A.NamedType) and d.type.name in externs
               for scope in scopes for d in scope)


def p4c_writes_type_info(prog: Any, info: P.P4Info) -> bool:
    """Whether p4c's P4Info of ``prog`` (whose other parts are ``info``) has ``type_info``."""
    if info.HasField("type_info") or info.tables or info.digests:
        return True
    if any(a.params for a in info.actions) or any(h.metadata for h in info.controller_packet_metadata):
        return True
    return prog is not None and (_has_extern_instance(prog) or _control_calls_extern_function(prog))


def add_serializable_enum(info: P.P4Info, t: Any) -> None:
    """Add ``t`` to ``type_info.serializable_enums`` when it is a serializable enum, as
    p4c's TypeSpecConverter does for the type of a controller header field or of an
    action parameter: the underlying width and each member's value as a bytestring of
    that width (``\\000`` for 0 in 8 bits), in declaration order.

    >>> from p4sim.frontend.types import BitT, EnumT
    >>> info = P.P4Info(); add_serializable_enum(info, EnumT("E", ["A", "B"], BitT(8), {"A": 0, "B": 2}))
    >>> [(m.name, m.value) for m in info.type_info.serializable_enums["E"].members]
    [('A', b'\\x00'), ('B', b'\\x02')]
    """
    from p4sim.frontend.types import EnumT, strip_new

    st = strip_new(t)
    if not isinstance(st, EnumT) or st.underlying is None or st.name in info.type_info.serializable_enums:
        return
    width = st.underlying.width
    enum = info.type_info.serializable_enums[st.name]
    enum.underlying_type.bitwidth = width
    for name in st.members:
        m = enum.members.add()
        m.name = name
        m.value = (int(st.values.get(name, 0)) & ((1 << width) - 1)).to_bytes((width + 7) // 8, "big")


def add_error_members(info: P.P4Info, error_codes: dict[str, int]) -> None:
    """``type_info.error``: every error of the program in code order, as p4c writes it
    when a table key (or another converted type) is an ``error``.

    >>> info = P.P4Info(); add_error_members(info, {"NoMatch": 2, "NoError": 0})
    >>> list(info.type_info.error.members)
    ['NoError', 'NoMatch']
    """
    if info.type_info.HasField("error"):
        return
    info.type_info.error.members.extend(sorted(error_codes, key=lambda name: error_codes[name]))
