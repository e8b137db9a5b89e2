"""The ``security`` benchmark group: what TLS costs a P4Runtime client of a live switch.

``security.tls_handshake`` starts a real ``python -m p4sim switch --no-p4`` with
simple_switch_grpc's TLS options (``--grpc-server-ssl ... --grpc-server-with-client-auth``,
a throw-away :class:`testbed.pki.FabricPki` in a temporary directory) and another one in
plaintext, and measures, :data:`CONNECTIONS` times each (after :data:`WARMUP` untimed):
a new gRPC channel (its own subchannel pool, so every connection is a new TCP connection
and, with TLS, a full handshake with the client certificate) → the first RPC
(``Capabilities``) answered. Figures, medians in milliseconds:

* ``security.tls_handshake_ms`` — TLS 1.3 with client authentication (ECDSA P-256 keys);
* ``security.plaintext_connect_ms`` — the same without TLS, for comparison.

Each switch is stopped by its own PID (SIGTERM, then SIGKILL after 10 s).

``security.authz`` runs the threat model's attack matrix (:mod:`testbed.attacks`) with the
testbed's own PKI (:func:`testbed.tls.create_fabric_pki`: three CAs and the p4sim
policy) against a switch started with the testbed's command line, after the controller
pushed ``p4src/fabric.p4``:

* ``security.authz_denied_ok`` — the fraction of the matrix refused (every RPC failed
  and the controller's Read before and after agree); goal 1.00. The matrix also holds
  the agent protocol's attacks (:func:`testbed.attacks.agent_attacks`: flow-id squatting,
  a switch or the monitor registering flows or ordering a move), on GOR's registry and
  two agents in this process with the same PKI;
* ``security.authz_attacks`` — how many attacks the matrix holds.

``security.p4rt_streams`` measures the controller's Read (one clone session, on its own
primary connection) 200 times with no other stream open, then again while
:data:`OTHER_STREAMS` idle StreamChannels of the monitor's certificate are open (p4sim's
stream bounds raised so that all of them stay open: what is measured is the reserved
worker pool, not the refusal):

* ``security.p4rt_rpc_ms_idle.p99``, ``security.p4rt_rpc_ms_under_streams.p99`` (goal
  < 50 ms) and ``.p50``;
* ``security.p4rt_streams_open`` — how many of the :data:`OTHER_STREAMS` stayed open.

``security.source_guard`` (root and Mininet; skipped with the reason otherwise) brings the
default testbed up on the target, programmed by the controller with TLS, and runs the
threat model's data-plane row (:func:`testbed.spoof.spoof_frames`, as
:func:`testbed.attacks.live_fabric_attacks` does): host b1s1 sends
:data:`testbed.spoof.SPOOF_FRAMES` frames with b0s0's source address and as many with its
own to its leaf neighbour b1s0:

* ``security.source_guard.spoofed_delivered`` — spoofed frames that arrived (goal 0);
* ``security.source_guard.own_delivered`` — frames with its own source that arrived
  (goal all of them: the guard leaves legitimate traffic alone);
* ``security.source_guard.drops_counted`` — what the leaf's
  ``FabricIngress.source_guard.drops`` counter of the attacker's port rose by.

All three take ``--target bmv2`` (simple_switch_grpc with the same TLS options; it has no
policy and no stream bounds).

``security.punt_flood`` (root and Mininet; skipped with the reason otherwise) brings the
default testbed up the same way (every port's ARP punts policed at
``controller.fabric.puntguard.DEFAULT_ARP_PUNT``, 100 packets/s, burst 100) and runs the
threat model's row ``host-floods-arp-punts`` (:func:`testbed.arpflood.punt_flood`): host
b1s1 sends :data:`PUNT_FLOOD_FRAMES` gratuitous ARP replies as fast as Python sends, each
a punt of its leaf; then the same with the port's meter cell reset (unconfigured: the
switch as before the policer), and the cell is written back:

* ``security.punt_flood.frames_sent``, ``.flood_s`` — the policed flood;
* ``security.punt_flood.packet_ins`` — PacketIns the controller got from the port (goal:
  at most ``.allowed``, burst + rate × the time from the first frame to the last
  PacketIn);
* ``security.punt_flood.policed_drops`` — what the leaf's ``FabricIngress.arp.punt_drops``
  rose by;
* ``security.punt_flood.unpoliced_packet_ins`` and ``.unpoliced_last_packet_in_s`` — the
  same flood without the meter cell: every punt the switch read, and how long after the
  first frame the last PacketIn came (the switch's PacketIn backlog).

It takes ``--target bmv2`` too (BMv2's meters; its punts reach the same controller
stream).

``security.pfc_storm`` (root and Mininet; p4sim only: BMv2's MAC has no PFC, a host's
PAUSE never stops its queues) brings the default testbed up the same way (every switch's
egress queue limit at ``controller.fabric.admission.QUEUE_LIMIT_PKTS``) and runs the
threat model's row ``host-pauses-its-leaf`` (:func:`testbed.pfcstorm.pause_storm`): host
b1s1 sends PAUSE frames for 3 s while b0s1 sends it 1,000 datagrams a second in the RoCE
data class; then the same with the limit taken off (the switch as before), and the limit
and the cells are put back:

* ``security.pfc_storm.leaked_pkts``, ``.stuck_paused`` — what the storm left on b1s1's
  leaf's uplink PFC cells of priority 3 once they settled (occupancy summed, cells
  paused; goal 0 and 0);
* ``security.pfc_storm.limit_drops`` — what ``FabricIngress.admission.drops`` of the
  leaf's port towards b1s1 rose by;
* ``security.pfc_storm.unlimited_leaked_pkts``, ``.unlimited_stuck_paused`` — the same
  storm without the limit;
* ``security.pfc_storm.pfcwd_storms``, ``.pfcwd_restored``, ``.target_queue_paused_ms`` —
  the leaf's PFC watchdog on its queue towards b1s1 during the first storm (storms found
  and restored; the time the queue was paused, summed: without the watchdog the whole
  3 s storm, 2,993 ms; with it, detection needs 200 ms of the queue paused *with packets
  waiting*, and starts again whenever that stops (a PAUSE ran out before the next came,
  or the queue emptied): 1,556.7 ms on 2026-12-08, which of the two it was in that run not
  measured).

``security.free_address`` (root and Mininet; p4sim) brings the default testbed up the same
way (every leaf drops its own subnets' free addresses, ``controller.fabric.plan``) and runs
the threat model's row ``host-loops-free-address`` (:func:`testbed.freeaddr.free_address_flood`):
host b1s1 sends 100 datagrams to a free address of its subnet; then the same with the
leaf's drop route deleted (the plan as before), and the route is written back:

* ``security.free_address.link_frames`` — frames the fabric's switch-to-switch ports sent
  meanwhile (goal 0);
* ``security.free_address.unrouted_link_frames`` — the same without the drop route (each
  datagram round leaf and spine until its TTL ran out).

Example::

    $ .venv/bin/python -m bench security

>>> round(median_ms([0.001, 0.003, 0.002]), 3)
2.0
"""
from __future__ import annotations

