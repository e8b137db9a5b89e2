"""Batched datagram I/O for the NIC emulator: ``sendmmsg(2)`` and ``recvmmsg(2)`` through ctypes.

One system call moves a whole batch of frames (Linux 3.0+, glibc 2.14+). Both sides keep
one arena of :data:`SLOT_BYTES`-byte slots and the ``mmsghdr``/``iovec`` arrays pointing
at them, built once, so a batch costs the frames' copies into (out of) the arena plus one
call; no per-frame ctypes object is made.

* :class:`MmsgSender` ``.send(frames)`` tries every frame once, in order, like a loop of
  ``send``: a frame the kernel refuses (``EAGAIN``/``ENOBUFS``/``ENETDOWN``: buffer full,
  link down) is counted refused and the next ones are still tried; it returns how many
  were refused. A frame larger than a slot goes out alone with ``socket.send``. Every
  call moves on by at least one frame, so a link that refuses everything forever costs
  one system call per frame and never loops (both calls pass ``MSG_DONTWAIT``: none
  blocks, so a signal's Python handler runs as soon as the call returns).
* :class:`MmsgReceiver` ``.recv(limit)`` returns up to ``limit`` frames with the sender's
  ``sockaddr_ll.sll_pkttype`` of each (``None`` for a non-packet socket). A frame longer
  than a slot comes back cut to the slot, as ``recv(SLOT_BYTES)`` would.

>>> import socket
>>> a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
>>> a.setblocking(False); b.setblocking(False)
>>> MmsgSender(a).send([b"one", b"two", b"three"])
0
>>> [f for f, _ in MmsgReceiver(b).recv(8)]
[b'one', b'two', b'three']
>>> MmsgReceiver(b).recv(8)
[]
"""
from __future__ import annotations

import ctypes
import errno
import socket
from typing import Optional, Sequence

SLOT_BYTES = 16384
"""Arena slot: a RoCEv2 frame of a 4 KiB MTU (the largest IB MTU) and its headers fit."""
BATCH = 64
MSG_DONTWAIT = 0x40
SOCKADDR_BYTES = 32           # room for a sockaddr_ll (20 bytes)
_PKTTYPE_AT = 10              # sockaddr_ll: family, protocol, ifindex, hatype, then pkttype
MAX_EINTR_RETRIES = 3
"""A batch interrupted by a signal (EINTR) is tried again at most this often, then its
first frame counts as refused: a send loop always ends (issue 32)."""
REFUSED_ERRNOS = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOBUFS, errno.ENETDOWN})


class _Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [("msg_name", ctypes.c_void_p), ("msg_namelen", ctypes.c_uint32),
                ("msg_iov", ctypes.POINTER(_Iovec)), ("msg_iovlen", ctypes.c_size_t),
                ("msg_control", ctypes.c_void_p), ("msg_controllen", ctypes.c_size_t),
                ("msg_flags", ctypes.c_int)]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("msg_hdr", _Msghdr), ("msg_len", ctypes.c_uint)]


_LIBC = ctypes.CDLL(None, use_errno=True)
_sendmmsg = _LIBC.sendmmsg
_sendmmsg.argtypes = [ctypes.c_int, ctypes.POINTER(_Mmsghdr), ctypes.c_uint, ctypes.c_int]
_sendmmsg.restype = ctypes.c_int
_recvmmsg = _LIBC.recvmmsg
_recvmmsg.argtypes = [ctypes.c_int, ctypes.POINTER(_Mmsghdr), ctypes.c_uint, ctypes.c_int,
                      ctypes.c_void_p]
_recvmmsg.restype = ctypes.c_int
_IOV_WORDS = ctypes.sizeof(_Iovec) // 8          # iov_len is word 1 of each iovec
_HDR_WORDS = ctypes.sizeof(_Mmsghdr) // 4
_LEN_WORD = _Mmsghdr.msg_len.offset // 4
_NAMELEN_WORD = (_Mmsghdr.msg_hdr.offset + _Msghdr.msg_namelen.offset) // 4


