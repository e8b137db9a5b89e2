"""The flow registry with several agents on one host (one per sender process, as on the
testbed): each registration replaces only that agent's flows, orders go to the agent that
registered the flow, a restarted agent's open orders fail, and a done report makes the
flow's 5-tuple follow its new source port."""
from __future__ import annotations

import threading
from typing import Any

import grpc
import pytest

from astral_proto.flows import HostFlow, flow_id
from controller.registry import MAX_CALLS_PER_PARTY, FlowRegistry, FlowRegistryServicer, RegistryError

HOST = {"b0s0": ["10.0.0.1", "10.0.1.1"], "b0s1": ["10.0.0.2"], "b1s0": ["10.1.0.1", "10.1.0.2"]}
#: a test's name of a flow → (destination, destination QP) of b0s0's flow
FLOWS = {"a1": ("10.1.0.1", 1), "a2": ("10.1.0.1", 2), "b1": ("10.1.0.2", 3)}


def I(label: str) -> str:
    """The flow id of b0s0's flow ``label`` (its 5-tuple's id, as the registry wants)."""
    dst, qp = FLOWS[label]
    return flow_id("10.0.0.1", dst, qp)


def L(fid: str) -> str:
    """The test's name of a flow id."""
    return next(k for k in FLOWS if I(k) == fid)


def f(label: str, sport: int, src: str = "10.0.0.1") -> HostFlow:
    """b0s0's flow ``label`` (``src`` another address: a squatter's claim on its id)."""
    dst, qp = FLOWS[label]
    return HostFlow(I(label), src, dst, sport, qp)


def test_two_agents_of_one_host_keep_their_own_flows() -> None:
    reg = FlowRegistry(b"s", HOST)
    assert reg.register("b0s0", "unix:/a", "i1", [f("a1", 50000), f("a2", 50001)]) == 2
    assert reg.register("b0s0", "unix:/b", "j1", [f("b1", 50002)]) == 3
    assert {L(x.flow_id) for x in reg.flows("b0s0")} == {"a1", "a2", "b1"}
    # agent a re-registers (same incarnation) with one flow less: only a2 goes
    assert reg.register("b0s0", "unix:/a", "i1", [f("a1", 50000)]) == 2
    assert {L(x.flow_id) for x in reg.flows("b0s0")} == {"a1", "b1"}


def test_orders_go_to_the_agent_that_registered_the_flow(monkeypatch: pytest.MonkeyPatch) -> None:
    reg = FlowRegistry(b"s", HOST)
    reg.register("b0s0", "unix:/a", "i1", [f("a1", 50000)])
    reg.register("b0s0", "unix:/b", "j1", [f("b1", 50002)])
    dialled: list[str] = []

    class Channel:
        def __init__(self, address: str) -> None:
            dialled.append(address)

        def __enter__(self) -> "Channel":
            return self

        def __exit__(self, *exc: Any) -> None:
            return None

    class Stub:
        def __init__(self, channel: Channel) -> None:
            pass

        def MoveFlow(self, order: Any, metadata: Any, timeout: float) -> Any:
            from astral_proto import agent_pb2
            return agent_pb2.MoveReply(accepted=True)

    monkeypatch.setattr(grpc, "insecure_channel", Channel)
    monkeypatch.setattr("controller.registry.agent_pb2_grpc.AgentServiceStub", Stub)
    o, reply = reg.move(I("a1"), 49153)
    assert reply.accepted and dialled == ["unix:/a"]
    reg.move(I("b1"), 49154)
    assert dialled == ["unix:/a", "unix:/b"]
    reg.report("b0s0", o.order_id, I("a1"), done=True, sport=49153)
    assert reg.flow(I("a1")).sport == 49153                      # the key follows the new port


def test_a_restarted_agent_fails_its_open_orders_only() -> None:
    reg = FlowRegistry(b"s", HOST)
    reg.register("b0s0", "unix:/a", "i1", [f("a1", 50000)])
    reg.register("b0s0", "unix:/b", "j1", [f("b1", 50002)])
    oa, ob = reg.new_order(I("a1"), 49153), reg.new_order(I("b1"), 49154)
    reg.register("b0s0", "unix:/a2", "i2", [f("a1", 50000)])   # a came back elsewhere
    assert reg.order(oa.order_id).state == "failed" and reg.order(oa.order_id).error == "agent restarted"
    assert reg.order(ob.order_id).state == "sent"
    assert {L(x.flow_id) for x in reg.flows("b0s0")} == {"a1", "b1"}


