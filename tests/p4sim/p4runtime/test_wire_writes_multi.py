"""Updates of tables with several exact match fields read from a WriteRequest's bytes
(``wirewrites._MultiShape``, ``TablePlan.multi_exact``) against the message path: what is
read is the message field for field, every plain update with its fields in the P4Info's
order is read, and the wire decode and random batches through the store give the same
answers and state as the message path, for valid and invalid updates (fields left out,
given twice, swapped, of another kind or id, values empty or too wide, a direct counter
and meter, an idle timeout, metadata)."""
from __future__ import annotations

from typing import Any, Optional

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.entities import EntityStore
from p4sim.p4runtime.entities_fast import TablePlan
from p4sim.p4runtime.wirewrites import WireShapes, parse_updates, varint
from test_entities_fast import Gen, outcome, state
from test_wire_writes import apply_batch, count_wire, modify_of, one_request
from p4rt_fixtures import clocked_store, v1model_program

INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE

PROGRAM = v1model_program(r"""
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) hits;
    direct_meter<bit<2>>(MeterType.packets) rate;

    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action fwd_counted(bit<9> port) { sm.egress_spec = port; }
    action set2(bit<9> port, bit<16> etype) { sm.egress_spec = port; hdr.eth.etype = etype; }
    action only_default() { }

    table exact_t {
        key = { hdr.eth.dst: exact; hdr.eth.etype: exact; }
        actions = { fwd; set2; @defaultonly only_default; NoAction; }
        default_action = NoAction();
        size = 40;
    }
    table triple_t {
        key = { hdr.eth.dst: exact; hdr.eth.src: exact; sm.ingress_port: exact; }
        actions = { fwd; drop; }
        support_timeout = true;
        size = 12;
    }
    table dc_t {
        key = { hdr.eth.etype: exact; meta.color: exact; }
        actions = { fwd_counted; NoAction; }
        counters = hits;
        meters = rate;
        size = 8;
    }
    table lpm_t {
        key = { hdr.eth.src: lpm; }
        actions = { fwd; drop; }
        size = 32;
    }
    table acl_t {
        key = { hdr.eth.etype: ternary; hdr.eth.src: exact; }
        actions = { fwd; drop; }
        size = 16;
    }
    apply { exact_t.apply(); triple_t.apply(); dc_t.apply(); lpm_t.apply(); acl_t.apply(); }
}
""")
PROGRAM_FILE = "wire_multi_test.p4"

MULTI = ("Ing.exact_t", "Ing.triple_t", "Ing.dc_t")
"""The tables of several exact fields: the multi-field wire path's."""


def make_store(fast: bool) -> EntityStore:
    return clocked_store(PROGRAM, PROGRAM_FILE, fast)


class MultiGen(Gen):
    """:class:`Gen`'s updates, three in five to a table of several exact fields with
    nothing but the table id, the fields and an action, the fields mostly in the P4Info's
    order (sometimes swapped, one left out or given twice)."""

    def update(self) -> pb.Update:
        upd = super().update()
        if self.chance(0.6):
            t = self.tables[self.r.choice(MULTI)]
            te = upd.entity.table_entry
            te.Clear()
            te.table_id = t.preamble.id if not self.chance(0.01) else 777
            fields = list(t.match_fields)
            r = self.r.random()
            if r < 0.03:
                fields[0], fields[1] = fields[1], fields[0]
            elif r < 0.06:
                fields.pop(self.r.randrange(len(fields)))
            elif r < 0.08:
                fields.append(fields[-1])
            for mf in fields:
                self.match(te, mf)
            if upd.type != DELETE or self.chance(0.1):
                self.action(te, t)
        return upd


def plain_in_order(te: pb.TableEntry, plan: Optional[TablePlan]) -> bool:
    """Sets only the table id, every field of a multi-field plan once as exact, in the
    P4Info's order, with a value, and at most an action."""
    if plan is None or plan.multi_exact is None:
        return False
    if not {f.name for f, _ in te.ListFields()} <= {"table_id", "match", "action"}:
        return False
    return ([(fm.field_id, fm.WhichOneof("field_match_type")) for fm in te.match]
            == [(f[0], "exact") for f in plan.multi_exact]) and all(fm.exact.value for fm in te.match)


def test_parse_reads_multi_field_updates_and_declines_the_rest(p4info: p4info_pb2.P4Info) -> None:
    store = make_store(True)
    plans = store.tables.plans
    assert {plans[tid].ti.name for tid in plans if plans[tid].multi_exact is not None} == set(MULTI)
    gen = MultiGen(p4info, 51)
    read = {name: 0 for name in MULTI}
    declined_plain = 0
    for _ in range(3000):
        upd = gen.update()
        te = upd.entity.table_entry
        [w] = parse_updates(one_request(upd), 1, store.tables.shapes)   # type: ignore[misc]
        plan = plans.get(te.table_id)
        if w is None:
            declined_plain += plain_in_order(te, plan) and upd.type in (INSERT, MODIFY, DELETE) \
                and len(te.SerializeToString()) < 0x78
            continue
        if not isinstance(w[2], tuple):
            continue                                     # a one-field table (lpm_t)
        # what it read is the message, field for field, and the message sets nothing else
        assert plain_in_order(te, plan) and plan is not None
        assert (w[0], w[1], w[2], w[4]) == (upd.type, te.table_id, tuple(fm.exact.value for fm in te.match), -1)
        assert w[3] == (te.action.SerializeToString() if te.HasField("action") else None)
        read[plan.ti.name] += 1
    assert min(read.values()) > 200 and declined_plain == 0, (read, declined_plain)
    # a table of one field and one of several in the same shapes; field ids over a byte
    shapes = WireShapes({5: (1, False)}, {300: (1, 200, 3)})
    upd = pb.Update(type=INSERT)
    te = upd.entity.table_entry
    te.table_id = 300
    for fid, v in ((1, b"\x01"), (200, b"\x02\x03"), (3, b"\x04")):
        te.match.add(field_id=fid).exact.value = v
    te.action.action.action_id = 9
    assert parse_updates(one_request(upd), 1, shapes) == [
        (INSERT, 300, (b"\x01", b"\x02\x03", b"\x04"), te.action.SerializeToString(), -1)]
    te.match[1].exact.value = b""                        # an empty value: upb leaves it out
    assert parse_updates(one_request(upd), 1, shapes) == [None]


