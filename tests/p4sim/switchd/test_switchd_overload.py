"""``python -m p4sim switch`` under an unpaced sender on veths (root and ``ip`` needed):
frames beyond what the switch forwards are dropped at its ingress and counted there
(``rx_dropped``), never after processing (no egress-queue drops); the counts add up
(frames that reached the port = received + dropped; received = forwarded once the
switch has drained); afterwards it forwards valid traffic and answers P4Runtime. No
timing is asserted (the rate is ``p4sim.pps.veth_overload`` in ``make bench``)."""
from __future__ import annotations

import os
import select
import shutil
import socket
import time
from typing import Callable

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from conftest import QFWD, qm_fields, qm_frame
from p4sim.switchd.control import ControlClient
from p4sim.switchd.ingress import DEFAULT_CAPACITY_PKTS
from procs import SwitchProcess
from veths import ip

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="needs root and iproute2 to create veth pairs")

BURST = 60_000
"""Frames pushed back to back: ~10x what the switch forwards in the time they take."""


UNACCOUNTED_MAX = 1 / 10_000
"""Arrivals the switch may fail to see, as a share of them. Once in CI a burst of 60,000
ended with the switch's received + dropped one frame short of the kernel's count of
arrivals, every other count consistent (no ring hole, no cut frame, depth 0, received =
forwarded); the cause was not found. An accounting fault of the switch loses far more."""


def _kernel_rx(iface: str, counter: str = "rx_packets") -> int:
    with open(f"/sys/class/net/{iface}/statistics/{counter}", encoding="ascii") as f:
        return int(f.read())


def _softnet_dropped() -> int:
    """Frames the kernel's per-CPU backlogs dropped, summed over the CPUs."""
    with open("/proc/net/softnet_stat", encoding="ascii") as f:
        return sum(int(line.split()[1], 16) for line in f if line.strip())


def _drained(ctl: ControlClient, rx: socket.socket, arrived: Callable[[], int],
             before: int, timeout_s: float = 60.0, steady_looks: int = 25) -> dict:
    """Port counters once every frame that reached port 1 (``arrived()``, the kernel's
    count) was read or dropped by it (``before`` frames read earlier) — or, short of that,
    once nothing changed for ``steady_looks`` looks — and port 2 has sent every frame
    port 1 read, the ingress buffer empty (bounded by ``timeout_s``). The wait between
    two looks is a wait for a forwarded frame on ``rx`` (0.2 s at most)."""
    deadline = time.monotonic() + timeout_s
    last, same = None, 0
    while True:
        counters = ctl.port_counters()
        stats = ctl.switch_stats()
        p1 = counters[1]
        seen = p1["rx_frames"] - before + p1["rx_dropped"]
        now = (seen, arrived(), counters[2]["tx_frames"])
        same = same + 1 if now == last else 0
        last = now
        if (seen == now[1] or same >= steady_looks) and \
                counters[2]["tx_frames"] == p1["rx_frames"] and \
                stats["ingress_buffer_depth"] == 0:
            return {"ports": counters, "switch": stats}
        assert time.monotonic() < deadline, f"counts do not add up: {arrived()} arrived, " \
                                            f"{counters} {stats}"
        if select.select([rx], [], [], 0.2)[0]:
            while select.select([rx], [], [], 0)[0]:
                rx.recv(65536)


def _echo(tx: socket.socket, rx: socket.socket, seqs: range) -> list[int]:
    """Send each frame and wait (5 s at most) for it on port 2; the seqs that came back."""
    back = []
    for seq in seqs:
        tx.send(qm_frame(seq=seq))
        deadline = time.monotonic() + 5.0
        while (left := deadline - time.monotonic()) > 0 and select.select([rx], [], [], left)[0]:
            data = rx.recv(65536)
            if data[12:14] == b"\x88\xb5" and qm_fields(data)["seq"] == seq:
                back.append(seq)
                break
    return back


