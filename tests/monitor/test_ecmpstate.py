"""The switches' ECMP tables → the hash model they imply → the probe paths re-predicted
(``monitor.ecmpstate``), and the monitor following them (``Monitor.follow_ecmp``): after
GOR takes a cable out (the leaf's uplink group shrinks, the other leaves get detours),
no probe path is predicted over it any more."""
from __future__ import annotations

from pathlib import Path

from controller.fabric.detours import fabric_hash_model
from monitor.ecmpstate import EcmpState, live_hash_model, pins_of, repredict
from monitor.probes import plan_probes
from monitor.service import Monitor, MonitorOptions
from topo.model import build_fabric

FABRIC = build_fabric()
LEAF = "b0r0l0"
UP = next(p for p, pi in FABRIC.switch(LEAF).ports.items() if pi.peer_node == "s1")
DOWN = {(LEAF, UP), ("s1", FABRIC.switch(LEAF).ports[UP].peer_port)}
CABLE = {f"{LEAF}->s1", f"s1->{LEAF}"}


def tables_of(model: object) -> dict[str, EcmpState]:
    """What the switches hold when programmed as ``model`` says (groups, member ports,
    routes to groups): the input a switch exporter would read."""
    out = {}
    for name, sm in model.switches.items():                              # type: ignore[attr-defined]
        sw = FABRIC.switch(name)
        port_of = {}
        for p, pi in sw.ports.items():
            port_of.setdefault(pi.peer_node, p)
            port_of[f"{pi.peer_node}#{p}"] = p
        members = tuple(sorted((g.base + i, port_of[m]) for g in sm.groups.values()
                               for i, m in enumerate(g.members)))
        out[name] = EcmpState(tuple(sorted((gid, g.base, g.size) for gid, g in sm.groups.items())),
                              members, tuple(sorted((r.prefix, r.group_id) for r in sm.routes)))
    return out


def test_the_tables_after_a_cable_went_down_give_gors_model_and_paths_around_it() -> None:
    after = fabric_hash_model(FABRIC, down=DOWN)               # what GOR programs then
    model = live_hash_model(FABRIC, tables_of(after))
    for name, sm in after.switches.items():
        assert model.switch(name).groups == sm.groups, name
        assert set(model.switch(name).routes) == set(sm.routes), name
    plan = plan_probes(FABRIC)
    over = [p.name for p in plan.paths if CABLE & {str(l) for l in p.links}]
    assert over                                                 # the plan used the cable
    paths, lost = repredict(FABRIC, model, plan.paths)
    assert lost == []
    assert not [p.name for p in paths if CABLE & {str(l) for l in p.links}]
    assert {p.name for p, q in zip(plan.paths, paths) if p.links != q.links} == set(over)
    assert all(p.src_nic == q.src_nic and p.sport == q.sport for p, q in zip(plan.paths, paths))


def test_a_group_with_a_member_missing_is_left_out_and_its_paths_kept() -> None:
    broken = EcmpState(groups=((1, 0, 2),), members=((0, 3),))       # index 1 has no entry
    model = live_hash_model(FABRIC, {LEAF: broken})
    assert model.switch(LEAF).groups == {}
    plan = plan_probes(FABRIC)
    paths, lost = repredict(FABRIC, model, plan.paths)
    from_leaf = [p.name for p in plan.paths if p.links[0].dst == LEAF and len(p.links) > 2]
    assert from_leaf and set(from_leaf) <= set(lost)
    assert [p.links for p in paths if p.name in lost] == [p.links for p in plan.paths if p.name in lost]


class Tables:
    """The switch exporter's ``ecmp_snapshot`` (the only part the monitor reads here)."""

    def __init__(self, states: dict[str, EcmpState]) -> None:
        self.states = states

    def ecmp_snapshot(self) -> dict[str, EcmpState]:
        return dict(self.states)


def test_the_monitor_follows_the_tables_once_per_change(tmp_path: Path) -> None:
    plan = plan_probes(FABRIC)
    said: list[str] = []
    mon = Monitor(FABRIC, plan, tmp_path, [], options=MonitorOptions(web=False), say=said.append)
    tables = Tables(tables_of(fabric_hash_model(FABRIC)))
    mon.switch_exporter = tables
    assert mon.follow_ecmp() == [] and said == []               # as planned: nothing moves
    tables.states = tables_of(fabric_hash_model(FABRIC, down=DOWN))
    moved = mon.follow_ecmp()
    assert moved and mon.repredictions == 1
    assert not [p for p in mon.builder.paths if CABLE & {str(l) for l in p.links}]
    assert any(f"{len(moved)} probe path(s) re-predicted" in s for s in said), said
    assert mon.follow_ecmp() == []                              # the same tables: no work
    tables.states = tables_of(fabric_hash_model(FABRIC))        # the cable is back
    assert sorted(mon.follow_ecmp()) == sorted(moved)
    assert [p.links for p in mon.builder.paths] == [p.links for p in plan.paths]


def test_a_probe_whose_5_tuple_gor_pinned_goes_where_the_pin_says() -> None:
    plan = plan_probes(FABRIC)
    keep = next(p for p in plan.paths if p.links[0].dst == LEAF and str(p.links[1]) == f"{LEAF}->s0")
    pin = (keep.src_ip, keep.dst_ip, 17, keep.sport, 4791, UP)              # onto s1
    states = tables_of(fabric_hash_model(FABRIC))
    states[LEAF] = EcmpState(states[LEAF].groups, states[LEAF].members, states[LEAF].routes, (pin,))
    paths, lost = repredict(FABRIC, live_hash_model(FABRIC, states), plan.paths, pins_of(states))
    moved = {p.name: q for p, q in zip(plan.paths, paths) if p.links != q.links}
    assert list(moved) == [keep.name] and lost == []
    assert str(moved[keep.name].links[1]) == f"{LEAF}->s1"
    assert moved[keep.name].links[-1] == keep.links[-1] and "s1" in moved[keep.name].switches
