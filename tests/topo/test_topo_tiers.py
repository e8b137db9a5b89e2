"""topo: pods, cores and dual-port NICs (issue 29, item 1).

* the files of two-tier one-port specs are pinned byte for byte (sha256 taken before the
  third tier existed), so nothing that reads ``build/topology.json`` sees a change;
* a bad three-tier or dual-port spec names the field and the reason;
* the address plan of every spec is unique and routable;
* every switch's routes (``topo.routes``) reach every NIC, and each ECMP group holds
  exactly the next hops of all shortest paths, computed here independently from the
  port records (breadth-first search towards the NIC; servers are not transit nodes);
* two-tier routes are the ones ``controller.fabric.plan`` programs;
* the counts of the full-size cluster agree with ``sim/clusters/cluster512k.yaml``.
"""
from __future__ import annotations

import hashlib
import ipaddress
from collections import deque
from pathlib import Path

import pytest

from controller.fabric.entries import T_GROUPS, T_MEMBERS, T_ROUTES
from controller.fabric.plan import plan_fabric
from sim.cluster.spec import load_cluster
from topo.__main__ import main
from topo.model import Fabric, build_fabric, load_fabric, load_fabric_text
from topo.routes import fabric_routes, lookup
from topo.spec import FabricSpec, SpecError, load_spec, spec_from_dict

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "topo" / "specs"

#: sha256 of ``to_json() + "\n"`` (the file ``python -m topo build`` writes), measured on
#: the commit before pods, cores and dual-port NICs (d36a836).
PINNED = {
    "default.yaml": ("c3888571b4e9343d53ad1b1d1d6fdf8309c579085e62011d4ecb17ab20b346d3", None),
    "l2u2": ("4c7973a8818b22a530a0b32b63a8e864e692c6afc84c635a2cc6c7990e66ef77",
             {"blocks": 3, "servers_per_block": 5, "rails": 2, "spines": 3, "leaves_per_rail": 2,
              "uplinks_per_spine": 2, "oversubscription": 2.0}),
    "override": ("d566769f2b2421cea77072c3b56542dbebb2e1929e7e4e9a111ad5352be751b9",
                 {"switches": {"s1": {"grpc_addr": "10.0.0.5:9559", "device_id": 77, "ecmp_seed": 5,
                                      "hash_algorithm": "crc16"}}, "ecmp_seed": 3}),
}

#: Small specs that between them use every feature (one- and two-port NICs, one and
#: several leaf sets per rail, parallel links at both tiers, mixed speeds).
TIER_SPECS = {
    "pod2-dualport.yaml": None,
    "3pod-l4-u2": {"pods": 3, "blocks": 2, "servers_per_block": 3, "rails": 2, "ports_per_nic": 2,
                   "leaves_per_rail": 4, "spines": 2, "uplinks_per_spine": 2, "cores": 4,
                   "link_gbps": 100, "core_link_gbps": 200},
    "2pod-1port": {"pods": 2, "blocks": 2, "servers_per_block": 2, "rails": 2, "spines": 2, "cores": 2},
    "1pod-dualport": {"ports_per_nic": 2, "leaves_per_rail": 2},
    "default": {},
    "l2u2": PINNED["l2u2"][1],
}


def _spec(name: str, data: object) -> FabricSpec:
    return load_spec(SPECS / name) if data is None else spec_from_dict(data)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_two_tier_files_unchanged(name: str, tmp_path: Path) -> None:
    digest, data = PINNED[name]
    fab = build_fabric(_spec(name, data))
    assert hashlib.sha256((fab.to_json() + "\n").encode()).hexdigest() == digest
    assert fab.to_dict()["version"] == 1
    if data is None:    # and the command line writes the same bytes
        assert main(["build", "--spec", str(SPECS / name), "--out", str(tmp_path / "t.json")]) == 0
        assert hashlib.sha256((tmp_path / "t.json").read_bytes()).hexdigest() == digest


