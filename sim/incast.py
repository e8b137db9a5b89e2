"""``python -m sim incast [--compare]``: the live incast scenario (``make run
SCENARIO=incast``, scenarios/incast.py) in the simulator's PFC network
(:mod:`sim.pfcnet`), static and dynamic thresholds, one flow alone and every flow, and
the comparison with the live run recorded in ``sim/calibration/incast-live.yaml``.

The setup is the scenario's, rebuilt here from the same description (sim/ imports
nothing of scenarios/; ``tests/sim/test_sim_incast.py`` pins every number below to
``scenarios.incast``'s):

* the fabric of a topo spec (default ``topo/specs/default.yaml``) and the controller's
  hash model of it (``controller.fabric.fabric_hash_model``): the receiver is the first
  NIC on the rail in the last block, every other NIC on the rail sends, ``flows`` QPs
  round robin, source ports ``random.Random(seed).sample(49152..65535)`` (the scenario's
  draw), each flow's leaf uplink and spine link from the hash model;
* the receiver's leaf port drains half a flow's rate (125 pps), every queue holds 64
  packets, frames of 1082 bytes;
* static: XOFF 32 / XON 16 packets per ingress port, RED 8..32 (``controller.fabric.qos``);
  dynamic: :data:`INCAST_DYNAMIC` (576 cells of 128 B, PFC alpha 2, ECN alpha 1/4..2);
* the lone flow is the first from the receiver's own leaf; each run lasts ``run_s``.

Example::

    >>> s = IncastSetup()
    >>> [f.label for f in incast_flows(s)][:2], lone_flow(s).label
    (['b0s0:0->b1s0', 'b0s1:1->b1s0'], 'b1s1:2->b1s0')
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from controller.fabric import fabric_hash_model
from p4src.buffermodel import DynamicThresholds, EcnAlpha, PfcAlpha, SharedBuffer
from p4src.hashmodel import predict_member, route_group
from sim.pfcnet import NetParams, NetResult, PfcNet
from sim.queues import StaticThresholds, SwitchQueues
from sim.topology import LEAF_UPLINK_GROUP, SimInputError, member_port
from topo.model import Fabric, NicInfo, build_fabric
from topo.spec import SpecError, load_spec

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SPEC = REPO / "topo" / "specs" / "default.yaml"
LIVE = REPO / "sim" / "calibration" / "incast-live.yaml"
SPORT_RANGE = (49152, 65535)
ROCE_DPORT = 4791
QUEUE_PKTS = 64
DATA_FRAME_BYTES = 1082
QDEPTH_BIN_PKTS = 4
QDEPTH_OPEN_BIN_PKTS = 60
INCAST_DYNAMIC = DynamicThresholds(
    SharedBuffer(QUEUE_PKTS * 9, 7),
    {3: PfcAlpha(2, xon_cells=0, xon_offset_cells=16 * 9)},
    {3: EcnAlpha("1/4", 2, 51)},
)
"""The scenario's dynamic mode (``scenarios.incast.INCAST_DYNAMIC``)."""
INCAST_TIMING = NetParams(link_delay_s=0.005, pause_delay_s=0.001, ctrl_delay_s=0.005)
"""The timings :func:`compare` runs with, chosen on the *lone* runs only (grid over
``pause_delay_s`` 1, 3, 10, 30 ms x ``link_delay_s`` 0.5, 2, 5 ms x ``ctrl_delay_s`` 1, 5,
20 ms, 2 seeds; least sum of relative errors of PFC frames and ECN marks plus the peak
queue in bins): 5 ms a hop (a veth and a Python switch on a loaded 2-core machine), CNPs
and ACKs 5 ms back, a PAUSE obeyed 1 ms after it was sent."""
MODES = ("static", "dynamic")
LOADS = ("lone", "incast")


