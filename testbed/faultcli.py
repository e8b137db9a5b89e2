"""``python -m testbed fault …``: inject, list and undo faults on a running testbed.

::

    python -m testbed fault inject gray_link 'link b0r0l0->s0' --param loss_pct=20
    python -m testbed fault inject hung_switch 'switch s1' --name freeze
    python -m testbed fault list
    python -m testbed fault undo gray_link-1        # or: fault undo --all

A target is a component name (``topo.components.component``; quote it: ``->`` and
``<->`` mean something to the shell). The command line reaches the testbed through its
state file and ``build/topology.json``; it holds no P4Runtime connection and no
controller, so ``wrong_ecn_threshold`` and ``controller_down`` are refused here (a
scenario injects them with the controller's writer and hooks), and ``blackhole`` takes
its data-plane form (nft drops the prefix on every egress port of the switch).
``slow_receiver`` and ``dead_agent`` find the NIC processes the running traffic recorded
in the state file. Faults outlive the command; ``python -m testbed down`` undoes them.

>>> args = build_parser().parse_args(["inject", "gray_link", "link", "a->b",
...                                   "--param", "loss_pct=5"])
>>> " ".join(args.target), params_of(args.param)
('link a->b', {'loss_pct': '5'})
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from testbed.faults import FaultError, FaultInjector
from testbed.net import TestbedState, record_matches
import topo
from topo.components import FAULT_KINDS

STATE_PATH = Path(__file__).resolve().parents[1] / "build" / "testbed-state.json"
TOPOLOGY_PATH = STATE_PATH.with_name("topology.json")


def params_of(items: Sequence[str]) -> dict[str, str]:
    """``["k=v", …]`` → ``{k: v}``; ValueError naming an item without ``=``."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--param {item!r}: want KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The ``fault`` sub-commands on ``ap`` (``python -m testbed fault``'s parser)."""
    sub = ap.add_subparsers(dest="fault_command", required=True)
    inj = sub.add_parser("inject", help="inject a fault (KIND TARGET)")
    inj.add_argument("kind", choices=FAULT_KINDS)
    inj.add_argument("target", nargs="+", help="component name, e.g. 'link b0r0l0->s0'")
    inj.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                     help="fault parameter (loss_pct, corrupt_pct, period_s, down_s, …)")
    inj.add_argument("--name", default=None, help="the fault's name (default KIND-N)")
    und = sub.add_parser("undo", help="undo one fault by name, or --all")
    und.add_argument("name", nargs="?", default=None)
    und.add_argument("--all", action="store_true", help="undo every active fault")
    sub.add_parser("list", help="the active faults")
    for p in (inj, und, sub.choices["list"]):
        p.add_argument("--state", type=Path, default=STATE_PATH,
                       help="state file (default build/testbed-state.json)")
        p.add_argument("--fabric", type=Path, default=None,
                       help="fabric file (default build/topology.json)")


def build_parser(prog: str = "python -m testbed fault") -> argparse.ArgumentParser:
    """The stand-alone parser (the same sub-commands as ``python -m testbed fault``)."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    add_arguments(ap)
    return ap


def injector(args: argparse.Namespace) -> Any:
    """The :class:`~testbed.faults.FaultInjector` of the running testbed ``args.state``."""
    state = TestbedState.load(args.state)
    if state is None or not any(record_matches(r) for r in state.procs):
        raise FaultError(f"no testbed is running (state {args.state}): start one with "
                         "`python -m testbed up --hold`")
    fabric_path = args.fabric or args.state.with_name("topology.json")
    try:
        fabric = topo.load_fabric(fabric_path)
    except (OSError, topo.SpecError) as exc:
        raise FaultError(f"the fabric file {fabric_path}: {exc}") from None
    return FaultInjector(fabric, state, state_path=args.state)


def cmd_fault(args: argparse.Namespace) -> int:
    """Run ``fault inject|undo|list``; exit status 0, or 2 with one line on stderr."""
    try:
        params = params_of(args.param) if args.fault_command == "inject" else {}
        inj = injector(args)
        if args.fault_command == "inject":
            rec = inj.inject(args.kind, " ".join(args.target), name=args.name, **params)
            print(f"testbed: fault {rec.name}: {rec.kind} on {rec.target} — {rec.how}")
        elif args.fault_command == "undo":
            if args.all == (args.name is not None):
                raise FaultError("fault undo: give a fault's NAME or --all")
            lines = inj.undo_all() if args.all else [f"undid {inj.undo(args.name).name}"]
            for line in lines or ["no active fault"]:
                print(f"testbed: {line}")
            if any(line.startswith("could not") for line in lines):
                return 2
        else:
            recs = inj.active()
            now = time.time()
            for rec in recs:
                print(f"{rec.name:24} {rec.kind:20} {rec.target:28} "
                      f"{now - rec.started_at:7.1f} s  {rec.how}")
            if not recs:
                print("testbed: no active fault")
    except (FaultError, ValueError) as exc:
        print(f"testbed: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the stand-alone parser (``python -m testbed.faultcli``)."""
    return cmd_fault(build_parser().parse_args(argv))


__all__ = ["add_arguments", "build_parser", "cmd_fault", "main", "params_of"]


if __name__ == "__main__":
    sys.exit(main())
