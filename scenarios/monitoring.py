"""Monitoring around a scenario run on the live testbed: the probe plan, one prober in
every host's namespace, and the :class:`monitor.service.Monitor` (exporters, Prometheus
or the embedded store, the localiser, the web view) — started together, stopped together.

The monitor runs in a process of its own (``python -m monitor.remote``, recorded like
the probers); its evaluations then do not wait for GOR's loop and telemetry, which hold
the scenario's interpreter. GOR is given the probes' 5-tuples and never moves them. The
probers are the testbed's processes: started with ``mnexec -a <host shell pid>`` like
the NIC emulators, recorded in the testbed state (kind ``"monitor"``) and stopped by PID.
They, and the NIC emulators given ``NicOptions(metrics_dir=session.metrics_dir)``, write
their ``.prom`` files into the monitor's metrics folder, which its textfile exporter
serves to Prometheus.

Used by the faults scenario (:mod:`scenarios.faults`)::

    with GorSession(...) as gor, MonitoringSession(fabric, programmer, state, save_state,
                                                   run_dir, gor=gor) as mon:
        gor.start_flows(60, NicOptions(metrics_dir=mon.metrics_dir))
        mon.monitor.wait_verdict(lambda v: v.kind == "hung_switch", 20)
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from controller.fabric.qos import EcnConfig
from controller.gor.service import probe_flows_of
from monitor.probes import plan_probes
from monitor.remote import MonitorProcess
from monitor.service import Monitor
from monitor.switch_exporter import targets_from_record
from process import stop_process
from testbed.net import REPO, ProcRecord, proc_cmdline

READY_TIMEOUT_S = 20.0
PROBE_RATE_PPS = 10.0
"""Probes per second per path: 30 probes in the monitor's 3 s window, enough for the
localiser's minimum (10) with a few lost to a loaded CPU."""


class MonitoringError(RuntimeError):
    """A prober did not come up (it exited, or its sockets never opened in time)."""


