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

Engines (``engine``): ``python`` runs the program on the Python engine and the Python
ports, buffer, traffic manager and worker above. ``auto`` / ``native``
(:func:`p4sim.native.make_switch`) run the program's native code where it has one; and
when every port is an AF_PACKET socket and there is no per-packet trace, the ports,
ingress buffer, traffic manager and worker run in C too (:mod:`.fastpath`: ``recvmmsg``/
``sendmmsg``, one thread per direction, the same queueing, PFC, queue metadata and pcap
captures), with
``device.lock`` holding the C pipeline. ``data_plane`` says which runs.

Example::

    >>> dev = SwitchDevice(device_id=0)
    >>> p1, p2 = InProcessPort(1), InProcessPort(2)
    >>> dev.add_port(p1); dev.add_port(p2); dev.start()
    >>> dev.set_program(load_program("fwd.p4"))        # doctest: +SKIP
    >>> p1.inject(frame); p2.take(1.0)                  # doctest: +SKIP
    >>> dev.stop()
"""
from __future__ import annotations

import ctypes
import logging
import math
import threading
import time
from typing import Any, Callable, Optional, Sequence

from p4sim.device import PacketInFn
from p4sim.engine.program import CompiledProgram
from p4sim.native import make_switch
from p4sim.native.switch import NativeSwitch
from p4sim.switchd.fastpath import (_PACKET_IN, NativeTM, PipelineLock, PythonPipe, dataplane_lib,
                                   native_pipe)
from p4sim.switchd.ingress import DEFAULT_CAPACITY_PKTS, IngressBuffer
from p4sim.switchd.pfc import PFC_DST, parse_pfc
from p4sim.switchd.ports import RX_BATCH, InProcessPort, Port, RawSocketPort
from p4sim.switchd.tm import DEFAULT_DEPTH_PKTS, DEFAULT_LINE_RATE_GBPS, Dequeued, TrafficManager
from p4sim.v1model.switch import EgressWork, QueueMeta, V1ModelSwitch

__all__ = ["SwitchDevice", "InProcessPort"]

INGRESS_BUFFER_PKTS = DEFAULT_CAPACITY_PKTS
_POLL_S = 0.2
SUPERVISE_ROUND_S = 1.0
"""The native data plane's port supervisor: MTUs read again and the lock taken once per round."""
_REOPEN_POLL_S = 0.1
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
                 ingress_buffer_pkts: int = INGRESS_BUFFER_PKTS, engine: str = "python") -> None:
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.engine = engine
        self.lock = PipelineLock()
        self.program: Optional[CompiledProgram] = None
        self.on_packet_in: Optional[PacketInFn] = None
        self.digest_event = threading.Event()
        self.priority_queues = priority_queues
        self._pfc_passthrough = pfc_passthrough
        self.trace = trace
        start = time.monotonic_ns()
        self.clock_start_ns = start
        self.clock_us: Callable[[], int] = lambda: (time.monotonic_ns() - start) // 1000
        #: ``clock_us() * 1000`` in one call (the P4Runtime server stamps each inserted entry)
        self.clock_ns: Callable[[], int] = lambda: (time.monotonic_ns() - start) // 1000 * 1000
        self._settings = dict(depth=queue_depth_pkts, rate=queue_rate_pps, line=line_rate_gbps,
                              pfc=pfc_enabled, ingress=ingress_buffer_pkts)
        self._dp: Optional[int] = None          # the native data plane while it runs
        self._pipe: Any = None
        self.data_plane = "python"
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
    @property
    def pfc_passthrough(self) -> bool:
        """PFC frames also go to the P4 parser (the MAC consumes them when False)."""
        return self._pfc_passthrough

    @pfc_passthrough.setter
    def pfc_passthrough(self, value: bool) -> None:
        self._pfc_passthrough = bool(value)
        if self._dp is not None:
            dataplane_lib().dp_set_passthrough(self._dp, int(bool(value)))

    def _make_switch(self, program: Optional[CompiledProgram]) -> Any:
        if program is None:
            return None
        kwargs = dict(cpu_port=self.cpu_port, log=self.trace, clock=self.clock_us,
                      priority_queues=self.priority_queues, on_digest=self._digest_waker(program))
        if self.engine == "python":
            return V1ModelSwitch(program, **kwargs)
        return make_switch(program, engine=self.engine, clock_start_ns=self.clock_start_ns, **kwargs)

    def _digest_waker(self, program: CompiledProgram) -> Callable[[], None]:
        """The switch's ``on_digest``: wakes the P4Runtime server's digest streamer when
        the program's digest queue says a digest has what the streamer waits for
        (:meth:`~p4sim.runtime.digest.DigestQueue.take_due`), not after every value."""
        queue, event = program.state.digests, self.digest_event

        def on_digest() -> None:
            if queue.take_due():
                event.set()
        return on_digest

    def set_program(self, program: Optional[CompiledProgram]) -> None:
        """Run ``program`` from now on; packets queued for the old one are dropped."""
        switch = self._make_switch(program)
        with self.lock:
            self.program = program
            self._generation += 1
            self._switch = switch
            if self._dp is not None:
                dropped = self._attach_pipe()
            else:
                dropped = self.tm.flush()
        if dropped:
            log.info("new program: %d queued packets dropped", dropped)
        if program is not None:
            log.info("program %s on the %s engine", getattr(program, "path", "?"),
                     getattr(switch, "engine", "python"))

    def _attach_pipe(self) -> int:
        """Give the native data plane the current switch's pipeline (call holding the
        pipeline, or before it starts); returns the queued packets dropped."""
        sw = self._switch
        if sw is None:
            self._pipe = None
        elif isinstance(sw, NativeSwitch):
            self._pipe = native_pipe(sw)
        else:
            self._pipe_owner = PythonPipe(sw)
            self._pipe = self._pipe_owner.struct()
        pipe = None if self._pipe is None else ctypes.byref(self._pipe)
        return int(dataplane_lib().dp_set_pipe(self._dp, pipe))

    def inject_cpu(self, frame: bytes) -> None:
        """A PacketOut: the frame enters ingress as if received on the CPU port."""
        if self.cpu_port is None:
            raise RuntimeError("the switch has no CPU port (--cpu-port)")
        if self._dp is not None:
            frame = bytes(frame)
            dataplane_lib().dp_inject(self._dp, self.cpu_port, frame, len(frame))
            return
        self.ingress_buffer.put_many(self.cpu_port, (bytes(frame),))

    def switch_stats(self) -> dict[str, int]:
        """``stats`` plus the ingress buffer (``ingress_buffer_depth``, ``_capacity``,
        ``_high_water``, ``_full_waits``, ``_dropped``) and ``rx_dropped``: frames the
        kernel dropped at the ports while the buffer was full (sum over the ports);
        ``native_data_plane`` / ``native_program`` (1 or 0): what runs (see the module
        docstring)."""
        if self._dp is not None:
            return self._native_switch_stats()
        out = dict(self.stats)
        out["native_data_plane"] = 0
        out["native_program"] = int(isinstance(self._switch, NativeSwitch))
        for key, value in self.ingress_buffer.stats().items():
            out[f"ingress_buffer_{key.removesuffix('_pkts')}"] = value
        out["rx_dropped"] = sum(p.status().get("rx_dropped", 0) for p in self.ports.values())
        return out

    def _native_switch_stats(self) -> dict[str, int]:
        v = (ctypes.c_int64 * 19)()
        dataplane_lib().dp_switch_stats(self._dp, v)
        out = dict(self.stats)
        for i, key in enumerate(("no_program", "no_port", "tm_drops", "pfc_frames", "packet_in")):
            out[key] = int(v[i])
        out["errors"] = self.stats["errors"] + (len(self._switch.stats.errors) if self._switch is not None else 0)
        for i, key in enumerate(("capacity", "depth", "enqueued", "dequeued", "dropped", "full_waits",
                                 "high_water")):
            out[f"ingress_buffer_{key}"] = int(v[6 + i])
        out["ingress_buffer_reserved"] = 0
        # how the frames crossed the data plane's threads (dataplane.c): batches the rx
        # thread ran itself (the worker idle), sends made without the tx thread, the tx
        # thread's wake-ups that found frames, the worker's waits that ended and those
        # after which it found nothing to do (a wake-up for nothing)
        for i, key in enumerate(("dp_rx_batches", "dp_inline_sends", "dp_tx_wakeups", "dp_wk_wakeups",
                                 "dp_wk_empty_wakeups")):
            out[key] = int(v[14 + i])
        out["native_data_plane"] = 1
        out["native_program"] = int(isinstance(self._switch, NativeSwitch))
        out["rx_dropped"] = sum(p.status().get("rx_dropped", 0) for p in self.ports.values())
        return out

    def port_status(self) -> dict[int, Any]:
        """``{port: {"iface", "up", rx/tx counters…, "queues": per-priority stats}}``."""
        qstats = self.tm.queue_stats()
        return {no: {**self._port_status(p), **qstats.get(no, {})} for no, p in sorted(self.ports.items())}

    def _port_status(self, port: Port) -> dict[str, Any]:
        status = port.status()
        if self._dp is not None:
            c = (ctypes.c_int64 * 11)()
            dataplane_lib().dp_port_counters(self._dp, port.number, c)
            for i, key in enumerate(("rx_frames", "rx_bytes", "tx_frames", "tx_bytes", "tx_errors", "rx_errors")):
                status[key] = int(c[i])
            status["rx_oversize"] = int(c[10])
            status["rx_dropped"] = status.get("rx_dropped", 0) + int(c[7])   # cut frames skipped
            status["rx_ring_holes"] = int(c[8])
        return status

    # ------------------------------------------------------------------ ports
    def add_port(self, port: Port) -> None:
        """Attach a port (before or after :meth:`start`)."""
        if port.number in self.ports:
            raise ValueError(f"port {port.number} is already used by {self.ports[port.number].iface}")
        self.ports[port.number] = port
        self.tm.add_port(port.number)
        if self._dp is not None:
            self._dp_add_port(port)
        elif self._threads:
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
        """Start the data plane: the native one (see the module docstring) when it can
        run, else the pipeline worker and every port's receive thread."""
        if self._threads or self._dp is not None:
            return
        why = self._native_data_plane_refused()
        if why is None:
            try:
                self._start_native()
                return
            except Exception as exc:  # no compiler, a build error: the Python data plane
                why = f"{type(exc).__name__}: {exc}"
        if self.engine != "python":
            log.info("data plane: Python ports and queues (%s)", why)
        self._threads = [threading.Thread(target=self._worker_loop, name="pipeline",
                                          daemon=True)]
        for t in self._threads:
            t.start()
        for port in self.ports.values():
            port.start(self.receive, self.receive_many, self.pull)

    def _native_data_plane_refused(self) -> Optional[str]:
        if self.engine == "python":
            return "engine python"
        if self.trace is not None:
            return "a per-packet trace is on"
        for port in self.ports.values():
            if not isinstance(port, RawSocketPort):
                return f"port {port.number} is not an AF_PACKET port"
        return None

    def _start_native(self) -> None:
        lib = dataplane_lib()
        st = self._settings
        dp = lib.dp_new(self.priority_queues, st["depth"], float(st["rate"]), float(st["line"]),
                        int(bool(st["pfc"])), int(self._pfc_passthrough), st["ingress"],
                        self.clock_start_ns, -1 if self.cpu_port is None else self.cpu_port)
        if not dp:
            raise MemoryError("dp_new failed")
        self._dp = dp
        self._packet_in_cb = fastpath_packet_in(self)
        lib.dp_set_packet_in(dp, self._packet_in_cb)
        self._python_tm, self.tm = self.tm, NativeTM(dp, self.priority_queues)
        self.tm.set_pfc_watchdog(self._python_tm.pfc_watchdog())
        for port in self.ports.values():
            self._dp_add_port(port)
        self._attach_pipe()
        self.lock.on_acquire = self._native_acquired
        self.lock.on_release = self._native_releasing
        self.lock.dp = dp
        lib.dp_start(dp)
        self.data_plane = "native"
        self._supervisor = threading.Thread(target=self._supervise, name="ports", daemon=True)
        self._supervisor.start()
        log.info("data plane: native (recvmmsg/sendmmsg, C queues); program on the %s engine",
                 getattr(self._switch, "engine", "python") if self._switch is not None else "-")

    def _dp_add_port(self, port: Port) -> None:
        assert isinstance(port, RawSocketPort)
        if port.use_ring or port._ring is not None:
            port.use_ring = False                # the C side reads the socket itself
            if port._sock is not None:
                try:
                    port.open()
                except OSError as exc:
                    log.warning("port %d (%s): %s; will retry", port.number, port.iface, exc)
        sock = port._sock
        lib = dataplane_lib()
        cap = port.capture
        if cap is not None:   # the C side appends records to pcap.py's files (header written)
            lib.dp_set_capture(self._dp, port.number, cap.inbound.fileno(), cap.outbound.fileno())
        lib.dp_set_max_frame(self._dp, port.number, port.max_frame)
        lib.dp_add_port(self._dp, port.number, sock.fileno() if sock is not None else -1)

    def _native_acquired(self) -> None:
        sw = self._switch
        if isinstance(sw, NativeSwitch):
            sw._after()

    def _native_releasing(self) -> None:
        sw = self._switch
        if isinstance(sw, NativeSwitch):
            sw._sync()

    def _supervise(self) -> None:
        """Reopen the sockets of the native data plane that failed (or never opened), with
        a backoff; every second, take the lock once (hit times and errors to Python).

        It sleeps in the data plane (``dp_wait_reopen``) until a socket fails, the data
        plane stops or the next retry or the one-second round is due, so an idle switch
        wakes it once a second rather than ten times (each wake-up of a Python thread
        cost ~0.1 ms of CPU: issue 32, i32-veth-s46)."""
        lib = dataplane_lib()
        buf = (ctypes.c_int * 512)()
        backoff: dict[int, tuple[float, float]] = {}
        last = time.monotonic()
        failed: set[int] = set()
        while not self._stop.is_set():
            now = time.monotonic()
            wait_s = SUPERVISE_ROUND_S - (now - last)
            pending = failed | {no for no, port in self.ports.items()
                                if isinstance(port, RawSocketPort) and port._sock is None}
            if pending:                       # a port to open again: as before, every 0.1 s
                wait_s = min(wait_s, _REOPEN_POLL_S)
                if wait_s > 0 and self._stop.wait(wait_s):
                    break
            elif wait_s > 0:
                lib.dp_wait_reopen(self._dp, max(1, math.ceil(wait_s * 1000)))
            if self._stop.is_set():
                break
            failed = {buf[i] for i in range(lib.dp_need_reopen(self._dp, buf, 512))}
            now = time.monotonic()
            for no, port in list(self.ports.items()):
                if not isinstance(port, RawSocketPort) or (no not in failed and port._sock is not None):
                    continue
                at, delay = backoff.get(no, (0.0, 0.05))
                if now < at:
                    continue
                try:
                    port.open()
                    port.counters.reopen += 1
                    lib.dp_set_max_frame(self._dp, no, port.max_frame)   # the MTU may have changed
                    lib.dp_set_fd(self._dp, no, port._sock.fileno())
                    backoff.pop(no, None)
                    log.info("port %d (%s): socket open", no, port.iface)
                except OSError as exc:
                    backoff[no] = (now + delay, min(delay * 2, 2.0))
                    log.warning("port %d (%s): cannot open (%s), retrying in %.2f s", no, port.iface, exc, delay)
            if now - last >= SUPERVISE_ROUND_S:
                last = now
                self._refresh_max_frames(lib)
                with self.lock:
                    pass

    def _refresh_max_frames(self, lib: Any) -> None:
        """Give the native data plane each open port's current MTU limit
        (:meth:`RawSocketPort.refresh_max_frame`): an MTU raised or lowered while the port
        is open counts within a second, as on the Python data plane (``oversize``)."""
        for no, port in list(self.ports.items()):
            if isinstance(port, RawSocketPort) and port._sock is not None and port.refresh_max_frame():
                lib.dp_set_max_frame(self._dp, no, port.max_frame)
                log.info("port %d (%s): largest frame now %d bytes (MTU changed)", no, port.iface,
                         port.max_frame)

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop every thread, close the ports and their captures."""
        self._stop.set()
        if self._dp is not None:
            lib = dataplane_lib()
            with self.lock:                   # no pass in flight from here on
                self.lock.dp = None
                self.lock.on_acquire = self.lock.on_release = None
                lib.dp_unlock(self._dp)       # taken when this `with` began
            lib.dp_stop(self._dp)
            sup = getattr(self, "_supervisor", None)
            if sup is not None:
                sup.join(timeout_s)
            lib.dp_free(self._dp)
            self._dp = None
            for port in self.ports.values():
                port.close(timeout_s)
                if isinstance(port, RawSocketPort):
                    port._drop_socket()
                if port.capture is not None:
                    port.capture.close()
            return
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


def fastpath_packet_in(device: SwitchDevice) -> Any:
    """The C data plane's packet-in callback: a frame sent to the CPU port."""

    def packet_in(data: int, length: int) -> None:
        cb = device.on_packet_in
        if cb is None:
            return
        try:
            cb(ctypes.string_at(data, length))
        except Exception:
            device.stats["errors"] += 1
            log.exception("packet-in handler failed")
    return _PACKET_IN(packet_in)