def _ld(key: int, payload: bytes) -> bytes:
    """A length-delimited field: its one-byte key, the length, ``payload``."""
    return bytes((key,)) + varint(len(payload)) + payload


def test_bytes_that_only_look_like_the_fields_are_not_read() -> None:
    """A client's bytes need not be upb's: the second field's FieldMatch hidden as an
    unknown field inside the first's ``exact`` parses to an entry with two match fields
    (the second missing), and a value given twice means its last one. Neither may be
    read as three plain fields."""
    shapes = WireShapes({}, {300: (1, 200, 3)})
    fm = [b"\x08" + varint(f) + _ld(0x12, _ld(0x0A, v)) for f, v in ((1, b"\x01"), (200, b"\x02"), (3, b"\x04"))]
    hidden = b"\x08\x01" + _ld(0x12, _ld(0x0A, b"\x01") + _ld(0x12, fm[1]))
    twice = b"\x08\xc8\x01" + _ld(0x12, _ld(0x0A, b"\x09") + _ld(0x0A, b"\x02"))
    for fms in ([hidden, fm[2]], [fm[0], twice, fm[2]]):
        te = b"\x08" + varint(300) + b"".join(_ld(0x12, f) for f in fms)
        upd = b"\x08\x01" + _ld(0x12, _ld(0x12, te))
        req = _ld(0x22, upd)
        msg = pb.WriteRequest.FromString(req).updates[0].entity.table_entry
        got = parse_updates(req, 1, shapes)
        assert got == [None] or got == [(INSERT, 300, tuple(m.exact.value for m in msg.match), None, -1)], (got, msg)
    assert parse_updates(_ld(0x22, b"\x08\x01" + _ld(0x12, _ld(0x12, b"\x08" + varint(300) + b"".join(
        _ld(0x12, f) for f in fm)))), 1, shapes) == [(INSERT, 300, (b"\x01", b"\x02", b"\x04"), None, -1)]


@pytest.mark.parametrize("seed", [52, 53])
def test_multi_field_wire_decode_is_the_message_decode(p4info: p4info_pb2.P4Info, seed: int) -> None:
    store = make_store(True)
    gen = MultiGen(p4info, seed)
    decoded = {INSERT: 0, MODIFY: 0, DELETE: 0}
    for _ in range(3000):
        upd = gen.update()
        [w] = parse_updates(one_request(upd), 1, store.tables.shapes)   # type: ignore[misc]
        if w is None or not isinstance(w[2], tuple):
            continue
        te = upd.entity.table_entry
        plan: Any = store.tables.plans[w[1]]
        if upd.type == INSERT:
            got, want = plan.wire_insert(w), plan.decode_insert(te)
        elif upd.type == MODIFY:
            got, want = plan.wire_modify(w), plan.decode_modify(te)
        else:
            got, want = plan.wire_delete(w), plan.decode_delete(te)
        assert got == want, upd
        decoded[upd.type] += got is not None
    assert decoded[INSERT] > 300 and decoded[DELETE] > 100 and decoded[MODIFY] > 20, decoded


@pytest.mark.parametrize("seed", [54, 55])
def test_random_multi_field_batches_through_the_wire_same_answers_and_state(
        p4info: p4info_pb2.P4Info, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    fast, slow = make_store(True), make_store(False)
    served = count_wire(monkeypatch)
    gen = MultiGen(p4info, seed)
    codes: set[str] = set()
    inserted: list[pb.Update] = []
    for round_ in range(40):
        batch = [modify_of(gen, gen.r.choice(inserted)) if inserted and gen.chance(0.1) else gen.update()
                 for _ in range(gen.r.randint(1, 80))]
        if gen.chance(0.3):                    # a key given twice in one batch
            batch.append(batch[gen.r.randrange(len(batch))])
        got_fast = apply_batch(fast, batch)
        got_slow = [outcome(slow, u)[0] for u in batch]
        assert got_fast == got_slow, f"round {round_}"
        inserted += [u for u, g in zip(batch, got_fast) if g == "OK" and u.type == INSERT]
        codes.update(g[0] for g in got_fast if g != "OK")
        assert state(fast) == state(slow), f"after round {round_}"
    assert served[INSERT] > 200 and served[DELETE] > 50 and served[MODIFY] > 10, served
    assert {"INVALID_ARGUMENT", "ALREADY_EXISTS", "NOT_FOUND", "RESOURCE_EXHAUSTED"} <= codes, codes
