"""Flows of the RoCEv2 NIC emulator on the live testbed: elephants or a collective's flows,
source ports random (seeded) or TCCL-planned, per-flow NIC reports and per-uplink counters.

One run (:func:`run_traffic`) on a running, programmed testbed:

1. the flows (:class:`NicFlow`): ``count`` elephants from one block's servers to the next
   block's on one rail (:func:`elephant_pairs`), or the inter-server transfers of a
   collective planned by :mod:`host.tccl.planner` (:func:`collective_pairs`);
2. their UDP source ports (:func:`choose_ports`): ``random`` (distinct, from a seed) or
   ``tccl`` (:class:`host.tccl.ports.PortPlanner` on the programmed hash model,
   ``FabricProgrammer.hash_model()``), and the uplink the model predicts for each;
3. one ``python -m host.nic recv`` per destination NIC and one ``python -m host.nic send``
   per (source NIC, destination NIC) pair (one QP per flow), started in the hosts'
   namespaces with ``mnexec -a <host shell pid>`` and recorded by PID in the testbed
   state (kind ``"traffic"``) so that ``make stop`` also ends them;
4. the switches' ``FabricEgress.telemetry.tx`` counters of every leaf uplink read before
   and after (P4Runtime reads only, nothing is written);
5. SIGTERM to every NIC process, their JSON reports merged per flow (sender: sent, CNPs
   received, pauses, final DCQCN rate; receiver: goodput, CE marks, CNPs sent).

Command line (attach to ``python -m topo.testbed up --hold``, or ``--up`` to bring a
default fabric up for the run and tear it down after)::

    python -m host.traffic --elephants 8 --rail 0 --ports tccl --duration-s 8
    python -m host.traffic --up --elephants 8 --ports random --seed 7 --json out.json
    python -m host.traffic --collective allreduce --ports tccl

>>> from topo.model import build_fabric
>>> fab = build_fabric()
>>> elephant_pairs(fab, rail=0, count=3)
[('10.0.0.1', '10.1.0.1'), ('10.0.0.2', '10.1.0.1'), ('10.0.0.1', '10.1.0.2')]
>>> choose_ports(fab, elephant_pairs(fab, 0, 3), "random", seed=7) == \\
...     choose_ports(fab, elephant_pairs(fab, 0, 3), "random", seed=7)
True
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from p4src.hashmodel import FabricHashModel, predict_member

REPO = Path(__file__).resolve().parents[1]
ROCE_DPORT = 4791
LEAF_UPLINK_GROUP = 1
SPORT_RANGE = (49152, 65535)
TX_COUNTER = "FabricEgress.telemetry.tx"
PORT_MODES = ("random", "tccl")
FIRST_QPN = 0x100
QPNS_PER_PAIR = 64


# ----------------------------------------------------------------------------- flows
@dataclass(frozen=True, slots=True)
class NicFlow:
    """One RDMA WRITE flow between two NICs of the fabric, its port, QPN and predicted uplink.

    >>> NicFlow("f0", "b0s0", "10.0.0.1", "b0s0-eth0", "b1s0", "10.1.0.1", "b1s0-eth0",
    ...         "b0r0l0", "02:00:00:00:01:00", 49152, 256).label
    'b0s0:49152->b1s0'
    """

    name: str
    src_host: str
    src_ip: str
    src_intf: str
    dst_host: str
    dst_ip: str
    dst_intf: str
    leaf: str
    gateway_mac: str
    sport: int
    qpn: int
    predicted_uplink: Optional[str] = None

    @property
    def label(self) -> str:
        """Short name for narratives: ``src_host:sport->dst_host``."""
        return f"{self.src_host}:{self.sport}->{self.dst_host}"


def _nics_by_ip(fabric: Any) -> dict[str, tuple[Any, Any]]:
    return {n.ip: (h, n) for h in fabric.hosts for n in h.nics}


def elephant_pairs(fabric: Any, rail: int = 0, count: int = 8,
                   src_block: Optional[int] = None, dst_block: Optional[int] = None
                   ) -> list[tuple[str, str]]:
    """``count`` (src IP, dst IP) pairs from ``src_block``'s servers (default: the first
    block) to ``dst_block``'s (default: the next) on ``rail``, round robin over sources
    then destinations."""
    blocks = sorted({h.block for h in fabric.hosts})
    if len(blocks) < 2:
        raise ValueError("elephants between blocks need at least two blocks")
    sb = blocks[0] if src_block is None else src_block
    db = blocks[(blocks.index(sb) + 1) % len(blocks)] if dst_block is None else dst_block
    srcs = [n.ip for h in fabric.hosts if h.block == sb for n in h.nics if n.rail == rail]
    dsts = [n.ip for h in fabric.hosts if h.block == db for n in h.nics if n.rail == rail]
    if not srcs or not dsts:
        raise ValueError(f"no NIC on rail {rail} in block {sb} or {db}")
    return [(srcs[i % len(srcs)], dsts[(i // len(srcs)) % len(dsts)]) for i in range(count)]


def collective_pairs(fabric: Any, collective: str = "allreduce", order: str = "tccl",
                     algorithm: str = "ring") -> list[tuple[str, str]]:
    """The distinct (src IP, dst IP) NIC pairs of a collective planned by
    :class:`host.tccl.planner.Planner` over every GPU of ``fabric``: transfers between
    servers on the same rail (NVLink transfers need no network flow; rails are separate
    networks, so a cross-rail transfer has no path on the testbed and is left out).

    >>> from topo.model import build_fabric
    >>> len(collective_pairs(build_fabric())) > 0
    True
    """
    from host.tccl.planner import Planner  # noqa: PLC0415
    planner = Planner(fabric)
    plan = planner.plan(collective, 1 << 20, algorithm=algorithm, order=order)
    hosts = {h.name: h for h in fabric.hosts}
    out: list[tuple[str, str]] = []
    for a, b, _ in plan.edges:
        ra, rb = planner.rank(a), planner.rank(b)
        if ra.server == rb.server or ra.rail != rb.rail:
            continue
        pair = (hosts[ra.server].nics[ra.gpu].ip, hosts[rb.server].nics[rb.gpu].ip)
        if pair not in out:
            out.append(pair)
    return out


def choose_ports(fabric: Any, pairs: Sequence[tuple[str, str]], mode: str,
                 seed: int = 0, model: Optional[FabricHashModel] = None) -> list[int]:
    """One UDP source port per pair: ``random`` (distinct, 49152–65535, from ``seed``) or
    ``tccl`` (:class:`host.tccl.ports.PortPlanner` on ``model``; pairs behind one leaf,
    which cross no ECMP hop, keep a seeded random port)."""
    rng = random.Random(seed)
    ports = rng.sample(range(SPORT_RANGE[0], SPORT_RANGE[1] + 1), len(pairs))
    if mode == "random":
        return ports
    if mode != "tccl":
        raise ValueError(f"unknown port mode {mode!r} (known: {', '.join(PORT_MODES)})")
    if model is None:
        raise ValueError("tccl ports need the programmed hash model")
    from host.tccl.ports import PortPlanner, flows_from_fabric  # noqa: PLC0415
    nics = _nics_by_ip(fabric)
    routed = [i for i, (s, d) in enumerate(pairs) if nics[s][1].leaf != nics[d][1].leaf]
    plan = PortPlanner(model).plan(flows_from_fabric(fabric, [pairs[i] for i in routed]))
    for i, fp in zip(routed, plan.flows):
        ports[i] = fp.sport
    return ports


def predict_uplink(fabric: Any, model: FabricHashModel,
                   member_ports: Callable[[str, int], Mapping[str, int]],
                   src_ip: str, dst_ip: str, sport: int) -> Optional[str]:
    """The leaf uplink (``"b0r0l0->s1"``) the hash model predicts for a flow; None when
    source and destination share a leaf."""
    nics = _nics_by_ip(fabric)
    snic, dnic = nics[src_ip][1], nics[dst_ip][1]
    if snic.leaf == dnic.leaf:
        return None
    member = predict_member(model.switch(snic.leaf), LEAF_UPLINK_GROUP, src_ip, dst_ip, 17,
                            sport, ROCE_DPORT)
    port = member_ports(snic.leaf, LEAF_UPLINK_GROUP)[member]
    leaf = next(s for s in fabric.switches if s.name == snic.leaf)
    return f"{snic.leaf}->{leaf.ports[port].peer_node}"


def build_flows(fabric: Any, pairs: Sequence[tuple[str, str]], sports: Sequence[int],
                model: Optional[FabricHashModel] = None,
                member_ports: Optional[Callable[[str, int], Mapping[str, int]]] = None
                ) -> list[NicFlow]:
    """:class:`NicFlow` records with the predicted uplink when a model is given. QPNs are
    unique: :data:`FIRST_QPN` + 64 × (index of the NIC pair) + (index within the pair), so
    the flows of one sender process have consecutive QPNs.

    >>> from topo.model import build_fabric
    >>> f = build_flows(build_fabric(), [("10.0.0.1", "10.1.0.1")], [50000])[0]
    >>> (f.src_intf, f.dst_intf, f.leaf, f.qpn)
    ('b0s0-eth0', 'b1s0-eth0', 'b0r0l0', 256)
    """
    nics = _nics_by_ip(fabric)
    routers = {s.name: s.router_mac for s in fabric.switches}
    out = []
    groups: dict[tuple[str, str], int] = {}
    for i, ((src, dst), sport) in enumerate(zip(pairs, sports)):
        (sh, sn), (dh, dn) = nics[src], nics[dst]
        g = groups.setdefault((src, dst), len(groups))
        qpn = FIRST_QPN + QPNS_PER_PAIR * g + sum(1 for f in out if (f.src_ip, f.dst_ip) == (src, dst))
        up = (predict_uplink(fabric, model, member_ports, src, dst, sport)
              if model is not None and member_ports is not None else None)
        out.append(NicFlow(f"f{i}", sh.name, src, sn.intf, dh.name, dst, dn.intf, sn.leaf,
                           routers[sn.leaf], sport, qpn, up))
    return out


# ----------------------------------------------------------------------- NIC processes
@dataclass(slots=True)
class NicOptions:
    """How the NIC emulators run: per-QP line rate (DCQCN's maximum, pps), the link rate
    PAUSE quanta are timed against, MTU, DCQCN on/off, PFC priority."""

    line_rate_pps: float = 100.0
    line_rate_mbps: float = 100.0
    mtu: int = 1024
    message_bytes: int = 16384
    dcqcn: bool = True
    priority: int = 3
    cnp_interval_ms: float = 5.0


@dataclass(slots=True)
class NicProcess:
    """One running ``host.nic`` process, its report file and the flows it carries."""

    role: str
    host: str
    iface: str
    proc: "subprocess.Popen[bytes]"
    report_path: Path
    flows: list[NicFlow] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)


def sender_command(flows: Sequence[NicFlow], duration_s: float, report: Path,
                   opts: NicOptions) -> list[str]:
    """``python -m host.nic send`` for flows sharing source and destination NIC (their
    QPNs must be consecutive: one QP per source port).

    >>> f = NicFlow("f0", "a", "10.0.0.1", "a-eth0", "b", "10.1.0.1", "b-eth0", "l", "02:00:00:00:01:00", 50000, 256)
    >>> sender_command([f], 5.0, Path("r.json"), NicOptions())[3:7]
    ['send', '--iface', 'a-eth0', '--dst-mac']
    """
    qpns = [f.qpn for f in flows]
    if qpns != list(range(qpns[0], qpns[0] + len(qpns))):
        raise ValueError(f"QPNs of one sender must be consecutive, got {qpns}")
    f0 = flows[0]
    cmd = [sys.executable, "-m", "host.nic", "send", "--iface", f0.src_intf,
           "--dst-mac", f0.gateway_mac, "--src-ip", f0.src_ip, "--dst-ip", f0.dst_ip,
           "--sport", ",".join(str(f.sport) for f in flows), "--qpn", str(f0.qpn),
           "--line-rate-pps", f"{opts.line_rate_pps:g}",
           "--line-rate-mbps", f"{opts.line_rate_mbps:g}", "--mtu", str(opts.mtu),
           "--message-bytes", str(opts.message_bytes), "--priority", str(opts.priority),
           "--cnp-interval-ms", f"{opts.cnp_interval_ms:g}",
           "--duration-s", f"{duration_s:g}", "--json", str(report)]
    return cmd + ([] if opts.dcqcn else ["--no-dcqcn"])


def receiver_command(iface: str, ips: Sequence[str], duration_s: float, report: Path,
                     opts: NicOptions) -> list[str]:
    """``python -m host.nic recv`` answering the flows to ``ips`` on ``iface``."""
    cmd = [sys.executable, "-m", "host.nic", "recv", "--iface", iface,
           "--line-rate-mbps", f"{opts.line_rate_mbps:g}",
           "--cnp-interval-ms", f"{opts.cnp_interval_ms:g}",
           "--duration-s", f"{duration_s:g}", "--json", str(report)]
    for ip in ips:
        cmd += ["--ip", ip]
    return cmd


CLONE_NEWNET = 0x40000000


def bind_roce_sink(netns_pid: int, ip: str) -> socket.socket:
    """A UDP socket on ``(ip, 4791)`` inside the network namespace of ``netns_pid`` (a
    host shell), never read. The kernel of an emulated host sees every RoCEv2 frame the
    raw-socket NIC sees; without a socket on 4791 it answers ACKs and data with ICMP port
    unreachable, noise on the uplink counters. A real RNIC consumes RoCEv2 before the
    kernel; this socket gets the same effect (a full buffer drops silently). The socket is
    created by a short-lived thread that enters the namespace (``setns``), so this
    process stays where it is.
    """
    out: dict[str, Any] = {}

    def enter_and_bind() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/proc/{netns_pid}/ns/net", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns into the netns of {netns_pid}")
            finally:
                os.close(fd)
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.bind((ip, ROCE_DPORT))
            out["sock"] = sock
        except OSError as exc:
            out["error"] = exc

    t = threading.Thread(target=enter_and_bind, name=f"roce-sink-{ip}")
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["sock"]  # type: ignore[no-any-return]


class NicFleet:
    """The NIC processes of one run: started in the hosts' namespaces, recorded in the
    testbed state (kind ``"traffic"``), stopped by PID, reports collected.

    >>> fleet = NicFleet(state, save_state, Path("/tmp/run"))        # doctest: +SKIP
    >>> fleet.start(flows, duration_s=10, opts=NicOptions()); fleet.stop()  # doctest: +SKIP
    """

    def __init__(self, state: Any, save_state: Callable[[], None], report_dir: Path) -> None:
        self.state, self.save_state, self.report_dir = state, save_state, report_dir
        self.procs: list[NicProcess] = []
        self.sinks: list[socket.socket] = []
        self._records: list[Any] = []
        self.shells = {r.name: r.pid for r in state.procs if r.kind == "host-shell"}

    def _spawn(self, role: str, host: str, iface: str, cmd: list[str], report: Path,
               flows: list[NicFlow]) -> NicProcess:
        from topo.mn import ProcRecord, proc_cmdline  # noqa: PLC0415
        proc = subprocess.Popen(["mnexec", "-a", str(self.shells[host]), *cmd], cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        np_ = NicProcess(role, host, iface, proc, report, flows)
        self.procs.append(np_)
        rec = ProcRecord(f"nic {role} {host} {iface}", proc.pid,
                         proc_cmdline(proc.pid) or " ".join(cmd), "traffic")
        self._records.append(rec)
        self.state.procs.append(rec)
        return np_

    def start(self, flows: Sequence[NicFlow], duration_s: float, opts: NicOptions,
              settle_s: float = 0.5,
              sender_args: Optional[Callable[[Sequence[NicFlow]], list[str]]] = None) -> None:
        """Receivers first (they run until stopped), then one sender per NIC pair;
        ``sender_args(flows)`` adds options to a sender's command line (its agent's)."""
        self.report_dir.mkdir(parents=True, exist_ok=True)
        by_dst: dict[tuple[str, str], list[NicFlow]] = {}
        by_pair: dict[tuple[str, str], list[NicFlow]] = {}
        for f in flows:
            by_dst.setdefault((f.dst_host, f.dst_intf), []).append(f)
            by_pair.setdefault((f.src_ip, f.dst_ip), []).append(f)
        for host, ip in sorted({(f.src_host, f.src_ip) for f in flows}
                               | {(f.dst_host, f.dst_ip) for f in flows}):
            try:
                self.sinks.append(bind_roce_sink(self.shells[host], ip))
            except OSError as exc:  # EADDRINUSE: someone else already owns 4791 there
                print(f"traffic: no RoCE sink on {host} {ip}: {exc}", file=sys.stderr)
        try:
            for (host, iface), fl in by_dst.items():
                path = self.report_dir / f"recv-{iface}.json"
                ips = sorted({f.dst_ip for f in fl})
                self._spawn("recv", host, iface,
                            receiver_command(iface, ips, duration_s + 30, path, opts), path, fl)
            self.save_state()
            time.sleep(settle_s)
            for (src, dst), fl in by_pair.items():
                fl = sorted(fl, key=lambda f: f.qpn)
                path = self.report_dir / f"send-{src}-{dst}.json"
                extra = sender_args(fl) if sender_args is not None else []
                self._spawn("send", fl[0].src_host, fl[0].src_intf,
                            sender_command(fl, duration_s, path, opts) + extra, path, fl)
        finally:
            self.save_state()

    def wait_senders(self, timeout_s: float) -> None:
        """Wait until every sender has exited by itself (its duration), at most ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        for p in self.procs:
            if p.role == "send":
                try:
                    p.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass

    def stop(self, timeout_s: float = 10.0) -> list[str]:
        """SIGTERM every process still running (senders first), wait, read the reports;
        returns the errors (a process without a report, with its stderr tail)."""
        errors: list[str] = []
        for role in ("send", "recv"):
            for p in self.procs:
                if p.role == role and p.proc.poll() is None:
                    p.proc.send_signal(signal.SIGTERM)
            for p in self.procs:
                if p.role != role:
                    continue
                try:
                    _, err = p.proc.communicate(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    p.proc.kill()
                    _, err = p.proc.communicate(timeout=timeout_s)
                try:
                    p.report = json.loads(p.report_path.read_text())
                except (OSError, ValueError):
                    tail = (err or b"").decode(errors="replace").strip().splitlines()[-3:]
                    errors.append(f"{p.role} {p.host} {p.iface}: no report "
                                  f"(exit {p.proc.returncode}): {' | '.join(tail)}")
        for sock in self.sinks:
            sock.close()
        self.sinks.clear()
        for rec in self._records:
            if rec in self.state.procs:
                self.state.procs.remove(rec)
        self._records.clear()
        self.save_state()
        return errors


# -------------------------------------------------------------------------- counters
def leaf_uplinks(fabric: Any, leaves: Optional[Sequence[str]] = None) -> dict[str, tuple[str, int]]:
    """Uplink name (``"b0r0l0->s0"``) → (leaf, port), for ``leaves`` (default: all).

    >>> from topo.model import build_fabric
    >>> sorted(leaf_uplinks(build_fabric(), ["b0r0l0"]))
    ['b0r0l0->s0', 'b0r0l0->s1']
    """
    return {f"{sw.name}->{info.peer_node}": (sw.name, p)
            for sw in fabric.switches if sw.role == "leaf"
            and (leaves is None or sw.name in leaves)
            for p, info in sorted(sw.ports.items()) if info.kind == "uplink"}


def read_uplink_tx(connections: Mapping[str, Any],
                   uplinks: Mapping[str, tuple[str, int]]) -> dict[str, int]:
    """Packets each uplink has sent so far (``FabricEgress.telemetry.tx``, one wildcard
    read per leaf over its P4Runtime connection; nothing is written)."""
    out: dict[str, int] = {}
    cache: dict[str, Any] = {}
    for name, (leaf, port) in uplinks.items():
        if leaf not in cache:
            cache[leaf] = connections[leaf].read_counter(TX_COUNTER)
        cell = cache[leaf].get(port)
        out[name] = int(cell.packets) if cell else 0
    return out


def max_over_mean(values: Mapping[str, float]) -> float:
    """Busiest ÷ mean (1.0 = perfectly balanced; 0.0 when nothing was sent).

    >>> max_over_mean({"a": 300, "b": 100})
    1.5
    """
    vals = list(values.values())
    mean = sum(vals) / len(vals) if vals else 0.0
    return max(vals) / mean if mean else 0.0


# ------------------------------------------------------------------------------- run
@dataclass(slots=True)
class FlowResult:
    """What the NIC reports say about one flow (sender and receiver sides merged)."""

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
            paused_s=float(s.get("paused_s", 0.0)), lost_pkts=int(r.get("lost_pkts", 0))))
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
    sports = choose_ports(fabric, pairs, opts.port_mode, opts.seed, model)
    return build_flows(fabric, pairs, sports, model, programmer.member_ports)


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
        from topo.scenario import set_uplink_rates  # noqa: PLC0415
        rates = set_uplink_rates(fabric, state, opts.queue_rate_pps, say)
    report_dir = opts.report_dir or Path(tempfile.mkdtemp(prefix="host-traffic-"))
    fleet = NicFleet(state, save_state, report_dir)
    try:
        before = read_uplink_tx(conns, uplinks)
        fleet.start(flows, opts.duration_s, opts.nic)
        fleet.wait_senders(opts.duration_s + 15)
        time.sleep(0.5)  # the last frames reach the receivers and the counters
        after = read_uplink_tx(conns, uplinks)
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
    from p4sim.switchd.control import ControlClient  # noqa: PLC0415
    try:
        with ControlClient(state.switches[leaf]["control_addr"]) as c:
            c.set_queue_rate(rate_pps, port=port)
    except Exception:  # noqa: BLE001 — best effort on the way out
        pass


