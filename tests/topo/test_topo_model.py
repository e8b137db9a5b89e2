"""topo.model: the default fabric's shape, the address plan, port numbering seen from
both ends of every link, the JSON round trip, and a 64K-GPU build (counts only)."""
from __future__ import annotations

from pathlib import Path

import pytest

from topo.model import (
    Fabric,
    FabricSpec,
    build_fabric,
    link_ports,
    load_fabric,
    load_fabric_text,
    port_mac,
)
from topo.spec import SpecError, SwitchOverride


def _edges(fab: Fabric) -> list[tuple[str, str, str, float, tuple[tuple[str, int], ...]]]:
    out = []
    for a, b, d in fab.graph.edges(data=True):
        out.append((*sorted((a, b)), d["kind"], d["gbps"], tuple(sorted(d["ports"].items()))))
    return sorted(out)


def test_default_shape() -> None:
    fab = build_fabric()
    assert fab.spec == FabricSpec()
    assert [s.name for s in fab.leaves] == ["b0r0l0", "b0r1l0", "b1r0l0", "b1r1l0"]
    assert [s.name for s in fab.spines] == ["s0", "s1"]
    assert [h.name for h in fab.hosts] == ["b0s0", "b0s1", "b1s0", "b1s1"]
    for leaf in fab.leaves:
        assert [p.port for p in leaf.ports_of_kind("host")] == [1, 2]
        assert [(p.port, p.peer_node, p.peer_port) for p in leaf.ports_of_kind("uplink")] == [
            (3, "s0", fab.leaves.index(leaf) + 1), (4, "s1", fab.leaves.index(leaf) + 1)]
    for spine in fab.spines:
        assert [(p.port, p.peer_node, p.peer_port) for p in spine.ports_of_kind("downlink")] == [
            (1, "b0r0l0", 3 + spine.spine_index), (2, "b0r1l0", 3 + spine.spine_index),
            (3, "b1r0l0", 3 + spine.spine_index), (4, "b1r1l0", 3 + spine.spine_index)]
        assert spine.block is None and spine.rail is None
    g = fab.graph
    assert g.number_of_nodes() == 10 and g.number_of_edges() == 16
    roles = {n: d["role"] for n, d in g.nodes(data=True)}
    assert sorted(roles.values()) == ["host"] * 4 + ["leaf"] * 4 + ["spine"] * 2
    assert g.nodes["b1r0l0"]["block"] == 1 and g.nodes["b1r0l0"]["rail"] == 0
    assert g.nodes["b0s1"]["ips"] == ["10.0.0.2", "10.0.1.2"]
    assert fab.oversubscription() == 1.0


def test_address_plan_ids_and_p4runtime() -> None:
    fab = build_fabric(FabricSpec(blocks=3, servers_per_block=4, rails=4, spines=3))
    for h in fab.hosts:
        assert len(h.nics) == 4
        for nic in h.nics:
            b, r, s = h.block, nic.rail, h.server
            assert nic.ip == f"10.{b}.{r}.{s + 1}" and nic.prefix_len == 24
            assert nic.gateway_ip == f"10.{b}.{r}.254"
            assert nic.mac == f"06:00:00:{b:02x}:{r:02x}:{s + 1:02x}"
            assert nic.leaf == f"b{b}r{r}l0" and nic.intf == f"b{b}s{s}-eth{r}"
            assert nic.leaf_port == s + 1
    for i, sw in enumerate(fab.switches):
        assert sw.grpc_addr == f"127.0.0.1:{9559 + i}"
        assert sw.election_id == 1
        if sw.is_leaf:
            assert sw.device_id == 1 + sw.block * 4 + sw.rail
            assert sw.hash_algorithm == "crc16"
            assert sw.subnet == f"10.{sw.block}.{sw.rail}.0/24"
            assert sw.gateway_ip == f"10.{sw.block}.{sw.rail}.254"
        else:
            assert sw.device_id == 200 + sw.spine_index and sw.hash_algorithm == "crc32"
            assert sw.subnet is None
        assert sw.switch_id == sw.device_id
        assert sw.router_mac == f"02:00:00:00:{sw.device_id:02x}:00"
        for p, info in sw.ports.items():
            assert info.mac == f"02:00:00:00:{sw.device_id:02x}:{p:02x}"
    seeds = [sw.ecmp_seed for sw in fab.switches]
    assert len(set(seeds)) == len(seeds) and all(0 <= s < 2 ** 32 for s in seeds)
    assert [s.ecmp_seed for s in build_fabric(FabricSpec(blocks=3, servers_per_block=4, rails=4,
                                                         spines=3)).switches] == seeds
    assert [s.ecmp_seed for s in build_fabric(FabricSpec(blocks=3, servers_per_block=4, rails=4,
                                                         spines=3, ecmp_seed=9)).switches] != seeds


