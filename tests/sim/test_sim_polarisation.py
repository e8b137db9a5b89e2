"""Polarised fabrics (the same CRC on leaves and spines, parallel spine links): the
simulated TCCL follows ``PortPlanner``'s polarisation remap and greedy fallback, so its
ports and balance are the planner's."""
from __future__ import annotations

import ipaddress

import numpy as np
import pytest

import sim.ports
from host.tccl.ports import PortPlanner, flows_from_fabric
from sim.fallback import _assign, greedy_colours
from sim.ports import polarisation_remap, tccl_ports
from sim.routing import route_flows
from sim.topology import SimFabric
from topo.model import build_fabric
from topo.spec import FabricSpec


def _fabric(hash_alg: str, blocks: int = 4) -> tuple[object, SimFabric]:
    fab = build_fabric(FabricSpec(blocks=blocks, servers_per_block=8, rails=2, spines=4, uplinks_per_spine=2,
                                  leaf_ports=64, leaf_hash=hash_alg, spine_hash=hash_alg))
    return fab, SimFabric.build(fab)


def _pairs(sf: SimFabric, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s, d = rng.integers(0, len(sf.nic_ip), n * 4), rng.integers(0, len(sf.nic_ip), n * 4)
    keep = (sf.nic_leaf[s] != sf.nic_leaf[d]) & (s // sf.rails != d // sf.rails)
    return s[keep][:n], d[keep][:n]


def _planner(fab: object, sf: SimFabric, s: np.ndarray, d: np.ndarray):
    ip = [(str(ipaddress.IPv4Address(int(sf.nic_ip[a]))), str(ipaddress.IPv4Address(int(sf.nic_ip[b]))))
          for a, b in zip(s, d)]
    return PortPlanner(sf.hash_model).plan(flows_from_fabric(fab, ip))


@pytest.mark.parametrize("blocks,seed", [(2, 1), (4, 2), (4, 3)])
def test_polarised_ports_are_the_planners(blocks: int, seed: int) -> None:
    fab, sf = _fabric("crc16", blocks)
    s, d = _pairs(sf, 60, seed)
    assert polarisation_remap(sf, int(s[0]), int(d[0]))           # the probe finds it polarised
    ports = tccl_ports(sf, s, d)
    plan = _planner(fab, sf, s, d)
    assert [f.sport for f in plan.flows] == ports.tolist()
    r = route_flows(sf, s, d, ports)
    assert max(np.bincount(r.links[:, 1]).max(), np.bincount(r.links[:, 2]).max()) == plan.max_link_load


def test_without_the_remap_the_simulation_is_pessimistic(monkeypatch: pytest.MonkeyPatch) -> None:
    fab, sf = _fabric("crc16", 2)
    s, d = _pairs(sf, 60, 1)
    plan = _planner(fab, sf, s, d)
    monkeypatch.setattr(sim.ports, "polarisation_remap", lambda *a: {})
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


def test_where_the_probe_does_not_fit_every_leaf_greedy_colours_are_routed() -> None:
    """crc32 on both tiers: the probe's remap is wrong for other leaves, some flows reach
    no colour (the planner raises PortPlanError; the simulation keeps their hashed path);
    every other flow goes where the greedy put it."""
    fab, sf = _fabric("crc32", 4)
    s, d = _pairs(sf, 60, 1)
    want_l, _ = greedy_colours(sf, s, d, polarisation_remap(sf, int(s[0]), int(d[0])))
    ok = want_l >= 0
    assert ok.any() and not ok.all()
    r = route_flows(sf, s, d, tccl_ports(sf, s, d))
    assert (r.links[ok, 1] == sf.leaf_up[sf.nic_leaf[s[ok]], want_l[ok]]).all()
