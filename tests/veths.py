"""Veth pairs for the tests that need real interfaces (root, iproute2): made with IPv6 off
(no router solicitations or MLD frames in the packet tests) and up, deleted afterwards —
only the ones made here, by name. Run those tests under ``flock /tmp/astral-net.lock``.

Importable as ``veths`` from every test (``pythonpath = tests`` in ``pytest.ini``); the
one copy of what the switch-process tests (tests/p4sim/switchd/conftest.py), the giant
guard's (tests/testbed/test_giantguard.py) and the NIC emulator's packet-socket tests
(tests/host/test_nic_batch.py, test_nic_native.py) each wrote for themselves.

Example::

    >>> from veths import veth_pairs                                  # doctest: +SKIP
    >>> with veth_pairs(f"nb{os.getpid() % 100000}", 1) as [(a, b)]:  # doctest: +SKIP
    ...     PacketSocket(a).send(frame)                                # frames come out of b
"""
from __future__ import annotations

import subprocess
from contextlib import contextmanager
from typing import Iterator

import pytest


def ip(*args: str) -> None:
    """``ip ARGS…`` (iproute2), CalledProcessError with its stderr when it fails.

    >>> ip("link", "show", "lo")                                      # doctest: +SKIP
    """
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@contextmanager
def veth_pairs(tag: str, pairs: int = 2, sides: tuple[str, str] = ("a", "b"),
               skip_if_refused: bool = False) -> Iterator[list[tuple[str, str]]]:
    """``pairs`` veth pairs ``(f"{tag}{sides[0]}{i}", f"{tag}{sides[1]}{i}")`` (one pair:
    no index), IPv6 off, up; deleted when the ``with`` ends, also on an error. A pair the
    kernel refuses raises ``subprocess.CalledProcessError``, or skips the test with
    ``skip_if_refused``. ``tag`` keeps names unique (the test's PID) and within the 15
    characters of an interface name."""
    made: list[str] = []
    names = [(f"{tag}{sides[0]}", f"{tag}{sides[1]}")] if pairs == 1 else \
        [(f"{tag}{sides[0]}{i}", f"{tag}{sides[1]}{i}") for i in range(pairs)]
    try:
        for a, b in names:
            try:
                ip("link", "add", a, "type", "veth", "peer", "name", b)
            except subprocess.CalledProcessError as exc:
                if skip_if_refused:
                    pytest.skip(f"cannot create veth pair: {exc.stderr.decode().strip()}")
                raise
            made.append(a)
            for ifc in (a, b):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{ifc}.disable_ipv6=1"],
                               capture_output=True, timeout=10)
                ip("link", "set", ifc, "up")
        yield names
    finally:
        for a in made:
            subprocess.run(["ip", "link", "del", a], capture_output=True, timeout=10)


__all__ = ["ip", "veth_pairs"]
