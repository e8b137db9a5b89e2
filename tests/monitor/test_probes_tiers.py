"""The probe plan over three tiers and both ports of dual-port NICs (issue 29), on
``topo/specs/pod2-dualport.yaml`` (2 pods, 4 cores, 8 dual-port NICs): every link
direction — NIC port↔leaf, leaf↔spine, spine↔core — is watched by two probe paths that
share no other link, and each probe's path is the one the published hash model gives.

The outside reference for the paths is a walk through the *published JSON* hash model
(each switch's published routes and groups, member names, ``port_to_member_table``: CRC
per group, the group's own field list), not the planner's code (:class:`TierModel`'s
routes and affine sweep); it is compared for every one of the 65,536 source ports of a
sample of (NIC port, NIC) pairs and for every probe of the plan. That the P4 pipeline
forwards as the published model says is ``tests/controller/test_fabric_tiers.py``'s
(p4sim runs ``p4src/fabric.p4`` hop by hop). The localiser, fed the plan's paths, names a
dead NIC port and a dead ToR.
"""
from __future__ import annotations

from typing import Callable, Sequence

import pytest

from controller.fabric.tiers import TierModel
from monitor.evidence import Evidence, LinkDir, PathStats, ProbePath
from monitor.localiser import Localiser
from monitor.probeplan import load_plan_text
from monitor.probes import coverage_gaps, tier_fabric_links, tier_links
from p4src.hashmodel import FabricHashModel, port_to_member_table, route_group
from pod2plans import pod2_fabric, pod2_plan
from topo.model import Fabric, NicInfo


@pytest.fixture(scope="module")
def fab() -> Fabric:
    return pod2_fabric()                     # topo/specs/pod2-dualport.yaml, shared (pod2plans)


@pytest.fixture(scope="module")
def plan(fab: Fabric):
    return pod2_plan()                       # plan_probes(fab), built once per process


def _published(fab: Fabric) -> FabricHashModel:
    return FabricHashModel.from_json(TierModel.of(fab).model.to_json())


def _egress(fab: Fabric, switch: str, member: str) -> tuple[LinkDir, str]:
    """The link a member name (``"s0"``, ``"c0.1#7"``) leaves ``switch`` by, and its peer."""
    sw = fab.switch(switch)
    peer, _, port_text = member.partition("#")
    ports = [p for p, info in sorted(sw.ports.items()) if info.peer_node == peer]
    port = int(port_text) if port_text else ports[0]
    return LinkDir(switch, peer, port if len(ports) > 1 else None), peer


def _model_walks(fab: Fabric, model: FabricHashModel, src: NicInfo, nic_port: int,
                 dst: NicInfo, sports: Sequence[int] = range(1 << 16)) -> list[tuple[LinkDir, ...]]:
    """The links of every source port of ``sports``, walked through the published model only.
    What does not depend on the source port is looked up once per switch (its route to
    ``dst``, that group's table) and once per member (the link it leaves by); each port
    still walks its own hops."""
    attached = {(p.leaf): p.intf for p in dst.ports}
    first = LinkDir(src.ports[nic_port].intf, src.ports[nic_port].leaf)
    out: list[tuple[LinkDir, ...]] = []
    tables: dict[str, tuple[list[int], int, tuple[str, ...]]] = {}
    egress: dict[tuple[str, str], tuple[LinkDir, str]] = {}
    for sport in sports:
        links, here = [first], src.ports[nic_port].leaf
        while here not in attached:
            if here not in tables:
                sw = model.switch(here)
                gid = route_group(sw, dst.ip)
                assert gid is not None, (here, dst.ip)    # every hop of this spec is a group
                g = sw.group(gid)
                tables[here] = (port_to_member_table(sw, gid, src.ip, dst.ip, 17, 4791), g.base, g.members)
            table, base, members = tables[here]
            member = members[table[sport] - base]
            if (here, member) not in egress:
                egress[(here, member)] = _egress(fab, here, member)
            link, here = egress[(here, member)]
            links.append(link)
        links.append(LinkDir(here, attached[here]))
        out.append(tuple(links))
    return out


