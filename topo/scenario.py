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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from p4src.hashmodel import FabricHashModel, predict_member
from topo.report import (FlowRecord, ScenarioRecord, busiest_over_mean, measured_busiest,
                         new_run_dir, write_report)
from topo.telemetry import LinkId, LinkSample, TelemetryPoller, fabric_links, p4rt_reader
from topo.traffic import ROCE_UDP_PORT, Elephant, start_elephant, stop_elephant

SCENARIOS = ("default", "gor", "link-failure", "alltoall")
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
    if name == "gor" and programmer is not None:
        story = run_story(fabric, programmer, state, save_state, opts or ScenarioOptions(), say)
        return ScenarioResult(story.status, story.run_dir)
    if name != "default":
        say(f"scenario {name}: not available until issue 7 (GOR) lands; nothing to run")
        return ScenarioResult(0)
    if programmer is None:
        say("scenario: the switches are not programmed: the scenario cannot run")
        return ScenarioResult(2)
    return run_default(fabric, programmer, state, save_state, opts or ScenarioOptions(), say)


__all__ = ["PlannedFlow", "SCENARIOS", "SKIPPED", "ScenarioOptions", "ScenarioResult",
           "collisions", "plan_elephants", "run_default", "run_scenario", "set_uplink_rates"]


# ---------------------------------------------------------------------- the GOR story
GOR_DIR = Path(__file__).resolve().parents[1] / "build" / "gor"


@dataclass(slots=True)
class StoryResult:
    """What the GOR story measured: decision log records, per-uplink tx before/after the
    first confirmed move, and the figures of ``bench/gor_testbed_bench.py``."""

    status: int
    run_dir: Optional[Path] = None
    events: list[dict[str, Any]] = field(default_factory=list)
    first_alarm_s: Optional[float] = None
    last_confirm_s: Optional[float] = None
    uplink_pps_before: dict[str, float] = field(default_factory=dict)
    uplink_pps_after: dict[str, float] = field(default_factory=dict)
    max_util_after_pct: Optional[float] = None
    drops_during_move: Optional[int] = None

    @property
    def loop_s(self) -> Optional[float]:
        """First alarm → last confirmed move (seconds)."""
        if self.first_alarm_s is None or self.last_confirm_s is None:
            return None
        return round(self.last_confirm_s - self.first_alarm_s, 3)

    @staticmethod
    def spread(pps: dict[str, float]) -> float:
        """max / mean of per-uplink rates (1.0 = balanced)."""
        vals = list(pps.values())
        return round(max(vals) / (sum(vals) / len(vals)), 3) if vals and sum(vals) else 0.0


def write_credentials(hosts: Sequence[str], secret: bytes, root: Path = GOR_DIR) -> dict[str, Path]:
    """``root/creds-<host>.json`` (mode 0600, directory 0700) for every host."""
    from astral_proto.auth import HostCredentials  # noqa: PLC0415
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o700)
    return {h: HostCredentials.derive(secret, h).save(root / f"creds-{h}.json") for h in hosts}


