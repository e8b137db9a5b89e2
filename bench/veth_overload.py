"""``p4sim.pps.veth_overload``: a ``python -m p4sim switch`` process under an UNPACED
sender (the switch group; root only).

The paced ``p4sim.pps.veth`` keeps at most 32 frames in flight, so it never shows what
happens when frames arrive faster than the switch can forward them. Here a sender process
pushes one pre-built IPv4 frame into the switch's port 1 as fast as a raw socket in a
Python loop can (100-300 kpps on the 2-core machines, far above what the switch
forwards), on the same kind of veth pairs, and the figure is the rate at which forwarded
frames come out of the program's out ports. What the switch runs (:class:`OverloadSetup`):

* :data:`LPM` (the figures without a tag): program ``programs/ipv4_lpm.p4`` (ethernet/IPv4
  parser, LPM table, MAC rewrite, TTL - 1, IPv4 checksum: the tutorials' basic.p4 in
  substance), ONE route ``10.0.0.0/8 -> ipv4_forward(02:00:00:00:00:03, port 2)`` written
  over P4Runtime, two ports;
* :data:`FABRIC` (tag ``_fabric``, bench ``native.veth_overload_fabric``):
  ``p4src/fabric.p4`` as the default fabric's first leaf, four ports, started as the
  testbed starts its switches and programmed with the testbed controller's whole plan
  for that leaf; RoCE frames from its host 10.0.0.1 to a host of another leaf leave on
  either uplink (ECMP);

and then:

* forwarded frames counted by the kernel (``rx_packets`` of the host ends of the out
  ports): the bench reads no frame while timing, so it takes no CPU from the switch
  (no receiving socket is open at those ends during the overload);
* the sender prints a line after the warm-up and after each run (``--duration``); the
  bench reads the counters at each line (no sleeping), so ``--runs`` windows back to back;
* after the sender stops, the switch still has a full ingress buffer and receive ring to
  forward: probe frames are sent one at a time (a new one when one is not back within
  1 s, lost in that backlog) until one comes out (``recovery_s``, at most 20 s), then 10
  more must come out rewritten, in order (``BenchCheckError`` otherwise): the switch did
  not collapse. Its control API then gives the frames dropped at its ingress
  (``rx_dropped``: the kernel's drops at port 1 while the ingress buffer was full).

Figures (``veth_overload`` followed by the setup's tag): ``p4sim.pps.veth_overload``
(forwarded frames/s, median of the runs), ``p4sim.pps.veth_overload_offered`` (frames/s
the sender put into port 1) and ``p4sim.pps.veth_overload_dropped`` (frames/s dropped at
the switch's ingress over the whole overload) and ``p4sim.veth_overload.recovery_s``
(sender stopped to first probe forwarded), ``p4sim.veth_overload.switch_cores`` (CPU the
switch process used during the runs, in cores: on a machine shared with other work the
forwarded rate follows the CPU the switch gets, and rate / cores is the cost per frame:
``p4sim.pps_per_core.veth_overload``), ``p4sim.veth_overload.ctx_switches_per_frame``
(the switch's threads' context switches per forwarded frame) and
``p4sim.veth_overload.load_1m`` (the machine's load average when the run started).
Not root: says why on stderr and writes no figure.

Example::

    $ sudo .venv/bin/python -m bench switch.pps_veth_overload --duration 2 --runs 3
    $ sudo .venv/bin/python -m bench native.veth_overload_fabric --duration 3 --runs 3
"""
from __future__ import annotations

import os
import select
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from p4.v1 import p4runtime_pb2

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from bench.switch_bench import (DEVICE_ID, REPO, RPC_TIMEOUT_S, P4RuntimeClient, SwitchProcess,
                                _canonical, p4sim_pipeline, process_cpu_s, threads_ctx_switches,
                                veth_available, veth_pairs)
from controller.fabric.entries import T_NEXTHOPS
from controller.fabric.plan import SwitchPlan, plan_fabric
from controller.fabric_setup import meter_updates
from controller.p4rt import SwitchConnection, clone_session, update
from p4sim.control_api import ControlClient
from testbed.targets import CPU_PORT, PRIORITY_QUEUES
from topo.model import build_fabric

