"""Command line of the simulator: ``python -m sim run|study|calibrate|measure``.

::

    python -m sim run sim/scenarios/ring-8k.yaml [--out DIR]     # table + plots + report
    python -m sim study [--scales 1,8,64] [--out DIR]              # the default study (make sim)
    python -m sim calibrate sim/calibration/default-fabric.json    # fit overheads, errors before/after
    python -m sim measure --out FILE.json                          # on a RUNNING testbed (root)

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


if __name__ == "__main__":
    sys.exit(main())
