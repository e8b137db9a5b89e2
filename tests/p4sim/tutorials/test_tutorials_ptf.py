"""A P4 tutorials exercise end to end, as ``runptf.sh`` and ``run_exercise.py`` run one, with
BMv2's command names provided by ``p4sim-tutorials-bin`` (needs root: a network namespace
with veth pairs; skipped otherwise).

In a namespace this test creates (deleted at the end, with its veths): ``p4c --target
bmv2 --arch v1model --p4runtime-files build/ipv4_routes.p4info.txtpb -o build
ipv4_routes.p4``; ``simple_switch_grpc`` started with run_exercise.py's command line (the
compiled JSON as the program, ``--pcap``, ``--nanolog``, ``--thrift-port``,
``--log-console``, ``-- --grpc-server-addr``); then ``ptf --test-dir ptf -i N@hN ...
--test-params=...`` with tests that push the pipeline in ``p4.tmp.P4DeviceConfig`` and check
that packets are forwarded by longest prefix (``ptf/route_forwarding.py``).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tutorials_support import PROGRAM, PTF_DIR, TutorialSwitch, run, script

PORTS = (0, 1, 2, 3)

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="needs root and iproute2 (a network namespace with veth pairs)")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@pytest.fixture()
def namespace():
    """A network namespace with veth pairs sN (switch side) / hN (PTF side), N in PORTS."""
    name = f"p4tut{os.getpid()}"
    _ip("netns", "add", name)
    try:
        _ip("-n", name, "link", "set", "lo", "up")
        for n in PORTS:
            _ip("-n", name, "link", "add", f"s{n}", "type", "veth", "peer", "name", f"h{n}")
            for ifc in (f"s{n}", f"h{n}"):
                subprocess.run(["ip", "netns", "exec", name, "sysctl", "-qw",
                                f"net.ipv6.conf.{ifc}.disable_ipv6=1"], check=False, timeout=30)
                _ip("-n", name, "link", "set", ifc, "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, timeout=30)


def test_exercise_runs_with_the_tutorials_commands(namespace: str, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    res = run([script("p4sim-tutorials-bin"), "--sudo", bindir], tmp_path)
    assert res.returncode == 0, res.stderr
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '')}")
    in_ns = ["ip", "netns", "exec", namespace]
    (tmp_path / "pcaps").mkdir()

    compiled = subprocess.run(
        ["p4c", "--target", "bmv2", "--arch", "v1model", "--p4runtime-files",
         "build/ipv4_routes.p4info.txtpb", "-o", "build", str(PROGRAM)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert compiled.returncode == 0, compiled.stderr
    assert (tmp_path / "build/ipv4_routes.json").exists()

    ifaces = [a for n in PORTS for a in ("-i", f"{n}@s{n}")]
    switch_cmd = [*in_ns, "sudo", "simple_switch_grpc", *ifaces, "--pcap", "pcaps",
                  "--nanolog", "ipc:///tmp/bm-0-log.ipc", "--device-id", "0",
                  "build/ipv4_routes.json", "--log-console", "--thrift-port", "9090",
                  "--", "--grpc-server-addr", "127.0.0.1:9559"]
    with TutorialSwitch(switch_cmd, tmp_path, env=env) as switch:
        assert switch.grpc_addr == "127.0.0.1:9559"
        ptf_ifaces = [a for n in PORTS for a in ("-i", f"{n}@h{n}")]
        params = ("grpcaddr='127.0.0.1:9559';p4info='build/ipv4_routes.p4info.txtpb';"
                  "config='build/ipv4_routes.json'")
        tests = subprocess.run(
            [*in_ns, "ptf", *ptf_ifaces, f"--test-params={params}", "--test-dir", str(PTF_DIR),
             "--log-file", str(tmp_path / "ptf.log")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert switch.proc.poll() is None, switch.stderr_path.read_text()[-2000:]
    out = tests.stdout + tests.stderr
    assert tests.returncode == 0, out[-4000:] + switch.stderr_path.read_text()[-2000:]
    assert re.search(r"Ran 3 tests", out) and "OK" in out, out[-2000:]
    # BMv2's capture names: <iface>_in.pcap / _out.pcap in the --pcap folder
    assert (tmp_path / "pcaps/s1_in.pcap").exists()
