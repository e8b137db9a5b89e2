"""The control API of a running p4sim switch, client side: the public interface other
programs use (the testbed, the labs, fuzzing, benchmarks). What P4Runtime does not carry —
BMv2's ``set_queue_depth`` / ``set_queue_rate`` and register commands, and p4sim's additions
(line rate, PFC on/off, port counters, queue stats) — as JSON lines. This module imports
nothing else of p4sim; the server is :mod:`p4sim.switchd.control`.

Address: the switch prints ``p4sim switch control: ADDR`` before its ready line. By default
ADDR is ``unix:/path``, a Unix socket only the switch's own user in the switch's own network
namespace is served on (:mod:`p4sim.switchd.control` says where and how it checks);
``--control-port N`` makes it ``127.0.0.1:PORT``, TCP as BMv2's Thrift port (0 = any free
port).

Protocol: one JSON object per line each way. Request ``{"cmd": NAME, "args": {...}}``;
reply ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": MESSAGE}``. Commands
(``port``/``priority`` omitted = all ports / all priorities; with neither, the value is
also the default for ports created later):

=====================  =====================================================
``ping``               ``{"device_id", "ports": [numbers]}``
``set_queue_depth``    ``depth_pkts``, ``port``, ``priority``
``set_queue_rate``     ``rate_pps`` (0 = unlimited), ``port``, ``priority``
``set_line_rate``      ``gbps``, ``port`` (PFC quanta → time)
``set_pfc``            ``enabled`` (bool), ``port``
``set_pfc_passthrough````enabled``: PFC frames also go to the P4 parser
``set_pfc_watchdog``   ``detection_ms`` (100–5000; omitted: stop), ``restoration_ms``
                       (100–60000, default 2 × detection), ``action`` (``drop`` |
                       ``forward``): SONiC's pfcwd; its counters are in queue_stats
                       (``pfcwd_storm``, ``pfcwd_storms``, ``pfcwd_restored``,
                       ``pfcwd_dropped`` per port and priority)
``pfc_watchdog``       its settings (``null``: off)
``port_counters``      ``port``: ``{port: {"iface", "up", rx/tx counters, queues}}``
``queue_stats``        ``port``: ``{port: {"depth", "queues": [per priority]}}``
``switch_stats``       drops without program / port / queue room, PFC frames,
                       the ingress buffer (depth, capacity, high water, full
                       waits) and ``rx_dropped`` (frames the kernel dropped at
                       the ports while the ingress buffer was full), …
``register_read``      ``name``, ``index``: one cell (BMv2's runtime ``register_read``)
``register_write``     ``name``, ``index``, ``value`` (``register_write``)
``register_reset``     ``name``: every cell 0 (``register_reset``)
=====================  =====================================================

The register commands are those of BMv2's Thrift runtime (``simple_switch_CLI``): P4Runtime
on BMv2 has no register reads or writes, so tests and tools that must look inside a
data-plane register use the target's own runtime, on either target.

:class:`ControlClient` is the one way in: ``ControlClient(addr, timeout_s)``, one method per
command, :class:`ControlError` when the switch refuses, ``OSError`` when it cannot be
reached. Its signatures stay as they are whatever carries the lines.

Example::

    >>> c = ControlClient("127.0.0.1:10559")            # doctest: +SKIP
    >>> c.set_queue_rate(100, port=2); c.queue_stats(2)[2]["queues"][0]["rate_pps"]  # doctest: +SKIP
    100.0
    >>> split_addr("127.0.0.1:10559")
    ('127.0.0.1', 10559)
"""
from __future__ import annotations

import json
import socket
import threading
from typing import Any, Optional

class ControlError(RuntimeError):
    """The switch refused a control command (the message says why)."""


def _int_keys(d: dict[str, Any]) -> dict[int, Any]:
    return {int(k): v for k, v in d.items()}


def split_addr(addr: str | tuple[str, int]) -> tuple[str, int]:
    if isinstance(addr, tuple):
        return addr
    host, _, port = addr.rpartition(":")
    return (host or "127.0.0.1").strip("[]"), int(port)


