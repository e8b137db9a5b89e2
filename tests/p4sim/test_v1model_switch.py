"""Tests of the v1model driver (:mod:`p4sim.v1model.switch`) with a hand-written fake
program: unicast, drop, default port 0, 9-bit egress_spec, multicast, I2E/E2E clones,
resubmit, recirculate, metadata reset rules, packet_length, timestamps, truncate, parser
errors, digests, loop bound, errors never raised, trace log.

The fake program has one 2-byte header ``h`` (fields ``k``, ``v``) and user metadata
``a`` (in ``@field_list(1)``) and ``b``; its ingress and egress are Python callables.
"""
from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any, Callable, Optional

from p4sim.engine.context import CloneRequest, PacketContext
from p4sim.engine.rt import ExitSignal, ParserErrorSignal
from p4sim.v1model.constants import MAX_WORK_ITEMS, InstanceType
from p4sim.v1model.switch import V1ModelSwitch

STD_FIELDS = (
    "ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
    "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth", "ingress_global_timestamp",
    "egress_global_timestamp", "mcast_grp", "egress_rid", "checksum_error", "parser_error",
    "priority",
)
PACKET_TOO_SHORT = 1

Block = Callable[[PacketContext, Any], None]


class Std:
    """standard_metadata_t with 9-bit port fields truncated on assignment."""

    def __init__(self) -> None:
        for name in STD_FIELDS:
            object.__setattr__(self, name, 0)

    def __setattr__(self, name: str, value: int) -> None:
        if name in ("egress_spec", "egress_port", "ingress_port"):
            value &= 0x1FF
        object.__setattr__(self, name, value)


class Header:
    def __init__(self) -> None:
        self.valid = False
        self.k = 0
        self.v = 0


class PacketVars:
    def __init__(self) -> None:
        self.hdr = SimpleNamespace(h=Header())
        self.meta = SimpleNamespace(a=0, b=0)
        self.std = Std()


class FakePre:
    """Multicast groups ``{mgrp: [(port, rid), ...]}`` and clone sessions
    ``{session: {"egress_port": p} or {"mgid": g}}``."""

    def __init__(self) -> None:
        self.groups: dict[int, list[tuple[int, int]]] = {}
        self.sessions: dict[int, dict[str, int]] = {}

    def replicate(self, mgrp: int) -> list[tuple[int, int]]:
        return list(self.groups.get(mgrp, []))

    def get_clone_session(self, session: int) -> Optional[dict[str, int]]:
        return self.sessions.get(session)


class FakeDigests:
    def __init__(self) -> None:
        self.items: list[tuple[str, tuple[Any, ...]]] = []

    def push(self, name: str, values: tuple[Any, ...], now_ns: int = 0) -> None:
        self.items.append((name, values))


def _nothing(ctx: PacketContext, pv: Any) -> None:
    return None


class FakeProgram:
    """See the module docstring. ``seen`` records (block, copy of std) per pass."""

    def __init__(self, ingress: Block = _nothing, egress: Block = _nothing) -> None:
        self._ingress = ingress
        self._egress = egress
        self.state = SimpleNamespace(pre=FakePre(), digests=FakeDigests(), tables={},
                                     counters={}, registers={}, meters={})
        self.seen: list[tuple[str, Std, Any]] = []

    def new_packet(self) -> PacketVars:
        return PacketVars()

    def copy_packet(self, pv: PacketVars) -> PacketVars:
        return copy.deepcopy(pv)

    def invalidate_headers(self, hdr: Any) -> None:
        hdr.h.valid = False

    def copy_headers(self, dst: Any, src: Any) -> None:
        dst.h.valid = src.h.valid
        if src.h.valid:
            dst.h.k, dst.h.v = src.h.k, src.h.v

    def preserve_field_list(self, index: int, src: PacketVars, dst: PacketVars) -> None:
        if index == 1:
            dst.meta.a = src.meta.a

    def parser(self, ctx: PacketContext, pv: PacketVars) -> None:
        if ctx.remaining_bytes() < 2:
            raise ParserErrorSignal(PACKET_TOO_SHORT)   # as compiled parsers do
        h = pv.hdr.h
        h.valid, h.k, h.v = True, ctx.data[0], ctx.data[1]
        ctx.offset_bits += 16

    def verify_checksum(self, ctx: PacketContext, pv: PacketVars) -> None:
        return None

    def ingress(self, ctx: PacketContext, pv: PacketVars) -> None:
        self.seen.append(("ingress", copy.deepcopy(pv.std), copy.deepcopy(pv.meta)))
        self._ingress(ctx, pv)

    def egress(self, ctx: PacketContext, pv: PacketVars) -> None:
        self.seen.append(("egress", copy.deepcopy(pv.std), copy.deepcopy(pv.meta)))
        self._egress(ctx, pv)

    def compute_checksum(self, ctx: PacketContext, pv: PacketVars) -> None:
        return None

    def deparser(self, ctx: PacketContext, pv: PacketVars) -> None:
        h = pv.hdr.h
        if h.valid:
            ctx.emitted += bytes([h.k & 0xFF, h.v & 0xFF])


