"""Command line of the simulator: ``python -m sim run|study|calibrate|measure|predict|calibrate-ops|calibrate-run|allreduce|sweep|incast|dualport``.

::

    python -m sim run sim/scenarios/ring-8k.yaml [--out DIR]     # table + plots + report
    python -m sim study [--scales 1,8,64] [--out DIR]              # the default study (make sim)
    python -m sim calibrate sim/calibration/default-fabric.json    # fit overheads, errors before/after
    python -m sim measure --out FILE.json   # = python -m scenarios measure: a RUNNING testbed (root)
    python -m sim predict sim/jobs/gpt3-175b-1024.yaml [--out DIR]  # one training iteration
    python -m sim calibrate-ops kernels.csv|trace.json --gpu H800  # fit the kernel model
    python -m sim calibrate-run runs.yaml [--write kernels.yaml]   # ... to monitored iteration times
    python -m sim validate [--split heldout|fit|all] [--source S]  # against published training runs
    python -m sim allreduce --cluster sim/clusters/cluster512k.yaml --gpus 524288 --bytes 16GiB
    python -m sim incast --compare                 # static vs dynamic thresholds, vs the live run
    python -m sim dualport --spec topo/specs/dualport.yaml
    python -m sim sweep sim/sweeps/gpt3-small.yaml [--workers N | --address tcp://HOST:PORT]

Exit status: 0 done, 1 some job flow undeliverable (failure scenario) or a measurement
failed, 2 bad input (the message names the field).

Example::

    >>> build_parser().parse_args(["run", "x.yaml"]).cmd
    'run'
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

import yaml

from sim.dualport import POLICIES, cross_pairs, simulate_step
from sim.incast import DEFAULT_SPEC, INCAST_TIMING, LOADS, MODES, IncastSetup, compare, simulate
from sim.predict import calibration
from sim.predict.kerneltable import IMPLS
from sim.predict.opcal import calibrate_ops_file, write_table
from sim.topology import SimInputError
from sim.validation.dataset import DATA, load_dataset
from sim.validation.fit import fit
from sim.validation.validate import report_lines, select, validate_runs
from topo.model import build_fabric
from topo.spec import SpecError, load_spec

REPO = Path(__file__).resolve().parents[1]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    ap = argparse.ArgumentParser(prog="python -m sim", description="Pod-scale flow-level simulator")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="simulate one scenario file")
    r.add_argument("scenario", type=Path)
    r.add_argument("--out", type=Path, default=None, help="run folder (default runs/sim-<time>)")
    s = sub.add_parser("study", help="random vs TCCL vs TCCL+GOR on 1K, 8K, 64K GPUs")
    s.add_argument("--scales", default="1,8,64", help="pod sizes in blocks of 1,024 GPUs (default 1,8,64)")
    s.add_argument("--out", type=Path, default=None)
    c = sub.add_parser("calibrate", help="fit per-hop/per-host overheads to measured times")
    c.add_argument("measurements", type=Path)
    c.add_argument("--write", type=Path, default=None, help="write the fitted parameters (JSON) here")
    m = sub.add_parser("measure", help="measure small collectives on the running testbed")
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--repeats", type=int, default=3, help="runs of each collective (default 3)")
    p = sub.add_parser("predict", help="predict one training iteration of a job file (time, MFU, memory, trace)",
                       description="Predict one training iteration of a job file: time, MFU, memory, the "
                                   "critical path and a Perfetto trace (sim/README.md, 'Performance prediction of "
                                   "a training iteration').")
    p.add_argument("job", type=Path, help="a job file (YAML), e.g. sim/jobs/gpt3-175b-1024.yaml")
    p.add_argument("--out", type=Path, default=None, help="folder for report.md and trace.json "
                                                          "(default runs/predict-<time>)")
    o = sub.add_parser("calibrate-ops", help="fit the kernel model's efficiency factors to measured operator times")
    o.add_argument("measurements", type=Path, help="a CSV of measured kernels or a PyTorch-profiler trace (.json/.json.gz)")
    o.add_argument("--gpu", required=True, help="the GPU preset the kernels ran on (e.g. H800, A100-80GB)")
    o.add_argument("--precision", default="bf16", help="bf16 | fp16 | fp8 (default bf16)")
    o.add_argument("--heldout-every", type=int, default=5, help="trace: hold out every N-th kernel (default 5)")
    o.add_argument("--write", type=Path, default=None, help="write the fitted kernels: section (YAML) here")
    o.add_argument("--table", type=Path, default=None, help="write a kernel table (CSV) of the measured GEMMs and "
                                                             "attention, for a job's kernels.table")
    o.add_argument("--attention-impl", default="fa2", help="the attention kernels measured: fa2 | fa3 | cudnn")
    cr = sub.add_parser("calibrate-run", help="fit the kernel model's efficiency factors to the measured "
                                              "iteration times of whole runs (monitoring data)")
    cr.add_argument("runs", type=Path, help="a RUNS file: jobs and their measured iteration times "
                                            "(sim/predict/runcal.py documents it)")
    cr.add_argument("--write", type=Path, default=None, help="write the fitted kernels: section (YAML) here")
    v = sub.add_parser("validate", help="predict the published training runs of sim/validation/runs.yaml "
                                        "and print the errors per run, per split and per source")
    v.add_argument("--split", default="all", choices=("heldout", "fit", "all"))
    v.add_argument("--source", default=None, help="only the runs of this source")
    v.add_argument("--data", type=Path, default=None, help="another validation file (default sim/validation/runs.yaml)")
    v.add_argument("--summary", action="store_true", help="only the summaries, not every run")
    v.add_argument("--fit", action="store_true", help="fit sim/predict/calibration.yaml's figures on the fit split "
                                                      "(never the held-out runs), then report both splits")
    v.add_argument("--write", action="store_true", help="with --fit: write the fitted figures to "
                                                        "sim/predict/calibration.yaml")
    v.add_argument("--evaluations", type=int, default=200, help="with --fit: simplex evaluations (default 200)")
    v.add_argument("--free", action="store_true", help="with --fit: also one efficiency share per framework "
                                                       "profile with at least 5 fit-split runs")
    ic = sub.add_parser("incast", help="the incast scenario (static vs dynamic thresholds) in the PFC network model")
    ic.add_argument("--compare", action="store_true",
                    help="compare with the live run in sim/calibration/incast-live.yaml (error per figure)")
    ic.add_argument("--spec", type=Path, default=None, help="topo spec (default topo/specs/default.yaml)")
    ic.add_argument("--seeds", type=int, default=5, help="simulated seeds (RED draws) averaged (default 5)")
    ic.add_argument("--run-s", type=float, default=6.0, help="seconds a run (default 6, the live run's)")
    dp = sub.add_parser("dualport", help="one step on a topo spec with dual-port NICs and/or pods: QPs on NIC "
                                         "ports by the NIC's affinity hash (random) or TCCL's dual-port plan")
    dp.add_argument("--spec", type=Path, default=Path("topo/specs/dualport.yaml"),
                    help="topo spec (default topo/specs/dualport.yaml)")
    dp.add_argument("--qps", type=int, default=4, help="QPs per NIC pair (default 4)")
    dp.add_argument("--bytes", default="16MiB", help="bytes per QP (default 16MiB)")
    dp.add_argument("--policies", default="random,tccl", help="random and/or tccl (default both)")
    dp.add_argument("--seed", type=int, default=1, help="random source ports (default 1)")
    a = sub.add_parser("allreduce", help="a DP AllReduce over whole pods of a cluster (hierarchical, end to end)")
    a.add_argument("--cluster", type=Path, default=Path("sim/clusters/cluster512k.yaml"),
                   help="cluster file (default sim/clusters/cluster512k.yaml)")
    a.add_argument("--gpus", type=int, default=None, help="GPUs of the job: whole pods (default every GPU)")
    a.add_argument("--bytes", default="16GiB", help="buffer per GPU: 16GiB, 512MiB, 1e9 ... (default 16GiB)")
    a.add_argument("--policy", default="tccl", help="random_ecmp | tccl | tccl_gor | ideal (default tccl)")
    a.add_argument("--order", default="tccl", help="ring order inside a pod: tccl | rank (default tccl)")
    a.add_argument("--channels", type=int, default=None, help="rings inside a pod (default one per rail)")
    a.add_argument("--seed", type=int, default=1, help="random ECMP ports (default 1)")
    a.add_argument("--gor-rounds", type=int, default=4, help="GOR rounds (tccl_gor; default 4)")
    a.add_argument("--gor-top-n", type=int, default=100, help="GOR elephants per round (default 100)")
    a.add_argument("--all-pods", action="store_true",
                   help="simulate the in-pod steps of every pod (default: pod 0 stands for all)")
    w = sub.add_parser("sweep", help="predict a job over parallelism x policies x scales x seeds")
    w.add_argument("grid", type=Path)
    w.add_argument("--workers", type=int, default=None, help="local processes (default: the cores)")
    w.add_argument("--address", default=None, help="an existing Dask scheduler, tcp://HOST:PORT")
    w.add_argument("--out", type=Path, default=None, help="run folder (default runs/sweep-<time>)")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if args.cmd == "run":
            return _run(args.scenario, args.out)
        if args.cmd == "study":
            from sim.study import run_study  # noqa: PLC0415
            try:
                scales = [int(x) for x in args.scales.split(",") if x]
            except ValueError:
                raise SimInputError(f"--scales: {args.scales!r}: comma-separated block counts") from None
            run_study(scales, args.out)
            return 0
        if args.cmd == "predict":
            return _predict(args.job, args.out)
        if args.cmd == "allreduce":
            return _allreduce(args)
        if args.cmd == "incast":
            return _incast(args)
        if args.cmd == "dualport":
            return _dualport(args)
        if args.cmd == "sweep":
            return _sweep(args.grid, args.workers, args.address, args.out)
        if args.cmd == "calibrate-ops":
            return _calibrate_ops(args.measurements, args.gpu, args.precision, args.heldout_every, args.write,
                                  args.table, args.attention_impl)
        if args.cmd == "calibrate-run":
            return _calibrate_run(args.runs, args.write)
        if args.cmd == "validate":
            if args.fit:
                return _fit(args.data, args.write, args.evaluations, args.free)
            return _validate(args.split, args.source, args.data, args.summary)
        if args.cmd == "calibrate":
            from sim.calibrate import calibrate_file  # noqa: PLC0415
            report = calibrate_file(args.measurements, args.write)
            print(report.summary())
            return 0
        # the measurement drives the running testbed, so it lives with the scenarios
        # (scenarios/measure.py); this old form runs that command, it imports nothing of it
        return subprocess.call([sys.executable, "-m", "scenarios", "measure", "--out",
                                str(args.out.resolve()), "--repeats", str(args.repeats)], cwd=REPO)
    except SimInputError as exc:
        print(f"sim: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        # an --out folder that cannot be made or written, an input that cannot be read: one line, no traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"sim: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1


def _run(path: Path, out: Optional[Path]) -> int:
    from sim.report import HEADER, format_table, result_rows, run_dir, write_plots, write_report  # noqa: PLC0415
    from sim.runner import run_scenario  # noqa: PLC0415
    from sim.scenario import load_scenario  # noqa: PLC0415

    sc = load_scenario(path)
    res = run_scenario(sc)
    print(format_table(result_rows(res), HEADER))
    bad = [r for r in res.results if r.undeliverable]
    for r in bad:
        print(f"sim: {r.policy}: {r.undeliverable} job flows UNDELIVERABLE, e.g.", file=sys.stderr)
        for e in r.examples[:3]:
            print(f"  {e}", file=sys.stderr)
    d = out or run_dir()
    d.mkdir(parents=True, exist_ok=True)
    write_plots([res], d)
    write_report([res], d, f"Scenario {sc.name}")
    print(f"sim: report {d / 'report.md'}")
    return 1 if bad else 0


def _calibrate_ops(path: Path, gpu: str, precision: str, heldout_every: int, write: Optional[Path],
                   table: Optional[Path] = None, impl: str = "fa2") -> int:
    from sim.predict.gpus import PRECISIONS, resolve_gpu  # noqa: PLC0415

    spec = resolve_gpu(gpu, "--gpu")
    if precision not in PRECISIONS or spec.peak_flops(precision) <= 0:
        raise SimInputError(f"--precision: {precision!r}: not one of {spec.name}'s ({', '.join(PRECISIONS)})")
    if impl not in IMPLS:
        raise SimInputError(f"--attention-impl: {impl!r}: one of {', '.join(IMPLS)}")
    print(calibrate_ops_file(path, spec, precision, heldout_every, write).summary())
    if write is not None:
        print(f"sim: wrote {write}")
    if table is not None and path.suffix not in (".json", ".gz"):
        n = write_table(path, table, spec, precision, impl)
        print(f"sim: wrote {table} ({n} measured kernels; use it as kernels: {{table: {table}}})")
    return 0


def _calibrate_run(path: Path, write: Optional[Path]) -> int:
    from sim.predict.runcal import calibrate_run_file  # noqa: PLC0415

    print(calibrate_run_file(path, write).summary())
    if write is not None:
        print(f"sim: wrote {write}")
    return 0


def _validate(split: str, source: Optional[str], data: Optional[Path], summary: bool) -> int:

    ds = load_dataset(data or DATA)
    if source is not None and source not in ds.sources:
        raise SimInputError(f"--source: unknown source {source!r} (known: {', '.join(ds.sources)})")
    runs = select(ds, split, source)
    if not runs:
        raise SimInputError(f"--split {split}: no run selected")
    print("\n".join(report_lines(validate_runs(runs, ds), per_run=not summary)))
    return 0


def _fit(data: Optional[Path], write: bool, evaluations: int, free: bool = False) -> int:


    ds = load_dataset(data or DATA)
    rep = fit(ds, evaluations=evaluations, free=free)
    print(f"fit: {rep.evaluations} evaluations in {rep.wall_s:.0f} s; fit-split mean |error| "
          f"{rep.before_pct:.1f} % before, {rep.after_pct:.1f} % after")
    print(yaml.safe_dump(rep.calibration.to_dict(), sort_keys=False))
    with calibration.use(rep.calibration):
        print("\n".join(report_lines(validate_runs(ds.runs, ds), per_run=False)))
    if write:
        calibration.PATH.write_text("# fitted by python -m sim validate --fit " + ("--free " if free else "") + "--write on the fit split of "
                                    "sim/validation/runs.yaml\n# (held-out runs never used); "
                                    "meaning of each figure: sim/predict/calibration.py\n"
                                    + yaml.safe_dump(rep.calibration.to_dict(), sort_keys=False))
        print(f"sim: wrote {calibration.PATH}")
    return 0


def _predict(path: Path, out: Optional[Path]) -> int:
    import time  # noqa: PLC0415

    from sim.predict.job import load_job  # noqa: PLC0415
    from sim.predict.predict import predict  # noqa: PLC0415
    from sim.predict.report import summary_lines, write_outputs  # noqa: PLC0415
    from sim.report import REPO  # noqa: PLC0415

    r = predict(load_job(path))
    print("\n".join(summary_lines(r)))
    d = out or REPO / "runs" / time.strftime("predict-%Y%m%d-%H%M%S")
    report, trace = write_outputs(r, d)
    print(f"sim: report {report}, trace {trace}")
    return 0


def parse_bytes(text: str) -> float:
    """``"16GiB"`` → 17179869184.0; ``KiB/MiB/GiB/TiB``, ``KB/MB/GB/TB`` or a plain number.

        >>> parse_bytes("512MiB"), parse_bytes("1e9")
        (536870912.0, 1000000000.0)
    """
    units = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "KB": 1e3, "MB": 1e6, "GB": 1e9,
             "TB": 1e12, "B": 1}
    t = text.strip()
    for u, f in units.items():
        if t.endswith(u):
            t, scale = t[:-len(u)], float(f)
            break
    else:
        scale = 1.0
    try:
        value = float(t) * scale
    except ValueError:
        raise SimInputError(f"--bytes: {text!r}: a size such as 16GiB, 512MiB or 1e9") from None
    if not value > 0:
        raise SimInputError(f"--bytes: {text!r}: must be positive")
    return value


def _allreduce(args: argparse.Namespace) -> int:
    import time  # noqa: PLC0415

    from sim.cluster.allreduce import cluster_allreduce  # noqa: PLC0415
    from sim.cluster.fabric import SimCluster  # noqa: PLC0415
    from sim.cluster.spec import load_cluster  # noqa: PLC0415
    from sim.policies import GorOptions  # noqa: PLC0415

    size = parse_bytes(args.bytes)
    if args.gor_rounds < 0 or args.gor_top_n < 1:
        raise SimInputError("--gor-rounds must be >= 0 and --gor-top-n >= 1")
    spec = load_cluster(args.cluster)
    t0 = time.perf_counter()
    sc = SimCluster.build(spec)
    built = time.perf_counter() - t0
    r = cluster_allreduce(sc, args.gpus if args.gpus is not None else spec.gpus, size, args.policy,
                          args.channels, args.order, args.seed, GorOptions(args.gor_rounds, args.gor_top_n),
                          all_pods=args.all_pods)
    print("\n".join(r.summary_lines()))
    print(f"sim: cluster {spec.name} built in {built:.2f} s ({spec.pods} pods, {spec.cores} core switches, "
          f"{sc.num_links:,} links)")
    return 0


def _dualport(args: argparse.Namespace) -> int:
    if args.qps < 1:
        raise SimInputError(f"--qps: {args.qps}: at least 1")
    policies = [p for p in args.policies.split(",") if p]
    for p in policies:
        if p not in POLICIES:
            raise SimInputError(f"--policies: {p!r}: one of {', '.join(POLICIES)}")
    try:
        fab = build_fabric(load_spec(args.spec))
    except SpecError as exc:
        raise SimInputError(str(exc)) from None
    pairs = cross_pairs(fab, args.qps)
    size = parse_bytes(args.bytes)
    s = fab.spec
    print(f"sim: {args.spec}: {s.pods} pod(s), {s.num_gpus} GPUs, {s.ports_per_nic} port(s) per NIC, "
          f"{s.cores} cores; {len(pairs)} QPs of {size:,.0f} B, each NIC to the server half the fabric away")
    for p in policies:
        print(simulate_step(fab, pairs, p, size, args.seed).summary())
    return 0


def _incast(args: argparse.Namespace) -> int:
    if args.seeds < 1 or not args.run_s > 0:
        raise SimInputError("--seeds must be >= 1 and --run-s positive")
    setup = IncastSetup(spec=args.spec or DEFAULT_SPEC, run_s=args.run_s)
    if args.compare:
        c = compare(setup, INCAST_TIMING, args.seeds)
        print("\n".join(c.lines()))
        print("sim: error = (sim - live) / live for counts, sim - live for the peak (packets) and Jain; "
              "timings chosen on the lone runs only (sim/README.md, \"Incast\")")
        return 0
    fab = setup.fabric()
    for mode in MODES:
        for load in LOADS:
            print(f"{mode:7s} {load:6s} {simulate(setup, mode, load, INCAST_TIMING, 1, fab).as_dict()}")
    return 0


def _sweep(path: Path, workers: Optional[int], address: Optional[str], out: Optional[Path]) -> int:
    import time  # noqa: PLC0415

    from sim.report import REPO  # noqa: PLC0415
    from sim.sweep.grid import load_grid  # noqa: PLC0415
    from sim.sweep.report import best_per_scale, write_outputs  # noqa: PLC0415
    from sim.sweep.run import timed_run  # noqa: PLC0415

    grid = load_grid(path)
    rows, wall = timed_run(grid, workers, address)
    engine = f"Dask at {address}" if address else f"a local pool of {workers or 'all'} processes"
    d = out or REPO / "runs" / time.strftime("sweep-%Y%m%d-%H%M%S")
    files = write_outputs(rows, d, grid.name, wall, engine)
    ok = sum(r["status"] == "ok" for r in rows)
    print(f"sweep {grid.name}: {len(rows)} points ({ok} feasible) in {wall:.1f} s "
          f"({len(rows) / wall:.1f} points/s) on {engine}")
    for r in best_per_scale(rows):
        print(f"  {r['gpus']:>6} GPUs: best {r['label']}: iteration {r['iteration_s']:.3f} s, "
              f"{r['tflops_per_gpu']:.1f} TFLOP/s per GPU, MFU {r['mfu']:.1%}")
    print("sim: " + ", ".join(str(f) for f in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
