"""``make run SCENARIO=incast``: N senders to one receiver through one leaf port, run with
static PFC/ECN thresholds and then with dynamic (shared-buffer) ones, same flows, same
seed, side by side; and one flow alone on the switch under each mode.

1. **Flows**: the receiver is the first NIC on the rail in the last block; every other NIC
   on that rail sends to it, ``flows`` QPs in all (8 by default: round robin over the
   senders, source ports random from the seed: ``testbed.traffic.plan_ports(...,
   "random")``; on dual-port senders each QP on the NIC port the bond's layer3+4 hash
   picks, ``hashed_nic_ports``, so both of the sender's leaves carry the incast; a dual-homed
   receiver's flows are pinned to one of its leaves, :func:`pin_to_leaf`), NIC-emulator RDMA WRITEs with DCQCN at
   ``flow_rate_pps``. The receiver's leaf port drains :func:`port_rate_pps` (half a
   flow's rate): one flow alone overloads it twice, the incast ``2 * flows`` times.
2. **The buffer**: the target's egress queue holds :data:`QUEUE_PKTS` packets (p4sim's
   and BMv2's default depth), so the dynamic mode's shared buffer is that many data
   frames (:data:`INCAST_DYNAMIC`: 576 cells of 128 B, PFC alpha 2, ECN alpha 1/4..2).
   The static mode is the testbed's own (XOFF 32 / XON 16 packets per ingress port,
   RED 8..32): with the 3 ingress ports the incast enters the receiver's leaf by on the
   default fabric (two spines, one local sender) static groups may hold 96 packets, more
   than the queue; dynamic ones 57 (Choudhury & Hahne's steady state,
   :func:`scenarios.incast_report.predict`).
3. **Per mode** (static first): :meth:`controller.fabric_setup.FabricProgrammer.apply_thresholds`
   rewrites the PFC, ECN, buffer and alpha entries of every switch in place; the data
   plane's counts (PFC occupancy and paused flags, the shared buffer's cells) are cleared
   through the target's runtime while the fabric is at rest; then the lone flow (the
   sender on the receiver's own leaf, if any), then every flow, each for half of
   ``duration_s``. GOR is off: there is no other path to the receiver's port to move a
   flow to.
4. **Measured** per run (:class:`scenarios.incast_report.PhaseFigures`): PFC frames the
   switches sent, PAUSE frames the NICs honoured, ECN marks, drops (PSNs the receivers
   found missing + pipeline drops), the receiver port's peak queue, Jain's index over the
   flows' goodput; checked against the reference (:func:`scenarios.incast_report.checks`).

On p4sim the switches' MACs honour PAUSE for ``quanta * 512`` bit times at each port's
line rate (10 Gb/s unless set): 3.4 ms at most, far shorter than anything at the
testbed's few hundred packets/s. The scenario times the switches' quanta at the NIC
emulator's 100 Mb/s (:data:`PFC_LINE_RATE_GBPS`, as the NICs do) while it runs, so a PAUSE
from a leaf holds a spine as long as one holds a NIC; BMv2's MAC has no PFC (its frames are
counted, nothing pauses), said in the report. p4sim's PFC watchdog (on in the testbed,
200 ms) is off meanwhile: with PAUSEs 100 times longer it took the incast's own pauses for
storms (live, seed 7, one run each: on, 5 storms on the spines' ports towards the leaf,
PFC ignored there, dynamic vs static incast drops 235 vs 228, the check "dynamic loses no
more than static" failed; off, 0 storms, 68 vs 328 and 219 vs 392). Everything set is
set back at the end (queue rate, line rates, PFC watchdogs, the testbed's own threshold
mode).

``runs/<time>/report.md`` gets the usual plots and the incast section. Exit status 1 (with
the reasons in the report) when a run delivered nothing, was not polled, or a step failed.

>>> port_rate_pps(250.0)
125
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from controller.fabric.tiers import TierModel
from p4src.buffermodel import DynamicThresholds, EcnAlpha, PfcAlpha, SharedBuffer
from scenarios.incast_report import (FlowFigures, PhaseFigures, Prediction, append_incast,
                                     checks, predict, switch_figures)
from scenarios.telemetry import LinkId, PolledLink, TelemetryPoller, fabric_links, p4rt_reader
from scenarios.report import FlowRecord, ScenarioRecord, new_run_dir, report_failures, write_report
from testbed.control import ControlError, open_control
from testbed.queues import clear_rates
from testbed.traffic import NicFleet, build_flows, merge_reports, plan_ports
from testbed.traffic.flows import SPORT_RANGE, hashed_nic_ports
from testbed.traffic.nicproc import NicOptions
from testbed.traffic.probe import poll_until

QUEUE_PKTS = 64
"""Capacity of the target's egress queue (p4sim's ``--queue-depth`` default, BMv2's)."""
DATA_FRAME_BYTES = 1082
"""A NIC-emulator data frame of 1024 payload bytes: Ethernet 14, IPv4 20, UDP 8, BTH 12,
ICRC 4 (``packet_length`` in the switch)."""
INCAST_DYNAMIC = DynamicThresholds(
    SharedBuffer(QUEUE_PKTS * 9, 7),
    {3: PfcAlpha(2, xon_cells=0, xon_offset_cells=16 * 9)},
    {3: EcnAlpha("1/4", 2, 51)},
)
"""The dynamic mode of the scenario: the shared buffer is the queue the target has
(64 data frames of 9 cells of 128 B); PFC alpha 2 (alone a group pauses at 43 packets,
3 groups at 19 each), RESUME 16 packets under XOFF as the static mode; ECN RED from
1/4 to 2 times the free buffer (alone: 13..43 packets)."""
PFC_LINE_RATE_GBPS = 0.1
"""PAUSE quanta of the switches timed at the NIC emulator's 100 Mb/s while the scenario runs."""
P4SIM_LINE_RATE_GBPS = 10.0
"""p4sim's default line rate (``--line-rate-gbps``), set back at the end."""
COUNT_REGISTERS = ("FabricIngress.pfc.occupancy", "FabricIngress.pfc.paused",
                   "FabricIngress.buffer.used", "FabricIngress.buffer.ingress_cells",
                   "FabricIngress.buffer.egress_cells")
