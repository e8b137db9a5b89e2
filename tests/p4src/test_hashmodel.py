"""Tests of the published ECMP hash model (:mod:`p4src.hashmodel`): the CRC and packing
against p4sim's independent implementation, JSON round trip and validation errors (with
their JSON paths), the affine source-port sweep against direct computation, and — the
point of the model — that its predictions equal the egress port p4sim's pipeline really
picks: on ``programs/mini_fabric.p4`` (the fabric contract's tables and hash() call
shape) always, and on ``p4src/fabric.p4`` once that program exists — UDP flows and the
packets without a UDP header (TCP, ICMP, non-first UDP fragments), whose port fields the
switch hashes as 0, as BMv2 does."""
from __future__ import annotations

import copy
import json
import random
import struct
from pathlib import Path
from typing import Any, Callable

import pytest

from bench.fabric_bench import (
    FABRIC_P4,
    ROUTER_MAC,
    FabricSwitch,
    RoutedFlow,
    build_frame,
    check_forwarding,
    expected_port,
    ipv4_checksum,
    leaf_flows,
    load_fabric,
    setup_leaf,
    setup_spine,
    spine_flows,
)
from bench.results import BenchCheckError
from p4sim.engine import load_program
from p4sim.runtime import hashes as p4sim_hashes
from p4sim.v1model.switch import V1ModelSwitch
from p4src.hashmodel import (
    DEFAULT_FIELDS,
    FabricHashModel,
    Flow,
    GroupModel,
    HashField,
    SwitchHashModel,
    crc16_arc,
    crc32,
    flow_hash,
    member_index,
    pack_fields,
    port_to_member_table,
    ports_for_member,
    predict_member,
    predict_path,
    source_port_hashes,
)

MINI_P4 = Path(__file__).resolve().parent / "programs" / "mini_fabric.p4"
N_FLOWS = 1000


# --------------------------------------------------------------------------- helpers
def sample_fabric() -> FabricHashModel:
    leaf = SwitchHashModel("leaf-b0-r0", seed=0x1234ABCD, groups={
        1: GroupModel(0, ("spine0", "spine1", "spine2", "spine3")),
        2: GroupModel(0, ("spine0", "spine1", "spine2", "spine3")),   # same range, same names
    })
    spine = SwitchHashModel("spine0", algorithm="crc32", seed=7, groups={
        10: GroupModel(4, ("leaf0-a", "leaf0-b")),
    })
    return FabricHashModel({"leaf-b0-r0": leaf, "spine0": spine})


def random_flow(rng: random.Random, udp_share: float = 0.9) -> Flow:
    proto = 17 if rng.random() < udp_share else rng.choice((6, 1))
    return Flow(rng.getrandbits(32), rng.getrandbits(32), proto,
                rng.getrandbits(16), rng.getrandbits(16))


# --------------------------------------------------------------------------- algorithms
def test_crc_and_packing_match_p4sim_and_reference_vectors() -> None:
    assert crc16_arc(b"123456789") == 0xBB3D
    assert crc16_arc(bytes.fromhex("0bb81f90")) == 0x5D8A
    assert crc32(b"123456789") == 0xCBF43926
    rng = random.Random(1)
    for _ in range(200):
        fields = [(rng.getrandbits(w), w) for w in (rng.randrange(1, 40) for _ in range(5))]
        data = pack_fields(fields)
        assert data == p4sim_hashes.pack_fields(fields)
        assert crc16_arc(data) == p4sim_hashes.get_algorithm("crc16")(data)
        assert crc32(data) == p4sim_hashes.get_algorithm("crc32")(data)


