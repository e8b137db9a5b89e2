"""``SwitchDevice``: the running switch — ports, ingress buffer, the v1model pipeline in two
halves around the traffic manager, PFC at the port MAC — implementing
:class:`p4sim.device.Device` for the P4Runtime server.

Threads: one receive thread per port (see :mod:`.ports`) feeding the ingress buffer
(1024 frames, blocking, as BMv2's), one ingress thread running
:meth:`V1ModelSwitch.run_ingress` and enqueueing the resulting packets into the
:class:`~p4sim.switchd.tm.TrafficManager`, and one egress thread taking packets off the
queues when they may leave, running :meth:`V1ModelSwitch.run_egress` and transmitting.
Every pipeline pass holds ``device.lock`` (the server holds it around a Write batch).

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
import queue
import threading
import time
from typing import Any, Callable, Optional

from p4sim.device import PacketInFn
from p4sim.engine.program import CompiledProgram
from p4sim.switchd.pfc import PFC_DST, parse_pfc
from p4sim.switchd.ports import InProcessPort, Port
from p4sim.switchd.tm import DEFAULT_DEPTH_PKTS, DEFAULT_LINE_RATE_GBPS, TrafficManager
from p4sim.v1model.switch import EgressWork, QueueMeta, V1ModelSwitch

__all__ = ["SwitchDevice", "InProcessPort"]

INGRESS_BUFFER_PKTS = 1024
_POLL_S = 0.2

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
        self.tm = TrafficManager(priority_queues=priority_queues, depth_pkts=queue_depth_pkts,
                                 rate_pps=queue_rate_pps, line_rate_gbps=line_rate_gbps,
                                 pfc_enabled=pfc_enabled, clock_us=self.clock_us)
        self.ports: dict[int, Port] = {}
        self.stats: dict[str, int] = {"no_program": 0, "no_port": 0, "tm_drops": 0,
                                      "pfc_frames": 0, "packet_in": 0, "errors": 0}
        self._switch: Optional[V1ModelSwitch] = None
        self._generation = 0
        self._ingress: queue.Queue[tuple[int, bytes]] = queue.Queue(maxsize=ingress_buffer_pkts)
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
        self._buffer(self.cpu_port, bytes(frame))

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
            port.start(self.receive)

    def receive(self, port_no: int, frame: bytes) -> None:
        """A frame arrived on ``port_no`` (called by the port's receive thread)."""
        if frame[:6] == PFC_DST and self.tm.pfc_enabled(port_no):
            pauses = parse_pfc(frame)
            if pauses is not None:
                self.stats["pfc_frames"] += 1
                self.tm.pause(port_no, pauses)
                if self.trace is not None:
                    self.trace(f"[PFC] port {port_no}: pause {pauses} (quanta per priority)")
                if not self.pfc_passthrough:
                    return
        self._buffer(port_no, frame)

    def _buffer(self, port_no: int, frame: bytes) -> None:
        """Into the ingress buffer; blocks while it is full (BMv2)."""
        while not self._stop.is_set():
            try:
                self._ingress.put((port_no, frame), timeout=_POLL_S)
                return
            except queue.Full:
                continue

    # ------------------------------------------------------------------ threads
    def start(self) -> None:
        """Start the ingress and egress threads and every port's receive thread."""
        if self._threads:
            return
        self._threads = [threading.Thread(target=self._ingress_loop, name="ingress", daemon=True),
                         threading.Thread(target=self._egress_loop, name="egress", daemon=True)]
        for t in self._threads:
            t.start()
        for port in self.ports.values():
            port.start(self.receive)

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop every thread, close the ports and their captures."""
        self._stop.set()
        self.tm.close()
        for port in self.ports.values():
            port.request_stop()
        try:
            self._ingress.put_nowait((-1, b""))   # wake the ingress thread
        except queue.Full:
            pass
        for port in self.ports.values():
            port.close(timeout_s)
        for t in self._threads:
            t.join(timeout_s)
        for port in self.ports.values():
            if port.capture is not None:
                port.capture.close()

    def _ingress_loop(self) -> None:
        while not self._stop.is_set():
            try:
                port_no, frame = self._ingress.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            if self._stop.is_set():
                return
            try:
                self._ingress_one(port_no, frame)
            except Exception:
                self.stats["errors"] += 1
                log.exception("ingress: unexpected error (frame dropped)")

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
            depth = self.tm.enqueue(item.port, item.priority, (gen, item))
            if depth is None:
                self.stats["tm_drops"] += 1
            if self.trace is not None:
                what = (f"Egress queue full, dropping packet (port {item.port}, priority "
                        f"{item.priority})" if depth is None else
                        f"Enqueuing packet in egress queue port {item.port} priority "
                        f"{item.priority} (depth {depth})")
                self.trace(f"[{item.packet_id}.{item.copy_id}] [cxt 0] {what}")

    def _egress_loop(self) -> None:
        while not self._stop.is_set():
            got = self.tm.dequeue(timeout_s=_POLL_S)
            if got is None:
                continue
            try:
                self._egress_one(got.item, QueueMeta(got.enq_timestamp, got.enq_qdepth,
                                                     got.deq_qdepth))
            except Exception:
                self.stats["errors"] += 1
                log.exception("egress: unexpected error (packet dropped)")

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
