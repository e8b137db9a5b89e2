"""``make run SCENARIO=fornax``: FORNAX on its own testbed (:mod:`testbed.vpcnet`).

Two servers, ``nicA`` and ``nicB``, each a SmartNIC (``p4src/smartnic/smartnic.p4`` on
p4sim, or BMv2 with ``--target bmv2``) whose uplinks are cabled together; four VMs
(namespaces) in two VPCs with the same addresses (blue VNI 100 and red VNI 200, both
10.0.0.0/24: a1/a2 behind nicA, b1/b2 behind nicB), a load balancer in blue
(10.0.0.100:80 -> b1:8080); one manager process per NIC (``python -m fornax manage``,
P4Runtime over TLS). Real kernel TCP: long connections (a1 -> b1:80, a1 -> VIP:80,
a2 -> b2:80) echoing 20 KiB/s each for the whole run, short ones (a1 -> b1, a2 -> b2,
b2 -> a2) opened at 4 per second each. In the middle, in turn:

1. a policy change that touches only the red VPC's security group (both managers
   reload it): only red sessions may be re-evaluated, on their next packet;
2. a corrupted session entry on nicA (the long a1 -> b1 connection's, changed through
   P4Runtime without its check code, as a memory fault would change it);
3. nicA's switch frozen (SIGSTOP) for ``HANG_S`` seconds, then thawed;

and, from the policy change on, beside the story: nicB attacked with nicA's manager
certificate and nicA's own certificate (take mastership, write, push a pipeline, read its
sessions, packet-outs, idle streams: :func:`testbed.attacks.live_nic_attacks`) — each must
be refused, nicB's manager must stay primary (no mastership loss).

Then ``runs/<time>/report.md`` (timeline, events, detection times, sessions, CPU,
connections) and three plots. Exit status 1 when it measured nothing, a fault went
unseen or a connection broke; 2 when a step failed.

Example::

    >>> "lb blue 10.0.0.100:80 tcp 10.0.0.2:8080" in scenario_policy()
    True
    >>> SCHEDULE["hang"] < SCHEDULE["end"]
    True
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from controller.p4rt.tls import ClientTls
from fornax.admin import AdminClient, AdminError
from fornax.build import BuildError, SmartNicBuild
from p4src.smartnic.model import IP_PROTO_TCP, canonical_key, ip
from scenarios.fornax_report import RunRecord, analyse, failures, write_report
from scenarios.report import new_run_dir, report_failures
from testbed.attacks import LiveNic, live_nic_attacks
from testbed.net import REPO, NetOptions, TestbedError
from testbed.vpcnet import NicSpec, VmSpec, VpcNet, VpcNetSpec, manager_identity

NICS = {"nicA": ("192.168.0.1", "02:fa:00:00:00:01", "02:fe:00:00:00:01", 31),
        "nicB": ("192.168.0.2", "02:fa:00:00:00:02", "02:fe:00:00:00:02", 32)}
VMS = (("a1", "blue", "nicA", 2, "10.0.0.1", "02:00:00:00:01:01"),
       ("a2", "red", "nicA", 3, "10.0.0.1", "02:00:00:00:01:02"),
       ("b1", "blue", "nicB", 2, "10.0.0.2", "02:00:00:00:02:01"),
       ("b2", "red", "nicB", 3, "10.0.0.2", "02:00:00:00:02:02"))
VIP = "10.0.0.100"
#: seconds after the traffic started
SCHEDULE = {"policy": 6.0, "corruption": 11.0, "hang": 16.0, "end": 27.0}
HANG_S = 3.0
READY_TIMEOUT_S = 60.0
GRPC_BASE_PORT = 50730


def scenario_policy(red_change: bool = False) -> str:
    """The scenario's policy; ``red_change``: with the change of step 1 (a rule at the
    top of the red group, which no connection of the run uses)."""
    lines = []
    other = {"nicA": "nicB", "nicB": "nicA"}
    for name, (vtep, mac, gw, _) in NICS.items():
        lines.append(f"nic {name} vtep {vtep} uplink-mac {mac} underlay-mac "
                     f"{NICS[other[name]][1]} gateway-mac {gw}")
    lines += ["vpc blue vni 100", "vpc red vni 200"]
    for vm, vpc, nic, port, addr, mac in VMS:
        lines.append(f"vm {vm} vpc {vpc} nic {nic} port {port} ip {addr} mac {mac} "
                     f"groups {vpc}-web")
    for vpc in ("blue", "red"):
        if vpc == "red" and red_change:
            lines.append("rule red-web ingress deny tcp 9000 from 0.0.0.0/0")
        lines += [f"rule {vpc}-web egress allow any to 0.0.0.0/0",
                  f"rule {vpc}-web ingress allow tcp 80 from 10.0.0.0/24",
                  f"rule {vpc}-web ingress allow tcp 8080 from 10.0.0.0/24",
                  f"rule {vpc}-web ingress allow icmp from 10.0.0.0/24",
                  f"route {vpc} 10.0.0.0/24 direct"]
    lines.append(f"lb blue {VIP}:80 tcp 10.0.0.2:8080")
    return "\n".join(lines) + "\n"


def net_spec() -> VpcNetSpec:
    """The testbed: two NICs (uplink port 1, VM ports 2 and 3), four VMs, one cable."""
    nics = [NicSpec(n, d, f"127.0.0.1:{GRPC_BASE_PORT + d}", (1, 2, 3))
            for n, (_, _, _, d) in NICS.items()]
    vms = [VmSpec(vm, nic, port, f"{addr}/24", mac) for vm, _, nic, port, addr, mac in VMS]
    return VpcNetSpec(nics, vms, cables=[("nicA", 1, "nicB", 1)])


MANAGER_ELECTION_ID = 1
"""Each NIC manager's election id (``--election-id``): the live attacks write with it, so
that only identity, never a wrong id, can refuse them."""


class ManagerProcess:
    """One ``python -m fornax manage`` process of the run (its log beside the report)."""

    def __init__(self, nic: str, run_dir: Path, net: VpcNet, build: tuple[Path, Path],
                 policy: Path, pki: Optional[Path], baseline: bool) -> None:
        spec = next(n for n in net.spec.nics if n.name == nic)
        self.nic = nic
        self.build = build
        self.admin_path = run_dir / f"{nic}.sock"
        self.log = run_dir / f"{nic}-manager.log"
        cmd = [sys.executable, "-m", "fornax", "manage", "--nic", nic, "--grpc-addr",
               spec.grpc_addr, "--device-id", str(spec.device_id), "--policy", str(policy),
               "--p4info", str(build[0]), "--config", str(build[1]),
               "--admin", str(self.admin_path), "--events", str(run_dir / f"{nic}-events.jsonl"),
               "--idle-timeout-s", "20", "--election-id", str(MANAGER_ELECTION_ID)]
        if pki is not None:
            cmd += ["--pki", str(pki), "--server-name", nic]
        for port in spec.ports:
            cmd += ["--iface", f"{port}={net.spec.interface(nic, port)}"]
        if baseline:
            cmd += ["--baseline", "--walk-period-s", "5"]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        net.record_process(f"fornax-{nic}", self.proc.pid)
        self.admin = AdminClient(self.admin_path)

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Return once the admin socket answers; TestbedError with the log's tail if the
        process ends or the time runs out first."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                break
            try:
                self.admin.call("stats")
                return
            except AdminError:
                threading.Event().wait(0.1)
        tail = self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""
        raise TestbedError(f"the manager of {self.nic} is not ready "
                           f"(exit status {self.proc.poll()}): {tail}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def run_fornax(target: str = "p4sim", runs_root: Path = REPO / "runs", insecure: bool = False,
               baseline: bool = False, state_path: Path = REPO / "build" / "testbed-state.json",
               say: Callable[[str], None] = print, p4c: str = "p4c-bm2-ss",
               schedule: Optional[dict[str, float]] = None,
               hang_s: float = HANG_S) -> tuple[int, Path]:
    """Run the scenario; (exit status, run folder). ``schedule``: when each step happens,
    in seconds after the traffic started (default :data:`SCHEDULE`); ``hang_s``: how long
    nicA stays frozen."""
    run_dir = new_run_dir(runs_root)
    say(f"fornax: run folder {run_dir}")
    try:
        build = SmartNicBuild(baseline=baseline).compile(
            compiler="p4c" if target == "bmv2" else "p4sim", p4c=p4c)
    except BuildError as exc:
        say(f"fornax: {exc}")
        return 2, run_dir
    policy = run_dir / "vpc.policy"
    policy.write_text(scenario_policy())
    pki = None if insecure else state_path.parent / "pki"
    net = VpcNet(net_spec(), NetOptions(target=target, state_path=state_path,
                                        log_dir=REPO / "logs", pcap_dir=None, pki_dir=pki))
    managers: dict[str, ManagerProcess] = {}
    procs: list[tuple[str, Any]] = []
    status = 0
    try:
        net.start()
        say(f"fornax: 2 SmartNICs ({target}) and 4 VMs up")
        for nic in NICS:
            managers[nic] = ManagerProcess(nic, run_dir, net, build, policy, pki, baseline)
        for m in managers.values():
            m.wait_ready()
        say("fornax: managers ready: " + ", ".join(managers))
        status = _story(net, managers, run_dir, policy, procs, baseline, say,
                        schedule or SCHEDULE, hang_s)
    except TestbedError as exc:
        say(f"fornax: {exc}")
        status = 2
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for m in managers.values():
            m.stop()
        done = net.stop()
        left = [d for d in done if d.startswith("could not")]
        say("fornax: torn down" + (f": {left[0]}" if left else ""))
        status = status or (2 if left else 0)
    return status, run_dir


def _story(net: VpcNet, managers: dict[str, ManagerProcess], run_dir: Path, policy: Path,
           procs: list[tuple[str, Any]], baseline: bool, say: Callable[[str], None],
           schedule: dict[str, float], hang_s: float) -> int:
    py = sys.executable
    for vm, ports in (("b1", (80, 8080)), ("b2", (80,)), ("a2", (80,))):
        args = [a for p in ports for a in ("--port", str(p))]
        with open(run_dir / f"{vm}-server.log", "wb") as log:
            p = net.vm(vm).popen([py, "-u", "-m", "scenarios.fornax_traffic", "server", *args],
                                 cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        procs.append((vm, p))
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if all((run_dir / f"{vm}-server.log").exists() and "serving" in
               (run_dir / f"{vm}-server.log").read_text() for vm in ("b1", "b2", "a2")):
            break
        threading.Event().wait(0.1)
    else:
        raise TestbedError("the echo servers did not start (see *-server.log)")
    duration = schedule["end"]
    clients = {
        "a1": ["--long", "10.0.0.2:80", "--long", f"{VIP}:80", "--short", "10.0.0.2:80"],
        "a2": ["--long", "10.0.0.2:80", "--short", "10.0.0.2:80"],
        "b2": ["--short", "10.0.0.1:80"],
    }
    t0 = time.time()
    client_procs: list[Any] = []
    for vm, extra in clients.items():
        cmd = [py, "-m", "scenarios.fornax_traffic", "client", "--duration-s", str(duration),
               "--out", str(run_dir / f"{vm}-client.json"), "--short-rate-per-s", "4",
               "--ports-file", str(run_dir / f"{vm}-ports.json"), *extra]
        with open(run_dir / f"{vm}-client.log", "wb") as log:
            p = net.vm(vm).popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        procs.append((vm, p))
        client_procs.append(p)
    say(f"fornax: traffic for {duration:.0f} s: 3 long connections, short ones at 12/s")
    samples: dict[str, list[tuple[float, dict[str, Any]]]] = {n: [] for n in managers}
    stop_sampling = threading.Event()

    def sample() -> None:
        while not stop_sampling.wait(0.5):
            for nic, m in managers.items():
                if nic in net.stopped:
                    continue
                try:
                    samples[nic].append((time.time(), m.admin.call("stats")))
                except AdminError:
                    pass
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    injected: dict[str, float] = {}
    scopes: dict[str, list[int]] = {}
    corrupted = None
    hang = None

    def at(offset: float) -> None:
        threading.Event().wait(max(0.0, t0 + offset - time.time()))

    at(schedule["policy"])
    policy.write_text(scenario_policy(red_change=True))
    injected["policy change (red only)"] = time.time()
    for nic, m in managers.items():
        res = m.admin.call("reload")
        scopes[nic] = res.get("scopes", []) if isinstance(res, dict) else []
    say(f"fornax: policy changed: scopes bumped {scopes}")
    attack_result: list[Any] = [[], None]

    def attack() -> None:
        try:
            attack_result[:] = _attack_nic(net, managers, "nicB", "nicA")
        except Exception as exc:  # noqa: BLE001 — reported as a failed step, not hidden
            attack_result[:] = [[("scenario", "attacks", "ERROR", repr(exc))], None]
    attacker = threading.Thread(target=attack, daemon=True, name="fornax-attacks")
    attacker.start()                                      # beside the story, not in its way
    at(schedule["corruption"])
    ports = json.loads((run_dir / "a1-ports.json").read_text())
    port = next((c["local_port"] for c in ports if c["target"] == "10.0.0.2:80"), 0)
    key = canonical_key(100, IP_PROTO_TCP, ip("10.0.0.1"), port, ip("10.0.0.2"), 80)[0]
    injected["corruption"] = time.time()
    corrupted = managers["nicA"].admin.call(
        "corrupt", key=[key.vni, key.proto, key.ip_lo, key.ip_hi, key.port_lo, key.port_hi])
    say(f"fornax: corrupted the entry of {corrupted} on nicA")
    at(schedule["hang"])
    frozen = net.freeze("nicA")
    injected["nicA frozen (SIGSTOP)"] = frozen
    say(f"fornax: nicA frozen for {hang_s:.0f} s")
    threading.Event().wait(hang_s)                        # the scenario's timeline: frozen
    thawed = net.thaw("nicA")
    hang = ("nicA", frozen, thawed)
    say("fornax: nicA thawed")
    for p in client_procs:
        try:
            p.wait(max(1.0, duration + 60 - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            p.kill()
    say(f"fornax: traffic done ({time.time() - t0:.1f} s)")
    attacker.join(30)
    attacks, attacked = attack_result
    if attacker.is_alive():
        attacks = [("scenario", "attacks", "ERROR", "did not finish within 30 s of the end")]
    if attacks:
        say(f"fornax: nicB attacked with nicA's certificates while serving: "
            f"{sum(1 for a in attacks if a[2] != 'OK')} of {len(attacks)} refused")
    threading.Event().wait(1.0)                           # one more sample after the end
    stop_sampling.set()
    sampler.join(5)
    timelines = {}
    for nic, m in managers.items():
        try:
            timelines[nic] = m.admin.call("timeline")["events"]
        except AdminError as exc:
            say(f"fornax: no timeline from {nic}: {exc}")
            timelines[nic] = []
    results = {}
    for vm in clients:
        path = run_dir / f"{vm}-client.json"
        if path.exists():
            results[vm] = json.loads(path.read_text())
            results[vm]["t_start"] = t0
    rec = RunRecord(t0=t0, injected=injected, timelines=timelines, samples=samples,
                    clients=results, policy_change_t=injected["policy change (red only)"],
                    hang=hang, manager="baseline" if baseline else "fornax",
                    corrupted_key=corrupted, policy_scopes=scopes, attacks=attacks,
                    attacked_mastership=attacked)
    out = analyse(rec)
    write_report(run_dir, rec, out)
    say(f"fornax: corruption reported after {out.corruption_detect_s} s, hang detected after "
        f"{out.hang_detect_s} s, stale re-evaluations by VNI {out.stale_rebuilt_by_vni}, "
        f"{out.long_connections} long connections ({out.long_broken} broken, longest stall "
        f"{out.long_max_stall_s:.2f} s), {out.short_connections} short ({out.short_failed} "
        f"failed); manager CPU {out.cpu_s} s")
    say(f"fornax: report {run_dir / 'report.md'}")
    return report_failures(run_dir, "fornax", failures(rec, out), say)


def _attack_nic(net: VpcNet, managers: dict[str, ManagerProcess], victim: str, attacker: str
                ) -> tuple[list[tuple[str, str, str, str]], Optional[tuple[int, int]]]:
    """Attack NIC ``victim`` while it serves traffic, with NIC ``attacker``'s manager
    certificate and its switch certificate (:func:`testbed.attacks.live_nic_attacks`);
    (attacks, the victim's manager's mastership losses before and after). Nothing
    without TLS."""
    if net.pki is None:
        return [], None
    spec = next(n for n in net.spec.nics if n.name == victim)
    m = managers[victim]
    trust = net.pki.ca_cert("switches")
    parties = {who: ClientTls(trust, net.pki.files(who).cert, net.pki.files(who).key)
               for who in (manager_identity(attacker), attacker)}
    target = LiveNic(spec.grpc_addr, spec.device_id, victim, parties, *m.build,
                     election_id=MANAGER_ELECTION_ID)
    before = int(m.admin.call("stats").get("mastership_losses", 0))
    out = [(who, what, code, detail) for who in parties
           for what, code, detail in live_nic_attacks(target, who)]
    after = int(m.admin.call("stats").get("mastership_losses", 0))
    return out, (before, after)


__all__ = ["HANG_S", "SCHEDULE", "net_spec", "run_fornax", "scenario_policy"]
