"""Protobuf wire-format pieces the P4Runtime wire paths share (:mod:`.wirewrites`,
:mod:`.wirecounters`): the two wire types they use, a field's one-byte key read from the
generated descriptors, the shortest varint of a value, a varint length read back, a
length-delimited field written. Nothing here loads numpy (:mod:`.wirecounters` does;
:mod:`.wirewrites` must not need it).

Example::

    >>> from p4.v1 import p4runtime_pb2 as pb
    >>> key = field_key(pb.WriteRequest, "updates", WIRE_LEN); key
    34
    >>> varint(300), read_length(b"\\xac\\x02" + bytes(300), 0, 302)
    (b'\\xac\\x02', (300, 2))
    >>> length_delimited(key, b"ab")
    b'"\\x02ab'
"""
from __future__ import annotations

from typing import Any

WIRE_VARINT = 0
"""Protobuf's wire type of a varint field."""
WIRE_LEN = 2
"""Protobuf's wire type of a length-delimited field."""


def field_key(message: Any, field: str, wire_type: int) -> int:
    """The one-byte key of ``message.field`` (every field the wire paths use is numbered
    below 16; AssertionError otherwise)."""
    number = message.DESCRIPTOR.fields_by_name[field].number
    if number >= 16:
        raise AssertionError(f"{message.__name__}.{field}: field {number} needs a two-byte key")
    return (number << 3) | wire_type


def varint(value: int) -> bytes:
    """Protobuf's shortest varint of ``value`` (>= 0).

    >>> varint(1), varint(127), varint(128)
    (b'\\x01', b'\\x7f', b'\\x80\\x01')
    """
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def length_delimited(key: int, payload: bytes) -> bytes:
    """The field of one-byte ``key`` holding ``payload``: key, varint length, payload."""
    return bytes((key,)) + varint(len(payload)) + payload


def read_length(buf: bytes, i: int, end: int) -> tuple[int, int]:
    """(length, index after it) of the varint length at ``buf[i]``; -1 when it runs past
    ``end`` or its message would.

    >>> read_length(b"\\x05abc", 0, 4)[0]
    -1
    """
    v = shift = 0
    while i < end and shift < 64:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return (v, i) if i + v <= end else (-1, i)
        shift += 7
    return -1, i
