"""Simulated paths are the hash model's: vectorised CRC and member choice against
``p4src.hashmodel`` and GOR's ``PathEngine.current_path`` (the fabric's hash model is
``controller.fabric_setup.fabric_hash_model``, tested in ``tests/controller``)."""
from __future__ import annotations

import ipaddress

import numpy as np
import pytest

from controller.gor.decisions import FlowKey
from controller.gor.paths import LinkState, PathEngine
from p4src.hashmodel import Flow, SwitchHashModel, crc16_arc, crc32, flow_hash, predict_path
from sim.routing import crc_rows, messages, route_flows
from sim.topology import SimFabric, SimInputError, member_port
from sim_flows import random_cross_leaf_flows
from topo.model import build_fabric
from topo.spec import FabricSpec

SPECS = [FabricSpec(),
         FabricSpec(blocks=3, servers_per_block=4, rails=2, spines=3, uplinks_per_spine=2, leaf_ports=64),
         FabricSpec(blocks=2, servers_per_block=4, rails=2, spines=4, leaves_per_rail=2, ecmp_seed=9)]


def test_vectorised_crc_matches_the_hash_model() -> None:
    rng = np.random.default_rng(1)
    msg = rng.integers(0, 256, (50, 17), dtype=np.uint8)
    c16 = crc_rows(msg, np.zeros(50, bool))
    c32 = crc_rows(msg, np.ones(50, bool))
    for i in range(50):
        assert c16[i] == crc16_arc(bytes(msg[i])) and c32[i] == crc32(bytes(msg[i]))


def test_vectorised_hash_of_non_udp_flows_matches_the_hash_model() -> None:
    """TCP and ICMP flows (ports in the flow, none on the wire for the switch) hash their
    port fields as 0, in the 17-byte message, exactly as ``p4src.hashmodel``."""
    rng = np.random.default_rng(2)
    n = 300
    seed, src, dst = (rng.integers(0, 2**32, n, dtype=np.uint64) for _ in range(3))
    sport, dport = (rng.integers(0, 2**16, n, dtype=np.uint64) for _ in range(2))
    proto = rng.choice(np.array([1, 6, 17], np.uint64), n)
    use32 = rng.random(n) < 0.5
    h = crc_rows(messages(seed, src, dst, sport, dport, proto), use32)
    for i in range(n):
        m = SwitchHashModel("s", algorithm="crc32" if use32[i] else "crc16", seed=int(seed[i]))
        f = Flow(int(src[i]), int(dst[i]), int(proto[i]), int(sport[i]), int(dport[i]))
        assert int(h[i]) == flow_hash(m, f), f
    tcp = messages(seed[:1], src[:1], dst[:1], sport[:1], dport[:1], 6)
    assert tcp.shape == (1, 17) and tcp[0, 12] == 6 and not tcp[0, 13:].any()


@pytest.mark.parametrize("spec", SPECS, ids=["default", "parallel-links", "two-leaves-per-rail"])
def test_simulated_path_is_the_hash_model_prediction(spec: FabricSpec) -> None:
    fab = build_fabric(spec)
    sf = SimFabric.build(fab)
    eng = PathEngine(fab, sf.hash_model, LinkState.from_fabric(fab))
    src, dst, sport = random_cross_leaf_flows(fab, sf, 300, seed=4)
    r = route_flows(sf, np.array(src), np.array(dst), np.array(sport))
    for i in range(len(src)):
        s_ip = str(ipaddress.IPv4Address(int(sf.nic_ip[src[i]])))
        d_ip = str(ipaddress.IPv4Address(int(sf.nic_ip[dst[i]])))
        sl, dl = sf.leaf_names[sf.nic_leaf[src[i]]], sf.leaf_names[sf.nic_leaf[dst[i]]]
        flow = Flow.of(s_ip, d_ip, 17, sport[i], 4791)
        up_member = predict_path(sf.hash_model, flow, [(sl, 1)])[0]
        up_key = (sl, member_port(fab.switch(sl), up_member))
        assert sf.link_keys[r.links[i, 1]] == up_key
        spine = up_member.partition("#")[0]
        gid = eng.spine_group(spine, dl)
        if gid is None:
            down_key = (spine, member_port(fab.switch(spine), dl))
        else:
            down_member = predict_path(sf.hash_model, flow, [(spine, gid)])[0]
            down_key = (spine, member_port(fab.switch(spine), down_member))
        assert sf.link_keys[r.links[i, 2]] == down_key
        cur = eng.current_path(FlowKey(s_ip, d_ip, 17, sport[i], 4791), sl, dl)
        assert cur is not None and cur.links == (up_key, down_key)


def test_failed_spine_leaves_the_groups_and_crossed_cables_blackhole() -> None:
    fab = build_fabric()
    sf = SimFabric.build(fab, ["s0"])
    assert sf.hash_model.switch("b0r0l0").groups[1].members == ("s1",)
    r = route_flows(sf, np.array([0] * 20), np.array([4] * 20), np.arange(49152, 49172))
    assert not r.failed.any() and set(r.spine.tolist()) == {1}
    # b1r0l0 <-> s0 cut: the other leaves detour b1r0l0's traffic over s1 (tests/sim/test_sim_detours.py)
    sf2 = SimFabric.build(fab, ["b1r0l0:3"])
    r2 = route_flows(sf2, np.array([0] * 40), np.array([4] * 40), np.arange(49152, 49192))
    assert not r2.failed.any() and set(r2.spine.tolist()) == {1}
    # and b0r0l0 <-> s1 cut too: b0r0l0 only reaches s0, which has no link to b1r0l0, so no
    # detour exists and its flows there are lost
    sf3 = SimFabric.build(fab, ["b1r0l0:3", "b0r0l0:4"])
    r3 = route_flows(sf3, np.array([0] * 40), np.array([4] * 40), np.arange(49152, 49192))
    assert r3.blackholed.all() and not r3.unreachable.any()
    with pytest.raises(SimInputError, match="unknown switch 'x9'"):
        SimFabric.build(fab, ["x9"])
    with pytest.raises(SimInputError, match="is a leaf"):
        SimFabric.build(fab, ["b0r0l0"])


def test_no_live_uplink_is_unreachable() -> None:
    sf = SimFabric.build(build_fabric(), ["s0", "s1"])
    r = route_flows(sf, np.array([0]), np.array([4]), np.array([50000]))
    assert r.unreachable.tolist() == [True]
