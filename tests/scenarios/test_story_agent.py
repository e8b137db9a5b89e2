"""The agent launcher of the `make run` story: an agent over NIC sender QPs on a Unix
socket registers with a FlowRegistry on a Unix socket and applies GOR's move order."""
from __future__ import annotations

from pathlib import Path

from astral_proto.auth import HostCredentials
from controller.registry import FlowRegistry, serve_registry
from host.agent.launch import send_argv, start_agent
from host.agent.mover import QPMover
from host.nic.frames import FlowSpec
from host.nic.qp import SenderQP


def test_agent_over_unix_sockets_moves_a_qp(tmp_path: Path) -> None:
    secret = b"per-run-secret"
    registry = FlowRegistry(secret, {"b0s0": ["10.0.0.1"]})
    server, raddr = serve_registry(registry, f"unix:{tmp_path}/registry.sock")
    assert raddr == f"unix:{tmp_path}/registry.sock" or raddr.startswith("unix")
    creds = HostCredentials.derive(secret, "b0s0").save(tmp_path / "creds-b0s0.json")
    assert creds.stat().st_mode & 0o777 == 0o600
    qp = SenderQP(FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1",
                           49152, 7), message_bytes=2048, mtu=1024, rate_limit=False)
    mover = QPMover()
    agent = start_agent(creds, f"unix:{tmp_path}/registry.sock", f"unix:{tmp_path}/agent.sock",
                        mover, [qp])
    try:
        assert agent.address == f"unix:{tmp_path}/agent.sock"
        [flow] = registry.flows("b0s0")
        assert flow.sport == 49152
        order, reply = registry.move(flow.flow_id, 50001, timeout_s=5)
        assert reply.accepted
        for _ in range(4):      # the NIC loop finishes the message: the new port is in use
            with mover.lock:
                qp.poll(0.0)
        assert registry.wait(order.order_id, timeout_s=5).state == "done"
        assert mover.current_sport(flow.flow_id) == 50001
    finally:
        agent.stop()
        server.stop(0)


def test_serve_is_send_with_agent_options() -> None:
    argv = send_argv(["serve", "--creds", "c.json", "--registry", "unix:/r", "--bind", "unix:/a",
                      "--", "--iface", "e0"])
    assert argv == ["send", "--iface", "e0", "--agent-creds", "c.json", "--agent-bind", "unix:/a",
                    "--agent-registry", "unix:/r"]
