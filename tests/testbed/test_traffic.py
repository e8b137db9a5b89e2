"""testbed.traffic without a testbed: the docstring examples of every module of the package,
the public names still importable from ``testbed.traffic``, and the bounded probes."""
from __future__ import annotations

import doctest
import importlib
import os
import socket
import subprocess
import sys

import pytest

from testbed.traffic import packet_socket_open, poll_until, read_until_stable

MODULES = ["", ".flows", ".nicproc", ".probe", ".counters", ".run", ".live"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"testbed.traffic{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_public_names_are_importable_from_the_package() -> None:
    import testbed.traffic as t
    for name in ("NicFleet", "NicFlow", "NicOptions", "TrafficOptions", "run_traffic",
                 "plan_flows", "merge_reports", "testbed_up", "testbed_unavailable",
                 "choose_ports", "build_flows", "elephant_pairs", "leaf_uplinks",
                 "read_uplink_tx", "max_over_mean", "LiveTestbed", "bind_roce_sink"):
        assert hasattr(t, name), name


def test_command_line_help_runs_as_a_module() -> None:
    out = subprocess.run([sys.executable, "-m", "testbed.traffic", "--help"], capture_output=True,
                         text=True, timeout=60, check=True)
    assert "--elephants" in out.stdout


def test_poll_until_gives_up_at_its_deadline() -> None:
    calls: list[int] = []
    assert not poll_until(lambda: bool(calls.append(1)), timeout_s=0.05, interval_s=0.01)
    assert len(calls) >= 2


def test_read_until_stable_reports_a_counter_that_never_settles() -> None:
    counter = iter(range(10**6))
    value, settled = read_until_stable(lambda: next(counter), interval_s=0.0, timeout_s=0.05)
    assert not settled and value > 0


@pytest.mark.skipif(not hasattr(socket, "AF_PACKET") or os.geteuid() != 0,
                    reason="AF_PACKET sockets need root")
def test_packet_socket_open_sees_a_raw_socket_of_this_process() -> None:
    assert not packet_socket_open(os.getpid())
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003)):
        assert packet_socket_open(os.getpid())
    assert not packet_socket_open(os.getpid())
