"""``python -m scenarios measure --out FILE.json`` (``python -m sim measure`` runs it too):
time small collectives that DIFFER in what the prediction model must explain on the
RUNNING testbed (it never starts one) and record them for ``python -m sim calibrate``.
It drives the live testbed, so it lives with the scenarios, not in the model's folder.

Preconditions: root, a testbed brought up by ``make run``/``python -m testbed up
--hold`` (``build/testbed-state.json`` with live processes), ``build/topology.json`` and
the compiled ``build/fabric.p4info.txtpb`` / ``build/fabric.json``.

What is measured (:func:`default_collectives`): ring steps on one rail

* of 2 ranks under one leaf (1 switch) and across blocks (3 switches) at 20, 80 and 200
  packets per flow — per-host overhead (the intercept), per-hop overhead (1 vs 3
  switches) and bandwidth (the slope in size) separate;
* of 4 ranks in interleaved order (two flows leave each leaf for the other block) with
  TCCL's ports (one flow per uplink) and with *colliding* random ports
  (:func:`colliding_ports`: drawn through the programmed hash model until two flows share
  one leaf uplink) — max-min sharing of a leaf uplink whose queue drains
  :data:`UPLINK_QUEUE_PPS` (set through p4sim's control API for the run, as
  ``scenarios.story`` sizes them, then cleared) while every NIC QP sends
  :data:`NIC_LINE_RATE_PPS`.

A step's time is taken from the NIC emulators' own per-QP counters on the one monotonic
clock of the machine (:func:`step_time_s`): last packet received by any receiver minus the
first packet sent by any sender, so queueing at a shared uplink counts. Runs that lost a
packet are refused (the ring step would not have completed). Some collectives are marked
``heldout`` (:data:`HELDOUT`): ``sim calibrate`` fits on the others and reports its error
on these separately.

Example::

    >>> [c["name"] for c in default_collectives()][:2]
    ['ring2-one-leaf-p20', 'ring2-one-leaf-p80']
"""
from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from controller.fabric_setup import FabricProgrammer
from host.tccl.planner import Planner, parse_ranks
from sim.calibrate import SCHEMA
from testbed.cli import STATE_PATH, TOPOLOGY_PATH, load_topology
from testbed.net import TestbedState, record_matches
from testbed.queues import clear_rates, set_uplink_rates
from testbed.traffic import NicFleet, NicOptions, build_flows, plan_ports, predict_uplink

REPO = Path(__file__).resolve().parent.parent
NIC_LINE_RATE_PPS = 100.0        # testbed.traffic.NicOptions default: DCQCN's maximum per QP
UPLINK_QUEUE_PPS = 150.0         # one flow alone at 67 %, two sharing at 133 % of the queue
MTU_BYTES = 1024
MESSAGE_BYTES = 4096             # 4 packets per message
PACKETS = (20, 80, 200)
MAX_DRAWS = 200
HELDOUT = frozenset({"ring2-one-leaf-p80", "ring4-interleaved-collide-p20", "ring4-rail1-tccl-p80"})

_RING2_ONE_LEAF = ["b0s0:0", "b0s1:0"]
_RING2_CROSS = ["b0s0:0", "b1s0:0"]
_RING4_INTERLEAVED = ["b0s0:0", "b1s0:0", "b0s1:0", "b1s1:0"]
_RING4_RAIL1 = ["b0s0:1", "b0s1:1", "b1s0:1", "b1s1:1"]


def default_collectives() -> list[dict[str, Any]]:
    """The collectives measured: ``name``, ranks (``SERVER:GPU``), ring ``order``, port
    mode (``tccl`` or ``collide``), packets per flow, ``heldout``."""
    out = []

    def add(stem: str, ranks: list[str], order: str, ports: str, packets: Sequence[int]) -> None:
        for p in packets:
            name = f"{stem}-p{p}"
            out.append({"name": name, "ranks": ranks, "order": order, "ports": ports,
                        "packets": p, "heldout": name in HELDOUT})

    add("ring2-one-leaf", _RING2_ONE_LEAF, "tccl", "tccl", PACKETS)
    add("ring2-cross-block", _RING2_CROSS, "tccl", "tccl", PACKETS)
    add("ring4-interleaved-tccl", _RING4_INTERLEAVED, "rank", "tccl", (80,))
    # 200 packets of two flows into one 150 pps queue would overflow its 64 packets
    add("ring4-interleaved-collide", _RING4_INTERLEAVED, "rank", "collide", (20, 80))
    add("ring4-rail1-tccl", _RING4_RAIL1, "tccl", "tccl", (80,))
    return out


