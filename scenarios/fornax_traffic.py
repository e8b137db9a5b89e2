"""Real kernel TCP for the FORNAX scenario, run inside the VMs' namespaces:

::

    python -m scenarios.fornax_traffic server --port 80 [--port 8080 ...]
    python -m scenarios.fornax_traffic client --duration-s S --out FILE
        [--short HOST:PORT ...] [--short-rate-per-s R] [--long HOST:PORT ...]
        [--chunk-bytes N] [--interval-s T] [--ports-file FILE]

The server echoes every byte on every connection. The client opens ``--long``
connections for the whole run, each sending ``chunk-bytes`` every ``interval-s`` and
reading its echo back (checked byte for byte), and opens short connections to the
``--short`` targets at ``short-rate-per-s`` (connect, send 1 KiB, read the echo, close).
It writes a JSON result: per long connection its bytes, the longest stall between two
echoes, its error if it broke, and its echoed bytes per 0.5 s; for the short ones their
count, failures and errors. A connection is **broken** when it failed (reset, timeout,
wrong bytes) or, for a long one, stalled for ``BROKEN_STALL_S`` or more.

Example::

    >>> build_parser().parse_args(["client", "--duration-s", "5", "--out", "x.json",
    ...                            "--long", "10.0.0.2:80"]).long
    ['10.0.0.2:80']
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import socketserver
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional, Sequence

BROKEN_STALL_S = 5.0
TIMEOUT_S = 10.0
BIN_S = 0.5


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(120)
        try:
            while True:
                data = self.request.recv(65536)
                if not data:
                    return
                self.request.sendall(data)
        except OSError:
            return


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


def serve(ports: Sequence[int]) -> int:
    """Echo on every port until SIGTERM."""
    servers = [_Server(("0.0.0.0", p), _Echo) for p in ports]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    done = threading.Event()
    # set from a thread, not from the handler: Event.set takes the Event's lock, which this
    # (main) thread may hold inside its own done.wait when the signal lands: a deadlock
    # (host/nic/sigflag.py)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=done.set, daemon=True).start())
    print(f"fornax_traffic: serving {list(ports)}", flush=True)
    done.wait()
    return 0


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the peer")
        buf += chunk
    return bytes(buf)


class LongConnection:
    """One long connection's loop and record."""

    def __init__(self, target: str, chunk: int, interval_s: float, t0: float) -> None:
        self.target, self.chunk, self.interval_s, self.t0 = target, chunk, interval_s, t0
        self.bytes = 0
        self.max_stall_s = 0.0
        self.stall_at: Optional[float] = None
        self.error: Optional[str] = None
        self.local_port = 0
        self.bins: dict[int, int] = {}

    def run(self, end: float) -> None:
        try:
            sock = socket.create_connection(_addr(self.target), timeout=TIMEOUT_S)
        except OSError as exc:
            self.error = f"connect: {exc}"
            return
        self.local_port = sock.getsockname()[1]
        last = time.monotonic()
        n = 0
        try:
            while time.monotonic() < end:
                payload = bytes((n + i) & 0xFF for i in range(self.chunk))
                sock.sendall(payload)
                back = _recv_exact(sock, self.chunk)
                if back != payload:
                    raise ValueError("echo differs from what was sent")
                now = time.monotonic()
                if now - last > self.max_stall_s:
                    self.max_stall_s, self.stall_at = now - last, time.time() - (now - last)
                last = now
                self.bytes += self.chunk
                b = int((now - self.t0) / BIN_S)
                self.bins[b] = self.bins.get(b, 0) + self.chunk
                n += 1
                time.sleep(max(0.0, self.interval_s - (time.monotonic() - now)))
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(TIMEOUT_S)
            while sock.recv(65536):
                pass
        except (OSError, ValueError, ConnectionError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            sock.close()

    def record(self) -> dict[str, Any]:
        broken = self.error is not None or self.max_stall_s >= BROKEN_STALL_S
        return {"target": self.target, "local_port": self.local_port, "bytes": self.bytes,
                "max_stall_s": round(self.max_stall_s, 3), "stall_at": self.stall_at,
                "error": self.error, "broken": broken,
                "bytes_per_bin": [self.bins.get(i, 0) for i in range(max(self.bins, default=-1) + 1)]}


def _short(target: str) -> Optional[str]:
    """One short connection; None when it worked, else its error."""
    try:
        with socket.create_connection(_addr(target), timeout=TIMEOUT_S) as s:
            s.settimeout(TIMEOUT_S)
            payload = os.urandom(1024)
            s.sendall(payload)
            if _recv_exact(s, len(payload)) != payload:
                return "echo differs"
            s.shutdown(socket.SHUT_WR)
            while s.recv(4096):
                pass
        return None
    except (OSError, ConnectionError) as exc:
        return f"{type(exc).__name__}: {exc}"


def client(args: argparse.Namespace) -> int:
    """Run the long and short connections for ``duration_s``; write the JSON result."""
    t0 = time.monotonic()
    end = t0 + args.duration_s
    longs = [LongConnection(t, args.chunk_bytes, args.interval_s, t0) for t in args.long]
    threads = [threading.Thread(target=c.run, args=(end,), daemon=True) for c in longs]
    for t in threads:
        t.start()
    if args.ports_file:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline and any(c.local_port == 0 and c.error is None
                                                  for c in longs):
            time.sleep(0.05)
        Path(args.ports_file).write_text(json.dumps(
            [{"target": c.target, "local_port": c.local_port} for c in longs]))
    shorts: list[tuple[float, Optional[str]]] = []
    if args.short:
        with ThreadPoolExecutor(max_workers=16) as pool:
            futures = []
            i = 0
            period = 1.0 / args.short_rate_per_s
            nxt = time.monotonic()
            while nxt < end:
                target = args.short[i % len(args.short)]
                futures.append((time.time(), pool.submit(_short, target)))
                i += 1
                nxt += period
                time.sleep(max(0.0, nxt - time.monotonic()))
            shorts = [(t, f.result()) for t, f in futures]
    for t in threads:
        t.join(TIMEOUT_S + 5)
    failures = [(t, e) for t, e in shorts if e is not None]
    result = {"long": [c.record() for c in longs],
              "short": {"count": len(shorts), "failed": len(failures),
                        "errors": [{"t": t, "error": e} for t, e in failures[:20]]},
              "bin_s": BIN_S}
    Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m scenarios.fornax_traffic",
                                 description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command")
    s = sub.add_parser("server", help="echo on ports until SIGTERM")
    s.add_argument("--port", type=int, action="append", default=[], help="a port (repeat)")
    c = sub.add_parser("client", help="long and short connections")
    c.add_argument("--duration-s", type=float, required=True, help="how long")
    c.add_argument("--out", required=True, help="the JSON result")
    c.add_argument("--short", action="append", default=[], help="HOST:PORT (repeat)")
    c.add_argument("--short-rate-per-s", type=float, default=5.0, help="short connections/s")
    c.add_argument("--long", action="append", default=[], help="HOST:PORT (repeat)")
    c.add_argument("--chunk-bytes", type=int, default=1024, help="long: bytes per round")
    c.add_argument("--interval-s", type=float, default=0.05, help="long: seconds per round")
    c.add_argument("--ports-file", default=None, help="write the long connections' ports here")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "server":
        return serve(args.port)
    if args.command == "client":
        return client(args)
    build_parser().print_usage(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
