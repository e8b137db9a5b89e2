"""Command line of GOR, the fabric controller.

``python -m controller setup`` connects to every switch of a fabric file (written by
``topo``), pushes the pipeline and installs every entry the fabric needs
(:mod:`controller.fabric_setup`); ``--hash-model FILE`` also writes the published ECMP
hash model (what TCCL loads). ``--p4rt-ca-cert PEM [--p4rt-cert PEM --p4rt-key PEM]``
connects over TLS (switches started with ``--grpc-server-ssl``: :mod:`controller.p4rt.tls`).
Exit status 0 on success, 1 when a switch cannot be
reached or refuses a write (the message names the switch), 2 on bad arguments.

``python -m controller status [--metrics URL | --log logs/gor.jsonl] [--once]`` shows a
live table of links, alarms and moves (:mod:`controller.gor.status`).

``python -m controller run --fabric F --p4info P --config C [--no-push | --attach]
[--metrics-port N] [--registry-bind ADDR] [--agent-tls-dir DIR | --secret-file FILE]
[--p4rt-ca-cert CA --p4rt-cert CERT --p4rt-key KEY] [--probe-plan PLAN]`` programs the fabric (or
attaches to it), enables the ``flow_sample_t`` digest, starts the flow registry, the
telemetry poller, one digest reader thread per switch and GOR's loop
(:mod:`controller.gor.loop`) until SIGINT/SIGTERM.

Example::

    python -m controller setup --fabric build/topology.json \\
        --p4info build/fabric.p4info.txtpb --config build/fabric.p4sim.json \\
        --hash-model build/hashmodel.json
    python -m controller status --metrics http://127.0.0.1:9464/metrics --once
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from controller.fabric_setup import EcnConfig, FabricProgrammer, PfcConfig
from controller.fabric.qos import thresholds_option
from controller.gor import status as gor_status
from controller.gor.service import run_gor
from controller.p4rt import P4RuntimeClientError
from controller.p4rt import tls as p4rt_tls
from topo.model import load_fabric


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m controller",
                                 description="GOR, the fabric controller.")
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup",
                       help="connect to every switch, push the pipeline, install the fabric")
    s.add_argument("--fabric", required=True, type=Path, help="fabric JSON written by topo")
    s.add_argument("--p4info", required=True, type=Path, help="P4Info (text or binary)")
    s.add_argument("--config", required=True, type=Path,
                   help="device config (BMv2 JSON or p4sim device config)")
    s.add_argument("--hash-model", type=Path, help="write the published ECMP hash model here")
    s.add_argument("--no-push", action="store_true",
                   help="do not push the pipeline (the switches already run it, tables empty)")
    s.add_argument("--ecn-kmin", type=int, default=EcnConfig().kmin_pkts)
    s.add_argument("--ecn-kmax", type=int, default=EcnConfig().kmax_pkts,
                   help="0: plain threshold at kmin")
    s.add_argument("--ecn-pmax", type=int, default=EcnConfig().pmax_per_255)
    s.add_argument("--pfc-xoff", type=int, default=PfcConfig().xoff_pkts, help="0: no PFC")
    s.add_argument("--pfc-xon", type=int, default=PfcConfig().xon_pkts)
    s.add_argument("--pfc-quanta", type=int, default=PfcConfig().pause_quanta)
    s.add_argument("--thresholds", default="static",
                   help="static (the packet thresholds above) | dynamic (shared-buffer alphas, "
                        "p4src/README.md) | a YAML/JSON file of dynamic settings")
    s.add_argument("--timeout", type=float, default=30.0, help="per-RPC timeout in seconds")
    p4rt_tls.add_arguments(s)
    st = sub.add_parser("status", help="live table of links, alarms and moves")
    gor_status.add_arguments(st)
    r = sub.add_parser("run", help="program the fabric and run GOR's loop until SIGINT/SIGTERM")
    r.add_argument("--fabric", required=True, type=Path, help="fabric JSON written by topo")
    r.add_argument("--p4info", required=True, type=Path, help="P4Info (text or binary)")
    r.add_argument("--config", required=True, type=Path, help="device config")
    mode = r.add_mutually_exclusive_group()
    mode.add_argument("--no-push", action="store_true",
                      help="do not push the pipeline, install the entries (tables empty)")
    mode.add_argument("--attach", action="store_true",
                      help="attach to a fabric already programmed: no pipeline, no entries")
    r.add_argument("--metrics-port", type=int, default=None, help="serve /metrics here (0: any)")
    r.add_argument("--registry-bind", default="127.0.0.1:50100", help="flow registry address")
    r.add_argument("--agent-tls-dir", type=Path, default=None,
                   help="PKI directory (ca.pem, controller.pem, controller.key: testbed/pki.py's "
                        "layout): the agent protocol over mutual TLS as 'controller'")
    r.add_argument("--secret-file", type=Path,
                   help="without --agent-tls-dir: the fabric secret of the agent protocol's "
                        "HMAC-token fallback (default $ASTRAL_FABRIC_SECRET)")
    p4rt_tls.add_arguments(r)
    r.add_argument("--log", type=Path, default=Path("logs/gor.jsonl"), help="decision log")
    r.add_argument("--period", type=float, default=0.05, help="telemetry period in seconds")
    r.add_argument("--safety", type=float, default=0.75, help="max predicted link utilisation")
    r.add_argument("--top-n", type=int, default=4, help="elephants considered per hot link")
    r.add_argument("--one-in-n", type=int, default=100, help="sampling ratio on alarmed ports")
    r.add_argument("--probe-plan", type=Path, default=None,
                   help="the monitor's probe plan (python -m monitor.probes): GOR never moves "
                        "its probes' 5-tuples")
    r.add_argument("--timeout", type=float, default=30.0, help="per-RPC timeout in seconds")
    return ap


def setup(args: argparse.Namespace) -> int:
    """The ``setup`` command; returns the exit status."""
    try:
        tls = p4rt_tls.from_arguments(args)
    except ValueError as exc:
        print(f"controller setup: {exc}", file=sys.stderr)
        return 2
    try:
        thresholds = thresholds_option(args.thresholds)
    except ValueError as exc:
        print(f"controller setup: {exc}", file=sys.stderr)
        return 2
    for path in (args.fabric, args.p4info, args.config):
        if not path.is_file():
            print(f"controller setup: {path}: no such file", file=sys.stderr)
            return 2
    try:
        fabric = load_fabric(args.fabric)
    except ValueError as exc:                 # topo.spec.SpecError names the field and why
        print(f"controller setup: {exc}", file=sys.stderr)
        return 2
    ecn = EcnConfig(args.ecn_kmin, args.ecn_kmax or None, args.ecn_pmax)
    pfc = PfcConfig(args.pfc_xoff, args.pfc_xon, args.pfc_quanta) if args.pfc_xoff else None
    start = time.monotonic()
    try:
        with FabricProgrammer(fabric, args.p4info, args.config, ecn=ecn, pfc=pfc,
                              thresholds=thresholds,
                              timeout_s=args.timeout, tls=tls) as fp:
            written = fp.setup(push=not args.no_push)
            if args.hash_model is not None:
                args.hash_model.parent.mkdir(parents=True, exist_ok=True)
                args.hash_model.write_text(fp.hash_model().to_json() + "\n")
    except (P4RuntimeClientError, OSError) as exc:
        print(f"controller setup: {exc}", file=sys.stderr)
        return 1
    for name in sorted(written):
        print(f"{name}: {written[name]} updates")
    print(f"controller setup: {len(written)} switches programmed in "
          f"{time.monotonic() - start:.2f} s")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point: ``python -m controller COMMAND ...``."""
    args = _parser().parse_args(argv)
    if args.command == "setup":
        return setup(args)
    if args.command == "status":
        return gor_status.run(args)
    if args.command == "run":
        return run_gor(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
