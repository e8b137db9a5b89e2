"""``type_info`` as p4c writes it: when it is there at all, and the named types in it.

p4c's P4Runtime serializer creates the (possibly empty) ``type_info`` message as a side
effect of serializing certain objects (``control-plane/p4RuntimeSerializer.cpp`` and
``p4RuntimeArchStandard.h``): a table, an action parameter, a controller header field,
any extern instance, or an extern function called from a control's body (after p4c's
front end has inlined the actions and functions that body calls directly). A program
with none of these, e.g. a parser and value sets only, has no ``type_info`` at all.
:func:`p4c_writes_type_info` tells which case a program is in; :func:`add_type_spec`
converts a type as p4c's TypeSpecConverter does, listing the named types it uses.

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
from p4.config.v1 import p4types_pb2

from p4sim.frontend import ast as A
from p4sim.frontend.types import (BitT, BoolT, EnumT, ErrorT, NewT, StackT, StructLikeT, TupleT, VarbitT,
                                  bit_width, strip_new)


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


def add_type_spec(spec: Any, t: Any, info: P.P4Info, newtypes: Any, error_codes: dict[str, int]) -> None:
    """Fill the ``P4DataTypeSpec`` ``spec`` for the P4 type ``t`` and add the named types
    it uses to ``info.type_info``, as p4c's TypeSpecConverter does for a digest's type:
    ``bit``/``int``/``varbit``, ``bool``, a ``type`` (``new_type``, listed in
    ``new_types``), enums (``enum`` or ``serializable_enum``), ``error`` (the program's
    errors), structs, headers (fields as bitstrings), header unions, stacks and tuples.
    ``newtypes`` is a :class:`p4sim.p4info_newtypes.NewTypes`.

    >>> from p4sim.frontend.types import BitT, StructT
    >>> from p4sim.p4info_newtypes import NewTypes
    >>> info = P.P4Info(); spec = p4types_pb2.P4DataTypeSpec()
    >>> add_type_spec(spec, StructT("d_t", [("port", BitT(9))]), info, NewTypes(None), {})
    >>> spec.struct.name, info.type_info.structs["d_t"].members[0].type_spec.bitstring.bit.bitwidth
    ('d_t', 9)
    """
    if isinstance(t, NewT):
        spec.new_type.name = newtypes.spec_name(t)
        newtypes.add(info, t)
    elif isinstance(t, BoolT):
        spec.bool.SetInParent()
    elif isinstance(t, BitT):
        (spec.bitstring.int if t.signed else spec.bitstring.bit).bitwidth = t.width
    elif isinstance(t, VarbitT):
        spec.bitstring.varbit.max_bitwidth = t.max_width
    elif isinstance(t, ErrorT):
        spec.error.SetInParent()
        add_error_members(info, error_codes)
    elif isinstance(t, EnumT) and t.underlying is not None:
        spec.serializable_enum.name = t.name
        add_serializable_enum(info, t)
    elif isinstance(t, EnumT):
        spec.enum.name = t.name
        if t.name not in info.type_info.enums:
            members = info.type_info.enums[t.name].members
            for name in t.members:
                members.add().name = name
    elif isinstance(t, StackT) and isinstance(t.elem, StructLikeT):
        stack = spec.header_union_stack if t.elem.kind == "header_union" else spec.header_stack
        inner = stack.header_union if t.elem.kind == "header_union" else stack.header
        inner.name = t.elem.name
        stack.size = t.size
        add_type_spec(p4types_pb2.P4DataTypeSpec(), t.elem, info, newtypes, error_codes)
    elif isinstance(t, TupleT):
        for elem in t.elems:
            add_type_spec(spec.tuple.members.add(), elem, info, newtypes, error_codes)
    elif isinstance(t, StructLikeT) and t.kind == "header":
        spec.header.name = t.name
        if t.name not in info.type_info.headers:
            hdr = info.type_info.headers[t.name]
            for fname, ft in t.fields:
                m = hdr.members.add()
                m.name = fname
                st = ft.base if isinstance(ft, NewT) else ft
                if isinstance(st, BitT) and st.signed:
                    m.type_spec.int.bitwidth = st.width
                else:
                    m.type_spec.bit.bitwidth = bit_width(ft) or 0
    elif isinstance(t, StructLikeT) and t.kind == "header_union":
        spec.header_union.name = t.name
        if t.name not in info.type_info.header_unions:
            union = info.type_info.header_unions[t.name]
            for fname, ft in t.fields:
                m = union.members.add()
                m.name = fname
                m.header.name = str(ft)
                add_type_spec(p4types_pb2.P4DataTypeSpec(), ft, info, newtypes, error_codes)
    elif isinstance(t, StructLikeT):
        spec.struct.name = t.name
        if t.name not in info.type_info.structs:
            s = info.type_info.structs[t.name]
            for fname, ft in t.fields:
                m = s.members.add()
                m.name = fname
                add_type_spec(m.type_spec, ft, info, newtypes, error_codes)
    else:
        spec.bitstring.bit.bitwidth = bit_width(t) or 0