"""The data plane's counts, cleared before every run: a packet the target's queue
tail-drops leaves its count behind (p4src/README.md), which would carry into the next run."""
SETTLE_TIMEOUT_S = 10.0
PRIORITY = 3


PFC_TARGETS = frozenset({"p4sim"})
"""Targets whose switch MACs honour PAUSE frames (testbed/control.py ``set_line_rate``):
on the others (BMv2) the incast checks that need PFC at every hop are "not applicable"
(:func:`scenarios.incast_report.checks`)."""


def port_rate_pps(flow_rate_pps: float) -> int:
    """Drain rate of the incast port: half of one flow's rate (whole packets/s)."""
    return max(1, round(flow_rate_pps / 2))


@dataclass(slots=True)
class IncastResult:
    """What the scenario measured: ``phases`` (mode, load) → figures, the prediction, the
    checks' verdicts, the seed, the run directory; ``status`` 0 only when every run
    measured what it tells."""

    status: int
    run_dir: Optional[Path] = None
    seed: int = 0
    phases: dict[tuple[str, str], PhaseFigures] = field(default_factory=dict)
    prediction: Optional[Prediction] = None
    verdicts: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def incast_pairs(fabric: Any, rail: int, flows: int) -> tuple[list[tuple[str, str]], Any]:
    """(``flows`` (src IP, dst IP) pairs round robin over every other NIC on ``rail``, the
    receiver NIC record). The receiver: the first NIC on ``rail`` in the last block.

    >>> from topo.model import build_fabric
    >>> pairs, nic = incast_pairs(build_fabric(), 0, 4)
    >>> nic.ip, pairs[:3], len(pairs)
    ('10.1.0.1', [('10.0.0.1', '10.1.0.1'), ('10.0.0.2', '10.1.0.1'), ('10.1.0.2', '10.1.0.1')], 4)
    """
    nics = [(h, n) for h in fabric.hosts for n in h.nics if n.rail == rail]
    if len(nics) < 2:
        raise ValueError(f"rail {rail} has {len(nics)} NICs: an incast needs two at least")
    last = max(h.block for h, _ in nics)
    recv_host, recv = next((h, n) for h, n in nics if h.block == last)
    senders = [n.ip for h, n in nics if n is not recv]
    return [(senders[i % len(senders)], recv.ip) for i in range(flows)], recv


