"""The switch's control API: BMv2's ``set_queue_depth`` / ``set_queue_rate`` and p4sim's
additions (line rate, PFC on/off, port counters, queue stats, register writes), as JSON
lines — reachable only by the switch's owner by default.

Where it listens, and who may use it:

* **by default, a Unix socket** ``p4sim-control-<gRPC port>.sock`` in a directory only the
  switch's user may enter (``$XDG_RUNTIME_DIR`` when it is private, else
  ``/tmp/p4sim-<uid>/``, created 0700 and refused when it is someone else's or not
  private), itself 0600 from its creation; ``--control-socket PATH`` picks the path. Every
  connection is checked with the kernel's peer credentials (``SO_PEERCRED``): only a
  process of the switch's own user *and in the switch's own network namespace* is served
  — a Mininet host runs as root and shares the file system, but not the namespace — others
  get one JSON refusal line and the connection closes (logged);
* **with ``--control-port N``**, TCP on 127.0.0.1 as before (0 = any free port): any
  process of any user in the switch's network namespace may use it, as BMv2's Thrift
  runtime port (no authentication).

The switch prints ``p4sim switch control: ADDR`` (``unix:/path`` or ``127.0.0.1:PORT``)
before its ready line; :class:`ControlClient` takes either.

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

Command line (argument order as BMv2's runtime_CLI)::

    python -m p4sim ctl 127.0.0.1:10559 set_queue_rate RATE_PPS [PORT [PRIORITY]]
    python -m p4sim ctl 127.0.0.1:10559 set_queue_depth DEPTH_PKTS [PORT [PRIORITY]]
    python -m p4sim ctl 127.0.0.1:10559 set_line_rate GBPS [PORT]
    python -m p4sim ctl 127.0.0.1:10559 set_pfc on|off [PORT]
    python -m p4sim ctl 127.0.0.1:10559 queue_stats [PORT]

Example::

    >>> c = ControlClient("127.0.0.1:10559")            # doctest: +SKIP
    >>> c.set_queue_rate(100, port=2); c.queue_stats(2)[2]["queues"][0]["rate_pps"]  # doctest: +SKIP
    100.0
"""
from __future__ import annotations

import json
import logging
import os
import socket
import socketserver
import stat
import struct
import threading
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from p4sim.runtime.errors import RuntimeStateError

log = logging.getLogger("p4sim.switchd.control")


class ControlError(RuntimeError):
    """The switch refused a control command (the message says why)."""


def _int_keys(d: dict[str, Any]) -> dict[int, Any]:
    return {int(k): v for k, v in d.items()}


class ControlService:
    """Executes control commands against a :class:`~p4sim.switchd.device.SwitchDevice`."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self._commands: dict[str, Callable[..., Any]] = {
            "ping": self.ping,
            "set_queue_depth": lambda depth_pkts, port=None, priority=None:
                device.tm.set_queue_depth(int(depth_pkts), _opt_int(port), _opt_int(priority)),
            "set_queue_rate": lambda rate_pps, port=None, priority=None:
                device.tm.set_queue_rate(float(rate_pps), _opt_int(port), _opt_int(priority)),
            "set_line_rate": lambda gbps, port=None:
                device.tm.set_line_rate(float(gbps), _opt_int(port)),
            "set_pfc": lambda enabled, port=None: device.tm.set_pfc(bool(enabled), _opt_int(port)),
            "set_pfc_passthrough": self.set_pfc_passthrough,
            "port_counters": self.port_counters,
            "queue_stats": lambda port=None: device.tm.queue_stats(_opt_int(port)),
            "switch_stats": device.switch_stats,
            "register_read": lambda name, index: self._register(name).get(int(index)),
            "register_write": lambda name, index, value:
                self._register(name).set(int(index), int(value)),
            "register_reset": lambda name: self._register(name).reset(),
        }

    def _register(self, name: str) -> Any:
        """The register array ``name`` of the running program (its P4Info name)."""
        program = self.device.program
        if program is None:
            raise ValueError("no program is loaded")
        regs = program.state.registers
        reg = regs.get(name) or regs.get(name.lstrip("."))
        if reg is None:
            raise ValueError(f"no register {name!r}; the program has: {', '.join(sorted(regs))}")
        return reg

    def ping(self) -> dict[str, Any]:
        return {"device_id": self.device.device_id, "ports": sorted(self.device.ports)}

    def set_pfc_passthrough(self, enabled: bool) -> None:
        self.device.pfc_passthrough = bool(enabled)

    def port_counters(self, port: Optional[int] = None) -> dict[int, Any]:
        status = self.device.port_status()
        if port is None:
            return status
        if int(port) not in status:
            raise ValueError(f"no port {port}")
        return {int(port): status[int(port)]}

    def handle(self, line: bytes) -> dict[str, Any]:
        """One request line → the reply object (never raises)."""
        try:
            req = json.loads(line)
            if not isinstance(req, dict) or not isinstance(req.get("cmd"), str):
                raise ValueError('a request is {"cmd": NAME, "args": {...}}')
            fn = self._commands.get(req["cmd"])
            if fn is None:
                raise ValueError(f"unknown command {req['cmd']!r}; known: {sorted(self._commands)}")
            args = req.get("args") or {}
            if not isinstance(args, dict):
                raise ValueError("args must be an object")
            return {"ok": True, "result": fn(**args)}
        except (ValueError, TypeError, KeyError, RuntimeStateError) as exc:
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # a bug must not kill the control thread
            log.exception("control command failed")
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def _opt_int(v: Any) -> Optional[int]:
    return None if v is None else int(v)


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        service: ControlService = self.server.service  # type: ignore[attr-defined]
        for line in self.rfile:
            if not line.strip():
                continue
            reply = service.handle(line)
            self.wfile.write(json.dumps(reply).encode() + b"\n")
            self.wfile.flush()


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def _netns(pid: int) -> Optional[int]:
    """The inode of process ``pid``'s network namespace (None when it cannot be read)."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


