"""Command line of the NIC emulator: ``python -m host.nic send|recv ...`` (run inside a host).

``send`` runs one RDMA WRITE QP per source port towards one destination (reliable: go-back-N
on NAKs and retry timeouts, ``--retry-timeout-ms``/``--retry-count``); ``recv`` answers
every flow arriving at an interface (coalesced ACKs, NAKs on PSN gaps, CNPs). Both need
CAP_NET_RAW (root in a Mininet host), hold UDP ``--hold-port`` (4791) on the NIC's
address for their lifetime so the kernel sends no ICMP port unreachable
(:mod:`host.nic.udphold`), run for ``--duration-s`` (a sender with ``--messages`` stops
earlier, once all are acknowledged or its QPs are in error) or until SIGTERM/SIGINT, and
then print (or write with ``--json``) one JSON report: port counters, PFC pauses per
priority, ``udp_hold``, ``qp_errors`` and one entry per flow (sent, received, CNPs,
pauses, goodput, retransmitted packets, timeouts, NAKs, ``qp_state``). A receiver has a
stall mode, a slow receiver sending PAUSE instead of draining (SIGUSR1 on, SIGUSR2 off:
:mod:`host.nic.stall`; its report's ``stall``).

::

    python -m host.nic recv --iface b1s0-eth0 --duration-s 20 --json runs/x/recv.json
    python -m host.nic send --iface b0s0-eth0 --dst-mac 02:00:00:00:01:01 \\
        --src-ip 10.0.0.1 --dst-ip 10.1.0.1 --sport 49152,49153 --qpn 7 \\
        --line-rate-pps 2000 --line-rate-mbps 100 --duration-s 10

>>> build_parser().parse_args(["recv", "--iface", "eth0"]).cnp_interval_ms
5.0
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import sys
import time
from pathlib import Path
from typing import ContextManager, Optional, Sequence

from host.agent.launch import agent_security, start_agent
from host.agent.mover import QPMover
from host.nic import stall
from host.nic.bond import (MIIMON_S, TX_POLICIES, BondedIO, FlowKey, LinkMonitor, TxAffinity,
                           link_carrier, parse_lag_ports)
from host.nic.dcqcn import DcqcnParams
from host.nic.frames import DSCP_DATA, ROCE_UDP_PORT, FlowSpec
from host.nic.io import TICK_S, FrameIO, NicPort, PacketSocket, link_mtus
from host.nic.metricsfile import MetricsFile
from host.nic.qp import Receiver, SenderQP
from host.nic.rc import RcParams
from host.nic.sigflag import SignalFlag, wait_any
from host.nic.sendsize import MAX_MESSAGE_BYTES, check_fits_link, check_message_bytes, check_mtu
from host.nic.udphold import UdpPortHold, iface_ipv4


def iface_mac(iface: str) -> str:
    """The MAC address of ``iface`` from sysfs."""
    return Path(f"/sys/class/net/{iface}/address").read_text().strip()


def build_parser() -> argparse.ArgumentParser:
    """The ``send`` / ``recv`` argument parser."""
    ap = argparse.ArgumentParser(prog="python -m host.nic", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    helps = {"send": "run QPs that send RoCEv2 messages at a paced rate (DCQCN, PFC, retransmission)",
             "recv": "answer QPs: accept in-order data, ACK/NAK it, send CNPs for CE-marked frames"}
    for name, text in helps.items():
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("--iface", required=True,
                       help="the NIC's interface, or two comma separated: the ports of a "
                            "dual-port NIC, bonded (host.nic.bond)")
        p.add_argument("--tx-policy", choices=TX_POLICIES, default="layer3+4",
                       help="dual-port: which port a QP is bound to (host.nic.bond)")
        p.add_argument("--miimon-ms", type=float, default=MIIMON_S * 1000,
                       help="dual-port: link-monitoring interval (a bond's miimon)")
        p.add_argument("--downdelay-ms", type=float, default=0.0,
                       help="dual-port: carrier off this long before a port is down")
        p.add_argument("--updelay-ms", type=float, default=0.0,
                       help="dual-port: carrier on this long before a port is up again")
        p.add_argument("--duration-s", type=float, default=10.0)
        p.add_argument("--json", type=Path, help="write the report here (default: stdout)")
        p.add_argument("--line-rate-mbps", type=float, default=100.0,
                       help="link rate for PAUSE quanta (512 bit times each)")
        p.add_argument("--cnp-interval-ms", type=float, default=5.0)
        p.add_argument("--metrics-file", type=Path, default=None, metavar="PATH",
                       help="write the NIC's counters here in the Prometheus text format "
                            "every second and at exit (host.nic.metricsfile)")
        p.add_argument("--tick-ms", type=float, default=TICK_S * 1000,
                       help="at most one step (receive, send) per this many ms: the frames "
                            "of a tick are handled and sent as one batch (0, the default: a "
                            "step at every wake-up; 1 halves the CPU per packet at thousands "
                            "of pps per QP, but bunches frames at the story's rates)")
        p.add_argument("--per-frame-io", action="store_true",
                       help="one system call and one QP poll per frame (no recvmmsg/sendmmsg "
                            "batches; for comparison)")
        p.add_argument("--python-loop", action="store_true",
                       help="make and parse every frame in Python (default: the native hot "
                            "loop, host.nic.native, compiled with gcc at first use; without "
                            "gcc the Python path runs and says why once)")
        p.add_argument("--hold-port", type=int, default=ROCE_UDP_PORT,
                       help="UDP port held on the NIC's address(es) so the kernel sends no "
                            "ICMP port unreachable (0: hold none)")
    s = sub.choices["send"]
    s.add_argument("--dst-mac", required=True,
                   help="next hop MAC (the leaf's port MAC); dual-port: one per port, comma "
                        "separated (each port's leaf)")
    s.add_argument("--lag-port", default="",
                   help="dual-port: each QP's port, comma separated, one per --sport, '-' for "
                        "the tx policy's choice (as mlx5dv_modify_qp_lag_port)")
    s.add_argument("--src-mac", help="default: the interface's MAC")
    s.add_argument("--src-ip", required=True)
    s.add_argument("--dst-ip", required=True)
    s.add_argument("--sport", required=True,
                   help="UDP source port(s), comma separated: one QP per port")
    s.add_argument("--qpn", type=int, default=7, help="destination QPN of the first QP")
    s.add_argument("--message-bytes", type=int, default=65536,
                   help=f"bytes per RDMA WRITE message, 1 to {MAX_MESSAGE_BYTES} (2^31)")
    s.add_argument("--mtu", type=int, default=1024,
                   help="payload bytes per packet; a data frame (60 header bytes more) must fit "
                        "the interface's MTU (host.nic.sendsize)")
    s.add_argument("--messages", type=int, default=0, help="per QP; 0 = until the end")
    s.add_argument("--line-rate-pps", type=float, default=5000.0, help="per QP, DCQCN max")
    s.add_argument("--no-dcqcn", action="store_true", help="fixed rate, ignore CNPs")
    s.add_argument("--dscp", type=int, default=DSCP_DATA)
    s.add_argument("--priority", type=int, default=3, help="PFC priority the QPs obey")
    s.add_argument("--retry-timeout-ms", type=float, default=RcParams().retry_timeout_s * 1000,
                   help="an ACK request unanswered this long sends again from the oldest "
                        "unacknowledged packet")
    s.add_argument("--retry-count", type=int, default=RcParams().retry_count,
                   help="retries in a row without progress before the QP goes to error")
    s.add_argument("--window-pkts", type=int, default=0,
                   help="most unacknowledged packets per QP (0: no limit)")
    s.add_argument("--agent-tls-dir", type=Path, default=None,
                   help="run a TCCL agent over these QPs (host.agent.launch) with mutual TLS: "
                        "the PKI directory (ca.pem, HOST.pem, HOST.key)")
    s.add_argument("--agent-host", default="", help="the host's name (its certificate's)")
    s.add_argument("--agent-creds", type=Path, default=None,
                   help="run a TCCL agent with HMAC tokens instead (--insecure runs): the "
                        "host's credentials file")
    s.add_argument("--agent-registry", default="", help="GOR's FlowRegistry address")
    s.add_argument("--agent-bind", default="127.0.0.1:0", help="the agent's listen address")
    s.add_argument("--ready-file", type=Path, default=None,
                   help="write this file once set up (socket open, agent registered), "
                        "before the first packet")
    s.add_argument("--wait-go", action="store_true",
                   help="after set-up, send nothing until SIGUSR1 (the launcher starts "
                        f"every sender at once); no signal within {GO_TIMEOUT_S:g} s: exit 1")
    r = sub.choices["recv"]
    r.add_argument("--ip", action="append", default=[], help="accept only these dst IPs")
    r.add_argument("--no-icrc-check", action="store_true")
    r.add_argument("--start-psn", type=int, default=0,
                   help="PSN every connection starts at (the senders'); -1: the first seen")
    stall.add_arguments(r)    # slow-receiver mode: SIGUSR1 on, SIGUSR2 off (host.nic.stall)
    return ap


def check_sizes(args: argparse.Namespace) -> None:
    """ValueError naming the flag when ``send``'s sizes are out of bounds
    (:mod:`host.nic.sendsize`; the link's MTU is checked once it is open, in
    :func:`make_port`).

    >>> check_sizes(build_parser().parse_args(["send", "--iface", "lo", "--dst-mac", "m",
    ...     "--src-ip", "a", "--dst-ip", "b", "--sport", "1", "--messages", "-1"]))
    Traceback (most recent call last):
    ValueError: --messages -1: negative (0: until the end)
    """
    if args.cmd != "send":
        return
    check_message_bytes(args.message_bytes, "--message-bytes")
    check_mtu(args.mtu, "--mtu")
    for flag, n, zero in (("--messages", args.messages, "until the end"),
                          ("--window-pkts", args.window_pkts, "no limit")):
        if n < 0:
            raise ValueError(f"{flag} {n}: negative (0: {zero})")


def make_port(args: argparse.Namespace, io: object,
              step_lock: Optional[ContextManager[object]] = None) -> NicPort:
    """The :class:`NicPort` described by parsed arguments over ``io`` (``step_lock``: see
    ``NicPort``; the agent's ``QPMover.lock`` with an agent)."""
    cnp_s = args.cnp_interval_ms / 1000
    check_sizes(args)
    if args.cmd == "recv":
        rx = Receiver(cnp_interval_s=cnp_s, verify=not args.no_icrc_check,
                      local_ips=frozenset(socket.inet_aton(ip) for ip in args.ip),
                      start_psn=None if args.start_psn < 0 else args.start_psn)
        return NicPort(io, line_rate_bps=args.line_rate_mbps * 1e6,  # type: ignore[arg-type]
                       receiver=rx, tick_s=args.tick_ms / 1000, batch_io=not args.per_frame_io,
                       native=not args.python_loop)
    port = NicPort(io, line_rate_bps=args.line_rate_mbps * 1e6,  # type: ignore[arg-type]
                   step_lock=step_lock, tick_s=args.tick_ms / 1000,
                   batch_io=not args.per_frame_io, native=not args.python_loop)
    params = DcqcnParams.scaled(args.line_rate_pps, cnp_interval_s=cnp_s)
    rc = RcParams(retry_timeout_s=args.retry_timeout_ms / 1000, retry_count=args.retry_count,
                  window_pkts=args.window_pkts or None)
    for iface, l3_mtu in link_mtus(io):
        check_fits_link(args.mtu, iface, l3_mtu, field="--mtu")
    src_mac = args.src_mac or iface_mac(ifaces(args)[0])
    sports = [int(p) for p in args.sport.split(",")]
    bond = bond_of(io)
    if bond is not None:
        for sport, lag in zip(sports, parse_lag_ports(args.lag_port, len(sports),
                                                      len(bond.links))):
            if lag is not None:
                bond.affinity.bind(FlowKey.of(args.src_ip, args.dst_ip, sport), lag)
    elif args.lag_port:
        raise ValueError("--lag-port: only for a dual-port NIC (two --iface)")
    for i, sport in enumerate(sports):
        flow = FlowSpec(src_mac, args.dst_mac.split(",")[0], args.src_ip, args.dst_ip, sport,
                        args.qpn + i, dscp=args.dscp)
        qp = SenderQP(flow, message_bytes=args.message_bytes, mtu=args.mtu,
                      priority=args.priority, messages=args.messages or None, dcqcn=params,
                      react_to_cnp=not args.no_dcqcn, rc=rc)
        port.add_sender(qp)
    return port


def hold_ips(args: argparse.Namespace) -> list[str]:
    """The NIC's addresses to hold the UDP port on: ``--src-ip`` (send), the ``--ip``
    list or else the interface's IPv4 address (recv).

    >>> hold_ips(build_parser().parse_args(["recv", "--iface", "lo", "--ip", "10.1.0.1"]))
    ['10.1.0.1']
    """
    if args.cmd == "send":
        return [args.src_ip]
    if args.ip:
        return list(args.ip)
    ip = iface_ipv4(ifaces(args)[0])
    return [ip] if ip else []


GO_TIMEOUT_S = 60.0


def ifaces(args: argparse.Namespace) -> list[str]:
    """The NIC's port interfaces (``--iface a,b``: a dual-port NIC).

    >>> ifaces(build_parser().parse_args(["recv", "--iface", "h-eth0,h-eth0p1"]))
    ['h-eth0', 'h-eth0p1']
    """
    return [i for i in args.iface.split(",") if i]


def open_link(args: argparse.Namespace) -> FrameIO:
    """The NIC's link: one :class:`PacketSocket`, or a :class:`~host.nic.bond.BondedIO`
    over one per port (tx policy, link monitor on the ports' carriers, each port's next
    hop MAC from ``--dst-mac``). ValueError for a bad combination."""
    names = ifaces(args)
    if len(names) == 1:
        return PacketSocket(names[0])
    if len(names) != 2:
        raise ValueError(f"--iface: {len(names)} interfaces; a NIC has one or two ports")
    macs: list[Optional[bytes]] = [None, None]
    if args.cmd == "send":
        given = args.dst_mac.split(",")
        if len(given) not in (1, 2):
            raise ValueError("--dst-mac: one MAC, or one per port")
        macs = [bytes.fromhex((given[min(i, len(given) - 1)]).replace(":", "")) for i in range(2)]
    monitor = LinkMonitor([link_carrier(n) for n in names], miimon_s=args.miimon_ms / 1000,
                          downdelay_s=args.downdelay_ms / 1000, updelay_s=args.updelay_ms / 1000)
    links: list[FrameIO] = []
    try:
        for name in names:
            links.append(PacketSocket(name))
    except BaseException:
        for link in links:
            link.close()
        raise
    return BondedIO(links, TxAffinity(args.tx_policy, ports=2), monitor, macs)


def bond_of(io: object) -> Optional[BondedIO]:
    """The :class:`BondedIO` under ``io`` (itself, or inside a stall wrapper), or None."""
    while io is not None and not isinstance(io, BondedIO):
        io = getattr(io, "inner", None)
    return io


def wait_for_go(go: SignalFlag, stop: SignalFlag, timeout_s: float = GO_TIMEOUT_S) -> bool:
    """Wait for the launcher's go (``go``, set by SIGUSR1), at most ``timeout_s``; False
    when it never came or ``stop`` (SIGTERM/SIGINT) was set first. Both flags are set by
    signal handlers that take no lock (:mod:`host.nic.sigflag`: a ``threading.Event`` set
    from the handler could deadlock this very wait, issue 32).

    >>> go, stop = SignalFlag(), SignalFlag()
    >>> go.set(); wait_for_go(go, stop, 1.0)
    True
    >>> stop.set(); wait_for_go(go, stop, 1.0)
    False
    """
    wait_any([go, stop], timeout_s)
    return go.is_set() and not stop.is_set()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        check_sizes(args)
    except ValueError as exc:
        print(f"host.nic {args.cmd}: {exc}", file=sys.stderr)
        return 2
    stop, go = SignalFlag(), SignalFlag()     # set by signal handlers: no lock taken
    signal.signal(signal.SIGTERM, stop.handler)
    signal.signal(signal.SIGINT, stop.handler)
    if args.cmd == "send" and args.wait_go:
        signal.signal(signal.SIGUSR1, go.handler)
    hold = UdpPortHold(hold_ips(args) if args.hold_port else [], args.hold_port)
    try:
        try:
            sock = open_link(args)
        except ValueError as exc:
            print(f"host.nic {args.cmd}: {exc}", file=sys.stderr)
            hold.close()
            return 2
        io: FrameIO = sock
        if args.cmd == "recv":               # stall mode: SIGUSR1/SIGUSR2 (a slow receiver)
            first = sock.links[0] if isinstance(sock, BondedIO) else sock
            io = stall.wrap(args, sock, stall.socket_mac(first.sock))  # type: ignore[attr-defined]
    except BaseException:
        hold.close()
        raise
    agent = metrics = None
    try:
        mover = security = None
        if args.cmd == "send" and (args.agent_creds is not None or args.agent_tls_dir is not None):
            try:
                security = agent_security(tls_dir=args.agent_tls_dir, host=args.agent_host,
                                          creds=args.agent_creds)
            except (OSError, ValueError) as exc:
                print(f"host.nic send: agent credentials: {exc}", file=sys.stderr)
                return 2
            mover = QPMover(bond=bond_of(io))     # a dual-port NIC: orders may move QPs by port
        try:
            port = make_port(args, io, step_lock=mover.lock if mover is not None else None)
        except ValueError as exc:
            print(f"host.nic {args.cmd}: {exc}", file=sys.stderr)
            return 2
        if mover is not None and security is not None:
            agent = start_agent(security, args.agent_registry or None, args.agent_bind,
                                mover, port.senders)
        if args.metrics_file is not None:
            # labelled by the NIC's name, its first port's interface: a dual-port NIC's
            # --iface lists both ports, and the monitor names NICs by port 0 ("nic H-ethR")
            metrics = MetricsFile(args.metrics_file, port, args.iface.split(",")[0]).start()
        if args.cmd == "send" and args.ready_file is not None:
            args.ready_file.write_text(f"{os.getpid()}\n")
        if args.cmd == "send" and args.wait_go and not wait_for_go(go, stop):
            why = ("stopped (SIGTERM/SIGINT) before it came" if stop.is_set()
                   else f"within {GO_TIMEOUT_S:g} s")
            print(f"host.nic send: no go signal (SIGUSR1) {why}", file=sys.stderr)
            return 1
        elapsed = port.run(args.duration_s, stop=stop.is_set, linger_s=0.5)
        report = port.report(time.monotonic())
        if agent is not None:
            report["agent"] = {"address": agent.address, "reports_failed": agent.reports_failed,
                               "sports": {f.flow_id: f.sport for f in agent.flows()}}
    finally:
        if metrics is not None:
            metrics.stop()                         # the last write: the final counts
        if agent is not None:
            agent.stop()
        io.close()
        hold.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    report.update(cmd=args.cmd, iface=args.iface, elapsed_s=elapsed, udp_hold=hold.status,
                  cpu_s=round(usage.ru_utime + usage.ru_stime, 3), tick_ms=args.tick_ms,
                  batch_io=not args.per_frame_io, native=port.native,
                  native_reason=port.native_reason, python_steps=port.steps,
                  rx_taken_in_c=port.rx_native_accepted + port.rx_burst_taken,
                  rx_batches_in_c=port.rx_batches_in_c, tx_replies_in_c=port.tx_replies_in_c)
    bond = bond_of(io)
    if bond is not None:
        report["bond"] = bond.report()
    if isinstance(io, stall.StallableIO):
        report["stall"] = io.report()
    text = json.dumps(report, indent=1, sort_keys=True)
    if args.json:
        args.json.write_text(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 0