def test_member_index_equals_p4sim_compute_hash() -> None:
    """The model's field values (UDP ports as 0 unless UDP: never skipped) and ``% size +
    base`` against p4sim's ``compute_hash`` over an explicitly built field list."""
    rng = random.Random(2)
    for algo in ("crc16", "crc32"):
        for _ in range(300):
            f = random_flow(rng, udp_share=0.7)
            size, base = rng.randrange(1, 9), rng.randrange(0, 64)
            m = SwitchHashModel("s", algorithm=algo, seed=rng.getrandbits(32),
                                groups={3: GroupModel(base, tuple(f"m{i}" for i in range(size)))})
            udp = f.proto == 17
            fields = [(m.seed, 32), (f.src, 32), (f.dst, 32), (f.proto, 8),
                      (f.sport if udp else 0, 16), (f.dport if udp else 0, 16)]
            want = p4sim_hashes.compute_hash(algo, fields, base, size) & 0xFFFF
            assert member_index(m, 3, f.src, f.dst, f.proto, f.sport, f.dport) == want
            assert predict_member(m, 3, f.src, f.dst, f.proto, f.sport, f.dport) == f"m{want - base}"


def test_non_udp_flows_ignore_ports_and_addresses_accept_strings() -> None:
    m = SwitchHashModel("s", seed=99, groups={1: GroupModel(0, tuple("abcdefgh"))})
    tcp = {member_index(m, 1, "10.0.0.1", "10.1.2.3", 6, sport, 80) for sport in range(500)}
    assert len(tcp) == 1
    rng = random.Random(4)
    udp = {member_index(m, 1, "10.0.0.1", "10.1.2.3", 17, rng.getrandbits(16), 80)
           for _ in range(500)}
    assert len(udp) == 8
    assert (member_index(m, 1, "10.0.0.1", "10.1.2.3", 17, 5, 6)
            == member_index(m, 1, 0x0A000001, 0x0A010203, 17, 5, 6))
    assert flow_hash(m, Flow.of("10.0.0.1", "10.1.2.3", 6, 1, 2)) == flow_hash(
        m, Flow.of("10.0.0.1", "10.1.2.3", 6, 3, 4))


def test_non_udp_flows_hash_the_ports_as_zero_not_skipped() -> None:
    """The message is always the 17 bytes of the field list: for TCP and ICMP the two
    port fields are 0 (BMv2 hashes the copies p4c made of the never-extracted UDP fields),
    not left out (13 bytes, the rule this model used to follow)."""
    rng = random.Random(12)
    differs = 0
    for _ in range(200):
        for algo in ("crc16", "crc32"):
            m = SwitchHashModel("s", algorithm=algo, seed=rng.getrandbits(32))
            src, dst, proto = rng.getrandbits(32), rng.getrandbits(32), rng.choice((1, 6))
            msg = pack_fields([(m.seed, 32), (src, 32), (dst, 32), (proto, 8), (0, 16), (0, 16)])
            assert len(msg) == 17
            h = flow_hash(m, Flow(src, dst, proto, rng.getrandbits(16), rng.getrandbits(16)))
            assert h == p4sim_hashes.get_algorithm(algo)(msg)
            # a non-first UDP fragment (no UDP header on the switch) is Flow(src, dst, 17, 0, 0)
            assert flow_hash(m, Flow(src, dst, 17)) == p4sim_hashes.get_algorithm(algo)(
                msg[:12] + bytes([17]) + msg[13:])
            skipped = p4sim_hashes.get_algorithm(algo)(msg[:13])
            differs += h != skipped
    assert differs > 390


def test_predict_path_over_hops() -> None:
    fabric = sample_fabric()
    flow = Flow.of("10.0.0.1", "10.1.0.1", 17, 49152, 4791)
    path = predict_path(fabric, flow, [("leaf-b0-r0", 1), ("spine0", 10)])
    assert path == [predict_member(fabric.switches["leaf-b0-r0"], 1, *flow),
                    predict_member(fabric.switches["spine0"], 10, *flow)]
    with pytest.raises(KeyError, match="no switch 'nope'"):
        predict_path(fabric, flow, [("nope", 1)])
    with pytest.raises(KeyError, match="no ECMP group 9"):
        predict_path(fabric, flow, [("spine0", 9)])


