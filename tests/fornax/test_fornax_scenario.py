"""The FORNAX scenario: its analysis on synthetic records (no root), and the scenario
itself, compressed to 13 s of traffic, on a live p4sim testbed (root + Mininet; skipped
otherwise with the reason): two SmartNICs, four VMs of two overlapping VPCs, real TCP,
a policy change, a corrupted entry and a frozen NIC — every fault seen, the policy change
re-evaluating red sessions only, no connection broken, nothing left behind (~40 s)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from scenarios.fornax_report import RunRecord, analyse, failures


def _record(**kw: object) -> RunRecord:
    base = dict(t0=100.0, injected={"corruption": 110.0}, policy_change_t=105.0,
                hang=("nicA", 115.0, 118.0),
                timelines={"nicA": [
                    {"t": 105.2, "event": "rebuilt", "reason": "stale", "key": "vni 200 tcp x"},
                    {"t": 110.05, "event": "corrupt", "key": "vni 100 tcp y"},
                    {"t": 115.9, "event": "hang"},
                    {"t": 118.4, "event": "hardware-back", "software_frames": 812}]},
                samples={"nicA": [(100.0, {"sessions": 1, "cpu_s": 1.0, "counters": {}}),
                                  (130.0, {"sessions": 9, "cpu_s": 2.5,
                                           "counters": {"sessions_installed": 40}})]},
                clients={"a1": {"long": [{"target": "t", "local_port": 1, "bytes": 9,
                                          "max_stall_s": 1.2, "error": None, "broken": False,
                                          "bytes_per_bin": [1, 2]}],
                                "short": {"count": 30, "failed": 0, "errors": []}}})
    base.update(kw)
    return RunRecord(**base)  # type: ignore[arg-type]


def test_analysis_of_a_good_run() -> None:
    rec = _record()
    out = analyse(rec)
    assert (out.corruption_detect_s, out.hang_detect_s, out.hang_back_s) == (0.05, 0.9, 0.4)
    assert out.stale_rebuilt_by_vni == {"200": 1} and out.policy_converge_s == 0.2
    assert out.fallback_frames == 812 and out.connections_broken == 0
    assert out.cpu_s_per_min["nicA"] == 3.0 and out.sessions_installed["nicA"] == 40
    assert failures(rec, out) == []


def test_an_attack_that_went_through_fails_the_run() -> None:
    rec = _record(attacks=[("nicA-manager", "read-sessions", "OK", "every RPC went through"),
                           ("nicA", "takeover", "UNAVAILABLE", "handshake")],
                  attacked_mastership=(0, 1))
    why = failures(rec, analyse(rec))
    assert "attacks on a NIC went through: nicA-manager read-sessions" in why
    assert "the attacked NIC's manager lost mastership during the attacks" in why


def test_a_run_that_missed_a_fault_or_broke_a_connection_fails() -> None:
    rec = _record(timelines={"nicA": []})
    why = failures(rec, analyse(rec))
    assert "the corrupted entry was never reported" in why
    assert "the hang was not detected" in why
    broken = _record()
    broken.clients["a1"]["long"][0]["broken"] = True          # type: ignore[index]
    assert any("broke" in w for w in failures(broken, analyse(broken)))
    empty = _record(clients={}, samples={})
    assert any("no long connection" in w for w in failures(empty, analyse(empty)))


def _unavailable(state: Path) -> str | None:
    if os.geteuid() != 0:
        return "the testbed needs root (namespaces, veths)"
    from testbed.cli import preflight
    from testbed.net import TestbedError, link_exists, load_mininet
    try:
        preflight(state)
        load_mininet()
    except TestbedError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001
        return f"Mininet not importable: {exc}"
    if link_exists("nicA-eth1"):
        return "a FORNAX testbed is up already (nicA-eth1 exists)"
    return None


def test_the_scenario_on_a_live_testbed(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    why = _unavailable(state)
    if why:
        pytest.skip(why)
    from scenarios.fornax import run_fornax
    lines: list[str] = []
    status, run_dir = run_fornax(runs_root=tmp_path / "runs", state_path=state,
                                 say=lines.append, hang_s=2.0,
                                 schedule={"policy": 3.0, "corruption": 5.5, "hang": 8.0,
                                           "end": 13.0})
    assert status == 0, "\n".join(lines)
    assert not state.exists()                          # nothing recorded is left
    report = (run_dir / "report.md").read_text()
    assert "| corrupted entry reported after | 0." in report
    assert "{'200':" in report and "'100'" not in report.split("by VNI |")[1].split("|")[0]
    # nicB attacked with nicA's certificates while serving (testbed/attacks.py): refused
    rows = [line.split(" | ") for line in report.split("## Attacks on a NIC")[1]
            .split("\n\n")[1].splitlines()[2:]]
    codes = {(r[0].strip("| "), r[1]): r[2] for r in rows}
    assert len(codes) == 12, codes
    assert set(codes.values()) == {"UNAVAILABLE"}, codes    # nicB trusts neither's CA
    assert "mastership losses 0 before, 0 after" in report
    for plot in ("fornax_sessions.png", "fornax_cpu.png", "fornax_long_connections.png"):
        assert (run_dir / plot).stat().st_size > 1000
