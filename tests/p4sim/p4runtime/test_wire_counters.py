"""Counter reads in wire format (p4sim/p4runtime/wirecounters.py, the server's wildcard
counter Reads) against the entity-by-entity path: the same ReadResponses, message for
message, for every unit, empty and 64-bit counts, one cell, all counters at once, the
native path's ctypes columns, and answers split over ReadResponses of 4,096 entities."""
from __future__ import annotations

import ctypes
import random
from types import SimpleNamespace

import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info
from p4sim.p4runtime.entities import EntityStore
from p4sim.p4runtime.server import _READ_CHUNK, P4RuntimeServer, RpcError, _Responses
from p4sim.p4runtime.wirecounters import encode_counter_cells
from p4sim.runtime.errors import RuntimeStateError

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct h_t { eth_t eth; }
struct m_t { }
parser P(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t sm) {
    state start { p.extract(h.eth); transition accept; }
}
control VC(inout h_t h, inout m_t m) { apply { } }
control I(inout h_t h, inout m_t m, inout standard_metadata_t sm) {
    counter(5000, CounterType.packets) pkts;
    counter(1, CounterType.bytes) octets;
    counter(4096, CounterType.packets_and_bytes) both;
    apply { pkts.count(0); octets.count(0); both.count(0); mark_to_drop(sm); }
}
control E(inout h_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout h_t h, inout m_t m) { apply { } }
control D(packet_out p, in h_t h) { apply { p.emit(h.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

TOP = 2**63 - 1                 # CounterData's counts are int64


@pytest.fixture()
def store() -> EntityStore:
    prog = load_program_text(PROGRAM, "wire_counters.p4")
    s = EntityStore(prog, build_p4info(prog))
    r = random.Random(36)
    for ei in s.index.counters.values():
        arr = ei.obj
        for i in range(arr.size):
            kind = r.random()
            packets = 0 if kind < 0.3 else TOP if kind > 0.95 else r.randrange(1, 2**r.choice((7, 14, 35, 63)))
            arr.write(i, packets, r.choice((0, 60, 2**40, TOP)))
    return s


def counter_id(store: EntityStore, name: str) -> int:
    return next(i for i, ei in store.index.counters.items() if ei.name.endswith(name))


def both_paths(store: EntityStore, *entities: pb.Entity) -> tuple[list[pb.ReadResponse], list[pb.ReadResponse]]:
    """(entity by entity, wire) ReadResponses of one Read of ``entities``, as the server builds them."""
    slow, fast = _Responses(), _Responses()
    for ent in entities:
        list(store.read(ent, slow.new_entity))
        list(store.read(ent, fast.new_entity, fast.add_wire))
    return slow.responses, fast.responses


def wire(resps: list[pb.ReadResponse]) -> list[bytes]:
    return [r.SerializeToString(deterministic=True) for r in resps]


def test_every_unit_and_count_gives_the_same_responses(store: EntityStore) -> None:
    for name in ("pkts", "octets", "both"):
        ent = pb.Entity(counter_entry=pb.CounterEntry(counter_id=counter_id(store, name)))
        slow, fast = both_paths(store, ent)
        assert fast == slow and wire(fast) == wire(slow), name
    # not vacuous: 63-bit and zero counts were read, and units left a field out
    both = both_paths(store, pb.Entity(counter_entry=pb.CounterEntry(counter_id=counter_id(store, "both"))))[1]
    datas = [e.counter_entry.data for r in both for e in r.entities]
    assert any(d.packet_count == TOP for d in datas) and any(d.packet_count == 0 for d in datas)
    [octets] = both_paths(store, pb.Entity(counter_entry=pb.CounterEntry(counter_id=counter_id(store, "octets"))))[1]
    assert octets.entities[0].counter_entry.data.packet_count == 0


def test_all_counters_one_cell_and_mixed_entities_in_one_read(store: EntityStore) -> None:
    cid = counter_id(store, "both")
    entities = (pb.Entity(counter_entry=pb.CounterEntry()),                       # every counter
                pb.Entity(counter_entry=pb.CounterEntry(counter_id=cid, index=pb.Index(index=4095))),
                pb.Entity(counter_entry=pb.CounterEntry(counter_id=cid, index=pb.Index(index=0))))
    slow, fast = both_paths(store, *entities)
    assert fast == slow
    # 5,000 + 1 + 4,096 + 2 entities over ReadResponses of at most 4,096
    assert [len(r.entities) for r in fast] == [_READ_CHUNK, _READ_CHUNK, 9099 - 2 * _READ_CHUNK]


def test_bad_requests_fail_as_before_and_add_nothing(store: EntityStore) -> None:
    octets = counter_id(store, "octets")
    for msg in (pb.CounterEntry(counter_id=octets, index=pb.Index(index=1)),   # past the end
                pb.CounterEntry(counter_id=octets, index=pb.Index(index=-1)),
                pb.CounterEntry(counter_id=7)):                               # no such counter
        codes = []
        for wired in (False, True):
            out = _Responses()
            with pytest.raises(RuntimeStateError) as bad:
                store.read(pb.Entity(counter_entry=msg), out.new_entity, out.add_wire if wired else None)
            codes.append((bad.value.code, bad.value.message))
            assert out.responses == [], msg
        assert codes[0] == codes[1], msg


def test_a_count_past_int64_fails_on_both_paths(store: EntityStore) -> None:
    arr = store.index.counters[counter_id(store, "both")].obj
    arr._packets[3] = 2**63                                   # only the data plane could
    ent = pb.Entity(counter_entry=pb.CounterEntry(counter_id=counter_id(store, "both")))
    with pytest.raises(ValueError):
        store.read(ent, _Responses().new_entity)
    with pytest.raises(OverflowError):
        store.read(ent, _Responses().new_entity, _Responses().add_wire)
    arr._packets[3] = 0
    arr._bytes[4] = 2**63                                     # a byte count too
    with pytest.raises(OverflowError):
        store.read(ent, _Responses().new_entity, _Responses().add_wire)
    req = pb.ReadRequest(entities=_cells(counter_id(store, "both"), 2, 4))
    with pytest.raises(RpcError) as run:
        P4RuntimeServer._read_into(None, SimpleNamespace(store=store), req, _Responses())  # type: ignore[arg-type]
    assert run.value.code == "INTERNAL" and "out of range" in run.value.message


def test_the_native_paths_ctypes_columns_read_like_lists(store: EntityStore) -> None:
    arr = store.index.counters[counter_id(store, "both")].obj
    packets, nbytes = arr.columns()
    ent = pb.Entity(counter_entry=pb.CounterEntry(counter_id=counter_id(store, "both")))
    before = both_paths(store, ent)[0]
    arr._packets = (ctypes.c_uint64 * arr.size)(*packets)        # what NativeSwitch does
    arr._bytes = (ctypes.c_uint64 * arr.size)(*nbytes)
    assert both_paths(store, ent) == (before, before)


def test_padded_varints_parse_to_their_values() -> None:
    values = [0, 1, 127, 128, 300, 2**35, TOP]
    data, width = encode_counter_cells(0x13000001, range(len(values)), values, values[::-1],
                                       packets_too=True, bytes_too=True)
    resp = pb.ReadResponse.FromString(data)
    assert [e.counter_entry.data.packet_count for e in resp.entities] == values
    assert [e.counter_entry.data.byte_count for e in resp.entities] == values[::-1]
    assert len(data) == width * len(values)
    with pytest.raises(OverflowError):
        encode_counter_cells(1, range(1), [2**63], [0], packets_too=True, bytes_too=True)


def _cells(cid: int, *indices: int) -> list[pb.Entity]:
    return [pb.Entity(counter_entry=pb.CounterEntry(counter_id=cid, index=pb.Index(index=i))) for i in indices]


def test_runs_of_indexed_cells_read_as_one_entity_at_a_time(store: EntityStore) -> None:
    """GOR's poller asks for its ports' cells one entity each, counter after counter; the
    server encodes the runs of counters' cells in one call (``counter_runs``): the
    same ReadResponses as entity by entity, runs, wildcards and single cells mixed."""
    pkts, octets, both = (counter_id(store, n) for n in ("pkts", "octets", "both"))
    req = pb.ReadRequest(entities=[*_cells(pkts, 0, 4999, 7, 7), *_cells(both, 1, 2),
                                   pb.Entity(counter_entry=pb.CounterEntry(counter_id=octets)),
                                   *_cells(pkts, 3), *_cells(both, 4095, 0, 9)])
    slow, fast = _Responses(), _Responses()
    for ent in req.entities:
        list(store.read(ent, slow.new_entity))
    P4RuntimeServer._read_into(None, SimpleNamespace(store=store), req, fast)  # type: ignore[arg-type]
    assert sum(len(r.entities) for r in fast.responses) == 11
    assert fast.responses == slow.responses and wire(fast.responses) == wire(slow.responses)


def test_a_bad_cell_in_a_run_fails_the_read_as_one_entity_at_a_time(store: EntityStore) -> None:
    pkts = counter_id(store, "pkts")
    req = pb.ReadRequest(entities=_cells(pkts, 1, 2, 5000, 3))
    with pytest.raises(RuntimeStateError) as one:
        for ent in req.entities:
            list(store.read(ent, _Responses().new_entity))
    with pytest.raises(RpcError) as run:
        P4RuntimeServer._read_into(None, SimpleNamespace(store=store), req, _Responses())  # type: ignore[arg-type]
    assert (run.value.code, run.value.message) == (one.value.code, one.value.message)
    assert "index 5000 not in [0, 5000)" in run.value.message


def test_random_reads_of_cells_equal_one_entity_at_a_time_byte_for_byte(store: EntityStore) -> None:
    """Random Reads of runs of cells of the three units, single cells and wildcards, on
    random counts (0, small, 35- and 63-bit, int64's top): the server's one encoding of
    all the runs (wirecounters.encode_counter_runs) serialises to the very bytes of the
    entity-by-entity answer."""
    rng = random.Random(3236)
    ids = {n: counter_id(store, n) for n in ("pkts", "octets", "both")}
    sizes = {n: store.index.counters[ids[n]].obj.size for n in ids}
    for case in range(100):
        for n, cid in ids.items():
            arr = store.index.counters[cid].obj
            for i in rng.sample(range(sizes[n]), min(sizes[n], 20)):
                arr.write(i, rng.choice((0, 1, rng.getrandbits(35), TOP)), rng.choice((0, 60, rng.getrandbits(63), TOP)))
        ents: list[pb.Entity] = []
        for _ in range(rng.randrange(1, 9)):
            n = rng.choice(list(ids))
            if rng.random() < 0.05:
                ents.append(pb.Entity(counter_entry=pb.CounterEntry(counter_id=ids[n])))
            else:
                ents.extend(_cells(ids[n], *(rng.randrange(sizes[n]) for _ in range(rng.randrange(1, 20)))))
        req = pb.ReadRequest(entities=ents)
        slow, fast = _Responses(), _Responses()
        for ent in req.entities:
            list(store.read(ent, slow.new_entity))
        P4RuntimeServer._read_into(None, SimpleNamespace(store=store), req, fast)  # type: ignore[arg-type]
        assert wire(fast.responses) == wire(slow.responses), case
