"""controller.fabric.tiers: the hash model's path predictions over three tiers and two NIC
ports, for every source port of a sample of flows.

The outside reference is the simulator's cluster router (``sim.cluster.fabric.SimCluster
.route``: vectorised numpy, written for issue 25 from its own reading of the address
plan, seeds and group orders): for one-port NICs every one of the 65,536 source ports of
each sampled cross-pod flow must take the same leaf uplink, core uplink, core downlink,
spine downlink and delivery port. Dual-port NICs have no second implementation yet, so
their paths are checked for validity (every hop a next hop of the route, delivery to the
right NIC by one of its two leaves), against the published hash model, and against the
per-flow CRC (:meth:`TierModel.path`) on a random subset.
"""
from __future__ import annotations

import ipaddress
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from controller.fabric import plan_fabric
from controller.fabric.detours import fabric_hash_model
from controller.fabric.ecmp import member_name
from controller.fabric.entries import T_ROUTES
from controller.fabric.tiers import TierModel, tier_hash_model
from controller.gor.decisions import FlowKey
from controller.gor.tierpaths import tier_candidates, tier_sports
from p4sim.engine.program import compile_program
from p4sim.frontend.parser import parse_file
from p4sim.runtime.tables import ActionCall, Exact, Lpm
from p4sim.v1model.switch import V1ModelSwitch
from p4src.hashmodel import FabricHashModel, Flow, flow_hash, route_group
from sim.cluster.fabric import SimCluster
from sim.cluster.spec import cluster_from_dict
from topo.model import build_fabric, link_ports, pod_name
from topo.routes import fabric_routes, lookup
from topo.spec import load_spec, spec_from_dict

REPO = Path(__file__).resolve().parents[2]
ALL = np.arange(1 << 16)


