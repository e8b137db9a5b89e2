"""The faults scenario (``make run SCENARIO=faults``): RoCEv2 traffic under GOR, the
monitor watching (probes over every link, switch and NIC counters in Prometheus, the
localiser, the web view), and every kind of fault of ``topo.components.FAULT_KINDS``
injected in turn by the testbed's fault injector (``testbed.faults``) — each held until
the localiser names something (at most ``NAME_TIMEOUT_S``), then undone, and the fabric
left to settle until the localiser holds nothing again and GOR holds no link down.

The report (``runs/<time>/report.md``, ``faults.json``) has one row per fault: its
kind, where it was, what the localiser named first, whether that was exactly it, and the
time from the fault taking effect to the verdict, and the time from its undo to quiet
again (``quiet_after_undo_s``). The status is 0 only when every fault was named exactly
and the fabric was quiet again within ``QUIET_BOUND_S`` of every undo; each miss is said
(a miss is a finding, never hidden).

>>> from topo.model import build_fabric
>>> [k for k, _, _ in default_faults(build_fabric())][:3]
['gray_link', 'corruption', 'flapping_link']
"""
from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from monitor.browser import BrowserUnavailable, screenshot
from monitor.service import MonitorOptions
from scenarios.faultplan import dualport_faults, fault_plan, uplink_port
from scenarios.gor_session import GorSession
from scenarios.monitoring import MonitoringSession
from scenarios.report import new_run_dir, report_failures
from testbed.faultp4rt import P4RuntimeWriter
from testbed.faults import FaultInjector
from testbed.faultundo import CallableHooks
from testbed.net import REPO
from testbed.traffic import NicOptions, TrafficOptions, plan_flows

NAME_TIMEOUT_S = 30.0
"""How long a fault is held waiting for a verdict."""
SETTLE_TIMEOUT_S = 40.0
"""How long the scenario waits after an undo for quiet (longer than the bound, so that a
slow return is measured, not cut off)."""
QUIET_BOUND_S = 30.0
"""The bound on "quiet again after each undo": from the start of the undo to the third
clean evaluation in a row (no bad link, no silent switch, no fault active in the
localiser) with GOR holding no link down. What it is made of, on the monitor's defaults:
a flap's evidence lasts ``flap_window_s`` (20 s) after the cable's last down, a verdict
clears ``clear_s`` (5 s) after its evidence, the rates look back ``RATE_WINDOW_S`` (3 s)
and the three clean evaluations take 1.5 s: 29.5 s. Measured on both targets: README.md,
"Monitoring and fault localisation"."""
BASELINE_S = 6.0
"""Traffic and probes running, no fault: the windows fill before the first fault."""
FLOW_RATE_PPS = 60.0
FLOWS = 4
RC_RETRY_COUNT = 60
"""The senders' RC retry count (2 s timeout each): two minutes without an ACK before a QP
gives up (InfiniBand allows far longer local ACK timeouts than the emulator's default)."""


@dataclass(slots=True)
class FaultTrial:
    """One injected fault and what the localiser said: the first verdict after the
    fault took effect (``named_kind``/``named``), whether it was exactly the fault
    (``exact``), seconds to it (``localise_s``), its confidence and evidence, and the
    other verdicts of the trial (``also``). ``reprogrammed``: switches GOR's switch
    recovery re-installed the plan of before the undo (a switch that stalled for over the
    poller's read timeout and then lacked a route: a fault written through P4Runtime,
    such as a deleted route, is undone by it) — said with a miss, never excusing it.

    >>> FaultTrial("hung_switch", "switch s1", "hung_switch", "switch s1", 2.5).exact
    True
    """

    kind: str
    target: str
    named_kind: Optional[str] = None
    named: Optional[str] = None
    localise_s: Optional[float] = None
    confidence: Optional[float] = None
    evidence: list[str] = field(default_factory=list)
    also: list[str] = field(default_factory=list)
    settled: bool = True
    undo_s: Optional[float] = None
    quiet_after_undo_s: Optional[float] = None
    gor_links_down: list[str] = field(default_factory=list)
    reprogrammed: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def exact(self) -> bool:
        """The first verdict named the fault's kind and component exactly."""
        return self.named_kind == self.kind and self.named == self.target

    @property
    def quiet_in_bound(self) -> bool:
        """Quiet again (monitor and GOR) within :data:`QUIET_BOUND_S` of the undo.

        >>> FaultTrial("gray_link", "link s0->b0r0l0", quiet_after_undo_s=8.2).quiet_in_bound
        True
        """
        return self.quiet_after_undo_s is not None and self.quiet_after_undo_s <= QUIET_BOUND_S