BAD = [
    ({"ports_per_nic": 3}, "ports_per_nic", "must be 1 or 2"),
    ({"ports_per_nic": 2}, "leaves_per_rail",
     "with 1 the second port of every NIC would land on the same leaf as the first"),
    ({"ports_per_nic": 2, "leaves_per_rail": 3, "servers_per_block": 4}, "leaves_per_rail",
     "the NICs of the last leaf would land on the same leaf as the first"),
    ({"ports_per_nic": 2, "leaves_per_rail": 6, "servers_per_block": 2}, "leaves_per_rail",
     "3 leaf pairs per rail (6 leaves) but only 2 servers per block"),
    ({"pods": 2}, "cores", "2 pods need a core tier"),
    ({"cores": 2}, "cores", "core switches join pods, and this fabric has 1 pod"),
    ({"pods": 2, "cores": 3}, "cores", "cores must be a multiple of spines (2), got 3"),
    ({"pods": 2, "cores": 2, "core_link_gbps": 300}, "core_link_gbps",
     "spine_core_uplinks x core_link_gbps = 4 downlinks (4 leaves x 1 uplinks_per_spine) x 100 Gb/s "
     "= 400 Gb/s; with 300 Gb/s core links that is 1.333 links, not a whole number"),
    ({"pods": 2, "cores": 2, "core_link_gbps": 800}, "core_link_gbps", "that is 0.5 links"),
    ({"pods": 2, "cores": 6}, "cores", "4 core links of 100 Gb/s per spine, spread evenly over the 3 "
                                       "cores of its plane (cores / spines = 6 / 2): 4 is not a multiple of 3"),
    ({"pods": 2, "cores": 2, "spine_ports": 6}, "spine_ports",
     "a spine needs 8 ports (4 downlinks + 4 core uplinks, equal bandwidth)"),
    ({"pods": 3, "cores": 2, "core_ports": 8}, "core_ports", "a core needs 12 ports (3 pods x 4 links"),
    ({"pods": 129, "cores": 2, "core_ports": 1024}, "pods", "129 pods x 2 rails do not fit the address plan"),
    ({"pods": 2, "cores": 2, "core_hash": "xor"}, "core_hash", "must be one of crc16, crc32"),
    ({"core_link_gbps": 100}, "core_link_gbps", "no core tier"),
    ({"pods": 0}, "pods", "must be at least 1"),
]


