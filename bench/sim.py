"""The ``sim`` benchmark group: the pod-scale flow-level simulator (``sim/``, issue 9).

Figures:

* ``sim.allreduce_64k_s`` — wall seconds to simulate one ring AllReduce step of a job on
  every GPU of the 65,536-GPU pod (``topo/specs/pod64k.yaml``: 64 blocks x 128 servers x
  8 rails, 128 spines), rank order over 8 channels: 524,288 flows (65,536 over the
  fabric, the rest on NVLink), TCCL ports solved, routed through the hash model, max-min
  rates re-solved at every completion. The fabric, the job and the planner's phases are
  built before the clock starts; median of ``config.runs`` runs. Goal: seconds.
* ``sim.slowdown.random_ecmp`` / ``sim.slowdown.tccl`` — collective time over the ideal
  bound on the 8K-GPU pod of the default study (``sim.study``: half-pod job placed at
  random, ring AllReduce of 16 GiB in rank order, 8 channels, background traffic).
* ``sim.predict_s.gpt175b_1024`` — wall seconds of one ``python -m sim predict`` of
  ``sim/jobs/gpt3-175b-1024.yaml`` (GPT-3 175B on 1,024 A100s, TP 8 x PP 16 x DP 8, 192
  micro-batches): the job file read and validated, the 1,024-GPU fabric built, every
  kernel timed, the DP all-reduce and pipeline transfers simulated on the fabric, the
  6,144 pipeline passes scheduled (imports excluded); median of ``config.runs``. Checked:
  1,024 GPUs, a finite iteration, per-GPU TFLOP/s below the A100's peak. Goal: under 1 s.
* ``sim.allreduce_512k_s`` — wall seconds of one hierarchical DP AllReduce (16 GiB per
  GPU) on all 524,288 GPUs of ``sim/clusters/cluster512k.yaml`` (8 pods of pod64k joined
  by the core) under ``tccl``: the in-pod ring step (524,288 flows, 8 channels, TCCL
  ports, routed, simulated), TCCL's colouring of the 524,288 flows between pods, their
  routes over leaf → spine → core → spine → leaf and the step, and the time model. The
  cluster is numbered before the clock starts (as for ``sim.allreduce_64k_s``; the
  build is printed); median of ``config.runs``. Checked: every GPU, three phases, the
  step between pods with one flow per GPU, a finite time. Goal: under 10 s.
* ``sim.sweep_points_per_s`` — points per second of ``python -m sim sweep
  sim/sweeps/gpt3-175b.yaml`` (18 predictions of GPT-3 175B: 3 splits × 2 policies × 3
  scales) on the local process pool (2 workers), outputs not written. Checked: 18 rows,
  feasible ones with a finite iteration time.
* ``sim.validation.within10_pct`` / ``sim.validation.median_abs_err_pct`` — ``python -m sim
  predict`` against the published training runs of ``sim/validation/runs.yaml`` held out by
  ``sim/validation/split.py`` (never fitted on): share of runs whose predicted iteration
  time is within 10 % of the measured, and the median |error| (a refused run counts as a
  miss). Goals ≥ 90 % and ≤ 5 %. ``sim.validation.fit.within10_pct`` /
  ``sim.validation.fit.median_abs_err_pct``: the same on the fit split (what
  ``sim/predict/calibration.yaml`` was fitted on), ``sim.validation.fp8.within10_pct`` the
  held-out FP8 runs. Checked: every run predicted or refused with a reason, both splits
  non-empty.
* ``sim.incast.err_pct.<phase>.<figure>`` — ``python -m sim incast --compare``: the
  simulator's incast (``sim/incast.py``, the PFC network of ``sim/pfcnet.py``, mean of 5
  seeds) against the live ``SCENARIO=incast`` run recorded in
  ``sim/calibration/incast-live.yaml``: relative error in % of PFC frames, ECN marks,
  drops and goodput of the held-out incast runs (static and dynamic), the timings having
  been chosen on the lone runs only; ``sim.incast.heldout_mean_abs_err_pct`` their mean
  |error|; ``sim.incast.{pfc_frames,drops}.{static,dynamic}`` the simulated counts (the
  live run's ``incast.pause_frames`` / ``incast.drops`` figures). Checked: the lone peak
  queue is deeper with dynamic thresholds, as live.
* ``sim.queues.closed_form_max_err_pkts`` — the dynamic-threshold queue model
  (``sim/queues.py`` over ``p4src.buffermodel``) against Choudhury & Hahne's steady state
  ``alpha B / (1 + N alpha)``: the worst |error| in packets over 4 buffers x 5 alphas x 6
  queue counts.
* ``sim.dualport.max_over_mean.{random,tccl}`` / ``sim.dualport.step_ratio`` — ``python -m
  sim dualport`` on ``topo/specs/dualport.yaml`` (4 QPs per NIC pair): busiest NIC port or
  leaf uplink over its tier's mean, QPs placed by the NIC's affinity hash on random source
  ports vs TCCL's dual-port plan, and the step time random / TCCL.
* ``sim.prediction_error_pct`` — mean absolute error of the calibrated prediction against
  the testbed measurements in ``sim/calibration/default-fabric.json``; only when that
  recorded file exists (the test fixture is never used here).

Before a figure is reported the run is checked (every job flow delivered and finished,
flow counts as planned): ``BenchCheckError`` otherwise.

Example::

    $ .venv/bin/python -m bench sim
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from p4src.buffermodel import DynamicThresholds, PfcAlpha, SharedBuffer
from sim.calibrate import calibrate_file
from sim.cluster.allreduce import cluster_allreduce
from sim.cluster.fabric import SimCluster
from sim.cluster.spec import load_cluster
from sim.dualport import cross_pairs, simulate_step
from sim.incast import HELD_OUT, INCAST_TIMING, IncastSetup, compare
from sim.policies import run_phase
from sim.predict.job import load_job
from sim.predict.predict import predict
from sim.queues import closed_form_cells, steady_state_cells
from sim.runner import run_scenario
from sim.study import study_scenario
from sim.sweep.grid import load_grid
from sim.sweep.run import timed_run
from sim.topology import SimFabric
from sim.workloads import collective_phases, place_job
from topo.model import build_fabric
from topo.spec import FabricSpec, load_spec
from sim.validation.dataset import load_dataset
from sim.validation.validate import summarize, validate_runs

REPO = Path(__file__).resolve().parent.parent
POD64K = REPO / "topo" / "specs" / "pod64k.yaml"
RECORDED = REPO / "sim" / "calibration" / "default-fabric.json"
GPT175B_JOB = REPO / "sim" / "jobs" / "gpt3-175b-1024.yaml"
TOPOLOGY = REPO / "build" / "topology.json"       # the recording's fabric section names it
CLUSTER512K = REPO / "sim" / "clusters" / "cluster512k.yaml"
SWEEP_GRID = REPO / "sim" / "sweeps" / "gpt3-175b.yaml"
DUALPORT = REPO / "topo" / "specs" / "dualport.yaml"


def bench_allreduce_64k(config: BenchConfig) -> dict[str, Figure]:
    """``sim.allreduce_64k_s``: one ring step of a 65,536-rank job, TCCL ports."""
    sf = SimFabric.build(build_fabric(load_spec(POD64K)))
    job = place_job(sf, 65536)
    phase = collective_phases(sf, job, "allreduce", 16 << 30, order="rank", channels=8)[0]
    times = []
    for _ in range(max(config.runs, 1)):
        t0 = time.perf_counter()
        res = run_phase(sf, phase, "tccl")
        times.append(time.perf_counter() - t0)
        if len(res.fct_s) != 8 * 65536 or res.undeliverable or not np.isfinite(res.fct_s).all():
            raise BenchCheckError(f"sim 64K step: {len(res.fct_s)} flows, {res.undeliverable} undeliverable")
    return {"sim.allreduce_64k_s": Figure(round(median(times), 2), "s")}


def bench_slowdown_8k(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001
    """``sim.slowdown.{random_ecmp,tccl}`` at 8K GPUs (the default study's scenario)."""
    sc = study_scenario(8, ["random_ecmp", "tccl", "ideal"])
    res = run_scenario(sc)
    for r in res.results:
        if r.undeliverable or not np.isfinite(r.collective_s):
            raise BenchCheckError(f"sim 8K study: {r.policy} did not complete")
    return {"sim.slowdown.random_ecmp": Figure(round(res.slowdown("random_ecmp"), 3), "x"),
            "sim.slowdown.tccl": Figure(round(res.slowdown("tccl"), 3), "x")}


def bench_predict_gpt175b(config: BenchConfig) -> dict[str, Figure]:
    """``sim.predict_s.gpt175b_1024``: one prediction of GPT-3 175B on 1,024 GPUs."""
    times = []
    for _ in range(max(config.runs, 1)):
        t0 = time.perf_counter()
        r = predict(load_job(GPT175B_JOB))
        times.append(time.perf_counter() - t0)
        if r.job.gpus != 1024 or not np.isfinite(r.iteration_s) or not 0 < r.hardware_tflops_per_gpu < 312:
            raise BenchCheckError(f"sim predict {GPT175B_JOB.name}: {r.job.gpus} GPUs, iteration "
                                  f"{r.iteration_s} s, {r.hardware_tflops_per_gpu} TFLOP/s per GPU")
    return {"sim.predict_s.gpt175b_1024": Figure(round(median(times), 3), "s")}


def bench_allreduce_512k(config: BenchConfig) -> dict[str, Figure]:
    """``sim.allreduce_512k_s``: the hierarchical AllReduce on the 512K-GPU cluster, TCCL."""
    t0 = time.perf_counter()
    sc = SimCluster.build(load_cluster(CLUSTER512K))
    print(f"bench sim: cluster512k numbered in {time.perf_counter() - t0:.2f} s ({sc.num_links:,} links)")
    times = []
    for _ in range(max(config.runs, 1)):
        t0 = time.perf_counter()
        r = cluster_allreduce(sc, 524288, 16 << 30, "tccl")
        times.append(time.perf_counter() - t0)
        if r.gpus != 524288 or len(r.phases) != 3 or r.phases[1].flows != 524288 or not np.isfinite(r.time_s):
            raise BenchCheckError(f"sim 512K allreduce: {r.gpus} GPUs, {len(r.phases)} phases, time {r.time_s}")
    print("\n".join(r.summary_lines()))
    return {"sim.allreduce_512k_s": Figure(round(median(times), 2), "s")}


def bench_sweep(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001
    """``sim.sweep_points_per_s``: the GPT-3 175B grid on a local pool of 2 processes."""
    grid = load_grid(SWEEP_GRID)
    rows, wall = timed_run(grid, workers=2)
    ok = [r for r in rows if r["status"] == "ok"]
    if len(rows) != 18 or not ok or not all(np.isfinite(r["iteration_s"]) for r in ok):
        raise BenchCheckError(f"sim sweep {SWEEP_GRID.name}: {len(rows)} rows, {len(ok)} feasible")
    return {"sim.sweep_points_per_s": Figure(round(len(rows) / wall, 2), "points/s")}


def ensure_topology() -> Path:
    """``build/topology.json``, the default fabric the recording was measured on, written
    when a clean checkout has none yet (what ``python -m topo build`` writes)."""
    if not TOPOLOGY.exists():
        TOPOLOGY.parent.mkdir(parents=True, exist_ok=True)
        TOPOLOGY.write_text(build_fabric(FabricSpec()).to_json())
        print(f"bench sim: wrote {TOPOLOGY.relative_to(REPO)} (the default fabric)")
    return TOPOLOGY


def bench_prediction_error(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001
    """``sim.prediction_error_pct`` from the recorded testbed file (nothing without it)."""
    if not RECORDED.exists():
        print(f"bench sim: {RECORDED.relative_to(REPO)} not recorded yet: "
              "sim.prediction_error_pct not measured (python -m scenarios measure on a running testbed)")
        return {}
    ensure_topology()
    rep = calibrate_file(RECORDED)
    if rep.source != "testbed":
        raise BenchCheckError(f"{RECORDED}: source is {rep.source!r}, not a testbed recording")
    out = {"sim.prediction_error_pct": Figure(round(rep.error_after_pct, 2), "%")}
    if rep.error_heldout_pct is not None:     # collectives the fit never saw
        out["sim.prediction_error_heldout_pct"] = Figure(round(rep.error_heldout_pct, 2), "%")
    return out


def bench_validation(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001
    """``sim.validation.*``: predictions against the published runs, both splits."""

    ds = load_dataset()
    res = validate_runs(ds.runs, ds)
    held = [r for r in res if r.heldout]
    fit = [r for r in res if not r.heldout]
    if not held or not fit or any(not r.refused and not np.isfinite(r.predicted_s) for r in res):
        raise BenchCheckError(f"sim validation: {len(held)} held-out, {len(fit)} fit runs, or a non-finite prediction")
    h, f = summarize(held), summarize(fit)
    p8 = summarize([r for r in held if r.run.precision == "fp8"])
    print(f"bench sim: validation {h.line('held-out')}")
    print(f"bench sim: validation {f.line('fit')}")
    return {"sim.validation.within10_pct": Figure(round(h.within10_pct, 1), "%"),
            "sim.validation.median_abs_err_pct": Figure(round(h.median_abs_err_pct, 2), "%"),
            "sim.validation.fit.within10_pct": Figure(round(f.within10_pct, 1), "%"),
            "sim.validation.fit.median_abs_err_pct": Figure(round(f.median_abs_err_pct, 2), "%"),
            "sim.validation.fp8.within10_pct": Figure(round(p8.within10_pct, 1), "%")}


def bench_incast(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001
    """``sim.incast.*``: the simulated incast against the recorded live run."""
    c = compare(IncastSetup(), INCAST_TIMING, seeds=5)
    print("\n".join(c.lines()))
    if not c.sim["dynamic-lone"]["peak_queue_pkts"] > c.sim["static-lone"]["peak_queue_pkts"]:
        raise BenchCheckError("sim incast: the lone flow does not queue deeper with dynamic thresholds")
    out: dict[str, Figure] = {}
    errs = []
    for phase in HELD_OUT:
        mode = phase.split("-")[0]
        for fig in ("pfc_frames", "ecn_marks", "drops", "goodput_mbps"):
            e = c.error(phase, fig)
            if e is None:
                continue
            errs.append(abs(e))
            out[f"sim.incast.err_pct.{mode}.{fig}"] = Figure(round(e, 1), "%")
        out[f"sim.incast.pfc_frames.{mode}"] = Figure(round(c.sim[phase]["pfc_frames"], 1), "frames")
        out[f"sim.incast.drops.{mode}"] = Figure(round(c.sim[phase]["drops"], 1), "packets")
    out["sim.incast.heldout_mean_abs_err_pct"] = Figure(round(sum(errs) / len(errs), 1), "%")
    return out


def bench_closed_form(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001
    """``sim.queues.closed_form_max_err_pkts``: the queue model against Choudhury & Hahne."""
    worst = 0.0
    for size, log2 in ((576, 7), (2048, 7), (1000, 0), (4096, 6)):
        for alpha in ("1/4", "1/2", 1, 2, 4):
            for n in (1, 2, 3, 4, 8, 16):
                cfg = DynamicThresholds(SharedBuffer(size, log2), {3: PfcAlpha(alpha)})
                err = steady_state_cells(cfg, 3, n, 1082) - closed_form_cells(cfg, 3, n)
                worst = max(worst, abs(err) / cfg.buffer.cells(1082))
    return {"sim.queues.closed_form_max_err_pkts": Figure(round(worst, 3), "packets")}


def bench_dualport(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001
    """``sim.dualport.*`` on topo/specs/dualport.yaml."""
    fab = build_fabric(load_spec(DUALPORT))
    pairs = cross_pairs(fab, 4)
    rnd, tc = (simulate_step(fab, pairs, p, 16 << 20) for p in ("random", "tccl"))
    if tc.flows != len(pairs) or not tc.time_s > 0:
        raise BenchCheckError(f"sim dualport: {tc.flows} flows, step {tc.time_s}")
    return {"sim.dualport.max_over_mean.random": Figure(max(rnd.max_over_mean.values()), "x"),
            "sim.dualport.max_over_mean.tccl": Figure(max(tc.max_over_mean.values()), "x"),
            "sim.dualport.step_ratio": Figure(round(rnd.time_s / tc.time_s, 3), "x")}


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("allreduce_64k", "sim", bench_allreduce_64k),
    Benchmark("slowdown_8k", "sim", bench_slowdown_8k),
    Benchmark("prediction_error", "sim", bench_prediction_error),
    Benchmark("predict_gpt175b", "sim", bench_predict_gpt175b),
    Benchmark("allreduce_512k", "sim", bench_allreduce_512k),
    Benchmark("sweep", "sim", bench_sweep),
    Benchmark("validation", "sim", bench_validation),
    Benchmark("incast", "sim", bench_incast),
    Benchmark("closed_form", "sim", bench_closed_form),
    Benchmark("dualport", "sim", bench_dualport),
)
