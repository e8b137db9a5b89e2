"""GOR main loop with fake switches and a registry whose agent is simulated: alarm →
sampling → digests → decision → order (in a thread pool) → confirmation from the counters
(digests on the new link), moves in flight in the next round's loads, no flip-flop, and
the loop surviving bad input."""
from __future__ import annotations

import dataclasses
import io
import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional

import pytest

from astral_proto.flows import HostFlow, flow_id
from controller.fabric_setup import plan_fabric, switch_id_of
from controller.gor.decisions import FlowKey
from controller.gor.log import DecisionLog
from controller.gor.loop import (OVERRIDE_ACTION, OVERRIDE_TABLE, SAMPLING_ACTION, SAMPLING_TABLE,
                                 GorLoop)
from controller.gor.metrics import GorMetrics
from controller.telemetry.exposition import parse_metrics
from controller.gor.moves import apply_in_flight
from controller.gor.shared import LoopSettings
from controller.telemetry.poller import LinkId, LinkSample
from controller.registry import FlowRegistry
from p4src.hashmodel import FabricHashModel
from topo.model import Fabric, build_fabric
from topo.spec import FabricSpec

L0, L1 = "b0r0l0", "b1r0l0"
SRC, DST = "10.0.0.1", "10.1.0.1"


class FakeConn:
    """Records table writes; ``fail`` makes every write raise (a switch that does not answer)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, Any], tuple[str, dict[str, Any]]] = {}
        self.fail: Optional[BaseException] = None
        self.writes = 0
        self.packets_out: list[tuple[bytes, dict[str, Any]]] = []

    def packet_out(self, payload: bytes, metadata: Any = None) -> None:
        """A PacketOut sent on the stream (recorded; ``fail`` makes it raise too)."""
        if self.fail is not None:
            raise self.fail
        self.packets_out.append((payload, dict(metadata or {})))

    def table_entry(self, table: str, match: Any = None, action: Optional[str] = None,
                    params: Any = None) -> tuple[str, Any, Optional[str], dict[str, Any]]:
        return (table, tuple(sorted((match or {}).items())), action, dict(params or {}))

    def _check(self) -> None:
        self.writes += 1
        if self.fail is not None:
            raise self.fail

    def insert(self, te: Any) -> None:
        self._check()
        self.entries[(te[0], te[1])] = (te[2], te[3])

    def modify(self, te: Any) -> None:
        self.insert(te)

    def delete(self, te: Any) -> None:
        self._check()
        self.entries.pop((te[0], te[1]), None)

    def table(self, name: str) -> dict[Any, tuple[str, dict[str, Any]]]:
        return {k[1]: v for k, v in self.entries.items() if k[0] == name}


class FakeProgrammer:
    def __init__(self, fab: Fabric) -> None:
        self.plans = plan_fabric(fab)
        self.connections = {sw.name: FakeConn() for sw in fab.switches}

    def hash_model(self) -> FabricHashModel:
        return FabricHashModel({n: p.hash_model() for n, p in self.plans.items()})


class AgentRegistry(FlowRegistry):
    """The real registry with the agent call replaced: ``answer`` says what the agent does."""

    answer = "accept"          # accept | refuse | raise | call (the real gRPC call)

    def move(self, fid: str, sport: int, *, timeout_s: float = 5.0) -> Any:
        if self.answer == "call":
            return super().move(fid, sport, timeout_s=timeout_s)
        if self.answer == "raise":
            raise ConnectionError("agent unreachable")
        o = self.new_order(fid, sport)
        if self.answer == "refuse":
            self.report(o.host, o.order_id, fid, done=False, sport=0, error="busy")
            return o, SimpleNamespace(accepted=False, reason="busy")
        return o, SimpleNamespace(accepted=True, reason="")


def fabric() -> Fabric:
    return build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1, spines=3))


def make(agent: bool = True, **settings: Any
         ) -> tuple[Fabric, GorLoop, FakeProgrammer, AgentRegistry, io.StringIO, GorMetrics]:
    """A loop on fake switches and agents; ``settings`` override the tests' LoopSettings."""
    fab = fabric()
    prog = FakeProgrammer(fab)
    reg = AgentRegistry.from_fabric(fab, b"secret")
    buf, metrics = io.StringIO(), GorMetrics()
    loop = GorLoop(fab, prog, reg, LoopSettings(**{
        "period_s": 0.05, "safety": 0.75, "top_n": 4, "one_in_n": 100_000, "window_s": 0.05,
        "decide_every_s": 0.05, **settings}), log=DecisionLog(buf), metrics=metrics)
    return fab, loop, prog, reg, buf, metrics


def port_to(fab: Fabric, switch: str, peer: str) -> int:
    return next(p for p, i in sorted(fab.switch(switch).ports.items()) if i.peer_node == peer)


def samples(fab: Fabric, hot_spine: str = "s0", marks: int = 100) -> dict[LinkId, LinkSample]:
    """Every fabric link at 10 %, the path L0 → hot_spine → L1 at 90 % with ``marks`` per 1000."""
    out = {}
    for sw in fab.switches:
        for p, info in sorted(sw.ports.items()):
            if info.kind not in ("uplink", "downlink"):
                continue
            hot = (sw.name, info.peer_node) in ((L0, hot_spine), (hot_spine, L1))
            out[LinkId(sw.name, p, info.peer_node, info.kind)] = LinkSample(
                0.0, 0.05, 1000, 1_000_000, marks if hot else 0, 30 if hot else 0,
                0.9 if hot else 0.1)
    return out


