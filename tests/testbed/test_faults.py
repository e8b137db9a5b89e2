"""The fault injector (testbed.faults) on namespaces and veths of its own (root only;
skipped otherwise), no Mininet and no switch: a two-switch, one-host "fabric" whose
interfaces are real veths named ``astf…`` (created here, deleted after, by name).

* a gray link drops the asked fraction of 2000 raw-socket frames (20 % → 300..500), on a
  root-namespace switch port and on a NIC inside the host's namespace; undone, all pass;
* corruption flips a byte of the asked fraction of RoCEv2 frames: the ICRC check fails
  for 300..500 of 2000, every frame still parses;
* undo deletes exactly the fault's nft table (another fault's and an unrelated table stay);
* a flapping cable goes down and up, and is left up with the host's routes after undo; on
  BMv2 it is cut by a drop table on both ends instead, its links never down;
* SIGSTOP of a recorded process and SIGCONT on undo (hung_switch, dead_agent);
* the NIC emulator's stall mode (slow_receiver) sends PAUSE frames, RESUME on undo;
* unknown targets, kinds and parameters are refused naming what exists, nothing recorded;
* ``undo_recorded`` (what ``testbed down`` runs) undoes the faults file;
* the P4Runtime writer deletes / modifies and writes back exactly the saved entry.
"""
from __future__ import annotations

import ctypes
import json
import os
import secrets
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from unittest import mock
from types import SimpleNamespace as NS
from typing import Any, Callable, Iterator

import pytest
from p4.v1 import p4runtime_pb2

from host.nic.frames import OP_RC_WRITE_MIDDLE, FlowSpec, FrameTemplate, parse_roce, verify_icrc
from host.nic.pfc import parse_pause
from testbed.faultbook import FaultRecord
from testbed.faultnet import Endpoint, tables
from testbed.faultp4rt import EntryUndo, P4RuntimeWriter, WriterError
from testbed.faults import FaultError, FaultInjector, faults_path_for, undo_recorded
from testbed.faultundo import process_state
from testbed.net import ProcRecord, TestbedState, netns_inode, proc_cmdline

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, veths)")
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
FRAMES = 2000
REPO = Path(__file__).resolve().parents[2]


def table_of(rec: FaultRecord) -> str:
    """The nft table fault ``rec`` created (its one recorded ``nft`` undo step)."""
    (table,) = [s["table"] for s in rec.undo if s["op"] == "nft"]
    return str(table)


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True)


