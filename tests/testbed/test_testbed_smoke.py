"""The Mininet testbed (``testbed/net.py``, ``testbed/cli.py``).

Unit tests of the command lines, host routing commands and the state file run anywhere.
The smoke tests need root and Mininet (skipped with the reason otherwise): the default
fabric comes up on p4sim, is programmed by ``controller.fabric_setup``, every same-rail
NIC pair answers ping (through the leaf and across the spines), and teardown — by the
``up`` process itself, and by ``down`` after the ``up`` process was killed — leaves none
of the recorded processes, namespaces or interfaces behind. Each takes ~10 s.
"""
from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import pytest

from topo import FabricSpec, build_fabric
from testbed.net import (ProcRecord, TestbedState, host_commands, leftovers, link_exists,
                     load_mininet, missing_tools, rail_subnets, switch_command)
from testbed.cli import PingResult, ping_pairs, ping_report

REPO = Path(__file__).resolve().parents[2]
UP_TIMEOUT_S = 120.0


# ------------------------------------------------------------------------ unit tests
def test_switch_commands_have_the_same_shape() -> None:
    kw = dict(name="b0r0l0", device_id=1, grpc_addr="127.0.0.1:50051", ports=[2, 1],
              log_dir=Path("logs"), pcap_dir=Path("pcaps"))
    p4sim = switch_command("p4sim", **kw)
    bmv2 = switch_command("bmv2", **kw)
    shared = ["--no-p4", "-i", "1@b0r0l0-eth1", "-i", "2@b0r0l0-eth2", "--device-id", "1",
              "--log-level", "info", "--pcap=pcaps"]
    target_options = ["--", "--grpc-server-addr", "127.0.0.1:50051", "--cpu-port", "255",
                      "--priority-queues", "8"]
    assert p4sim[1:4] == ["-m", "p4sim", "switch"] and p4sim[4:4 + len(shared)] == shared
    assert bmv2[0] == "simple_switch_grpc" and bmv2[1:1 + len(shared)] == shared
    assert p4sim[p4sim.index("--request-log") + 1] == "logs/b0r0l0-p4runtime-requests.txt"
    assert p4sim[p4sim.index("--log-file") + 1] == "logs/b0r0l0.log"
    # BMv2: target options only after "--" (before it: "Error while parsing command line
    # arguments"), logging to the console (exclusive with --log-file), a Thrift port
    assert p4sim[-len(target_options):] == target_options
    assert bmv2[-len(target_options):] == target_options
    assert "--log-console" in bmv2 and "--log-file" not in bmv2
    assert bmv2[bmv2.index("--thrift-port") + 1] == "9091"
    for cmd in (p4sim, bmv2):
        before = cmd[:cmd.index("--")]
        assert not {"--cpu-port", "--priority-queues", "--grpc-server-addr"} & set(before)


def test_host_routes_every_rail_subnet_through_the_rail_gateway() -> None:
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=2, spines=2))
    subnets = rail_subnets(fab)
    assert subnets == {0: ["10.0.0.0/24", "10.1.0.0/24"], 1: ["10.0.1.0/24", "10.1.1.0/24"]}
    cmds = host_commands(fab.host("b1s0").nics, subnets)
    assert "ip addr add 10.1.0.1/24 dev b1s0-eth0 noprefixroute" in cmds
    assert "ip route replace 10.0.0.0/24 via 10.1.0.254 dev b1s0-eth0" in cmds
    assert "ip route replace 10.1.0.0/24 via 10.1.0.254 dev b1s0-eth0" in cmds
    assert "ip route replace 10.0.1.0/24 via 10.1.1.254 dev b1s0-eth1" in cmds
    assert not any(c.startswith("ip route") and "default" in c for c in cmds)
    assert any("disable_ipv6=1" in c for c in cmds) and any("ethtool -K" in c for c in cmds)


def test_ping_pairs_are_every_same_rail_pair() -> None:
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=2, spines=2))
    pairs = ping_pairs(fab)
    assert len(pairs) == 2 * 4 * 3
    assert all(n1.rail == n2.rail and h1.name != h2.name for h1, n1, h2, n2 in pairs)
    results = [PingResult(h1.name, n1.ip, h2.name, n2.ip, n1.rail, h1.block != h2.block, 3,
                          0 if i == 0 else 3) for i, (h1, n1, h2, n2) in enumerate(pairs)]
    text = ping_report(results)
    assert "rail 0: 11/12 pairs answer" in text and "rail 1: 12/12" in text
    assert text.count("FAIL") == 1


