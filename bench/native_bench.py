"""The ``native`` benchmark group: p4sim's native path (p4sim/native) beside the Python
engine, measured in the same sitting (the machine is shared: only the ratio of two
figures measured together means much).

* ``p4sim.native.pps.fabric_leaf`` — packets/s of ``p4src/fabric.p4`` in the leaf role
  in-process (the ``fabric.pps.leaf`` set-up: 8 host routes, default route to an ECMP
  group of 4 uplinks, 300 frames), through ``NativeSwitch.process_batch`` (300 frames per
  call); every frame's egress port is first checked against the hash model on the
  native path. ``p4sim.native.pps.fabric_leaf_per_call``: the same through
  ``process_packet`` (one call per frame). ``p4sim.native.pps.fabric_leaf_python``: the
  Python engine's ``process_packet`` in the same runs (alternated with the native ones),
  and ``p4sim.native.speedup.fabric_leaf`` the ratio of the medians.
  ``p4sim.native.pps_per_core.fabric_leaf`` (and ``_python``): the same runs' packets per
  CPU-second of the timing thread (``time.thread_time``), the figure a loaded machine
  changes least.
* ``p4sim.native.pps.veth`` — the ``p4sim.pps.veth`` probe (paced, 32 frames in flight)
  with ``--engine native``; ``p4sim.native.pps.veth_python`` the same probe right after
  with ``--engine python``.
* ``p4sim.native.cpu_us_per_frame.veth_2k`` / ``_3k`` — the switch process's CPU (every
  thread, schedstat) per frame forwarded when ``port_fwd.p4`` on ``--engine native``
  gets a paced 2,000 or 3,000 frames/s over veths (each frame sent when its time comes):
  the low-rate cost the story's switches pay, where each frame wakes the data plane
  (issue 32); ``p4sim.native.pps.veth_paced_2k`` / ``_3k`` the rates received;
  ``p4sim.native.ctx_switches_per_frame.veth_2k`` / ``_3k`` the switch's threads' context
  switches (voluntary + involuntary) per frame. ``_3k_queued``: the same at 3,000
  frames/s in bursts of 4 into an egress queue draining 4,000 packets/s (frames wait for
  their departure time, as in the story's rate-limited uplinks), with
  ``p4sim.native.worker_empty_wakeups_per_frame.veth_3k_queued``: the data-plane
  worker's waits that ended with nothing to do, per frame.
* ``p4sim.native.pps.veth_overload`` (and ``_offered``, ``_dropped``,
  ``.veth_overload.switch_cores``, ``.pps_per_core.veth_overload``) — the
  ``p4sim.pps.veth_overload`` probe (unpaced sender, ``programs/ipv4_lpm.p4``) with
  ``--engine native``; the Python engine's are ``p4sim.pps.veth_overload*`` (group
  ``switch``). ``pps_per_core`` is forwarded frames/s divided by the CPU the switch
  process used: the figure that does not depend on how much CPU the other jobs left.
* ``p4sim.native.pps.veth_overload_fabric`` (and the same family with ``_fabric``) — the
  overload probe on ``p4src/fabric.p4`` as the default fabric's first leaf, programmed
  with the testbed controller's plan (``bench.veth_overload.FABRIC``): issue 32's
  ">= 200 kpps over veths on one core" is ``pps_per_core.veth_overload_fabric``.

Example::

    $ .venv/bin/python -m bench native.fabric_leaf --duration 1 --runs 3
    $ sudo .venv/bin/python -m bench native          # the veth probes need root
    $ sudo .venv/bin/python -m bench native.veth_paced --duration 3
"""
from __future__ import annotations

import random
import select
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from bench.fabric_bench import (CHECK_BATCH, IN_PORT_LEAF, N_FRAMES, build_frame, check_forwarding,
                                leaf_flows, load_fabric, setup_leaf)
from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from bench.switch_bench import (_drain, forwarding_veths, make_frames, run_pps_veth, threads_cpu_ns,
                                threads_ctx_switches, veth_available)
from bench.veth_overload import FABRIC, run_overload
from p4sim.native import native_reason
from p4sim.native.switch import NativeSwitch
from p4sim.control_api import ControlClient
from p4sim.v1model.switch import V1ModelSwitch


def _time(fn: Callable[[], int], duration_s: float, cpu: Optional[list[float]] = None) -> float:
    """Packets/s of ``fn`` (which processes some packets and says how many), wall clock;
    packets per CPU-second of this thread appended to ``cpu`` when given (what the other
    jobs on a shared machine change least)."""
    n = 0
    start, cpu0 = time.perf_counter(), time.thread_time()
    deadline = start + duration_s
    while True:
        n += fn()
        now = time.perf_counter()
        if now >= deadline:
            if cpu is not None:
                cpu.append(n / max(time.thread_time() - cpu0, 1e-9))
            return n / (now - start)