@dataclass(slots=True)
class FaultsResult:
    """What the faults scenario measured (``bench/monitor_bench.py`` reads it)."""

    status: int
    run_dir: Optional[Path] = None
    trials: list[FaultTrial] = field(default_factory=list)
    store: str = ""
    probe_paths: int = 0
    probes_per_s: float = 0.0
    false_alarms: list[str] = field(default_factory=list)
    screenshot: Optional[Path] = None
    web_url: str = ""
    quiet_s: float = 0.0
    probe_overhead_pct: Optional[float] = None

    @property
    def top1(self) -> Optional[float]:
        """Fraction of faults named exactly first (None with no trial)."""
        return sum(t.exact for t in self.trials) / len(self.trials) if self.trials else None


def default_faults(fabric: Any, flows: Sequence[Any] = (), model: Any = None,
                   probes: Any = None) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, target, parameters) of each fault the scenario injects, chosen from the
    fabric and the traffic by :func:`scenarios.faultplan.fault_plan` (two tiers: the
    default fabric's spines ``s0``/``s1``, leaves ``b<b>r<r>l0``, NICs ``b<b>s<s>-eth<r>``;
    three tiers: spine, core and both NIC ports' components; traffic from block 0, or
    pod 0, to the next on rail 0).

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> [t for _, t, _ in default_faults(build_fabric(load_spec("topo/specs/pod2-dualport.yaml")))]
    ... # doctest: +NORMALIZE_WHITESPACE
    ['link s1:5->c1.0', 'link c0.0:3->p1.s0', 'cable b0r1l0<->s0', 'route c1.1 10.0.3.0/24',
     'switch c1.1', 'nic p1.b0s0-eth0', 'port s0:5', 'agent b0s0', 'controller',
     'nic b0s0-eth0p1', 'switch p1.b0r0l1']
    """
    return fault_plan(fabric, flows, model, probes=probes)


def monitor_options(opts: Any) -> MonitorOptions:
    """The monitor's options for a run of ``opts`` (``ScenarioOptions``): its web view on
    ``opts.monitor_port`` (``--monitor-port``; 0: a free one), the rest the defaults.

    >>> from scenarios.common import ScenarioOptions
    >>> monitor_options(ScenarioOptions(monitor_port=8080)).web_port
    8080
    """
    return MonitorOptions(web_port=getattr(opts, "monitor_port", 0))


def run_faults(fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
               opts: Any, say: Callable[[str], None] = print, trials_per_kind: int = 1,
               kinds: Optional[Sequence[str]] = None, quiet_s: float = 0.0,
               screenshot_web: bool = True) -> FaultsResult:
    """Run the faults scenario on a running, programmed testbed (``opts``:
    ``ScenarioOptions``; ``trials_per_kind`` rounds over the faults; ``kinds`` limits
    them; ``quiet_s`` > 0 first watches the fault-free fabric that long and counts every
    verdict as a false alarm; ``screenshot_web`` False: no browser shot of the web view,
    for a caller that checks the verdicts, not the page)."""
    run_dir = new_run_dir(opts.runs_root)
    res = FaultsResult(1, run_dir)
    seed = opts.seed if opts.seed is not None else 1
    flows = plan_flows(fabric, programmer, TrafficOptions(FLOWS, 0, port_mode="tccl", seed=seed))
    model = programmer.hash_model()
    # uplinks drain far more than the flows offer: no congestion of their own, so
    # what the monitor sees is the faults'
    rate = 4.0 * FLOWS * FLOW_RATE_PPS
    state_path = Path(getattr(opts, "state_path", None) or REPO / "build" / "testbed-state.json")
    gor = GorSession(fabric, programmer, state, save_state, flows, rate, opts, run_dir, say, live=False)
    with gor:
        with MonitoringSession(fabric, programmer, state, save_state, run_dir, gor=gor,
                               options=monitor_options(opts), say=say) as ms:
            mon = ms.monitor
            # the targets: from the fabric, the flows and (the blackholed route) the probes
            plan = [f for f in default_faults(fabric, flows, model, probes=ms.plan)
                    if kinds is None or f[0] in kinds]
            hold_s = BASELINE_S + quiet_s + trials_per_kind * len(plan) * (NAME_TIMEOUT_S + SETTLE_TIMEOUT_S)
            say(f"faults: {len(flows)} RoCEv2 flows {flows[0].src_host} -> {flows[0].dst_host} "
                f"side on rail 0 ({FLOW_RATE_PPS:g} pps each, TCCL ports), then {len(plan)} "
                f"fault kinds x {trials_per_kind}: " + ", ".join(f"{k} on {t}" for k, t, _ in plan))
            res.store, res.probe_paths = mon.store_kind, len(ms.plan.paths)
            res.probes_per_s = ms.plan.probes_per_s()
            res.web_url = mon.web.url if mon.web is not None else ""
            # RC retries outlast a fault held for NAME_TIMEOUT_S (the default 7 x 2 s would
            # put a QP behind a hung switch in error, end its sender and, with it, the
            # host's agent: a true finding, but the next fault's noise)
            gor.start_flows(hold_s, NicOptions(line_rate_pps=FLOW_RATE_PPS, metrics_dir=ms.metrics_dir),
                            sender_extra=["--retry-count", str(RC_RETRY_COUNT)])
            injector = FaultInjector(fabric, state, state_path=state_path,
                                     writer=P4RuntimeWriter(programmer.connections),
                                     controller=CallableHooks(stop=gor.stop_gor, start=gor.start_gor))
            mon.wait_evaluations(int(BASELINE_S / mon.opts.interval_s), BASELINE_S * 3)
            if quiet_s > 0:
                first = len(mon.verdicts)
                say(f"faults: watching the fault-free fabric for {quiet_s:g} s")
                t_quiet = time.monotonic()
                while time.monotonic() - t_quiet < quiet_s:
                    mon.wait_evaluations(1, 5.0)
                res.quiet_s = round(time.monotonic() - t_quiet, 1)
                res.false_alarms = [f"{v.kind} {v.component}" for v in mon.verdicts[first:]]
            res.probe_overhead_pct = probe_overhead_pct(mon.source, min(OVERHEAD_WINDOW_S,
                                                                         BASELINE_S + quiet_s))
            try:
                for _ in range(trials_per_kind):
                    for kind, target, params in plan:
                        res.trials.append(_trial(injector, mon, gor, kind, target, params, say))
            finally:
                injector.undo_all()
            # the page with the run's verdicts, in a real browser (Chromium is heavy: not
            # while a fault is being localised on this 2-core machine)
            if screenshot_web:
                res.screenshot = _screenshot(mon, run_dir, say)
    _report(run_dir, res, say)
    misses = [(f"{t.kind} on {t.target}: named {t.named_kind} {t.named}" if t.named else
               f"{t.kind} on {t.target}: nothing named within {NAME_TIMEOUT_S:g} s")
              + (f" (GOR's switch recovery re-programmed {', '.join(t.reprogrammed)} meanwhile)"
                 if t.reprogrammed else "")
              for t in res.trials if not t.exact]
    if not res.trials:
        misses.append("no fault was injected")
    misses += [_not_quiet(t) for t in res.trials if not t.error and not t.quiet_in_bound]
    misses += [f"false alarm on the fault-free fabric: {a}" for a in res.false_alarms]
    res.status = report_failures(run_dir, "faults", misses, say)
    return res


OVERHEAD_WINDOW_S = 30.0
SWITCH_HOPS = 3
"""Switch egress ports a probe leaves by: source leaf, spine, destination leaf."""


def probe_overhead_pct(source: Any, window_s: float) -> Optional[float]:
    """Probe frames as a share of every frame the switches sent over the last
    ``window_s`` (probes sent × :data:`SWITCH_HOPS` over the sum of every switch port's
    tx rate), from the metric store; None when the switches' counters were not read."""
    probes = sum(v for _, v in source.rates("astral_probe_sent_total", window_s))
    frames = sum(v for _, v in source.rates("astral_switch_port_tx_packets_total", window_s))
    if frames <= 0:
        return None
    return round(100.0 * min(1.0, SWITCH_HOPS * probes / frames), 2)


