"""The fabric plan of dual-port NICs (issue 29, item 2): each NIC port's leaf routes the
NIC's /32 to that port, every spine routes the NIC's subnet to an ECMP group over its links
to *both* leaves of the pair, and the published hash model names exactly those groups.
Pure data, no switch: well under a second.
"""
from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from controller.fabric.detours import fabric_hash_model, leaf_prefixes
from controller.fabric.entries import T_ARP, T_ROUTES
from controller.fabric.plan import plan_fabric
from controller.fabric.topology import nic_attachments, nic_leaf_sets
from p4src.hashmodel import FabricHashModel
from topo.model import build_fabric
from topo.spec import FabricSpec, load_spec

REPO_SPECS = Path(__file__).resolve().parents[2] / "topo" / "specs"

SPECS = {
    "dualport.yaml": load_spec(REPO_SPECS / "dualport.yaml"),
    "two-pairs": FabricSpec(blocks=2, servers_per_block=4, rails=2, ports_per_nic=2,
                            leaves_per_rail=4, spines=2, uplinks_per_spine=2),
}


def _routes(plan, name):
    out = {}
    for e in plan[name].of(T_ROUTES):
        out[e.match["hdr.ipv4.dst_addr"]] = (e.action.rsplit(".", 1)[-1], e.params)
    return out


def _lookup(routes, ip):
    best = None
    for prefix, action in routes.items():
        net = ipaddress.ip_network(prefix)
        if ipaddress.ip_address(ip) in net and (best is None or net.prefixlen > best[0]):
            best = (net.prefixlen, action)
    return best[1] if best else None


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_nic_port_is_routed_and_spines_spread_over_the_pair(name: str) -> None:
    fab = build_fabric(SPECS[name])
    plan = plan_fabric(fab)
    assert nic_leaf_sets(fab), "the spec has no dual-port NIC"
    for host in fab.hosts:
        for nic in host.nics:
            ports = nic_attachments(nic)
            assert len(ports) == 2 and ports[0][0] != ports[1][0]
            for leaf, leaf_port in ports:            # the leaf delivers on the NIC's port
                assert _lookup(_routes(plan, leaf), nic.ip) == (
                    "set_nexthop", {"nexthop_id": leaf_port})
            for sw in (s for s in fab.switches if s.role == "spine"):
                action, params = _lookup(_routes(plan, sw.name), nic.ip)
                if action == "set_nexthop":        # one link only: must lead to a NIC leaf
                    assert sw.ports[params["nexthop_id"]].peer_node in {l for l, _ in ports}
                    continue
                group = plan[sw.name].groups[params["group_id"]]
                peers = {sw.ports[p].peer_node for p in group.ports}
                assert peers == {l for l, _ in ports}, (sw.name, nic.ip, group)
                # every link of the spine to either leaf is a member
                assert set(group.ports) == {p for p, i in sw.ports.items()
                                            if i.peer_node in peers}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_published_hash_model_is_the_programmed_one(name: str) -> None:
    fab = build_fabric(SPECS[name])
    planned = FabricHashModel({n: p.hash_model() for n, p in plan_fabric(fab).items()})
    assert fabric_hash_model(fab) == planned


def test_both_leaves_of_a_pair_answer_for_the_nic() -> None:
    fab = build_fabric(SPECS["dualport.yaml"])
    prefixes = leaf_prefixes(fab)
    nic = fab.host("b0s0").nics[0]
    assert all(f"{nic.ip}/32" in prefixes[leaf] for leaf in nic.leaves)
    plan = plan_fabric(fab)
    for leaf in nic.leaves:      # both leaves answer the NIC's ARP for its gateway
        answered = {e.match["hdr.arp.target_proto_addr"] for e in plan[leaf].of(T_ARP)}
        assert nic.gateway_ip in answered
