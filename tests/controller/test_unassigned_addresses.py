"""No address of the fabric's subnets loops between its switches: a packet to an address no
NIC holds (a free address of a leaf's subnet, the gateway's own) is dropped by the leaf
(``controller.fabric.plan``, the leaves' subnet drop routes).

Before, a leaf routed only its NICs' ``/32``s and sent the rest of ``10.0.0.0/8`` up, and
the spine sent the subnet back down: live (sec-red-s47, p4sim testbed), 100 datagrams from
b1s1 to 10.1.0.77 made 3,200 frames on its leaf's uplink and 3,282 on the spine's port back
(TTL 64: 32 round trips each), 6,488 frames where a packet to a real neighbour made 3.

The walk follows the plan's routes by longest prefix from the sender's leaf, every ECMP
member, until a host port, a drop or a switch seen before (a loop); every shipped spec but
the 64K-GPU one (too large for a unit test; its routes come from the same code).
"""
from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from controller.fabric.entries import T_ROUTES
from controller.fabric.plan import SwitchPlan, plan_fabric
from topo.model import build_fabric
from topo.spec import load_spec

SPECS = Path(__file__).resolve().parents[2] / "topo" / "specs"


def _lpm(plan: SwitchPlan, ip: ipaddress.IPv4Address) -> Any:
    best = None
    for e in plan.entries:
        if e.table != T_ROUTES:
            continue
        net = ipaddress.IPv4Network(e.match["hdr.ipv4.dst_addr"])
        if ip in net and (best is None or net.prefixlen > best[0].prefixlen):
            best = (net, e)
    return None if best is None else best[1]


def walk(fabric: Any, plans: dict[str, SwitchPlan], start: str, ip: str) -> tuple[str, list[str]]:
    """('host' | 'drop' | 'loop', the switches of the longest path) from switch ``start``."""
    by_name = {s.name: s for s in fabric.switches}
    addr = ipaddress.IPv4Address(ip)
    worst: tuple[str, list[str]] = ("drop", [start])

    def go(sw: str, path: list[str]) -> None:
        nonlocal worst
        e = _lpm(plans[sw], addr)
        if e is None or e.action.endswith(".drop"):
            return
        if "group_id" in e.params:
            ports = plans[sw].groups[e.params["group_id"]].ports
        else:
            ports = (e.params["nexthop_id"],)
        for port in ports:
            peer = by_name[sw].ports[port].peer_node
            if peer not in by_name:
                if worst[0] == "drop":
                    worst = ("host", path)
                continue
            if peer in path:
                worst = ("loop", path + [peer])
                return
            go(peer, path + [peer])

    go(start, [start])
    return worst


def _free_addresses(fabric: Any) -> list[tuple[str, str]]:
    """(leaf, address) for each leaf's subnet: one free address and the gateway."""
    taken = {n.ip for h in fabric.hosts for n in h.nics}
    out = []
    for h in fabric.hosts:
        for n in h.nics:
            net = ipaddress.IPv4Network(f"{n.ip}/{n.prefix_len}", strict=False)
            free = next(str(a) for a in net.hosts() if str(a) not in taken and str(a) != n.gateway_ip)
            out += [(n.leaf, free), (n.leaf, n.gateway_ip)]
    return sorted(set(out))


@pytest.mark.parametrize("spec", [None, "dualport.yaml", "pod2-dualport.yaml"],
                         ids=["default", "dualport", "pod2-dualport"])
def test_no_address_of_a_subnet_loops(spec: Any) -> None:
    fabric = build_fabric(None if spec is None else load_spec(SPECS / spec))
    plans = plan_fabric(fabric)
    loops = [(leaf, ip, walk(fabric, plans, leaf, ip)[1]) for leaf, ip in _free_addresses(fabric)
             if walk(fabric, plans, leaf, ip)[0] == "loop"]
    assert not loops, loops[:3]
    for h in fabric.hosts:           # every NIC is still reached from every leaf
        for n in h.nics:
            for s in fabric.switches:
                if s.role == "leaf":
                    assert walk(fabric, plans, s.name, n.ip)[0] == "host", (s.name, n.ip)
