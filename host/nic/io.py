"""Frame I/O of the emulated NIC: an AF_PACKET raw socket and the port's event loop.

* :class:`PacketSocket` sends and receives whole Ethernet frames on one interface
  (ETH_P_ALL, non-blocking); it drops the socket's view of our own transmissions
  (``PACKET_OUTGOING``) and the one ENETDOWN a socket bound before link-up returns.
  A sender-only NIC process has the kernel drop the RoCE frames for other processes' QPs
  (:meth:`PacketSocket.accept_only_qpns`, a classic BPF filter: :func:`qpn_filter`).
* :class:`DatagramIO` does the same over any datagram socket, e.g. one end of
  ``socket.socketpair(AF_UNIX, SOCK_DGRAM)`` — an in-process "cable" for tests.
* :class:`NicPort` ties a port together: received frames go to PFC (PAUSE), to the
  sender QPs (CNP, ACK, NAK) or to the :class:`~host.nic.qp.Receiver` (data, whose
  CNPs and NAKs are sent back at once, its ACKs once per receive burst: coalesced); due
  frames of the sender QPs (new or sent again) are transmitted. :meth:`NicPort.step` does
  one round at a given time (tests drive it with a fake clock); :meth:`NicPort.run`
  loops on the real monotonic clock, sleeping in ``select`` until the next frame is due
  or a frame arrives.

>>> import socket
>>> a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
>>> port = NicPort(DatagramIO(a), line_rate_bps=1e8)
>>> DatagramIO(b).send(bytes(60))
True
>>> port.step(0.0)
0
>>> port.rx_frames, port.rx_other
(1, 1)
"""
from __future__ import annotations

import ctypes
import errno
import math
import select
import socket
import struct
import time
from contextlib import nullcontext
from typing import Callable, ContextManager, Optional, Protocol, Sequence

from host.nic.frames import OP_CNP, OP_RC_ACK, ROCE_UDP_PORT, RoceInfo, parse_roce
from host.nic.mmsg import MmsgReceiver, MmsgSender
from host.nic.native import (KIND_PFC, KIND_ROCE, R_ACKREQ, R_BECN, R_DQPN, R_DSCP, R_ECN, R_EXT_AT,
                             R_EXT_LEN, R_ICRC_OK, R_KIND, R_L3, R_LEN, R_OFF, R_OPCODE, R_PAYLOAD, R_PSN,
                             R_SPORT, R_WORDS, BURST_MAX_S, F_ACK_PENDING, F_BYTES, F_DQPN, F_EXPECTED, F_IP,
                             F_ACKS, F_CE, F_CNPS, F_MSGS, F_MSN, F_NAK_SENT, F_PAYLOAD, F_PKTS, F_SPORT, F_TOUCHED, F_WORDS, R_FAST,
                             R_SRC_IP, RX_BURST_ERROR, RX_FLOWS, SLOT_BYTES, NativeBurst, NativeQP, NativeReplies, NativeRx,
                             NativeTx,
                             nic_lib)
from host.nic.pfc import PfcState
from host.nic.qp import Receiver, SenderQP
from host.nic.rc import AETH_ACK
from host.nic.sendsize import check_fits_link, iface_mtu

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
"""Linux >= 4.20: the kernel stops handing a packet socket the frames its host transmits.
A packet socket never gets back its own frames, but without this option it got every
frame the host's other sockets sent on the interface (the story runs two sender processes
per host: each was handed the other's data frames), each queued, waking its ``select``
and read only to be dropped as ``PACKET_OUTGOING`` (issue 32, host/nic/README.md, "Own
transmissions")."""
SO_ATTACH_FILTER = 26
"""``setsockopt`` option that gives a socket a classic BPF filter (``linux/filter.h``)."""
QPN_FILTER_MAX = 200
"""The most QPs :func:`qpn_filter` lists (a BPF jump reaches 255 instructions)."""
MAX_FRAME = 65535
SOCK_BUF_BYTES = 4 << 20
PFC_ETHERTYPE = b"\x88\x08"
RECV_ROUNDS = 4
"""``PacketSocket.recv_many`` makes at most this many ``recvmmsg`` calls per step (our own
transmissions, ``PACKET_OUTGOING``, are read and dropped): a step always ends."""
RECV_SKIP_LIMIT = 256
"""``PacketSocket.recv`` reads at most this many frames (own transmissions, ENETDOWN) per call."""
TICK_S = 0.0
"""The NIC processes' default step period (``--tick-ms``): 0, one step at every wake-up,
each still moving everything due in one ``recvmmsg``/``sendmmsg`` batch. A tick
(:data:`BATCH_TICK_S`) allows at most one step per tick, so that at 5,000 packets/s per
QP a step carries about 5 frames of each QP and the wake-up, ``select`` and the loop's
own work are paid once for them (bench/README.md, "NIC emulator CPU per packet": about
half the CPU per packet at 20,000 pps); ACKs, NAKs and CNPs then leave up to one tick
later. At the story's rates (250–500 pps per elephant) the tick made the fabric worse:
with ``--tick-ms 1`` the story's senders at 250 pps got up to 2.5× the CNPs and 20× the
go-back-N retransmissions of the loop without a tick, and its uplinks ran at 28–68 %
instead of 62–68 % (host/nic/README.md, "Why no tick by default"), so it is off by
default."""
BURST_IDLE = 3
"""``NicPort._burst``: no QP could send (window closed, all sent): wait in ``select``."""
BURST_ERROR = 4
BATCH_TICK_S = 0.001
"""The tick for high rates and the ``host.nic_cpu`` bench (``--tick-ms 1``)."""


