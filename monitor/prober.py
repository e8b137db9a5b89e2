"""The prober: one process per host namespace that sends its paths' probes on raw
sockets of its NICs and counts the probes that reach them.

Run it inside a host's network namespace (the testbed: ``mnexec -a <host shell pid>``)::

    python -m monitor.prober --plan build/probe-plan.json --host b0s0 --out runs/x/probes \\
        [--rate-pps 10] [--interval-s 1] [--grace-s 0.5] [--duration-s 0]

* **Sending**: every path whose source NIC is on ``--host``, at ``--rate-pps`` probes per
  second per path (default: the plan's), spread evenly; frames of
  :mod:`monitor.probeframe` go to the leaf's router MAC on an ``AF_PACKET`` socket (the
  host's kernel only routes its own rail; the leaves route every rail).
* **Receiving**: an ``AF_PACKET`` socket per NIC (own transmissions, ``PACKET_OUTGOING``,
  skipped); a probe of the plan with a good ICRC counts as received for its path, with its
  one-way latency (``CLOCK_MONOTONIC`` is shared by the namespaces); a bad ICRC counts as
  corrupted (the path found from the IP addresses and source port, which the ICRC
  covers); CE-marked probes are counted too.
* **Quiet kernel**: UDP 4791 is held on the NICs' addresses (:class:`host.nic.udphold.
  UdpPortHold`; "in use" when a NIC emulator or the traffic sink already holds it) so the
  kernel sends no ICMP port unreachable for probes.
* **Windows**: counts are kept per *send epoch* (``floor(send time / interval)``). At
  ``k·interval + grace`` every epoch before ``k`` is closed and written: the sender's
  ``sent`` and the receiver's ``received`` of the same epochs line up exactly on every
  host (a probe later than ``grace`` counts as ``late``, not received). Before closing,
  the sockets are drained: probes the kernel queued while the prober itself was late (a
  busy CPU) arrived in time and count as received.
* **Files** in ``--out`` (written atomically): ``probe-<host>.prom`` (Prometheus text,
  ``prometheus_client.write_to_textfile``: ``astral_probe_sent_total``,
  ``astral_probe_received_total``, ``astral_probe_corrupted_total``,
  ``astral_probe_ce_total``, ``astral_probe_late_total`` with labels ``path``,
  ``src_nic``, ``dst_nic``; ``astral_probe_latency_seconds`` histogram by ``path``;
  ``astral_probe_epoch_end_seconds``), ``probe-<host>.json`` (the same counters with
  ``epoch``, read by :mod:`monitor.probestats`) and ``probe-<host>.ready`` once the
  sockets are open.

Exit codes: 0 after ``--duration-s`` or SIGTERM/SIGINT (counters written once more), 2
on bad input (unreadable plan, host not in the plan, a NIC interface missing).

>>> from topo.model import build_fabric
>>> from monitor.probes import plan_probes
>>> c = Counters(plan_probes(build_fabric()), "b0s0", interval_s=1.0)
>>> c.on_sent("p0", 0.2); c.on_sent("p0", 1.1); _ = c.close_epochs(1); c.snapshot()["sent"]["p0"]
1
"""
from __future__ import annotations

import argparse
import json
import math
import os
import select
import signal
import socket
import statistics
import sys
import time
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, write_to_textfile

from host.nic.udphold import UdpPortHold
from monitor.probeframe import ProbeInfo, ProbeTemplate, parse_probe
from monitor.probeplan import ProbePlan, load_plan

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
LATENCY_BUCKETS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
EXIT_BAD_INPUT = 2


class ProberError(Exception):
    """Bad input for the prober (exit code 2): the message says what and how to fix it."""


def prober_command(plan_path: Path, host: str, out_dir: Path, rate_pps: Optional[float] = None,
                   interval_s: float = 1.0, grace_s: float = 0.5) -> list[str]:
    """The command line of one host's prober (prefix it with ``mnexec -a <shell pid>``).

    >>> prober_command(Path("plan.json"), "b0s0", Path("out"))[1:5]
    ['-m', 'monitor.prober', '--plan', 'plan.json']
    """
    cmd = [sys.executable, "-m", "monitor.prober", "--plan", str(plan_path), "--host", host,
           "--out", str(out_dir), "--interval-s", f"{interval_s:g}", "--grace-s", f"{grace_s:g}"]
    return cmd + ([] if rate_pps is None else ["--rate-pps", f"{rate_pps:g}"])


def plan_id_of(plan: ProbePlan) -> int:
    """A 32-bit id of the plan's paths (probes of another plan are not counted).

    >>> from topo.model import build_fabric; from monitor.probes import plan_probes
    >>> plan_id_of(plan_probes(build_fabric())) == plan_id_of(plan_probes(build_fabric()))
    True
    """
    text = json.dumps([[p.name, p.src_nic, p.dst_nic, p.sport] for p in plan.paths])
    return zlib.crc32(text.encode())


