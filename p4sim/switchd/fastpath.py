"""The switch process's native data plane (``p4sim/native/c/dataplane.c``): ports read
with ``recvmmsg`` and written with ``sendmmsg`` by one thread per direction, the ingress
buffer, the traffic manager and the pipeline worker in C, so that no Python runs per
packet when the program runs on the native path. :class:`~p4sim.switchd.device.
SwitchDevice` uses it when started with engine ``auto`` or ``native``, every port an
AF_PACKET socket, and no per-packet trace (pcap captures are written by the C threads);
otherwise the Python ports,
:mod:`.ingress` and :mod:`.tm` run as before.

Python keeps what is not per packet: the sockets (opened, reopened after an error,
``PACKET_STATISTICS`` for the kernel's drops), the control API (:class:`NativeTM` has
:class:`~p4sim.switchd.tm.TrafficManager`'s methods and answers), and the control plane's
exclusion: :class:`PipelineLock` (``device.lock``) holds the C pipeline mutex, flushes
the entries' hit times to Python when taken and copies changed tables into C when
released, so a P4Runtime Write is seen by the next packet and a Read sees every packet
before it, as with the Python worker. A program that cannot run natively runs on the
Python engine through callbacks from the C worker (the same I/O and queues, a Python
pipeline pass per packet).

Example::

    >>> lib = dataplane_lib()              # doctest: +SKIP
"""
from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any, Callable, Optional, Sequence

from p4sim.native.build import build
from p4sim.native.build import C_DIR as NATIVE_C_DIR
from p4sim.switchd.pfc import PfcWatchdog
from p4sim.switchd.tm import MAX_PRIORITY_QUEUES, _check_depth, _check_line_rate, _check_rate
from p4sim.v1model.switch import QueueMeta

log = logging.getLogger("p4sim.switchd.fastpath")
_vp = ctypes.c_void_p
_i64 = ctypes.c_int64
_PACKET_IN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, _i64)
#: dp_set_clock's callback: the data plane's clock in µs (tests drive the queues with it)
DP_CLOCK = ctypes.CFUNCTYPE(_i64)
_RUN_INGRESS = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _i64, _vp, _i64)
_RUN_EGRESS = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _vp, ctypes.c_int, _i64, _i64, _i64)
_WORK = ctypes.CFUNCTYPE(_vp, _vp, ctypes.c_int)
_NWORK = ctypes.CFUNCTYPE(ctypes.c_int, _vp)
_ITEM_INFO = ctypes.CFUNCTYPE(None, _vp, ctypes.POINTER(_i64))
_ITEM_FREE = ctypes.CFUNCTYPE(None, _vp, _vp)
_OUT = ctypes.CFUNCTYPE(_vp, _vp)


class DpPipe(ctypes.Structure):
    _fields_ = [("sw", _vp), ("run_ingress", _vp), ("run_egress", _vp), ("work", _vp), ("nwork", _vp),
                ("item_info", _vp), ("item_free", _vp), ("out", _vp), ("ingress_at", _vp), ("egress_at", _vp)]


_LIB: Optional[ctypes.CDLL] = None
_LIB_LOCK = threading.Lock()


