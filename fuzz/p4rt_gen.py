"""Hypothesis strategies of mutated P4Runtime messages for one P4Info: Write batches
(table entries with wrong ids, match values of the wrong width, ternary masks that do
not cover their value, LPM prefixes past the width, missing or duplicated fields, bad
priorities, oversized action parameters, every update type; PRE, counter, register,
digest and meter entities; whole entities drawn from the descriptor), Reads of odd
entities, SetForwardingPipelineConfig with garbage configs, and StreamChannel messages
(arbitration, PacketOut, digest acks) that a client may send.

Each drawn message is a :class:`Msg` (``kind`` = ``write`` / ``read`` / ``setfpc`` /
``stream``, and the request).

>>> from p4.config.v1 import p4info_pb2
>>> Schema(p4info_pb2.P4Info()).table_ids
[]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import strategies as st
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from fuzz.protogen import interesting_bytes, interesting_int, message_strategy

SearchStrategy = st.SearchStrategy
Draw = Callable[[SearchStrategy[Any]], Any]
_MT = p4info_pb2.MatchField
GARBAGE_CONFIGS = (b"", b"garbage", b"{}", b'{"format": "p4sim-1"}', b"\xff\xfe\x00",
                   b'{"program": "/etc/hostname"}', b'{"program": "/nonexistent.p4"}',
                   b'{"format": "p4sim-1", "source": "control C() { apply { } }"}',
                   b"[" * 5000,
                   b'{"format": "p4sim-1", "source": "control C() { apply { ' + b"{" * 3000 + b"}" * 3000
                   + b' } }"}')


@dataclass(frozen=True, slots=True)
class Msg:
    """One drawn message: ``Msg("write", WriteRequest(...))``."""

    kind: str
    request: Any


class Schema:
    """Ids and widths of a P4Info, as the strategies need them."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.tables = {t.preamble.id: t for t in p4info.tables}
        self.actions = {a.preamble.id: a for a in p4info.actions}
        self.table_ids = sorted(self.tables)
        self.counter_ids = [c.preamble.id for c in p4info.counters]
        self.register_ids = [r.preamble.id for r in p4info.registers]
        self.digest_ids = [d.preamble.id for d in p4info.digests]
        self.meter_ids = [m.preamble.id for m in p4info.meters]
        self.all_ids = sorted({*self.table_ids, *self.actions, *self.counter_ids,
                               *self.register_ids, *self.digest_ids, *self.meter_ids}) or [1]
        self.packet_out_ids = [m.id for c in p4info.controller_packet_metadata
                               if c.preamble.name == "packet_out" for m in c.metadata] or [1]
        ids = self.id_hint()
        # descriptor-walking strategies, built once (building one is not free)
        self.any_table_entry = message_strategy(pb.TableEntry.DESCRIPTOR, {
            "table_id": ids, "action_id": ids, "field_id": st.integers(0, 8)}, depth=2)
        self.any_entity = message_strategy(pb.Entity.DESCRIPTOR, {
            "table_id": ids, "counter_id": ids, "register_id": ids, "digest_id": ids,
            "meter_id": ids, "action_id": ids}, depth=2)
        self.any_stream = message_strategy(pb.StreamMessageRequest.DESCRIPTOR, {
            "digest_id": ids, "metadata_id": st.integers(0, 3)}, depth=2)

    def id_hint(self) -> SearchStrategy[int]:
        """Ids of this P4Info (any kind), a near miss, or 0."""
        return st.one_of(st.sampled_from(self.all_ids),
                         st.sampled_from(self.all_ids).map(lambda i: i + 1), st.just(0))


def rare(draw: Draw, pct: int) -> bool:
    """True about ``pct`` % of the time (hypothesis leans integers towards 0, so the rare
    branch is the high end)."""
    return draw(st.integers(0, 99)) >= 100 - pct


