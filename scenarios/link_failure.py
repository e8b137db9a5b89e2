"""``make run SCENARIO=link-failure``: a leaf uplink goes down under live traffic and GOR
takes it out of the ECMP groups, so the flows hashed onto it stop being black-holed.

1. Four NIC-emulator elephants (random source ports from the seed, each sender with its
   TCCL agent) from block 0 to block 1 on one rail, uplink queue rates sized so that all
   of them together fit one uplink at 70 % (GOR's threshold is 75 %).
2. After a third of the run the uplink carrying the most of them is set down
   administratively in Mininet (``ip link set DEV down`` on both ends of the cable), and
   the testbed reports the event to GOR, which acts on it at once, between two polls
   (:meth:`GorRuntime.submit_link_event <controller.gor.runtime.GorRuntime.submit_link_event>`).
3. GOR rewrites the ECMP groups of both end switches without the link (the data plane
   re-hashes at once), gives every other leaf a detour around the spine, which has no
   other link to that leaf (:mod:`controller.gor.detour_sync`: the ACKs and CNPs towards
   the leaf no longer vanish there), updates its hash model, and re-plans with the
   surviving links.
4. At the end the link comes back up and into its groups.

Figures (:class:`FailureResult`): per-uplink packets/s before and after, the time from the
link going down to the groups rewritten (``regroup_s``), the busiest surviving uplink in
% of its queue rate, the packets the receivers never got (lost before the re-route), and
the flows that did not go on (no packet received after the re-route, or the sender's QP in
error).

**Silent** (``make run SCENARIO=dead-link``, ``run_link_failure(..., silent=True)``): only
the spine's end of the cable is set down and GOR is told nothing. The leaf's port stays
up, its switch goes on sending into the cable and the packets vanish; GOR must find the
dead link from the counters alone (:mod:`controller.gor.deadlinks`: sent by the leaf,
never received by the spine) and take it out of the groups like an administrative event.
``regroup_s`` is then the time to detect (and rewrite), ``detected_by`` the reason GOR
logged. When the senders are done the cable is mended and GOR, told nothing again, must
bring the link back by itself: nothing is offered to a link out of every group, so only
its re-test probes can prove it alive (:class:`controller.gor.deadlinks.LinkRetests`);
``heal_s`` is the time from the mend to the link back in GOR's groups (bound 4 s, waited
at most :data:`HEAL_WAIT_S`), ``healed_by`` the reason logged.
"""
from __future__ import annotations

import math
import random
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from scenarios.common import window_mean
from scenarios.gor_session import GorSession
from scenarios.report import FlowRecord, ScenarioRecord, new_run_dir, report_failures, write_report
from scenarios.story import EVEN_UTIL
from testbed.traffic import TrafficOptions, delivery, merge_reports, plan_flows

FLOWS = 4
HEAL_WAIT_S = 10.0
"""How long the silent run waits, after mending the cable, for GOR to bring the link back
(the re-tests' bound, ``DeadLinkThresholds.heal_bound_s`` = 4 s, plus counter reads on a
loaded machine)."""


@dataclass(slots=True)
class FailureResult:
    """What the link-failure scenario measured (see the module docstring).

    ``regroup_s``: from the cut's start (before the first end went down) to the groups
    rewritten; ``cut_s``: how long cutting both ends took. ``delivery``: flow label →
    (packets sent, packets received); ``late_flows``: the flows whose receiver got
    nothing from the after-window's start (1 s after the groups were rewritten) on, or
    whose sender's QP ended in error: the flows that did not go on."""

    status: int
    run_dir: Optional[Path] = None
    seed: int = 0
    failed_uplink: str = ""
    queue_rate_pps: float = 0.0
    regroup_s: Optional[float] = None
    cut_s: Optional[float] = None
    groups: list[str] = field(default_factory=list)
    detours: list[str] = field(default_factory=list)
    uplink_pps_before: dict[str, float] = field(default_factory=dict)
    uplink_pps_after: dict[str, float] = field(default_factory=dict)
    max_util_after_pct: Optional[float] = None
    lost_pkts: int = 0
    delivery: dict[str, tuple[int, int]] = field(default_factory=dict)
    late_flows: list[str] = field(default_factory=list)
    silent: bool = False
    detected_by: str = ""
    heal_s: Optional[float] = None
    healed_by: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


#: the qdisc that cuts a cable on BMv2: drops every frame leaving the interface (a tbf
#: whose bucket holds no frame: tbf drops what is larger than its burst)
CUT_QDISC = ("root", "handle", "1:", "tbf", "rate", "8bit", "burst", "1", "limit", "1")


