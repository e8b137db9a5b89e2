"""The agent's order checks (host/agent/guard.py) on a fake wall clock: expiry with the
clock-skew allowance, nonces remembered exactly until their order's expiry, the bound on
how far ahead an expiry may lie and on how many nonces are remembered."""
from __future__ import annotations

import grpc
import pytest

from astral_proto import agent_pb2
from astral_proto.flows import HostFlow
from host.agent.guard import OrderGuard, OrderRefused

FLOW = HostFlow("f1", "10.0.0.1", "10.1.0.1", 49152, 7)


def order(nonce: str = "a" * 32, expires_s: float = 1005.0, host: str = "b0s0",
          flow: HostFlow = FLOW) -> agent_pb2.MoveOrder:
    return agent_pb2.MoveOrder(flow_id=flow.flow_id, new_sport=50000, order_id="o1", nonce=nonce,
                               target_host=host, flow=flow.to_proto().tuple,
                               expires_unix_ms=round(expires_s * 1000))


def refusal(guard: OrderGuard, msg: agent_pb2.MoveOrder, flow: HostFlow | None = FLOW) -> OrderRefused:
    with pytest.raises(OrderRefused) as err:
        guard.check(msg, flow)
    return err.value


def test_expiry_is_wall_clock_with_a_skew_allowance() -> None:
    now = [1000.0]
    guard = OrderGuard("b0s0", wall_clock=lambda: now[0], max_clock_skew_s=0.5)
    guard.check(order("n1" * 16, expires_s=1000.4 - 0.5), FLOW)      # 0.1 s within the skew
    now[0] = 1001.0
    r = refusal(guard, order("n2" * 16, expires_s=1000.4))
    assert r.code == grpc.StatusCode.FAILED_PRECONDITION and r.reason == "order expired 0.600 s ago"
    assert guard.refused == 1


def test_a_nonce_is_remembered_until_its_order_expires_then_forgotten() -> None:
    now = [1000.0]
    guard = OrderGuard("b0s0", wall_clock=lambda: now[0], max_clock_skew_s=1.0)
    guard.check(order("x" * 32, expires_s=1002.0), FLOW)
    now[0] = 1002.9                                   # still within expiry + skew: replay
    assert refusal(guard, order("x" * 32, expires_s=1002.0)).code == grpc.StatusCode.ALREADY_EXISTS
    guard.check(order("y" * 32, expires_s=1010.0), FLOW)
    assert guard.remembered() == 2
    now[0] = 1003.5                                   # x's order is dead: its nonce is forgotten
    assert refusal(guard, order("x" * 32, expires_s=1002.0)).code == grpc.StatusCode.FAILED_PRECONDITION
    guard.check(order("z" * 32, expires_s=1010.0), FLOW)
    assert guard.remembered() == 2                    # y and z


def test_an_expiry_too_far_ahead_and_a_short_nonce_are_malformed() -> None:
    guard = OrderGuard("b0s0", wall_clock=lambda: 1000.0, max_order_ttl_s=60.0)
    r = refusal(guard, order(expires_s=1000.0 + 3600))
    assert r.code == grpc.StatusCode.INVALID_ARGUMENT and "ahead" in r.reason
    r = refusal(guard, order(nonce="short"))
    assert r.code == grpc.StatusCode.INVALID_ARGUMENT and r.reason.startswith("malformed order: nonce")
    assert guard.remembered() == 0                    # refused orders use no nonce


def test_misaddressed_and_foreign_flows_leave_the_nonce_unused() -> None:
    guard = OrderGuard("b0s0", wall_clock=lambda: 1000.0)
    assert refusal(guard, order(host="b1s0")).code == grpc.StatusCode.PERMISSION_DENIED
    assert refusal(guard, order(), flow=None).code == grpc.StatusCode.NOT_FOUND
    other = HostFlow("f1", "10.1.0.1", "10.0.0.1", 49152, 7)
    assert refusal(guard, order(flow=other)).code == grpc.StatusCode.PERMISSION_DENIED
    guard.check(order(), FLOW)                        # the same nonce, now a good order


def test_the_nonce_memory_is_bounded() -> None:
    guard = OrderGuard("b0s0", wall_clock=lambda: 1000.0, max_nonces=2)
    guard.check(order("1" * 32), FLOW)
    guard.check(order("2" * 32), FLOW)
    assert refusal(guard, order("3" * 32)).code == grpc.StatusCode.RESOURCE_EXHAUSTED
