"""controller.fabric_setup: the plan of a small fabric (pure), and the whole install on
real ``python -m p4sim switch`` processes (one per switch, started by PID through
``tests/procs.py``), checked by reading every table back; the published hash model is
checked against the ECMP entries read from the switches.

The plan tests use a hand-built fabric, 1 block × 2 rails × 2 servers and 2 spines
(:func:`stub_fabric`), optionally with an asymmetric second link from spine 1 to leaf
b0r0l0 that topo does not build (so a spine has an ECMP group and a leaf group has two
links to one peer); their expected entries were worked out by hand. The tests on real
switches use a fabric built by ``topo.model`` (two uplinks per spine).
"""
from __future__ import annotations

import copy
import dataclasses
import ipaddress
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
from p4.v1 import p4runtime_pb2

from controller import __main__ as cli
from controller.fabric_setup import (CPU_CLONE_SESSION, DSCP_TO_PRIORITY, FABRIC_PREFIX,
                                     T_ALGORITHM, T_ARP, T_ECN, T_GROUPS, T_MEMBERS,
                                     T_NEXTHOPS, T_PFC, T_PORT_MACS, T_QOS, T_ROUTES, T_SWITCH,
                                     EcnConfig, FabricProgrammer, SwitchPlan, SwitchSetupError,
                                     ecmp_groups, fabric_hash_model, plan_fabric)
from controller.p4rt import SwitchConnection
from controller.p4rt.codec import decode, ipv4_str, mac_str
from p4src.hashmodel import FabricHashModel, member_index, predict_member
from procs import SwitchProcess

TABLES = (T_ARP, T_QOS, T_ROUTES, T_NEXTHOPS, T_GROUPS, T_MEMBERS, T_PORT_MACS, T_ECN, T_PFC)

from topo import model as topo_model


# ------------------------------------------------------------- hand-built fabric (expected values checked by hand)
@dataclass
class PortInfo:
    port: int
    peer_node: str
    peer_port: int
    kind: str
    mac: str
    gbps: int = 100


@dataclass
class SwitchInfo:
    name: str
    role: str
    block: Optional[int]
    rail: Optional[int]
    device_id: int
    grpc_addr: str
    election_id: Any
    ports: dict[int, PortInfo] = field(default_factory=dict)
    router_mac: str = ""
    ecmp_seed: int = 0
    hash_algorithm: str = "crc16"


@dataclass
class NicInfo:
    rail: int
    ip: str
    prefix_len: int
    mac: str
    gateway_ip: str
    leaf: str
    leaf_port: int
    intf: str


@dataclass
class HostInfo:
    name: str
    block: int
    server: int
    nics: list[NicInfo] = field(default_factory=list)


@dataclass
class StubFabric:
    switches: list[SwitchInfo]
    hosts: list[HostInfo]


def _mac(sw_id: int, port: int) -> str:
    return f"02:00:00:00:{sw_id:02x}:{port:02x}"


def stub_fabric(double_link: bool = False) -> StubFabric:
    """1 block × 2 rails × 2 servers, spines s0, s1; leaf ports 1, 2 hosts, 3.. uplinks."""
    leaves = {r: SwitchInfo(f"b0r{r}l0", "leaf", 0, r, r, "", (0, 1), router_mac=_mac(1 + r, 0),
                            ecmp_seed=0x1000 + r, hash_algorithm="crc16") for r in range(2)}
    spines = {k: SwitchInfo(f"s{k}", "spine", None, None, 2 + k, "", (0, 1),
                            router_mac=_mac(200 + k, 0), ecmp_seed=0x2000 + k,
                            hash_algorithm="crc32") for k in range(2)}
    hosts = []
    for s in range(2):
        h = HostInfo(f"b0s{s}", 0, s)
        for r, leaf in leaves.items():
            port = s + 1
            nic = NicInfo(r, f"10.0.{r}.{s + 1}", 24, f"02:aa:00:00:{s:02x}:{r:02x}",
                          f"10.0.{r}.254", leaf.name, port, f"b0s{s}-eth{r}")
            h.nics.append(nic)
            leaf.ports[port] = PortInfo(port, h.name, r, "host", _mac(1 + r, port))
        hosts.append(h)
    links = [(leaves[r], spines[k]) for r in range(2) for k in range(2)]
    if double_link:
        links.append((leaves[0], spines[1]))
    for leaf, spine in links:
        lp, sp = max(leaf.ports) + 1, max(spine.ports, default=0) + 1
        lid = 1 + (leaf.rail or 0)
        sid = 200 + int(spine.name[1:])
        leaf.ports[lp] = PortInfo(lp, spine.name, sp, "uplink", _mac(lid, lp))
        spine.ports[sp] = PortInfo(sp, leaf.name, lp, "downlink", _mac(sid, sp))
    return StubFabric([*leaves.values(), *spines.values()], hosts)