# --------------------------------------------------------------------------- helpers
class Clock:
    """A fake microsecond clock that advances by ``step`` per reading."""

    def __init__(self, start: int = 1000, step: int = 0) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> int:
        value = self.now
        self.now += self.step
        return value


def run(prog: FakeProgram, port: int, data: bytes, **kw: Any) -> list[tuple[int, bytes]]:
    return V1ModelSwitch(prog, clock=kw.pop("clock", Clock()), **kw).process_packet(port, data)


def passes(prog: FakeProgram, block: str) -> list[Std]:
    return [std for b, std, _ in prog.seen if b == block]


def set_port(port: int) -> Block:
    def body(ctx: PacketContext, pv: Any) -> None:
        pv.std.egress_spec = port
    return body


FRAME = bytes([0x11, 0x22, 0xAA, 0xBB])


# --------------------------------------------------------------------------- unicast / drop
def test_unicast_sends_headers_then_payload() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        pv.std.egress_spec = 3
        pv.hdr.h.v = 0x99
    prog = FakeProgram(ingress=ing)
    assert run(prog, 1, FRAME) == [(3, bytes([0x11, 0x99, 0xAA, 0xBB]))]
    ing_std, = passes(prog, "ingress")
    assert (ing_std.ingress_port, ing_std.packet_length, ing_std.instance_type) == (1, 4, 0)
    eg, = passes(prog, "egress")
    assert (eg.egress_port, eg.egress_spec, eg.packet_length, eg.instance_type) == (3, 0, 4, 0)


def test_egress_spec_never_set_leaves_on_port_0() -> None:
    assert run(FakeProgram(), 5, FRAME) == [(0, FRAME)]


def test_egress_spec_511_drops_and_wider_value_is_truncated() -> None:
    assert run(FakeProgram(ingress=set_port(511)), 1, FRAME) == []
    assert run(FakeProgram(ingress=set_port(0x203)), 1, FRAME) == [(3, FRAME)]


def test_mark_to_drop_in_egress_drops() -> None:
    prog = FakeProgram(ingress=set_port(2), egress=lambda ctx, pv: setattr(pv.std, "egress_spec", 511))
    assert run(prog, 1, FRAME) == []


def test_frames_are_not_padded() -> None:
    assert run(FakeProgram(ingress=set_port(1)), 0, b"\x01") == [(1, b"\x01")]


# --------------------------------------------------------------------------- parser errors
def test_parser_error_continues_to_ingress_and_reemits_unparsed_bytes() -> None:
    prog = FakeProgram(ingress=set_port(4))
    assert run(prog, 1, b"\x07") == [(4, b"\x07")]
    assert passes(prog, "ingress")[0].parser_error == PACKET_TOO_SHORT


def test_empty_frame_never_raises() -> None:
    assert run(FakeProgram(ingress=set_port(2)), 1, b"") == [(2, b"")]


def test_exception_in_a_block_drops_packet_without_raising() -> None:
    def boom(ctx: PacketContext, pv: Any) -> None:
        raise ValueError("broken action")
    sw = V1ModelSwitch(FakeProgram(ingress=boom), clock=Clock())
    assert sw.process_packet(1, FRAME) == []
    assert sw.stats.errors and "broken action" in sw.stats.errors[0]
    # the switch keeps working for the next packet
    sw.program._ingress = set_port(1)
    assert sw.process_packet(1, FRAME) == [(1, FRAME)]


