"""``python -m controller run``: GOR as a long-running service over a live fabric.

Programs (or attaches to) the switches, then runs GOR through
:class:`~controller.gor.runtime.GorRuntime` — the flow registry the agents call, the
metrics server, one digest reader per switch, the telemetry poller whose every interval
drives :meth:`controller.gor.loop.GorLoop.tick` and a
:class:`~controller.gor.recovery.SwitchRecovery` that reconnects to a switch that stopped
answering and re-programs it when it came back empty — until SIGINT/SIGTERM. Before the
first tick the loop reconciles what a previous GOR left in the switches
(:meth:`GorLoop.reconcile`: override and sampling entries adopted or deleted).

    python -m controller run --fabric build/topology.json --p4info build/fabric.p4info.txtpb \
        --config build/fabric.json --attach --metrics-port 9100
"""
from __future__ import annotations

import ipaddress
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Optional

from astral_proto.security import CONTROLLER
from astral_proto.tls import MutualTls
from controller.fabric_setup import FabricProgrammer
from controller.gor.decisions import FlowKey
from controller.gor.runtime import GorOptions, GorRuntime
from controller.gor.shared import LoopSettings
from controller.p4rt import P4RuntimeClientError
from controller.p4rt import tls as p4rt_tls
from topo.model import load_fabric

log = logging.getLogger("controller.gor.service")


def _secret(path: Optional[Any]) -> bytes:
    """The token secret from ``--secret-file`` or ``$ASTRAL_FABRIC_SECRET`` (else a random
    one, said)."""
    if path is not None:
        return path.read_bytes().strip()
    env = os.environ.get("ASTRAL_FABRIC_SECRET", "")
    if env:
        return env.encode()
    log.warning("no fabric secret (--secret-file or $ASTRAL_FABRIC_SECRET): a random one is "
                "used, no agent will authenticate")
    return os.urandom(32).hex().encode()


def _agent_security(tls_dir: Optional[Any]) -> Optional[Any]:
    """GOR's mutual TLS on the agent protocol from a PKI directory (None: the HMAC-token
    fallback); ValueError/OSError naming the file that is wrong."""
    if tls_dir is None:
        return None
    return MutualTls.from_dir(tls_dir, CONTROLLER)


def probe_flows_of(path: Path) -> list[Any]:
    """The probes' 5-tuples of a probe plan file (``astral-probe-plan``, written by
    ``python -m monitor.probes``; read here by its fields: the controller does not import
    the monitor); ``ValueError`` naming the file and the field that is wrong.

    >>> import json, tempfile
    >>> f = Path(tempfile.mkdtemp()) / "plan.json"
    >>> _ = f.write_text(json.dumps({"dport": 4791, "paths": [
    ...     {"src_ip": "10.0.0.1", "dst_ip": "10.0.1.2", "sport": 49152}]}))
    >>> [str(k) for k in probe_flows_of(f)]
    ['10.0.0.1:49152->10.0.1.2:4791/17']
    >>> _ = f.write_text(json.dumps({"dport": 4791, "paths": [{"src_ip": "10.0.0.1"}]}))
    >>> probe_flows_of(f)
    Traceback (most recent call last):
    ...
    ValueError: ...plan.json: $.paths[0].dst_ip: missing
    """
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("paths"), list):
        raise ValueError(f"{path}: $.paths: missing or not a list")
    dport = data.get("dport", 4791)
    out = []
    for i, p in enumerate(data["paths"]):
        where = f"{path}: $.paths[{i}]"
        if not isinstance(p, dict):
            raise ValueError(f"{where}: not an object")
        for key in ("src_ip", "dst_ip", "sport"):
            if key not in p:
                raise ValueError(f"{where}.{key}: missing")
        try:
            src, dst = str(ipaddress.IPv4Address(p["src_ip"])), str(ipaddress.IPv4Address(p["dst_ip"]))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if not isinstance(p["sport"], int) or not 0 <= p["sport"] < 65536:
            raise ValueError(f"{where}.sport: {p['sport']!r} is not a UDP port")
        out.append(FlowKey(src, dst, 17, p["sport"], int(dport)))
    return out


def run_gor(args: Any) -> int:
    """``python -m controller run``: program (or attach to) the fabric, then run GOR
    (:class:`~controller.gor.runtime.GorRuntime`: registry, metrics endpoint, loop, poller,
    digest readers, reactor, recovery) until SIGINT/SIGTERM. Exit status 0, 1 when a switch
    cannot be reached at start, 2 on bad arguments."""
    for path in (args.fabric, args.p4info, args.config):
        if not path.is_file():
            print(f"controller run: {path}: no such file", file=sys.stderr)
            return 2
    try:
        fabric = load_fabric(args.fabric)
        tls = p4rt_tls.from_arguments(args)
        agent_security = _agent_security(args.agent_tls_dir)
        probes = probe_flows_of(args.probe_plan) if getattr(args, "probe_plan", None) else []
    except (ValueError, OSError) as exc:       # topo.spec.SpecError names the field and why
        print(f"controller run: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        # set from a thread, not from the handler: Event.set takes the Event's lock, which this
        # (main) thread may hold inside its own stop.wait when the signal lands: a deadlock
        # (host/nic/sigflag.py)
        signal.signal(sig, lambda *_: threading.Thread(target=stop.set, daemon=True).start())
    prog = FabricProgrammer(fabric, args.p4info, args.config, timeout_s=args.timeout, tls=tls)
    try:
        try:
            if args.attach:
                prog.connect_all()
                for name, conn in prog.connections.items():
                    conn.fetch_pipeline()
                    prog.cookies[name] = conn.pipeline_cookie()[1]   # what it runs now
            else:
                prog.setup(push=not args.no_push)
        except (P4RuntimeClientError, OSError) as exc:
            print(f"controller run: {exc}", file=sys.stderr)
            return 1
        options = GorOptions(LoopSettings(period_s=args.period, safety=args.safety, top_n=args.top_n,
                                          one_in_n=args.one_in_n),
                             registry_bind=args.registry_bind, metrics_port=args.metrics_port,
                             security=agent_security or _secret(args.secret_file), decision_log=args.log)
        runtime = GorRuntime(fabric, prog, options,
                             say=lambda msg: print(f"controller run: {msg}", file=sys.stderr))
        runtime.leave_alone(probes)
        try:
            rec = runtime.start()                 # a predecessor's entries reconciled first
        except (OSError, RuntimeError) as exc:    # e.g. the registry's address is taken
            print(f"controller run: {exc}", file=sys.stderr)
            return 1
        try:
            if runtime.metrics_server is not None:
                print(f"controller run: metrics on {runtime.metrics_server.url}")
            print(f"controller run: reconciled: {rec.adopted_overrides} override and "
                  f"{rec.adopted_sampling} sampling entries adopted, {rec.deleted_overrides} and "
                  f"{rec.deleted_sampling} deleted", flush=True)
            print(f"controller run: {len(prog.connections)} switches, registry on "
                  f"{runtime.registry_address}, decision log {args.log}; Ctrl-C stops", flush=True)
            # bounded waits: a SIGTERM that lands on one of the gRPC threads interrupts no
            # wait of this thread, and its Python handler runs only once a wait returns
            # (CPython issue 85300; host/nic/sigflag.py)
            while not stop.wait(0.5):
                pass
            return 0
        finally:
            runtime.stop()
    finally:
        prog.close()


__all__ = ["probe_flows_of", "run_gor"]