# --------------------------------------------------------------------------- JSON
def test_json_round_trip() -> None:
    fabric = sample_fabric()
    text = fabric.to_json()
    data = json.loads(text)
    assert data["version"] == 1
    assert [s["switch"] for s in data["switches"]] == ["leaf-b0-r0", "spine0"]
    assert data["switches"][0]["fields"][0] == {"name": "ecmp_seed", "width_bits": 32}
    assert data["switches"][1]["groups"] == [
        {"group_id": 10, "base": 4, "members": ["leaf0-a", "leaf0-b"]}]
    back = FabricHashModel.from_json(text)
    assert back == fabric
    assert back.switches["leaf-b0-r0"].fields == DEFAULT_FIELDS
    assert FabricHashModel.from_dict(data) == fabric
    # optional keys may be left out
    for key in ("packing", "formula"):
        del data[key]
    del data["switches"][0]["member_width_bits"]
    assert FabricHashModel.from_dict(data) == fabric


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        node: Any = doc
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value
    return mutate


def _del(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        node: Any = doc
        for p in path[:-1]:
            node = node[p]
        del node[path[-1]]
    return mutate


BAD = [
    (_set(["version"], 2), r"\$\.version: unsupported version 2"),
    (_del(["switches"]), r"\$\.switches: missing"),
    (_set(["extra"], 1), r"\$\.extra: unknown key"),
    (_set(["packing"], "lsb"), r"\$\.packing: must be"),
    (_set(["switches"], {}), r"\$\.switches: must be a list"),
    (_set(["switches", 0, "algorithm"], "md5"), r"\$\.switches\[0\]\.algorithm: unknown algorithm"),
    (_set(["switches", 0, "switch"], ""), r"\$\.switches\[0\]\.switch: must be a non-empty string"),
    (_set(["switches", 1, "switch"], "leaf-b0-r0"), r"\$\.switches\[1\]\.switch: duplicate switch"),
    (_set(["switches", 0, "seed"], 1 << 32), r"\$\.switches\[0\]\.seed: must be in 0\.\.4294967295"),
    (_set(["switches", 0, "seed"], "7"), r"\$\.switches\[0\]\.seed: must be an integer"),
    (_set(["switches", 0, "seed"], True), r"\$\.switches\[0\]\.seed: must be an integer"),
    (_set(["switches", 0, "fields", 2, "name"], "ipv4.ttl"),
     r"\$\.switches\[0\]\.fields\[2\]\.name: unknown field 'ipv4\.ttl'"),
    (_set(["switches", 0, "fields", 2, "name"], "ipv4.src_addr"),
     r"\$\.switches\[0\]\.fields\[2\]\.name: duplicate field"),
    (_set(["switches", 0, "fields", 3, "width_bits"], 0),
     r"\$\.switches\[0\]\.fields\[3\]\.width_bits: must be in 1\.\.64"),
    (_del(["switches", 0, "fields", 3, "width_bits"]),
     r"\$\.switches\[0\]\.fields\[3\]\.width_bits: missing"),
    (_set(["switches", 0, "groups", 0, "members"], []),
     r"\$\.switches\[0\]\.groups\[0\]\.members: a group needs at least one member"),
    (_set(["switches", 0, "groups", 0, "members", 1], 5),
     r"\$\.switches\[0\]\.groups\[0\]\.members\[1\]: must be a non-empty string"),
    (_set(["switches", 0, "groups", 1, "group_id"], 1),
     r"\$\.switches\[0\]\.groups\[1\]\.group_id: duplicate group 1"),
    (_set(["switches", 0, "groups", 0, "base"], 65533),
     r"\$\.switches\[0\]\.groups\[0\]\.base: must be in 0\.\.65532"),
    (_set(["switches", 0, "groups", 1, "members", 2], "spine9"),
     r"\$\.switches\[0\]\.groups\[1\]\.members\[2\]: member index 2 is 'spine9' here but "
     r"'spine2' in group 1"),
    (_set(["switches", 0, "member_width_bits"], 40),
     r"\$\.switches\[0\]\.member_width_bits: must be in 1\.\.32"),
]


@pytest.mark.parametrize("mutate,message", BAD, ids=[m for _, m in BAD])
def test_validation_names_the_json_path(mutate: Callable[[dict[str, Any]], None],
                                        message: str) -> None:
    doc = sample_fabric().to_dict()
    bad = copy.deepcopy(doc)
    mutate(bad)
    with pytest.raises(ValueError, match=r"^hash model " + message):
        FabricHashModel.from_json(json.dumps(bad))


def test_invalid_json_and_invalid_in_memory_models() -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        FabricHashModel.from_json("{")
    with pytest.raises(ValueError, match=r"^hash model \$: must be an object"):
        FabricHashModel.from_json("[]")
    bad = SwitchHashModel("s", fields=(HashField("nope", 8),))
    with pytest.raises(ValueError, match="unknown field 'nope'"):
        FabricHashModel({"s": bad}).to_json()
    with pytest.raises(ValueError, match="holds switch 's'"):
        FabricHashModel({"t": SwitchHashModel("s")}).to_json()


# --------------------------------------------------------------------------- source-port sweep
@pytest.mark.parametrize("algo", ["crc16", "crc32"])
def test_affine_sweep_equals_direct_computation(algo: str) -> None:
    rng = random.Random(3)
    for trial in range(6):
        size = rng.randrange(1, 9)
        m = SwitchHashModel("s", algorithm=algo, seed=rng.getrandbits(32),
                            groups={1: GroupModel(rng.randrange(0, 100),
                                                  tuple(f"m{i}" for i in range(size)))})
        src, dst = rng.getrandbits(32), rng.getrandbits(32)
        proto = 17 if trial < 5 else 6
        dport = rng.getrandbits(16)
        hashes = source_port_hashes(m, src, dst, proto, dport)
        table = port_to_member_table(m, 1, src, dst, proto, dport)
        assert len(hashes) == len(table) == 65536
        for sport in rng.sample(range(65536), 300) + [0, 1, 65535]:
            assert hashes[sport] == flow_hash(m, Flow(src, dst, proto, sport, dport))
            assert table[sport] == member_index(m, 1, src, dst, proto, sport, dport)


def test_sweep_is_a_bijection_for_crc16_and_solves_for_members() -> None:
    m = SwitchHashModel("leaf", seed=0xC0FFEE, groups={1: GroupModel(0, ("a", "b", "c", "d")),
                                                        2: GroupModel(4, tuple("pqrstu"))})
    hashes = source_port_hashes(m, "10.0.0.1", "10.2.0.1", 17, 4791)
    assert sorted(hashes) == list(range(65536))
    table = port_to_member_table(m, 1, "10.0.0.1", "10.2.0.1", 17, 4791)
    assert [table.count(i) for i in range(4)] == [16384] * 4
    table6 = port_to_member_table(m, 2, "10.0.0.1", "10.2.0.1", 17, 4791)
    assert sorted(set(table6)) == [4, 5, 6, 7, 8, 9]
    ports = ports_for_member(m, 1, "10.0.0.1", "10.2.0.1", 17, 4791, "c")
    assert len(ports) == 16384 and ports == sorted(ports)
    assert {predict_member(m, 1, "10.0.0.1", "10.2.0.1", 17, p, 4791) for p in ports[:200]} == {"c"}
    with pytest.raises(KeyError, match="no member 'z'"):
        ports_for_member(m, 1, "10.0.0.1", "10.2.0.1", 17, 4791, "z")
    # not UDP: one member for every port
    assert len(set(port_to_member_table(m, 1, "10.0.0.1", "10.2.0.1", 6, 80))) == 1


def test_aligned_port_blocks_reach_only_two_of_eight_members() -> None:
    """A documented hazard, exact for crc16 with the contract's field order: flipping any
    of source-port bits 0..10 flips only bit 0 of the low three bits of H (the map is
    linear and independent of seed and addresses), so 2,048 consecutive aligned ports reach
    just 2 members of a 4- or 8-member group. Hosts must pick ports with the model."""
    rng = random.Random(6)
    for _ in range(5):
        m = SwitchHashModel("s", seed=rng.getrandbits(32), groups={1: GroupModel(0, tuple("abcdefgh"))})
        table = port_to_member_table(m, 1, rng.getrandbits(32), rng.getrandbits(32), 17, 4791)
        block = rng.randrange(16) * 4096
        assert len(set(table[block:block + 2048])) == 2
        assert len(set(table[block + 2048:block + 4096])) == 2
        assert len(set(table[block:block + 4096])) == 4


# --------------------------------------------------------------------------- against p4sim
def _check_pipeline(prog_loader: Callable[[], Any], routed: bool) -> None:
    """≥ 1000 random UDP 5-tuples (plus TCP and local traffic) through a leaf and a spine;
    egress port == model prediction; then a new seed on the leaf changes the mapping and
    the model still predicts it."""
    rng = random.Random(11)
    for setup, make_flows, count in ((setup_leaf, leaf_flows, 1700), (setup_spine, spine_flows, 1200)):
        prog = prog_loader()
        sw = setup(prog.state)
        flows = make_flows(sw, count, rng)
        ecmp_udp = [f for f in flows if f.proto == 17 and (sw.name == "spine0" or f.port > 8)]
        assert len(ecmp_udp) >= N_FLOWS
        frames = [build_frame(f.src, f.dst, f.proto, f.sport, f.dport) for f in flows]
        switch = V1ModelSwitch(prog, cpu_port=255, log=None)
        check_forwarding(switch, 1, flows, frames, sw.name, routed)
        assert not switch.stats.errors
        assert len({f.port for f in ecmp_udp}) >= 4                   # ECMP really spreads

    prog = prog_loader()
    sw = setup_leaf(prog.state, seed=1)
    flows = leaf_flows(sw, 400, random.Random(5))
    frames = [build_frame(f.src, f.dst, f.proto, f.sport, f.dport) for f in flows]
    switch = V1ModelSwitch(prog, cpu_port=255, log=None)
    check_forwarding(switch, 1, flows, frames, "leaf seed 1", routed)
    sw.set_switch(1, 0, seed=2)
    reseeded = [f.__class__(f.src, f.dst, f.proto, f.sport, f.dport,
                            expected_port(sw, 1, f.src, f.dst, f.proto, f.sport, f.dport)
                            if f.port > 8 else f.port) for f in flows]
    moved = sum(a.port != b.port for a, b in zip(flows, reseeded))
    assert moved > len(flows) // 4                 # ~3/4 of 300 ECMP flows change uplink
    check_forwarding(switch, 1, reseeded, frames, "leaf seed 2", routed)
    with pytest.raises(BenchCheckError, match="egress port"):
        check_forwarding(switch, 1, flows, frames, "old prediction", routed)


def test_model_predicts_the_mini_fabric_pipeline() -> None:
    _check_pipeline(lambda: load_program(str(MINI_P4), trace=False), routed=False)


@pytest.mark.skipif(not FABRIC_P4.exists(), reason="p4src/fabric.p4 does not exist yet")
def test_model_predicts_the_fabric_pipeline() -> None:
    _check_pipeline(load_fabric, routed=True)


# --------------------------------------------------------------------------- packets without UDP
IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP = 1, 6, 17


def l4_frame(src: int, dst: int, proto: int, sport: int, dport: int, frag_offset: int = 0) -> bytes:
    """An Ethernet/IPv4 frame whose bytes after the IPv4 header carry real TCP, ICMP echo
    or UDP headers; with ``frag_offset`` > 0 a non-first fragment, so the 4 bytes that look
    like UDP ports are payload to the switch."""
    if proto == IPPROTO_TCP:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x02, 0x2000, 0, 0)
    elif proto == IPPROTO_ICMP:
        l4 = struct.pack("!BBHHH", 8, 0, 0, sport, dport)          # echo: id, sequence
    else:
        l4 = struct.pack("!HHHH", sport, dport, 8 + 16, 0)
    l4 += bytes(16)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(l4), 7, frag_offset & 0x1FFF, 64, proto,
                     0, src, dst)
    ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
    eth = ROUTER_MAC.to_bytes(6, "big") + (0x001122334455).to_bytes(6, "big") + b"\x08\x00"
    return eth + ip + l4