def small_fabric() -> Any:
    """The small fabric of the tests on real switches, built by topo.model."""
    spec = topo_model.FabricSpec(blocks=1, servers_per_block=2, rails=2, spines=2,
                                 leaves_per_rail=1, uplinks_per_spine=2)
    return topo_model.build_fabric(spec)


# --------------------------------------------------------------------------- the plan (pure)
def test_plan_of_the_stub_fabric() -> None:
    plans = plan_fabric(stub_fabric())
    leaf, spine = plans["b0r0l0"], plans["s0"]
    routes = {e.match["hdr.ipv4.dst_addr"]: (e.action.rsplit(".", 1)[1], dict(e.params))
              for e in leaf.of(T_ROUTES)}
    assert routes == {"10.0.0.1/32": ("set_nexthop", {"nexthop_id": 1}),
                      "10.0.0.2/32": ("set_nexthop", {"nexthop_id": 2}),
                      "10.0.0.0/24": ("drop", {}),           # its own subnet's free addresses
                      FABRIC_PREFIX: ("set_ecmp_group", {"group_id": 1})}
    assert leaf.groups[1].ports == (3, 4) and leaf.groups[1].members == ("s0", "s1")
    assert {e.match["hdr.arp.target_proto_addr"] for e in leaf.of(T_ARP)} == \
        {"10.0.0.1", "10.0.0.2", "10.0.0.254"}
    assert all(e.params["mac"] == _mac(1, 0) for e in leaf.of(T_ARP))
    nh1 = next(e for e in leaf.of(T_NEXTHOPS) if e.match["meta.nexthop_id"] == 1)
    assert nh1.params == {"port": 1, "src_mac": _mac(1, 1), "dst_mac": "02:aa:00:00:00:00"}
    nh3 = next(e for e in leaf.of(T_NEXTHOPS) if e.match["meta.nexthop_id"] == 3)
    assert nh3.params["dst_mac"] == _mac(200, 1)        # s0's port towards this leaf
    sroutes = {e.match["hdr.ipv4.dst_addr"]: dict(e.params) for e in spine.of(T_ROUTES)}
    assert sroutes == {"10.0.0.0/24": {"nexthop_id": 1}, "10.0.1.0/24": {"nexthop_id": 2}}
    assert spine.groups == {} and spine.count(T_ARP) == 0
    assert {e.match["hdr.ipv4.dscp"]: e.params["prio"] for e in leaf.of(T_QOS)} == \
        DSCP_TO_PRIORITY == {26: 3, 48: 6}
    assert leaf.clone_sessions == {101: (1,), 102: (2,), 103: (3,), 104: (4,),
                                   CPU_CLONE_SESSION: (255,)}
    assert (leaf.switch_id, plans["b0r1l0"].switch_id, spine.switch_id,
            plans["s1"].switch_id) == (1, 2, 200, 201)
    assert (leaf.algorithm, spine.algorithm) == ("crc16", "crc32")
    for p in (leaf, spine):
        assert p.count(T_PORT_MACS) == p.count(T_ECN) == p.count(T_PFC) == p.count(T_NEXTHOPS)


def test_plan_with_parallel_links_and_options() -> None:
    plans = plan_fabric(stub_fabric(double_link=True), ecn=EcnConfig(10, None), pfc=None)
    leaf, s1 = plans["b0r0l0"], plans["s1"]
    assert leaf.groups[1].members == ("s0", "s1#4", "s1#5")
    assert s1.groups[1].ports == (1, 3) and s1.groups[1].base == 0
    assert s1.groups[1].members == ("b0r0l0#1", "b0r0l0#3")
    sroutes = {e.match["hdr.ipv4.dst_addr"]: dict(e.params) for e in s1.of(T_ROUTES)}
    assert sroutes == {"10.0.0.0/24": {"group_id": 1}, "10.0.1.0/24": {"nexthop_id": 2}}
    assert leaf.count(T_PFC) == 0
    assert {e.action for e in leaf.of(T_ECN)} == {"FabricEgress.ecn.set_ecn_threshold"}
    model = FabricHashModel.from_json(
        FabricHashModel({n: p.hash_model() for n, p in plans.items()}).to_json())
    assert model.switch("s1").algorithm == "crc32" and model.switch("s1").groups[1].size == 2


