"""GOR main loop with fake switches and a registry whose agent is simulated: alarm →
sampling → digests → decision → order → confirmation, and the loop surviving bad input."""
from __future__ import annotations

import io
import json
from types import SimpleNamespace
from typing import Any, Optional

from astral_proto.flows import HostFlow
from controller.fabric_setup import plan_fabric, switch_id_of
from controller.gor.decisions import FlowKey
from controller.gor.log import DecisionLog
from controller.gor.loop import (OVERRIDE_ACTION, OVERRIDE_TABLE, SAMPLING_ACTION, SAMPLING_TABLE,
                                 GorLoop)
from controller.gor.metrics import GorMetrics, parse_metrics
from controller.gor.telemetry import LinkId, LinkSample
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

    answer = "accept"          # accept | refuse | raise

    def move(self, fid: str, sport: int, *, timeout_s: float = 5.0) -> Any:
        if self.answer == "raise":
            raise ConnectionError("agent unreachable")
        o = self.new_order(fid, sport)
        if self.answer == "refuse":
            self.report(o.host, o.order_id, fid, done=False, sport=0, error="busy")
            return o, SimpleNamespace(accepted=False, reason="busy")
        return o, SimpleNamespace(accepted=True, reason="")


def fabric() -> Fabric:
    return build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1, spines=3))


def make(agent: bool = True) -> tuple[Fabric, GorLoop, FakeProgrammer, AgentRegistry, io.StringIO, GorMetrics]:
    fab = fabric()
    prog = FakeProgrammer(fab)
    reg = AgentRegistry.from_fabric(fab, b"secret")
    buf, metrics = io.StringIO(), GorMetrics()
    loop = GorLoop(fab, prog, reg, period_s=0.05, safety=0.75, top_n=4,
                   log=DecisionLog(buf), metrics=metrics, one_in_n=100_000)
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


def flow_through(loop: GorLoop, spine: str) -> FlowKey:
    for sport in range(49152, 65536):
        f = FlowKey(SRC, DST, 17, sport, 4791)
        p = loop.engine.current_path(f, L0, L1)
        if p is not None and p.spine == spine:
            return f
    raise AssertionError("no flow through " + spine)


def digest_rows(fab: Fabric, f: FlowKey, port: int, n: int = 40) -> list[dict[str, int]]:
    """``n`` samples of 1000 bytes at 1 in 100,000: 0.8 Gb/s each → 32 Gb/s."""
    import ipaddress
    sid = switch_id_of(fab.switch(L0), fab)
    row = {"switch_id": sid, "src_addr": int(ipaddress.IPv4Address(f.src)),
           "dst_addr": int(ipaddress.IPv4Address(f.dst)), "protocol": 17, "src_port": f.sport,
           "dst_port": f.dport, "ingress_port": 1, "egress_port": port, "qdepth": 20,
           "packet_length": 1000}
    return [dict(row) for _ in range(n)]