# --------------------------------------------------------------------------- multicast
def test_multicast_copies_get_rid_and_replication_type() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        pv.std.mcast_grp = 7
        pv.std.egress_spec = 9          # ignored: multicast wins over unicast
        pv.meta.b = 5
    prog = FakeProgram(ingress=ing)
    prog.state.pre.groups[7] = [(1, 10), (2, 20), (1, 30)]
    assert run(prog, 0, FRAME) == [(1, FRAME), (2, FRAME), (1, FRAME)]
    eg = passes(prog, "egress")
    assert [(s.egress_port, s.egress_rid, s.instance_type) for s in eg] == [
        (1, 10, InstanceType.REPLICATION), (2, 20, InstanceType.REPLICATION),
        (1, 30, InstanceType.REPLICATION)]
    assert all(meta.b == 5 for b, _, meta in prog.seen if b == "egress")  # metadata kept


def test_multicast_to_unknown_group_sends_nothing() -> None:
    assert run(FakeProgram(ingress=lambda c, pv: setattr(pv.std, "mcast_grp", 3)), 0, FRAME) == []


# --------------------------------------------------------------------------- clones
def test_ingress_clone_uses_original_packet_and_resets_metadata() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        if pv.std.instance_type == 0:
            pv.hdr.h.v = 0x55           # modification must not reach the clone
            pv.meta.a, pv.meta.b = 7, 8
            pv.std.egress_spec = 2
            ctx.clone = CloneRequest("I2E", 4, field_list=1)
    prog = FakeProgram(ingress=ing)
    prog.state.pre.sessions[4] = {"egress_port": 6}
    out = run(prog, 1, FRAME)
    assert out == [(6, FRAME), (2, bytes([0x11, 0x55, 0xAA, 0xBB]))]
    clone_std, normal_std = passes(prog, "egress")
    assert clone_std.instance_type == InstanceType.INGRESS_CLONE
    assert (clone_std.egress_port, clone_std.ingress_port, clone_std.packet_length) == (6, 0, 4)
    clone_meta = [m for b, _, m in prog.seen if b == "egress"][0]
    assert (clone_meta.a, clone_meta.b) == (7, 0)    # field list 1 keeps only 'a'
    assert normal_std.instance_type == InstanceType.NORMAL


def test_clone_to_unconfigured_session_makes_no_copy() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        pv.std.egress_spec = 2
        ctx.clone = CloneRequest("I2E", 99)
    assert run(FakeProgram(ingress=ing), 1, FRAME) == [(2, FRAME)]


def test_clone_session_with_multicast_group() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        pv.std.egress_spec = 511
        ctx.clone = CloneRequest("I2E", 1)
    prog = FakeProgram(ingress=ing)
    prog.state.pre.sessions[1] = {"mgid": 3}
    prog.state.pre.groups[3] = [(4, 1), (5, 2)]
    assert run(prog, 0, FRAME) == [(4, FRAME), (5, FRAME)]
    assert [(s.egress_rid, s.instance_type) for s in passes(prog, "egress")] == [
        (1, InstanceType.INGRESS_CLONE), (2, InstanceType.INGRESS_CLONE)]


def test_egress_clone_carries_egress_modifications() -> None:
    def eg(ctx: PacketContext, pv: Any) -> None:
        if pv.std.instance_type == 0:
            pv.hdr.h.k = 0x77
            pv.meta.a, pv.meta.b = 3, 4
            ctx.clone = CloneRequest("E2E", 2, field_list=1)
    prog = FakeProgram(ingress=set_port(1), egress=eg)
    prog.state.pre.sessions[2] = {"egress_port": 8}
    out = run(prog, 0, FRAME)
    assert out == [(1, bytes([0x77, 0x22, 0xAA, 0xBB])), (8, bytes([0x77, 0x22, 0xAA, 0xBB]))]
    _, clone_std = passes(prog, "egress")
    assert (clone_std.instance_type, clone_std.egress_port, clone_std.packet_length) == (
        InstanceType.EGRESS_CLONE, 8, 4)
    clone_meta = [m for b, _, m in prog.seen if b == "egress"][1]
    assert (clone_meta.a, clone_meta.b) == (3, 0)


def test_egress_clone_is_made_even_when_the_original_is_dropped() -> None:
    def eg(ctx: PacketContext, pv: Any) -> None:
        if pv.std.instance_type == 0:
            ctx.clone = CloneRequest("E2E", 2)
            pv.std.egress_spec = 511
    prog = FakeProgram(ingress=set_port(1), egress=eg)
    prog.state.pre.sessions[2] = {"egress_port": 8}
    assert run(prog, 0, FRAME) == [(8, FRAME)]


