"""Smoke tests of the benchmark harness (:mod:`bench`): every benchmark runs for a tiny
duration, ``build/bench.json`` has the documented shape and keeps figures it did not
re-measure, the CLI selects groups, and the built-in correctness check refuses to time a
broken pipeline."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import all_benchmarks, run_benchmarks, select
from bench.__main__ import main
from bench.native_bench import bench_fabric_leaf
from bench.p4sim_bench import (
    crc16_arc,
    longest_match,
    make_flows,
    make_routes,
    port_mac,
    setup_ecmp_ecn,
    setup_ipv4_lpm,
    verify,
)
from bench.results import BenchCheckError, BenchConfig, Figure, format_table, merge_results
from p4sim.native import compiler_status
from p4sim.runtime.tables import ActionCall, Lpm

TINY = BenchConfig(duration_s=0.05, runs=1, warmup_s=0.0)
P4SIM_FIGURES = {"p4sim.pps.ipv4_lpm": "pps", "p4sim.pps.ecmp_ecn": "pps",
                 "p4sim.load_s.ecmp_ecn": "s"}


def _assert_shape(data: object) -> None:
    assert isinstance(data, dict)
    for name, fig in data.items():
        assert isinstance(name, str)
        assert set(fig) == {"value", "unit"}
        assert isinstance(fig["value"], (int, float)) and not isinstance(fig["value"], bool)
        assert isinstance(fig["unit"], str) and fig["unit"]


def test_every_benchmark_runs_and_merges_json(tmp_path: Path) -> None:
    out = tmp_path / "build" / "bench.json"
    out.parent.mkdir()
    out.write_text(json.dumps({"other.kept": {"value": 7, "unit": "ms"}}))
    figures = run_benchmarks(["p4sim"], TINY, out)
    assert {n: f.unit for n, f in figures.items()} == P4SIM_FIGURES
    data = json.loads(out.read_text())
    _assert_shape(data)
    assert data["other.kept"] == {"value": 7, "unit": "ms"}
    for name, unit in P4SIM_FIGURES.items():
        assert data[name]["unit"] == unit
        assert data[name]["value"] > 0


def test_native_fabric_leaf_measures_both_engines() -> None:
    """``native.fabric_leaf`` checks every frame on both engines before timing them."""
    if not compiler_status()[0]:
        pytest.skip(f"native path: {compiler_status()[1]}")
    figures = bench_fabric_leaf(TINY)
    assert {n: f.unit for n, f in figures.items()} == {
        "p4sim.native.pps.fabric_leaf": "pps", "p4sim.native.pps.fabric_leaf_per_call": "pps",
        "p4sim.native.pps.fabric_leaf_python": "pps", "p4sim.native.speedup.fabric_leaf": "ratio",
        "p4sim.native.pps_per_core.fabric_leaf": "pps/core",
        "p4sim.native.pps_per_core.fabric_leaf_python": "pps/core"}
    assert all(f.value > 0 for f in figures.values())


def test_registry_and_selection() -> None:
    names = [f"{b.group}.{b.name}" for b in all_benchmarks() if b.group == "p4sim"]
    assert names == ["p4sim.ipv4_lpm", "p4sim.ecmp_ecn", "p4sim.load_ecmp_ecn"]
    assert [b.name for b in select(["p4sim.ecmp_ecn"])] == ["ecmp_ecn"]
    with pytest.raises(KeyError):
        select(["nope"])


def test_cli_runs_one_benchmark_and_prints_a_table(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    rc = main(["p4sim.load_ecmp_ecn", "--duration", "0.05", "--runs", "1", "--output", str(out)])
    assert rc == 0
    assert "p4sim.load_s.ecmp_ecn" in capsys.readouterr().out
    data = json.loads(out.read_text())
    _assert_shape(data)
    assert list(data) == ["p4sim.load_s.ecmp_ecn"]


def test_cli_rejects_unknown_group(tmp_path: Path) -> None:
    assert main(["nope", "--output", str(tmp_path / "b.json")]) == 2
    assert not (tmp_path / "b.json").exists()


def test_bmv2_target_selects_only_what_runs_there(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    on_bmv2 = [f"{b.group}.{b.name}" for b in select(target="bmv2")]
    assert on_bmv2 == ["switch.p4rt_writes", "switch.p4rt_read", "gor.fast_loop", "security.authz",
                       "security.p4rt_streams", "security.source_guard", "security.punt_flood",
                       "monitor.faults", "monitor.switch_exporter"]
    assert all(b.targets == ("p4sim",) for b in all_benchmarks()
               if f"{b.group}.{b.name}" not in on_bmv2)
    with pytest.raises(KeyError):
        select(["p4sim"], target="bmv2")
    assert main(["p4sim", "--target", "bmv2", "--output", str(tmp_path / "b.json")]) == 2
    assert ("does not run on bmv2 (those that do: switch.p4rt_writes, switch.p4rt_read, gor.fast_loop, "
            "security.authz, security.p4rt_streams, security.source_guard, security.punt_flood, "
            "monitor.faults, monitor.switch_exporter)"
            ) in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()
    assert main(["--target", "bmv2", "--list"]) == 0
    assert capsys.readouterr().out.split() == on_bmv2


def test_bmv2_target_without_its_binaries_runs_nothing_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))      # neither simple_switch_grpc nor p4c
    out = tmp_path / "b.json"
    assert main(["monitor", "--target", "bmv2", "--output", str(out)]) == 3
    err = capsys.readouterr().err
    assert "needs simple_switch_grpc and p4c-bm2-ss on PATH" in err
    assert "not found: simple_switch_grpc, p4c-bm2-ss" in err and "nothing run" in err
    assert not out.exists()
    assert main(["--target", "bmv2", "--list"]) == 0             # listing needs no binaries


def test_merge_and_table_format(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text("not json")
    merged = merge_results(path, {"a.x": Figure(1.5, "s")})
    assert merged == {"a.x": {"value": 1.5, "unit": "s"}}
    merge_results(path, {"b.y": Figure(20000.0, "pps")})
    assert set(json.loads(path.read_text())) == {"a.x", "b.y"}
    table = format_table({"b.y": Figure(20000.0, "pps")}).splitlines()
    assert table[0].split() == ["figure", "value", "unit"]
    assert table[2].split() == ["b.y", "20000.0", "pps"]


def test_reference_model() -> None:
    assert crc16_arc(b"123456789") == 0xBB3D
    routes = make_routes()
    assert len(routes) == 100
    flows = make_flows(routes)
    assert len({(f.src, f.dst, f.sport, f.dport) for f in flows}) == len(flows) >= 200
    assert all(longest_match(routes, f.dst) is not None for f in flows)


def test_check_refuses_a_broken_pipeline() -> None:
    setup = setup_ipv4_lpm()
    verify(setup, "ipv4_lpm")   # the real pipeline passes
    routes = make_routes()
    route = longest_match(routes, make_flows(routes)[0].dst)
    assert route is not None
    wrong = 1 + (route.index + 1) % 8
    table = setup.switch.program.state.tables["LpmIngress.ipv4_lpm"]
    table.modify_entry([Lpm(route.prefix, route.length)],
                       ActionCall("LpmIngress.ipv4_forward", (port_mac(wrong), wrong)))
    with pytest.raises(BenchCheckError, match="egress port"):
        verify(setup, "ipv4_lpm")


def test_check_covers_ecn_and_counters() -> None:
    setup = setup_ecmp_ecn()
    verify(setup, "ecmp_ecn")
    assert {e.ecn for e in setup.expected} == {0, 3}   # ECT(0)/ECT(1) became CE
    setup.switch.process_packet(0, setup.frames[0])     # one packet more than expected
    with pytest.raises(BenchCheckError, match="port counters"):
        setup.after_check(len(setup.frames))
