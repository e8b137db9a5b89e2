"""The switch's control API, server side: :class:`ControlServer` answers the JSON-lines
protocol of :mod:`p4sim.control_api` (the public client and the protocol's description) —
BMv2's ``set_queue_depth`` / ``set_queue_rate`` and register commands and p4sim's additions
(line rate, PFC on/off, port counters, queue stats) — reachable only by the switch's owner
by default.

Where it listens, and who may use it:

* **by default, a Unix socket** ``p4sim-control-<gRPC port>.sock`` in a directory only the
  switch's user may enter (``$XDG_RUNTIME_DIR`` when it is private, else
  ``/tmp/p4sim-<uid>/``, created 0700 and refused when it is someone else's or not
  private), itself 0600 from its creation; ``--control-socket PATH`` picks the path. Every
  connection is checked with the kernel's peer credentials (``SO_PEERCRED``): only a
  process of the switch's own user *and in the switch's own network namespace* is served
  — a Mininet host runs as root and shares the file system, but not the namespace — others
  get one JSON refusal line and the connection closes (logged);
* **with ``--control-port N``**, TCP on 127.0.0.1 (0 = any free port): any process of any
  user in the switch's network namespace may use it, as BMv2's Thrift runtime port (no
  authentication).

The switch prints ``p4sim switch control: ADDR`` (``unix:/path`` or ``127.0.0.1:PORT``)
before its ready line; :class:`~p4sim.control_api.ControlClient` takes either.

Command line (argument order as BMv2's runtime_CLI; ADDR as the switch printed it)::

    python -m p4sim ctl ADDR set_queue_rate RATE_PPS [PORT [PRIORITY]]
    python -m p4sim ctl ADDR set_queue_depth DEPTH_PKTS [PORT [PRIORITY]]
    python -m p4sim ctl ADDR set_line_rate GBPS [PORT]
    python -m p4sim ctl ADDR set_pfc on|off [PORT]
    python -m p4sim ctl ADDR queue_stats [PORT]

"""
from __future__ import annotations

import json
import logging
import os
import socket
import socketserver
import stat
import struct
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from p4sim.control_api import ControlClient, ControlError
from p4sim.switchd.pfc import DEFAULT_ACTION, PfcWatchdog
from p4sim.runtime.errors import RuntimeStateError

log = logging.getLogger("p4sim.switchd.control")


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
            "set_pfc_watchdog": self.set_pfc_watchdog,
            "pfc_watchdog": self.pfc_watchdog,
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

    def set_pfc_watchdog(self, detection_ms: Optional[float] = None,
                         restoration_ms: Optional[float] = None,
                         action: str = DEFAULT_ACTION) -> Optional[dict[str, Any]]:
        """Start (or, ``detection_ms`` None, stop) the PFC watchdog; the settings in force."""
        wd = None if detection_ms is None else PfcWatchdog.from_ms(detection_ms, restoration_ms, action)
        self.device.tm.set_pfc_watchdog(wd)
        return None if wd is None else wd.as_ms()

    def pfc_watchdog(self) -> Optional[dict[str, Any]]:
        """The PFC watchdog's settings (None: off)."""
        wd = self.device.tm.pfc_watchdog()
        return None if wd is None else wd.as_ms()

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


_CLI_ARGS: dict[str, tuple[tuple[str, Callable[[str], Any]], ...]] = {
    "ping": (),
    "set_queue_depth": (("depth_pkts", int), ("port", int), ("priority", int)),
    "set_queue_rate": (("rate_pps", float), ("port", int), ("priority", int)),
    "set_line_rate": (("gbps", float), ("port", int)),
    "set_pfc": (("enabled", lambda s: s.lower() in ("on", "1", "true", "yes")), ("port", int)),
    "set_pfc_passthrough": (("enabled", lambda s: s.lower() in ("on", "1", "true", "yes")),),
    "set_pfc_watchdog": (("detection_ms", float), ("restoration_ms", float), ("action", str)),
    "pfc_watchdog": (),
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

    spec = _CLI_ARGS.get(command)
    if spec is None:
        print(f"unknown command {command!r}; known: {', '.join(_CLI_ARGS)}", file=sys.stderr)
        return 2
    needed = 1 if spec and command not in ("port_counters", "queue_stats", "set_pfc_watchdog") else 0
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


# the client's names are p4sim.control_api's, kept here for p4sim's own users
__all__ = ["ControlClient", "ControlError", "ControlServer", "ControlService", "ctl_main",
           "default_socket_path", "private_dir"]
