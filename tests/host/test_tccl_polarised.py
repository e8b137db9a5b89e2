"""TCCL ports on polarised fabrics: the same CRC on leaves and spines, parallel spine links.

There the spine member is a fixed function of the leaf member whose constant comes from
the seeds of each (leaf, spine) pair, so it differs from leaf to leaf. Every check here is
made hop by hop with ``p4src.hashmodel`` (the leaf's uplink group, then the spine's group
towards the destination leaf), not with the planner's own tables: the planned ports must
reach the links the plan names, and those links must carry at most the planner's promise
``ceil(flows at the hop / links)`` on both tiers."""
from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from controller.fabric_setup import fabric_hash_model
from host.tccl.ports import PortPlanner, flows_from_fabric, polarised_downlinks
from p4src.hashmodel import FabricHashModel, port_to_member_table, predict_member
from topo.model import Fabric, build_fabric
from topo.spec import FabricSpec


def polarised_fabric(hash_alg: str, blocks: int, rails: int, leaves_per_rail: int,
                     uplinks_per_spine: int) -> Fabric:
    return build_fabric(FabricSpec(blocks=blocks, servers_per_block=8, rails=rails, spines=4,
                                   uplinks_per_spine=uplinks_per_spine, leaves_per_rail=leaves_per_rail,
                                   leaf_ports=64, spine_ports=64, leaf_hash=hash_alg, spine_hash=hash_alg))


def random_pairs(fab: Fabric, n_flows: int, seed: int) -> list[tuple[str, str]]:
    """``n_flows`` (src, dst) NIC pairs on different leaves of different servers."""
    nics = [(h.name, n.ip, n.leaf) for h in fab.hosts for n in h.nics]
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    while len(pairs) < n_flows:
        a, b = rng.choice(nics), rng.choice(nics)
        if a[0] != b[0] and a[2] != b[2]:
            pairs.append((a[1], b[1]))
    return pairs


def downlink_group(model: FabricHashModel, spine: str, dst_leaf: str) -> int:
    return next(gid for gid, g in sorted(model.switch(spine).groups.items())
                if all(m.split("#")[0] == dst_leaf for m in g.members))


def leaf_bijections(model: FabricHashModel, fab: Fabric) -> set[tuple]:
    """Per source leaf, the spine member each uplink fixes (probed on one 5-tuple): the
    polarisation constant of every (leaf, spine) pair, independent of the planner."""
    out = set()
    leaves = [s.name for s in fab.leaves]
    for leaf in leaves:
        sw, dst_leaf = model.switch(leaf), next(x for x in leaves if x != leaf)
        lt = port_to_member_table(sw, 1, "10.0.0.1", "10.1.0.1", 17, 4791)
        per_spine = []
        for spine in sorted({m.split("#")[0] for m in sw.groups[1].members}):
            gid = downlink_group(model, spine, dst_leaf)
            st = port_to_member_table(model.switch(spine), gid, "10.0.0.1", "10.1.0.1", 17, 4791)
            reach: dict[int, set[int]] = {}
            base = model.switch(spine).groups[gid].base
            for a, b in set(zip(lt, st)):           # the distinct (leaf, spine) member pairs
                reach.setdefault(a, set()).add(b - base)
            own = [i for i, m in enumerate(sw.groups[1].members) if m.split("#")[0] == spine]
            per_spine.append(tuple(polarised_downlinks(reach, own) or ()))
        out.add(tuple(per_spine))
    return out


def check_plan_against_the_hash_model(fab: Fabric, model: FabricHashModel, pairs: list[tuple[str, str]]) -> None:
    flows = flows_from_fabric(fab, pairs)
    plan = PortPlanner(model).plan(flows)
    loads: Counter = Counter()
    for req, fp in zip(flows, plan.flows):
        up = predict_member(model.switch(req.leaf), 1, req.src, req.dst, 17, fp.sport, req.dport)
        spine = up.split("#")[0]
        gid = downlink_group(model, spine, req.dst_leaf)
        down = predict_member(model.switch(spine), gid, req.src, req.dst, 17, fp.sport, req.dport)
        # the path the port really takes is the path (colour) the planner assigned
        assert fp.links == ((req.leaf, up), (spine, down)), req.name
        assert fp.path == (up, down)
        loads[(req.leaf, up)] += 1
        loads[(spine, down)] += 1
    assert dict(loads) == plan.link_loads
    from_leaf = Counter(f.leaf for f in flows)
    into_leaf = Counter(f.dst_leaf for f in flows)
    n_up = len(model.switch(flows[0].leaf).groups[1].members)
    for (switch, member), load in loads.items():
        if switch in from_leaf:
            cap = math.ceil(from_leaf[switch] / n_up)                 # a leaf's uplinks share its flows
        else:
            cap = math.ceil(into_leaf[member.split("#")[0]] / n_up)   # every spine link into the leaf
        assert load <= cap, (switch, member, load, cap)
    assert plan.balanced
    assert len({(f.src, f.dst, f.sport) for f in plan.flows}) == len(flows)


@pytest.mark.parametrize("blocks,uplinks,n_flows,seed", [(2, 2, 60, 1), (2, 4, 60, 2), (3, 2, 90, 3)])
def test_crc32_on_both_tiers_is_planned_on_every_leaf(blocks: int, uplinks: int, n_flows: int, seed: int) -> None:
    fab = polarised_fabric("crc32", blocks, 2, 1, uplinks)
    model = fabric_hash_model(fab)
    assert len(leaf_bijections(model, fab)) > 1          # the leaves really differ
    check_plan_against_the_hash_model(fab, model, random_pairs(fab, n_flows, seed))


@pytest.mark.parametrize("seed", [1, 2])
def test_crc16_on_both_tiers_with_leaves_of_both_constants(seed: int) -> None:
    fab = polarised_fabric("crc16", 2, 2, 2, 2)          # 8 leaves: both low bits of the constant occur
    model = fabric_hash_model(fab)
    assert len(leaf_bijections(model, fab)) > 1
    check_plan_against_the_hash_model(fab, model, random_pairs(fab, 64, seed))


def test_replan_on_a_polarised_fabric_keeps_every_port() -> None:
    fab = polarised_fabric("crc32", 2, 2, 1, 2)
    model = fabric_hash_model(fab)
    planner = PortPlanner(model)
    first = planner.plan(flows_from_fabric(fab, random_pairs(fab, 24, 5)))
    again = planner.replan(model)
    assert again.moved == [] and [f.sport for f in again.flows] == [f.sport for f in first.flows]
