"""``make run SCENARIO=tor-failure SPEC=topo/specs/dualport.yaml``: one leaf of a rail dies
under RDMA traffic from dual-port NICs; the QPs on it move to the NICs' other port and no
flow is lost. On the two-pod spec (``SPEC=topo/specs/pod2-dualport.yaml``, one block per
pod) the receivers are pod 1's NICs of the rail (:func:`sides`): the traffic crosses the
core tier, and only the spines of the victim's pod get the failover routes (the other
pod's spines reach the NIC through the cores, whose routes are per pod).

Every NIC of block 0 runs :data:`QPS` RC QPs (RDMA WRITE, ``MESSAGES`` messages each) as
one dual-port NIC (``host.nic send --iface <port0>,<port1>``: the bonding layer3+4 hash
puts about half of them on each port) to a NIC of block 1 (a dual-port receiver). GOR runs
(:class:`controller.gor.runtime.GorRuntime`, no flow registry: these senders have no
agent) with the testbed's port-status watch (:class:`testbed.portwatch.CarrierWatch`: every
fabric port's carrier read every 100 ms, each change handed to
:meth:`GorRuntime.submit_link_event <controller.gor.runtime.GorRuntime.submit_link_event>`).
Once the victim leaf — port 1's leaf of block 0's pair, ``b0r<rail>l1`` — has carried
traffic, the scenario kills it and does nothing else: every one of its interfaces goes
down at once (a ToR that loses power drops the carrier of all its links). Then, by
themselves:

* the NICs notice the carrier loss within one ``miimon`` (100 ms) and send the QPs bound
  to port 1 out of port 0 (:mod:`host.nic.bond`);
* the spines' ports to the dead leaf lose their carrier; the watch reports them and GOR
  takes each cable out of its groups (:mod:`controller.gor.faults`): every spine's group
  towards the NICs' pair keeps only the surviving leaf, so the replies to the NICs (RC
  ACKs, CNPs) are no longer hashed onto the dead leaf. GOR writes no detour for them
  (:func:`controller.fabric.detours.leaf_detours`: a dual-homed NIC reached through its
  other leaf needs none).

Measured (``runs/<time>/tor-failure.json``, and by ``make bench``):

* ``flows_lost`` — QPs that did not deliver every message (in error, or short);
* ``recover_s`` — from the leaf's death to the last sender's first frame of a moved QP
  on its surviving port (the slowest NIC's failover);
* ``fabric_update_s`` — from the leaf's death to GOR's last ``link_down`` of the leaf's
  cables (the decision log ``gor.jsonl``); ``gor_detours`` the detours it wrote (none
  expected);
* ``continue_s`` — the larger of the two: from then on traffic flows both ways (data out
  of the surviving port, replies through the surviving leaf);
* per sender: the bond's link events, moved QPs and frames per port.

Exit status 0 only when every sender and receiver reported, at least one QP was moved
(the victim carried QPs), GOR took every cable of the leaf down, and no flow was lost. The
leaf's interfaces are brought back up at the end; GOR puts the cables back into their
groups when the watch sees the carriers again.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import grpc

from controller.gor.log import read_log
from controller.gor.runtime import GorOptions, GorRuntime
from controller.gor.shared import LoopSettings
from scenarios.common import ScenarioOptions
from scenarios.report import new_run_dir
from testbed.net import ProcRecord, proc_cmdline
from testbed.portwatch import CarrierWatch, fabric_port_ifaces
from testbed.traffic.probe import packet_socket_open, poll_until

QPS = 4
MESSAGES = 40
RATE_PPS = 100.0
REPO = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 30.0
TRAFFIC_TIMEOUT_S = 60.0
GOR_PERIOD_S = 0.25
"""GOR's telemetry period in this scenario (link events do not wait for it: the reactor
applies them at once)."""
RESTORE_TIMEOUT_S = 10.0


@dataclass(slots=True)
class TorFailureResult:
    """What one run measured (written as ``tor-failure.json``)."""

    status: int
    run_dir: Optional[Path] = None
    victim: str = ""
    flows: int = 0
    flows_lost: int = -1
    moved_qps: int = 0
    recover_s: Optional[float] = None
    detect_s: list[float] = field(default_factory=list)
    fabric_update_s: Optional[float] = None
    continue_s: Optional[float] = None
    gor_links_down: list[str] = field(default_factory=list)
    gor_detours: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    senders: list[dict[str, Any]] = field(default_factory=list)


def _leaf_rx(iface: str) -> int:
    try:
        return int(Path(f"/sys/class/net/{iface}/statistics/rx_packets").read_text())
    except OSError:
        return 0


def _set_links(names: list[str], up: bool) -> None:
    for name in names:
        subprocess.run(["ip", "link", "set", name, "up" if up else "down"], check=False,
                       capture_output=True)


def sides(fabric: Any, rail: int) -> tuple[list[Any], list[Any], str]:
    """The senders' NICs (block 0 of pod 0, rail ``rail``), the receivers' (block 1 of
    pod 0; on a fabric with one block per pod, block 0 of pod 1: the traffic then crosses
    the core tier) and the receivers' side in words.

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> a, b, far = sides(build_fabric(load_spec("topo/specs/pod2-dualport.yaml")), 0)
    >>> [n.ip for n in a], [n.ip for n in b], far
    (['10.0.0.1', '10.0.0.2'], ['10.0.2.1', '10.0.2.2'], 'pod 1')
    """
    def nics(pod: int, block: int) -> list[Any]:
        return [h.nics[rail] for h in fabric.hosts if getattr(h, "pod", 0) == pod and h.block == block]
    near, other = nics(0, 0), nics(0, 1)
    if other:
        return near, other, "block 1"
    return near, nics(1, 0), "pod 1"


def unfit(fabric: Any, rail: int = 0) -> Optional[str]:
    """Why the scenario cannot run on ``fabric`` (None: it can): it needs dual-port NICs in
    two blocks or two pods. ``make run`` asks before it starts the testbed.

    >>> from topo.model import FabricSpec, build_fabric
    >>> from topo.spec import load_spec
    >>> unfit(build_fabric(load_spec("topo/specs/dualport.yaml"))) is None
    True
    >>> unfit(build_fabric(FabricSpec())).startswith("tor-failure: needs dual-port NICs")
    True
    """
    nics0, nics1, _ = sides(fabric, rail)
    if not nics0 or not nics1 or any(len(n.ports) != 2 for n in nics0 + nics1):
        return ("tor-failure: needs dual-port NICs in two blocks or two pods (make run "
                "SCENARIO=tor-failure SPEC=topo/specs/dualport.yaml, or pod2-dualport.yaml)")
    return None


def run_tor_failure(fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
                    opts: ScenarioOptions, say: Callable[[str], None] = print
                    ) -> TorFailureResult:
    """Run the scenario on a running, programmed dual-port testbed (module docstring)."""
    why = unfit(fabric, opts.rail)
    if why is not None:
        say(why)
        return TorFailureResult(2)
    nics0, nics1, far = sides(fabric, opts.rail)
    run_dir = new_run_dir(opts.runs_root)
    victim = nics0[0].ports[1].leaf
    sw = fabric.switch(victim)
    dead = {(victim, p) for p, info in sw.ports.items() if info.kind == "host"}
    victim_ifaces = [f"{victim}-eth{p}" for p in sorted(sw.ports)]
    res = TorFailureResult(1, run_dir, victim)
    shells = {r.name: r.pid for r in state.procs if r.kind == "host-shell"}
    host_of = {n.ip: h.name for h in fabric.hosts for n in h.nics}
    procs: list[tuple[str, subprocess.Popen, Path]] = []
    records: list[ProcRecord] = []

    def spawn(role: str, ip: str, cmd: list[str], report: Path) -> subprocess.Popen:
        with open(report.with_suffix(".log"), "wb") as log:    # the NIC's stderr, kept
            proc = subprocess.Popen(["mnexec", "-a", str(shells[host_of[ip]]), sys.executable,
                                     "-m", "host.nic", role, *cmd, "--json", str(report)],
                                    cwd=REPO, stdout=subprocess.DEVNULL, stderr=log,
                                    stdin=subprocess.DEVNULL)
        rec = ProcRecord(f"nic {role} {host_of[ip]} tor-failure", proc.pid,
                         proc_cmdline(proc.pid) or " ".join(cmd), "traffic")
        records.append(rec)
        state.procs.append(rec)
        procs.append((role, proc, report))
        return proc

    say(f"tor-failure: {len(nics0)} dual-port NICs x {QPS} QPs x {MESSAGES} messages at "
        f"{RATE_PPS:g} pps to {far}; leaf {victim} dies once it carries traffic")
    t_cut: Optional[float] = None
    cables = {(victim, p) for p, info in sw.ports.items() if info.kind != "host"}
    gor = GorRuntime(fabric, programmer, GorOptions(LoopSettings(period_s=GOR_PERIOD_S),
                                                    decision_log=run_dir / "gor.jsonl",
                                                    recovery=False), say=say)
    watch: Optional[CarrierWatch] = None

    def cables_up(up: bool) -> bool:
        loop = gor.loop
        return loop is not None and all(loop.links.is_up(c) == up for c in cables)

    try:
        gor.start()
        watch = CarrierWatch(fabric_port_ifaces(fabric), gor.submit_link_event).start()
        receivers = [spawn("recv", n.ip, ["--iface", ",".join(p.intf for p in n.ports),
                                          "--ip", n.ip, "--duration-s", str(TRAFFIC_TIMEOUT_S)],
                           run_dir / f"recv-{n.ip}.json") for n in nics1]
        save_state()
        if not poll_until(lambda: all(packet_socket_open(p.pid) for p in receivers),
                          READY_TIMEOUT_S):
            res.reasons.append("a receiver's raw sockets never opened")
            return res
        senders = []
        for i, (src, dst) in enumerate(zip(nics0, nics1)):
            macs = ",".join(fabric.switch(p.leaf).router_mac for p in src.ports)
            sports = ",".join(str(49152 + QPS * i + q) for q in range(QPS))
            senders.append(spawn("send", src.ip, [
                "--iface", ",".join(p.intf for p in src.ports), "--dst-mac", macs,
                "--src-ip", src.ip, "--dst-ip", dst.ip, "--sport", sports,
                "--qpn", str(300 + 16 * i), "--messages", str(MESSAGES),
                "--message-bytes", "4096", "--line-rate-pps", str(RATE_PPS),
                "--duration-s", str(TRAFFIC_TIMEOUT_S)], run_dir / f"send-{src.ip}.json"))
        save_state()
        res.flows = QPS * len(senders)
        hosts = [f"{victim}-eth{port}" for _, port in sorted(dead)]
        start = {i: _leaf_rx(i) for i in hosts}
        if not poll_until(lambda: sum(_leaf_rx(i) - start[i] for i in hosts) >= 40, 20.0):
            res.reasons.append(f"{victim} never carried the senders' frames")
            return res
        # the leaf's death is timed from before its first interface goes down: a NIC's
        # link monitor may see the carrier drop before `ip link` returns here
        t_cut = time.monotonic()
        _set_links(victim_ifaces, up=False)      # the only thing the scenario does
        if gor.wait_for(lambda: cables_up(False), timeout_s=READY_TIMEOUT_S):
            say(f"tor-failure: {victim} down ({len(victim_ifaces)} interfaces); GOR took its "
                f"{len(cables)} cables out of the groups {time.monotonic() - t_cut:.3f} s later")
        deadline = time.monotonic() + TRAFFIC_TIMEOUT_S + 10
        for p in senders:
            try:
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                res.reasons.append(f"a sender (pid {p.pid}) still ran after "
                                   f"{TRAFFIC_TIMEOUT_S + 10:g} s")
    except (OSError, RuntimeError, ValueError, grpc.RpcError) as exc:
        res.reasons.append(f"{type(exc).__name__}: {exc}")   # a switch refused, a NIC did not start
    finally:
        for role in ("send", "recv"):
            for r, p, _ in procs:
                if r == role and p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for r, p, _ in procs:
                if r == role:
                    try:
                        p.communicate(timeout=15)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.communicate(timeout=5)
        for rec in records:
            if rec in state.procs:
                state.procs.remove(rec)
        save_state()
        if t_cut is not None:
            _set_links(victim_ifaces, up=True)
            if watch is not None and not gor.wait_for(lambda: cables_up(True),
                                                      timeout_s=RESTORE_TIMEOUT_S):
                res.reasons.append(f"GOR did not put {victim}'s cables back within "
                                   f"{RESTORE_TIMEOUT_S:g} s of their carrier")
        if watch is not None:
            watch.stop()
        gor.stop()
    _measure(res, procs, t_cut)
    _measure_gor(res, run_dir / "gor.jsonl", victim, len(cables), t_cut)
    (run_dir / "tor-failure.json").write_text(json.dumps(asdict(res), indent=1, default=str) + "\n")
    if not res.reasons and None in (res.recover_s, res.fabric_update_s, res.continue_s):
        res.reasons.append("the cut's time, the recovery or GOR's update was not measured")
        res.status = 1
    if res.reasons:
        say("tor-failure: FAILED: " + "; ".join(res.reasons))
    else:
        say(f"tor-failure: {res.moved_qps} QPs moved off {victim}, {res.flows_lost} of "
            f"{res.flows} flows lost, recovered in {res.recover_s:.3f} s "
            f"(port down seen after {max(res.detect_s, default=0) * 1000:.0f} ms); GOR took "
            f"{len(res.gor_links_down)} cables down {res.fabric_update_s:.3f} s after, "
            f"{len(res.gor_detours)} detours; traffic continues after {res.continue_s:.3f} s; "
            f"report {run_dir}")
    return res


def _measure_gor(res: TorFailureResult, log: Path, victim: str, cables: int,
                 t_cut: Optional[float]) -> None:
    """GOR's part from its decision log: the ``link_down`` records of ``victim``'s cables
    after ``t_cut`` (when the last one was written, the detours they wrote) and
    ``continue_s``; a reason when GOR took fewer than ``cables`` down."""
    if t_cut is None:
        return
    downs = [r for r in read_log(log) if r.get("event") == "link_down"
             and float(r.get("mono_s", 0.0)) >= t_cut
             and victim in {end.partition(":")[0] for end in str(r.get("link", "")).split("->")}]
    res.gor_links_down = [str(r["link"]) for r in downs]
    res.gor_detours = [d for r in downs for d in r.get("detours") or []]
    taken = {frozenset(str(r["link"]).split("->")) for r in downs}    # a cable, either end's record
    if len(taken) < cables:
        res.reasons.append(f"GOR took {len(taken)} of {victim}'s {cables} cables down")
        res.status = 1
        return
    res.fabric_update_s = round(max(float(r["mono_s"]) for r in downs) - t_cut, 4)
    if res.recover_s is not None:
        res.continue_s = round(max(res.recover_s, res.fabric_update_s), 4)


def _measure(res: TorFailureResult, procs: list[tuple[str, subprocess.Popen, Path]],
             t_cut: Optional[float]) -> None:
    """Fill ``res`` from the NIC reports; its status 0 only when everything was measured."""
    reports: dict[str, list[dict[str, Any]]] = {"send": [], "recv": []}
    for role, _, path in procs:
        try:
            reports[role].append(json.loads(path.read_text()))
        except (OSError, ValueError):
            res.reasons.append(f"{path.name}: no report (the NIC's stderr: "
                               f"{path.with_suffix('.log')})")
    if t_cut is None or res.reasons:
        return
    lost, recover = 0, []
    for rep in reports["send"]:
        bond = rep.get("bond", {})
        lost += sum(1 for f in rep["flows"]
                    if f["qp_state"] != "RTS" or f["acked_messages"] != MESSAGES)
        res.moved_qps += int(bond.get("moves", 0))
        downs = [e["t"] - t_cut for e in bond.get("events", []) if e["state"] == "down"]
        res.detect_s += [round(d, 4) for d in downs]
        if bond.get("first_move_at") is not None:
            recover.append(bond["first_move_at"] - t_cut)
        res.senders.append({"iface": rep.get("iface"), "moves": bond.get("moves"),
                            "tx_frames": bond.get("tx_frames"), "events": bond.get("events")})
    received = sum(f["messages_received"] for rep in reports["recv"] for f in rep["flows"])
    res.flows_lost = lost
    if received < res.flows * MESSAGES - lost * MESSAGES:
        res.reasons.append(f"receivers got {received} messages of {res.flows * MESSAGES}")
    if not res.moved_qps or not recover:
        res.reasons.append(f"no QP was moved off the dead leaf (moves {res.moved_qps})")
        return
    res.recover_s = round(max(recover), 4)
    if lost:
        res.reasons.append(f"{lost} of {res.flows} flows lost")
    res.status = 0 if not res.reasons else 1


__all__ = ["GOR_PERIOD_S", "MESSAGES", "QPS", "TorFailureResult", "run_tor_failure", "sides", "unfit"]
