"""The batched path of a CONTINUE_ON_ERROR Write (``EntityStore.write_run`` /
``TableStore.write_run``, used by ``P4RuntimeServer._apply``) against the one-update-at-
a-time checked path: the same codes, messages and state for random batches; a bad update
in the middle of a batch fails alone under CONTINUE_ON_ERROR and rolls the whole batch
back under ROLLBACK_ON_ERROR; updates refused by the role policy are skipped by a run;
the collector pause of a batch (p4sim/p4runtime/gcpause.py) nests and ends; a removed
entry is no reference cycle; a server told to freezes the collector's survivors at each
pipeline commit."""
from __future__ import annotations

import gc
import threading
from typing import Any, Iterator

import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4sim.device import DeviceConfig
from p4sim.p4runtime.entities import EntityStore
from p4sim.p4runtime.entities_restore import restore_table_entry
from p4sim.p4runtime import gcpause
from p4sim.p4runtime.gcpause import gc_paused
from p4sim.p4runtime.server import P4RuntimeServer, _p4_error
from p4sim.runtime.errors import RuntimeStateError
from p4sim.runtime.tables import ActionCall, ActionSpec, Exact, KeyField, Table
from test_entities_fast import PROGRAM, PROGRAM_FILE, Gen, make_store, outcome, state
from test_server_support import Client, FakeDevice
from p4rt_fixtures import batch_write

INSERT = pb.Update.INSERT


def apply_batch(store: EntityStore, batch: list[pb.Update]) -> tuple[list[Any], dict[int, int]]:
    """The server's CONTINUE_ON_ERROR loop: runs through write_run, the update a run stops
    at through write; (each update's outcome, how many of each update type the runs applied)."""
    out: list[Any] = []
    ran: dict[int, int] = {}
    i = 0
    while i < len(batch):
        j = store.write_run(batch, i, len(batch))
        out += ["OK"] * (j - i)
        for u in batch[i:j]:
            ran[u.type] = ran.get(u.type, 0) + 1
        i = j
        if i < len(batch):
            out.append(outcome(store, batch[i])[0])
            i += 1
    return out, ran


@pytest.mark.parametrize("seed", [3, 4])
def test_random_batches_through_runs_same_answers_and_state(p4info: p4info_pb2.P4Info, seed: int) -> None:
    fast, slow = make_store(True, False), make_store(False, False)
    gen = Gen(p4info, seed)
    ran: dict[int, int] = {}
    total_ok = 0
    codes: set[str] = set()
    inserted: list[pb.Update] = []
    for round_ in range(30):
        batch = [gen.modify_of(gen.r.choice(inserted)) if inserted and gen.chance(0.1) else gen.update()
                 for _ in range(gen.r.randint(1, 100))]
        got_fast, n = apply_batch(fast, batch)
        got_slow = [outcome(slow, u)[0] for u in batch]
        assert got_fast == got_slow, f"round {round_}"
        inserted += [u for u, g in zip(batch, got_fast) if g == "OK" and u.type == INSERT]
        for k, v in n.items():
            ran[k] = ran.get(k, 0) + v
        total_ok += got_fast.count("OK")
        codes.update(g[0] for g in got_fast if g != "OK")
        assert state(fast) == state(slow), f"after round {round_}"
    # not vacuous: runs applied inserts, deletes and modifies, and refusals between them were compared
    assert ran.get(INSERT, 0) > 100 and ran.get(pb.Update.DELETE, 0) > 10 and ran.get(pb.Update.MODIFY, 0) > 5, ran
    assert total_ok > sum(ran.values()), (ran, total_ok)
    assert {"INVALID_ARGUMENT", "ALREADY_EXISTS", "NOT_FOUND"} <= codes, codes


def _insert(info: p4info_pb2.P4Info, key: int, port: int = 1) -> pb.Update:
    """An INSERT into exact_t (dst, etype) with fwd(port)."""
    t = next(t for t in info.tables if t.preamble.name == "Ing.exact_t")
    a = next(a for a in info.actions if a.preamble.name == "Ing.fwd")
    upd = pb.Update(type=INSERT)
    te = upd.entity.table_entry
    te.table_id = t.preamble.id
    te.match.add(field_id=1).exact.value = key.to_bytes(6, "big")
    te.match.add(field_id=2).exact.value = b"\x08\x00"
    te.action.action.action_id = a.preamble.id
    te.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return upd


