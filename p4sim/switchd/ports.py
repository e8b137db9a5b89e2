"""Switch ports: a Linux interface through an AF_PACKET raw socket, or an in-process port
(queues) for tests. Each port runs one receive thread that hands the received frames to
``deliver_many(port_number, frames)`` (a batch of what was waiting, in order) or, without
it, each to ``deliver(port_number, frame)``; ``send`` never blocks. Delivery may block
(the switch's ingress buffer is full): the port then stops reading.

The AF_PACKET backend (``-i 1@veth1``):

* one ``ETH_P_ALL`` socket bound to the interface; frames transmitted on the interface
  are not received back (``PACKET_IGNORE_OUTGOING``, and ``PACKET_OUTGOING`` frames are
  skipped on kernels without it), as BMv2's libpcap ports capture inbound only;
* every wake-up reads what is waiting, up to :data:`RX_BATCH` frames, and delivers them
  as one batch: from the socket's receive ring (:mod:`.rxring`, as libpcap reads; no
  system call per frame), or with one non-blocking ``recvmsg`` per frame where the
  kernel refuses a ring (``use_ring=False`` forces that). The port is *pullable*: the
  switch passes ``pull`` to :meth:`Port.start`, and then reads it (from this thread or
  its own worker) only when its ingress buffer has room (:meth:`SwitchDevice.pull
  <p4sim.switchd.device.SwitchDevice.pull>`);
* frames the kernel dropped because the socket was not read fast enough (the switch's
  ingress buffer was full) are counted in ``rx_dropped`` (``PACKET_STATISTICS``), and a
  warning says so at most once per :data:`DROP_LOG_INTERVAL_S`; ring slots the kernel
  left empty and the reader skipped (:mod:`.rxring`) in ``rx_ring_holes``;
* 802.1Q tags that the kernel moved into packet metadata are put back in front of the
  EtherType from ``PACKET_AUXDATA``, as libpcap does;
* the interface may go down and up, or disappear and come back: errors (ENETDOWN,
  ENODEV, ENXIO, …) are logged, the socket is reopened with a backoff (0.05 s doubling to
  2 s), and the thread never dies;
* ``send`` is non-blocking: a frame the kernel cannot take now (EAGAIN, ENOBUFS, link
  down, oversize) is counted in ``tx_errors`` and dropped.
* a received frame longer than the interface takes (its MTU + 14, + 4 with an 802.1Q or
  802.1ad tag: :meth:`RawSocketPort.oversize`; the MTU read again when a frame exceeds
  it, so a raised MTU counts without a reopen) is dropped before the pipeline and counted
  in ``rx_oversize``, as a switch's MAC drops giants. A veth delivers up to MTU + 18
  bytes, and a GSO super-frame of any length, to the packet socket; such a frame,
  forwarded, was counted by the egress ``tx`` counter and then refused by the next
  link's ``send`` (EMSGSIZE), so the peer never counted it: "sent but not received",
  GOR's evidence of a dead link (controller/gor/deadlinks.py). A host that raised its own
  NIC's MTU thereby made GOR take a healthy leaf's uplinks down (sec-audit3).

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
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Optional, Sequence

from p4sim.switchd.pcap import PortCapture
from p4sim.switchd.rxring import RxRing

DeliverFn = Callable[[int, bytes], None]
DeliverManyFn = Callable[[int, Sequence[bytes]], None]
PullFn = Callable[["Port", bool], int]

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_OUTGOING = 4
ETH_HEADER_BYTES = 14
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23
TP_STATUS_VLAN_VALID = 1 << 4
TP_STATUS_VLAN_TPID_VALID = 1 << 6
_AUXDATA = struct.Struct("=IIIHHHH")
_TPACKET_STATS = struct.Struct("=II")
MAX_FRAME = 65536 + 4
POLL_MS = 200
RX_BATCH = 64
"""Frames read from a socket per wake-up (one delivery)."""
SO_RCVBUFFORCE = 33
RX_BUFFER_BYTES = 2 * 1024 * 1024
"""A port's kernel receive buffer when frames are read from the socket itself (the
kernel refused a receive ring, or the native data plane has not mapped its own yet):
2 MiB, as the rings (:data:`p4sim.switchd.rxring.BLOCKS`, ``RING_BLOCKS`` in
``dataplane.c``): libpcap's default on Linux when ``pcap_set_buffer_size`` is not called
(``pcap-linux.c``: "by default request 2M for the ring buffer"), which BMv2's ports use
(``src/BMI/bmi_interface.c`` sets promiscuous, timeout and immediate mode only). With
512 KiB (256 slots) a switch whose worker lost the CPU for a quarter of a second on a
loaded machine dropped frames at 1,000 frames/s that BMv2 would have held (the
link-failure scenario in CI). Set with ``SO_RCVBUFFORCE`` (root, as the testbed runs
switches), else ``SO_RCVBUF`` (capped by ``rmem_max``)."""
DROP_LOG_INTERVAL_S = 1.0
MTU_RECHECK_S = 1.0
"""How often at most a port reads its interface's MTU again when a frame exceeds the
limit it holds (:meth:`RawSocketPort.oversize`): an MTU raised while the port is open
(``ip link set IF mtu 9000`` without a reopen) is taken at the next such frame."""
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
    rx_dropped: int = 0
    rx_oversize: int = 0
    rx_ring_holes: int = 0
    reopen: int = 0


class Port:
    """What the switch needs of a port (base class of both backends).

    A *pullable* port (``pullable`` True) can also be read from any thread with
    :meth:`read_frames` while holding ``rx_lock``; its receive thread then hands the
    reading to ``pull(port, block)`` (the switch reserves room in its ingress buffer,
    then reads and commits under ``rx_lock``), and the switch's worker may pull too."""

    pullable = False

    def __init__(self, number: int, iface: str) -> None:
        self.number = number
        self.iface = iface
        self.counters = PortCounters()
        self.capture: Optional[PortCapture] = None
        self.rx_lock = threading.RLock()
        self._deliver: Optional[DeliverFn] = None
        self._deliver_many: Optional[DeliverManyFn] = None
        self._pull: Optional[PullFn] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self, deliver: DeliverFn, deliver_many: Optional[DeliverManyFn] = None,
              pull: Optional[PullFn] = None) -> None:
        """Start the receive thread; frames go to ``deliver_many(number, frames)`` when
        given, else each to ``deliver(number, frame)``; a pullable port with ``pull``
        calls ``pull(self, True)`` whenever frames are waiting instead."""
        self._deliver = deliver
        self._deliver_many = deliver_many
        self._pull = pull if self.pullable else None
        self._thread = threading.Thread(target=self._run, name=f"rx-{self.number}@{self.iface}",
                                        daemon=True)
        self._thread.start()

    def _received(self, frame: bytes) -> None:
        self._received_many((frame,))

    def read_frames(self, max_frames: int) -> list[bytes]:
        """Frames waiting now, at most ``max_frames``, oldest first, counted in ``rx_*``
        (never blocks; call with ``rx_lock`` held). Pullable ports only."""
        raise NotImplementedError

    def rx_pending(self) -> bool:
        """True when frames are surely waiting and cheap to read from any thread (a
        pullable port's receive ring holds one); False otherwise."""
        return False

    def _count_received(self, frames: Sequence[bytes]) -> None:
        c = self.counters
        c.rx_frames += len(frames)
        c.rx_bytes += sum(map(len, frames))
        if self.capture is not None:
            for frame in frames:
                self.capture.received(frame)

    def _received_many(self, frames: Sequence[bytes]) -> None:
        self._count_received(frames)
        self._deliver_frames(frames)

    def _deliver_frames(self, frames: Sequence[bytes]) -> None:
        c = self.counters
        try:
            if self._deliver_many is not None:
                self._deliver_many(self.number, frames)
            elif self._deliver is not None:
                for frame in frames:
                    self._deliver(self.number, frame)
        except Exception:  # the switch must survive anything a frame provokes
            c.rx_errors += 1
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