# ----------------------------------------------------------------------------- testbed
@dataclass(slots=True)
class LiveTestbed:
    """A fabric this process brought up (:func:`testbed_up`): fabric, programmer, net."""

    fabric: Any
    programmer: Any
    fnet: Any

    @property
    def state(self) -> Any:
        """The testbed state (PIDs, namespaces) recorded in the state file."""
        return self.fnet.state

    def save_state(self) -> None:
        """Write the state file."""
        self.fnet.save_state()


def testbed_unavailable() -> Optional[str]:
    """None when this process may start a Mininet testbed here, else why not (one line)."""
    if os.geteuid() != 0:
        return "the testbed needs root (namespaces, veths)"
    try:
        from bench.testbed_bench import testbed_unavailable as why  # noqa: PLC0415
    except ImportError as exc:
        return f"bench.testbed_bench not importable: {exc}"
    return why()


@contextmanager
def testbed_up(spec: Any = None, log_dir: Optional[Path] = None,
               state_path: Optional[Path] = None, pfc: Any = "default") -> Iterator[LiveTestbed]:
    """Bring a p4sim fabric up (default ``FabricSpec()``), program it, yield it, tear down
    exactly what it made. ``pfc`` is a ``controller.fabric_setup.PfcConfig`` (``"default"``:
    the programmer's default; ``None``: no PFC). Raises ``topo.mn.TestbedError``.

    >>> with testbed_up() as tb:                       # doctest: +SKIP
    ...     run_traffic(tb.fabric, tb.programmer, tb.state, tb.save_state, TrafficOptions())
    """
    from controller.fabric_setup import FabricProgrammer  # noqa: PLC0415
    from topo import FabricSpec, build_fabric  # noqa: PLC0415
    from topo.mn import FabricNet, NetOptions, TestbedError  # noqa: PLC0415
    from topo.testbed import STATE_PATH, compile_fabric  # noqa: PLC0415

    fabric = build_fabric(spec if spec is not None else FabricSpec())
    p4info, config = compile_fabric("p4sim")
    opts = NetOptions(target="p4sim", log_dir=log_dir or REPO / "build" / "host-traffic-logs",
                      pcap_dir=None, state_path=state_path or STATE_PATH)
    fnet = FabricNet(fabric, opts)
    programmer = None
    try:
        fnet.start()
        kw = {} if pfc == "default" else {"pfc": pfc}
        programmer = FabricProgrammer(fabric, str(p4info), str(config), **kw)
        programmer.connect_all()
        programmer.push_pipelines()
        programmer.install_all()
        # one ping per rail pair warms ARP and proves the routes before traffic starts
        from topo.testbed import ping_all  # noqa: PLC0415
        bad = [r for r in ping_all(fabric, fnet.state, count=1) if not r.ok]
        if bad:
            raise TestbedError(f"{len(bad)} same-rail pairs do not answer ping "
                               f"(first {bad[0].src} -> {bad[0].dst_ip}); {fnet.crashed()}")
        yield LiveTestbed(fabric, programmer, fnet)
    finally:
        if programmer is not None:
            programmer.close()
        fnet.stop()


