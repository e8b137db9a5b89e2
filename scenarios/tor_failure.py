"""``make run SCENARIO=tor-failure SPEC=topo/specs/dualport.yaml``: one leaf of a rail dies
under RDMA traffic from dual-port NICs; the QPs on it move to the NICs' other port and no
flow is lost. On the two-pod spec (``SPEC=topo/specs/pod2-dualport.yaml``, one block per
pod) the receivers are pod 1's NICs of the rail (:func:`sides`): the traffic crosses the
core tier, and only the spines of the victim's pod get the failover routes (the other
pod's spines reach the NIC through the cores, whose routes are per pod).

Every NIC of block 0 runs :data:`QPS` RC QPs (RDMA WRITE, ``MESSAGES`` messages each) as
one dual-port NIC (``host.nic send --iface <port0>,<port1>``: the bonding layer3+4 hash
puts about half of them on each port) to a NIC of block 1 (a dual-port receiver). Once
the victim leaf — port 1's leaf of block 0's pair, ``b0r<rail>l1`` — has carried traffic,
it dies: every one of its interfaces goes down at once (a ToR that loses power drops the
carrier of all its links), and the controller's dual-homing updates
(:func:`controller.fabric.dualhoming.failover_updates`: every spine reaches the NICs of
the dead leaf through their other leaf) are written. The NICs notice the carrier loss
within one ``miimon`` (100 ms) and send the moved QPs out of port 0.

Measured (``runs/<time>/tor-failure.json``, and by ``make bench``):

* ``flows_lost`` — QPs that did not deliver every message (in error, or short);
* ``recover_s`` — from the leaf's death to the last sender's first frame of a moved QP
  on its surviving port (the slowest NIC's failover);
* per sender: the bond's link events, moved QPs and frames per port.

Exit status 0 only when every sender and receiver reported, at least one QP was moved
(the victim carried QPs) and no flow was lost. The leaf's interfaces are brought back up
and the updates undone at the end (``restore_updates``). GOR does not run in this scenario:
the controller's part is written directly, as GOR's handling of a ToR failure by the
dual-homing will (issue 29, item 4, not built).
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

from controller.fabric.dualhoming import failover_updates, restore_updates
from scenarios.common import ScenarioOptions
from scenarios.report import new_run_dir
from testbed.net import ProcRecord, proc_cmdline
from testbed.traffic.probe import packet_socket_open, poll_until

QPS = 4
MESSAGES = 40
RATE_PPS = 100.0
REPO = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 30.0
TRAFFIC_TIMEOUT_S = 60.0


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


def run_tor_failure(fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
                    opts: ScenarioOptions, say: Callable[[str], None] = print
                    ) -> TorFailureResult:
    """Run the scenario on a running, programmed dual-port testbed (module docstring)."""
    nics0, nics1, far = sides(fabric, opts.rail)
    if not nics0 or not nics1 or any(len(n.ports) != 2 for n in nics0 + nics1):
        say("tor-failure: needs dual-port NICs in two blocks or two pods "
            "(make run SCENARIO=tor-failure SPEC=topo/specs/dualport.yaml, or pod2-dualport.yaml)")
        return TorFailureResult(2)
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
    failed_over: list[str] = []          # switches whose failover updates were written
    try:
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
        _set_links(victim_ifaces, up=False)
        t_dead = time.monotonic()
        for name, updates in failover_updates(fabric, dead, dead_switches={victim}).items():
            failed_over.append(name)     # before the write: a part-written batch is undone too
            programmer.write_updates(name, updates)
        res.fabric_update_s = round(time.monotonic() - t_dead, 4)
        say(f"tor-failure: {victim} down ({len(victim_ifaces)} interfaces); spines reach its "
            f"NICs through the other leaf ({res.fabric_update_s * 1000:.0f} ms)")
        deadline = time.monotonic() + TRAFFIC_TIMEOUT_S + 10
        for p in senders:
            try:
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                res.reasons.append(f"a sender (pid {p.pid}) still ran after "
                                   f"{TRAFFIC_TIMEOUT_S + 10:g} s")
    except (OSError, RuntimeError, ValueError) as exc:   # a switch refused, a NIC did not start
        res.reasons.append(f"{type(exc).__name__}: {exc}")
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
            for name, updates in restore_updates(fabric, dead, dead_switches={victim}).items():
                if name not in failed_over:
                    continue
                try:
                    programmer.write_updates(name, updates)
                except Exception as exc:  # noqa: BLE001 — said; the other switches still restored
                    res.reasons.append(f"{name}: the failover routes were not undone: {exc}")
    _measure(res, procs, t_cut)
    (run_dir / "tor-failure.json").write_text(json.dumps(asdict(res), indent=1, default=str) + "\n")
    if res.reasons:
        say("tor-failure: FAILED: " + "; ".join(res.reasons))
    else:
        say(f"tor-failure: {res.moved_qps} QPs moved off {victim}, {res.flows_lost} of "
            f"{res.flows} flows lost, recovered in {res.recover_s:.3f} s "
            f"(port down seen after {max(res.detect_s, default=0) * 1000:.0f} ms); report {run_dir}")
    return res


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


__all__ = ["MESSAGES", "QPS", "TorFailureResult", "run_tor_failure", "sides"]
