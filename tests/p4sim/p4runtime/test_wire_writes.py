"""Table-entry updates read from a WriteRequest's bytes (p4sim/p4runtime/wirewrites.py,
``TablePlan.wire_*``, ``TableStore.write_run(..., wire)``) against the message path:
for random updates, valid and invalid (duplicate keys, values too wide or empty, unknown
table, field and action ids, a second match field, a priority, metadata, an idle
timeout, mixed INSERT/MODIFY/DELETE, and the LPM and ternary tables that only the message
path serves), the wire path decodes what the message path decodes or declines, and
batches through it give the same answers, state and Reads as the checked path, in the
store and through a real server."""
from __future__ import annotations

import itertools
from typing import Any, Iterator, Optional

import grpc
import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4sim.device import DeviceConfig
from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info
from p4sim.p4runtime.entities import EntityStore
from p4sim.p4runtime.entities_fast import TablePlan
from p4sim.p4runtime.authz import parse_policy
from p4sim.p4runtime.server import P4RuntimeServer
from p4sim.p4runtime import wirewrites
from p4sim.p4runtime.wirewrites import WireShapes, encode_exact_update, parse_updates, varint
from test_entities_fast import Gen, outcome, state
from test_server_rpc import details
from test_server_support import Client, FakeDevice
from p4rt_fixtures import batch_write, clocked_store, v1model_program

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
    action only_entry(bit<3> x) { sm.egress_spec = (bit<9>)x; }

    table exact_t {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; set2; @defaultonly only_default; @tableonly only_entry; NoAction; }
        default_action = NoAction();
        size = 40;
    }
    table port_t {
        key = { sm.ingress_port: exact; }
        actions = { fwd; drop; }
        support_timeout = true;
        size = 6;
    }
    table dc_t {
        key = { hdr.eth.etype: exact; }
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
        key = { hdr.eth.etype: ternary; hdr.eth.src: range; sm.ingress_port: optional; }
        actions = { fwd; drop; set2; }
        support_timeout = true;
        size = 32;
    }
    apply { exact_t.apply(); port_t.apply(); dc_t.apply(); lpm_t.apply(); acl_t.apply(); }
}
""")
PROGRAM_FILE = "wire_test.p4"

SHAPED = {"Ing.exact_t", "Ing.port_t", "Ing.dc_t", "Ing.lpm_t"}
"""The tables with one exact or LPM field: the wire path's."""


def make_store(fast: bool) -> EntityStore:
    return clocked_store(PROGRAM, PROGRAM_FILE, fast)


class WireGen(Gen):
    """:class:`Gen`'s updates, two in three to a table with one exact or LPM field; a few with
    a second match field (another field's id), and keys from a small space so that
    INSERTs collide and DELETEs and MODIFYs find entries."""

    def update(self) -> pb.Update:
        upd = super().update()
        te = upd.entity.table_entry
        if self.chance(0.66):
            name = self.r.choice(sorted(SHAPED) + ["Ing.exact_t"] * 2 + ["Ing.lpm_t"])
            t = self.tables[name]
            te.table_id = t.preamble.id if not self.chance(0.01) else 777
            del te.match[:]
            self.match(te, t.match_fields[0])
            if self.chance(0.02):
                te.match.add(field_id=2).exact.value = b"\x01"
            te.ClearField("action")
            if upd.type != DELETE or self.chance(0.1):
                self.action(te, t)
            if te.priority and not self.chance(0.1):
                te.ClearField("priority")
        return upd


def one_request(upd: pb.Update) -> bytes:
    req = pb.WriteRequest(device_id=1)
    req.updates.add().CopyFrom(upd)
    return req.SerializeToString()


def plain(te: pb.TableEntry) -> bool:
    """Sets only the table id, one match field and at most an action."""
    return {f.name for f, _ in te.ListFields()} <= {"table_id", "match", "action"} and len(te.match) == 1


def field_of(fm: pb.FieldMatch) -> tuple[str, bytes, int]:
    """(kind, value, prefix length or -1) of a FieldMatch."""
    kind = fm.WhichOneof("field_match_type") or ""
    if kind == "lpm":
        return kind, fm.lpm.value, fm.lpm.prefix_len
    return kind, fm.exact.value if kind == "exact" else b"", -1