def dataplane_lib() -> ctypes.CDLL:
    """The compiled data plane (built once per machine, cached like programs)."""
    global _LIB
    with _LIB_LOCK:
        if _LIB is None:
            so = build((NATIVE_C_DIR / "dataplane.c").read_text(), "dataplane")
            lib = ctypes.CDLL(str(so))
            d = ctypes.c_double
            ip = ctypes.POINTER(ctypes.c_int)
            lib.dp_new.restype = _vp
            lib.dp_new.argtypes = [ctypes.c_int, _i64, d, d, ctypes.c_int, ctypes.c_int, _i64, _i64, _i64]
            lib.dp_set_packet_in.argtypes = [_vp, _PACKET_IN]
            for name, args in (("dp_add_port", [_vp, ctypes.c_int, ctypes.c_int]), ("dp_touch_port", [_vp, ctypes.c_int]),
                               ("dp_set_capture", [_vp, ctypes.c_int, ctypes.c_int, ctypes.c_int]), ("dp_set_fd", [_vp, ctypes.c_int, ctypes.c_int]),
                               ("dp_set_max_frame", [_vp, ctypes.c_int, ctypes.c_int]),
                               ("dp_need_reopen", [_vp, ip, ctypes.c_int]), ("dp_wait_reopen", [_vp, ctypes.c_int]),
                               ("dp_port_down", [_vp, ctypes.c_int]),
                               ("dp_set_pipe", [_vp, ctypes.POINTER(DpPipe)]), ("dp_start", [_vp]), ("dp_stop", [_vp]),
                               ("dp_lock", [_vp]), ("dp_unlock", [_vp]), ("dp_inject", [_vp, _i64, ctypes.c_char_p, _i64]),
                               ("dp_set_queue", [_vp, ctypes.c_int, d, ctypes.c_int, ctypes.c_int]),
                               ("dp_set_line_rate", [_vp, d, ctypes.c_int]), ("dp_set_pfc", [_vp, ctypes.c_int, ctypes.c_int]),
                               ("dp_pfc_enabled", [_vp, ctypes.c_int]), ("dp_set_passthrough", [_vp, ctypes.c_int]),
                               ("dp_pause", [_vp, ctypes.c_int, ip]), ("dp_ports", [_vp, ip, ctypes.c_int]),
                               ("dp_set_pfc_watchdog", [_vp, d, d, ctypes.c_int]),
                               ("dp_set_clock", [_vp, DP_CLOCK]), ("dp_tm_enqueue", [_vp, ctypes.c_int, ctypes.c_int]),
                               ("dp_tm_poll", [_vp, ctypes.POINTER(_i64)]),
                               ("dp_queue_stats", [_vp, ctypes.c_int, ctypes.POINTER(d)]),
                               ("dp_port_counters", [_vp, ctypes.c_int, ctypes.POINTER(_i64)]),
                               ("dp_switch_stats", [_vp, ctypes.POINTER(_i64)]), ("dp_now_us", [_vp]), ("dp_free", [_vp])):
                getattr(lib, name).argtypes = args
            lib.dp_set_pipe.restype = _i64
            lib.dp_tm_enqueue.restype = _i64
            lib.dp_now_us.restype = _i64
            _LIB = lib
        return _LIB


class PipelineLock:
    """``device.lock``: a re-entrant lock that, while the native data plane runs, also
    holds its pipeline mutex (no packet is between two blocks while the control plane
    works), calls ``on_acquire`` when first taken and ``on_release`` before it is let go."""

    def __init__(self) -> None:
        self._rlock = threading.RLock()
        self._depth = 0
        self.dp: Optional[Any] = None
        self.on_acquire: Optional[Callable[[], None]] = None
        self.on_release: Optional[Callable[[], None]] = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._rlock.acquire(blocking, timeout):
            return False
        self._depth += 1
        if self._depth == 1 and self.dp is not None:
            dataplane_lib().dp_lock(self.dp)
            if self.on_acquire is not None:
                self.on_acquire()
        return True

    def release(self) -> None:
        if self._depth == 1 and self.dp is not None:
            try:
                if self.on_release is not None:
                    self.on_release()
            finally:
                dataplane_lib().dp_unlock(self.dp)
        self._depth -= 1
        self._rlock.release()

    __enter__ = acquire

    def __exit__(self, *exc: Any) -> None:
        self.release()


