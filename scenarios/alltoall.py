"""``make run SCENARIO=alltoall``: an MoE all-to-all between two blocks on the live fabric,
first with random source ports (plain ECMP), then with TCCL's hash-orthogonal ports, then
the random ports again with GOR re-routing.

1. **Flows**: every NIC of block 0 on one rail sends to every NIC of block 1 on that rail
   and back (:func:`alltoall_pairs`; 2 × 2 × 2 = 8 flows on the default fabric, one
   NIC-emulator QP each, DCQCN on), each a fixed transfer of ``messages`` RDMA WRITE
   messages: an all-to-all is done when its last flow is.
2. **Capacity**: every leaf uplink drains at a queue rate sized so that an even spread
   runs at :data:`EVEN_UTIL` (85 %) of it: a collision (three flows where two belong)
   overloads the uplink and stretches the transfer, as it would an MoE layer.
3. **Random phase**: source ports from the seed; a seed whose ports the hash model spreads
   evenly is drawn again (printed), so the phase shows what a collision costs.
4. **TCCL phase**: the same transfers with ports from ``host.tccl.ports.PortPlanner`` on
   the programmed hash model (``testbed.traffic.plan_ports(..., "tccl")``; on dual-port
   NICs the NIC port of every QP is planned with its source port, ``host.tccl.dualport``).
5. **GOR phase**: the random phase's ports again, with GOR on (``scenarios.gor_session``: its
   loop on the telemetry ticks, every sender with its TCCL agent): what re-routing after
   the fact gives next to ports that never collide. GOR moves a flow only to a path that
   stays under its 75 % threshold; with an even spread at 85 % no such path exists, and
   the phase says so (``orders``, ``rejected``).

Per phase (:class:`PhaseResult`): per-uplink tx packets from the switches' counters
(settled), busiest ÷ mean over the source-leaf uplinks (measured and as predicted),
completion (first data packet → last acknowledgement of any flow, from the NIC
reports' monotonic times) and flows delivered (every message received); for the GOR phase
also its orders and the reasons its rounds rejected moves. GOR is off in the first two
phases: there the ports alone must balance the uplinks.
``runs/<time>/report.md`` gets the plots and a per-phase section.

>>> from topo.model import build_fabric
>>> len(alltoall_pairs(build_fabric(), rail=0))
8
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from controller.fabric.tiers import TierModel
from scenarios.alltoall_report import append_alltoall, poll_fabric
from scenarios.gor_session import GorSession, source_uplinks
from scenarios.report import FlowRecord, ScenarioRecord, new_run_dir, write_report
from testbed.queues import clear_rates, set_uplink_rates
from testbed.traffic import (NicFleet, NicOptions, build_flows, plan_ports, read_uplink_tx,
                             settled_uplink_tx)

EVEN_UTIL = 0.85
MESSAGES = 16
MESSAGE_BYTES = 16384
MAX_DRAWS = 200
LINGER_S = 0.5


@dataclass(slots=True)
class PhaseResult:
    """One phase of the all-to-all (``ports``: ``random`` or ``tccl``)."""

    ports: str
    flows: list[FlowRecord] = field(default_factory=list)
    predicted: dict[str, int] = field(default_factory=dict)
    uplink_tx: dict[str, int] = field(default_factory=dict)
    max_over_mean: float = 0.0
    predicted_max_over_mean: float = 0.0
    completion_s: Optional[float] = None
    delivered: int = 0
    lost_pkts: int = 0
    t_start_s: float = 0.0
    t_end_s: float = 0.0
    errors: list[str] = field(default_factory=list)
    orders: int = 0
    confirmed: int = 0
    rejected: list[str] = field(default_factory=list)
    core_predicted: dict[str, int] = field(default_factory=dict)
    core_tx: dict[str, int] = field(default_factory=dict)
    core_max_over_mean: float = 0.0
    core_predicted_max_over_mean: float = 0.0

    @property
    def all_delivered(self) -> bool:
        """Every flow's messages all received, and no process error."""
        return bool(self.flows) and self.delivered == len(self.flows) and not self.errors