def bench_fabric_leaf(config: BenchConfig) -> dict[str, Figure]:
    """The in-process figures (see the module docstring)."""
    def setup(native: bool) -> tuple[Any, list[bytes]]:
        prog = load_fabric()
        rng = random.Random(7)
        sw = setup_leaf(prog.state)
        flows = leaf_flows(sw, N_FRAMES, rng)
        frames = [build_frame(f.src, f.dst, f.proto, f.sport, f.dport) for f in flows]
        if native:
            why = native_reason(prog)
            if why is not None:
                raise BenchCheckError(f"fabric.p4 does not run on the native path: {why}")
            switch: Any = NativeSwitch(prog, cpu_port=255)
        else:
            switch = V1ModelSwitch(prog, cpu_port=255, log=None)
        check_forwarding(switch, IN_PORT_LEAF, flows, frames, "fabric leaf", True)
        if switch.stats.errors:
            raise BenchCheckError(f"fabric leaf: switch errors {switch.stats.errors[:3]}")
        return switch, frames

    native, frames = setup(True)
    python, _ = setup(False)
    batch = [(IN_PORT_LEAF, f) for f in frames]

    def run_batch() -> int:
        native.process_batch(batch)
        return len(batch)

    def per_call(sw: Any) -> Callable[[], int]:
        state = {"i": 0}

        def run() -> int:
            i = state["i"]
            for _ in range(CHECK_BATCH):
                sw.process_packet(IN_PORT_LEAF, frames[i])
                i = i + 1 if i + 1 < len(frames) else 0
            state["i"] = i
            return CHECK_BATCH
        return run

    if config.warmup_s > 0:
        _time(run_batch, config.warmup_s)
        _time(per_call(python), config.warmup_s / 2)
    nat, call, py = [], [], []
    nat_cpu: list[float] = []
    py_cpu: list[float] = []
    for _ in range(config.runs):
        nat.append(_time(run_batch, config.duration_s, nat_cpu))
        call.append(_time(per_call(native), config.duration_s / 2))
        py.append(_time(per_call(python), config.duration_s, py_cpu))
    for sw in (native, python):
        if sw.stats.errors:
            raise BenchCheckError(f"fabric leaf: switch errors while timing {sw.stats.errors[:3]}")
    return {"p4sim.native.pps.fabric_leaf": Figure(round(median(nat), 1), "pps"),
            "p4sim.native.pps.fabric_leaf_per_call": Figure(round(median(call), 1), "pps"),
            "p4sim.native.pps.fabric_leaf_python": Figure(round(median(py), 1), "pps"),
            "p4sim.native.speedup.fabric_leaf": Figure(round(median(nat) / median(py), 1), "ratio"),
            "p4sim.native.pps_per_core.fabric_leaf": Figure(round(median(nat_cpu), 1), "pps/core"),
            "p4sim.native.pps_per_core.fabric_leaf_python": Figure(round(median(py_cpu), 1), "pps/core")}


def bench_veth(config: BenchConfig) -> dict[str, Figure]:
    """The paced veth probe, native then Python."""
    why = veth_available()
    if why is not None:
        print(f"native.veth: skipped, {why}; p4sim.native.pps.veth not written", file=sys.stderr)
        return {}
    out = run_pps_veth(config, engine="native", figure="p4sim.native.pps.veth")
    out.update(run_pps_veth(config, engine="python", figure="p4sim.native.pps.veth_python"))
    return out


PACED_RATES_PPS = (2000, 3000)
"""The rates of the paced low-rate probe: the story's per-switch load (issue 32)."""

QUEUED_RATE_PPS = 3000
QUEUED_BURST = 4
QUEUED_DRAIN_PPS = 4000
"""The queued variant: 3,000 frames/s in bursts of 4 into an egress queue that drains at
4,000 packets/s (``set_queue_rate``), so three frames of each burst wait 0.25, 0.5 and
0.75 ms for their departure time, as frames do in the story's rate-limited leaf uplinks
(the queue rate is sized for 70 % utilisation there; scenarios/README.md)."""


@dataclass(frozen=True)
class PacedRun:
    """One paced run: the switch process's CPU and context switches per frame received,
    and the frames/s received.

    >>> PacedRun(cpu_us_per_frame=16.9, ctx_switches_per_frame=1.02, received_pps=2998.0,
    ...          frames_received=8994).cpu_us_per_frame
    16.9
    """
    cpu_us_per_frame: float
    ctx_switches_per_frame: float
    received_pps: float
    frames_received: int