def run_story(fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
              opts: ScenarioOptions, say: Callable[[str], None] = print) -> StoryResult:
    """Collisions → ECN alarms → GOR re-routes through the agents → balanced uplinks
    (NIC-emulator elephants with random ports, GorLoop in this process)."""
    import os  # noqa: PLC0415
    import threading  # noqa: PLC0415

    from controller.gor.log import DecisionLog, read_log  # noqa: PLC0415
    from controller.gor.loop import GorLoop, digest_reader, enable_digests  # noqa: PLC0415
    from controller.gor.telemetry import TelemetryPoller as GorPoller  # noqa: PLC0415
    from controller.gor.telemetry import fabric_links as gor_links  # noqa: PLC0415
    from controller.gor.telemetry import p4rt_reader as gor_reader  # noqa: PLC0415
    from controller.registry import FlowRegistry, serve_registry  # noqa: PLC0415
    from host.traffic import NicFleet, NicOptions, TrafficOptions, plan_flows, sender_command  # noqa: PLC0415

    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(1 << 31)
    flows = plan_flows(fabric, programmer, TrafficOptions(opts.flows, opts.rail, port_mode="random",
                                                          seed=seed))
    leaves = sorted({f.leaf for f in flows})
    by_name = {s.name: s for s in fabric.switches}
    uplinks = {f"{leaf}->{info.peer_node}": (leaf, p) for leaf in leaves
               for p, info in sorted(by_name[leaf].ports.items()) if info.kind == "uplink"}
    rate = opts.queue_rate_pps or math.ceil(1.25 * opts.flows * opts.flow_rate_pps
                                            / max(1, len(uplinks)))
    run_dir = new_run_dir(opts.runs_root)
    res = StoryResult(1, run_dir)
    secret = os.urandom(32).hex().encode()
    creds = write_credentials(sorted({f.src_host for f in flows}), secret)
    reg_sock = GOR_DIR / "registry.sock"
    reg_sock.unlink(missing_ok=True)
    registry = FlowRegistry.from_fabric(fabric, secret)
    server, raddr = serve_registry(registry, f"unix:{reg_sock}")
    dlog_path = run_dir / "gor.jsonl"
    dlog = DecisionLog(dlog_path)
    loop = GorLoop(fabric, programmer, registry, period_s=opts.period_s, log=dlog)
    say(f"story: seed {seed}; {len(flows)} NIC-emulator elephants, random ports, "
        f"{opts.flow_rate_pps:g} pps each; registry {raddr}; per-run secret, credentials in "
        f"{GOR_DIR} (0600); uplinks drain at {rate:g} pps")
    for f in flows:
        say(f"  {f.label:<22} predicted {f.predicted_uplink}")
    rates = set_uplink_rates(fabric, state, rate, say)
    nic = NicOptions(line_rate_pps=opts.flow_rate_pps)
    t0 = time.monotonic()
    stop = threading.Event()
    threads: list[threading.Thread] = []
    fleet = NicFleet(state, save_state, run_dir / "nic")
    tx_at: list[tuple[float, dict[str, int], int]] = []   # (t, uplink tx, total drops)

    def on_tick(t_s: float, samples: Any) -> None:
        loop.tick(t_s, samples)
        tx = {u: 0 for u in uplinks}
        drops = 0
        for lid, s in samples.items():
            if str(lid) in tx:
                tx[str(lid)] = s.tx_pkts
            drops += int(getattr(s, "drops", 0) or 0)
        tx_at.append((time.monotonic() - t0, tx, drops))

    nominal = {(sw.name, p): float(rate) for sw in fabric.switches for p in sw.ports}
    poller = GorPoller({n: gor_reader(c) for n, c in programmer.connections.items()},
                       gor_links(fabric, nominal), opts.period_s, on_tick=on_tick)
    try:
        failed = enable_digests(programmer.connections, programmer.connections)
        if failed:
            say(f"story: digests not enabled on {', '.join(failed)}")
        for name, conn in programmer.connections.items():
            t = threading.Thread(target=digest_reader, args=(loop, name, conn, stop),
                                 name=f"digests-{name}", daemon=True)
            t.start()
            threads.append(t)
        orig = sender_command

        def with_agent(fl: Sequence[Any], duration_s: float, report: Path, o: Any) -> list[str]:
            h = fl[0].src_host
            return orig(fl, duration_s, report, o) + [
                "--agent-creds", str(creds[h]), "--agent-registry", raddr,
                "--agent-bind", f"unix:{GOR_DIR / f'agent-{h}-{fl[0].dst_ip}.sock'}"]

        import host.traffic as ht  # noqa: PLC0415
        ht.sender_command = with_agent  # type: ignore[assignment]
        try:
            fleet.start(flows, opts.duration_s, nic)
        finally:
            ht.sender_command = orig  # type: ignore[assignment]
        poller.start()
        fleet.wait_senders(opts.duration_s + 15)
    finally:
        poller.stop()
        stop.set()
        for t in threads:
            t.join(timeout=2)
        errors = fleet.stop()
        server.stop(0)
        dlog.close()
        if rates:
            _clear_rates(state, rates)
    for e in errors:
        say(f"story: {e}")
    res.events = list(read_log(dlog_path))
    _narrate(res, tx_at, t0, uplinks, rate, opts.period_s, say)
    _append_story(run_dir, res, seed)
    res.status = 0
    return res


