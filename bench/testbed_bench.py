"""The ``testbed`` benchmark group: figures of the REAL Mininet testbed (root + Mininet).

Each run brings a fabric up the way ``python -m testbed up`` does, with its own
functions (:func:`testbed.cli.compile_fabric`, :class:`testbed.net.FabricNet`,
:func:`testbed.cli.program_switches`, :func:`testbed.cli.ping_all`), records it in
``build/testbed-state.json`` (so ``make stop`` cleans up after a crashed bench) and tears
it down with ``FabricNet.stop()`` — only what it created. Figures:

* ``testbed.ready_s.default``: ``FabricNet`` construction (Mininet hosts, links, switch
  processes started) until every switch's gRPC port listens AND every switch is
  programmed (pipeline pushed, routes and the other tables installed by
  ``controller.fabric_setup.FabricProgrammer``), default ``FabricSpec()`` (6 switches);
  median of ``config.runs`` bring-ups. ``p4src/fabric.p4`` is compiled once before, untimed.
* ``testbed.ready_s.16sw``: the same for :data:`SPEC_16SW` (2 blocks x 2 servers x
  4 rails, 8 leaves + 8 spines = 16 switches).
* ``testbed.ready_s.2pod_dualport``: the same for ``topo/specs/pod2-dualport.yaml`` (2
  pods joined by 4 cores, dual-port NICs: 8 leaves + 4 spines + 4 cores = 16 switches,
  the core tier programmed from ``topo.routes``); its ping check includes the cross-pod
  pairs.
* ``testbed.cpu_pct.idle``: CPU time of all switch processes (utime + stime of
  ``/proc/PID/stat``) over ``config.duration_s`` of idle default fabric, in % of one
  core (summed over the switches), median of the runs.
* ``testbed.rss_mb``: sum of the switches' VmRSS on the programmed default fabric (MiB).

Before anything is measured as valid, every same-rail NIC pair must answer one ping
(untimed); otherwise :class:`bench.results.BenchCheckError`. Not root, no Mininet, or a
testbed already up: every benchmark prints ``testbed.<name>: skipped, <why>`` and writes
no figure.

Example::

    $ sudo .venv/bin/python -m bench testbed              # ~2 min with the default 3 runs
    $ sudo .venv/bin/python -m bench testbed.default --runs 1
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from testbed.cli import (STATE_PATH, choose_target, compile_fabric, on_signal, ping_all,
                         ping_report, program_switches, testbed_unavailable as why)
from testbed.net import FabricNet, NetOptions
from topo import FabricSpec, build_fabric
from topo.spec import load_spec

REPO = Path(__file__).resolve().parents[1]
LOG_DIR = REPO / "build" / "bench-testbed-logs"
SPEC_16SW: dict[str, Any] = {"blocks": 2, "servers_per_block": 2, "rails": 4, "spines": 8,
                             "leaves_per_rail": 1}
"""16 switches: 2 blocks x 4 rails = 8 leaves (one per rail per block), 8 spines; 4 servers."""
SPEC_2POD = REPO / "topo" / "specs" / "pod2-dualport.yaml"
"""16 switches over three tiers: 2 pods x 4 leaves (dual-port NICs), 4 spines, 4 cores."""


def fabric_spec(name: str) -> Any:
    """The ``topo.FabricSpec`` of ``"default"``, ``"16sw"`` or ``"2pod_dualport"``.

    >>> s = fabric_spec("16sw"); s.num_leaves + s.spines
    16
    >>> fabric_spec("default").num_leaves + fabric_spec("default").spines
    6
    >>> len(build_fabric(fabric_spec("2pod_dualport")).switches)
    16
    """
    if name == "2pod_dualport":
        return load_spec(SPEC_2POD)
    return FabricSpec() if name == "default" else FabricSpec(**SPEC_16SW)


# ------------------------------------------------------------------------ can we run?
def testbed_unavailable() -> Optional[str]:
    """None when a Mininet testbed can be started here, else why not (one line): the
    testbed's own check (:func:`testbed.cli.testbed_unavailable`) for every fabric."""
    return why([fabric_spec("default"), fabric_spec("16sw"), fabric_spec("2pod_dualport")])


def _skip(bench_name: str, why: str, figures: str) -> dict[str, Figure]:
    print(f"testbed.{bench_name}: skipped, {why}; {figures} not written",
          file=sys.stderr, flush=True)
    return {}