@dataclass(frozen=True, slots=True)
class IncastSetup:
    """The scenario's knobs (``make run SCENARIO=incast`` defaults; module docstring)."""

    spec: Path = DEFAULT_SPEC
    rail: int = 0
    flows: int = 8
    flow_rate_pps: float = 250.0
    run_s: float = 6.0
    seed: int = 7
    static: StaticThresholds = field(default_factory=StaticThresholds)
    dynamic: DynamicThresholds = INCAST_DYNAMIC

    @property
    def port_rate_pps(self) -> int:
        """The receiver port's drain rate: half a flow's (``scenarios.incast.port_rate_pps``)."""
        return max(1, round(self.flow_rate_pps / 2))

    def fabric(self) -> Fabric:
        """The fabric of :attr:`spec`; ``SimInputError`` naming the file when it is bad."""
        try:
            return build_fabric(load_spec(self.spec))
        except SpecError as exc:
            raise SimInputError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class IncastFlow:
    """One QP of the incast: where it enters, its source port, its hops
    ``[(switch, ingress port, egress port)]`` as the hash model routes it."""

    label: str
    src_nic: str
    src_ip: str
    dst_ip: str
    sport: int
    hops: tuple[tuple[str, int, int], ...]


def _rail_nics(fab: Fabric, rail: int) -> list[tuple[str, NicInfo]]:
    nics = [(h.name, n) for h in fab.hosts for n in h.nics if n.rail == rail]
    if len(nics) < 2:
        raise SimInputError(f"rail {rail}: {len(nics)} NICs on it; an incast needs two at least")
    return nics


def incast_flows(setup: IncastSetup, fab: Optional[Fabric] = None) -> list[IncastFlow]:
    """The scenario's flows (``scenarios.incast.incast_pairs`` and the ``random`` port
    draw of ``testbed.traffic.choose_ports``), routed through the hash model."""
    fab = fab or setup.fabric()
    nics = _rail_nics(fab, setup.rail)
    last = max(fab.host(h).block for h, _ in nics)
    recv_host, recv = next((h, n) for h, n in nics if fab.host(h).block == last)
    senders = [(h, n) for h, n in nics if n is not recv]
    sports = random.Random(setup.seed).sample(range(SPORT_RANGE[0], SPORT_RANGE[1] + 1), setup.flows)
    model = fabric_hash_model(fab, frozenset())
    out = []
    for i in range(setup.flows):
        host, nic = senders[i % len(senders)]
        hops = _route(fab, model, nic, recv, sports[i])
        out.append(IncastFlow(f"{host}:{i}->{recv_host}", f"{host}:{nic.rail}", nic.ip, recv.ip,
                              sports[i], hops))
    return out


def lone_flow(setup: IncastSetup, flows: Optional[list[IncastFlow]] = None) -> IncastFlow:
    """The scenario's lone flow: the first that starts on the receiver's leaf."""
    flows = flows or incast_flows(setup)
    leaf = flows[0].hops[-1][0]
    return next((f for f in flows if f.hops[0][0] == leaf), flows[0])


def _route(fab: Fabric, model: Any, src: NicInfo, dst: NicInfo, sport: int) -> tuple[tuple[str, int, int], ...]:
    """Hops of one flow: source leaf (uplink from the hash model), spine, destination leaf."""
    dleaf = fab.switch(dst.leaf)
    recv_port = dst.leaf_port
    if src.leaf == dst.leaf:
        return ((src.leaf, src.leaf_port, recv_port),)
    leaf = fab.switch(src.leaf)
    sw = model.switch(src.leaf)
    gid = route_group(sw, dst.ip, LEAF_UPLINK_GROUP)
    member = predict_member(sw, LEAF_UPLINK_GROUP if gid is None else gid, src.ip, dst.ip, 17, sport,
                            ROCE_DPORT)
    up = member_port(leaf, member)
    spine_name, spine_in = leaf.ports[up].peer_node, leaf.ports[up].peer_port
    spine = fab.switch(spine_name)
    downs = [p for p, info in sorted(spine.ports.items()) if info.peer_node == dleaf.name]
    if not downs:
        raise SimInputError(f"{spine_name} has no link to {dleaf.name}")
    down = downs[0]
    if len(downs) > 1:
        sm = model.switch(spine_name)
        g = route_group(sm, dst.ip)
        if g is not None:
            down = member_port(spine, predict_member(sm, g, src.ip, dst.ip, 17, sport, ROCE_DPORT))
    return ((src.leaf, src.leaf_port, up), (spine_name, spine_in, down),
            (dleaf.name, spine.ports[down].peer_port, recv_port))