class FrameIO(Protocol):
    """What :class:`NicPort` needs from a link: non-blocking frame send/receive."""

    def send(self, frame: bytes) -> bool:
        """Transmit one frame; False when the kernel refused it (buffer full)."""
        ...

    def recv(self) -> Optional[bytes]:
        """One received frame, or None when none is waiting."""
        ...

    def fileno(self) -> int:
        """File descriptor to wait on."""
        ...

    def close(self) -> None:
        """Release the socket."""
        ...


class DatagramIO:
    """:class:`FrameIO` over a datagram socket (one datagram = one frame).

    :meth:`send_many` and :meth:`recv_many` move a batch in one system call
    (``sendmmsg``/``recvmmsg``, :mod:`host.nic.mmsg`); each frame is still tried once and
    counted as :meth:`send` would.

    >>> a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    >>> x, y = DatagramIO(a), DatagramIO(b)
    >>> x.send(b"hi"), y.recv(), y.recv()
    (True, b'hi', None)
    >>> x.send_many([b"a", b"b"]), y.recv_many(8), y.recv_many(8)
    (0, [b'a', b'b'], [])
    """

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.tx_dropped = 0
        self._tx = MmsgSender(sock)
        self._rx = MmsgReceiver(sock, names=False)

    def send(self, frame: bytes) -> bool:
        try:
            self.sock.send(frame)
            return True
        except (BlockingIOError, InterruptedError):
            self.tx_dropped += 1
            return False
        except OSError as exc:
            if exc.errno in (errno.ENOBUFS, errno.ENETDOWN):
                self.tx_dropped += 1
                return False
            raise

    def send_many(self, frames: Sequence[bytes]) -> int:
        """Send ``frames`` in order with ``sendmmsg``; returns how many were refused."""
        refused = self._tx.send(frames)
        self.tx_dropped += refused
        return refused

    def recv(self) -> Optional[bytes]:
        try:
            return self.sock.recv(MAX_FRAME)
        except (BlockingIOError, InterruptedError):
            return None

    def recv_many(self, limit: int) -> list[bytes]:
        """Up to ``limit`` waiting frames, in arrival order ([] when none waits)."""
        return [frame for frame, _kind in self._rx.recv(limit)]

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        self.sock.close()


def _bpf(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def qpn_filter(qpns: Sequence[int]) -> bytes:
    """A classic BPF program (``struct sock_filter`` array) that drops every IPv4/UDP
    4791 frame whose BTH destination QP is not one of ``qpns`` and accepts every other
    frame (PFC, 802.1Q-tagged, non-RoCE: the NIC's Python reads those as before).

    Why (issue 32): the story runs two sender processes on each host interface, and a
    packet socket is handed every frame the interface receives, so each sender was woken
    by, read, parsed and dropped (``rx_other``) the other process's ACKs and CNPs: half
    the frames it read, each ending its native burst for a Python step. A sender-only
    port (no :class:`~host.nic.qp.Receiver`) uses a RoCE frame only when its destination
    QP is one of its senders' (:meth:`SenderQP.on_frame`), so the filter drops exactly
    frames the port would have counted in ``rx_frames``/``rx_other`` and otherwise
    ignored. A frame too short for a load is dropped too (BPF's rule); the port would
    have ignored it as well (``parse_roce`` gives None).

    >>> len(qpn_filter([256, 257])) // 8        # 9 instructions, one per QP, 2 returns
    13
    >>> qpn_filter(range(QPN_FILTER_MAX + 1))
    Traceback (most recent call last):
    ...
    ValueError: qpn_filter: 201 QPs, at most 200
    """
    qpns = sorted(set(int(q) & 0xFFFFFF for q in qpns))
    if len(qpns) > QPN_FILTER_MAX:
        raise ValueError(f"qpn_filter: {len(qpns)} QPs, at most {QPN_FILTER_MAX}")
    n = len(qpns)
    accept = 10 + n                           # index of the accepting return
    prog = [
        _bpf(0x28, 0, 0, 12),                 # ldh [12]          ethertype
        _bpf(0x15, 0, accept - 2, 0x0800),    # jeq IPv4          else accept
        _bpf(0x30, 0, 0, 23),                 # ldb [23]          IP protocol
        _bpf(0x15, 0, accept - 4, 17),        # jeq UDP           else accept
        _bpf(0xB1, 0, 0, 14),                 # ldxb 4*([14]&0xf) IP header length
        _bpf(0x48, 0, 0, 16),                 # ldh [x+16]        UDP destination port
        _bpf(0x15, 0, accept - 7, ROCE_UDP_PORT),  # jeq 4791    else accept
        _bpf(0x40, 0, 0, 26),                 # ld [x+26]         BTH word 2
        _bpf(0x54, 0, 0, 0xFFFFFF),           # and 0xffffff      destination QP
    ]
    prog += [_bpf(0x15, accept - (len(prog) + i) - 1, 0, q) for i, q in enumerate(qpns)]
    prog += [_bpf(0x06, 0, 0, 0), _bpf(0x06, 0, 0, 0xFFFFFFFF)]   # ret 0 (drop); ret all
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]     # struct sock_fprog