def receiver_port(fabric: Any, recv_nic: Any) -> tuple[str, int, str]:
    """(leaf, port, host) of the leaf port facing the receiver NIC."""
    for sw in fabric.switches:
        for p, info in sorted(sw.ports.items()):
            if info.kind == "host" and sw.name == recv_nic.leaf and info.peer_port == recv_nic.rail:
                return sw.name, p, info.peer_node
    raise ValueError(f"no leaf port faces NIC {recv_nic.ip}")


def ingress_groups(flows: Sequence[Any], leaf: str, tiers: Optional[TierModel] = None
                   ) -> list[str]:
    """The ingress ports (as what is behind them) the flows enter ``leaf`` by: a sender on
    ``leaf`` by its host port, the others by the spine the hash model sends them through —
    with ``tiers`` the switch each flow's path (:func:`arrival`) enters ``leaf`` from (on
    three tiers the spine of the receiver's pod, not the sender's)."""
    out: set[str] = set()
    for f in flows:
        if tiers is not None:
            out.add(arrival(tiers, f)[1])
        elif f.leaf == leaf:
            out.add(f"host {f.src_host}")
        elif f.predicted_uplink:
            out.add(f"spine {str(f.predicted_uplink).split('->')[-1]}")
    return sorted(out)


def arrival(tiers: TierModel, f: Any) -> tuple[str, str]:
    """(the leaf that delivers flow ``f`` to its receiver, what the flow enters that leaf
    from: ``host H`` or ``spine S``) as :class:`controller.fabric.tiers.TierModel` (the
    programmed routes and hash model, every tier) walks it.

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> fab = build_fabric(load_spec("topo/specs/pod2-dualport.yaml"))
    >>> f = build_flows(fab, [("10.0.2.1", "10.0.0.1")], [50000])[0]
    >>> leaf, entry = arrival(TierModel.of(fab), f)
    >>> leaf in ("b0r0l0", "b0r0l1"), entry in ("spine s0", "spine s1")
    (True, True)
    """
    nic = next(n for h in tiers.fabric.hosts for n in h.nics if n.ip == f.src_ip)
    path = tiers.path(nic, int(getattr(f, "nic_port", 0) or 0), f.dst_ip, f.sport)
    if len(path.switches) < 2:
        return path.dst_leaf, f"host {f.src_host}"
    return path.dst_leaf, f"spine {path.switches[-2]}"


PIN_TRIES = 4096
"""Source ports tried per flow before a dual-homed receiver's port is given up on."""


