"""The NIC emulator on a live Mininet fabric (root only; skipped otherwise): one default
p4sim fabric is brought up for the module (``testbed.traffic.testbed_up``, its own state file)
and torn down after.

(a) a flow whose leaf uplinks drain at 40 pps while it starts at 200 pps is CE-marked, its
    receiver sends CNPs and its DCQCN rate falls below the start rate;
(b) a PFC PAUSE for priority 3 written into the sender's link (from the root namespace, on
    the leaf's side of the veth) stops the priority-3 QP: the leaf port sees no data frame
    of it during the pause, and frames again after it.

Waits are bounded probes (the tap's frame counts), not sleeps. Lives under tests/testbed/
with the other Mininet tests (tests/host stays Mininet-free). Takes ~25 s.
"""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from host.nic.frames import parse_roce
from host.nic.pfc import build_pause
from testbed.traffic import (LiveTestbed, NicFleet, NicOptions, TrafficOptions, build_flows,
                          elephant_pairs, poll_until, run_traffic, testbed_unavailable)

SKIP_REASON = testbed_unavailable() or ""
pytestmark = pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON or "-")
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
PAUSE_S = 1.0
SLOW_LINK_MBPS = 10.0  # PAUSE quanta are 512 bit times: 19,531 quanta = 1 s at 10 Mb/s


def test_rate_limited_uplink_marks_ce_and_dcqcn_slows_the_sender(testbed: LiveTestbed,
                                                                 tmp_path: Path) -> None:
    opts = TrafficOptions(elephants=1, port_mode="random", seed=1, duration_s=4.0,
                          nic=NicOptions(line_rate_pps=200.0), queue_rate_pps=40.0,
                          report_dir=tmp_path)
    res = run_traffic(testbed.fabric, testbed.programmer, testbed.state, testbed.save_state,
                      opts, say=lambda _: None)
    assert not res.errors, res.summary()
    (flow,) = res.flows
    assert flow.ce_pkts > 0 and flow.cnps_sent > 0, res.summary()
    assert flow.cnps_received > 0 and flow.dcqcn_decreases > 0, res.summary()
    assert flow.final_rate_pps < 200.0, res.summary()
    assert flow.recv_pkts > 0, res.summary()


class _Tap:
    """Timestamps of the data frames of one QP arriving at the leaf side of a veth."""

    def __init__(self, iface: str, qpn: int) -> None:
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.bind((iface, 0))
        self.sock.settimeout(0.05)
        self.qpn, self.times, self._stop = qpn, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                frame, addr = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            info = parse_roce(frame)
            if addr[2] != PACKET_OUTGOING and info is not None and info.dqpn == self.qpn:
                self.times.append(time.monotonic())

    def __enter__(self) -> "_Tap":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join(timeout=2)
        self.sock.close()

    def count(self, t0: float, t1: float) -> int:
        return sum(1 for t in self.times if t0 <= t < t1)


def test_pfc_pause_for_priority_3_stops_the_sender(testbed: LiveTestbed, tmp_path: Path) -> None:
    fab = testbed.fabric
    (flow,) = build_flows(fab, elephant_pairs(fab, rail=0, count=1), [50001])
    nic = next(n for h in fab.hosts for n in h.nics if n.ip == flow.src_ip)
    leaf_iface = f"{nic.leaf}-eth{nic.leaf_port}"
    fleet = NicFleet(testbed.state, testbed.save_state, tmp_path)
    opts = NicOptions(line_rate_pps=200.0, line_rate_mbps=SLOW_LINK_MBPS)
    quanta = round(PAUSE_S * SLOW_LINK_MBPS * 1e6 / 512)
    with _Tap(leaf_iface, flow.qpn) as tap:
        try:
            fleet.start([flow], duration_s=6.0, opts=opts)
            t_start = time.monotonic()
            assert poll_until(lambda: tap.count(t_start + 0.2, time.monotonic()) > 100, 10.0), \
                "the sender's frames never reached the leaf"
            inject = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            inject.bind((leaf_iface, 0))
            t_pause = time.monotonic()
            inject.send(build_pause(nic.mac.replace("06:", "02:", 1), {3: quanta}))
            inject.close()
            resumed = t_pause + PAUSE_S + 0.1
            assert poll_until(lambda: tap.count(resumed, time.monotonic()) > 20, 10.0), \
                (tap.count(t_pause, resumed), "no frames after the pause")
        finally:
            errors = fleet.stop()
    assert not errors, errors
    before = tap.count(t_pause - 0.5, t_pause)
    during = tap.count(t_pause + 0.05, t_pause + PAUSE_S - 0.05)
    after = tap.count(t_pause + PAUSE_S + 0.1, time.monotonic())
    assert before > 20 and after > 20, (before, during, after)
    assert during == 0, (before, during, after)
    (sender,) = [p.report for p in fleet.procs if p.role == "send"]
    assert sender["pfc"]["pauses"][3] >= 1 and sender["rx_pfc"] >= 1, sender["pfc"]