# --------------------------------------------------------------------- /proc readings
def cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` in clock ticks (fields 14 and 15 of ``/proc/PID/stat``)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    rest = text[text.rindex(")") + 2:].split()   # fields from 3 (state) on
    return int(rest[11]) + int(rest[12])


def rss_mb(pid: int) -> float:
    """VmRSS of ``pid`` (``/proc/PID/status``) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no VmRSS for PID {pid}")


def cpu_percent(pids: list[int], duration_s: float) -> float:
    """CPU used by ``pids`` together over ``duration_s``, in % of one core.

    >>> 0.0 <= cpu_percent([os.getpid()], 0.05) < 400.0
    True
    """
    hz = os.sysconf("SC_CLK_TCK")
    before = sum(cpu_ticks(p) for p in pids)
    t0 = time.perf_counter()
    time.sleep(duration_s)
    ticks = sum(cpu_ticks(p) for p in pids) - before
    return 100.0 * ticks / hz / (time.perf_counter() - t0)


# ------------------------------------------------------------------------ bring-up
@dataclass(slots=True)
class BringUp:
    """One measured bring-up: seconds to switches ready and to routes installed."""

    switches_ready_s: float
    ready_s: float


@contextmanager
def _sigterm_tears_down() -> Iterator[None]:
    """SIGTERM/SIGHUP raise KeyboardInterrupt (so ``finally`` tears down), as in ``up``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def run_fabric(spec_name: str, target: str, p4info: Path, config: Path,
               while_up: Optional[Callable[[list[int]], None]] = None) -> BringUp:
    """Bring the fabric up, program it, check all same-rail pings, call ``while_up(pids)``
    with the switch PIDs, tear down (always). BenchCheckError when a ping fails."""
    fabric = build_fabric(fabric_spec(spec_name))
    opts = NetOptions(target=target, log_dir=LOG_DIR, pcap_dir=None, state_path=STATE_PATH)
    programmer = None
    fnet: Any = None
    try:
        with _sigterm_tears_down():
            t0 = time.perf_counter()
            fnet = FabricNet(fabric, opts)
            fnet.start()
            t_switches = time.perf_counter() - t0
            programmer = program_switches(fabric, p4info, config)
            t_ready = time.perf_counter() - t0
            results = ping_all(fabric, fnet.state, count=1)
            if not all(r.ok for r in results):
                crashed = "\n".join(fnet.crashed())
                raise BenchCheckError(f"{spec_name} fabric: not every same-rail pair answers "
                                      f"ping:\n{ping_report(results)}\n{crashed}")
            if while_up is not None:
                while_up([d.pid for d in fnet.daemons.values() if d.pid is not None])
    finally:
        if programmer is not None:
            programmer.close()
        if fnet is not None:
            left = [line for line in fnet.stop() if line.startswith("could not")]
            if left:
                print(f"testbed bench: {left[0]}", file=sys.stderr, flush=True)
    print(f"testbed bench: {spec_name} fabric ({len(fabric.switches)} {target} switches): "
          f"switches ready {t_switches:.2f} s, programmed {t_ready:.2f} s",
          file=sys.stderr, flush=True)
    return BringUp(t_switches, t_ready)


def _compile() -> tuple[str, Path, Path]:
    """(target, P4Info, device config): ``$TARGET`` (default auto) and its compiled fabric."""
    target = choose_target(os.environ.get("TARGET", "auto"))
    p4info, config = compile_fabric(target, os.environ.get("P4C", "p4c-bm2-ss"))
    return target, p4info, config


# ------------------------------------------------------------------------ benchmarks
def run_default(config: BenchConfig) -> dict[str, Figure]:
    """``testbed.ready_s.default``, ``testbed.cpu_pct.idle`` and ``testbed.rss_mb``."""
    names = "testbed.ready_s.default, testbed.cpu_pct.idle, testbed.rss_mb"
    why = testbed_unavailable()
    if why is not None:
        return _skip("default", why, names)
    target, p4info, p4config = _compile()
    ready: list[float] = []
    cpu: list[float] = []
    rss: list[float] = []

    def idle(pids: list[int]) -> None:
        time.sleep(config.warmup_s)
        cpu.append(cpu_percent(pids, config.duration_s))
        rss.append(sum(rss_mb(p) for p in pids))

    for _ in range(config.runs):
        ready.append(run_fabric("default", target, p4info, p4config, idle).ready_s)
    return {"testbed.ready_s.default": Figure(round(median(ready), 2), "s"),
            "testbed.cpu_pct.idle": Figure(round(median(cpu), 1), "%"),
            "testbed.rss_mb": Figure(round(median(rss), 1), "MB")}


def run_16sw(config: BenchConfig) -> dict[str, Figure]:
    """``testbed.ready_s.16sw`` (:data:`SPEC_16SW`)."""
    why = testbed_unavailable()
    if why is not None:
        return _skip("16sw", why, "testbed.ready_s.16sw")
    target, p4info, p4config = _compile()
    ready = [run_fabric("16sw", target, p4info, p4config).ready_s for _ in range(config.runs)]
    return {"testbed.ready_s.16sw": Figure(round(median(ready), 2), "s")}


def run_2pod_dualport(config: BenchConfig) -> dict[str, Figure]:
    """``testbed.ready_s.2pod_dualport`` (:data:`SPEC_2POD`)."""
    why = testbed_unavailable()
    if why is not None:
        return _skip("2pod_dualport", why, "testbed.ready_s.2pod_dualport")
    target, p4info, p4config = _compile()
    ready = [run_fabric("2pod_dualport", target, p4info, p4config).ready_s
             for _ in range(config.runs)]
    return {"testbed.ready_s.2pod_dualport": Figure(round(median(ready), 2), "s")}


BENCHMARKS = (
    Benchmark("default", "testbed", run_default),
    Benchmark("16sw", "testbed", run_16sw),
    Benchmark("2pod_dualport", "testbed", run_2pod_dualport),
)
