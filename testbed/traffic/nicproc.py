"""One NIC-emulator process of a testbed run: its options, its command line
(``python -m host.nic send|recv``) and the RoCEv2 sink that keeps the host's kernel quiet.

>>> NicOptions().line_rate_pps
100.0
"""
from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from testbed.traffic.flows import ROCE_DPORT, NicFlow


@dataclass(slots=True)
class NicOptions:
    """How the NIC emulators run: per-QP line rate (DCQCN's maximum, pps), the link rate
    PAUSE quanta are timed against, MTU, RDMA message size, DCQCN on/off, PFC priority.

    ``message_bytes``: a move to a new source port takes effect at a message boundary
    (``SenderQP.change_sport``). A real 400G NIC ends a 1 MiB message within ~20 µs; at
    the testbed's ~60 packets/s a 16 KiB message lasted 267 ms and that wait dominated
    GOR's loop, so the default is 4 KiB (4 packets, ~67 ms at 60 pps)."""

    line_rate_pps: float = 100.0
    line_rate_mbps: float = 100.0
    mtu: int = 1024
    message_bytes: int = 4096
    dcqcn: bool = True
    priority: int = 3
    cnp_interval_ms: float = 5.0
    metrics_dir: Optional[Path] = None
    """Where each NIC process writes its Prometheus metrics file every second
    (``<dir>/nic-<role>-<iface>.prom``, ``host.nic --metrics-file``; the monitor's
    textfile exporter serves the directory); ``None``: no file."""


@dataclass(slots=True)
class NicProcess:
    """One running ``host.nic`` process, its report file and the flows it carries."""

    role: str
    host: str
    iface: str
    proc: "subprocess.Popen[bytes]"
    report_path: Path
    flows: list[NicFlow] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)


def sender_command(flows: Sequence[NicFlow], duration_s: float, report: Path,
                   opts: NicOptions, ready_file: Optional[Path] = None) -> list[str]:
    """``python -m host.nic send`` for flows sharing source and destination NIC (their
    QPNs must be consecutive: one QP per source port). With ``ready_file`` the sender
    writes it once set up and sends nothing until SIGUSR1 (``NicFleet`` starts every
    sender at once).

    >>> f = NicFlow("f0", "a", "10.0.0.1", "a-eth0", "b", "10.1.0.1", "b-eth0", "l", "02:00:00:00:01:00", 50000, 256)
    >>> sender_command([f], 5.0, Path("r.json"), NicOptions())[3:7]
    ['send', '--iface', 'a-eth0', '--dst-mac']

    A dual-port source NIC: both ports, one next hop each, every QP bound to its port.

    >>> from dataclasses import replace
    >>> d = replace(f, src_intfs=("a-eth0", "a-eth0p1"), gateway_macs=("m0", "m1"), nic_port=1)
    >>> cmd = sender_command([d], 5.0, Path("r.json"), NicOptions())
    >>> cmd[4:8], cmd[cmd.index("--lag-port") + 1]
    (['--iface', 'a-eth0,a-eth0p1', '--dst-mac', 'm0,m1'], '1')
    """
    qpns = [f.qpn for f in flows]
    if qpns != list(range(qpns[0], qpns[0] + len(qpns))):
        raise ValueError(f"QPNs of one sender must be consecutive, got {qpns}")
    f0 = flows[0]
    cmd = [sys.executable, "-m", "host.nic", "send", "--iface", f0.send_iface,
           "--dst-mac", f0.send_macs, "--src-ip", f0.src_ip, "--dst-ip", f0.dst_ip,
           "--sport", ",".join(str(f.sport) for f in flows), "--qpn", str(f0.qpn),
           "--line-rate-pps", f"{opts.line_rate_pps:g}",
           "--line-rate-mbps", f"{opts.line_rate_mbps:g}", "--mtu", str(opts.mtu),
           "--message-bytes", str(opts.message_bytes), "--priority", str(opts.priority),
           "--cnp-interval-ms", f"{opts.cnp_interval_ms:g}",
           "--duration-s", f"{duration_s:g}", "--json", str(report)]
    if opts.metrics_dir is not None:
        cmd += ["--metrics-file", str(opts.metrics_dir / f"nic-send-{f0.src_intf}-{f0.dst_ip}.prom")]
    if len(f0.src_intfs) > 1:               # dual-port: each QP on its bound port
        cmd += ["--lag-port", ",".join(str(f.nic_port) for f in flows)]
    if ready_file is not None:              # set up, then wait for the fleet's go
        cmd += ["--ready-file", str(ready_file), "--wait-go"]
    return cmd + ([] if opts.dcqcn else ["--no-dcqcn"])


def receiver_command(iface: str, ips: Sequence[str], duration_s: float, report: Path,
                     opts: NicOptions) -> list[str]:
    """``python -m host.nic recv`` answering the flows to ``ips`` on ``iface``."""
    cmd = [sys.executable, "-m", "host.nic", "recv", "--iface", iface,
           "--line-rate-mbps", f"{opts.line_rate_mbps:g}",
           "--cnp-interval-ms", f"{opts.cnp_interval_ms:g}",
           "--duration-s", f"{duration_s:g}", "--json", str(report)]
    for ip in ips:
        cmd += ["--ip", ip]
    if opts.metrics_dir is not None:
        cmd += ["--metrics-file", str(opts.metrics_dir / f"nic-recv-{iface}.prom")]
    return cmd


CLONE_NEWNET = 0x40000000


def bind_roce_sink(netns_pid: int, ip: str) -> socket.socket:
    """A UDP socket on ``(ip, 4791)`` inside the network namespace of ``netns_pid`` (a
    host shell), never read. The kernel of an emulated host sees every RoCEv2 frame the
    raw-socket NIC sees; without a socket on 4791 it answers ACKs and data with ICMP port
    unreachable, noise on the uplink counters. A real RNIC consumes RoCEv2 before the
    kernel; this socket gets the same effect (a full buffer drops silently). The socket is
    created by a short-lived thread that enters the namespace (``setns``), so this
    process stays where it is.
    """
    out: dict[str, Any] = {}

    def enter_and_bind() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/proc/{netns_pid}/ns/net", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns into the netns of {netns_pid}")
            finally:
                os.close(fd)
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            # shared with the NIC process's own hold (host.nic.udphold), which starts later
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((ip, ROCE_DPORT))
            out["sock"] = sock
        except OSError as exc:
            out["error"] = exc

    t = threading.Thread(target=enter_and_bind, name=f"roce-sink-{ip}")
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["sock"]  # type: ignore[no-any-return]


__all__ = ["CLONE_NEWNET", "NicOptions", "NicProcess", "bind_roce_sink", "receiver_command",
           "sender_command"]
