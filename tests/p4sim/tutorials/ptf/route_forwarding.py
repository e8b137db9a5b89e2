"""PTF tests of ``ipv4_routes.p4``, shaped like a P4 tutorials exercise's ``ptf/`` tests:
each test connects as the tutorials' ``p4runtime_lib`` does (:mod:`tutorial_ctl`), pushes
the pipeline (the compiled JSON in ``p4.tmp.P4DeviceConfig``), writes routes and checks the
packets. Run by ``test_tutorials_ptf.py`` as ``runptf.sh`` runs an exercise's tests::

    ptf --test-dir tests/p4sim/tutorials/ptf -i 0@h0 -i 1@h1 -i 2@h2 -i 3@h3 \\
        --test-params="grpcaddr='127.0.0.1:9559';p4info='build/ipv4_routes.p4info.txtpb';\\
config='build/ipv4_routes.json'"
"""
from __future__ import annotations

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest

from tutorial_ctl import TutorialController

ROUTES = "RouteIngress.routes"
DST = "hdr.ipv4.dst_addr"
FORWARD = "RouteIngress.forward"
DROP = "RouteIngress.drop"
HOST_MAC = "ee:cd:00:7e:70:00"
SWITCH_MAC = "ee:30:ca:9d:1e:00"


class RoutesTest(BaseTest):
    """Base: a fresh pipeline (default action drop) before each test."""

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        self.ctl = TutorialController(tu.test_param_get("grpcaddr") or "127.0.0.1:9559",
                                      device_id=0, p4info_path=tu.test_param_get("p4info"))
        self.ctl.master_arbitration_update()
        self.ctl.set_forwarding_pipeline_config(tu.test_param_get("config"))
        self.ctl.write_table_entry(self.ctl.default_entry(ROUTES, DROP, {}))

    def tearDown(self) -> None:
        self.ctl.shutdown()
        BaseTest.tearDown(self)

    def route(self, prefix: str, prefix_len: int, next_hop_mac: str, port: int) -> None:
        self.ctl.write_table_entry(self.ctl.lpm_entry(ROUTES, DST, prefix, prefix_len, FORWARD,
                                                      {"next_hop_mac": next_hop_mac, "port": port}))

    def send_and_expect(self, in_port: int, ip_dst: str, out_port: int, next_hop_mac: str) -> None:
        pkt = tu.simple_tcp_packet(eth_src=HOST_MAC, eth_dst=SWITCH_MAC, ip_dst=ip_dst, ip_ttl=64)
        exp = tu.simple_tcp_packet(eth_src=SWITCH_MAC, eth_dst=next_hop_mac, ip_dst=ip_dst,
                                   ip_ttl=63)
        tu.send_packet(self, in_port, pkt)
        tu.verify_packets(self, exp, [out_port])


class NoRouteDrops(RoutesTest):
    """Without a route the default action drops the packet."""

    def runTest(self) -> None:
        pkt = tu.simple_tcp_packet(eth_src=HOST_MAC, eth_dst=SWITCH_MAC, ip_dst="10.0.1.1")
        tu.send_packet(self, 1, pkt)
        tu.verify_no_other_packets(self)


class OneRouteForwards(RoutesTest):
    """A /32 route: new MACs, TTL 64 → 63 (checksum updated), out of the route's port."""

    def runTest(self) -> None:
        self.route("10.0.1.1", 32, "08:00:00:00:02:22", 2)
        self.send_and_expect(1, "10.0.1.1", 2, "08:00:00:00:02:22")
        assert len(self.ctl.read_table_entries(ROUTES)) == 1


class LongestPrefixWins(RoutesTest):
    """Of 10.0.2.0/24 (port 2) and 10.0.2.128/25 (port 3), the longer prefix decides."""

    def runTest(self) -> None:
        self.route("10.0.2.0", 24, "08:00:00:00:02:00", 2)
        self.route("10.0.2.128", 25, "08:00:00:00:03:00", 3)
        self.send_and_expect(0, "10.0.2.200", 3, "08:00:00:00:03:00")
        self.send_and_expect(0, "10.0.2.5", 2, "08:00:00:00:02:00")