def poll(cond: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() >= deadline:
            return False
        threading.Event().wait(0.02)
    return True


# --------------------------------------------------------------------------- the net
class Net:
    """Leaf ``<p>s`` (port 1: host NIC, port 2: spine), spine ``<p>p`` (port 1), host ``<p>h``
    with NIC ``<p>h-eth0`` in namespace ``<p>-ns``; a dummy process per switch and a
    shell process in the host's namespace."""

    def __init__(self, tmp: Path) -> None:
        self.p = p = "astf" + secrets.token_hex(2)[:3]
        self.leaf, self.spine, self.host, self.ns = f"{p}s", f"{p}p", f"{p}h", f"{p}-ns"
        self.nic = f"{self.host}-eth0"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.state_path = tmp / "state.json"
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", f"{self.leaf}-eth1", "type", "veth", "peer", "name", self.nic,
           "netns", self.ns)
        sh("ip", "link", "add", f"{self.leaf}-eth2", "type", "veth", "peer", "name",
           f"{self.spine}-eth1")
        for i in (f"{self.leaf}-eth1", f"{self.leaf}-eth2", f"{self.spine}-eth1"):
            sh("ip", "link", "set", i, "up")
        for cmd in (["ip", "link", "set", "lo", "up"], ["ip", "link", "set", self.nic, "up"],
                    ["ip", "addr", "add", "10.9.0.1/24", "dev", self.nic, "noprefixroute"],
                    ["ip", "route", "replace", "10.9.0.254/32", "dev", self.nic, "scope",
                     "link"],
                    ["ip", "route", "replace", "10.8.0.0/24", "via", "10.9.0.254", "dev",
                     self.nic]):
            sh("ip", "netns", "exec", self.ns, *cmd)
        shell = self.spawn(["ip", "netns", "exec", self.ns, sys.executable, "-c",
                            "import signal; signal.pause()"])
        assert poll(lambda: netns_inode(shell.pid) != netns_inode(os.getpid()), 5)
        self.shell = shell
        self.state = TestbedState(procs=[ProcRecord(
            self.host, shell.pid, proc_cmdline(shell.pid) or "", "host-shell",
            netns_inode(shell.pid))])
        for sw in (self.leaf, self.spine):
            d = self.spawn([sys.executable, "-c", "import signal; signal.pause()", sw])
            assert poll(lambda: bool(proc_cmdline(d.pid)), 5)
            self.state.procs.append(ProcRecord(sw, d.pid, proc_cmdline(d.pid) or "", "switch"))

        def port(peer: str, peer_port: int, kind: str) -> NS:
            return NS(peer_node=peer, peer_port=peer_port, kind=kind)

        self.fabric = NS(
            switches=[NS(name=self.leaf, ports={1: port(self.host, 0, "host"),
                                                2: port(self.spine, 1, "uplink")}),
                      NS(name=self.spine, ports={1: port(self.leaf, 2, "downlink")})],
            hosts=[NS(name=self.host, nics=[NS(intf=self.nic, rail=0, leaf=self.leaf,
                                               leaf_port=1)])])

    def spawn(self, cmd: list[str]) -> "subprocess.Popen[bytes]":
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        self.procs.append(proc)
        return proc

    def injector(self, **kw: Any) -> FaultInjector:
        return FaultInjector(self.fabric, self.state, state_path=self.state_path,
                             routes={self.leaf: ["10.9.0.0/24", "10.8.0.0/24"]}, **kw)

    @property
    def host_ep(self) -> Endpoint:
        return Endpoint(self.nic, self.shell.pid, netns_inode(self.shell.pid))

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
            proc.wait(10)
        for i in (f"{self.leaf}-eth1", f"{self.leaf}-eth2"):
            sh("ip", "link", "del", i, check=False)
        sh("ip", "netns", "del", self.ns, check=False)


@pytest.fixture
def net(tmp_path: Path) -> Iterator[Net]:
    n = Net(tmp_path)
    try:
        yield n
    finally:
        try:
            undo_recorded(n.state_path)
        finally:
            n.close()


def packet_socket(iface: str, netns_pid: int = 0) -> socket.socket:
    """An AF_PACKET socket on ``iface``, opened in the namespace of ``netns_pid``."""
    out: dict[str, Any] = {}

    def make() -> None:
        try:
            if netns_pid:
                libc = ctypes.CDLL(None, use_errno=True)
                fd = os.open(f"/proc/{netns_pid}/ns/net", os.O_RDONLY)
                try:
                    assert libc.setns(fd, 0x40000000) == 0
                finally:
                    os.close(fd)
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.setsockopt(socket.SOL_SOCKET, 33, 32 << 20)     # SO_RCVBUFFORCE
            s.bind((iface, 0))
            out["s"] = s
        except BaseException as exc:  # noqa: BLE001 — re-raised in the caller
            out["e"] = exc

    t = threading.Thread(target=make)
    t.start()
    t.join()
    if "e" in out:
        raise out["e"]
    return out["s"]  # type: ignore[no-any-return]


CHUNK = 100


def frames(n: int) -> list[bytes]:
    f = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.9.0.1", "10.8.0.1", 49152, 7)
    t = FrameTemplate.data(f, OP_RC_WRITE_MIDDLE, payload_len=64)
    return [t.frame(psn=i) for i in range(n)]


def blast(tx: socket.socket, rx: socket.socket, n: int = FRAMES) -> tuple[int, list[bytes]]:
    """Send ``n`` RoCEv2 frames on ``tx``; (sends refused, RoCE frames ``rx`` received).
    Sent in chunks of ``CHUNK`` with ``rx`` drained in between: a burst of thousands
    overflows the kernel's per-CPU receive backlog (``netdev_max_backlog``, 1000) on a
    loaded machine, which would count as loss. Read until nothing more arrives for 0.3 s
    (bounded by 10 s)."""
    refused = 0
    got: list[bytes] = []

    def drain(idle_s: float, deadline: float) -> None:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([rx], [], [], idle_s)
            if not ready:
                return
            data, addr = rx.recvfrom(65535)
            if addr[2] != PACKET_OUTGOING and data[12:14] == b"\x08\x00" and data[23] == 17:
                got.append(data)

    all_frames = frames(n)
    for i in range(0, n, CHUNK):
        for frame in all_frames[i:i + CHUNK]:
            try:
                tx.send(frame)
            except OSError:
                refused += 1                   # ENOBUFS: the egress hook dropped it
        drain(0.02, time.monotonic() + 2)
    drain(0.3, time.monotonic() + 10)
    return refused, got