def test_state_round_trip_and_leftovers_of_nothing(tmp_path: Path) -> None:
    state = TestbedState(target="p4sim", owner_pid=1)
    state.procs.append(ProcRecord("s0", 2 ** 22 + 7, "python -m p4sim switch", "switch"))
    state.interfaces.append("nosuchintf0")
    state.save(tmp_path / "s.json")
    back = TestbedState.load(tmp_path / "s.json")
    assert back == state
    assert leftovers(back) == {"processes": [], "namespaces": [], "interfaces": [], "tables": []}
    assert TestbedState.load(tmp_path / "none.json") is None


# ----------------------------------------------------------------------- smoke tests
def _mininet_reason() -> str:
    if os.geteuid() != 0:
        return "the testbed needs root (namespaces, veths)"
    missing = missing_tools()
    if missing:
        return f"missing Debian packages: {' '.join(missing)}"
    try:
        load_mininet()
    except Exception as exc:  # noqa: BLE001 — any import failure means skip
        return f"Mininet not importable: {exc}"
    fab = build_fabric(FabricSpec())
    taken = [f"{s.name}-eth1" for s in fab.switches if link_exists(f"{s.name}-eth1")]
    if taken:
        return f"a testbed is already up here ({', '.join(taken)} exist)"
    return ""


SKIP_REASON = _mininet_reason()
needs_mininet = pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON or "-")


def _testbed(*args: str) -> list[str]:
    return [sys.executable, "-m", "testbed.cli", *args]