def pin_to_leaf(fabric: Any, tiers: TierModel, pairs: Sequence[tuple[str, str]],
                sports: Sequence[int], leaf: str, seed: int) -> list[int]:
    """``sports`` with each port whose flow the hash model delivers by another leaf than
    ``leaf`` drawn again (seeded, distinct) until it arrives by ``leaf``: a dual-port
    receiver (issue 29) is reached through both of its leaves — the spines spread its
    prefix over both — so an incast into *one* leaf port needs ports that all end there.
    Each candidate leaves by the NIC port the sender's bond hashes it to
    (``testbed.traffic.flows.hashed_nic_ports``: the scenario's QPs are bound as the bond
    picks, so a port drawn again may move its QP to the other port too; pass
    ``hashed_nic_ports(fabric, pairs, result)`` to ``build_flows``). A single-homed
    receiver's ports are returned unchanged. ValueError when no port of
    :data:`PIN_TRIES` arrives.

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> fab = build_fabric(load_spec("topo/specs/pod2-dualport.yaml"))
    >>> tiers = TierModel.of(fab)
    >>> pairs = [("10.0.2.1", "10.0.0.1")] * 4
    >>> ports = pin_to_leaf(fab, tiers, pairs, [50000, 50001, 50002, 50003], "b0r0l0", 7)
    >>> flows = build_flows(fab, pairs, ports, nic_ports=hashed_nic_ports(fab, pairs, ports))
    >>> [arrival(tiers, f)[0] for f in flows]
    ['b0r0l0', 'b0r0l0', 'b0r0l0', 'b0r0l0']
    """
    out = list(sports)
    used = set(out)
    rng = random.Random(seed)
    for i, (pair, sport) in enumerate(zip(pairs, sports)):
        def lands(port: int) -> bool:
            bound = hashed_nic_ports(fabric, [pair], [port])
            return arrival(tiers, build_flows(fabric, [pair], [port], nic_ports=bound)[0])[0] == leaf
        if lands(sport):
            continue
        for _ in range(PIN_TRIES):
            cand = rng.randrange(SPORT_RANGE[0], SPORT_RANGE[1] + 1)
            if cand not in used and lands(cand):
                used.discard(out[i])
                out[i] = cand
                used.add(cand)
                break
        else:
            raise ValueError(f"flow {i} {pair[0]} -> {pair[1]}: no source port of {PIN_TRIES} "
                             f"tried arrives by {leaf}")
    return out


def incast_flows(fabric: Any, tiers: TierModel, pairs: Sequence[tuple[str, str]], leaf: str,
                 seed: int, model: Any = None,
                 member_ports: Optional[Callable[[str, int], Any]] = None) -> list[Any]:
    """The scenario's flows: ``testbed.traffic.plan_ports(..., "random", seed)`` (source
    ports from the seed, each QP on the NIC port the sender's bond hashes it to), the ports
    :func:`pin_to_leaf` to ``leaf``, and every QP bound where the bond hashes its final
    port (``chosen.nic_ports`` for the ports kept).

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> fab = build_fabric(load_spec("topo/specs/pod2-dualport.yaml"))
    >>> pairs, recv = incast_pairs(fab, 0, 8)
    >>> flows = incast_flows(fab, TierModel.of(fab), pairs, "b0r0l0", 7)
    >>> sorted({f.nic_port for f in flows}), {f.leaf for f in flows} >= {"p1.b0r0l0", "p1.b0r0l1"}
    ([0, 1], True)
    """
    chosen = plan_ports(fabric, pairs, "random", seed, model)
    sports = pin_to_leaf(fabric, tiers, pairs, chosen.sports, leaf, seed)
    return build_flows(fabric, pairs, sports, model, member_ports,
                       hashed_nic_ports(fabric, pairs, sports))


class _Switches:
    """The target's runtime for every switch (queue rate, line rates, register resets)."""

    def __init__(self, fabric: Any, state: Any) -> None:
        self.fabric, self.state = fabric, state

    def _each(self, fn: Callable[[Any], None], names: Optional[Sequence[str]] = None) -> None:
        for sw in self.fabric.switches:
            if names is not None and sw.name not in names:
                continue
            ctl = open_control(self.state.target, self.state.switches.get(sw.name, {}), sw.name)
            try:
                fn(ctl)
            finally:
                ctl.close()

    def clear_counts(self) -> None:
        """Every switch's :data:`COUNT_REGISTERS` back to 0."""
        self._each(lambda c: [c.register_reset(r) for r in COUNT_REGISTERS])

    def line_rate(self, gbps: float) -> None:
        """Every port's line rate for PAUSE quanta (p4sim)."""
        self._each(lambda c: c.set_line_rate(gbps))

    def watchdogs(self) -> dict[str, Optional[dict[str, Any]]]:
        """Every switch's PFC watchdog settings (None: off)."""
        got: dict[str, Optional[dict[str, Any]]] = {}
        for sw in self.fabric.switches:
            self._each(lambda c, name=sw.name: got.__setitem__(name, c.pfc_watchdog()), [sw.name])
        return got

    def set_watchdogs(self, settings: Mapping[str, Optional[Mapping[str, Any]]]) -> None:
        """Each switch's PFC watchdog as ``settings`` says (None: off)."""
        for sw in self.fabric.switches:
            self._each(lambda c, wd=settings.get(sw.name): c.set_pfc_watchdog(wd), [sw.name])

    def queue_rate(self, leaf: str, port: int, rate_pps: int) -> None:
        """``rate_pps`` on one port of ``leaf``."""
        self._each(lambda c: c.set_queue_rate(rate_pps, port=port), [leaf])