def _no_udp_flows(sw: FabricSwitch, group_of: Callable[[int], int], src_of: Callable[[], int],
                  dst_of: Callable[[], int], rng: random.Random, count: int,
                  fragments: bool) -> tuple[list[RoutedFlow], list[bytes], int]:
    """TCP, ICMP and (``fragments``) non-first UDP fragments with random ports in their
    bytes; each flow's port is the model's for the flow *as the switch sees it*: ports 0
    (a fragment is ``Flow(src, dst, 17, 0, 0)``). Also returns how many of them the old
    skipping rule (13-byte message) would have sent elsewhere."""
    flows, frames, moved = [], [], 0
    kinds = (IPPROTO_TCP, IPPROTO_ICMP, IPPROTO_UDP) if fragments else (IPPROTO_TCP, IPPROTO_ICMP)
    for i in range(count):
        proto = kinds[i % len(kinds)]
        src, dst = src_of(), dst_of()
        sport, dport = rng.getrandbits(16), rng.choice((4791, 80, 443, rng.getrandbits(16)))
        frag = rng.randrange(1, 0x2000) if proto == IPPROTO_UDP else 0
        gid = group_of(dst)
        port = expected_port(sw, gid, src, dst, proto, 0, 0)
        assert port == expected_port(sw, gid, src, dst, proto, sport, dport) or proto == IPPROTO_UDP
        group = sw.model.groups[gid]
        old = pack_fields([(sw.model.seed, 32), (src, 32), (dst, 32), (proto, 8)])
        old_member = p4sim_hashes.get_algorithm(sw.model.algorithm)(old) % group.size
        moved += group.members[old_member] != f"port{port}"
        flows.append(RoutedFlow(src, dst, proto, sport, dport, port))
        frames.append(l4_frame(src, dst, proto, sport, dport, frag))
    return flows, frames, moved


