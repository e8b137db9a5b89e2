"""The manager's admin socket answers malformed requests with an error line, never a
traceback and a dropped connection (``fornax/admin.py``)."""
from __future__ import annotations

import json
import socket
from typing import Iterator

import pytest

from fornax.admin import AdminClient, AdminServer


class Manager:
    """What the admin commands used here need of a manager."""

    timeline: list[dict[str, int]] = []

    def stats(self) -> dict[str, int]:
        return {"sessions": 0}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdminServer]:
    srv = AdminServer(Manager(), tmp_path_factory.mktemp("admin") / "admin.sock")
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.mark.parametrize("line", [b"[]", b'"stats"', b"3", b'{"cmd": "stats", "args": [1]}',
                                  b'{"cmd": "stats", "args": "x"}'])
def test_a_request_that_is_no_object_is_answered_with_an_error(server: AdminServer, line: bytes) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5.0)
        s.connect(str(server.path))
        s.sendall(line + b"\n")
        reply = json.loads(s.makefile("rb").readline())
    assert reply == {"ok": False, "error": 'a request is one JSON object {"cmd": NAME, "args": {...}} '
                                           "per line, args an object"}
    assert AdminClient(server.path).call("stats") == {"sessions": 0}