def _poller(fabric: Any, programmer: Any, port_link: LinkId, rate_pps: float, period_s: float,
            say: Callable[[str], None]) -> TelemetryPoller:
    """The controller's poller over every switch-to-switch link and every leaf host port,
    printing the incast port once a second."""
    links = fabric_links(fabric) + [
        PolledLink(LinkId(sw.name, p, info.peer_node, "host"), getattr(info, "gbps", None),
                   rate_pps if (sw.name, p) == (port_link.switch, port_link.port) else None)
        for sw in fabric.switches for p, info in sorted(sw.ports.items()) if info.kind == "host"]
    shown = [-1.0]

    def on_tick(t_s: float, samples: Any) -> None:
        s = samples.get(port_link)
        if s is not None and t_s - shown[0] >= 1.0 - 1e-6:
            shown[0] = t_s
            pfc = sum(x.pfc_tx for x in samples.values())
            say(f"  t={t_s:5.1f}s  {port_link} {s.pps:5.0f} pps  q {s.max_qdepth:3d}  "
                f"ecn {s.marks:4d}  pfc frames (all switches) {pfc:4d}")
    return TelemetryPoller({n: p4rt_reader(c) for n, c in programmer.connections.items()},
                           links, period_s, on_tick=on_tick)


def _run_load(mode: str, load: str, flows: Sequence[Any], state: Any,
              save_state: Callable[[], None], poller: TelemetryPoller, t0: float,
              port_link: LinkId, duration_s: float, flow_rate_pps: float, run_dir: Path,
              say: Callable[[str], None]) -> PhaseFigures:
    """One run: the NIC flows for ``duration_s``, the fabric left to drain, its figures."""
    ph = PhaseFigures(mode, load, duration_s=duration_s)
    fleet = NicFleet(state, save_state, run_dir / f"nic-{mode}-{load}")
    start = time.monotonic() - t0
    try:
        fleet.start(flows, duration_s, NicOptions(line_rate_pps=flow_rate_pps), together=True)
        fleet.wait_senders(duration_s + 30)
    except Exception as exc:  # noqa: BLE001 — said in the report, the run goes on to stop
        ph.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        ph.errors += fleet.stop()
    # the port drains what is queued: wait (bounded) until the poller saw it idle
    end = time.monotonic() - t0

    def idle() -> bool:
        ss = poller.series.samples.get(port_link, [])
        return bool(ss) and ss[-1].t_s - ss[-1].dt_s > end and ss[-1].tx_pkts == 0
    if not poll_until(idle, SETTLE_TIMEOUT_S, interval_s=0.05):
        ph.errors.append(f"the incast port did not drain within {SETTLE_TIMEOUT_S:g} s")
    stop = time.monotonic() - t0
    for r in merge_reports(flows, fleet.procs):
        ph.flows.append(FlowFigures(r.label, r.sent_pkts, r.recv_pkts, r.goodput_mbps,
                                    r.lost_pkts, r.pauses))
    (ph.pause_frames, ph.ecn_marks, ph.switch_drops, ph.peak_qdepth_pkts,
     ph.samples) = switch_figures(poller.series, start, stop, port_link)
    say(f"incast: {mode:7s} {load:6s}: {ph.delivered}/{len(ph.flows)} flows delivered, "
        f"pfc frames {ph.pause_frames}, NIC pauses {ph.nic_pauses}, ecn marks {ph.ecn_marks}, "
        f"drops {ph.drops}, peak queue {ph.peak_qdepth_pkts} pkts, jain {ph.jain}")
    return ph