# --------------------------------------------------------------------------- loss
def test_gray_link_on_a_switch_port_drops_the_asked_fraction_and_undo_restores(net: Net) -> None:
    tx, rx = packet_socket(f"{net.leaf}-eth2"), packet_socket(f"{net.spine}-eth1")
    inj = net.injector()
    rec = inj.inject("gray_link", f"link {net.leaf}->{net.spine}", loss_pct=20)
    assert rec.name == "gray_link-1" and rec.target == f"link {net.leaf}->{net.spine}"
    assert json.loads(faults_path_for(net.state_path).read_text())["faults"][0]["name"] == rec.name
    refused, got = blast(tx, rx)
    assert 300 <= FRAMES - len(got) <= 500, (refused, len(got))
    assert refused == FRAMES - len(got)
    other = inj.inject("gray_link", f"link {net.spine}->{net.leaf}", loss_pct=1)
    assert other.name == "gray_link-2"                   # names are never reused
    assert [r.name for r in inj.active()] == [rec.name, other.name]
    inj.undo(rec.name)
    inj.undo(other.name)
    assert inj.active() == []
    assert json.loads(faults_path_for(net.state_path).read_text())["faults"] == []
    refused, got = blast(tx, rx)
    assert (refused, len(got)) == (0, FRAMES)


def test_gray_link_on_a_nic_in_its_namespace(net: Net) -> None:
    tx, rx = packet_socket(net.nic, net.shell.pid), packet_socket(f"{net.leaf}-eth1")
    inj = net.injector()
    rec = inj.inject("gray_link", f"link {net.nic}->{net.leaf}", loss_pct=50)
    assert tables(net.host_ep) == [table_of(rec)]
    assert tables(Endpoint(f"{net.leaf}-eth1")) == []       # not in the root namespace
    _, got = blast(tx, rx)
    assert 850 <= FRAMES - len(got) <= 1150
    inj.undo(rec.name)
    assert tables(net.host_ep) == []


def test_corruption_fails_the_icrc_of_the_asked_fraction(net: Net) -> None:
    tx, rx = packet_socket(net.nic, net.shell.pid), packet_socket(f"{net.leaf}-eth1")
    inj = net.injector()
    rec = inj.inject("corruption", f"link {net.nic}->{net.leaf}", corrupt_pct=20)
    refused, got = blast(tx, rx)
    assert refused == 0 and len(got) == FRAMES
    assert all(parse_roce(f) is not None for f in got)       # headers intact
    bad = sum(not verify_icrc(f) for f in got)
    assert 300 <= bad <= 500
    inj.undo(rec.name)
    _, got = blast(tx, rx)
    assert sum(not verify_icrc(f) for f in got) == 0


def test_undo_removes_exactly_its_own_table(net: Net) -> None:
    root = Endpoint(f"{net.leaf}-eth2")
    keep = f"astf_keep_{net.p}"
    sh("/usr/sbin/nft", "add", "table", "netdev", keep)
    try:
        inj = net.injector()
        a = inj.inject("gray_link", f"link {net.leaf}->{net.spine}", loss_pct=5)
        b = inj.inject("corruption", f"link {net.spine}->{net.leaf}", corrupt_pct=5)
        mine = {table_of(r) for r in (a, b)}
        assert mine <= set(tables(root))
        inj.undo(a.name)
        left = set(tables(root))
        assert table_of(b) in left and table_of(a) not in left
        assert [r.name for r in inj.active()] == [b.name]
        assert inj.undo_all() == [f"undid {b.name} (corruption on link {net.spine}->{net.leaf})"]
        assert not mine & set(tables(root))
        assert keep in sh("/usr/sbin/nft", "list", "tables").stdout
    finally:
        sh("/usr/sbin/nft", "delete", "table", "netdev", keep, check=False)


