"""A NIC process always answers its signals (issue 32: a sender of the incast testbed run
sent nothing, ignored SIGTERM for 10 s and was killed, leaving no report).

* The go signal (SIGUSR1) landing on **any** line the main thread runs while it waits for
  it (``sys.settrace`` raises the signal at the k-th line, for every k): the wait ends
  with "go". The same harness on the old wait — ``threading.Event.set()`` in the
  handler — hangs (the handler waits for the Event's lock that its own thread holds
  inside ``Event.wait``), so this test can fail.
* ``NicPort.run`` over hostile links, in a child process with the CLI's SIGTERM flag:
  a peer that never reads (every send EAGAIN), ``sendmmsg`` failing with ENOBUFS forever,
  a PFC PAUSE refreshed forever, a flood of received frames, with a 1 ms tick and with
  none: SIGTERM ends the run within a bound far below its duration, with a report.
* ``python -m host.nic send --wait-go`` on ``lo`` in a private network namespace (root):
  SIGTERM before the go exits 1 at once; go, then SIGTERM, writes the report.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXIT_BOUND_S = 10.0
"""A child must exit this soon after SIGTERM (its run's duration is 120 s): a bound on a
hang, not a speed figure."""

GO_HARNESS = r'''
import signal, sys, threading
from host.nic.cli import wait_for_go
from host.nic.sigflag import SignalFlag

OLD = sys.argv[1] == "old"


def old_wait(go, timeout_s):
    """The wait before issue 32's fix: an Event set from the handler."""
    deadline = __import__("time").monotonic() + timeout_s
    while not go.is_set() and __import__("time").monotonic() < deadline:
        go.wait(0.1)
    return go.is_set()


def one(k):
    """Wait for go, the signal raised at the k-th traced line; (result, lines seen)."""
    go = threading.Event() if OLD else SignalFlag()
    stop = None if OLD else SignalFlag()
    signal.signal(signal.SIGUSR1, lambda s, f: go.set())
    seen = [0]

    def tracer(frame, event, arg):
        if event == "line":
            seen[0] += 1
            if seen[0] == k:
                signal.raise_signal(signal.SIGUSR1)   # its handler runs right here
        return tracer
    sys.settrace(tracer)
    try:
        ok = old_wait(go, 0.3) if OLD else wait_for_go(go, stop, 0.3)
    finally:
        sys.settrace(None)
    return ok, seen[0]


k = 1
while True:
    ok, lines = one(k)
    if lines < k:                 # the wait blocked in select before its k-th line ran:
        break                     # every line before has had the signal
    if not ok:
        print(f"k={k}: no go", flush=True)
        sys.exit(1)
    k += 1
print(f"ok {k - 1}", flush=True)
'''


def _run_go_harness(which: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", GO_HARNESS, which], cwd=REPO, text=True,
                          capture_output=True, timeout=timeout_s)


def test_the_go_signal_on_any_line_of_the_wait_starts_the_sender() -> None:
    res = _run_go_harness("new", 60.0)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("ok ") and int(res.stdout.split()[1]) >= 3, res.stdout


def test_the_harness_catches_the_old_event_deadlock() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        _run_go_harness("old", 3.0)


ELSEWHERE_HARNESS = r"""
import os, select, signal, sys, threading, time
from host.nic.cli import wait_for_go
from host.nic.sigflag import SignalFlag

OLD, TIMEOUT_S = sys.argv[1] == "old", float(sys.argv[2])
SELECT_SYSCALLS = {"23", "270"}        # x86_64 select, pselect6 (/proc/.../syscall)


def old_wait_for_go(go, stop, timeout_s):
    # the wait before CI's lost go (c862f58): select on the flags' pipes only
    deadline = time.monotonic() + timeout_s
    while not (go.is_set() or stop.is_set()):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        select.select([go.fileno(), stop.fileno()], [], [], left)
    return go.is_set() and not stop.is_set()


go, stop = SignalFlag(), SignalFlag()
signal.signal(signal.SIGUSR1, go.handler)
main_tid = threading.get_native_id()


def launcher():
    # started before the main thread blocks SIGUSR1, so this thread keeps it: the kernel
    # must hand the process's SIGUSR1 to this thread, as it may to a sender's gRPC threads
    path = f"/proc/self/task/{main_tid}/syscall"
    deadline = time.monotonic() + 10.0
    while open(path).read().split()[0] not in SELECT_SYSCALLS:   # probe: main in select
        if time.monotonic() > deadline:
            print("main thread never entered select", flush=True)
            os._exit(3)
    os.kill(os.getpid(), signal.SIGUSR1)


t = threading.Thread(target=launcher, daemon=True)
t.start()                          # keeps SIGUSR1 unblocked (a thread inherits its mask)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
t0 = time.monotonic()
ok = (old_wait_for_go if OLD else wait_for_go)(go, stop, TIMEOUT_S)
print(f"{'go' if ok else 'no go'} {time.monotonic() - t0:.3f}", flush=True)
"""


def _run_elsewhere_harness(which: str, wait_s: float) -> tuple[bool, float]:
    res = subprocess.run([sys.executable, "-c", ELSEWHERE_HARNESS, which, str(wait_s)],
                         cwd=REPO, text=True, capture_output=True, timeout=wait_s + 30.0)
    assert res.returncode == 0, res.stdout + res.stderr
    word, elapsed = res.stdout.rsplit(maxsplit=1)
    return word == "go", float(elapsed)


ELSEWHERE_WAIT_S = 4.0
"""The go wait's bound in the harness: the signal is sent at once, so a wait that lasts
it out missed the signal (a bound on a miss, not a speed figure)."""


def test_a_go_that_reaches_another_thread_ends_the_wait_at_once() -> None:
    """The main thread sleeps in ``select``; SIGUSR1 lands on another thread (the main thread
    blocks it). The wakeup fd ends the wait at once, with "go"."""
    ok, elapsed_s = _run_elsewhere_harness("new", ELSEWHERE_WAIT_S)
    assert ok and elapsed_s < ELSEWHERE_WAIT_S / 2, (ok, elapsed_s)


def test_the_elsewhere_harness_catches_the_wait_without_a_wakeup_fd() -> None:
    """The same on the wait before the fix: it sleeps out its whole bound (the Python
    handler runs only when ``select`` returns), so the test above can fail."""
    _, elapsed_s = _run_elsewhere_harness("old", ELSEWHERE_WAIT_S)
    assert elapsed_s >= ELSEWHERE_WAIT_S * 0.95, elapsed_s


RUN_CHILD = r'''
import ctypes, errno, json, signal, socket, sys, threading
import host.nic.mmsg as mmsg
from host.nic.frames import FlowSpec
from host.nic.io import DatagramIO, NicPort
from host.nic.pfc import build_pause
from host.nic.qp import SenderQP
from host.nic.sigflag import SignalFlag

mode, tick_s = sys.argv[1], float(sys.argv[2])
stop = SignalFlag()
signal.signal(signal.SIGTERM, stop.handler)
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
peer_stop = threading.Event()


def peer_loop(frame, gap_s):
    while not peer_stop.wait(gap_s):
        try:
            b.send(frame)
        except OSError:
            pass


b.setblocking(False)


if mode == "enobufs":
    def refuse(fd, hdrs, count, flags):
        ctypes.set_errno(errno.ENOBUFS)
        return -1
    mmsg._sendmmsg = refuse
if mode == "pause":                      # paused before the first step, and kept paused
    b.send(build_pause("02:00:00:00:01:01", {3: 0xFFFF}))
    threading.Thread(target=peer_loop, args=(build_pause("02:00:00:00:01:01", {3: 0xFFFF}), 0.01),
                     daemon=True).start()
if mode == "flood":
    threading.Thread(target=peer_loop, args=(bytes(60), 0.0), daemon=True).start()
io = DatagramIO(a)
if mode == "enobufs":
    def refused_send(frame):
        io.tx_dropped += 1
        return False
    io.send = refused_send
port = NicPort(io, line_rate_bps=1e8, tick_s=tick_s)
flow = FlowSpec("02:00:00:00:00:01", "02:00:00:00:01:01", "10.0.0.1", "10.1.0.1", 49152, 7)
port.add_sender(SenderQP(flow, message_bytes=65536, mtu=1024, rate_limit=False))
said = [False]


def stopping():
    if not said[0] and port.steps >= 20:
        said[0] = True
        print("running", flush=True)
    return stop.is_set()


elapsed = port.run(120.0, stop=stopping)
peer_stop.set()
print(json.dumps({"elapsed_s": elapsed, **port.report(0.0)}), flush=True)
'''


def _signal_child_and_wait(proc: subprocess.Popen[str], first_line: str) -> tuple[float, str]:
    """Read ``first_line`` from the child, SIGTERM it; (seconds to exit, rest of stdout)."""
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == first_line, (line, proc.stderr.read() if proc.stderr else "")
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=EXIT_BOUND_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"no exit within {EXIT_BOUND_S:g} s of SIGTERM")
    assert proc.returncode == 0, err
    return time.monotonic() - t0, out


@pytest.mark.parametrize("mode, tick_s", [
    ("peer_never_reads", 0.001), ("peer_never_reads", 0.0), ("enobufs", 0.001),
    ("enobufs", 0.0), ("pause", 0.001), ("pause", 0.0), ("flood", 0.001)])
def test_sigterm_ends_the_run_on_a_hostile_link(mode: str, tick_s: float) -> None:
    proc = subprocess.Popen([sys.executable, "-c", RUN_CHILD, mode, str(tick_s)], cwd=REPO,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    took_s, out = _signal_child_and_wait(proc, "running")
    report = json.loads(out)
    assert report["elapsed_s"] < 120.0 and took_s < EXIT_BOUND_S
    sent = report["flows"][0]["sent_pkts"]
    if mode in ("peer_never_reads", "enobufs"):
        assert report["tx_refused"] > 0 and sent > 0, report
    if mode == "enobufs":
        assert report["tx_frames"] == 0, report          # every frame refused
    if mode == "pause":
        assert report["rx_pfc"] > 0 and sent == 0, report  # paused from the start
    if mode == "flood":
        assert report["rx_frames"] > 0 and report["rx_other"] > 0, report


def _netns_cmd(*args: str) -> list[str]:
    """``args`` run in a private network namespace with ``lo`` up (the process keeps its
    PID: ``unshare`` and ``sh`` exec)."""
    inner = " ".join(f"'{a}'" for a in args)
    return ["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {inner}"]


def _sender(tmp: Path) -> list[str]:
    return _netns_cmd(sys.executable, "-m", "host.nic", "send", "--iface", "lo", "--dst-mac",
                      "02:00:00:00:01:01", "--src-ip", "10.0.0.1", "--dst-ip", "10.1.0.1",
                      "--sport", "49152", "--line-rate-pps", "500", "--hold-port", "0",
                      "--duration-s", "120", "--json", str(tmp / "send.json"),
                      "--ready-file", str(tmp / "send.ready"), "--wait-go")


def _wait_ready(proc: subprocess.Popen[bytes], ready: Path) -> None:
    deadline = time.monotonic() + 30.0
    while not ready.is_file():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sender never wrote its ready file"
        time.sleep(0.02)


needs_root_netns = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None,
    reason="needs root, unshare and ip (a private network namespace, AF_PACKET on lo)")


@needs_root_netns
def test_sender_cli_exits_on_sigterm_before_and_after_its_go(tmp_path: Path) -> None:
    proc = subprocess.Popen(_sender(tmp_path), cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _wait_ready(proc, tmp_path / "send.ready")
    proc.send_signal(signal.SIGTERM)                    # no go yet
    _, err = proc.communicate(timeout=EXIT_BOUND_S)
    assert proc.returncode == 1 and b"no go signal" in err, err

    (tmp_path / "send.ready").unlink()
    proc = subprocess.Popen(_sender(tmp_path), cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _wait_ready(proc, tmp_path / "send.ready")
    for _ in range(50):                                 # a burst of gos: one is enough
        proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 30.0
    metrics_seen = False
    while not metrics_seen and time.monotonic() < deadline:   # it sends: frames on lo
        metrics_seen = proc.poll() is None and _sent_any(proc.pid)
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=EXIT_BOUND_S)
    assert proc.returncode == 0, err
    report = json.loads((tmp_path / "send.json").read_text())
    assert metrics_seen and report["flows"][0]["sent_pkts"] > 0, report


def _sent_any(pid: int) -> bool:
    """True once ``lo`` in ``pid``'s namespace has transmitted a packet."""
    try:
        text = Path(f"/proc/{pid}/net/dev").read_text()
    except OSError:
        return False
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            return int(rest.split()[9]) > 0          # tx packets
    return False