# --------------------------------------------------------------------------- the bytes
def test_encoder_is_upbs_encoding() -> None:
    for tid, fid, value, action in ((1, 1, b"\x01", None), (0x02000001, 1, bytes(6), b"\x0a\x02\x08\x03"),
                                    (300, 70000, b"\xff" * 40, b"\x0a\x04\x08\x01\x22\x00")):
        for utype in (INSERT, MODIFY, DELETE):
            upd = pb.Update(type=utype)
            te = upd.entity.table_entry
            te.table_id = tid
            te.match.add(field_id=fid).exact.value = value
            if action is not None:
                te.action.MergeFromString(action)
            req = pb.WriteRequest()
            req.updates.add().CopyFrom(upd)
            assert encode_exact_update(utype, tid, fid, value, action) == req.SerializeToString()
            te.match[0].ClearField("exact")
            te.match[0].lpm.value, te.match[0].lpm.prefix_len = value, 9
            req = pb.WriteRequest()
            req.updates.add().CopyFrom(upd)
            assert encode_exact_update(utype, tid, fid, value, action, 9) == req.SerializeToString()
    # an empty value (which upb leaves out) is never read: the message path refuses it
    upd = pb.Update(type=INSERT)
    upd.entity.table_entry.table_id = 7
    upd.entity.table_entry.match.add(field_id=2).exact.value = b""
    assert parse_updates(one_request(upd), 1, WireShapes({7: (2, False)})) == [None]
    upd.entity.table_entry.match[0].lpm.prefix_len = 8            # LPM: empty value, then prefix length 0
    assert parse_updates(one_request(upd), 1, WireShapes({7: (2, True)})) == [None]
    upd.entity.table_entry.match[0].lpm.value = b"\x0a"
    assert parse_updates(one_request(upd), 1, WireShapes({7: (2, True)})) == [(INSERT, 7, b"\x0a", None, 8)]
    upd.entity.table_entry.match[0].lpm.prefix_len = 0
    assert parse_updates(one_request(upd), 1, WireShapes({7: (2, True)})) == [None]
    upd.entity.table_entry.match[0].lpm.prefix_len = 200                # a two-byte varint
    assert parse_updates(one_request(upd), 1, WireShapes({7: (2, True)})) == [None]
    assert parse_updates(one_request(upd), 1, WireShapes({7: (2, False)})) == [None]   # not the table's kind


def test_parse_reads_plain_updates_and_declines_the_rest(p4info: p4info_pb2.P4Info) -> None:
    store = make_store(True)
    shapes = store.tables.shapes
    assert {store.tables.plans[tid].ti.name for tid in
            (s.table_id for d in shapes.by_id_len.values() for s in d.values())} == SHAPED
    gen = WireGen(p4info, 11)
    read = declined_plain = reads_lpm = 0
    for _ in range(3000):
        upd = gen.update()
        te = upd.entity.table_entry
        [w] = parse_updates(one_request(upd), 1, shapes)   # type: ignore[misc]
        plan = store.tables.plans.get(te.table_id)
        single = None if plan is None else plan.single_exact or plan.single_lpm
        if w is None:
            if plain(te) and single is not None and upd.type in (INSERT, MODIFY, DELETE):
                kind, value, plen = field_of(te.match[0])
                declined_plain += (kind == ("exact" if plan.single_exact else "lpm")   # type: ignore[union-attr]
                                   and te.match[0].field_id == single[0] and value != b""
                                   and (kind == "exact" or 0 < plen < 0x80))
            continue
        read += 1
        # what it read is the message, field for field, and the message sets nothing else
        assert plain(te) and single is not None
        kind, value, plen = field_of(te.match[0])
        assert (w[0], w[1], w[2], w[4]) == (upd.type, te.table_id, value, plen)
        assert w[3] == (te.action.SerializeToString() if te.HasField("action") else None)
        assert kind == ("exact" if plan.single_exact else "lpm") and te.match[0].field_id == single[0]   # type: ignore[union-attr]
        reads_lpm += kind == "lpm"
    assert read > 1200 and reads_lpm > 200 and declined_plain == 0, (read, reads_lpm, declined_plain)