@dataclass(slots=True)
class AllToAllResult:
    """What the scenario measured: both phases, the queue rate, the seed, the run dir."""

    status: int
    run_dir: Optional[Path] = None
    seed: int = 0
    queue_rate_pps: float = 0.0
    phases: dict[str, PhaseResult] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def alltoall_pairs(fabric: Any, rail: int = 0, blocks: Optional[tuple[int, int]] = None
                   ) -> list[tuple[str, str]]:
    """(src IP, dst IP) for every NIC on ``rail`` of one block to every NIC on ``rail`` of
    the other, both ways (the first block's sources first). ``blocks``: two blocks of pod
    0; default: the first two (pod, block) groups — blocks 0 and 1, or on a fabric of one
    block per pod (``topo/specs/pod2-dualport.yaml``) block 0 of pods 0 and 1, whose flows
    cross the core tier.

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> alltoall_pairs(build_fabric(load_spec("topo/specs/pod2-dualport.yaml")))[:2]
    [('10.0.0.1', '10.0.2.1'), ('10.0.0.1', '10.0.2.2')]
    """
    def group(h: Any) -> tuple[int, int]:
        return (int(getattr(h, "pod", 0) or 0), h.block)

    groups = sorted({group(h) for h in fabric.hosts})
    a, b = groups[:2] if blocks is None and len(groups) > 1 else (
        (0, (blocks or (0, 1))[0]), (0, (blocks or (0, 1))[1]))
    nics = {g: [n.ip for h in fabric.hosts if group(h) == g for n in h.nics if n.rail == rail]
            for g in (a, b)}
    if not nics[a] or not nics[b]:
        raise ValueError(f"no NIC on rail {rail} in block {a[1]} (pod {a[0]}) or block "
                         f"{b[1]} (pod {b[0]})")
    return ([(s, d) for s in nics[a] for d in nics[b]]
            + [(s, d) for s in nics[b] for d in nics[a]])


def spread(load: dict[str, float]) -> float:
    """Busiest ÷ mean (1.0 = balanced; 0.0 when nothing moved).

    >>> spread({"a": 3, "b": 1})
    1.5
    """
    vals = list(load.values())
    return round(max(vals) / (sum(vals) / len(vals)), 3) if vals and sum(vals) else 0.0


def even_floor(load: dict[str, int]) -> float:
    """The lowest busiest ÷ mean whole flows can give over ``load``'s links: the busiest
    link carries at least ceil(flows / links). With fewer flows than links (the all-to-all
    on the two-pod spec: 8 flows over 16 spine → core links) that floor is above 1.0.

    >>> even_floor({"a": 1, "b": 1, "c": 0, "d": 0}), even_floor({"a": 2, "b": 0})
    (2.0, 1.0)
    """
    flows, links = sum(load.values()), len(load)
    return round(math.ceil(flows / links) / (flows / links), 3) if flows and links else 0.0


def predicted_load(flows: Sequence[Any], uplinks: Sequence[str]) -> dict[str, int]:
    """Flows per uplink as the hash model predicts (every uplink listed)."""
    out = {u: 0 for u in uplinks}
    for f in flows:
        if f.predicted_uplink is not None:
            out[f.predicted_uplink] = out.get(f.predicted_uplink, 0) + 1
    return out


def core_uplinks(fabric: Any, flows: Sequence[Any]) -> dict[str, tuple[str, int]]:
    """``"s0:5->c0.0"`` → (spine, port) for every spine → core egress of the spines above
    the flows' source leaves (every port's leaf of a dual-port NIC): the third tier's
    share of the all-to-all; empty on a fabric of two tiers.

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> from testbed.traffic import build_flows
    >>> fab = build_fabric(load_spec("topo/specs/pod2-dualport.yaml"))
    >>> sorted(core_uplinks(fab, build_flows(fab, [("10.0.0.1", "10.0.2.1")], [50000])))[:2]
    ['s0:5->c0.0', 's0:6->c0.0']
    >>> core_uplinks(build_fabric(), build_flows(build_fabric(), [("10.0.0.1", "10.1.0.1")], [50000]))
    {}
    """
    leaves = set(source_uplinks(fabric, flows).values())
    spines = {fabric.switch(leaf).ports[port].peer_node for leaf, port in leaves}
    return {f"{sw}:{p}->{info.peer_node}": (sw, p) for sw in sorted(spines)
            for p, info in sorted(fabric.switch(sw).ports.items())
            if info.kind == "uplink" and fabric.switch(info.peer_node).role == "core"}


def predicted_core_load(fabric: Any, flows: Sequence[Any], links: Sequence[str]) -> dict[str, int]:
    """Flows per spine → core link (``links``, every one listed) as
    :class:`controller.fabric.tiers.TierModel` walks each flow from its bound NIC port."""
    out = {name: 0 for name in links}
    if not links:
        return out
    tiers = TierModel.of(fabric)
    nics = {n.ip: n for h in fabric.hosts for n in h.nics}
    for f in flows:
        path = tiers.path(nics[f.src_ip], int(getattr(f, "nic_port", 0) or 0), f.dst_ip, f.sport)
        for sw, port in path.hops:
            name = f"{sw}:{port}->{fabric.switch(sw).ports[port].peer_node}"
            if name in out:
                out[name] += 1
    return out