def flows_through(loop: GorLoop, spine: str, n: int = 1, src: str = SRC) -> list[FlowKey]:
    out = []
    for sport in range(49152, 65536):
        f = FlowKey(src, DST, 17, sport, 4791)
        p = loop.engine.current_path(f, L0, L1)
        if p is not None and p.spine == spine:
            out.append(f)
            if len(out) == n:
                return out
    raise AssertionError("no flow through " + spine)


def flow_through(loop: GorLoop, spine: str) -> FlowKey:
    return flows_through(loop, spine)[0]


def digest_rows(fab: Fabric, f: FlowKey, port: int, n: int = 40, switch: str = L0) -> list[dict[str, int]]:
    """``n`` samples of ``f`` leaving ``switch`` on ``port``."""
    import ipaddress
    sid = switch_id_of(fab.switch(switch), fab)
    row = {"switch_id": sid, "src_addr": int(ipaddress.IPv4Address(f.src)),
           "dst_addr": int(ipaddress.IPv4Address(f.dst)), "protocol": 17, "src_port": f.sport,
           "dst_port": f.dport, "ingress_port": 1, "egress_port": port, "qdepth": 20,
           "packet_length": 1000}
    return [dict(row) for _ in range(n)]


def hot_mix(fab: Fabric, loop: GorLoop, up: int) -> tuple[FlowKey, FlowKey]:
    """Digests of two flows on the hot uplink: ``f`` 30 % of its samples, ``g`` 70 % (too
    big to fit anywhere under 75 %): one round moves ``f`` only."""
    f, g = flows_through(loop, "s0", 2)
    loop.submit_digests(L0, SimpleNamespace(name="flow_sample_t", data=digest_rows(fab, f, up, 30)))
    loop.submit_digests(L0, digest_rows(fab, g, up, 70))
    return f, g


