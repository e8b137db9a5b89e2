"""``python -m fuzz [frames|p4rt|agent|p4rt-mtls|agent-mtls|all] --size small|full --seed N
--out FILE``: run the campaigns, print one line each, write their results
(:mod:`fuzz.report`) as JSON. ``p4rt-mtls`` and ``agent-mtls`` are the P4Runtime and agent
campaigns under mutual TLS with the testbed's PKI (and its P4Runtime policy), sent by
every identity the testbed issues, with the authorization rules as invariants.

Exit status 0 when no campaign found anything, 1 when one did, 2 for bad arguments. The
frames campaign needs root (veth pairs): without it, it is skipped and says why (exit
status unaffected; the JSON records the skip).

>>> build_parser().parse_args(["p4rt", "--size", "small", "--seed", "3"]).seed
3
"""
from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

from fuzz.report import CampaignResult, write_results
from fuzz.veths import veths_available

CAMPAIGNS = ("frames", "p4rt", "agent", "p4rt-mtls", "agent-mtls")
DEFAULT_OUT = Path("build") / "fuzz.json"


def build_parser() -> argparse.ArgumentParser:
    """The command line (every option with a line of help)."""
    ap = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign", nargs="?", default="all", choices=(*CAMPAIGNS, "all"),
                    help="which campaign to run (default: all)")
    ap.add_argument("--size", choices=("small", "full"), default="small",
                    help="small: what make test runs (seconds); full: 10^6 frames, 10^5 "
                         "P4Runtime messages, 2x10^4 agent calls (make fuzz)")
    ap.add_argument("--count", type=int, default=None,
                    help="inputs to send instead of the size's (frames, messages or calls)")
    ap.add_argument("--seed", type=int, default=0, help="the seed: the same seed and size send the same inputs")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results JSON (default {DEFAULT_OUT})")
    return ap


def _runner(name: str) -> tuple[Callable[..., CampaignResult], dict[str, int]]:
    if name == "frames":
        from fuzz.frames import SIZES, run_frames  # noqa: PLC0415 — heavy: hypothesis
        return run_frames, SIZES
    if name.startswith("p4rt"):
        from fuzz.p4rt import SIZES, run_p4rt  # noqa: PLC0415 — heavy: hypothesis
        return functools.partial(run_p4rt, identities=name.endswith("-mtls")), SIZES
    from fuzz.agent import SIZES, run_agent  # noqa: PLC0415 — heavy: hypothesis, scapy
    return functools.partial(run_agent, identities=name.endswith("-mtls")), SIZES


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the chosen campaigns; the exit status (see the module docstring)."""
    args = build_parser().parse_args(argv)
    if args.count is not None and args.count < 1:
        print("error: --count must be at least 1", file=sys.stderr)
        return 2
    names = CAMPAIGNS if args.campaign == "all" else (args.campaign,)
    results = []
    for name in names:
        if name == "frames":
            why = veths_available()
            if why:
                print(f"fuzz frames: skipped ({why})")
                skipped = CampaignResult("frames", seed=args.seed, size=args.size)
                skipped.notes.append(f"skipped: {why}")
                results.append(skipped)
                continue
        run, sizes = _runner(name)
        result = run(args.seed, args.count or sizes[args.size], size=args.size)
        print(result.summary())
        for f in result.findings:
            print(f"  [{f.kind}] input {f.index}: {f.what}: {f.message.splitlines()[0] if f.message else ''}")
        results.append(result)
    path = write_results(args.out, results)
    print(f"fuzz: results in {path}")
    return 0 if all(r.ok for r in results) else 1