def plan_phase(fabric: Any, programmer: Any, pairs: Sequence[tuple[str, str]], ports: str,
               seed: int) -> list[Any]:
    """The NIC flows of ``pairs`` with ``ports`` (random from ``seed``, or TCCL's)."""
    model = programmer.hash_model()
    chosen = plan_ports(fabric, pairs, ports, seed, model)     # TCCL: NIC ports planned too
    return build_flows(fabric, pairs, chosen.sports, model, programmer.member_ports,
                       chosen.nic_ports)


def draw_colliding(fabric: Any, programmer: Any, pairs: Sequence[tuple[str, str]],
                   uplinks: Sequence[str], seed: int,
                   say: Callable[[str], None] = print) -> tuple[int, list[Any]]:
    """(seed, flows): seeds from ``seed`` on until the hash model puts more flows on one
    uplink than an even spread would."""
    even = math.ceil(len(pairs) / max(1, len(uplinks)))
    for k in range(MAX_DRAWS):
        flows = plan_phase(fabric, programmer, pairs, "random", seed + k)
        busiest = max(predicted_load(flows, uplinks).values())
        if busiest > even:
            return seed + k, flows
        say(f"alltoall: seed {seed + k}: random ports spread evenly ({busiest} flows on the "
            f"busiest uplink): drawing again")
    raise RuntimeError(f"no colliding draw in {MAX_DRAWS} seeds from {seed}")


def _sender_flows(procs: Sequence[Any]) -> dict[tuple[str, int], dict[str, Any]]:
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for p in procs:
        for fl in p.report.get("flows", []):
            name = str(fl.get("flow", ""))
            tail = name.rsplit(" ", 1)[-1]
            out[(name.split(":", 1)[0] + "/" + str(fl.get("role")),
                 int(tail) if tail.isdigit() else -1)] = fl
    return out


def run_phase(fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
              flows: Sequence[Any], ports: str, uplinks: dict[str, tuple[str, int]],
              flow_rate_pps: float, run_dir: Path, messages: int = MESSAGES,
              say: Callable[[str], None] = print, gor: Any = None,
              rate_pps: float = 0.0) -> PhaseResult:
    """Run one phase's transfers to completion; its figures. ``gor``: the
    ``ScenarioOptions`` to run GOR with (a :class:`scenarios.gor_session.GorSession` around
    the phase, uplinks draining ``rate_pps``), None for none."""
    if gor is not None:
        return _run_gor_phase(fabric, programmer, state, save_state, flows, ports, uplinks,
                              flow_rate_pps, run_dir, messages, say, gor, rate_pps)
    conns = programmer.connections
    res = PhaseResult(ports, [FlowRecord(f.label, f.src_ip, f.dst_ip, f.sport,
                                         str(f.predicted_uplink)) for f in flows])
    counted = _predict(res, fabric, flows, uplinks)
    fleet = NicFleet(state, save_state, run_dir / f"nic-{ports}")
    budget_s = 120.0
    before = read_uplink_tx(conns, counted)
    res.t_start_s = time.monotonic()
    try:
        fleet.start(flows, budget_s, NicOptions(line_rate_pps=flow_rate_pps,
                                                message_bytes=MESSAGE_BYTES),
                    sender_args=lambda fl: ["--messages", str(messages)])
        fleet.wait_senders(budget_s + 15)
        after = settled_uplink_tx(conns, counted)
    finally:
        res.errors = fleet.stop()
    _figures(res, flows, counted, before, after, fleet.procs, messages, say)
    return res


