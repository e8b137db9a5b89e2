"""Command line of the benchmark harness: ``python -m bench [GROUP|GROUP.NAME ...]``.

Runs the selected benchmarks (all by default), prints a plain table of the figures and
merges them into ``build/bench.json`` (figures not re-measured are kept).

Example::

    $ .venv/bin/python -m bench                 # everything (what `make bench` runs)
    $ .venv/bin/python -m bench p4sim           # only the p4sim group
    $ .venv/bin/python -m bench p4sim.ecmp_ecn --duration 1 --runs 1
    $ sudo .venv/bin/python -m bench gor.fast_loop --target bmv2   # -> build/bench-bmv2.json
    $ sudo .venv/bin/python -m bench monitor --target bmv2         # -> build/bench-bmv2.json

Exit status: 0 all selected benchmarks ran (a live one may still skip itself, said on
stderr, e.g. without root), 1 a benchmark failed or a correctness check did not hold, 2 a
bad argument, 3 ``--target bmv2`` without ``simple_switch_grpc`` or ``p4c-bm2-ss`` on PATH
(nothing run, nothing written).
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Optional, Sequence

from bench import groups, run_benchmarks, select
from bench.results import BMV2_OUTPUT, DEFAULT_OUTPUT, BenchConfig, format_table

#: what ``--target bmv2`` runs: the reference switch and compiler (never in the repository)
BMV2_BINARIES = ("simple_switch_grpc", "p4c-bm2-ss")
EXIT_NO_TARGET = 3


def missing_binaries(target: str) -> list[str]:
    """The binaries ``target`` needs that are not on PATH (none for p4sim).

    >>> missing_binaries("p4sim")
    []
    """
    return [b for b in BMV2_BINARIES if shutil.which(b) is None] if target == "bmv2" else []


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (kept separate so tests can inspect the defaults)."""
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", metavar="GROUP",
                   help="groups or GROUP.NAME to run (default: all)")
    p.add_argument("--duration", type=float, default=3.0,
                   help="seconds of one timed run (default 3)")
    p.add_argument("--runs", type=int, default=3,
                   help="timed runs per figure; the median is reported (default 3)")
    p.add_argument("--warmup", type=float, default=0.5,
                   help="untimed seconds before the runs (default 0.5)")
    p.add_argument("--target", choices=("p4sim", "bmv2"), default="p4sim",
                   help="switch target of the live benchmarks; bmv2 runs only those that "
                        "support it (simple_switch_grpc and p4c-bm2-ss on PATH)")
    p.add_argument("--output", type=Path, default=None,
                   help=f"JSON file to merge the figures into (default {DEFAULT_OUTPUT}; "
                        f"{BMV2_OUTPUT} with --target bmv2)")
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI; returns the exit status (module docstring: 1 a failed benchmark or
    check, 2 a bad name or argument, 3 the target's binaries not on PATH)."""
    args = build_parser().parse_args(argv)
    if args.list:
        for b in select(target=args.target):
            print(f"{b.group}.{b.name}")
        return 0
    try:
        select(args.names)
    except KeyError as exc:
        print(f"bench: unknown benchmark {exc.args[0]!r} (groups: {', '.join(groups())})",
              file=sys.stderr)
        return 2
    try:
        select(args.names, args.target)
    except KeyError as exc:
        can = ", ".join(f"{b.group}.{b.name}" for b in select(target=args.target))
        print(f"bench: {exc.args[0]!r} does not run on {args.target} (those that do: {can})",
              file=sys.stderr)
        return 2
    if args.duration <= 0 or args.runs < 1:
        print("bench: --duration must be > 0 and --runs >= 1", file=sys.stderr)
        return 2
    missing = missing_binaries(args.target)
    if missing:
        print(f"bench: --target {args.target} needs {' and '.join(BMV2_BINARIES)} on PATH; "
              f"not found: {', '.join(missing)} (a reference build: README.md, \"Targets: "
              f"p4sim and BMv2\"); nothing run, nothing written", file=sys.stderr)
        return EXIT_NO_TARGET
    config = BenchConfig(duration_s=args.duration, runs=args.runs, warmup_s=max(0.0, args.warmup),
                         target=args.target)
    output = args.output or (BMV2_OUTPUT if args.target == "bmv2" else DEFAULT_OUTPUT)
    failures: list[str] = []
    figures = run_benchmarks(args.names, config, output,
                             progress=lambda m: print(m, file=sys.stderr, flush=True),
                             failures=failures)
    print(format_table(figures))
    print(f"\nwrote {output} ({len(figures)} figures measured)")
    for why in failures:
        print(f"bench: FAILED {why}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
