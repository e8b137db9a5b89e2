"""Support code that the generated Python of a compiled P4 program calls at run time:
parser exceptions, bit reading, header stacks and small arithmetic helpers.

Example::

    >>> read_bits(b"\\xab\\xcd", 4, 8)
    188
    >>> sat_add_signed(100, 100, 8)
    127
"""
from __future__ import annotations

from typing import Any, Callable, Optional


class ParserErrorSignal(Exception):
    """Raised inside a parser (extract past the end, verify(false), no select match...)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ExitSignal(Exception):
    """The P4 ``exit`` statement: terminates the current top-level block. Each callable
    it leaves puts the values of its ``out``/``inout`` parameters in ``outs`` (as its
    ``return`` would) for the caller's copy-out."""

    outs: Optional[tuple] = None


class AssertionFailed(Exception):
    """v1model ``assert``/``assume`` with a false condition (BMv2 aborts the switch)."""


def read_bits(data: bytes, offset_bits: int, width: int) -> int:
    """Read ``width`` bits starting at bit ``offset_bits`` (MSB first)."""
    start = offset_bits >> 3
    end = (offset_bits + width + 7) >> 3
    chunk = int.from_bytes(data[start:end], "big")
    total = (end - start) * 8
    shift = total - (offset_bits - start * 8) - width
    return (chunk >> shift) & ((1 << width) - 1)


def to_signed(value: int, width: int) -> int:
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def shl(value: int, amount: int, width: int) -> int:
    return 0 if amount >= width else (value << amount) & ((1 << width) - 1)


def shl_signed(value: int, amount: int, width: int) -> int:
    return 0 if amount >= width else to_signed(value << amount, width)


def shr(value: int, amount: int, width: int) -> int:
    if amount >= width:
        return -1 if value < 0 else 0
    return value >> amount


def sat_add_unsigned(a: int, b: int, width: int) -> int:
    return min(a + b, (1 << width) - 1)


def sat_sub_unsigned(a: int, b: int, width: int) -> int:
    return max(a - b, 0)


def sat_add_signed(a: int, b: int, width: int) -> int:
    return max(min(a + b, (1 << (width - 1)) - 1), -(1 << (width - 1)))


def sat_sub_signed(a: int, b: int, width: int) -> int:
    return max(min(a - b, (1 << (width - 1)) - 1), -(1 << (width - 1)))


def div_unsigned(a: int, b: int) -> int:
    return a // b if b else 0


def mod_unsigned(a: int, b: int) -> int:
    return a % b if b else 0


class HeaderStack:
    """``H[size]``: elements, and ``nextIndex`` as the P4 spec defines it."""

    __slots__ = ("h", "nextIndex", "size", "_factory")

    def __init__(self, factory: Callable[[], Any], size: int) -> None:
        self._factory = factory
        self.size = size
        self.h = [factory() for _ in range(size)]
        self.nextIndex = 0

    def _copy(self) -> "HeaderStack":
        n = HeaderStack.__new__(HeaderStack)
        n._factory = self._factory
        n.size = self.size
        n.h = [e._copy() for e in self.h]
        n.nextIndex = self.nextIndex
        return n

    def _set(self, other: "HeaderStack") -> None:
        for mine, theirs in zip(self.h, other.h):
            mine._set(theirs)
        self.nextIndex = other.nextIndex

    def _reset(self) -> None:
        for e in self.h:
            e._reset()
        self.nextIndex = 0

    def _eq(self, other: "HeaderStack") -> bool:
        return all(a._eq(b) for a, b in zip(self.h, other.h))

    def push_front(self, count: int) -> None:
        count = min(count, self.size)
        for i in range(self.size - 1, -1, -1):
            if i >= count:
                self.h[i]._set(self.h[i - count])
            else:
                self.h[i]._reset()  # invalid (every member, for a union)
        self.nextIndex = min(self.nextIndex + count, self.size)

    def pop_front(self, count: int) -> None:
        count = min(count, self.size)
        for i in range(self.size):
            if i + count < self.size:
                self.h[i]._set(self.h[i + count])
            else:
                self.h[i]._reset()  # invalid (every member, for a union)
        self.nextIndex = max(self.nextIndex - count, 0)

    def _emit(self, ctx: Any) -> None:
        for e in self.h:
            e._emit(ctx)

    def _any_valid(self) -> bool:
        return any(e._valid for e in self.h)


def emit_bytes(ctx: Any, value: int, width: int) -> None:
    ctx.emitted += value.to_bytes(width >> 3, "big")


def copy_headers(dst: Any, src: Any) -> None:
    """Copy the headers of ``src`` into ``dst`` (a headers struct, a header, a stack or a
    union) as BMv2's ``PHV::copy_headers`` copies a packet's PHV into a clone's or a
    multicast copy's: each header's validity, the fields of the valid ones only (an
    invalid header of ``dst`` keeps the fields it had, from the packet that used it
    before), and each stack's ``nextIndex``.

    Example::

        >>> class H:
        ...     __slots__ = ("_valid", "a")
        ...     def _set(self, o): self._valid, self.a = o._valid, o.a
        >>> src, dst = H(), H()
        >>> src._valid, src.a, dst._valid, dst.a = False, 5, True, 9
        >>> copy_headers(dst, src); (dst._valid, dst.a)
        (False, 9)
    """
    if isinstance(src, HeaderStack):
        dst.nextIndex = src.nextIndex
        for d, s in zip(dst.h, src.h):
            copy_headers(d, s)
        return
    slots = type(src).__slots__
    if "_valid" in slots:   # a header
        if src._valid:
            dst._set(src)
        else:
            dst._valid = False
        return
    for name in slots:
        value = getattr(src, name)
        if isinstance(value, HeaderStack) or hasattr(value, "__slots__"):
            copy_headers(getattr(dst, name), value)
        else:
            setattr(dst, name, value)


class PacketVars:
    """The per-packet P4 state: user headers, user metadata and standard_metadata."""

    __slots__ = ("hdr", "meta", "std")

    def __init__(self, hdr: Any, meta: Any, std: Any) -> None:
        self.hdr = hdr
        self.meta = meta
        self.std = std
