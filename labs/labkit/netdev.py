"""veth pairs and raw sockets for a lab switch: the switch gets ``<tag>-eth<N>``, the lab
(the "hosts") sends and receives on the peer ``<tag>-h<N>`` through AF_PACKET sockets.

Every interface created is recorded in a file and deleted on exit by its name; nothing
else is ever touched. Needs root.

Example::

    >>> with VethSet("lb4242", [1, 2], Path("build/labs/x/veths.txt")) as v:   # doctest: +SKIP
    ...     v.send(1, frame); v.receive(2, timeout_s=1.0)
"""
from __future__ import annotations

import errno
import select
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Optional, Sequence

from labs.labkit.build import LabError

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SNAPLEN = 65535


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=check)


# Bound on the wait for frames the switch still owes in send_paced (a quiet gap of
# timeout_s ends the wait for frames nobody expects).
EXPECT_S = 3.0


class VethSet:
    """The veth pairs of one lab switch and the lab-side sockets on them."""

    def __init__(self, tag: str, ports: Sequence[int], record: Path) -> None:
        self.tag, self.ports, self.record = tag, tuple(ports), record
        self.made: list[str] = []
        self.sockets: dict[int, socket.socket] = {}

    def switch_side(self, port: int) -> str:
        """Name of the switch's interface for ``port`` (what ``-i N@…`` gets)."""
        return f"{self.tag}-eth{port}"

    def host_side(self, port: int) -> str:
        """Name of the lab's interface facing ``port``."""
        return f"{self.tag}-h{port}"

    def create(self) -> None:
        """Create, configure (IPv6 off, offloads off) and bring up every pair; open sockets."""
        for port in self.ports:
            a, b = self.switch_side(port), self.host_side(port)
            res = _ip("link", "add", a, "type", "veth", "peer", "name", b, check=False)
            if res.returncode != 0:
                raise LabError(f"cannot create veth {a}: {res.stderr.strip()}")
            self.made.append(a)
            self.record.parent.mkdir(parents=True, exist_ok=True)
            self.record.write_text("\n".join(self.made) + "\n")
            for ifc in (a, b):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{ifc}.disable_ipv6=1"],
                               capture_output=True, timeout=10)
                if shutil.which("ethtool"):
                    subprocess.run(["ethtool", "-K", ifc, "tx", "off", "rx", "off", "sg", "off"],
                                   capture_output=True, timeout=10)
                _ip("link", "set", ifc, "mtu", "9000", check=False)
                _ip("link", "set", ifc, "up")
        for port in self.ports:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.bind((self.host_side(port), 0))
            s.setblocking(False)
            self.sockets[port] = s

    def delete(self) -> None:
        """Close the sockets and delete the pairs this object created (by recorded name)."""
        for s in self.sockets.values():
            s.close()
        self.sockets.clear()
        for a in self.made:
            _ip("link", "del", a, check=False)
        self.made.clear()
        self.record.unlink(missing_ok=True)

    def __enter__(self) -> "VethSet":
        try:
            self.create()
        except BaseException:
            self.delete()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.delete()

    # ------------------------------------------------------------------ packets
    def send(self, port: int, frame: bytes) -> None:
        """Send one Ethernet frame into the switch's ``port``."""
        self.sockets[port].send(frame)

    def _recv_ready(self, port: int) -> Optional[bytes]:
        """One frame the switch sent on ``port`` if one is queued (own transmissions and a
        first ENETDOWN are skipped), else None."""
        s = self.sockets[port]
        while True:
            try:
                data, addr = s.recvfrom(SNAPLEN)
            except BlockingIOError:
                return None
            except OSError as exc:
                if exc.errno == errno.ENETDOWN:   # once, when bound before the link was up
                    return None
                raise
            if addr[2] != PACKET_OUTGOING:
                return data

    def receive(self, port: int, timeout_s: float) -> Optional[bytes]:
        """The next frame out of ``port`` within ``timeout_s`` seconds, else None."""
        deadline = time.monotonic() + timeout_s
        while True:
            frame = self._recv_ready(port)
            if frame is not None:
                return frame
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            select.select([self.sockets[port]], [], [], left)

    def send_paced(self, port: int, frames: Sequence[bytes], window: int,
                   timeout_s: float) -> list[tuple[int, bytes]]:
        """Send ``frames`` into ``port`` at most ``window`` ahead of what came out (a user-space
        switch drops what overflows its socket buffer); every ``(port, frame)`` received,
        ending after ``timeout_s`` of quiet."""
        got: list[tuple[int, bytes]] = []
        for start in range(0, len(frames), window):
            for frame in frames[start:start + window]:
                self.send(port, frame)
            want = min(len(frames), start + window)
            while len(got) < want:
                # frames still owed by the switch: wait longer than the quiet gap, so a
                # busy machine (a p4sim switch stalled for a moment) is not a wrong answer
                more = self._collect(max(timeout_s, EXPECT_S), want - len(got))
                if not more:
                    break
                got += more
        return got + self.receive_all(timeout_s)

    def _collect(self, timeout_s: float, at_least: int) -> list[tuple[int, bytes]]:
        got: list[tuple[int, bytes]] = []
        by_fd = {s.fileno(): p for p, s in self.sockets.items()}
        while len(got) < at_least:
            ready, _, _ = select.select(list(self.sockets.values()), [], [], timeout_s)
            if not ready:
                break
            for s in ready:
                port = by_fd[s.fileno()]
                while (frame := self._recv_ready(port)) is not None:
                    got.append((port, frame))
        return got

    def receive_all(self, timeout_s: float) -> list[tuple[int, bytes]]:
        """Every frame out of any port, in arrival order per poll, until ``timeout_s``
        seconds pass with nothing new."""
        got: list[tuple[int, bytes]] = []
        by_fd = {s.fileno(): p for p, s in self.sockets.items()}
        while True:
            ready, _, _ = select.select(list(self.sockets.values()), [], [], timeout_s)
            if not ready:
                return got
            for s in ready:
                port = by_fd[s.fileno()]
                while (frame := self._recv_ready(port)) is not None:
                    got.append((port, frame))
