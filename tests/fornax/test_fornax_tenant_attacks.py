"""What a tenant can try through the data plane, with no certificate at all: a VM of one
VPC riding another VPC's session (the two VPCs use the same addresses), a VM smuggling
a VXLAN frame of another VPC inside its own traffic, and a VM flooding new connections
to starve its neighbours' connection setup. The manager against the in-process SmartNIC
(real P4Runtime, no root). Spoofed sources, a full session table and punt/digest storms
are in test_fornax_manager.py (~6 s)."""
from __future__ import annotations

from typing import Any, Iterator

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.layers.vxlan import VXLAN

from p4src.smartnic import model as M
from test_fornax_manager import A2_MAC, A3_MAC, GW_A, PEER, UPLINK_A, Rig, a1_tcp, from_b1, until


@pytest.fixture()
def rig(fornax_build: tuple[Any, Any]) -> Iterator[Rig]:
    r = Rig(fornax_build, idle_timeout_s=30.0, closed_linger_s=0.05)
    try:
        yield r
    finally:
        r.close()


def _vnis(frame: bytes) -> list[int]:
    """Every VXLAN header's VNI in ``frame``, outermost first."""
    out, layer = [], Ether(frame)
    while layer.haslayer(VXLAN):
        layer = layer[VXLAN]
        out.append(layer.vni)
        layer = layer.payload
    return out


def test_a_vm_cannot_ride_another_vpcs_session_with_the_same_addresses(rig: Rig) -> None:
    """a1 (blue) and a2 (red) both are 10.0.0.1: a2 sends a1's connection's exact 5-tuple
    mid-stream. The NIC keys sessions by the VNI of the *port* the frame came in on, so
    a2's frame never hits blue's session nor leaves in blue's VNI."""
    rig.nic.port(2).inject(a1_tcp("S"))                    # a1 -> b1:80 in blue
    assert _vnis(rig.nic.take(1)) == [100]
    blue = M.canonical_key(100, 6, M.ip("10.0.0.1"), 40000, M.ip("10.0.0.2"), 80)[0]
    before = rig.mgr.session_detail(blue)
    rig.nic.port(3).inject(a1_tcp("A", mac=A2_MAC, payload=b"steal"))
    out = rig.nic.take(1)
    assert out is not None and _vnis(out) == [200]         # red's own connection, red's VNI
    assert rig.nic.take(1, 0.3) is None and rig.nic.take(2, 0.1) is None
    after = rig.mgr.session_detail(blue)
    assert (after["packets"], after["bytes"]) == (before["packets"], before["bytes"])
    assert after["check_ok"] is True


def test_a_vm_cannot_smuggle_a_vxlan_frame_into_another_vpc(rig: Rig) -> None:
    """a1 (blue) sends a VXLAN packet of VNI 200 to b2's address: the NIC treats it as
    a1's own UDP traffic — encapsulated once more in blue's VNI 100, the inner header
    left as payload — and never decapsulates what a VM sent."""
    smuggled = Ether(src="02:00:00:00:02:02", dst=A2_MAC) / IP(src="10.0.0.2", dst="10.0.0.1") \
        / TCP(sport=80, dport=40000, flags="A") / b"into-red"
    frame = bytes(Ether(src="02:00:00:00:01:01", dst=GW_A) / IP(src="10.0.0.1", dst="10.0.0.2")
                  / UDP(sport=50000, dport=4789) / VXLAN(vni=200) / smuggled)
    rig.nic.port(2).inject(frame)
    out = rig.nic.take(1)
    assert out is not None and _vnis(out)[0] == 100        # blue's tunnel outside
    assert rig.nic.take(3, 0.3) is None                    # nothing reached a2 (red)
    # the same smuggling from the fabric side: VNI 100 carrying a VNI-200 frame for a2
    inner = Ether(src="02:00:00:00:02:01", dst=GW_A) / IP(src="10.0.0.2", dst="10.0.0.1") \
        / UDP(sport=50000, dport=4789) / VXLAN(vni=200) / smuggled
    rig.nic.port(1).inject(bytes(Ether(src=PEER, dst=UPLINK_A)
                                 / IP(src="192.168.0.2", dst="192.168.0.1")
                                 / UDP(sport=50001, dport=4789) / VXLAN(vni=100) / inner))
    assert rig.nic.take(3, 0.5) is None                    # never to red's VM
    got = rig.nic.take(2, 0.3)                             # a1's rules decide (UDP 4789: denied)
    assert got is None or IP(bytes(Ether(got).payload)).dst == "10.0.0.1"


def test_one_vms_connection_flood_does_not_starve_its_neighbours(fornax_build: Any) -> None:
    """a3 floods new connections far past the punt rate; a1 opens one connection in the
    middle of the flood: a1's first packet is still taken (the punt budget is per VM port
    and VPC, so a flood spends its own share) and the flood's excess is counted."""
    r = Rig(fornax_build, punt_rate_pps=1.0, punt_burst=5, punt_share_pps=1.0,
            punt_share_burst=2)
    try:
        for sport in range(40):
            r.nic.port(4).inject(a1_tcp("S", src="10.0.0.3", mac=A3_MAC, dport=5432,
                                        dst="10.0.0.2", sport=20000 + sport))
        limited = lambda: r.mgr.counters.get("punts_rate_limited", 0)  # noqa: E731
        assert until(lambda: limited() >= 30, 10), r.mgr.counters
        r.nic.port(2).inject(a1_tcp("S", sport=41000))     # the neighbour's new connection
        out = r.nic.take(1, 5.0)
        while out is not None and Ether(out)[VXLAN].payload[TCP].sport != 41000:
            out = r.nic.take(1, 5.0)
        assert out is not None, f"a1's SYN was starved by a3's flood: {r.mgr.counters}"
        key = M.canonical_key(100, 6, M.ip("10.0.0.1"), 41000, M.ip("10.0.0.2"), 80)[0]
        assert until(lambda: key in set(r.mgr.store.keys()))
        assert r.mgr.counters["punts_share_limited"] >= 30     # the flood: its share only
    finally:
        r.close()


def test_a_flood_from_the_fabric_is_limited_per_vpc(fornax_build: Any) -> None:
    """The uplink carries every VPC: a flood of blue connections from the fabric does not
    starve a red one arriving the same way."""
    r = Rig(fornax_build, punt_rate_pps=1.0, punt_burst=5, punt_share_pps=1.0,
            punt_share_burst=2)
    try:
        for sport in range(40):
            r.nic.port(1).inject(from_b1("S", sport=30000 + sport, dport=80))
        limited = lambda: r.mgr.counters.get("punts_rate_limited", 0)  # noqa: E731
        assert until(lambda: limited() >= 30, 10), r.mgr.counters
        r.nic.port(1).inject(from_b1("S", sport=31000, dport=80, vni=200))   # b2 -> a2 in red
        got = r.nic.take(3, 5.0)
        assert got is not None and Ether(got)[TCP].sport == 31000, r.mgr.counters
    finally:
        r.close()
