"""The per-flow override table pins a 5-tuple to a chosen uplink, bypassing ECMP."""
from __future__ import annotations

import ptf.testutils as tu

from fabric_base import UPLINKS, FabricTest, host_ip, peer_mac, port_mac, routed, udp_packet
from p4src.hashmodel import GroupModel, SwitchHashModel, predict_member


class OverridePinsFlow(FabricTest):
    def runTest(self) -> None:
        self.leaf_config()
        src, dst, sport, dport = host_ip(1), "10.1.0.7", 51000, 4791
        model = SwitchHashModel("leaf", seed=self.seed,
                                groups={1: GroupModel(0, [str(p) for p in UPLINKS])})
        hashed = int(predict_member(model, 1, src, dst, 17, sport, dport))
        pinned = next(p for p in UPLINKS if p != hashed)
        self.sw.insert(self.sw.table_entry(
            "FabricIngress.override.flows",
            {"src_addr": src, "dst_addr": dst, "protocol": 17, "src_port": sport,
             "dst_port": dport},
            "FabricIngress.override.set_nexthop", {"nexthop_id": pinned}))
        pkt = udp_packet(src, dst, sport=sport, dport=dport)
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, routed(pkt, port_mac(self.switch_id, pinned), peer_mac(pinned)),
                         pinned)
        other = udp_packet(src, dst, sport=sport + 1, dport=dport)
        want = int(predict_member(model, 1, src, dst, 17, sport + 1, dport))
        tu.send_packet(self, 1, other)
        tu.verify_packet(self, routed(other, port_mac(self.switch_id, want), peer_mac(want)), want)
        tu.verify_no_other_packets(self)