def run_incast(fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
               opts: Any, say: Callable[[str], None] = print,
               dynamic: DynamicThresholds = INCAST_DYNAMIC) -> IncastResult:
    """Run the scenario on a running, programmed testbed (``opts``: ``ScenarioOptions``)."""
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(1 << 30)
    run_dir = new_run_dir(opts.runs_root)
    res = IncastResult(1, run_dir, seed)
    pairs, recv = incast_pairs(fabric, opts.rail, opts.flows)
    leaf, port, host = receiver_port(fabric, recv)
    port_link = LinkId(leaf, port, host, "host")
    model = programmer.hash_model()
    tiers = TierModel.of(fabric)
    flows = incast_flows(fabric, tiers, pairs, leaf, seed, model, programmer.member_ports)
    lone = [next((f for f in flows if f.leaf == leaf), flows[0])]
    groups = ingress_groups(flows, leaf, tiers)
    rate = port_rate_pps(opts.flow_rate_pps)
    static_pfc = programmer.pfc
    if static_pfc is None:
        return _fail(res, run_dir, ["the testbed runs without PFC (no static thresholds to "
                                    "compare with)"], say)
    cells = dynamic.buffer.cells(DATA_FRAME_BYTES)
    res.prediction = pred = predict(static_pfc.xoff_pkts, dynamic, cells, len(groups),
                                    QUEUE_PKTS, PRIORITY)
    half = max(1.0, opts.duration_s / 2)
    say(f"incast: {len(flows)} NIC-emulator flows (DCQCN, {opts.flow_rate_pps:g} pps each, "
        f"source ports from seed {seed}) to {recv.ip} behind {leaf} port {port}, which "
        f"drains {rate} pps; they enter {leaf} by {len(groups)} ports ({', '.join(groups)})")
    say(f"incast: predicted XOFF static {pred.static_xoff_pkts} packets per port, dynamic "
        f"{pred.dynamic_lone_xoff_pkts} alone / {pred.dynamic_incast_xoff_pkts} each of "
        f"{pred.groups}; the queue holds {QUEUE_PKTS}")
    record = ScenarioRecord("incast", seed, state.target, opts.rail, opts.flow_rate_pps,
                            float(rate), half, uplinks=[str(port_link)])
    sw = _Switches(fabric, state)
    original = programmer.thresholds
    settings = [f"Receiver {recv.ip} behind `{leaf}` port {port} ({host}), draining {rate} "
                f"packets/s; {len(flows)} flows of {opts.flow_rate_pps:g} pps (DCQCN on, "
                f"source ports from seed {seed}) entering `{leaf}` by {len(groups)} ports "
                f"({', '.join(groups)}); the lone flow {lone[0].label}; each run "
                f"{half:g} s. Static: XOFF {static_pfc.xoff_pkts} / XON {static_pfc.xon_pkts} "
                f"packets per ingress port, ECN RED 8..32. Dynamic: a shared buffer of "
                f"{dynamic.buffer.size_cells} cells of {2 ** dynamic.buffer.cell_bytes_log2} B "
                f"({cells} a data frame), PFC alpha 2^{dynamic.pfc[PRIORITY].code - 6}, ECN "
                f"alpha 2^{dynamic.ecn[PRIORITY].table_params()['kmin_alpha_code'] - 6}.."
                f"2^{dynamic.ecn[PRIORITY].table_params()['kmax_alpha_code'] - 6} of the free "
                f"buffer. The egress queue holds {QUEUE_PKTS} packets. GOR off."]
    paced = False
    watchdogs: Optional[dict[str, Optional[dict[str, Any]]]] = None   # None: not read, not changed
    pfc_honoured = state.target in PFC_TARGETS
    reasons: list[str] = []
    poller = _poller(fabric, programmer, port_link, float(rate), opts.period_s, say)
    try:
        sw.queue_rate(leaf, port, rate)
        if pfc_honoured:
            paced = True            # before: a switch that refuses mid-way leaves the others paced
            watchdogs = sw.watchdogs()
            sw.set_watchdogs({})
            sw.line_rate(PFC_LINE_RATE_GBPS)
            settings.append("The switches' PFC watchdog is off while their PAUSE quanta are "
                            "timed at 100 Mb/s (a PAUSE lasts 100 times longer: its 200 ms "
                            "detection would take the incast's own pauses for storms).")
        else:
            settings.append(f"On {state.target} the MAC does not honour PFC frames: the "
                            "switches send and count them, nothing pauses a switch.")
        t0 = time.monotonic()
        poller.start()
        for mode in ("static", "dynamic"):
            n = programmer.apply_thresholds(None if mode == "static" else dynamic)
            say(f"incast: {mode} thresholds on every switch ({sum(n.values())} updates)")
            record.event(time.monotonic() - t0, f"{mode} thresholds")
            for load, fl in (("lone", lone), ("incast", flows)):
                sw.clear_counts()
                record.event(time.monotonic() - t0, f"{mode}: {load} ({len(fl)} flows) starts")
                ph = _run_load(mode, load, fl, state, save_state, poller, t0, port_link, half,
                               opts.flow_rate_pps, run_dir, say)
                res.phases[(mode, load)] = ph
                reasons += ph.why_unmeasured()
                for f in ph.flows:
                    record.flows.append(FlowRecord(f"{mode} {load} {f.label}", "", recv.ip, 0,
                                                   "", f.sent_pkts))
    except (ControlError, OSError, RuntimeError, ValueError) as exc:
        reasons.append(f"{type(exc).__name__}: {exc}")
    finally:
        poller.stop()
        reasons += _restore(programmer, original, sw, paced, state, leaf, port, rate, watchdogs)
    res.errors = reasons
    write_report(run_dir, record, poller.series)
    if res.phases:
        append_incast(run_dir, res.phases, pred, settings, pfc_honoured)
    res.verdicts = checks(res.phases, pred, pfc_honoured)
    for c in res.verdicts:
        say(f"incast: {c.verdict}: {c.name}: expected {c.expected}; measured {c.measured}")
    res.status = report_failures(run_dir, "incast", reasons, say)
    say(f"incast: report {run_dir / 'report.md'}")
    return res


