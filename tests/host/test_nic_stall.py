"""Stall mode of the receiving NIC (host.nic.stall) over an in-process cable: while stalled
the port consumes nothing and sends PAUSE for its priority, refreshed before it expires;
on resume one RESUME and the waiting frames are consumed; the loop does not spin (the
Python path and the native hot loop)."""
from __future__ import annotations

import select
import socket

import pytest

from host.nic.io import DatagramIO, NicPort
from host.nic.native import native_status
from host.nic.pfc import parse_pause, pause_seconds
from host.nic.stall import StallableIO


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def drain(io: DatagramIO) -> list[bytes]:
    out = []
    while (frame := io.recv()) is not None:
        out.append(frame)
    return out


@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
def test_stalled_port_consumes_nothing_and_pauses_until_resumed(native: bool) -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    clock = Clock()
    io = StallableIO(DatagramIO(a), "02:00:00:00:00:09", priority=3, interval_s=0.05,
                     clock=clock)
    port, peer = NicPort(io, line_rate_bps=100e6, native=native), DatagramIO(b)
    assert port.native == (native and native_status()[0])
    io.stall()
    for _ in range(3):
        peer.send(bytes(60))                  # frames arrive while stalled
    sent = []
    for step in range(40):                    # 0.4 s of 10 ms steps
        clock.t = step * 0.01
        port.step(clock.t)
        sent += drain(peer)
    assert port.rx_frames == 0                # nothing consumed
    pauses = [parse_pause(f) for f in sent]
    assert pauses and all(p == {3: 0xFFFF} for p in pauses)
    assert 7 <= len(pauses) <= 9              # every 50 ms over 0.4 s
    assert io.interval_s < pause_seconds(0xFFFF, 100e6)
    assert select.select([io.fileno()], [], [], 0)[0] == []    # the loop would not spin
    io.resume()
    assert [parse_pause(f) for f in drain(peer)] == [{3: 0}]
    port.step(0.5)
    assert port.rx_frames == 3                # consumed again
    assert io.report()["pause_frames_sent"] == len(pauses)
    io.close()


def test_bad_settings_are_refused() -> None:
    a, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with pytest.raises(ValueError, match="priority 9"):
        StallableIO(DatagramIO(a), "02:00:00:00:00:09", priority=9)
    with pytest.raises(ValueError, match="quanta 0"):
        StallableIO(DatagramIO(a), "02:00:00:00:00:09", quanta=0)
