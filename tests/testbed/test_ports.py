"""testbed.ports: switch ports on a shared machine (busy defaults move, explicit ones fail),
and a switch whose port some other program answers is not taken for ready."""
from __future__ import annotations

import socket
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from topo import FabricSpec, SwitchOverride, build_fabric
from testbed.ports import (PortBusyError, claim_switch_ports, ephemeral_range, free_port,
                        port_free)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A socket listening on a free port below the ephemeral range."""
    s = socket.socket()
    s.bind(("127.0.0.1", free_port()))
    s.listen()
    yield s
    s.close()


def test_a_listening_port_is_busy_and_a_released_one_is_free(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    assert not port_free("127.0.0.1", port)
    listener.close()
    assert port_free("127.0.0.1", port)


def test_a_client_connections_source_port_is_busy(listener: socket.socket) -> None:
    # the CI failure: a client socket (here bound explicitly) holds the port a switch wants
    src = free_port(avoid={listener.getsockname()[1]})
    client = socket.socket()
    client.bind(("127.0.0.1", src))
    client.connect(listener.getsockname())
    try:
        assert not port_free("127.0.0.1", src)
    finally:
        client.close()


def test_free_port_is_below_the_ephemeral_range_and_avoids_what_it_is_told() -> None:
    low = ephemeral_range()[0]
    seen = set()
    for _ in range(5):
        port = free_port(avoid=seen)
        assert port < low and port not in seen and port_free("127.0.0.1", port)
        seen.add(port)


def test_default_spec_ports_are_outside_the_ephemeral_range() -> None:
    low, high = ephemeral_range()
    ports = [int(sw.grpc_addr.rsplit(":", 1)[1]) for sw in build_fabric(FabricSpec()).switches]
    assert ports[0] == 9559 and all(not low <= p <= high for p in ports)


def test_a_busy_default_port_moves_to_a_free_one(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    fabric = build_fabric(FabricSpec(grpc_base_port=port - 1))
    before = {sw.name: sw.grpc_addr for sw in fabric.switches}
    notices = claim_switch_ports(fabric)
    moved = [sw for sw in fabric.switches if sw.grpc_addr != before[sw.name]]
    assert [sw.name for sw in moved] == [fabric.switches[1].name]
    new_port = int(moved[0].grpc_addr.rsplit(":", 1)[1])
    assert new_port != port and port_free("127.0.0.1", new_port)
    assert new_port not in {int(a.rsplit(":", 1)[1]) for a in before.values()}
    assert notices == [f"switch {moved[0].name}: port {port} is in use by another program; "
                       f"using {moved[0].grpc_addr}"]


def test_a_busy_explicit_address_is_an_error_naming_the_switch(listener: socket.socket) -> None:
    addr = "127.0.0.1:%d" % listener.getsockname()[1]
    fabric = build_fabric(FabricSpec(grpc_base_port=free_port(),
                                     switches={"s0": SwitchOverride(grpc_addr=addr)}))
    before = [sw.grpc_addr for sw in fabric.switches]
    with pytest.raises(PortBusyError, match=rf"^switch s0: {addr} \(set in the spec\) is in use"):
        claim_switch_ports(fabric)
    assert [sw.grpc_addr for sw in fabric.switches] == before


def test_remote_addresses_are_not_probed() -> None:
    fabric = build_fabric(FabricSpec(grpc_host="192.0.2.10"))
    before = [sw.grpc_addr for sw in fabric.switches]
    assert claim_switch_ports(fabric) == [] and [sw.grpc_addr for sw in fabric.switches] == before


def test_a_port_answered_by_another_program_is_not_a_ready_switch(
        listener: socket.socket, tmp_path: Path) -> None:
    from testbed.net import SwitchDaemon, TestbedError

    # a "p4sim" that fails to bind while somebody else answers its port
    cmd = [sys.executable, "-c", "import sys; print('bind failed'); sys.exit(2)", "p4sim"]
    daemon = SwitchDaemon("sx", cmd, "127.0.0.1:%d" % listener.getsockname()[1], tmp_path)
    daemon.start()
    try:
        with pytest.raises(TestbedError, match=r"switch sx exited at start \(status 2\): .*"
                                               r"last log line: 'bind failed'"):
            daemon.wait_ready(time.monotonic() + 30)
    finally:
        daemon.stop()