def test_a_run_stops_at_the_update_it_cannot_apply_and_leaves_it_untouched(p4info: p4info_pb2.P4Info) -> None:
    store = make_store(True, False)
    bad = _insert(p4info, 5, port=1 << 9)            # the port does not fit 9 bits
    batch = [_insert(p4info, k) for k in range(4)] + [bad] + [_insert(p4info, 9)]
    before_bad = len(store.program.state.tables["Ing.exact_t"])
    assert store.write_run(batch, 0, len(batch)) == 4
    assert len(store.program.state.tables["Ing.exact_t"]) == before_bad + 4
    with pytest.raises(RuntimeStateError) as e:       # the checked path gives its code
        store.write(bad)
    assert e.value.code == "INVALID_ARGUMENT"
    assert store.write_run(batch, 5, len(batch)) == 6
    assert store.write_run(batch, 0, 3) == 0           # keys present: the run declines at once
    assert store.write_run(batch, 2, 2) == 2           # empty range


def _server(extras: bool) -> tuple[P4RuntimeServer, Client]:
    srv = P4RuntimeServer(FakeDevice(), "127.0.0.1:0",
                          store_factory=lambda prog, info: EntityStore(prog, info, extras=extras), extras=extras)
    client = Client(srv.start())
    client.arbitrate(1)
    assert client.next("arbitration").arbitration.status.code == code_pb2.OK
    return srv, client


