"""``p4src/fabric.p4`` on p4sim, programmed with the controller's plan for the dual-port
spec (``topo/specs/dualport.yaml``), one in-process switch per fabric switch: UDP frames
from *both* ports of every NIC to every NIC of the other block, walked hop by hop.

Every frame reaches the destination NIC (its MAC, through one of its two leaves); both
leaves of the destination pair are used; the leaf uplink and the spine's choice of leaf
are those the published hash model predicts (what TCCL plans with). Each leaf runs the
plan's source guard too: a dual-port NIC's address is allowed on both of its ports. ~10 s.
"""
from __future__ import annotations

import ipaddress
import random
import struct
from pathlib import Path

from controller.fabric.detours import fabric_hash_model
from controller.fabric.dualhoming import failover_updates
from controller.fabric.entries import Entry
from controller.fabric.plan import plan_fabric
from controller.fabric.sourceguard import T_GUARD_PORTS, T_GUARD_SOURCES
from p4sim.engine.program import compile_program
from p4sim.frontend.parser import parse_file
from p4sim.runtime.tables import ActionCall, Exact, Lpm
from p4sim.v1model.switch import V1ModelSwitch
from p4src.hashmodel import predict_member
from topo.model import build_fabric
from topo.spec import load_spec

REPO = Path(__file__).resolve().parents[2]
TABLES = ("FabricIngress.switch_info.config", "FabricIngress.ecmp.algorithm",
          "FabricIngress.forwarding.nexthops", "FabricIngress.forwarding.routes",
          "FabricIngress.ecmp.groups", "FabricIngress.ecmp.members",
          T_GUARD_PORTS, T_GUARD_SOURCES)
"""The plan's tables these walks program: forwarding, and the source guard (every NIC
sends from both of its ports with its one address: the guard must let both through)."""


def _value(v: object) -> int:
    """A plan value as an int: a MAC ``02:00:…``, an IPv4 address ``10.0.0.1``, a number."""
    if isinstance(v, str) and v.count(".") == 3:
        return int(ipaddress.IPv4Address(v))
    return int(v.replace(":", ""), 16) if isinstance(v, str) else int(v)  # type: ignore[arg-type]


def _match(value: object) -> object:
    if isinstance(value, str) and "/" in value:
        net = ipaddress.ip_network(value)
        return Lpm(int(net.network_address), net.prefixlen)
    return Exact(_value(value))


def _program(prog: object, entries: list[Entry]) -> None:
    """The plan's forwarding entries into the program's tables (params in declaration
    order, as the plan writes them)."""
    tables = prog.state.tables  # type: ignore[attr-defined]
    for e in entries:
        if e.table not in TABLES:
            continue
        call = ActionCall(e.action, tuple(_value(v) for v in e.params.values()))
        if e.default:
            tables[e.table].set_default_action(call)
        else:
            tables[e.table].add_entry([_match(v) for v in e.match.values()], call)


def _udp_frame(src: str, dst: str, sport: int, dport: int = 4791) -> bytes:
    udp = struct.pack("!HHHH", sport, dport, 24, 0) + bytes(16)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
    words = sum(struct.unpack("!10H", ip))
    while words >> 16:
        words = (words & 0xFFFF) + (words >> 16)
    ip = ip[:10] + struct.pack("!H", ~words & 0xFFFF) + ip[12:]
    return bytes(6) + bytes.fromhex("060000000001") + b"\x08\x00" + ip + udp


def _switches(fab, entries: dict[str, list[Entry]]) -> dict[str, V1ModelSwitch]:
    path = str(REPO / "p4src" / "fabric.p4")
    ast = parse_file(path, [str(REPO / "p4src"), str(REPO / "p4src" / "include")])
    switches = {}
    for sw in fab.switches:
        prog = compile_program(ast, path, trace=False)
        _program(prog, entries[sw.name])
        switches[sw.name] = V1ModelSwitch(prog, cpu_port=255, log=None)
    return switches


def _walk(fab, switches, leaf: str, in_port: int, frame: bytes) -> list[tuple[str, int]]:
    name, hops = leaf, []
    for _ in range(3):
        out = switches[name].process_packet(in_port, frame)
        assert len(out) == 1, (name, out)
        port, frame = out[0]
        hops.append((name, port))
        info = fab.switch(name).ports[port]
        if info.kind == "host":
            break
        name, in_port = info.peer_node, info.peer_port
    return hops


