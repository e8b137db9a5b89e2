"""Per-port counters (rx, tx, drops) and the queue-depth histogram
(``FabricEgress.telemetry.qdepth_hist``): every frame a port sends counts once in the bin
of the queue depth it saw, read as indexed counter cells (the controller reads it, never
writes it; BMv2 serves it)."""
from __future__ import annotations

import time

import ptf.testutils as tu
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from controller.telemetry.counter_reader import (QDEPTH_BIN_PKTS, QDEPTH_BINS, QDEPTH_HIST_COUNTER,
                                           qdepth_bin, qdepth_floor, qdepth_hist_index)
from controller.p4rt import counter_entry
from fabric_base import FabricTest, host_ip, host_mac, port_mac, routed, udp_packet

SLOW_PPS = 20               # port 2's drain rate for the burst: one departure per 50 ms
BURST = 14                  # sent at once: depths up to 13, bins 0..3
MIN_DEEPEST = 8             # a queue of at least 8 (at most ~2 departures during the burst)


class PortCounters(FabricTest):
    def runTest(self) -> None:
        self.leaf_config()
        n, length = 5, 100
        for i in range(n):
            pkt = udp_packet(host_ip(1), host_ip(2), sport=42000 + i, length=length)
            tu.send_packet(self, 1, pkt)
            tu.verify_packet(self, routed(pkt, port_mac(self.switch_id, 2), host_mac(2)), 2)
        tu.send_packet(self, 1, udp_packet(host_ip(1), "192.168.0.1", length=length))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.wait_counter("FabricIngress.telemetry.rx", 1, n + 1),
                         (n + 1, (n + 1) * length))
        self.assertEqual(self.wait_counter("FabricEgress.telemetry.tx", 2, n), (n, n * length))
        self.assertEqual(self.read_counter("FabricIngress.telemetry.drops", 1), (1, length))
        self.assertEqual(self.read_counter("FabricIngress.telemetry.rx", 2), (0, 0))


class HistogramTest(FabricTest):
    """Reads a port's histogram bins in one indexed Read, as GOR's reader does."""

    def qdepth_bins(self, port: int) -> list[int]:
        """Packets counted so far in each queue-depth bin of ``port``."""
        first = qdepth_hist_index(port, 0)
        got = [0] * QDEPTH_BINS
        for e in self.sw.read(*[counter_entry(self.sw.p4info, QDEPTH_HIST_COUNTER, first + b)
                                for b in range(QDEPTH_BINS)]):
            got[e.counter_entry.index.index - first] = e.counter_entry.data.packet_count
        return got

    def wait_bins(self, port: int, before: list[int], packets: int,
                  timeout_s: float = 3.0) -> list[int]:
        """The bins' increments since ``before`` once they add up to ``packets`` (or the
        timeout)."""
        deadline = time.monotonic() + timeout_s
        while True:
            grown = [a - b for a, b in zip(self.qdepth_bins(port), before)]
            if sum(grown) >= packets or time.monotonic() > deadline:
                return grown
            time.sleep(0.05)


class QdepthHistogramAtDepthZero(HistogramTest):
    """Packets sent one at a time find an empty queue: all in bin 0 of their port, as many
    as tx counted; other ports' bins do not move. Any target."""

    def runTest(self) -> None:
        self.assertEqual((QDEPTH_BINS, QDEPTH_BIN_PKTS), (16, 4))
        self.assertEqual([qdepth_bin(d) for d in (0, 3, 4, 59, 60, 64)], [0, 0, 1, 14, 15, 15])
        self.leaf_config()
        n = 6
        before2, before1 = self.qdepth_bins(2), self.qdepth_bins(1)
        self.assertEqual(before2, [0] * QDEPTH_BINS, "a fresh pipeline counts nothing")
        tx_before = self.read_counter("FabricEgress.telemetry.tx", 2)[0]
        for i in range(n):
            pkt = udp_packet(host_ip(1), host_ip(2), sport=43000 + i)
            tu.send_packet(self, 1, pkt)
            tu.verify_packet(self, routed(pkt, port_mac(self.switch_id, 2), host_mac(2)), 2)
        grown = self.wait_bins(2, before2, n)
        self.assertEqual(grown, [n] + [0] * (QDEPTH_BINS - 1))
        self.assertEqual(qdepth_floor(grown), 0)
        self.assertEqual(self.read_counter("FabricEgress.telemetry.tx", 2)[0] - tx_before, sum(grown),
                         "the histogram counts the packets tx counts")
        self.assertEqual(self.qdepth_bins(1), before1, "port 1 sent nothing")


class QdepthHistogramOfASlowQueue(HistogramTest):
    """A burst into a slowed queue (the switch's queue control, :meth:`FabricTest.control`:
    p4sim's control API or BMv2's ``set_queue_rate``): port 2 drains SLOW_PPS packets/s
    and BURST packets arrive at once, so a queue builds. Every packet is counted once, in
    a bin no deeper than the burst allows (at most BURST-1 packets ahead of it), and the
    deepest non-empty bin shows a real queue (the whole burst arrives within a few
    departures)."""

    def runTest(self) -> None:
        self.leaf_config()
        ctl = self.control()
        try:
            before = self.qdepth_bins(2)
            ctl.set_queue_rate(SLOW_PPS, port=2)
            for i in range(BURST):
                tu.send_packet(self, 1, udp_packet(host_ip(1), host_ip(2), sport=44000 + i))
            got, deadline = 0, time.monotonic() + 5 + BURST / SLOW_PPS
            while got < BURST and time.monotonic() < deadline:
                res = tu.dp_poll(self, device_number=0, port_number=2, timeout=1)
                if isinstance(res, self.dataplane.PollSuccess):
                    pkt = Ether(res.packet)
                    got += IP in pkt and pkt[IP].src == host_ip(1)
            self.assertEqual(got, BURST, "packets lost")
        finally:
            ctl.set_queue_rate(0, port=2)
            ctl.close()
        grown = self.wait_bins(2, before, BURST)
        self.assertEqual(sum(grown), BURST, f"each packet counted once: {grown}")
        deepest_possible = qdepth_bin(BURST - 1)
        self.assertEqual(grown[deepest_possible + 1:], [0] * (QDEPTH_BINS - deepest_possible - 1),
                         f"no packet can have met more than {BURST - 1} ahead of it: {grown}")
        self.assertGreaterEqual(qdepth_floor(grown), MIN_DEEPEST, f"no queue built: {grown}")
        self.assertEqual(qdepth_floor(grown), max(b for b in range(QDEPTH_BINS) if grown[b]) * 4)