def _value(draw: Draw, bitwidth: int, valid: bool = False) -> bytes:
    """A match/param value: right width (minimal or padded), too wide, or garbage;
    ``valid``: always the right width."""
    nbytes = max(1, (bitwidth + 7) // 8)
    how = "ok" if valid else draw(st.sampled_from(["ok", "ok", "ok", "padded", "wide", "empty", "garbage"]))
    if how in ("ok", "padded"):
        v = draw(interesting_int(0, (1 << bitwidth) - 1))
        raw = v.to_bytes(nbytes, "big")
        return raw.lstrip(b"\x00") or b"\x00" if how == "ok" else raw
    if how == "wide":
        return draw(st.integers(1 << bitwidth, (1 << (bitwidth + 16)) - 1)).to_bytes(nbytes + 2, "big")
    if how == "empty":
        return b""
    return draw(interesting_bytes(nbytes + 4))


def _field_match(draw: Draw, mf: p4info_pb2.MatchField, valid: bool = False) -> pb.FieldMatch:
    fm = pb.FieldMatch(field_id=mf.id if valid else draw(st.one_of(st.just(mf.id), st.just(mf.id),
                                                                   st.integers(0, 40))))
    kind = mf.match_type if valid or draw(st.integers(0, 9)) else draw(st.sampled_from(
        [_MT.EXACT, _MT.LPM, _MT.TERNARY, _MT.RANGE, _MT.OPTIONAL]))
    w = mf.bitwidth or 8
    if kind == _MT.EXACT:
        fm.exact.value = _value(draw, w, valid)
    elif kind == _MT.LPM:
        plen = draw(st.integers(1, w) if valid else st.one_of(st.integers(0, w), st.integers(-5, w + 40)))
        v = _value(draw, w, valid)
        if valid:       # no bit set past the prefix, counted as PI counts it on whole bytes
            n = int.from_bytes(v, "big") & (((1 << plen) - 1) << (w - plen)) & ~((1 << (8 * ((w + 7) // 8) - plen)) - 1)
            v = n.to_bytes(max(1, (w + 7) // 8), "big").lstrip(b"\x00") or b"\x00"
        fm.lpm.value, fm.lpm.prefix_len = v, plen
    elif kind == _MT.TERNARY:
        fm.ternary.value = _value(draw, w, valid)
        fm.ternary.mask = _value(draw, w, valid)
        if valid:
            m = int.from_bytes(fm.ternary.mask, "big") or 1
            v = int.from_bytes(fm.ternary.value, "big") & m
            fm.ternary.mask = m.to_bytes(max(1, (w + 7) // 8), "big").lstrip(b"\x00")
            fm.ternary.value = v.to_bytes(max(1, (w + 7) // 8), "big").lstrip(b"\x00") or b"\x00"
    elif kind == _MT.RANGE:
        fm.range.low = _value(draw, w, valid)
        fm.range.high = _value(draw, w, valid)
    else:
        fm.optional.value = _value(draw, w, valid)
    return fm


@st.composite
def table_entry(draw: Draw, schema: Schema) -> pb.TableEntry:
    """A table entry near a valid one of a table of ``schema`` (see the module docstring)."""
    if not schema.table_ids or not draw(st.integers(0, 15)):
        return draw(schema.any_table_entry)
    t = schema.tables[draw(st.sampled_from(schema.table_ids))]
    valid = draw(st.booleans())     # half the entries are valid: they fill the tables
    te = pb.TableEntry(table_id=t.preamble.id if valid or draw(st.integers(0, 12)) else
                       draw(schema.id_hint()))
    fields = list(t.match_fields)
    for mf in fields:
        if valid or draw(st.integers(0, 10)):
            te.match.append(_field_match(draw, mf, valid))
    if fields and not valid and not draw(st.integers(0, 10)):
        te.match.append(te.match[0] if te.match else _field_match(draw, fields[0]))  # duplicate
    needs_priority = any(mf.match_type in (_MT.TERNARY, _MT.RANGE, _MT.OPTIONAL) for mf in fields)
    te.priority = draw(st.integers(1, 1000)) if valid and needs_priority else 0 if valid else \
        draw(st.one_of(st.just(10 if needs_priority else 0), interesting_int(-(1 << 31), (1 << 31) - 1)))
    te.is_default_action = not draw(st.integers(0, 8))
    if te.is_default_action and valid:
        del te.match[:]
        te.priority = 0
    refs = [r.id for r in t.action_refs] or sorted(schema.actions) or [1]
    if valid or draw(st.integers(0, 8)):
        aid = draw(st.sampled_from(refs)) if valid else draw(st.one_of(
            st.sampled_from(refs), st.sampled_from(refs),
            st.sampled_from(sorted(schema.actions) or [1]), schema.id_hint()))
        te.action.action.action_id = aid
        a = schema.actions.get(aid)
        for p in (a.params if a is not None else []):
            if valid or draw(st.integers(0, 12)):
                te.action.action.params.add(param_id=p.id if valid or draw(st.integers(0, 12)) else
                                            draw(st.integers(0, 9)), value=_value(draw, p.bitwidth, valid))
        if not valid and not draw(st.integers(0, 12)):
            te.action.action.params.add(param_id=99, value=b"\x01")
    elif draw(st.booleans()):
        te.action.action_profile_member_id = draw(interesting_int(0, (1 << 32) - 1))
    if valid:
        return te
    if not draw(st.integers(0, 10)):
        te.idle_timeout_ns = draw(interesting_int(-(1 << 63), (1 << 63) - 1))
    if not draw(st.integers(0, 10)):
        te.metadata = draw(interesting_bytes(64))
    if not draw(st.integers(0, 12)):
        te.counter_data.packet_count = draw(interesting_int(-(1 << 63), (1 << 63) - 1))
    return te


@st.composite
def entity(draw: Draw, schema: Schema) -> pb.Entity:
    """An entity of any kind, near a valid one or drawn from the descriptor."""
    kind = draw(st.sampled_from(["table", "table", "table", "table", "mcast", "clone",
                                 "counter", "register", "digest", "meter", "any"]))
    e = pb.Entity()
    if kind == "table":
        e.table_entry.CopyFrom(draw(table_entry(schema)))
    elif kind in ("mcast", "clone"):
        replicas = draw(st.lists(st.tuples(interesting_int(0, (1 << 32) - 1),
                                           interesting_int(0, (1 << 32) - 1)), max_size=4))
        if kind == "mcast":
            g = e.packet_replication_engine_entry.multicast_group_entry
            g.multicast_group_id = draw(interesting_int(0, (1 << 32) - 1))
        else:
            g = e.packet_replication_engine_entry.clone_session_entry
            g.session_id = draw(interesting_int(0, (1 << 32) - 1))
            g.packet_length_bytes = draw(st.one_of(st.just(0), interesting_int(-(1 << 31), (1 << 31) - 1)))
            g.class_of_service = draw(st.one_of(st.just(0), st.integers(0, 9)))
        for port, inst in replicas:
            g.replicas.add(egress_port=port, instance=inst)
    elif kind == "counter":
        e.counter_entry.counter_id = draw(st.one_of(st.sampled_from(schema.counter_ids or [1]), schema.id_hint()))
        if draw(st.booleans()):
            e.counter_entry.index.index = draw(interesting_int(-(1 << 63), (1 << 63) - 1))
        if draw(st.booleans()):
            e.counter_entry.data.packet_count = draw(interesting_int(-(1 << 63), (1 << 63) - 1))
            e.counter_entry.data.byte_count = draw(interesting_int(-(1 << 63), (1 << 63) - 1))
    elif kind == "register":
        e.register_entry.register_id = draw(st.one_of(st.sampled_from(schema.register_ids or [1]), schema.id_hint()))
        if draw(st.booleans()):
            e.register_entry.index.index = draw(interesting_int(-(1 << 63), (1 << 63) - 1))
        if draw(st.booleans()):
            e.register_entry.data.bitstring = draw(interesting_bytes(8))
    elif kind == "digest":
        e.digest_entry.digest_id = draw(st.one_of(st.sampled_from(schema.digest_ids or [1]), schema.id_hint()))
        if draw(st.booleans()):
            c = e.digest_entry.config
            c.max_timeout_ns = draw(interesting_int(-(1 << 63), (1 << 63) - 1))
            c.max_list_size = draw(interesting_int(-(1 << 31), (1 << 31) - 1))
            c.ack_timeout_ns = draw(interesting_int(-(1 << 63), (1 << 63) - 1))
    elif kind == "meter":
        e.meter_entry.meter_id = draw(st.one_of(st.sampled_from(schema.meter_ids or [1]), schema.id_hint()))
        e.meter_entry.config.cir = draw(interesting_int(-(1 << 63), (1 << 63) - 1))
    else:
        e.CopyFrom(draw(schema.any_entity))
    return e


@st.composite
def write_request(draw: Draw, schema: Schema, election_id: tuple[int, int]) -> pb.WriteRequest:
    """A Write of 1..3 updates of any type, from the primary (mostly) or not."""
    req = pb.WriteRequest(device_id=draw(st.integers(1, 9)) if rare(draw, 3) else 0)
    if not rare(draw, 3):
        req.election_id.high, req.election_id.low = election_id
    else:
        req.election_id.low = draw(interesting_int(0, (1 << 64) - 1))
    if rare(draw, 3):
        req.atomicity = draw(st.integers(0, 5))
    if rare(draw, 3):
        req.role = draw(st.sampled_from(["", "other", "\x00"]))
    for _ in range(draw(st.integers(1, 3))):
        upd = req.updates.add(type=draw(st.sampled_from([pb.Update.UNSPECIFIED, 7]))
                              if rare(draw, 4) else draw(st.sampled_from(
                                  [pb.Update.INSERT, pb.Update.INSERT, pb.Update.MODIFY,
                                   pb.Update.DELETE])))
        upd.entity.CopyFrom(draw(entity(schema)))
    return req


@st.composite
def read_request(draw: Draw, schema: Schema) -> pb.ReadRequest:
    """A Read of 0..3 odd entities (wildcards, unknown ids, empty entities)."""
    req = pb.ReadRequest(device_id=draw(st.integers(1, 9)) if rare(draw, 3) else 0)
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.integers(0, 6)):
            req.entities.add().CopyFrom(draw(entity(schema)))
        else:
            req.entities.add()              # an empty entity
    return req


@st.composite
def setfpc_request(draw: Draw, schema: Schema, election_id: tuple[int, int]) -> pb.SetForwardingPipelineConfigRequest:
    """SetForwardingPipelineConfig with a garbage device config or a mutated P4Info."""
    req = pb.SetForwardingPipelineConfigRequest(
        device_id=draw(st.integers(1, 9)) if rare(draw, 5) else 0,
        action=draw(st.sampled_from([0, 1, 2, 3, 4, 5, 9])))
    req.election_id.high, req.election_id.low = election_id
    if draw(st.integers(0, 5)):
        cfg = req.config
        how = draw(st.sampled_from(["garbage", "garbage", "mutated", "empty_p4info", "this_p4info"]))
        if how in ("this_p4info", "mutated"):
            cfg.p4info.CopyFrom(schema.p4info)
        if how == "mutated" and cfg.p4info.tables:     # one id or width changed
            t = cfg.p4info.tables[draw(st.integers(0, len(cfg.p4info.tables) - 1))]
            if t.match_fields and draw(st.booleans()):
                t.match_fields[0].bitwidth = draw(interesting_int(0, (1 << 31) - 1))
            else:
                t.preamble.id = draw(schema.id_hint())
        cfg.p4_device_config = draw(st.one_of(st.sampled_from(GARBAGE_CONFIGS), interesting_bytes(64)))
        if draw(st.booleans()):
            cfg.cookie.cookie = draw(interesting_int(0, (1 << 64) - 1))
    return req


@st.composite
def stream_messages(draw: Draw, schema: Schema) -> list[pb.StreamMessageRequest]:
    """1..4 StreamChannel requests from a second client: arbitration (never above the
    campaign's own election id), PacketOut garbage, digest acks, drawn messages."""
    out = []
    for _ in range(draw(st.integers(1, 4))):
        m = pb.StreamMessageRequest()
        kind = draw(st.sampled_from(["arb", "packet", "packet", "ack", "any"]))
        if kind == "arb":
            m.arbitration.device_id = draw(st.one_of(st.just(0), interesting_int(0, (1 << 64) - 1)))
            m.arbitration.election_id.low = draw(interesting_int(0, (1 << 64) - 2))
            if draw(st.booleans()):
                m.arbitration.role.name = draw(st.sampled_from(["", "r1", "\x00" * 3]))
        elif kind == "packet":
            m.packet.payload = draw(interesting_bytes(200))
            for _ in range(draw(st.integers(0, 3))):
                m.packet.metadata.add(metadata_id=draw(st.one_of(st.sampled_from(schema.packet_out_ids),
                                                                 st.integers(0, 9))),
                                      value=_value(draw, 9))
        elif kind == "ack":
            m.digest_ack.digest_id = draw(st.one_of(st.sampled_from(schema.digest_ids or [1]), schema.id_hint()))
            m.digest_ack.list_id = draw(interesting_int(0, (1 << 64) - 1))
        else:
            m.CopyFrom(draw(schema.any_stream))
            if m.HasField("arbitration"):
                m.arbitration.election_id.high = 0
                m.arbitration.election_id.low = min(m.arbitration.election_id.low, (1 << 64) - 2)
        out.append(m)
    return out


def message(schema: Schema, election_id: tuple[int, int]) -> SearchStrategy[Msg]:
    """Any campaign message: mostly writes, then reads, stream, pipeline configs."""
    return st.one_of(
        write_request(schema, election_id).map(lambda r: Msg("write", r)),
        write_request(schema, election_id).map(lambda r: Msg("write", r)),
        write_request(schema, election_id).map(lambda r: Msg("write", r)),
        write_request(schema, election_id).map(lambda r: Msg("write", r)),
        read_request(schema).map(lambda r: Msg("read", r)),
        stream_messages(schema).map(lambda r: Msg("stream", r)),
        setfpc_request(schema, election_id).map(lambda r: Msg("setfpc", r)))