def test_plan_of_a_topo_fabric_with_split_rails() -> None:
    """Two leaves per rail: a spine routes each host /32 to its own leaf."""
    fab = topo_model.build_fabric(topo_model.FabricSpec(
        blocks=2, servers_per_block=4, rails=2, spines=2, leaves_per_rail=2))
    plans = plan_fabric(fab)
    spine = plans["s0"]
    routes = {e.match["hdr.ipv4.dst_addr"]: dict(e.params) for e in spine.of(T_ROUTES)}
    nics = [n for h in fab.hosts for n in h.nics]
    assert len(routes) == len(nics)
    for nic in nics:
        port = next(p.port for p in fab.switch("s0").ports.values() if p.peer_node == nic.leaf)
        assert routes[f"{nic.ip}/32"] == {"nexthop_id": port}
    for leaf in fab.leaves:
        plan = plans[leaf.name]
        assert plan.switch_id == leaf.device_id
        assert plan.groups[1].members == ("s0", "s1")
        assert plan.count(T_ROUTES) == 1 + sum(1 for n in nics if n.leaf == leaf.name)


def _planned_model(fab: Any) -> FabricHashModel:
    return FabricHashModel({n: p.hash_model() for n, p in plan_fabric(fab).items()})


SMALL_SPECS = [topo_model.FabricSpec(),
               topo_model.FabricSpec(blocks=3, servers_per_block=4, rails=2, spines=3,
                                     uplinks_per_spine=2, leaf_ports=64),
               topo_model.FabricSpec(blocks=2, servers_per_block=4, rails=2, spines=4,
                                     leaves_per_rail=2, ecmp_seed=9, leaf_hash="crc32")]


@pytest.mark.parametrize("fab", [stub_fabric(), stub_fabric(double_link=True),
                                 *map(topo_model.build_fabric, SMALL_SPECS)],
                         ids=["stub", "stub-parallel", "default", "parallel-links", "two-leaves-per-rail"])
def test_fast_hash_model_is_the_planned_one(fab: Any) -> None:
    model = fabric_hash_model(fab)
    assert model == _planned_model(fab)
    assert any(m.groups for m in model.switches.values())


def _by_port_names(model: Any, fab: Any) -> Any:
    """``model`` with every member named ``peer#port`` (``controller.fabric.ecmp``'s
    names differ only where a switch has several ports to one peer)."""
    out = copy.deepcopy(model)
    for name, sm in out.switches.items():
        sw = next(s for s in fab.switches if s.name == name)
        port_of = {p_.peer_node: p for p, p_ in sorted(sw.ports.items(), reverse=True)}
        for gid, g in sm.groups.items():
            sm.groups[gid] = dataclasses.replace(g, members=tuple(
                m if "#" in m else f"{m}#{port_of[m]}" for m in g.members))
    return out


def test_fast_hash_model_without_down_links_is_the_plan_without_them() -> None:
    """Down links leave the groups as if the fabric had been planned without those cables
    (a spine left with one link to a leaf has a plain next hop, no group); a member whose
    switch still has another (down) port to the same peer keeps its port in its name."""
    fab = stub_fabric(double_link=True)
    down = {("b0r0l0", 5), ("s1", 3), ("b0r1l0", 3), ("s0", 2)}        # two cables
    cut = copy.deepcopy(fab)
    for sw in cut.switches:
        for name, port in down:
            if sw.name == name:
                del sw.ports[port]
    model = fabric_hash_model(fab, down)
    assert _by_port_names(model, fab) == _by_port_names(_planned_model(cut), cut)
    assert model.switch("b0r0l0").groups[1].members == ("s0", "s1#4")
    assert model.switch("b0r1l0").groups[1].members == ("s1",)
    assert model.switch("s1").groups == {}
    names = {s.name for s in fab.switches}
    leaf = next(s for s in fab.switches if s.name == "b0r1l0")
    assert ecmp_groups(leaf, names, {("b0r1l0", 3), ("b0r1l0", 4)}) == {}


