"""The live web view of the fabric: a Starlette app over a :class:`~monitor.webstate.MonitorView`
and :class:`WebServer`, uvicorn serving it from a background thread on localhost.

Routes:

* ``GET /`` — the page (``monitor/static/``: plain HTML, JavaScript and CSS, nothing
  fetched from elsewhere): an SVG of the fabric with each link direction coloured by
  utilisation and marked when lossy, dead or corrupting, switches down crossed out,
  GOR's alarm levels as badges, a legend, the injected faults, the localiser's verdicts
  and the timeline, all updated live from ``/api/events``;
* ``GET /api/state`` — :meth:`MonitorView.snapshot` as JSON (``?fabric=0``: without the
  drawing);
* ``GET /api/events`` — Server-Sent Events: one ``state`` event with the snapshot (the
  drawing in the first one only) each time the version changes, a comment line as a
  keep-alive otherwise; ``?limit=N`` ends the stream after N events
  (``curl -N http://127.0.0.1:PORT/api/events?limit=1``);
* ``GET /healthz`` — ``ok``.

>>> from topo.model import build_fabric
>>> from monitor.webstate import MonitorView
>>> with WebServer(MonitorView(build_fabric())) as server:          # doctest: +SKIP
...     print(server.url)                                            # open it in a browser
http://127.0.0.1:40123/
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, AsyncIterator, Optional

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from monitor.webport import check_web_port
from monitor.webstate import MonitorView

STATIC_DIR = Path(__file__).resolve().parent / "static"
#: Seconds between keep-alive comments on an idle event stream.
KEEPALIVE_S = 10.0
#: The browser's reconnection delay after a dropped stream (ms, the SSE ``retry`` field).
RETRY_MS = 1000


class WebServerError(RuntimeError):
    """The web view's server could not start or stop (the message says why)."""