def test_parse_skips_other_request_fields_and_long_updates(p4info: p4info_pb2.P4Info) -> None:
    shapes = make_store(True).tables.shapes
    gen = WireGen(p4info, 12)
    ups = [u for u in (gen.update() for _ in range(400)) if plain(u.entity.table_entry)][:20]
    req = pb.WriteRequest(device_id=1 << 40, role="a-role", atomicity=pb.WriteRequest.ROLLBACK_ON_ERROR)
    req.election_id.high, req.election_id.low = 1 << 60, 5
    req.updates.extend(ups)
    long_one = req.updates.add()
    long_one.CopyFrom(ups[0])
    long_one.entity.table_entry.action.action.params.add(param_id=1, value=bytes(130))
    got = parse_updates(req.SerializeToString(), len(req.updates), shapes)
    assert got is not None and got[-1] is None
    alone = [parse_updates(one_request(u), 1, shapes)[0] for u in ups]   # type: ignore[index]
    assert got[:-1] == alone and sum(w is not None for w in alone) > 10
    assert parse_updates(req.SerializeToString(), len(req.updates) + 1, shapes) is None
    assert parse_updates(req.SerializeToString(), len(req.updates), WireShapes({})) is None


def test_a_run_of_one_head_reads_as_each_update_alone() -> None:
    """Updates after one with the same head (a batch's usual run: one table, one value
    length, one action length) are read by ``_same_heads``; each gives what it gives
    alone, and one whose action key, action length or end differ is the message path's."""
    shapes = WireShapes({7: (1, False)})
    action = pb.TableAction()
    action.action.action_id = 3
    action.action.params.add(param_id=1, value=b"\x01")

    def upd(i: int, utype: int = INSERT) -> pb.Update:
        u = pb.Update(type=utype)
        te = u.entity.table_entry
        te.table_id = 7
        te.match.add(field_id=1).exact.value = (0x0A0000000000 + i).to_bytes(6, "big")
        te.action.CopyFrom(action)
        te.action.action.params[0].value = bytes([1 + i % 8])
        return u

    ups = [upd(i) for i in range(30)] + [upd(i, MODIFY) for i in range(30, 40)]
    odd_key = upd(40)
    odd_key.entity.table_entry.ClearField("action")
    odd_key.entity.table_entry.metadata = action.SerializeToString()   # same lengths, another key
    ups.insert(5, odd_key)
    ups.insert(12, upd(41))
    req = pb.WriteRequest(device_id=1, updates=ups)
    data = req.SerializeToString()
    got = parse_updates(data, len(ups), shapes)
    alone = [parse_updates(one_request(u), 1, shapes)[0] for u in ups]   # type: ignore[index]
    assert got == alone and got[5] is None and sum(w is None for w in got) == 1
    for u, w in zip(ups, got):
        if w is not None:
            te = u.entity.table_entry
            assert w == (u.type, 7, te.match[0].exact.value, te.action.SerializeToString(), -1)
    # the same head, then an action length that does not fit the update's
    i = data.index(ups[20].SerializeToString())
    assert data[i + 22] == 0x1A                       # the action's key, its length next
    bad = data[:i + 23] + bytes([data[i + 23] - 1]) + data[i + 24:]
    got_bad = parse_updates(bad, len(ups), shapes)
    assert got_bad is not None and got_bad[20] is None
    assert got_bad[:20] == got[:20] and got_bad[21:] == got[21:]
    # a last update cut short: the request is not read at all
    assert parse_updates(data[:-3], len(ups), shapes) is None


# --------------------------------------------------------------------------- decoding
@pytest.mark.parametrize("seed", [21, 22])
def test_wire_decode_is_the_message_decode(p4info: p4info_pb2.P4Info, seed: int) -> None:
    store = make_store(True)
    gen = WireGen(p4info, seed)
    decoded = {INSERT: 0, MODIFY: 0, DELETE: 0}
    lpm = 0
    for _ in range(3000):
        upd = gen.update()
        [w] = parse_updates(one_request(upd), 1, store.tables.shapes)   # type: ignore[misc]
        if w is None:
            continue
        te = upd.entity.table_entry
        plan: Optional[TablePlan] = store.tables.plans.get(w[1])
        if plan is None:
            continue
        if upd.type == INSERT:
            got, want = plan.wire_insert(w), plan.decode_insert(te)
        elif upd.type == MODIFY:
            got, want = plan.wire_modify(w), plan.decode_modify(te)
        elif upd.type == DELETE:
            got, want = plan.wire_delete(w), plan.decode_delete(te)
        else:
            continue
        assert got == want, upd
        decoded[upd.type] += got is not None
        lpm += got is not None and plan.single_lpm is not None
    assert decoded[INSERT] > 500 and decoded[DELETE] > 200 and decoded[MODIFY] > 20, decoded
    assert lpm > 100, lpm