PROGRAM = Path(__file__).resolve().parent / "programs" / "ipv4_lpm.p4"
TABLE, ACTION = "LpmIngress.ipv4_lpm", "LpmIngress.ipv4_forward"
NEXT_HOP_MAC = 0x020000000003
SWITCH_MAC = bytes.fromhex("020000000002")
HOST_MAC = bytes.fromhex("020000000001")
LINE_TIMEOUT_S = 30.0
"""Longest wait for one line of the sender (it prints one per --duration)."""


def ipv4_frame(seq: int = 0, ttl: int = 64, payload_len: int = 22, *,
               src: bytes = bytes([10, 0, 1, 1]), dst: bytes = bytes([10, 0, 2, 1]),
               dst_mac: bytes = SWITCH_MAC, tos: int = 0) -> bytes:
    """An Ethernet/IPv4/UDP frame ``src`` -> ``dst`` (10.0.1.1 -> 10.0.2.1 unless told) to
    ``dst_mac``, UDP port 4791, the sequence number in the payload's first 4 bytes (valid
    header checksum; ``tos``: DSCP << 2 | ECN).

    Example::

        >>> f = ipv4_frame(seq=3, src=bytes([10, 0, 0, 1]), tos=26 << 2 | 2)
        >>> f[26:30] == bytes([10, 0, 0, 1]), f[15], f[42:46].hex()
        (True, 106, '00000003')
    """
    total = 20 + 8 + payload_len
    head = struct.pack("!BBHHHBBH4s4s", 0x45, tos, total, seq & 0xFFFF, 0, ttl, 17, 0, src, dst)
    head = head[:10] + struct.pack("!H", ipv4_checksum(head)) + head[12:]
    udp = struct.pack("!HHHH", 4791, 4791, 8 + payload_len, 0)
    return dst_mac + HOST_MAC + b"\x08\x00" + head + udp + seq.to_bytes(4, "big") \
        + bytes(payload_len - 4)


def ipv4_checksum(header: bytes) -> int:
    """RFC 791 header checksum (0 when ``header`` already carries a valid one).

    Example::

        >>> ipv4_checksum(ipv4_frame()[14:34])
        0
    """
    s = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def expected(frame: bytes, next_hop_mac: bytes = NEXT_HOP_MAC.to_bytes(6, "big"),
             src_mac: Optional[bytes] = None) -> bytes:
    """What a route makes of ``frame``: destination MAC ``next_hop_mac``, source MAC
    ``src_mac`` (the frame's old destination when None: ipv4_lpm.p4's rewrite), TTL - 1,
    checksum fixed."""
    ip = bytearray(frame[14:34])
    ip[8] -= 1
    ip[10:12] = b"\x00\x00"
    ip[10:12] = struct.pack("!H", ipv4_checksum(bytes(ip)))
    return next_hop_mac + (frame[:6] if src_mac is None else src_mac) + frame[12:14] \
        + bytes(ip) + frame[34:]


# ---------------------------------------------------------------------- what the probe runs
@dataclass(frozen=True)
class OverloadSetup:
    """One switch the probe overloads: its ``program``, how many ports (veth pairs; the
    sender writes into port 1), the ports a forwarded frame may leave on (``out_ports``,
    counted by the kernel at their host ends), how the switch is programmed once it runs
    (``install(grpc_addr)``), the frame with a sequence number, and what a frame must
    look like leaving on a port (``rewrite(frame, port)``: None when it must not leave
    there). ``tag`` ends the figures' names (``pps.veth_overload<tag>``);
    ``target_options`` are the switch's (after ``--``)."""

    tag: str
    program: Path
    ports: int
    out_ports: tuple[int, ...]
    install: Callable[[str], None]
    frame: Callable[[int], bytes]
    rewrite: Callable[[bytes, int], Optional[bytes]]
    target_options: tuple[str, ...] = ()


def _lpm_install(grpc_addr: str) -> None:
    with P4RuntimeClient.connect(grpc_addr) as client:
        client.push_pipeline(PROGRAM)
        _route(client)


LPM = OverloadSetup("", PROGRAM, 2, (2,), _lpm_install, lambda seq: ipv4_frame(seq=seq),
                    lambda frame, port: expected(frame) if port == 2 else None)
"""``programs/ipv4_lpm.p4`` with its one route (the probe's figures without a tag)."""

