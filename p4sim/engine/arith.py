"""Values of P4 numeric types as Python ints: bringing a result into the range of its
type, folding constant operations, and the Python source of an operation at run time.

Values of ``bit<W>`` are ints in ``[0, 2**W)``, ``int<W>`` ints in
``[-2**(W-1), 2**(W-1))``, ``int`` (arbitrary precision) any int.

Example::

    >>> from p4sim.frontend.types import BitT
    >>> fold("+", 250, 10, BitT(8)), fold("|+|", 250, 10, BitT(8)), fold("-", 0, 1, BitT(8, True))
    (4, 255, -1)
    >>> arith_code("*", "a", "b", BitT(8))
    '((a * b) & 0xff)'
"""
from __future__ import annotations

from typing import Any

from p4sim.engine.rt import to_signed
from p4sim.frontend.types import BitT, IntT, P4Type, strip_new


def wrap(code: str, t: P4Type) -> str:
    """Source that brings a raw Python int result into the range of type t."""
    t = strip_new(t)
    if isinstance(t, BitT):
        return f"(({code}) & {t.mask:#x})"
    if isinstance(t, IntT):
        return f"({code})"
    return code


def const_wrap(value: int, t: P4Type) -> int:
    """``value`` brought into the range of type t (a constant)."""
    t = strip_new(t)
    if isinstance(t, BitT):
        return to_signed(value, t.width) if t.signed else value & t.mask
    return value


def lit(value: Any) -> str:
    """Python source of a constant (hex beyond +-1024)."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value) if -1024 < value < 1024 else hex(value)
    return repr(value)


def fold(op: str, a: int, b: int, t: P4Type) -> int:
    """The constant result of ``a op b`` in type t."""
    if op == "+":
        v = a + b
    elif op == "-":
        v = a - b
    elif op == "*":
        v = a * b
    elif op == "/":
        v = a // b
    elif op == "%":
        v = a % b
    elif op == "&":
        v = a & b
    elif op == "|":
        v = a | b
    elif op == "^":
        v = a ^ b
    elif op == "|+|":
        if isinstance(t, BitT):
            lo, hi = ((-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, t.mask))
            return max(min(a + b, hi), lo)
        v = a + b
    elif op == "|-|":
        if isinstance(t, BitT):
            lo, hi = ((-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, t.mask))
            return max(min(a - b, hi), lo)
        v = a - b
    else:
        raise ValueError(op)
    return const_wrap(v, t)


def arith_code(op: str, a: str, b: str, t: P4Type) -> str:
    """Python source of ``a op b`` in type t (run-time operands)."""
    if isinstance(t, IntT):
        return f"({a} {op} {b})"
    assert isinstance(t, BitT)
    if op == "|+|":
        return f"_sat_add{'_s' if t.signed else '_u'}({a}, {b}, {t.width})"
    if op == "|-|":
        return f"_sat_sub{'_s' if t.signed else '_u'}({a}, {b}, {t.width})"
    if op == "/":
        return f"_div_u({a}, {b})"
    if op == "%":
        return f"_mod_u({a}, {b})"
    if op in ("&", "|", "^") and not t.signed:
        return f"({a} {op} {b})"
    if t.signed:
        return f"_to_signed({a} {op} {b}, {t.width})"
    return f"(({a} {op} {b}) & {t.mask:#x})"