def test_every_source_port_agrees_with_the_simulators_cluster_router() -> None:
    pod = {"blocks": 2, "servers_per_block": 2, "rails": 2, "spines": 2}
    fab = build_fabric(spec_from_dict({**pod, "pods": 2, "cores": 4, "core_hash": "crc16"}))  # the sim's
    sc = SimCluster.build(cluster_from_dict({"pod": pod, "pods": 2, "cores_per_plane": 2,
                                             "spine_core_uplinks": 4}))
    tiers = TierModel.of(fab)
    S, C, P, J, U = 2, 2, 2, 2, 4
    spine_up_ports = sc._spine_core_ports()
    core_ports = link_ports(P * J)
    L = sc.pod_links

    def sim_hop(col: int, link: int) -> tuple[str, int]:
        if col in (1, 4, 5):
            name, port = sc.pod.link_keys[link % L]
            return pod_name(link // L, name), port
        if col == 2:
            ps, m = divmod(link - sc.spine_up_base, U)
            return pod_name(ps // S, f"s{ps % S}"), spine_up_ports[m]
        kcq, i = divmod(link - sc.core_down_base, J)
        kc, q = divmod(kcq, P)
        k, c = divmod(kc, C)
        return f"c{k}.{c}", core_ports[q * J + i]

    hosts = fab.hosts                                       # 4 servers x 2 NICs per pod
    flows = [(0, 0, 1, 3), (1, 5, 0, 2), (0, 7, 1, 6)]      # (src pod, src nic, dst pod, dst nic)
    for sp, s, dp, d in flows:
        src = hosts[sp * 4 + s // 2].nics[s % 2]
        dst = hosts[dp * 4 + d // 2].nics[d % 2]
        assert (sc.address(sp, s), sc.address(dp, d)) == (src.ip, dst.ip)
        links = sc.route(np.full(len(ALL), sp), np.full(len(ALL), s), np.full(len(ALL), dp),
                         np.full(len(ALL), d), ALL)
        names: dict[tuple[int, int], tuple[str, int]] = {}
        for col in range(1, 6):
            for link in np.unique(links[:, col]).tolist():
                names[(col, link)] = sim_hop(col, link)
        ours = tiers.sport_paths(src, 0, dst.ip)
        mismatches = sum(1 for p, row in zip(ours, links.tolist())
                         if p.hops != tuple(names[(c, row[c])] for c in range(1, 6)))
        assert mismatches == 0, (src.ip, dst.ip, mismatches)
        # every spine core uplink is used, and all 8 of the cores' links into the
        # destination pod: the core hashes ports-first (next test)
        assert len({p.hops[1] for p in ours}) == S * U and len({p.hops[2] for p in ours}) == 8


def _default_order(tiers: TierModel) -> TierModel:
    """The same fabric with every group hashing the switch's default field list (as before
    ports-first groups): what the tiers reach when only the seeds and CRCs differ."""
    model = FabricHashModel({n: replace(m, groups={g: replace(gm, fields=None) for g, gm in m.groups.items()})
                             for n, m in tiers.model.switches.items()})
    return TierModel(tiers.fabric, tiers.routes, model)


@pytest.mark.parametrize("core_hash,before,after", [("crc16", 4, 8), ("crc32", 8, 8)])
def test_core_hash_polarisation(core_hash: str, before: int, after: int) -> None:
    """With crc16 on leaves and cores and one field order, a core's choice among its links
    to the destination pod is a fixed function of the leaf's choice (CRC is affine in the
    source port, and both take the low bits of the same linear map), so one src/dst pair
    reached only 1 of the J links of every core (4 of 8). Hashing the core's groups
    ports-first (another linear map) reaches all of them with either CRC."""
    pod = {"blocks": 2, "servers_per_block": 2, "rails": 2, "spines": 2}
    fab = build_fabric(spec_from_dict({**pod, "pods": 2, "cores": 4, "core_hash": core_hash}))
    tiers = TierModel.of(fab)
    src, dst = fab.hosts[0].nics[0], fab.hosts[-1].nics[1]
    assert len({p.hops[2] for p in _default_order(tiers).sport_paths(src, 0, dst.ip)}) == before
    assert len({p.hops[2] for p in tiers.sport_paths(src, 0, dst.ip)}) == after    # of 8


def test_dual_port_paths_reached_before_and_after_ports_first(dual: TierModel) -> None:
    """pod2-dualport.yaml, every NIC port of pod 0 to a NIC of pod 1 over the 16,384
    RoCE-range source ports: 2 spines x 4 core uplinks x 2 core links x 2 destination
    leaves = 32 paths. With one field order everywhere (spine and core both crc32, or the
    destination spine's crc32 the source spine's) a NIC port reached 8 and one destination
    leaf 4 of its 16; with the core (crc16) and the spines' down groups (crc32) hashing
    ports-first, every one of the 32, 16 per leaf, and each has a source port GOR solves."""
    fab = dual.fabric
    old = TierModel.of(build_fabric(replace(fab.spec, core_hash="crc32")))
    sports = range(49152, 1 << 16)
    for src_host, dst_host in (("b0s0", "p1.b0s0"), ("b0s1", "p1.b0s0")):
        for rail in (0, 1):
            src, dst = fab.host(src_host).nics[rail], fab.host(dst_host).nics[rail]
            for nic_port in (0, 1):
                before = set(_default_order(old).sport_paths(src, nic_port, dst.ip, sports=sports))
                after = set(dual.sport_paths(src, nic_port, dst.ip, sports=sports))
                assert (len(before), len(after)) == (8, 32), (src.ip, nic_port)
                per_leaf = {leaf: sum(1 for p in after if p.dst_leaf == leaf) for leaf in {p.dst_leaf for p in after}}
                assert sorted(per_leaf.values()) == [16, 16]
                assert max(sum(1 for p in before if p.dst_leaf == leaf) for leaf in per_leaf) == 4
    src, dst = fab.host("b0s0").nics[0], fab.host("p1.b0s0").nics[0]
    flow = FlowKey(src.ip, dst.ip, 17, 49152, 4791)
    for tiers, want in ((_default_order(old), 4), (dual, 16)):
        cands = tier_candidates(tiers, src.ports[0].leaf, dst.ports[1].leaf, lambda link: True)
        solved = [c for c in cands if next(tier_sports(tiers, flow, c), None) is not None]
        assert (len(cands), len(solved)) == (16, want)


@pytest.fixture(scope="module")
def dual() -> TierModel:
    return TierModel.of(build_fabric(load_spec(REPO / "topo" / "specs" / "pod2-dualport.yaml")))


def _check_paths(tiers: TierModel, src_host: str, rail: int, nic_port: int, dst_host: str, dst_rail: int,
                 hops: int) -> list:
    fab, model = tiers.fabric, tiers.model
    src = fab.host(src_host).nics[rail]
    dst = fab.host(dst_host).nics[dst_rail]
    paths = tiers.sport_paths(src, nic_port, dst.ip)
    route = {sw.name: lookup(tiers.routes[sw.name], dst.ip) for sw in fab.switches}
    for path in set(paths):                       # every distinct path: a chain of next hops
        assert len(path.switches) == hops and path.switches[0] == src.ports[nic_port].leaf
        for i, (switch, port) in enumerate(path.hops):
            assert port in route[switch].ports
            if i + 1 < hops:
                assert fab.switch(switch).ports[port].peer_node == path.switches[i + 1]
        last = fab.switch(path.dst_leaf).ports[path.dst_port]
        assert (last.kind, last.peer_node, last.peer_port) == ("host", dst_host, dst_rail)
        assert (path.dst_leaf, path.dst_port) in {(p.leaf, p.leaf_port) for p in dst.ports}
    for sport in range(0, 1 << 16, 97):           # the published model names each member taken
        for switch, port in paths[sport].hops:
            if route[switch].is_ecmp:
                sw = model.switch(switch)
                gid = route_group(sw, dst.ip)
                group = sw.group(gid)
                h = flow_hash(sw.for_group(gid), Flow.of(src.ip, dst.ip, 17, sport, 4791))
                assert group.members[h % group.size] == member_name(fab.switch(switch), port)
    return paths


def test_dual_port_cross_pod_paths_over_every_source_port(dual: TierModel) -> None:
    for nic_port in (0, 1):
        paths = _check_paths(dual, "b0s0", 0, nic_port, "p1.b0s1", 1, hops=5)
        # both ports of the destination NIC are reached, through both of its leaves
        assert {p.dst_leaf for p in paths} == {"p1.b0r1l0", "p1.b0r1l1"}
        assert len({p.switches[2] for p in paths}) == 4             # all four cores


def test_dual_port_paths_inside_a_pod(dual: TierModel) -> None:
    paths = _check_paths(dual, "b0s0", 0, 1, "b0s1", 1, hops=3)       # other rail: via a spine
    assert {p.dst_leaf for p in paths} == {"b0r1l0", "b0r1l1"}
    same = _check_paths(dual, "b0s0", 0, 1, "b0s1", 0, hops=1)        # same rail: the port's own leaf
    assert {p.hops for p in same} == {(("b0r0l1", 2),)}


def test_one_flow_prediction_equals_the_sweep(dual: TierModel) -> None:
    fab = dual.fabric
    rng = random.Random(29)
    src, dst = fab.host("p1.b0s1").nics[1], fab.host("b0s0").nics[0]
    sweep = dual.sport_paths(src, 1, dst.ip)
    for sport in rng.sample(range(1 << 16), 300):
        assert dual.path(src, 1, dst.ip, sport) == sweep[sport]


def test_published_model_is_valid_json(dual: TierModel) -> None:
    again = FabricHashModel.from_json(dual.model.to_json())
    assert again == dual.model
    assert again.switch("c1.0").groups[2].members == ("p1.s1#3", "p1.s1#4")


# --------------------------------------------------------------------------- the real pipeline
def _mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def _udp_frame(src: str, dst: str, sport: int, dport: int = 4791, payload_len: int = 16) -> bytes:
    """Ethernet/IPv4/UDP, valid IPv4 checksum, UDP checksum 0."""
    import struct   # noqa: PLC0415 — stdlib, test helper
    udp = struct.pack("!HHHH", sport, dport, 8 + payload_len, 0) + bytes(payload_len)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
    words = sum(struct.unpack("!10H", ip))
    while words >> 16:
        words = (words & 0xFFFF) + (words >> 16)
    ip = ip[:10] + struct.pack("!H", ~words & 0xFFFF) + ip[12:]
    return bytes.fromhex("020000000100") + bytes.fromhex("060000000001") + b"\x08\x00" + ip + udp


def _program(prog: object, fab, name: str, tiers: TierModel) -> None:
    """Write the fabric's routes and the published groups of switch ``name`` into a
    ``p4src/fabric.p4`` program's tables (next hop id = port, as the controller plans)."""
    sw = fab.switch(name)
    tables = prog.state.tables
    tables["FabricIngress.switch_info.config"].set_default_action(ActionCall(
        "FabricIngress.switch_info.set_switch", (sw.device_id, 0 if sw.role == "leaf" else 1, sw.ecmp_seed)))
    tables["FabricIngress.ecmp.algorithm"].set_default_action(
        ActionCall(f"FabricIngress.ecmp.use_{sw.hash_algorithm}", ()))
    by_name = {s.name: s for s in fab.switches}
    for port, info in sorted(sw.ports.items()):
        peer = by_name.get(info.peer_node)
        peer_mac = peer.ports[info.peer_port].mac if peer is not None else next(
            n.mac for n in fab.host(info.peer_node).nics if n.rail == info.peer_port)
        tables["FabricIngress.forwarding.nexthops"].add_entry(
            [Exact(port)], ActionCall("FabricIngress.forwarding.route_to", (port, _mac(info.mac), _mac(peer_mac))))
    model = tiers.model.switch(name)
    gid_of = {r.prefix: r.group_id for r in model.routes}
    for gid, group in model.groups.items():
        tables["FabricIngress.ecmp.groups"].add_entry(
            [Exact(gid)], ActionCall("FabricIngress.ecmp.select_member" if group.fields is None
                                     else "FabricIngress.ecmp.select_member_ports_first", (group.base, group.size)))
    written: set[int] = set()
    for route in tiers.routes[name]:
        net = route.network
        lpm = [Lpm(int(net.network_address), net.prefixlen)]
        if route.is_ecmp:
            gid = gid_of[route.prefix]
            group = model.groups[gid]
            assert group.members == tuple(member_name(sw, p) for p in route.ports)
            if gid not in written:
                written.add(gid)
                for i, port in enumerate(route.ports):
                    tables["FabricIngress.ecmp.members"].add_entry(
                        [Exact(group.base + i)], ActionCall("FabricIngress.ecmp.set_nexthop", (port,)))
            tables["FabricIngress.forwarding.routes"].add_entry(
                lpm, ActionCall("FabricIngress.forwarding.set_ecmp_group", (gid,)))
        else:
            tables["FabricIngress.forwarding.routes"].add_entry(
                lpm, ActionCall("FabricIngress.forwarding.set_nexthop", (route.ports[0],)))


def test_fabric_p4_forwards_every_sampled_flow_as_predicted(dual: TierModel) -> None:
    """16 instances of ``p4src/fabric.p4`` on p4sim, one per switch of the dual-port
    two-pod spec, programmed with the routes and published groups; UDP frames walked
    hop by hop from both ports of a NIC: every frame takes the predicted path."""
    fab = dual.fabric
    path = str(REPO / "p4src" / "fabric.p4")
    ast = parse_file(path, [str(REPO / "p4src"), str(REPO / "p4src" / "include")])
    switches: dict[str, V1ModelSwitch] = {}

    def switch(name: str) -> V1ModelSwitch:        # parsed once, compiled once per switch
        if name not in switches:
            prog = compile_program(ast, path, trace=False)
            _program(prog, fab, name, dual)
            switches[name] = V1ModelSwitch(prog, cpu_port=255, log=None)
        return switches[name]

    rng = random.Random(2029)
    pairs = [("b0s0", 0, "p1.b0s1", 1), ("p1.b0s1", 1, "b0s1", 0), ("b0s1", 1, "b0s0", 0)]
    walked = 0
    for src_host, rail, dst_host, dst_rail in pairs:
        src, dst = fab.host(src_host).nics[rail], fab.host(dst_host).nics[dst_rail]
        for nic_port in (0, 1):
            sports = rng.sample(range(1 << 16), 24)
            for sport, want in zip(sports, dual.sport_paths(src, nic_port, dst.ip, sports=sports)):
                frame, here = _udp_frame(src.ip, dst.ip, sport), src.ports[nic_port]
                name, in_port, hops = here.leaf, here.leaf_port, []
                for _ in range(len(want.switches)):
                    out = switch(name).process_packet(in_port, frame)
                    assert len(out) == 1, (name, out)
                    port, frame = out[0]
                    hops.append((name, port))
                    info = fab.switch(name).ports[port]
                    name, in_port = info.peer_node, info.peer_port
                assert tuple(hops) == want.hops, (src.ip, dst.ip, nic_port, sport)
                assert name == dst_host and frame[:6] == bytes.fromhex(dst.mac.replace(":", ""))
                walked += 1
    assert walked == 3 * 2 * 24 and len(switches) >= 12


@pytest.mark.parametrize("core_hash,before,per_core", [("crc16", 1, 4), ("crc32", 4, 4)])
def test_core_links_reached_per_core_with_wider_groups(core_hash: str, before: int, per_core: int) -> None:
    """Leaf group of 8 (8 spines), 4 links from each core into each pod: with crc16 cores
    and one field order one src/dst pair reached 1 of a core's 4 links (crc32: all 4);
    ports-first core groups reach all 4 with either CRC."""
    fab = build_fabric(spec_from_dict({"blocks": 2, "servers_per_block": 2, "rails": 2, "spines": 8,
                                       "pods": 2, "cores": 8, "core_hash": core_hash}))
    assert fab.spec.links_per_core == 4
    tiers = TierModel.of(fab)
    for model, want in ((_default_order(tiers), before), (tiers, per_core)):
        used: dict[str, set[int]] = {}
        for p in model.sport_paths(fab.hosts[0].nics[0], 0, fab.hosts[-1].nics[1].ip):
            used.setdefault(p.switches[2], set()).add(p.ports[2])
        assert len(used) == 8 and {len(v) for v in used.values()} == {want}


def test_the_plan_programs_the_core_tier_from_topo_routes() -> None:
    """plan_fabric on the two-pod spec: cores get role code 2, every switch's routes are
    topo.routes' (same prefixes, same ports or group members), and the hash model the
    plan publishes is tier_hash_model's; the default spec's plan has no core."""
    fab = build_fabric(load_spec(Path(__file__).resolve().parents[2] / "topo" / "specs"
                                 / "pod2-dualport.yaml"))
    plans = plan_fabric(fab)
    table = fabric_routes(fab)
    assert {p.role for p in plans.values()} == {"leaf", "spine", "core"}
    assert all(p.entries[0].params["role"] == 2 for p in plans.values() if p.role == "core")
    for name, plan in plans.items():
        got = {}
        for e in plan.of(T_ROUTES):
            if "group_id" in e.params:
                got[e.match["hdr.ipv4.dst_addr"]] = plan.groups[e.params["group_id"]].ports
            elif e.action.endswith(".drop"):           # a leaf's own subnet: the plan's, not topo's
                continue
            else:
                got[e.match["hdr.ipv4.dst_addr"]] = (e.params["nexthop_id"],)
        assert got == {r.prefix: r.ports for r in table[name]}, name
    published = FabricHashModel({n: p.hash_model() for n, p in plans.items()})
    tiered = tier_hash_model(fab)
    for name in plans:
        assert published.switch(name).groups == tiered.switch(name).groups, name
        assert set(published.switch(name).routes) == set(tiered.switch(name).routes), name
    assert fabric_hash_model(fab).switch("c0.0").groups == tiered.switch("c0.0").groups
    assert "core" not in {p.role for p in plan_fabric(build_fabric()).values()}