def test_two_runs_of_one_fault_get_their_own_tables_and_undo_only_theirs(net: Net) -> None:
    """Two testbed runs' injectors (two fault books: the same fault name, gray_link-1)
    put their tables on the same interface, beside a stale table of that fault left by
    an earlier run under the old naming: each gets a table of its own (before, the second
    merged its rule into the first's table, ``astral_fault_gray_link_1``), and each undo
    deletes its own table only."""
    root = Endpoint(f"{net.leaf}-eth2")
    stale = "astral_fault_gray_link_1"                # a dead run's table (the old name)
    sh("/usr/sbin/nft", "add", "table", "netdev", stale)
    other = FaultInjector(net.fabric, net.state, state_path=net.state_path.with_name("other.json"))
    try:
        a = net.injector().inject("gray_link", f"link {net.leaf}->{net.spine}", loss_pct=5)
        b = other.inject("gray_link", f"link {net.leaf}->{net.spine}", loss_pct=7)
        assert a.name == b.name == "gray_link-1"
        assert len({table_of(a), table_of(b), stale}) == 3
        assert {table_of(a), table_of(b), stale} <= set(tables(root))
        assert f"astral_fault_{os.getpid()}_gray_link_1_" in table_of(a)
        net.injector().undo(a.name)
        assert table_of(a) not in tables(root) and {table_of(b), stale} <= set(tables(root))
        other.undo(b.name)
        assert table_of(b) not in tables(root) and stale in tables(root)
    finally:
        sh("/usr/sbin/nft", "delete", "table", "netdev", stale, check=False)


def test_a_table_of_the_same_name_is_not_merged_into_nor_undone(net: Net) -> None:
    """A table that exists already under the name an injection draws (forced here:
    ``table_name`` patched to give it) is another's: the injection fails with nothing
    of its own left and that table is neither merged into nor deleted."""
    taken = f"astral_fault_taken_{net.p}"
    sh("/usr/sbin/nft", "add", "table", "netdev", taken)
    try:
        inj = net.injector()
        with mock.patch("testbed.faults.table_name", lambda *_: taken):
            with pytest.raises(FaultError) as err:
                inj.inject("gray_link", f"link {net.leaf}->{net.spine}", loss_pct=5)
        assert "exists already" in str(err.value)
        assert inj.active() == []
        assert "chain" not in sh("/usr/sbin/nft", "list", "table", "netdev", taken).stdout
    finally:
        sh("/usr/sbin/nft", "delete", "table", "netdev", taken, check=False)


# --------------------------------------------------------------------------- flapping
def operstate(iface: str, ns: str = "") -> str:
    cmd = ["ip", "-j", "link", "show", iface]
    out = sh(*(["ip", "netns", "exec", ns] if ns else []), *cmd, check=False).stdout
    return json.loads(out)[0]["operstate"] if out.strip() else "gone"


def test_flapping_cable_goes_down_and_up_and_is_left_up_with_its_routes(net: Net) -> None:
    inj = net.injector()
    rec = inj.inject("flapping_link", f"cable {net.nic}<->{net.leaf}", period_s=0.4, down_s=0.2)
    (step,) = rec.undo
    assert step["op"] == "flapper" and len(step["ends"]) == 2
    sw = f"{net.leaf}-eth1"
    assert poll(lambda: operstate(sw) == "DOWN", 5)
    assert poll(lambda: operstate(sw) == "UP", 5)
    assert poll(lambda: operstate(sw) == "DOWN", 5)     # again: it flaps
    net.injector().undo(rec.name)       # another injector (as `fault undo` would be)
    assert proc_cmdline(step["pid"]) is None or process_state(step["pid"]) in ("", "Z")
    assert operstate(sw) == "UP" and operstate(net.nic, net.ns) == "UP"
    routes = sh("ip", "netns", "exec", net.ns, "ip", "-4", "route", "show", "dev", net.nic).stdout
    assert "10.8.0.0/24 via 10.9.0.254" in routes and "10.9.0.254 scope link" in routes


