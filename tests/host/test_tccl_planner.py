"""TCCL planner: orders, per-tier bytes and α-β times on the default small fabric
(2 blocks x 2 servers x 2 rails, 2 spines: ranks 0..7 = b0s0 g0,g1, b0s1 g0,g1, b1s0 ..., b1s1 ...),
answers worked out by hand."""
from __future__ import annotations

import pytest

from host.tccl.planner import Planner, PlanError, TierParams, parse_ranks, ranks_from_fabric, tier_of
from topo.model import build_fabric
from topo.spec import FabricSpec

S = 8 << 20


@pytest.fixture(scope="module")
def planner() -> Planner:
    return Planner(build_fabric())


def test_ring_orders(planner: Planner) -> None:
    assert planner.ring_order("tccl") == [0, 1, 3, 2, 4, 5, 7, 6]
    assert planner.ring_order("rank") == list(range(8))


def test_ring_allreduce_bytes_per_tier(planner: Planner) -> None:
    edge = 2 * 7 / 8 * S
    tccl = planner.plan("allreduce", S, order="tccl")
    # 0-1 nv, 1-3 leaf (rail 1), 3-2 nv, 2-4 spine, 4-5 nv, 5-7 leaf, 7-6 nv, 6-0 spine
    assert tccl.bytes_per_tier == {"nvlink": 4 * edge, "leaf": 2 * edge, "spine": 2 * edge}
    rank = planner.plan("allreduce", S, order="rank")
    # every server boundary goes from rail 1 to rail 0: across the spines
    assert rank.bytes_per_tier == {"nvlink": 4 * edge, "leaf": 0.0, "spine": 4 * edge}
    step = 5e-6 + (S / 8) / 12.5e9
    assert tccl.time_s == pytest.approx(14 * step)


def test_allgather_and_reducescatter_half_of_allreduce(planner: Planner) -> None:
    ar = planner.plan("allreduce", S).bytes_per_tier
    for c in ("allgather", "reducescatter"):
        p = planner.plan(c, S)
        assert p.bytes_per_tier == {t: v / 2 for t, v in ar.items()}
        assert p.rounds == 7


def test_tree_allreduce(planner: Planner) -> None:
    p = planner.plan("allreduce", S, algorithm="tree")
    # leaders 0, 2, 4, 6 (rail 0); bisection: 0->2, 0->4, 4->6; stars 0->1, 2->3, 4->5, 6->7
    assert sorted((a, b) for a, b, _ in p.edges) == [(0, 1), (0, 2), (0, 4), (2, 3), (4, 5), (4, 6), (6, 7)]
    assert p.bytes_per_tier == {"nvlink": 4 * 2 * S, "leaf": 2 * 2 * S, "spine": 1 * 2 * S}
    # depth 2 between servers + 1 inside: 2 * (3 * alpha_spine + S / B)
    assert p.time_s == pytest.approx(2 * (3 * 5e-6 + S / 12.5e9))


def test_alltoall_rail_aligned_moves_bytes_off_the_spines(planner: Planner) -> None:
    c = S / 8
    tccl = planner.plan("alltoall", S, order="tccl")
    assert tccl.bytes_per_tier == {"nvlink": 32 * c, "leaf": 16 * c, "spine": 32 * c}
    rank = planner.plan("alltoall", S, order="rank")
    assert rank.bytes_per_tier == {"nvlink": 8 * c, "leaf": 8 * c, "spine": 40 * c}
    assert tccl.rounds == 7 and tccl.time_s > 0


def test_single_server_job_is_all_nvlink() -> None:
    fab = build_fabric(FabricSpec(rails=8))
    p = Planner(fab, ranks_from_fabric(fab, ["b1s1"])).plan("allreduce", S)
    assert p.bytes_per_tier["leaf"] == p.bytes_per_tier["spine"] == 0
    assert p.time_s == pytest.approx(14 * TierParams().time_s("nvlink", S / 8))


def test_tier_of_and_parse_ranks() -> None:
    fab = build_fabric()
    r = parse_ranks(["b0s0:0", "b0s0:1", "b0s1:1", "b1s0:1"], fab)
    assert [tier_of(r[0], x) for x in r[1:]] == ["nvlink", "spine", "spine"]
    assert tier_of(r[1], r[2]) == "leaf"


def test_bad_input(planner: Planner) -> None:
    fab = build_fabric()
    with pytest.raises(PlanError, match="unknown rank 8"):
        planner.rank(8)
    with pytest.raises(PlanError, match="unknown collective"):
        planner.plan("broadcastx", S)
    with pytest.raises(PlanError, match="tree is planned for allreduce only"):
        planner.plan("allgather", S, algorithm="tree")
    with pytest.raises(PlanError, match="size"):
        planner.plan("allreduce", -1)
    with pytest.raises(PlanError, match="unknown server 'b7s0'"):
        ranks_from_fabric(fab, ["b7s0"])
    with pytest.raises(PlanError, match="GPUs 0..1"):
        parse_ranks(["b0s0:5"], fab)
    with pytest.raises(PlanError, match="already has a rank"):
        parse_ranks(["b0s0:0", "b0s0:0"], fab)
    with pytest.raises(PlanError, match="8 GPUs asked"):
        ranks_from_fabric(fab, ["b0s0"], gpus_per_server=8)