FABRIC_P4 = REPO / "p4src" / "fabric.p4"
FABRIC_LEAF = "b0r0l0"
"""The default fabric's first leaf (``topo.model.build_fabric``): hosts 10.0.0.1 and
10.0.0.2 on ports 1 and 2, uplinks to the two spines on ports 3 and 4 (ECMP group 1)."""
FABRIC_SRC, FABRIC_DST = bytes([10, 0, 0, 1]), bytes([10, 0, 1, 1])
FABRIC_TOS = 26 << 2 | 2
"""DSCP 26 (RoCE: priority 3, lossless, ECN-marked) with ECT(0), as the NICs send."""


def fabric_leaf_plan() -> SwitchPlan:
    """What the testbed's controller writes to the default fabric's first leaf (every
    table entry, clone session and meter cell of ``plan_fabric``).

    Example::

        >>> plan = fabric_leaf_plan()
        >>> plan.role, sorted(plan.groups[1].ports)
        ('leaf', [3, 4])
    """
    return plan_fabric(build_fabric())[FABRIC_LEAF]


def _fabric_install(grpc_addr: str) -> None:
    plan = fabric_leaf_plan()
    with SwitchConnection(grpc_addr, device_id=DEVICE_ID, election_id=(0, 1),
                          timeout_s=RPC_TIMEOUT_S) as conn:
        conn.push_pipeline(*p4sim_pipeline(FABRIC_P4))
        ups = [update(clone_session(sid, list(ports)), "INSERT")
               for sid, ports in sorted(plan.clone_sessions.items())]
        ups += [update(conn.table_entry(e.table, e.match, e.action, e.params, is_default=e.default),
                       "MODIFY" if e.default else "INSERT") for e in plan.entries]
        ups += meter_updates(conn, plan)
        conn.write(ups)


def _fabric_rewrite(frame: bytes, port: int) -> Optional[bytes]:
    """The leaf's route to a remote host: out of an uplink with the spine's MAC as
    destination and the uplink's own as source, TTL - 1."""
    plan = fabric_leaf_plan()
    if port not in plan.groups[1].ports:
        return None
    route = next(e for e in plan.of(T_NEXTHOPS) if e.params["port"] == port)
    return expected(frame, _mac(str(route.params["dst_mac"])), _mac(str(route.params["src_mac"])))


def _mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


FABRIC = OverloadSetup(
    "_fabric", FABRIC_P4, 4, (3, 4), _fabric_install,
    lambda seq: ipv4_frame(seq=seq, src=FABRIC_SRC, dst=FABRIC_DST, tos=FABRIC_TOS,
                           dst_mac=_mac(build_fabric().switch(FABRIC_LEAF).router_mac)),
    _fabric_rewrite, ("--cpu-port", str(CPU_PORT), "--priority-queues", str(PRIORITY_QUEUES)))
"""``p4src/fabric.p4`` as the default fabric's first leaf, started as the testbed starts
its switches (CPU port 255, 8 priority queues) and programmed with the testbed
controller's whole plan for it: RoCE frames from host 10.0.0.1 (port 1) to a host of
another leaf (10.0.1.1), routed over the uplinks' ECMP group (source guard, QoS, ECN,
PFC, admission, alarms and elephant tracking on the way)."""


