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
  (issue 32); ``p4sim.native.pps.veth_paced_2k`` / ``_3k`` the rates received.
* ``p4sim.native.pps.veth_overload`` (and ``_offered``, ``_dropped``,
  ``.veth_overload.switch_cores``, ``.pps_per_core.veth_overload``) — the
  ``p4sim.pps.veth_overload`` probe (unpaced sender, ``programs/ipv4_lpm.p4``) with
  ``--engine native``; the Python engine's are ``p4sim.pps.veth_overload*`` (group
  ``switch``). ``pps_per_core`` is forwarded frames/s divided by the CPU the switch
  process used: the figure that does not depend on how much CPU the other jobs left.

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
from typing import Any, Callable, Optional, Sequence

from bench.fabric_bench import (CHECK_BATCH, IN_PORT_LEAF, N_FRAMES, build_frame, check_forwarding,
                                leaf_flows, load_fabric, setup_leaf)
from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from bench.switch_bench import _drain, forwarding_veths, make_frames, run_pps_veth, threads_cpu_ns, veth_available
from bench.veth_overload import run_overload
from p4sim.native import native_reason
from p4sim.native.switch import NativeSwitch
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


def paced_cpu_us(tx: socket.socket, rx: socket.socket, frames: Sequence[bytes], pid: int,
                 rate_pps: float, duration_s: float) -> tuple[float, float]:
    """Send ``frames`` on ``tx`` at ``rate_pps`` (each frame when its time comes, as a
    paced sender does) for ``duration_s``; returns (CPU µs the switch process ``pid`` used
    per frame received on ``rx``, frames/s received)."""
    gap_s = 1.0 / rate_pps
    sent = received = 0
    cpu0 = threads_cpu_ns(pid)
    t0 = time.perf_counter()
    end = t0 + duration_s
    while (now := time.perf_counter()) < end:
        due = int((now - t0) / gap_s) + 1
        while sent < due:
            tx.send(frames[sent % len(frames)])
            sent += 1
        wait_s = max(0.0, t0 + sent * gap_s - time.perf_counter())
        if select.select([rx], [], [], wait_s)[0]:
            received += _drain(rx)
    deadline = time.perf_counter() + 0.2
    while received < sent and (left := deadline - time.perf_counter()) > 0:
        if select.select([rx], [], [], left)[0]:
            received += _drain(rx)
    cpu_ns = threads_cpu_ns(pid) - cpu0
    elapsed = time.perf_counter() - t0
    if received == 0:
        raise BenchCheckError(f"paced veth probe at {rate_pps:g} pps: no frame came back")
    return cpu_ns / 1e3 / received, received / elapsed


def bench_veth_paced(config: BenchConfig) -> dict[str, Figure]:
    """``p4sim.native.cpu_us_per_frame.veth_2k`` / ``_3k``: the switch process's CPU per
    forwarded frame (every thread, ``/proc/PID/task/*/schedstat``) when ``port_fwd.p4``
    forwards a paced 2,000 or 3,000 frames/s over veths on the native path: the low-rate
    cost the story's switches pay (issue 32), where every frame wakes the data plane."""
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
                paced_cpu_us(tx, rx, frames, sw.pid, rate, config.warmup_s)
            runs = [paced_cpu_us(tx, rx, frames, sw.pid, rate, config.duration_s)
                    for _ in range(config.runs)]
            tag = f"{rate // 1000}k"
            out[f"p4sim.native.cpu_us_per_frame.veth_{tag}"] = Figure(
                round(median([r[0] for r in runs]), 2), "us")
            out[f"p4sim.native.pps.veth_paced_{tag}"] = Figure(
                round(median([r[1] for r in runs]), 1), "pps")
    return out


def bench_veth_overload(config: BenchConfig) -> dict[str, Figure]:
    """The overload probe with ``--engine native``."""
    return run_overload(config, engine="native", prefix="p4sim.native")


BENCHMARKS: Sequence[Benchmark] = (
    Benchmark("fabric_leaf", "native", bench_fabric_leaf),
    Benchmark("veth", "native", bench_veth),
    Benchmark("veth_paced", "native", bench_veth_paced),
    Benchmark("veth_overload", "native", bench_veth_overload),
)
