"""Bytestring and P4Data encodings (P4Runtime spec, "Bytestrings", with its examples)."""
from __future__ import annotations

import pytest
from p4.config.v1 import p4types_pb2
from p4.v1 import p4data_pb2

from p4sim.p4runtime.codec import decode_bytes, decode_p4data, encode_bytes, encode_full_width, encode_p4data
from p4sim.runtime.errors import RuntimeStateError

VALID = [  # (width, signed, bytes, value, canonical?)
    (8, False, b"\x63", 99, True), (16, False, b"\x00\x63", 99, False), (16, False, b"\x63", 99, True),
    (16, False, b"\x30\x64", 0x3064, True), (16, False, b"\x00\x30\x64", 0x3064, False),
    (12, False, b"\x00\x63", 99, False), (12, False, b"\x63", 99, True), (12, False, b"\x00\x00\x63", 99, False),
    (8, True, b"\x63", 99, True), (8, True, b"\x9d", -99, True), (8, True, b"\xff\x9d", -99, False),
    (12, True, b"\xfd\x1d", -739, True), (16, True, b"\x00\x00", 0, False), (16, True, b"\x00", 0, True),
    (9, False, b"\x01\xff", 511, True), (48, False, b"\x00", 0, True),
]
INVALID = [(8, False, b"\x01\x63"), (8, False, b""), (16, False, b"\x01\x00\x63"), (12, False, b"\x10\x63"),
           (12, False, b"\x01\x00\x63"), (12, False, b"\x00\x40\x63"), (8, True, b"\x00\x9d"),
           (12, True, b"\x8d\x1d"), (16, True, b"")]


@pytest.mark.parametrize("width,signed,data,value,canonical", VALID)
def test_valid_bytestrings(width, signed, data, value, canonical):
    assert decode_bytes(data, width, "v", signed) == value
    assert (encode_bytes(value, width, signed) == data) == canonical


@pytest.mark.parametrize("width,signed,data", INVALID)
def test_invalid_bytestrings_are_out_of_range(width, signed, data):
    with pytest.raises(RuntimeStateError) as ei:
        decode_bytes(data, width, "v", signed)
    assert ei.value.code == "OUT_OF_RANGE"


def test_full_width():
    assert encode_full_width(3, 9) == b"\x00\x03" and encode_full_width(0, 48) == bytes(6)


def _type_info() -> p4types_pb2.P4TypeInfo:
    ti = p4types_pb2.P4TypeInfo()
    s = ti.structs["learn_t"]
    m = s.members.add(name="mac")
    m.type_spec.bitstring.bit.bitwidth = 48
    m = s.members.add(name="flag")
    m.type_spec.bool.SetInParent()
    m = s.members.add(name="h")
    m.type_spec.header.name = "h_t"
    h = ti.headers["h_t"]
    h.members.add(name="x").type_spec.bit.bitwidth = 4
    h.members.add(name="y").type_spec.int.bitwidth = 8
    return ti


def test_p4data_struct_round_trip():
    ti = _type_info()
    spec = p4types_pb2.P4DataTypeSpec()
    spec.struct.name = "learn_t"
    data = encode_p4data((0x0A0B, True, (3, -1)), spec, ti)
    assert [m.WhichOneof("data") for m in data.struct.members] == ["bitstring", "bool", "header"]
    assert data.struct.members[0].bitstring == b"\x0a\x0b"
    assert list(data.struct.members[2].header.bitstrings) == [b"\x03", b"\xff"]
    assert decode_p4data(data, spec, ti) == (0x0A0B, True, (3, -1))
    invalid = encode_p4data((0, False, None), spec, ti)
    assert not invalid.struct.members[2].header.is_valid and decode_p4data(invalid, spec, ti)[2] is None


def test_p4data_errors():
    ti = _type_info()
    spec = p4types_pb2.P4DataTypeSpec()
    spec.bitstring.bit.bitwidth = 4
    with pytest.raises(RuntimeStateError) as ei:
        decode_p4data(p4data_pb2.P4Data(bitstring=b"\x10"), spec, ti)
    assert ei.value.code == "OUT_OF_RANGE"
    with pytest.raises(RuntimeStateError) as ei:
        decode_p4data(p4data_pb2.P4Data(bool=True), spec, ti)
    assert ei.value.code == "INVALID_ARGUMENT"
    spec.struct.name = "learn_t"
    short = p4data_pb2.P4Data()
    short.struct.members.add(bitstring=b"\x00")
    with pytest.raises(RuntimeStateError) as ei:
        decode_p4data(short, spec, ti)
    assert ei.value.code == "INVALID_ARGUMENT"