# ---------------------------------------------------------------------- the sender
def blast(iface: str, frame_hex: str, warmup_s: float, window_s: float, windows: int) -> None:
    """The sender process: send one frame on ``iface`` in a tight loop; print ``go SENT``
    after ``warmup_s``, then ``mark SENT`` after each of ``windows`` windows, then stop."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    sock.bind((iface, 0))
    send, frame, clock = sock.send, bytes.fromhex(frame_hex), time.monotonic
    sent = 0
    marks = [clock() + warmup_s + i * window_s for i in range(windows + 1)]
    for i, when in enumerate(marks):
        while clock() < when:
            for _ in range(256):
                try:
                    send(frame)
                    sent += 1
                except OSError:           # ENOBUFS: the veth queue is full; keep pushing
                    pass
        print(f"{'go' if i == 0 else 'mark'} {sent}", flush=True)


def _sender(iface: str, frame: bytes, warmup_s: float, window_s: float,
            windows: int) -> subprocess.Popen[bytes]:
    code = ("import sys; from bench.veth_overload import blast; "
            "blast(sys.argv[1], sys.argv[2], *map(float, sys.argv[3:5]), int(sys.argv[5]))")
    return subprocess.Popen([sys.executable, "-c", code, iface, frame.hex(), str(warmup_s),
                             str(window_s), str(windows)], cwd=REPO, stdout=subprocess.PIPE)


def _line(proc: subprocess.Popen[bytes]) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], LINE_TIMEOUT_S)
    line = proc.stdout.readline().decode().strip() if ready else ""
    if not line:
        raise RuntimeError(f"the overload sender stopped answering (exit {proc.poll()})")
    return line


def kernel_count(iface: str, name: str) -> int:
    """A counter of ``/sys/class/net/IFACE/statistics`` (``rx_packets``, ...)."""
    with open(f"/sys/class/net/{iface}/statistics/{name}", encoding="ascii") as f:
        return int(f.read())


# ---------------------------------------------------------------------- checks
class _Ends:
    """The probe's host ends: a raw socket sending into port 1 and one receiving IPv4 at
    the host end of each of ``setup.out_ports``. Open only while checking: an open
    receiving socket would take a copy of every frame the switch forwards during the
    overload, work the kernel charges to the switch's sending thread."""

    def __init__(self, setup: OverloadSetup, hosts: dict[int, str]) -> None:
        self.setup = setup
        self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        self.rx: dict[int, socket.socket] = {}
        try:
            self.tx.bind((hosts[1], 0))
            for port in setup.out_ports:
                self.rx[port] = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                              socket.htons(0x0800))
                self.rx[port].bind((hosts[port], 0x0800))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for sock in (self.tx, *self.rx.values()):
            sock.close()

    def __enter__(self) -> "_Ends":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def check_one(self, frame: bytes, timeout_s: float) -> None:
        """Send ``frame`` into port 1; it must come out of one of the out ports as
        ``setup.rewrite`` says for that port (BenchCheckError otherwise)."""
        socks = list(self.rx.values())
        while ready := select.select(socks, [], [], 0)[0]:
            for sock in ready:
                sock.recv(65536)
        self.tx.send(frame)
        deadline = time.monotonic() + timeout_s
        got: Optional[tuple[int, bytes]] = None
        while got is None and (left := deadline - time.monotonic()) > 0:
            for sock in select.select(socks, [], [], left)[0]:
                data = sock.recv(65536)
                if data[12:14] == b"\x08\x00" and data[42:46] == frame[42:46]:
                    got = next(p for p, s in self.rx.items() if s is sock), data
        want = None if got is None else self.setup.rewrite(frame, got[0])
        if got is None or want is None or got[1][:len(want)] != want:
            raise BenchCheckError(
                f"veth overload: frame {frame[42:46].hex()} sent on port 1 "
                + ("not forwarded" if got is None else
                   f"forwarded wrong on port {got[0]} (got {got[1].hex()}, want "
                   f"{want.hex() if want else 'nothing there'})"))


def check_forwarding(setup: OverloadSetup, hosts: dict[int, str], seqs: Sequence[int],
                     timeout_s: float = 5.0) -> None:
    """Each frame (one per sequence number) sent into port 1 (host ends ``hosts`` by
    port) comes out of an out port as the program rewrites it (sent one at a time), else
    BenchCheckError."""
    with _Ends(setup, hosts) as ends:
        for seq in seqs:
            ends.check_one(setup.frame(seq), timeout_s)


def recovery_time(setup: OverloadSetup, hosts: dict[int, str], first_seq: int,
                  limit_s: float = 20.0) -> float:
    """Seconds until a probe frame sent into port 1 comes out again after an overload. A
    probe sent while the switch still drains the overload's backlog (its receive ring
    full) is lost like any frame then: a new probe (next sequence number) follows each
    one not back within 1 s. BenchCheckError after ``limit_s``."""
    t0 = time.monotonic()
    seq = first_seq
    with _Ends(setup, hosts) as ends:
        while time.monotonic() - t0 < limit_s:
            try:
                ends.check_one(setup.frame(seq), 1.0)
                return time.monotonic() - t0
            except BenchCheckError:
                seq += 1
    raise BenchCheckError(f"veth overload: the switch forwarded nothing in the {limit_s:.0f} s "
                          "after the sender stopped (collapsed)")


def _route(client: P4RuntimeClient) -> None:
    """The one LPM route, over P4Runtime."""
    upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = upd.entity.table_entry
    te.table_id = client._id("tables", TABLE)
    m = te.match.add(field_id=1)
    m.lpm.value, m.lpm.prefix_len = bytes([10, 0, 0, 0]), 8
    te.action.action.action_id = client._id("actions", ACTION)
    te.action.action.params.add(param_id=1, value=_canonical(NEXT_HOP_MAC))
    te.action.action.params.add(param_id=2, value=_canonical(2))
    client.stub.Write(client.write_request([upd]), timeout=RPC_TIMEOUT_S)


