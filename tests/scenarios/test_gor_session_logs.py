"""The story's GOR session keeps the full text of what GOR's orders report in one line
(a failed agent call's whole gRPC error) in the run's ``gor-debug.log``, and only there."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from controller.gor.orders import call_error
from scenarios.gor_session import ORDERS_LOGGER, GorSession
from topo import FabricSpec, build_fabric


class _RpcError(Exception):
    """What grpc raises for a call to an agent whose socket is gone (its str() is the
    multi-line repr)."""

    def code(self) -> Any:
        return type("Code", (), {"name": "UNAVAILABLE"})()

    def details(self) -> str:
        return "failed to connect to all addresses"


def test_the_full_error_goes_to_the_debug_log_only(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    session = GorSession(build_fabric(FabricSpec()), None, None, lambda: None, [], 343.0, None, tmp_path)
    exc = _RpcError("<_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.UNAVAILABLE\n"
                    "\tdebug_error_string = \"UNKNOWN:Error received from peer\"\n>")
    session._open_debug_log()
    try:
        logging.getLogger(ORDERS_LOGGER).debug("move-1: agent call failed: %r", exc)
    finally:
        session._close_debug_log()
    text = session.debug_log_path.read_text()
    assert "debug_error_string" in text and "move-1" in text
    assert capsys.readouterr().err == ""                          # not on the terminal
    assert call_error(exc) == "UNAVAILABLE: failed to connect to all addresses"
    assert not logging.getLogger(ORDERS_LOGGER).handlers           # closed with the session