import ipaddress
import select
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Sequence

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from bench.results import BenchConfig, Benchmark, Figure
from process import stop_process
from controller.fabric.admission import ADMISSION_DROPS_COUNTER, T_ADMISSION
from controller.fabric.entries import T_ROUTES
from controller.fabric.puntguard import ARP_PUNT_METER
from controller.fabric.sourceguard import GUARD_DROPS_COUNTER
from controller.fabric_setup import meter_updates
from controller.p4rt import update
from testbed.attacks import (PAUSE_SENDER, SPOOF_ATTACKER, SPOOF_RECEIVER, SPOOF_VICTIM, Victim,
                             controller_read_ms,
                             denied_fraction, iter_table, open_streams, run_agent_attacks, run_attacks,
                             started_switch)
from testbed.arpflood import punt_flood
from testbed.cli import compile_fabric
from testbed.control import open_control
from testbed.freeaddr import free_address, free_address_flood
from testbed.pfcstorm import DATA_PRIORITY, OCCUPANCY, PAUSED, PauseStorm, pause_storm
from testbed.pki import FabricPki
from testbed.spoof import host_shells, spoof_frames
from testbed.tls import MONITOR, create_fabric_pki
from testbed.traffic import testbed_unavailable as why_no_testbed   # test* names: not pytest's
from testbed.traffic import testbed_up as live_testbed
from testbed.traffic import LiveTestbed
from topo.model import build_fabric