def _trial(injector: Any, mon: Any, gor: Any, kind: str, target: str, params: dict[str, Any],
           say: Callable[[str], None]) -> FaultTrial:
    """Inject one fault, wait for a verdict, undo it, wait until the localiser is quiet
    and GOR (``gor``: a :class:`~scenarios.gor_session.GorSession`) holds no link down."""
    trial = FaultTrial(kind, target)
    since = len(mon.verdicts)
    recovery = gor.recovery
    restored_before = len(recovery.events) if recovery is not None else 0
    try:
        rec = injector.inject(kind, target, **params)
    except Exception as exc:  # noqa: BLE001 — a fault that cannot be injected is reported
        trial.error = f"not injected: {exc}"
        say(f"faults: {kind} on {target}: {trial.error}")
        return trial
    t0 = rec.started_mono
    say(f"faults: {rec.name}: {kind} on {target} {params or ''}")
    first = mon.wait_verdict(lambda v: True, NAME_TIMEOUT_S, since=since)
    if first is not None:
        trial.named_kind, trial.named = first.kind, first.component
        trial.localise_s = round(max(0.0, first.t_s - t0), 3)
        trial.confidence, trial.evidence = first.confidence, list(first.evidence)
        # a moment more: other verdicts of the same trial (collateral ones are findings too)
        mon.wait_evaluations(2, 5.0)
        trial.also = [f"{v.kind} {v.component}" for v in mon.verdicts[since:] if v is not first]
    if recovery is not None:
        trial.reprogrammed = sorted({e.switch for e in recovery.events[restored_before:] if e.report.pushed})
    t_undo = time.monotonic()
    injector.undo(rec.name)
    trial.undo_s = round(time.monotonic() - t_undo, 3)
    deadline = t_undo + SETTLE_TIMEOUT_S
    # quiet: the monitor's clean evaluations, then GOR's groups whole again (both, in
    # turn, until the deadline: GOR may bring a cable back after the monitor went quiet)
    trial.settled = mon.wait_quiet(max(0.0, deadline - time.monotonic()))
    if trial.settled and gor.links_down():
        trial.settled = gor.wait_for(lambda: not gor.links_down(),
                                     max(0.0, deadline - time.monotonic()))
    if trial.settled:
        trial.quiet_after_undo_s = round(time.monotonic() - t_undo, 2)
    trial.gor_links_down = gor.links_down()
    mon.wait_evaluations(2, 5.0)
    mark = "named" if trial.exact else "MISSED, named" if first else "MISSED, nothing named"
    quiet = (f"; quiet {trial.quiet_after_undo_s} s after the undo" if trial.settled else
             f"; not quiet within {SETTLE_TIMEOUT_S:g} s of the undo"
             + (f" (GOR holds down {', '.join(trial.gor_links_down)})" if trial.gor_links_down else ""))
    gor_note = (f" (GOR's switch recovery re-programmed {', '.join(trial.reprogrammed)} during it)"
                if trial.reprogrammed else "")
    say(f"faults: {kind} on {target}: {mark} {trial.named_kind or ''} {trial.named or ''} "
        f"after {trial.localise_s} s{quiet}{gor_note}")
    return trial


