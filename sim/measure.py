"""``python -m sim measure --out FILE.json``: time a few small collectives on the RUNNING
testbed (it never starts one) and record them for ``python -m sim calibrate``.

Preconditions: root, a testbed brought up by ``make run``/``python -m topo.testbed up
--hold`` (``build/testbed-state.json`` with live processes), ``build/topology.json`` and
the compiled ``build/fabric.p4info.txtpb`` / ``build/fabric.json``. For each collective of
:func:`default_jobs` (ring steps of 2–4 ranks on one rail, under one leaf and across
blocks) it takes the ring edges from TCCL's planner, chooses TCCL ports on the programmed
hash model (``host.traffic.choose_ports``), starts one NIC-emulator receiver per
destination and one sender per flow inside the Mininet hosts with ``host.traffic.NicFleet``
(recorded in the testbed state, stopped by PID), each sender sending ``--messages``
messages then lingering 0.5 s; the step's time is the slowest sender's ``elapsed_s``
minus that linger. Each collective runs ``repeats`` times.

Cross-rail transfers have no path on the testbed (rails are separate networks there):
only same-rail rings are measured.

Example::

    >>> [j["name"] for j in default_jobs()][:2]
    ['ring2-rail0-one-leaf', 'ring2-rail0-cross-block']
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from sim.calibrate import SCHEMA

REPO = Path(__file__).resolve().parent.parent
LINGER_S = 0.5
NIC_GOODPUT_BPS = 0.8e6          # reference: host/nic goodput per QP on the testbed


def default_jobs() -> list[dict[str, Any]]:
    """The collectives measured: ranks (``SERVER:GPU``) of ring steps on the default fabric."""
    return [
        {"name": "ring2-rail0-one-leaf", "ranks": ["b0s0:0", "b0s1:0"]},
        {"name": "ring2-rail0-cross-block", "ranks": ["b0s0:0", "b1s0:0"]},
        {"name": "ring2-rail1-cross-block", "ranks": ["b0s1:1", "b1s1:1"]},
        {"name": "ring4-rail0", "ranks": ["b0s0:0", "b0s1:0", "b1s0:0", "b1s1:0"]},
        {"name": "ring4-rail1", "ranks": ["b0s0:1", "b0s1:1", "b1s0:1", "b1s1:1"]},
    ]


def ring_step_flows(fabric: Any, rank_specs: Sequence[str], model: Any,
                    member_ports: Callable[[str, int], Mapping[str, int]], messages: int,
                    message_bytes: int) -> tuple[list[Any], int]:
    """The NIC-emulator flows of one ring step of ``rank_specs`` (``SERVER:GPU``) with
    TCCL ports on ``model``, and the per-rank buffer size whose ring step sends
    ``messages × message_bytes`` per edge.

        >>> from topo.model import build_fabric
        >>> from controller.fabric_setup import plan_fabric
        >>> from p4src.hashmodel import FabricHashModel
        >>> fab = build_fabric(); plans = plan_fabric(fab)
        >>> hm = FabricHashModel({n: p.hash_model() for n, p in plans.items()})
        >>> mp = lambda sw, g: dict(zip(plans[sw].groups[g].members, plans[sw].groups[g].ports))
        >>> flows, size = ring_step_flows(fab, ["b0s0:0", "b1s0:0"], hm, mp, 20, 4096)
        >>> [(f.src_ip, f.dst_ip) for f in flows], size
        ([('10.0.0.1', '10.1.0.1'), ('10.1.0.1', '10.0.0.1')], 163840)
    """
    from host.tccl.planner import Planner, parse_ranks  # noqa: PLC0415
    from host.traffic import build_flows, choose_ports  # noqa: PLC0415
    ranks = parse_ranks(rank_specs, fabric)
    planner = Planner(fabric, ranks)
    size_bytes = len(ranks) * messages * message_bytes
    plan = planner.plan("allreduce", size_bytes, "ring", "tccl")
    hosts = {h.name: h for h in fabric.hosts}
    pairs = [(hosts[planner.rank(a).server].nics[planner.rank(a).gpu].ip,
              hosts[planner.rank(b).server].nics[planner.rank(b).gpu].ip) for a, b, _ in plan.edges]
    sports = choose_ports(fabric, pairs, "tccl", 0, model)
    return build_flows(fabric, pairs, sports, model, member_ports), size_bytes


def _why_not() -> Optional[str]:
    if os.geteuid() != 0:
        return "needs root (the NIC emulators run inside the Mininet hosts)"
    from topo.mn import TestbedState, record_matches  # noqa: PLC0415
    from topo.testbed import STATE_PATH  # noqa: PLC0415
    state = TestbedState.load(STATE_PATH)
    if state is None or not any(record_matches(r) for r in state.procs):
        return ("no testbed is running (build/testbed-state.json): bring one up with `make run` "
                "or `python -m topo.testbed up --hold` first; this command never starts one")
    return None


def measure(out: Path, messages: int = 20, message_bytes: int = 4096, repeats: int = 3) -> int:
    """Run the measurements and write ``out``; exit status (1: no testbed or a failure)."""
    why = _why_not()
    if why:
        print(f"sim measure: {why}", file=sys.stderr)
        return 1
    from controller.fabric_setup import FabricProgrammer  # noqa: PLC0415
    from host.traffic import NicFleet, NicOptions  # noqa: PLC0415
    from topo.mn import TestbedState  # noqa: PLC0415
    from topo.testbed import STATE_PATH, TOPOLOGY_PATH, load_topology  # noqa: PLC0415

    fabric = load_topology(TOPOLOGY_PATH)
    state = TestbedState.load(STATE_PATH)
    programmer = FabricProgrammer(fabric, REPO / "build" / "fabric.p4info.txtpb", REPO / "build" / "fabric.json")
    model = programmer.hash_model()
    opts = NicOptions(message_bytes=message_bytes)
    rows = []
    failed = 0
    for job in default_jobs():
        flows, size_bytes = ring_step_flows(fabric, job["ranks"], model, programmer.member_ports,
                                            messages, message_bytes)
        times = []
        for rep in range(repeats):
            fleet = NicFleet(state, lambda: state.save(STATE_PATH),
                             Path(tempfile.mkdtemp(prefix=f"sim-measure-{job['name']}-{rep}-")))
            budget_s = 60.0
            try:
                fleet.start(flows, budget_s, opts, sender_args=lambda fl: ["--messages", str(messages)])
                fleet.wait_senders(budget_s + 15)
            finally:
                errors = fleet.stop()
            senders = [p.report for p in fleet.procs if p.role == "send" and p.report]
            if errors or len(senders) != len({(f.src_ip, f.dst_ip) for f in flows}):
                print(f"sim measure: {job['name']} run {rep}: {errors or 'missing sender reports'}", file=sys.stderr)
                failed += 1
                continue
            times.append(max(float(r["elapsed_s"]) for r in senders) - LINGER_S)
        print(f"sim measure: {job['name']}: {[round(t, 4) for t in times]} s")
        if times:
            rows.append({"name": job["name"], "ranks": job["ranks"], "collective": "allreduce",
                         "algorithm": "ring", "order": "tccl", "ports": "tccl",
                         "size_bytes": size_bytes, "steps": 1, "measured_s": times})
    data = {"schema": SCHEMA, "version": 1, "source": "testbed",
            "note": f"one ring step per collective: {messages} messages of {message_bytes} B per flow, "
                    f"NIC emulator senders (host/nic), times = slowest sender's elapsed_s - {LINGER_S} s linger",
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "fabric": {"topology": "build/topology.json"}, "link_Bps": NIC_GOODPUT_BPS / 8,
            "measurements": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"sim measure: wrote {out} ({len(rows)} collectives)")
    return 1 if failed or not rows else 0


__all__ = ["default_jobs", "measure"]
