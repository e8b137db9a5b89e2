"""What p4c refuses in the body of a generic parser or control (``control C<T>(...)``).

p4c type-checks a generic parser or control once, with its type parameters left abstract
(``Type_Var``), before any instance exists; p4sim compiles one copy per instance with the
type arguments in place, so an instance would accept what p4c already refused in the
declaration. :func:`check_generic_block` applies p4c's refusals on values whose declared
type is one of the block's type parameters: arithmetic (``TypeInference::binaryArith``),
equality (``TypeInference::compare``), table keys (``TypeInference`` on ``KeyElement``)
and ``extract``/``emit`` of such a value (``CheckCoreMethods``: not a header).
Names are matched by declaration (parameters, constructor parameters, local variables and
action parameters of the block), which is what p4c would see without shadowing.

Example::

    >>> from p4sim.frontend.parser import parse_text
    >>> prog = parse_text("control C<T>(inout T v)(T s) { apply { v = v + s; } }", "g.p4", validate=False)
    >>> try:
    ...     check_generic_block(prog.decls[0])
    ... except P4Error as err:
    ...     print(err)
    g.p4:1:44: error: +: cannot be applied to expression 'v' with type 'T'
"""
from __future__ import annotations

from typing import Union

from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.text import expr_text

ARITHMETIC_OPS = frozenset({"+", "-", "*", "/", "%", "|+|", "|-|", "&", "|", "^"})
EQUALITY_OPS = frozenset({"==", "!="})


def _typevar_names(block: Union[A.ControlDecl, A.ParserDecl]) -> dict[str, str]:
    """Name -> type parameter, for every value the block declares with a bare type parameter."""
    out: dict[str, str] = {}
    for node in A.iter_nodes(block):
        if isinstance(node, (A.Param, A.VarDecl)):
            t = node.type
            if isinstance(t, A.NamedType) and not t.args and t.name in block.type_params:
                out[node.name] = t.name
    return out


def check_generic_block(block: Union[A.ControlDecl, A.ParserDecl]) -> None:
    """Raise :class:`P4Error` where p4c's type checker refuses a value of a type parameter."""
    typed = _typevar_names(block)
    if not typed:
        return
    packets = _packet_params(block)

    def tvar(e: A.Expr) -> str:
        return typed.get(e.name, "") if isinstance(e, A.NameRef) and not e.is_global else ""

    for node in A.iter_nodes(block):
        if isinstance(node, A.Binary) and node.op in ARITHMETIC_OPS:
            for side in (node.left, node.right):
                if tvar(side):
                    raise P4Error(f"{node.op}: cannot be applied to expression '{side.name}' "
                                  f"with type '{tvar(side)}'", side.loc)
        elif isinstance(node, A.Binary) and node.op in EQUALITY_OPS and (tvar(node.left) or tvar(node.right)):
            raise P4Error(f"{expr_text(node.left)} and {expr_text(node.right)}: values of a type variable "
                          "cannot be compared", node.left.loc)
        elif isinstance(node, A.KeyElement) and tvar(node.expr):
            raise P4Error(f"Key {node.expr.name} field type must be a scalar type; "
                          f"it cannot be {tvar(node.expr)}", node.expr.loc)
        elif isinstance(node, A.Call) and node.args and tvar(node.args[0].value):
            _check_packet_call(node, packets)


def _packet_params(block: Union[A.ControlDecl, A.ParserDecl]) -> dict[str, str]:
    """Name -> ``packet_in`` / ``packet_out``, for the block's packet parameters."""
    return {p.name: p.type.name for p in block.params
            if isinstance(p.type, A.NamedType) and p.type.name in ("packet_in", "packet_out")}


def _check_packet_call(call: A.Call, packets: dict[str, str]) -> None:
    """p4c's CheckCoreMethods on ``pkt.extract(x)`` / ``pkt.emit(x)`` with ``x`` of a type
    parameter: neither a header nor anything ``emit`` takes."""
    f = call.func
    if not (isinstance(f, A.Member) and isinstance(f.expr, A.NameRef) and f.expr.name in packets):
        return
    kind, arg = packets[f.expr.name], call.args[0].value
    if kind == "packet_in" and f.name == "extract":
        raise P4Error(f"{expr_text(arg)}: argument must be a header", arg.loc)
    if kind == "packet_out" and f.name == "emit":
        raise P4Error(f"{expr_text(call)}: argument must be a header, stack or union, or a "
                      "struct or tuple of such types", call.loc)

