"""Polarised fabrics (the same CRC on leaves and spines, parallel spine links): the
simulated TCCL follows ``PortPlanner``'s per-leaf polarisation probes and greedy fallback,
so its ports and balance are the planner's."""
from __future__ import annotations

import ipaddress

import numpy as np
import pytest

import sim.ports
from host.tccl.ports import PortPlanner, flows_from_fabric
from sim.fallback import _assign, greedy_colours
from sim.ports import _search, candidate_ports, polarisation_remap, polarisation_remaps, tccl_ports
from sim.routing import route_flows
from sim.topology import SimFabric
from topo.model import build_fabric
from topo.spec import FabricSpec


def _fabric(hash_alg: str, blocks: int = 4, leaves_per_rail: int = 1) -> tuple[object, SimFabric]:
    fab = build_fabric(FabricSpec(blocks=blocks, servers_per_block=8, rails=2, spines=4, uplinks_per_spine=2,
                                  leaves_per_rail=leaves_per_rail, leaf_ports=64, leaf_hash=hash_alg,
                                  spine_hash=hash_alg))
    return fab, SimFabric.build(fab)


def _max_load(sf: SimFabric, s: np.ndarray, d: np.ndarray, ports: np.ndarray) -> int:
    r = route_flows(sf, s, d, ports)
    return int(max(np.bincount(r.links[:, 1]).max(), np.bincount(r.links[:, 2]).max()))


def _pairs(sf: SimFabric, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s, d = rng.integers(0, len(sf.nic_ip), n * 4), rng.integers(0, len(sf.nic_ip), n * 4)
    keep = (sf.nic_leaf[s] != sf.nic_leaf[d]) & (s // sf.rails != d // sf.rails)
    return s[keep][:n], d[keep][:n]


def _planner(fab: object, sf: SimFabric, s: np.ndarray, d: np.ndarray):
    ip = [(str(ipaddress.IPv4Address(int(sf.nic_ip[a]))), str(ipaddress.IPv4Address(int(sf.nic_ip[b]))))
          for a, b in zip(s, d)]
    return PortPlanner(sf.hash_model).plan(flows_from_fabric(fab, ip))


@pytest.mark.parametrize("alg,blocks,leaves_per_rail,seed", [("crc16", 2, 1, 1), ("crc16", 4, 1, 2), ("crc16", 2, 2, 3),
                                                         ("crc32", 2, 1, 1), ("crc32", 4, 1, 2)])
def test_polarised_ports_are_the_planners(alg: str, blocks: int, leaves_per_rail: int, seed: int) -> None:
    fab, sf = _fabric(alg, blocks, leaves_per_rail)
    s, d = _pairs(sf, 60, seed)
    assert polarisation_remap(sf, int(s[0]), int(d[0]))           # the probe finds it polarised
    ports = tccl_ports(sf, s, d)
    plan = _planner(fab, sf, s, d)
    assert [f.sport for f in plan.flows] == ports.tolist()
    assert plan.balanced and _max_load(sf, s, d, ports) == plan.max_link_load


@pytest.mark.parametrize("alg,leaves_per_rail", [("crc32", 1), ("crc16", 2)])
def test_the_probes_differ_from_leaf_to_leaf(alg: str, leaves_per_rail: int) -> None:
    """The fabrics above really have leaves whose (leaf, spine) constant differs, so one
    probe for every leaf would not do."""
    _, sf = _fabric(alg, 2, leaves_per_rail)
    s, d = _pairs(sf, 200, 7)
    remaps = polarisation_remaps(sf, s, d)
    per_leaf: dict[int, list] = {}
    for (leaf, spine, nd), down in sorted(remaps.items()):
        per_leaf.setdefault(leaf, []).append(tuple(down))
    assert len(per_leaf) == len(set(sf.nic_leaf[s].tolist())) and len({tuple(v) for v in per_leaf.values()}) > 1


def test_without_the_remap_the_simulation_is_pessimistic(monkeypatch: pytest.MonkeyPatch) -> None:
    fab, sf = _fabric("crc16", 2)
    s, d = _pairs(sf, 60, 1)
    plan = _planner(fab, sf, s, d)
    monkeypatch.setattr(sim.ports, "polarisation_remaps", lambda *a: {})
    monkeypatch.setattr(sim.ports, "greedy_colours", lambda sf, s, d, *a: (np.full(len(s), -1), np.full(len(s), -1)))
    r = route_flows(sf, s, d, tccl_ports(sf, s, d))
    assert max(np.bincount(r.links[:, 1]).max(), np.bincount(r.links[:, 2]).max()) > plan.max_link_load


def test_greedy_rounds_equal_the_sequential_greedy() -> None:
    """The round-by-round greedy gives the colours of the planner's one-flow-at-a-time rule."""
    rng = np.random.default_rng(4)
    n, k, leaves, links = 300, 4, 6, 6 * 4 * 2
    lf, dlf = rng.integers(0, leaves, n), rng.integers(0, leaves, n)
    up = lf[:, None] * k + np.arange(k)[None, :]
    down = leaves * k + dlf[:, None] * k + rng.permutation(k)[None, :]
    reach = rng.random((n, k)) < 0.6
    got = _assign(reach, up, down, lf, dlf, links)
    load = np.zeros(links, np.int64)
    want = np.full(n, -1)
    for i in sorted(range(n), key=lambda i: reach[i].sum()):
        cs = [c for c in range(k) if reach[i, c]]
        if cs:
            c = min(cs, key=lambda c: (max(load[up[i, c]], load[down[i, c]]), load[up[i, c]] + load[down[i, c]]))
            want[i] = c
            load[up[i, c]] += 1
            load[down[i, c]] += 1
    assert got.tolist() == want.tolist()


def test_where_a_bijection_does_not_fit_greedy_colours_are_routed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The greedy fallback path: the first leaf's bijection forced onto every leaf (what
    one probe for all leaves did) leaves some flows no colour (kept on their hashed
    path); every other flow goes where the greedy put it."""
    fab, sf = _fabric("crc32", 4)
    s, d = _pairs(sf, 60, 1)
    first = polarisation_remap(sf, int(s[0]), int(d[0]))
    wrong = {(leaf, spine, 2): [first[(spine, j)] for j in range(2)]
             for leaf in set(sf.nic_leaf[s].tolist()) for spine in range(4)}
    want_l, _ = greedy_colours(sf, s, d, wrong, _search, candidate_ports())
    ok = want_l >= 0
    assert ok.any() and not ok.all()
    monkeypatch.setattr(sim.ports, "polarisation_remaps", lambda *a: wrong)
    r = route_flows(sf, s, d, tccl_ports(sf, s, d))
    assert (r.links[ok, 1] == sf.leaf_up[sf.nic_leaf[s[ok]], want_l[ok]]).all()
