"""TCCL across pods (issue 29): on ``pod2-dualport.yaml`` flows from pod 0 to pod 1 are
planned, the NIC ports, the leaf uplinks and the spine → core links carry even loads, and
every planned path is the hash model's walk (``controller.fabric.tiers.TierModel.path``,
the model the switches are programmed with). Two-tier plans stay byte-identical."""
from __future__ import annotations

import collections
import hashlib
import json

import pytest

from controller.fabric.detours import fabric_hash_model
from controller.fabric.tiers import TierModel
from host.tccl.crosspod import CrossPodPlanner, CrossPodRequest, walk
from host.tccl.dualport import dualport_loads, plan_dualport
from testbed.traffic import plan_ports
from topo.model import build_fabric
from topo.spec import FabricSpec, load_spec

POD2 = "topo/specs/pod2-dualport.yaml"


def _setup(spec: str):
    fab = build_fabric(load_spec(spec))
    pod = {n.ip: h.pod for h in fab.hosts for n in h.nics}
    nics = {n.ip: n for h in fab.hosts for n in h.nics}
    return fab, fabric_hash_model(fab), pod, nics


def _cross_pairs(pod: dict[str, int], qps: int) -> list[tuple[str, str]]:
    src = [ip for ip in pod if pod[ip] == 0]
    dst = [ip for ip in pod if pod[ip] == 1]
    return [(s, d) for s, d in zip(src, dst) for _ in range(qps)]


def _links_by_model(fab, nics, flows) -> collections.Counter:
    """Every link of every flow as TierModel walks it; asserts the planner agrees."""
    tiers = TierModel.of(fab)
    model = fabric_hash_model(fab)
    loads: collections.Counter = collections.Counter()
    for f in flows:
        hops = tiers.path(nics[f.src], f.nic_port, f.dst, f.sport).hops[:-1]   # last: to the NIC
        assert hops == walk(fab, model, f.src, f.nic_port, f.dst, f.sport), f
        loads.update(hops)
    return loads


def _tier_links(fab, role: str, pods: set[int]) -> list[tuple[str, int]]:
    """The uplinks of every ``role`` switch in ``pods`` (leaves: by their NICs' pods)."""
    leaf_pod = {p.leaf: h.pod for h in fab.hosts for n in h.nics for p in n.ports}
    out = []
    for sw in fab.switches:
        pod = leaf_pod.get(sw.name) if role == "leaf" else sw.pod
        if sw.role == role and pod in pods:
            out += [(sw.name, p) for p, info in sorted(sw.ports.items()) if info.kind == "uplink"]
    return out


@pytest.mark.parametrize("qps", [2, 4])
def test_cross_pod_flows_are_planned_balanced_and_on_the_hash_models_path(qps: int) -> None:
    fab, model, pod, nics = _setup(POD2)
    pairs = _cross_pairs(pod, qps)
    plan = plan_dualport(fab, model, pairs)
    assert [(f.src, f.dst) for f in plan.flows] == pairs
    loads = _links_by_model(fab, nics, plan.flows)
    assert sum(loads.values()) == 4 * len(pairs)            # leaf, spine, core, spine: 4 links each
    uplinks = [loads[l] for l in _tier_links(fab, "leaf", {0})]
    core = [loads[l] for l in _tier_links(fab, "spine", {0})]
    assert len(uplinks) == 8 and len(core) == 8
    # 4 NICs x qps flows over 8 leaf uplinks and over 8 spine -> core links: qps / 2 each
    assert uplinks == [qps // 2] * 8, uplinks
    assert core == [qps // 2] * 8, core
    assert dualport_loads(fab, model, plan.flows).nic_port_max_over_mean == 1.0


def test_cross_and_in_pod_flows_share_the_uplinks_evenly() -> None:
    fab, model, pod, nics = _setup(POD2)
    inside = [(s, d) for s in pod for d in pod if pod[s] == pod[d] == 0
              and not set(nics[s].leaves) & set(nics[d].leaves)]
    pairs = [p for p in _cross_pairs(pod, 2)] + inside * 2
    plan = plan_dualport(fab, model, pairs)
    loads = _links_by_model(fab, nics, plan.flows)
    uplinks = [loads[l] for l in _tier_links(fab, "leaf", {0})]
    assert sum(uplinks) == len(pairs) and max(uplinks) - min(uplinks) <= 1, uplinks


def test_the_greedy_planner_counts_loads_already_on_the_links() -> None:
    fab, model, pod, nics = _setup(POD2)
    planner = CrossPodPlanner(fab, model)
    first = planner.plan([CrossPodRequest("a", "10.0.0.1", "10.0.2.1", 0)])[0]
    again = planner.plan([CrossPodRequest("a", "10.0.0.1", "10.0.2.1", 0)], {first.links[0]: 5})[0]
    assert again.links[0] != first.links[0] and again.links[0][0] == first.links[0][0]


def test_the_testbed_plans_tccl_ports_across_pods() -> None:
    fab, model, pod, nics = _setup(POD2)
    pairs = _cross_pairs(pod, 2)
    choice = plan_ports(fab, pairs, "tccl", 0, model)
    plan = plan_dualport(fab, model, pairs)
    assert choice.sports == plan.sports() and choice.nic_ports == [f.nic_port for f in plan.flows]


def test_the_testbed_plans_single_port_nics_across_pods() -> None:
    fab = build_fabric(FabricSpec(pods=2, blocks=1, cores=2))
    model = fabric_hash_model(fab)
    nics = {n.ip: n for h in fab.hosts for n in h.nics}
    pod = {n.ip: h.pod for h in fab.hosts for n in h.nics}
    pairs = [(s, d) for s, d in zip([ip for ip in pod if pod[ip] == 0],
                                    [ip for ip in pod if pod[ip] == 1])] * 2
    choice = plan_ports(fab, pairs, "tccl", 0, model)
    assert choice.nic_ports == [0] * len(pairs)
    flows = plan_dualport(fab, model, pairs).flows
    assert [f.sport for f in flows] == choice.sports
    loads = _links_by_model(fab, nics, flows)
    uplinks = [loads[l] for l in _tier_links(fab, "leaf", {0})]
    assert sum(uplinks) == len(pairs) and max(uplinks) - min(uplinks) <= 1, uplinks


def _two_tier_digest() -> str:
    out = {}
    for spec, same_pod in [("topo/specs/dualport.yaml", False), (POD2, True)]:
        fab, model, pod, nics = _setup(spec)
        ips = [n.ip for h in fab.hosts for n in h.nics]
        pairs = [(a, b) for a in ips for b in ips if a != b
                 and not set(nics[a].leaves) & set(nics[b].leaves)
                 and (not same_pod or pod[a] == pod[b])][:24]
        plan = plan_dualport(fab, model, pairs)
        out[spec] = (len(pairs), [(f.nic_port, f.sport) for f in plan.flows])
    return hashlib.sha256(json.dumps(out).encode()).hexdigest()


def test_two_tier_plans_are_byte_identical_to_before_the_core_tier_planner() -> None:
    # digest of main 803ae37's plans (before host.tccl.crosspod existed)
    assert _two_tier_digest() == "7f937f5fb8fbd33f82bf5d171f1b53bb61b33d253a83fa8b5ebf86c4d8c343d4"
