"""The ``fornax`` benchmarks: the FORNAX manager against the software-centric baseline,
on the same SmartNIC program (its two builds) and the same policy.

``fornax.scale`` — p4sim in-process in a child process (:mod:`bench.fornax_switch`: the
switch device with in-process ports and its P4Runtime server; a live switch with veths
holds 10^5 sessions too, but its packet rate would make the setup take minutes), the
manager in this process, so this process's CPU time is the manager's. Per manager and
per scale (10^4 and 10^5 sessions; 20 local VMs, 4 remote ones, one VPC):

* ``fornax.session_setup_per_s.<manager>.<scale>`` — connections' first packets (SYN)
  injected on the VM ports as fast as the switch takes them; sessions installed per
  second until all are (the switch's punt, the policy, the write, the re-injection).
  The measurements below start once the setup's tail is done (the re-injected packets
  through the switch, FORNAX's TCP digest of each).
* ``fornax.bytes_per_session.<manager>.<scale>`` — the manager's per-session memory: the
  deep size of its session store (FORNAX: keys, slots, the free-slot stack and the
  generation bytes; baseline: the flow records) over the sessions, the policy excluded.
* ``fornax.manager_cpu_s_per_min.<manager>.<scale>`` — CPU seconds of the manager per
  minute of steady state (``WINDOW_S`` measured, scaled to a minute) while 1 % of the
  sessions per minute are replaced (new SYNs, RSTs of old ones) and one policy change
  touches the sessions of one VM (5 %), which then carry one packet each: aging and
  policy-change detection, the rest idle. FORNAX acts on the events the NIC sends; the
  baseline walks its table every ``BASELINE_WALK_S``.
* ``fornax.policy_change_converge_s.<manager>.<scale>`` — from the change until no
  affected session can forward a packet under the old policy: FORNAX, the version write
  (the stale entries refuse their next packet); the baseline, the end of its next walk.
  ``fornax.policy_change_rebuild_s.fornax.<scale>``: until every affected session that
  carried a packet was re-evaluated.
* ``fornax.policy_change_work.<manager>.<scale>`` — sessions (FORNAX) or flows
  (baseline) the manager evaluated again for the change.

``fornax.faults`` — the testbed scenario (root, Mininet; p4sim), once per manager:
``fornax.fault_detect_s.corruption.<manager>``, ``fornax.fault_detect_s.hang.fornax``
(the baseline has no heartbeat: no figure), ``fornax.connections_broken.<manager>``.

Example::

    $ sudo .venv/bin/python -m bench fornax
"""
from __future__ import annotations

import gc
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path
from typing import Any, Callable, Optional

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure
from fornax.baseline import BaselineConfig, BaselineManager
from fornax.build import SmartNicBuild
from fornax.manager import FornaxManager, ManagerConfig
from fornax.policy import parse_policy
from p4src.smartnic import model as M
from scenarios.fornax import run_fornax

REPO = Path(__file__).resolve().parents[1]
CPU_PORT = 255
UPLINK = 1
REMOTES = 4
LOCAL_VMS = 20
SCALES = {"1e4": 10_000, "1e5": 100_000}
WINDOW_S = 30.0
BASELINE_WALK_S = 10.0
GW_MAC = bytes.fromhex("02fe00000001")


def vm_of(c: int, vms: int = LOCAL_VMS) -> int:
    """The local VM (0-based) of connection ``c``."""
    return c % vms


def conn_tuple(c: int, vms: int = LOCAL_VMS) -> tuple[int, int, int, int]:
    """(source address, source port, destination address, destination port) of
    connection ``c``: local VM ``c % vms`` (10.1.0.x) to remote VM 10.1.1.y, port 80."""
    vm = c % vms
    r = (c // vms) % REMOTES
    k = c // (vms * REMOTES)
    return 0x0A010000 + vm + 1, 1024 + k, 0x0A010100 + r + 1, 80


def conn_frame(c: int, kind: str, vms: int = LOCAL_VMS) -> bytes:
    """A frame of connection ``c`` from its VM: ``syn``, ``ack`` or ``rst``."""
    src, sport, dst, dport = conn_tuple(c, vms)
    flags = {"syn": 0x02, "ack": 0x10, "rst": 0x14}[kind]
    mac = bytes.fromhex("0200000100") + bytes([vm_of(c, vms) + 1])
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, 0, 0x4000, 64, 6, 0,
                     src.to_bytes(4, "big"), dst.to_bytes(4, "big"))
    tcp = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 0x50, flags, 65535, 0, 0)
    return GW_MAC + mac + b"\x08\x00" + ip + tcp