def test_overload_drops_at_ingress_counted_and_the_switch_recovers(veths) -> None:
    # the Python engine: a burst of BURST frames always overloads it; the native data
    # plane (since its rx thread runs idle batches itself) sometimes keeps up with the
    # burst and drops nothing (fresh-clone CI: 60,000 arrived, 0 dropped); its drops
    # under overload are the native.veth_overload bench's figures
    sw1, sw2, host1, host2 = veths
    args = [str(QFWD), "-i", f"1@{sw1}", "-i", f"2@{sw2}", "--engine", "python", "--control-port", "0",
            "--", "--grpc-server-addr", "127.0.0.1:0"]
    with SwitchProcess(args) as sw, ControlClient(sw.control_addr) as ctl:
        tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
        with tx, rx:
            tx.bind((host1, 0))
            rx.bind((host2, 0x88B5))
            assert _echo(tx, rx, range(5)) == list(range(5))
            arrived0 = _kernel_rx(sw1)
            kernel0 = (_kernel_rx(sw1, "rx_dropped"), _softnet_dropped())
            frame = qm_frame(seq=9999)
            for _ in range(BURST):
                try:
                    tx.send(frame)
                except OSError:                    # the veth's queue is full: keep going
                    pass
            got = _drained(ctl, rx, lambda: _kernel_rx(sw1) - arrived0, before=5)
            arrived = _kernel_rx(sw1) - arrived0
            p1, p2, st = got["ports"][1], got["ports"][2], got["switch"]
            received = p1["rx_frames"] - 5
            assert arrived > 0 and p1["rx_dropped"] > 0, (arrived, p1)
            unaccounted = arrived - received - p1["rx_dropped"]   # every arrival accounted
            kernel = (_kernel_rx(sw1, "rx_dropped") - kernel0[0], _softnet_dropped() - kernel0[1])
            assert 0 <= unaccounted <= arrived * UNACCOUNTED_MAX, (
                f"{arrived} arrived, {received} received, {p1['rx_dropped']} dropped; "
                f"the kernel's drops (veth, backlogs): {kernel}; {p1}")
            assert p2["tx_frames"] == p1["rx_frames"]              # received = forwarded
            assert st["tm_drops"] == 0 and st["errors"] == 0       # none dropped after work
            assert st["rx_dropped"] == p1["rx_dropped"]
            assert st["ingress_buffer_capacity"] == DEFAULT_CAPACITY_PKTS
            assert st["ingress_buffer_high_water"] <= DEFAULT_CAPACITY_PKTS
            # (ingress_buffer_full_waits is not asserted: whether the ingress buffer or the
            # kernel's receive ring overflows first depends on how fast the pipeline runs
            # on the machine at that moment; either way the drops are counted, above)
            assert st["ingress_buffer_enqueued"] == st["ingress_buffer_dequeued"]
            # the burst's forwarded frames may still fill rx's socket buffer (_drained
            # stops reading once the switch's counts add up): a full buffer would drop
            # the first echo at the socket, not in the switch
            while select.select([rx], [], [], 0)[0]:
                rx.recv(65536)
            assert _echo(tx, rx, range(100, 120)) == list(range(100, 120))
        with grpc.insecure_channel(sw.grpc_addr) as channel:
            caps = p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
                p4runtime_pb2.CapabilitiesRequest(), timeout=10)
            assert caps.p4runtime_api_version
        assert sw.alive()
    assert sw.returncode == 0


def test_frames_larger_than_a_ring_slot_arrive_whole(veths) -> None:
    """A jumbo frame does not fit a receive-ring slot (rxring.FRAME_SIZE): the kernel
    queues a whole copy on the socket, which the port reads instead of the cut slot."""
    from p4sim.switchd.rxring import FRAME_SIZE

    sw1, sw2, host1, host2 = veths
    for ifc in veths:
        ip("link", "set", ifc, "mtu", "9000")
    args = [str(QFWD), "-i", f"1@{sw1}", "-i", f"2@{sw2}", "--control-port", "0",
            "--", "--grpc-server-addr", "127.0.0.1:0"]
    with SwitchProcess(args) as sw, ControlClient(sw.control_addr) as ctl:
        tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
        with tx, rx:
            tx.bind((host1, 0))
            rx.bind((host2, 0x88B5))
            small, big = qm_frame(seq=1), qm_frame(seq=2) + bytes(range(256)) * 20
            assert len(big) > FRAME_SIZE
            for frame in (small, big, qm_frame(seq=3)):
                tx.send(frame)
            got = []
            deadline = time.monotonic() + 5.0
            while len(got) < 3 and (left := deadline - time.monotonic()) > 0:
                if select.select([rx], [], [], left)[0]:
                    got.append(rx.recv(65536))
        assert [qm_fields(f)["seq"] for f in got] == [1, 2, 3]
        assert len(got[1]) == len(big) and got[1][-5120:] == big[-5120:]
        assert ctl.port_counters(1)[1]["rx_dropped"] == 0