def _check_no_udp(prog_loader: Callable[[], Any], routed: bool, fragments: bool) -> None:
    rng = random.Random(21)
    prog = prog_loader()
    leaf = setup_leaf(prog.state)
    flows, frames, moved = _no_udp_flows(
        leaf, lambda dst: 1, lambda: 0x0A000001,
        lambda: (10 << 24) | (rng.randrange(1, 256) << 16) | rng.getrandbits(16), rng, 300, fragments)
    switch = V1ModelSwitch(prog, cpu_port=255, log=None)
    check_forwarding(switch, 1, flows, frames, "leaf, no UDP header", routed)
    assert not switch.stats.errors
    assert len({f.port for f in flows}) == 4 and moved > 150     # spreads; the old rule differs

    prog = prog_loader()
    spine = setup_spine(prog.state)
    flows, frames, moved = _no_udp_flows(
        spine, lambda dst: ((dst >> 16) & 0xFF) + 1,
        lambda: (10 << 24) | (rng.randrange(8) << 16) | rng.getrandbits(16),
        lambda: (10 << 24) | (rng.randrange(8) << 16) | rng.getrandbits(16), rng, 300, fragments)
    switch = V1ModelSwitch(prog, cpu_port=255, log=None)
    check_forwarding(switch, 1, flows, frames, "spine, no UDP header", routed)
    assert not switch.stats.errors
    assert moved > 75


def test_model_predicts_tcp_and_icmp_on_the_mini_fabric_pipeline() -> None:
    # the miniature's parser does not look at the fragment offset: no fragments here
    _check_no_udp(lambda: load_program(str(MINI_P4), trace=False), routed=False, fragments=False)


@pytest.mark.skipif(not FABRIC_P4.exists(), reason="p4src/fabric.p4 does not exist yet")
def test_model_predicts_tcp_icmp_and_udp_fragments_on_the_fabric_pipeline() -> None:
    _check_no_udp(load_fabric, routed=True, fragments=True)


def test_fabric_switch_helper_records_the_model() -> None:
    prog = load_program(str(MINI_P4), trace=False)
    sw = FabricSwitch(prog.state, "spine0")
    sw.set_switch(3, 1, seed=42)
    sw.add_group(5, 10, [3, 4, 7], nexthop_base=50)
    assert sw.model.seed == 42
    assert sw.model.groups == {5: GroupModel(10, ("port3", "port4", "port7"))}
    assert FabricHashModel({"spine0": sw.model}).to_dict()["switches"][0]["groups"][0]["base"] == 10