def test_a_host_cannot_register_another_hosts_flow() -> None:
    reg = FlowRegistry(b"s", HOST)
    reg.register("b0s0", "unix:/a", "i1", [f("a1", 50000)])
    with pytest.raises(RegistryError) as err:
        reg.register("b0s1", "unix:/c", "k1", [f("a1", 50000, src="10.0.0.2")])
    assert err.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert "squatting refused" in str(err.value) and reg.squats == 1


def test_move_ages_come_from_agents_and_done_reports_and_advance_with_the_clock() -> None:
    now = [100.0]
    reg = FlowRegistry(b"s", HOST, clock=lambda: now[0])
    reg.register("b0s0", "unix:/a", "i1", [f("a1", 50000).with_move_age(3.0),
                                            f("a2", 50001)])
    now[0] = 101.5
    assert {L(x.flow_id): x.moved_s_ago for x in reg.flows()} == {"a1": 4.5, "a2": None}
    o = reg.new_order(I("a2"), 50009)
    reg.report("b0s0", o.order_id, I("a2"), done=True, sport=50009)    # a move this registry saw
    now[0] = 102.0
    assert {L(x.flow_id): x.moved_s_ago for x in reg.flows()} == {"a1": 5.0, "a2": 0.5}
    assert reg.flow(I("a1")) == f("a1", 50000)          # the age is not identity
    reg.register("b0s0", "unix:/a", "i2", [f("a1", 50000)])  # a new incarnation
    assert {L(x.flow_id): x.moved_s_ago for x in reg.flows()} == {"a1": None}


def test_ids_cannot_be_claimed_ahead_of_time_and_the_owner_wins_after_a_restart(
        caplog: pytest.LogCaptureFixture) -> None:
    """The issue's squat: b0s1 registers b0s0's future flow id with its own source address,
    first, and again right after GOR restarts (a new registry): refused and logged both
    times; b0s0 then registers its flow."""
    for _ in ("first start", "after a restart"):
        reg = FlowRegistry(b"s", HOST)
        with pytest.raises(RegistryError) as err:
            reg.register("b0s1", "unix:/c", "k1", [f("a1", 50000, src="10.0.0.2")])
        assert err.value.code == grpc.StatusCode.PERMISSION_DENIED
        assert str(err.value) == (f"flow {I('a1')}: the id names 10.0.0.1, a NIC of b0s0, not of "
                                  "b0s1 (squatting refused)")
        assert "b0s1 tried to register flow" in caplog.text and reg.squats == 1
        assert reg.register("b0s0", "unix:/a", "i1", [f("a1", 50000)]) == 1
        assert reg.owner(I("a1")) == "b0s0" and reg.flows("b0s1") == []


def test_an_id_that_is_not_its_flows_own_is_refused() -> None:
    reg = FlowRegistry(b"s", HOST)
    with pytest.raises(RegistryError) as err:
        reg.register("b0s0", "unix:/a", "i1", [HostFlow("f1", "10.0.0.1", "10.1.0.1", 1, 7)])
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "'10.0.0.1>10.1.0.1/qp7'" in str(err.value) and reg.squats == 0


def test_a_flow_must_cross_the_fabric() -> None:
    reg = FlowRegistry(b"s", HOST)
    for dst in ("198.51.100.7", "10.0.0.1", "10.9.9.9"):         # outside, itself, no host
        with pytest.raises(RegistryError) as err:
            reg.register("b0s0", "unix:/a", "i1", [HostFlow(flow_id("10.0.0.1", dst, 5), "10.0.0.1",
                                                            dst, 49152, 5)])
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert f"destination '{dst}' is not another NIC of the fabric" in str(err.value)
    assert reg.flows() == []
    assert reg.register("b0s0", "unix:/a", "i1", [f("b1", 49152)]) == 1   # 10.1.0.2: b1s0's
    wide = FlowRegistry(b"s", {"b0s0": ["10.0.0.1"]}, fabric_ips=["10.0.0.1", "10.9.9.9"])
    assert wide.register("b0s0", "unix:/a", "i1", [HostFlow(flow_id("10.0.0.1", "10.9.9.9", 5),
                                                            "10.0.0.1", "10.9.9.9", 1, 5)]) == 1