def test_every_link_of_three_tiers_and_both_nic_ports_is_watched(fab: Fabric, plan) -> None:
    links = tier_fabric_links(fab)
    nic_ports = [p for h in fab.hosts for n in h.nics for p in n.ports]
    switch_links = sum(1 for s in fab.switches for i in s.ports.values() if i.kind != "host")
    assert len(nic_ports) == 16 and len(links) == 2 * len(nic_ports) + switch_links == 96
    assert {l.src for l in links} >= {"s0", "c0.0", "c1.1", "p1.s1", "b0s0-eth0p1"}
    assert coverage_gaps(plan.paths, links) == [] and plan.uncovered == {}
    cover = pod2_plan(tell_routes=False)                  # the coverage pass alone
    assert len(cover.paths) == 2 * len(links) // 6       # 6-link paths: the lower bound
    assert coverage_gaps(cover.paths, links) == []
    key = lambda p: (p.src_nic, p.dst_nic, p.sport, p.links)   # noqa: E731
    assert {key(p) for p in cover.paths} <= {key(p) for p in plan.paths}   # + the route pass's
    crossed = {l for p in plan.paths for l in p.links}
    assert crossed == set(links)
    for p in plan.paths:                                  # walks from a NIC port to a NIC port
        assert p.links[0].src == p.src_nic and p.links[-1].dst == p.dst_nic
        assert all(a.dst == b.src for a, b in zip(p.links, p.links[1:]))
        assert plan.nics[p.src_nic].leaf == p.links[0].dst and plan.nics[p.dst_nic].leaf == p.links[-1].src
    # a prober tells paths apart by (src ip, dst ip, sport): the two ports of a NIC share an ip
    assert len({(p.src_ip, p.dst_ip, p.sport) for p in plan.paths}) == len(plan.paths)
    assert {plan.nics[p.src_nic].gateway_mac for p in plan.paths} <= {s.router_mac for s in fab.leaves}
    assert load_plan_text(plan.to_json()) == plan


def test_every_probe_takes_the_published_models_path(fab: Fabric, plan) -> None:
    model = _published(fab)
    nic_of = {p.intf: (n, i) for h in fab.hosts for n in h.nics for i, p in enumerate(n.ports)}
    for p in plan.paths:
        src, nic_port = nic_of[p.src_nic]
        dst, _ = nic_of[p.dst_nic]
        assert _model_walks(fab, model, src, nic_port, dst, [p.sport])[0] == p.links, p.name


@pytest.mark.parametrize("src_host,rail,nic_port,dst_host,dst_rail", [
    ("b0s0", 0, 1, "p1.b0s1", 0),      # across the pods
    ("p1.b0s1", 1, 0, "b0s0", 1),      # back
    ("b0s1", 0, 0, "b0s0", 1),         # inside a pod, across rails
])
def test_planner_predicts_every_source_port_of_a_sample(fab: Fabric, src_host: str, rail: int,
                                                       nic_port: int, dst_host: str, dst_rail: int) -> None:
    tiers = TierModel.of(fab)
    src, dst = fab.host(src_host).nics[rail], fab.host(dst_host).nics[dst_rail]
    want = _model_walks(fab, _published(fab), src, nic_port, dst)
    got = [tier_links(fab, src, nic_port, dst, path)[0] for path in tiers.sport_paths(src, nic_port, dst.ip)]
    assert sum(1 for a, b in zip(got, want) if a != b) == 0
    assert len(set(want)) == (32 if fab.host(src_host).pod != fab.host(dst_host).pod else 4)


def _evidence(plan, t: float, dead: Callable[[ProbePath], bool], switches: Sequence[str]) -> Evidence:
    """One evaluation of the plan's probes: 30 sent per path in the window, none received
    on the paths ``dead`` says, all of them elsewhere; every switch answers P4Runtime."""
    ev = Evidence(t, controller_up=True, switch_up={s: True for s in switches})
    for p in plan.paths:
        ev.paths[p.name] = PathStats(p.name, 3.0, 30, 0 if dead(p) else 30)
    ev.path_links = plan.path_links()
    ev.path_dst_prefix = dict(plan.dst_prefix)
    return ev


@pytest.mark.parametrize("kind,component,dead", [
    ("dead_nic_port", "nic b0s0-eth0p1", lambda p: "b0s0-eth0p1" in (p.src_nic, p.dst_nic)),
    ("dead_tor", "switch p1.b0r0l1", lambda p: "p1.b0r0l1" in p.switches),
], ids=["dead-nic-port", "dead-tor"])
def test_localiser_names_a_dead_nic_port_or_tor_from_the_tiered_plan(fab: Fabric, plan, kind: str,
                                                                     component: str, dead) -> None:
    """The plan's own paths on the two-pod spec: a dual-port NIC's port 1 that passes
    nothing is named as that port (not its leaf, not a link), a leaf that forwards nothing
    while its P4Runtime answers as that ToR (not the NIC ports on it)."""
    assert any(dead(p) for p in plan.paths)
    loc = Localiser()
    names = [s.name for s in fab.switches]
    named = [v for i in range(40) for v in loc.observe(_evidence(plan, 0.5 * i, lambda p: False, names))]
    assert named == []
    for i in range(40, 80):
        named += loc.observe(_evidence(plan, 0.5 * i, dead, names))
    assert [(v.kind, v.component) for v in named] == [(kind, component)]
