"""controller.p4rt against a real ``python -m p4sim switch`` process (no root needed):
arbitration, pipeline push, P4Info lookups, every match kind, counters, registers,
PacketOut/PacketIn, digests, PRE entries, write errors, and two connections to two
switches in one process.

The program ``probe.p4`` turns each PacketOut into a PacketIn whose probe header carries
the result of each table (see the program's comment). Switch processes are started and
stopped by PID (``tests/procs.py``).
"""
from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Iterator

import pytest

from controller.p4rt import (NotPrimaryError, P4InfoHelper, P4InfoLookupError,
                             SwitchConnection, WriteError, clone_session, encode,
                             load_p4info, multicast_group, update)
from controller.p4rt.codec import decode
from procs import SwitchProcess

PROBE = struct.Struct("!BIHB4BI")
PROBE_NAMES = ("key8", "addr", "port", "want_digest", "r_exact", "r_lpm", "r_ternary",
               "r_range", "r_register")


@pytest.fixture(scope="module")
def switch() -> Iterator[SwitchProcess]:
    sw = SwitchProcess.no_p4(device_id=3)
    try:
        yield sw
    finally:
        sw.stop()


@pytest.fixture(scope="module")
def conn(switch: SwitchProcess, probe_compiled: tuple[Path, Path]) -> Iterator[SwitchConnection]:
    c = SwitchConnection(switch.grpc_addr, device_id=3, election_id=(0, 100))
    c.push_pipeline(*probe_compiled)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def conn_extras(probe_compiled: tuple[Path, Path]) -> Iterator[SwitchConnection]:
    """A switch with ``--p4runtime-extras``: register reads and writes (BMv2 has none)."""
    sw = SwitchProcess.no_p4(device_id=4, extra=["--p4runtime-extras"])
    c = SwitchConnection(sw.grpc_addr, device_id=4, election_id=(0, 100))
    try:
        c.push_pipeline(*probe_compiled)
        yield c
    finally:
        c.close()
        sw.stop()


@pytest.fixture
def sw(conn: SwitchConnection) -> SwitchConnection:
    """The module connection with empty tables and drained queues."""
    for t in ("t_exact", "t_lpm", "t_ternary", "t_range"):
        conn.clear_table(f"PIngress.{t}")
    while conn.get_packet_in(0) is not None:
        pass
    while conn.get_digest(0) is not None:
        pass
    return conn


def probe(c: SwitchConnection, **fields: int) -> dict[str, int]:
    values = [fields.get(n, 0) for n in PROBE_NAMES]
    c.packet_out(PROBE.pack(*values), {"egress_port": 0})
    pin = c.get_packet_in(5)
    assert pin is not None, "no PacketIn"
    assert pin.metadata == {"ingress_port": 255, "reason": 5}
    return dict(zip(PROBE_NAMES, PROBE.unpack(pin.payload)))


def test_p4info_lookups(probe_compiled: tuple[Path, Path]) -> None:
    info = P4InfoHelper.from_file(probe_compiled[0])
    assert info.table_id("PIngress.t_lpm") == info.table_id("t_lpm")
    assert info.match_field("t_lpm", "hdr.probe.addr").bitwidth == 32
    assert info.action_param("PIngress.set_exact", "v").bitwidth == 8
    assert info.counter_id("by_key") == info.counter_id("PIngress.by_key")
    assert info.register_id("PIngress.cells") >> 24 == 0x16
    assert info.digest_field_names("note_t") == ["key8", "addr", "port"]
    with pytest.raises(P4InfoLookupError):
        info.table_id("PIngress.nope")


def test_codec() -> None:
    assert encode("10.0.0.1", 32) == b"\x0a\x00\x00\x01"
    assert encode(0, 16) == b"\x00"
    assert decode(encode("02:00:00:00:01:02", 48)) == 0x020000000102
    with pytest.raises(ValueError):
        encode(512, 9)


def test_tables_of_every_match_kind(sw: SwitchConnection) -> None:
    sw.insert(
        sw.table_entry("PIngress.t_exact", {"hdr.probe.key8": 7}, "PIngress.set_exact", {"v": 1}),
        sw.table_entry("PIngress.t_lpm", {"hdr.probe.addr": "10.1.0.0/16"}, "set_lpm", {"v": 2}),
        sw.table_entry("PIngress.t_lpm", {"hdr.probe.addr": ("10.1.2.0", 24)}, "set_lpm",
                       {"v": 3}),
        sw.table_entry("PIngress.t_ternary", {"hdr.probe.addr": ("0.0.0.5", "0.0.0.255")},
                       "set_ternary", {"v": 4}, priority=10),
        sw.table_entry("PIngress.t_range", {"hdr.probe.port": (100, 200)}, "set_range",
                       {"v": 5}, priority=1))
    got = probe(sw, key8=7, addr=0x0A010205, port=150)
    assert (got["r_exact"], got["r_lpm"], got["r_ternary"], got["r_range"]) == (1, 3, 4, 5)
    got = probe(sw, key8=8, addr=0x0A010305, port=201)
    assert (got["r_exact"], got["r_lpm"], got["r_ternary"], got["r_range"]) == (0, 2, 4, 0)
    assert len(sw.read_table("PIngress.t_lpm")) == 2
    entry = sw.table_entry("PIngress.t_exact", {"hdr.probe.key8": 7}, "set_exact", {"v": 9})
    sw.modify(entry)
    assert probe(sw, key8=7)["r_exact"] == 9