def bench_policy(vms: int = LOCAL_VMS, change: bool = False) -> str:
    """The bench's policy: ``vms`` local VMs (group each), 4 remote ones; ``change``: VM
    0's group denies its port-80 connections (they are 1/vms of the sessions)."""
    lines = ["nic nicA vtep 192.168.0.1 uplink-mac 02:fa:00:00:00:01 underlay-mac "
             "02:fa:00:00:00:02 gateway-mac 02:fe:00:00:00:01",
             "nic nicB vtep 192.168.0.2 uplink-mac 02:fa:00:00:00:02 underlay-mac "
             "02:fa:00:00:00:01 gateway-mac 02:fe:00:00:00:02", "vpc blue vni 100"]
    for i in range(vms):
        lines.append(f"vm v{i} vpc blue nic nicA port {2 + i} ip 10.1.0.{i + 1} "
                     f"mac 02:00:00:01:00:{i + 1:02x} groups g{i}")
        if i == 0 and change:
            lines.append("rule g0 egress deny tcp 80 to 0.0.0.0/0")
        lines += [f"rule g{i} egress allow any to 0.0.0.0/0",
                  f"rule g{i} ingress allow tcp 80 from 10.1.0.0/16"]
    for r in range(REMOTES):
        lines.append(f"vm r{r} vpc blue nic nicB port {2 + r} ip 10.1.1.{r + 1} "
                     f"mac 02:00:00:02:00:{r + 1:02x} groups remote")
    lines += ["rule remote egress allow any to 0.0.0.0/0",
              "rule remote ingress allow tcp 80 from 10.1.0.0/16",
              "route blue 10.1.0.0/16 direct"]
    return "\n".join(lines) + "\n"


def deep_size(root: Any, exclude: set[int]) -> int:
    """Bytes of every object reachable from ``root`` but those in ``exclude`` (ids)."""
    seen = set(exclude)
    stack, total = [root], 0
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        stack.extend(gc.get_referents(o))
    return total


