"""``python -m p4sim switch``: the switch process, a drop-in for ``simple_switch_grpc``.

::

    python -m p4sim switch [PROGRAM.p4 | CONFIG.json | --no-p4] [-I DIR] -i PORT@IFACE ...
        [--device-id N] [--log-console] [--log-level trace|debug|info|warn|error|off]
        [--log-file FILE] [--pcap [DIR]] [--thrift-port N (ignored)] [--queue-depth PKTS]
        [--queue-rate PPS] [--line-rate-gbps G] [--no-pfc] [--pfc-passthrough]
        [--pfc-watchdog DETECTION_MS[:RESTORATION_MS[:drop|forward]]]
        [--ingress-buffer PKTS]
        [--control-socket PATH | --control-port N] [--request-log FILE] [--no-grpc]
        [--p4rt-policy FILE] [--p4rt-max-streams N] [--p4rt-max-streams-per-client N]
        [--p4rt-max-receive-bytes N]
        [-- --grpc-server-addr HOST:PORT --cpu-port N --priority-queues N
            --grpc-server-ssl --grpc-server-cert PEM --grpc-server-key PEM
            --grpc-server-cacert PEM --grpc-server-with-client-auth]

simple_switch_grpc's flags keep their meaning and their place: its target options
(``--grpc-server-addr``, ``--cpu-port``, ``--priority-queues`` and the TLS options
``--grpc-server-ssl``, ``--grpc-server-cert``, ``--grpc-server-key``,
``--grpc-server-cacert``, ``--grpc-server-with-client-auth``, with BMv2's meaning and
messages: :mod:`p4sim.p4runtime.tls`) only after ``--`` —
given before it they are refused, as BMv2 refuses them ("Error while parsing command
line arguments", exit status 1); other BMv2 target options after ``--`` are ignored with
a warning.
``PROGRAM`` is a P4_16 v1model source, or a JSON device config (p4sim's
``{"format": "p4sim-1", ...}`` or ``{"program": PATH, "include_dirs": [...]}``); with
``--no-p4`` the switch drops every frame until a controller pushes a pipeline.

p4sim additions: ``--queue-depth`` / ``--queue-rate`` (every egress queue, as BMv2's
runtime ``set_queue_depth`` / ``set_queue_rate``), ``--line-rate-gbps`` (PFC quanta to
time, default 10), ``--no-pfc`` (ignore PFC frames), ``--pfc-passthrough`` (PFC frames also
reach the P4 parser; by default the MAC consumes them), ``--pfc-watchdog`` (SONiC's pfcwd in
the traffic manager: :class:`p4sim.switchd.pfc.PfcWatchdog`; restoration 2 × detection and
action ``drop`` when not given; off by default), ``--ingress-buffer`` (frames
between the ports and the pipeline, default 1024: BMv2's input buffer, whose capacity
BMv2 fixes in its source), ``--control-socket PATH`` / ``--control-port N`` (the control
API of :mod:`p4sim.switchd.control`: by default a Unix socket only the switch's own user
in its own network namespace may use, ``p4sim-control-<gRPC port>.sock`` in a private
directory; ``--control-port`` serves TCP on 127.0.0.1 instead, to any local process, as
BMv2's Thrift port), ``--request-log`` (every
P4Runtime request, as the tutorials' ``logs/<switch>-p4runtime-requests.txt``),
``--p4rt-policy FILE`` (who may hold which P4Runtime role, by client certificate:
:mod:`p4sim.p4runtime.authz`; needs ``--grpc-server-ssl`` and
``--grpc-server-with-client-auth``; a bad file stops the start with ``FILE:LINE: FIELD:
message``, exit status 1; without it every client TLS lets in may do everything, as on
BMv2), ``--p4rt-max-streams`` / ``--p4rt-max-streams-per-client`` (open StreamChannels
in total and per client identity, default 32 and 8: :mod:`p4sim.p4runtime.streamlimits`),
``--p4rt-max-receive-bytes`` (the largest P4Runtime request, default
:data:`DEFAULT_MAX_RECEIVE_BYTES`, 16 MiB; BMv2's PI takes 256 MB).

Output: ``p4sim switch control: ADDR`` (``unix:/path`` or ``127.0.0.1:PORT``) then, once the gRPC port listens,
``p4sim switch ready: grpc HOST:PORT device N`` on stdout. SIGTERM/SIGINT stop it cleanly
(threads stopped, sockets closed, pcaps flushed). The per-packet trace (parser, tables,
externs, queues, drops) goes to the console (stderr) with ``--log-console`` or to
``--log-file`` (not both: BMv2 refuses the pair), at ``--log-level`` debug or trace; a
``--pcap`` directory must exist, as on BMv2.

Example::

    $ python -m p4sim switch fwd.p4 -i 1@veth1 -i 2@veth3 --pcap pcaps --log-console \\
          -- --grpc-server-addr 127.0.0.1:9559
    p4sim switch control: unix:/tmp/p4sim-0/p4sim-control-9559.sock
    p4sim switch ready: grpc 127.0.0.1:9559 device 0
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from typing import Any, Optional, Sequence

from p4sim.errors import P4Error
from p4sim.native import NativeUnsupported, engine_from_env
from p4sim.p4runtime.authz import AuthzPolicy, PolicyError, load_policy
from p4sim.p4runtime.streamlimits import (DEFAULT_MAX_STREAMS, DEFAULT_MAX_STREAMS_PER_CLIENT,
                                          StreamLimits)
from p4sim.p4runtime.tls import ServerTls, ServerTlsOptions, TlsConfigError
from p4sim.switchd.control import ControlServer, default_socket_path
from p4sim.switchd.device import INGRESS_BUFFER_PKTS, SwitchDevice
from p4sim.switchd.pcap import PortCapture
from p4sim.switchd.pfc import PfcWatchdog
from p4sim.switchd.ports import RawSocketPort

DEFAULT_GRPC_ADDR = "0.0.0.0:9559"
DEFAULT_MAX_RECEIVE_BYTES = 16 * 1024 * 1024
"""The largest P4Runtime request the switch process takes (``--p4rt-max-receive-bytes``):
gRPC refuses a larger one with ``RESOURCE_EXHAUSTED`` on its 5-byte length prefix, before
the message is buffered. Derived from the largest legitimate message: the fabric's
pipeline push (``p4src/fabric.p4``'s BMv2 JSON, 61 KB, and its P4Info: 69,125 bytes in
all) and a Write of ``controller.fabric_setup.WRITE_BATCH`` (500) fabric updates (the
busiest switch's whole plan, 196 updates, is 10,262 bytes); 16 MiB is ~240 times the larger, room for programs far bigger than fabric.p4
(``tests/security/test_threat_model.py`` measures both and pins the margin). PI's 256 MB
(p4sim.p4runtime.server.MAX_RECEIVE_BYTES, the in-process default) let any client with a
certificate make the switch buffer and parse a 100 MB Write: +308 MB peak RSS measured,
against +5 MB when refused on its prefix (sec-audit4)."""
LOG_LEVELS = {"trace": 5, "debug": logging.DEBUG, "info": logging.INFO,
              "warn": logging.WARNING, "warning": logging.WARNING, "error": logging.ERROR,
              "critical": logging.CRITICAL, "off": logging.CRITICAL + 10}
_LEVEL_CHAR = {5: "T", logging.DEBUG: "D", logging.INFO: "I", logging.WARNING: "W",
               logging.ERROR: "E", logging.CRITICAL: "C"}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m p4sim switch",
                                 description="p4sim switch: a simple_switch_grpc drop-in")
    ap.add_argument("program", nargs="?", help="P4 program or JSON device config")
    ap.add_argument("--no-p4", action="store_true", help="start without a program")
    ap.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    ap.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE")
    ap.add_argument("--device-id", type=int, default=0)
    ap.add_argument("--log-console", action="store_true")
    ap.add_argument("--log-level", default="trace", choices=sorted(LOG_LEVELS))
    ap.add_argument("--log-file", default=None)
    ap.add_argument("--pcap", nargs="?", const=".", default=None, metavar="DIR")
    ap.add_argument("--thrift-port", type=int, default=None, help="accepted, ignored")
    ap.add_argument("--nanolog", default=None, help="accepted, ignored")
    ap.add_argument("--queue-depth", type=int, default=64, metavar="PKTS")
    ap.add_argument("--queue-rate", type=float, default=0.0, metavar="PPS")
    ap.add_argument("--line-rate-gbps", type=float, default=10.0)
    ap.add_argument("--no-pfc", action="store_true", help="ignore received PFC frames")
    ap.add_argument("--pfc-passthrough", action="store_true",
                    help="PFC frames also go to the P4 parser (default: the MAC consumes them)")
    ap.add_argument("--pfc-watchdog", default=None, metavar="DETECTION_MS[:RESTORATION_MS[:ACTION]]",
                    help="PFC watchdog (SONiC's pfcwd): a queue paused DETECTION_MS (100-5000) "
                         "with packets waiting is in a storm: PFC ignored on it (forward) and its "
                         "packets dropped (drop, default) until RESTORATION_MS (100-60000, default "
                         "2x detection) pass without a PAUSE frame")
    ap.add_argument("--ingress-buffer", type=int, default=INGRESS_BUFFER_PKTS, metavar="PKTS",
                    help="frames waiting between the ports and the pipeline (default 1024, "
                         "BMv2's input buffer; a full buffer stops the ports reading and the "
                         "kernel drops, counted in rx_dropped)")
    ap.add_argument("--engine", choices=("auto", "native", "python"), default=None,
                    help="auto (default, or $P4SIM_ENGINE): the program's native code and the C data "
                         "plane where they can run, else Python (said once); native: fail if the "
                         "program cannot run natively; python: the reference engine (p4sim/README.md, "
                         "'The native path')")
    ap.add_argument("--control-port", type=int, default=None,
                    help="serve the control API on TCP 127.0.0.1:N (0: any free port), open to "
                         "every local process; default: a Unix socket only the switch's own user "
                         "in its own network namespace may use")
    ap.add_argument("--control-socket", default=None, metavar="PATH",
                    help="the control API's Unix socket (default p4sim-control-<gRPC port>.sock "
                         "in $XDG_RUNTIME_DIR or /tmp/p4sim-<uid>/, both private)")
    ap.add_argument("--request-log", default=None, metavar="FILE")
    ap.add_argument("--no-grpc", action="store_true", help="run without the P4Runtime server")
    ap.add_argument("--p4rt-policy", default=None, metavar="FILE",
                    help="P4Runtime authorization: which client certificate (common name) may hold "
                         "which role (p4sim/p4runtime/authz.py; needs --grpc-server-ssl and "
                         "--grpc-server-with-client-auth after --). Default: none, every client the "
                         "TLS layer accepts may do everything, as on BMv2")
    ap.add_argument("--p4rt-max-streams", type=int, default=DEFAULT_MAX_STREAMS, metavar="N",
                    help=f"open StreamChannels at most, in total (default {DEFAULT_MAX_STREAMS}); "
                         "one more is refused with RESOURCE_EXHAUSTED")
    ap.add_argument("--p4rt-max-streams-per-client", type=int,
                    default=DEFAULT_MAX_STREAMS_PER_CLIENT, metavar="N",
                    help="open StreamChannels at most per client identity (default "
                         f"{DEFAULT_MAX_STREAMS_PER_CLIENT})")
    ap.add_argument("--p4rt-max-receive-bytes", type=int, default=DEFAULT_MAX_RECEIVE_BYTES,
                    metavar="N",
                    help=f"the largest P4Runtime request in bytes (default {DEFAULT_MAX_RECEIVE_BYTES}, "
                         "16 MiB: ~240 times the fabric's pipeline push); a larger one is refused "
                         "RESOURCE_EXHAUSTED before it is buffered. BMv2's PI takes 256 MB")
    ap.add_argument("--p4runtime-extras", action="store_true",
                    help="P4Runtime beyond BMv2's: register reads/writes, ROLLBACK_ON_ERROR and "
                         "DATAPLANE_ATOMIC batches, counter/meter writes without an index, clone-session "
                         "packet_length_bytes, wildcard digest/direct-counter/PRE reads, is_const in reads "
                         "(default: answer as simple_switch_grpc does; p4sim/README.md, P4Runtime conformance)")
    return ap


def _target_parser() -> argparse.ArgumentParser:
    """simple_switch_grpc's target options (after ``--``)."""
    tp = argparse.ArgumentParser(prog="python -m p4sim switch ... --", add_help=False)
    tp.add_argument("--grpc-server-addr", default=None, metavar="HOST:PORT",
                    help="P4Runtime server address (default 0.0.0.0:9559)")
    tp.add_argument("--cpu-port", type=int, default=None,
                    help="port whose packets become PacketIn messages (none by default)")
    tp.add_argument("--priority-queues", type=int, default=1,
                    help="egress queues per port, one per priority (default 1)")
    tp.add_argument("--grpc-server-ssl", action="store_true",
                    help="Enable SSL/TLS for gRPC server")
    tp.add_argument("--grpc-server-cacert", default=None, metavar="PEM",
                    help="Path to pem file holding CA certificate to verify peer against")
    tp.add_argument("--grpc-server-cert", default=None, metavar="PEM",
                    help="Path to pem file holding server certificate")
    tp.add_argument("--grpc-server-key", default=None, metavar="PEM",
                    help="Path to pem file holding server key")
    tp.add_argument("--grpc-server-with-client-auth", action="store_true",
                    help="Require client to have a valid certificate for mutual authentication")
    return tp


#: simple_switch_grpc's target options: BMv2 refuses them before ``--``, and so does p4sim
TARGET_OPTIONS = ("--grpc-server-addr", "--cpu-port", "--priority-queues", "--drop-port",
                  "--dp-grpc-server-addr", "--grpc-server-ssl", "--grpc-server-cacert",
                  "--grpc-server-cert", "--grpc-server-key", "--grpc-server-with-client-auth")


class CommandLineError(SystemExit):
    """A command line BMv2 would refuse: BMv2's message, the fix, exit status 1."""

    def __init__(self, message: str) -> None:
        super().__init__(1)
        self.message = message


def _watchdog_arg(spec: Optional[str]) -> Optional[PfcWatchdog]:
    """``--pfc-watchdog DETECTION_MS[:RESTORATION_MS[:ACTION]]`` → settings (None: off).

    >>> _watchdog_arg("200:200:forward")
    PfcWatchdog(detection_us=200000.0, restoration_us=200000.0, action='forward')
    """
    if spec is None:
        return None
    parts = spec.split(":")
    try:
        if not 1 <= len(parts) <= 3:
            raise ValueError("give DETECTION_MS[:RESTORATION_MS[:ACTION]]")
        detection = float(parts[0])
        restoration = float(parts[1]) if len(parts) > 1 and parts[1] else None
        return PfcWatchdog.from_ms(detection, restoration, *parts[2:3])
    except ValueError as exc:
        raise SystemExit(f"python -m p4sim switch: --pfc-watchdog {spec}: {exc}") from None


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Both halves of the command line (before and after ``--``)."""
    argv = list(argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    early = [a for a in argv if a.split("=", 1)[0] in TARGET_OPTIONS]
    if early:
        raise CommandLineError(
            "Error while parsing command line arguments: "
            f"{early[0].split('=', 1)[0]} is a target option of simple_switch_grpc; "
            "separate the general options from the target options with '--', e.g. "
            "python -m p4sim switch --no-p4 -i 1@veth0 -- --grpc-server-addr 0.0.0.0:9559 "
            "--cpu-port 255 --priority-queues 8 (BMv2 refuses it there too)")
    args = _parser().parse_args(argv)
    if args.log_console and args.log_file:
        raise CommandLineError("Error: --log-console and --log-file are exclusive "
                               "(as on BMv2)")
    if args.p4rt_max_streams < 1 or args.p4rt_max_streams_per_client < 1:
        raise SystemExit("python -m p4sim switch: --p4rt-max-streams and "
                         "--p4rt-max-streams-per-client must be at least 1")
    if args.p4rt_max_receive_bytes < 1:
        raise SystemExit(f"python -m p4sim switch: --p4rt-max-receive-bytes {args.p4rt_max_receive_bytes}: "
                         "give a positive number of bytes")
    if args.control_port is not None and args.control_socket is not None:
        raise SystemExit("python -m p4sim switch: give --control-socket or --control-port, not both")
    if args.ingress_buffer < 1:
        raise SystemExit(f"python -m p4sim switch: --ingress-buffer {args.ingress_buffer}: "
                         "give a positive number of frames")
    args.pfc_watchdog = _watchdog_arg(args.pfc_watchdog)
    if args.pcap is not None and not os.path.isdir(args.pcap):
        raise CommandLineError(f"Directory '{args.pcap}' specified with '--pcap' does not "
                               "exist. (as on BMv2: create it first)")
    targ, unknown = _target_parser().parse_known_args(extra)
    if unknown:
        logging.getLogger("p4sim.switchd").warning("ignoring target options %s", unknown)
    if args.engine is None:
        try:
            args.engine = engine_from_env()
        except ValueError as exc:
            raise SystemExit(f"python -m p4sim switch: {exc}") from None
    args.grpc_server_addr = targ.grpc_server_addr or DEFAULT_GRPC_ADDR
    args.cpu_port = targ.cpu_port
    args.priority_queues = targ.priority_queues
    args.tls_options = ServerTlsOptions(ssl=targ.grpc_server_ssl, cacert=targ.grpc_server_cacert,
                                        cert=targ.grpc_server_cert, key=targ.grpc_server_key,
                                        with_client_auth=targ.grpc_server_with_client_auth)
    if not args.no_p4 and args.program is None:
        raise SystemExit("python -m p4sim switch: give a PROGRAM or --no-p4")
    args.ports = []
    for spec in args.interface:
        num, sep, iface = spec.partition("@")
        if not sep or not num.isdigit() or not iface:
            raise SystemExit(f"-i {spec}: expected PORT@IFACE")
        args.ports.append((int(num), iface))
    return args


class _BmLikeFormatter(logging.Formatter):
    """``[HH:MM:SS.mmm] [p4sim] [D] [thread N] message`` (BMv2's console layout)."""

    def format(self, record: logging.LogRecord) -> str:
        t = self.formatTime(record, "%H:%M:%S")
        ch = _LEVEL_CHAR.get(record.levelno, "D")
        text = f"[{t}.{int(record.msecs):03d}] [p4sim] [{ch}] [thread {record.thread}] " \
               f"{record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def setup_logging(console: bool, log_file: Optional[str], level: str) -> Optional[Any]:
    """Configure the ``p4sim`` loggers; returns the per-packet trace function or None."""
    root = logging.getLogger("p4sim")
    root.handlers.clear()
    root.propagate = False
    lvl = LOG_LEVELS[level]
    handlers: list[logging.Handler] = []
    if console:
        handlers.append(logging.StreamHandler(sys.stderr))
    if log_file:
        os.makedirs(os.path.dirname(os.path.abspath(log_file)), exist_ok=True)
        handlers.append(logging.FileHandler(log_file, mode="w", encoding="utf-8"))
    if not handlers:
        h = logging.StreamHandler(sys.stderr)
        h.setLevel(logging.WARNING)
        handlers.append(h)
        lvl = max(lvl, logging.WARNING)
    for h in handlers:
        h.setFormatter(_BmLikeFormatter())
        root.addHandler(h)
    root.setLevel(lvl)
    trace_log = logging.getLogger("p4sim.trace")
    if lvl > logging.DEBUG:
        return None
    return lambda line: trace_log.debug(line)


def load_any(path: str, include: list[str], trace: bool) -> Any:
    """A compiled program from a .p4 file or a JSON device config."""
    from p4sim.engine.program import load_program, load_program_text

    if path.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        conf = json.loads(text)
        if isinstance(conf, dict) and conf.get("format"):
            from p4sim.device import DeviceConfig

            dc = DeviceConfig.from_json(text)
            return load_program_text(dc.source, dc.name)
        if isinstance(conf, dict) and isinstance(conf.get("program"), str):
            return load_program(conf["program"], list(conf.get("include_dirs", [])) + include,
                                trace=trace)
        raise ValueError(f"{path}: not a p4sim device config (BMv2 JSON is not supported; "
                         "give the P4 source)")
    return load_program(path, include, trace=trace)


def _control_server(args: argparse.Namespace, device: Any, log: logging.Logger) -> ControlServer:
    """The control API's listener: TCP with ``--control-port``, else the Unix socket
    (``--control-socket`` or the default path)."""
    if args.control_port is not None:
        return ControlServer(device, args.control_port)
    if args.control_socket is not None:
        return ControlServer(device, socket_path=args.control_socket)
    grpc_port = int(args.grpc_server_addr.rpartition(":")[2] or 0)
    path = default_socket_path(grpc_port)
    try:
        return ControlServer(device, socket_path=path)
    except OSError as exc:
        log.warning("control socket %s busy (%s); using one named after this process", path, exc)
        return ControlServer(device, socket_path=default_socket_path(0))


def main(argv: Sequence[str]) -> int:
    """Run the switch until SIGTERM/SIGINT; returns the exit code (2: bad start; 1: a
    command line BMv2 would refuse, with BMv2's message, or TLS options it cannot serve
    with: :mod:`p4sim.p4runtime.tls`)."""
    try:
        args = parse_args(argv)
    except CommandLineError as err:
        print(err.message, file=sys.stderr)
        return 1
    for warning in args.tls_options.warnings():
        print(warning, file=sys.stderr)
    try:
        tls: Optional[ServerTls] = args.tls_options.load()
    except TlsConfigError as err:
        print(err, file=sys.stderr)
        return 1
    policy: Optional[AuthzPolicy] = None
    if args.p4rt_policy is not None:
        if tls is None or not tls.require_client_auth:
            print(f"--p4rt-policy {args.p4rt_policy}: a policy names clients by their certificates: "
                  "give --grpc-server-ssl, --grpc-server-cacert and --grpc-server-with-client-auth "
                  "after --", file=sys.stderr)
            return 1
        try:
            policy = load_policy(args.p4rt_policy)
        except PolicyError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
    trace = setup_logging(args.log_console, args.log_file, args.log_level)
    log = logging.getLogger("p4sim.switchd")
    program = None
    if not args.no_p4:
        try:
            program = load_any(args.program, args.include, trace is not None)
        except P4Error as err:
            print(err.render(), file=sys.stderr)
            return 2
        except (OSError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    device = SwitchDevice(device_id=args.device_id, cpu_port=args.cpu_port,
                          priority_queues=args.priority_queues,
                          queue_depth_pkts=args.queue_depth, queue_rate_pps=args.queue_rate,
                          line_rate_gbps=args.line_rate_gbps, pfc_enabled=not args.no_pfc,
                          pfc_passthrough=args.pfc_passthrough, trace=trace,
                          ingress_buffer_pkts=args.ingress_buffer, engine=args.engine)
    device.tm.set_pfc_watchdog(args.pfc_watchdog)
    try:
        device.set_program(program)
    except NativeUnsupported as err:        # --engine native and a program that cannot
        print(f"error: the program cannot run on the native path: {err}", file=sys.stderr)
        return 2
    for num, iface in args.ports:
        port = RawSocketPort(num, iface)
        try:
            port.open()
        except OSError as exc:
            log.warning("port %d (%s): %s; will retry", num, iface, exc)
        if args.pcap is not None:
            port.capture = PortCapture(args.pcap, iface)
        device.add_port(port)
        log.info("Adding interface %s as port %d", iface, num)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # set from a thread, not from the handler: Event.set takes the Event's lock, which this
        # (main) thread may hold inside its own stop.wait when the signal lands: a deadlock
        # (host/nic/sigflag.py)
        signal.signal(sig, lambda *_: threading.Thread(target=stop.set, daemon=True).start())
    device.start()
    control = grpc = None
    try:
        control = _control_server(args, device, log)
        control.start()
        print(f"p4sim switch control: {control.address}", flush=True)
        grpc_desc = "off"
        if not args.no_grpc:
            from p4sim.p4runtime.server import P4RuntimeServer

            limits = StreamLimits(args.p4rt_max_streams, args.p4rt_max_streams_per_client)
            grpc = P4RuntimeServer(device, args.grpc_server_addr, args.request_log,
                                   extras=args.p4runtime_extras, tls=tls, policy=policy,
                                   stream_limits=limits, freeze_gc=True,
                                   max_receive_bytes=args.p4rt_max_receive_bytes)
            bound = grpc.start()
            host = args.grpc_server_addr.rpartition(":")[0]
            grpc_desc = f"{host}:{bound}"
            log.info("P4Runtime server on %s: %s; %s; at most %d streams, %d per client", grpc_desc,
                     tls.describe() if tls is not None else "plaintext",
                     f"policy {args.p4rt_policy}: identities {', '.join(policy.identities)}"
                     if policy is not None else "no policy (every authenticated client may do everything)",
                     limits.max_streams, limits.per_client)
        print(f"p4sim switch ready: grpc {grpc_desc} device {args.device_id}", flush=True)
        while not stop.wait(0.5):
            pass
        log.info("stopping")
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if grpc is not None:
            grpc.stop()
        if control is not None:
            control.stop()
        device.stop()
        logging.shutdown()
    return 0