def _not_quiet(t: FaultTrial) -> str:
    """The report's line for a trial not quiet within :data:`QUIET_BOUND_S` of its undo.

    >>> _not_quiet(FaultTrial("blackhole", "route s1 10.1.1.0/24", quiet_after_undo_s=31.0))
    'blackhole on route s1 10.1.1.0/24: not quiet within 30 s of the undo (quiet after 31.0 s)'
    """
    if t.quiet_after_undo_s is not None:
        why = f"quiet after {t.quiet_after_undo_s} s"
    else:
        why = f"still not quiet after {SETTLE_TIMEOUT_S:g} s"
        if t.gor_links_down:
            why += f"; GOR holds down {', '.join(t.gor_links_down)}"
    return f"{t.kind} on {t.target}: not quiet within {QUIET_BOUND_S:g} s of the undo ({why})"


def _screenshot(mon: Any, run_dir: Path, say: Callable[[str], None]) -> Optional[Path]:
    """The web view in headless Chromium once its timeline shows the run's verdicts
    (``web.png``);
    None, said, without a browser or when the page never shows a verdict."""
    if mon.web is None or not mon.verdicts:
        return None
    try:
        return screenshot(mon.web.url, run_dir / "web.png", wait_css="#timeline li[data-kind='verdict']",
                          timeout_s=60.0)
    except (BrowserUnavailable, TimeoutError) as exc:
        say(f"faults: no screenshot of the web view: {exc}")
        return None


