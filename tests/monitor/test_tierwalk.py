"""Probe paths re-predicted from the switches' ECMP tables over three tiers
(``monitor.probes.predict_tier_path``, ``monitor.ecmpstate``) on the two-pod dual-port
spec: with the tables as the controller programs them, every walk (leaf, spine, core, the
destination pod's spine, either leaf of a dual-homed NIC) equals the published hash
model's (``controller.fabric.tiers.TierModel``) for every NIC port, every other NIC and a
sample of source ports; a group cut down, a ports-first flag missing or a pin moves them
as the switches would (issue 29: "the hash model predicts every probe and flow path over
three tiers and two NIC ports exactly")."""
from __future__ import annotations

import dataclasses
import ipaddress
from pathlib import Path

import pytest

from controller.fabric.tiers import TierModel, tier_hash_model
from monitor.ecmpstate import EcmpState, live_hash_model, pins_of, programmed_states, repredict
from monitor.probes import predict_tier_path, tier_probe_path
from monitor.service import Monitor, MonitorOptions
from pod2plans import pod2_fabric, pod2_plan
from topo.routes import Route, fabric_routes

FABRIC = pod2_fabric()
TIERS = TierModel.of(FABRIC)
ROUTES = fabric_routes(FABRIC)
STATES = programmed_states(FABRIC)
NICS = [n for h in FABRIC.hosts for n in h.nics]
SPORTS = [49152 + (i * 2654435761) % (1 << 14) for i in range(24)]   # the planner's stride
PLAN = pod2_plan()                          # plan_probes(FABRIC), built once per process


def walks(model: object, pins: object = None) -> dict[tuple[str, str, int], object]:
    """Every (NIC port, other NIC, sampled source port) walked over ``model``'s tables."""
    out = {}
    for src in NICS:
        for dst in NICS:
            if dst is src:
                continue
            for port in src.ports:
                for sp in SPORTS:
                    out[(port.intf, dst.ip, sp)] = predict_tier_path(
                        FABRIC, model, ROUTES, port.intf, src.ip, dst.ip, sp, pins)  # type: ignore[arg-type]
    return out


def hash_model_walks(tiers: TierModel) -> dict[tuple[str, str, int], object]:
    out = {}
    for src in NICS:
        for dst in NICS:
            if dst is src:
                continue
            for i, port in enumerate(src.ports):
                for sp in SPORTS:
                    out[(port.intf, dst.ip, sp)] = tier_probe_path(tiers, src, i, dst, sp)[:2]
    return out


WANT = hash_model_walks(TIERS)


def test_the_programmed_tables_imply_the_published_model() -> None:
    model = live_hash_model(FABRIC, STATES)
    for name, sm in TIERS.model.switches.items():
        assert model.switch(name).groups == sm.groups, name
        assert set(model.switch(name).routes) == set(sm.routes), name
    assert STATES["c0.0"].ports_first and not STATES["b0r0l0"].ports_first


def test_every_walk_over_the_tables_is_the_hash_models_over_three_tiers_and_both_nic_ports() -> None:
    got = walks(live_hash_model(FABRIC, STATES))
    assert got == WANT
    roles = {s.name: s.role for s in FABRIC.switches}
    cross = [sws for _, sws in got.values() if len(sws) == 5]          # type: ignore[misc]
    assert cross and all([roles[s] for s in sws] == ["leaf", "spine", "core", "spine", "leaf"]
                          for sws in cross)
    arrivals = {links[-1].dst for links, _ in got.values()}            # type: ignore[misc]
    assert {p.intf for n in NICS for p in n.ports} <= arrivals         # both ports of every NIC


def test_without_the_ports_first_flags_the_walks_differ() -> None:
    """The spines' and cores' groups down hash ports-first: read as plain groups, the
    model would mispredict (so the flag read from ``ecmp.groups`` matters)."""
    plain = {n: dataclasses.replace(s, ports_first=()) for n, s in STATES.items()}
    got = walks(live_hash_model(FABRIC, plain))
    assert sum(got[k] != WANT[k] for k in WANT) > len(WANT) // 10


def test_the_plans_probe_paths_are_kept_exactly_and_none_is_lost(tmp_path: Path) -> None:
    paths, lost = repredict(FABRIC, live_hash_model(FABRIC, STATES), PLAN.paths)
    assert lost == [] and paths == list(PLAN.paths)
    said: list[str] = []
    mon = Monitor(FABRIC, PLAN, tmp_path, [], options=MonitorOptions(web=False), say=said.append)

    class Tables:
        states = STATES

        def ecmp_snapshot(self) -> dict[str, EcmpState]:
            return dict(self.states)

    mon.switch_exporter = Tables()
    assert mon.follow_ecmp() == [] and said == []          # no "not predictable", nothing moved