def test_flapping_cable_on_bmv2_is_cut_by_a_drop_table_and_its_links_never_go_down(
        net: Net) -> None:
    """BMv2 freezes when its own interface goes down (behavioral-model#1215): there the
    flapper cuts the cable with a drop-everything egress table on both ends (one table per
    namespace), the interfaces stay up, and undo leaves no table behind."""
    net.state.target = "bmv2"
    inj = net.injector()
    rec = inj.inject("flapping_link", f"cable {net.nic}<->{net.leaf}", period_s=0.4, down_s=0.2)
    (step,) = rec.undo
    assert step["op"] == "flapper" and step["cut"] == "drop"
    root, host = Endpoint(f"{net.leaf}-eth1"), net.host_ep
    table = step["table"]
    cut = lambda: table in tables(root) and f"{table}_1" in tables(host)  # noqa: E731
    assert poll(cut, 5)
    assert poll(lambda: not cut(), 5)
    assert poll(cut, 5)                                  # again: it flaps
    for _ in range(20):                                   # never carrier loss on BMv2
        assert operstate(f"{net.leaf}-eth1") == "UP" and operstate(net.nic, net.ns) == "UP"
        threading.Event().wait(0.05)
    net.injector().undo(rec.name)
    assert proc_cmdline(step["pid"]) is None or process_state(step["pid"]) in ("", "Z")
    assert table not in tables(root) and f"{table}_1" not in tables(host)
    assert operstate(f"{net.leaf}-eth1") == "UP" and operstate(net.nic, net.ns) == "UP"


def no_carrier(iface: str, ns: str = "") -> bool:
    """The interface is up but has no carrier (its far end is down)."""
    out = sh(*(["ip", "netns", "exec", ns] if ns else []), "ip", "-j", "link", "show", iface,
             check=False).stdout
    return bool(out.strip()) and "NO-CARRIER" in json.loads(out)[0]["flags"]


def test_dead_tor_takes_every_interface_of_the_leaf_down_and_undo_brings_them_up(
        net: Net) -> None:
    rec = net.injector().inject("dead_tor", f"switch {net.leaf}")
    (step,) = rec.undo
    assert step["op"] == "links" and len(step["ends"]) == 2
    assert operstate(f"{net.leaf}-eth1") == "DOWN" and operstate(f"{net.leaf}-eth2") == "DOWN"
    # the far ends lose their carrier: the NIC (its bond's miimon) and the spine see it
    assert poll(lambda: no_carrier(net.nic, net.ns), 5)
    assert poll(lambda: no_carrier(f"{net.spine}-eth1"), 5)
    net.injector().undo(rec.name)
    assert poll(lambda: operstate(net.nic, net.ns) == "UP", 5)
    assert operstate(f"{net.leaf}-eth1") == "UP" and operstate(f"{net.spine}-eth1") == "UP"
    with pytest.raises(FaultError, match="dead_tor takes a leaf"):
        net.injector().inject("dead_tor", f"switch {net.spine}")


def test_dead_nic_port_cuts_the_leaf_end_and_undo_mends_it(net: Net) -> None:
    rec = net.injector().inject("dead_nic_port", f"nic {net.nic}")
    assert [e["iface"] for e in rec.undo[0]["ends"]] == [f"{net.leaf}-eth1"]
    assert poll(lambda: no_carrier(net.nic, net.ns), 5)
    assert operstate(f"{net.leaf}-eth2") == "UP"          # the leaf's other ports live on
    net.injector().undo(rec.name)
    assert poll(lambda: operstate(net.nic, net.ns) == "UP", 5)
    routes = sh("ip", "netns", "exec", net.ns, "ip", "-4", "route", "show", "dev", net.nic).stdout
    assert "10.8.0.0/24 via 10.9.0.254" in routes


def test_dead_tor_and_nic_port_on_bmv2_are_drop_tables_with_the_links_up(net: Net) -> None:
    net.state.target = "bmv2"
    inj = net.injector()
    tor = inj.inject("dead_tor", f"switch {net.leaf}")
    root = Endpoint(f"{net.leaf}-eth1")
    assert [s["op"] for s in tor.undo] == ["nft"] and tor.undo[0]["table"] in tables(root)
    port = inj.inject("dead_nic_port", f"nic {net.nic}")
    assert [s["op"] for s in port.undo] == ["nft", "nft"]          # both ends, two namespaces
    assert any(t.startswith(port.undo[0]["table"]) for t in tables(net.host_ep))
    assert operstate(f"{net.leaf}-eth1") == "UP" and operstate(net.nic, net.ns) == "UP"
    inj.undo_all()
    assert tables(root) == [] and tables(net.host_ep) == []


