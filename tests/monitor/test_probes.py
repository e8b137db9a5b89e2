"""The probe planner (monitor.probes, monitor.probeplan): every link direction watched by
two probe paths that share no other link, paths predicted with the published hash model,
a small plan, and a plan file that refuses bad input naming the field."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.fabric.detours import fabric_hash_model
from monitor.evidence import LinkDir
from monitor.probeplan import load_plan, load_plan_text, plan_from_dict
from monitor.probes import coverage_gaps, fabric_links, main, plan_probes, predict_path
from p4src.hashmodel import member_index
from topo.model import build_fabric
from topo.spec import FabricSpec

LARGER = FabricSpec(blocks=2, servers_per_block=4, rails=2, spines=4)


@pytest.mark.parametrize("spec", [FabricSpec(), LARGER, FabricSpec(uplinks_per_spine=2),
                                  FabricSpec(leaves_per_rail=2, servers_per_block=4),
                                  FabricSpec(spines=1)],
                         ids=["default", "2x4x2x4spines", "parallel-uplinks", "2-leaves-per-rail",
                              "one-spine"])
def test_every_link_direction_has_two_paths_sharing_nothing_else(spec: FabricSpec) -> None:
    fab = build_fabric(spec)
    plan = plan_probes(fab)
    links = fabric_links(fab)
    assert coverage_gaps(plan.paths, links) == []
    assert plan.uncovered == {}
    # every crossing is of a real link direction, and each path is a walk src NIC -> dst NIC
    assert {l for p in plan.paths for l in p.links} <= set(links)
    for p in plan.paths:
        assert p.links[0].src == p.src_nic and p.links[-1].dst == p.dst_nic
        assert all(a.dst == b.src for a, b in zip(p.links, p.links[1:]))
        assert list(p.switches) == [l.dst for l in p.links[:-1]]
        assert 49152 <= p.sport < 65536


@pytest.mark.parametrize("spec", [FabricSpec(), LARGER], ids=["default", "2x4x2x4spines"])
def test_plan_size_is_the_lower_bound(spec: FabricSpec) -> None:
    """Each 4-link path watches 4 directions; every direction needs 2 crossings."""
    fab = build_fabric(spec)
    plan = plan_probes(fab)
    assert len(plan.paths) == 2 * len(fabric_links(fab)) // 4
    assert plan.probes_per_s() == len(plan.paths) * plan.rate_pps


def test_paths_follow_the_hash_model_member_by_member() -> None:
    fab = build_fabric(LARGER)
    model = fabric_hash_model(fab)
    nics = {n.intf: n for h in fab.hosts for n in h.nics}
    for p in plan_probes(fab, model).paths:
        src, dst = nics[p.src_nic], nics[p.dst_nic]
        leaf = model.switch(src.leaf)
        idx = member_index(leaf, 1, p.src_ip, p.dst_ip, 17, p.sport, 4791) - leaf.group(1).base
        assert p.links[1] == LinkDir(src.leaf, leaf.group(1).members[idx])
        assert p.links[2] == LinkDir(leaf.group(1).members[idx], dst.leaf)


def test_each_destination_prefix_is_reached_by_paths_from_two_spines() -> None:
    fab = build_fabric()
    plan = plan_probes(fab)
    by_prefix = plan.paths_by_prefix()
    nic_prefixes = {n.prefix for n in plan.nics.values()}
    assert set(by_prefix) == nic_prefixes == {f"10.{b}.{r}.0/24" for b in (0, 1) for r in (0, 1)}
    paths = {p.name: p for p in plan.paths}
    for prefix, names in by_prefix.items():
        assert len({paths[n].switches[1] for n in names}) == 2, prefix


def test_links_no_path_can_watch_are_named_with_why() -> None:
    fab = build_fabric(FabricSpec(blocks=1, servers_per_block=1, rails=1, spines=1))
    plan = plan_probes(fab)
    assert plan.paths == ()
    assert set(plan.uncovered) == {str(l) for l in fabric_links(fab)}
    assert all("no probe path crosses it" in why for why in plan.uncovered.values())


def test_a_cut_cable_in_the_published_model_is_avoided_and_reported() -> None:
    fab = build_fabric()
    down = {("b0r0l0", 3), ("s0", 1)}             # the cable b0r0l0:3 <-> s0:1
    plan = plan_probes(fab, fabric_hash_model(fab, down))
    cut = {LinkDir("b0r0l0", "s0"), LinkDir("s0", "b0r0l0")}
    assert not any(set(p.links) & cut for p in plan.paths)
    assert set(plan.uncovered) == {str(l) for l in cut}
    others = [l for l in fabric_links(fab) if l not in cut]
    assert coverage_gaps(plan.paths, others) == []


def test_predict_path_on_one_leaf_skips_the_spines() -> None:
    fab = build_fabric()
    a, b = fab.host("b0s0").nics[0], fab.host("b0s1").nics[0]
    links, sws = predict_path(fab, fabric_hash_model(fab), a, b, 50000)
    assert [str(l) for l in links] == ["b0s0-eth0->b0r0l0", "b0r0l0->b0s1-eth0"] and sws == ("b0r0l0",)


def test_plan_file_round_trip(tmp_path: Path) -> None:
    plan = plan_probes(build_fabric())
    path = plan.save(tmp_path / "plan.json")
    assert load_plan(path) == plan
    data = json.loads(path.read_text())
    assert data["schema"] == "astral-probe-plan" and data["version"] == 1 and data["dport"] == 4791


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.update(version=2), "$.version"),
    (lambda d: d.pop("nics"), "$.nics"),
    (lambda d: d["paths"][3].update(sport=70000), "$.paths[3].sport"),
    (lambda d: d["paths"][0].update(src_nic="b9s9-eth0"), "$.paths[0].src_nic"),
    (lambda d: d["paths"][1].update(links=["not a link"]), "$.paths[1].links"),
    (lambda d: d["paths"][2].update(name="p0"), "$.paths[2].name"),
    (lambda d: d["nics"]["b0s0-eth0"].pop("gateway_mac"), "$.nics.b0s0-eth0.gateway_mac"),
    (lambda d: d.update(rate_pps="fast"), "$.rate_pps"),
])
def test_invalid_plan_names_the_field(mutate, field: str) -> None:  # type: ignore[no-untyped-def]
    data = plan_probes(build_fabric()).to_dict()
    mutate(data)
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("$", r"\$")):
        plan_from_dict(data)


def test_unreadable_plan_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        load_plan_text("{")
    with pytest.raises(ValueError, match="cannot read"):
        load_plan(tmp_path / "missing.json")


def test_cli_writes_the_plan_and_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topo = build_fabric().save(tmp_path / "topology.json")
    assert main(["--fabric", str(topo), "--out", str(tmp_path / "plan.json")]) == 0
    assert "16 paths, 160 probes/s" in capsys.readouterr().out
    assert len(load_plan(tmp_path / "plan.json").paths) == 16
    assert main(["--fabric", str(tmp_path / "nope.json"), "--out", str(tmp_path / "p.json")]) == 2
    assert "error:" in capsys.readouterr().err


def test_parallel_uplinks_a_group_cut_to_one_of_two_links_to_a_spine_names_the_one_kept() -> None:
    """Two uplinks to each spine; GOR takes the first link to s0 out of the leaf's group.
    The member kept is named with its port (``s0#4``), so the probes are predicted over
    it, never over the cut one (named by peer alone it read ``s0`` and mapped back to the
    first port to s0: the cut link)."""
    from topo.spec import FabricSpec
    fab = build_fabric(FabricSpec(uplinks_per_spine=2))
    leaf = "b0r0l0"
    to_s0 = sorted(p for p, i in fab.switch(leaf).ports.items() if i.peer_node == "s0")
    cut, kept = to_s0
    model = fabric_hash_model(fab, down={(leaf, cut), ("s0", fab.switch(leaf).ports[cut].peer_port)})
    assert f"s0#{kept}" in model.switch(leaf).groups[1].members
    a, b = fab.host("b0s0").nics[0], fab.host("b1s1").nics[0]
    firsts = {str(predict_path(fab, model, a, b, sport)[0][1]) for sport in range(49152, 49352)}
    assert f"{leaf}:{kept}->s0" in firsts and f"{leaf}:{cut}->s0" not in firsts, firsts