# --------------------------------------------------------------------------- on real switches
@pytest.fixture(scope="module")
def fabric() -> Iterator[Any]:
    """The small fabric with one running p4sim switch per switch (addresses filled in)."""
    fab = small_fabric()
    procs: list[SwitchProcess] = []
    try:
        for sw in fab.switches:
            p = SwitchProcess.no_p4(device_id=sw.device_id, target_extra=["--priority-queues", "8"])
            procs.append(p)
            sw.grpc_addr = p.grpc_addr
        yield fab
    finally:
        for p in procs:
            p.stop()


@pytest.fixture(scope="module")
def programmed(fabric: Any, fabric_compiled: tuple[Path, Path]) -> Iterator[FabricProgrammer]:
    fp = FabricProgrammer(fabric, *fabric_compiled)
    fp.connect_all()
    fp.push_pipelines()
    written = fp.install_all()
    assert set(written) == {sw.name for sw in fabric.switches}
    try:
        yield fp
    finally:
        fp.close()


def _params(conn: SwitchConnection, te: p4runtime_pb2.TableEntry) -> dict[str, int]:
    info = conn.p4info
    assert info is not None
    act = info.get("action", te.action.action.action_id)
    names = {p.id: p.name for p in act.params}
    return {names[p.param_id]: decode(p.value) for p in te.action.action.params}


def _exact(te: p4runtime_pb2.TableEntry) -> int:
    return decode(te.match[0].exact.value)


def _default(conn: SwitchConnection, table: str) -> tuple[str, dict[str, int]]:
    assert conn.p4info is not None
    req = p4runtime_pb2.TableEntry(table_id=conn.p4info.table_id(table), is_default_action=True)
    (ent,) = list(conn.read(req))
    te = ent.table_entry
    return conn.p4info.get_name("action", te.action.action.action_id), _params(conn, te)


def test_every_table_holds_the_plan(programmed: FabricProgrammer) -> None:
    for name, plan in programmed.plans.items():
        conn = programmed.connection(name)
        for table in TABLES:
            assert len(conn.read_table(table)) == plan.count(table), (name, table)
        assert plan.count(T_ROUTES) > 0 and plan.count(T_NEXTHOPS) > 0


def test_identity_and_algorithm_defaults(programmed: FabricProgrammer) -> None:
    for name, plan in programmed.plans.items():
        conn = programmed.connection(name)
        action, params = _default(conn, T_SWITCH)
        assert action == "FabricIngress.switch_info.set_switch"
        assert params == {"switch_id": plan.switch_id, "role": int(plan.role == "spine"),
                          "ecmp_seed": plan.seed}
        action, _ = _default(conn, T_ALGORITHM)
        want = "crc16" if plan.role == "leaf" else "crc32"
        assert plan.algorithm == want and action == f"FabricIngress.ecmp.use_{want}"


def test_routes_nexthops_and_arp_read_back(programmed: FabricProgrammer, fabric: Any) -> None:
    switches = {sw.name: sw for sw in fabric.switches}
    for nic in (n for h in fabric.hosts for n in h.nics):
        conn = programmed.connection(nic.leaf)
        routes = {(ipv4_str(te.match[0].lpm.value), te.match[0].lpm.prefix_len):
                  _params(conn, te) for te in conn.read_table(T_ROUTES)}
        assert routes[(nic.ip, 32)] == {"nexthop_id": nic.leaf_port}
        nexthops = {_exact(te): _params(conn, te) for te in conn.read_table(T_NEXTHOPS)}
        nh = nexthops[nic.leaf_port]
        assert mac_str(nh["dst_mac"]) == nic.mac.lower()
        assert mac_str(nh["src_mac"]) == switches[nic.leaf].ports[nic.leaf_port].mac.lower()
        arp = {ipv4_str(te.match[0].exact.value): mac_str(_params(conn, te)["mac"])
               for te in conn.read_table(T_ARP)}
        assert arp[nic.gateway_ip] == switches[nic.leaf].router_mac.lower()
        assert nic.ip in arp
    for sw in fabric.switches:
        if sw.role != "spine":
            continue
        conn = programmed.connection(sw.name)
        prefixes = {(ipv4_str(te.match[0].lpm.value), te.match[0].lpm.prefix_len)
                    for te in conn.read_table(T_ROUTES)}
        subnets = {ipaddress.IPv4Network(f"{n.ip}/{n.prefix_len}", strict=False)
                   for h in fabric.hosts for n in h.nics}
        assert prefixes == {(str(s.network_address), s.prefixlen) for s in subnets}


