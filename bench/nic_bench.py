"""``host.nic_cpu``: CPU the NIC emulator spends per packet at each end (root only).

One ``python -m host.nic send`` process (2 RC QPs, 4 KiB messages of 1 KiB packets, DCQCN
on, as the story's senders run) and one ``python -m host.nic recv`` process, each on one
end of a veth pair, nothing in between. Both ends use MAC addresses no interface has
(the kernel sees every frame as another host's and drops it before IP: no forwarding, no
ICMP), and hold no UDP port. Both run with the batching tick (``--tick-ms 1``,
``host.nic.io.BATCH_TICK_S``; the testbed's default is no tick). For each offered rate
(packets/s in total over the two QPs)
the sender is started on SIGUSR1 once both processes are up; after ``config.warmup_s``
(at least 1 s) one window of ``config.duration_s`` is timed:

* data frames = the sender veth's ``tx_packets`` over the window (the kernel's count);
* CPU = the sum over each process's threads of ``/proc/PID/task/TID/schedstat``'s time on
  a CPU (ns) over the window: Python, its system calls, and whatever softirq work the
  kernel did in the process's context (a veth transmit runs the peer's receive there);
* ``nic.cpu_us_per_pkt.send_<R>`` / ``recv_<R>`` — CPU µs per data frame at each end,
  ``nic.pps.send_<R>`` — data frames/s that went out (below the offered rate when the
  sender runs out of CPU), for R in :data:`RATES_PPS` (``5k``, ``20k``);
* ``nic.cpu_us_per_pkt.send_pair_4k`` / ``recv_pair_4k`` — the pair probe, as a story
  host runs its senders: two send processes on the same veth end (2 QPs each, 2,000 pps
  each, :data:`PAIR_RATE_PPS` in total) with no tick (the testbed's default); CPU of both
  senders together, and of the receiver, per data frame. Each sender's socket used to be
  handed the other's frames (host/nic/README.md, "Own transmissions").
* ``nic.cpu_us_per_pkt.native_send_pair_4k`` / ``native_recv_pair_4k`` — the pair probe on
  the native hot loop (host.nic.native, the NIC's default where gcc is; the same run as
  ``send_pair_4k``/``recv_pair_4k``, written only when every process's report says
  ``native``), and ``python_send_pair_4k`` / ``python_recv_pair_4k`` — the pair probe again
  with ``--python-loop`` (the Python path), in the same sitting.

The NIC code measured is the one under this file's repository (``PYTHONPATH``), so the
same file copied into an older checkout measures that one (how bench/README.md's
before/after table was made). Not root: says why on stderr and writes no figure.

Example::

    $ sudo .venv/bin/python -m bench host.nic_cpu --duration 3
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure
from bench.switch_bench import threads_cpu_ns, veth_available, veth_pairs

REPO = Path(__file__).resolve().parents[1]
RATES_PPS = {"5k": 5000.0, "20k": 20000.0}
QPS = 2
SENDER_MAC, RECEIVER_MAC = "02:00:00:00:0b:01", "02:00:00:00:0b:02"
START_TIMEOUT_S = 30.0
PAIR_RATE_PPS = 4000.0
"""The pair probe: two senders on one interface, 2,000 pps each, no tick: a story host at
1000 pps per elephant (two send processes of two QPs each)."""
BATCH_TICK_MS = 1.0
"""``host.nic.io.BATCH_TICK_S`` in ms (not imported: host.nic loads Scapy)."""


def tx_packets(iface: str) -> int:
    """The kernel's transmit count of ``iface``."""
    return int(Path(f"/sys/class/net/{iface}/statistics/tx_packets").read_text())