REPO = Path(__file__).resolve().parents[1]
CONNECTIONS = 40
WARMUP = 3
READY_TIMEOUT_S = 60.0
RPC_TIMEOUT_S = 10.0
READY_PREFIX = "p4sim switch ready: grpc "


def median_ms(seconds: Sequence[float]) -> float:
    """The median of durations in seconds, in milliseconds."""
    return statistics.median(seconds) * 1000.0


@contextmanager
def live_switch(target_options: Sequence[str]) -> Iterator[str]:
    """A ``python -m p4sim switch --no-p4`` on a free port of 127.0.0.1 with these target
    options; yields its P4Runtime address, stops it by PID on exit."""
    cmd = [sys.executable, "-m", "p4sim", "switch", "--no-p4", "--control-port", "0", "--",
           "--grpc-server-addr", "127.0.0.1:0", *target_options]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=err, bufsize=0)
        try:
            yield _ready_addr(proc, err)
        finally:
            stop_process(proc)


def _ready_addr(proc: "subprocess.Popen[bytes]", err: "tempfile._TemporaryFileWrapper[bytes]") -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        if select.select([proc.stdout], [], [], 0.2)[0]:
            line = proc.stdout.readline().decode(errors="replace")
            if line.startswith(READY_PREFIX):
                return line[len(READY_PREFIX):].split()[0]
    err.seek(0)
    raise RuntimeError(f"p4sim switch did not report ready: {err.read().decode(errors='replace')[-500:]}")


def connect_times(addr: str, creds: Optional[grpc.ChannelCredentials], n: int,
                  warmup: int = WARMUP) -> list[float]:
    """Seconds from a new channel to its first answered RPC, ``n`` times (after ``warmup``)."""
    options = [("grpc.use_local_subchannel_pool", 1)]   # a new connection every time
    out: list[float] = []
    for i in range(warmup + n):
        t0 = time.perf_counter()
        channel = grpc.insecure_channel(addr, options) if creds is None else \
            grpc.secure_channel(addr, creds, options)
        try:
            p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
                p4runtime_pb2.CapabilitiesRequest(), timeout=RPC_TIMEOUT_S, wait_for_ready=True)
            if i >= warmup:
                out.append(time.perf_counter() - t0)
        finally:
            channel.close()
    return out


def bench_tls_handshake(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001 — fixed count
    """``security.tls_handshake_ms`` and ``security.plaintext_connect_ms`` (module docstring)."""
    with tempfile.TemporaryDirectory(prefix="security-bench-") as tmp:
        pki = FabricPki.create(Path(tmp), ["switch", "controller"])
        sw, me = pki.files("switch"), pki.files("controller")
        tls_options = ["--grpc-server-ssl", "--grpc-server-cacert", str(sw.ca_cert),
                       "--grpc-server-cert", str(sw.cert), "--grpc-server-key", str(sw.key),
                       "--grpc-server-with-client-auth"]
        ca, cert, key = me.read()
        creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                             certificate_chain=cert)
        with live_switch(tls_options) as addr:
            tls = connect_times(addr, creds, CONNECTIONS)
        with live_switch([]) as addr:
            plain = connect_times(addr, None, CONNECTIONS)
    return {"security.tls_handshake_ms": Figure(round(median_ms(tls), 2), "ms"),
            "security.plaintext_connect_ms": Figure(round(median_ms(plain), 2), "ms")}


VICTIM, VICTIM_DEVICE_ID = "b0r0l0", 1
OTHER_STREAMS = 100
READS = 200


@contextmanager
def attacked_switch(config: BenchConfig, p4sim_flags: Sequence[str] = ()) -> Iterator[object]:
    """The testbed's PKI in a temporary directory, the fabric program compiled for the
    target, a switch started with the testbed's command line, and the controller's
    :class:`testbed.attacks.Victim` connection to it."""
    p4info, device_config = compile_fabric(config.target)
    with tempfile.TemporaryDirectory(prefix="security-authz-") as tmp:
        pki = create_fabric_pki(build_fabric(), Path(tmp) / "pki")
        with started_switch(config.target, pki.root, VICTIM, VICTIM_DEVICE_ID, Path(tmp) / "logs",
                            p4sim_flags) as addr:
            with Victim(addr, VICTIM_DEVICE_ID, VICTIM, pki.root, p4info, device_config) as victim:
                yield victim