def events(buf: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def moves(metrics: GorMetrics) -> dict[str, float]:
    return {s.labels["outcome"]: s.value for s in parse_metrics(metrics.render())
            if s.name == "gor_moves_total"}


def test_alarm_sampling_digests_decision_move_confirmed() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    f = flow_through(loop, "s0")
    host = next(h.name for h in fab.hosts if any(n.ip == SRC for n in h.nics))
    reg.register(host, "127.0.0.1:1", "i1", [HostFlow("f1", SRC, DST, f.sport, 7)])
    up = port_to(fab, L0, "s0")
    assert loop.tick(1.0, samples(fab)) == []                       # alarm: sampling only
    assert prog.connections[L0].table(SAMPLING_TABLE) == {
        (("standard_metadata.egress_spec", up),): (SAMPLING_ACTION, {"one_in_n": 100_000})}
    raised = [e for e in events(buf) if e["event"] == "alarm_raised"]
    assert {e["link"] for e in raised} >= {f"{L0}->s0"} and raised[0]["sampling"] == 100_000
    loop.submit_digests(L0, SimpleNamespace(name="flow_sample_t", data=digest_rows(fab, f, up)))
    rounds = loop.tick(1.05, samples(fab))
    assert len(rounds) >= 1 and rounds[0].trigger == (L0, up)
    order = rounds[0].orders[0]
    assert order.flow == f and order.path.spine in ("s1", "s2")
    assert loop.engine.current_path(f.with_sport(order.new_sport), L0, L1) == order.path
    (oid, pm), = loop.pending.items()
    assert reg.order(oid).sport == order.new_sport and reg.order(oid).state == "sent"
    reg.report(host, oid, "f1", done=True, sport=order.new_sport)   # the agent moved it
    loop.tick(1.10, samples(fab))
    assert loop.pending == {}
    ev = [e["event"] for e in events(buf)]
    for name in ("flows_chosen", "path_chosen", "order_sent", "order_confirmed"):
        assert name in ev
    assert ev.index("order_sent") < ev.index("order_confirmed")
    assert moves(metrics)["sent"] == 1 and moves(metrics)["confirmed"] == 1
    assert reg.flow("f1").sport == order.new_sport
    loop.tick(2.5, samples(fab))                                    # not re-moved in cooldown
    assert moves(metrics)["sent"] == 1


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
    f = flow_through(loop, "s0")
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    loop.submit_digests(L0, digest_rows(fab, f, up))
    rounds = loop.tick(1.05, samples(fab))
    order = rounds[0].orders[0]
    assert type(order).__name__ == "OverrideOrder"
    ov = prog.connections[L0].table(OVERRIDE_TABLE)
    (key, (action, params)), = ov.items()
    assert action == OVERRIDE_ACTION and params == {"nexthop_id": order.path.links[0][1]}
    assert dict(key)["hdr.udp.src_port"] == f.sport and params["nexthop_id"] != up
    ev = [e["event"] for e in events(buf)]
    assert "order_sent" in ev and "order_confirmed" in ev and loop.pending == {}


def test_malformed_digest_does_not_stop_the_loop() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    f = flow_through(loop, "s0")
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    loop.submit_digests(L0, [[1, 2, 3]])                            # wrong field count
    loop.submit_digests(L0, [{"switch_id": 999}])                   # missing fields
    loop.submit_digests(L0, 42)                                     # not a digest at all
    loop.submit_digests(L0, digest_rows(fab, f, up))
    rounds = loop.tick(1.05, samples(fab))
    assert loop.flows.malformed == 2 and loop.digest_errors == 1
    assert rounds and rounds[0].orders                               # the good digests count


def test_switch_that_does_not_answer_does_not_stop_the_loop() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    f = flow_through(loop, "s0")
    up = port_to(fab, L0, "s0")
    prog.connections[L0].fail = TimeoutError("deadline exceeded")
    prog.connections["s0"].fail = TimeoutError("deadline exceeded")
    loop.tick(1.0, samples(fab))                                    # writes fail, loop goes on
    assert loop.sampling.get((L0, up)) is None and loop.errors
    loop.submit_digests(L0, digest_rows(fab, f, up))
    rounds = loop.tick(1.05, samples(fab))                          # override write fails too
    assert rounds and rounds[0].orders
    assert "order_rolled_back" in {e["event"] for e in events(buf)}
    assert moves(metrics)["rolled_back"] == 1
    prog.connections[L0].fail = None                                # it answers again
    loop.tick(1.10, samples(fab))
    assert (L0, up) in loop.sampling
    assert prog.connections[L0].table(SAMPLING_TABLE)


def test_agent_refusal_retries_then_rolls_back_and_unreachable_agent() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    f = flow_through(loop, "s0")
    host = next(h.name for h in fab.hosts if any(n.ip == SRC for n in h.nics))
    reg.register(host, "127.0.0.1:1", "i1", [HostFlow("f1", SRC, DST, f.sport, 7)])
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    loop.submit_digests(L0, digest_rows(fab, f, up))
    loop.tick(1.05, samples(fab))
    (oid, pm), = loop.pending.items()
    reg.report(host, oid, "f1", done=False, sport=f.sport, error="qp busy")
    loop.tick(1.10, samples(fab))                                   # retried once
    assert moves(metrics)["retried"] == 1 and len(loop.pending) == 1
    loop.tick(1.10 + loop.confirm_timeout_s, samples(fab))          # no report: rolled back
    assert loop.pending == {} and moves(metrics)["rolled_back"] == 1
    reg.answer = "raise"
    loop.moved.clear()
    loop.submit_digests(L0, digest_rows(fab, f, up))
    loop.tick(6.0, samples(fab))                                    # agent call fails
    assert moves(metrics)["rolled_back"] == 2 and loop.pending == {}


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