@dataclass(slots=True)
class PhaseFigures:
    """One simulated run, in the scenario's figures (``scenarios.incast_report.PhaseFigures``)."""

    pfc_frames: int
    nic_pauses: int
    ecn_marks: int
    drops: int
    peak_queue_pkts: int
    jain: Optional[float]
    sent_pkts: int
    goodput_mbps: list[float]

    def as_dict(self) -> dict[str, Any]:
        """The figures the live run records (``incast-live.yaml``'s keys; goodput summed
        over the flows)."""
        return {"pfc_frames": self.pfc_frames, "nic_pauses": self.nic_pauses, "ecn_marks": self.ecn_marks,
                "drops": self.drops, "peak_queue_pkts": self.peak_queue_pkts, "jain": self.jain,
                "goodput_mbps": round(sum(self.goodput_mbps), 4), "sent_pkts": self.sent_pkts}


def jain_index(values: list[float]) -> Optional[float]:
    """``(sum x)^2 / (n sum x^2)`` to 3 decimals (the scenario's): ``jain_index([3.0, 1.0]) == 0.8``."""
    sq = sum(v * v for v in values)
    return round(sum(values) ** 2 / (len(values) * sq), 3) if values and sq > 0 else None


def queue_bin(depth_pkts: int) -> int:
    """The switches' histogram reading of a depth: the lower edge of its 4-packet bin, 60
    for "60 or more": ``queue_bin(31) == 28``, ``queue_bin(63) == 60``."""
    return min(QDEPTH_OPEN_BIN_PKTS, depth_pkts // QDEPTH_BIN_PKTS * QDEPTH_BIN_PKTS)


def simulate(setup: IncastSetup, mode: str, load: str, params: NetParams = NetParams(),
             seed: int = 0, fab: Optional[Fabric] = None) -> PhaseFigures:
    """One run of ``load`` (``lone`` / ``incast``) under ``mode`` (``static`` / ``dynamic``)."""
    if mode not in MODES or load not in LOADS:
        raise SimInputError(f"mode {mode!r} / load {load!r}: one of {MODES} / {LOADS}")
    fab = fab or setup.fabric()
    flows = incast_flows(setup, fab)
    run = [lone_flow(setup, flows)] if load == "lone" else flows
    net = PfcNet(params, seed)
    for i, sw in enumerate(fab.switches):
        net.add_switch(sw.name, SwitchQueues.static(setup.static, seed * 1000 + i) if mode == "static"
                       else SwitchQueues.dynamic(setup.dynamic, seed * 1000 + i))
    last = flows[0].hops[-1]
    net.add_port(last[0], last[2], float(setup.port_rate_pps))
    for f in run:
        first = f.hops[0]
        if f.src_nic not in net.nics:
            net.add_nic(f.src_nic, first[0], first[1])
        for (a, _, a_out), (b, b_in, _) in zip(f.hops, f.hops[1:]):
            net.add_link(a, a_out, b, b_in)
        net.add_flow(f.label, f.src_nic, list(f.hops), setup.flow_rate_pps)
    res: NetResult = net.run(setup.run_s)
    good = [res.flows[f.label].goodput_mbps for f in run]
    return PhaseFigures(res.pfc_frames, res.nic_pauses, res.ecn_marks, res.lost_pkts,
                        queue_bin(res.peak_pkts[(last[0], last[2])]), jain_index(good), res.sent_pkts, good)


def load_live(path: Path = LIVE) -> dict[str, dict[str, float]]:
    """The recorded live run: ``{"static-lone": {"pfc_frames": 50, ...}, ...}``;
    ``SimInputError`` naming the file and field when it is malformed."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SimInputError(f"{path}: cannot read: {exc}") from None
    phases = data.get("phases") if isinstance(data, dict) else None
    if not isinstance(phases, dict):
        raise SimInputError(f"{path}: phases: a mapping of '<mode>-<load>' to figures is missing")
    for key, figs in phases.items():
        if key not in [f"{m}-{l}" for m in MODES for l in LOADS] or not isinstance(figs, dict):
            raise SimInputError(f"{path}: phases.{key}: not a '<mode>-<load>' mapping of figures")
    return phases


#: Which live figures the simulator's timings were chosen on (the lone runs) and which it
#: never saw while they were chosen (the incast runs): ``python -m sim incast --compare``.
TUNED_ON = ("static-lone", "dynamic-lone")
HELD_OUT = ("static-incast", "dynamic-incast")
FIGURES = ("pfc_frames", "nic_pauses", "ecn_marks", "drops", "peak_queue_pkts", "jain", "goodput_mbps",
           "sent_pkts")


@dataclass(slots=True)
class Comparison:
    """Simulated (mean over ``seeds``) against live, per phase and figure."""

    sim: dict[str, dict[str, float]]
    live: dict[str, dict[str, float]]
    spread: dict[str, dict[str, tuple[float, float]]]

    def error(self, phase: str, figure: str) -> Optional[float]:
        """Relative error in % for counts, absolute for the peak (packets) and Jain's index."""
        s, l = self.sim[phase].get(figure), self.live.get(phase, {}).get(figure)
        if s is None or l is None:
            return None
        if figure in ("peak_queue_pkts", "jain"):
            return s - l
        return 100.0 * (s - l) / l if l else (0.0 if s == 0 else float("inf"))

    def lines(self) -> list[str]:
        """The table ``--compare`` prints."""
        out = [f"{'phase':15s} {'figure':16s} {'live':>8s} {'sim':>9s} {'sim range':>15s} {'error':>9s}  set"]
        for phase in (*TUNED_ON, *HELD_OUT):
            for fig in FIGURES:
                if fig not in self.live.get(phase, {}):
                    continue
                e = self.error(phase, fig)
                lo, hi = self.spread[phase][fig]
                unit = "" if fig in ("peak_queue_pkts", "jain") else " %"
                es = "-" if e is None else (f"{e:+.3g}{unit}" if fig != "jain" else f"{e:+.3f}")
                out.append(f"{phase:15s} {fig:16s} {self.live.get(phase, {}).get(fig, '-')!s:>8s} "
                           f"{self.sim[phase][fig]:9.4g} {f'{lo:g}..{hi:g}':>15s} {es:>9s}  "
                           f"{'tuned' if phase in TUNED_ON else 'held out'}")
        return out


def compare(setup: IncastSetup = IncastSetup(), params: NetParams = INCAST_TIMING, seeds: int = 5,
            live: Optional[dict[str, dict[str, float]]] = None) -> Comparison:
    """Every phase simulated with ``seeds`` seeds (the RED draws), against the live run."""
    fab = setup.fabric()
    sims: dict[str, dict[str, float]] = {}
    spread: dict[str, dict[str, tuple[float, float]]] = {}
    for mode in MODES:
        for load in LOADS:
            runs = [simulate(setup, mode, load, params, s, fab).as_dict() for s in range(1, seeds + 1)]
            key = f"{mode}-{load}"
            sims[key] = {k: sum(float(r[k] or 0) for r in runs) / len(runs) for k in FIGURES}
            spread[key] = {k: (min(float(r[k] or 0) for r in runs), max(float(r[k] or 0) for r in runs))
                           for k in FIGURES}
    return Comparison(sims, live if live is not None else load_live(), spread)


__all__ = ["Comparison", "FIGURES", "HELD_OUT", "INCAST_DYNAMIC", "INCAST_TIMING", "IncastFlow", "IncastSetup", "PhaseFigures",
           "TUNED_ON", "compare", "incast_flows", "jain_index", "load_live", "lone_flow", "queue_bin",
           "simulate"]