def test_closed_orders_are_forgotten_beyond_the_bound() -> None:
    """10,000 move orders of one flow, each reported done: the registry keeps the newest
    4,096 closed ones (``MAX_CLOSED_ORDERS``), the open one and the newest stay readable,
    and a report of a forgotten order is NOT_FOUND (on main: all 10,000 were kept)."""
    reg = FlowRegistry(b"s", HOST)
    reg.register("b0s0", "unix:/a", "i1", [f("a1", 50000)])
    first = None
    for i in range(10_000):
        o = reg.new_order(I("a1"), 50001 + i % 1000)
        first = first or o.order_id
        reg.report("b0s0", o.order_id, I("a1"), done=True, sport=o.sport)
    open_ = reg.new_order(I("a1"), 60000)
    assert reg.orders_kept() == 4096 + 1
    assert reg.order(open_.order_id).state == "sent" and reg.order(o.order_id).state == "done"
    with pytest.raises(RegistryError) as err:
        reg.report("b0s0", first, I("a1"), done=True, sport=1)
    assert err.value.code == grpc.StatusCode.NOT_FOUND


def test_an_agent_restart_past_the_closed_bound_fails_its_open_orders() -> None:
    """An agent restarting with an order open fails that order ("agent restarted"); with
    the closed orders at their bound the close forgets the oldest one. On the merged
    sec-audit3 code that eviction ran inside the loop over the orders: the registration
    ended in "dictionary changed size during iteration" (review2)."""
    reg = FlowRegistry(b"s", HOST)
    reg.max_closed_orders = 2
    reg.register("b0s0", "unix:/a", "i1", [f("a1", 50000)])
    for sport in (50001, 50002):
        o = reg.new_order(I("a1"), sport)
        reg.report("b0s0", o.order_id, I("a1"), done=True, sport=sport)
    open_ = reg.new_order(I("a1"), 50003)
    assert reg.register("b0s0", "unix:/a", "i2", [f("a1", 50002)]) == 1
    assert (open_.state, open_.error) == ("failed", "agent restarted")
    assert reg.orders_kept() == 2


def test_orders_never_reported_are_closed_after_their_lifetime() -> None:
    """An agent that accepts every order and never reports: each order stays open until
    ``MAX_OPEN_ORDER_S`` (60 s), then the registry closes it failed, so the closed-order
    bound covers it too (before: every unreported order was kept for good; review2)."""
    now = [0.0]
    reg = FlowRegistry(b"s", HOST, clock=lambda: now[0])
    reg.max_closed_orders = 100
    reg.register("b0s0", "unix:/a", "i1", [f("a1", 50000)])
    first = reg.new_order(I("a1"), 50001)
    for i in range(1000):                      # one order a second, none reported
        now[0] += 1.0
        reg.new_order(I("a1"), 50002 + i)
    assert (first.state, first.error) == ("failed", "no report within 60 s")
    assert first.finished.is_set()
    assert reg.orders_kept() == 100 + 61       # the newest 100 closed, those of t = 940..1000 open
    late = reg.order(sorted(reg._orders, key=lambda k: int(k.split("-")[1]))[0])
    reg.report("b0s0", late.order_id, I("a1"), done=True, sport=late.sport)   # still taken
    assert late.state == "done"


def test_calls_whose_request_came_do_not_count_against_the_waiting_bound() -> None:
    """A host's agents (one certificate) may report more moves at once than
    MAX_CALLS_PER_PARTY: the bound is on calls still waiting for their request. The first
    version counted a call until it was served, so a fifth concurrent report was refused
    RESOURCE_EXHAUSTED and lost (review of this stop's merge)."""
    svc = FlowRegistryServicer(FlowRegistry(b"s", HOST))
    svc._host = lambda context, claimed: "b0s0"            # type: ignore[method-assign]
    release = threading.Event()
    served: list[bytes] = []

    def serve(data: bytes, context: Any) -> bytes:
        served.append(data)
        release.wait(5.0)
        return data

    class Ctx:
        def cancel(self) -> None:
            pass

        def abort(self, code: grpc.StatusCode, details: str) -> None:
            raise RuntimeError(f"{code.name}: {details}")

    behaviour = svc.bounded("ReportMove", serve)
    errors: list[str] = []

    def call(i: int) -> None:
        try:
            behaviour(iter([b"r%d" % i]), Ctx())
        except RuntimeError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(MAX_CALLS_PER_PARTY + 2)]
    for t in threads:
        t.start()
    deadline = threading.Event()
    for _ in range(200):                                   # all being served at once (bounded)
        if len(served) + len(errors) == len(threads):
            break
        deadline.wait(0.01)
    release.set()
    for t in threads:
        t.join(5.0)
    assert errors == [] and len(served) == MAX_CALLS_PER_PARTY + 2