# --------------------------------------------------------------------------- signals
def test_hung_switch_stops_the_recorded_process_and_undo_continues_it(net: Net) -> None:
    pid = next(r.pid for r in net.state.procs if r.name == net.spine and r.kind == "switch")
    inj = net.injector()
    rec = inj.inject("hung_switch", f"switch {net.spine}")
    assert process_state(pid) == "T"
    with pytest.raises(FaultError, match="active already"):
        inj.inject("hung_switch", f"switch {net.spine}")
    inj.undo(rec.name)
    assert process_state(pid) in ("S", "R")


def test_dead_agent_stops_the_given_processes(net: Net) -> None:
    a = net.spawn([sys.executable, "-c", "import signal; signal.pause()", "agent"])
    assert poll(lambda: bool(proc_cmdline(a.pid)), 5)
    inj = net.injector(agent_pids={net.host: [a.pid]})
    rec = inj.inject("dead_agent", f"agent {net.host}")
    assert process_state(a.pid) == "T"
    inj.undo(rec.name)
    assert process_state(a.pid) in ("S", "R")


def test_slow_receiver_sends_pause_frames_and_resume_on_undo(net: Net, tmp_path: Path) -> None:
    report = tmp_path / "recv.json"
    recv = net.spawn(["ip", "netns", "exec", net.ns, sys.executable, "-m",
                      "host.nic", "recv", "--iface", net.nic, "--hold-port", "0",
                      "--duration-s", "60", "--json", str(report)])
    net.state.procs.append(ProcRecord(f"nic recv {net.host} {net.nic}", recv.pid,
                                      "", "traffic"))
    from testbed.faultundo import catches
    assert poll(lambda: catches(recv.pid, signal.SIGUSR1), 20), recv.stderr
    rx = packet_socket(f"{net.leaf}-eth1")
    inj = net.injector()
    rec = inj.inject("slow_receiver", f"nic {net.nic}")
    pauses: list[dict[int, int]] = []

    def seen(quanta: int, count: int) -> Callable[[], bool]:
        def check() -> bool:
            while select.select([rx], [], [], 0)[0]:
                data, addr = rx.recvfrom(2048)
                got = parse_pause(data) if addr[2] != PACKET_OUTGOING else None
                if got is not None:
                    pauses.append(got)
            return sum(p == {3: quanta} for p in pauses) >= count
        return check

    assert poll(seen(0xFFFF, 5), 5), pauses
    inj.undo(rec.name)
    assert poll(seen(0, 1), 5), pauses
    recv.send_signal(signal.SIGTERM)
    recv.wait(10)
    stall = json.loads(report.read_text())["stall"]
    assert stall["pause_frames_sent"] >= 5 and stall["resume_frames_sent"] == 1
    assert stall["stalls"] == 1 and not stall["stalled"]


# --------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("kind,target,params,says", [
    ("hung_switch", "switch nosuch", {}, "no switch 'nosuch' (switches: "),
    ("gray_link", "link {leaf}->nosuch", {}, "no link {leaf}->nosuch (links: "),
    ("flapping_link", "cable {leaf}<->nosuch", {}, "no cable {leaf}<->nosuch (cables: "),
    ("slow_receiver", "nic nosuch-eth0", {}, "no NIC 'nosuch-eth0' (NICs: {nic})"),
    ("wrong_ecn_threshold", "port {leaf}:9", {}, "switch {leaf} has no port 9 (ports: 1, 2)"),
    ("blackhole", "route {leaf} 10.7.0.0/24", {}, "has no route for 10.7.0.0/24"),
    ("gray_link", "switch {leaf}", {}, "gray_link takes a link target"),
    ("gray_link", "link {leaf}->{spine}", {"loss_pct": 0}, "loss_pct must be in (0, 100]"),
    ("gray_link", "link {leaf}->{spine}", {"los_pct": 5}, "takes no parameter los_pct"),
    ("nosuch_kind", "switch {leaf}", {}, "unknown fault kind 'nosuch_kind'"),
    ("wrong_ecn_threshold", "port {leaf}:1", {}, "needs the controller's connection"),
    ("controller_down", "controller", {}, "needs the controller's stop/start hooks"),
    ("slow_receiver", "nic {nic}", {}, "no running host.nic recv process for {nic}"),
])
def test_refusals_name_what_exists_and_record_nothing(net: Net, kind: str, target: str,
                                                     params: dict[str, Any], says: str) -> None:
    fmt = {"leaf": net.leaf, "spine": net.spine, "nic": net.nic}
    inj = net.injector()
    with pytest.raises(FaultError) as err:
        inj.inject(kind, target.format(**fmt), **params)
    assert says.format(**fmt) in str(err.value)
    assert inj.active() == [] and tables(Endpoint(f"{net.leaf}-eth1")) == []