class _Streams:
    """The open event streams of one app: each waits on an ``asyncio.Event`` of its own
    loop, set (thread-safely) when the view changes or the server is stopping."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self.closing = False

    def open(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Event]:
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiters.add(entry)
        return entry

    def close(self, entry: tuple[asyncio.AbstractEventLoop, asyncio.Event]) -> None:
        with self._lock:
            self._waiters.discard(entry)

    def wake_all(self) -> None:
        """Wake every stream (from any thread)."""
        with self._lock:
            waiters = list(self._waiters)
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):     # that loop has closed
                loop.call_soon_threadsafe(event.set)

    def shutdown(self) -> None:
        """End every stream (the server is stopping)."""
        self.closing = True
        self.wake_all()


def _sse(snapshot: dict[str, Any], first: bool) -> str:
    data = json.dumps(snapshot, separators=(",", ":"))
    head = f"retry: {RETRY_MS}\n" if first else ""
    return f"{head}id: {snapshot['version']}\nevent: state\ndata: {data}\n\n"


def create_app(view: MonitorView, keepalive_s: float = KEEPALIVE_S) -> Starlette:
    """The ASGI app of the web view of ``view``.

    >>> from topo.model import build_fabric
    >>> app = create_app(MonitorView(build_fabric()))
    >>> sorted(r.path for r in app.routes)
    ['/', '/api/events', '/api/state', '/healthz', '/static']
    """
    streams = _Streams()

    async def page(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-store"})

    async def state(request: Request) -> Response:
        with_fabric = request.query_params.get("fabric", "1")
        if with_fabric not in ("0", "1"):
            return PlainTextResponse(f"fabric must be 0 or 1, got {with_fabric!r}\n", status_code=400)
        return JSONResponse(view.snapshot(with_fabric=with_fabric == "1"),
                            headers={"Cache-Control": "no-store"})

    async def events(request: Request) -> Response:
        raw = request.query_params.get("limit", "0")
        if not raw.isdigit():
            return PlainTextResponse(f"limit must be a whole number of events, got {raw!r}\n",
                                     status_code=400)
        limit = int(raw)
        return StreamingResponse(_stream(limit), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def _stream(limit: int) -> AsyncIterator[str]:
        entry = streams.open()
        wake = entry[1]
        sent, last_version = 0, -1
        try:
            while not streams.closing:
                wake.clear()
                snap = view.snapshot(with_fabric=sent == 0)
                if snap["version"] != last_version:
                    yield _sse(snap, first=sent == 0)
                    sent, last_version = sent + 1, snap["version"]
                    if limit and sent >= limit:
                        return
                try:
                    await asyncio.wait_for(wake.wait(), timeout=keepalive_s)
                except asyncio.TimeoutError:
                    yield ": keep-alive\n\n"
        finally:
            streams.close(entry)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok\n")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        streams.shutdown()
        view.remove_listener(streams.wake_all)

    view.add_listener(streams.wake_all)
    app = Starlette(routes=[
        Route("/", page), Route("/api/state", state), Route("/api/events", events),
        Route("/healthz", healthz), Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ], lifespan=lifespan)
    app.state.view = view
    app.state.streams = streams
    return app


class WebServer:
    """Serve the web view of ``view`` with uvicorn in a background thread.

    ``port=0`` takes a free port (:attr:`url` tells which). :meth:`start` returns once
    ``/healthz`` answers (within ``ready_timeout_s``, else :class:`WebServerError`);
    :meth:`stop` ends the event streams and the server (within ``stop_timeout_s``).
    A context manager: ``with WebServer(view) as server: ... server.url``.
    """

    def __init__(self, view: MonitorView, host: str = "127.0.0.1", port: int = 0, *,
                 ready_timeout_s: float = 10.0, stop_timeout_s: float = 5.0,
                 log_level: str = "warning") -> None:
        self.view = view
        self.host = host
        self.port = check_web_port(port)          # ValueError naming it: monitor.webport
        self.ready_timeout_s = ready_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.app = create_app(view)
        self._log_level = log_level
        self._sock: Optional[socket.socket] = None
        self._server: Optional[uvicorn.Server] = None
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None

    @property
    def url(self) -> str:
        """``http://HOST:PORT/`` of the page (the real port once started)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def __enter__(self) -> "WebServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> "WebServer":
        """Listen, serve from a thread, and wait (bounded) until ``/healthz`` answers."""
        if self._thread is not None:
            raise WebServerError(f"the web view is already served at {self.url}")
        if self.app.state.streams.closing:          # served and stopped before: a fresh app
            self.app = create_app(self.view)
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(64)
        except OSError as exc:
            sock.close()
            raise WebServerError(f"cannot serve the web view on {self.host}:{self.port}: "
                                 f"{exc.strerror or exc} (choose another port, or 0 for a free one)") from None
        self._sock = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level=self._log_level, access_log=False, lifespan="on",
                                timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"monitor-web:{self.port}", daemon=True)
        self._thread.start()
        self._wait_ready()
        return self

    def _run(self) -> None:
        assert self._server is not None and self._sock is not None
        try:
            self._server.run(sockets=[self._sock])
        except BaseException as exc:         # reported by start()/stop(), never lost
            self._error = exc

    def _wait_ready(self) -> None:
        assert self._thread is not None
        deadline = time.monotonic() + self.ready_timeout_s
        last = "no answer yet"
        while time.monotonic() < deadline:
            if not self._thread.is_alive():
                self._close_socket()
                raise WebServerError(f"the web view's server ended while starting: {self._error or 'no error'}")
            if self._server is not None and self._server.started:
                try:
                    with urllib.request.urlopen(self.url + "healthz", timeout=1.0) as resp:
                        if resp.status == 200:
                            return
                        last = f"HTTP {resp.status}"
                except (urllib.error.URLError, OSError) as exc:
                    last = str(exc)
            self._thread.join(0.02)      # the probe's interval; returns early if the thread ends
        self.stop()
        raise WebServerError(f"the web view did not answer {self.url}healthz within "
                             f"{self.ready_timeout_s:g} s ({last})")

    def stop(self) -> None:
        """End the event streams, then the server; bounded by ``stop_timeout_s``."""
        if self._thread is None or self._server is None:
            return
        self.app.state.streams.shutdown()
        self._server.should_exit = True
        self._thread.join(self.stop_timeout_s)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(self.stop_timeout_s)
        alive = self._thread.is_alive()
        self._close_socket()
        self.view.remove_listener(self.app.state.streams.wake_all)
        self._thread = None
        if alive:
            raise WebServerError(f"the web view's server at {self.url} did not stop within "
                                 f"{2 * self.stop_timeout_s:g} s")

    def _close_socket(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


__all__ = ["KEEPALIVE_S", "STATIC_DIR", "WebServer", "WebServerError", "create_app"]
