"""GOR over two tiers with dual-homed destination NICs (``topo/specs/dualport.yaml``, issue
29): a spine spreads a dual-port NIC's prefix over both of its leaves (one ECMP group,
``controller.fabric.ecmp``'s leaf sets), so the engine predicts the down-link by that
group's hash and may end a path at either leaf. Every prediction is checked against
:class:`controller.fabric.tiers.TierModel`, an independent walk of the programmed routes
and hashes, over a sample of source ports."""
from __future__ import annotations

from pathlib import Path

from controller.fabric.detours import fabric_hash_model
from controller.fabric.tiers import TierModel
from controller.gor.decisions import FlowKey, MoveOrder, OverrideOrder
from controller.gor.paths import ElephantFlow, LinkState, PathEngine
from topo.model import Fabric, build_fabric

# the fab and engine fixtures (conftest.py) build their fabric from SPEC
SPEC = Path(__file__).resolve().parents[2] / "topo" / "specs" / "dualport.yaml"
SRC, DST = "10.0.0.1", "10.1.0.1"          # b0s0 rail 0 -> b1s0 rail 0, both dual-homed
LEAF0, DST_LEAF, DST_LEAF1 = "b0r0l0", "b1r0l0", "b1r0l1"
RATE_BPS = 20e9


def _end(engine: PathEngine, path: object) -> str:
    return engine.links.peer[path.links[-1]][0]  # type: ignore[attr-defined]


def test_the_current_path_follows_the_spines_hash_into_either_leaf(fab: Fabric,
                                                                   engine: PathEngine) -> None:
    tiers = TierModel.of(fab)
    ends: dict[str, int] = {}
    for src in ("10.0.0.1", "10.0.0.2"):
        nic = next(n for h in fab.hosts for n in h.nics if n.ip == src)
        for dst in ("10.1.0.1", "10.1.0.2"):
            for sport in range(49152, 49152 + 150):
                now = engine.current_path(FlowKey(src, dst, 17, sport, 4791), LEAF0, DST_LEAF)
                assert now is not None
                walk = tiers.path(nic, 0, dst, sport)
                assert now.links == walk.hops[:-1], (src, dst, sport)
                ends[_end(engine, now)] = ends.get(_end(engine, now), 0) + 1
    assert set(ends) == {DST_LEAF, DST_LEAF1}            # before: always the first leaf


def test_a_move_may_end_at_the_destination_nics_other_leaf(fab: Fabric,
                                                          engine: PathEngine) -> None:
    """Both downlinks into the NIC's first leaf hot: the engine takes a path into its
    second leaf (``ElephantFlow.dst_leaves``, now over two tiers too), and the solved
    source port takes it exactly, spine hop included."""
    flow = FlowKey(SRC, DST, 17, 49152, 4791)
    now = engine.current_path(flow, LEAF0, DST_LEAF)
    assert now is not None
    for spine in ("s0", "s1"):
        for p, info in fab.switch(spine).ports.items():
            if info.peer_node == DST_LEAF:
                engine.links.load_bps[(spine, p)] = 0.9 * engine.links.capacity_bps[(spine, p)]
    engine.links.load_bps[now.links[0]] = 0.9 * engine.links.capacity_bps[now.links[0]]
    e = ElephantFlow(flow, RATE_BPS, LEAF0, DST_LEAF, dst_leaves=(DST_LEAF1,))
    dec = engine.decide([e], trigger=now.links[0])
    assert len(dec.orders) == 1, dec.to_dict()
    o = dec.orders[0]
    assert isinstance(o, MoveOrder) and _end(engine, o.path) == DST_LEAF1
    nic = fab.host("b0s0").nics[0]
    assert TierModel.of(fab).path(nic, 0, DST, o.new_sport).hops[:-1] == o.path.links
    # without the other leaf every path ends on a hot downlink: nothing passes the rule
    dec = engine.decide([ElephantFlow(flow, RATE_BPS, LEAF0, DST_LEAF)], trigger=now.links[0])
    assert not dec.orders and dec.rejected[0].reason == "safety"


def test_an_override_to_a_dual_homed_nic_pins_the_spine_too(fab: Fabric,
                                                           engine: PathEngine) -> None:
    """A flow without an agent is moved by override entries: the spine hashes the NIC's
    prefix over both leaves, so the spine needs one as well as the leaf."""
    for path in engine.candidate_paths(LEAF0, DST_LEAF1):
        entries = engine.override_entries(path, DST)
        assert [(x.switch, x.nexthop_id) for x in entries] == list(path.links)
    flow = FlowKey(SRC, DST, 17, 49152, 4791)
    now = engine.current_path(flow, LEAF0, DST_LEAF)
    assert now is not None
    engine.links.load_bps[now.links[0]] = 0.9 * engine.links.capacity_bps[now.links[0]]
    dec = engine.decide([ElephantFlow(flow, RATE_BPS, LEAF0, DST_LEAF, has_agent=False,
                                      dst_leaves=(DST_LEAF1,))], trigger=now.links[0])
    assert len(dec.orders) == 1 and isinstance(dec.orders[0], OverrideOrder)
    assert len(dec.orders[0].entries) == 2


def test_a_single_homed_fabric_is_unchanged() -> None:
    """On the default fabric (one port per NIC) no spine group is taken for a NIC: the
    spines reach each leaf by one link, so a path is pinned at the leaf alone."""
    fab = build_fabric()
    engine = PathEngine(fab, fabric_hash_model(fab), LinkState.from_fabric(fab))
    for path in engine.candidate_paths("b0r0l0", "b1r0l0"):
        assert len(engine.override_entries(path, "10.1.0.1")) == 1
        assert engine.dst_spine_group(path.spine, "b1r0l0", "10.1.0.1") is None
