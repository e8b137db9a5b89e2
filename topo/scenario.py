"""Scenarios of ``make run`` on a live testbed (``python -m topo.testbed up --scenario NAME``).

``default`` (story v0, before GOR and TCCL exist):

1. every leaf uplink gets a queue rate (p4sim control API ``set_queue_rate``; on BMv2 this
   is not supported here and the scenario runs without: utilisation is then relative to
   link speed);
2. 8 elephants between the two first blocks on one rail, block 0 → block 1, UDP to 4791
   with ECT(0), each with a RANDOM source port drawn from a printed seed;
3. the published hash model (``FabricProgrammer.hash_model()``) predicts each flow's
   uplink; the predicted collisions are printed;
4. ~10 s of traffic while :class:`topo.telemetry.TelemetryPoller` reads every switch's
   tx counters, ECN marks and max queue depth; a live line per interval;
5. flows stopped, re-route skipped (GOR, issue 7; TCCL, issue 6), report and plots
   written to ``runs/<timestamp>/`` (:mod:`topo.report`).

``link-failure`` and ``alltoall`` say they need issue 7 and return 0.

The queue rate is chosen so that an even spread fits: ``1.25 × flows × flow rate ÷
uplinks`` (500 pps for 8 × 100 pps over 2 uplinks), so only a collision overloads a link.

>>> plan = plan_elephants(fab, fp.hash_model(), fp.member_ports, rail=0, seed=7)   # doctest: +SKIP
>>> [f.predicted_uplink for f in plan]                                               # doctest: +SKIP
['b0r0l0->s1', 'b0r0l0->s0', ...]
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from p4src.hashmodel import FabricHashModel, predict_member
from topo.report import (FlowRecord, ScenarioRecord, busiest_over_mean, measured_busiest,
                         new_run_dir, write_report)
from topo.telemetry import LinkId, LinkSample, TelemetryPoller, fabric_links, p4rt_reader
from topo.traffic import ROCE_UDP_PORT, Elephant, start_elephant, stop_elephant

SCENARIOS = ("default", "link-failure", "alltoall")
LEAF_UPLINK_GROUP = 1
SPORT_RANGE = (49152, 65535)
RUNS = Path(__file__).resolve().parents[1] / "runs"
SKIPPED = "GOR (issue 7) and TCCL (issue 6) are not available yet: the re-route step is skipped"


@dataclass(frozen=True, slots=True)
class PlannedFlow:
    """An elephant and the uplink the hash model predicts for it (``"b0r0l0->s1"``)."""

    flow: Elephant
    leaf: str
    predicted_uplink: str


@dataclass(slots=True)
class ScenarioOptions:
    """Knobs of the default scenario (``flows`` elephants at ``flow_rate_pps``)."""

    seed: Optional[int] = None
    rail: int = 0
    flows: int = 8
    flow_rate_pps: float = 100.0
    duration_s: float = 10.0
    period_s: float = 0.5
    queue_rate_pps: Optional[float] = None  # None: 1.25 × even share
    runs_root: Path = RUNS


@dataclass(slots=True)
class ScenarioResult:
    """What a run produced: exit status, run directory, the record and the series."""

    status: int
    run_dir: Optional[Path] = None
    record: Optional[ScenarioRecord] = None
    predicted_busiest: Optional[str] = None
    measured_busiest: Optional[str] = None


def plan_elephants(fabric: Any, model: FabricHashModel,
                   member_ports: Callable[[str, int], dict[str, int]], rail: int, seed: int,
                   count: int = 8) -> list[PlannedFlow]:
    """``count`` elephants from block 0's servers to block 1's on ``rail``, round robin
    over sources then destinations, with distinct random source ports from ``seed``, and
    the predicted uplink of each (leaf ECMP group 1 → member → port → peer)."""
    blocks = sorted({h.block for h in fabric.hosts})
    if len(blocks) < 2:
        raise ValueError("the default scenario needs at least two blocks")
    srcs = [h for h in fabric.hosts if h.block == blocks[0]]
    dsts = [h for h in fabric.hosts if h.block == blocks[1]]
    rng = random.Random(seed)
    sports = rng.sample(range(SPORT_RANGE[0], SPORT_RANGE[1] + 1), count)
    by_name = {s.name: s for s in fabric.switches}
    out = []
    for i in range(count):
        src, dst = srcs[i % len(srcs)], dsts[(i // len(srcs)) % len(dsts)]
        snic = next(n for n in src.nics if n.rail == rail)
        dnic = next(n for n in dst.nics if n.rail == rail)
        flow = Elephant(src.name, snic.ip, dst.name, dnic.ip, sports[i], ROCE_UDP_PORT)
        member = predict_member(model.switch(snic.leaf), LEAF_UPLINK_GROUP, snic.ip, dnic.ip,
                                17, flow.sport, flow.dport)
        port = member_ports(snic.leaf, LEAF_UPLINK_GROUP)[member]
        peer = by_name[snic.leaf].ports[port].peer_node
        out.append(PlannedFlow(flow, snic.leaf, str(LinkId(snic.leaf, port, peer, "uplink"))))
    return out


def collisions(plan: Sequence[PlannedFlow]) -> dict[str, list[str]]:
    """Uplink → labels of the flows predicted on it, for uplinks with more than one.

    >>> e = Elephant("a", "1", "b", "2", 1); collisions([PlannedFlow(e, "l", "l->s0")] * 2)
    {'l->s0': ['a:1->b', 'a:1->b']}
    """
    on: dict[str, list[str]] = {}
    for p in plan:
        on.setdefault(p.predicted_uplink, []).append(p.flow.label)
    return {u: fl for u, fl in sorted(on.items()) if len(fl) > 1}


def _leaf_uplinks(fabric: Any) -> list[tuple[str, int]]:
    return [(sw.name, p) for sw in fabric.switches if sw.role == "leaf"
            for p, info in sorted(sw.ports.items()) if info.kind == "uplink"]


def set_uplink_rates(fabric: Any, state: Any, rate_pps: float,
                     say: Callable[[str], None]) -> dict[tuple[str, int], float]:
    """Set ``rate_pps`` on every leaf uplink through the p4sim control API; the rates set
    (empty on a target without it, e.g. BMv2)."""
    if state.target != "p4sim":
        say(f"scenario: queue rates are unsupported on {state.target} here (p4sim's control "
            "API only): running without them, utilisation relative to link speed")
        return {}
    from p4sim.switchd.control import ControlClient  # noqa: PLC0415 (p4sim target only)
    done: dict[tuple[str, int], float] = {}
    for name, port in _leaf_uplinks(fabric):
        addr = state.switches.get(name, {}).get("control_addr")
        if not addr:
            say(f"scenario: {name} has no control address: its uplinks keep no rate")
            continue
        with ControlClient(addr) as c:
            c.set_queue_rate(rate_pps, port=port)
        done[(name, port)] = rate_pps
    return done


def _clear_rates(state: Any, rates: dict[tuple[str, int], float]) -> None:
    from p4sim.switchd.control import ControlClient  # noqa: PLC0415
    for (name, port) in rates:
        try:
            with ControlClient(state.switches[name]["control_addr"]) as c:
                c.set_queue_rate(0, port=port)
        except Exception:  # noqa: BLE001 — best effort on the way out
            pass


def _live_line(uplinks: Sequence[str]) -> Callable[[float, dict[LinkId, LinkSample]], None]:
    def tick(t_s: float, samples: dict[LinkId, LinkSample]) -> None:
        parts = [f"{l} {s.util_pct:5.1f}% {s.pps:6.0f} pps ecn {s.marks:4d} q {s.max_qdepth:3d}"
                 for l, s in sorted(samples.items(), key=lambda kv: str(kv[0]))
                 if str(l) in uplinks]
        print(f"  t={t_s:5.1f}s  " + " | ".join(parts), flush=True)
    return tick


def run_default(fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
                opts: ScenarioOptions, say: Callable[[str], None] = print) -> ScenarioResult:
    """The default scenario on a running, programmed testbed (see the module docstring)."""
    from topo.mn import ProcRecord, proc_cmdline  # noqa: PLC0415 (keeps this module light)

    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(1 << 31)
    plan = plan_elephants(fabric, programmer.hash_model(), programmer.member_ports,
                          opts.rail, seed, opts.flows)
    leaves = sorted({p.leaf for p in plan})
    by_name = {s.name: s for s in fabric.switches}
    uplinks = [f"{leaf}->{info.peer_node}" for leaf in leaves
               for _, info in sorted(by_name[leaf].ports.items()) if info.kind == "uplink"]
    rate = opts.queue_rate_pps or math.ceil(1.25 * opts.flows * opts.flow_rate_pps
                                            / max(1, len(uplinks)))
    record = ScenarioRecord("default", seed, state.target, opts.rail, opts.flow_rate_pps,
                            None, opts.duration_s, uplinks=uplinks)
    t0 = time.monotonic()
    say(f"scenario default: seed {seed}; {len(plan)} elephants on rail {opts.rail}, "
        f"{opts.flow_rate_pps:g} pps each, UDP dst {ROCE_UDP_PORT}, ECT(0), random source ports")
    rates = set_uplink_rates(fabric, state, rate, say)
    if rates:
        record.queue_rate_pps = rate
        say(f"scenario: every leaf uplink drains at {rate:g} pps (an even spread fits; "
            f"a collision does not)")
        record.event(time.monotonic() - t0, f"leaf uplink queue rates set to {rate:g} pps")
    for p in plan:
        say(f"  {p.flow.label:<22} {p.flow.src_ip} -> {p.flow.dst_ip} sport {p.flow.sport:5d}"
            f"  predicted uplink {p.predicted_uplink}")
    coll = collisions(plan)
    for u, labels in coll.items():
        say(f"scenario: predicted collision on {u}: {len(labels)} elephants ({', '.join(labels)})")
    record.event(time.monotonic() - t0, "predicted load per uplink: " + ", ".join(
        f"{u} {n}" for u, n in sorted({u: sum(1 for p in plan if p.predicted_uplink == u)
                                       for u in uplinks}.items())))
    # Links without a rate of their own (spine downlinks) are measured against the same
    # nominal capacity, so that one heat map compares every link.
    nominal = {(sw.name, p): float(rate) for sw in fabric.switches for p in sw.ports} if rates else {}
    links = fabric_links(fabric, {**nominal, **rates})
    readers = {sw: p4rt_reader(programmer.connection(sw))
               for sw in {pl.link.switch for pl in links}}
    poller = TelemetryPoller(readers, links, opts.period_s, _live_line(uplinks))
    shells = {r.name: r.pid for r in state.procs if r.kind == "host-shell"}
    procs: list[Any] = []
    recs: list[Any] = []
    first_mark: Optional[float] = None
    try:
        poller.start()
        for p in plan:
            proc = start_elephant(p.flow, shells[p.flow.src_host], opts.flow_rate_pps,
                                  opts.duration_s + 5.0)
            procs.append(proc)
        time.sleep(0.2)
        for p, proc in zip(plan, procs):
            rec = ProcRecord(f"elephant {p.flow.label}", proc.pid,
                             proc_cmdline(proc.pid) or "", "traffic")
            recs.append(rec)
            state.procs.append(rec)
        save_state()
        record.event(time.monotonic() - t0, f"{len(plan)} elephants started "
                     f"(PIDs {', '.join(str(p.pid) for p in procs)})")
        say(f"scenario: elephants running for {opts.duration_s:g} s; live per-uplink "
            f"utilisation, ECN marks, max queue depth every {opts.period_s:g} s:")
        end = time.monotonic() + opts.duration_s
        while time.monotonic() < end:
            time.sleep(min(0.1, max(0.0, end - time.monotonic())))
            if first_mark is None:
                for l, ss in poller.series.samples.items():
                    if str(l) in uplinks and any(s.marks for s in ss):
                        first_mark = time.monotonic() - t0
                        record.event(first_mark, f"first ECN marks on {l}")
                        break
    finally:
        for p, proc in zip(plan, procs):
            got = stop_elephant(proc)
            record.flows.append(FlowRecord(p.flow.label, p.flow.src_ip, p.flow.dst_ip,
                                           p.flow.sport, p.predicted_uplink,
                                           int(got.get("sent", 0))))
        for rec in recs:
            if rec in state.procs:
                state.procs.remove(rec)
        if recs:
            save_state()
        time.sleep(min(1.0, opts.period_s * 2))  # let the queues drain into the counters
        poller.stop()
        if rates:
            _clear_rates(state, rates)
    record.event(time.monotonic() - t0, "elephants stopped; queue rates back to unlimited")
    say(f"scenario: {SKIPPED}")
    record.event(time.monotonic() - t0, SKIPPED)
    record.notes.append(SKIPPED)
    if poller.errors:
        record.notes.append(f"telemetry read errors: {len(poller.errors)} "
                            f"(first: {poller.errors[0]})")
    run_dir = new_run_dir(opts.runs_root)
    write_report(run_dir, record, poller.series)
    pred, meas = record.predicted_busiest(), measured_busiest(record, poller.series)
    say(f"scenario: busiest uplink predicted {pred or 'tie'}, measured {meas}; busiest/mean "
        f"{busiest_over_mean(record, poller.series):.2f}; ECN marks on uplinks "
        f"{sum(v for l, v in poller.series.marks().items() if str(l) in uplinks)}")
    say(f"scenario: report {run_dir / 'report.md'} (plots utilisation.png, ecn_marks.png, "
        f"queue_depth.png)")
    return ScenarioResult(0, run_dir, record, pred, meas)


def run_scenario(name: str, fabric: Any, programmer: Any, state: Any,
                 save_state: Callable[[], None], opts: Optional[ScenarioOptions] = None,
                 say: Callable[[str], None] = print) -> ScenarioResult:
    """Run scenario ``name`` (one of :data:`SCENARIOS`) on a running testbed."""
    if name not in SCENARIOS:
        say(f"scenario: unknown scenario {name!r} (known: {', '.join(SCENARIOS)})")
        return ScenarioResult(2)
    if name != "default":
        say(f"scenario {name}: not available until issue 7 (GOR) lands; nothing to run")
        return ScenarioResult(0)
    if programmer is None:
        say("scenario: the switches are not programmed: the scenario cannot run")
        return ScenarioResult(2)
    return run_default(fabric, programmer, state, save_state, opts or ScenarioOptions(), say)


__all__ = ["PlannedFlow", "SCENARIOS", "SKIPPED", "ScenarioOptions", "ScenarioResult",
           "collisions", "plan_elephants", "run_default", "run_scenario", "set_uplink_rates"]
