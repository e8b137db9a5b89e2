"""The NIC processes of one testbed run (:class:`NicFleet`): receivers started in the
hosts' namespaces and probed until their raw sockets are open, then one sender per NIC
pair; every process recorded by PID in the testbed state (kind ``"traffic"``, so that
``make stop`` ends them too), stopped by PID, its JSON report collected.

>>> fleet = NicFleet(state, save_state, Path("/tmp/run"))        # doctest: +SKIP
>>> fleet.start(flows, duration_s=10, opts=NicOptions()); fleet.stop()  # doctest: +SKIP
"""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from testbed.net import ProcRecord, proc_cmdline
from testbed.traffic.flows import NicFlow
from testbed.traffic.nicproc import (NicOptions, NicProcess, bind_roce_sink, receiver_command,
                                  sender_command)
from testbed.traffic.probe import packet_socket_open, poll_until

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 30.0


class FleetError(RuntimeError):
    """A NIC process did not come up (it exited, or its socket never opened in time)."""


class NicFleet:
    """The NIC processes of one run: started in the hosts' namespaces, recorded in the
    testbed state (kind ``"traffic"``), stopped by PID, reports collected.

    >>> fleet = NicFleet(state, save_state, Path("/tmp/run"))        # doctest: +SKIP
    >>> fleet.start(flows, duration_s=10, opts=NicOptions()); fleet.stop()  # doctest: +SKIP
    """

    def __init__(self, state: Any, save_state: Callable[[], None], report_dir: Path) -> None:
        self.state, self.save_state, self.report_dir = state, save_state, report_dir
        self.procs: list[NicProcess] = []
        self.sinks: list[socket.socket] = []
        self._records: list[Any] = []
        self.shells = {r.name: r.pid for r in state.procs if r.kind == "host-shell"}

    def _spawn(self, role: str, host: str, iface: str, cmd: list[str], report: Path,
               flows: list[NicFlow]) -> NicProcess:
        proc = subprocess.Popen(["mnexec", "-a", str(self.shells[host]), *cmd], cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        np_ = NicProcess(role, host, iface, proc, report, flows)
        self.procs.append(np_)
        rec = ProcRecord(f"nic {role} {host} {iface}", proc.pid,
                         proc_cmdline(proc.pid) or " ".join(cmd), "traffic")
        self._records.append(rec)
        self.state.procs.append(rec)
        return np_

    def start(self, flows: Sequence[NicFlow], duration_s: float, opts: NicOptions,
              ready_timeout_s: float = READY_TIMEOUT_S,
              sender_args: Optional[Callable[[Sequence[NicFlow]], list[str]]] = None,
              together: bool = False) -> None:
        """Receivers first (they run until stopped) and, once every receiver has its raw
        socket open (:meth:`wait_ready`, at most ``ready_timeout_s``), one sender per NIC
        pair; ``sender_args(flows)`` adds options to a sender's command line (its agent's).
        ``together``: every sender sets up (socket, agent registered) and waits; once all
        are ready (at most ``ready_timeout_s``) one SIGUSR1 each starts them in the same
        instant, as the ranks of a training job start a collective — not one after the
        other as their processes happen to come up. Raises :class:`FleetError` when a
        receiver or a sender does not come up (what was started is still recorded:
        :meth:`stop` ends it)."""
        self.report_dir.mkdir(parents=True, exist_ok=True)
        by_dst: dict[tuple[str, str], list[NicFlow]] = {}
        by_pair: dict[tuple[str, str], list[NicFlow]] = {}
        for f in flows:
            by_dst.setdefault((f.dst_host, f.dst_intf), []).append(f)
            by_pair.setdefault((f.src_ip, f.dst_ip), []).append(f)
        for host, ip in sorted({(f.src_host, f.src_ip) for f in flows}
                               | {(f.dst_host, f.dst_ip) for f in flows}):
            try:
                self.sinks.append(bind_roce_sink(self.shells[host], ip))
            except OSError as exc:  # EADDRINUSE: someone else already owns 4791 there
                print(f"traffic: no RoCE sink on {host} {ip}: {exc}", file=sys.stderr)
        try:
            for (host, iface), fl in by_dst.items():
                path = self.report_dir / f"recv-{iface}.json"
                ips = sorted({f.dst_ip for f in fl})
                self._spawn("recv", host, iface,     # both ports of a dual-port NIC listen
                            receiver_command(fl[0].recv_iface, ips, duration_s + 30, path, opts), path, fl)
            self.save_state()
            self.wait_ready([p for p in self.procs if p.role == "recv"], ready_timeout_s)
            for (src, dst), fl in by_pair.items():
                fl = sorted(fl, key=lambda f: f.qpn)
                path = self.report_dir / f"send-{src}-{dst}.json"
                extra = sender_args(fl) if sender_args is not None else []
                ready = path.with_suffix(".ready") if together else None
                if ready is not None:
                    ready.unlink(missing_ok=True)
                self._spawn("send", fl[0].src_host, fl[0].src_intf,
                            sender_command(fl, duration_s, path, opts, ready) + extra, path, fl)
            if together:
                self._start_together(ready_timeout_s)
        finally:
            self.save_state()

    def _start_together(self, timeout_s: float) -> None:
        """Wait until every sender wrote its ready file, then SIGUSR1 to each (their go)."""
        senders = [p for p in self.procs if p.role == "send"]

        def all_ready() -> bool:
            for p in senders:
                if p.proc.poll() is not None:
                    raise FleetError(f"nic send {p.host} {p.iface} exited "
                                     f"({p.proc.returncode}) before it was ready")
            return all(p.report_path.with_suffix(".ready").is_file() for p in senders)

        if not poll_until(all_ready, timeout_s):
            late = [f"{p.host} {p.iface}" for p in senders
                    if not p.report_path.with_suffix(".ready").is_file()]
            raise FleetError(f"nic senders not set up after {timeout_s:g} s: {', '.join(late)}")
        for p in senders:
            p.proc.send_signal(signal.SIGUSR1)

    def wait_ready(self, procs: Sequence[NicProcess], timeout_s: float = READY_TIMEOUT_S) -> float:
        """Wait until every process of ``procs`` holds its raw socket (it can receive),
        at most ``timeout_s``; returns the seconds it took. Raises :class:`FleetError`
        naming the first process that exited or never opened its socket."""
        t0 = time.monotonic()
        pending = list(procs)

        def all_ready() -> bool:
            for p in list(pending):
                if p.proc.poll() is not None:
                    raise FleetError(f"nic {p.role} {p.host} {p.iface} exited "
                                     f"({p.proc.returncode}) before it was ready")
                if packet_socket_open(p.proc.pid):
                    pending.remove(p)
            return not pending

        if not poll_until(all_ready, timeout_s):
            p = pending[0]
            raise FleetError(f"nic {p.role} {p.host} {p.iface}: no raw socket open after "
                             f"{timeout_s:g} s")
        return time.monotonic() - t0

    def wait_senders(self, timeout_s: float) -> None:
        """Wait until every sender has exited by itself (its duration), at most ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        for p in self.procs:
            if p.role == "send":
                try:
                    p.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass

    def stop(self, timeout_s: float = 10.0) -> list[str]:
        """SIGTERM every process still running (senders first), wait, read the reports;
        returns the errors (a process without a report, with its stderr tail)."""
        errors: list[str] = []
        for role in ("send", "recv"):
            for p in self.procs:
                if p.role == role and p.proc.poll() is None:
                    p.proc.send_signal(signal.SIGTERM)
            for p in self.procs:
                if p.role != role:
                    continue
                try:
                    _, err = p.proc.communicate(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    p.proc.kill()
                    _, err = p.proc.communicate(timeout=timeout_s)
                try:
                    p.report = json.loads(p.report_path.read_text())
                except (OSError, ValueError):
                    tail = (err or b"").decode(errors="replace").strip().splitlines()[-3:]
                    errors.append(f"{p.role} {p.host} {p.iface}: no report "
                                  f"(exit {p.proc.returncode}): {' | '.join(tail)}")
        for sock in self.sinks:
            sock.close()
        self.sinks.clear()
        for rec in self._records:
            if rec in self.state.procs:
                self.state.procs.remove(rec)
        self._records.clear()
        self.save_state()
        return errors


__all__ = ["FleetError", "NicFleet", "READY_TIMEOUT_S"]