def _wait_file(path: Path, proc: "subprocess.Popen[bytes]", what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not path.exists():
        if proc.poll() is not None:
            raise BenchCheckError(f"{what} exited with {proc.returncode} before it was up")
        if time.monotonic() > deadline:
            raise BenchCheckError(f"{what} not up within {START_TIMEOUT_S:g} s")
        time.sleep(0.05)


def measure(rate_pps: float, warmup_s: float, window_s: float, senders: int = 1,
            tick_ms: float = BATCH_TICK_MS, python_loop: bool = False) -> dict[str, float]:
    """``senders`` send processes on one end of a veth pair (``rate_pps`` in total, shared
    evenly; 2 QPs each) and one recv process on the other, each stepping per ``tick_ms``
    (0: no tick): CPU µs per data frame of the senders together and of the receiver, and
    the data frames/s sent in the window; ``native``: 1.0 when every process ran the native
    hot loop (its report says so), else 0.0. ``python_loop``: pass ``--python-loop``."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    run_s = warmup_s + window_s + 30.0
    with veth_pairs(1) as pairs, tempfile.TemporaryDirectory(prefix="nic-bench-") as tmp:
        tx_if, rx_if = pairs[0]
        metrics = Path(tmp) / "recv.prom"
        readies = [Path(tmp) / f"ready{k}" for k in range(senders)]
        base = [sys.executable, "-m", "host.nic"]
        tick = ["--tick-ms", f"{tick_ms:g}", *(["--python-loop"] if python_loop else [])]
        recv = subprocess.Popen(base + ["recv", "--iface", rx_if, "--duration-s", f"{run_s:g}", *tick,
                                        "--hold-port", "0", "--metrics-file", str(metrics),
                                        "--json", str(Path(tmp) / "recv.json")],
                                env=env, cwd=REPO, stdout=subprocess.DEVNULL)
        sends = [subprocess.Popen(base + ["send", "--iface", tx_if, "--src-mac", SENDER_MAC, *tick,
                                          "--dst-mac", RECEIVER_MAC, "--src-ip", f"10.0.0.{k + 1}",
                                          "--dst-ip", "10.1.0.1", "--qpn", str(7 + QPS * k),
                                          "--sport", ",".join(str(49152 + QPS * k + i) for i in range(QPS)),
                                          "--line-rate-pps", f"{rate_pps / senders / QPS:g}",
                                          "--message-bytes", "4096", "--duration-s", f"{run_s:g}",
                                          "--hold-port", "0", "--ready-file", str(readies[k]),
                                          "--wait-go", "--json", str(Path(tmp) / f"send{k}.json")],
                                  env=env, cwd=REPO, stdout=subprocess.DEVNULL)
                 for k in range(senders)]
        procs = [*sends, recv]
        try:
            _wait_file(metrics, recv, "host.nic recv")
            for ready, send in zip(readies, sends):
                _wait_file(ready, send, "host.nic send")
            for send in sends:
                send.send_signal(signal.SIGUSR1)
            deadline = time.monotonic() + warmup_s
            while time.monotonic() < deadline:
                time.sleep(0.05)
            frames0, cpu0 = tx_packets(tx_if), [threads_cpu_ns(p.pid) for p in procs]
            t0 = time.monotonic()
            while time.monotonic() < t0 + window_s:
                time.sleep(0.05)
            frames1, cpu1 = tx_packets(tx_if), [threads_cpu_ns(p.pid) for p in procs]
            elapsed = time.monotonic() - t0
            if any(p.poll() is not None for p in procs):
                raise BenchCheckError("a NIC process ended during the window")
        finally:
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        reports = ["recv.json", *(f"send{k}.json" for k in range(senders))]
        native = all(_report_native(Path(tmp) / name) for name in reports)
    frames = frames1 - frames0
    if frames <= 0:
        raise BenchCheckError(f"no data frame sent at {rate_pps:g} pps")
    send_ns = sum(c1 - c0 for c0, c1 in zip(cpu0[:-1], cpu1[:-1]))
    return {"send_us": send_ns / 1000 / frames, "recv_us": (cpu1[-1] - cpu0[-1]) / 1000 / frames,
            "pps": frames / elapsed, "native": 1.0 if native else 0.0}


def _report_native(path: Path) -> bool:
    """True when a NIC process's JSON report says it ran the native hot loop."""
    try:
        return json.loads(path.read_text()).get("native") is True
    except (OSError, ValueError):
        return False


def bench_nic_cpu(config: BenchConfig) -> dict[str, Figure]:
    """CPU per packet of the NIC emulator at each end (see the module docstring)."""
    why: Optional[str] = veth_available()
    if why is not None:
        print(f"host.nic_cpu: skipped, {why}; no figure written", file=sys.stderr)
        return {}
    out: dict[str, Figure] = {}
    for label, rate in RATES_PPS.items():
        m = measure(rate, max(config.warmup_s, 1.0), config.duration_s)
        out[f"nic.cpu_us_per_pkt.send_{label}"] = Figure(round(m["send_us"], 2), "us")
        out[f"nic.cpu_us_per_pkt.recv_{label}"] = Figure(round(m["recv_us"], 2), "us")
        out[f"nic.pps.send_{label}"] = Figure(round(m["pps"]), "pps")
    m = measure(PAIR_RATE_PPS, max(config.warmup_s, 1.0), config.duration_s, senders=2, tick_ms=0.0)
    out["nic.cpu_us_per_pkt.send_pair_4k"] = Figure(round(m["send_us"], 2), "us")
    out["nic.cpu_us_per_pkt.recv_pair_4k"] = Figure(round(m["recv_us"], 2), "us")
    if not (REPO / "host" / "nic" / "native.py").exists():
        return out                                   # an older checkout: no native hot loop
    if not m["native"]:
        print("host.nic_cpu: the NIC processes did not run the native hot loop (no gcc?); "
              "no native figure written", file=sys.stderr)
        return out
    out["nic.cpu_us_per_pkt.native_send_pair_4k"] = out["nic.cpu_us_per_pkt.send_pair_4k"]
    out["nic.cpu_us_per_pkt.native_recv_pair_4k"] = out["nic.cpu_us_per_pkt.recv_pair_4k"]
    m = measure(PAIR_RATE_PPS, max(config.warmup_s, 1.0), config.duration_s, senders=2, tick_ms=0.0,
                python_loop=True)
    out["nic.cpu_us_per_pkt.python_send_pair_4k"] = Figure(round(m["send_us"], 2), "us")
    out["nic.cpu_us_per_pkt.python_recv_pair_4k"] = Figure(round(m["recv_us"], 2), "us")
    return out


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("nic_cpu", "host", bench_nic_cpu),)