# ---------------------------------------------------------------------- the benchmark
def load_average() -> float:
    """The 1-minute load average (``/proc/loadavg``), recorded beside each run's figures."""
    with open("/proc/loadavg", encoding="ascii") as f:
        return float(f.read().split()[0])


def run_overload(config: BenchConfig, engine: str = "python", prefix: str = "p4sim",
                 setup: OverloadSetup = LPM) -> dict[str, Figure]:
    """The ``p4sim.pps.veth_overload*`` figures and ``recovery_s`` of the switch on
    ``engine`` running ``setup`` (names under ``prefix``: ``p4sim.native`` for the native
    path's; ``setup.tag`` after ``veth_overload``); none (and why, on stderr) when the
    veths cannot be made."""
    why = veth_available()
    name = f"veth_overload{setup.tag}"
    if why is not None:
        print(f"{prefix}.pps.{name}: skipped, {why}; no figure written",
              file=sys.stderr, flush=True)
        return {}

    frame = setup.frame(0)
    with veth_pairs(setup.ports) as pairs:
        hosts = {i + 1: host for i, (_, host) in enumerate(pairs)}
        outs = [hosts[p] for p in setup.out_ports]

        def forwarded() -> int:
            return sum(kernel_count(h, "rx_packets") for h in outs)

        with SwitchProcess.run(setup.program, [(i + 1, sw_end) for i, (sw_end, _) in
                                               enumerate(pairs)], engine,
                               setup.target_options) as sw:
            setup.install(sw.grpc_addr)
            check_forwarding(setup, hosts, range(1, 11))
            with ControlClient(sw.control_addr) as ctl:
                dropped0 = ctl.port_counters(1)[1]["rx_dropped"]
            load = load_average()
            t_start = time.monotonic()
            proc = _sender(hosts[1], frame, config.warmup_s, config.duration_s, config.runs)
            try:
                rates, offered = [], []
                _line(proc)
                cpu0, ctx0 = process_cpu_s(sw.pid), threads_ctx_switches(sw.pid)
                fwd, sent, t = forwarded(), kernel_count(hosts[1], "tx_packets"), time.monotonic()
                t_runs, fwd_runs = t, fwd
                for _ in range(config.runs):
                    _line(proc)
                    fwd2, sent2, t2 = (forwarded(), kernel_count(hosts[1], "tx_packets"),
                                       time.monotonic())
                    rates.append((fwd2 - fwd) / (t2 - t))
                    offered.append((sent2 - sent) / (t2 - t))
                    fwd, sent, t = fwd2, sent2, t2
                cores = (process_cpu_s(sw.pid) - cpu0) / (t - t_runs)
                ctx_per_frame = (threads_ctx_switches(sw.pid) - ctx0) / max(fwd - fwd_runs, 1)
                proc.wait(LINE_TIMEOUT_S)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(5)
            overload_s = time.monotonic() - t_start
            recovery_s = recovery_time(setup, hosts, first_seq=1000)
            check_forwarding(setup, hosts, range(11, 21))
            with ControlClient(sw.control_addr) as ctl:
                dropped = ctl.port_counters(1)[1]["rx_dropped"] - dropped0
    return {f"{prefix}.pps.{name}": Figure(round(median(rates), 1), "pps"),
            f"{prefix}.pps.{name}_offered": Figure(round(median(offered), 1), "pps"),
            f"{prefix}.pps.{name}_dropped": Figure(round(dropped / overload_s, 1), "pps"),
            f"{prefix}.{name}.recovery_s": Figure(round(recovery_s, 3), "s"),
            f"{prefix}.{name}.switch_cores": Figure(round(cores, 2), "cores"),
            f"{prefix}.{name}.load_1m": Figure(round(load, 2), "load"),
            f"{prefix}.{name}.ctx_switches_per_frame": Figure(round(ctx_per_frame, 3), "switches"),
            f"{prefix}.pps_per_core.{name}": Figure(round(median(rates) / max(cores, 1e-9), 1), "pps/core")}


BENCHMARKS = (
    # the switch group's last: bench.all_benchmarks runs it after bench.switch_bench's
    Benchmark("pps_veth_overload", "switch", run_overload),
)
