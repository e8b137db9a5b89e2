"""GOR across pods (``controller.gor.tierpaths`` through ``PathEngine``) on the two-pod,
dual-port spec: candidates include the core paths, the current path and the solved source
ports agree with the hash model the switches are programmed with
(:class:`controller.fabric.tiers.TierModel`), overrides pin every ECMP hop, and the 75 %
rule reads every tier (a hot core link or core downlink rejects the paths through it)."""
from __future__ import annotations

from pathlib import Path

from controller.fabric.tiers import TierModel
from controller.gor.decisions import FlowKey, MoveOrder
from controller.gor.paths import ElephantFlow, PathEngine
from topo.model import Fabric

# the fab and engine fixtures (conftest.py) build their fabric from SPEC
SPEC = Path(__file__).resolve().parents[2] / "topo" / "specs" / "pod2-dualport.yaml"
SRC, DST = "10.0.0.1", "10.0.2.1"          # b0s0 rail 0 (pod 0) -> p1.b0s0 rail 0 (pod 1)
SRC_LEAF, DST_LEAF = "b0r0l0", "p1.b0r0l0"


def _roles(fab: Fabric, links: tuple) -> list[str]:
    return [fab.switch(s).role for s, _ in links]


def test_cross_pod_candidates_are_the_core_paths(fab: Fabric, engine: PathEngine) -> None:
    cands = engine.candidate_paths(SRC_LEAF, DST_LEAF)
    # 2 leaf uplinks x 4 core links of each spine x the core's 2 links to the spine of its
    # plane in pod 1 x 1 link to the leaf = 16 paths, every one leaf-spine-core-spine
    assert len(cands) == 16 and len(set(cands)) == 16
    assert all(_roles(fab, p.links) == ["leaf", "spine", "core", "spine"] for p in cands)
    assert all(fab.switch(p.links[-1][0]).ports[p.links[-1][1]].peer_node == DST_LEAF for p in cands)
    # inside a pod a path stays two links long
    same_pod = engine.candidate_paths("b0r0l0", "b0r1l0")
    assert len(same_pod) == 2 and all(_roles(fab, p.links) == ["leaf", "spine"] for p in same_pod)


def test_current_path_and_solved_ports_agree_with_the_programmed_hash(fab: Fabric,
                                                                      engine: PathEngine) -> None:
    tiers = TierModel.of(fab)
    nic = fab.host("b0s0").nics[0]
    reached = set()
    for sport in range(49152, 49152 + 64):
        now = engine.current_path(FlowKey(SRC, DST, 17, sport, 4791), SRC_LEAF, DST_LEAF)
        want = tiers.path(nic, 0, DST, sport)
        assert now is not None and now.links == want.hops[:-1]
        reached.add(now.links)
    solved = 0
    for p in engine.candidate_paths(SRC_LEAF, DST_LEAF):
        flow = FlowKey(SRC, DST, 17, 49152, 4791)
        sport = engine.solve_sport(flow, p)
        if sport is None:
            continue
        solved += 1
        assert sport != flow.sport
        assert tiers.path(nic, 0, DST, sport).hops[:-1] == p.links
    # the core and the spines' down groups hash ports-first (topo/README.md, "Hashing the
    # third tier"), so every one of the 16 paths to one leaf has a source port (4 before)
    assert solved == 16
    assert len(reached) > 1


def test_override_pins_every_ecmp_hop(engine: PathEngine) -> None:
    p = engine.candidate_paths(SRC_LEAF, DST_LEAF)[0]
    entries = engine.override_entries(p)
    # leaf (2 uplinks), spine (4 core links), core (2 links to pod 1's spine), pod 1's spine
    # (its subnet route spans the NIC's two leaves)
    assert [(e.switch, e.nexthop_id) for e in entries] == list(p.links)


def _flow(engine: PathEngine, sport: int) -> ElephantFlow:
    key = FlowKey(SRC, DST, 17, sport, 4791)
    return ElephantFlow(key, 150e9, SRC_LEAF, DST_LEAF)


def test_the_75_percent_rule_reads_the_core_tier(fab: Fabric, engine: PathEngine) -> None:
    flow = _flow(engine, 49152)
    now = engine.current_path(flow.flow, SRC_LEAF, DST_LEAF)
    assert now is not None
    links = engine.links
    for link in now.links:                  # the flow's own path is the hot one
        links.set_util(link, 0.95)
    free = engine.decide([flow], in_use=())
    assert free.orders and isinstance(free.orders[0], MoveOrder)
    # every other path's core downlink into pod 1 at 80 %: the leaf uplinks and spine core
    # links of those paths are free, so only the core tier's load can refuse them
    for p in engine.candidate_paths(SRC_LEAF, DST_LEAF):
        if p.links[2] != now.links[2]:
            links.set_util(p.links[2], 0.8)
    dec = engine.decide([flow])
    assert not dec.orders, dec.orders
    assert [r.reason for r in dec.rejected] == ["safety"], dec.rejected


def test_a_hot_spine_core_link_is_avoided(fab: Fabric, engine: PathEngine) -> None:
    flow = _flow(engine, 49152)
    now = engine.current_path(flow.flow, SRC_LEAF, DST_LEAF)
    assert now is not None
    engine.links.set_util(now.links[0], 0.95)          # the leaf uplink it uses is hot
    spine_core = {p.links[1] for p in engine.candidate_paths(SRC_LEAF, DST_LEAF)}
    hot = sorted(spine_core)[: len(spine_core) // 2]
    for link in hot:
        engine.links.set_util(link, 0.9)
    dec = engine.decide([flow])
    for order in dec.orders:
        assert order.path.links[1] not in hot, order.path
        assert all(u <= 0.75 + 1e-6 for u in order.predicted_util.values())