def test_port_mac_and_reserved_ports() -> None:
    assert port_mac(1, 3) == "02:00:00:00:01:03"
    assert port_mac(0x1234, 0x102) == "02:00:12:01:34:02"
    assert link_ports(3, 253) == [253, 254, 256]
    assert link_ports(2, 510) == [510, 512]


SPECS = [
    FabricSpec(),
    FabricSpec(blocks=1, servers_per_block=7, rails=3, spines=2, leaves_per_rail=3, uplinks_per_spine=2),
    FabricSpec(blocks=2, servers_per_block=253, rails=1, spines=3, leaf_ports=256),
    FabricSpec(blocks=3, servers_per_block=2, rails=2, spines=1, uplinks_per_spine=3),
]


@pytest.mark.parametrize("spec", SPECS, ids=["default", "3-leaves-per-rail", "crosses-255", "parallel"])
def test_every_link_agrees_at_both_ends(spec: FabricSpec) -> None:
    fab = build_fabric(spec)
    nic_at = {(n.leaf, n.leaf_port): (h, n) for h in fab.hosts for n in h.nics}
    assert len(nic_at) == spec.num_gpus
    for sw in fab.switches:
        assert 255 not in sw.ports and 511 not in sw.ports and 0 not in sw.ports
        for p, info in sw.ports.items():
            assert info.port == p
            if info.kind == "host":
                host, nic = nic_at[(sw.name, p)]
                assert (host.name, nic.rail) == (info.peer_node, info.peer_port)
                assert sw.is_leaf and nic.rail == sw.rail and host.block == sw.block
                assert nic.gbps == info.gbps
            else:
                peer = fab.switch(info.peer_node).ports[info.peer_port]
                assert (peer.peer_node, peer.peer_port) == (sw.name, p)
                assert {info.kind, peer.kind} == {"uplink", "downlink"}
                assert peer.gbps == info.gbps
        if sw.is_leaf:
            assert len(sw.ports_of_kind("uplink")) == spec.leaf_uplinks
        else:
            assert len(sw.ports_of_kind("downlink")) == spec.spine_downlinks
    for a, b, d in fab.graph.edges(data=True):
        pa, pb = d["ports"][a], d["ports"][b]
        sw_name, other = (a, b) if a in {s.name for s in fab.switches} else (b, a)
        assert fab.switch(sw_name).ports[d["ports"][sw_name]].peer_node == other
        assert {pa, pb} >= {d["ports"][sw_name]}
    assert fab.graph.number_of_edges() == sum(1 for _ in fab.links())


def test_leaves_per_rail_split_servers_in_runs() -> None:
    fab = build_fabric(FabricSpec(blocks=1, servers_per_block=7, rails=1, spines=1, leaves_per_rail=3))
    assert [h.nics[0].leaf for h in fab.hosts] == ["b0r0l0"] * 3 + ["b0r0l1"] * 3 + ["b0r0l2"]
    assert [h.nics[0].leaf_port for h in fab.hosts] == [1, 2, 3, 1, 2, 3, 1]
    # every leaf's uplinks start at the same port, after the fullest leaf's host ports
    assert [sw.ports_of_kind("uplink")[0].port for sw in fab.leaves] == [4, 4, 4]
    assert [sw.device_id for sw in fab.leaves] == [1, 2, 3]


