"""A tiny UDP elephant generator for the testbed's hosts (RoCEv2-like, ECN-capable).

One process per elephant, started inside a host's network namespace (``mnexec -a
<host shell pid>``): a plain UDP socket bound to ``(src_ip, sport)`` sends
``payload_bytes`` datagrams to ``(dst_ip, 4791)`` at ``rate_pps`` for ``duration_s``,
with ``IP_TOS = DSCP 26 << 2 | ECT(0)`` (RoCE data class, ECN-capable, so the switches can
mark it CE). The payload starts with a 12-byte BTH-shaped header so the fabric parser
sees RoCEv2. On exit (end of duration or SIGTERM) it prints one JSON line:
``{"sent": N, "errors": E, "elapsed_s": T}``.

::

    python -m topo.traffic --src 10.0.0.1 --dst 10.1.0.1 --sport 49152 --rate-pps 100 --duration-s 10

:class:`Elephant` describes one flow and :func:`start_elephant` / :func:`stop_elephant`
run it from the testbed (recorded by PID in ``TestbedState`` as kind ``"traffic"``).

>>> Elephant("b0s0", "10.0.0.1", "b1s0", "10.1.0.1", 49152).command(100, 2.0)[-8:]
['--sport', '49152', '--dport', '4791', '--rate-pps', '100', '--duration-s', '2.0']
"""
from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Optional, Sequence

ROCE_UDP_PORT = 4791
ROCE_DSCP = 26
ECT0 = 2
TOS = (ROCE_DSCP << 2) | ECT0
DEFAULT_PAYLOAD_BYTES = 512
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, slots=True)
class Elephant:
    """One UDP elephant: ``Elephant("b0s0", "10.0.0.1", "b1s0", "10.1.0.1", 49152)``.

    >>> Elephant("b0s0", "10.0.0.1", "b1s0", "10.1.0.1", 5000).label
    'b0s0:5000->b1s0'
    """

    src_host: str
    src_ip: str
    dst_host: str
    dst_ip: str
    sport: int
    dport: int = ROCE_UDP_PORT

    @property
    def label(self) -> str:
        """Short name used in narratives and reports."""
        return f"{self.src_host}:{self.sport}->{self.dst_host}"

    def command(self, rate_pps: float, duration_s: float,
                payload_bytes: int = DEFAULT_PAYLOAD_BYTES) -> list[str]:
        """The generator's command line (run from the repository root)."""
        return [sys.executable, "-m", "topo.traffic", "--payload-bytes", str(payload_bytes),
                "--src", self.src_ip, "--dst", self.dst_ip, "--sport", str(self.sport),
                "--dport", str(self.dport), "--rate-pps", f"{rate_pps:g}",
                "--duration-s", f"{duration_s}"]


def start_elephant(flow: Elephant, host_shell_pid: int, rate_pps: float, duration_s: float,
                   payload_bytes: int = DEFAULT_PAYLOAD_BYTES) -> subprocess.Popen[bytes]:
    """Start ``flow`` inside the namespace of the host whose shell is ``host_shell_pid``."""
    return subprocess.Popen(["mnexec", "-a", str(host_shell_pid),
                             *flow.command(rate_pps, duration_s, payload_bytes)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)


def stop_elephant(proc: subprocess.Popen[bytes], timeout_s: float = 5.0) -> dict[str, float]:
    """SIGTERM one generator (by its PID), wait, and return its final JSON report
    (``{}`` when it printed none)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=timeout_s)
    for line in reversed((out or b"").decode(errors="replace").splitlines()):
        if line.startswith("{"):
            try:
                return dict(json.loads(line))
            except ValueError:
                break
    return {}


def bth_payload(size: int, dst_qp: int = 1) -> bytes:
    """A payload of ``size`` bytes starting with a BTH-shaped header (opcode 0x0a
    RDMA WRITE only, P_Key 0xffff, destination QP ``dst_qp``).

    >>> len(bth_payload(64)), bth_payload(64)[0]
    (64, 10)
    """
    bth = bytes([0x0A, 0x00, 0xFF, 0xFF, 0x00]) + dst_qp.to_bytes(3, "big") + bytes(4)
    return (bth + bytes(max(0, size - len(bth))))[:max(size, len(bth))]


class _Stop(Exception):
    pass


def _on_term(signum: int, frame: Optional[FrameType]) -> None:  # noqa: ARG001
    raise _Stop()


def send_loop(src: str, dst: str, sport: int, dport: int, rate_pps: float,
              duration_s: float, payload_bytes: int) -> dict[str, float]:
    """Send paced datagrams until ``duration_s`` passes or SIGTERM; the counts."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, TOS)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((src, sport))
    payload = bth_payload(payload_bytes)
    sent = errors = 0
    interval = 1.0 / rate_pps if rate_pps > 0 else 0.0
    t0 = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            if now - t0 >= duration_s:
                break
            due = t0 + sent * interval
            if due > now:
                time.sleep(min(due - now, 0.05))
                continue
            try:
                sock.sendto(payload, (dst, dport))
                sent += 1
            except OSError:
                errors += 1
                sent += 1  # keep the pace; the error is counted
    except _Stop:
        pass
    finally:
        sock.close()
    return {"sent": sent - errors, "errors": errors, "elapsed_s": round(time.monotonic() - t0, 3)}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m topo.traffic``."""
    ap = argparse.ArgumentParser(prog="python -m topo.traffic", description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--sport", type=int, required=True)
    ap.add_argument("--dport", type=int, default=ROCE_UDP_PORT)
    ap.add_argument("--rate-pps", type=float, default=100.0)
    ap.add_argument("--duration-s", type=float, default=10.0)
    ap.add_argument("--payload-bytes", type=int, default=DEFAULT_PAYLOAD_BYTES)
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_term)
    result = send_loop(args.src, args.dst, args.sport, args.dport, args.rate_pps,
                       args.duration_s, args.payload_bytes)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
