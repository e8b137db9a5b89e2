"""ECN marking on p4sim (needs its queue control API to build a queue; skipped on BMv2):
ECT packets get CE exactly when the egress queue depth they see is at or above the
port's threshold, Not-ECT packets never; FabricEgress.ecn.marks counts the marks.

To know the depth each packet sees, the egress queue of port 2 is held with an 802.1Qbb
PAUSE sent into port 2 (p4sim's MAC honours it; the harness slows the port's line rate so
that 65535 quanta last seconds): a burst of BURST packets then sees depths 0, 1, …,
BURST-1 exactly (confirmed by the max-depth register), so packets 0..K-1 must leave
unmarked and K.. marked. A RESUME (time 0) releases the queue."""
from __future__ import annotations

import time

import ptf.testutils as tu
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from fabric_base import FabricTest, host_ip, udp_packet
from pfc import pfc_frame

K = 4
BURST = 12
LINE_RATE_GBPS = 0.001  # 65535 quanta = 33 s: the queue stays paused until the RESUME
MAX_QDEPTH = "FabricEgress.telemetry.max_qdepth"


class EcnThreshold(FabricTest):
    def burst(self, ecn: int) -> list[int]:
        """Hold port 2's queue, send BURST packets 1 → 2, release the queue; the ECN field
        of each packet received, in order."""
        ctl = self.control()
        tu.send_packet(self, 2, pfc_frame("02:00:00:aa:00:02", {0: 0xFFFF}))
        deadline = time.monotonic() + 5
        while not ctl.queue_stats(2)[2]["queues"][0]["paused"]:
            self.assertLess(time.monotonic(), deadline, "port 2 did not pause")
            time.sleep(0.02)
        pkts = [udp_packet(host_ip(1), host_ip(2), sport=40000 + i, ecn=ecn) for i in range(BURST)]
        for p in pkts:
            tu.send_packet(self, 1, p)
        while ctl.queue_stats(2)[2]["queues"][0]["depth"] < BURST:
            self.assertLess(time.monotonic(), deadline + 5, "the burst did not queue")
            time.sleep(0.02)
        tu.send_packet(self, 2, pfc_frame("02:00:00:aa:00:02", {0: 0}))
        got: list[int] = []
        deadline = time.monotonic() + 5
        while len(got) < BURST and time.monotonic() < deadline:
            res = tu.dp_poll(self, device_number=0, port_number=2, timeout=1)
            if isinstance(res, self.dataplane.PollSuccess):
                pkt = Ether(res.packet)
                if IP in pkt and pkt[IP].src == host_ip(1):
                    got.append(pkt[IP].tos & 3)
        self.assertEqual(len(got), BURST, "packets lost")
        return got

    def runTest(self) -> None:
        ctl = self.control()
        self.leaf_config()
        self.sw.insert(self.sw.table_entry("FabricEgress.ecn.thresholds", {"egress_port": 2},
                                           "FabricEgress.ecn.set_ecn_threshold", {"kmin_pkts": K}))
        ctl.set_line_rate(LINE_RATE_GBPS, port=2)
        try:
            for ecn in (2, 1):
                self.sw.write_register(MAX_QDEPTH, 2, 0)
                marks_before = self.read_counter("FabricEgress.ecn.marks", 2)[0]
                got = self.burst(ecn)
                self.assertEqual(self.sw.read_register(MAX_QDEPTH, 2)[2], BURST - 1)
                self.assertEqual(got, [ecn] * K + [3] * (BURST - K), f"ecn={ecn}")
                marks = self.read_counter("FabricEgress.ecn.marks", 2)[0]
                self.assertEqual(marks - marks_before, BURST - K)
            self.sw.write_register(MAX_QDEPTH, 2, 0)
            got = self.burst(0)
            self.assertEqual(got, [0] * BURST, "a Not-ECT packet was marked")
            self.assertEqual(self.sw.read_register(MAX_QDEPTH, 2)[2], BURST - 1)
        finally:
            ctl.set_line_rate(10, port=2)
