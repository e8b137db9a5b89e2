"""GOR's registry as the controller party of the agent protocol: what its orders carry
(nonce, target host, 5-tuple, expiry), who it takes calls from, and an order an agent
refuses closing as failed with the agent's reason (no retry)."""
from __future__ import annotations

import time
from pathlib import Path

import grpc
import pytest

from agent_parties import HOST_IPS, Parties, make_pki
from astral_proto.flows import HostFlow
from astral_proto.security import CONTROLLER
from controller.registry import FlowRegistry, RegistryError, serve_registry
from host.agent import Agent, RegistryClient

FLOW = HostFlow("10.0.0.1>10.1.0.1/qp7", "10.0.0.1", "10.1.0.1", 49152, 7)


@pytest.fixture(scope="module")
def parties(tmp_path_factory: pytest.TempPathFactory) -> Parties:
    root = tmp_path_factory.mktemp("pki")
    make_pki(root)
    return Parties("mtls", root)


class Mover:
    def __init__(self) -> None:
        self.sport = FLOW.sport

    def current_sport(self, fid: str) -> int:
        return self.sport

    def move(self, fid: str, sport: int) -> None:
        self.sport = sport


def test_orders_carry_a_fresh_nonce_the_target_the_flow_and_an_expiry(parties: Parties) -> None:
    reg = FlowRegistry(parties.of(CONTROLLER), HOST_IPS, wall_clock=lambda: 1_000.0)
    reg.register("b0s0", "unix:/a", "i1", [FLOW])
    a, b = (reg.order_message(reg.new_order(FLOW.flow_id, 50001), 2.5) for _ in range(2))
    assert a.target_host == "b0s0" and a.expires_unix_ms == 1_002_500
    assert (a.flow.src_ip, a.flow.dst_ip, a.flow.src_port, a.flow.dst_port, a.flow.protocol) == (
        "10.0.0.1", "10.1.0.1", 49152, 4791, 17)
    assert len(a.nonce) == 32 and int(a.nonce, 16) >= 0 and a.nonce != b.nonce
    assert a.order_id != b.order_id and a.new_sport == 50001


def test_the_registry_runs_as_the_controller_only(parties: Parties) -> None:
    with pytest.raises(ValueError, match="runs as 'controller', not 'b0s0'"):
        FlowRegistry(parties.of("b0s0"), HOST_IPS)


def test_callers_must_be_hosts_of_the_fabric(parties: Parties) -> None:
    reg = FlowRegistry(parties.of(CONTROLLER), HOST_IPS)
    assert reg.authenticate("b1s0") == "b1s0"
    for caller, code in ((None, grpc.StatusCode.UNAUTHENTICATED), ("b0r0l0", grpc.StatusCode.PERMISSION_DENIED),
                         (CONTROLLER, grpc.StatusCode.PERMISSION_DENIED)):
        with pytest.raises(RegistryError) as err:
            reg.authenticate(caller)
        assert err.value.code == code


def test_an_order_the_agent_refuses_fails_with_its_reason(parties: Parties, tmp_path: Path) -> None:
    """The agent's clock is 100 s ahead of GOR's: every order reaches it expired."""
    reg = FlowRegistry(parties.of(CONTROLLER), HOST_IPS)
    server, address = serve_registry(reg, f"unix:{tmp_path / 'registry.sock'}")
    sec = parties.of("b0s0")
    mover = Mover()
    agent = Agent(sec, mover, [FLOW], registry=RegistryClient(address, sec),
                  bind=f"unix:{tmp_path / 'agent.sock'}", wall_clock=lambda: time.time() + 100)
    agent.start()
    try:
        with pytest.raises(grpc.RpcError) as err:
            reg.move(FLOW.flow_id, 50001, timeout_s=2.0)
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        order = reg.order("order-1")
        assert order.state == "failed"
        assert order.error.startswith("agent call failed: FAILED_PRECONDITION: order expired")
        assert mover.sport == FLOW.sport and agent.guard.refused == 1
    finally:
        agent.stop()
        server.stop(0).wait()