def reachable_ids(root: Any) -> set[int]:
    """Ids of every object reachable from ``root`` (not through classes, functions or
    modules)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (type, types.ModuleType, types.FunctionType,
                                            types.MethodType)):
            continue
        seen.add(id(o))
        stack.extend(gc.get_referents(o))
    return seen


class ChildSwitch:
    """:mod:`bench.fornax_switch` as a child process."""

    def __init__(self, vms: int = LOCAL_VMS) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.fornax_switch", "--vms",
                                      str(vms)], cwd=REPO, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        assert self.proc.stdout is not None
        self.grpc = json.loads(self.proc.stdout.readline())["grpc"]

    def call(self, **req: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise BenchCheckError("the bench switch process ended")
        return json.loads(line)

    def inject(self, kind: str, start: int, stop: int, step: int = 1) -> int:
        return int(self.call(cmd="inject", kind=kind, start=start, stop=stop, step=step)["queued"])

    def close(self) -> None:
        try:
            self.call(cmd="quit")
        except (BenchCheckError, OSError, ValueError):
            pass
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _until(fn: Callable[[], bool], timeout_s: float, what: str) -> float:
    t0 = time.monotonic()
    while not fn():
        if time.monotonic() - t0 > timeout_s:
            raise BenchCheckError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(0.05)
    return time.monotonic() - t0


VNI = 100                       # the bench policy's VPC "blue"
SYN_RTO_S = 1.0                 # a sender's first SYN retransmission timeout (RFC 6298 2.1)


def conn_key(c: int, baseline: bool = False) -> M.SessionKey:
    """The session key (the baseline: the flow key of the SYN's direction) that
    connection ``c``'s SYN installs."""
    src, sport, dst, dport = conn_tuple(c)
    return M.canonical_key(VNI, 6, src, sport, dst, dport, baseline)[0]


def _setup(child: "ChildSwitch", installed: Callable[[int], bool], count: Callable[[], int],
           n: int, timeout_s: float, what: str) -> float:
    """Wait until ``n`` connections are installed, as their senders would: a SYN the
    manager dropped (its punt rate limit and per-source shares count and drop the excess)
    is sent again once installs have stopped for a retransmission timeout (1 s, doubled
    each time: RFC 6298 2.1 and 5.5), as its TCP sender would. Returns the seconds from the first SYN to the last install."""
    t0 = time.monotonic()
    rto_s, last = SYN_RTO_S, -1
    while True:
        left = timeout_s - (time.monotonic() - t0)
        try:
            _until(lambda: count() >= n, min(rto_s, max(0.0, left)), what)
            return time.monotonic() - t0
        except BenchCheckError:
            if time.monotonic() - t0 >= timeout_s:
                raise
        now = count()
        if now == last:             # installs stopped: the rest were dropped, not queued
            for c in (c for c in range(n) if not installed(c)):
                child.inject("syn", c, c + 1)
            rto_s *= 2
        last = now


def run_scale(kind: str, n: int, window_s: float = WINDOW_S,
              progress: Callable[[str], None] = lambda m: None) -> dict[str, float]:
    """One manager (``fornax`` or ``baseline``) at ``n`` sessions: the figures of the
    module docstring (keys without the ``fornax.`` prefix and the suffixes)."""
    baseline = kind == "baseline"
    p4info, config = SmartNicBuild(baseline=baseline).compile()
    tmp = Path(tempfile.mkdtemp(prefix="fornax-bench-"))
    policy_file = tmp / "bench.policy"
    policy_file.write_text(bench_policy())
    child = ChildSwitch()
    mgr: Any = None
    try:
        common = dict(nic="nicA", grpc_addr=child.grpc, device_id=1, policy_path=policy_file,
                      p4info=p4info, device_config=config, election_id=(0, 7))
        if baseline:
            # the bench walks itself, from the change on (a walk during the setup would
            # slow the switch it reads, and time the setup of the next)
            # a walk's Read of 2 x 10^5 entries takes 15 s on a quiet machine and over 30 s
            # (the manager's default deadline) on a loaded one: the bench measures the walk,
            # so its Read gets a deadline it cannot reach
            mgr = BaselineManager(BaselineConfig(**common, idle_timeout_s=300.0,
                                                 walk_period_s=1e9, write_timeout_s=600.0))
            count = lambda: len(mgr.flows) // 2  # noqa: E731
        else:
            mgr = FornaxManager(ManagerConfig(**common, idle_timeout_s=3600.0,
                                              hang_after_s=30.0))
            count = lambda: len(mgr.store)  # noqa: E731
        mgr.start()
        # ---------------------------------------------------------------- setup
        t0 = time.monotonic()
        child.inject("syn", 0, n)
        held = mgr.flows if baseline else mgr.store
        setup_s = _setup(child, lambda c: conn_key(c, baseline) in held, count, n,
                         120 + n / 50, f"{kind}: {n} sessions installed")
        progress(f"  {kind} {n}: {n} sessions in {setup_s:.1f} s")
        # the setup's tail (re-injected first packets, FORNAX's TCP digests of them) is
        # setup work: the window starts once the switch and the manager have done it
        child.call(cmd="idle")
        if not baseline:
            _until(lambda: mgr.counters.get("tcp_events", 0)
                   + mgr.counters.get("digests_rate_limited", 0) >= n, 120 + n / 50,
                   f"{kind}: the digests of {n} first packets")
        _until(mgr.events.empty, 120, f"{kind}: the manager's events handled")
        gc.collect()
        shared = reachable_ids(mgr.view)
        root = mgr.flows if baseline else mgr.store
        size = deep_size(root, shared)
        # ---------------------------------------------------------------- the window
        churn = max(1, int(n * 0.01 * window_s / 60.0))
        affected = list(range(0, n, LOCAL_VMS))            # VM 0's sessions
        c0, w0 = _cpu_s(), time.monotonic()
        t_change = time.time()
        res = mgr.reload(parse_policy(bench_policy(change=True), str(policy_file)))
        version_s = res.get("write_s", 0.0)
        stale0 = mgr.counters.get("stale_rebuilt", 0)
        walking = threading.Event()
        walker = None
        walk_failed: list[BaseException] = []
        if baseline:
            def walk_loop() -> None:
                while not walking.is_set():
                    start = time.monotonic()
                    try:
                        mgr.walk()
                    except Exception as exc:  # noqa: BLE001 - e.g. the Read's deadline
                        walk_failed.append(exc)
                        return
                    walking.wait(max(0.0, start + BASELINE_WALK_S - time.monotonic()))
            walker = threading.Thread(target=walk_loop, daemon=True)
            walker.start()
        child.inject("ack", 0, n, LOCAL_VMS)
        chunks = 5
        for i in range(chunks):
            a, b = n + i * churn // chunks, n + (i + 1) * churn // chunks
            child.inject("syn", a, b)
            child.inject("rst", 1 + i * churn // chunks, 1 + (i + 1) * churn // chunks)
            if i == 0 and not baseline:
                rebuild_s = _until(lambda: mgr.counters.get("stale_rebuilt", 0) - stale0
                                   >= len(affected), 300, f"{kind}: stale sessions rebuilt")
            time.sleep(max(0.0, w0 + (i + 1) * window_s / chunks - time.monotonic()))
        if baseline:                      # the window lasts at least until the first walk ends
            _until(lambda: len(mgr.walks) > 0 or bool(walk_failed), 3600,
                   "baseline: a walk after the change")
            if walk_failed and not mgr.walks:
                raise BenchCheckError(f"baseline: the walk failed: {walk_failed[0]!r:.300}")
        cpu = _cpu_s() - c0
        span = time.monotonic() - w0
        walking.set()
        if walker is not None:
            walker.join(3600)
        if baseline:
            first = mgr.walks[0]
            converge = first["t"] - t_change
            work = float(first["entries"])
            walk_s = first["walk_s"]
            walk_cpu_s = first["walk_cpu_s"]
        else:
            converge = version_s
            work = float(mgr.counters.get("stale_rebuilt", 0) - stale0)
            walk_s = 0.0
        out = {"session_setup_per_s": n / setup_s, "bytes_per_session": size / max(1, count()),
               "manager_cpu_s_per_min": cpu * 60.0 / span,
               "policy_change_converge_s": converge, "policy_change_work": work}
        if not baseline:
            out["policy_change_rebuild_s"] = rebuild_s
        else:
            out["walk_s"] = walk_s
            out["walk_cpu_s"] = walk_cpu_s
        progress(f"  {kind} {n}: " + ", ".join(f"{k} {v:.4g}" for k, v in out.items()))
        return out
    finally:
        if mgr is not None:
            mgr.stop()
        child.close()


UNITS = {"session_setup_per_s": "sessions/s", "bytes_per_session": "bytes",
         "manager_cpu_s_per_min": "s/min", "policy_change_converge_s": "s",
         "policy_change_rebuild_s": "s", "policy_change_work": "sessions", "walk_s": "s",
         "walk_cpu_s": "s"}


def bench_scale(config: BenchConfig) -> dict[str, Figure]:
    """``fornax.scale``: both managers at 10^4 and 10^5 sessions."""
    figures: dict[str, Figure] = {}
    progress = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    for scale, n in SCALES.items():
        for kind in ("fornax", "baseline"):
            for name, value in run_scale(kind, n, progress=progress).items():
                figures[f"fornax.{name}.{kind}.{scale}"] = Figure(round(value, 4), UNITS[name])
        base = figures[f"fornax.manager_cpu_s_per_min.baseline.{scale}"].value
        fx = figures[f"fornax.manager_cpu_s_per_min.fornax.{scale}"].value
        figures[f"fornax.manager_cpu_ratio.{scale}"] = Figure(round(base / max(fx, 1e-6), 2),
                                                              "x")
    return figures


def bench_faults(config: BenchConfig) -> dict[str, Figure]:
    """``fornax.faults``: the testbed scenario once per manager (root)."""
    if os.geteuid() != 0:
        raise BenchCheckError("fornax.faults needs root (the testbed)")
    figures: dict[str, Figure] = {}
    for kind in ("fornax", "baseline"):
        tmp = Path(tempfile.mkdtemp(prefix="fornax-faults-"))
        _, run_dir = run_fornax(runs_root=tmp, state_path=tmp / "state.json",
                                baseline=kind == "baseline",
                                say=lambda m: print(m, file=sys.stderr, flush=True))
        out = json.loads((run_dir / "run.json").read_text())["outcome"]
        if out["long_connections"] == 0:
            raise BenchCheckError(f"{kind}: the scenario ran no connection ({run_dir})")
        figures[f"fornax.connections_broken.{kind}"] = Figure(
            float(out["long_broken"] + out["short_failed"]), "connections")
        if out["corruption_detect_s"] is not None:
            figures[f"fornax.fault_detect_s.corruption.{kind}"] = Figure(
                out["corruption_detect_s"], "s")
        if kind == "fornax":
            if out["hang_detect_s"] is None:
                raise BenchCheckError(f"fornax: the hang was not detected ({run_dir})")
            figures["fornax.fault_detect_s.hang.fornax"] = Figure(out["hang_detect_s"], "s")
        figures[f"fornax.long_max_stall_s.{kind}"] = Figure(out["long_max_stall_s"], "s")
    return figures


BENCHMARKS = [Benchmark("scale", "fornax", bench_scale), Benchmark("faults", "fornax", bench_faults)]

__all__ = ["BENCHMARKS", "bench_faults", "bench_policy", "bench_scale", "conn_frame",
           "conn_tuple", "deep_size", "run_scale"]
