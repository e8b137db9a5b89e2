"""Per-port counters (rx, tx, drops) and the max-queue-depth register (read and cleared
by the controller)."""
from __future__ import annotations

import ptf.testutils as tu

from fabric_base import FabricTest, host_ip, host_mac, port_mac, routed, udp_packet

MAX_QDEPTH = "FabricEgress.telemetry.max_qdepth"


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


class MaxQdepthReadAndClear(FabricTest):
    def runTest(self) -> None:
        self.leaf_config()
        self.sw.write_register(MAX_QDEPTH, 2, 77)
        self.assertEqual(self.sw.read_register(MAX_QDEPTH, 2), {2: 77})
        tu.send_packet(self, 1, udp_packet(host_ip(1), host_ip(2)))
        tu.verify_packet_any_port(self, routed(udp_packet(host_ip(1), host_ip(2)),
                                               port_mac(self.switch_id, 2), host_mac(2)), [2])
        self.assertEqual(self.sw.read_register(MAX_QDEPTH, 2), {2: 77}, "max kept")
        self.sw.write_register(MAX_QDEPTH, 2, 0)
        self.assertEqual(self.sw.read_register(MAX_QDEPTH, 2), {2: 0})
