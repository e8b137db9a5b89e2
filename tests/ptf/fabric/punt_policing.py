"""Control-plane policing of ARP punts (``FabricIngress.arp.punt_meter``): over a port's
rate an ARP punt is dropped before the CPU port and counted per port; a cell never
configured punts every ARP packet (the switch as before the policer); the other ports'
cells are their own; ARP the switch answers itself is not policed."""
from __future__ import annotations

import time

import ptf.testutils as tu
from scapy.layers.l2 import ARP, Ether

from fabric_base import FabricTest, host_ip, host_mac, port_mac

PUNT_METER = "FabricIngress.arp.punt_meter"
PUNT_DROPS = "FabricIngress.arp.punt_drops"
PUNT_ARP = 1
FLOOD = 20
BURST = 5
RATE_PPS = 1
GATEWAY = "10.0.0.254"


def gratuitous(port: int) -> Ether:
    """The gratuitous ARP reply the host on ``port`` announces itself with (always punted)."""
    return Ether(src=host_mac(port), dst="ff:ff:ff:ff:ff:ff") / ARP(
        op=2, hwsrc=host_mac(port), psrc=host_ip(port), hwdst="ff:ff:ff:ff:ff:ff",
        pdst=host_ip(port))


class ArpPuntsPoliced(FabricTest):
    """Port 1 floods gratuitous ARP. Without a meter entry every one is a PacketIn (reason
    PUNT_ARP, ingress port 1). With ``punt_meter[1]`` at 1 packet/s, burst 5: 5 of 20 sent
    together reach the controller (one more per second the sending took), the rest are
    counted in ``arp.punt_drops[1]`` and ``telemetry.drops[1]``; port 2's punts are not
    touched; a request for the gateway is still answered on port 1 (proxy ARP comes
    before the meter). The cell reset (MODIFY without a config) punts everything again."""

    def punts(self) -> list[tuple[int, int]]:
        """(ingress port, reason) of every PacketIn until none came for 1 s."""
        out = []
        while (pin := self.sw.get_packet_in(1.0)) is not None:
            out.append((pin.metadata["ingress_port"], pin.metadata["reason"]))
        return out

    def runTest(self) -> None:
        for _ in range(FLOOD):                                  # no meter entry: as before
            tu.send_packet(self, 1, gratuitous(1))
        self.assertEqual(self.punts(), [(1, PUNT_ARP)] * FLOOD)

        self.sw.modify(self.sw.meter_entry(PUNT_METER, 1, (RATE_PPS, BURST, RATE_PPS, BURST)))
        t0 = time.monotonic()
        for _ in range(FLOOD):
            tu.send_packet(self, 1, gratuitous(1))
        sending_s = time.monotonic() - t0
        got = self.punts()
        self.assertEqual(set(got), {(1, PUNT_ARP)})
        self.assertGreaterEqual(len(got), BURST)
        self.assertLessEqual(len(got), BURST + int(sending_s * RATE_PPS) + 1, sending_s)
        dropped = FLOOD - len(got)
        self.assertEqual(self.wait_counter(PUNT_DROPS, 1, dropped)[0], dropped)
        self.assertEqual(self.read_counter("FabricIngress.telemetry.drops", 1)[0], dropped)

        for _ in range(3):                                      # port 2: its own cell
            tu.send_packet(self, 2, gratuitous(2))
        self.assertEqual(self.punts(), [(2, PUNT_ARP)] * 3)
        self.assertEqual(self.read_counter(PUNT_DROPS, 2), (0, 0))

        gw = port_mac(self.switch_id, 1)                        # answered, never policed
        self.sw.insert(self.sw.table_entry("FabricIngress.arp.arp_proxy",
                                           {"hdr.arp.target_proto_addr": GATEWAY},
                                           "FabricIngress.arp.arp_reply", {"mac": gw}))
        req = Ether(src=host_mac(1), dst="ff:ff:ff:ff:ff:ff") / ARP(
            op=1, hwsrc=host_mac(1), psrc=host_ip(1), hwdst="00:00:00:00:00:00", pdst=GATEWAY)
        tu.send_packet(self, 1, req)
        tu.verify_packet(self, Ether(src=gw, dst=host_mac(1)) / ARP(
            op=2, hwsrc=gw, psrc=GATEWAY, hwdst=host_mac(1), pdst=host_ip(1)), 1)

        self.sw.modify(self.sw.meter_entry(PUNT_METER, 1))      # reset: unconfigured, GREEN
        for _ in range(FLOOD):
            tu.send_packet(self, 1, gratuitous(1))
        self.assertEqual(self.punts(), [(1, PUNT_ARP)] * FLOOD)
        self.assertEqual(self.read_counter(PUNT_DROPS, 1)[0], dropped)
        tu.verify_no_other_packets(self)