def test_data_plane_blackhole_drops_the_prefix_on_every_egress_port(net: Net) -> None:
    inj = net.injector()
    rec = inj.inject("blackhole", f"route {net.leaf} 10.8.0.0/24")
    assert "ip daddr 10.8.0.0/24 counter drop" in rec.how
    listed = sh("/usr/sbin/nft", "list", "table", "netdev", table_of(rec)).stdout
    assert f'device "{net.leaf}-eth1"' in listed and f'device "{net.leaf}-eth2"' in listed
    tx, rx = packet_socket(f"{net.leaf}-eth2"), packet_socket(f"{net.spine}-eth1")
    refused, got = blast(tx, rx, 50)            # the frames go to 10.8.0.1
    assert (refused, len(got)) == (50, 0)
    inj.undo(rec.name)


def test_undo_recorded_is_what_teardown_runs(net: Net) -> None:
    pid = next(r.pid for r in net.state.procs if r.name == net.leaf and r.kind == "switch")
    inj = net.injector()
    inj.inject("gray_link", f"link {net.nic}->{net.leaf}", loss_pct=10)
    inj.inject("hung_switch", f"switch {net.leaf}")
    lines = undo_recorded(net.state_path)
    assert len(lines) == 2 and lines[0].startswith("undid fault hung_switch-2")
    assert lines[1].startswith("undid fault gray_link-1")
    assert process_state(pid) in ("S", "R") and tables(net.host_ep) == []
    assert not faults_path_for(net.state_path).exists()


# --------------------------------------------------------------------------- P4Runtime
class FakeConnection:
    """The part of ``SwitchConnection`` the writer uses, over a dict of entries, with a
    switch's answers: ALREADY_EXISTS, NOT_FOUND, and a closed channel's ValueError."""

    class Info:
        @staticmethod
        def get_name(kind: str, object_id: int) -> str:
            return {1: "routes", 2: "ecn"}[object_id]

    p4info = Info()

    def __init__(self) -> None:
        self.entries: list[p4runtime_pb2.TableEntry] = []
        self.writes: list[tuple[str, p4runtime_pb2.TableEntry]] = []
        self.closed = False

    def table_entry(self, table: str, match: dict[str, Any], action: str = "",
                    params: Any = None) -> p4runtime_pb2.TableEntry:
        te = p4runtime_pb2.TableEntry(table_id=1 if "routes" in table else 2)
        (value,) = match.values()
        fm = te.match.add(field_id=1)
        if isinstance(value, str):
            addr, plen = value.split("/")
            fm.lpm.value, fm.lpm.prefix_len = socket.inet_aton(addr), int(plen)
        else:
            fm.exact.value = bytes([value])
        if action:
            te.action.action.action_id = 7
            for v in (params or {}).values():
                te.action.action.params.add(param_id=1, value=bytes([v]))
        return te

    def read_table(self, table: str) -> list[p4runtime_pb2.TableEntry]:
        tid = 1 if "routes" in table else 2
        return [e for e in self.entries if e.table_id == tid]

    def _write(self, op: str, e: p4runtime_pb2.TableEntry) -> None:
        from controller.p4rt.errors import UpdateError, WriteError
        if self.closed:
            raise ValueError("Cannot invoke RPC on closed channel!")
        there = any(x.match == e.match and x.table_id == e.table_id for x in self.entries)
        if there == (op == "insert"):
            code = "ALREADY_EXISTS" if there else "NOT_FOUND"
            raise WriteError("Write failed (UNKNOWN: )", [UpdateError(0, code, "")])
        self.writes.append((op, e))
        self.entries = [x for x in self.entries if x.match != e.match or x.table_id != e.table_id]
        if op != "delete":
            self.entries.append(e)

    def insert(self, e: p4runtime_pb2.TableEntry) -> None:
        self._write("insert", e)

    def modify(self, e: p4runtime_pb2.TableEntry) -> None:
        self._write("modify", e)

    def delete(self, e: p4runtime_pb2.TableEntry) -> None:
        self._write("delete", e)


