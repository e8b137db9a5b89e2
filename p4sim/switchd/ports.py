"""Switch ports: a Linux interface through an AF_PACKET raw socket, or an in-process port
(queues) for tests. Each port runs one receive thread that hands every received frame to
``deliver(port_number, frame)``; ``send`` never blocks.

The AF_PACKET backend (``-i 1@veth1``):

* one ``ETH_P_ALL`` socket bound to the interface; frames the socket itself transmitted
  (``PACKET_OUTGOING``) are ignored;
* 802.1Q tags that the kernel moved into packet metadata are put back in front of the
  EtherType from ``PACKET_AUXDATA``, as libpcap does;
* the interface may go down and up, or disappear and come back: errors (ENETDOWN,
  ENODEV, ENXIO, …) are logged, the socket is reopened with a backoff (0.05 s doubling to
  2 s), and the thread never dies;
* ``send`` is non-blocking: a frame the kernel cannot take now (EAGAIN, ENOBUFS, link
  down, oversize) is counted in ``tx_errors`` and dropped.

Example::

    >>> p = InProcessPort(1, "p1")
    >>> got = []
    >>> p.start(lambda port, frame: got.append((port, frame)))
    >>> p.inject(b"x" * 14); p.send(b"y" * 14)
    True
    >>> p.wait_idle(1.0)
    True
    >>> got, p.take(1.0)
    ([(1, b'xxxxxxxxxxxxxx')], b'yyyyyyyyyyyyyy')
    >>> p.close()
"""
from __future__ import annotations

import errno
import logging
import queue
import select
import socket
import struct
import threading
from dataclasses import asdict, dataclass
from typing import Any, Callable, Optional

from p4sim.switchd.pcap import PortCapture

DeliverFn = Callable[[int, bytes], None]

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_OUTGOING = 4
TP_STATUS_VLAN_VALID = 1 << 4
TP_STATUS_VLAN_TPID_VALID = 1 << 6
_AUXDATA = struct.Struct("=IIIHHHH")
MAX_FRAME = 65536 + 4
POLL_MS = 200
BACKOFF_MIN_S, BACKOFF_MAX_S = 0.05, 2.0

log = logging.getLogger("p4sim.switchd.ports")


@dataclass
class PortCounters:
    """Frames and errors seen by one port."""

    rx_frames: int = 0
    rx_bytes: int = 0
    tx_frames: int = 0
    tx_bytes: int = 0
    tx_errors: int = 0
    rx_errors: int = 0
    reopen: int = 0


class Port:
    """What the switch needs of a port (base class of both backends)."""

    def __init__(self, number: int, iface: str) -> None:
        self.number = number
        self.iface = iface
        self.counters = PortCounters()
        self.capture: Optional[PortCapture] = None
        self._deliver: Optional[DeliverFn] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self, deliver: DeliverFn) -> None:
        """Start the receive thread; each frame goes to ``deliver(number, frame)``."""
        self._deliver = deliver
        self._thread = threading.Thread(target=self._run, name=f"rx-{self.number}@{self.iface}",
                                        daemon=True)
        self._thread.start()

    def _received(self, frame: bytes) -> None:
        self.counters.rx_frames += 1
        self.counters.rx_bytes += len(frame)
        if self.capture is not None:
            self.capture.received(frame)
        if self._deliver is not None:
            try:
                self._deliver(self.number, frame)
            except Exception:  # the switch must survive anything a frame provokes
                self.counters.rx_errors += 1
                log.exception("port %d (%s): error handling a received frame", self.number,
                              self.iface)

    def _sent(self, frame: bytes) -> None:
        self.counters.tx_frames += 1
        self.counters.tx_bytes += len(frame)
        if self.capture is not None:
            self.capture.sent(frame)

    def send(self, frame: bytes) -> bool:
        """Transmit without blocking; False when the frame was dropped."""
        raise NotImplementedError

    def is_up(self) -> bool:
        return True

    def status(self) -> dict[str, Any]:
        """``{"iface", "up", counters…}``"""
        return {"iface": self.iface, "up": self.is_up(), **asdict(self.counters)}

    def _run(self) -> None:
        raise NotImplementedError

    def request_stop(self) -> None:
        """Ask the receive thread to stop (returns at once; :meth:`close` waits)."""
        self._stop.set()

    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the receive thread and release the port."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)