class _UnixServer(socketserver.ThreadingUnixStreamServer):
    """Serves only peers of the switch's user in the switch's network namespace."""

    daemon_threads = True

    def verify_request(self, request: Any, client_address: Any) -> bool:
        pid, uid, _ = struct.unpack("3i", request.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                             struct.calcsize("3i")))
        why = ""
        if uid != os.geteuid():
            why = f"uid {uid} is not the switch's ({os.geteuid()})"
        elif _netns(pid) is None or _netns(pid) != _netns(os.getpid()):
            why = f"process {pid} is not in the switch's network namespace"
        if not why:
            return True
        self.refused += 1
        log.warning("control API: connection from pid %d refused: %s", pid, why)
        try:
            request.sendall(json.dumps({"ok": False, "error": f"refused: {why}"}).encode() + b"\n")
        except OSError:
            pass
        return False


def private_dir(uid: Optional[int] = None) -> Path:
    """The directory of the switch's default control socket: ``$XDG_RUNTIME_DIR`` when it
    is the user's and mode 0700, else ``/tmp/p4sim-<uid>`` (created 0700); OSError when that
    exists but is a symlink, someone else's or open to others."""
    uid = os.geteuid() if uid is None else uid
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        st = os.lstat(xdg) if os.path.exists(xdg) else None
        if st is not None and stat.S_ISDIR(st.st_mode) and st.st_uid == uid and st.st_mode & 0o077 == 0:
            return Path(xdg)
    d = Path("/tmp") / f"p4sim-{uid}"
    try:
        d.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        raise OSError(f"{d}: not a private directory of uid {uid} (mode {oct(st.st_mode & 0o777)}, "
                      f"owner {st.st_uid}): refusing to put the control socket there")
    return d


def default_socket_path(grpc_port: int) -> Path:
    """``p4sim-control-<gRPC port>.sock`` (``-pid<PID>`` without a fixed port) in
    :func:`private_dir`."""
    tag = str(grpc_port) if grpc_port > 0 else f"pid{os.getpid()}"
    return private_dir() / f"p4sim-control-{tag}.sock"


