"""``p4sim.pps.veth_overload``: a ``python -m p4sim switch`` process under an UNPACED
sender (the switch group; root only).

The paced ``p4sim.pps.veth`` keeps at most 32 frames in flight, so it never shows what
happens when frames arrive faster than the switch can forward them. Here a sender process
pushes one pre-built IPv4 frame into the switch's port 1 as fast as a raw socket in a
Python loop can (100-300 kpps on the 2-core machines, far above what the switch
forwards), on the same kind of veth pairs, and the figure is the rate at which forwarded
frames come out of port 2:

* program ``programs/ipv4_lpm.p4`` (ethernet/IPv4 parser, LPM table, MAC rewrite, TTL - 1,
  IPv4 checksum: the tutorials' basic.p4 in substance), ONE route ``10.0.0.0/8 ->
  ipv4_forward(02:00:00:00:00:03, port 2)`` written over P4Runtime;
* forwarded frames counted by the kernel (``rx_packets`` of the host end of port 2): the
  bench reads no frame while timing, so it takes no CPU from the switch;
* the sender prints a line after the warm-up and after each run (``--duration``); the
  bench reads the counters at each line (no sleeping), so ``--runs`` windows back to back;
* after the sender stops, the switch still has a full ingress buffer and receive ring to
  forward: probe frames are sent one at a time (a new one when one is not back within
  1 s, lost in that backlog) until one comes out of port 2 (``recovery_s``, at most
  20 s), then 10 more must come out rewritten, in order (``BenchCheckError`` otherwise):
  the switch did not collapse. Its control API then gives the frames dropped at its
  ingress (``rx_dropped``: the kernel's drops at port 1 while the ingress buffer was
  full).

Figures: ``p4sim.pps.veth_overload`` (forwarded frames/s, median of the runs),
``p4sim.pps.veth_overload_offered`` (frames/s the sender put into port 1) and
``p4sim.pps.veth_overload_dropped`` (frames/s dropped at the switch's ingress over the
whole overload) and ``p4sim.veth_overload.recovery_s`` (sender stopped to first probe
forwarded), ``p4sim.veth_overload.switch_cores`` (CPU the switch process used during
the runs, in cores: on a machine shared with other work the forwarded rate follows the
CPU the switch gets, and rate / cores is the cost per frame). Not root: says why on stderr and writes no figure.

Example::

    $ sudo .venv/bin/python -m bench switch.pps_veth_overload --duration 2 --runs 3
"""
from __future__ import annotations

import os
import select
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from p4.v1 import p4runtime_pb2

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from bench.switch_bench import (REPO, RPC_TIMEOUT_S, P4RuntimeClient, SwitchProcess, process_cpu_s,
                                _canonical, veth_available, veth_pairs)
from p4sim.control_api import ControlClient

PROGRAM = Path(__file__).resolve().parent / "programs" / "ipv4_lpm.p4"
TABLE, ACTION = "LpmIngress.ipv4_lpm", "LpmIngress.ipv4_forward"
NEXT_HOP_MAC = 0x020000000003
SWITCH_MAC = bytes.fromhex("020000000002")
HOST_MAC = bytes.fromhex("020000000001")
LINE_TIMEOUT_S = 30.0
"""Longest wait for one line of the sender (it prints one per --duration)."""


def ipv4_frame(seq: int = 0, ttl: int = 64, payload_len: int = 22) -> bytes:
    """An Ethernet/IPv4/UDP frame 10.0.1.1 -> 10.0.2.1 (valid header checksum)."""
    total = 20 + 8 + payload_len
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, seq & 0xFFFF, 0, ttl, 17, 0,
                       bytes([10, 0, 1, 1]), bytes([10, 0, 2, 1]))
    head = head[:10] + struct.pack("!H", ipv4_checksum(head)) + head[12:]
    udp = struct.pack("!HHHH", 4791, 4791, 8 + payload_len, 0)
    return SWITCH_MAC + HOST_MAC + b"\x08\x00" + head + udp + seq.to_bytes(4, "big") \
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


def expected(frame: bytes) -> bytes:
    """What the one route makes of ``frame``: MACs rewritten, TTL - 1, checksum fixed."""
    ip = bytearray(frame[14:34])
    ip[8] -= 1
    ip[10:12] = b"\x00\x00"
    ip[10:12] = struct.pack("!H", ipv4_checksum(bytes(ip)))
    return NEXT_HOP_MAC.to_bytes(6, "big") + frame[:6] + frame[12:14] + bytes(ip) + frame[34:]


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
def check_forwarding(host1: str, host2: str, frames: Sequence[bytes],
                     timeout_s: float = 5.0) -> None:
    """Each frame sent into port 1 (from ``host1``) comes out of port 2 (at ``host2``) as
    the route rewrites it (sent one at a time), else BenchCheckError."""
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    with tx, rx:
        tx.bind((host1, 0))
        rx.bind((host2, 0x0800))
        for frame in frames:
            _check_one(tx, rx, frame, timeout_s)