class NativeTM:
    """:class:`~p4sim.switchd.tm.TrafficManager`'s settings and statistics on the native
    data plane's queues (what ``device.tm`` is while it runs)."""

    def __init__(self, dp: Any, priority_queues: int) -> None:
        self._dp = dp
        self.priority_queues = priority_queues
        self._lib = dataplane_lib()
        self._watchdog: Optional[PfcWatchdog] = None

    def _prio(self, priority: Optional[int]) -> int:
        if priority is not None and not 0 <= priority < self.priority_queues:
            raise ValueError(f"priority {priority} out of range 0..{self.priority_queues - 1}")
        return -1 if priority is None else priority

    def add_port(self, port: int) -> None:
        self._lib.dp_touch_port(self._dp, port)

    def set_queue_depth(self, depth_pkts: int, port: Optional[int] = None, priority: Optional[int] = None) -> None:
        _check_depth(depth_pkts)
        self._lib.dp_set_queue(self._dp, 0, float(depth_pkts), -1 if port is None else port, self._prio(priority))

    def set_queue_rate(self, rate_pps: float, port: Optional[int] = None, priority: Optional[int] = None) -> None:
        _check_rate(rate_pps)
        self._lib.dp_set_queue(self._dp, 1, float(rate_pps), -1 if port is None else port, self._prio(priority))

    def set_line_rate(self, gbps: float, port: Optional[int] = None) -> None:
        _check_line_rate(gbps)
        self._lib.dp_set_line_rate(self._dp, float(gbps), -1 if port is None else port)

    def set_pfc(self, enabled: bool, port: Optional[int] = None) -> None:
        self._lib.dp_set_pfc(self._dp, int(bool(enabled)), -1 if port is None else port)

    def pfc_enabled(self, port: int) -> bool:
        return bool(self._lib.dp_pfc_enabled(self._dp, port))

    def set_pfc_watchdog(self, watchdog: Optional[PfcWatchdog]) -> None:
        self._watchdog = watchdog
        if watchdog is None:
            self._lib.dp_set_pfc_watchdog(self._dp, 0.0, 0.0, 0)
        else:
            self._lib.dp_set_pfc_watchdog(self._dp, watchdog.detection_us, watchdog.restoration_us,
                                          int(watchdog.action == "drop"))

    def pfc_watchdog(self) -> Optional[PfcWatchdog]:
        return self._watchdog

    def pause(self, port: int, pauses: dict[int, int]) -> bool:
        q = (ctypes.c_int * 8)(*([-1] * 8))
        for prio, quanta in pauses.items():
            if 0 <= prio < 8:
                q[prio] = int(quanta)
        return bool(self._lib.dp_pause(self._dp, port, q))

    def queue_stats(self, port: Optional[int] = None) -> dict[int, dict[str, Any]]:
        if port is None:
            buf = (ctypes.c_int * 512)()
            ports = sorted(buf[i] for i in range(self._lib.dp_ports(self._dp, buf, 512)))
        else:
            ports = [port]
        out: dict[int, dict[str, Any]] = {}
        st = (ctypes.c_double * (3 + 13 * MAX_PRIORITY_QUEUES))()
        for no in ports:
            n = self._lib.dp_queue_stats(self._dp, no, st)
            queues = []
            for i in range(n):
                o = st[3 + 13 * i: 16 + 13 * i]
                queues.append({"depth": int(o[0]), "depth_pkts": int(o[1]), "rate_pps": float(o[2]),
                               "paused": bool(o[3]), "pfcwd_storm": bool(o[9]),
                               "enqueued": int(o[4]), "dequeued": int(o[5]),
                               "dropped": int(o[6]), "paused_us": round(float(o[7]), 3),
                               "pause_frames": int(o[8]), "pfcwd_storms": int(o[10]),
                               "pfcwd_restored": int(o[11]), "pfcwd_dropped": int(o[12])})
            out[no] = {"line_rate_gbps": float(st[0]), "pfc_enabled": bool(st[1]), "depth": int(st[2]),
                       "queues": queues}
        return out

    def flush(self) -> int:
        return 0          # the data plane flushes when the pipeline changes (dp_set_pipe)

    def close(self) -> None:
        pass


