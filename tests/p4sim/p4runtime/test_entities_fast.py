"""The per-table write plans (p4sim/p4runtime/entities_fast.py) against the checked path
they shortcut: the same updates, valid and invalid, of every match kind and of the
fields the plans leave to the checked path, give the same codes, messages, undos and
state (entries down to their handles, canonical keys and lookup indexes), in the entity
store and through a real P4Runtime server (CONTINUE_ON_ERROR and, with the extras,
ROLLBACK_ON_ERROR). A test also checks that the plans serve the writes they should, so
the comparison cannot pass by both sides taking the checked path."""
from __future__ import annotations

import itertools
import random
import threading
from typing import Any, Callable, Iterator, Optional

import grpc
import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4sim.device import DeviceConfig
from p4sim.p4runtime.entities import EntityStore
from p4sim.p4runtime.server import P4RuntimeServer
from p4sim.runtime.errors import RuntimeStateError
from p4sim.runtime.tables import Table
from test_server_support import Client, FakeDevice
from p4rt_fixtures import batch_write, clocked_store, v1model_program

PROGRAM = v1model_program(r"""
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) hits;
    direct_meter<bit<2>>(MeterType.packets) rate;
    action_selector(HashAlgorithm.identity, 16, 16) ecmp;

    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action fwd_counted(bit<9> port) { sm.egress_spec = port; }
    action set2(bit<9> port, bit<16> etype) { sm.egress_spec = port; hdr.eth.etype = etype; }
    action only_default() { }
    action only_entry(bit<3> x) { sm.egress_spec = (bit<9>)x; }

    table exact_t {
        key = { hdr.eth.dst: exact; hdr.eth.etype: exact; }
        actions = { fwd; set2; @defaultonly only_default; @tableonly only_entry; NoAction; }
        default_action = NoAction();
        size = 24;
    }
    table dc_t {
        key = { sm.ingress_port: exact; }
        actions = { fwd_counted; NoAction; }
        counters = hits;
        meters = rate;
        size = 8;
    }
    table lpm_t {
        key = { hdr.eth.etype: exact; hdr.eth.src: lpm; }
        actions = { fwd; drop; }
        size = 32;
    }
    table acl_t {
        key = { hdr.eth.etype: ternary; hdr.eth.src: range; sm.ingress_port: optional; }
        actions = { fwd; drop; set2; }
        support_timeout = true;
        size = 32;
    }
    table init_t {
        key = { hdr.eth.etype: exact; }
        actions = { fwd; drop; }
        entries = { 0x0101 : fwd(7); }
    }
    table const_t {
        key = { hdr.eth.etype: exact; }
        actions = { fwd; drop; }
        const entries = { 0x0202 : fwd(3); }
    }
    table sel_t {
        key = { hdr.eth.etype: exact; hdr.eth.src: selector; }
        actions = { fwd; drop; }
        implementation = ecmp;
    }
    apply {
        exact_t.apply(); dc_t.apply(); lpm_t.apply(); acl_t.apply(); init_t.apply();
        const_t.apply(); sel_t.apply();
    }
}
""")
PROGRAM_FILE = "fast_test.p4"


INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE
PLANNED = {"Ing.exact_t", "Ing.dc_t", "Ing.lpm_t", "Ing.acl_t"}   # init_t only with the extras


def make_store(fast: bool, extras: bool) -> EntityStore:
    return clocked_store(PROGRAM, PROGRAM_FILE, fast, extras)


