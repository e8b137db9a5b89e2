"""TCCL's ports on the testbed's dual-port NICs (no root): ``plan_ports(..., "tccl")`` plans
each QP's NIC port with its UDP source port, ``plan_flows`` binds the QPs there, and the
testbed's own uplink prediction spreads the flows evenly over both ports' leaves' uplinks;
single-port plans are unchanged. Pure data (the programmed hash model, no switches)."""
from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from controller.fabric import plan_fabric
from host.nic.affinity import FlowKey, TxAffinity
from host.tccl.dualport import split_nic_ports
from host.tccl.ports import PortPlanner, flows_from_fabric
from p4src.hashmodel import FabricHashModel
from testbed.traffic.flows import (SPORT_RANGE, build_flows, choose_ports, elephant_pairs,
                                   plan_ports)
from testbed.traffic.run import TrafficOptions, plan_flows
from topo.model import build_fabric
from topo.spec import load_spec

SPECS = Path(__file__).resolve().parents[2] / "topo" / "specs"


def _programmed(spec: str) -> tuple[Any, FabricHashModel, Any]:
    fab = build_fabric(load_spec(SPECS / spec))
    plans = plan_fabric(fab)
    model = FabricHashModel({n: p.hash_model() for n, p in plans.items()})

    def member_ports(sw: str, g: int) -> dict[str, int]:
        return dict(zip(plans[sw].groups[g].members, plans[sw].groups[g].ports))
    return fab, model, member_ports


@pytest.fixture(scope="module")
def dualport() -> tuple[Any, FabricHashModel, Any]:
    return _programmed("dualport.yaml")


@pytest.fixture(scope="module")
def pod2() -> tuple[Any, FabricHashModel, Any]:
    return _programmed("pod2-dualport.yaml")


def _ratio(counts: Counter, keys: list) -> float:
    vals = [counts.get(k, 0) for k in keys]
    return max(vals) / (sum(vals) / len(vals))


def _check_even(fab: Any, flows: list, ratio: float = 1.0) -> None:
    """Every sending NIC's ports and every uplink of their leaves at ``ratio`` max/mean,
    counted from the flows' own fields (bound port, the testbed's predicted uplink)."""
    nics = {n.ip: n for h in fab.hosts for n in h.nics}
    ports = Counter((f.src_ip, f.nic_port) for f in flows)
    uplinks = Counter(f.predicted_uplink for f in flows)
    port_keys = [(ip, p) for ip in {f.src_ip for f in flows} for p in range(len(nics[ip].ports))]
    leaves = {leaf for f in flows for leaf in nics[f.src_ip].leaves}
    up_keys = [f"{s.name}->{info.peer_node}" for s in fab.switches if s.name in leaves
               for info in s.ports.values() if info.kind == "uplink"]
    assert None not in uplinks and set(uplinks) <= set(up_keys)
    assert _ratio(ports, port_keys) == ratio, ports
    assert _ratio(uplinks, up_keys) == ratio, uplinks
    for f in flows:
        assert f.leaf == nics[f.src_ip].ports[f.nic_port].leaf
        assert f.predicted_uplink.startswith(f.leaf + "->")
        # the bond's own layer3+4 hash agrees with the planned port (no override needed)
        assert TxAffinity().port_of(FlowKey.of(f.src_ip, f.dst_ip, f.sport)) == f.nic_port


@pytest.mark.parametrize("count", [4, 8])
def test_elephants_spread_over_ports_and_uplinks(dualport: tuple, count: int) -> None:
    fab, model, member_ports = dualport
    prog = SimpleNamespace(hash_model=lambda: model, member_ports=member_ports)
    flows = plan_flows(fab, prog, TrafficOptions(count, 0, port_mode="tccl"))
    assert len(flows) == count
    assert {f.nic_port for f in flows} == {0, 1}
    _check_even(fab, flows)


