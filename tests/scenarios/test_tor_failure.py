"""``SCENARIO=tor-failure`` without a network: it refuses a fabric without dual-port NICs
(status 2, before anything starts) and counts lost flows from the NICs' reports."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

from scenarios.common import ScenarioOptions
from scenarios.tor_failure import MESSAGES, TorFailureResult, _measure, _measure_gor, run_tor_failure
from topo.model import build_fabric


def test_refuses_single_port_nics(tmp_path: Path) -> None:
    said: list[str] = []
    res = run_tor_failure(build_fabric(), None, SimpleNamespace(procs=[]), lambda: None,
                          ScenarioOptions(runs_root=tmp_path), say=said.append)
    assert res.status == 2 and "SPEC=topo/specs/dualport.yaml" in said[0]
    assert not list(tmp_path.iterdir())             # nothing written, nothing started


def _reports(tmp_path: Path, acked: list[int], moves: int) -> list[tuple[str, object, Path]]:
    send, recv = tmp_path / "send.json", tmp_path / "recv.json"
    send.write_text(json.dumps({"iface": "a,b", "flows": [
        {"qp_state": "RTS" if a == MESSAGES else "ERR", "acked_messages": a} for a in acked],
        "bond": {"moves": moves, "first_move_at": 10.25, "tx_frames": [1, 1],
                 "events": [{"t": 10.12, "port": 1, "state": "down"}]}}))
    recv.write_text(json.dumps({"flows": [{"messages_received": a} for a in acked]}))
    return [("send", subprocess, send), ("recv", subprocess, recv)]


def test_counts_lost_flows_and_recovery(tmp_path: Path) -> None:
    ok = TorFailureResult(1, flows=4)
    _measure(ok, _reports(tmp_path, [MESSAGES] * 4, moves=2), t_cut=10.0)
    assert (ok.status, ok.flows_lost, ok.moved_qps, ok.recover_s, ok.detect_s) == \
        (0, 0, 2, 0.25, [0.12])
    lost = TorFailureResult(1, flows=4)
    _measure(lost, _reports(tmp_path, [MESSAGES] * 3 + [7], moves=2), t_cut=10.0)
    assert lost.status == 1 and lost.flows_lost == 1 and "1 of 4 flows lost" in lost.reasons
    none_moved = TorFailureResult(1, flows=4)
    _measure(none_moved, _reports(tmp_path, [MESSAGES] * 4, moves=0), t_cut=10.0)
    assert none_moved.status == 1 and "no QP was moved" in none_moved.reasons[0]


def test_gor_part_from_the_decision_log(tmp_path: Path) -> None:
    log = tmp_path / "gor.jsonl"
    recs = [{"event": "link_down", "mono_s": 9.0, "link": "s0->b0r0l1", "detours": []},   # before
            {"event": "link_down", "mono_s": 10.2, "link": "s0->b0r0l1", "detours": []},
            {"event": "link_down", "mono_s": 10.3, "link": "b0r0l0->s1", "detours": []},  # other leaf
            {"event": "link_down", "mono_s": 10.4, "link": "s1:3->b0r0l1", "detours": ["x: y"]}]
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = TorFailureResult(0, recover_s=0.25)
    _measure_gor(res, log, "b0r0l1", 2, t_cut=10.0)
    assert res.gor_links_down == ["s0->b0r0l1", "s1:3->b0r0l1"] and res.gor_detours == ["x: y"]
    assert (res.fabric_update_s, res.continue_s, res.status) == (0.4, 0.4, 0)
    short = TorFailureResult(0, recover_s=0.25)
    _measure_gor(short, log, "b0r0l1", 3, t_cut=10.0)
    assert short.status == 1 and short.reasons == ["GOR took 2 of b0r0l1's 3 cables down"]
