"""``python -m controller run``: GOR as a long-running service over a live fabric.

Programs (or attaches to) the switches, starts the flow registry the agents call, the
metrics server, one digest reader per switch and the telemetry poller whose every
interval drives :meth:`controller.gor.loop.GorLoop.tick`; runs until SIGINT/SIGTERM.
Before the first tick it reconciles what a previous GOR left in the switches
(:meth:`GorLoop.reconcile`: override and sampling entries adopted or deleted). A
:class:`~controller.gor.recovery.SwitchRecovery` thread reconnects to a switch that stopped
answering and re-programs it when it came back empty (``switch_lost`` / ``switch_back``).

    python -m controller run --fabric build/topology.json --p4info build/fabric.p4info.txtpb \
        --config build/fabric.json --attach --metrics-port 9100
"""
from __future__ import annotations

import ipaddress
import json
import logging
from pathlib import Path
from typing import Any, Mapping, Optional

from controller.gor.log import DecisionLog
from controller.gor.loop import GorLoop, digest_reader, enable_digests
from controller.gor.metrics import GorMetrics
from controller.gor.shared import LoopSettings

log = logging.getLogger("controller.gor.service")


def _secret(path: Optional[Any]) -> bytes:
    import os
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
    from astral_proto.security import CONTROLLER  # noqa: PLC0415
    from astral_proto.tls import MutualTls  # noqa: PLC0415
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
    from controller.gor.decisions import FlowKey  # noqa: PLC0415
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
    """``python -m controller run``: program (or attach to) the fabric, start the registry,
    the metrics server, the telemetry poller driving :meth:`GorLoop.tick`, one digest
    reader per switch; run until SIGINT/SIGTERM. Exit status 0, 1 when a switch cannot be
    reached at start, 2 on bad arguments."""
    import signal
    import sys
    import threading

    from controller.fabric_setup import FabricProgrammer
    from controller.gor.metrics import MetricsServer
    from controller.p4rt import tls as p4rt_tls
    from controller.gor.reactor import Reactor
    from controller.gor.recovery import SwitchRecovery
    from controller.telemetry.poller import TelemetryPoller, connection_reader, fabric_links
    from controller.p4rt import P4RuntimeClientError
    from controller.registry import FlowRegistry, serve_registry
    from topo.model import load_fabric

    for path in (args.fabric, args.p4info, args.config):
        if not path.is_file():
            print(f"controller run: {path}: no such file", file=sys.stderr)
            return 2
    try:
        fabric = load_fabric(args.fabric)
    except ValueError as exc:
        print(f"controller run: {exc}", file=sys.stderr)
        return 2
    try:
        tls = p4rt_tls.from_arguments(args)
        agent_security = _agent_security(args.agent_tls_dir)
        probes = probe_flows_of(args.probe_plan) if getattr(args, "probe_plan", None) else []
    except (ValueError, OSError) as exc:
        print(f"controller run: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    prog = FabricProgrammer(fabric, args.p4info, args.config, timeout_s=args.timeout, tls=tls)
    server = srv = poller = recovery = reactor = None
    threads: list[threading.Thread] = []
    dlog = DecisionLog(args.log)
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
        failed = enable_digests(prog.connections, prog.connections)
        if failed:
            print(f"controller run: digest not enabled on {', '.join(failed)}", file=sys.stderr)
        registry = FlowRegistry.from_fabric(fabric, agent_security or _secret(args.secret_file))
        server, address = serve_registry(registry, args.registry_bind)
        metrics = GorMetrics()
        if args.metrics_port is not None:
            srv = MetricsServer(metrics, port=args.metrics_port)
            srv.start()
            print(f"controller run: metrics on {srv.url}")
        loop = GorLoop(fabric, prog, registry, LoopSettings(period_s=args.period, safety=args.safety,
                       top_n=args.top_n, one_in_n=args.one_in_n), log=dlog, metrics=metrics)
        loop.leave_alone(probes)
        rec = loop.reconcile(0.0)          # a predecessor's overrides and sampling entries
        print(f"controller run: reconciled: {rec.adopted_overrides} override and "
              f"{rec.adopted_sampling} sampling entries adopted, {rec.deleted_overrides} and "
              f"{rec.deleted_sampling} deleted", flush=True)
        readers = {name: connection_reader(prog.connections, name) for name in prog.connections}

        steps = threading.Lock()          # tick (poller thread) and react (digest threads)

        def on_tick(t_s: float, samples: Mapping[Any, Any]) -> None:
            with steps:
                loop.observe_health(poller.health if poller is not None else {}, t_s)
                loop.tick(t_s, samples)

        def on_alarm() -> None:
            # a switch reported an alarm: act now (the polls keep their period)
            with steps:
                loop.react(poller.elapsed_s())

        poller = TelemetryPoller(readers, fabric_links(fabric), period_s=args.period, on_tick=on_tick)
        reactor = Reactor(on_alarm).start()   # the readers never wait for a reaction
        for name, conn in prog.connections.items():
            t = threading.Thread(target=digest_reader, args=(loop, name, prog.connections, stop),
                                 kwargs={"on_alarm": reactor.request, "urgent": loop.wants_now},
                                 name=f"digests-{name}", daemon=True)
            t.start()
            threads.append(t)
        poller.start()
        recovery = SwitchRecovery(prog, poller, loop)    # restarted switches re-programmed
        recovery.start()
        print(f"controller run: {len(prog.connections)} switches, registry on {address}, "
              f"decision log {args.log}; Ctrl-C stops", flush=True)
        stop.wait()
        return 0
    finally:
        stop.set()
        if reactor is not None:
            reactor.stop()
        if recovery is not None:
            recovery.stop()
        if poller is not None:
            poller.stop()
        for t in threads:
            t.join(timeout=2)
        if server is not None:
            server.stop(0)
        if srv is not None:
            srv.stop()
        prog.close()
        dlog.close()


__all__ = ["probe_flows_of", "run_gor"]
