"""``python -m scenarios``: bring the testbed up and run one scenario (what ``make run``
runs), or list them.

::

    python -m scenarios --list
    python -m scenarios up --scenario NAME [--scenario-seed N] [--scenario-duration-s S]
                           [--runs DIR] [--monitor-port PORT] [every option of `python -m testbed up`]
    python -m scenarios measure --out FILE.json [--repeats N]    # a RUNNING testbed (root)

``--scenario none`` (or empty) brings the fabric up, programs and pings it, and opens the
CLI (or holds) without a scenario. ``measure`` times the simulator's calibration collectives on
a testbed already running (:mod:`scenarios.measure`). Exit status: the scenario's (0 only when it measured
what it tells; 1 when it measured nothing, with the reason), 2 when a step failed.

>>> build_parser().parse_args(["up", "--scenario", "none"]).scenario
'none'
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from monitor.webport import port_arg, web_port_taken
from scenarios.common import DEFAULT_DURATION_S, DEFAULT_FLOW_RATE_PPS, RUNS, ScenarioOptions
from scenarios.registry import NONE, SCENARIOS, run_scenario, scenario
from scenarios.story import STORY_CORE_DURATION_S, STORY_CORE_FLOW_RATE_PPS, STORY_FLOW_RATE_PPS
from testbed.cli import add_up_arguments, cmd_up, load_topology
from testbed.net import TestbedError


def build_parser() -> argparse.ArgumentParser:
    """The command line (every option with a line of help)."""
    ap = argparse.ArgumentParser(prog="python -m scenarios", description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="list the scenarios and exit")
    sub = ap.add_subparsers(dest="command")
    up = sub.add_parser("up", help="testbed up, ping, the scenario, CLI/hold, teardown")
    add_up_arguments(up, pcaps_by_default=False)
    names = " | ".join(n for s in SCENARIOS.values() for n in (s.name, *s.aliases))
    up.add_argument("--scenario", default=os.environ.get("SCENARIO", "default"),
                    help=f"what to run after the ping check: {names} | none "
                         "(default: default, the GOR story; $SCENARIO)")
    up.add_argument("--scenario-seed", type=int, default=None,
                    help="seed of the elephants' random source ports (default: random, printed)")
    up.add_argument("--scenario-duration-s", type=float, default=None,
                    help="seconds the elephants run (default: the scenario's own on the "
                         f"fabric, the story's {STORY_CORE_DURATION_S:g} on a fabric with a "
                         f"core tier, else {DEFAULT_DURATION_S:g}: scenarios.cli.duration)")
    up.add_argument("--scenario-flow-pps", type=float, default=None,
                    help="packets/s of each elephant, its NIC's line rate (default: the "
                         f"scenario's own, the story's {STORY_FLOW_RATE_PPS:g} "
                         f"({STORY_CORE_FLOW_RATE_PPS:g} on a fabric with a core tier), else "
                         f"{DEFAULT_FLOW_RATE_PPS:g}: scenarios.common.DEFAULT_FLOW_RATE_PPS)")
    up.add_argument("--runs", type=Path, default=RUNS, help="where reports go (runs/)")
    up.add_argument("--monitor-port", type=port_arg, default=os.environ.get("MONITOR_PORT", "0"),
                    metavar="PORT",
                    help="the monitor's web view on 127.0.0.1:PORT, in the scenarios that run "
                         "the monitor (faults); 0 to 65535, 0: a free one (default; $MONITOR_PORT); "
                         "a taken port is refused before the testbed comes up")
    m = sub.add_parser("measure", help="time the simulator's calibration collectives on the "
                                       "running testbed (python -m sim calibrate reads the file)")
    m.add_argument("--out", type=Path, required=True, help="measurement file to write (JSON)")
    m.add_argument("--repeats", type=int, default=3, help="runs of each collective (default 3)")
    return ap


def listing() -> str:
    """One line per scenario: name, other names, summary."""
    rows = [f"{s.name:<13} {s.summary}" + (f" (also: {', '.join(s.aliases)})" if s.aliases else "")
            for s in SCENARIOS.values()]
    return "\n".join(rows + [f"{'none':<13} the fabric up, programmed and pinged; no scenario"])


def flow_rate(name: str, given: Optional[float], fabric: Any = None) -> float:
    """The elephants' packets/s: ``given`` (``--scenario-flow-pps``), else the scenario's
    own rate on ``fabric`` (``Scenario.flow_rate_of``; without a fabric
    ``Scenario.flow_rate_pps``), else ``DEFAULT_FLOW_RATE_PPS``.

    >>> flow_rate("default", None) == STORY_FLOW_RATE_PPS, flow_rate("incast", None), flow_rate("gor", 60.0)
    (True, 250.0, 60.0)
    """
    if given is not None:
        return given
    try:
        sc = scenario(name)
    except KeyError:
        return DEFAULT_FLOW_RATE_PPS
    if fabric is not None and sc.flow_rate_of is not None:
        return sc.flow_rate_of(fabric)
    return sc.flow_rate_pps if sc.flow_rate_pps is not None else DEFAULT_FLOW_RATE_PPS


def duration(name: str, given: Optional[float], fabric: Any) -> float:
    """The elephants' run length in seconds: ``given`` (``--scenario-duration-s``), else
    the scenario's own on ``fabric`` (``Scenario.duration_s``: the story runs
    ``scenarios.story.STORY_CORE_DURATION_S`` on a fabric with a core tier), else
    ``DEFAULT_DURATION_S``.

    >>> from topo.model import FabricSpec, build_fabric
    >>> one, two = build_fabric(FabricSpec()), build_fabric(FabricSpec(pods=2, blocks=1, cores=2))
    >>> duration("default", None, one), duration("gor", None, two), duration("incast", None, two)
    (12.0, 36.0, 12.0)
    >>> duration("default", 30.0, two), duration("nope", None, two)
    (30.0, 12.0)
    """
    if given is not None:
        return given
    try:
        own = scenario(name).duration_s
    except KeyError:
        own = None
    return own(fabric) if own is not None else DEFAULT_DURATION_S


def _runner(args: argparse.Namespace, fabric: Any, programmer: Any, fnet: Any) -> int:
    opts = ScenarioOptions(seed=args.scenario_seed,
                           duration_s=duration(args.scenario, args.scenario_duration_s, fabric),
                           flow_rate_pps=flow_rate(args.scenario, args.scenario_flow_pps, fabric),
                           runs_root=args.runs.resolve(), insecure=bool(getattr(args, "insecure", False)),
                           state_path=fnet.opts.state_path, monitor_port=args.monitor_port)
    return run_scenario(args.scenario, fabric, programmer, fnet.state, fnet.save_state,
                        opts).status


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m scenarios``."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.list:
        print(listing())
        return 0
    if args.command == "measure":
        from scenarios.measure import measure  # noqa: PLC0415 — heavy: numpy
        return measure(args.out, repeats=args.repeats)
    if args.command != "up":
        ap.print_usage(sys.stderr)
        return 2
    taken = web_port_taken(args.monitor_port)
    if taken is not None:                     # refused before anything starts
        print(f"scenarios: --monitor-port {args.monitor_port}: 127.0.0.1:{args.monitor_port} is taken "
              f"({taken}); choose another port, or 0 for a free one", file=sys.stderr)
        return 2
    if args.scenario not in NONE:
        try:
            sc = scenario(args.scenario)      # refused before anything starts
        except KeyError as exc:
            print(f"scenarios: {exc.args[0]}", file=sys.stderr)
            return 2
        if sc.unfit is not None:              # e.g. tor-failure on one-port NICs
            try:
                why = sc.unfit(load_topology(args.fabric, args.spec, write=False))
            except TestbedError as exc:
                print(f"testbed: {exc}", file=sys.stderr)
                return 2
            if why is not None:
                print(f"scenarios: {why}", file=sys.stderr)
                return 2
        if sc.network != "fabric":            # FORNAX: its own testbed, not the fabric
            try:
                return int(sc.runner(args))
            except TestbedError as exc:
                print(f"testbed: {exc}", file=sys.stderr)
                return 2
    try:
        return cmd_up(args, None if args.scenario in NONE else _runner)
    except TestbedError as exc:
        print(f"testbed: {exc}", file=sys.stderr)
        return 2


__all__ = ["build_parser", "duration", "flow_rate", "listing", "main"]
