"""Hypothesis strategies for any protobuf message, by walking its descriptor: every field
of every message type gets values of its own wire type, biased towards the values that
break code (0, the type's limits, empty and very long strings, invalid UTF-8 in bytes,
ids the target knows), nested messages to a bounded depth, repeated fields with a few
elements, oneofs with one member or none. Fields added to a ``.proto`` later are covered
with no change here.

``hints`` maps a field name (``"table_id"``) to a strategy of values the target knows,
mixed in with the generic ones: random ids only test the "unknown id" path.

>>> from hypothesis import HealthCheck, given, settings
>>> from p4.v1 import p4runtime_pb2
>>> seen = []
>>> @settings(max_examples=20, database=None, suppress_health_check=list(HealthCheck))
... @given(message_strategy(p4runtime_pb2.Replica.DESCRIPTOR))
... def probe(msg):
...     seen.append(type(msg).__name__)
>>> probe(); set(seen)
{'Replica'}
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

from google.protobuf import descriptor as _d
from google.protobuf import message_factory
from hypothesis import strategies as st

SearchStrategy = st.SearchStrategy
MAX_DEPTH = 4
MAX_REPEATED = 4

_INT_LIMITS = {
    _d.FieldDescriptor.TYPE_INT32: (-(1 << 31), (1 << 31) - 1),
    _d.FieldDescriptor.TYPE_SINT32: (-(1 << 31), (1 << 31) - 1),
    _d.FieldDescriptor.TYPE_SFIXED32: (-(1 << 31), (1 << 31) - 1),
    _d.FieldDescriptor.TYPE_INT64: (-(1 << 63), (1 << 63) - 1),
    _d.FieldDescriptor.TYPE_SINT64: (-(1 << 63), (1 << 63) - 1),
    _d.FieldDescriptor.TYPE_SFIXED64: (-(1 << 63), (1 << 63) - 1),
    _d.FieldDescriptor.TYPE_UINT32: (0, (1 << 32) - 1),
    _d.FieldDescriptor.TYPE_FIXED32: (0, (1 << 32) - 1),
    _d.FieldDescriptor.TYPE_UINT64: (0, (1 << 64) - 1),
    _d.FieldDescriptor.TYPE_FIXED64: (0, (1 << 64) - 1),
}


def interesting_int(lo: int, hi: int) -> SearchStrategy[int]:
    """Integers in [lo, hi], often a limit, 0, 1 or a power of two ± 1."""
    edges = sorted({v for v in (lo, hi, 0, 1, -1, 2, 255, 256, 511, 512, 65535, 65536,
                                (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 1 << 32)
                    if lo <= v <= hi})
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi),
                     st.integers(0, 64).map(lambda b: min(hi, max(lo, (1 << b) - 1))))


def interesting_bytes(max_size: int = 24) -> SearchStrategy[bytes]:
    """Bytes: empty, short, zero-padded, all-ones, invalid UTF-8, or long."""
    return st.one_of(st.binary(max_size=max_size), st.just(b""),
                     st.integers(1, 40).map(lambda n: b"\x00" * n),
                     st.integers(1, 40).map(lambda n: b"\xff" * n),
                     st.just(b"\xc3\x28\xff\xfe"), st.integers(256, 5000).map(lambda n: b"A" * n))


def interesting_text() -> SearchStrategy[str]:
    """Strings: empty, ordinary, control characters, non-ASCII, very long."""
    return st.one_of(st.text(max_size=24), st.just(""), st.just("\x00"),
                     st.just("../../etc/passwd"), st.just("10.0.0.1"),
                     st.just("\u202e\ufeff\U0001f600"),
                     st.integers(256, 5000).map(lambda n: "x" * n))


def _scalar(field: _d.FieldDescriptor) -> SearchStrategy[Any]:
    t = field.type
    if t in _INT_LIMITS:
        return interesting_int(*_INT_LIMITS[t])
    if t == _d.FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t in (_d.FieldDescriptor.TYPE_DOUBLE, _d.FieldDescriptor.TYPE_FLOAT):
        return st.floats(allow_nan=True, allow_infinity=True, width=32 if
                         t == _d.FieldDescriptor.TYPE_FLOAT else 64)
    if t == _d.FieldDescriptor.TYPE_STRING:
        return interesting_text()
    if t == _d.FieldDescriptor.TYPE_BYTES:
        return interesting_bytes()
    if t == _d.FieldDescriptor.TYPE_ENUM:
        known = [v.number for v in field.enum_type.values]
        # proto3 enums are open: unknown numbers reach the server as they are (upb's
        # FileDescriptor has no ``syntax``; ``is_closed`` says it on every protobuf >= 4.22)
        return st.sampled_from(known) if field.enum_type.is_closed \
            else st.one_of(st.sampled_from(known), st.integers(-3, 1000))
    raise TypeError(f"field {field.full_name}: unsupported type {t}")


def message_strategy(desc: _d.Descriptor, hints: Optional[Mapping[str, SearchStrategy[Any]]] = None,
                     depth: int = MAX_DEPTH) -> SearchStrategy[Any]:
    """Messages of type ``desc`` with fields drawn as described in the module docstring.

    ``hints[name]`` values are mixed into every field called ``name`` (any message).
    """
    hints = dict(hints or {})
    cls = message_factory.GetMessageClass(desc)

    def field_values(field: _d.FieldDescriptor) -> Optional[SearchStrategy[Any]]:
        if field.type == _d.FieldDescriptor.TYPE_MESSAGE:
            if depth <= 0:
                return None
            if field.message_type.GetOptions().map_entry:
                return None          # map fields: none in the protocols fuzzed here
            return message_strategy(field.message_type, hints, depth - 1)
        base = _scalar(field)
        if field.name in hints:
            return st.one_of(hints[field.name], hints[field.name], base)
        return base

    @st.composite
    def build(draw: Callable[[SearchStrategy[Any]], Any]) -> Any:
        msg = cls()
        oneof_pick: dict[str, Optional[str]] = {}
        for oneof in desc.oneofs:
            if oneof.fields and not (len(oneof.fields) == 1 and oneof.fields[0].has_presence
                                     and oneof.name.startswith("_")):
                oneof_pick[oneof.name] = draw(st.one_of(
                    st.none(), st.sampled_from([f.name for f in oneof.fields])))
        for field in desc.fields:
            oneof = field.containing_oneof
            if oneof is not None and oneof.name in oneof_pick:
                if oneof_pick[oneof.name] != field.name:
                    continue
            elif not draw(st.booleans()):
                continue
            values = field_values(field)
            if values is None:
                continue
            if field.is_repeated:
                items = draw(st.lists(values, max_size=MAX_REPEATED))
                target = getattr(msg, field.name)
                if field.type == _d.FieldDescriptor.TYPE_MESSAGE:
                    for item in items:
                        target.add().CopyFrom(item)
                else:
                    target.extend(items)
            elif field.type == _d.FieldDescriptor.TYPE_MESSAGE:
                getattr(msg, field.name).CopyFrom(draw(values))
            else:
                setattr(msg, field.name, draw(values))
        return msg

    return build()
