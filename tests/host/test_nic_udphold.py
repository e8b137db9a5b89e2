"""The NIC emulator holds its UDP port so the kernel sends no ICMP port unreachable.

In-process: :class:`UdpPortHold` binds, shares, discards and releases. As a process:
``python -m host.nic recv`` holds the port for its whole life and releases it on exit
(root only, for the raw socket; a free port on 127.0.0.1 instead of 4791, so a testbed
elsewhere on the machine is not disturbed).
"""
from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator, Optional

import pytest

from host.nic.cli import build_parser, hold_ips
from host.nic.udphold import HELD, IN_USE, UdpPortHold
from testbed.traffic.probe import poll_until

REPO = Path(__file__).resolve().parents[2]
LOCAL = "127.0.0.1"


@pytest.fixture
def free_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((LOCAL, 0))
        port = s.getsockname()[1]
    yield port


def refused(port: int, timeout_s: float = 2.0) -> bool:
    """True when a datagram to ``port`` draws an ICMP port unreachable (ECONNREFUSED on
    the connected socket), False when the kernel delivers it quietly."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as c:
        c.connect((LOCAL, port))
        c.settimeout(timeout_s)
        try:
            c.send(b"roce?")
            c.send(b"roce?")           # the first one's ICMP error surfaces here or below
            c.recv(64)
        except ConnectionRefusedError:
            return True
        except socket.timeout:
            return False
        return False


def can_bind(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind((LOCAL, port))
        except OSError as exc:
            assert exc.errno == errno.EADDRINUSE
            return False
        return True


def test_hold_binds_discards_shares_and_releases(free_port: int) -> None:
    assert refused(free_port)                       # nobody there: the kernel answers ICMP
    hold = UdpPortHold([LOCAL], free_port)
    try:
        assert hold.status == {f"{LOCAL}:{free_port}": HELD}
        assert hold.bound_ports == [(LOCAL, free_port)]
        assert not can_bind(free_port)
        assert not refused(free_port, timeout_s=0.2)   # held: no ICMP
        hold.sockets[0].setblocking(False)
        with pytest.raises(BlockingIOError):            # discarded by the BPF filter
            hold.sockets[0].recv(64)
        with UdpPortHold([LOCAL, LOCAL], free_port) as second:   # sender + receiver of a NIC
            assert list(second.status.values()) == [HELD]
    finally:
        hold.close()
    assert hold.sockets == [] and can_bind(free_port) and refused(free_port)


def test_port_held_by_a_plain_socket_is_reported_in_use(free_port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sink:
        sink.bind((LOCAL, free_port))
        with UdpPortHold([LOCAL, "192.0.2.1"], free_port) as hold:
            assert hold.status[f"{LOCAL}:{free_port}"] == IN_USE
            assert hold.status[f"192.0.2.1:{free_port}"].startswith("error: ")
            assert hold.sockets == []


def test_addresses_held_by_send_and_recv() -> None:
    ap = build_parser()
    send = ap.parse_args(["send", "--iface", "x", "--dst-mac", "02:00:00:00:00:02",
                          "--src-ip", "10.0.0.1", "--dst-ip", "10.1.0.1", "--sport", "1"])
    assert hold_ips(send) == ["10.0.0.1"] and send.hold_port == 4791
    assert hold_ips(ap.parse_args(["recv", "--iface", "lo"])) == [LOCAL]
    assert hold_ips(ap.parse_args(["recv", "--iface", "no-such-if0"])) == []
    assert ap.parse_args(["recv", "--iface", "lo", "--hold-port", "0"]).hold_port == 0


def udp_inode(pid: int, port: int) -> Optional[str]:
    """The inode of the UDP socket bound to ``port`` in ``pid``'s namespace, if any."""
    try:
        lines = Path(f"/proc/{pid}/net/udp").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port:
            return fields[9]
    return None


def holds(pid: int, port: int) -> bool:
    """True when process ``pid`` itself has the socket bound to UDP ``port`` open."""
    inode = udp_inode(pid, port)
    if inode is None:
        return False
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) == f"socket:[{inode}]" for fd in fd_dir.iterdir())
    except OSError:
        return False


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="the NIC process needs CAP_NET_RAW (root)")
def test_recv_process_holds_the_port_for_its_lifetime(free_port: int, tmp_path: Path) -> None:
    report = tmp_path / "recv.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "host.nic", "recv", "--iface", "lo", "--ip", LOCAL,
         "--hold-port", str(free_port), "--duration-s", "120", "--json", str(report)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert poll_until(lambda: holds(proc.pid, free_port) or proc.poll() is not None, 30.0)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
        assert not can_bind(free_port) and not refused(free_port, timeout_s=0.2)
        assert holds(proc.pid, free_port)              # still held after traffic to it
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert json.loads(report.read_text())["udp_hold"] == {f"{LOCAL}:{free_port}": HELD}
    assert can_bind(free_port) and refused(free_port)   # released with the process
