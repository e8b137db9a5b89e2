"""One traffic run on a running, programmed testbed (:func:`run_traffic`): plan the
flows, optionally rate-limit the uplinks, start the NIC fleet, read the uplink counters
before and after (settled), stop the fleet and merge the NIC reports per flow.

>>> TrafficOptions().port_mode, FlowResult("f0", "l", "a", "b", 1, 2, None).lost_pkts
('random', 0)
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from host.nic.rc import QP_RTS
from testbed.control import open_control
from testbed.queues import set_uplink_rates
from testbed.traffic.counters import leaf_uplinks, max_over_mean, read_uplink_tx, settled_uplink_tx
from testbed.traffic.fleet import NicFleet
from testbed.traffic.flows import NicFlow, build_flows, collective_pairs, elephant_pairs, plan_ports
from testbed.traffic.nicproc import NicOptions, NicProcess


@dataclass(slots=True)
class FlowResult:
    """What the NIC reports say about one flow (sender and receiver sides merged);
    ``last_recv_s``: the receiver's last packet (``time.monotonic``, one clock for every
    namespace), ``qp_state``: the sender's QP at the end (``RTS``, or ``ERROR`` once its
    retries ran out)."""

    name: str
    label: str
    src_ip: str
    dst_ip: str
    sport: int
    qpn: int
    predicted_uplink: Optional[str]
    sent_pkts: int = 0
    recv_pkts: int = 0
    goodput_mbps: float = 0.0
    ce_pkts: int = 0
    cnps_sent: int = 0
    cnps_received: int = 0
    dcqcn_decreases: int = 0
    final_rate_pps: float = 0.0
    pauses: int = 0
    paused_s: float = 0.0
    lost_pkts: int = 0
    last_recv_s: Optional[float] = None
    qp_state: str = ""

    @property
    def qp_ok(self) -> bool:
        """The sender's QP ended ready to send (``host.nic.rc.QP_RTS``), not in error."""
        return self.qp_state == QP_RTS


def delivery(results: Sequence[FlowResult]) -> dict[str, tuple[int, int]]:
    """Flow label → (packets sent, packets received), as the scenarios report it.

    >>> delivery([FlowResult("f", "b0s0→b1s0", "10.0.0.1", "10.1.0.1", 49152, 1, None, 10, 9)])
    {'b0s0→b1s0': (10, 9)}
    """
    return {r.label: (r.sent_pkts, r.recv_pkts) for r in results}


@dataclass(slots=True)
class TrafficResult:
    """One run: the flows, per-uplink tx packets (counter deltas), busiest ÷ mean, errors."""

    port_mode: str
    seed: int
    duration_s: float
    flows: list[FlowResult]
    uplink_tx: dict[str, int]
    max_over_mean: float
    errors: list[str] = field(default_factory=list)
    sender_reports: list[dict[str, Any]] = field(default_factory=list)

    @property
    def mean_goodput_mbps(self) -> float:
        """Mean receiver goodput per flow (Mb/s of RDMA payload)."""
        return sum(f.goodput_mbps for f in self.flows) / len(self.flows) if self.flows else 0.0

    def to_json(self) -> str:
        """The result as indented JSON (``mean_goodput_mbps`` included)."""
        d = asdict(self)
        d["mean_goodput_mbps"] = self.mean_goodput_mbps
        return json.dumps(d, indent=1, sort_keys=True)

    def summary(self) -> str:
        """A few lines for people: one per flow, then the uplinks."""
        lines = [f"traffic: {len(self.flows)} flows, {self.port_mode} ports (seed {self.seed}), "
                 f"{self.duration_s:g} s"]
        for f in self.flows:
            lines.append(f"  {f.label:<22} uplink {f.predicted_uplink or '-':<12} sent {f.sent_pkts:6d} "
                         f"recv {f.recv_pkts:6d} goodput {f.goodput_mbps:6.3f} Mb/s CNPs {f.cnps_received:4d} "
                         f"pauses {f.pauses:3d} rate {f.final_rate_pps:7.1f} pps")
        lines.append("  uplink tx packets: " + ", ".join(f"{u} {n}" for u, n in sorted(self.uplink_tx.items())))
        lines.append(f"  busiest/mean {self.max_over_mean:.2f}; mean goodput "
                     f"{self.mean_goodput_mbps:.3f} Mb/s per flow")
        lines += [f"  error: {e}" for e in self.errors]
        return "\n".join(lines)