def paced_run(tx: socket.socket, rx: socket.socket, frames: Sequence[bytes], pid: int,
              rate_pps: float, duration_s: float, burst: int = 1) -> PacedRun:
    """Send ``frames`` on ``tx`` at ``rate_pps`` in bursts of ``burst`` (each burst when
    its time comes, as a paced sender does) for ``duration_s``; the switch process
    ``pid``'s CPU (every thread's schedstat) and context switches (every thread's
    voluntary + involuntary) per frame received on ``rx``."""
    gap_s = burst / rate_pps
    sent = received = 0
    cpu0, ctx0 = threads_cpu_ns(pid), threads_ctx_switches(pid)
    t0 = time.perf_counter()
    end = t0 + duration_s
    while (now := time.perf_counter()) < end:
        due = (int((now - t0) / gap_s) + 1) * burst
        while sent < due:
            tx.send(frames[sent % len(frames)])
            sent += 1
        wait_s = max(0.0, t0 + (sent // burst) * gap_s - time.perf_counter())
        if select.select([rx], [], [], wait_s)[0]:
            received += _drain(rx)
    deadline = time.perf_counter() + 0.2
    while received < sent and (left := deadline - time.perf_counter()) > 0:
        if select.select([rx], [], [], left)[0]:
            received += _drain(rx)
    cpu_ns = threads_cpu_ns(pid) - cpu0
    ctx = threads_ctx_switches(pid) - ctx0
    elapsed = time.perf_counter() - t0
    if received == 0:
        raise BenchCheckError(f"paced veth probe at {rate_pps:g} pps: no frame came back")
    return PacedRun(cpu_ns / 1e3 / received, ctx / received, received / elapsed, received)


def _paced_figures(runs: Sequence[PacedRun], tag: str) -> dict[str, Figure]:
    return {f"p4sim.native.cpu_us_per_frame.veth_{tag}": Figure(
                round(median([r.cpu_us_per_frame for r in runs]), 2), "us"),
            f"p4sim.native.ctx_switches_per_frame.veth_{tag}": Figure(
                round(median([r.ctx_switches_per_frame for r in runs]), 3), "switches"),
            f"p4sim.native.pps.veth_paced_{tag}": Figure(
                round(median([r.received_pps for r in runs]), 1), "pps")}


def bench_veth_paced(config: BenchConfig) -> dict[str, Figure]:
    """``p4sim.native.cpu_us_per_frame.veth_2k`` / ``_3k`` / ``_3k_queued`` and the
    context switches per frame: the switch process's CPU per forwarded frame (every
    thread, ``/proc/PID/task/*/schedstat``) when ``port_fwd.p4`` forwards a paced 2,000 or
    3,000 frames/s over veths on the native path, and 3,000 frames/s in bursts of 4 into a
    queue draining 4,000 packets/s (``_3k_queued``): the low-rate cost the story's switches
    pay (issue 32), where every frame wakes the data plane.
    ``p4sim.native.worker_empty_wakeups_per_frame.veth_3k_queued``: the worker's waits
    that ended with nothing to do (``dp_wk_empty_wakeups``), per frame."""
    why = veth_available()
    if why is not None:
        print(f"native.veth_paced: skipped, {why}; p4sim.native.cpu_us_per_frame not written",
              file=sys.stderr)
        return {}
    frames = make_frames()
    out: dict[str, Figure] = {}
    with forwarding_veths("native", frames) as (sw, tx, rx):
        for rate in PACED_RATES_PPS:
            if config.warmup_s > 0:
                paced_run(tx, rx, frames, sw.pid, rate, config.warmup_s)
            out.update(_paced_figures([paced_run(tx, rx, frames, sw.pid, rate, config.duration_s)
                                       for _ in range(config.runs)], f"{rate // 1000}k"))
        with ControlClient(sw.control_addr) as ctl:
            ctl.set_queue_rate(QUEUED_DRAIN_PPS, port=2)
            if config.warmup_s > 0:
                paced_run(tx, rx, frames, sw.pid, QUEUED_RATE_PPS, config.warmup_s, QUEUED_BURST)
            runs, empty = [], []
            for _ in range(config.runs):
                before = ctl.switch_stats()
                run = paced_run(tx, rx, frames, sw.pid, QUEUED_RATE_PPS, config.duration_s, QUEUED_BURST)
                after = ctl.switch_stats()
                runs.append(run)
                empty.append((after["dp_wk_empty_wakeups"] - before["dp_wk_empty_wakeups"]) / run.frames_received)
            ctl.set_queue_rate(0, port=2)
        tag = f"{QUEUED_RATE_PPS // 1000}k_queued"
        out.update(_paced_figures(runs, tag))
        out[f"p4sim.native.worker_empty_wakeups_per_frame.veth_{tag}"] = Figure(round(median(empty), 3), "wakeups")
    return out


def bench_veth_overload(config: BenchConfig) -> dict[str, Figure]:
    """The overload probe with ``--engine native``."""
    return run_overload(config, engine="native", prefix="p4sim.native")


def bench_veth_overload_fabric(config: BenchConfig) -> dict[str, Figure]:
    """The overload probe with ``--engine native`` on fabric.p4 as a leaf (``FABRIC``)."""
    return run_overload(config, engine="native", prefix="p4sim.native", setup=FABRIC)


BENCHMARKS: Sequence[Benchmark] = (
    Benchmark("fabric_leaf", "native", bench_fabric_leaf),
    Benchmark("veth", "native", bench_veth),
    Benchmark("veth_paced", "native", bench_veth_paced),
    Benchmark("veth_overload", "native", bench_veth_overload),
    Benchmark("veth_overload_fabric", "native", bench_veth_overload_fabric),
)