def test_clone_sessions(programmed: FabricProgrammer, fabric: Any) -> None:
    for sw in fabric.switches:
        conn = programmed.connection(sw.name)
        req = p4runtime_pb2.PacketReplicationEngineEntry()
        req.clone_session_entry.session_id = 0
        got = {e.packet_replication_engine_entry.clone_session_entry.session_id:
               [r.egress_port for r in e.packet_replication_engine_entry
                .clone_session_entry.replicas] for e in conn.read(req)}
        want = {100 + p: [p] for p in sw.ports}
        want[CPU_CLONE_SESSION] = [255]
        assert got == want


def _ecmp_read_back(conn: SwitchConnection) -> dict[int, tuple[int, list[int]]]:
    """Group id → (base, egress port of each member), from the switch's tables."""
    nexthops = {_exact(te): _params(conn, te)["port"] for te in conn.read_table(T_NEXTHOPS)}
    members = {_exact(te): _params(conn, te)["nexthop_id"] for te in conn.read_table(T_MEMBERS)}
    out = {}
    for te in conn.read_table(T_GROUPS):
        p = _params(conn, te)
        out[_exact(te)] = (p["base"], [nexthops[members[p["base"] + i]]
                                       for i in range(p["size"])])
    return out


def test_hash_model_matches_the_entries_written(programmed: FabricProgrammer) -> None:
    model = FabricHashModel.from_json(programmed.hash_model().to_json())
    assert set(model.switches) == set(programmed.plans)
    flows = [("10.0.0.1", "10.0.1.2", 17, 49152 + i, 4791) for i in range(64)]
    n_groups = 0
    for name, plan in programmed.plans.items():
        conn = programmed.connection(name)
        sw_model = model.switch(name)
        assert (sw_model.seed, sw_model.algorithm) == (plan.seed, plan.algorithm)
        switch_groups = _ecmp_read_back(conn)
        assert set(switch_groups) == set(sw_model.groups)
        for gid, (base, ports) in switch_groups.items():
            n_groups += 1
            g = sw_model.groups[gid]
            by_name = programmed.member_ports(name, gid)
            assert g.base == base and [by_name[m] for m in g.members] == ports
            for flow in flows:
                idx = member_index(sw_model, gid, *flow)
                assert by_name[predict_member(sw_model, gid, *flow)] == ports[idx - base]
    assert n_groups >= 2        # at least the uplink group of every leaf


def test_an_unreachable_switch_is_named(fabric_compiled: tuple[Path, Path]) -> None:
    fab = stub_fabric()
    for sw in fab.switches:
        sw.grpc_addr = "127.0.0.1:1"
    fp = FabricProgrammer(fab, *fabric_compiled, timeout_s=0.5)
    with pytest.raises(SwitchSetupError,
                       match=r"^(b0r\dl0|s\d): TimeoutError: no P4Runtime server"):
        fp.connect_all()
    assert fp.connections == {}


def test_cli_setup(fabric: Any, fabric_compiled: tuple[Path, Path], programmed: FabricProgrammer,
                   tmp_path: Path,
                   capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m controller setup`` in process; it re-pushes the pipeline, so it runs last."""
    fabric_file = tmp_path / "topology.json"
    fabric_file.write_text(fabric.to_json())
    programmed.close()                                       # one primary per election id
    out_model = tmp_path / "hashmodel.json"
    rc = cli.main(["setup", "--fabric", str(fabric_file), "--p4info", str(fabric_compiled[0]),
                   "--config", str(fabric_compiled[1]), "--hash-model", str(out_model)])
    assert rc == 0, capsys.readouterr().err
    assert f"{len(fabric.switches)} switches programmed" in capsys.readouterr().out
    model = FabricHashModel.from_json(out_model.read_text())
    assert set(model.switches) == {sw.name for sw in fabric.switches}
    assert json.loads(out_model.read_text())["version"] == 1