class PacketSocket(DatagramIO):
    """:class:`FrameIO` on a network interface through AF_PACKET (needs CAP_NET_RAW).

    ``PacketSocket("h1-eth0")`` inside a Mininet host; frames we sent are not received:
    the kernel does not queue the host's transmissions to the socket
    (:data:`PACKET_IGNORE_OUTGOING`), and any that come anyway (an older kernel) are
    read and skipped (``PACKET_OUTGOING``).
    """

    def __init__(self, iface: str) -> None:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, SOCK_BUF_BYTES)
            except OSError:
                pass
        try:
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:                   # kernel < 4.20: PACKET_OUTGOING is still read and skipped
            pass
        sock.bind((iface, 0))
        super().__init__(sock)
        self._rx = MmsgReceiver(sock, names=True)
        self.iface = iface
        self.mtu = iface_mtu(iface)
        """The interface's MTU (IPv4 bytes), read once: a sender's frames must fit it."""
        self.qpns: Optional[tuple[int, ...]] = None
        """The QPs whose RoCE frames alone the kernel hands this socket (None: all)."""
        self.filter_reason = ""

    def accept_only_qpns(self, qpns: Sequence[int]) -> bool:
        """Have the kernel drop the RoCE frames addressed to any QP but ``qpns``
        (:func:`qpn_filter`; a sender-only port's, see ``NicPort``); replaces an earlier
        filter. False, and nothing filtered, where the kernel refuses it
        (:attr:`filter_reason` says why)."""
        prog = qpn_filter(qpns)
        buf = ctypes.create_string_buffer(prog, len(prog))
        fprog = _SockFprog(len(prog) // 8, ctypes.addressof(buf))
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, bytes(fprog))
        except OSError as exc:
            self.filter_reason = f"SO_ATTACH_FILTER: {exc.strerror or exc}"
            return False
        self.qpns = tuple(sorted(set(qpns)))
        return True

    def recv(self) -> Optional[bytes]:
        for _ in range(RECV_SKIP_LIMIT):
            try:
                data, addr = self.sock.recvfrom(MAX_FRAME)
            except (BlockingIOError, InterruptedError):
                return None
            except OSError as exc:
                if exc.errno == errno.ENETDOWN:    # bound before link-up: once
                    continue
                raise
            if addr[2] != PACKET_OUTGOING:
                return data
        return None                                # the rest waits for the next step

    def recv_many(self, limit: int) -> list[bytes]:
        """Up to ``limit`` received frames (``recvmmsg``), our host's own transmissions
        (``PACKET_OUTGOING``) left out."""
        out: list[bytes] = []
        for _ in range(RECV_ROUNDS):               # bounded: a flood of our own frames or
            want = limit - len(out)                # of ENETDOWNs cannot hold the step
            if want <= 0:
                break
            try:
                got = self._rx.recv(want)
            except OSError as exc:
                if exc.errno == errno.ENETDOWN:    # bound before link-up: once
                    continue
                raise
            out.extend(frame for frame, kind in got if kind != PACKET_OUTGOING)
            if len(got) < want:                    # the socket is drained
                break
        return out


def link_mtus(io: object) -> list[tuple[str, Optional[int]]]:
    """(interface, MTU) of every link under ``io``: a :class:`PacketSocket`, each port of a
    dual-port NIC's ``BondedIO`` (its ``links``), the socket inside a stall wrapper
    (``inner``); none for a link without an interface (a socket pair in tests).

    >>> link_mtus(object())
    []
    """
    inner = getattr(io, "inner", None)
    if inner is not None:
        return link_mtus(inner)
    links = getattr(io, "links", None)
    if links is not None:
        return [m for link in links for m in link_mtus(link)]
    if isinstance(io, PacketSocket):
        return [(io.iface, io.mtu)]
    return []