# --------------------------------------------------------------------------- random updates
class Gen:
    """Random table-entry updates over a small key space (so that keys collide, deletes
    find entries and tables fill up), each field valid most of the time and otherwise
    broken in one of the ways the checked path refuses."""

    def __init__(self, info: p4info_pb2.P4Info, seed: int) -> None:
        self.r = random.Random(seed)
        self.tables = {t.preamble.name: t for t in info.tables}
        self.actions = {a.preamble.id: a for a in info.actions}

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def bytestr(self, value: int, width: int) -> bytes:
        """Canonical, full-width or zero-padded most of the time; rarely empty or too wide."""
        r = self.r.random()
        if r < 0.01:
            return b""
        if r < 0.03:
            value |= 1 << width                      # one bit too many
        n = max(1, (value.bit_length() + 7) // 8)
        if self.chance(0.3):
            n = max(n, (width + 7) // 8) + self.r.choice((0, 0, 1))
        return value.to_bytes(n, "big")

    def value(self, width: int) -> int:
        return self.r.choice((0, 1, 2, 3, (1 << width) - 1, self.r.getrandbits(width), self.r.randrange(4)))

    def match(self, te: pb.TableEntry, mf: Any) -> None:
        w = mf.bitwidth
        kind = mf.match_type
        if self.chance(0.03):           # a kind other than the field's
            kind = self.r.choice((p4info_pb2.MatchField.EXACT, p4info_pb2.MatchField.LPM,
                                  p4info_pb2.MatchField.TERNARY))
        fid = mf.id if not self.chance(0.02) else 99
        if kind == p4info_pb2.MatchField.EXACT:
            te.match.add(field_id=fid).exact.value = self.bytestr(self.value(w), w)
        elif kind == p4info_pb2.MatchField.LPM:
            plen = self.r.choice((1, 4, 8, w, w, self.r.randrange(w + 1), 0, w + 1))
            v = self.value(w)
            if not self.chance(0.1) and 0 <= plen <= w:
                v &= ~((1 << (w - plen)) - 1)
            fm = te.match.add(field_id=fid)
            fm.lpm.value = self.bytestr(v, w)
            fm.lpm.prefix_len = plen
        elif kind == p4info_pb2.MatchField.TERNARY:
            m = self.r.choice((0xF, 0xF0, (1 << w) - 1, 0, self.value(w)))
            v = self.value(w)
            if not self.chance(0.1):
                v &= m
            fm = te.match.add(field_id=fid)
            fm.ternary.value = self.bytestr(v, w)
            fm.ternary.mask = self.bytestr(m, w)
        elif kind == p4info_pb2.MatchField.RANGE:
            lo, hi = sorted((self.value(w), self.value(w)))
            if self.chance(0.05):
                lo, hi = hi + 1, lo
            if self.chance(0.05):
                lo, hi = 0, (1 << w) - 1
            fm = te.match.add(field_id=fid)
            fm.range.low = self.bytestr(lo, w)
            fm.range.high = self.bytestr(hi, w)
        else:
            te.match.add(field_id=fid).optional.value = self.bytestr(self.value(w), w)

    def action(self, te: pb.TableEntry, t: Any) -> None:
        r = self.r.random()
        if r < 0.03:
            return                                              # no action
        if r < 0.05:
            te.action.action_profile_member_id = 1
            return
        ids = [ar.id for ar in t.action_refs]
        aid = self.r.choice(ids) if not self.chance(0.03) else 12345
        a = te.action.action
        a.action_id = aid
        params = list(self.actions[aid].params) if aid in self.actions else []
        if self.chance(0.03) and params:
            params = params[1:]                                 # one missing
        for p in params:
            a.params.add(param_id=p.id, value=self.bytestr(self.value(p.bitwidth), p.bitwidth))
        if self.chance(0.03):
            a.params.add(param_id=params[0].id if params else 9, value=b"\x01")   # repeated / unknown

    def update(self) -> pb.Update:
        name = self.r.choice(sorted(self.tables) + ["Ing.exact_t", "Ing.acl_t", "Ing.lpm_t"])
        t = self.tables[name]
        utype = self.r.choices((INSERT, DELETE, MODIFY, 9), (0.62, 0.28, 0.09, 0.01))[0]
        upd = pb.Update(type=utype)
        te = upd.entity.table_entry
        te.table_id = t.preamble.id if not self.chance(0.01) else 777
        fields = list(t.match_fields)
        if self.chance(0.04) and fields:
            fields.pop(self.r.randrange(len(fields)))          # left out
        if self.chance(0.02) and fields:
            fields.append(fields[0])                           # given twice
        if self.chance(0.05):
            self.r.shuffle(fields)
        for mf in fields:
            self.match(te, mf)
        kinds = {mf.match_type for mf in t.match_fields}
        if kinds & {p4info_pb2.MatchField.TERNARY, p4info_pb2.MatchField.RANGE, p4info_pb2.MatchField.OPTIONAL}:
            te.priority = self.r.choice((1, 2, 10, 10, 0, -1, -(1 << 31), (1 << 31) - 1))
        elif self.chance(0.03):
            te.priority = 5
        if utype != DELETE or self.chance(0.1):
            self.action(te, t)
        for field, p, val in (("metadata", 0.2, b"cookie"), ("idle_timeout_ns", 0.08, 10**9),
                              ("is_const", 0.01, True), ("is_default_action", 0.01, True)):
            if self.chance(p):
                setattr(te, field, val)
        if self.chance(0.01):
            te.idle_timeout_ns = -5
        if self.chance(0.03):
            te.counter_data.packet_count = self.r.choice((3, -1))
        if self.chance(0.03):
            te.meter_config.cir, te.meter_config.pir = self.r.choice(((10, 20), (30, 20)))
            te.meter_config.cburst = te.meter_config.pburst = 5
        if self.chance(0.01):
            te.time_since_last_hit.elapsed_ns = 1
        if self.chance(0.01):
            te.meter_counter_data.green.packet_count = 1
        return upd

    def modify_of(self, insert: pb.Update) -> pb.Update:
        """A MODIFY of the key of an INSERT that succeeded: a new action, most of the time
        valid, and sometimes metadata, an idle timeout, counter data or a meter config."""
        upd = pb.Update(type=MODIFY)
        te = upd.entity.table_entry
        te.CopyFrom(insert.entity.table_entry)
        te.ClearField("action")
        for field in ("metadata", "idle_timeout_ns", "counter_data", "meter_config"):
            te.ClearField(field)
        t = next(t for t in self.tables.values() if t.preamble.id == te.table_id)
        if not self.chance(0.05):
            self.action(te, t)
        if self.chance(0.2):
            te.metadata = b"modified"
        if self.chance(0.08):
            te.idle_timeout_ns = self.r.choice((10**9, -1))
        if self.chance(0.05):
            te.counter_data.packet_count = 7
        if self.chance(0.03):
            te.meter_config.cir = te.meter_config.pir = te.meter_config.cburst = te.meter_config.pburst = 5
        return upd


# --------------------------------------------------------------------------- state
def table_state(t: Table) -> Any:
    """Everything a table holds, its private lookup structures included."""
    entries = [(e.handle, e.matches, e.priority, e.action, e.is_const, e.idle_timeout_ns, e.last_hit_ns,
                e.metadata, e.counter.read() if e.counter else None,
                e.meter.config if e.meter else None, e._ident, e._mask, e._value, e._ranges,
                (e._result.hit, e._result.entry is e, e._result[2:]) if e._result else None)
               for e in t.entries()]
    return (entries, t.version, sorted(t._free_handles), t._next_handle, t.default_action,
            sorted((k, e.handle) for k, e in t._exact.items()),
            sorted((p, sorted((k, e.handle) for k, e in d.items())) for p, d in t._lpm_dicts.items()),
            [(p, m, sorted((k, e.handle) for k, e in d.items())) for p, m, d in t._lpm_levels],
            [e.handle for e in t._sorted])


def state(store: EntityStore) -> Any:
    tables = store.program.state.tables
    reads: list[Any] = []
    for ti in store.index.tables.values():   # one read per table: a table holding initial
        try:                                 # entries answers INTERNAL without extras, as PI
            reads.append([e.SerializeToString() for e in store.read(pb.Entity(table_entry=pb.TableEntry(
                table_id=ti.table_id, counter_data=pb.CounterData(), meter_config=pb.MeterConfig())))])
        except RuntimeStateError as e:
            reads.append((e.code, e.message))
    return ([(name, table_state(t)) for name, t in sorted(tables.items())], reads,
            sorted(store.tables._oneshots), sorted(store.tables._default_metadata.items()))


def outcome(store: EntityStore, upd: pb.Update) -> tuple[Any, Optional[Callable[[], None]]]:
    try:
        undo = store.write(upd)
    except RuntimeStateError as e:
        return (e.code, e.message), None
    return "OK", undo


class Served:
    """Counts the writes the plans served (canonical inserts/modifies/deletes that succeeded)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.inserts = self.deletes = self.modifies = 0
        add, delete, modify = Table.add_canonical_entry, Table.delete_canonical_entry, Table.modify_canonical_entry

        def counted_modify(t: Table, *a: Any, **kw: Any) -> Any:
            e = modify(t, *a, **kw)
            self.modifies += e is not None
            return e

        def counted_add(t: Table, *a: Any, **kw: Any) -> Any:
            e = add(t, *a, **kw)
            self.inserts += e is not None
            return e

        def counted_delete(t: Table, *a: Any, **kw: Any) -> Any:
            e = delete(t, *a, **kw)
            self.deletes += e is not None
            return e
        monkeypatch.setattr(Table, "add_canonical_entry", counted_add)
        monkeypatch.setattr(Table, "delete_canonical_entry", counted_delete)
        monkeypatch.setattr(Table, "modify_canonical_entry", counted_modify)


# --------------------------------------------------------------------------- store-level
def test_plans_cover_the_plain_tables() -> None:
    for extras, extra_tables in ((False, set()), (True, {"Ing.init_t"})):
        store = make_store(True, extras)
        assert {p.ti.name for p in store.tables.plans.values()} == PLANNED | extra_tables
        assert make_store(False, extras).tables.plans == {}


@pytest.mark.parametrize("extras", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_random_updates_same_answers_and_state(p4info: p4info_pb2.P4Info, monkeypatch: pytest.MonkeyPatch,
                                               extras: bool, seed: int) -> None:
    fast, slow = make_store(True, extras), make_store(False, extras)
    served = Served(monkeypatch)
    gen = Gen(p4info, seed)
    codes: dict[str, int] = {}
    undos: list[tuple[Callable[[], None], Callable[[], None]]] = []
    inserted: list[pb.Update] = []
    for i in range(1500):
        upd = gen.modify_of(gen.r.choice(inserted)) if inserted and gen.chance(0.08) else gen.update()
        got_fast, undo_fast = outcome(fast, upd)
        got_slow, undo_slow = outcome(slow, upd)
        assert got_fast == got_slow, f"update {i}: {upd}"
        if got_fast == "OK" and upd.type == INSERT:
            inserted.append(upd)
        code = got_fast if isinstance(got_fast, str) else got_fast[0]
        codes[code] = codes.get(code, 0) + 1
        if undo_fast is not None:
            undos.append((undo_fast, undo_slow))   # type: ignore[arg-type]
        if i % 100 == 99:
            assert state(fast) == state(slow), f"after update {i}"
            # a rolled-back tail: the last few successful writes undone, newest first
            for uf, us in reversed(undos[-5:]):
                uf()
                us()
            undos.clear()
            assert state(fast) == state(slow), f"after the undos at {i}"
    assert state(fast) == state(slow)
    # the comparison is not vacuous: the plans served writes, and both paths refused many
    assert served.inserts > 100 and served.deletes > 20 and served.modifies > 5, \
        (served.inserts, served.deletes, served.modifies)
    assert codes["OK"] > 150, codes
    for code in ("INVALID_ARGUMENT", "ALREADY_EXISTS", "NOT_FOUND", "RESOURCE_EXHAUSTED"):
        assert codes.get(code, 0) > 5, codes


def test_undo_of_a_planned_insert_and_delete(p4info: p4info_pb2.P4Info) -> None:
    fast, slow = make_store(True, False), make_store(False, False)
    tid = next(t.preamble.id for t in p4info.tables if t.preamble.name == "Ing.lpm_t")
    fwd = next(a.preamble.id for a in p4info.actions if a.preamble.name == "Ing.fwd")
    upds = []
    for i, plen in enumerate((8, 16, 24, 48)):
        u = pb.Update(type=INSERT)
        te = u.entity.table_entry
        te.table_id = tid
        te.match.add(field_id=1).exact.value = b"\x08\x00"
        fm = te.match.add(field_id=2)
        fm.lpm.value, fm.lpm.prefix_len = (0x0A0000000000 + i).to_bytes(6, "big"), plen
        fm.lpm.value = ((0x0A0000000000 >> (48 - plen)) << (48 - plen)).to_bytes(6, "big")
        te.action.action.action_id = fwd
        te.action.action.params.add(param_id=1, value=bytes([i + 1]))
        upds.append(u)
    for store in (fast, slow):
        undos = [store.write(u) for u in upds]
        d = pb.Update(type=DELETE)
        d.entity.table_entry.CopyFrom(upds[1].entity.table_entry)
        undos.append(store.write(d))
        for undo in reversed(undos[2:]):
            undo()
    assert state(fast) == state(slow)
    assert len(fast.program.state.tables["Ing.lpm_t"]) == 2


# --------------------------------------------------------------------------- server-level
def _server(fast: bool, extras: bool) -> tuple[P4RuntimeServer, Client]:
    dev = FakeDevice()
    clock = itertools.count(1000, 7)
    lock = threading.Lock()

    def tick() -> int:
        with lock:
            return next(clock)

    def factory(program: Any, info: p4info_pb2.P4Info) -> EntityStore:
        return EntityStore(program, info, clock_ns=tick, extras=extras, fast=fast)

    srv = P4RuntimeServer(dev, "127.0.0.1:0", store_factory=factory, extras=extras)
    client = Client(srv.start())
    client.arbitrate(1)
    assert client.next("arbitration").arbitration.status.code == code_pb2.OK
    return srv, client


def _push(client: Client, info: p4info_pb2.P4Info) -> None:
    req = pb.SetForwardingPipelineConfigRequest(device_id=1, action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    req.election_id.low = 1
    req.config.p4info.CopyFrom(info)
    req.config.p4_device_config = DeviceConfig(PROGRAM_FILE, PROGRAM).to_json().encode()
    client.stub.SetForwardingPipelineConfig(req)


def _read(client: Client, p4info: p4info_pb2.P4Info) -> list[Any]:
    """Every table's entries, one Read per table: a non-const table holding initial entries
    answers INTERNAL without extras (as PI does), recorded as its code and text."""
    out: list[Any] = []
    for table in p4info.tables:
        req = pb.ReadRequest(device_id=1)
        req.entities.add().table_entry.table_id = table.preamble.id
        try:
            out.extend(sorted(e.SerializeToString() for resp in client.stub.Read(req) for e in resp.entities))
        except grpc.RpcError as e:
            out.append((e.code().name, e.details()))
    return out


@pytest.fixture
def servers() -> Iterator[Callable[[bool], tuple[Client, Client]]]:
    made: list[tuple[P4RuntimeServer, Client]] = []

    def start(extras: bool) -> tuple[Client, Client]:
        made.extend((_server(True, extras), _server(False, extras)))
        return made[-2][1], made[-1][1]
    yield start
    for srv, client in made:
        client.close()
        srv.stop()


@pytest.mark.parametrize("extras, atomicity", [(False, pb.WriteRequest.CONTINUE_ON_ERROR),
                                               (True, pb.WriteRequest.CONTINUE_ON_ERROR),
                                               (True, pb.WriteRequest.ROLLBACK_ON_ERROR)])
def test_server_batches_same_statuses_and_state(p4info: p4info_pb2.P4Info, servers: Any, extras: bool,
                                                atomicity: int) -> None:
    fast, slow = servers(extras)
    for client in (fast, slow):
        _push(client, p4info)
    gen = Gen(p4info, 7)
    # a rolled-back batch leaves nothing: small ones, so that some go through
    rounds, size = (12, 60) if atomicity == pb.WriteRequest.CONTINUE_ON_ERROR else (60, 3)
    failed_batches = 0
    for _ in range(rounds):
        batch = [gen.update() for _ in range(size)]
        got_fast, got_slow = batch_write(fast, batch, atomicity), batch_write(slow, batch, atomicity)
        assert got_fast == got_slow
        failed_batches += bool(got_fast)
        assert _read(fast, p4info) == _read(slow, p4info)
    assert failed_batches >= rounds // 2             # refusals were compared
    assert sum(isinstance(e, bytes) for e in _read(fast, p4info)) >= 4   # and writes went through