def merge_reports(flows: Sequence[NicFlow], procs: Sequence[NicProcess]) -> list[FlowResult]:
    """Per-flow results from the senders' and receivers' JSON reports (matched by source
    IP and QPN)."""
    send: dict[tuple[str, int], dict[str, Any]] = {}
    recv: dict[tuple[str, int], dict[str, Any]] = {}
    for p in procs:
        for fl in p.report.get("flows", []):
            name = str(fl.get("flow", ""))
            src = name.split(":", 1)[0]
            qpn = int(name.rsplit(" ", 1)[-1]) if name.rsplit(" ", 1)[-1].isdigit() else -1
            (send if fl.get("role") == "sender" else recv)[(src, qpn)] = fl
    out = []
    for f in flows:
        s, r = send.get((f.src_ip, f.qpn), {}), recv.get((f.src_ip, f.qpn), {})
        out.append(FlowResult(
            f.name, f.label, f.src_ip, f.dst_ip, f.sport, f.qpn, f.predicted_uplink,
            sent_pkts=int(s.get("sent_pkts", 0)), recv_pkts=int(r.get("recv_pkts", 0)),
            goodput_mbps=float(r.get("goodput_mbps", 0.0)), ce_pkts=int(r.get("ce_pkts", 0)),
            cnps_sent=int(r.get("cnps_sent", 0)), cnps_received=int(s.get("cnps_received", 0)),
            dcqcn_decreases=int(s.get("dcqcn_decreases", 0)),
            final_rate_pps=float(s.get("rate_pps", 0.0)), pauses=int(s.get("pauses", 0)),
            paused_s=float(s.get("paused_s", 0.0)), lost_pkts=int(r.get("lost_pkts", 0)),
            last_recv_s=None if r.get("last_s") is None else float(r["last_s"]),
            qp_state=str(s.get("qp_state", ""))))
    return out


@dataclass(slots=True)
class TrafficOptions:
    """One run: flows, port mode and seed, duration, NIC knobs, optional uplink queue rate
    (p4sim control API; ``None`` leaves the queues unlimited)."""

    elephants: int = 8
    rail: int = 0
    collective: Optional[str] = None
    port_mode: str = "random"
    seed: int = 0
    duration_s: float = 8.0
    nic: NicOptions = field(default_factory=NicOptions)
    queue_rate_pps: Optional[float] = None
    report_dir: Optional[Path] = None


def plan_flows(fabric: Any, programmer: Any, opts: TrafficOptions) -> list[NicFlow]:
    """The run's flows with ports chosen (``opts.port_mode``) and uplinks predicted."""
    pairs = (collective_pairs(fabric, opts.collective) if opts.collective
             else elephant_pairs(fabric, opts.rail, opts.elephants))
    model = programmer.hash_model()
    chosen = plan_ports(fabric, pairs, opts.port_mode, opts.seed, model)
    return build_flows(fabric, pairs, chosen.sports, model, programmer.member_ports,
                       chosen.nic_ports)


def run_traffic(fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
                opts: TrafficOptions, connections: Optional[Mapping[str, Any]] = None,
                say: Callable[[str], None] = print) -> TrafficResult:
    """Run the flows of ``opts`` with the NIC emulator on a running, programmed testbed
    (see the module docstring); ``connections`` (switch → SwitchConnection) default to the
    programmer's own."""
    conns = connections if connections is not None else programmer.connections
    flows = plan_flows(fabric, programmer, opts)
    uplinks = leaf_uplinks(fabric, sorted({f.leaf for f in flows}))
    say(f"traffic: {len(flows)} flows, {opts.port_mode} ports (seed {opts.seed}), "
        f"{opts.nic.line_rate_pps:g} pps per QP, {opts.duration_s:g} s")
    for f in flows:
        say(f"  {f.label:<22} {f.src_ip} -> {f.dst_ip} qp {f.qpn} predicted {f.predicted_uplink}")
    rates: dict[tuple[str, int], float] = {}
    if opts.queue_rate_pps:
        rates = set_uplink_rates(fabric, state, opts.queue_rate_pps, say)
    report_dir = opts.report_dir or Path(tempfile.mkdtemp(prefix="host-traffic-"))
    fleet = NicFleet(state, save_state, report_dir)
    try:
        before = read_uplink_tx(conns, uplinks)
        fleet.start(flows, opts.duration_s, opts.nic)
        fleet.wait_senders(opts.duration_s + 15)
        after = settled_uplink_tx(conns, uplinks)   # the last frames have left the uplinks
    finally:
        errors = fleet.stop()
        if rates:
            for (leaf, port) in rates:
                _set_rate(state, leaf, port, 0)
    tx = {u: after[u] - before[u] for u in uplinks}
    result = TrafficResult(opts.port_mode, opts.seed, opts.duration_s,
                           merge_reports(flows, fleet.procs), tx, max_over_mean(tx), errors,
                           [p.report for p in fleet.procs if p.role == "send"])
    say(result.summary())
    return result


def _set_rate(state: Any, leaf: str, port: int, rate_pps: float) -> None:
    try:
        ctl = open_control(state.target, state.switches[leaf], leaf)
        try:
            ctl.set_queue_rate(round(rate_pps), port=port)
        finally:
            ctl.close()
    except Exception:  # noqa: BLE001 — best effort on the way out
        pass


__all__ = ["FlowResult", "TrafficOptions", "TrafficResult", "merge_reports", "plan_flows",
           "run_traffic"]