def recovery_time(host1: str, host2: str, first_seq: int, limit_s: float = 20.0) -> float:
    """Seconds until a probe frame sent into port 1 comes out of port 2 again after an
    overload. A probe sent while the switch still drains the overload's backlog (its
    receive ring full) is lost like any frame then: a new probe (next sequence number)
    follows each one not back within 1 s. BenchCheckError after ``limit_s``."""
    t0 = time.monotonic()
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    with tx, rx:
        tx.bind((host1, 0))
        rx.bind((host2, 0x0800))
        seq = first_seq
        while time.monotonic() - t0 < limit_s:
            try:
                _check_one(tx, rx, ipv4_frame(seq=seq), 1.0)
                return time.monotonic() - t0
            except BenchCheckError:
                seq += 1
    raise BenchCheckError(f"veth overload: the switch forwarded nothing in the {limit_s:.0f} s "
                          "after the sender stopped (collapsed)")


def _check_one(tx: socket.socket, rx: socket.socket, frame: bytes, timeout_s: float) -> None:
    while select.select([rx], [], [], 0)[0]:
        rx.recv(65536)
    tx.send(frame)
    want = expected(frame)
    deadline = time.monotonic() + timeout_s
    got: Optional[bytes] = None
    while got is None and (left := deadline - time.monotonic()) > 0:
        if select.select([rx], [], [], left)[0]:
            data = rx.recv(65536)
            if data[12:14] == b"\x08\x00" and data[42:46] == frame[42:46]:
                got = data[:len(want)]
    if got != want:
        raise BenchCheckError(f"veth overload: frame {frame[42:46].hex()} sent on port 1 "
                              f"{'not forwarded' if got is None else 'forwarded wrong'} on "
                              f"port 2 (got {got.hex() if got else None}, want {want.hex()})")


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
def run_overload(config: BenchConfig, engine: str = "python",
                 prefix: str = "p4sim") -> dict[str, Figure]:
    """The ``p4sim.pps.veth_overload*`` figures and ``recovery_s`` of the switch on
    ``engine`` (names under ``prefix``: ``p4sim.native`` for the native path's); none (and
    why, on stderr) when the veths cannot be made."""
    why = veth_available()
    if why is not None:
        print(f"switch.pps_veth_overload: skipped, {why}; p4sim.pps.veth_overload not "
              "written", file=sys.stderr, flush=True)
        return {}

    frame = ipv4_frame()
    with veth_pairs(2) as pairs:
        (sw1, host1), (sw2, host2) = pairs
        with SwitchProcess.run(PROGRAM, [(1, sw1), (2, sw2)], engine) as sw, \
                P4RuntimeClient.connect(sw.grpc_addr) as client:
            client.push_pipeline(PROGRAM)
            _route(client)
            check_forwarding(host1, host2, [ipv4_frame(seq=i) for i in range(1, 11)])
            with ControlClient(sw.control_addr) as ctl:
                dropped0 = ctl.port_counters(1)[1]["rx_dropped"]
            t_start = time.monotonic()
            proc = _sender(host1, frame, config.warmup_s, config.duration_s, config.runs)
            try:
                rates, offered = [], []
                _line(proc)
                cpu0 = process_cpu_s(sw.pid)
                fwd, sent, t = (kernel_count(host2, "rx_packets"),
                                kernel_count(host1, "tx_packets"), time.monotonic())
                t_runs = t
                for _ in range(config.runs):
                    _line(proc)
                    fwd2, sent2, t2 = (kernel_count(host2, "rx_packets"),
                                       kernel_count(host1, "tx_packets"), time.monotonic())
                    rates.append((fwd2 - fwd) / (t2 - t))
                    offered.append((sent2 - sent) / (t2 - t))
                    fwd, sent, t = fwd2, sent2, t2
                cores = (process_cpu_s(sw.pid) - cpu0) / (t - t_runs)
                proc.wait(LINE_TIMEOUT_S)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(5)
            overload_s = time.monotonic() - t_start
            recovery_s = recovery_time(host1, host2, first_seq=1000)
            check_forwarding(host1, host2, [ipv4_frame(seq=i) for i in range(11, 21)])
            with ControlClient(sw.control_addr) as ctl:
                dropped = ctl.port_counters(1)[1]["rx_dropped"] - dropped0
    return {f"{prefix}.pps.veth_overload": Figure(round(median(rates), 1), "pps"),
            f"{prefix}.pps.veth_overload_offered": Figure(round(median(offered), 1), "pps"),
            f"{prefix}.pps.veth_overload_dropped": Figure(round(dropped / overload_s, 1), "pps"),
            f"{prefix}.veth_overload.recovery_s": Figure(round(recovery_s, 3), "s"),
            f"{prefix}.veth_overload.switch_cores": Figure(round(cores, 2), "cores"),
            f"{prefix}.pps_per_core.veth_overload": Figure(round(median(rates) / max(cores, 1e-9), 1), "pps/core")}


BENCHMARKS = (
    # the switch group's last: bench.all_benchmarks runs it after bench.switch_bench's
    Benchmark("pps_veth_overload", "switch", run_overload),
)
