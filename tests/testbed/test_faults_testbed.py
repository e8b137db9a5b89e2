"""The fault injector on a live p4sim fabric (root and Mininet; skipped otherwise). One
default fabric is brought up for the module (``testbed.traffic.testbed_up``, its own state
file) and torn down after; run it under the testbed lock::

    flock /tmp/astral-testbed.lock .venv/bin/python -m pytest -q \\
        tests/testbed/test_faults_testbed.py

Each fault is checked by what it does to real traffic and undone by name: a 100 % gray
link on a NIC and a route removed through P4Runtime (and in its data-plane form) stop
ping from b0s0 to b1s0 and it answers again after undo; a hung switch stops it until
SIGCONT; a wrong ECN threshold is read back from the switch and the old entry is back
after undo; a stalled receiver's PAUSE frames are counted by its leaf's P4 program
(``FabricIngress.pfc.rx_frames``); a flapping cable goes down and up and is left up;
the command line injects, lists and undoes; ``undo_recorded`` (teardown) continues a
hung switch. Waits are bounded probes. Takes ~1 min.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from testbed.traffic import LiveTestbed, testbed_unavailable

SKIP_REASON = testbed_unavailable() or ""
pytestmark = pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON or "-")
REPO = Path(__file__).resolve().parents[2]
SRC, DST_IP = "b0s0", "10.1.0.1"          # b0s0-eth0 -> b0r0l0 -> spine -> b1r0l0 -> b1s0-eth0


def poll(cond: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() >= deadline:
            return False
        threading.Event().wait(0.05)
    return True


@pytest.fixture(scope="module")
def tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveTestbed]:
    from testbed.faults import undo_recorded
    from testbed.traffic import testbed_up
    tmp = tmp_path_factory.mktemp("faults-testbed")
    state = tmp / "state.json"
    with testbed_up(log_dir=tmp / "logs", state_path=state) as live:
        live.fnet.opts.state_path.with_name("topology.json").write_text(live.fabric.to_json())
        try:
            yield live
        finally:
            undo_recorded(state)
    assert not state.exists()


@pytest.fixture
def injector(tb: LiveTestbed):  # type: ignore[no-untyped-def]
    from testbed.faultp4rt import P4RuntimeWriter
    from testbed.faults import FaultInjector
    inj = FaultInjector(tb.fabric, tb.state, state_path=tb.fnet.opts.state_path,
                        writer=P4RuntimeWriter(tb.programmer.connections))
    yield inj
    assert inj.active() == [], "a test left a fault behind"


def shell_pid(tb: LiveTestbed, host: str) -> int:
    return next(r.pid for r in tb.state.procs if r.kind == "host-shell" and r.name == host)


def pings(tb: LiveTestbed, count: int = 2) -> int:
    """Replies to ``count`` pings from b0s0 (10.0.0.1) to b1s0 (10.1.0.1)."""
    out = subprocess.run(["mnexec", "-a", str(shell_pid(tb, SRC)), "ping", "-n", "-q", "-c",
                          str(count), "-i", "0.2", "-W", "1", "-I", "10.0.0.1", DST_IP],
                         capture_output=True, text=True, timeout=30).stdout
    return int(out.split(" received")[0].rsplit(",", 1)[-1].split()[0])


def test_gray_link_on_a_nic_drops_everything_at_100_percent(tb, injector) -> None:
    assert pings(tb) == 2
    rec = injector.inject("gray_link", f"link {SRC}-eth0->b0r0l0", loss_pct=100)
    assert pings(tb) == 0
    injector.undo(rec.name)
    assert pings(tb) == 2


def ecn_entry(tb: LiveTestbed, switch: str, port: int):  # type: ignore[no-untyped-def]
    from testbed.faultp4rt import T_ECN
    conn = tb.programmer.connection(switch)
    (entry,) = [e for e in conn.read_table(T_ECN)
                if int.from_bytes(e.match[0].exact.value, "big") == port]
    return entry


def test_blackhole_through_p4runtime_and_in_the_data_plane(tb, injector) -> None:
    from testbed.faultp4rt import T_ROUTES
    conn = tb.programmer.connection("b1r0l0")
    before = sorted(e.SerializeToString() for e in conn.read_table(T_ROUTES))
    rec = injector.inject("blackhole", f"route b1r0l0 {DST_IP}/32")
    assert "P4Runtime DELETE" in rec.how
    assert len(conn.read_table(T_ROUTES)) == len(before) - 1
    assert pings(tb) == 0
    injector.undo(rec.name)
    assert sorted(e.SerializeToString() for e in conn.read_table(T_ROUTES)) == before
    assert pings(tb) == 2
    rec = injector.inject("blackhole", f"route b1r0l0 {DST_IP}/32", data_plane=True)
    assert "nft" in rec.how and pings(tb) == 0
    injector.undo(rec.name)
    assert pings(tb) == 2


def test_hung_switch_stops_forwarding_until_undone(tb, injector) -> None:
    from testbed.faultundo import process_state
    rec = injector.inject("hung_switch", "switch b1r0l0")
    pid = rec.undo[0]["pid"]
    assert process_state(pid) == "T" and pings(tb, 1) == 0
    injector.undo(rec.name)
    assert process_state(pid) != "T"
    assert poll(lambda: pings(tb, 1) == 1, 10)


def test_wrong_ecn_threshold_is_written_and_the_old_entry_restored(tb, injector) -> None:
    before = ecn_entry(tb, "b0r0l0", 3)
    rec = injector.inject("wrong_ecn_threshold", "port b0r0l0:3")
    now = ecn_entry(tb, "b0r0l0", 3)
    info = tb.programmer.connection("b0r0l0").p4info
    assert now.action.action.action_id == info.get("action", "set_ecn_threshold").preamble.id
    assert int.from_bytes(now.action.action.params[0].value, "big") == 1
    injector.undo(rec.name)
    assert ecn_entry(tb, "b0r0l0", 3) == before


def test_slow_receiver_pauses_its_leaf(tb, injector, tmp_path: Path) -> None:
    from testbed.faultundo import catches
    from testbed.net import ProcRecord
    nic, host, leaf, port = "b1s0-eth0", "b1s0", "b1r0l0", 1
    report = tmp_path / "recv.json"
    recv = subprocess.Popen(["mnexec", "-a", str(shell_pid(tb, host)), sys.executable, "-m",
                             "host.nic", "recv", "--iface", nic, "--duration-s", "60",
                             "--json", str(report)], cwd=REPO, stderr=subprocess.PIPE)
    rec_proc = ProcRecord(f"nic recv {host} {nic}", recv.pid, "", "traffic")
    tb.state.procs.append(rec_proc)
    try:
        assert poll(lambda: catches(recv.pid, signal.SIGUSR1), 20)
        conn = tb.programmer.connection(leaf)

        def rx_pause() -> int:
            return conn.read_counter("FabricIngress.pfc.rx_frames", port * 8 + 3)[
                port * 8 + 3].packets

        start = rx_pause()
        rec = injector.inject("slow_receiver", f"nic {nic}")
        assert poll(lambda: rx_pause() - start >= 5, 10)
        injector.undo(rec.name)
        recv.send_signal(signal.SIGTERM)
        recv.wait(15)
        stall = json.loads(report.read_text())["stall"]
        assert stall["pause_frames_sent"] >= 5 and stall["resume_frames_sent"] == 1
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait(10)
        tb.state.procs.remove(rec_proc)


def operstate(iface: str) -> str:
    return Path(f"/sys/class/net/{iface}/operstate").read_text().strip()


def test_flapping_cable_flaps_and_is_left_up(tb, injector) -> None:
    rec = injector.inject("flapping_link", "cable b0r0l0<->s0", period_s=0.6, down_s=0.3)
    assert poll(lambda: operstate("s0-eth1") == "down", 5)
    assert poll(lambda: operstate("s0-eth1") == "up", 5)
    injector.undo(rec.name)
    assert operstate("s0-eth1") == "up" and operstate("b0r0l0-eth3") == "up"
    assert poll(lambda: pings(tb, 1) == 1, 15)


def cli(tb: LiveTestbed, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "testbed.faultcli", *args, "--state",
                           str(tb.fnet.opts.state_path)], cwd=REPO, capture_output=True,
                          text=True, timeout=60)


def test_command_line_injects_lists_and_undoes(tb, injector) -> None:
    res = cli(tb, "inject", "gray_link", "link s0->b1r0l0", "--param", "loss_pct=30",
              "--name", "cli-gray")
    assert res.returncode == 0, res.stderr
    assert "fault cli-gray: gray_link on link s0->b1r0l0" in res.stdout
    assert "cli-gray" in cli(tb, "list").stdout
    assert [r.name for r in injector.active()] == ["cli-gray"]     # one faults file
    res = cli(tb, "inject", "wrong_ecn_threshold", "port b0r0l0:3")
    assert res.returncode == 2 and "needs the controller's connection" in res.stderr
    res = cli(tb, "inject", "hung_switch", "switch s9")
    assert res.returncode == 2 and "no switch 's9' (switches: b0r0l0" in res.stderr
    res = cli(tb, "undo", "--all")
    assert res.returncode == 0 and "undid cli-gray" in res.stdout
    assert injector.active() == []


def test_undo_recorded_continues_a_hung_switch(tb, injector) -> None:
    from testbed.faults import undo_recorded
    from testbed.faultundo import process_state
    rec = injector.inject("hung_switch", "switch s1")
    injector.inject("gray_link", "link s1->b0r0l0", loss_pct=50)
    lines = undo_recorded(tb.fnet.opts.state_path)
    assert len(lines) == 2 and process_state(rec.undo[0]["pid"]) != "T"
