"""TTL decrement and drop, IPv4 checksum update and verification."""
from __future__ import annotations

import ptf.testutils as tu
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from fabric_base import FabricTest, host_ip, host_mac, port_mac, routed, udp_packet


class TtlDecrementAndChecksum(FabricTest):
    """TTL 64 → 63 and 2 → 1, with a recomputed checksum (scapy recomputes it: exact match)."""

    def runTest(self) -> None:
        self.leaf_config()
        for ttl in (64, 2):
            pkt = udp_packet(host_ip(1), host_ip(2), ttl=ttl)
            tu.send_packet(self, 1, pkt)
            exp = routed(pkt, port_mac(self.switch_id, 2), host_mac(2))
            self.assertEqual(exp[IP].ttl, ttl - 1)
            tu.verify_packet(self, exp, 2)
        tu.verify_no_other_packets(self)


class TtlExpiredDropped(FabricTest):
    """TTL 1 and 0 are dropped (counted in drops); nothing leaves."""

    def runTest(self) -> None:
        self.leaf_config()
        for ttl in (1, 0):
            tu.send_packet(self, 1, udp_packet(host_ip(1), host_ip(2), ttl=ttl))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.wait_counter("FabricIngress.telemetry.drops", 1, 2)[0], 2)


class BadChecksumDropped(FabricTest):
    """A wrong IPv4 header checksum is dropped."""

    def runTest(self) -> None:
        self.leaf_config()
        pkt = udp_packet(host_ip(1), host_ip(2))
        bad = Ether(bytes(pkt))
        bad[IP].chksum ^= 0x0101
        tu.send_packet(self, 1, bad)
        tu.verify_no_other_packets(self)