# --------------------------------------------------------------------------- resubmit / recirculate
def test_resubmit_restarts_ingress_with_original_packet_and_field_list() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        if pv.std.instance_type == 0:
            pv.hdr.h.k = 0xEE
            pv.meta.a, pv.meta.b = 1, 2
            pv.std.egress_spec = 3
            ctx.resubmit = 1
        else:
            pv.std.egress_spec = 4
    prog = FakeProgram(ingress=ing)
    assert run(prog, 2, FRAME) == [(4, FRAME)]
    first, second = passes(prog, "ingress")
    assert second.instance_type == InstanceType.RESUBMIT
    assert (second.ingress_port, second.packet_length, second.ingress_global_timestamp) == (0, 4, 0)
    meta2 = [m for b, _, m in prog.seen if b == "ingress"][1]
    assert (meta2.a, meta2.b) == (1, 0)
    assert passes(prog, "egress")[0].instance_type == InstanceType.NORMAL


def test_resubmit_wins_over_multicast_and_clone_comes_first() -> None:
    order: list[str] = []

    def ing(ctx: PacketContext, pv: Any) -> None:
        if pv.std.instance_type == 0:
            ctx.clone = CloneRequest("I2E", 1)
            ctx.resubmit = 0
            pv.std.mcast_grp = 1
        else:
            pv.std.egress_spec = 2
    prog = FakeProgram(ingress=ing)
    prog.state.pre.sessions[1] = {"egress_port": 9}
    prog.state.pre.groups[1] = [(5, 0)]
    assert run(prog, 0, FRAME) == [(9, FRAME), (2, FRAME)]


def test_recirculate_sends_deparsed_packet_back_to_ingress() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        pv.std.egress_spec = 6 if pv.std.instance_type == InstanceType.RECIRC else 1

    def eg(ctx: PacketContext, pv: Any) -> None:
        if pv.std.egress_port == 1:     # instance_type is NORMAL again after ingress
            pv.hdr.h.v = 0x42
            pv.meta.a, pv.meta.b = 9, 9
            ctx.recirculate = 1
    prog = FakeProgram(ingress=ing, egress=eg)
    assert run(prog, 3, FRAME) == [(6, bytes([0x11, 0x42, 0xAA, 0xBB]))]
    _, second = passes(prog, "ingress")
    assert (second.instance_type, second.packet_length, second.ingress_port) == (
        InstanceType.RECIRC, 4, 0)
    meta2 = [m for b, _, m in prog.seen if b == "ingress"][1]
    assert (meta2.a, meta2.b) == (9, 0)


def test_recirculate_flag_set_in_ingress_acts_at_end_of_egress() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        if pv.std.instance_type == 0:
            ctx.recirculate = 0
            pv.std.egress_spec = 1
        else:
            pv.std.egress_spec = 2
    assert run(FakeProgram(ingress=ing), 0, FRAME) == [(2, FRAME)]


def test_resubmit_has_no_pass_limit() -> None:
    """BMv2 has none (issue 35, class 15): 135 passes, then the packet is forwarded."""
    def ing(ctx: PacketContext, pv: Any) -> None:
        if pv.std.instance_type == 0 or pv.meta.a < 134:
            pv.meta.a += 1
            ctx.resubmit = 1             # field list 1 keeps meta.a
        pv.std.egress_spec = 1
    prog = FakeProgram(ingress=ing)
    assert run(prog, 0, FRAME) == [(1, FRAME)]
    assert len(passes(prog, "ingress")) == 135     # the old limit dropped it after 65


def test_endless_resubmit_is_bounded_by_the_work_guard() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        ctx.resubmit = 0
    lines: list[str] = []
    prog = FakeProgram(ingress=ing)
    assert run(prog, 0, FRAME, log=lines.append) == []
    assert len(passes(prog, "ingress")) == MAX_WORK_ITEMS
    assert any("Too many packets" in line for line in lines)


def test_endless_recirculate_is_bounded() -> None:
    prog = FakeProgram(ingress=set_port(1), egress=lambda ctx, pv: setattr(ctx, "recirculate", 0))
    assert run(prog, 0, FRAME, max_repasses=5) == []
    assert len(passes(prog, "ingress")) == 6


# --------------------------------------------------------------------------- metadata details
def test_timestamps_come_from_the_clock_and_queues_are_empty() -> None:
    prog = FakeProgram(ingress=set_port(1))
    run(prog, 0, FRAME, clock=Clock(start=100, step=10))
    ing, = passes(prog, "ingress")
    eg, = passes(prog, "egress")
    assert ing.ingress_global_timestamp == 100
    assert eg.ingress_global_timestamp == 100
    assert eg.enq_timestamp > 100 and eg.egress_global_timestamp > eg.enq_timestamp
    assert eg.deq_timedelta == eg.egress_global_timestamp - eg.enq_timestamp
    assert (eg.enq_qdepth, eg.deq_qdepth) == (0, 0)