@pytest.mark.parametrize("qps", [2, 4])
def test_pod2_cross_rail_qps_spread_over_ports_and_uplinks(pod2: tuple, qps: int) -> None:
    """pod2-dualport inside pod 0 (TCCL's planner has no core tier: cross-pod pairs are refused
    by ``host.tccl.hops``, as on main): rail 0 to rail 1 and back, ``qps`` QPs per NIC."""
    fab, model, member_ports = pod2
    pairs = [("10.0.0.1", "10.0.1.2"), ("10.0.0.2", "10.0.1.1"),
             ("10.0.1.1", "10.0.0.2"), ("10.0.1.2", "10.0.0.1")] * qps
    chosen = plan_ports(fab, pairs, "tccl", 0, model)
    flows = build_flows(fab, pairs, chosen.sports, model, member_ports, chosen.nic_ports)
    assert [f.nic_port for f in flows] == chosen.nic_ports
    _check_even(fab, flows)


def test_one_qp_per_nic_still_fills_both_leaves(dualport: tuple) -> None:
    """Four NICs with one QP each: port 0 for every QP would leave every port-1 leaf idle;
    the remainders go to the emptier leaf, so each leaf carries one flow (uplinks 2.0: one
    flow on two uplinks cannot do better)."""
    fab, model, member_ports = dualport
    pairs = [("10.0.0.1", "10.1.0.1"), ("10.0.0.2", "10.1.0.2"),
             ("10.1.0.1", "10.0.0.2"), ("10.1.0.2", "10.0.0.1")]
    assert split_nic_ports(fab, pairs) == [0, 1, 0, 1]
    chosen = plan_ports(fab, pairs, "tccl", 0, model)
    flows = build_flows(fab, pairs, chosen.sports, model, member_ports, chosen.nic_ports)
    assert Counter(f.leaf for f in flows) == Counter(["b0r0l0", "b0r0l1", "b1r0l0", "b1r0l1"])
    _check_even(fab, flows, ratio=2.0)


def test_single_port_plans_unchanged() -> None:
    """The default (single-port) spec: TCCL's ports are PortPlanner's exactly, the random draw
    is the seeded sample, and every QP stays on NIC port 0."""
    fab, model, _ = _programmed("default.yaml")
    pairs = elephant_pairs(fab, 0, 8) + [("10.0.0.1", "10.0.0.2")]    # the last: one leaf
    old = random.Random(3).sample(range(SPORT_RANGE[0], SPORT_RANGE[1] + 1), len(pairs))
    old[:8] = [f.sport for f in PortPlanner(model).plan(flows_from_fabric(fab, pairs[:8])).flows]
    chosen = plan_ports(fab, pairs, "tccl", 3, model)
    assert chosen.sports == old == choose_ports(fab, pairs, "tccl", 3, model)
    assert chosen.nic_ports == [0] * len(pairs)
    rnd = plan_ports(fab, pairs, "random", 3)
    assert rnd.sports == random.Random(3).sample(range(SPORT_RANGE[0], SPORT_RANGE[1] + 1), len(pairs))
    assert rnd.nic_ports == [0] * len(pairs)


def test_random_ports_sit_on_the_port_the_bonds_hash_picks(dualport: tuple) -> None:
    """The random draw binds each QP where a plain bond would (its documented layer3+4
    hash, ``host.nic.affinity``), and ``plan_flows`` passes that port on (``--lag-port``):
    both ports' leaves carry QPs, as in the simulator's random mode."""
    fab, _model, _ = dualport
    pairs = elephant_pairs(fab, 0, 8)
    rnd = plan_ports(fab, pairs, "random", 1)
    assert rnd.sports == random.Random(1).sample(range(SPORT_RANGE[0], SPORT_RANGE[1] + 1), 8)
    want = [TxAffinity(ports=2).port_of(FlowKey.of(s, d, sp, 4791)) for (s, d), sp in zip(pairs, rnd.sports)]
    assert rnd.nic_ports == want and set(want) == {0, 1}
    programmer = SimpleNamespace(hash_model=lambda: dualport[1], member_ports=dualport[2])
    flows = plan_flows(fab, programmer, TrafficOptions(8, 0, port_mode="random", seed=1))
    assert [f.nic_port for f in flows] == want
    nics = {n.ip: n for h in fab.hosts for n in h.nics}
    assert [f.leaf for f in flows] == [nics[f.src_ip].ports[p].leaf for f, p in zip(flows, want)]
