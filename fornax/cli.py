"""``python -m fornax``: build the SmartNIC program, check a policy file, run a manager.

::

    python -m fornax build [--baseline] [--table-size N] [--p4c P4C] [--out DIR]
    python -m fornax check-policy FILE
    python -m fornax manage --nic NAME --grpc-addr HOST:PORT --device-id N --policy FILE
                            [--p4info F --config F | --attach] [--pki DIR [--identity NAME]] [--iface PORT=IF ...]
                            [--admin SOCKET] [--events FILE] [--idle-timeout-s S] [--baseline]

``manage`` runs until SIGTERM or SIGINT; SIGHUP reads the policy file again.

Exit status 0 when it did what was asked, 1 when the input was refused (the message says
which file, line and field), 2 when a step failed.

>>> build_parser().parse_args(["build", "--baseline"]).baseline
True
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Optional, Sequence

from controller.p4rt.tls import ClientTls
from fornax.admin import AdminServer
from fornax.baseline import BaselineConfig, BaselineManager
from fornax.build import BUILD_DIR, BuildError, SmartNicBuild
from fornax.manager import FornaxManager, ManagerConfig
from fornax.policy import PolicyError, load_policy
from p4src.smartnic.model import DEFAULT_SESSION_TABLE_SIZE


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
    c = sub.add_parser("check-policy", help="parse and check a policy file")
    c.add_argument("policy", type=Path, help="the policy file")
    m = sub.add_parser("manage", help="run the manager of one SmartNIC")
    m.add_argument("--nic", required=True, help="the NIC's name in the policy")
    m.add_argument("--grpc-addr", required=True, help="the switch's P4Runtime address")
    m.add_argument("--device-id", type=int, default=0, help="P4Runtime device id (0)")
    m.add_argument("--election-id", type=int, default=1, help="election id (low word; 1)")
    m.add_argument("--policy", type=Path, required=True, help="the policy file")
    m.add_argument("--p4info", type=Path, help="P4Info to push (with --config)")
    m.add_argument("--config", type=Path, help="device config to push (with --p4info)")
    m.add_argument("--attach", action="store_true",
                   help="use the pipeline the switch runs (a restarted manager)")
    m.add_argument("--table-size", type=int, default=None,
                   help="the program's session table size (default 2^18)")
    m.add_argument("--pki", type=Path, default=None,
                   help="testbed PKI folder: TLS with this manager's own certificate "
                        "(--identity)")
    m.add_argument("--identity", default=None,
                   help="the certificate (common name) to present with --pki (default "
                        "NIC-manager: each NIC's policy lets only its own manager program it)")
    m.add_argument("--server-name", default=None,
                   help="the name the switch's certificate must carry (with --pki)")
    m.add_argument("--iface", action="append", default=[], metavar="PORT=IF",
                   help="switch port and its Linux interface, for software forwarding "
                        "during a hang (repeat)")
    m.add_argument("--admin", type=Path, default=None, help="admin socket path")
    m.add_argument("--events", type=Path, default=None, help="event log (JSON lines)")
    m.add_argument("--idle-timeout-s", type=float, default=30.0,
                   help="sessions age after this idle time (30)")
    m.add_argument("--hang-after-s", type=float, default=1.0,
                   help="no heartbeat back for this long: the hardware path hangs (1.0)")
    m.add_argument("--baseline", action="store_true",
                   help="run the software-centric baseline manager instead")
    m.add_argument("--walk-period-s", type=float, default=5.0,
                   help="baseline: the full-table walk's period (5)")
    return ap


def cmd_check_policy(args: argparse.Namespace) -> int:
    """Parse a policy; one summary line, or the file:line: error (exit 1)."""
    try:
        p = load_policy(args.policy)
    except PolicyError as exc:
        print(f"{exc}", file=sys.stderr)
        return 1
    rules = sum(len(r) for r in p.groups.values())
    print(f"{args.policy}: ok: {len(p.nics)} nics, {len(p.vpcs)} vpcs, {len(p.vms)} vms, "
          f"{len(p.groups)} groups ({rules} rules), "
          f"{sum(len(r) for r in p.routes.values())} routes, {len(p.lbs)} load balancers")
    return 0


def _interfaces(items: Sequence[str]) -> dict[int, str]:
    out = {}
    for item in items:
        port, sep, iface = item.partition("=")
        if not sep or not port.isdigit() or not iface:
            raise ValueError(f"--iface {item!r}: expected PORT=INTERFACE")
        out[int(port)] = iface
    return out


def cmd_manage(args: argparse.Namespace) -> int:
    """Run one manager until a signal."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    tls = None
    if args.pki is not None:
        who = args.identity or f"{args.nic}-manager"
        trust = args.pki / f"{who}.trust.pem"              # the split PKI's bundle
        if not (args.pki / f"{who}.pem").is_file():
            print(f"fornax manage: no certificate for {who!r} in {args.pki} (--identity)",
                  file=sys.stderr)
            return 1
        tls = ClientTls(trust if trust.is_file() else args.pki / "ca.pem",
                        args.pki / f"{who}.pem",
                        args.pki / f"{who}.key", server_name=args.server_name)
    try:
        common: dict[str, Any] = dict(
            nic=args.nic, grpc_addr=args.grpc_addr, device_id=args.device_id,
            policy_path=args.policy, election_id=(0, args.election_id),
            p4info=None if args.attach else args.p4info,
            device_config=None if args.attach else args.config,
            table_size=args.table_size or DEFAULT_SESSION_TABLE_SIZE, tls=tls,
            event_log=args.events)
        if args.baseline:
            mgr: Any = BaselineManager(BaselineConfig(**common,
                                                      walk_period_s=args.walk_period_s))
        else:
            mgr = FornaxManager(ManagerConfig(**common, idle_timeout_s=args.idle_timeout_s,
                                              hang_after_s=args.hang_after_s,
                                              interfaces=_interfaces(args.iface)))
    except (PolicyError, ValueError) as exc:
        print(f"fornax manage: {exc}", file=sys.stderr)
        return 1
    done = threading.Event()
    # set from a thread, not from the handler: Event.set takes the Event's lock, which this
    # (main) thread may hold inside its own done.wait when the signal lands: a deadlock
    # (host/nic/sigflag.py)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=done.set, daemon=True).start())
    signal.signal(signal.SIGINT, lambda *_: threading.Thread(target=done.set, daemon=True).start())

    def on_hup(*_: Any) -> None:
        try:
            mgr.reload()
        except PolicyError as exc:
            print(f"fornax manage: policy not changed: {exc}", file=sys.stderr, flush=True)
    signal.signal(signal.SIGHUP, on_hup)
    try:
        mgr.start()
    except Exception as exc:                          # noqa: BLE001 - one line, exit 2
        print(f"fornax manage: {args.nic}: cannot start: {exc}", file=sys.stderr, flush=True)
        mgr.stop()
        return 2
    admin = AdminServer(mgr, args.admin) if args.admin else None
    if admin is not None:
        admin.start()
    print(f"fornax manage: {args.nic} ready ({'baseline' if args.baseline else 'fornax'}, "
          f"{args.grpc_addr})", flush=True)
    done.wait()
    if admin is not None:
        admin.stop()
    mgr.stop()
    return 0


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
    if args.command == "check-policy":
        return cmd_check_policy(args)
    if args.command == "manage":
        return cmd_manage(args)
    ap.print_usage(sys.stderr)
    return 2


__all__ = ["build_parser", "main"]
