"""A p4sim P4Runtime server owns its port alone: gRPC's default SO_REUSEPORT would let a
second server (another switch, another user's testbed) share the first one's port."""
from __future__ import annotations

import pytest

from p4sim.p4runtime.server import P4RuntimeServer
from test_server_support import FakeDevice


def test_a_second_server_on_the_same_port_fails_clearly() -> None:
    first = P4RuntimeServer(FakeDevice(1), "127.0.0.1:0")
    port = first.start()
    try:
        second = P4RuntimeServer(FakeDevice(2), f"127.0.0.1:{port}")
        with pytest.raises(OSError, match=rf"^cannot listen on 127\.0\.0\.1:{port}: the address "
                                          "is in use by another program"):
            second.start()
    finally:
        first.stop()
