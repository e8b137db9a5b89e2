"""Value encodings of P4Runtime: bytestrings and ``P4Data`` (shared by the server and
the entity translation).

Rules (P4Runtime spec, section "Bytestrings"):

* big-endian; on output the canonical form is the shortest string that holds the
  value (0 is ``b"\\x00"``);
* on input any length is accepted (full-width strings such as the P4 tutorials send,
  or longer ones with zero / sign-extension padding) as long as the value fits the
  P4Info bitwidth; an empty string or a value that does not fit raises
  ``RuntimeStateError("OUT_OF_RANGE", …)``, the code the spec names.

``P4Data`` values are described by a ``p4.config.v1.P4DataTypeSpec`` plus the P4Info's
``type_info``: ``bitstring`` (bit/int/varbit) ↔ ``int``, ``bool`` ↔ ``bool``, ``struct``
and ``tuple`` ↔ ``tuple`` of member values in declaration order, ``header`` ↔ ``tuple``
of field values (valid) or ``None`` (invalid).

Example::

    >>> encode_bytes(99, 16)
    b'c'
    >>> decode_bytes(b"\\x00\\x63", 12, "key")
    99
    >>> encode_bytes(-99, 8, signed=True), decode_bytes(b"\\xff\\x9d", 8, "x", signed=True)
    (b'\\x9d', -99)
"""
from __future__ import annotations

from typing import Any, Optional

from p4.config.v1 import p4types_pb2
from p4.v1 import p4data_pb2

from p4sim.runtime.errors import RuntimeStateError

__all__ = ["encode_bytes", "decode_bytes", "encode_full_width", "encode_p4data", "decode_p4data"]


def _min_bits(value: int, signed: bool) -> int:
    """Fewest bits that represent ``value`` (at least 1), per the spec."""
    if value == 0:
        return 1
    if not signed:
        return value.bit_length()
    return (value.bit_length() if value > 0 else (~value).bit_length()) + 1


def encode_bytes(value: int, width: int, signed: bool = False) -> bytes:
    """Canonical (shortest) big-endian bytestring of ``value``.

    ``value`` is taken modulo 2**width first for unsigned values (so a value read from the
    data plane always encodes); ``signed`` values are the Python int of an ``int<W>``.

    Example::

        >>> encode_bytes(0, 32), encode_bytes(0x3064, 16), encode_bytes(-739, 12, signed=True)
        (b'\\x00', b'0d', b'\\xfd\\x1d')
    """
    if not signed:
        if width > 0:
            value &= (1 << width) - 1
        return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")
    nbytes = (_min_bits(value, True) + 7) // 8
    return value.to_bytes(nbytes, "big", signed=True)


