"""``python -m scenarios measure``'s plan (``sim measure``) without Mininet: the recorded collectives differ in size, hops and
uplink sharing; colliding ports really share an uplink (hash model and simulator agree);
the step time from NIC reports; calibration with recorded ports, the testbed's queue rate
and a held-out split."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from controller.fabric_setup import plan_fabric
from p4src.hashmodel import FabricHashModel
from sim.calibrate import calibrate_file
from scenarios import measure
from scenarios.cli import main
from scenarios.measure import (HELDOUT, colliding_ports, default_collectives, plan_collective,
                               ring_pairs, step_time_s)
from sim.model import ModelParams, predict
from sim.routing import route_flows
from sim.topology import TIER, SimFabric
from topo.model import build_fabric


@pytest.fixture(scope="module")
def fabric_and_model() -> tuple[Any, FabricHashModel, Any]:
    fab = build_fabric()
    plans = plan_fabric(fab)
    hm = FabricHashModel({n: p.hash_model() for n, p in plans.items()})

    def member_ports(sw: str, g: int) -> dict[str, int]:
        return dict(zip(plans[sw].groups[g].members, plans[sw].groups[g].ports))
    return fab, hm, member_ports


def test_the_collectives_differ_in_size_hops_and_sharing() -> None:
    colls = default_collectives()
    assert len({c["packets"] for c in colls}) >= 3
    assert {c["ports"] for c in colls} == {"tccl", "collide"}
    assert any(c["heldout"] for c in colls) and not all(c["heldout"] for c in colls)
    assert {c["name"] for c in colls if c["heldout"]} == set(HELDOUT)
    assert len({c["name"] for c in colls}) == len(colls)


def _uplink_loads(sf: SimFabric, row: dict[str, Any]) -> list[int]:
    ids = {str(h.nics[r].ip): sf.nic_id(h.name, r) for h in sf.fabric.hosts for r in range(len(h.nics))}
    src = np.array([ids[f["src"]] for f in row["flows"]])
    dst = np.array([ids[f["dst"]] for f in row["flows"]])
    links = route_flows(sf, src, dst, np.array([f["sport"] for f in row["flows"]])).links
    up = links[(links >= 0)]
    up = up[sf.tier[up] == TIER["leaf_up"]]
    return np.bincount(up).tolist()


def test_colliding_ports_share_one_uplink_and_tccl_ports_do_not(fabric_and_model: Any) -> None:
    fab, hm, mp = fabric_and_model
    sf = SimFabric.build(fab)
    by_name = {c["name"]: c for c in default_collectives()}
    _, collide = plan_collective(fab, by_name["ring4-interleaved-collide-p80"], hm, mp)
    _, tccl = plan_collective(fab, by_name["ring4-interleaved-tccl-p80"], hm, mp)
    assert max(_uplink_loads(sf, collide)) == 2           # the simulator routes them together
    assert [f["uplink"] for f in collide["flows"]].count(collide["shared_uplink"]) == 2
    assert max(_uplink_loads(sf, tccl)) == 1
    assert collide["size_bytes"] == tccl["size_bytes"] == 4 * 80 * 1024


def test_colliding_ports_need_two_flows_on_one_leaf(fabric_and_model: Any) -> None:
    fab, hm, mp = fabric_and_model
    with pytest.raises(RuntimeError, match="two flows on one uplink"):
        colliding_ports(fab, ring_pairs(fab, ["b0s0:0", "b1s0:0"]), hm, mp)


def test_step_time_is_last_receive_minus_first_send_and_counts_losses() -> None:
    snd = [{"flows": [{"first_s": 5.0, "sent_pkts": 80}]}, {"flows": [{"first_s": 5.2, "sent_pkts": 80}]}]
    rcv = [{"flows": [{"last_s": 6.0, "recv_pkts": 80}]}, {"flows": [{"last_s": 6.5, "recv_pkts": 79}]}]
    t, lost = step_time_s(snd, rcv)
    assert t == pytest.approx(1.5) and lost == 1
    with pytest.raises(ValueError):
        step_time_s([], rcv)


def _file(tmp_path: Path, rows: list[dict[str, Any]], queue_pps: float | None) -> Path:
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"schema": "astral-sim-measurements", "version": 1, "source": "fixture",
                             "note": "SYNTHETIC", "fabric": {"spec_file": "topo/specs/default.yaml"},
                             "link_Bps": 102400.0,
                             "testbed": {"nic_line_rate_pps": 100.0, "uplink_queue_pps": queue_pps},
                             "measurements": rows}))
    return p


def test_recorded_ports_and_queue_rate_reach_the_simulation(tmp_path: Path, fabric_and_model: Any) -> None:
    fab, hm, mp = fabric_and_model
    by_name = {c["name"]: c for c in default_collectives()}
    rows = [plan_collective(fab, by_name[n], hm, mp)[1]
            for n in ("ring4-interleaved-collide-p80", "ring4-interleaved-tccl-p80")]
    for r in rows:
        r["measured_s"] = [1.0]
        r["heldout"] = False
    rep = calibrate_file(_file(tmp_path, rows, 150.0))
    overhead_s = 3.5e-6 + 3 * 0.5e-6                           # default per-host + 3 switches
    # two 80-packet flows share a 150 pps uplink: 75 pps each; alone one runs at its NIC's 100 pps
    assert rep.before_s[0] == pytest.approx(81920 / (1.5 * 102400 / 2) + overhead_s)
    assert rep.before_s[1] == pytest.approx(81920 / 102400 + overhead_s)
    slow = calibrate_file(_file(tmp_path, rows, None))          # no queue rate: every link at link_Bps
    assert slow.before_s[0] > rep.before_s[0]


def test_heldout_rows_are_not_fitted_on(tmp_path: Path, fabric_and_model: Any) -> None:
    fab, hm, mp = fabric_and_model
    truth = ModelParams(per_host_s=0.01, per_hop_s=0.002, bandwidth_scale=0.9, link_Bps=102400.0)
    rows = []
    for c in default_collectives():
        _, row = plan_collective(fab, c, hm, mp)
        rows.append(row)
    first = calibrate_file(_file(tmp_path, [{**r, "measured_s": [1.0]} for r in rows], 150.0))
    # synthetic truth from the simulated features, then spoil the held-out rows only
    from sim.calibrate import features_for  # noqa: PLC0415
    data = json.loads(_file(tmp_path, [{**r, "measured_s": [1.0]} for r in rows], 150.0).read_text())
    _, feats, _ = features_for(data, "t")
    for r, f in zip(rows, feats):
        r["measured_s"] = [predict(f, truth) * (3.0 if r["heldout"] else 1.0)]
    rep = calibrate_file(_file(tmp_path, rows, 150.0))
    assert (rep.after.per_host_s, rep.after.per_hop_s, rep.after.bandwidth_scale) == pytest.approx(
        (0.01, 0.002, 0.9), rel=1e-6)
    assert rep.error_after_pct == pytest.approx(0.0, abs=1e-6)
    assert rep.error_heldout_pct == pytest.approx(100 * 2 / 3, rel=1e-6)
    assert "held-out" in rep.summary() and first.error_heldout_pct is not None


def test_measure_refuses_without_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(measure.os, "geteuid", lambda: 1000)
    assert main(["measure", "--out", str(tmp_path / "m.json")]) == 1
    assert "needs root" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()