def ring_pairs(fabric: Any, rank_specs: Sequence[str], order: str = "tccl") -> list[tuple[str, str]]:
    """(source IP, destination IP) of the ring edges of TCCL's planner, in its edge order.

        >>> from topo.model import build_fabric
        >>> ring_pairs(build_fabric(), ["b0s0:0", "b1s0:0", "b0s1:0", "b1s1:0"], "rank")[:2]
        [('10.0.0.1', '10.1.0.1'), ('10.1.0.1', '10.0.0.2')]
    """
    planner = Planner(fabric, parse_ranks(rank_specs, fabric))
    plan = planner.plan("allreduce", len(rank_specs), "ring", order)
    hosts = {h.name: h for h in fabric.hosts}
    return [(hosts[planner.rank(a).server].nics[planner.rank(a).gpu].ip,
             hosts[planner.rank(b).server].nics[planner.rank(b).gpu].ip) for a, b, _ in plan.edges]


def colliding_ports(fabric: Any, pairs: Sequence[tuple[str, str]], model: Any,
                    member_ports: Callable[[str, int], Mapping[str, int]], seed: int = 0
                    ) -> tuple[list[int], str]:
    """Random source ports (distinct, 49152–65535) drawn from ``seed`` on until the hash
    model puts two flows on one leaf uplink; returns the ports and that uplink.
    ``RuntimeError`` when no draw of :data:`MAX_DRAWS` collides (e.g. one flow per leaf).

        >>> from topo.model import build_fabric
        >>> from controller.fabric import plan_fabric
        >>> from p4src.hashmodel import FabricHashModel
        >>> fab = build_fabric(); plans = plan_fabric(fab)
        >>> hm = FabricHashModel({n: p.hash_model() for n, p in plans.items()})
        >>> mp = lambda sw, g: dict(zip(plans[sw].groups[g].members, plans[sw].groups[g].ports))
        >>> ports, up = colliding_ports(fab, ring_pairs(fab, _RING4_INTERLEAVED, "rank"), hm, mp)
        >>> up.startswith("b")
        True
    """
    for k in range(MAX_DRAWS):
        ports = random.Random(seed + k).sample(range(49152, 65536), len(pairs))
        seen: dict[str, int] = {}
        for (src, dst), sport in zip(pairs, ports):
            up = predict_uplink(fabric, model, member_ports, src, dst, sport)
            if up is None:
                continue
            if up in seen:
                return ports, up
            seen[up] = 1
    raise RuntimeError(f"no draw of {MAX_DRAWS} seeds from {seed} puts two flows on one uplink")


def step_time_s(sender_reports: Sequence[Mapping[str, Any]],
                receiver_reports: Sequence[Mapping[str, Any]]) -> tuple[float, int]:
    """(step time, packets lost) from the NIC emulators' JSON reports: the last packet
    received (``last_s`` of every receiver QP) minus the first sent (``first_s`` of every
    sender QP), both on the machine's monotonic clock; lost = sent − received.

        >>> snd = [{"flows": [{"first_s": 10.0, "sent_pkts": 80}]}]
        >>> rcv = [{"flows": [{"last_s": 10.81, "recv_pkts": 80}]}]
        >>> [round(x, 3) for x in step_time_s(snd, rcv)]
        [0.81, 0]
    """
    sent = [f for r in sender_reports for f in r.get("flows", []) if f.get("first_s") is not None]
    recv = [f for r in receiver_reports for f in r.get("flows", []) if f.get("last_s") is not None]
    if not sent or not recv:
        raise ValueError("no per-QP timestamps in the NIC reports")
    lost = sum(int(f.get("sent_pkts", 0)) for f in sent) - sum(int(f.get("recv_pkts", 0)) for f in recv)
    return max(float(f["last_s"]) for f in recv) - min(float(f["first_s"]) for f in sent), lost


def plan_collective(fabric: Any, coll: Mapping[str, Any], model: Any,
                    member_ports: Callable[[str, int], Mapping[str, int]]) -> tuple[list[Any], dict[str, Any]]:
    """The NIC flows of one collective of :func:`default_collectives` and its measurement
    row (without ``measured_s``): ring edges, ports, ``size_bytes`` per rank."""
    pairs = ring_pairs(fabric, coll["ranks"], coll["order"])
    shared = None
    nic_ports: list[int] = []
    if coll["ports"] == "collide":
        sports, shared = colliding_ports(fabric, pairs, model, member_ports)
    else:
        chosen = plan_ports(fabric, pairs, "tccl", 0, model)   # dual-port NICs: ports planned too
        sports, nic_ports = chosen.sports, chosen.nic_ports
    flows = build_flows(fabric, pairs, sports, model, member_ports, nic_ports)
    messages = int(coll["packets"]) * MTU_BYTES // MESSAGE_BYTES
    row = {"name": coll["name"], "ranks": list(coll["ranks"]), "collective": "allreduce",
           "algorithm": "ring", "order": coll["order"],
           "ports": "random" if coll["ports"] == "collide" else "tccl",
           "size_bytes": len(coll["ranks"]) * messages * MESSAGE_BYTES, "steps": 1,
           "packets_per_flow": int(coll["packets"]), "heldout": bool(coll["heldout"]),
           "flows": [{"src": f.src_ip, "dst": f.dst_ip, "sport": f.sport, "uplink": f.predicted_uplink}
                     for f in flows]}
    if shared:
        row["shared_uplink"] = shared
    return flows, row