def _start_held(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    state_path, out_path = tmp_path / "state.json", tmp_path / "up.out"
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(
            _testbed("up", "--target", "p4sim", "--cli", "no", "--hold", "--state",
                     str(state_path), "--logs", str(tmp_path / "logs"), "--no-pcap"),
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + UP_TIMEOUT_S
    while time.monotonic() < deadline:
        text = out_path.read_text(errors="replace")
        if "Ctrl-C" in text:
            return proc, state_path, out_path
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    proc.wait(30)
    subprocess.run(_testbed("down", "--state", str(state_path)), cwd=REPO, timeout=60)
    pytest.fail(f"testbed did not come up:\n{out_path.read_text(errors='replace')[-4000:]}")


def _nothing_left(state: TestbedState) -> None:
    left = leftovers(state)
    assert left == {"processes": [], "namespaces": [], "interfaces": [], "tables": []}, left
    assert all(not Path(f"/proc/{r.pid}").exists() or _is_other(r) for r in state.procs)


def _is_other(rec: ProcRecord) -> bool:
    """A recycled PID (a different command line) is not ours."""
    try:
        cmd = Path(f"/proc/{rec.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return True
    return not cmd.strip().startswith(rec.cmdline[:200])


@contextmanager
def _client_holding(port: int) -> Iterator[None]:
    """A client connection whose source port is ``port`` (what broke CI once: another
    connection had drawn a switch's default port as its ephemeral source port)."""
    with socket.socket() as server, socket.socket() as client:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.bind(("127.0.0.1", port))  # linger 0: closed by a reset, no TIME_WAIT after
        client.connect(server.getsockname())
        yield


def _in_host(shell_pid: int, *cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["nsenter", "-t", str(shell_pid), "-n", *cmd], capture_output=True,
                          text=True, timeout=30, check=False)


def _icmp_in_echos() -> int:
    """The root namespace's count of ICMP echo requests received (/proc/net/snmp)."""
    head, values = [ln.split() for ln in Path("/proc/net/snmp").read_text().splitlines()
                    if ln.startswith("Icmp:")][:2]
    return int(values[head.index("InEchos")])


def _attack_root_namespace(state: TestbedState) -> dict[str, object]:
    """Host b0s0 (its own network namespace) tries to reach the root namespace through its
    switch port: routes the root's address onto its NIC, asks ARP, then — with the root
    port's MAC written in by hand, so ARP being ignored does not hide the rest — pings it
    and sends UDP and TCP to listeners on 0.0.0.0 in the root namespace. Returns what
    reached the root (sec-audit: the root kernel answered ARP and took the packets)."""
    root_ips = [ln.split()[3].split("/")[0] for ln in subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True,
        check=True).stdout.splitlines()]
    if not root_ips:
        pytest.skip("the root namespace has no global IPv4 address to attack")
    root_ip = root_ips[0]
    shell = next(r for r in state.procs if r.kind == "host-shell" and r.name == "b0s0")
    nic = build_fabric(FabricSpec()).host("b0s0").nics[0]
    port = f"{nic.leaf}-eth{nic.leaf_port}"
    assert port in state.interfaces
    port_mac = Path(f"/sys/class/net/{port}/address").read_text().strip()
    dev = nic.intf
    _in_host(shell.pid, "ip", "route", "replace", f"{root_ip}/32", "dev", dev)
    _in_host(shell.pid, "ping", "-c1", "-W1", root_ip)
    neigh = _in_host(shell.pid, "ip", "neigh", "show", root_ip, "dev", dev).stdout
    _in_host(shell.pid, "ip", "neigh", "replace", root_ip, "lladdr", port_mac, "dev", dev,
             "nud", "permanent")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, socket.socket() as tcp:
        udp.bind(("0.0.0.0", 0))
        tcp.bind(("0.0.0.0", 0))
        tcp.listen()
        tcp.settimeout(0.0)
        echos = _icmp_in_echos()
        _in_host(shell.pid, "ping", "-c3", "-i0.2", "-W1", root_ip)
        echos = _icmp_in_echos() - echos
        _in_host(shell.pid, "bash", "-c", f"for i in 1 2 3; do echo probe > /dev/udp/{root_ip}/"
                 f"{udp.getsockname()[1]}; done")
        _in_host(shell.pid, "timeout", "2", "bash", "-c",
                 f"exec 3<>/dev/tcp/{root_ip}/{tcp.getsockname()[1]}")
        syn = subprocess.run(["ss", "-Htn", "state", "syn-recv",
                              f"( sport = :{tcp.getsockname()[1]} )"],
                             capture_output=True, text=True, check=False).stdout.strip()
        udp.settimeout(1.0)                            # bounded: the datagrams were sent
        try:
            got: bytes = udp.recv(64)
        except socket.timeout:
            got = b""
    return {"arp": port_mac in neigh, "ping": echos >= 3, "udp": got, "syn": syn}


@needs_mininet
def test_fabric_up_pings_every_rail_and_tears_down(tmp_path: Path) -> None:
    held = build_fabric(FabricSpec()).switches[1]
    held_port = int(held.grpc_addr.rsplit(":", 1)[1])
    with _client_holding(held_port):
        proc, state_path, out_path = _start_held(tmp_path)
    try:
        state = TestbedState.load(state_path)
        assert state is not None
        moved = state.switches[held.name]["grpc_addr"]
        assert moved != held.grpc_addr
        assert (f"switch {held.name}: port {held_port} is in use by another program; using "
                f"{moved}") in out_path.read_text()
        assert len([r for r in state.procs if r.kind == "switch"]) == 6
        assert len([r for r in state.procs if r.kind == "host-shell" and r.netns]) == 4
        assert all(link_exists(i) for i in state.interfaces) and len(state.interfaces) == 24
        text = out_path.read_text()
        assert "24/24 same-rail NIC pairs answer" in text, text
        assert "8/8 across blocks" in text
        ping = subprocess.run(_testbed("ping", "--state", str(state_path)), cwd=REPO,
                              capture_output=True, timeout=120)
        assert ping.returncode == 0, ping.stdout.decode() + ping.stderr.decode()
        assert (tmp_path / "logs" / "b0r0l0-p4runtime-requests.txt").stat().st_size > 0
        # each host sees only its own key where the PKI is (its own mount namespace)
        shell = next(r for r in state.procs if r.kind == "host-shell" and r.netns)
        seen = subprocess.run(["nsenter", "-t", str(shell.pid), "-m", "ls", state.pki],
                              capture_output=True, text=True, timeout=30, check=True).stdout.split()
        assert [n for n in seen if n.endswith(".key")] == [f"{shell.name}.key"], seen
        assert "controller.pem" not in seen and "p4rt-policy.yaml" not in seen
        assert "controller.key" in os.listdir(state.pki)          # the root namespace sees all
        assert "p4rt-policy.yaml: identities controller, monitor" in (tmp_path / "logs" / "b0r0l0.log").read_text()
        # a host cannot reach the root namespace through its switch port (testbed.rootguard)
        assert state.guard_table and leftovers(state)["tables"] == [state.guard_table]
        reached = _attack_root_namespace(state)
        assert reached == {"arp": False, "ping": False, "udp": b"", "syn": ""}, reached
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(60)
    assert rc == 0, out_path.read_text()[-3000:]
    assert not state_path.exists()
    _nothing_left(state)


@needs_mininet
def test_down_after_a_killed_launcher_leaves_nothing(tmp_path: Path) -> None:
    proc, state_path, _ = _start_held(tmp_path)
    state = TestbedState.load(state_path)
    assert state is not None
    proc.kill()  # no teardown by the launcher: switch processes and links stay behind
    proc.wait(30)
    assert any(leftovers(state).values())
    down = subprocess.run(_testbed("down", "--state", str(state_path)), cwd=REPO,
                          capture_output=True, timeout=120)
    assert down.returncode == 0, down.stdout.decode() + down.stderr.decode()
    _nothing_left(state)
    assert not state_path.exists()