# --------------------------------------------------------------------------- batches
def count_wire(monkeypatch: pytest.MonkeyPatch) -> dict[int, int]:
    """Counts, by update type, the wire entries the plans decoded."""
    served = {INSERT: 0, MODIFY: 0, DELETE: 0}
    for name, utype in (("wire_insert", INSERT), ("wire_modify", MODIFY), ("wire_delete", DELETE)):
        orig = getattr(TablePlan, name)

        def counted(plan: TablePlan, w: Any, _orig: Any = orig, _t: int = utype) -> Any:
            got = _orig(plan, w)
            served[_t] += got is not None
            return got
        monkeypatch.setattr(TablePlan, name, counted)
    runs = TablePlan.wire_insert_items

    def counted_run(plan: TablePlan, wire: Any, j: int, stop: int, items: list) -> int:
        k = runs(plan, wire, j, stop, items)
        if plan.single_exact is not None and not plan.needs_priority:   # else: one wire_insert each
            served[INSERT] += k - j
        return k
    monkeypatch.setattr(TablePlan, "wire_insert_items", counted_run)
    return served


def apply_batch(store: EntityStore, batch: list[pb.Update]) -> list[Any]:
    """The server's CONTINUE_ON_ERROR loop with the request's wire entries."""
    req = pb.WriteRequest(device_id=1)
    req.updates.extend(batch)
    wire = store.wire_updates(req)
    assert wire is not None and len(wire) == len(batch)
    out: list[Any] = []
    i = 0
    while i < len(batch):
        j = store.write_run(batch, i, len(batch), wire)
        out += ["OK"] * (j - i)
        i = j
        if i < len(batch):
            out.append(outcome(store, batch[i])[0])
            i += 1
    return out


def modify_of(gen: Gen, insert: pb.Update) -> pb.Update:
    upd = gen.modify_of(insert)
    te = upd.entity.table_entry
    if gen.chance(0.8):
        te.ClearField("metadata")
        te.ClearField("idle_timeout_ns")
        te.ClearField("counter_data")
        te.ClearField("meter_config")
    return upd


