"""Tests for counters, meters and registers of p4sim.runtime."""
from __future__ import annotations

import pytest

from p4sim.runtime import (GREEN, RED, YELLOW, CounterArray, CounterCell, DirectCounter, DirectMeter,
                           MeterArray, MeterCell, MeterConfig, RegisterArray, RuntimeStateError)


def code_of(fn, *args, **kw) -> str:
    with pytest.raises(RuntimeStateError) as info:
        fn(*args, **kw)
    return info.value.code


# --------------------------------------------------------------------------- counters
def test_counter_counts_packets_and_bytes() -> None:
    c = CounterArray("c", 3, "bytes")
    c.count(0, 100)
    c.count(0, 50)
    c.count(2, 1)
    assert c.read(0) == (2, 150)
    assert c.read(1) == (0, 0)
    assert c.read(2) == (1, 1)


def test_counter_out_of_range_ignored_in_data_plane() -> None:
    c = CounterArray("c", 2)
    c.count(2, 10)
    c.count(-1, 10)
    assert [c.read(i) for i in range(2)] == [(0, 0), (0, 0)]
    assert code_of(c.read, 2) == "OUT_OF_RANGE"
    assert code_of(c.write, 5, 1, 1) == "OUT_OF_RANGE"


def test_counter_write_reset() -> None:
    c = CounterArray("c", 2, "packets")
    c.write(1, 5, 500)
    assert c.read(1) == (5, 500)
    assert code_of(c.write, 1, -1, 0) == "INVALID_ARGUMENT"
    assert c.read(1) == (5, 500)
    c.reset(1)
    assert c.read(1) == (0, 0)
    c.count(0, 1)
    c.reset()
    assert c.read(0) == (0, 0)
    with pytest.raises(ValueError):
        CounterArray("c", 1, "furlongs")


def test_direct_counter_cells() -> None:
    dc = DirectCounter("dc", "packets_and_bytes")
    a, b = dc.new_cell(), dc.new_cell()
    a.count(64)
    assert (a.read(), b.read()) == ((1, 64), (0, 0))
    a.write(3, 4)
    assert a.read() == (3, 4)
    a.reset()
    assert a == CounterCell()


# --------------------------------------------------------------------------- meters
def test_unconfigured_meter_is_green() -> None:
    m = MeterArray("m", 4, "bytes")
    assert all(m.execute(0, 1500, t) == GREEN for t in range(5))
    assert m.get_config(0) is None
    assert m.execute(99, 10, 0) == GREEN   # out of range in the data plane


def test_meter_packets_trtcm_sequence() -> None:
    m = MeterArray("m", 1, "packets")
    # CIR 1 pkt/s burst 2, PIR 3 pkt/s burst 3
    m.set_config(0, cir=1, cburst=2, pir=3, pburst=3)
    colours = [m.execute(0, 64, now_us=0) for _ in range(4)]
    # peak bucket 3 tokens, committed 2: G G Y R
    assert colours == [GREEN, GREEN, YELLOW, RED]
    # after 1 s: peak earns 3 (capped at 3), committed earns 1
    colours = [m.execute(0, 64, now_us=1_000_000) for _ in range(4)]
    assert colours == [GREEN, YELLOW, YELLOW, RED]


def test_meter_red_does_not_consume_committed() -> None:
    cell = MeterCell()
    cell.set_config(MeterConfig(cir=0, cburst=5, pir=0, pburst=1))
    assert cell.execute(1, 0) == GREEN      # peak 1->0, committed 5->4
    assert cell.execute(1, 0) == RED        # peak empty; committed untouched
    # peak refills never (rate 0); committed still has 4 tokens
    assert cell._tokens == [0, 4]


def test_meter_bytes_and_rate_conversion() -> None:
    m = MeterArray("m", 1, "bytes")
    # 1000 bytes/s committed, 2000 peak, bursts 1500 / 3000 bytes
    m.set_config(0, cir=1000, cburst=1500, pir=2000, pburst=3000)
    assert m.execute(0, 1500, 0) == GREEN         # peak 1500 left, committed 0
    assert m.execute(0, 1500, 0) == YELLOW        # peak 0 left
    assert m.execute(0, 1, 0) == RED
    # 0.5 s later: peak earns int(500000 * 0.002) = 1000, committed earns 500
    assert m.execute(0, 600, 500_000) == YELLOW   # peak 1000 -> 400; committed 500 < 600
    assert m.execute(0, 400, 500_000) == GREEN    # peak 400 -> 0; committed 500 -> 100


def test_meter_config_errors_leave_state() -> None:
    m = MeterArray("m", 2, "packets")
    m.set_config(1, 1, 1, 2, 2)
    assert code_of(m.set_config, 1, 5, 1, 2, 2) == "INVALID_ARGUMENT"   # CIR > PIR
    assert code_of(m.set_config, 2, 1, 1, 2, 2) == "OUT_OF_RANGE"
    assert code_of(m.set_config, 0, -1, 1, 2, 2) == "INVALID_ARGUMENT"
    assert m.get_config(1) == MeterConfig(1, 1, 2, 2)
    assert m.get_config(0) is None
    m.reset_config(1)
    assert m.get_config(1) is None
    assert m.execute(1, 1, 0) == GREEN


def test_direct_meter_cell() -> None:
    dm = DirectMeter("dm", "packets")
    cell = dm.new_cell()
    assert cell.execute(1, 0) == GREEN
    cell.set_config(MeterConfig(0, 0, 0, 0))
    assert cell.execute(1, 0) == RED
    cell.reset()
    assert cell.execute(1, 0) == GREEN
    with pytest.raises(ValueError):
        DirectMeter("dm", "packets_and_bytes")


# --------------------------------------------------------------------------- registers
def test_register_masking_and_bounds() -> None:
    r = RegisterArray("r", 3, 12)
    r.write(0, 0x1234)
    assert r.read(0) == 0x234
    r.write(3, 7)           # no-op
    r.write(-1, 7)
    assert r.read(3) == 0 and r.read(-1) == 0
    assert r.values() == [0x234, 0, 0]
    r.reset()
    assert r.values() == [0, 0, 0]


def test_register_control_plane() -> None:
    r = RegisterArray("r", 2, 8)
    r.set(1, 255)
    assert r.get(1) == 255
    assert code_of(r.set, 1, 256) == "OUT_OF_RANGE"
    assert code_of(r.get, 2) == "OUT_OF_RANGE"
    assert code_of(r.set, 2, 0) == "OUT_OF_RANGE"
    assert r.get(1) == 255
