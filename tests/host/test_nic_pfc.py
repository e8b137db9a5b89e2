"""PFC pause honouring: fabric frame format, quanta × 512 bit times, resume, senders held."""
from __future__ import annotations

import struct

import pytest

from host.nic.frames import FlowSpec
from host.nic.pfc import PfcState, build_pause, parse_pause, pause_seconds
from host.nic.qp import SenderQP


def fabric_pause(prio: int, quanta: int) -> bytes:
    """The 60-byte frame p4src's egress PFC control generates (per p4src/README.md)."""
    times = [0] * 8
    times[prio] = quanta
    return (bytes.fromhex("0180c2000001") + bytes.fromhex("020000000103")
            + struct.pack("!HHH8H", 0x8808, 0x0101, 1 << prio, *times)).ljust(60, b"\x00")


def test_parse_fabric_frame() -> None:
    assert parse_pause(fabric_pause(3, 0xFFFF)) == {3: 0xFFFF}
    assert build_pause("02:00:00:00:01:03", {3: 0xFFFF}) == fabric_pause(3, 0xFFFF)
    assert parse_pause(fabric_pause(6, 0)) == {6: 0}
    wrong_opcode = bytearray(fabric_pause(3, 5))
    wrong_opcode[15] = 0x02
    assert parse_pause(bytes(wrong_opcode)) is None


def test_pause_duration_is_quanta_times_512_bit_times() -> None:
    assert pause_seconds(1000, 100e6) == pytest.approx(1000 * 512 / 100e6)
    st = PfcState(line_rate_bps=100e6)               # 1000 quanta = 5.12 ms
    assert st.on_frame(fabric_pause(3, 1000), 1.0) == [3]
    assert st.is_paused(3, 1.0) and st.is_paused(3, 1.00511)
    assert not st.is_paused(3, 1.00513)
    assert not st.is_paused(2, 1.001)                # other priorities unaffected
    assert st.pause_remaining(3, 1.002) == pytest.approx(0.00312)
    assert st.pauses[3] == 1


def test_resume_and_refresh() -> None:
    st = PfcState(line_rate_bps=1e6)                 # 1 quantum = 512 µs
    st.on_frame(fabric_pause(3, 100), 0.0)           # until 51.2 ms
    st.on_frame(fabric_pause(3, 100), 0.04)          # refreshed: until 91.2 ms
    assert st.is_paused(3, 0.09)
    st.on_frame(fabric_pause(3, 0), 0.05)            # RESUME
    assert not st.is_paused(3, 0.05)
    assert (st.pauses[3], st.resumes[3]) == (2, 1)
    assert st.paused_seconds(3, 1.0) == pytest.approx(0.05)


def test_non_pfc_frames_ignored() -> None:
    st = PfcState(line_rate_bps=1e9)
    assert st.on_frame(bytes(60), 0.0) == []
    with pytest.raises(ValueError):
        PfcState(line_rate_bps=0)
    with pytest.raises(ValueError):
        build_pause("02:00:00:00:00:01", {8: 1})


def test_sender_holds_paused_priority_only() -> None:
    st = PfcState(line_rate_bps=1e6)
    flow = FlowSpec("02:00:00:00:00:01", "02:00:00:00:01:01", "10.0.0.1", "10.1.0.1", 1, 7)
    qp3 = SenderQP(flow, priority=3, pfc=st, rate_limit=False)
    qp0 = SenderQP(flow, priority=0, pfc=st, rate_limit=False)
    st.on_frame(fabric_pause(3, 100), 0.0)
    assert qp3.poll(0.01) is None and qp0.poll(0.01) is not None
    assert qp3.wait_s(0.01) == pytest.approx(0.0412)
    assert qp3.poll(0.0513) is not None              # expired
    st.on_frame(fabric_pause(3, 100), 0.06)
    st.on_frame(fabric_pause(3, 0), 0.07)
    assert qp3.poll(0.07) is not None
    assert qp3.counters.pause_blocked_s == pytest.approx(0.0413)
