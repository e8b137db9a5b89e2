"""Where the faults scenario puts each fault (``scenarios.faultplan``, issue 29): on the
default fabric the targets it always had; on the two-pod dual-port spec every kind's
target exists (the injector's own resolver, no root), sits on the tier the rules give
(leaf, spine, core, both NIC ports), is a link direction, route or port the monitor's
three-tier probe plan and the programmed routes know, and the wrong ECN threshold goes
on a port the first flow crosses as the controller's hash model walks it."""
from __future__ import annotations

import ipaddress
from types import SimpleNamespace

import pytest

from controller.fabric.detours import fabric_hash_model
from controller.fabric.tiers import TierModel
from controller.fabric_setup import T_ROUTES, plan_fabric
from monitor.probes import plan_probes, tier_fabric_links
from scenarios.faultplan import fault_plan, link_name
from scenarios.faults import default_faults
from testbed.faulttargets import FabricNames, parse_target
from testbed.traffic import build_flows, elephant_pairs, plan_ports
from topo.components import FAULT_KINDS, LinkDir
from topo.model import build_fabric
from topo.spec import load_spec

POD2 = "topo/specs/pod2-dualport.yaml"

DEFAULT_TWO_TIER = [
    ("gray_link", "link b0r0l0->s1", {"loss_pct": 30.0}),
    ("corruption", "link s0->b1r1l0", {"corrupt_pct": 20.0}),
    ("flapping_link", "cable b0r1l0<->s0", {"period_s": 2.0}),
    ("blackhole", "route s1 10.1.1.0/24", {}),
    ("hung_switch", "switch s1", {}),
    ("slow_receiver", "nic b1s0-eth0", {}),
    ("wrong_ecn_threshold", "port b0r0l0:3", {"kmin_pkts": 0}),
    ("dead_agent", "agent b0s0", {}),
    ("controller_down", "controller", {}),
]
"""The default fabric's faults as the scenario named them before issue 29 (literal)."""


def _flows(fab, seed: int = 1):
    """The faults scenario's traffic: 4 TCCL flows of the first elephant pairs."""
    model = fabric_hash_model(fab)
    pairs = elephant_pairs(fab, 0, 4)
    chosen = plan_ports(fab, pairs, "tccl", seed, model)
    return build_flows(fab, pairs, chosen.sports, model, None, chosen.nic_ports), model


@pytest.fixture(scope="module")
def pod2():
    fab = build_fabric(load_spec(POD2))
    flows, model = _flows(fab)
    return fab, flows, model, fault_plan(fab, flows, model)


def test_the_default_fabric_keeps_its_targets() -> None:
    fab = build_fabric()
    assert default_faults(fab) == DEFAULT_TWO_TIER
    flows, model = _flows(fab)
    assert default_faults(fab, flows, model) == DEFAULT_TWO_TIER


def test_every_kind_once_on_the_two_pod_spec(pod2) -> None:
    _, _, _, plan = pod2
    assert sorted(k for k, _, _ in plan) == sorted(FAULT_KINDS)


def test_every_target_resolves_on_the_two_pod_spec(pod2) -> None:
    """The injector's resolver (``testbed.faulttargets``) finds each target: nothing is
    "not injected" for a name the fabric lacks."""
    fab, _, _, plan = pod2
    names = FabricNames(fab, SimpleNamespace(procs=[]))
    routes = {sw: [str(e.match["hdr.ipv4.dst_addr"]) for e in p.entries if e.table == T_ROUTES]
              for sw, p in plan_fabric(fab).items()}
    for kind, target, _ in plan:
        word, parts = parse_target(target)
        if word == "link":
            names.direction(parts[0])
        elif word == "cable":
            assert len(names.cable(parts[0])) == 2          # one cable, both directions
        elif word == "switch":
            names.switch(parts[0])
        elif word == "route":
            assert names.route(parts[0], parts[1], routes[parts[0]]) == parts[1]
        elif word == "nic":
            names.nic(parts[0])
        elif word == "port":
            names.port(parts[0])
        elif word == "agent":
            names.host(parts[0])
        else:
            assert (kind, word) == ("controller_down", "controller")