class PythonPipe:
    """A program on the Python engine behind the native data plane: the C worker calls
    these (ctypes callbacks) for each pass; work items are kept here by handle."""

    def __init__(self, switch: Any) -> None:
        self.switch = switch
        self._items: dict[int, Any] = {}
        self._next = 1
        self._work: list[int] = []
        self._frames: list[tuple[int, bytes]] = []
        self._out = _OutArena()
        self.cbs = (_RUN_INGRESS(self._run_ingress), _RUN_EGRESS(self._run_egress), _WORK(self._work_at),
                    _NWORK(lambda _sw: len(self._work)), _ITEM_INFO(self._info), _ITEM_FREE(self._free),
                    _OUT(lambda _sw: ctypes.addressof(self._out.header)))

    def struct(self) -> DpPipe:
        return DpPipe(None, *(ctypes.cast(cb, _vp) for cb in self.cbs))

    def _keep(self, items: Sequence[Any]) -> None:
        self._work = []
        for it in items:
            h = self._next
            self._next += 1
            self._items[h] = it
            self._work.append(h)

    def _run_ingress(self, _sw: Any, port: int, data: int, length: int) -> int:
        try:
            self._keep(self.switch.run_ingress(port, ctypes.string_at(data, length)))
        except Exception:
            log.exception("ingress pass failed")
            self._work = []
        return len(self._work)

    def _run_egress(self, _sw: Any, item: int, qset: int, enq_ts: int, enq_qd: int, deq_qd: int) -> int:
        it = self._items.pop(item, None)
        frames: list[tuple[int, bytes]] = []
        self._work = []
        if it is not None:
            try:
                res = self.switch.run_egress(it, QueueMeta(enq_ts, enq_qd, deq_qd) if qset else None)
                frames = res.frames
                self._keep(res.work)
            except Exception:
                log.exception("egress pass failed")
        self._out.fill(frames)
        return len(frames)

    def _work_at(self, _sw: Any, i: int) -> int:
        return self._work[i]

    def _info(self, item: int, out: Any) -> None:
        it = self._items.get(item)
        vals = (it.port, it.priority, it.packet_id, it.copy_id, it.length_reg) if it is not None else (0, 0, 0, 0, 0)
        for i, v in enumerate(vals):
            out[i] = int(v)

    def _free(self, _sw: Any, item: int) -> None:
        self._items.pop(item, None)


class _OutHeader(ctypes.Structure):
    _fields_ = [("n", _i64), ("cap", _i64), ("port", ctypes.POINTER(_i64)), ("off", ctypes.POINTER(_i64)),
                ("len", ctypes.POINTER(_i64)), ("src", ctypes.POINTER(_i64)), ("buf", ctypes.c_char_p),
                ("used", _i64), ("bufcap", _i64)]


class _OutArena:
    """A p4nout (the C side's frame list) filled from Python."""

    def __init__(self) -> None:
        self.header = _OutHeader()
        self._keep: list[Any] = []

    def fill(self, frames: Sequence[tuple[int, bytes]]) -> None:
        n = len(frames)
        blob = b"".join(f for _, f in frames)
        offs, o = [], 0
        for _, f in frames:
            offs.append(o)
            o += len(f)
        arrs = [(_i64 * max(1, n))(*(p for p, _ in frames)), (_i64 * max(1, n))(*offs),
                (_i64 * max(1, n))(*(len(f) for _, f in frames)), (_i64 * max(1, n))()]
        buf = ctypes.create_string_buffer(blob, max(1, len(blob)))
        self._keep = arrs + [buf]
        h = self.header
        h.n, h.cap, h.used, h.bufcap = n, n, len(blob), len(blob)
        h.port, h.off, h.len, h.src = (ctypes.cast(a, ctypes.POINTER(_i64)) for a in arrs)
        h.buf = ctypes.cast(buf, ctypes.c_char_p)


def native_pipe(switch: Any) -> DpPipe:
    """The dp_pipe of a :class:`~p4sim.native.switch.NativeSwitch` (its exported C functions)."""
    lib = switch._lib
    addr = lambda name: ctypes.cast(getattr(lib, name), _vp).value  # noqa: E731
    return DpPipe(switch._sw, addr("p4n_run_ingress"), addr("p4n_run_egress"), addr("p4n_work"), addr("p4n_nwork"),
                  addr("p4n_item_info"), addr("p4n_item_free"), addr("p4n_out"),
                  addr("p4n_run_ingress_at"), addr("p4n_run_egress_at"))