class NicPort:
    """One NIC port: PFC state, sender QPs and an optional receiver over a :class:`FrameIO`.

    ``line_rate_bps`` converts PAUSE quanta to time. The senders share this port's PFC
    state (pass ``port.pfc`` to :class:`SenderQP` or use :meth:`add_sender`).
    ``step_lock`` is held around every :meth:`step` of :meth:`run`: code in other
    threads that changes a sender (the TCCL agent's ``QPMover.lock``) takes the same lock,
    so a change never lands half-way through a step.

    Batching (the CPU a frame costs, issue 32): :meth:`run` steps at most once per
    ``tick_s`` (0, :data:`TICK_S`, steps at every wake-up; :data:`BATCH_TICK_S` for high rates), so one step handles every frame
    received and every frame due within the tick; with ``batch_io`` (default) a step reads
    its frames with one ``recvmmsg``, takes each sender's due frames with
    :meth:`SenderQP.poll_batch` and sends everything it made with one ``sendmmsg`` (in
    the order made: replies to received frames, ACKs, then each sender's frames), where
    the link has ``recv_many``/``send_many``. ``batch_io=False`` is the per-frame path
    (one system call and one :meth:`SenderQP.poll` per frame); both give the same frames
    in the same order and the same counters (``tests/host/test_nic_batch.py``).

    A port with senders and no receiver over a :class:`PacketSocket` has the kernel drop
    the RoCE frames addressed to other QPs (:func:`qpn_filter`): its host's other NIC
    process's ACKs and CNPs no longer wake it; ``rx_frames``/``rx_other`` do not count them.

    ``native`` (the CLI's default): the per-frame work runs in C (:mod:`host.nic.native`:
    frames made, sent, received, checked and simply accepted there, and, with no tick,
    the senders' waits between two steps); the same frames and counters as the Python
    path (``tests/host/test_nic_native.py``). Without gcc, with ``batch_io=False`` or on a
    link that is not one socket the Python path runs (:attr:`native_reason` says why).
    """

    def __init__(self, io: FrameIO, *, line_rate_bps: float, receiver: Optional[Receiver] = None,
                 rx_burst: int = 64, tx_burst: int = 32,
                 step_lock: Optional[ContextManager[object]] = None,
                 tick_s: float = 0.0, batch_io: bool = True, native: bool = False) -> None:
        if tick_s < 0:
            raise ValueError("tick_s must be >= 0")
        self.io = io
        self.step_lock: ContextManager[object] = step_lock if step_lock is not None else nullcontext()
        self.pfc = PfcState(line_rate_bps)
        self.receiver = receiver
        self.senders: list[SenderQP] = []
        self.rx_burst = rx_burst
        self.tx_burst = tx_burst
        self.tick_s = tick_s
        self.batch_io = batch_io
        self.rx_frames = 0
        self.rx_pfc = 0
        self.rx_other = 0
        self.tx_frames = 0
        self.tx_refused = 0
        self.steps = 0
        self._ntx: Optional[NativeTx] = None
        self._nrx: Optional[NativeRx] = None
        self._nburst: Optional[NativeBurst] = None
        self.rx_native_accepted = 0
        """Data frames the native hot loop accepted without Python (not in the report)."""
        self.rx_native_ce = 0
        """CE-marked data frames among them (their CNPs decided in C)."""
        self.rx_burst_taken = 0
        """ACKs and CNPs a sender's native burst took without Python (not in the report)."""
        self.rx_batches_in_c = 0
        """Receive batches C accepted whole, their ACKs and CNPs made in C (no Python per frame)."""
        self.tx_replies_in_c = 0
        """ACKs and CNPs of those batches (made from the flows' templates in C)."""
        self._nrep: Optional[NativeReplies] = None
        self._rx_left = 0
        self._rx_left_fast = -1                # frames of _rx_left a receiver's burst accepted (-1: none ran)
        self.native_reason = "not asked for"
        if native:
            self._start_native()

    @property
    def native(self) -> bool:
        """True when steps run the native hot loop (host.nic.native)."""
        return self._ntx is not None

    def _start_native(self) -> None:
        if not self.batch_io:
            self.native_reason = "per-frame I/O asked for"
            return
        link = getattr(self.io, "inner", self.io)     # a receiver's StallableIO: its socket
        if not isinstance(link, DatagramIO) or (link is not self.io and not hasattr(self.io, "stalled")):
            self.native_reason = f"{type(self.io).__name__} is not one socket"
            return
        self._link: DatagramIO = link
        lib = nic_lib()
        if lib is None:
            self.native_reason = "no native hot loop (host.nic.native said why)"
            return
        self._ntx = NativeTx(lib)
        self._nrx = NativeRx(lib, names=isinstance(link, PacketSocket))
        self._nrounds = RECV_ROUNDS if isinstance(link, PacketSocket) else 1
        self.native_reason = ""
        self._fflows = (ctypes.c_int64 * (RX_FLOWS * F_WORDS))()
        self._fkeys: dict[tuple[int, int], int] = {}          # (sender IP, QPN) -> row
        self._frows: list[object] = []                         # row -> the Receiver's _RxFlow
        self._frow_keys: list[tuple[bytes, int]] = []          # row -> the Receiver's flow key
        self._fcnp = (ctypes.c_double * RX_FLOWS)()             # row -> its last CNP (-inf: none)
        self._frep: list[object] = []                          # row -> the ACK template C holds
        self._flocal = (ctypes.c_int64 * 16)()
        self._nlocal = -1                                      # -1: no fast receive
        rcv = self.receiver
        if rcv is not None and rcv.on_deliver is None and len(rcv.local_ips) <= 16:
            for k, ip in enumerate(sorted(rcv.local_ips)):
                self._flocal[k] = int.from_bytes(ip, "big")
            self._nlocal = len(rcv.local_ips)
            self._nrep = NativeReplies(lib)
        for qp in self.senders:
            qp.attach_native(NativeQP(lib))

    def add_sender(self, qp: SenderQP) -> SenderQP:
        """Attach a sender QP (its PFC state becomes this port's). ValueError when its data
        frames do not fit the link's MTU (:func:`link_mtus`; the kernel would refuse every
        one of them)."""
        for iface, l3_mtu in link_mtus(self.io):
            check_fits_link(qp.mtu, iface, l3_mtu)
        qp.pfc = self.pfc
        self.senders.append(qp)
        only = getattr(self.io, "accept_only_qpns", None)
        if only is not None and self.receiver is None and len(self.senders) <= QPN_FILTER_MAX:
            only([s.sqpn for s in self.senders])      # the other QPs' ACKs/CNPs: not ours
        if self._ntx is not None:
            big = self._oversized([qp])
            if big:
                self._stop_native(big)
            else:
                qp.attach_native(NativeQP(self._ntx.lib))
        return qp

    @staticmethod
    def _oversized(senders: list[SenderQP]) -> str:
        """Why these senders need the Python path (a data frame larger than the native
        arena's slot), or ""."""
        for qp in senders:
            size = qp.native_frame_bytes()
            if size > SLOT_BYTES:
                return (f"a sender's frames ({size} bytes, mtu {qp.mtu}) exceed the native arena's "
                        f"{SLOT_BYTES}-byte slot")
        return ""

    def _stop_native(self, reason: str) -> None:
        """Go on on the Python path (between steps: the QPs' and the receiver's state is
        Python's then)."""
        for qp in self.senders:
            qp.detach_native()
        for arena in (self._ntx, self._nrx, self._nrep):
            if arena is not None:
                arena.close()
        self._ntx = self._nrx = None
        self._nrep = None
        self._nburst = None
        self.native_reason = reason

    def _send(self, frame: bytes) -> bool:
        if self.io.send(frame):
            self.tx_frames += 1
            return True
        self.tx_refused += 1
        return False

    def _send_all(self, frames: list[bytes]) -> None:
        if not frames:
            return
        send_many = getattr(self.io, "send_many", None)
        if send_many is None:
            for frame in frames:
                self._send(frame)
            return
        refused = send_many(frames)
        self.tx_frames += len(frames) - refused
        self.tx_refused += refused

    def _recv_all(self) -> list[bytes]:
        recv_many = getattr(self.io, "recv_many", None)
        if recv_many is not None:
            frames: list[bytes] = recv_many(self.rx_burst)
            return frames
        out = []
        for _ in range(self.rx_burst):
            frame = self.io.recv()
            if frame is None:
                break
            out.append(frame)
        return out

    def step(self, now: float) -> int:
        """Receive what is waiting, then send what is due at ``now``; returns frames sent."""
        self.steps += 1
        if self._ntx is not None:
            return self._step_native(now)
        if not self.batch_io:
            return self._step_per_frame(now)
        out: list[bytes] = []
        for frame in self._recv_all():
            self.rx_frames += 1
            self._dispatch(frame, now, out)
        if self.receiver is not None:
            out.extend(self.receiver.flush_acks())
        sent = 0
        for qp in self.senders:
            frames = qp.poll_batch(now, self.tx_burst)
            sent += len(frames)
            out.extend(frames)
        self._send_all(out)
        return sent

    def _step_native(self, now: float) -> int:
        """:meth:`step` on the native hot loop: the same frames, order and counters."""
        tx, rx = self._ntx, self._nrx
        assert tx is not None and rx is not None
        replies: list[bytes] = []
        got = 0
        whole = False                          # the batch accepted and answered in C
        pre_fast = -1
        if self._link is not self.io and self.io.stalled:     # type: ignore[attr-defined]
            for frame in self.io.recv_many(self.rx_burst):      # type: ignore[attr-defined]
                self.rx_frames += 1                             # (a stalled link reads none:
                self._dispatch(frame, now, replies)             # it sends its PAUSE)
        elif self._rx_left:
            got, self._rx_left = self._rx_left, 0         # what the last burst left for Python
            pre_fast, self._rx_left_fast = self._rx_left_fast, -1
        else:
            got = rx.recv(self._link.fileno(), self.rx_burst, self._nrounds)
        if got:
            rec, mv = rx.rec, rx.mv
            fast = 0
            if pre_fast >= 0:                  # a receiver's burst ran nicc_rx_fast on them
                fast = pre_fast
                self.rx_native_accepted += fast
            elif self._nlocal >= 0 and self._frows:
                rcv = self.receiver
                assert rcv is not None
                fast = rx.fast(got, self._fflows, len(self._frows), self._flocal, self._nlocal, rcv.verify,
                               self._fcnp, now, rcv.np.cnp_interval_s)
                self.rx_native_accepted += fast
            if fast == got and self._nrep is not None:
                whole = self._whole_in_c(got, now)
                if whole:
                    got = 0                    # nothing left for Python's per-frame loop
            handled: set[int] = set()          # flows Python handled frames of
            keys = self._fkeys
            for i in range(got):
                self.rx_frames += 1
                b = i * R_WORDS
                if rec[b + R_FAST]:
                    if rec[b + R_FAST] == 2:                  # a CE mark C accepted: its CNP, here
                        row = keys[(rec[b + R_SRC_IP], rec[b + R_DQPN])]
                        replies.append(self._frows[row].cnp)   # type: ignore[attr-defined]
                    continue
                if keys and rec[b + R_KIND] == KIND_ROCE:
                    row = keys.get((rec[b + R_SRC_IP], rec[b + R_DQPN]))
                    if row is not None and row not in handled:
                        self._pull_flow(row, now)             # C's accepts first, then this one
                        handled.add(row)
                self._dispatch_record(rec, b, mv, now, replies)
            if fast and got:
                f = self._fflows
                for row in range(len(self._frows)):
                    if f[row * F_WORDS + F_TOUCHED] and row not in handled:
                        self._pull_flow(row, now)
            if self._nlocal >= 0 and got:
                self._push_flows(handled)
        if self.receiver is not None and not whole:
            replies.extend(self.receiver.flush_acks())
        for frame in replies:
            self._push(frame)
        sent = 0
        for qp in self.senders:
            if tx.count + self.tx_burst > tx.slots:
                self._flush_native()
            sent += qp.poll_into(now, self.tx_burst, tx)
        self._flush_native()
        return sent

    def _whole_in_c(self, got: int, now: float) -> bool:
        """A batch of ``got`` frames that C accepted whole: its CNPs and coalesced ACKs
        made in C into the tx arena (``NativeReplies.make``, the receiver's order: the
        CNPs in frame order, then the ACKs in flow order, as the Python loop and
        ``Receiver.flush_acks`` would) and the flows' counts taken; False (nothing done)
        when C cannot make them all (a flow without templates, the arena full)."""
        rep, tx, rx = self._nrep, self._ntx, self._nrx
        assert rep is not None and tx is not None and rx is not None
        made = rep.make(rx, got, self._fflows, len(self._frows), tx, AETH_ACK)
        if made < 0:
            return False
        self.rx_frames += got
        self.rx_batches_in_c += 1
        self.tx_replies_in_c += made
        f = self._fflows
        for row in range(len(self._frows)):
            if f[row * F_WORDS + F_TOUCHED]:
                self._pull_flow(row, now)
        return True

    def _rx_burst(self, now: float, end: float) -> int:
        """A receiver's native wait-read-answer loop (``NativeReplies.burst``) from ``now``
        until :data:`BURST_MAX_S` or ``end``, a batch C does not accept whole (left, already
        through ``nicc_rx_fast``, for the next step), a signal or an error; then the flows'
        counts taken (each at its last accept's instant). Returns why it ended
        (``native.RX_BURST_WHY``)."""
        rep, tx, rx, rcv = self._nrep, self._ntx, self._nrx, self.receiver
        assert rep is not None and tx is not None and rx is not None and rcv is not None
        rep.burst(rx, self._link.fileno(), self.rx_burst, self._nrounds, self._fflows, len(self._frows),
                  self._flocal, self._nlocal, rcv.verify, self._fcnp, rcv.np.cnp_interval_s, tx, AETH_ACK,
                  min(end, now + BURST_MAX_S))
        flushed, refused, why, err, left, left_fast, batches, replies, frames = rep.out
        self.tx_frames += flushed - refused
        self.tx_refused += refused
        self._link.tx_dropped += refused
        self.rx_frames += frames
        self.rx_native_accepted += frames
        self.rx_batches_in_c += batches
        self.tx_replies_in_c += replies
        if left:
            self._rx_left, self._rx_left_fast = int(left), int(left_fast)
        f, seen = self._fflows, rep.seen
        for row in range(len(self._frows)):
            if f[row * F_WORDS + F_PKTS]:
                self._pull_flow(row, seen[row])
        if why == RX_BURST_ERROR:
            raise OSError(err, f"receiver burst: {errno.errorcode.get(err, err)}")
        return int(why)

    def _burst(self, now: float, end: float) -> int:
        """The senders' native wait-and-send loop (host.nic.native.NativeBurst) from
        ``now`` until the first instant Python must act (a QP's retry timer, a pause's
        end, :data:`BURST_MAX_S`, ``end``) or a frame arrives that C does not take (C takes
        its QPs' ACKs and CNPs; a NAK, a PAUSE or anything else, and the frames read after
        it, are left for the next step); returns why it ended (``BURST_IDLE``: no QP can
        send, wait in ``select``)."""
        tx = self._ntx
        assert tx is not None
        if self._nburst is None or self._nburst.n != len(self.senders):
            self._nburst = NativeBurst(tx.lib, [qp._native for qp in self.senders])  # type: ignore[misc]
        deadline = min(end, now + BURST_MAX_S)
        for qp in self.senders:
            deadline = min(deadline, qp.burst_begin(now))
        burst = self._nburst
        rx = self._nrx
        assert rx is not None
        burst.run(tx, self._link.fileno(), self.tx_burst, rx, self.rx_burst, deadline)
        for qp in self.senders:
            qp.burst_end()
        flushed, refused, why, err, left, taken = burst.out
        self.rx_frames += taken
        self.rx_burst_taken += taken
        self._rx_left = int(left)
        self.tx_frames += flushed - refused
        self.tx_refused += refused
        self._link.tx_dropped += refused
        if why == BURST_ERROR:
            raise OSError(err, f"sendmmsg: {errno.errorcode.get(err, err)}")
        return int(why)

    def _pull_flow(self, row: int, now: float) -> None:
        """Take into the Receiver's flow what C accepted for it (state, counts)."""
        f, base = self._fflows, row * F_WORDS
        st = self._frows[row]
        rc, c = st.rc, st.counters                                    # type: ignore[attr-defined]
        exp = f[base + F_EXPECTED]
        rc.expected_psn = None if exp < 0 else exp
        rc.msn = f[base + F_MSN]
        if f[base + F_ACK_PENDING]:
            rc.ack_pending = True
            f[base + F_ACK_PENDING] = 0
        rc.nak_sent = bool(f[base + F_NAK_SENT])
        acks = f[base + F_ACKS]
        if acks:                                        # ACKs C made (Receiver.flush_acks' count)
            c.acks_sent += acks
            f[base + F_ACKS] = 0
        pkts = f[base + F_PKTS]
        if pkts:
            c.seen(now)
            c.recv_pkts += pkts
            c.recv_bytes += f[base + F_BYTES]
            c.recv_payload_bytes += f[base + F_PAYLOAD]
            c.messages_received += f[base + F_MSGS]
            for w in (F_PKTS, F_BYTES, F_PAYLOAD, F_MSGS):
                f[base + w] = 0
        ce = f[base + F_CE]
        if ce:                                          # NotificationPoint.on_packet's counts
            cnps, np_ = f[base + F_CNPS], self.receiver.np   # type: ignore[union-attr]
            self.rx_native_ce += ce
            c.ce_pkts += ce
            c.cnps_sent += cnps
            np_.ce_packets += ce
            np_.cnps += cnps
            if cnps:
                np_._last[self._frow_keys[row]] = self._fcnp[row]
            f[base + F_CE] = f[base + F_CNPS] = 0

    def _push_flows(self, rows: set[int]) -> None:
        """Hand C the flows Python handled frames of (``rows``) and any new flow."""
        rcv = self.receiver
        assert rcv is not None
        if len(self._fkeys) != len(rcv.flows):
            for (ip, qpn), st in rcv.flows.items():
                key = (int.from_bytes(ip, "big"), qpn)
                if key not in self._fkeys and len(self._frows) < RX_FLOWS:
                    row = self._fkeys[key] = len(self._frows)
                    self._frows.append(st)
                    self._frep.append(None)
                    self._frow_keys.append((ip, qpn))
                    self._fflows[row * F_WORDS + F_IP], self._fflows[row * F_WORDS + F_DQPN] = key
                    rows = rows | {row}
        f = self._fflows
        for row in rows:
            st, base = self._frows[row], row * F_WORDS
            rc = st.rc                                                # type: ignore[attr-defined]
            f[base + F_SPORT] = st.sport                              # type: ignore[attr-defined]
            f[base + F_EXPECTED] = -1 if rc.expected_psn is None else rc.expected_psn
            f[base + F_MSN] = rc.msn
            f[base + F_NAK_SENT] = int(rc.nak_sent)
            self._fcnp[row] = rcv.np._last.get(self._frow_keys[row], -math.inf)
            if self._nrep is not None and st.ack is not self._frep[row]:   # type: ignore[attr-defined]
                ack = st.ack                                          # type: ignore[attr-defined]
                if ack is not None and self._nrep.set(row, ack.parts(), st.cnp):   # type: ignore[attr-defined]
                    self._frep[row] = ack
                else:                                     # none in C: Python makes its replies
                    self._nrep.clear(row)
                    self._frep[row] = None

    def _push(self, frame: bytes) -> None:
        tx = self._ntx
        assert tx is not None
        if tx.push(frame):
            return
        self._flush_native()
        if not tx.push(frame):                 # larger than a slot: alone, as MmsgSender does
            refused = self._link.send_many([frame])
            self.tx_frames += 1 - refused
            self.tx_refused += refused

    def _flush_native(self) -> None:
        tx = self._ntx
        assert tx is not None
        n = tx.count
        if n:
            refused = tx.flush(self._link.fileno())
            self.tx_frames += n - refused
            self.tx_refused += refused
            self._link.tx_dropped += refused

    def _dispatch_record(self, rec: "ctypes.Array[ctypes.c_int64]", b: int, mv: memoryview, now: float,
                         out: list[bytes]) -> None:
        """:meth:`_dispatch` of one frame the hot loop read and parsed (record at ``b``)."""
        kind, off = rec[b + R_KIND], rec[b + R_OFF]
        if kind == KIND_PFC:
            if self.pfc.on_frame(bytes(mv[off:off + rec[b + R_LEN]]), now):
                self.rx_pfc += 1
                return
        if kind != KIND_ROCE:
            self.rx_other += 1
            return
        opcode = rec[b + R_OPCODE]
        if opcode not in (OP_CNP, OP_RC_ACK) and self.receiver is None:
            self.rx_other += 1
            return
        l3, ext = off + rec[b + R_L3], off + rec[b + R_EXT_AT]
        info = RoceInfo(bytes(mv[off + 6:off + 12]), bytes(mv[off:off + 6]), bytes(mv[l3 + 12:l3 + 16]),
                        bytes(mv[l3 + 16:l3 + 20]), rec[b + R_DSCP], rec[b + R_ECN], rec[b + R_SPORT],
                        opcode, bool(rec[b + R_BECN]), rec[b + R_DQPN], bool(rec[b + R_ACKREQ]),
                        rec[b + R_PSN], rec[b + R_PAYLOAD], bytes(mv[ext:ext + rec[b + R_EXT_LEN]]))
        if opcode in (OP_CNP, OP_RC_ACK):
            if not any(qp.on_frame(info, now) for qp in self.senders):
                self.rx_other += 1
            return
        assert self.receiver is not None
        out.extend(self.receiver.on_frame(bytes(mv[off:off + rec[b + R_LEN]]), now, info,
                                          icrc_ok=bool(rec[b + R_ICRC_OK])))

    def _step_per_frame(self, now: float) -> int:
        for _ in range(self.rx_burst):
            frame = self.io.recv()
            if frame is None:
                break
            self.rx_frames += 1
            replies: list[bytes] = []
            self._dispatch(frame, now, replies)
            for reply in replies:
                self._send(reply)
        if self.receiver is not None:
            for ack in self.receiver.flush_acks():
                self._send(ack)
        sent = 0
        for qp in self.senders:
            for _ in range(self.tx_burst):
                frame = qp.poll(now)
                if frame is None:
                    break
                self._send(frame)
                sent += 1
        return sent

    def _dispatch(self, frame: bytes, now: float, out: list[bytes]) -> None:
        if frame[12:14] == PFC_ETHERTYPE and self.pfc.on_frame(frame, now):
            self.rx_pfc += 1
            return
        info = parse_roce(frame)
        if info is None:
            self.rx_other += 1
            return
        if info.opcode in (OP_CNP, OP_RC_ACK):
            if not any(qp.on_frame(info, now) for qp in self.senders):
                self.rx_other += 1
            return
        if self.receiver is None:
            self.rx_other += 1
            return
        out.extend(self.receiver.on_frame(frame, now, info))

    def _rx_burst_ok(self, tick_s: float) -> bool:
        """True when :meth:`run` may wait in a receiver's burst: native, no tick, a
        receiver and no sender on the port, no frame left for Python, and not stalled."""
        return (self._nrep is not None and tick_s == 0 and not self.senders and self._ntx is not None
                and not self._rx_left and bool(self._frows)
                and not (self._link is not self.io and self.io.stalled))   # type: ignore[attr-defined]

    def wait_s(self, now: float) -> float:
        """Seconds until a sender has a frame due (``inf`` when none will)."""
        return min((qp.wait_s(now) for qp in self.senders), default=math.inf)

    @property
    def senders_done(self) -> bool:
        """True when every sender has all its messages acknowledged or is in error (and
        there is one)."""
        return bool(self.senders) and all(qp.done for qp in self.senders)

    def run(self, duration_s: float, *, clock: Callable[[], float] = time.monotonic,
            stop: Callable[[], bool] = lambda: False, max_idle_s: float = 0.01,
            linger_s: float = 0.0) -> float:
        """Loop for ``duration_s`` (or until ``stop()``, or senders done + ``linger_s``),
        one :meth:`step` per wake-up and at most one per ``tick_s``: after a step the loop
        first sleeps out the rest of the tick (frames arriving meanwhile wait in the
        socket); then, if that step received or sent nothing, in ``select`` until a frame
        arrives or one is due (a busy port steps again at once: no ``select`` per tick).

        Returns the elapsed time.
        """
        start = clock()
        end = start + duration_s
        done_at: Optional[float] = None
        tick = self.tick_s
        while not stop():
            now = clock()
            if now >= end:
                break
            rx_before = self.rx_frames
            with self.step_lock:
                sent = self.step(now)
            if self.senders_done:
                done_at = now if done_at is None else done_at
                if now - done_at >= linger_s:
                    break
            later = clock()
            if self._rx_burst_ok(tick):
                with self.step_lock:
                    self._rx_burst(later, end)
                continue              # a step at once: what the burst left, a signal's effect
            if self._ntx is not None and tick == 0 and self.senders:
                with self.step_lock:
                    why = self._burst(later, end)
                if why != BURST_IDLE:
                    continue          # Python's turn at once: a frame, a timer, a rate change
                later = clock()
            if tick > 0:
                rest = min(now + tick, end) - later
                if rest > 0:
                    time.sleep(rest)
                    later = clock()
                if sent or self.rx_frames != rx_before:
                    continue          # busy: the next tick's frames are likely waiting
            timeout = min(self.wait_s(later), max_idle_s, end - later)
            if timeout > 0:
                select.select([self.io.fileno()], [], [], timeout)
        return clock() - start

    def report(self, now: float) -> dict[str, object]:
        """JSON-ready port, PFC and per-flow counters."""
        flows: list[dict[str, object]] = [qp.report(now) for qp in self.senders]
        if self.receiver is not None:
            flows.extend(self.receiver.report())
        return {
            "rx_frames": self.rx_frames, "rx_pfc": self.rx_pfc, "rx_other": self.rx_other,
            "tx_frames": self.tx_frames, "tx_refused": self.tx_refused,
            "qp_errors": sum(1 for qp in self.senders if qp.errored),
            "pfc": {"pauses": list(self.pfc.pauses), "resumes": list(self.pfc.resumes),
                    "paused_s": [self.pfc.paused_seconds(p, now) for p in range(8)]},
            "flows": flows,
        }
