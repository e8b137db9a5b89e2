"""A ``PACKET_RX_RING`` (TPACKET_V2) receive ring on an AF_PACKET socket: what libpcap,
and so BMv2's ports, read frames from.

The kernel writes each received frame into a slot of a ring shared with the process
(``mmap``); reading a frame is a memory copy, not a system call. For the switch that
matters beyond the syscall itself: a Python thread gives up the GIL at every system call,
so a receive thread doing one ``recvmsg`` per frame hands the GIL back and forth with
the pipeline worker at every frame; reading a batch from the ring holds it once.

* Slots of :data:`FRAME_SIZE` bytes (a 1500-byte MTU frame with its VLAN tag fits); a
  larger frame (jumbo, or a GSO super-frame on a veth) is also queued whole on the socket
  (``PACKET_COPY_THRESH``, ``TP_STATUS_COPY``) and read from there with ``recvmsg``; if
  even that copy had no room the frame is counted in :attr:`RxRing.truncated` and skipped.
* 802.1Q tags the kernel moved into the slot header are put back (as :func:`restore_vlan`).
* A full ring drops in the kernel, counted by ``PACKET_STATISTICS`` like a socket's.
* A *hole*: measured on Linux 6.18 with a flooded veth, the kernel now and then leaves
  one slot empty (status ``TP_STATUS_KERNEL``) and fills the following ones, for good; a
  reader that waits for that slot waits forever while the kernel drops everything once
  the ring is full. When the slot to read is empty but one of the next
  :data:`HOLE_LOOKAHEAD` holds a frame, and that stays so for :data:`HOLE_WAIT_S`, the
  reader skips to it and counts the skipped slots in :attr:`RxRing.holes` (a slot still
  being filled by another CPU is filled within microseconds, far below the wait).

Example::

    >>> sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # doctest: +SKIP
    >>> ring = RxRing(sock); sock.bind(("veth1", 3))                              # doctest: +SKIP
    >>> ring.read(64)                                                            # doctest: +SKIP
    [b'...']
"""
from __future__ import annotations

import mmap
import socket
import struct
import time
from typing import Callable, Optional

SOL_PACKET = 263
PACKET_RX_RING = 5
PACKET_COPY_THRESH = 7
PACKET_VERSION = 10
TPACKET_V2 = 1
PACKET_OUTGOING = 4
TP_STATUS_KERNEL = 0
TP_STATUS_USER = 1
TP_STATUS_COPY = 1 << 1
TP_STATUS_VLAN_VALID = 1 << 4
TP_STATUS_VLAN_TPID_VALID = 1 << 6
_HDR = struct.Struct("=IIIHHIIHH4x")        # struct tpacket2_hdr
_STATUS = struct.Struct("=I")
_PKTTYPE_AT = 32 + 10                       # sockaddr_ll.sll_pkttype after the header
FRAME_SIZE = 2048
BLOCK_SIZE = 1 << 16
BLOCKS = 32
"""32 blocks of 64 KiB: 1,024 slots, 2 MiB per port: libpcap's default ring on Linux
(2 MiB when ``pcap_set_buffer_size`` is not called, as BMv2's ports do not), whose
slots are sized by the MTU as these are (see ``ports.RX_BUFFER_BYTES``)."""
HOLE_LOOKAHEAD = 16
HOLE_WAIT_S = 0.005

RecvCopy = Callable[[], Optional[bytes]]


class RxRing:
    """The receive ring of one AF_PACKET socket (set up before ``bind``).

    ``recv_copy`` reads one frame queued whole on the socket (``TP_STATUS_COPY``): the
    port's non-blocking ``recvmsg`` path. Raises OSError when the kernel refuses a ring.
    """

    def __init__(self, sock: socket.socket, recv_copy: Optional[RecvCopy] = None,
                 frame_size: int = FRAME_SIZE, block_size: int = BLOCK_SIZE,
                 blocks: int = BLOCKS) -> None:
        if block_size % frame_size or block_size % mmap.PAGESIZE:
            raise ValueError("block size must be a multiple of the frame and page sizes")
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        sock.setsockopt(SOL_PACKET, PACKET_COPY_THRESH, 1)
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING,
                        struct.pack("=IIII", block_size, blocks, frame_size,
                                    blocks * block_size // frame_size))
        self.frame_size = frame_size
        self.slots = blocks * block_size // frame_size
        self._map = mmap.mmap(sock.fileno(), blocks * block_size, mmap.MAP_SHARED,
                              mmap.PROT_READ | mmap.PROT_WRITE)
        self._next = 0
        self._recv_copy = recv_copy
        self._hole_since: Optional[float] = None
        self.truncated = 0
        self.holes = 0

    def pending(self) -> bool:
        """True when the next slot holds a frame (one memory read)."""
        return bool(self._map[self._next * self.frame_size] & TP_STATUS_USER)

    def _status(self, slot: int) -> int:
        return int(_STATUS.unpack_from(self._map, slot * self.frame_size)[0])

    def _skip_hole(self) -> bool:
        """The slot to read is empty: True (``_next`` moved on) when a frame waits in
        one of the next slots and has waited there for HOLE_WAIT_S (see module doc)."""
        first = self._next
        for ahead in range(1, HOLE_LOOKAHEAD + 1):
            slot = (first + ahead) % self.slots
            if self._status(slot) & TP_STATUS_USER:
                break
        else:
            self._hole_since = None
            return False
        now = time.monotonic()
        if self._hole_since is None:
            self._hole_since = now
            return False
        if now - self._hole_since < HOLE_WAIT_S:
            return False
        self._hole_since = None
        self.holes += ahead
        self._next = slot
        return True

    def read(self, max_frames: int) -> list[bytes]:
        """Up to ``max_frames`` frames waiting in the ring, oldest first (never blocks)."""
        if not self._status(self._next) & TP_STATUS_USER and not self._skip_hole():
            return []
        self._hole_since = None
        out: list[bytes] = []
        ring, size, slots, i = self._map, self.frame_size, self.slots, self._next
        unpack, release = _HDR.unpack_from, _STATUS.pack_into
        while len(out) < max_frames:
            off = i * size
            status, length, snaplen, mac, _net, _s, _ns, tci, tpid = unpack(ring, off)
            if not status & TP_STATUS_USER:
                break
            frame: Optional[bytes] = None
            copied = None
            if status & TP_STATUS_COPY and self._recv_copy is not None:
                try:
                    copied = self._recv_copy()
                except OSError:
                    copied = None
            if ring[off + _PKTTYPE_AT] == PACKET_OUTGOING:
                pass
            elif copied is not None:
                frame = copied
            elif snaplen < length:
                self.truncated += 1
            else:
                frame = ring[off + mac:off + mac + snaplen]
                if tci or status & TP_STATUS_VLAN_VALID:
                    if not status & TP_STATUS_VLAN_TPID_VALID or tpid == 0:
                        tpid = 0x8100
                    frame = frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]
            release(ring, off, TP_STATUS_KERNEL)
            i = i + 1 if i + 1 < slots else 0
            if frame is not None:
                out.append(frame)
        self._next = i
        return out

    def close(self) -> None:
        self._map.close()