def _grow_receive_buffer(sock: socket.socket, size_bytes: int = RX_BUFFER_BYTES) -> None:
    """Give ``sock`` a receive buffer of ``size_bytes`` (:data:`RX_BUFFER_BYTES`); beyond
    ``rmem_max`` only with ``CAP_NET_ADMIN``, otherwise as much as ``rmem_max`` allows."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, size_bytes)
    except OSError:                           # not root: capped by net.core.rmem_max
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size_bytes)


def interface_max_frame(iface: str) -> int:
    """The longest untagged frame ``iface`` takes: its MTU (``/sys/class/net``) + 14
    (the Ethernet header); 0 when it cannot be read (no limit then).

    >>> interface_max_frame("lo") > 14, interface_max_frame("no-such-if0")
    (True, 0)
    """
    try:
        with open(f"/sys/class/net/{iface}/mtu", encoding="ascii") as f:
            return int(f.read().strip()) + ETH_HEADER_BYTES
    except (OSError, ValueError):
        return 0


class RawSocketPort(Port):
    """A Linux interface through an AF_PACKET socket (see the module docstring).
    ``use_ring=False``: one ``recvmsg`` per frame instead of the receive ring."""

    pullable = True

    def __init__(self, number: int, iface: str, use_ring: bool = True) -> None:
        self.use_ring = use_ring
        super().__init__(number, iface)
        self._sock: Optional[socket.socket] = None
        self._ring: Optional[RxRing] = None
        self._sock_lock = threading.Lock()
        self._down_logged = False
        self._drops_logged = 0
        self._drops_log_at = 0.0
        self._holes_base = 0
        self._truncated_counted = 0       # of the current ring's truncated, in rx_dropped
        self.max_frame = 0                # MTU + 14 of the interface at open (0: unknown)
        self._mtu_read_at = 0.0           # time.monotonic() of the last MTU read

    def open(self) -> None:
        """Open and bind the socket now (raises OSError); the thread retries later."""
        self.refresh_max_frame()
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            try:
                sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            except OSError:                   # kernel < 4.20: skipped when read
                pass
            ring: Optional[RxRing] = None
            if self.use_ring:
                try:
                    ring = RxRing(sock, recv_copy=lambda: self._recv_one(sock))
                except (OSError, ValueError) as exc:
                    log.info("port %d (%s): no receive ring (%s); one recvmsg per frame",
                             self.number, self.iface, exc)
            if ring is None:
                _grow_receive_buffer(sock)
            sock.bind((self.iface, ETH_P_ALL))
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        with self._sock_lock:
            old, self._sock = self._sock, sock
            old_ring, self._ring = self._ring, ring
            if old_ring is not None:
                self._add_truncated(old_ring)
            self._truncated_counted = 0
        if old_ring is not None:
            old_ring.close()
        if old is not None:
            old.close()

    def _drop_socket(self) -> None:
        with self.rx_lock, self._sock_lock:   # nobody is reading the ring
            old, self._sock = self._sock, None
            ring, self._ring = self._ring, None
            if old is not None:
                self._add_kernel_drops(old)
            if ring is not None:
                self._add_truncated(ring)
            self._truncated_counted = 0
        if ring is not None:
            self._holes_base += ring.holes
            ring.close()
        if old is not None:
            old.close()

    def _add_kernel_drops(self, sock: socket.socket) -> None:
        """Add the kernel's drop count of ``sock`` since the last read (reading resets
        it) to ``rx_dropped``; call with ``_sock_lock`` held."""
        try:
            raw = sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, _TPACKET_STATS.size)
        except OSError:
            return
        _packets, drops = _TPACKET_STATS.unpack(raw)
        self.counters.rx_dropped += drops

    def _add_truncated(self, ring: RxRing) -> None:
        """Add the frames ``ring`` skipped as cut (:attr:`RxRing.truncated`) since the last
        call to ``rx_dropped``; call with ``_sock_lock`` held."""
        seen = ring.truncated
        self.counters.rx_dropped += seen - self._truncated_counted
        self._truncated_counted = seen

    def update_drops(self) -> int:
        """Read the kernel's drop count (and the ring's cut frames) now; returns
        ``rx_dropped``."""
        with self._sock_lock:
            if self._sock is not None:
                self._add_kernel_drops(self._sock)
            if self._ring is not None:
                self._add_truncated(self._ring)
            return self.counters.rx_dropped

    def status(self) -> dict[str, Any]:
        self.update_drops()
        ring = self._ring
        self.counters.rx_ring_holes = self._holes_base + (ring.holes if ring is not None else 0)
        return super().status()

    def _log_drops(self) -> None:
        """Warn (at most once per DROP_LOG_INTERVAL_S) when the kernel dropped frames."""
        now = time.monotonic()
        if now < self._drops_log_at:
            return
        self._drops_log_at = now + DROP_LOG_INTERVAL_S
        total = self.update_drops()
        if total > self._drops_logged:
            log.warning("port %d (%s): %d frames dropped at the socket while the ingress "
                        "buffer was full (%d in all)", self.number, self.iface,
                        total - self._drops_logged, total)
            self._drops_logged = total

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
            self._log_drops()
        self._drop_socket()

    def _recv_one(self, sock: socket.socket) -> Optional[bytes]:
        """One frame queued on the socket (None: nothing, or a frame this port sent)."""
        data, anc, _flags, addr = sock.recvmsg(MAX_FRAME, socket.CMSG_SPACE(_AUXDATA.size))
        if len(addr) > 2 and addr[2] == PACKET_OUTGOING:
            return None
        return restore_vlan(data, anc) if anc else data

    def rx_pending(self) -> bool:
        ring = self._ring
        try:
            return ring is not None and ring.pending()
        except ValueError:                    # closed by a reopen meanwhile
            return False

    def read_frames(self, max_frames: int) -> list[bytes]:
        frames: list[bytes] = []
        sock, ring = self._sock, self._ring
        if sock is None:
            return frames
        try:
            if ring is not None:
                frames = ring.read(max_frames)
            else:
                for _ in range(max_frames):
                    frame = self._recv_one(sock)
                    if frame is not None:
                        frames.append(frame)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as exc:
            self._recv_error(exc)
        if frames:
            self._down_logged = False
            if self.max_frame:
                kept = [f for f in frames if not self.oversize(f)]
                self.counters.rx_oversize += len(frames) - len(kept)
                frames = kept
            self._count_received(frames)
        return frames

    def refresh_max_frame(self) -> bool:
        """Read the interface's MTU again (:func:`interface_max_frame`) into
        :attr:`max_frame`; True when it changed. A name with no interface leaves 0 (no
        limit).

        >>> p = RawSocketPort(1, "lo"); p.refresh_max_frame(), p.max_frame > 14
        (True, True)
        """
        self._mtu_read_at = time.monotonic()
        limit = interface_max_frame(self.iface)
        changed, self.max_frame = limit != self.max_frame, limit
        return changed

    def oversize(self, frame: bytes) -> bool:
        """True for a frame longer than the interface takes: its MTU + 14 bytes, 4 more
        with an 802.1Q/802.1ad tag (module docstring; the native data plane's rule too).
        A frame over the limit held makes the port read the MTU again first (at most
        every :data:`MTU_RECHECK_S`): an MTU raised since the port opened counts.

        >>> p = RawSocketPort(1, "veth-x"); p.max_frame = 1514; p._mtu_read_at = 1e18
        >>> p.oversize(bytes(1514)), p.oversize(bytes(1515))
        (False, True)
        >>> p.oversize(bytes(12) + b"\\x81\\x00" + bytes(1504))     # tagged: 1518 is fine
        False
        """
        n = len(frame)
        if not self.max_frame or n <= self.max_frame:
            return False
        tag = 4 if frame[12:14] in (b"\x81\x00", b"\x88\xa8") else 0
        if n <= self.max_frame + tag:
            return False
        if time.monotonic() - self._mtu_read_at >= MTU_RECHECK_S:
            self.refresh_max_frame()
            return bool(self.max_frame) and n > self.max_frame + tag
        return True

    def _read_all(self, sock: socket.socket) -> None:
        """Read what is waiting (up to RX_BATCH frames) and deliver it as one batch, or
        let the switch pull it."""
        if self._pull is not None:
            try:
                self._pull(self, True)
            except Exception:  # the switch must survive anything a frame provokes
                self.counters.rx_errors += 1
                log.exception("port %d (%s): error handling received frames", self.number,
                              self.iface)
            return
        with self.rx_lock:
            frames = self.read_frames(RX_BATCH)
        if frames:
            self._deliver_frames(frames)

    def _recv_error(self, exc: OSError) -> None:
        if exc.errno == errno.ENETDOWN:
            if not self._down_logged:
                log.warning("port %d (%s): link down", self.number, self.iface)
                self._down_logged = True
            return
        self.counters.rx_errors += 1
        log.warning("port %d (%s): receive failed (%s); reopening", self.number, self.iface, exc)
        self._drop_socket()
        if threading.current_thread() is self._thread:
            self._stop.wait(BACKOFF_MIN_S)