def test_uplink_speed_and_oversubscription() -> None:
    fab = build_fabric(FabricSpec(servers_per_block=4, link_gbps=100, oversubscription=2))
    assert all(p.gbps == 100.0 for p in fab.switch("s0").ports.values())
    assert fab.oversubscription() == 2.0
    fab = build_fabric(FabricSpec(link_gbps=25, uplink_gbps=100))
    assert fab.oversubscription() == 0.25
    assert fab.host("b0s0").nics[0].gbps == 25.0


def test_overrides_and_clashes() -> None:
    spec = FabricSpec(grpc_host="10.9.0.1", grpc_base_port=9559, switches={
        "s1": SwitchOverride(grpc_addr="192.168.1.7:9559", device_id=77, ecmp_seed=5, hash_algorithm="crc16")})
    fab = build_fabric(spec)
    assert fab.switch("b0r0l0").grpc_addr == "10.9.0.1:9559"
    s1 = fab.switch("s1")
    assert (s1.grpc_addr, s1.device_id, s1.ecmp_seed, s1.hash_algorithm) == (
        "192.168.1.7:9559", 77, 5, "crc16")
    with pytest.raises(SpecError, match=r"^spec: switches\.s1\.grpc_addr: 127\.0\.0\.1:9559 is already "
                                        r"the address of b0r0l0$"):
        build_fabric(FabricSpec(switches={"s1": SwitchOverride(grpc_addr="127.0.0.1:9559")}))
    with pytest.raises(SpecError, match=r"^spec: switches\.s0\.device_id: 1 is already the device id of "
                                        r"b0r0l0$"):
        build_fabric(FabricSpec(switches={"s0": SwitchOverride(device_id=1)}))
    with pytest.raises(SpecError, match=r"^spec: switches\.b9r0l0: no such switch in this fabric "
                                        r"\(switches: b0r0l0, b0r1l0, b1r0l0, b1r1l0, s0, s1\)$"):
        build_fabric(FabricSpec(switches={"b9r0l0": SwitchOverride(device_id=9)}))


@pytest.mark.parametrize("spec", SPECS[:2], ids=["default", "3-leaves-per-rail"])
def test_json_round_trip(spec: FabricSpec, tmp_path: Path) -> None:
    spec = FabricSpec(**{**spec.to_dict(), "switches": {"s0": SwitchOverride(grpc_addr="h:1")}})
    fab = build_fabric(spec)
    path = fab.save(tmp_path / "build" / "fabric.json")
    back = load_fabric(path)
    assert back == fab and back.spec == spec
    assert back.switch("s0").grpc_addr == "h:1"
    assert _edges(back) == _edges(fab)
    assert dict(back.graph.nodes(data=True)) == dict(fab.graph.nodes(data=True))
    assert load_fabric_text(back.to_json()).to_json() == fab.to_json()


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"cannot read: .*python -m topo build --out"):
        load_fabric(tmp_path / "missing.json")
    with pytest.raises(SpecError, match=r"^fabric: schema: not a fabric file \(expected schema "
                                        r"'astral-fabric'\)$"):
        load_fabric_text('{"hello": 1}')
    with pytest.raises(SpecError, match=r"^fabric: version: unsupported version 9"):
        load_fabric_text('{"schema": "astral-fabric", "version": 9}')


def test_64k_gpu_pod_counts() -> None:
    """A real-size pod builds without Mininet (not timed here: bench topo.build_s.64k)."""
    from bench.topo_bench import SPEC_64K, check_64k

    fab = build_fabric(SPEC_64K)
    assert SPEC_64K.num_gpus == 65536
    check_64k(fab)
    assert len(fab.switches) == 640
    assert fab.graph.number_of_nodes() == 640 + 8192
    assert fab.host("b63s127").nics[7].ip == "10.63.7.128"
    spine = fab.switch("s127")
    assert spine.device_id == 1127 and len(spine.ports) == 512 and 255 not in spine.ports
    assert max(spine.ports) == 514
    assert len(fab.switch("b63r7l0").ports) == 256
    assert fab.switch("b63r7l0").device_id == 512


def test_bench_group_registered() -> None:
    from bench import groups, select

    assert "topo" in groups()
    assert [f"{b.group}.{b.name}" for b in select(["topo"])] == ["topo.build_64k", "topo.routes_64k"]