class _Arena:
    """``count`` slots with one ``mmsghdr`` and one ``iovec`` each (names optional)."""

    def __init__(self, count: int, names: bool) -> None:
        self.count = count
        self.buf = ctypes.create_string_buffer(count * SLOT_BYTES)
        self.mv = memoryview(self.buf).cast("B")
        self.iov = (_Iovec * count)()
        self.hdrs = (_Mmsghdr * count)()
        self.names = ctypes.create_string_buffer(count * SOCKADDR_BYTES) if names else None
        base = ctypes.addressof(self.buf)
        for i in range(count):
            self.iov[i].iov_base = base + i * SLOT_BYTES
            self.iov[i].iov_len = SLOT_BYTES
            h = self.hdrs[i].msg_hdr
            h.msg_iov = ctypes.pointer(self.iov[i])
            h.msg_iovlen = 1
            if self.names is not None:
                h.msg_name = ctypes.addressof(self.names) + i * SOCKADDR_BYTES
                h.msg_namelen = SOCKADDR_BYTES
        self.iov_q = memoryview(self.iov).cast("B").cast("Q")
        self.hdr_i = memoryview(self.hdrs).cast("B").cast("I")
        self.names_mv = memoryview(self.names).cast("B") if self.names is not None else None


class MmsgSender:
    """``sendmmsg`` on a connected or bound, non-blocking datagram/packet socket."""

    def __init__(self, sock: socket.socket, batch: int = BATCH) -> None:
        self.sock = sock
        self.arena = _Arena(batch, names=False)

    def send(self, frames: Sequence[bytes]) -> int:
        """Send ``frames`` in order (each tried once); returns how many were refused.
        OSError for any other error."""
        refused = interrupted = 0
        a, n, i = self.arena, len(frames), 0
        while i < n:
            count = 0
            mv, iov_q = a.mv, a.iov_q
            while i + count < n and count < a.count:
                frame = frames[i + count]
                size = len(frame)
                if size > SLOT_BYTES:
                    break
                off = count * SLOT_BYTES
                mv[off:off + size] = frame
                iov_q[count * _IOV_WORDS + 1] = size
                count += 1
            if count == 0:                          # an oversized frame: alone
                refused += self._send_one(frames[i])
                i += 1
                continue
            done = _sendmmsg(self.sock.fileno(), a.hdrs, count, MSG_DONTWAIT)
            if done < 0:
                err = ctypes.get_errno()
                if err == errno.EINTR and interrupted < MAX_EINTR_RETRIES:
                    interrupted += 1
                    continue
                if err not in REFUSED_ERRNOS and err != errno.EINTR:
                    raise OSError(err, f"sendmmsg: {errno.errorcode.get(err, err)}")
                refused += 1                        # the first frame was refused
                done = 1
            elif done == 0:                         # never by Linux: still move on
                refused += 1
                done = 1
            i += min(done, count)                   # every call moves i: the loop ends
        return refused

    def _send_one(self, frame: bytes) -> int:
        try:
            self.sock.send(frame)
            return 0
        except OSError as exc:
            if exc.errno in REFUSED_ERRNOS:
                return 1
            raise


class MmsgReceiver:
    """``recvmmsg`` on a non-blocking datagram/packet socket (``names``: keep each frame's
    ``sockaddr`` to read its packet type: AF_PACKET)."""

    def __init__(self, sock: socket.socket, batch: int = BATCH, names: bool = False) -> None:
        self.sock = sock
        self.arena = _Arena(batch, names=names)

    def recv(self, limit: int) -> list[tuple[bytes, Optional[int]]]:
        """Up to ``limit`` waiting frames with their packet type; [] when none waits.
        OSError for an error other than "nothing waiting" (ENETDOWN is the caller's)."""
        a = self.arena
        count = min(limit, a.count)
        if count <= 0:
            return []
        got = _recvmmsg(self.sock.fileno(), a.hdrs, count, MSG_DONTWAIT, None)
        if got < 0:
            err = ctypes.get_errno()
            if err in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR):
                return []
            raise OSError(err, f"recvmmsg: {errno.errorcode.get(err, err)}")
        out: list[tuple[bytes, Optional[int]]] = []
        mv, hdr_i, names = a.mv, a.hdr_i, a.names_mv
        for k in range(got):
            size = min(hdr_i[k * _HDR_WORDS + _LEN_WORD], SLOT_BYTES)
            off = k * SLOT_BYTES
            kind = None
            if names is not None:
                kind = names[k * SOCKADDR_BYTES + _PKTTYPE_AT]
                hdr_i[k * _HDR_WORDS + _NAMELEN_WORD] = SOCKADDR_BYTES
            out.append((bytes(mv[off:off + size]), kind))
        return out


__all__ = ["BATCH", "MmsgReceiver", "MmsgSender", "SLOT_BYTES"]
