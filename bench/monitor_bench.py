"""Monitoring and fault localisation on a live p4sim testbed (root + Mininet; skipped
otherwise): one run of the faults scenario (:func:`scenarios.faults.run_faults`) with
:data:`QUIET_S` of fault-free traffic first, then :data:`TRIALS` rounds over every fault
kind.

* ``monitor.localise_top1`` — fraction of injected faults whose first verdict named
  exactly the fault's kind and component (9 kinds × 5 trials);
* ``monitor.localise_s.p50`` / ``.p99`` — fault in effect → that verdict, over the faults
  named exactly;
* ``monitor.false_alarms_per_h`` — verdicts during the fault-free stretch, per hour;
* ``monitor.probe_overhead_pct`` — probe frames in % of every frame the switches sent
  (fault-free traffic: 4 RoCEv2 flows of 60 pps, GOR, 16 probe paths of 10 pps).

A figure that measured nothing is not written, and said so.

The ``monitor.switch_exporter`` benchmark needs no root: one ``python -m p4sim switch``
running ``p4src/fabric.p4`` as leaf b0r0l0 (pipeline pushed, no traffic), read by the
switch exporter's own reader:

* ``monitor.switch_read_ms`` — one :meth:`monitor.switch_exporter.SwitchReader.read` (the
  counter Read the exporter makes of a switch every period: every port's totals, PFC
  frames per priority and queue-depth bins), median of :data:`READS`;
* ``monitor.switch_scrape_ms`` — one HTTP scrape of the exporter's ``/metrics`` with that
  switch read, median of :data:`READS`.

>>> per_hour(1, 300.0)
12.0
"""
from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.gor_fast_bench import percentile
from bench.results import BenchConfig, Benchmark, Figure, median
from bench.switch_bench import P4RuntimeClient, SwitchProcess
from scenarios.common import ScenarioOptions
from scenarios.faults import run_faults
from testbed.traffic import testbed_unavailable, testbed_up
from monitor.switch_exporter import SwitchExporter, SwitchReader, switch_targets
from topo.model import build_fabric

TRIALS = 5
READS = 50
QUIET_S = 300.0
FIGURES = ("monitor.localise_top1", "monitor.localise_s.p50", "monitor.localise_s.p99",
           "monitor.false_alarms_per_h", "monitor.probe_overhead_pct")


def per_hour(count: int, seconds: float) -> float:
    """``count`` events in ``seconds`` as a rate per hour."""
    return round(count * 3600.0 / seconds, 2)


def bench_faults(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001 — one long live run
    """The figures above from one faults run."""
    why = testbed_unavailable()
    if why:
        print(f"monitor.faults: skipped, {why}; {FIGURES} not written", file=sys.stderr)
        return {}
    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-"))
    state = tmp / "state.json"
    with testbed_up(log_dir=tmp / "logs", state_path=state) as tb:
        res = run_faults(tb.fabric, tb.programmer, tb.state, tb.save_state,
                         ScenarioOptions(seed=3, runs_root=tmp / "runs", state_path=state),
                         say=lambda _line: None, trials_per_kind=TRIALS, quiet_s=QUIET_S)
    out: dict[str, Figure] = {}
    if res.top1 is not None:
        out["monitor.localise_top1"] = Figure(round(res.top1, 3), "fraction")
    times = [t.localise_s for t in res.trials if t.exact and t.localise_s is not None]
    if times:
        out["monitor.localise_s.p50"] = Figure(percentile(times, 50), "s")
        out["monitor.localise_s.p99"] = Figure(percentile(times, 99), "s")
    if res.quiet_s > 0:
        out["monitor.false_alarms_per_h"] = Figure(per_hour(len(res.false_alarms), res.quiet_s), "/h")
    if res.probe_overhead_pct is not None:
        out["monitor.probe_overhead_pct"] = Figure(res.probe_overhead_pct, "%")
    missed = [f"{t.kind} {t.target} -> {t.named_kind} {t.named}" for t in res.trials if not t.exact]
    print(f"monitor.faults: {len(res.trials)} faults, {len(res.trials) - len(missed)} named exactly; "
          f"misses: {missed or 'none'}; false alarms {res.false_alarms or 'none'}; run {res.run_dir}",
          file=sys.stderr)
    for name in FIGURES:
        if name not in out:
            print(f"monitor.faults: {name} measured nothing, not written", file=sys.stderr)
    return out


def bench_switch_exporter(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001
    """``monitor.switch_read_ms`` and ``monitor.switch_scrape_ms`` (module docstring)."""

    program = Path(__file__).resolve().parents[1] / "p4src" / "fabric.p4"
    fabric = build_fabric()
    with SwitchProcess.run(program) as sw, P4RuntimeClient.connect(sw.grpc_addr) as client:
        client.push_pipeline(program)
        (target,) = [t for t in switch_targets(fabric, {"b0r0l0": sw.grpc_addr}, None)
                     if t.name == "b0r0l0"]
        target = dataclasses.replace(target, device_id=0)      # the bench switch is device 0
        reader = SwitchReader(target)
        try:
            if not reader.read():
                print("bench monitor.switch_exporter: the switch answered no ports", file=sys.stderr)
                return {}
            reads = []
            for _ in range(READS):
                t0 = time.perf_counter()
                reader.read()
                reads.append((time.perf_counter() - t0) * 1e3)
        finally:
            reader.close()
        with SwitchExporter([target], period_s=3600.0, log=lambda m: None) as exp:
            exp.read_once(target.name)
            scrapes = []
            for _ in range(READS):
                t0 = time.perf_counter()
                with urllib.request.urlopen(exp.url, timeout=10) as resp:
                    resp.read()
                scrapes.append((time.perf_counter() - t0) * 1e3)
    return {"monitor.switch_read_ms": Figure(round(median(reads), 2), "ms"),
            "monitor.switch_scrape_ms": Figure(round(median(scrapes), 2), "ms")}


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("faults", "monitor", bench_faults),
                                      Benchmark("switch_exporter", "monitor", bench_switch_exporter))