def _restore(programmer: Any, original: Optional[DynamicThresholds], sw: _Switches,
             paced: bool, state: Any, leaf: str, port: int, rate: int,
             watchdogs: Optional[Mapping[str, Optional[Mapping[str, Any]]]]) -> list[str]:
    """The testbed as it was: its threshold mode, counts, line rates, PFC watchdogs (when
    they were read: None leaves them as they are, so a failed read never turns every
    switch's watchdog off), the port's rate."""
    out: list[str] = []
    try:
        programmer.apply_thresholds(original)
        sw.clear_counts()
    except Exception as exc:  # noqa: BLE001 — said; the rest is still set back
        out.append(f"the testbed's thresholds were not set back: {exc}")
    if paced:
        try:
            sw.line_rate(P4SIM_LINE_RATE_GBPS)
        except ControlError as exc:
            out.append(f"line rates not set back: {exc}")
        if watchdogs is not None:
            try:
                sw.set_watchdogs(watchdogs)
            except ControlError as exc:
                out.append(f"PFC watchdogs not set back: {exc}")
    clear_rates(state, {(leaf, port): float(rate)})
    return out


def _fail(res: IncastResult, run_dir: Path, reasons: list[str],
          say: Callable[[str], None]) -> IncastResult:
    res.errors = reasons
    res.status = report_failures(run_dir, "incast", reasons, say)
    return res


__all__ = ["DATA_FRAME_BYTES", "INCAST_DYNAMIC", "IncastResult", "PFC_TARGETS", "QUEUE_PKTS", "incast_flows", "incast_pairs",
           "ingress_groups", "port_rate_pps", "receiver_port", "run_incast"]