def test_write_errors_name_the_failed_update(sw: SwitchConnection) -> None:
    e = sw.table_entry("PIngress.t_exact", {"hdr.probe.key8": 1}, "set_exact", {"v": 1})
    sw.insert(e)
    with pytest.raises(WriteError) as ei:
        sw.insert(sw.table_entry("PIngress.t_exact", {"hdr.probe.key8": 2}, "set_exact",
                                 {"v": 1}), e)
    assert [(u.index, u.code) for u in ei.value.errors] == [(1, "ALREADY_EXISTS")]
    assert len(sw.read_table("PIngress.t_exact")) == 2  # CONTINUE_ON_ERROR kept update 0
    with pytest.raises(WriteError):
        sw.write([update(sw.table_entry("PIngress.t_exact", {"hdr.probe.key8": 3},
                                        "set_exact", {"v": 1})), update(e)],
                 atomicity="ROLLBACK_ON_ERROR")
    assert len(sw.read_table("PIngress.t_exact")) == 2


def test_counters_and_registers(conn_extras: SwitchConnection) -> None:
    sw = conn_extras
    before = sw.read_counter("PIngress.by_key", 3)[3]
    sw.write_register("PIngress.cells", 3, 0xDEADBEEF)
    assert sw.read_register("PIngress.cells", 3) == {3: 0xDEADBEEF}
    assert probe(sw, key8=3)["r_register"] == 0xDEADBEEF
    after = sw.read_counter("PIngress.by_key", 3)[3]
    assert after.packets == before.packets + 1
    assert after.bytes == before.bytes + PROBE.size + 2  # packet_out header counted in ingress
    assert len(sw.read_counter("PIngress.by_key")) == 16
    assert len(sw.read_register("PIngress.cells")) == 16


def test_digests(sw: SwitchConnection) -> None:
    sw.enable_digest("note_t")
    sw.enable_digest("note_t")  # idempotent
    probe(sw, key8=4, addr=0x0A000001, port=4791, want_digest=1)
    dl = sw.get_digest(5)
    assert dl is not None and dl.name == "note_t"
    assert dl.data == [{"key8": 4, "addr": 0x0A000001, "port": 4791}]


def test_pre_entries(sw: SwitchConnection) -> None:
    sw.insert_multicast_group(7, [1, (2, 1)])
    sw.insert_clone_session(101, [255])
    sessions = list(sw.read(clone_session(101, [])))
    assert sessions[0].packet_replication_engine_entry.clone_session_entry.replicas[0] \
        .egress_port == 255
    groups = list(sw.read(multicast_group(7, [])))
    assert len(groups[0].packet_replication_engine_entry.multicast_group_entry.replicas) == 2


def test_second_controller_with_lower_election_is_not_primary(
        switch: SwitchProcess, conn: SwitchConnection) -> None:
    with pytest.raises(NotPrimaryError):
        SwitchConnection(switch.grpc_addr, device_id=3, election_id=(0, 5), timeout_s=5)
    assert conn.is_primary


def test_two_switches_in_one_process(probe_compiled: tuple[Path, Path], conn: SwitchConnection) -> None:
    other = SwitchProcess.no_p4(device_id=9)
    try:
        with SwitchConnection(other.grpc_addr, device_id=9) as c2:
            c2.push_pipeline(*probe_compiled)
            c2.insert(c2.table_entry("PIngress.t_exact", {"hdr.probe.key8": 1}, "set_exact",
                                     {"v": 42}))
            assert probe(c2, key8=1)["r_exact"] == 42
            assert conn.is_primary
    finally:
        other.stop()


def test_push_pipeline_keeps_its_own_p4info(probe_compiled: tuple[Path, Path], conn: SwitchConnection) -> None:
    # One P4Info message pushed to many switches from many threads: each connection must
    # keep its own copy (pure-Python protobuf mutates a message when an unset
    # sub-message is read, which broke a concurrent CopyFrom: "dictionary changed size").
    shared = load_p4info(probe_compiled[0])
    before = shared.SerializeToString()
    other = SwitchProcess.no_p4(device_id=11)
    try:
        with SwitchConnection(other.grpc_addr, device_id=11) as c2:
            c2.push_pipeline(shared, probe_compiled[1])
            assert c2.p4info is not None and c2.p4info.p4info is not shared
            assert c2.p4info.p4info == shared
            assert shared.SerializeToString() == before
    finally:
        other.stop()


def test_unread_packet_ins_are_bounded(switch: SwitchProcess, conn: SwitchConnection) -> None:
    """A connection keeps at most ``max_packet_ins`` PacketIns unread (GOR reads none: a
    host flooding punted ARP grew the controller by every one before); the rest are
    dropped and counted, the oldest kept, and reading makes room again."""
    with pytest.raises(ValueError, match="^max_packet_ins: 0"):
        SwitchConnection(switch.grpc_addr, device_id=3, max_packet_ins=0, arbitrate=False)
    small = SwitchConnection(switch.grpc_addr, device_id=3, election_id=(0, 200),
                             p4info=conn.p4info.p4info if conn.p4info else None, max_packet_ins=3)
    try:
        for k in range(10):
            small.packet_out(PROBE.pack(k, *[0] * 8), {"egress_port": 0})
        deadline = time.monotonic() + 5.0
        while small.packet_ins_dropped < 7 and time.monotonic() < deadline:
            time.sleep(0.02)              # a bounded poll of the stream thread, not a wait
        assert small.packet_ins_dropped == 7
        kept = [small.get_packet_in(0) for _ in range(4)]
        assert [PROBE.unpack(p.payload)[0] for p in kept[:3] if p is not None] == [0, 1, 2]
        assert kept[3] is None
        small.packet_out(PROBE.pack(10, *[0] * 8), {"egress_port": 0})
        again = small.get_packet_in(5)
        assert again is not None and PROBE.unpack(again.payload)[0] == 10
    finally:
        small.close()
