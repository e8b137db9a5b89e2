"""Shared set-up of the fabric PTF tests: the P4Runtime connection (``controller.p4rt``),
a fresh pipeline per test, the leaf and spine configurations the tests use, and packet
helpers. Not a test module (it holds no test classes).

Test ports (PTF port N = switch port N, 1..8). Leaf "block 0, rail 0" (switch id 1):
ports 1, 2 are downlinks to hosts 10.0.0.1 and 10.0.0.2; ports 5..8 are uplinks to
spines 0..3 (ECMP group 1, members 0..3); 10.0.0.0/8 goes to the group. Spine (switch id
100): port 1 → leaf b0r0 (10.0.0.0/24), ports 2, 3 → leaf b1r0 (10.1.0.0/24, ECMP group
2 over two links). MACs: switch port p ``02:00:00:<sw>:00:<p>``; host on port p
``02:00:00:aa:00:<p>``; peer switch on port p ``02:00:00:bb:00:<p>``.

Example (inside a test)::

    self.sw.insert(self.sw.table_entry(ROUTES, {"hdr.ipv4.dst_addr": "10.0.0.1/32"},
                                       SET_NEXTHOP, {"nexthop_id": 1}))
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from ptf.mask import Mask
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from controller.p4rt import SwitchConnection, clone_session
from controller.p4rt.tls import ClientTls

CPU_PORT = 255
HOST_PORTS = (1, 2)
UPLINKS = (5, 6, 7, 8)
ROUTES = "FabricIngress.forwarding.routes"
NEXTHOPS = "FabricIngress.forwarding.nexthops"
SET_NEXTHOP = "FabricIngress.forwarding.set_nexthop"
SET_GROUP = "FabricIngress.forwarding.set_ecmp_group"
ROUTE_TO = "FabricIngress.forwarding.route_to"
GROUPS = "FabricIngress.ecmp.groups"
MEMBERS = "FabricIngress.ecmp.members"
SWITCH_CONFIG = "FabricIngress.switch_info.config"
LEAF_ID, SPINE_ID = 1, 100
LEAF_SEED = 0x1234ABCD
ROLE_LEAF, ROLE_SPINE = 0, 1
PFC_SESSION_BASE = 100
CPU_SESSION = 255


def port_mac(switch_id: int, port: int) -> str:
    return f"02:00:00:{switch_id & 0xff:02x}:00:{port:02x}"


def host_mac(port: int) -> str:
    return f"02:00:00:aa:00:{port:02x}"


def peer_mac(port: int) -> str:
    return f"02:00:00:bb:00:{port:02x}"


def host_ip(port: int) -> str:
    return f"10.0.0.{port}"


def param(name: str, default: Optional[str] = None) -> str:
    """A ``--test-params`` value; raises if it is missing and has no default."""
    value = tu.test_param_get(name, default)
    if value is None:
        raise RuntimeError(f"test parameter {name} missing (run through tests/ptf/run_ptf.py)")
    return str(value)


def client_tls() -> Optional[ClientTls]:
    """The P4Runtime client's TLS credentials from the test params (``tls_ca``,
    ``tls_cert``, ``tls_key``: the controller's certificate; ``tls_server_name``: the name
    the switch's certificate must carry), None when the run is in plaintext (``run_ptf.py
    --insecure``)."""
    ca = param("tls_ca", "")
    if not ca:
        return None
    return ClientTls(Path(ca), Path(param("tls_cert")), Path(param("tls_key"))).for_server(
        param("tls_server_name"))


def udp_packet(src: str, dst: str, sport: int = 49152, dport: int = 4791, ttl: int = 64,
               dscp: int = 0, ecn: int = 0, eth_dst: str = "02:00:00:01:00:01",
               eth_src: str = "02:00:00:aa:00:01", length: int = 100) -> Ether:
    """A UDP/IPv4 frame (RoCEv2 port by default) with a correct checksum."""
    return tu.simple_udp_packet(pktlen=length, eth_dst=eth_dst, eth_src=eth_src, ip_src=src,
                                ip_dst=dst, ip_ttl=ttl, ip_tos=(dscp << 2) | ecn,
                                udp_sport=sport, udp_dport=dport)


def routed(pkt: Ether, src_mac: str, dst_mac: str, ecn: Optional[int] = None) -> Ether:
    """``pkt`` as the switch sends it: MACs rewritten, TTL - 1, checksum recomputed."""
    out = pkt.copy()
    out[Ether].src, out[Ether].dst = src_mac, dst_mac
    out[IP].ttl -= 1
    if ecn is not None:
        out[IP].tos = (out[IP].tos & 0xFC) | ecn
    del out[IP].chksum
    return Ether(bytes(out))


def mac_masked(pkt: Ether) -> Mask:
    """A Mask that ignores the Ethernet addresses (for packets that may leave on any uplink)."""
    m = Mask(pkt)
    m.set_do_not_care_packet(Ether, "dst")
    m.set_do_not_care_packet(Ether, "src")
    return m


class FabricTest(BaseTest):
    """Connects as primary, pushes the fabric pipeline (fresh state per test) and sets up
    the clone sessions of the PFC and CPU channels. ``self.sw`` is the connection."""

    role = ROLE_LEAF
    switch_id = LEAF_ID
    seed = LEAF_SEED

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        self.target = param("target", "p4sim")
        self.control_addr = param("control_addr", "")
        self.thrift_port = param("thrift_port", "")
        self.sw = SwitchConnection(param("grpc_addr"), device_id=int(param("device_id", "0")),
                                   election_id=(0, 1), timeout_s=30, tls=client_tls())
        try:
            self.sw.push_pipeline(param("p4info"), param("config"))
            if self.target == "bmv2":
                # a fresh pipeline per test: BMv2 keeps its replication engine's replicas
                # across a push while PI forgets them (testbed.control.Bmv2ThriftControl.
                # reset_state), so clear them or every clone session accumulates copies
                self.control().reset_state()
            self.sw.insert(*[clone_session(PFC_SESSION_BASE + p, [p]) for p in range(1, 9)],
                           clone_session(CPU_SESSION, [CPU_PORT]))
            self.set_switch(self.switch_id, self.role, self.seed)
            self.port_macs()
        except BaseException:
            # unittest skips tearDown when setUp fails: close the stream here, or it stays
            # primary with election id 1 and every later test's arbitration is refused
            self.sw.close()
            raise

    def tearDown(self) -> None:
        self.sw.close()
        BaseTest.tearDown(self)

    # ----------------------------------------------------------------- configuration
    def control(self):  # type: ignore[no-untyped-def]
        """The switch's queue control outside P4Runtime (:mod:`testbed.control`): p4sim's
        control API, or BMv2's Thrift runtime (``simple_switch_CLI``). Test side only: the
        controller never uses it."""
        from testbed.control import open_control  # noqa: PLC0415
        return open_control(self.target, {"control_addr": self.control_addr,
                                          "thrift_port": self.thrift_port}, "switch")

    def set_switch(self, switch_id: int, role: int, seed: int) -> None:
        self.sw.modify(self.sw.table_entry(
            SWITCH_CONFIG, {}, "FabricIngress.switch_info.set_switch",
            {"switch_id": switch_id, "role": role, "ecmp_seed": seed}, is_default=True))

    def port_macs(self) -> None:
        """Every port's own MAC (the source of generated PAUSE frames)."""
        self.sw.insert(*[self.sw.table_entry("port_macs", {"egress_port": p}, "set_port_mac",
                                             {"mac": port_mac(self.switch_id, p)})
                         for p in range(1, 9)])

    def nexthop(self, nexthop_id: int, port: int, dst_mac: str) -> None:
        self.sw.insert(self.sw.table_entry(NEXTHOPS, {"meta.nexthop_id": nexthop_id}, ROUTE_TO,
                                           {"port": port, "dst_mac": dst_mac,
                                            "src_mac": port_mac(self.switch_id, port)}))

    def route(self, prefix: str, nexthop_id: Optional[int] = None,
              group_id: Optional[int] = None) -> None:
        if group_id is not None:
            act, params = SET_GROUP, {"group_id": group_id}
        else:
            act, params = SET_NEXTHOP, {"nexthop_id": nexthop_id}
        self.sw.insert(self.sw.table_entry(ROUTES, {"hdr.ipv4.dst_addr": prefix}, act, params))

    def ecmp_group(self, group_id: int, base: int, nexthop_ids: list[int]) -> None:
        self.sw.insert(self.sw.table_entry(GROUPS, {"meta.ecmp_group_id": group_id},
                                           "FabricIngress.ecmp.select_member",
                                           {"base": base, "size": len(nexthop_ids)}),
                       *[self.sw.table_entry(MEMBERS, {"meta.ecmp_member": base + i},
                                             "FabricIngress.ecmp.set_nexthop",
                                             {"nexthop_id": nh})
                         for i, nh in enumerate(nexthop_ids)])

    def leaf_config(self) -> None:
        """Host routes to ports 1, 2; everything else in 10/8 over ECMP group 1 (ports 5..8)."""
        for p in HOST_PORTS:
            self.nexthop(p, p, host_mac(p))
            self.route(f"{host_ip(p)}/32", nexthop_id=p)
        for p in UPLINKS:
            self.nexthop(p, p, peer_mac(p))
        self.ecmp_group(1, 0, list(UPLINKS))
        self.route("10.0.0.0/8", group_id=1)

    def read_counter(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of one counter cell."""
        c = self.sw.read_counter(name, index)[index]
        return c.packets, c.bytes

    def wait_counter(self, name: str, index: int, packets: int, timeout_s: float = 3.0
                     ) -> tuple[int, int]:
        """Poll a counter cell until it shows ``packets`` (or the timeout); its value."""
        deadline = time.monotonic() + timeout_s
        got = self.read_counter(name, index)
        while got[0] < packets and time.monotonic() < deadline:
            time.sleep(0.05)
            got = self.read_counter(name, index)
        return got