def bench_authz(config: BenchConfig) -> dict[str, Figure]:
    """``security.authz_denied_ok`` (module docstring)."""
    with attacked_switch(config) as victim:
        outcomes = run_attacks(victim)   # type: ignore[arg-type]
        ips = {h.name: [n.ip for n in h.nics] for h in build_fabric().hosts}
        outcomes += run_agent_attacks(victim.pki.root, ips, VICTIM)   # type: ignore[attr-defined]
    for row in iter_table(outcomes):
        print(row, file=sys.stderr)
    return {"security.authz_denied_ok": Figure(round(denied_fraction(outcomes), 3), "fraction"),
            "security.authz_attacks": Figure(len(outcomes), "attacks")}


def p99(values: Sequence[float]) -> float:
    """The 99th percentile (nearest rank).

    >>> p99(list(range(1, 101)))
    99
    """
    ordered = sorted(values)
    return ordered[max(0, -(-99 * len(ordered) // 100) - 1)]


def bench_streams(config: BenchConfig) -> dict[str, Figure]:
    """``security.p4rt_rpc_ms_under_streams.p99`` (module docstring)."""
    flags = ["--p4rt-max-streams", str(OTHER_STREAMS + 1),
             "--p4rt-max-streams-per-client", str(OTHER_STREAMS)]
    with attacked_switch(config, flags) as victim:
        controller_read_ms(victim, reads=20)                     # warm-up
        idle = controller_read_ms(victim, reads=READS)
        kept, refused, channel = open_streams(victim, MONITOR, OTHER_STREAMS)  # type: ignore[arg-type]
        try:
            loaded = controller_read_ms(victim, reads=READS)
            still = sum(1 for s in kept if s.refusal() is None)
        finally:
            for s in kept:
                s.close()
            channel.close()
    return {"security.p4rt_rpc_ms_idle.p99": Figure(round(p99(idle), 2), "ms"),
            "security.p4rt_rpc_ms_under_streams.p99": Figure(round(p99(loaded), 2), "ms"),
            "security.p4rt_rpc_ms_under_streams.p50": Figure(round(statistics.median(loaded), 2), "ms"),
            "security.p4rt_streams_open": Figure(still, "streams")}


@contextmanager
def live_fabric(bench: str, config: BenchConfig) -> Iterator[Optional[LiveTestbed]]:
    """The default testbed up on ``config.target`` for ``security.<bench>`` (its logs and
    state in a temporary directory), torn down after; None, said once, when this process
    may not start one (not root, no Mininet)."""
    why = why_no_testbed()
    if why is not None:
        print(f"security.{bench}: skipped, {why}; security.{bench}.* not written",
              file=sys.stderr, flush=True)
        yield None
        return
    with tempfile.TemporaryDirectory(prefix=f"security-{bench}-") as tmp:
        with live_testbed(log_dir=Path(tmp) / "logs", state_path=Path(tmp) / "state.json",
                          target=config.target) as tb:
            yield tb


def bench_source_guard(config: BenchConfig) -> dict[str, Figure]:
    """``security.source_guard.*`` (module docstring); {} with the reason when this process
    may not start a testbed."""
    with live_fabric("source_guard", config) as tb:
        if tb is None:
            return {}
        nic = tb.fabric.host(SPOOF_ATTACKER).nics[0]
        conn = tb.programmer.connection(nic.leaf)
        before = conn.read_counter(GUARD_DROPS_COUNTER, nic.leaf_port)[nic.leaf_port].packets
        got = spoof_frames(host_shells(tb.state), tb.fabric, SPOOF_ATTACKER, SPOOF_VICTIM, SPOOF_RECEIVER)
        deadline = time.monotonic() + RPC_TIMEOUT_S
        while True:      # the counter may trail the last frame: a bounded poll, not a wait
            drops = conn.read_counter(GUARD_DROPS_COUNTER, nic.leaf_port)[nic.leaf_port].packets - before
            if drops >= got.frames or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    print(f"security.source_guard: {got.delivered()}; {drops} drops counted", file=sys.stderr)
    return {"security.source_guard.spoofed_delivered": Figure(got.spoofed_seen, "frames"),
            "security.source_guard.own_delivered": Figure(got.own_seen, "frames"),
            "security.source_guard.drops_counted": Figure(drops, "frames")}


PUNT_FLOOD_FRAMES = 100_000
"""Frames of the punt-flood bench (about 0.7-0.9 s of Python on the testbed machine)."""


def bench_punt_flood(config: BenchConfig) -> dict[str, Figure]:
    """``security.punt_flood.*`` (module docstring); {} with the reason when this process
    may not start a testbed."""
    with live_fabric("punt_flood", config) as tb:
        if tb is None:
            return {}
        shells = host_shells(tb.state)
        leaf = tb.fabric.host(SPOOF_ATTACKER).nics[0].leaf
        conn = tb.programmer.connection(leaf)
        policed = punt_flood(shells, tb.fabric, conn, SPOOF_ATTACKER, PUNT_FLOOD_FRAMES)
        conn.write([update(conn.meter_entry(ARP_PUNT_METER, policed.punts.port), "MODIFY")])
        try:
            open_port = punt_flood(shells, tb.fabric, conn, SPOOF_ATTACKER, PUNT_FLOOD_FRAMES)
        finally:
            conn.write(meter_updates(conn, tb.programmer.plans[leaf]))
    if policed.policer is None or open_port.policer is not None:
        raise RuntimeError(f"security.punt_flood: the policer was {policed.policer} on the policed "
                           f"run and {open_port.policer} without its cell: nothing compared")
    print(f"security.punt_flood: {policed.sent}; {policed}; without the meter cell: {open_port}",
          file=sys.stderr)
    return {"security.punt_flood.frames_sent": Figure(policed.sent.frames, "frames"),
            "security.punt_flood.flood_s": Figure(round(policed.sent.seconds, 3), "s"),
            "security.punt_flood.packet_ins": Figure(policed.punts.packet_ins, "packets"),
            "security.punt_flood.allowed": Figure(policed.allowed() or 0, "packets"),
            "security.punt_flood.policed_drops": Figure(policed.policed_drops, "packets"),
            "security.punt_flood.unpoliced_packet_ins": Figure(open_port.punts.packet_ins, "packets"),
            "security.punt_flood.unpoliced_last_packet_in_s": Figure(round(open_port.window_s, 2), "s")}


def _left(storm: PauseStorm) -> tuple[int, int]:
    return (sum(occ for occ, _ in storm.cells.values()),
            sum(paused for _, paused in storm.cells.values()))


def bench_pfc_storm(config: BenchConfig) -> dict[str, Figure]:
    """``security.pfc_storm.*`` (module docstring); {} with the reason when this process
    may not start a testbed."""
    with live_fabric("pfc_storm", config) as tb:
        if tb is None:
            return {}
        shells = host_shells(tb.state)
        nic = tb.fabric.host(SPOOF_ATTACKER).nics[0]
        conn = tb.programmer.connection(nic.leaf)
        port = nic.leaf_port
        before = conn.read_counter(ADMISSION_DROPS_COUNTER, port)[port].packets
        (limit,) = [e for e in tb.programmer.plans[nic.leaf].entries if e.table == T_ADMISSION]
        ctl = open_control(tb.state.target, tb.state.switches[nic.leaf], nic.leaf)
        try:
            wd0 = ctl.queue_stats(port)[port]["queues"][DATA_PRIORITY]
            limited = pause_storm(shells, tb.fabric, tb.state, SPOOF_ATTACKER, PAUSE_SENDER)
            drops = conn.read_counter(ADMISSION_DROPS_COUNTER, port)[port].packets - before
            # the leaf's PFC watchdog on its queue towards the attacker (testbed.net.PFC_WATCHDOG)
            wd = ctl.queue_stats(port)[port]["queues"][DATA_PRIORITY]
            conn.write([update(conn.table_entry(T_ADMISSION, {}, "NoAction", {}, is_default=True),
                               "MODIFY")])
            unlimited = pause_storm(shells, tb.fabric, tb.state, SPOOF_ATTACKER, PAUSE_SENDER)
        finally:
            ctl.register_reset(OCCUPANCY)
            ctl.register_reset(PAUSED)
            ctl.close()
            conn.write([update(conn.table_entry(limit.table, limit.match, limit.action,
                                                limit.params, is_default=True), "MODIFY")])
    if not (limited.settled and unlimited.settled):
        raise RuntimeError(f"security.pfc_storm: the counts did not settle: {limited}; {unlimited}")
    print(f"security.pfc_storm: {limited}; {drops} dropped by the limit; without the limit: "
          f"{unlimited}", file=sys.stderr)
    (leaked, stuck), (open_leaked, open_stuck) = _left(limited), _left(unlimited)
    return {"security.pfc_storm.pause_frames": Figure(limited.pause_frames, "frames"),
            "security.pfc_storm.datagrams": Figure(limited.datagrams, "packets"),
            "security.pfc_storm.leaked_pkts": Figure(leaked, "packets"),
            "security.pfc_storm.stuck_paused": Figure(stuck, "cells"),
            "security.pfc_storm.limit_drops": Figure(drops, "packets"),
            "security.pfc_storm.unlimited_leaked_pkts": Figure(open_leaked, "packets"),
            "security.pfc_storm.unlimited_stuck_paused": Figure(open_stuck, "cells"),
            "security.pfc_storm.pfcwd_storms": Figure(wd["pfcwd_storms"] - wd0["pfcwd_storms"], "storms"),
            "security.pfc_storm.pfcwd_restored": Figure(wd["pfcwd_restored"] - wd0["pfcwd_restored"], "storms"),
            "security.pfc_storm.target_queue_paused_ms":
                Figure(round((wd["paused_us"] - wd0["paused_us"]) / 1000, 1), "ms")}


def bench_free_address(config: BenchConfig) -> dict[str, Figure]:
    """``security.free_address.*`` (module docstring); {} with the reason when this process
    may not start a testbed."""
    with live_fabric("free_address", config) as tb:
        if tb is None:
            return {}
        shells = host_shells(tb.state)
        nic = tb.fabric.host(SPOOF_ATTACKER).nics[0]
        conns = tb.programmer.connections
        dropped = free_address_flood(shells, tb.fabric, conns, SPOOF_ATTACKER)
        addr = ipaddress.IPv4Address(free_address(tb.fabric, SPOOF_ATTACKER))
        (drop,) = [e for e in tb.programmer.plans[nic.leaf].entries
                   if e.table == T_ROUTES and e.action.endswith(".drop")
                   and addr in ipaddress.IPv4Network(e.match["hdr.ipv4.dst_addr"])]
        te = conns[nic.leaf].table_entry(drop.table, drop.match, drop.action, drop.params)
        conns[nic.leaf].write([update(te, "DELETE")])
        try:
            looped = free_address_flood(shells, tb.fabric, conns, SPOOF_ATTACKER)
        finally:
            conns[nic.leaf].write([update(te, "INSERT")])
    if not (dropped.settled and looped.settled):
        raise RuntimeError(f"security.free_address: the counters did not settle: {dropped}; {looped}")
    print(f"security.free_address: {dropped}; without the drop route: {looped}", file=sys.stderr)
    return {"security.free_address.datagrams": Figure(dropped.frames, "packets"),
            "security.free_address.link_frames": Figure(dropped.link_frames, "frames"),
            "security.free_address.unrouted_link_frames": Figure(looped.link_frames, "frames")}


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("tls_handshake", "security", bench_tls_handshake),
    Benchmark("authz", "security", bench_authz, targets=("p4sim", "bmv2")),
    Benchmark("p4rt_streams", "security", bench_streams, targets=("p4sim", "bmv2")),
    Benchmark("source_guard", "security", bench_source_guard, targets=("p4sim", "bmv2")),
    Benchmark("punt_flood", "security", bench_punt_flood, targets=("p4sim", "bmv2")),
    Benchmark("pfc_storm", "security", bench_pfc_storm),
    Benchmark("free_address", "security", bench_free_address),
)
