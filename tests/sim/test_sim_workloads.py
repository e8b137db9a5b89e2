"""Workloads from TCCL's planner: ring, tree, All-to-All phases, placements, background,
and the impossible placements refused with a clear message."""
from __future__ import annotations

import numpy as np
import pytest

from sim.policies import run_phase
from sim.routing import route_flows
from sim.topology import TIER, SimFabric, SimInputError
from sim.workloads import background_flows, collective_phases, place_job
from topo.model import build_fabric
from topo.spec import FabricSpec

SPEC = FabricSpec(blocks=2, servers_per_block=8, rails=4, spines=4, leaf_ports=64)


@pytest.fixture(scope="module")
def sf() -> SimFabric:
    return SimFabric.build(build_fabric(SPEC))


def test_a_ring_on_one_rail_crosses_no_spine(sf: SimFabric) -> None:
    from sim.workloads import Job
    from host.tccl.planner import parse_ranks
    ranks = parse_ranks([f"b0s{s}:2" for s in range(8)], sf.fabric)
    job = Job([r.server for r in ranks], ranks, 1)
    ph = collective_phases(sf, job, "allreduce", 1 << 20)[0]
    assert ph.repeat == 14 and len(ph.src_nic) == 8
    for policy in ("random_ecmp", "tccl"):
        r = route_flows(sf, ph.src_nic, ph.dst_nic, np.full(8, 50000))
        used = r.links[r.links >= 0]
        assert not np.isin(sf.tier[used], [TIER["leaf_up"], TIER["spine_down"]]).any()
        res = run_phase(sf, ph, policy)
        assert (res.hops == 1).all()
    assert np.isin(sf.tier[used], [TIER["nic_up"]]).sum() == 8


def test_rank_order_ring_crosses_spines_tccl_order_less(sf: SimFabric) -> None:
    job = place_job(sf, 64)
    spine = {}
    for order in ("rank", "tccl"):
        ph = collective_phases(sf, job, "allreduce", 1 << 20, order=order)[0]
        r = route_flows(sf, ph.src_nic, ph.dst_nic, np.full(len(ph.src_nic), 50000))
        spine[order] = int((r.links[:, 2] >= 0).sum())
    assert spine["tccl"] < spine["rank"]


def test_channels_spread_a_ring_over_every_nic(sf: SimFabric) -> None:
    job = place_job(sf, 64)
    ph = collective_phases(sf, job, "allgather", 1 << 20, order="rank", channels=4)[0]
    assert len(ph.src_nic) == 4 * 64 and ph.repeat == 63
    assert ph.size_bytes[0] == pytest.approx((1 << 20) / 64 / 4)
    r = route_flows(sf, ph.src_nic, ph.dst_nic, np.full(len(ph.src_nic), 50000))
    up = sf.tier[r.links[:, 0]] == TIER["nic_up"]
    assert len(set(ph.src_nic[up] % sf.rails)) == 4


def test_tree_and_alltoall_phases(sf: SimFabric) -> None:
    job = place_job(sf, 16, "random", seed=5)
    tree = collective_phases(sf, job, "allreduce", 1 << 20, algorithm="tree")
    assert [p.name for p in tree] == ["tree-reduce", "tree-broadcast"] and len(tree[0].src_nic) == 15
    a2a = collective_phases(sf, job, "alltoall", 1 << 20, order="tccl", alltoall_rounds=4)
    assert len(a2a) == 4 and sum(p.repeat for p in a2a) == pytest.approx(15)


def test_placements(sf: SimFabric) -> None:
    assert place_job(sf, 16).servers == ["b0s0", "b0s1", "b0s2", "b0s3"]
    frag = place_job(sf, 16, "fragmented", fragment_servers=2).servers
    assert frag == ["b0s0", "b0s1", "b0s4", "b0s5"]
    rnd = place_job(sf, 16, "random", seed=3).servers
    assert len(rnd) == 4 and rnd == sorted(rnd, key=lambda h: [x.name for x in sf.fabric.hosts].index(h))


def test_impossible_placements_are_refused(sf: SimFabric) -> None:
    with pytest.raises(SimInputError, match="65 ranks asked but the fabric has 64 GPUs"):
        place_job(sf, 65)
    with pytest.raises(SimInputError, match="unknown placement 'spread'"):
        place_job(sf, 8, "spread")
    with pytest.raises(SimInputError, match="not a multiple"):
        place_job(sf, 6)


def test_background_avoids_the_job_and_one_leaf(sf: SimFabric) -> None:
    s, d, z = background_flows(sf, 50, 1e6, seed=1, exclude_hosts=["b0s0"])
    assert len(s) == 50 and (sf.nic_leaf[s] != sf.nic_leaf[d]).all()
    assert not (s // sf.rails == sf.host_index["b0s0"]).any()
