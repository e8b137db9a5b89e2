"""Forwarding in both roles: leaf host routes and uplinks, spine routes per leaf subnet
(with ECMP over parallel links), MAC rewrite, ARP answered by the switch, PacketOut, and
the drop of unroutable packets (counted)."""
from __future__ import annotations

import ptf.testutils as tu
from scapy.layers.l2 import ARP, Ether

from fabric_base import (ROLE_SPINE, SPINE_ID, FabricTest, host_ip, host_mac,
                         mac_masked, peer_mac, port_mac, routed, udp_packet)
from p4src.hashmodel import GroupModel, SwitchHashModel, predict_member


class LeafHostRoutes(FabricTest):
    """Host to host on the same leaf (same rail), both directions."""

    def runTest(self) -> None:
        self.leaf_config()
        for src, dst in ((1, 2), (2, 1)):
            pkt = udp_packet(host_ip(src), host_ip(dst), eth_src=host_mac(src),
                             eth_dst=port_mac(self.switch_id, src))
            tu.send_packet(self, src, pkt)
            tu.verify_packet(self, routed(pkt, port_mac(self.switch_id, dst), host_mac(dst)), dst)
        tu.verify_no_other_packets(self)


class LeafToOtherBlockAndRail(FabricTest):
    """Destinations of other rails and blocks (10.0.1.x, 10.1.0.x) leave on an uplink."""

    def runTest(self) -> None:
        self.leaf_config()
        for dst in ("10.0.1.3", "10.1.0.3", "10.3.7.9"):
            pkt = udp_packet(host_ip(1), dst)
            tu.send_packet(self, 1, pkt)
            idx, _ = tu.verify_packet_any_port(self, mac_masked(routed(pkt, "0:0:0:0:0:0",
                                                                       "0:0:0:0:0:0")),
                                               [5, 6, 7, 8])
            self.assertIn(idx, range(4))
        tu.verify_no_other_packets(self)


class SpineRoutes(FabricTest):
    """Spine: one link to leaf b0r0 (port 1), two links to leaf b1r0 (ports 2, 3, ECMP)."""

    role = ROLE_SPINE
    switch_id = SPINE_ID
    seed = 0xBEEF

    def runTest(self) -> None:
        for p in (1, 2, 3):
            self.nexthop(p, p, peer_mac(p))
        self.route("10.0.0.0/24", nexthop_id=1)
        self.ecmp_group(2, 0, [2, 3])
        self.route("10.1.0.0/24", group_id=2)
        pkt = udp_packet("10.1.0.5", "10.0.0.9", eth_src=peer_mac(2),
                         eth_dst=port_mac(self.switch_id, 2))
        tu.send_packet(self, 2, pkt)
        tu.verify_packet(self, routed(pkt, port_mac(self.switch_id, 1), peer_mac(1)), 1)
        model = SwitchHashModel("spine", seed=self.seed, groups={2: GroupModel(0, ["2", "3"])})
        for sport in range(50000, 50016):
            pkt = udp_packet("10.0.0.9", "10.1.0.5", sport=sport, eth_src=peer_mac(1),
                             eth_dst=port_mac(self.switch_id, 1))
            out = int(predict_member(model, 2, "10.0.0.9", "10.1.0.5", 17, sport, 4791))
            tu.send_packet(self, 1, pkt)
            tu.verify_packet(self, routed(pkt, port_mac(self.switch_id, out), peer_mac(out)), out)
        tu.verify_no_other_packets(self)


class ArpProxy(FabricTest):
    """An ARP request for the rail gateway is answered by the switch out of the same port."""

    def runTest(self) -> None:
        gw_mac = port_mac(self.switch_id, 1)
        self.sw.insert(self.sw.table_entry("FabricIngress.arp.arp_proxy",
                                           {"hdr.arp.target_proto_addr": "10.0.0.254"},
                                           "FabricIngress.arp.arp_reply", {"mac": gw_mac}))
        req = Ether(src=host_mac(1), dst="ff:ff:ff:ff:ff:ff") / ARP(
            op=1, hwsrc=host_mac(1), psrc=host_ip(1), hwdst="00:00:00:00:00:00",
            pdst="10.0.0.254")
        tu.send_packet(self, 1, req)
        reply = Ether(src=gw_mac, dst=host_mac(1)) / ARP(
            op=2, hwsrc=gw_mac, psrc="10.0.0.254", hwdst=host_mac(1), pdst=host_ip(1))
        tu.verify_packet(self, reply, 1)
        tu.verify_no_other_packets(self)


class PacketOutBypassesPipeline(FabricTest):
    """A PacketOut leaves on its egress_port unchanged (no routing, no TTL change)."""

    def runTest(self) -> None:
        pkt = udp_packet("10.9.9.9", "10.8.8.8")
        self.sw.packet_out(bytes(pkt), {"egress_port": 3})
        tu.verify_packet(self, pkt, 3)
        tu.verify_no_other_packets(self)


class NoRouteDropped(FabricTest):
    """No route: dropped and counted in FabricIngress.telemetry.drops[ingress port]."""

    def runTest(self) -> None:
        self.leaf_config()
        tu.send_packet(self, 1, udp_packet(host_ip(1), "192.168.1.1"))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.wait_counter("FabricIngress.telemetry.drops", 1, 1)[0], 1)