def _report(run_dir: Path, res: FaultsResult, say: Callable[[str], None]) -> None:
    rows = ["# Faults scenario", "",
            f"- metric store: {res.store}; probe paths {res.probe_paths}, "
            f"{res.probes_per_s:g} probes/s ({res.probe_overhead_pct}% of the frames the "
            f"switches sent); web view {res.web_url or 'off'}"
            + (f" (screenshot `{res.screenshot.name}`)" if res.screenshot else ""), "",
            "| fault | where | named first | exact | time to name (s) | confidence | "
            "quiet after undo (s) | also named |",
            "|---|---|---|---|---|---|---|---|"]
    for t in res.trials:
        named = f"{t.named_kind} {t.named}" if t.named else (t.error or "nothing")
        rows.append(f"| {t.kind} | {t.target} | {named} | {'yes' if t.exact else 'no'} | "
                    f"{'' if t.localise_s is None else t.localise_s} | "
                    f"{'' if t.confidence is None else round(t.confidence, 2)} | "
                    f"{'not quiet' if t.quiet_after_undo_s is None else t.quiet_after_undo_s} | "
                    f"{', '.join(t.also)} |")
    times = [t.localise_s for t in res.trials if t.exact and t.localise_s is not None]
    quiet = [t.quiet_after_undo_s for t in res.trials if t.quiet_after_undo_s is not None]
    rows += ["", f"- named exactly first: {sum(t.exact for t in res.trials)} of {len(res.trials)}"
             + (f"; time to name median {statistics.median(times):.2f} s" if times else ""),
             f"- quiet again within {QUIET_BOUND_S:g} s of the undo (monitor quiet, GOR holding "
             f"no link down): {sum(t.quiet_in_bound for t in res.trials)} of {len(res.trials)}"
             + (f"; median {statistics.median(quiet):.2f} s, max {max(quiet):.2f} s" if quiet else ""),
             "- verdict log `verdicts.jsonl`, probe plan `probe-plan.json`, GOR's decision log "
             "`gor.jsonl`, metrics files `metrics/`", ""]
    (run_dir / "report.md").write_text("\n".join(rows))
    (run_dir / "faults.json").write_text(json.dumps(
        {"trials": [asdict(t) | {"exact": t.exact, "quiet_in_bound": t.quiet_in_bound}
                    for t in res.trials], "quiet_bound_s": QUIET_BOUND_S, "store": res.store,
         "probe_paths": res.probe_paths, "probes_per_s": res.probes_per_s,
         "false_alarms": res.false_alarms, "quiet_s": res.quiet_s,
         "probe_overhead_pct": res.probe_overhead_pct}, indent=1))
    say(f"faults: {sum(t.exact for t in res.trials)} of {len(res.trials)} faults named exactly; "
        f"report {run_dir / 'report.md'}")


__all__ = ["BASELINE_S", "FaultTrial", "FaultsResult", "NAME_TIMEOUT_S", "QUIET_BOUND_S",
           "SETTLE_TIMEOUT_S", "default_faults", "dualport_faults", "monitor_options",
           "probe_overhead_pct", "run_faults", "uplink_port"]
