"""Smoke tests of the ``switch`` benchmark group (:mod:`bench.switch_bench`): each figure
is measured with tiny durations against a real ``python -m p4sim switch`` process, merged
into the JSON file with its unit, and the veth benchmark cleans up after itself (it is
skipped when not root, without writing its figure)."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import shutil

import pytest

from bench import run_benchmarks, select
from bench.results import BenchCheckError, BenchConfig
from bench.switch_bench import (
    COUNTER_CELLS,
    COUNTERS_PROGRAM,
    PROGRAM,
    Bmv2Process,
    P4RuntimeClient,
    SwitchProcess,
    _canonical,
    counter_read_ms,
    insert_rate,
    make_frames,
    run_pps_veth,
    threads_ctx_switches,
    veth_available,
    write_stages,
)

TINY = BenchConfig(duration_s=0.05, runs=1, warmup_s=0.0)


def test_registered_as_the_switch_group() -> None:
    assert [b.name for b in select(["switch"])] == ["startup", "p4rt_writes", "p4rt_write_stages", "p4rt_read",
                                                    "pps_veth", "pps_veth_overload"]


def test_startup_and_write_figures(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    out.write_text(json.dumps({"other.kept": {"value": 7, "unit": "ms"}}))
    figures = run_benchmarks(["switch.startup", "switch.p4rt_writes"], TINY, out)
    assert {n: f.unit for n, f in figures.items()} == {
        "p4sim.ready_s": "s", "p4sim.rss_mb": "MB",
        "p4sim.p4rt_writes_per_s.batched": "entries/s",
        "p4sim.p4rt_writes_per_s.single": "entries/s",
        "p4sim.p4rt_write_cpu_us.batched": "us/entry", "p4sim.p4rt_write_cpu_us.single": "us/entry"}
    assert all(f.value > 0 for f in figures.values())
    assert 0 < figures["p4sim.ready_s"].value < 60
    assert 10 < figures["p4sim.rss_mb"].value < 2000
    data = json.loads(out.read_text())
    assert data["other.kept"] == {"value": 7, "unit": "ms"}
    assert data["p4sim.rss_mb"]["unit"] == "MB"


def test_write_stages_time_parse_insert_and_delete() -> None:
    got = write_stages("python", 1, batch=64)
    assert set(got) == {"parse", "insert", "delete"}
    assert all(v >= 0 for v in got.values()) and got["insert"] > 0


def test_counter_read_checks_every_cell() -> None:
    with SwitchProcess.run(COUNTERS_PROGRAM) as sw, P4RuntimeClient.connect(sw.grpc_addr) as client:
        client.push_pipeline(COUNTERS_PROGRAM)
        assert counter_read_ms(client, "CntIngress.cells", COUNTER_CELLS) > 0
        with pytest.raises(BenchCheckError):                  # a wrong count is no figure
            counter_read_ms(client, "CntIngress.cells", COUNTER_CELLS + 1)


def test_insert_rate_reads_back_and_deletes() -> None:
    with SwitchProcess.run(PROGRAM) as sw, P4RuntimeClient.connect(sw.grpc_addr) as client:
        client.push_pipeline(PROGRAM)
        assert insert_rate(client, 100, 10.0, max_entries=250) > 0
        assert client.count_entries("FwdIngress.dmac") == 0
        pid = sw.pid
    assert sw.proc is None and not Path(f"/proc/{pid}").exists()   # stopped and reaped


@pytest.mark.skipif(shutil.which("simple_switch_grpc") is None or shutil.which("p4c-bm2-ss") is None,
                    reason="BMv2 (simple_switch_grpc, p4c-bm2-ss) not on PATH")
def test_bmv2_target_runs_the_same_probes(tmp_path: Path) -> None:
    """``--target bmv2``: the write and read probes against simple_switch_grpc, their
    figures under ``bmv2.``, the process stopped by its PID."""
    config = BenchConfig(duration_s=0.05, runs=1, warmup_s=0.0, target="bmv2")
    figures = run_benchmarks(["switch.p4rt_writes", "switch.p4rt_read"], config, tmp_path / "b.json")
    assert set(figures) == {"bmv2.p4rt_writes_per_s.batched", "bmv2.p4rt_writes_per_s.single",
                            "bmv2.p4rt_write_cpu_us.batched", "bmv2.p4rt_write_cpu_us.single",
                            "bmv2.p4rt_read_ms.counters_4096",
                            "bmv2.p4rt_read_ms.poll_cells_116", "bmv2.p4rt_read_cpu_ms.poll_cells_116",
                            "bmv2.p4rt_read_ms.poll_7_counters", "bmv2.p4rt_read_cpu_ms.poll_7_counters"}
    assert all(figures[f"bmv2.p4rt_writes_per_s.{k}"].value > 0 for k in ("batched", "single"))
    with Bmv2Process.run() as bm:
        pid = bm.pid
        with P4RuntimeClient.connect(bm.grpc_addr) as client:
            client.push_config(*bm.pipeline(PROGRAM))
            assert insert_rate(client, 100, 10.0, max_entries=250) > 0
            assert client.count_entries("FwdIngress.dmac") == 0
    assert bm.proc is None and not Path(f"/proc/{pid}").exists()


def test_helpers() -> None:
    assert _canonical(0) == b"\x00" and _canonical(0x1FF) == b"\x01\xff"
    frames = make_frames(4)
    assert len({f for f in frames}) == 4 and all(len(f) == 64 for f in frames)
    assert frames[1][12:14] == b"\x88\xb5"


def test_pps_veth_skips_without_root(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    import bench.switch_bench as sb

    monkeypatch.setattr(sb, "veth_available", lambda: "needs root (creates veth pairs)")
    assert run_pps_veth(TINY) == {}
    assert "skipped, needs root" in capsys.readouterr().err


@pytest.mark.skipif(veth_available() is not None, reason=f"veth benchmark: {veth_available()}")
def test_pps_veth_forwards_and_cleans_up() -> None:
    figures = run_pps_veth(TINY)
    assert figures["p4sim.pps.veth"].unit == "pps" and figures["p4sim.pps.veth"].value > 0
    tag = f"p4b{os.getpid() % 100000}"
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True,
                           timeout=10).stdout
    assert tag not in links


def test_threads_ctx_switches_counts_a_thread_that_slept() -> None:
    """``threads_ctx_switches`` sums the threads' context switches: a thread that sleeps
    (here this one, for 1 ms: the sleep is the thing counted, not a wait for readiness)
    gives up its CPU at least once."""
    before = threads_ctx_switches(os.getpid())
    time.sleep(0.001)
    assert threads_ctx_switches(os.getpid()) > before
