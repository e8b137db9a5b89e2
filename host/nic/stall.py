"""Stall mode of the receiving NIC: a slow receiver, the origin of a PFC pause storm.

A stalled NIC stops draining: it reads no frame from its link (they wait in the socket's
buffer, as in a NIC whose host stopped posting receive buffers) and transmits PFC PAUSE
frames for its data priority continuously — full quanta (65535), refreshed every
``interval_s``, well before a PAUSE expires (65535 quanta last 0.34 s at 100 Mb/s). Its
leaf stops sending to it, the leaf's queue for that port fills, the leaf pauses its own
upstream: the storm spreads from here. Leaving stall mode sends one RESUME (quanta 0) and
drains again.

:class:`StallableIO` wraps the port's :class:`~host.nic.io.FrameIO`, so the NIC's event
loop (:class:`~host.nic.io.NicPort`) is unchanged: while stalled ``recv`` returns nothing
and sends the PAUSE when one is due, and ``fileno`` is a descriptor that never becomes
readable, so the loop idles on its normal timeout instead of spinning on a full socket.
``python -m host.nic recv`` turns it on with **SIGUSR1** and off with **SIGUSR2**
(:func:`install_signals`; the fault injector ``testbed.faults`` sends them; senders use
SIGUSR1 as their go signal, so only receivers have stall mode).

>>> import socket
>>> from host.nic.io import DatagramIO
>>> from host.nic.pfc import parse_pause
>>> a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
>>> clock = iter([0.0, 0.01, 0.06, 0.07]).__next__
>>> io = StallableIO(DatagramIO(a), "02:00:00:00:00:01", priority=3, clock=clock)
>>> io.stall()
>>> io.recv(), io.recv(), io.recv()        # a PAUSE at once, none at 0.01, one at 0.06
(None, None, None)
>>> peer = DatagramIO(b); [parse_pause(peer.recv()), parse_pause(peer.recv()), peer.recv()]
[{3: 65535}, {3: 65535}, None]
>>> io.resume(); parse_pause(peer.recv()), io.pause_frames_sent, io.resume_frames_sent
({3: 0}, 2, 1)
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import time
from types import FrameType
from typing import Callable, Optional, Sequence

from host.nic.io import FrameIO
from host.nic.pfc import build_pause, pause_seconds

FULL_QUANTA = 0xFFFF
DEFAULT_INTERVAL_S = 0.05
STALL_ON_SIGNAL = signal.SIGUSR1
STALL_OFF_SIGNAL = signal.SIGUSR2


class StallableIO:
    """A :class:`~host.nic.io.FrameIO` that can stop draining and send PAUSE instead.

    ``src_mac`` is the NIC's MAC (the PAUSE's source), ``priority`` the PFC priority of
    its data (3 on the fabric), ``interval_s`` the PAUSE refresh period (at most half the
    pause time at ``line_rate_bps``), ``clock`` the monotonic clock (tests pass a fake).
    """

    def __init__(self, inner: FrameIO, src_mac: str, *, priority: int = 3,
                 quanta: int = FULL_QUANTA, interval_s: float = DEFAULT_INTERVAL_S,
                 line_rate_bps: float = 100e6,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 <= priority < 8:
            raise ValueError(f"PFC priority {priority} is not in 0..7")
        if not 0 < quanta <= FULL_QUANTA:
            raise ValueError(f"pause quanta {quanta} is not in 1..65535")
        self.inner = inner
        self.priority = priority
        self.interval_s = min(interval_s, pause_seconds(quanta, line_rate_bps) / 2)
        self.clock = clock
        self._pause = build_pause(src_mac, {priority: quanta})
        self._resume = build_pause(src_mac, {priority: 0})
        self._idle_r, self._idle_w = os.pipe()   # never written: select on it just times out
        self.stalled = False
        self._next_pause = 0.0
        self.pause_frames_sent = 0
        self.resume_frames_sent = 0
        self.stalls = 0
        self.stalled_s = 0.0
        self._since: Optional[float] = None

    # ------------------------------------------------------------ control
    def stall(self) -> None:
        """Stop draining; the next :meth:`recv` sends the first PAUSE (signal-safe)."""
        if not self.stalled:
            self.stalled, self.stalls = True, self.stalls + 1
            self._next_pause = float("-inf")
            self._since = None

    def resume(self) -> None:
        """Drain again and send one RESUME (quanta 0) at once (signal-safe)."""
        if self.stalled:
            self.stalled = False
            if self._since is not None:
                self.stalled_s += max(0.0, self.clock() - self._since)
            if self.inner.send(self._resume):
                self.resume_frames_sent += 1

    # ------------------------------------------------------------ FrameIO
    def send(self, frame: bytes) -> bool:
        return self.inner.send(frame)

    def send_many(self, frames: Sequence[bytes]) -> int:
        """:meth:`send` of each frame in order (one ``sendmmsg`` where the link has it);
        returns how many were refused."""
        send_many = getattr(self.inner, "send_many", None)
        if send_many is not None:
            refused: int = send_many(frames)
            return refused
        return sum(1 for frame in frames if not self.inner.send(frame))

    def recv_many(self, limit: int) -> list[bytes]:
        """Up to ``limit`` frames while draining (one ``recvmmsg`` where the link has
        it); while stalled nothing is read (and a PAUSE is sent when due, as :meth:`recv`)."""
        recv_many = getattr(self.inner, "recv_many", None)
        if self.stalled or recv_many is None:
            out = []
            for _ in range(limit):
                frame = self.recv()
                if frame is None:
                    break
                out.append(frame)
            return out
        frames: list[bytes] = recv_many(limit)
        return frames

    def recv(self) -> Optional[bytes]:
        if not self.stalled:
            return self.inner.recv()
        now = self.clock()
        if self._since is None:
            self._since = now
        if now >= self._next_pause:
            if self.inner.send(self._pause):
                self.pause_frames_sent += 1
            self._next_pause = now + self.interval_s
        return None

    def fileno(self) -> int:
        return self._idle_r if self.stalled else self.inner.fileno()

    def close(self) -> None:
        self.inner.close()
        for fd in (self._idle_r, self._idle_w):
            os.close(fd)

    def report(self) -> dict[str, object]:
        """JSON-ready stall counters (the receiver's report carries them as ``stall``)."""
        return {"stalled": self.stalled, "stalls": self.stalls,
                "pause_frames_sent": self.pause_frames_sent,
                "resume_frames_sent": self.resume_frames_sent,
                "stalled_s": self.stalled_s, "priority": self.priority}


def install_signals(io: StallableIO) -> None:
    """SIGUSR1 stalls ``io``, SIGUSR2 resumes it (main thread only)."""
    def on(_sig: int, _frame: Optional[FrameType]) -> None:
        io.stall()

    def off(_sig: int, _frame: Optional[FrameType]) -> None:
        io.resume()

    signal.signal(STALL_ON_SIGNAL, on)
    signal.signal(STALL_OFF_SIGNAL, off)


def add_arguments(recv: argparse.ArgumentParser) -> None:
    """The receiver's stall options.

    >>> p = argparse.ArgumentParser(); add_arguments(p); p.parse_args([]).stall_priority
    3
    """
    recv.add_argument("--stall-priority", type=int, default=3,
                      help="PFC priority a stalled receiver pauses (its data's; stall mode: "
                           "SIGUSR1 on, SIGUSR2 off)")
    recv.add_argument("--stall-pause-interval-ms", type=float, default=DEFAULT_INTERVAL_S * 1000,
                      help="how often a stalled receiver sends PAUSE (full quanta)")


def socket_mac(sock: socket.socket) -> str:
    """The MAC address of the interface an AF_PACKET socket is bound to (read from the
    socket, so it works in a network namespace whose /sys is the root's)."""
    return ":".join(f"{b:02x}" for b in sock.getsockname()[4][:6])


def wrap(args: argparse.Namespace, io: FrameIO, src_mac: str) -> StallableIO:
    """A receiver's link wrapped for stall mode, with the signals installed.

    >>> import socket; from host.nic.io import DatagramIO
    >>> a, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    >>> ns = argparse.Namespace(stall_priority=3, stall_pause_interval_ms=50.0,
    ...                         line_rate_mbps=100.0)
    >>> w = wrap(ns, DatagramIO(a), "02:00:00:00:00:01"); w.stalled
    False
    >>> for sig in (STALL_ON_SIGNAL, STALL_OFF_SIGNAL): _ = signal.signal(sig, signal.SIG_DFL)
    >>> w.close()
    """
    stallable = StallableIO(io, src_mac, priority=args.stall_priority,
                            interval_s=args.stall_pause_interval_ms / 1000,
                            line_rate_bps=args.line_rate_mbps * 1e6)
    install_signals(stallable)
    return stallable


__all__ = ["DEFAULT_INTERVAL_S", "FULL_QUANTA", "STALL_OFF_SIGNAL", "STALL_ON_SIGNAL",
           "StallableIO", "add_arguments", "install_signals", "socket_mac", "wrap"]