def set_link(dev: str, up: bool, target: str = "p4sim") -> None:
    """Cut (``up=False``) or mend one end of a cable (root namespace: the switches' ports
    live there).

    p4sim: ``ip link set DEV down|up`` (carrier loss). BMv2 stops processing packets when
    one of its own interfaces goes down and stays stuck after it comes back up
    (p4lang/behavioral-model#1215; seen with 1.15.5 here: the leaf froze, every flow
    stopped), so on BMv2 the cable is cut without touching the interface's state: a
    qdisc on DEV's egress drops every frame (:data:`CUT_QDISC`), deleted to mend it."""
    set_links([dev], up, target)


def set_links(devs: Sequence[str], up: bool, target: str = "p4sim") -> None:
    """:func:`set_link` for both ends of a cable at once, in one ``ip -batch`` (or ``tc
    -batch``) run: a cable's two ends lose their carrier together, and a second fork of
    this (large, threaded) process between them cost 0.1-0.5 s on a loaded machine, during
    which one end was dead and GOR not yet told."""
    if target == "bmv2":
        tool = "tc"
        lines = [" ".join(["qdisc", "add" if not up else "del", "dev", dev,
                           *(CUT_QDISC if not up else ("root",))]) for dev in devs]
    else:
        tool = "ip"
        lines = [f"link set {dev} {'up' if up else 'down'}" for dev in devs]
    subprocess.run([tool, "-batch", "-"], input="\n".join(lines) + "\n", text=True,
                   check=True, capture_output=True, timeout=10)