def _run_gor_phase(fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
                   flows: Sequence[Any], ports: str, uplinks: dict[str, tuple[str, int]],
                   flow_rate_pps: float, run_dir: Path, messages: int,
                   say: Callable[[str], None], opts: Any, rate_pps: float) -> PhaseResult:
    conns = programmer.connections
    res = PhaseResult(ports, [FlowRecord(f.label, f.src_ip, f.dst_ip, f.sport,
                                         str(f.predicted_uplink)) for f in flows])
    counted = _predict(res, fabric, flows, uplinks)
    budget_s = 120.0
    (run_dir / "gor").mkdir(parents=True, exist_ok=True)
    session = GorSession(fabric, programmer, state, save_state, flows, rate_pps, opts,
                         run_dir / "gor", say=lambda _: None, live=False)
    before = read_uplink_tx(conns, counted)
    res.t_start_s = time.monotonic()
    with session:
        session.start_flows(budget_s, NicOptions(line_rate_pps=flow_rate_pps, message_bytes=MESSAGE_BYTES),
                            sender_extra=["--messages", str(messages)])
        session.fleet.wait_senders(budget_s + 15)
        after = settled_uplink_tx(conns, counted)
    res.errors = list(session.errors)
    ev = session.events
    res.orders = sum(1 for e in ev if e.get("event") == "order_sent")
    res.confirmed = sum(1 for e in ev if e.get("event") == "order_confirmed")
    res.rejected = sorted({f"{r.get('reason')}: {r.get('detail')}" for e in ev if e.get("event") == "round"
                           for r in e.get("rejected", [])})
    _figures(res, flows, counted, before, after, session.fleet.procs, messages, say)
    say(f"alltoall: GOR: {res.orders} orders, {res.confirmed} confirmed; "
        f"{sum(1 for e in ev if e.get('event') == 'round')} rounds; rejected moves: "
        f"{', '.join(res.rejected) or 'none'}; decision log {session.dlog_path}")
    return res


