"""The switch's control API, server side: :class:`ControlServer` answers the JSON-lines
protocol of :mod:`p4sim.control_api` (the public client and the protocol's description)
on 127.0.0.1 — BMv2's ``set_queue_depth`` / ``set_queue_rate`` and register commands and
p4sim's additions (line rate, PFC on/off, port counters, queue stats).

Default port: the gRPC port + 1000 (9559 → 10559), ``--control-port N`` to choose
(0 = any free port); the switch prints ``p4sim switch control: 127.0.0.1:PORT`` before its
ready line.

Command line (argument order as BMv2's runtime_CLI)::

    python -m p4sim ctl 127.0.0.1:10559 set_queue_rate RATE_PPS [PORT [PRIORITY]]
    python -m p4sim ctl 127.0.0.1:10559 set_queue_depth DEPTH_PKTS [PORT [PRIORITY]]
    python -m p4sim ctl 127.0.0.1:10559 set_line_rate GBPS [PORT]
    python -m p4sim ctl 127.0.0.1:10559 set_pfc on|off [PORT]
    python -m p4sim ctl 127.0.0.1:10559 queue_stats [PORT]
"""
from __future__ import annotations

import json
import logging
import socketserver
import sys
import threading
from typing import Any, Callable, Optional, Sequence

from p4sim.control_api import CONTROL_PORT_OFFSET, ControlClient, ControlError
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


class ControlServer:
    """The TCP listener (127.0.0.1 by default). ``port`` 0 picks a free port; the bound
    one is ``bound_port`` after :meth:`start`."""

    def __init__(self, device: Any, port: int, host: str = "127.0.0.1") -> None:
        self._server = _TCPServer((host, port), _Handler, bind_and_activate=True)
        self._server.service = ControlService(device)  # type: ignore[attr-defined]
        self.host = host
        self.bound_port: int = self._server.server_address[1]
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="control",
                                        kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(2.0)
        self._server.server_close()


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


# the client's names are p4sim.control_api's, kept here for p4sim's own users
__all__ = ["CONTROL_PORT_OFFSET", "ControlClient", "ControlError", "ControlServer", "ControlService",
           "ctl_main"]