@pytest.fixture
def server() -> Iterator[Any]:
    made: list[tuple[P4RuntimeServer, Client]] = []

    def start(extras: bool, info: p4info_pb2.P4Info) -> tuple[P4RuntimeServer, Client]:
        srv, client = _server(extras)
        made.append((srv, client))
        req = pb.SetForwardingPipelineConfigRequest(
            device_id=1, action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(info)
        req.config.p4_device_config = DeviceConfig(PROGRAM_FILE, PROGRAM).to_json().encode()
        client.stub.SetForwardingPipelineConfig(req)
        return srv, client
    yield start
    for srv, client in made:
        client.close()
        srv.stop()


def _entries(client: Client, info: p4info_pb2.P4Info) -> list[bytes]:
    t = next(t for t in info.tables if t.preamble.name == "Ing.exact_t")
    req = pb.ReadRequest(device_id=1)
    req.entities.add().table_entry.table_id = t.preamble.id
    return sorted(e.SerializeToString() for resp in client.stub.Read(req) for e in resp.entities)


BAD_MIDDLE = {"wide port": lambda info: _insert(info, 10, port=1 << 9),
              "duplicate key": lambda info: _insert(info, 3)}


@pytest.mark.parametrize("bad", sorted(BAD_MIDDLE))
def test_one_bad_update_in_the_middle_continue_on_error(p4info: p4info_pb2.P4Info, server: Any, bad: str) -> None:
    _srv, client = server(False, p4info)
    batch = [_insert(p4info, k) for k in range(10)]
    batch[5] = BAD_MIDDLE[bad](p4info)
    got = batch_write(client, batch, pb.WriteRequest.CONTINUE_ON_ERROR)
    assert [c for c, _m in got] == [code_pb2.OK] * 5 + [got[5][0]] + [code_pb2.OK] * 4
    want = code_pb2.INVALID_ARGUMENT if bad == "wide port" else code_pb2.ALREADY_EXISTS
    assert got[5][0] == want, got[5]
    # the checked path's own message (the store's write of the same update, alone)
    store = make_store(False, False)
    if bad == "duplicate key":
        store.write(_insert(p4info, 3))
    with pytest.raises(RuntimeStateError) as e:
        store.write(batch[5])
    assert got[5][1] == e.value.message
    assert len(_entries(client, p4info)) == 9          # keys 0-4 and 6-9 (key 3 once)


def test_one_bad_update_in_the_middle_rollback_on_error(p4info: p4info_pb2.P4Info, server: Any) -> None:
    _srv, client = server(True, p4info)
    assert batch_write(client, [_insert(p4info, 100)], pb.WriteRequest.CONTINUE_ON_ERROR) == []
    before = _entries(client, p4info)
    batch = [_insert(p4info, k) for k in range(10)]
    batch[5] = _insert(p4info, 10, port=1 << 9)
    got = batch_write(client, batch, pb.WriteRequest.ROLLBACK_ON_ERROR)
    assert got[5][0] == code_pb2.INVALID_ARGUMENT
    assert [c for i, (c, _m) in enumerate(got) if i != 5] == [code_pb2.ABORTED] * 9
    assert _entries(client, p4info) == before          # state unchanged


def test_a_run_skips_the_updates_the_policy_denied(p4info: p4info_pb2.P4Info, server: Any) -> None:
    srv, client = server(False, p4info)
    batch = [_insert(p4info, k) for k in range(8)]
    req = pb.WriteRequest(device_id=1, updates=batch)
    denied = {2: _p4_error("PERMISSION_DENIED", "no"), 6: _p4_error("PERMISSION_DENIED", "no")}
    with srv._state_lock:
        errors = srv._apply(srv._target(), req, denied)
    assert [e.canonical_code for e in errors] == [code_pb2.OK] * 2 + [code_pb2.PERMISSION_DENIED] \
        + [code_pb2.OK] * 3 + [code_pb2.PERMISSION_DENIED, code_pb2.OK]
    assert len(_entries(client, p4info)) == 6


def test_gc_paused_turns_the_collector_on_again_while_writes_overlap_with_no_gap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Holders that overlap with no gap (the last never leaves): the pause ends after
    MAX_PAUSE_S, the collector stays on until it has run a pass, then the next holder
    pauses it again (before: off for as long as the overlap lasted)."""
    monkeypatch.setattr(gcpause, "MAX_PAUSE_S", 1.0, raising=False)   # the times below are in it
    now = [0.0]
    monkeypatch.setattr(gcpause, "_clock", lambda: now[0], raising=False)
    assert gc.isenabled()
    held: list[Any] = []
    thresholds = gc.get_threshold()
    gc.set_threshold(1 << 30, *thresholds[1:])    # no pass of its own: the test runs them

    def hand_over(t_s: float) -> None:           # a new Write comes in, then the oldest ends
        now[0] = t_s
        held.append(gc_paused())
        held[-1].__enter__()
        if len(held) > 1:
            held.pop(0).__exit__(None, None, None)
    try:
        hand_over(0.0)
        assert not gc.isenabled()
        hand_over(0.5)
        assert not gc.isenabled()                 # within the bound: still paused
        hand_over(1.0)
        assert gc.isenabled()                     # the bound: on again, holders still in
        hand_over(1.1)
        assert gc.isenabled()                     # until the collector has run a pass
        gc.collect(0)
        hand_over(1.2)
        assert not gc.isenabled()                 # paused again, for at most MAX_PAUSE_S more
        hand_over(2.0)
        assert not gc.isenabled()
        hand_over(2.2)
        assert gc.isenabled()
    finally:
        while held:
            held.pop().__exit__(None, None, None)
        gc.set_threshold(*thresholds)
    assert gc.isenabled()


def test_gc_paused_nests_across_threads_and_restores() -> None:
    assert gc.isenabled()
    entered, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with gc_paused():
            entered.set()
            leave.wait(10)
    t = threading.Thread(target=hold)
    t.start()
    assert entered.wait(10)
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
    assert not gc.isenabled()                         # the other thread still holds it
    leave.set()
    t.join(10)
    assert gc.isenabled()
    gc.disable()                                      # paused while off: stays off
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_removed_entry_is_no_cycle_and_a_restore_makes_its_result_again() -> None:
    t = Table("t", [KeyField("k", "exact", 8)], [ActionSpec("a", [("p", 8)])], size=4)
    e = t.add_entry([Exact(1)], ActionCall("a", (7,)))
    assert t.lookup([1]).entry is e
    t.delete_entry([Exact(1)])
    assert e._result is None                 # entry -> result -> entry no more: refcounting frees it
    restore_table_entry(t, e)
    assert t.lookup([1]) == (True, e, "a", (7,))


def test_a_freezing_server_freezes_the_survivors_of_each_commit(p4info: p4info_pb2.P4Info) -> None:
    srv = P4RuntimeServer(FakeDevice(), "127.0.0.1:0", store_factory=lambda prog, info: EntityStore(prog, info),
                          freeze_gc=True)
    client = Client(srv.start())
    try:
        gc.unfreeze()
        client.arbitrate(1)
        assert client.next("arbitration").arbitration.status.code == code_pb2.OK
        req = pb.SetForwardingPipelineConfigRequest(
            device_id=1, action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = DeviceConfig(PROGRAM_FILE, PROGRAM).to_json().encode()
        client.stub.SetForwardingPipelineConfig(req)
        frozen = gc.get_freeze_count()
        assert frozen > 1000 and srv.pipeline is not None
        program = srv.pipeline.program
        assert gc.is_tracked(program) and program.state is not None
        client.stub.SetForwardingPipelineConfig(req)      # a second commit unfreezes, collects, freezes
        assert gc.get_freeze_count() > 1000
    finally:
        gc.unfreeze()
        client.close()
        srv.stop()