def _why_not() -> Optional[str]:
    if os.geteuid() != 0:
        return "needs root (the NIC emulators run inside the Mininet hosts)"
    state = TestbedState.load(STATE_PATH)
    if state is None or not any(record_matches(r) for r in state.procs):
        return ("no testbed is running (build/testbed-state.json): bring one up with `make run` "
                "or `python -m testbed up --hold` first; this command never starts one")
    return None


def _run_once(state: Any, save: Callable[[], None], flows: list[Any], messages: int,
              label: str) -> tuple[Optional[float], str]:
    opts = NicOptions(line_rate_pps=NIC_LINE_RATE_PPS, mtu=MTU_BYTES, message_bytes=MESSAGE_BYTES)
    fleet = NicFleet(state, save, Path(tempfile.mkdtemp(prefix=f"sim-measure-{label}-")))
    budget_s = 60.0
    try:
        fleet.start(flows, budget_s, opts, sender_args=lambda fl: ["--messages", str(messages)])
        fleet.wait_senders(budget_s + 15)
    finally:
        errors = fleet.stop()
    senders = [p.report for p in fleet.procs if p.role == "send" and p.report]
    receivers = [p.report for p in fleet.procs if p.role == "recv" and p.report]
    if errors or len(senders) != len({(f.src_ip, f.dst_ip) for f in flows}):
        return None, str(errors or "missing sender reports")
    t, lost = step_time_s(senders, receivers)
    if lost:
        return None, f"{lost} packets lost (queue overflow): the step did not complete"
    return t, ""


def measure(out: Path, repeats: int = 3) -> int:
    """Run the measurements (sizes :data:`PACKETS` per flow, :func:`default_collectives`)
    and write ``out``; exit status (1: no testbed or a failure)."""
    why = _why_not()
    if why:
        print(f"scenarios measure: {why}", file=sys.stderr)
        return 1
    fabric = load_topology(TOPOLOGY_PATH)
    state = TestbedState.load(STATE_PATH)
    programmer = FabricProgrammer(fabric, REPO / "build" / "fabric.p4info.txtpb", REPO / "build" / "fabric.json")
    model = programmer.hash_model()
    rows, failed = [], 0
    rates = set_uplink_rates(fabric, state, UPLINK_QUEUE_PPS, lambda m: print(m, file=sys.stderr))
    try:
        for coll in default_collectives():
            flows, row = plan_collective(fabric, coll, model, programmer.member_ports)
            messages = int(coll["packets"]) * MTU_BYTES // MESSAGE_BYTES
            times = []
            for rep in range(repeats):
                t, err = _run_once(state, lambda: state.save(STATE_PATH), flows, messages, f"{coll['name']}-{rep}")
                if t is None:
                    print(f"scenarios measure: {coll['name']} run {rep}: {err}", file=sys.stderr)
                    failed += 1
                    continue
                times.append(t)
            print(f"scenarios measure: {coll['name']}: {[round(t, 4) for t in times]} s", flush=True)
            if times:
                rows.append({**row, "measured_s": times})
    finally:
        clear_rates(state, rates)
    data = {"schema": SCHEMA, "version": 1, "source": "testbed",
            "note": "one ring step per collective, NIC emulator QPs at "
                    f"{NIC_LINE_RATE_PPS:g} pps, leaf uplink queues at {UPLINK_QUEUE_PPS:g} pps; time = last "
                    "packet received - first packet sent (per-QP counters, one monotonic clock)",
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "fabric": {"topology": "build/topology.json"},
            "link_Bps": NIC_LINE_RATE_PPS * MTU_BYTES,
            "testbed": {"nic_line_rate_pps": NIC_LINE_RATE_PPS,
                        "uplink_queue_pps": UPLINK_QUEUE_PPS if rates else None,
                        "mtu_bytes": MTU_BYTES, "message_bytes": MESSAGE_BYTES},
            "measurements": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"scenarios measure: wrote {out} ({len(rows)} collectives)")
    return 1 if failed or not rows else 0


__all__ = ["HELDOUT", "colliding_ports", "default_collectives", "measure", "plan_collective",
           "ring_pairs", "step_time_s"]
