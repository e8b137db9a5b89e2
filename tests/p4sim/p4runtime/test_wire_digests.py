"""Digest lists in wire format (p4sim/p4runtime/wiredigests.py, the digest streamer's
path for bitstring and flat-struct digests) against encode_p4data's message path: the same
DigestList, message for message, for GOR's flow_sample_t shape, signed members, one
bitstring, values met again (the cache), and the shapes it leaves to the message path."""
from __future__ import annotations

import random
from typing import Any

from p4.config.v1 import p4types_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.codec import encode_p4data
from p4sim.p4runtime import wiredigests
from p4sim.p4runtime.wiredigests import DigestWire

FLOW_SAMPLE = [32, 32, 32, 8, 16, 16, 9, 9, 32, 32]     # p4src/include/metadata.p4 flow_sample_t


def _struct(widths: list[tuple[int, bool]]) -> tuple[p4types_pb2.P4DataTypeSpec, p4types_pb2.P4TypeInfo]:
    info = p4types_pb2.P4TypeInfo()
    st = info.structs["s_t"]
    for i, (w, signed) in enumerate(widths):
        m = st.members.add(name=f"f{i}")
        if signed:
            m.type_spec.bitstring.int.bitwidth = w
        else:
            m.type_spec.bitstring.bit.bitwidth = w
    spec = p4types_pb2.P4DataTypeSpec()
    spec.struct.name = "s_t"
    return spec, info


def _message_path(values: list[Any], spec: p4types_pb2.P4DataTypeSpec,
                  info: p4types_pb2.P4TypeInfo) -> pb.DigestList:
    dl = pb.DigestList()
    for v in values:
        if spec.WhichOneof("type_spec") == "bitstring" and isinstance(v, tuple) and len(v) == 1:
            v = v[0]
        encode_p4data(v, spec, info, dl.data.add())
    return dl


def _random_value(rng: random.Random, widths: list[tuple[int, bool]]) -> tuple[int, ...]:
    out = []
    for w, signed in widths:
        if signed:
            out.append(rng.randint(-(1 << (w - 1)), (1 << (w - 1)) - 1))
        else:
            out.append(rng.choice([0, 1, (1 << w) - 1, rng.getrandbits(w)]))
    return tuple(out)


def test_flow_sample_lists_equal_the_message_path_with_repeats() -> None:
    rng = random.Random(32)
    widths = [(w, False) for w in FLOW_SAMPLE]
    spec, info = _struct(widths)
    wire = DigestWire.build(spec, info)
    assert wire is not None
    pool = [_random_value(rng, widths) for _ in range(40)]
    for _ in range(20):
        values = [rng.choice(pool) for _ in range(rng.randint(1, 30))]
        fast = pb.DigestList()
        fast.MergeFromString(wire.encode(values) or b"")
        slow = _message_path(values, spec, info)
        assert fast == slow
        assert fast.SerializeToString() == slow.SerializeToString()


def test_signed_members_and_a_single_bitstring() -> None:
    rng = random.Random(7)
    widths = [(12, True), (1, False), (64, True), (128, False)]
    spec, info = _struct(widths)
    wire = DigestWire.build(spec, info)
    assert wire is not None
    values = [_random_value(rng, widths) for _ in range(50)]
    fast = pb.DigestList.FromString(wire.encode(values) or b"")
    assert fast == _message_path(values, spec, info)
    one = p4types_pb2.P4DataTypeSpec()
    one.bitstring.bit.bitwidth = 48
    wire1 = DigestWire.build(one, p4types_pb2.P4TypeInfo())
    assert wire1 is not None
    vals: list[Any] = [(0,), (0x0a0b0c0d0e0f,), 5, (1 << 48) - 1]
    assert pb.DigestList.FromString(wire1.encode(vals) or b"") == _message_path(vals, one, p4types_pb2.P4TypeInfo())


def test_other_shapes_stay_on_the_message_path() -> None:
    info = p4types_pb2.P4TypeInfo()
    info.headers["h_t"].members.add(name="x").type_spec.bit.bitwidth = 8
    header = p4types_pb2.P4DataTypeSpec()
    header.header.name = "h_t"
    boolean = p4types_pb2.P4DataTypeSpec()
    boolean.bool.SetInParent()
    nested, ninfo = _struct([(8, False)])
    ninfo.structs["outer_t"].members.add(name="inner").type_spec.CopyFrom(nested)
    outer = p4types_pb2.P4DataTypeSpec()
    outer.struct.name = "outer_t"
    assert DigestWire.build(header, info) is None
    assert DigestWire.build(boolean, info) is None
    assert DigestWire.build(outer, ninfo) is None
    spec, sinfo = _struct([(8, False), (8, False)])
    wire = DigestWire.build(spec, sinfo)
    assert wire is not None and wire.encode([(1, 2, 3)]) is None      # wrong arity: message path


def test_the_cache_starts_again_when_full(monkeypatch) -> None:
    monkeypatch.setattr(wiredigests, "CACHE_VALUES", 4)
    spec, info = _struct([(16, False)])
    wire = DigestWire.build(spec, info)
    assert wire is not None
    values = [(i,) for i in range(10)]
    assert pb.DigestList.FromString(wire.encode(values) or b"") == _message_path(values, spec, info)
    assert len(wire._cache) <= 4
