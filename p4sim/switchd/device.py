"""``SwitchDevice``: the running switch — ports, ingress buffer, the v1model pipeline in two
halves around the traffic manager, PFC at the port MAC — implementing
:class:`p4sim.device.Device` for the P4Runtime server.

Threads: one receive thread per port (see :mod:`.ports`) feeding the
:class:`~p4sim.switchd.ingress.IngressBuffer` (1024 frames, blocking, as BMv2's input
buffer: a full buffer stops the port reading and the kernel drops, counted per port in
``rx_dropped``), and ONE pipeline worker. An AF_PACKET port reserves room in the buffer
before it reads its ring (:meth:`SwitchDevice.pull`), so frames are never held by a
waiting thread; when the buffer is empty the worker pulls from the ports itself instead
of waiting for a receive thread to be scheduled. The worker first takes every packet the
:class:`~p4sim.switchd.tm.TrafficManager` lets leave now through
:meth:`V1ModelSwitch.run_egress` to its port, then one frame from the ingress buffer
through :meth:`V1ModelSwitch.run_ingress` into the egress queues, and sleeps on the
condition the buffer and the traffic manager share when neither has work. (BMv2 runs
ingress and egress in threads of their own on separate cores; under the GIL two Python
threads only take turns, and an ingress thread that wins every turn fills the egress
queues with packets that are then tail-dropped after the work was done: the collapse
under an unpaced sender that one worker avoids.) Every pipeline pass holds
``device.lock`` (the server holds it around a Write batch).

PFC: a received IEEE 802.1Qbb frame on a port with PFC enabled pauses that port's egress
queues (:meth:`TrafficManager.pause`). With ``pfc_passthrough=False`` (default) the MAC
consumes it; with ``True`` it also goes to the P4 parser, as every frame does on BMv2.
On a port with PFC disabled a PFC frame is an ordinary frame.

Frames that egress on ``cpu_port`` go to ``on_packet_in`` (set by the server) instead of
a port. Frames for a port that does not exist are counted in ``stats["no_port"]``.

Example::

    >>> dev = SwitchDevice(device_id=0)
    >>> p1, p2 = InProcessPort(1), InProcessPort(2)
    >>> dev.add_port(p1); dev.add_port(p2); dev.start()
    >>> dev.set_program(load_program("fwd.p4"))        # doctest: +SKIP
    >>> p1.inject(frame); p2.take(1.0)                  # doctest: +SKIP
    >>> dev.stop()
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Optional, Sequence

from p4sim.device import PacketInFn
from p4sim.engine.program import CompiledProgram
from p4sim.switchd.ingress import DEFAULT_CAPACITY_PKTS, IngressBuffer
from p4sim.switchd.pfc import PFC_DST, parse_pfc
from p4sim.switchd.ports import RX_BATCH, InProcessPort, Port
from p4sim.switchd.tm import DEFAULT_DEPTH_PKTS, DEFAULT_LINE_RATE_GBPS, Dequeued, TrafficManager
from p4sim.v1model.switch import EgressWork, QueueMeta, V1ModelSwitch

__all__ = ["SwitchDevice", "InProcessPort"]

INGRESS_BUFFER_PKTS = DEFAULT_CAPACITY_PKTS
_POLL_S = 0.2
_MIN_WAIT_S = 5e-5

log = logging.getLogger("p4sim.switchd.device")
TraceFn = Callable[[str], None]


class SwitchDevice:
    """The switch (see the module docstring). ``trace`` receives BMv2-style per-packet
    log lines (None: no trace, fastest)."""

    def __init__(self, *, device_id: int = 0, cpu_port: Optional[int] = None,
                 priority_queues: int = 1, queue_depth_pkts: int = DEFAULT_DEPTH_PKTS,
                 queue_rate_pps: float = 0.0, line_rate_gbps: float = DEFAULT_LINE_RATE_GBPS,
                 pfc_enabled: bool = True, pfc_passthrough: bool = False,
                 trace: Optional[TraceFn] = None,
                 ingress_buffer_pkts: int = INGRESS_BUFFER_PKTS) -> None:
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.lock = threading.RLock()
        self.program: Optional[CompiledProgram] = None
        self.on_packet_in: Optional[PacketInFn] = None
        self.digest_event = threading.Event()
        self.priority_queues = priority_queues
        self.pfc_passthrough = pfc_passthrough
        self.trace = trace
        start = time.monotonic_ns()
        self.clock_us: Callable[[], int] = lambda: (time.monotonic_ns() - start) // 1000
        self.ingress_buffer = IngressBuffer(ingress_buffer_pkts)
        self.tm = TrafficManager(priority_queues=priority_queues, depth_pkts=queue_depth_pkts,
                                 rate_pps=queue_rate_pps, line_rate_gbps=line_rate_gbps,
                                 pfc_enabled=pfc_enabled, clock_us=self.clock_us,
                                 cond=self.ingress_buffer.ready)
        self.ports: dict[int, Port] = {}
        self.stats: dict[str, int] = {"no_program": 0, "no_port": 0, "tm_drops": 0,
                                      "pfc_frames": 0, "packet_in": 0, "errors": 0}
        self._switch: Optional[V1ModelSwitch] = None
        self._generation = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ Device API
    def set_program(self, program: Optional[CompiledProgram]) -> None:
        """Run ``program`` from now on; packets queued for the old one are dropped."""
        with self.lock:
            self.program = program
            self._generation += 1
            self._switch = None if program is None else V1ModelSwitch(
                program, cpu_port=self.cpu_port, log=self.trace, clock=self.clock_us,
                priority_queues=self.priority_queues, on_digest=self.digest_event.set)
            dropped = self.tm.flush()
        if dropped:
            log.info("new program: %d queued packets dropped", dropped)

    def inject_cpu(self, frame: bytes) -> None:
        """A PacketOut: the frame enters ingress as if received on the CPU port."""
        if self.cpu_port is None:
            raise RuntimeError("the switch has no CPU port (--cpu-port)")
        self.ingress_buffer.put_many(self.cpu_port, (bytes(frame),))

    def switch_stats(self) -> dict[str, int]:
        """``stats`` plus the ingress buffer (``ingress_buffer_depth``, ``_capacity``,
        ``_high_water``, ``_full_waits``, ``_dropped``) and ``rx_dropped``: frames the
        kernel dropped at the ports while the buffer was full (sum over the ports)."""
        out = dict(self.stats)
        for key, value in self.ingress_buffer.stats().items():
            out[f"ingress_buffer_{key.removesuffix('_pkts')}"] = value
        out["rx_dropped"] = sum(p.status().get("rx_dropped", 0) for p in self.ports.values())
        return out

    def port_status(self) -> dict[int, Any]:
        """``{port: {"iface", "up", rx/tx counters…, "queues": per-priority stats}}``."""
        qstats = self.tm.queue_stats()
        return {no: {**p.status(), **qstats.get(no, {})} for no, p in sorted(self.ports.items())}

    # ------------------------------------------------------------------ ports
    def add_port(self, port: Port) -> None:
        """Attach a port (before or after :meth:`start`)."""
        if port.number in self.ports:
            raise ValueError(f"port {port.number} is already used by {self.ports[port.number].iface}")
        self.ports[port.number] = port
        self.tm.add_port(port.number)
        if self._threads:
            port.start(self.receive, self.receive_many, self.pull)

    def receive(self, port_no: int, frame: bytes) -> None:
        """A frame arrived on ``port_no`` (called by the port's receive thread)."""
        self.receive_many(port_no, (frame,))

    def receive_many(self, port_no: int, frames: Sequence[bytes]) -> None:
        """Frames that arrived on ``port_no``, in order: PFC frames go to the MAC, the
        rest into the ingress buffer, waiting while it is full (BMv2's back pressure)."""
        frames = self._mac(port_no, frames)
        if frames:
            self.ingress_buffer.put_many(port_no, frames)

    def pull(self, port: Port, block: bool) -> int:
        """Move the frames waiting at a pullable ``port`` into the ingress buffer: reserve
        room (``block``: wait for it, as a receive thread does; else only what is free
        now), read at most that many under the port's ``rx_lock`` and commit them. A
        port is read only when there is room: frames left unread wait in the kernel,
        which drops (``rx_dropped``) when its ring is full. Returns frames moved."""
        buf = self.ingress_buffer
        granted = buf.reserve(RX_BATCH, timeout_s=None if block else 0)
        if not granted:
            return 0
        frames: Sequence[bytes] = ()
        try:
            if port.rx_lock.acquire(blocking=block):
                try:
                    frames = self._mac(port.number, port.read_frames(granted))
                finally:
                    port.rx_lock.release()
        finally:
            buf.commit(port.number, frames, granted)
        return len(frames)

    def _mac(self, port_no: int, frames: Sequence[bytes]) -> Sequence[bytes]:
        """The frames the MAC passes on (PFC frames consumed when PFC is on)."""
        if any(f[:6] == PFC_DST for f in frames) and self.tm.pfc_enabled(port_no):
            return [f for f in frames if not self._pfc_consumed(port_no, f)]
        return frames

    def _pfc_consumed(self, port_no: int, frame: bytes) -> bool:
        """Apply a PFC frame to the egress queues; True when the MAC consumes it."""
        if frame[:6] != PFC_DST:
            return False
        pauses = parse_pfc(frame)
        if pauses is None:
            return False
        self.stats["pfc_frames"] += 1
        self.tm.pause(port_no, pauses)
        if self.trace is not None:
            self.trace(f"[PFC] port {port_no}: pause {pauses} (quanta per priority)")
        return not self.pfc_passthrough

    # ------------------------------------------------------------------ threads
    def start(self) -> None:
        """Start the pipeline worker and every port's receive thread."""
        if self._threads:
            return
        self._threads = [threading.Thread(target=self._worker_loop, name="pipeline",
                                          daemon=True)]
        for t in self._threads:
            t.start()
        for port in self.ports.values():
            port.start(self.receive, self.receive_many, self.pull)

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop every thread, close the ports and their captures."""
        self._stop.set()
        self.tm.close()
        self.ingress_buffer.close()
        for port in self.ports.values():
            port.request_stop()
        for port in self.ports.values():
            port.close(timeout_s)
        for t in self._threads:
            t.join(timeout_s)
        for port in self.ports.values():
            if port.capture is not None:
                port.capture.close()

    def _next_work(self) -> tuple[Optional[Dequeued], Optional[tuple[int, bytes]]]:
        """A packet that may leave now, else a received frame, else wait (bounded) on the
        condition shared by the ingress buffer and the traffic manager."""
        buf, tm = self.ingress_buffer, self.tm
        with buf.lock:                        # the lock of buf.ready (and of the TM)
            got, wake_us = tm.poll_wake()
            if got is not None:
                return got, None
            item = buf.pop_nowait()
            if item is not None:
                return None, item
        if self._pull_ports():
            return None, None
        with buf.lock:                        # look again before sleeping
            got, wake_us = tm.poll_wake()
            if got is not None:
                return got, None
            item = buf.pop_nowait()
            if item is not None:
                return None, item
            wait = _POLL_S
            if wake_us is not None:
                wait = min(wait, max(_MIN_WAIT_S, (wake_us - self.clock_us()) / 1e6))
            buf.ready.wait(wait)
        return None, None

    def _pull_ports(self) -> int:
        """The buffer is empty: read the pullable ports from the worker itself (a
        receive thread woken for it might wait long for a CPU on a busy machine)."""
        moved = 0
        for port in list(self.ports.values()):
            if port.pullable and port.rx_pending():
                try:
                    moved += self.pull(port, block=False)
                except Exception:
                    self.stats["errors"] += 1
                    log.exception("port %d: error reading received frames", port.number)
        return moved

    def _worker_loop(self) -> None:
        while not self._stop.is_set():
            got, item = self._next_work()
            try:
                if got is not None:
                    self._egress_one(got.item, QueueMeta(got.enq_timestamp, got.enq_qdepth,
                                                         got.deq_qdepth))
                elif item is not None:
                    self._ingress_one(*item)
            except Exception:
                self.stats["errors"] += 1
                log.exception("%s: unexpected error (packet dropped)",
                              "egress" if got is not None else "ingress")

    def _ingress_one(self, port_no: int, frame: bytes) -> None:
        with self.lock:
            sw, gen = self._switch, self._generation
            if sw is None:
                self.stats["no_program"] += 1
                return
            work = sw.run_ingress(port_no, frame)
        self._enqueue(work, gen)

    def _enqueue(self, work: list[EgressWork], gen: int) -> None:
        for item in work:
            depth = self.tm.enqueue(item.port, item.priority, (gen, item), notify=False)
            if depth is None:
                self.stats["tm_drops"] += 1
            if self.trace is not None:
                what = (f"Egress queue full, dropping packet (port {item.port}, priority "
                        f"{item.priority})" if depth is None else
                        f"Enqueuing packet in egress queue port {item.port} priority "
                        f"{item.priority} (depth {depth})")
                self.trace(f"[{item.packet_id}.{item.copy_id}] [cxt 0] {what}")

    def _egress_one(self, tagged: tuple[int, EgressWork], qmeta: QueueMeta) -> None:
        gen, item = tagged
        with self.lock:
            sw = self._switch
            if sw is None or gen != self._generation:
                return
            result = sw.run_egress(item, qmeta)
        self._enqueue(result.work, gen)
        for port_no, frame in result.frames:
            self.transmit(port_no, frame)

    def transmit(self, port_no: int, frame: bytes) -> None:
        """Send a frame out of ``port_no`` (the CPU port means PacketIn)."""
        if port_no == self.cpu_port and port_no not in self.ports:
            cb = self.on_packet_in
            if cb is None:
                self.stats["no_port"] += 1
                return
            self.stats["packet_in"] += 1
            try:
                cb(frame)
            except Exception:
                self.stats["errors"] += 1
                log.exception("packet-in handler failed")
            return
        port = self.ports.get(port_no)
        if port is None:
            self.stats["no_port"] += 1
            return
        port.send(frame)
