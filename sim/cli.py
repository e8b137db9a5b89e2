"""Command line of the simulator: ``python -m sim run|study|calibrate|measure|predict|calibrate-ops``.

::

    python -m sim run sim/scenarios/ring-8k.yaml [--out DIR]     # table + plots + report
    python -m sim study [--scales 1,8,64] [--out DIR]              # the default study (make sim)
    python -m sim calibrate sim/calibration/default-fabric.json    # fit overheads, errors before/after
    python -m sim measure --out FILE.json                          # on a RUNNING testbed (root)
    python -m sim predict sim/jobs/gpt3-175b-1024.yaml [--out DIR]  # one training iteration
    python -m sim calibrate-ops kernels.csv|trace.json --gpu H800  # fit the kernel model

Exit status: 0 done, 1 some job flow undeliverable (failure scenario) or a measurement
failed, 2 bad input (the message names the field).

Example::

    >>> build_parser().parse_args(["run", "x.yaml"]).cmd
    'run'
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from sim.topology import SimInputError


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
    p = sub.add_parser("predict", help="predict one training iteration of a job file (time, MFU, memory, trace)")
    p.add_argument("job", type=Path)
    p.add_argument("--out", type=Path, default=None, help="folder for report.md and trace.json "
                                                          "(default runs/predict-<time>)")
    o = sub.add_parser("calibrate-ops", help="fit the kernel model's efficiency factors to measured operator times")
    o.add_argument("measurements", type=Path, help="a CSV of measured kernels or a PyTorch-profiler trace (.json/.json.gz)")
    o.add_argument("--gpu", required=True, help="the GPU preset the kernels ran on (e.g. H800, A100-80GB)")
    o.add_argument("--precision", default="bf16", help="bf16 | fp16 | fp8 (default bf16)")
    o.add_argument("--heldout-every", type=int, default=5, help="trace: hold out every N-th kernel (default 5)")
    o.add_argument("--write", type=Path, default=None, help="write the fitted kernels: section (YAML) here")
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
        if args.cmd == "calibrate-ops":
            return _calibrate_ops(args.measurements, args.gpu, args.precision, args.heldout_every, args.write)
        if args.cmd == "calibrate":
            from sim.calibrate import calibrate_file  # noqa: PLC0415
            report = calibrate_file(args.measurements, args.write)
            print(report.summary())
            return 0
        from sim.measure import measure  # noqa: PLC0415
        return measure(args.out, repeats=args.repeats)
    except SimInputError as exc:
        print(f"sim: {exc}", file=sys.stderr)
        return 2


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


def _calibrate_ops(path: Path, gpu: str, precision: str, heldout_every: int, write: Optional[Path]) -> int:
    from sim.predict.gpus import PRECISIONS, PRESETS  # noqa: PLC0415
    from sim.predict.opcal import calibrate_ops_file  # noqa: PLC0415

    if gpu not in PRESETS:
        raise SimInputError(f"--gpu: unknown GPU {gpu!r} (known: {', '.join(PRESETS)})")
    if precision not in PRECISIONS or PRESETS[gpu].peak_flops(precision) <= 0:
        raise SimInputError(f"--precision: {precision!r}: not one of {gpu}'s ({', '.join(PRECISIONS)})")
    print(calibrate_ops_file(path, PRESETS[gpu], precision, heldout_every, write).summary())
    if write is not None:
        print(f"sim: wrote {write}")
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


if __name__ == "__main__":
    sys.exit(main())
