"""ECN marking, on p4sim and BMv2: ECT packets get CE exactly when the egress queue depth
they see is at or above the port's threshold, Not-ECT packets never;
FabricEgress.ecn.marks counts the marks, and FabricEgress.telemetry.qdepth_hist counts the
depths the packets saw.

To know the depth each packet sees, port 2's queue is drained slowly through the target's
own runtime (p4sim's control API, BMv2's Thrift ``set_queue_rate``): after a primer packet
has left, a burst of BURST packets sees depths 0, 1, …, BURST-1 exactly (``queues.py``), so
packets 0..K-1 must leave unmarked and K.. marked, and the histogram must hold exactly
those depths."""
from __future__ import annotations

from scapy.layers.inet import IP

from controller.telemetry.counter_reader import QDEPTH_BIN_PKTS, QDEPTH_BINS, QDEPTH_HIST_COUNTER
from fabric_base import FabricTest, host_ip, udp_packet
from queues import send_after_primer

K = 3
BURST = 8
OUT_PORT = 2


class EcnThreshold(FabricTest):
    def histogram(self) -> list[int]:
        """Packets per queue-depth bin of port 2 so far."""
        return [self.read_counter(QDEPTH_HIST_COUNTER, OUT_PORT * QDEPTH_BINS + b)[0]
                for b in range(QDEPTH_BINS)]

    def burst(self, ctl, ecn: int, base: int) -> list[int]:  # type: ignore[no-untyped-def]
        """The ECN field of each burst packet as received, in order."""
        primer = udp_packet(host_ip(1), host_ip(2), sport=base, ecn=ecn)
        pkts = [udp_packet(host_ip(1), host_ip(2), sport=base + 1 + i, ecn=ecn)
                for i in range(BURST)]
        got = send_after_primer(self, ctl, 1, OUT_PORT, primer, pkts)
        return [p[IP].tos & 3 for p in got]

    def runTest(self) -> None:
        ctl = self.control()
        self.leaf_config()
        self.sw.insert(self.sw.table_entry("FabricEgress.ecn.thresholds", {"egress_port": OUT_PORT},
                                           "FabricEgress.ecn.set_ecn_threshold", {"kmin_pkts": K}))
        want_bins = [0] * QDEPTH_BINS
        want_bins[0] += 1                                       # the primer: depth 0
        for depth in range(BURST):
            want_bins[min(depth // QDEPTH_BIN_PKTS, QDEPTH_BINS - 1)] += 1
        try:
            for i, ecn in enumerate((2, 1)):
                marks_before = self.read_counter("FabricEgress.ecn.marks", OUT_PORT)[0]
                hist_before = self.histogram()
                got = self.burst(ctl, ecn, 40000 + 100 * i)
                self.assertEqual(got, [ecn] * K + [3] * (BURST - K), f"ecn={ecn}")
                marks = self.read_counter("FabricEgress.ecn.marks", OUT_PORT)[0]
                self.assertEqual(marks - marks_before, BURST - K)
                self.assertEqual([a - b for a, b in zip(self.histogram(), hist_before)],
                                 want_bins, "queue depths seen")
            got = self.burst(ctl, 0, 40500)
            self.assertEqual(got, [0] * BURST, "a Not-ECT packet was marked")
        finally:
            ctl.close()
