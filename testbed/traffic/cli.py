"""Command line of ``python -m testbed.traffic``: NIC-emulator flows on a testbed another
process keeps up (``python -m testbed up --hold``), or on one brought up for the run
(``--up``); prints the per-flow and per-uplink summary, ``--json`` writes the result.

::

    python -m testbed.traffic --elephants 8 --rail 0 --ports tccl --duration-s 8
    python -m testbed.traffic --up --elephants 8 --ports random --seed 7 --json out.json
    python -m testbed.traffic --collective allreduce --ports tccl
"""
from __future__ import annotations

import argparse
import random
import signal
import sys
from pathlib import Path
from typing import Optional, Sequence

from controller.fabric_setup import FabricProgrammer
from controller.p4rt import SwitchConnection
from testbed.cli import STATE_PATH, TOPOLOGY_PATH, load_topology, on_signal
from testbed.net import TestbedState, record_matches
from testbed.tls import recorded_controller_tls
from testbed.traffic.flows import PORT_MODES
from testbed.traffic.live import testbed_unavailable, testbed_up
from testbed.traffic.nicproc import NicOptions
from testbed.traffic.run import TrafficOptions, TrafficResult, run_traffic

REPO = Path(__file__).resolve().parents[2]


def _attach(args: argparse.Namespace, opts: TrafficOptions) -> TrafficResult:
    """Run on a testbed another process keeps up (``testbed.cli up --hold``)."""
    state_path = args.state or STATE_PATH
    state = TestbedState.load(state_path)
    if state is None or not any(record_matches(r) for r in state.procs):
        raise SystemExit("traffic: no testbed is running: start one with "
                         "`python -m testbed up --hold`, or pass --up")
    fabric = load_topology(TOPOLOGY_PATH)
    tls = recorded_controller_tls(state.pki)   # the testbed's TLS, unless it ran --insecure
    programmer = FabricProgrammer(fabric, REPO / "build" / "fabric.p4info.txtpb",
                                  REPO / "build" / "fabric.json", tls=tls)
    conns = {}
    try:
        for sw in fabric.switches:
            if sw.role == "leaf":
                conns[sw.name] = SwitchConnection(sw.grpc_addr, device_id=sw.device_id,
                                                  arbitrate=False,
                                                  tls=tls.for_server(sw.name) if tls else None)
                conns[sw.name].fetch_pipeline()
        return run_traffic(fabric, programmer, state, lambda: state.save(state_path), opts,
                           conns)
    finally:
        for c in conns.values():
            c.close()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m testbed.traffic``."""
    ap = argparse.ArgumentParser(prog="python -m testbed.traffic",
                                 description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--up", action="store_true", help="bring a default p4sim fabric up for the run")
    ap.add_argument("--elephants", type=int, default=8)
    ap.add_argument("--rail", type=int, default=0)
    ap.add_argument("--collective", default=None, help="allreduce | allgather | ... (TCCL planner)")
    ap.add_argument("--ports", choices=PORT_MODES, default="random")
    ap.add_argument("--seed", type=int, default=None, help="default: random, printed")
    ap.add_argument("--duration-s", type=float, default=8.0)
    ap.add_argument("--line-rate-pps", type=float, default=100.0, help="per QP (DCQCN max)")
    ap.add_argument("--no-dcqcn", action="store_true")
    ap.add_argument("--queue-rate-pps", type=float, default=None,
                    help="drain rate of the used leaves' uplinks (p4sim), default unlimited")
    ap.add_argument("--state", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="write the result here")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    opts = TrafficOptions(args.elephants, args.rail, args.collective, args.ports, seed,
                          args.duration_s, NicOptions(line_rate_pps=args.line_rate_pps,
                                                      dcqcn=not args.no_dcqcn),
                          args.queue_rate_pps)
    signal.signal(signal.SIGTERM, on_signal)
    if args.up:
        why = testbed_unavailable()
        if why:
            print(f"traffic: cannot bring a testbed up: {why}", file=sys.stderr)
            return 2
        with testbed_up() as tb:
            result = run_traffic(tb.fabric, tb.programmer, tb.state, tb.save_state, opts)
    else:
        result = _attach(args, opts)
    if args.json:
        args.json.write_text(result.to_json() + "\n")
    return 0 if not result.errors else 1


__all__ = ["main"]