def test_after_a_port_failure_the_spines_reach_the_nic_through_its_other_leaf() -> None:
    """NIC b0s0's port 1 dies: before the fabric reacts some frames to it still end on the
    dead port; after :func:`failover_updates` none does, from any NIC port of the other
    block, and frames the spines still had in flight to the dead leaf go back up."""
    fab = build_fabric(load_spec(REPO / "topo" / "specs" / "dualport.yaml"))
    plan = plan_fabric(fab)
    victim = fab.host("b0s0").nics[0]
    dead = (victim.ports[1].leaf, victim.ports[1].leaf_port)
    entries = {n: list(p.entries) for n, p in plan.items()}

    def on_dead(switches) -> int:
        hits = 0
        for src_host in (h for h in fab.hosts if h.block == 1):
            src = src_host.nics[0]
            for p in src.ports:
                for sport in range(49152, 49152 + 24):
                    hops = _walk(fab, switches, p.leaf, p.leaf_port,
                                 _udp_frame(src.ip, victim.ip, sport))
                    hits += hops[-1] == dead
                    assert hops[-1] in {(q.leaf, q.leaf_port) for q in victim.ports}
        return hits

    assert on_dead(_switches(fab, entries)) > 0           # the test can fail
    for name, updates in failover_updates(fab, {dead}).items():
        for kind, e in updates:
            key = e.match["hdr.ipv4.dst_addr"]
            entries[name] = [x for x in entries[name]
                             if not (x.table == e.table and x.match.get("hdr.ipv4.dst_addr") == key)]
            entries[name].append(e)
            assert kind in ("INSERT", "MODIFY")
    switches = _switches(fab, entries)
    assert on_dead(switches) == 0
    # a frame that reached the dead leaf anyway goes back up and on to the live leaf
    hops = _walk(fab, switches, dead[0], 3, _udp_frame("10.1.0.1", victim.ip, 50000))
    assert hops[-1] == (victim.ports[0].leaf, victim.ports[0].leaf_port)


def test_plan_forwards_from_both_ports_to_both_leaves_as_predicted() -> None:
    fab = build_fabric(load_spec(REPO / "topo" / "specs" / "dualport.yaml"))
    plan, model = plan_fabric(fab), fabric_hash_model(fab)
    switches = _switches(fab, {n: p.entries for n, p in plan.items()})
    rng = random.Random(29)
    reached: dict[str, set[str]] = {}
    walked = 0
    for src_host in fab.hosts:
        for dst_host in (h for h in fab.hosts if h.block != src_host.block):
            src, dst = src_host.nics[0], dst_host.nics[0]
            for nic_port in src.ports:
                for sport in rng.sample(range(1024, 1 << 16), 12):
                    name, in_port = nic_port.leaf, nic_port.leaf_port
                    frame, hops = _udp_frame(src.ip, dst.ip, sport), []
                    for _ in range(3):
                        out = switches[name].process_packet(in_port, frame)
                        assert len(out) == 1, (name, out)
                        port, frame = out[0]
                        hops.append((name, port))
                        info = fab.switch(name).ports[port]
                        if info.kind == "host":
                            break
                        name, in_port = info.peer_node, info.peer_port
                    leaf, up = hops[0]
                    spine = fab.switch(leaf).ports[up].peer_node
                    assert spine == predict_member(model.switch(leaf), 1, src.ip, dst.ip, 17, sport, 4791)
                    gid = next(e.params["group_id"] for e in plan[spine].entries
                               if e.table.endswith("forwarding.routes")
                               and ipaddress.ip_address(dst.ip) in ipaddress.ip_network(
                                   e.match["hdr.ipv4.dst_addr"]))
                    last_leaf = hops[-1][0]
                    assert last_leaf == predict_member(model.switch(spine), gid, src.ip, dst.ip, 17,
                                                       sport, 4791)
                    assert (last_leaf, hops[-1][1]) in {(p.leaf, p.leaf_port) for p in dst.ports}
                    assert frame[:6] == bytes.fromhex(dst.mac.replace(":", ""))
                    reached.setdefault(dst.ip, set()).add(last_leaf)
                    walked += 1
    assert walked == 4 * 2 * 2 * 12
    assert all(len(leaves) == 2 for leaves in reached.values()), reached