def _predict(res: PhaseResult, fabric: Any, flows: Sequence[Any],
             uplinks: dict[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
    """Fill the phase's predictions (leaf uplinks, and spine → core links on three tiers);
    every counter the phase reads (uplinks, then the core links)."""
    res.predicted = predicted_load(flows, sorted(uplinks))
    res.predicted_max_over_mean = spread({u: float(n) for u, n in res.predicted.items()})
    cores = core_uplinks(fabric, flows)
    res.core_predicted = predicted_core_load(fabric, flows, sorted(cores))
    res.core_predicted_max_over_mean = spread({u: float(n) for u, n in res.core_predicted.items()})
    return {**uplinks, **cores}


def _figures(res: PhaseResult, flows: Sequence[Any], uplinks: dict[str, tuple[str, int]],
             before: dict[str, int], after: dict[str, int], procs: Sequence[Any], messages: int,
             say: Callable[[str], None]) -> None:
    """Fill the phase's figures from the counters and the NIC reports."""
    res.t_end_s = time.monotonic()
    res.uplink_tx = {u: after[u] - before[u] for u in uplinks if u not in res.core_predicted}
    res.max_over_mean = spread({u: float(n) for u, n in res.uplink_tx.items()})
    res.core_tx = {u: after[u] - before[u] for u in res.core_predicted}
    res.core_max_over_mean = spread({u: float(n) for u, n in res.core_tx.items()})
    reports = _sender_flows(procs)
    firsts, lasts = [], []
    for f, rec in zip(flows, res.flows):
        s = reports.get((f.src_ip + "/sender", f.qpn), {})
        r = reports.get((f.src_ip + "/receiver", f.qpn), {})
        rec.sent = int(s.get("sent_pkts", 0))
        res.lost_pkts += int(r.get("lost_pkts", 0))
        if int(r.get("messages_received", 0)) >= messages and int(s.get("acked_messages", 0)) >= messages:
            res.delivered += 1
        if s.get("first_s") is not None and s.get("last_s") is not None:
            firsts.append(float(s["first_s"]))
            lasts.append(float(s["last_s"]))
    if firsts and res.delivered == len(flows):
        res.completion_s = round(max(lasts) - min(firsts), 3)
    say(f"alltoall: {res.ports} ports: uplink tx {res.uplink_tx}; max/mean {res.max_over_mean} "
        f"(predicted {res.predicted_max_over_mean}); {res.delivered}/{len(flows)} flows "
        f"delivered; completion {res.completion_s} s")
    if res.core_tx:
        say(f"alltoall: {res.ports} ports: spine -> core tx {res.core_tx}; max/mean "
            f"{res.core_max_over_mean} (predicted {res.core_predicted_max_over_mean})")
    for e in res.errors:
        say(f"alltoall: {e}")


def run_alltoall(fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
                 opts: Any, say: Callable[[str], None] = print) -> AllToAllResult:
    """Run the scenario on a running, programmed testbed (``opts``: ``ScenarioOptions``)."""
    pairs = alltoall_pairs(fabric, opts.rail)
    seed0 = opts.seed if opts.seed is not None else random.SystemRandom().randrange(1 << 30)
    probe = plan_phase(fabric, programmer, pairs, "random", seed0)
    uplinks = source_uplinks(fabric, probe)
    seed, rnd_flows = draw_colliding(fabric, programmer, pairs, sorted(uplinks), seed0, say)
    tccl_flows = plan_phase(fabric, programmer, pairs, "tccl", seed)
    rate = float(opts.queue_rate_pps or math.ceil(len(pairs) * opts.flow_rate_pps
                                                  / len(uplinks) / EVEN_UTIL))
    run_dir = new_run_dir(opts.runs_root)
    res = AllToAllResult(1, run_dir, seed, rate)
    record = ScenarioRecord("alltoall", seed, state.target, opts.rail, opts.flow_rate_pps, rate,
                            0.0, uplinks=sorted(uplinks))
    say(f"alltoall: MoE all-to-all on rail {opts.rail}: every NIC of block 0 to every NIC of "
        f"block 1 and back, {len(pairs)} NIC-emulator flows (DCQCN) of {MESSAGES} x "
        f"{MESSAGE_BYTES} B at {opts.flow_rate_pps:g} pps each; GOR off")
    say(f"alltoall: every leaf uplink drains {rate:g} pps: an even spread runs at "
        f"{100 * len(pairs) * opts.flow_rate_pps / len(uplinks) / rate:.0f}%")
    rates = set_uplink_rates(fabric, state, rate, say)
    try:
        with poll_fabric(fabric, programmer, rates, opts.period_s, sorted(uplinks)) as (poller, t0):
            for ports, flows in (("random", rnd_flows), ("tccl", tccl_flows), ("gor", rnd_flows)):
                say(f"alltoall: phase {ports} ports" + {
                    "random": f" (seed {seed})", "tccl": " (PortPlanner on the programmed hash model)",
                    "gor": f" (the random ports of seed {seed}, GOR on)"}[ports])
                for f in flows:
                    say(f"  {f.label:<22} {f.src_ip} -> {f.dst_ip}  predicted uplink {f.predicted_uplink}")
                record.event(time.monotonic() - t0, f"{ports} ports: {len(flows)} flows start")
                phase = run_phase(fabric, programmer, state, save_state, flows, ports, uplinks,
                                  opts.flow_rate_pps, run_dir, say=say,
                                  gor=opts if ports == "gor" else None, rate_pps=rate)
                record.event(phase.t_end_s - t0, f"{ports} ports: done, completion "
                             f"{phase.completion_s} s, max/mean {phase.max_over_mean}")
                res.phases[ports] = phase
            series = poller.series
    finally:
        if rates:
            clear_rates(state, rates)
    for ports, phase in res.phases.items():
        for fr in phase.flows:
            record.flows.append(FlowRecord(f"{ports} {fr.label}", fr.src_ip, fr.dst_ip, fr.sport,
                                           fr.predicted_uplink, fr.sent))
        res.errors += phase.errors
    record.notes.append("the flow table and the per-uplink table cover both phases (random "
                        "then TCCL ports); the per-phase figures are in the all-to-all section")
    write_report(run_dir, record, series)
    append_alltoall(run_dir, res)
    r, t, g = res.phases.get("random"), res.phases.get("tccl"), res.phases.get("gor")
    if r and t:
        say(f"alltoall: uplink max/mean random {r.max_over_mean} -> TCCL {t.max_over_mean}; "
            f"completion {r.completion_s} s -> {t.completion_s} s; delivered "
            f"{r.delivered}/{len(r.flows)} and {t.delivered}/{len(t.flows)}")
        if r.core_tx:
            say(f"alltoall: spine -> core max/mean random {r.core_max_over_mean} -> TCCL "
                f"{t.core_max_over_mean} (predicted {r.core_predicted_max_over_mean} -> "
                f"{t.core_predicted_max_over_mean}; whole flows cannot go under "
                f"{even_floor(t.core_predicted)}: {sum(t.core_predicted.values())} flows over "
                f"{len(t.core_predicted)} links)")
    if g:
        say(f"alltoall: random + GOR: max/mean {g.max_over_mean}, completion {g.completion_s} s, "
            f"delivered {g.delivered}/{len(g.flows)}; {g.orders} GOR orders")
    say(f"alltoall: report {run_dir / 'report.md'} (plots utilisation.png, ecn_marks.png, "
        f"queue_depth.png, alltoall_uplinks.png)")
    res.status = 0 if all(p.all_delivered for p in res.phases.values()) else 1
    return res


__all__ = ["AllToAllResult", "EVEN_UTIL", "MESSAGES", "MESSAGE_BYTES", "PhaseResult",
           "alltoall_pairs", "core_uplinks", "draw_colliding", "even_floor", "predicted_core_load", "plan_phase", "predicted_load", "run_alltoall",
           "run_phase", "spread"]
