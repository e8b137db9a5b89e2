"""The IPv4 source guard (``FabricIngress.source_guard``): on a guarded port only the
allowed sources are forwarded; a spoofed source is dropped before forwarding and sampling
see it, and counted per port; an unguarded port (and a switch with no guard entries)
forwards any source, as before; ARP keeps its path."""
from __future__ import annotations

import ptf.testutils as tu
from scapy.layers.l2 import ARP, Ether

from fabric_base import (FabricTest, host_ip, host_mac, peer_mac, port_mac, routed,
                         udp_packet)

GUARD_PORTS = "FabricIngress.source_guard.ports"
GUARD_SOURCES = "FabricIngress.source_guard.sources"
GUARD_DROPS = "FabricIngress.source_guard.drops"
DIGEST = "flow_sample_t"
UPLINK = 5
REMOTE = "10.1.0.1"          # a host behind another leaf


class SourceGuardDropsSpoofedSources(FabricTest):
    """Port 1 (host 10.0.0.1) and port 2 (host 10.0.0.2) guarded, uplink 5 not. Before any
    guard entry a spoofed frame is forwarded (the switch as before the guard); after, the
    host's own source is forwarded and sampled, its neighbour's and a remote host's
    sources are dropped (no frame, no sample), counted in ``source_guard.drops[1]`` and
    ``telemetry.drops[1]``; a remote source arriving on the uplink is forwarded; an ARP
    request with a spoofed sender is still answered."""

    def runTest(self) -> None:
        self.leaf_config()
        length = 120
        to_host2 = port_mac(self.switch_id, 2), host_mac(2)
        spoofed = udp_packet(host_ip(2), host_ip(2), sport=44001, length=length)
        tu.send_packet(self, 1, spoofed)                       # no guard entries: as before
        tu.verify_packet(self, routed(spoofed, *to_host2), 2)

        for port in (1, 2):
            self.sw.insert(self.sw.table_entry(GUARD_PORTS, {"standard_metadata.ingress_port": port},
                                               "FabricIngress.source_guard.guard_port", {}),
                           self.sw.table_entry(GUARD_SOURCES,
                                               {"standard_metadata.ingress_port": port,
                                                "hdr.ipv4.src_addr": host_ip(port)},
                                               "FabricIngress.source_guard.allow", {}))
        self.sw.enable_digest(DIGEST)
        self.sw.insert(self.sw.table_entry("FabricIngress.sampling.config", {"egress_spec": 2},
                                           "FabricIngress.sampling.sample", {"one_in_n": 1}))

        own = udp_packet(host_ip(1), host_ip(2), sport=44002, length=length)
        tu.send_packet(self, 1, own)
        tu.verify_packet(self, routed(own, *to_host2), 2)
        for src, sport in ((host_ip(2), 44003), (REMOTE, 44004)):
            tu.send_packet(self, 1, udp_packet(src, host_ip(2), sport=sport, length=length))
        from_uplink = udp_packet(REMOTE, host_ip(2), sport=44005, length=length,
                                 eth_src=peer_mac(UPLINK), eth_dst=port_mac(self.switch_id, UPLINK))
        tu.send_packet(self, UPLINK, from_uplink)
        tu.verify_packet(self, routed(from_uplink, *to_host2), 2)

        self.sw.insert(self.sw.table_entry("FabricIngress.arp.arp_proxy",
                                           {"hdr.arp.target_proto_addr": "10.0.0.254"},
                                           "FabricIngress.arp.arp_reply",
                                           {"mac": port_mac(self.switch_id, 1)}))
        req = Ether(src=host_mac(1), dst="ff:ff:ff:ff:ff:ff") / ARP(
            op=1, hwsrc=host_mac(1), psrc=REMOTE, hwdst="00:00:00:00:00:00", pdst="10.0.0.254")
        tu.send_packet(self, 1, req)
        gw = port_mac(self.switch_id, 1)
        tu.verify_packet(self, Ether(src=gw, dst=host_mac(1)) / ARP(
            op=2, hwsrc=gw, psrc="10.0.0.254", hwdst=host_mac(1), pdst=REMOTE), 1)
        tu.verify_no_other_packets(self)

        self.assertEqual(self.wait_counter(GUARD_DROPS, 1, 2), (2, 2 * length))
        self.assertEqual(self.read_counter("FabricIngress.telemetry.drops", 1), (2, 2 * length))
        self.assertEqual(self.read_counter(GUARD_DROPS, UPLINK), (0, 0))
        self.assertEqual(self.read_counter(GUARD_DROPS, 2), (0, 0))
        got = []
        while (dl := self.sw.get_digest(1.0)) is not None:
            got.extend(dl.data)
        self.assertEqual(sorted((d["src_addr"], d["src_port"]) for d in got),
                         [(0x0A000001, 44002), (0x0A010001, 44005)])
