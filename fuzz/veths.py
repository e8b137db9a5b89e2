"""Veth pairs for the frames campaign, named after the campaign's PID (``fz<pid>a0`` /
``fz<pid>b0`` …), MTU 9000, IPv6 off, up; deleted afterwards by the names recorded at
creation, and only those. Needs root and iproute2.

>>> VethPairs(2, tag="fz123").names
[('fz123a0', 'fz123b0'), ('fz123a1', 'fz123b1')]
"""
from __future__ import annotations

import os
import shutil
import subprocess
from types import TracebackType
from typing import Optional

MTU = 9000


class VethError(RuntimeError):
    """A veth pair could not be created (the message says why)."""


def veths_available() -> Optional[str]:
    """None when veth pairs can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root to create veth pairs"
    if shutil.which("ip") is None:
        return "needs iproute2 (ip) to create veth pairs"
    return None


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if proc.returncode != 0:
        raise VethError(f"ip {' '.join(args)}: {proc.stderr.strip()}")


class VethPairs:
    """``n`` veth pairs: ``names[i] = (switch side, host side)``; a context manager that
    creates them on entry and deletes the ones it created on exit."""

    def __init__(self, n: int, tag: Optional[str] = None) -> None:
        tag = tag or f"fz{os.getpid() % 100000}"
        self.names = [(f"{tag}a{i}", f"{tag}b{i}") for i in range(n)]
        self.created: list[str] = []

    def create(self) -> "VethPairs":
        """Create every pair (deleting what was made if one fails)."""
        try:
            for a, b in self.names:
                _ip("link", "add", a, "type", "veth", "peer", "name", b)
                self.created.append(a)
                for ifc in (a, b):
                    subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{ifc}.disable_ipv6=1"],
                                   capture_output=True, timeout=10)
                    _ip("link", "set", ifc, "mtu", str(MTU))
                    _ip("link", "set", ifc, "up")
        except BaseException:
            self.delete()
            raise
        return self

    def delete(self) -> None:
        """Delete the pairs this object created (deleting one end removes both)."""
        while self.created:
            subprocess.run(["ip", "link", "del", self.created.pop()], capture_output=True, timeout=10)

    def __enter__(self) -> "VethPairs":
        return self.create()

    def __exit__(self, exc_type: Optional[type[BaseException]],
                 exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.delete()


def kernel_counter(iface: str, name: str) -> int:
    """``/sys/class/net/IFACE/statistics/NAME`` (``rx_packets``, ``tx_packets``, …)."""
    with open(f"/sys/class/net/{iface}/statistics/{name}", encoding="ascii") as f:
        return int(f.read())
