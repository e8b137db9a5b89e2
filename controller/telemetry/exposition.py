"""Prometheus exposition shared by every exporter of the project (GOR's metrics, the
monitor's switch and NIC exporters): serve a ``prometheus_client`` registry on a local
HTTP port (:class:`RegistryServer`, a threaded ``wsgiref`` server with
``prometheus_client``'s WSGI application) and parse exposition text back
(:func:`parse_metrics`). Imports nothing of GOR or the monitor.

>>> from prometheus_client import CollectorRegistry, Gauge, generate_latest
>>> reg = CollectorRegistry(); Gauge("x", "an example", registry=reg).set(2)
>>> [(s.name, s.value) for s in parse_metrics(generate_latest(reg).decode())]
[('x', 2.0)]
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, ThreadingWSGIServer
from prometheus_client.parser import text_string_to_metric_families

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""The exposition format served (text 0.0.4)."""


# ---------------------------------------------------------------------- parsing
@dataclass(frozen=True, slots=True)
class Sample:
    """One parsed sample line.

    >>> parse_metrics('x{a="1"} 2\\n')[0].labels["a"]
    '1'
    """

    name: str
    labels: dict[str, str]
    value: float


def parse_metrics(text: str) -> list[Sample]:
    """Parse exposition text (``prometheus_client.parser``, line by line); raises
    ``ValueError`` naming the first invalid line.

    >>> [s.value for s in parse_metrics("# TYPE a gauge\\na 1.5\\n")]
    [1.5]
    >>> parse_metrics("a 1\\nb{c=1} 2\\n")
    Traceback (most recent call last):
    ...
    ValueError: metrics line 2: not a sample: 'b{c=1} 2'
    """
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        comment = line.startswith("#")
        if comment and not line.startswith(("# HELP ", "# TYPE ")):
            continue
        try:
            families = list(text_string_to_metric_families(line + "\n"))
        except Exception:  # noqa: BLE001 — the parser raises ValueError, IndexError, …
            what = "bad comment" if comment else "not a sample"
            raise ValueError(f"metrics line {n}: {what}: {line!r}") from None
        for fam in families:
            out += [Sample(s.name, dict(s.labels), float(s.value)) for s in fam.samples]
    return out


# ---------------------------------------------------------------------- HTTP
class _QuietHandler(WSGIRequestHandler):
    """Logs nothing: scrapes every second must not flood stderr."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — the stdlib's name
        return


def metrics_app(registry: CollectorRegistry) -> Callable[..., Any]:
    """``prometheus_client``'s WSGI app for ``registry`` on ``/metrics`` and ``/`` (404
    elsewhere)."""
    app = make_wsgi_app(registry)

    def route(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO", "/") not in ("/metrics", "/"):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found: try /metrics\n"]
        return app(environ, start_response)
    return route


class RegistryServer:
    """Serves a ``prometheus_client`` registry on ``http://HOST:PORT/metrics`` from a
    daemon thread (``port=0`` picks a free port; see :attr:`url`). Lifetime:
    :meth:`start` … :meth:`stop` or a context manager. ``OSError`` when the port is taken.

    >>> from prometheus_client import CollectorRegistry, Counter
    >>> reg = CollectorRegistry(); Counter("x", "an example", registry=reg).inc()
    >>> import urllib.request
    >>> with RegistryServer(reg, port=0) as srv:
    ...     "x_total 1.0" in urllib.request.urlopen(srv.url, timeout=5).read().decode()
    True
    """

    def __init__(self, registry: CollectorRegistry, host: str = "127.0.0.1", port: int = 0,
                 name: str = "metrics") -> None:
        self.registry = registry
        self._name = name
        self._server = make_server(host, port, metrics_app(registry), ThreadingWSGIServer,
                                   handler_class=_QuietHandler)
        self._thread: Optional[threading.Thread] = None

    @property
    def port(self) -> int:
        """The port served (useful with ``port=0``)."""
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The scrape URL."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/metrics"

    def start(self) -> None:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> "RegistryServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["CONTENT_TYPE", "RegistryServer", "Sample", "metrics_app", "parse_metrics"]