class ControlServer:
    """The listener: TCP on ``host``:``port`` (``port`` 0 picks a free port; the bound
    one is ``bound_port``), or with ``socket_path`` a Unix socket that serves only the
    switch's own user in its own network namespace (see the module docstring).
    :attr:`address` is what the switch prints (``unix:/path`` or ``HOST:PORT``)."""

    def __init__(self, device: Any, port: int = 0, host: str = "127.0.0.1",
                 socket_path: Optional[str | Path] = None) -> None:
        self.socket_path = Path(socket_path) if socket_path is not None else None
        self.host = host
        if self.socket_path is None:
            self._server: socketserver.BaseServer = _TCPServer((host, port), _Handler,
                                                               bind_and_activate=True)
            self.bound_port: int = self._server.server_address[1]  # type: ignore[index]
            self.address = f"{host}:{self.bound_port}"
        else:
            if self.socket_path.is_socket():
                self._unlink_stale(self.socket_path)
            old = os.umask(0o177)            # the socket is 0600 from its creation
            try:
                self._server = _UnixServer(str(self.socket_path), _Handler, bind_and_activate=True)
            finally:
                os.umask(old)
            self._server.refused = 0  # type: ignore[attr-defined]
            self.bound_port = 0
            self.address = f"unix:{self.socket_path}"
        self._server.service = ControlService(device)  # type: ignore[attr-defined]
        self._thread: Optional[threading.Thread] = None

    @staticmethod
    def _unlink_stale(path: Path) -> None:
        """Remove a socket file no switch answers on (left by a killed switch); OSError
        when one does (the path is in use)."""
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()
            return
        finally:
            probe.close()
        raise OSError(f"{path}: another switch's control socket is listening there")

    @property
    def refused(self) -> int:
        """Connections refused by the peer check (Unix socket only)."""
        return int(getattr(self._server, "refused", 0))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="control",
                                        kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(2.0)
        self._server.server_close()
        if self.socket_path is not None:
            self.socket_path.unlink(missing_ok=True)


def _split_addr(addr: str | tuple[str, int]) -> tuple[str, int]:
    if isinstance(addr, tuple):
        return addr
    host, _, port = addr.rpartition(":")
    return (host or "127.0.0.1").strip("[]"), int(port)


def _connect(addr: str | tuple[str, int], timeout_s: float) -> socket.socket:
    """A connection to ``unix:/path`` or ``HOST:PORT``."""
    if isinstance(addr, str) and addr.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout_s)
        try:
            sock.connect(addr[len("unix:"):])
        except OSError:
            sock.close()
            raise
        return sock
    return socket.create_connection(_split_addr(addr), timeout=timeout_s)


class ControlClient:
    """Client of the control API (one connection, thread safe).

    ``addr`` is ``unix:/path`` (the switch's default) or ``HOST:PORT``.

    Example::

        >>> with ControlClient("127.0.0.1:10559") as c:       # doctest: +SKIP
        ...     c.set_queue_depth(16, port=1)
        ...     c.set_pfc(False)
    """

    def __init__(self, addr: str | tuple[str, int], timeout_s: float = 5.0) -> None:
        self.addr = addr if isinstance(addr, str) and addr.startswith("unix:") else _split_addr(addr)
        self._sock = _connect(addr, timeout_s)
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


_CLI_ARGS: dict[str, tuple[tuple[str, Callable[[str], Any]], ...]] = {
    "ping": (),
    "set_queue_depth": (("depth_pkts", int), ("port", int), ("priority", int)),
    "set_queue_rate": (("rate_pps", float), ("port", int), ("priority", int)),
    "set_line_rate": (("gbps", float), ("port", int)),
    "set_pfc": (("enabled", lambda s: s.lower() in ("on", "1", "true", "yes")), ("port", int)),
    "set_pfc_passthrough": (("enabled", lambda s: s.lower() in ("on", "1", "true", "yes")),),
    "port_counters": (("port", int),),
    "queue_stats": (("port", int),),
    "switch_stats": (),
    "register_read": (("name", str), ("index", int)),
    "register_write": (("name", str), ("index", int), ("value", int)),
    "register_reset": (("name", str),),
}


def ctl_main(addr: str, command: str, words: Sequence[str]) -> int:
    """``python -m p4sim ctl ADDR COMMAND [ARGS…]``: prints the result as JSON; exit 0 on
    success, 1 when the switch refused, 2 on a usage or connection error."""
    import sys

    spec = _CLI_ARGS.get(command)
    if spec is None:
        print(f"unknown command {command!r}; known: {', '.join(_CLI_ARGS)}", file=sys.stderr)
        return 2
    needed = 1 if spec and command not in ("port_counters", "queue_stats") else 0
    if not needed <= len(words) <= len(spec):
        usage = " ".join(f"[{n}]" if i >= needed else n.upper() for i, (n, _) in enumerate(spec))
        print(f"usage: {command} {usage}", file=sys.stderr)
        return 2
    try:
        args = {name: conv(w) for (name, conv), w in zip(spec, words)}
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        with ControlClient(addr) as client:
            result = client.call(command, **args)
    except ControlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"error: cannot reach {addr}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1, sort_keys=True))
    return 0