class InProcessPort(Port):
    """A port made of two queues: :meth:`inject` plays a frame arriving on the wire,
    :meth:`take` returns the next frame the switch transmitted."""

    def __init__(self, number: int, iface: Optional[str] = None) -> None:
        super().__init__(number, iface or f"inproc{number}")
        self._inbound: queue.Queue[bytes] = queue.Queue()
        self.outbound: queue.Queue[bytes] = queue.Queue()
        self._idle = threading.Condition()
        self._pending = 0

    def inject(self, frame: bytes) -> None:
        with self._idle:
            self._pending += 1
        self._inbound.put(bytes(frame))

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until every injected frame was handed to the switch."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout_s)

    def take(self, timeout_s: float) -> Optional[bytes]:
        try:
            return self.outbound.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def send(self, frame: bytes) -> bool:
        self._sent(frame)
        self.outbound.put(bytes(frame))
        return True

    def request_stop(self) -> None:
        self._stop.set()
        self._inbound.put(b"")                # wake the receive thread

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                frame = self._inbound.get(timeout=POLL_MS / 1000)
            except queue.Empty:
                continue
            if self._stop.is_set():
                return
            try:
                self._received(frame)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()


def restore_vlan(frame: bytes, ancdata: list[tuple[int, int, bytes]]) -> bytes:
    """Put back the 802.1Q tag the kernel kept in ``PACKET_AUXDATA`` (libpcap's rule: a
    tag is present when TP_STATUS_VLAN_VALID is set or the TCI is non-zero).

    Example::

        >>> aux = _AUXDATA.pack(TP_STATUS_VLAN_VALID, 0, 0, 0, 0, 5, 0)
        >>> restore_vlan(bytes(12) + b"\\x08\\x00", [(SOL_PACKET, PACKET_AUXDATA, aux)]).hex()
        '000000000000000000000000810000050800'
    """
    for level, kind, data in ancdata:
        if level != SOL_PACKET or kind != PACKET_AUXDATA or len(data) < _AUXDATA.size:
            continue
        status, _len, _snap, _mac, _net, tci, tpid = _AUXDATA.unpack_from(data)
        if (tci == 0 and not status & TP_STATUS_VLAN_VALID) or len(frame) < 12:
            return frame
        if not status & TP_STATUS_VLAN_TPID_VALID or tpid == 0:
            tpid = 0x8100
        return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]
    return frame


class RawSocketPort(Port):
    """A Linux interface through an AF_PACKET socket (see the module docstring)."""

    def __init__(self, number: int, iface: str) -> None:
        super().__init__(number, iface)
        self._sock: Optional[socket.socket] = None
        self._sock_lock = threading.Lock()
        self._down_logged = False

    def open(self) -> None:
        """Open and bind the socket now (raises OSError); the thread retries later."""
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            sock.bind((self.iface, ETH_P_ALL))
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        with self._sock_lock:
            old, self._sock = self._sock, sock
        if old is not None:
            old.close()

    def _drop_socket(self) -> None:
        with self._sock_lock:
            old, self._sock = self._sock, None
        if old is not None:
            old.close()

    def is_up(self) -> bool:
        try:
            with open(f"/sys/class/net/{self.iface}/operstate", encoding="ascii") as f:
                state = f.read().strip()
        except OSError:
            return False
        return self._sock is not None and state in ("up", "unknown")

    def send(self, frame: bytes) -> bool:
        sock = self._sock
        if sock is None:
            self.counters.tx_errors += 1
            return False
        try:
            sock.send(frame)
        except OSError as exc:
            self.counters.tx_errors += 1
            log.debug("port %d (%s): send failed: %s", self.number, self.iface, exc)
            return False
        self._sent(frame)
        return True

    def _run(self) -> None:
        backoff = BACKOFF_MIN_S
        while not self._stop.is_set():
            sock = self._sock
            if sock is None:
                try:
                    self.open()
                    self.counters.reopen += 1
                    log.info("port %d (%s): socket open", self.number, self.iface)
                    backoff = BACKOFF_MIN_S
                except OSError as exc:
                    log.warning("port %d (%s): cannot open (%s), retrying in %.2f s",
                                self.number, self.iface, exc, backoff)
                    self._stop.wait(backoff)
                    backoff = min(backoff * 2, BACKOFF_MAX_S)
                continue
            try:
                ready, _, _ = select.select([sock], [], [], POLL_MS / 1000)
            except (OSError, ValueError):
                self._drop_socket()
                continue
            if ready:
                self._read_all(sock)
        self._drop_socket()

    def _read_all(self, sock: socket.socket) -> None:
        """Read every frame queued on the socket."""
        for _ in range(256):
            try:
                data, anc, _flags, addr = sock.recvmsg(MAX_FRAME, socket.CMSG_SPACE(_AUXDATA.size))
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self._recv_error(exc)
                return
            self._down_logged = False
            if len(addr) > 2 and addr[2] == PACKET_OUTGOING:
                continue
            self._received(restore_vlan(data, anc))

    def _recv_error(self, exc: OSError) -> None:
        if exc.errno == errno.ENETDOWN:
            if not self._down_logged:
                log.warning("port %d (%s): link down", self.number, self.iface)
                self._down_logged = True
            return
        self.counters.rx_errors += 1
        log.warning("port %d (%s): receive failed (%s); reopening", self.number, self.iface, exc)
        self._drop_socket()
        self._stop.wait(BACKOFF_MIN_S)
