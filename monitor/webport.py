"""The web view's port, checked where it is given: ``MonitorOptions(web_port=…)`` (the
monitor's configuration), ``WebServer(view, port=…)``, ``python -m monitor.remote
--web-port`` and ``python -m scenarios up --monitor-port`` (``make run MONITOR_PORT=…``).
A port is an integer from 0 to 65535, 0 meaning a free one the system picks; a port
another socket holds is named before the testbed comes up (:func:`web_port_taken`), and
:class:`monitor.web.WebServer` says so again if it was taken in between.

Light on purpose (no web framework): the scenarios' command line imports it.

>>> check_web_port(8080), check_web_port(0)
(8080, 0)
>>> check_web_port(70000)
Traceback (most recent call last):
ValueError: web port 70000: not a port (0 to 65535; 0: a free one)
"""
from __future__ import annotations

import argparse
import socket
from typing import Any, Optional

MAX_PORT = 65535


def check_web_port(port: Any, field: str = "web port") -> int:
    """``port`` if it is an integer in 0..65535 (not a bool), else ValueError naming ``field``.

    >>> check_web_port("80")
    Traceback (most recent call last):
    ValueError: web port '80': not an integer
    """
    if isinstance(port, bool) or not isinstance(port, int):
        raise ValueError(f"{field} {port!r}: not an integer")
    if not 0 <= port <= MAX_PORT:
        raise ValueError(f"{field} {port}: not a port (0 to {MAX_PORT}; 0: a free one)")
    return port


def port_arg(text: str) -> int:
    """An argparse ``type``: the port written in ``text`` (argparse names the flag and
    exits 2 on a bad one).

    >>> port_arg("8080")
    8080
    >>> port_arg("x")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 'x' is not an integer (a port, 0 to 65535; 0: a free one)
    """
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an integer (a port, 0 to {MAX_PORT}; 0: a free one)") from None
    try:
        return check_web_port(value, "port")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def web_port_taken(port: int, host: str = "127.0.0.1") -> Optional[str]:
    """Why ``host:port`` cannot be served now (the bind's error, e.g. "Address already in
    use"), None when it can or ``port`` is 0. Binds as :class:`monitor.web.WebServer` does
    (``SO_REUSEADDR``) and lets go at once.

    >>> web_port_taken(0)
    >>> s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
    >>> web_port_taken(s.getsockname()[1])
    'Address already in use'
    >>> s.close()
    """
    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


__all__ = ["MAX_PORT", "check_web_port", "port_arg", "web_port_taken"]