# ---------------------------------------------------------------------------- command
def _attach(args: argparse.Namespace, opts: TrafficOptions) -> TrafficResult:
    """Run on a testbed another process keeps up (``topo.testbed up --hold``)."""
    from controller.fabric_setup import FabricProgrammer  # noqa: PLC0415
    from controller.p4rt import SwitchConnection  # noqa: PLC0415
    from topo.mn import TestbedState, record_matches  # noqa: PLC0415
    from topo.testbed import STATE_PATH, TOPOLOGY_PATH, load_topology  # noqa: PLC0415
    state_path = args.state or STATE_PATH
    state = TestbedState.load(state_path)
    if state is None or not any(record_matches(r) for r in state.procs):
        raise SystemExit("traffic: no testbed is running: start one with "
                         "`python -m topo.testbed up --hold`, or pass --up")
    fabric = load_topology(TOPOLOGY_PATH)
    programmer = FabricProgrammer(fabric, REPO / "build" / "fabric.p4info.txtpb",
                                  REPO / "build" / "fabric.json")
    conns = {}
    try:
        for sw in fabric.switches:
            if sw.role == "leaf":
                conns[sw.name] = SwitchConnection(sw.grpc_addr, device_id=sw.device_id,
                                                  arbitrate=False)
                conns[sw.name].fetch_pipeline()
        return run_traffic(fabric, programmer, state, lambda: state.save(state_path), opts,
                           conns)
    finally:
        for c in conns.values():
            c.close()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m host.traffic``."""
    ap = argparse.ArgumentParser(prog="python -m host.traffic",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--up", action="store_true", help="bring a default p4sim fabric up for the run")
    ap.add_argument("--elephants", type=int, default=8)
    ap.add_argument("--rail", type=int, default=0)
    ap.add_argument("--collective", default=None, help="allreduce | allgather | ... (TCCL planner)")
    ap.add_argument("--ports", choices=PORT_MODES, default="random")
    ap.add_argument("--seed", type=int, default=None, help="default: random, printed")
    ap.add_argument("--duration-s", type=float, default=8.0)
    ap.add_argument("--line-rate-pps", type=float, default=100.0, help="per QP (DCQCN max)")
    ap.add_argument("--no-dcqcn", action="store_true")
    ap.add_argument("--queue-rate-pps", type=float, default=None,
                    help="drain rate of the used leaves' uplinks (p4sim), default unlimited")
    ap.add_argument("--state", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="write the result here")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    opts = TrafficOptions(args.elephants, args.rail, args.collective, args.ports, seed,
                          args.duration_s, NicOptions(line_rate_pps=args.line_rate_pps,
                                                      dcqcn=not args.no_dcqcn),
                          args.queue_rate_pps)
    from topo.testbed import on_signal  # noqa: PLC0415 (SIGTERM unwinds like Ctrl-C)
    signal.signal(signal.SIGTERM, on_signal)
    if args.up:
        why = testbed_unavailable()
        if why:
            print(f"traffic: cannot bring a testbed up: {why}", file=sys.stderr)
            return 2
        with testbed_up() as tb:
            result = run_traffic(tb.fabric, tb.programmer, tb.state, tb.save_state, opts)
    else:
        result = _attach(args, opts)
    if args.json:
        args.json.write_text(result.to_json() + "\n")
    return 0 if not result.errors else 1


if __name__ == "__main__":
    sys.exit(main())