def _without(state: EcmpState, prefix: str, drop: set[int]) -> EcmpState:
    """``state`` with the group of its route to ``prefix`` cut to the ports not in ``drop``
    (members renumbered from the group's base, as a controller rewriting it would)."""
    gid = dict(state.routes)[prefix]
    gid_, base, size = next(g for g in state.groups if g[0] == gid)
    ports = dict(state.members)
    kept = [ports[base + i] for i in range(size) if ports[base + i] not in drop]
    members = [m for m in state.members if not base <= m[0] < base + size]
    members += [(base + i, p) for i, p in enumerate(kept)]
    groups = [g for g in state.groups if g[0] != gid] + [(gid, base, len(kept))]
    return dataclasses.replace(state, groups=tuple(sorted(groups)), members=tuple(sorted(members)))


def test_a_spines_core_group_cut_down_moves_the_probes_off_the_core() -> None:
    s1 = FABRIC.switch("s1")
    gone = {p for p, info in s1.ports.items() if info.peer_node == "c1.1"}
    assert gone
    states = dict(STATES, s1=_without(STATES["s1"], "10.0.0.0/8", gone))
    routes = {k: list(v) for k, v in ROUTES.items()}
    routes["s1"] = [Route(r.prefix, tuple(p for p in r.ports if p not in gone)) for r in routes["s1"]]
    want = TierModel(FABRIC, routes, tier_hash_model(FABRIC, routes))   # the fabric without those links
    model = live_hash_model(FABRIC, states)
    paths, lost = repredict(FABRIC, model, PLAN.paths)
    assert lost == []
    before = [p for p in PLAN.paths if "s1" in p.switches and "c1.1" in p.switches
              and p.switches.index("c1.1") == p.switches.index("s1") + 1]
    assert before                                             # the plan used s1 -> c1.1
    for p in paths:
        assert not ("s1" in p.switches and "c1.1" in p.switches
                    and p.switches.index("c1.1") == p.switches.index("s1") + 1), p.name
    nic_of = {port.intf: (n, i) for n in NICS for i, port in enumerate(n.ports)}
    for p in paths:
        src, i = nic_of[p.src_nic]
        dst = next(n for n in NICS if n.ip == p.dst_ip)
        assert (p.links, p.switches) == tier_probe_path(want, src, i, dst, p.sport)[:2], p.name


def test_a_probe_pinned_at_a_core_goes_where_the_pin_says() -> None:
    probe = next(p for p in PLAN.paths if len(p.switches) == 5)
    core, spine = probe.switches[2], probe.switches[3]
    sw = FABRIC.switch(core)
    taken = next(p for p, info in sw.ports.items() if info.peer_node == spine
                 and str(probe.links[3]) in (f"{core}:{p}->{spine}", f"{core}->{spine}"))
    other = next(p for p, info in sorted(sw.ports.items()) if info.peer_node == spine and p != taken)
    pin = (probe.src_ip, probe.dst_ip, 17, probe.sport, 4791, other)
    states = dict(STATES, **{core: dataclasses.replace(STATES[core], overrides=(pin,))})
    paths, lost = repredict(FABRIC, live_hash_model(FABRIC, states), PLAN.paths, pins_of(states))
    moved = {p.name: q for p, q in zip(PLAN.paths, paths) if p.links != q.links}
    assert lost == [] and list(moved) == [probe.name]
    assert str(moved[probe.name].links[3]) == f"{core}:{other}->{spine}"


def test_a_group_not_held_loses_its_paths_and_keeps_their_links() -> None:
    st = STATES["c0.0"]
    broken = dataclasses.replace(st, members=st.members[1:])       # member 0 has no entry
    gid = next(g for g, base, _ in st.groups if base == 0)
    nets = [ipaddress.IPv4Network(prefix) for prefix, g in st.routes if g == gid]
    paths, lost = repredict(FABRIC, live_hash_model(FABRIC, dict(STATES, **{"c0.0": broken})),
                            PLAN.paths)
    through = [p.name for p in PLAN.paths if "c0.0" in p.switches
               and any(ipaddress.IPv4Address(p.dst_ip) in n for n in nets)]
    assert through and sorted(lost) == sorted(through)
    assert paths == list(PLAN.paths)


@pytest.mark.parametrize("bad", ["no-such-eth0", ""])
def test_an_unknown_nic_port_is_refused_by_name(bad: str) -> None:
    with pytest.raises(ValueError, match="no NIC port"):
        predict_tier_path(FABRIC, TIERS.model, ROUTES, bad, "10.0.0.1", "10.0.2.1", 49152)