class MonitoringSession:
    """Probe plan, probers and monitor of one run (``gor``: the run's
    :class:`~scenarios.gor_session.GorSession`, whose metrics and decision log the
    monitor watches; ``None`` watches no controller). The monitor runs in a process of
    its own (:class:`monitor.remote.MonitorProcess`), away from GOR's interpreter;
    ``in_process=True`` runs a :class:`monitor.service.Monitor` in this one."""

    def __init__(self, fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
                 run_dir: Path, *, gor: Any = None, options: Any = None,
                 probe_rate_pps: float = PROBE_RATE_PPS, in_process: bool = False,
                 say: Callable[[str], None] = print) -> None:
        self.fabric, self.programmer, self.state, self.save_state = fabric, programmer, state, save_state
        self.run_dir, self.gor, self.options, self.say = Path(run_dir), gor, options, say
        self.probe_rate_pps = probe_rate_pps
        self.in_process = in_process
        self.plan: Any = None
        self.monitor: Any = None
        self.probers: dict[str, subprocess.Popen[bytes]] = {}
        self._records: list[Any] = []

    @property
    def metrics_dir(self) -> Path:
        """Where probers and NIC emulators write their metric files."""
        return self.run_dir / "metrics"

    def __enter__(self) -> "MonitoringSession":
        self.plan = plan_probes(self.fabric, self.programmer.hash_model(), self.probe_rate_pps)
        plan_path = self.plan.save(self.run_dir / "probe-plan.json")
        gor = self.gor
        if gor is not None:             # GOR never moves a probe: its paths are the plan's
            gor.leave_alone(probe_flows_of(plan_path))
        common: dict[str, Any] = dict(
            gor_metrics=gor.metrics_address if gor is not None else None,
            decision_log=gor.dlog_path if gor is not None else None,
            ecn_threshold_pkts=EcnConfig().kmin_pkts, options=self.options, say=self.say)
        if self.in_process:
            targets = targets_from_record(self.fabric, self.state.switches, self.state.pki)
            self.monitor = Monitor(self.fabric, self.plan, self.run_dir, targets, **common)
        else:
            fabric_path = self.fabric.save(self.run_dir / "fabric.json")
            targets_path = self.run_dir / "monitor-targets.json"
            targets_path.write_text(json.dumps({"switches": self.state.switches,
                                                "pki": self.state.pki}, indent=1))
            self.monitor = MonitorProcess(fabric_path, plan_path, self.run_dir, targets_path,
                                          **common)
        try:
            self.monitor.start()
            self._record_monitor()
            self._start_probers(plan_path)
        except BaseException:
            self.__exit__()
            raise
        self.say(f"monitor: {len(self.plan.paths)} probe paths from {len(self.probers)} hosts, "
                 f"{self.plan.probes_per_s():g} probes/s; metrics in {self.monitor.store_kind}; "
                 f"verdicts in {self.monitor.verdict_log_path}")
        return self

    def _record_monitor(self) -> None:
        """The monitor process (when it is one) in the testbed state, kind ``"monitor"``,
        like the probers: a testbed teardown stops it by PID if this session could not."""
        proc = getattr(self.monitor, "proc", None)
        if proc is None:
            return
        rec = ProcRecord("monitor", proc.pid, proc_cmdline(proc.pid) or " ".join(proc.args),
                         "monitor")
        self._records.append(rec)
        self.state.procs.append(rec)
        self.save_state()

    def _start_probers(self, plan_path: Path) -> None:
        from monitor.prober import prober_command  # noqa: PLC0415 — heavy: scapy
        shells = {r.name: r.pid for r in self.state.procs if r.kind == "host-shell"}
        self.metrics_dir.mkdir(parents=True, exist_ok=True)
        for host in self.plan.hosts():
            if host not in shells:
                raise MonitoringError(f"host {host} of the probe plan has no shell in the testbed")
            (self.metrics_dir / f"probe-{host}.ready").unlink(missing_ok=True)
            cmd = prober_command(plan_path, host, self.metrics_dir)
            proc = subprocess.Popen(["mnexec", "-a", str(shells[host]), *cmd], cwd=REPO,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL)
            self.probers[host] = proc
            rec = ProcRecord(f"prober {host}", proc.pid, proc_cmdline(proc.pid) or " ".join(cmd),
                             "monitor")
            self._records.append(rec)
            self.state.procs.append(rec)
        self.save_state()
        deadline = time.monotonic() + READY_TIMEOUT_S
        waiting = set(self.probers)
        while waiting:
            for host in list(waiting):
                proc = self.probers[host]
                if (self.metrics_dir / f"probe-{host}.ready").exists():
                    waiting.discard(host)
                elif proc.poll() is not None:
                    err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
                    raise MonitoringError(f"prober {host} exited with {proc.returncode}: {err}")
            if waiting and time.monotonic() > deadline:
                raise MonitoringError(f"probers not ready within {READY_TIMEOUT_S:g} s: "
                                      f"{', '.join(sorted(waiting))}")
            if waiting and not self.monitor.wait_evaluations(1, 0.2) \
                    and getattr(self.monitor, "ended", False):     # a bounded pause between checks
                raise MonitoringError(f"the monitor process ended; its log: {self.monitor.log_path}")

    def __exit__(self, *exc: object) -> None:
        for host, proc in self.probers.items():
            stop_process(proc)
            if proc.stderr is not None:
                proc.stderr.close()
            if proc.returncode not in (0, None, -15):
                self.say(f"monitor: prober {host} ended with {proc.returncode}")
        if self.monitor is not None:
            self.monitor.stop()
        for rec in self._records:
            if rec in self.state.procs:
                self.state.procs.remove(rec)
        if self._records:
            self.save_state()
        self.probers.clear()
        self._records.clear()


__all__ = ["MonitoringError", "MonitoringSession", "PROBE_RATE_PPS"]