class Counters:
    """The per-path counts of one host, kept per send epoch and closed epoch by epoch
    (module docstring, "Windows"); :meth:`snapshot` gives the closed totals."""

    def __init__(self, plan: ProbePlan, host: str, interval_s: float) -> None:
        self.interval_s = interval_s
        self.sends = [p.name for p in plan.paths_from(host)]
        self.recvs = [p.name for p in plan.paths_to(host)]
        kinds = ("sent", "received", "corrupted", "ce", "late")
        self.total: dict[str, dict[str, int]] = {k: defaultdict(int) for k in kinds}
        self.open: dict[str, dict[tuple[str, int], int]] = {k: defaultdict(int) for k in kinds}
        self.lat_open: dict[tuple[str, int], list[float]] = defaultdict(list)
        self.lat_p50_ms: dict[str, Optional[float]] = {p: None for p in self.recvs}
        self.closed_epoch = -1
        self.stray = 0        # probe frames of no path of this plan (or another plan)

    def epoch(self, t_s: float) -> int:
        """The epoch of a send time (monotonic seconds)."""
        return math.floor(t_s / self.interval_s)

    def _count(self, kind: str, path: str, send_t_s: float) -> None:
        e = self.epoch(send_t_s)
        if e <= self.closed_epoch:
            if kind == "received":
                self.total["late"][path] += 1
            elif kind == "corrupted":    # keep it (in the open epoch): corruption is rare
                self.open["corrupted"][(path, self.closed_epoch + 1)] += 1
            return
        self.open[kind][(path, e)] += 1

    def on_sent(self, path: str, t_s: float) -> None:
        """One probe of ``path`` sent at ``t_s``."""
        self._count("sent", path, t_s)

    def on_received(self, path: str, send_t_s: float, latency_s: float, ce: bool) -> None:
        """One probe of ``path`` received with a good ICRC."""
        self._count("received", path, send_t_s)
        if ce:
            self._count("ce", path, send_t_s)
        e = self.epoch(send_t_s)
        if e > self.closed_epoch:
            self.lat_open[(path, e)].append(latency_s)

    def on_corrupted(self, path: str, send_t_s: float) -> None:
        """One probe of ``path`` received with a bad ICRC (send time: best guess)."""
        self._count("corrupted", path, send_t_s)

    def close_epochs(self, upto: int) -> dict[str, dict[str, int]]:
        """Close every epoch before ``upto``; returns the counts just closed."""
        delta: dict[str, dict[str, int]] = {k: defaultdict(int) for k in self.total}
        for kind, counts in self.open.items():
            for key in [k for k in counts if k[1] < upto]:
                n = counts.pop(key)
                self.total[kind][key[0]] += n
                delta[kind][key[0]] += n
        last: dict[str, list[float]] = defaultdict(list)
        for key in [k for k in self.lat_open if k[1] < upto]:
            samples = self.lat_open.pop(key)
            if key[1] == upto - 1:
                last[key[0]] = samples
        for p in self.recvs:
            self.lat_p50_ms[p] = statistics.median(last[p]) * 1e3 if last.get(p) else None
        self.closed_epoch = max(self.closed_epoch, upto - 1)
        return delta

    def snapshot(self) -> dict[str, Any]:
        """The closed totals: ``{"epoch": k, "sent": {path: n}, ...}`` (``k``: the
        first epoch not yet counted, so the totals cover send times ``< k·interval``)."""
        out: dict[str, Any] = {"epoch": self.closed_epoch + 1, "interval_s": self.interval_s,
                               "stray": self.stray}
        out["sent"] = {p: self.total["sent"][p] for p in self.sends}
        for kind in ("received", "corrupted", "ce", "late"):
            out[kind] = {p: self.total[kind][p] for p in self.recvs}
        out["latency_ms_p50"] = dict(self.lat_p50_ms)
        return out