def events(buf: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def moves(metrics: GorMetrics) -> dict[str, float]:
    return {s.labels["outcome"]: s.value for s in parse_metrics(metrics.render())
            if s.name == "gor_moves_total"}


def fid_of(f: FlowKey) -> str:
    """The id the registry wants for flow ``f`` (QP 7): its 5-tuple's."""
    return flow_id(f.src, f.dst, 7)


def register(fab: Fabric, reg: FlowRegistry, f: FlowKey) -> str:
    host = next(h.name for h in fab.hosts if any(n.ip == f.src for n in h.nics))
    reg.register(host, "127.0.0.1:1", "i1", [HostFlow(fid_of(f), f.src, f.dst, f.sport, 7)])
    return host


def registry_loop(start_s: float) -> SimpleNamespace:
    """A GOR loop with a 10 s cooldown on an agent registry whose clock is ``now[0]``
    (``start_s`` at first: the registry's start), ticked once at 1.0 s, with s0's uplink
    ``up`` hot and its flow mix ``f`` (30 %) and ``g`` (70 %) sampled: where the restart
    and registry tests begin.

    >>> t = registry_loop(1.05)
    >>> t.now[0], t.f != t.g
    (1.05, True)
    """
    fab = fabric()
    now = [start_s]
    reg = AgentRegistry.from_fabric(fab, b"secret", clock=lambda: now[0])
    buf = io.StringIO()
    settings = LoopSettings(period_s=0.05, safety=0.75, top_n=4, one_in_n=100_000, window_s=0.05,
                            decide_every_s=0.05, cooldown_s=10.0)
    loop = GorLoop(fab, FakeProgrammer(fab), reg, settings, log=DecisionLog(buf))
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, g = hot_mix(fab, loop, up)
    return SimpleNamespace(fab=fab, now=now, reg=reg, buf=buf, settings=settings, loop=loop,
                           up=up, f=f, g=g)


def test_alarm_sampling_digests_decision_move_confirmed_by_counters() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    assert loop.tick(1.0, samples(fab)) == []                       # alarm: sampling only
    assert prog.connections[L0].table(SAMPLING_TABLE) == {
        (("standard_metadata.egress_spec", up),): (SAMPLING_ACTION, {"one_in_n": 100_000})}
    raised = [e for e in events(buf) if e["event"] == "alarm_raised"]
    assert {e["link"] for e in raised} >= {f"{L0}->s0"} and raised[0]["sampling"] == 100_000
    f, g = hot_mix(fab, loop, up)
    host = register(fab, reg, f)
    rounds = loop.tick(1.05, samples(fab))
    assert len(rounds) == 1 and rounds[0].trigger == (L0, up)
    (order,) = rounds[0].orders                                     # g fits nowhere under 75 %
    assert order.flow == f and order.path.spine in ("s1", "s2")
    assert {r.flow: r.reason for r in rounds[0].rejected}[g] == "safety"
    assert loop.engine.current_path(f.with_sport(order.new_sport), L0, L1) == order.path
    new_up = order.path.links[0][1]
    assert (L0, new_up) in loop.sampling                            # to confirm from counters
    assert loop.drain_orders(5.0)
    (oid, m), = loop.pending.items()
    loop.tick(1.10, samples(fab))
    reg.report(host, m.registry_order_id, fid_of(f), done=True, sport=order.new_sport)
    loop.tick(1.15, samples(fab))                                   # the agent says done …
    ev = [e["event"] for e in events(buf)]
    assert "agent_done" in ev and "order_confirmed" not in ev and oid in loop.pending
    loop.submit_digests(L0, digest_rows(fab, f.with_sport(order.new_sport), new_up, 5))
    loop.tick(1.20, samples(fab))                                   # … the counters confirm
    ev = [e["event"] for e in events(buf)]
    conf = [e for e in events(buf) if e["event"] == "order_confirmed"]
    assert len(conf) == 1 and conf[0]["link"] == f"{L0}->{order.path.spine}"
    assert conf[0]["new_flow"] == str(f.with_sport(order.new_sport))
    assert ev.index("order_sent") < ev.index("order_confirmed")
    loop.tick(1.40, samples(fab))                                   # settled
    assert loop.pending == {}
    assert moves(metrics)["sent"] == 1 and moves(metrics)["confirmed"] == 1
    assert reg.flow(fid_of(f)).sport == order.new_sport
    loop.submit_digests(L0, digest_rows(fab, f.with_sport(order.new_sport), up, 30))
    loop.submit_digests(L0, digest_rows(fab, g, up, 70))
    loop.tick(2.5, samples(fab))                                    # not moved again in cooldown
    assert moves(metrics)["sent"] == 1


@pytest.mark.parametrize("moved_s_ago", [None, 2.0])
def test_a_flow_its_agent_says_was_moved_recently_rests_after_a_gor_restart(
        moved_s_ago: Optional[float]) -> None:
    # A new GOR (empty memory) sees the flow registered with the age of the move its
    # predecessor ordered: it is left alone for the rest of the cooldown, not moved again.
    t = registry_loop(1.05)
    fab, now, reg, buf, loop, up, f, g = t.fab, t.now, t.reg, t.buf, t.loop, t.up, t.f, t.g
    host = next(h.name for h in fab.hosts if any(n.ip == f.src for n in h.nics))
    reg.register(host, "127.0.0.1:1", "i1",
                 [HostFlow(fid_of(f), f.src, f.dst, f.sport, 7).with_move_age(moved_s_ago)])
    rounds = loop.tick(1.05, samples(fab))
    sent = [e for e in events(buf) if e["event"] == "order_sent"]
    remembered = [e for e in events(buf) if e["event"] == "move_remembered"]
    if moved_s_ago is None:
        assert [e["flow"] for e in sent] == [str(f)] and remembered == []
        return
    assert sent == [] and all(not r.orders for r in rounds)
    assert [(e["flow"], e["flow_id"], e["rest_until_s"]) for e in remembered] == [
        (str(f), fid_of(f), 9.05)]                                  # 1.05 + 10 - 2
    for t in (5.0, 9.1):                                       # rests until 9.05 …
        now[0] = t
        reg.register(host, "127.0.0.1:1", "i1", [HostFlow(fid_of(f), f.src, f.dst, f.sport, 7)])  # its agent lives
        loop.submit_digests(L0, digest_rows(fab, f, up, 30))
        loop.submit_digests(L0, digest_rows(fab, g, up, 70))
        loop.tick(t, samples(fab))
        sent = [e for e in events(buf) if e["event"] == "order_sent"]
        assert sent == [] if t < 9.05 else [e["flow"] for e in sent] == [str(f)]   # … then moves


def test_a_predecessors_move_still_settling_holds_every_round_after_a_gor_restart() -> None:
    # CI (stop 44): a GOR restarted 0.4 s after its predecessor's moves ran a round at
    # once on loads that did not show them yet, and piled a third flow onto the uplink
    # they had gone to (87.5 %). A move younger than move_settle_s holds every round
    # until it has settled, as a move of GOR's own in flight does.
    t = registry_loop(1.05)
    fab, now, reg, settings, loop, up, f, g = t.fab, t.now, t.reg, t.settings, t.loop, t.up, t.f, t.g
    host = next(h.name for h in fab.hosts if any(n.ip == f.src for n in h.nics))
    reg.register(host, "127.0.0.1:1", "i1",
                 [HostFlow(fid_of(f), f.src, f.dst, f.sport, 7).with_move_age(0.05)])
    assert settings.move_settle_s == pytest.approx(0.15)
    assert loop.tick(1.05, samples(fab)) == []                  # settles until 1.15
    assert loop.rounds.settling_until_s == pytest.approx(1.15)
    now[0] = 1.2
    loop.submit_digests(L0, digest_rows(fab, f, up, 30))
    loop.submit_digests(L0, digest_rows(fab, g, up, 70))
    later = loop.tick(1.2, samples(fab))
    assert [r.trigger for r in later] == [(L0, up)]            # then the link gets its round
    assert all(o.flow != f for r in later for o in r.orders)    # and f still rests


@pytest.mark.parametrize("last_registered_s", [4.5, 1.0])
def test_no_order_for_a_flow_whose_sender_is_gone(last_registered_s: float) -> None:
    """Senders stopped, their agents with them: the registry still holds their flows (nobody
    unregisters them) and the hot link's samples still rank them, so GOR went on ordering
    moves that failed UNAVAILABLE (ux-walk). A flow its agent has not registered for
    ``agent_silent_s`` gets no order, neither a move nor an override; one registered a
    second ago is moved."""
    fab = fabric()
    now = [last_registered_s]
    reg = AgentRegistry.from_fabric(fab, b"secret", clock=lambda: now[0])
    buf = io.StringIO()
    loop = GorLoop(fab, FakeProgrammer(fab), reg,
                   LoopSettings(period_s=0.05, safety=0.75, top_n=4, one_in_n=100_000, window_s=0.05,
                                decide_every_s=0.05, agent_silent_s=3.0), log=DecisionLog(buf))
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, g = hot_mix(fab, loop, up)
    register(fab, reg, f)
    now[0] = 5.5                                               # the round: 1 s or 4.5 s later
    rounds = loop.tick(1.05, samples(fab))
    sent = [e["flow"] for e in events(buf) if e["event"] == "order_sent"]
    if last_registered_s == 4.5:
        assert sent == [str(f)]
        return
    assert sent == [] and all(not r.orders for r in rounds), sent
    assert (f.src, f.dst, f.sport, f.dport) in loop.rounds.gone
    assert loop.pending == {} and loop.overrides == {}


@pytest.mark.parametrize("sampled_at_s", [0.9, 0.3])
def test_no_order_for_a_flow_that_ended(sampled_at_s: float) -> None:
    """A flow whose samples stopped (its sender ended) is still in the load window (2 s in
    the story) for a while: it is not moved once it has not been sampled on the hot link
    for ``flow_ended_s``."""
    fab, loop, prog, reg, buf, metrics = make(window_s=2.0, flow_ended_s=0.5)
    up = port_to(fab, L0, "s0")
    loop.tick(0.2, samples(fab))                                   # alarm: sampling on
    f, g = flows_through(loop, "s0", 2)
    register(fab, reg, f)
    for row in digest_rows(fab, f, up, 30) + digest_rows(fab, g, up, 70):
        loop.flows.add(row, sampled_at_s)
    loop.tick(1.05, samples(fab))
    sent = [e["flow"] for e in events(buf) if e["event"] == "order_sent"]
    assert sent == ([str(f)] if sampled_at_s == 0.9 else []), sent   # 0.15 s / 0.75 s ago


def test_no_decision_under_the_alarm_threshold() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    f = flow_through(loop, "s0")
    up = port_to(fab, L0, "s0")
    for i in range(5):
        loop.submit_digests(L0, digest_rows(fab, f, up))
        assert loop.tick(1.0 + 0.05 * i, samples(fab, marks=4)) == []     # 0.4 % < NOTICE
    assert all(not c.entries for c in prog.connections.values())
    assert moves(metrics)["sent"] == 0 and "order_sent" not in {e["event"] for e in events(buf)}


def test_host_without_agent_gets_override_entry() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, g = hot_mix(fab, loop, up)
    rounds = loop.tick(1.05, samples(fab))
    (order,) = rounds[0].orders
    assert type(order).__name__ == "OverrideOrder" and order.flow == f
    ov = prog.connections[L0].table(OVERRIDE_TABLE)
    (key, (action, params)), = ov.items()
    assert action == OVERRIDE_ACTION and params == {"nexthop_id": order.path.links[0][1]}
    assert dict(key)["hdr.udp.src_port"] == f.sport and params["nexthop_id"] != up
    assert "order_confirmed" not in {e["event"] for e in events(buf)}     # written ≠ moved
    loop.submit_digests(L0, digest_rows(fab, f, order.path.links[0][1], 3))
    loop.tick(1.10, samples(fab))
    assert "order_confirmed" in {e["event"] for e in events(buf)}
    loop.tick(1.30, samples(fab))
    assert loop.pending == {}


def test_a_flow_left_alone_is_never_chosen_though_it_counts_in_the_load() -> None:
    """The monitor's probes: GOR leaves them where the probe plan put them. Without
    leave_alone, f (no agent) gets an override entry as in the test above."""
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, g = flows_through(loop, "s0", 2)
    loop.leave_alone([f])
    loop.submit_digests(L0, SimpleNamespace(name="flow_sample_t", data=digest_rows(fab, f, up, 30)))
    loop.submit_digests(L0, digest_rows(fab, g, up, 70))
    for i in range(3):
        for r in loop.tick(1.05 + 0.05 * i, samples(fab)):
            assert all(o.flow != f for o in r.orders), r.orders
    chosen = [e for e in events(buf) if e["event"] == "flows_chosen"]
    assert chosen and all(c["flow"] != str(f) for e in chosen for c in e["flows"])
    assert prog.connections[L0].table(OVERRIDE_TABLE) == {}


def test_override_not_seen_on_its_new_link_is_deleted() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    hot_mix(fab, loop, up)
    loop.tick(1.05, samples(fab))
    assert prog.connections[L0].table(OVERRIDE_TABLE)
    loop.tick(1.05 + loop.settings.confirm_timeout_s, samples(fab))
    assert prog.connections[L0].table(OVERRIDE_TABLE) == {} and loop.pending == {}
    assert moves(metrics)["rolled_back"] == 1


def test_malformed_digest_does_not_stop_the_loop() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    loop.submit_digests(L0, [[1, 2, 3]])                            # wrong field count
    loop.submit_digests(L0, [{"switch_id": 999}])                   # missing fields
    loop.submit_digests(L0, 42)                                     # not a digest at all
    hot_mix(fab, loop, up)
    rounds = loop.tick(1.05, samples(fab))
    assert loop.flows.malformed == 2 and loop.digest_errors == 1
    assert rounds and rounds[0].orders                               # the good digests count


def test_switch_that_does_not_answer_does_not_stop_the_loop() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    prog.connections[L0].fail = TimeoutError("deadline exceeded")
    prog.connections["s0"].fail = TimeoutError("deadline exceeded")
    loop.tick(1.0, samples(fab))                                    # writes fail, loop goes on
    assert loop.sampling.get((L0, up)) is None and loop.errors
    prog.connections[L0].fail = None                                # it answers again
    loop.tick(1.05, samples(fab))
    assert (L0, up) in loop.sampling and prog.connections[L0].table(SAMPLING_TABLE)
    prog.connections[L0].fail = TimeoutError("deadline exceeded")
    hot_mix(fab, loop, up)
    rounds = loop.tick(1.10, samples(fab))                          # override write fails
    assert rounds and rounds[0].orders
    assert "order_rolled_back" in {e["event"] for e in events(buf)}
    assert moves(metrics)["rolled_back"] == 1 and loop.pending == {}


def test_agent_refusal_retries_then_rolls_back_and_unreachable_agent() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, g = hot_mix(fab, loop, up)
    host = register(fab, reg, f)
    loop.tick(1.05, samples(fab))
    assert loop.drain_orders(5.0)
    (oid, m), = loop.pending.items()
    loop.tick(1.06, samples(fab))
    reg.report(host, m.registry_order_id, fid_of(f), done=False, sport=f.sport, error="qp busy")
    loop.tick(1.10, samples(fab))                                   # retried once
    assert moves(metrics)["retried"] == 1 and len(loop.pending) == 1
    assert loop.drain_orders(5.0)
    loop.tick(1.10 + loop.settings.confirm_timeout_s, samples(fab))          # never seen: rolled back
    assert loop.pending == {} and moves(metrics)["rolled_back"] == 1
    reg.answer = "raise"
    loop.book.moved.clear()
    loop.rounds.last_decision.clear()
    f2, g2 = hot_mix(fab, loop, up)
    loop.tick(6.0, samples(fab))
    assert loop.drain_orders(5.0)
    loop.tick(6.05, samples(fab))                                   # agent call failed
    assert moves(metrics)["rolled_back"] == 2 and loop.pending == {}


def test_a_gone_agent_is_one_line_in_the_log_and_the_full_grpc_text_only_in_debug(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A move order to an agent whose socket is gone (a sender that ended): gRPC's error
    text is a multi-line repr (status = …, debug_error_string = …); the decision log's
    reason (which the story prints and puts in report.md) is one line with the code and
    details, and the full text is in the debug log only (ux-walk, problem 2)."""
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, g = hot_mix(fab, loop, up)
    host = next(h.name for h in fab.hosts if any(n.ip == f.src for n in h.nics))
    reg.register(host, f"unix:{tmp_path / 'gone.sock'}", "i1", [HostFlow(fid_of(f), f.src, f.dst, f.sport, 7)])
    reg.answer = "call"
    with caplog.at_level(logging.DEBUG, logger="controller.gor.orders"):
        loop.tick(1.05, samples(fab))
        assert loop.drain_orders(10.0)
        loop.tick(1.06, samples(fab))
    [rb] = [e for e in events(buf) if e["event"] == "order_rolled_back"]
    assert rb["reason"].startswith("agent call failed: UNAVAILABLE: "), rb
    assert "\n" not in rb["reason"] and "debug_error_string" not in rb["reason"], rb
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any("debug_error_string" in m for m in debug), debug
    assert moves(metrics)["rolled_back"] == 1 and loop.pending == {}
    assert reg.silent_flows(3.0) == {fid_of(f)}          # no agent listens: no more orders to it
    loop.book.moved.clear()
    loop.rounds.last_decision.clear()
    hot_mix(fab, loop, up)
    loop.tick(1.5, samples(fab))
    assert [e["event"] for e in events(buf)].count("order_sent") == 1, events(buf)


def test_unconfirmed_move_goes_back_to_its_old_port() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, g = hot_mix(fab, loop, up)
    host = register(fab, reg, f)
    loop.tick(1.05, samples(fab))
    assert loop.drain_orders(5.0)
    loop.tick(1.06, samples(fab))
    (oid, m), = loop.pending.items()
    reg.report(host, m.registry_order_id, fid_of(f), done=True, sport=m.order.new_sport)
    loop.tick(1.10, samples(fab))                                   # the agent says done
    loop.tick(1.05 + loop.settings.confirm_timeout_s, samples(fab))          # the counters never saw it
    assert loop.pending == {}
    rb = [e for e in events(buf) if e["event"] == "order_rolled_back"]
    assert len(rb) == 1 and "not seen on" in rb[0]["reason"]
    loop.orders.close(wait=True)                                  # the move back was sent
    back = [o for o in reg._orders.values() if o.sport == f.sport]
    assert len(back) == 1


def test_next_round_plans_on_moves_in_flight_and_never_moves_a_flow_back() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, g = hot_mix(fab, loop, up)
    (order,) = loop.tick(1.05, samples(fab))[0].orders
    new_spine = order.path.spine
    # one round at a time: while the move is in flight no other round starts
    loop.submit_digests(L0, digest_rows(fab, g, up, 70))
    assert loop.tick(1.10, samples(fab)) == []
    planned = apply_in_flight(loop.links, loop.pending.values())
    assert planned.util(order.path.links[0]) > loop.links.util(order.path.links[0])
    # confirmed and settled; now the NEW link is hot, carrying f: f is not moved back
    loop.submit_digests(L0, digest_rows(fab, order.flow, order.path.links[0][1], 5))
    loop.tick(1.15, samples(fab))
    loop.tick(1.40, samples(fab))
    assert loop.pending == {}
    new_up = order.path.links[0][1]
    loop.tick(1.45, samples(fab, hot_spine=new_spine))
    loop.submit_digests(L0, digest_rows(fab, order.flow, new_up, 30))
    loop.tick(1.55, samples(fab, hot_spine=new_spine))
    sent = [e["flow"] for e in events(buf) if e["event"] == "order_sent"]
    assert sent == [str(f)]


def test_the_loop_does_not_wait_for_an_agent() -> None:
    import threading
    fab, loop, prog, reg, buf, metrics = make()
    release = threading.Event()
    entered = threading.Event()
    slow = AgentRegistry.move

    def blocking_move(self: AgentRegistry, fid: str, sport: int, *, timeout_s: float = 5.0) -> Any:
        entered.set()
        release.wait(10)
        return slow(self, fid, sport, timeout_s=timeout_s)

    reg.move = blocking_move.__get__(reg)                          # type: ignore[method-assign]
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, g = hot_mix(fab, loop, up)
    register(fab, reg, f)
    assert loop.tick(1.05, samples(fab))[0].orders                  # returns with the call open
    assert entered.wait(5) and not release.is_set()
    loop.tick(1.10, samples(fab))                                   # still not blocked
    assert len(loop.pending) == 1
    release.set()
    assert loop.drain_orders(5.0)
    loop.tick(1.15, samples(fab))
    (m,) = loop.pending.values()
    assert m.registry_order_id and reg.order(m.registry_order_id).state == "sent"


def test_digest_reader_survives_a_failing_switch() -> None:
    import threading

    from controller.gor.loop import digest_reader
    fab, loop, prog, reg, buf, metrics = make()
    stop = threading.Event()
    calls = {"n": 0}

    class Conn:
        def get_digest(self, timeout_s: float) -> Any:
            calls["n"] += 1
            if calls["n"] == 1:
                raise ConnectionError("stream closed")
            if calls["n"] == 2:
                return SimpleNamespace(name="flow_sample_t", data=[[0] * 10])
            stop.set()
            return None

    t = threading.Thread(target=digest_reader, args=(loop, L0, Conn(), stop, 0.01))
    t.start()
    t.join(timeout=5)
    assert not t.is_alive() and calls["n"] == 3 and loop.digests.qsize() == 1


def test_run_command_rejects_missing_files() -> None:
    from controller.__main__ import main
    assert main(["run", "--fabric", "/nonexistent.json", "--p4info", "x", "--config", "y"]) == 2


def test_link_down_leaves_the_ecmp_groups_and_the_hash_model() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    done = loop.link_down(L0, up0, reason="test")
    assert done == [f"{L0}/1: s1,s2"]
    members = prog.connections[L0].table("FabricIngress.ecmp.members")
    groups = prog.connections[L0].table("FabricIngress.ecmp.groups")
    assert {dict(k)["meta.ecmp_member"]: v[1]["nexthop_id"] for k, v in members.items()} == \
        {0: port_to(fab, L0, "s1"), 1: port_to(fab, L0, "s2")}
    (gk, (gaction, gparams)), = groups.items()
    assert dict(gk)["meta.ecmp_group_id"] == 1 and gparams == {"base": 0, "size": 2}
    assert loop.engine.hash_model.switch(L0).group(1).members == ("s1", "s2")
    assert all(p.spine != "s0" for p in loop.engine.candidate_paths(L0, L1))
    for f in flows_through(loop, "s1", 5) + [flow_through(loop, "s2")]:
        assert loop.engine.current_path(f, L0, L1).spine in ("s1", "s2")
    assert {(L0, port_to(fab, L0, "s1")), (L0, port_to(fab, L0, "s2"))} <= loop.rounds.follow_up
    rec = [e for e in events(buf) if e["event"] == "link_down"]
    assert rec and rec[0]["link"] == f"{L0}->s0" and rec[0]["groups"] == done
    # a round re-plans on the new groups: every order's port follows them
    loop.tick(1.0, samples(fab, hot_spine="s1"))
    f, g = flows_through(loop, "s1", 2)
    register(fab, reg, f)
    loop.submit_digests(L0, digest_rows(fab, f, port_to(fab, L0, "s1"), 30))
    loop.submit_digests(L0, digest_rows(fab, g, port_to(fab, L0, "s1"), 70))
    (order,) = loop.tick(1.05, samples(fab, hot_spine="s1"))[0].orders
    assert order.path.spine == "s2"
    assert loop.engine.current_path(f.with_sport(order.new_sport), L0, L1).spine == "s2"
    assert loop.link_up(L0, up0) == [f"{L0}/1: s0,s1,s2"]
    assert loop.engine.hash_model.switch(L0).group(1).members == ("s0", "s1", "s2")
    assert loop.link_up(L0, up0) == []                              # already up: nothing to do


def test_a_queued_link_event_is_applied_by_the_next_reaction_not_the_next_poll() -> None:
    # a port-down event must not wait for the telemetry poll (0.1-0.25 s, longer on a
    # loaded machine): every moment of delay black-holes the flows hashed onto the link
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    loop.submit_link_event(L0, up0, up=False, reason="cable cut")
    assert loop.engine.hash_model.switch(L0).group(1).members == ("s0", "s1", "s2")
    loop.react(0.5)
    assert loop.engine.hash_model.switch(L0).group(1).members == ("s1", "s2")
    assert [e["reason"] for e in events(buf) if e["event"] == "link_down"] == ["cable cut"]


def test_a_follow_up_link_no_move_can_relieve_is_dropped_until_its_next_alarm() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.rounds.follow([(L0, up)])
    busy = samples(fab, marks=0)          # the link at 90 %, no marks: no alarm
    for lid in busy:                       # and every other uplink of L0 as full
        if lid.switch == L0 and lid.kind == "uplink":
            busy[lid] = dataclasses.replace(busy[lid], util=0.9)
    f, g = hot_mix(fab, loop, up)
    register(fab, reg, f)
    loop.sampler.enable((L0, up), 1.0)
    rounds = loop.tick(1.05, busy)
    assert len(rounds) == 1 and rounds[0].trigger == (L0, up) and rounds[0].orders == []
    assert (L0, up) not in loop.rounds.follow_up and not loop.busy()


def test_run_command_agent_tls_dir_is_checked_before_anything_starts(tmp_path: Any) -> None:
    from controller.gor.service import _agent_security
    from testbed.pki import FabricPki
    assert _agent_security(None) is None                         # the token fallback
    with pytest.raises(OSError, match="ca.pem"):
        _agent_security(tmp_path / "none")
    FabricPki.create(tmp_path / "pki", ["controller", "b0s0"])
    assert _agent_security(tmp_path / "pki").name == "controller"


def test_no_round_on_the_links_of_a_switch_lost_or_just_back() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.restarts.submit_switch_lost("s0", "no answer")         # the peer of the hot link
    assert loop.tick(1.0, samples(fab)) == []                   # alarm: sampling only
    f, g = hot_mix(fab, loop, up)
    register(fab, reg, f)
    assert loop.tick(1.05, samples(fab)) == []                  # s0 lost: no round
    loop.restarts.observe_health({"s0": SimpleNamespace(stale=False)}, 1.1)
    assert loop.restarts.unsettled("s0", 1.1 + 0.5)
    assert loop.tick(1.6, samples(fab)) == []                   # just back: still none
    hot_mix(fab, loop, up)
    # past the grace, but the alarm began while s0 was lost: its symptom, until it clears
    assert loop.tick(2.2, samples(fab)) == []
    assert loop.tick(2.3, samples(fab, marks=0)) == [] and loop.alarms.alarm_since((L0, up)) is None
    loop.tick(2.35, samples(fab))                                # a new alarm
    hot_mix(fab, loop, up)
    rounds = loop.tick(2.4, samples(fab))                        # settled: the round runs
    assert len(rounds) == 1 and rounds[0].trigger == (L0, up)


def test_an_alarm_begun_while_its_switch_was_away_is_real_after_symptom_max_s() -> None:
    from controller.gor.restarts import SYMPTOM_MAX_S
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.restarts.submit_switch_lost("s0", "no answer")
    assert loop.tick(1.0, samples(fab, marks=0)) == []          # quiet while s0 is lost
    loop.restarts.observe_health({"s0": SimpleNamespace(stale=False)}, 1.1)
    assert loop.tick(1.5, samples(fab)) == []                   # in the grace: the alarm begins
    f, g = hot_mix(fab, loop, up)
    register(fab, reg, f)
    assert loop.tick(2.5, samples(fab)) == []                   # past the grace: a symptom
    hot_mix(fab, loop, up)
    assert loop.tick(1.1 + SYMPTOM_MAX_S - 0.1, samples(fab)) == []
    hot_mix(fab, loop, up)
    rounds = loop.tick(1.1 + SYMPTOM_MAX_S + 0.05, samples(fab))   # still up: congestion
    assert len(rounds) == 1 and rounds[0].trigger == (L0, up)


def test_no_move_onto_a_path_through_a_switch_lost_or_just_back() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    others = sorted(p.peer_node for p in fab.switch(L0).ports.values()
                    if p.kind == "uplink" and p.peer_node != "s0")
    loop.tick(1.0, samples(fab))                                 # alarm on L0 -> s0
    f, g = hot_mix(fab, loop, up)
    register(fab, reg, f)
    for spine in others:                                         # every other spine
        loop.restarts.submit_switch_lost(spine, "no answer")
    rounds = loop.tick(1.05, samples(fab))
    assert len(rounds) == 1 and rounds[0].orders == []           # the round runs, moves nothing
    loop.restarts.observe_health({others[0]: SimpleNamespace(stale=False)}, 1.1)
    hot_mix(fab, loop, up)
    assert all(r.orders == [] for r in loop.tick(1.6, samples(fab)))   # just back: none either
    hot_mix(fab, loop, up)
    rounds = loop.tick(2.2, samples(fab))                        # settled: onto it
    assert [o.flow for r in rounds for o in r.orders] == [f]
    assert rounds[0].orders[0].path.spine == others[0]


def test_agent_done_is_recorded_when_the_counters_confirm_the_move_first() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, g = hot_mix(fab, loop, up)
    host = register(fab, reg, f)
    (order,) = loop.tick(1.05, samples(fab))[0].orders
    new_up = order.path.links[0][1]
    assert loop.drain_orders(5.0)
    (oid, m), = loop.pending.items()
    loop.submit_digests(L0, digest_rows(fab, f.with_sport(order.new_sport), new_up, 5))
    loop.react(1.07)                                   # the sample arrives first …
    assert m.seen_s is not None and m.agent_done_s is None
    reg.report(host, m.registry_order_id, fid_of(f), done=True, sport=order.new_sport)
    loop.tick(1.10, samples(fab))                      # … the agent's report after it
    assert m.agent_done_s == 1.10
    assert [e["event"] for e in events(buf)].count("agent_done") == 1


def test_run_command_refuses_a_bad_probe_plan_naming_the_field(tmp_path: Any,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from controller.__main__ import main
    from topo.model import build_fabric
    files = [str(build_fabric().save(tmp_path / "fabric.json"))]
    for name in ("p4info.txt", "config.json"):            # not read: the plan is refused first
        (tmp_path / name).write_text("")
        files.append(str(tmp_path / name))
    plan = tmp_path / "plan.json"
    plan.write_text('{"dport": 4791, "paths": [{"src_ip": "10.0.0.1", "dst_ip": "10.0.1.2", "sport": -1}]}')
    assert main(["run", "--fabric", files[0], "--p4info", files[1], "--config", files[2],
                 "--probe-plan", str(plan)]) == 2
    assert "$.paths[0].sport: -1 is not a UDP port" in capsys.readouterr().err


def test_a_hosts_late_move_claim_does_not_freeze_a_restarted_gor() -> None:
    # sec-audit5: in a restarted registry's first MOVE_CLAIMS_S (10 s) a host's agent may
    # say its flow moved recently (a move of the predecessor). Host b0s0's own word, 9 s
    # after the restart, "moved 0 s ago" held every round of GOR (every host's links)
    # until 9 + move_settle_s and rested the flow until 9 + cooldown_s. A move the
    # registry did not see was made before it started: the claim is dated at its start.
    t = registry_loop(1.0)                                   # the registry (re)started at 1.0
    fab, now, reg, loop, up, f = t.fab, t.now, t.reg, t.loop, t.up, t.f
    host = next(h.name for h in fab.hosts if any(n.ip == f.src for n in h.nics))
    now[0] = 10.0
    reg.register(host, "127.0.0.1:1", "i1",
                 [HostFlow(fid_of(f), f.src, f.dst, f.sport, 7).with_move_age(0.0)])
    assert reg.flows(host)[0].moved_s_ago == pytest.approx(9.0)      # dated at the start
    assert reg.claims_clamped == 1
    rounds = loop.tick(10.0, samples(fab))
    assert loop.rounds.settling_until_s < 10.0, "a host's claim held GOR's rounds"
    assert [r.trigger for r in rounds] == [(L0, up)]               # the hot link gets its round
    assert loop.book.resting(f, 10.5) and not loop.book.resting(f, 11.05)   # rests until 1 + 10 s


def test_a_hosts_late_move_report_does_not_freeze_gor() -> None:
    # sec-audit5: GOR holds every round for move_settle_s after a move its registry learnt
    # of. A host that accepted an order and held back its report (the registry keeps closed
    # orders and takes a late report) reported it done 100 s later: every round of GOR,
    # every host's links, was held again, once per report it had kept. A done report now
    # dates the move no later than MOVE_REPORT_S (12 s) after its order.
    t = registry_loop(1.0)                                   # the registry (re)started at 1.0
    fab, now, reg, loop, up, f = t.fab, t.now, t.reg, t.loop, t.up, t.f
    host = register(fab, reg, f)
    order = reg.new_order(fid_of(f), 50001)            # GOR's order at 1.0, never reported …
    now[0] = 101.0
    register(fab, reg, f)
    reg.report(host, order.order_id, fid_of(f), done=True, sport=f.sport)   # … until 101.0
    assert reg.flows(host)[0].moved_s_ago == pytest.approx(88.0)   # dated at 1.0 + 12 s
    rounds = loop.tick(101.0, samples(fab))
    assert loop.rounds.settling_until_s < 101.0, "a host's late report held GOR's rounds"
    assert [r.trigger for r in rounds] == [(L0, up)]