def test_targets_span_the_three_tiers_and_both_nic_ports(pod2) -> None:
    fab, _, _, plan = pod2
    role = {sw.name: sw.role for sw in fab.switches}
    by_kind = {k: t for k, t, _ in plan}

    def roles(kind: str) -> list[str]:
        link = LinkDir.parse(by_kind[kind].split()[1])
        return [role[link.src], role[link.dst]]

    assert roles("gray_link") == ["spine", "core"]
    assert roles("corruption") == ["core", "spine"]
    a, b = by_kind["flapping_link"].split()[1].split("<->")
    assert [role[a], role[b]] == ["leaf", "spine"]
    assert role[by_kind["blackhole"].split()[1]] == "core"
    assert role[by_kind["hung_switch"].split()[1]] == "core"
    assert role[by_kind["dead_tor"].split()[1]] == "leaf"
    assert role[by_kind["wrong_ecn_threshold"].split()[1].split(":")[0]] == "spine"
    ports = {p.intf: i for h in fab.hosts for n in h.nics for i, p in enumerate(n.ports)}
    assert ports[by_kind["slow_receiver"].split()[1]] == 0
    assert ports[by_kind["dead_nic_port"].split()[1]] == 1
    # the far side gets the receiver and the dead ToR; the near side the agent and the port
    pod = {h.name: h.pod for h in fab.hosts}
    assert pod[by_kind["dead_agent"].split()[1]] == 0
    assert pod[by_kind["slow_receiver"].split()[1].rsplit("-", 1)[0]] == 1


def test_link_targets_are_directions_the_monitor_watches(pod2) -> None:
    """The localiser can only name a direction its probe plan has, by that very name
    (with the port where a switch has parallel cables: spine <-> core)."""
    fab, _, _, plan = pod2
    watched = {str(d) for d in tier_fabric_links(fab)}
    links = [t.split()[1] for k, t, _ in plan if t.startswith("link ")]
    assert len(links) == 2 and all(":" in link for link in links)
    assert set(links) <= watched
    assert link_name(fab, "b0r0l0", 3) == "link b0r0l0->s0"


def test_the_blackholed_route_carries_no_flow_and_is_the_cores_own(pod2) -> None:
    """The route is the core's longest match for the far pod's last rail (its /24), and
    the scenario's flows (rail 0) never need it: the blackhole costs probes only."""
    fab, flows, _, plan = pod2
    _, switch, prefix = next(t for k, t, _ in plan if k == "blackhole").split()
    net = ipaddress.ip_network(prefix)
    assert net.prefixlen == 24
    assert not any(ipaddress.ip_address(f.dst_ip) in net for f in flows)
    assert prefix in [str(e.match["hdr.ipv4.dst_addr"]) for e in plan_fabric(fab)[switch].entries
                      if e.table == T_ROUTES]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_wrong_ecn_port_carries_the_first_flow(seed: int) -> None:
    """The marked port is a spine's egress to a core on the first flow's path as
    ``TierModel`` (the controller's model of the programmed switches) walks it; the
    fallback without a model is the first spine's first core port."""
    fab = build_fabric(load_spec(POD2))
    flows, model = _flows(fab, seed)
    plan = fault_plan(fab, flows, model)
    port = next(t for k, t, _ in plan if k == "wrong_ecn_threshold").split()[1]
    f = flows[0]
    nic = next(n for h in fab.hosts for n in h.nics if n.ip == f.src_ip)
    path = TierModel.of(fab).path(nic, f.nic_port, f.dst_ip, f.sport)
    hops = [f"{sw}:{p}" for sw, p in zip(path.switches, path.ports)]
    assert port in hops
    sw, p = port.split(":")
    assert fab.switch(sw).role == "spine" and fab.switch(sw).ports[int(p)].kind == "uplink"
    assert next(t for k, t, _ in fault_plan(fab) if k == "wrong_ecn_threshold") == "port s0:5"


def test_the_blackholed_route_is_one_the_probes_cross(pod2) -> None:
    """With the monitor's three-tier probe plan the route is one at least two probes to
    its prefix cross the core by, and another reaches around it: the localiser's rule can
    name it (no probe to pod 1's rail 1 crosses ``c1.1``: the first pod2 run named nothing)."""
    fab, flows, model, _ = pod2
    probes = plan_probes(fab, model)
    _, switch, prefix = next(t for k, t, _ in fault_plan(fab, flows, model, probes=probes)
                             if k == "blackhole").split()
    to_p = [p for p in probes.paths if probes.dst_prefix[p.name] == prefix]
    through = [p for p in to_p if switch in p.switches]
    assert fab.switch(switch).role == "core"
    assert len(through) >= 2 and len(through) < len(to_p), (prefix, through, to_p)
    net = ipaddress.ip_network(prefix)
    assert not any(ipaddress.ip_address(ip) in net for f in flows for ip in (f.src_ip, f.dst_ip))
