"""``python -m fornax``: build the SmartNIC program.

::

    python -m fornax build [--baseline] [--table-size N] [--p4c P4C] [--out DIR]

Exit status 0 when it did what was asked, 1 when the input was refused (the message says
which file, line and field), 2 when a step failed.

>>> build_parser().parse_args(["build", "--baseline"]).baseline
True
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from fornax.build import BUILD_DIR, BuildError, SmartNicBuild


def build_parser() -> argparse.ArgumentParser:
    """The command line (every option with a line of help)."""
    ap = argparse.ArgumentParser(prog="python -m fornax", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command")
    b = sub.add_parser("build", help="compile p4src/smartnic/smartnic.p4 (p4sim or p4c-bm2-ss)")
    b.add_argument("--baseline", action="store_true",
                   help="the software-centric build (FORNAX_BASELINE)")
    b.add_argument("--table-size", type=int, default=None,
                   help="session table size (default: the program's, 2^18)")
    b.add_argument("--p4c", default=None,
                   help="compile with this p4c-bm2-ss (BMv2's JSON) instead of p4sim")
    b.add_argument("--out", type=Path, default=BUILD_DIR, help="output folder (build/fornax)")
    return ap


def cmd_build(args: argparse.Namespace) -> int:
    """Compile one build; print its P4Info and config paths."""
    build = SmartNicBuild(baseline=args.baseline, table_size=args.table_size)
    try:
        p4info, config = build.compile(args.out, compiler="p4c" if args.p4c else "p4sim",
                                       p4c=args.p4c or "p4c-bm2-ss")
    except BuildError as exc:
        print(f"fornax build: {exc}", file=sys.stderr)
        return 2
    print(f"{p4info}\n{config}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m fornax``."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.command == "build":
        return cmd_build(args)
    ap.print_usage(sys.stderr)
    return 2


__all__ = ["build_parser", "main"]