@pytest.mark.parametrize("seed", [31, 32])
def test_random_batches_through_the_wire_same_answers_and_state(p4info: p4info_pb2.P4Info,
                                                                monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    fast, slow = make_store(True), make_store(False)
    served = count_wire(monkeypatch)
    gen = WireGen(p4info, seed)
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
    assert served[INSERT] > 300 and served[DELETE] > 50 and served[MODIFY] > 10, served
    assert {"INVALID_ARGUMENT", "ALREADY_EXISTS", "NOT_FOUND", "RESOURCE_EXHAUSTED"} <= codes, codes


# --------------------------------------------------------------------------- server
def _server(fast: bool) -> tuple[P4RuntimeServer, Client]:
    clock = itertools.count(1000, 7)
    srv = P4RuntimeServer(FakeDevice(), "127.0.0.1:0",
                          store_factory=lambda prog, info: EntityStore(prog, info, clock_ns=lambda: next(clock),
                                                                       fast=fast))
    client = Client(srv.start())
    client.arbitrate(1)
    assert client.next("arbitration").arbitration.status.code == code_pb2.OK
    req = pb.SetForwardingPipelineConfigRequest(device_id=1, action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    req.election_id.low = 1
    req.config.p4info.CopyFrom(build_p4info(load_program_text(PROGRAM, PROGRAM_FILE)))
    req.config.p4_device_config = DeviceConfig(PROGRAM_FILE, PROGRAM).to_json().encode()
    client.stub.SetForwardingPipelineConfig(req)
    return srv, client


@pytest.fixture
def servers() -> Iterator[tuple[Client, Client]]:
    made = [_server(True), _server(False)]
    yield made[0][1], made[1][1]
    for srv, client in made:
        client.close()
        srv.stop()


def _read(client: Client, info: p4info_pb2.P4Info) -> list[Any]:
    out: list[Any] = []
    for table in info.tables:
        req = pb.ReadRequest(device_id=1)
        req.entities.add().table_entry.table_id = table.preamble.id
        out.append(sorted(e.SerializeToString() for resp in client.stub.Read(req) for e in resp.entities))
    return out


def test_server_batches_through_the_wire_same_statuses_and_reads(p4info: p4info_pb2.P4Info,
                                                                 servers: tuple[Client, Client],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow = servers
    served = count_wire(monkeypatch)
    gen = WireGen(p4info, 41)
    inserted: list[pb.Update] = []
    failed = 0
    for round_ in range(12):
        batch = [modify_of(gen, gen.r.choice(inserted)) if inserted and gen.chance(0.1) else gen.update()
                 for _ in range(gen.r.randint(20, 60))]
        batch.append(batch[0])
        got = batch_write(fast, batch)
        assert got == batch_write(slow, batch), f"round {round_}"
        failed += sum(code != code_pb2.OK for code, _ in got)
        oks = [True] * len(batch) if not got else [code == code_pb2.OK for code, _ in got]
        inserted += [u for u, ok in zip(batch, oks) if ok and u.type == INSERT]
        assert _read(fast, p4info) == _read(slow, p4info), f"after round {round_}"
    assert failed > 20 and len(inserted) > 40, (failed, len(inserted))
    assert served[INSERT] > 40 and served[DELETE] > 10, served


def test_a_request_read_whole_from_its_bytes_answers_as_the_message_path(
        p4info: p4info_pb2.P4Info, servers: tuple[Client, Client], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every update of these batches is read from the bytes, so the server parses only
    the request's other fields (``split_request``) and an update only when the store
    refuses it (``Updates[i]``): a duplicate INSERT, a DELETE or MODIFY of a missing key,
    a value too wide, each after updates that succeed. Statuses, messages and Reads are
    those of a server without plans (which parses the whole request)."""
    fast, slow = servers
    split = {"whole": 0}
    orig = wirewrites.split_request

    def counted(buf: bytes, shapes: WireShapes) -> Any:
        got = orig(buf, shapes)
        split["whole"] += got is not None
        return got
    monkeypatch.setattr("p4sim.p4runtime.entities_tables.split_request", counted)
    table = next(t for t in p4info.tables if t.preamble.name.endswith("exact_t"))
    fwd = next(a for a in p4info.actions if a.preamble.name.endswith("fwd"))

    def upd(utype: int, mac: int, port: int = 1, width: int = 6) -> pb.Update:
        u = pb.Update(type=utype)
        te = u.entity.table_entry
        te.table_id = table.preamble.id
        te.match.add(field_id=1).exact.value = mac.to_bytes(width, "big")
        if utype != DELETE:
            te.action.action.action_id = fwd.preamble.id
            te.action.action.params.add(param_id=1, value=bytes([port]))
        return u

    batches = [
        [upd(INSERT, 0x0A0000000000 + i, 1 + i % 5) for i in range(12)],
        [upd(INSERT, 0x0B0000000000), upd(INSERT, 0x0A0000000003), upd(INSERT, 0x0B0000000001),
         upd(DELETE, 0x0C0000000000), upd(INSERT, 0x0B0000000002), upd(MODIFY, 0x0C0000000001, 2),
         upd(MODIFY, 0x0A0000000004, 3), upd(INSERT, 0x010B0000000003, width=7), upd(DELETE, 0x0A0000000005)],
        [upd(DELETE, 0x0A0000000000 + i) for i in range(6)] + [upd(DELETE, 0x0A0000000000)],
    ]
    answers = []
    for batch in batches:
        answers.append(batch_write(fast, batch))
        assert answers[-1] == batch_write(slow, batch)
        assert _read(fast, p4info) == _read(slow, p4info)
    assert split["whole"] == 3 and answers[0] == []
    assert [code for code, _ in answers[1]] == [
        code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.OK, code_pb2.NOT_FOUND, code_pb2.OK, code_pb2.NOT_FOUND,
        code_pb2.OK, code_pb2.INVALID_ARGUMENT, code_pb2.OK]
    assert [code for code, _ in answers[2]] == [code_pb2.OK] * 5 + [code_pb2.NOT_FOUND] * 2


def _raw_write(client: Client, data: bytes) -> list[tuple[int, str]]:
    """A Write of the bytes ``data`` as they are (not re-encoded by the client)."""
    call = client.channel.unary_unary("/p4.v1.P4Runtime/Write", request_serializer=None,
                                      response_deserializer=pb.WriteResponse.FromString)
    try:
        call(data)
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.UNKNOWN, e
        return [(d.canonical_code, d.message) for d in details(e)]
    return []


def _item(upd: pb.Update) -> bytes:
    """The ``updates`` field of a WriteRequest holding ``upd`` (key, length, bytes)."""
    return pb.WriteRequest(updates=[upd]).SerializeToString()


def test_the_server_reads_the_bytes_as_sent_in_any_field_order(p4info: p4info_pb2.P4Info,
                                                               servers: tuple[Client, Client],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The server reads a Write's updates from the bytes the client sent (not upb's
    re-encoding): requests in another field order than upb's (election id after the
    updates, the device id and election id repeated between updates, an update with a
    field written twice) mean what their message means, the same statuses
    and Reads as the message path."""
    fast, slow = servers
    served = count_wire(monkeypatch)
    gen = WireGen(p4info, 43)
    head = pb.WriteRequest(device_id=1)
    head.election_id.low = 1
    eid = pb.WriteRequest(election_id=head.election_id).SerializeToString()
    dev = pb.WriteRequest(device_id=1).SerializeToString()
    for round_ in range(9):
        batch = [gen.update() for _ in range(gen.r.randint(10, 40))]
        items = [_item(u) for u in batch]
        form = round_ % 3
        if form == 0:                            # the election id after the updates
            data = dev + b"".join(items) + eid
        elif form == 1:                          # head fields again between updates: a merge
            cut = len(items) // 2
            data = dev + eid + b"".join(items[:cut]) + dev + eid + b"".join(items[cut:])
        else:                                    # the first update's priority written (again) at its end
            te = batch[0].entity.table_entry
            te_bytes = te.SerializeToString() + bytes((_PRIORITY_KEY,)) + varint(te.priority)
            upd_bytes = pb.Update(type=batch[0].type).SerializeToString() + \
                bytes((_ENTITY_KEY,)) + _varint_len(bytes((_TE_KEY,)) + _varint_len(te_bytes))
            assert pb.Update.FromString(upd_bytes) == batch[0] and upd_bytes != batch[0].SerializeToString()
            items[0] = bytes((_UPDATES_KEY,)) + _varint_len(upd_bytes)
            data = dev + eid + b"".join(items)
        assert pb.WriteRequest.FromString(data) == pb.WriteRequest(
            device_id=1, election_id=head.election_id, updates=batch), f"round {round_}"
        got = _raw_write(fast, data)
        assert got == batch_write(slow, batch), f"round {round_}"
        assert _read(fast, p4info) == _read(slow, p4info), f"after round {round_}"
    assert sum(served.values()) > 30, served         # the wire path served most updates


def _varint_len(payload: bytes) -> bytes:
    """``payload`` after its length (a varint)."""
    return varint(len(payload)) + payload


_UPDATES_KEY = 4 << 3 | 2           # WriteRequest.updates
_ENTITY_KEY = 2 << 3 | 2            # Update.entity
_TE_KEY = pb.Entity.DESCRIPTOR.fields_by_name["table_entry"].number << 3 | 2
_PRIORITY_KEY = pb.TableEntry.DESCRIPTOR.fields_by_name["priority"].number << 3
assert pb.WriteRequest.DESCRIPTOR.fields_by_name["updates"].number == 4
assert pb.Update.DESCRIPTOR.fields_by_name["entity"].number == 2


def test_the_policy_judges_wire_updates_as_their_messages(p4info: p4info_pb2.P4Info) -> None:
    """``P4RuntimeServer._denied_updates`` with the wire entries (by table id, once per
    table) refuses exactly the updates it refuses from their messages, for a role that may
    write every entity but another's exclusive table and for one that lists its tables."""
    ids = {t.preamble.name: t.preamble.id for t in p4info.tables}
    policy = parse_policy(
        "{roles: {'': {}, acl: {exclusive_p4_ids: [%d], shared_p4_ids: [%d]}}, "
        "identities: {controller: [''], aclapp: [acl]}}" % (ids["Ing.exact_t"], ids["Ing.port_t"]))
    srv = P4RuntimeServer.__new__(P4RuntimeServer)
    srv.policy = policy
    store = make_store(True)
    gen = WireGen(p4info, 44)
    denied_any = wire_any = 0
    for round_ in range(20):
        req = pb.WriteRequest(device_id=1, updates=[gen.update() for _ in range(gen.r.randint(1, 60))])
        wire = store.wire_updates(req, req.SerializeToString())
        assert wire is not None
        wire_any += sum(w is not None for w in wire)
        for who, role in (("controller", ""), ("aclapp", "acl")):
            rd = policy.roles[role]
            want = srv._denied_updates(who, rd, req)
            assert srv._denied_updates(who, rd, req, wire) == want, f"round {round_}, {who}"
            denied_any += len(want)
    assert denied_any > 50 and wire_any > 200, (denied_any, wire_any)