@pytest.mark.parametrize("data,field,why", BAD, ids=[f"{f}-{i}" for i, (_, f, _) in enumerate(BAD)])
def test_bad_tier_spec_names_field(data: dict, field: str, why: str, tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        spec_from_dict(data, "fab.yaml")
    assert info.value.field == field and info.value.source == "fab.yaml"
    assert why in info.value.reason, info.value.reason
    assert str(info.value).startswith(f"fab.yaml: {field}: ")


def test_cli_refuses_second_port_on_same_leaf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("ports_per_nic: 2\nleaves_per_rail: 1\n")
    assert main(["build", "--spec", str(spec), "--out", str(tmp_path / "t.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {spec}: leaves_per_rail: ") and "same leaf" in err
    assert not (tmp_path / "t.json").exists()


def test_pod2_dualport_shape(tmp_path: Path) -> None:
    spec = load_spec(SPECS / "pod2-dualport.yaml")
    fab = build_fabric(spec)
    assert (len(fab.leaves), len(fab.spines), len(fab.cores), len(fab.hosts)) == (8, 4, 4, 4)
    assert sum(1 for _ in fab.links()) == 48 and spec.num_switches == 16
    assert fab.oversubscription() == 1.0 and fab.core_oversubscription() == 1.0
    assert [c.name for c in fab.cores] == ["c0.0", "c0.1", "c1.0", "c1.1"]
    nic = fab.host("p1.b0s1").nics[1]
    assert (nic.ip, nic.gateway_ip, nic.mac) == ("10.0.3.2", "10.0.3.254", "06:00:00:00:03:02")
    assert [(p.port, p.leaf, p.leaf_port, p.intf) for p in nic.ports] == [
        (0, "p1.b0r1l0", 2, "p1.b0s1-eth1"), (1, "p1.b0r1l1", 2, "p1.b0s1-eth1p1")]
    assert (nic.leaf, nic.leaf_port, nic.intf) == ("p1.b0r1l0", 2, "p1.b0s1-eth1")
    # spine k of each pod: 4 core links, 2 to each core of plane k; cores see both pods
    s1 = fab.switch("p1.s1")
    assert [(p.peer_node, p.peer_port) for p in s1.ports_of_kind("uplink")] == [
        ("c1.0", 3), ("c1.0", 4), ("c1.1", 3), ("c1.1", 4)]
    assert [p.peer_node for p in fab.switch("c1.1").ports_of_kind("downlink")] == ["s1", "s1", "p1.s1", "p1.s1"]
    # the file round-trips, graph included, and says version 2
    path = fab.save(tmp_path / "t.json")
    again = load_fabric(path)
    assert again == fab and again.to_json() == fab.to_json() and fab.to_dict()["version"] == 2
    assert sorted(again.graph.edges(data="nic_port"))[:1] and again.graph.number_of_edges() == 48
    # command line: the same file
    assert main(["build", "--spec", str(SPECS / "pod2-dualport.yaml"), "--out", str(tmp_path / "c.json")]) == 0
    assert (tmp_path / "c.json").read_text() == path.read_text()


@pytest.mark.parametrize("name", sorted(TIER_SPECS))
def test_address_plan_unique_and_consistent(name: str) -> None:
    spec = _spec(name, TIER_SPECS[name])
    fab = build_fabric(spec)
    assert load_fabric_text(fab.to_json()) == fab
    ips = [n.ip for h in fab.hosts for n in h.nics]
    macs = [n.mac for h in fab.hosts for n in h.nics] + [p.mac for s in fab.switches for p in s.ports.values()] \
        + [s.router_mac for s in fab.switches]
    assert len(ips) == len(set(ips)) == spec.num_gpus
    assert len(macs) == len(set(macs))
    for attr in ("name", "device_id", "grpc_addr"):
        values = [getattr(s, attr) for s in fab.switches]
        assert len(values) == len(set(values)) == spec.num_switches
    intfs = [p.intf for h in fab.hosts for n in h.nics for p in n.ports]
    assert len(intfs) == len(set(intfs)) == spec.num_gpus * spec.ports_per_nic
    assert all(len(i) <= 15 for i in intfs)                      # Linux IFNAMSIZ - 1
    seen_ports = set()
    for h in fab.hosts:
        for nic in h.nics:
            net = ipaddress.IPv4Network(f"{nic.ip}/{nic.prefix_len}", strict=False)
            assert ipaddress.IPv4Address(nic.gateway_ip) in net
            assert nic.ip.split(".")[2] == str(h.pod * spec.rails + nic.rail)
            assert len(nic.ports) == spec.ports_per_nic
            assert len(set(nic.leaves)) == spec.ports_per_nic      # two ports, two leaves
            for port in nic.ports:
                leaf = fab.switch(port.leaf)
                assert (leaf.pod, leaf.block, leaf.rail) == (h.pod, h.block, nic.rail)
                assert leaf.subnet == str(net) and leaf.gateway_ip == nic.gateway_ip
                assert leaf.ports[port.leaf_port].peer_node == h.name
                seen_ports.add((port.leaf, port.leaf_port))
    # every host port of every leaf is some NIC's port, once
    assert seen_ports == {(s.name, p) for s in fab.leaves for p, i in s.ports.items() if i.kind == "host"}
    # both ends of every fabric link agree
    for link in fab.links():
        if link.kind == "fabric":
            assert fab.switch(link.b).ports[link.b_port].peer_node == link.a


def _nic_distances(fab: Fabric, leaves: tuple[str, ...]) -> dict[str, int]:
    """Hops from every switch to a NIC homed on ``leaves`` (BFS over switches only)."""
    by_name = {s.name: s for s in fab.switches}
    dist = {leaf: 1 for leaf in leaves}
    queue = deque(leaves)
    while queue:
        name = queue.popleft()
        for info in by_name[name].ports.values():
            peer = info.peer_node
            if peer in by_name and peer not in dist:
                dist[peer] = dist[name] + 1
                queue.append(peer)
    return dist


@pytest.mark.parametrize("name", sorted(TIER_SPECS))
def test_ecmp_groups_cover_every_equal_cost_next_hop(name: str) -> None:
    fab = build_fabric(_spec(name, TIER_SPECS[name]))
    table = fabric_routes(fab)
    checked = 0
    for host in fab.hosts:
        for nic in host.nics:
            dist = _nic_distances(fab, nic.leaves)
            nic_ports = {(p.leaf, p.leaf_port) for p in nic.ports}
            for sw in fab.switches:
                route = lookup(table[sw.name], nic.ip)
                assert route is not None, f"{sw.name} has no route to {nic.ip}"
                if sw.name in nic.leaves:
                    want = {p for p in sw.ports if (sw.name, p) in nic_ports}
                else:
                    want = {p for p, i in sw.ports.items()
                            if i.peer_node in dist and dist[i.peer_node] == dist[sw.name] - 1}
                assert set(route.ports) == want, (sw.name, nic.ip, route)
                assert list(route.ports) == sorted(route.ports)
                checked += 1
    assert checked == len(fab.switches) * fab.spec.num_gpus
    # three tiers: a cross-pod path has 5 switch hops and every leaf is 5 away from some NIC
    if fab.cores:
        nic = fab.hosts[-1].nics[-1]
        assert _nic_distances(fab, nic.leaves)[fab.leaves[0].name] == 5


def test_every_path_reaches_the_nic_in_shortest_hops() -> None:
    """Follow every ECMP choice from every leaf to every NIC of the dual-port two-pod spec:
    no loop, no dead end, and every path as short as the shortest."""
    fab = build_fabric(load_spec(SPECS / "pod2-dualport.yaml"))
    table = fabric_routes(fab)
    for nic in (n for h in fab.hosts for n in h.nics):
        dist = _nic_distances(fab, nic.leaves)
        for src in fab.leaves:
            frontier, hops = {src.name}, 0
            while frontier:
                hops += 1
                nxt = set()
                for name in frontier:
                    sw = fab.switch(name)
                    for p in lookup(table[name], nic.ip).ports:
                        peer = sw.ports[p].peer_node
                        if sw.ports[p].kind != "host":
                            nxt.add(peer)
                        else:       # delivered: on one of the NIC's leaves, to the NIC's server
                            assert name in nic.leaves and hops == dist[src.name]
                            assert sw.ports[p].peer_port == nic.rail
                frontier = nxt
                assert hops <= dist[src.name]
            assert hops == dist[src.name]


def _plan_routes(fab: Fabric) -> dict[str, dict[str, tuple[int, ...]]]:
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    for name, plan in plan_fabric(fab).items():
        groups = {e.match["meta.ecmp_group_id"]: e.params for e in plan.of(T_GROUPS)}
        members = {e.match["meta.ecmp_member"]: e.params["nexthop_id"] for e in plan.of(T_MEMBERS)}
        routes = {}
        for e in plan.of(T_ROUTES):
            if "group_id" in e.params:
                g = groups[e.params["group_id"]]
                ports = tuple(members[g["base"] + i] for i in range(g["size"]))
            elif e.action.endswith(".drop"):            # a leaf's own subnet: the plan's, not topo's
                continue
            else:
                ports = (e.params["nexthop_id"],)
            routes[e.match["hdr.ipv4.dst_addr"]] = ports
        out[name] = routes
    return out


@pytest.mark.parametrize("name", ["default", "l2u2"])
def test_two_tier_routes_are_the_controllers(name: str) -> None:
    fab = build_fabric(_spec(name, TIER_SPECS[name]))
    table = fabric_routes(fab)
    assert _plan_routes(fab) == {n: {r.prefix: r.ports for r in routes} for n, routes in table.items()}


def test_cluster512k_counts_agree_with_the_simulator() -> None:
    """The full-size cluster as topo fields (validated only: 524,288 GPUs are not built
    here) gives the simulator's core tier: 512 core links per spine, 64 per core."""
    sim = load_cluster(REPO / "sim" / "clusters" / "cluster512k.yaml")
    pod = load_spec(SPECS / "pod64k.yaml")
    spec = spec_from_dict({**load_spec(SPECS / "pod64k.yaml").to_dict(), "pods": sim.pods,
                           "cores": sim.cores, "spine_ports": sim.spine_ports, "core_ports": sim.core_ports})
    assert spec.num_gpus == sim.gpus == 524288 and spec.num_leaves == 8 * pod.num_leaves
    assert (spec.spine_core_uplinks, spec.links_per_core, spec.cores_per_plane) == (
        sim.spine_core_uplinks, sim.links_per_core, sim.cores_per_plane) == (512, 64, 8)
    assert spec.num_switches == 8 * (512 + 128) + 1024


def test_cli_flags_build_three_tiers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.json"
    assert main(["build", "--pods", "2", "--cores", "4", "--ports-per-nic", "2", "--leaves-per-rail", "2",
                 "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(
        "fabric: 2 pods x 2 blocks x 2 servers x 2 rails = 16 GPUs, 2 ports per NIC; 16 leaves, 4 spines, "
        "4 cores, ")
    fab = load_fabric(out)
    assert fab.spec.pods == 2 and fab.spec.spine_core_uplinks == 8 and fab.spec.links_per_core == 4
    assert main(["build", "--pods", "2", "--cores", "4", "--core-link-gbps", "300", "--out", str(out)]) == 2
    assert "core_link_gbps: equal bandwidth" in capsys.readouterr().err
