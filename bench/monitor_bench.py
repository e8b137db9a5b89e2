"""Monitoring and fault localisation on a live testbed of p4sim switches, or of BMv2's
with ``--target bmv2`` (root + Mininet; skipped otherwise): one run of the faults scenario
(:func:`scenarios.faults.run_faults`) with :data:`QUIET_S` of fault-free traffic first,
then :data:`TRIALS` rounds over every fault kind.

* ``monitor.localise_top1`` — fraction of injected faults whose first verdict named
  exactly the fault's kind and component (9 kinds × 5 trials);
* ``monitor.localise_s.p50`` / ``.p99`` — fault in effect → that verdict, over the faults
  named exactly;
* ``monitor.false_alarms_per_h`` — verdicts during the fault-free stretch, per hour;
* ``monitor.probe_overhead_pct`` — probe frames in % of every frame the switches sent
  (fault-free traffic: 4 RoCEv2 flows of 60 pps, GOR, 16 probe paths of 10 pps);
* ``monitor.quiet_after_undo_s.p50`` / ``.max`` — a fault's undo → the monitor quiet
  again and GOR holding no link down (:attr:`scenarios.faults.FaultTrial.quiet_after_undo_s`),
  over the trials that went quiet; ``monitor.quiet_in_bound`` — the fraction of trials
  quiet within :data:`scenarios.faults.QUIET_BOUND_S`.

A figure that measured nothing is not written, and said so.

The ``monitor.switch_exporter`` benchmark needs no root: one ``python -m p4sim switch``
(with ``--target bmv2``: one ``simple_switch_grpc`` with the testbed's command line and the
``p4c-bm2-ss`` build of the program, no interfaces, plaintext as the p4sim one) running
``p4src/fabric.p4`` as leaf b0r0l0 (pipeline pushed, no traffic), read by the switch
exporter's own reader:

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
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import grpc

from bench.gor_fast_bench import percentile
from bench.results import BenchConfig, Benchmark, Figure, median
from bench.switch_bench import P4RuntimeClient, SwitchProcess
from controller.p4rt.connection import SwitchConnection
from monitor.switch_exporter import SwitchExporter, SwitchReader, SwitchTarget, switch_targets
from process import stop_process
from scenarios.common import ScenarioOptions
from scenarios.faults import QUIET_BOUND_S, run_faults
from testbed.cli import compile_fabric
from testbed.ports import free_port
from testbed.targets import SwitchLaunch
from testbed.traffic import testbed_unavailable, testbed_up
from topo.model import build_fabric

TRIALS = 5
READS = 50
QUIET_S = 300.0
READY_TIMEOUT_S = 60.0
FIGURES = ("monitor.localise_top1", "monitor.localise_s.p50", "monitor.localise_s.p99",
           "monitor.false_alarms_per_h", "monitor.probe_overhead_pct",
           "monitor.quiet_after_undo_s.p50", "monitor.quiet_after_undo_s.max",
           "monitor.quiet_in_bound")


def per_hour(count: int, seconds: float) -> float:
    """``count`` events in ``seconds`` as a rate per hour."""
    return round(count * 3600.0 / seconds, 2)


def bench_faults(config: BenchConfig) -> dict[str, Figure]:
    """The figures above from one faults run on ``config.target``."""
    why = testbed_unavailable()
    if why:
        print(f"monitor.faults: skipped, {why}; {FIGURES} not written", file=sys.stderr)
        return {}
    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-"))
    state = tmp / "state.json"
    with testbed_up(log_dir=tmp / "logs", state_path=state, target=config.target) as tb:
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
    quiet = [t.quiet_after_undo_s for t in res.trials if t.quiet_after_undo_s is not None]
    if quiet:
        out["monitor.quiet_after_undo_s.p50"] = Figure(percentile(quiet, 50), "s")
        out["monitor.quiet_after_undo_s.max"] = Figure(round(max(quiet), 2), "s")
    if res.trials:
        out["monitor.quiet_in_bound"] = Figure(
            round(sum(t.quiet_in_bound for t in res.trials) / len(res.trials), 3), "fraction")
    missed = [f"{t.kind} {t.target} -> {t.named_kind} {t.named}" for t in res.trials if not t.exact]
    print(f"monitor.faults: {len(res.trials)} faults, {len(res.trials) - len(missed)} named exactly; "
          f"misses: {missed or 'none'}; false alarms {res.false_alarms or 'none'}; "
          f"quiet within {QUIET_BOUND_S:g} s of the undo: "
          f"{sum(t.quiet_in_bound for t in res.trials)} of {len(res.trials)}; target "
          f"{config.target}; run {res.run_dir}", file=sys.stderr)
    for name in FIGURES:
        if name not in out:
            print(f"monitor.faults: {name} measured nothing, not written", file=sys.stderr)
    return out


LEAF = "b0r0l0"
PROGRAM = Path(__file__).resolve().parents[1] / "p4src" / "fabric.p4"


@contextmanager
def p4sim_leaf() -> Iterator[SwitchTarget]:
    """A ``python -m p4sim switch`` (device 0) with ``fabric.p4`` pushed, as the exporter's
    :class:`SwitchTarget` of leaf :data:`LEAF`."""
    with SwitchProcess.run(PROGRAM) as sw, P4RuntimeClient.connect(sw.grpc_addr) as client:
        client.push_pipeline(PROGRAM)
        (target,) = [t for t in switch_targets(build_fabric(), {LEAF: sw.grpc_addr}, None)
                     if t.name == LEAF]
        yield dataclasses.replace(target, device_id=0)      # the bench switch is device 0


@contextmanager
def bmv2_leaf(log_dir: Path) -> Iterator[SwitchTarget]:
    """A ``simple_switch_grpc`` started with the testbed's command line for leaf
    :data:`LEAF` (its device id, no interfaces, plaintext P4Runtime, its log in
    ``log_dir``), ``fabric.p4`` compiled by ``p4c-bm2-ss`` and pushed; stopped by PID."""
    p4info, device_config = compile_fabric("bmv2")
    (target,) = [t for t in switch_targets(build_fabric(), {LEAF: f"127.0.0.1:{free_port()}"}, None)
                 if t.name == LEAF]
    launch = SwitchLaunch("bmv2", LEAF, device_id=target.device_id, grpc_addr=target.addr,
                          interfaces={}, log_dir=log_dir, pcap_dir=None, thrift_port=free_port())
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(launch.stdout_path, "wb") as out:
        proc = subprocess.Popen(launch.command(), stdout=out, stderr=subprocess.STDOUT)
    try:
        with grpc.insecure_channel(target.addr) as channel:
            try:
                grpc.channel_ready_future(channel).result(timeout=READY_TIMEOUT_S)
            except grpc.FutureTimeoutError:
                raise RuntimeError(f"simple_switch_grpc did not answer on {target.addr} within "
                                   f"{READY_TIMEOUT_S:g} s (exit status {proc.poll()}; "
                                   f"{launch.stdout_path})") from None
        conn = SwitchConnection(target.addr, device_id=target.device_id, timeout_s=30)
        try:
            conn.push_pipeline(p4info, device_config)
            yield target
        finally:
            conn.close()
    finally:
        stop_process(proc)


def bench_switch_exporter(config: BenchConfig) -> dict[str, Figure]:
    """``monitor.switch_read_ms`` and ``monitor.switch_scrape_ms`` (module docstring) on
    ``config.target``."""
    with tempfile.TemporaryDirectory(prefix="monitor-exporter-") as tmp:
        leaf = bmv2_leaf(Path(tmp) / "logs") if config.target == "bmv2" else p4sim_leaf()
        with leaf as target:
            return _read_and_scrape(target)


def _read_and_scrape(target: SwitchTarget) -> dict[str, Figure]:
    """:data:`READS` reads of ``target`` by the exporter's reader, then as many scrapes of
    an exporter's ``/metrics`` over it."""
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


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("faults", "monitor", bench_faults, targets=("p4sim", "bmv2")),
    Benchmark("switch_exporter", "monitor", bench_switch_exporter, targets=("p4sim", "bmv2")))