def run_link_failure(fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
                     opts: Any, say: Callable[[str], None] = print,
                     silent: bool = False) -> FailureResult:
    """Run the scenario on a running, programmed testbed (``opts``: ``ScenarioOptions``);
    ``silent``: only the spine's end goes down and GOR is not told (see the module
    docstring)."""
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(1 << 30)
    flows = plan_flows(fabric, programmer, TrafficOptions(FLOWS, opts.rail, port_mode="random", seed=seed))
    rate = float(opts.queue_rate_pps or math.ceil(FLOWS * opts.flow_rate_pps / EVEN_UTIL))
    count: dict[str, int] = {}
    for f in flows:
        count[str(f.predicted_uplink)] = count.get(str(f.predicted_uplink), 0) + 1
    victim = max(sorted(count), key=lambda u: count[u])
    run_dir = new_run_dir(opts.runs_root)
    res = FailureResult(1, run_dir, seed, victim, rate, silent=silent)
    session = GorSession(fabric, programmer, state, save_state, flows, rate, opts, run_dir, say)
    leaf, port = session.uplinks[victim]
    info = fabric.switch(leaf).ports[port]
    peer, peer_port = info.peer_node, info.peer_port
    devs = [f"{peer}-eth{peer_port}"] if silent else [f"{leaf}-eth{port}", f"{peer}-eth{peer_port}"]
    if state.target == "bmv2":        # a veth's far end down also drops its carrier; a
        devs = [f"{leaf}-eth{port}", f"{peer}-eth{peer_port}"]   # qdisc cuts one direction
    record = ScenarioRecord("dead-link" if silent else "link-failure", seed, state.target, opts.rail, opts.flow_rate_pps, rate,
                            opts.duration_s, uplinks=sorted(session.uplinks))
    record.flows = [FlowRecord(f.label, f.src_ip, f.dst_ip, f.sport, str(f.predicted_uplink))
                    for f in flows]
    say(f"link-failure: seed {seed}; {FLOWS} elephants at {opts.flow_rate_pps:g} pps, uplinks "
        f"drain {rate:g} pps (all {FLOWS} fit one at {100 * FLOWS * opts.flow_rate_pps / rate:.0f}%); "
        f"{victim} ({count[victim]} of them) goes down after {opts.duration_s / 3:.1f} s"
        + (f", silently (only {devs[0]}; GOR is not told)" if silent else ""))
    t_cut = t_down = t_done = t_mend = None
    mended = False
    try:
        with session:
            session.start_flows(opts.duration_s)
            record.event(session.since_start(), f"{FLOWS} elephants started")
            threading.Event().wait(opts.duration_s / 3)      # the scenario's timeline
            t_cut = time.monotonic()
            set_links(devs, up=False, target=state.target)
            t_down = time.monotonic()
            res.cut_s = round(t_down - t_cut, 3)
            if not silent:
                session.submit_link_event(leaf, port, up=False,
                                          reason=f"administrative: {' and '.join(devs)} cut")
            record.event(session.since_start(t_down), f"{victim} down ({' and '.join(devs)})")
            say(f"link-failure: t={session.since_start(t_down):.1f}s {victim} is down")
            session.fleet.wait_senders(opts.duration_s + 15)
            t_done = time.monotonic()
            if silent and victim in session.links_down():
                set_links(devs, up=True, target=state.target)   # mended; GOR is told nothing
                mended, t_mend = True, time.monotonic()
                if session.wait_for(lambda: victim not in session.links_down(), HEAL_WAIT_S):
                    res.heal_s = round(time.monotonic() - t_mend, 3)
                say(f"link-failure: cable mended; GOR brought {victim} back "
                    + (f"{res.heal_s} s later" if res.heal_s is not None else f"not within {HEAL_WAIT_S:g} s"))
    finally:
        for dev in devs if not mended else ():
            try:
                set_link(dev, up=True, target=state.target)
            except (subprocess.SubprocessError, OSError) as exc:
                say(f"link-failure: {dev} not back up: {exc}")
        if session.loop is not None:                        # the run's decision log is closed
            session.loop.decision_log = None
            session.loop.link_up(leaf, port, reason="scenario end: link back up")
    res.errors, res.events = session.errors, session.events
    down = next((e for e in res.events if e.get("event") == "link_down"
                 and t_down is not None and float(e["mono_s"]) >= t_down), None)
    if down is not None and t_cut is not None:
        res.regroup_s = round(float(down["mono_s"]) - t_cut, 3)
        res.groups = list(down.get("groups", []))
        res.detours = list(down.get("detours", []))
        res.detected_by = str(down.get("reason", ""))
    ticks = [x for x in session.ticks if sum(x[1].values()) > 0 and (t_done is None or x[0] < t_done)]
    if t_mend is not None:
        up = next((e for e in res.events if e.get("event") == "link_up" and float(e["mono_s"]) >= t_mend), None)
        res.healed_by = str(up.get("reason", "")) if up is not None else ""
    after_s = None if t_down is None else (float(down["mono_s"]) if down is not None else t_down) + 1.0
    if t_down is not None and after_s is not None:  # 1 s past the regroup on
        uplinks = list(session.uplinks)
        before = [x for x in ticks if x[0] < t_down][1:]
        res.uplink_pps_before = window_mean(session.tick_counts, before, uplinks)
        after = [x for x in ticks if x[0] >= after_s][:-2]
        res.uplink_pps_after = window_mean(session.tick_counts, after, uplinks, since=after_s)
    if res.uplink_pps_after:
        res.max_util_after_pct = round(100 * max(res.uplink_pps_after.values()) / rate, 1)
    results = merge_reports(flows, session.fleet.procs)
    res.lost_pkts = sum(max(0, r.sent_pkts - r.recv_pkts) for r in results)
    res.delivery = delivery(results)
    if after_s is not None:
        res.late_flows = [r.label for r in results
                          if r.last_recv_s is None or r.last_recv_s < after_s or not r.qp_ok]
    for fr, r in zip(record.flows, results):
        fr.sent = r.sent_pkts
    line = (f"{'dead-link' if silent else 'link-failure'}: {victim} down"
            f"{' (silently)' if silent else ''} → groups rewritten {res.regroup_s} s after the cut began "
            f"(cutting took {res.cut_s} s) "
            f"({res.detected_by}) "
            f"({'; '.join(res.groups) or 'none'}), detours on the other leaves "
            f"({'; '.join(res.detours) or 'none'}); per-uplink pps before {res.uplink_pps_before}, "
            f"after {res.uplink_pps_after}; busiest after {res.max_util_after_pct}% of {rate:g} pps; "
            f"packets lost {res.lost_pkts}"
            + (f"; mended, back in the groups {res.heal_s} s later ({res.healed_by})" if t_mend is not None else "")
            + (f"; flows that did not go on: {', '.join(res.late_flows)}" if res.late_flows else ""))
    say(line)
    record.notes.append(line)
    write_report(run_dir, record, session.poller.series)
    say(f"link-failure: report {run_dir / 'report.md'} (decision log gor.jsonl)")
    res.status = report_failures(run_dir, "dead-link" if silent else "link-failure",
                                 shortfalls(res), say)
    return res


def shortfalls(res: FailureResult) -> list[str]:
    """Why the scenario measured nothing (empty: it measured what it tells): no uplink
    counters, or GOR never took the dead link out of the groups.

    >>> shortfalls(FailureResult(0, failed_uplink="b0r0l0:3"))
    ['no uplink counters were read after the failure', 'GOR did not take b0r0l0:3 out of the ECMP groups']
    """
    why = []
    if not res.uplink_pps_after:
        why.append("no uplink counters were read after the failure")
    if res.regroup_s is None:
        why.append(f"GOR did not take {res.failed_uplink} out of the ECMP groups")
    if res.silent and res.regroup_s is not None and res.heal_s is None:
        why.append(f"GOR did not bring {res.failed_uplink} back within {HEAL_WAIT_S:g} s of the mend")
    return why


__all__ = ["FLOWS", "FailureResult", "run_link_failure", "set_link", "set_links", "shortfalls"]