def encode_full_width(value: int, width: int) -> bytes:
    """Big-endian bytestring of exactly ``ceil(width / 8)`` bytes (for packet headers).

    Example::

        >>> encode_full_width(5, 9)
        b'\\x00\\x05'
    """
    nbytes = max(1, (width + 7) // 8)
    return (value & ((1 << (nbytes * 8)) - 1)).to_bytes(nbytes, "big")


SHOWN_BYTES = 16
"""At most this many bytes of a refused bytestring are quoted in its error: the error
travels back in the batch's status (gRPC trailers, 16 KB by default), so a 100 MB value
quoted whole would turn an INVALID_ARGUMENT into a lost status."""


def _shown(data: bytes) -> str:
    """``0x…`` of ``data``, its first :data:`SHOWN_BYTES` bytes and its length when longer.

    >>> _shown(b"\x01\x02"), _shown(bytes(20))
    ('0x0102', '0x00000000000000000000000000000000... (20 bytes)')
    """
    if len(data) <= SHOWN_BYTES:
        return f"0x{data.hex()}"
    return f"0x{data[:SHOWN_BYTES].hex()}... ({len(data)} bytes)"


def decode_bytes(data: bytes, width: int, what: str = "value", signed: bool = False) -> int:
    """Integer value of a received bytestring, checked against ``width`` bits.

    Raises ``RuntimeStateError("OUT_OF_RANGE", …)`` for an empty string or a value that
    does not fit (``width`` 0 means unchecked).

    Example::

        >>> decode_bytes(b"\\x00\\x00\\x63", 12)
        99
        >>> try:
        ...     decode_bytes(b"\\x10\\x63", 12, "hdr.x")
        ... except RuntimeStateError as e:
        ...     print(e.code)
        OUT_OF_RANGE
    """
    if not data:
        raise RuntimeStateError("OUT_OF_RANGE", f"{what}: empty bytestring")
    value = int.from_bytes(data, "big", signed=signed)
    if width > 0 and _min_bits(value, signed) > width:
        raise RuntimeStateError("OUT_OF_RANGE",
                                f"{what}: bytestring {_shown(data)} does not fit in {width} bits")
    return value


# --------------------------------------------------------------------------- P4Data
def _bitstring_width(spec: p4types_pb2.P4BitstringLikeTypeSpec) -> tuple[int, bool]:
    kind = spec.WhichOneof("type_spec")
    if kind == "int":
        return spec.int.bitwidth, True
    if kind == "varbit":
        return spec.varbit.max_bitwidth, False
    return spec.bit.bitwidth, False


def _members(spec: p4types_pb2.P4DataTypeSpec, type_info: p4types_pb2.P4TypeInfo) -> list[tuple[str, Any]]:
    """(name, P4DataTypeSpec) of a struct's members, or (name, bitstring spec) of a header's."""
    kind = spec.WhichOneof("type_spec")
    if kind == "struct":
        st = type_info.structs.get(spec.struct.name)
        if st is None:
            raise RuntimeStateError("INVALID_ARGUMENT", f"P4Info has no struct {spec.struct.name}")
        return [(m.name, m.type_spec) for m in st.members]
    if kind == "header":
        h = type_info.headers.get(spec.header.name)
        if h is None:
            raise RuntimeStateError("INVALID_ARGUMENT", f"P4Info has no header {spec.header.name}")
        return [(m.name, m.type_spec) for m in h.members]
    raise RuntimeStateError("UNIMPLEMENTED", f"P4Data of type {kind} is not supported")


def encode_p4data(value: Any, spec: p4types_pb2.P4DataTypeSpec, type_info: p4types_pb2.P4TypeInfo,
                  out: Optional[p4data_pb2.P4Data] = None) -> p4data_pb2.P4Data:
    """``P4Data`` of a Python value (see the module docstring for the mapping).

    Example::

        >>> spec = p4types_pb2.P4DataTypeSpec(); spec.bitstring.bit.bitwidth = 48
        >>> encode_p4data(0x0a, spec, p4types_pb2.P4TypeInfo()).bitstring
        b'\\n'
    """
    data = out if out is not None else p4data_pb2.P4Data()
    kind = spec.WhichOneof("type_spec")
    if kind == "bitstring":
        width, signed = _bitstring_width(spec.bitstring)
        data.bitstring = encode_bytes(int(value), width, signed)
    elif kind == "bool":
        data.bool = bool(value)
    elif kind == "tuple":
        data.tuple.SetInParent()
        for v, m in zip(value, spec.tuple.members):
            encode_p4data(v, m, type_info, data.tuple.members.add())
    elif kind == "struct":
        data.struct.SetInParent()
        for v, (_, m) in zip(value, _members(spec, type_info)):
            encode_p4data(v, m, type_info, data.struct.members.add())
    elif kind == "header":
        data.header.SetInParent()
        if value is not None:
            data.header.is_valid = True
            for v, (_, m) in zip(value, _members(spec, type_info)):
                width, signed = _bitstring_width(m)
                data.header.bitstrings.append(encode_bytes(int(v), width, signed))
    else:
        raise RuntimeStateError("UNIMPLEMENTED", f"P4Data of type {kind} is not supported")
    return data


def decode_p4data(data: p4data_pb2.P4Data, spec: p4types_pb2.P4DataTypeSpec,
                  type_info: p4types_pb2.P4TypeInfo, what: str = "data") -> Any:
    """Python value of a received ``P4Data``; INVALID_ARGUMENT when its shape does not
    match ``spec``, OUT_OF_RANGE when a bitstring does not fit.

    Example::

        >>> spec = p4types_pb2.P4DataTypeSpec(); spec.bitstring.bit.bitwidth = 8
        >>> decode_p4data(p4data_pb2.P4Data(bitstring=b"\\x00\\x07"), spec, p4types_pb2.P4TypeInfo())
        7
    """
    kind = spec.WhichOneof("type_spec")
    got = data.WhichOneof("data")
    want = {"bitstring": "bitstring", "bool": "bool", "tuple": "tuple", "struct": "struct",
            "header": "header"}.get(kind or "")
    if want is None:
        raise RuntimeStateError("UNIMPLEMENTED", f"{what}: P4Data of type {kind} is not supported")
    if got != want:
        raise RuntimeStateError("INVALID_ARGUMENT", f"{what}: expected P4Data {want}, got {got}")
    if kind == "bitstring":
        width, signed = _bitstring_width(spec.bitstring)
        return decode_bytes(data.bitstring, width, what, signed)
    if kind == "bool":
        return data.bool
    if kind == "tuple":
        if len(data.tuple.members) != len(spec.tuple.members):
            raise RuntimeStateError("INVALID_ARGUMENT", f"{what}: tuple has the wrong number of members")
        return tuple(decode_p4data(d, m, type_info, f"{what}[{i}]")
                     for i, (d, m) in enumerate(zip(data.tuple.members, spec.tuple.members)))
    members = _members(spec, type_info)
    if kind == "struct":
        if len(data.struct.members) != len(members):
            raise RuntimeStateError("INVALID_ARGUMENT", f"{what}: struct has the wrong number of members")
        return tuple(decode_p4data(d, m, type_info, f"{what}.{n}")
                     for d, (n, m) in zip(data.struct.members, members))
    if not data.header.is_valid:
        if data.header.bitstrings:
            raise RuntimeStateError("INVALID_ARGUMENT", f"{what}: an invalid header carries no bitstrings")
        return None
    if len(data.header.bitstrings) != len(members):
        raise RuntimeStateError("INVALID_ARGUMENT", f"{what}: header has the wrong number of fields")
    out = []
    for b, (n, m) in zip(data.header.bitstrings, members):
        width, signed = _bitstring_width(m)
        out.append(decode_bytes(b, width, f"{what}.{n}", signed))
    return tuple(out)