class Prober:
    """One host's prober: its sockets, schedule, counters and output files."""

    def __init__(self, plan: ProbePlan, host: str, out_dir: Path, rate_pps: Optional[float] = None,
                 interval_s: float = 1.0, grace_s: float = 0.5) -> None:
        if host not in plan.hosts():
            raise ProberError(f"host {host!r} is not in the probe plan (hosts: {', '.join(plan.hosts())})")
        rate = plan.rate_pps if rate_pps is None else rate_pps
        if rate <= 0 or interval_s <= 0 or not 0 <= grace_s < interval_s:
            raise ProberError("want rate_pps > 0, interval_s > 0 and 0 <= grace_s < interval_s")
        self.plan, self.host, self.out_dir = plan, host, out_dir
        self.rate_pps, self.interval_s, self.grace_s = rate, interval_s, grace_s
        self.plan_id = plan_id_of(plan)
        self.nics = plan.nics_of(host)
        self.index = {p.name: i for i, p in enumerate(plan.paths)}
        self.by_tuple = {(p.src_ip, p.dst_ip, p.sport): p.name for p in plan.paths}
        self.my_ips = {n.ip for n in self.nics.values()}
        self.sends = plan.paths_from(host)
        self.counters = Counters(plan, host, interval_s)
        self.templates = {p.name: ProbeTemplate(plan.nics[p.src_nic].gateway_mac,
                                                plan.nics[p.src_nic].mac, p.src_ip, p.dst_ip, p.sport)
                          for p in self.sends}
        self.socks: dict[str, socket.socket] = {}
        self.hold: Any = None
        self.tx_errors = 0
        self._init_metrics()

    # ---------------------------------------------------------------- set-up
    def open(self) -> None:
        """Open a raw socket on every NIC of the host and hold UDP 4791 (ProberError when
        an interface is missing)."""
        for intf in sorted(self.nics):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            try:
                s.bind((intf, 0))
            except OSError as exc:
                s.close()
                self.close()
                raise ProberError(f"interface {intf} of {self.host}: {exc.strerror or exc} "
                                  f"(run the prober inside {self.host}'s network namespace)") from None
            s.setblocking(False)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            self.socks[intf] = s
        self.hold = UdpPortHold(sorted(self.my_ips))
        self.out_dir.mkdir(parents=True, exist_ok=True)
        ready = {"host": self.host, "pid": os.getpid(), "interfaces": sorted(self.socks),
                 "udp_4791": self.hold.status, "paths_sent": len(self.sends),
                 "rate_pps": self.rate_pps}
        _atomic_write(self.out_dir / f"probe-{self.host}.ready", json.dumps(ready) + "\n")

    def close(self) -> None:
        """Close every socket."""
        for s in self.socks.values():
            s.close()
        self.socks.clear()
        if self.hold is not None:
            self.hold.close()

    # ---------------------------------------------------------------- metrics
    def _init_metrics(self) -> None:
        self.registry = CollectorRegistry()
        labels = ("path", "src_nic", "dst_nic")
        r = self.registry
        self.m = {
            "sent": Counter("astral_probe_sent", "Probes sent (closed send epochs)", labels, registry=r),
            "received": Counter("astral_probe_received", "Probes received with a good ICRC",
                                labels, registry=r),
            "corrupted": Counter("astral_probe_corrupted", "Probes received with a bad ICRC",
                                 labels, registry=r),
            "ce": Counter("astral_probe_ce", "Probes received CE-marked", labels, registry=r),
            "late": Counter("astral_probe_late", "Probes received after their epoch closed",
                            labels, registry=r),
        }
        self.m_latency = Histogram("astral_probe_latency_seconds", "One-way probe latency",
                                   ("path",), buckets=LATENCY_BUCKETS_S, registry=r)
        self.m_epoch = Gauge("astral_probe_epoch_end_seconds",
                             "Send time (monotonic s) up to which the counters are closed", registry=r)
        self.m_stray = Counter("astral_probe_stray", "Probe frames of no path of this plan", registry=r)
        for p in self.plan.paths:
            lab = (p.name, p.src_nic, p.dst_nic)
            if p in self.sends:
                self.m["sent"].labels(*lab)
            if p.name in self.counters.recvs:
                for k in ("received", "corrupted", "ce", "late"):
                    self.m[k].labels(*lab)

    def write(self, delta: dict[str, dict[str, int]]) -> None:
        """Add the just-closed counts to the metrics and write both files."""
        paths = {p.name: p for p in self.plan.paths}
        for kind, counts in delta.items():
            for name, n in counts.items():
                if n:
                    p = paths[name]
                    self.m[kind].labels(name, p.src_nic, p.dst_nic).inc(n)
        snap = self.counters.snapshot()
        self.m_epoch.set(snap["epoch"] * self.interval_s)
        snap.update({"host": self.host, "plan_id": self.plan_id, "tx_errors": self.tx_errors,
                     "epoch_end_s": snap["epoch"] * self.interval_s})
        write_to_textfile(str(self.out_dir / f"probe-{self.host}.prom"), self.registry)
        _atomic_write(self.out_dir / f"probe-{self.host}.json", json.dumps(snap) + "\n")

    # ---------------------------------------------------------------- frames
    def on_frame(self, frame: bytes, now_s: float) -> None:
        """Count one received frame (anything but a probe is ignored)."""
        info = parse_probe(frame)
        if info is None or info.dst_ip not in self.my_ips:
            return
        name = self._path_of(info)
        if name is None:
            self.counters.stray += 1
            self.m_stray.inc()
            return
        send_s = info.send_ns / 1e9
        if not info.icrc_ok:
            plausible = info.magic_ok and now_s - 10.0 <= send_s <= now_s
            self.counters.on_corrupted(name, send_s if plausible else now_s)
            return
        latency = max(0.0, now_s - send_s)
        self.counters.on_received(name, send_s, latency, info.ecn == 3)
        self.m_latency.labels(name).observe(latency)

    def _path_of(self, info: ProbeInfo) -> Optional[str]:
        name = self.by_tuple.get((info.src_ip, info.dst_ip, info.sport))
        if name is None:
            return None
        if info.icrc_ok and (not info.magic_ok or info.plan_id != self.plan_id
                             or info.path_index != self.index[name]):
            return None
        return name

    # ---------------------------------------------------------------- loop
    def run(self, duration_s: float = 0.0, stop: Any = lambda: False) -> None:
        """Send and receive until ``duration_s`` (0: forever) or ``stop()``; the counters
        are written at every epoch boundary + grace, and once more at the end."""
        gap = 1.0 / self.rate_pps
        t0 = time.monotonic()
        n = max(1, len(self.sends))
        due = {p.name: t0 + gap * i / n for i, p in enumerate(self.sends)}
        seq = {p.name: 0 for p in self.sends}
        end = t0 + duration_s if duration_s > 0 else math.inf
        next_write = (self.counters.epoch(t0) + 1) * self.interval_s + self.grace_s
        socks = list(self.socks.values())
        while not stop():
            now = time.monotonic()
            if now >= end:
                break
            for p in self.sends:
                if due[p.name] <= now:
                    self._send(p.name, p.src_nic, seq[p.name])
                    seq[p.name] += 1
                    due[p.name] = max(due[p.name] + gap, now)
            if now >= next_write:
                next_write = self.close_due(now)
            wake = min([next_write, end, *due.values()])
            timeout = max(0.0, min(wake - time.monotonic(), 0.1))
            readable, _, _ = select.select(socks, [], [], timeout)
            for s in readable:
                self._drain(s)
        upto = self.counters.epoch(time.monotonic() - self.grace_s)
        self.write(self.counters.close_epochs(upto))

    def close_due(self, now: float) -> float:
        """Drain every socket, close the epochs that ended ``grace`` before ``now`` and
        write the files; returns when the next epoch is due. Frames the kernel queued
        while this loop was late (a busy CPU) arrived in time: they are counted before
        their epoch closes, not as late."""
        for s in self.socks.values():
            while self._drain(s):
                pass
        upto = self.counters.epoch(now - self.grace_s)
        self.write(self.counters.close_epochs(upto))
        return (upto + 1) * self.interval_s + self.grace_s

    def _send(self, name: str, nic: str, seq: int) -> None:
        t = time.monotonic_ns()
        frame = self.templates[name].frame(self.plan_id, self.index[name], seq, t)
        self.counters.on_sent(name, t / 1e9)
        try:
            self.socks[nic].send(frame)
        except OSError:
            self.tx_errors += 1           # link down: the probe is lost, as on the wire

    def _drain(self, s: socket.socket) -> bool:
        """Count up to 256 queued frames; True when more may be queued."""
        for _ in range(256):
            try:
                frame, addr = s.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                return False              # ENETDOWN while the link is down
            if addr[2] != PACKET_OUTGOING:
                self.on_frame(frame, time.monotonic())
        return True


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m monitor.prober``: see the module docstring."""
    ap = argparse.ArgumentParser(prog="python -m monitor.prober",
                                 description="Send and count one host's RoCEv2 probes.")
    ap.add_argument("--plan", required=True, type=Path, help="probe plan (python -m monitor.probes)")
    ap.add_argument("--host", required=True, help="this host's name, e.g. b0s0")
    ap.add_argument("--out", required=True, type=Path, help="folder for probe-<host>.prom/.json")
    ap.add_argument("--rate-pps", type=float, default=None, help="probes/s per path (default: the plan's)")
    ap.add_argument("--interval-s", type=float, default=1.0, help="counter epoch and write period")
    ap.add_argument("--grace-s", type=float, default=0.5, help="wait for late probes before closing")
    ap.add_argument("--duration-s", type=float, default=0.0, help="0: until SIGTERM")
    args = ap.parse_args(argv)
    stopping = {"flag": False}

    def on_signal(_sig: int, _frame: Any) -> None:
        stopping["flag"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        prober = Prober(load_plan(args.plan), args.host, args.out, args.rate_pps,
                        args.interval_s, args.grace_s)
        prober.open()
    except (ProberError, ValueError) as exc:
        print(f"monitor.prober: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        prober.run(args.duration_s, stop=lambda: stopping["flag"])
    finally:
        prober.close()
    return 0


__all__ = ["Counters", "EXIT_BAD_INPUT", "Prober", "ProberError", "main", "plan_id_of",
           "prober_command"]


if __name__ == "__main__":
    sys.exit(main())
