"""A digest list's values written straight in protobuf's wire format, with a cache.

GOR samples every packet of an alarmed port (``flow_sample_t``, 10 ``bit<W>`` members), and
the digest streamer built each value's ``P4Data`` through upb's accessors
(:func:`~p4sim.p4runtime.codec.encode_p4data`: a wrapper per member, ~15 µs a value),
the largest share of a busy switch's Python time in the story (issue 32, i32-prof's
py-spy). Here a value of a digest whose type is a ``bitstring`` or a ``struct`` of
bitstrings is written as the ``DigestList.data`` field's bytes (the canonical
bitstrings :func:`~p4sim.p4runtime.codec.encode_bytes` makes, in the members' order),
and the list merges them with one ``MergeFromString``. A flow's samples repeat (the same
5-tuple, ports and length; the queue depth takes few values), so each value's bytes are
kept in a bounded cache. The answer is the same message: upb keeps the values, not their
bytes (``tests/p4sim/p4runtime/test_wire_digests.py`` compares both paths). Any other
type (tuple, header, bool, nested struct) gives None from :meth:`DigestWire.build`, and
the streamer keeps the message path. Field numbers are read from the generated
descriptors, not written here.

Example::

    >>> from p4.config.v1 import p4types_pb2
    >>> from p4.v1 import p4runtime_pb2 as pb
    >>> spec = p4types_pb2.P4DataTypeSpec(); spec.bitstring.bit.bitwidth = 16
    >>> wire = DigestWire.build(spec, p4types_pb2.P4TypeInfo())
    >>> dl = pb.DigestList.FromString(wire.encode([300, 7]))
    >>> [d.bitstring for d in dl.data]
    [b'\\x01,', b'\\x07']
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from p4.config.v1 import p4types_pb2
from p4.v1 import p4data_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.codec import encode_bytes
from p4sim.p4runtime.wireformat import WIRE_LEN, field_key
from p4sim.p4runtime.wireformat import length_delimited as _field

_T_DATA = field_key(pb.DigestList, "data", WIRE_LEN)
_T_BITSTRING = field_key(p4data_pb2.P4Data, "bitstring", WIRE_LEN)
_T_STRUCT = field_key(p4data_pb2.P4Data, "struct", WIRE_LEN)
_T_MEMBERS = field_key(p4data_pb2.P4StructLike, "members", WIRE_LEN)

CACHE_VALUES = 65536
"""Values whose bytes are kept per digest; the cache starts again when it is full."""


def _width(spec: p4types_pb2.P4DataTypeSpec) -> Optional[tuple[int, bool]]:
    """(bits, signed) of a ``bit<W>`` or ``int<W>`` spec, None for anything else."""
    if spec.WhichOneof("type_spec") != "bitstring":
        return None
    kind = spec.bitstring.WhichOneof("type_spec")
    if kind == "bit":
        return spec.bitstring.bit.bitwidth, False
    if kind == "int":
        return spec.bitstring.int.bitwidth, True
    return None


class DigestWire:
    """The ``DigestList.data`` bytes of one digest's values (module docstring)."""

    def __init__(self, members: Sequence[tuple[int, bool]], struct: bool) -> None:
        self.members = tuple(members)
        self.struct = struct
        self._cache: dict[Any, bytes] = {}

    @classmethod
    def build(cls, spec: p4types_pb2.P4DataTypeSpec,
              type_info: p4types_pb2.P4TypeInfo) -> Optional["DigestWire"]:
        """The encoder of a ``bitstring`` or flat ``struct`` digest type; None otherwise."""
        one = _width(spec)
        if one is not None:
            return cls([one], struct=False)
        if spec.WhichOneof("type_spec") != "struct":
            return None
        st = type_info.structs.get(spec.struct.name)
        if st is None:
            return None
        widths = [_width(m.type_spec) for m in st.members]
        if any(w is None for w in widths):
            return None
        return cls([w for w in widths if w is not None], struct=True)

    def _value(self, value: Any) -> Optional[bytes]:
        if not self.struct:
            width, signed = self.members[0]
            v = value[0] if isinstance(value, tuple) and len(value) == 1 else value
            return _field(_T_DATA, _field(_T_BITSTRING, encode_bytes(int(v), width, signed)))
        if not isinstance(value, tuple) or len(value) != len(self.members):
            return None
        body = b"".join(_field(_T_MEMBERS, _field(_T_BITSTRING, encode_bytes(int(v), w, s)))
                        for v, (w, s) in zip(value, self.members))
        return _field(_T_DATA, _field(_T_STRUCT, body))

    def encode(self, values: Sequence[Any]) -> Optional[bytes]:
        """The ``data`` fields of a ``DigestList`` holding ``values``, in order; None when a
        value is not of the type's shape (the message path then says what is wrong).
        ``int()`` of a member raises as :func:`~p4sim.p4runtime.codec.encode_p4data` does."""
        cache = self._cache
        parts = []
        for value in values:
            wire = cache.get(value)
            if wire is None:
                wire = self._value(value)
                if wire is None:
                    return None
                if len(cache) >= CACHE_VALUES:
                    cache.clear()
                cache[value] = wire
            parts.append(wire)
        return b"".join(parts)
