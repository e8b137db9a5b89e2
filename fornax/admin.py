"""The manager process's admin socket: JSON lines over a Unix socket (mode 0600: only its
owner, root on the testbed, may talk to it), for the scenario, an operator and the tests.

Request ``{"cmd": NAME, "args": {...}}``; reply ``{"ok": true, "result": ...}`` or
``{"ok": false, "error": MESSAGE}``. Commands:

===============  ==================================================================
``stats``        sessions, counters, CPU seconds, heartbeat RTT, hang state
``timeline``     events since index ``since`` (default 0): ``{"next": N, "events": []}``
``reload``       read the policy file again; the scopes it changed (or the file:line error)
``detail``       one session restored in full: ``key`` = [vni, proto, ip_lo, ip_hi, port_lo, port_hi]
``sessions``     up to ``limit`` session keys (default 20)
``corrupt``      test hook: corrupt one session's entry as a memory fault would (``key`` optional)
``pin``          ``port`` or ``vni`` to software forwarding (``on``: true/false)
===============  ==================================================================

Example::

    >>> AdminClient("/nonexistent.sock").call("stats")
    Traceback (most recent call last):
    ...
    fornax.admin.AdminError: /nonexistent.sock: cannot connect (No such file or directory)
"""
from __future__ import annotations

import itertools
import json
import os
import socket
import socketserver
import threading
from pathlib import Path
from typing import Any, Optional

from fornax.policy import PolicyError
from p4src.smartnic.model import SessionKey


class AdminError(RuntimeError):
    """The manager refused a command, or could not be reached."""


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        server: AdminServer = self.server  # type: ignore[assignment]
        for line in self.rfile:
            try:
                req = json.loads(line)
                if not isinstance(req, dict) or not isinstance(req.get("args") or {}, dict):
                    raise AdminError('a request is one JSON object {"cmd": NAME, "args": {...}} '
                                     "per line, args an object")
                result = server.run(req.get("cmd", ""), req.get("args") or {})
                reply = {"ok": True, "result": result}
            except (PolicyError, AdminError, KeyError, ValueError, TypeError) as exc:
                reply = {"ok": False, "error": str(exc)}
            self.wfile.write((json.dumps(reply) + "\n").encode())
            self.wfile.flush()


class AdminServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Serves ``manager`` (a :class:`fornax.manager.FornaxManager` or the baseline's) at
    ``path``."""

    daemon_threads = True

    def __init__(self, manager: Any, path: Path) -> None:
        self.manager = manager
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            self.path.unlink()
        old = os.umask(0o177)
        try:
            super().__init__(str(self.path), _Handler)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self.serve_forever, name="fornax-admin",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.path.unlink(missing_ok=True)

    def run(self, cmd: str, args: dict[str, Any]) -> Any:
        m = self.manager
        if cmd == "stats":
            return m.stats()
        if cmd == "timeline":
            since = int(args.get("since", 0))
            events = list(itertools.islice(m.timeline, since, None))
            return {"next": since + len(events), "events": events}
        if cmd == "reload":
            return m.reload()
        if cmd == "detail":
            return m.session_detail(SessionKey(*[int(v) for v in args["key"]]))
        if cmd == "sessions":
            keys = itertools.islice(m.store.keys(), int(args.get("limit", 20)))
            return [[k.vni, k.proto, k.ip_lo, k.ip_hi, k.port_lo, k.port_hi] for k in keys]
        if cmd == "corrupt":
            key = args.get("key")
            return m.inject_corruption(SessionKey(*[int(v) for v in key]) if key else None)
        if cmd == "pin":
            m.pin_to_software(port=args.get("port"), vni=args.get("vni"),
                              on=bool(args.get("on", True)))
            return True
        raise AdminError(f"unknown command {cmd!r}")


class AdminClient:
    """Talk to a manager's admin socket: ``AdminClient(path).call("stats")``."""

    def __init__(self, path: Path | str, timeout_s: float = 10.0) -> None:
        self.path, self.timeout_s = str(path), timeout_s

    def call(self, cmd: str, **args: Any) -> Any:
        """One command; its result, or AdminError with the manager's message."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(self.timeout_s)
                s.connect(self.path)
                s.sendall((json.dumps({"cmd": cmd, "args": args}) + "\n").encode())
                buf = b""
                while not buf.endswith(b"\n"):
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
        except OSError as exc:
            raise AdminError(f"{self.path}: cannot connect ({exc.strerror or exc})") from None
        if not buf:
            raise AdminError(f"{self.path}: no answer")
        reply = json.loads(buf)
        if not reply.get("ok"):
            raise AdminError(reply.get("error", "refused"))
        return reply.get("result")


__all__ = ["AdminClient", "AdminError", "AdminServer"]