def test_truncate_limits_output_length() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        pv.std.egress_spec = 1
        ctx.truncate_bytes = 3
    assert run(FakeProgram(ingress=ing), 0, FRAME) == [(1, FRAME[:3])]


def test_truncate_in_ingress_does_not_apply_to_multicast_copies() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        pv.std.mcast_grp = 1
        ctx.truncate_bytes = 1
    prog = FakeProgram(ingress=ing)
    prog.state.pre.groups[1] = [(2, 0)]
    assert run(prog, 0, FRAME) == [(2, FRAME)]


def test_priority_beyond_queue_count_is_dropped() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        pv.std.egress_spec = 1
        pv.std.priority = 3
    assert run(FakeProgram(ingress=ing), 0, FRAME) == []
    assert run(FakeProgram(ingress=ing), 0, FRAME, priority_queues=8) == [(1, FRAME)]


def test_last_digest_of_an_ingress_pass_is_queued() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        ctx.digests.append(("d1", 1, (1,)))
        ctx.digests.append(("d2", 1, (2,)))
        pv.std.egress_spec = 511
    prog = FakeProgram(ingress=ing)
    run(prog, 0, FRAME)
    assert prog.state.digests.items == [("d2", (2,))]


def test_cpu_port_packets_are_returned_like_others() -> None:
    sw = V1ModelSwitch(FakeProgram(ingress=set_port(64)), cpu_port=64, clock=Clock())
    assert sw.process_packet(1, FRAME) == [(64, FRAME)]


def test_trace_log_has_bmv2_style_lines() -> None:
    lines: list[str] = []
    run(FakeProgram(ingress=set_port(511)), 3, FRAME, log=lines.append)
    text = "\n".join(lines)
    assert "Processing packet received on port 3" in text
    assert "Parser 'parser': start" in text
    assert "Egress port is 511" in text
    assert "Dropping packet at the end of ingress" in text


def test_exit_in_ingress_ends_the_block_only() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        pv.std.egress_spec = 2
        raise ExitSignal()
    assert run(FakeProgram(ingress=ing), 0, FRAME) == [(2, FRAME)]


# --------------------------------------------------------------------------- real runtime objects
def test_with_runtime_pre_p4runtime_clone_session_and_digest_queue() -> None:
    from p4sim.runtime.digest import DigestQueue
    from p4sim.runtime.pre import PacketReplicationEngine

    def ing(ctx: PacketContext, pv: Any) -> None:
        pv.std.egress_spec = 1
        ctx.clone = CloneRequest("I2E", 3)
        ctx.digests.append(("learn_t", 1, (7, 8)))
    prog = FakeProgram(ingress=ing)
    prog.state.pre = PacketReplicationEngine()
    prog.state.digests = DigestQueue()
    prog.state.pre.insert_clone_session(3, [(5, 1)], packet_length_bytes=3)
    out = run(prog, 0, FRAME)
    assert sorted(out) == [(1, FRAME), (5, FRAME[:3])]
    assert [d.values for d in prog.state.digests.drain()] == [[(7, 8)]]
    prog.state.pre.mc_mgrp_create(4)
    prog.state.pre.mc_node_associate(4, prog.state.pre.mc_node_create(9, [2, 6]))
    prog.state.pre.delete_clone_session(3)
    prog.state.pre.mirroring_add_mc(3, 4)
    out = run(prog, 0, FRAME)
    assert out == [(2, FRAME), (6, FRAME), (1, FRAME)]


def test_packet_length_register_follows_set_valid_and_invalid() -> None:
    def ing(ctx: PacketContext, pv: Any) -> None:
        pv.std.egress_spec = 1
        ctx.packet_length_delta = 2            # as the engine records setValid()

    def eg(ctx: PacketContext, pv: Any) -> None:
        if pv.std.instance_type == 0:
            ctx.packet_length_delta = -1
            ctx.clone = CloneRequest("E2E", 1)
    prog = FakeProgram(ingress=ing, egress=eg)
    prog.state.pre.sessions[1] = {"egress_port": 2}
    run(prog, 0, FRAME)
    normal, clone = passes(prog, "egress")
    assert (normal.packet_length, clone.packet_length) == (6, 5)