def connect(addr: str | tuple[str, int], timeout_s: float) -> socket.socket:
    """A connected socket to ``unix:/path`` or ``HOST:PORT``; OSError when nobody answers."""
    if isinstance(addr, str) and addr.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout_s)
        try:
            sock.connect(addr[len("unix:"):])
        except OSError:
            sock.close()
            raise
        return sock
    return socket.create_connection(split_addr(addr), timeout=timeout_s)


class ControlClient:
    """Client of the control API (one connection, thread safe).

    ``addr`` is ``unix:/path`` (the switch's default) or ``HOST:PORT``.

    Example::

        >>> with ControlClient("127.0.0.1:10559") as c:       # doctest: +SKIP
        ...     c.set_queue_depth(16, port=1)
        ...     c.set_pfc(False)
    """

    def __init__(self, addr: str | tuple[str, int], timeout_s: float = 5.0) -> None:
        self.addr = addr if isinstance(addr, str) and addr.startswith("unix:") else split_addr(addr)
        self._sock = connect(addr, timeout_s)
        self._file = self._sock.makefile("rb")
        self._lock = threading.Lock()

    def __enter__(self) -> "ControlClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()
        self._sock.close()

    def call(self, cmd: str, **args: Any) -> Any:
        """Send one command; returns its result or raises :class:`ControlError`."""
        args = {k: v for k, v in args.items() if v is not None}
        with self._lock:
            self._sock.sendall(json.dumps({"cmd": cmd, "args": args}).encode() + b"\n")
            line = self._file.readline()
        if not line:
            raise ControlError("connection closed by the switch")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise ControlError(reply.get("error", "unknown error"))
        return reply.get("result")

    def ping(self) -> dict[str, Any]:
        return self.call("ping")

    def set_queue_depth(self, depth_pkts: int, port: Optional[int] = None,
                        priority: Optional[int] = None) -> None:
        self.call("set_queue_depth", depth_pkts=depth_pkts, port=port, priority=priority)

    def set_queue_rate(self, rate_pps: float, port: Optional[int] = None,
                       priority: Optional[int] = None) -> None:
        self.call("set_queue_rate", rate_pps=rate_pps, port=port, priority=priority)

    def set_line_rate(self, gbps: float, port: Optional[int] = None) -> None:
        self.call("set_line_rate", gbps=gbps, port=port)

    def set_pfc(self, enabled: bool, port: Optional[int] = None) -> None:
        self.call("set_pfc", enabled=enabled, port=port)

    def set_pfc_passthrough(self, enabled: bool) -> None:
        self.call("set_pfc_passthrough", enabled=enabled)

    def set_pfc_watchdog(self, detection_ms: Optional[float], restoration_ms: Optional[float] = None,
                         action: str = "drop") -> Optional[dict[str, Any]]:
        """Start the PFC watchdog (``detection_ms`` None: stop it); returns the settings."""
        return self.call("set_pfc_watchdog", detection_ms=detection_ms,
                         restoration_ms=restoration_ms, action=action)

    def pfc_watchdog(self) -> Optional[dict[str, Any]]:
        """The PFC watchdog's settings (``detection_ms``, ``restoration_ms``, ``action``) or
        None when it is off."""
        return self.call("pfc_watchdog")

    def port_counters(self, port: Optional[int] = None) -> dict[int, Any]:
        return _int_keys(self.call("port_counters", port=port))

    def queue_stats(self, port: Optional[int] = None) -> dict[int, Any]:
        return _int_keys(self.call("queue_stats", port=port))

    def switch_stats(self) -> dict[str, int]:
        return self.call("switch_stats")

    def register_read(self, name: str, index: int) -> int:
        return int(self.call("register_read", name=name, index=index))

    def register_write(self, name: str, index: int, value: int) -> None:
        self.call("register_write", name=name, index=index, value=value)

    def register_reset(self, name: str) -> None:
        self.call("register_reset", name=name)


__all__ = ["ControlClient", "ControlError", "connect", "split_addr"]