def _ts(e: dict[str, Any]) -> float:
    return float(e.get("mono", e.get("t", e.get("ts", 0.0))) or 0.0)


def _narrate(res: StoryResult, tx_at: list[tuple[float, dict[str, int], int]], t0: float,
             uplinks: dict[str, Any], rate: float, period_s: float,
             say: Callable[[str], None]) -> None:
    alarms = [e for e in res.events if e.get("event") == "alarm_raised"]
    confirms = [e for e in res.events if e.get("event") == "order_confirmed"]
    for e in res.events:
        ev = e.get("event")
        if ev in ("alarm_raised", "flows_chosen", "path_chosen", "order_sent", "order_confirmed",
                  "order_rolled_back"):
            say("  GOR " + ev + ": " + ", ".join(f"{k}={v}" for k, v in e.items()
                                                  if k not in ("event",)))
    # per-interval tx → the re-route moment is the first interval after the last confirmation
    rel_alarm = rel_conf = None
    if alarms and tx_at:
        rel_alarm = next((t for t, tx, _ in tx_at if any(tx.values())), tx_at[0][0])
    if confirms:
        n_conf = len(confirms)
        say(f"story: {len(alarms)} alarms, {n_conf} orders confirmed")
    if tx_at:
        half = len(tx_at) // 2
        before, after = tx_at[:half], tx_at[half:]
        if confirms:
            # after = intervals once every confirmed order is in (last 40% of the run)
            after = tx_at[int(len(tx_at) * 0.6):-2] or tx_at[half:]
            before = tx_at[1:max(2, int(len(tx_at) * 0.3))]
        for name, part, dest in (("before", before, res.uplink_pps_before),
                                 ("after", after, res.uplink_pps_after)):
            for u in uplinks:
                dest[u] = round(sum(tx[u] for _, tx, _ in part) / max(1e-9, len(part) * period_s), 1)
            say(f"story: per-uplink load {name}: " + ", ".join(f"{u} {v:g} pps"
                                                               for u, v in sorted(dest.items())))
        if res.uplink_pps_after:
            res.max_util_after_pct = round(100 * max(res.uplink_pps_after.values()) / rate, 1)
        res.drops_during_move = sum(d for _, _, d in tx_at)
    if alarms and confirms:
        ta = [float(e.get("mono_s", 0) or 0) for e in alarms]
        tc = [float(e.get("mono_s", 0) or 0) for e in confirms]
        res.first_alarm_s, res.last_confirm_s = min(ta), max(tc)
    say(f"story: spread max/mean before {res.spread(res.uplink_pps_before)}, after "
        f"{res.spread(res.uplink_pps_after)}; busiest uplink after {res.max_util_after_pct}% of "
        f"{rate:g} pps; loop {res.loop_s} s; drops {res.drops_during_move}")


def _append_story(run_dir: Path, res: StoryResult, seed: int) -> None:
    lines = [f"# GOR story (seed {seed})", "", "| event | details |", "|---|---|"]
    for e in res.events:
        lines.append(f"| {e.get('event')} | " + "; ".join(
            f"{k}={v}" for k, v in e.items() if k != "event").replace("|", "/") + " |")
    lines += ["", "| uplink | pps before | pps after |", "|---|---|---|"]
    for u in sorted(res.uplink_pps_before):
        lines.append(f"| {u} | {res.uplink_pps_before[u]} | {res.uplink_pps_after.get(u)} |")
    lines += ["", f"spread max/mean before {res.spread(res.uplink_pps_before)}, after "
              f"{res.spread(res.uplink_pps_after)}; gor.loop_s {res.loop_s}; "
              f"gor.max_util_after_pct {res.max_util_after_pct}; "
              f"gor.drops_during_move {res.drops_during_move}", ""]
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / "report.md").open("a") as fh:
        fh.write("\n".join(lines))
