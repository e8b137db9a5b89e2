"""Bytes encoding of P4Runtime values (match fields, action parameters, register data).

P4Runtime carries every bit<W> value as big-endian bytes; the canonical form is the
shortest one (no leading zero bytes, at least one byte). Values can be given as ``int``,
``bytes``, or strings: decimal/``0x`` hex, dotted IPv4 (``"10.0.1.2"``) or a colon MAC
(``"02:00:00:00:01:02"``). Independent of any switch implementation.

Example::

    >>> encode(0x0a000102, 32)
    b'\\n\\x00\\x01\\x02'
    >>> encode("10.0.1.2", 32) == encode(0x0a000102, 32)
    True
    >>> encode(0, 9)
    b'\\x00'
    >>> decode(b"\\x01\\x00")
    256
"""
from __future__ import annotations

import ipaddress
from typing import Union

Value = Union[int, bytes, str]


def to_int(value: Value) -> int:
    """The integer a value stands for.

    >>> to_int("02:00:00:00:00:0a"), to_int("0x10"), to_int("10.0.0.1"), to_int(b"\\x01\\x02")
    (2199023255562, 16, 167772161, 258)
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, (bytes, bytearray)):
        return int.from_bytes(value, "big")
    text = value.strip()
    if text.count(":") == 5 and all(len(p) <= 2 for p in text.split(":")):
        return int(text.replace(":", ""), 16)
    if text.count(".") == 3:
        return int(ipaddress.IPv4Address(text))
    if ":" in text:
        return int(ipaddress.IPv6Address(text))
    return int(text, 0)


def encode(value: Value, bitwidth: int) -> bytes:
    """Canonical (shortest) big-endian bytes of ``value``; ValueError if it needs more than
    ``bitwidth`` bits or is negative.

    >>> encode("0x0102", 16), encode(255, 8)
    (b'\\x01\\x02', b'\\xff')
    """
    v = to_int(value)
    if v < 0 or (bitwidth > 0 and v >> bitwidth):
        raise ValueError(f"value {value!r} does not fit in bit<{bitwidth}>")
    return v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")


def encode_full(value: Value, bitwidth: int) -> bytes:
    """Big-endian bytes of ``value`` padded to the full byte width of ``bit<bitwidth>``.

    >>> encode_full(1, 16)
    b'\\x00\\x01'
    """
    v = to_int(encode(value, bitwidth))
    return v.to_bytes(max(1, (bitwidth + 7) // 8), "big")


def decode(data: bytes) -> int:
    """The unsigned integer of big-endian ``data`` (b'' is 0).

    >>> decode(b"\\x00\\x05")
    5
    """
    return int.from_bytes(data, "big")


def prefix_mask(prefix_len: int, bitwidth: int) -> int:
    """The mask of an LPM prefix.

    >>> hex(prefix_mask(24, 32))
    '0xffffff00'
    """
    if not 0 <= prefix_len <= bitwidth:
        raise ValueError(f"prefix length {prefix_len} out of range for bit<{bitwidth}>")
    return ((1 << prefix_len) - 1) << (bitwidth - prefix_len)


def mac_str(value: Value) -> str:
    """Colon notation of a 48-bit MAC.

    >>> mac_str(0x0200000001ff)
    '02:00:00:00:01:ff'
    """
    b = to_int(value).to_bytes(6, "big")
    return ":".join(f"{x:02x}" for x in b)


def ipv4_str(value: Value) -> str:
    """Dotted notation of a 32-bit address.

    >>> ipv4_str(0x0a000102)
    '10.0.1.2'
    """
    return str(ipaddress.IPv4Address(to_int(value)))