def test_p4runtime_writer_deletes_and_restores_exactly_the_saved_entries() -> None:
    conn = FakeConnection()
    route = conn.table_entry("routes", {"d": "10.1.0.0/24"}, "set_nexthop", {"n": 3})
    ecn = conn.table_entry("ecn", {"p": 3}, "set_ecn_red", {"a": 8, "b": 32, "c": 51})
    conn.entries = [route, ecn]
    w = P4RuntimeWriter({"s0": conn})
    undo = w.delete_route("s0", "10.1.0.5/24")
    assert undo.op == "insert" and conn.read_table("routes") == []
    with pytest.raises(Exception, match="has no route for 10.1.0.0/24"):
        w.delete_route("s0", "10.1.0.0/24")
    w.undo(EntryUndo.from_dict(json.loads(json.dumps(undo.to_dict()))))
    assert conn.read_table("routes") == [route]
    undo = w.set_ecn_threshold("s0", 3, 1)
    (now,) = conn.read_table("ecn")
    assert [p.value for p in now.action.action.params] == [b"\x01"]
    w.undo(undo)
    assert conn.read_table("ecn") == [ecn]
    with pytest.raises(Exception, match="no P4Runtime connection to switch 's9'"):
        w.delete_route("s9", "10.1.0.0/24")


def test_an_undo_is_done_when_its_entry_is_back_and_outlives_a_replaced_connection() -> None:
    old, new = FakeConnection(), FakeConnection()
    route = old.table_entry("routes", {"d": "10.1.0.0/24"}, "set_nexthop", {"n": 3})
    old.entries, new.entries = [route], [route]
    conns = {"s0": old}
    w = P4RuntimeWriter(conns)
    undo = w.delete_route("s0", "10.1.0.0/24")
    old.closed = True                  # GOR's recovery closed it, reconnects, re-programs

    def replace() -> None:
        conns["s0"] = new
    threading.Timer(0.2, replace).start()
    w.undo(undo, wait_s=10.0)          # ALREADY_EXISTS on the new one: the same entry
    assert new.read_table("routes") == [route] and new.writes == []
    other = new.table_entry("routes", {"d": "10.1.0.0/24"}, "set_nexthop", {"n": 9})
    new.entries = [other]
    w.undo(undo)                       # there, but not as it was: modified back
    assert new.read_table("routes") == [route]
    new.closed = True
    with pytest.raises(WriterError, match="undo insert on s0 failed: Cannot invoke RPC"):
        w.undo(undo, wait_s=0.2)       # nothing replaces it: a bounded wait, then the error


def test_undo_of_an_unknown_name_lists_the_active_faults(net: Net) -> None:
    inj = net.injector()
    rec = inj.inject("gray_link", f"link {net.leaf}->{net.spine}", loss_pct=5, name="mine")
    with pytest.raises(FaultError, match=r"no active fault 'nosuch' \(active: mine\)"):
        inj.undo("nosuch")
    with pytest.raises(FaultError, match="a fault named mine is active"):
        inj.inject("gray_link", f"link {net.spine}->{net.leaf}", name="mine")
    inj.undo(rec.name)


def test_controller_down_calls_the_hooks_and_undo_starts_it(net: Net) -> None:
    from testbed.faults import CallableHooks
    calls: list[str] = []
    inj = net.injector(controller=CallableHooks(stop=lambda: calls.append("stop"),
                                                start=lambda: calls.append("start")))
    rec = inj.inject("controller_down", "controller")
    assert calls == ["stop"] and rec.target == "controller"
    inj.undo(rec.name)
    assert calls == ["stop", "start"]
