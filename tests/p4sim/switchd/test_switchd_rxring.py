"""The receive-ring reader (:class:`p4sim.switchd.rxring.RxRing`) on a ring laid out in
memory as the kernel lays out TPACKET_V2 slots (no socket, no root): frames in order and
slots handed back, 802.1Q tags restored, frames this port sent and cut frames skipped,
a frame queued whole on the socket read from there, and a slot the kernel leaves empty
skipped only once it has stayed empty for HOLE_WAIT_S."""
from __future__ import annotations

import re
import socket
import struct
from typing import Optional

import pytest

import p4sim.switchd.rxring as rxring
from p4sim.native.build import C_DIR
from p4sim.switchd.ports import RX_BUFFER_BYTES, _grow_receive_buffer
from p4sim.switchd.rxring import (_HDR, _PKTTYPE_AT, HOLE_WAIT_S, PACKET_OUTGOING,
                                  TP_STATUS_COPY, TP_STATUS_USER, TP_STATUS_VLAN_VALID,
                                  RxRing)

SIZE, SLOTS, MAC_AT = 256, 8, 64


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


def _ring(copies: Optional[list[bytes]] = None) -> RxRing:
    ring = RxRing.__new__(RxRing)          # the reader alone, over plain memory
    ring._map = bytearray(SIZE * SLOTS)     # type: ignore[assignment]
    ring.frame_size, ring.slots, ring._next = SIZE, SLOTS, 0
    ring._hole_since, ring.truncated, ring.holes = None, 0, 0
    ring._recv_copy = (lambda: copies.pop(0)) if copies is not None else None
    return ring


def _put(ring: RxRing, slot: int, frame: bytes, *, status: int = TP_STATUS_USER,
         length: Optional[int] = None, tci: int = 0, pkttype: int = 0) -> None:
    off = slot * SIZE
    _HDR.pack_into(ring._map, off, status, length or len(frame), len(frame), MAC_AT, 0, 0,
                   0, tci, 0)
    ring._map[off + _PKTTYPE_AT] = pkttype
    ring._map[off + MAC_AT:off + MAC_AT + len(frame)] = frame


def _status(ring: RxRing, slot: int) -> int:
    return struct.unpack_from("=I", ring._map, slot * SIZE)[0]


def test_frames_in_order_slots_handed_back_and_wrapping() -> None:
    ring = _ring()
    for slot in (6, 7, 0, 1):
        _put(ring, slot, bytes([slot]) * 20)
    ring._next = 6
    assert ring.pending()
    assert ring.read(3) == [b"\x06" * 20, b"\x07" * 20, b"\x00" * 20]
    assert [_status(ring, s) for s in (6, 7, 0, 1)] == [0, 0, 0, TP_STATUS_USER]
    assert ring.read(64) == [b"\x01" * 20] and ring.read(64) == [] and not ring.pending()


def test_vlan_restored_outgoing_and_cut_frames_skipped_copy_read_whole() -> None:
    whole = b"W" * 600
    ring = _ring(copies=[whole])
    frame = bytes(12) + b"\x08\x00" + b"x" * 10
    _put(ring, 0, frame, status=TP_STATUS_USER | TP_STATUS_VLAN_VALID, tci=5)
    _put(ring, 1, frame, pkttype=PACKET_OUTGOING)
    _put(ring, 2, frame, length=500)                      # cut, no copy: skipped
    _put(ring, 3, b"W" * 100, status=TP_STATUS_USER | TP_STATUS_COPY, length=600)
    got = ring.read(64)
    assert got == [bytes(12) + b"\x81\x00\x00\x05\x08\x00" + b"x" * 10, whole]
    assert ring.truncated == 1 and all(_status(ring, s) == 0 for s in range(4))


def test_a_hole_is_skipped_only_after_it_stayed_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(rxring, "time", clock)
    ring = _ring()
    _put(ring, 3, b"after the hole")                      # slot 2 stays empty
    ring._next = 2
    assert ring.read(64) == []                            # first sight: wait
    clock.now += HOLE_WAIT_S / 2
    assert ring.read(64) == [] and ring.holes == 0
    clock.now += HOLE_WAIT_S
    assert ring.read(64) == [b"after the hole"] and ring.holes == 1 and ring._next == 4


def test_a_slot_filled_in_time_is_not_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(rxring, "time", clock)
    ring = _ring()
    _put(ring, 1, b"second")
    assert ring.read(64) == []                            # slot 0 still being filled
    _put(ring, 0, b"first")
    clock.now += HOLE_WAIT_S * 10
    assert ring.read(64) == [b"first", b"second"] and ring.holes == 0
    assert ring.read(64) == [] and ring.holes == 0        # nothing ahead: no hole


class _CutRing:
    """What RawSocketPort reads of a ring: its counts of cut frames and holes."""

    def __init__(self) -> None:
        self.truncated, self.holes, self.closed = 0, 0, False

    def close(self) -> None:
        self.closed = True


def test_cut_frames_reach_rx_dropped_when_read_not_when_the_socket_closes() -> None:
    from p4sim.switchd.ports import RawSocketPort
    port = RawSocketPort(1, "p4s-none")
    ring = _CutRing()
    port._ring = ring                                      # type: ignore[assignment]
    ring.truncated = 2
    assert port.status()["rx_dropped"] == 2
    ring.truncated = 3
    assert port.update_drops() == 3 and port.update_drops() == 3
    port._drop_socket()                                    # counted once, not again
    assert ring.closed and port.counters.rx_dropped == 3


def test_a_port_buffers_what_bmv2s_libpcap_ring_buffers() -> None:
    # BMv2's ports are libpcap handles with its default 2 MiB ring: p4sim's rings (the
    # Python reader's and the native data plane's) and its ring-less socket hold as much
    c_src = (C_DIR / "dataplane.c").read_text()
    c_blocks = int(re.search(r"#define RING_BLOCKS (\d+)", c_src).group(1))
    c_block = 1 << int(re.search(r"#define RING_BLOCK \(1 << (\d+)\)", c_src).group(1))
    assert rxring.BLOCKS * rxring.BLOCK_SIZE == c_blocks * c_block == RX_BUFFER_BYTES == 2 << 20
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        _grow_receive_buffer(sock)
        got = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)   # the kernel doubles it
        rmem_max = int(open("/proc/sys/net/core/rmem_max", encoding="ascii").read())
        assert got >= 2 * RX_BUFFER_BYTES or got >= 2 * rmem_max, got
