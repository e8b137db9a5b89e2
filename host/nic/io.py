"""Frame I/O of the emulated NIC: an AF_PACKET raw socket and the port's event loop.

* :class:`PacketSocket` sends and receives whole Ethernet frames on one interface
  (ETH_P_ALL, non-blocking); it drops the socket's view of our own transmissions
  (``PACKET_OUTGOING``) and the one ENETDOWN a socket bound before link-up returns.
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

import errno
import math
import select
import socket
import time
from contextlib import nullcontext
from typing import Callable, ContextManager, Optional, Protocol

from host.nic.frames import OP_CNP, OP_RC_ACK, parse_roce
from host.nic.pfc import PfcState
from host.nic.qp import Receiver, SenderQP

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
MAX_FRAME = 65535
SOCK_BUF_BYTES = 4 << 20


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

    >>> a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    >>> x, y = DatagramIO(a), DatagramIO(b)
    >>> x.send(b"hi"), y.recv(), y.recv()
    (True, b'hi', None)
    """

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.tx_dropped = 0

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

    def recv(self) -> Optional[bytes]:
        try:
            return self.sock.recv(MAX_FRAME)
        except (BlockingIOError, InterruptedError):
            return None

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        self.sock.close()


class PacketSocket(DatagramIO):
    """:class:`FrameIO` on a network interface through AF_PACKET (needs CAP_NET_RAW).

    ``PacketSocket("h1-eth0")`` inside a Mininet host; frames we sent are not received.
    """

    def __init__(self, iface: str) -> None:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, SOCK_BUF_BYTES)
            except OSError:
                pass
        sock.bind((iface, 0))
        super().__init__(sock)
        self.iface = iface

    def recv(self) -> Optional[bytes]:
        while True:
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


class NicPort:
    """One NIC port: PFC state, sender QPs and an optional receiver over a :class:`FrameIO`.

    ``line_rate_bps`` converts PAUSE quanta to time. The senders share this port's PFC
    state (pass ``port.pfc`` to :class:`SenderQP` or use :meth:`add_sender`).
    ``step_lock`` is held around every :meth:`step` of :meth:`run`: code in other
    threads that changes a sender (the TCCL agent's ``QPMover.lock``) takes the same lock,
    so a change never lands half-way through a step.
    """

    def __init__(self, io: FrameIO, *, line_rate_bps: float, receiver: Optional[Receiver] = None,
                 rx_burst: int = 64, tx_burst: int = 32,
                 step_lock: Optional[ContextManager[object]] = None) -> None:
        self.io = io
        self.step_lock: ContextManager[object] = step_lock if step_lock is not None else nullcontext()
        self.pfc = PfcState(line_rate_bps)
        self.receiver = receiver
        self.senders: list[SenderQP] = []
        self.rx_burst = rx_burst
        self.tx_burst = tx_burst
        self.rx_frames = 0
        self.rx_pfc = 0
        self.rx_other = 0
        self.tx_frames = 0
        self.tx_refused = 0

    def add_sender(self, qp: SenderQP) -> SenderQP:
        """Attach a sender QP (its PFC state becomes this port's)."""
        qp.pfc = self.pfc
        self.senders.append(qp)
        return qp

    def _send(self, frame: bytes) -> bool:
        if self.io.send(frame):
            self.tx_frames += 1
            return True
        self.tx_refused += 1
        return False

    def step(self, now: float) -> int:
        """Receive what is waiting, then send what is due at ``now``; returns frames sent."""
        for _ in range(self.rx_burst):
            frame = self.io.recv()
            if frame is None:
                break
            self.rx_frames += 1
            self._dispatch(frame, now)
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

    def _dispatch(self, frame: bytes, now: float) -> None:
        if self.pfc.on_frame(frame, now):
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
        for reply in self.receiver.on_frame(frame, now, info):
            self._send(reply)

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
        """Loop for ``duration_s`` (or until ``stop()``, or senders done + ``linger_s``).

        Returns the elapsed time.
        """
        start = clock()
        end = start + duration_s
        done_at: Optional[float] = None
        while not stop():
            now = clock()
            if now >= end:
                break
            with self.step_lock:
                self.step(now)
            if self.senders_done:
                done_at = now if done_at is None else done_at
                if now - done_at >= linger_s:
                    break
            now = clock()
            timeout = min(self.wait_s(now), max_idle_s, end - now)
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
