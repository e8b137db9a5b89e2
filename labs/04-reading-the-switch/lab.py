"""Lab 04 plugin, reading the switch: the student's ``readings.py`` reads port counters,
the queue-depth histogram (a counter: bins read before and after, the difference is the
measurement) and sampled-flow digests of a real leaf (``p4src/fabric.p4`` on p4sim or
BMv2, programmed by ``controller.fabric_setup``); the checker sends traffic whose effect
it knows and compares the student's readings with the truth. Nothing reads or writes a
register over P4Runtime (BMv2 supports neither).

Example::

    $ make -C labs/04-reading-the-switch check
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, NamedTuple

from controller.fabric import SwitchPlan
from controller.telemetry.counter_reader import (QDEPTH_BIN_PKTS, QDEPTH_BINS, QDEPTH_HIST_COUNTER,
                                           qdepth_floor, qdepth_hist_index)
from controller.p4rt import counter_entry
from labs.labkit import LabSwitch, Report
from labs.labkit.fabric import FABRIC_PROGRAM, program_leaf
from labs.labkit.packets import udp_frame
from labs.labkit.student import describe_exception, load_student_module
from topo.model import Fabric, build_fabric
from topo.spec import FabricSpec

TITLE = "Reading the switch: counters, a queue-depth histogram and digests over P4Runtime"
FILES = ("readings.py",)

PROGRAM = FABRIC_PROGRAM
LAB = "04-reading-the-switch"
LEAF = "b0r0l0"
IN_PORT, OUT_PORT = 1, 2
QUIET_S = 0.5
SETTLE_S = 3.0
SLOW_QUEUE_PPS = 50
BURST = 20
SAMPLE_SPORTS = tuple(range(40000, 40005))


class Traffic(NamedTuple):
    """What the checker sends from port 1: frames (count, bytes each) per fate."""

    to_neighbour: tuple[int, int] = (7, 150)     # 10.0.0.2, leaves on port 2
    to_nowhere: tuple[int, int] = (3, 120)       # 192.168.0.1: no route, dropped
    to_fabric: tuple[int, int] = (5, 200)        # 10.1.0.1: over an uplink


def fabric() -> Fabric:
    """Two blocks, one rail, two spines: leaf b0r0l0 has servers on ports 1, 2 and
    uplinks on 3, 4."""
    return build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1, spines=2))


def _frames(fab: Fabric, traffic: Traffic) -> list[bytes]:
    nic = fab.switch(LEAF).ports[IN_PORT]
    src_mac = next(n.mac for h in fab.hosts for n in h.nics if n.leaf == LEAF
                   and n.leaf_port == IN_PORT)
    out: list[bytes] = []
    for dst, (n, size) in (("192.168.0.1", traffic.to_nowhere), ("10.0.0.2", traffic.to_neighbour),
                           ("10.1.0.1", traffic.to_fabric)):
        out += [udp_frame("10.0.0.1", dst, 49152 + i, eth_src=src_mac, eth_dst=nic.mac,
                          length=size) for i in range(n)]
    return out


def wait_until(probe: Callable[[], bool], timeout_s: float = SETTLE_S) -> bool:
    """Poll ``probe`` until it holds or ``timeout_s`` passes (a bounded readiness probe)."""
    deadline = time.monotonic() + timeout_s
    while not probe():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def truth(traffic: Traffic) -> dict[tuple[int, str], int]:
    """The counter values the traffic must leave, by (port, key)."""
    everything = (traffic.to_neighbour, traffic.to_nowhere, traffic.to_fabric)
    return {(IN_PORT, "rx_packets"): sum(n for n, _ in everything),
            (IN_PORT, "rx_bytes"): sum(n * b for n, b in everything),
            (IN_PORT, "drop_packets"): traffic.to_nowhere[0],
            (IN_PORT, "drop_bytes"): traffic.to_nowhere[0] * traffic.to_nowhere[1],
            (OUT_PORT, "tx_packets"): traffic.to_neighbour[0],
            (OUT_PORT, "tx_bytes"): traffic.to_neighbour[0] * traffic.to_neighbour[1]}


def check_counters(r: Report, sw: LabSwitch, fab: Fabric, mod: ModuleType) -> None:
    """Step 1: known traffic, then the student's port_counters() against the truth."""
    traffic = Traffic()
    for frame in _frames(fab, traffic):
        sw.send(IN_PORT, frame)
    sw.receive_all(QUIET_S)
    want = truth(traffic)
    conn = sw.connection
    wait_until(lambda: conn.read_counter("FabricIngress.telemetry.rx", IN_PORT)[IN_PORT].packets
               >= want[(IN_PORT, "rx_packets")])
    got = {p: mod.port_counters(conn, p) for p in (IN_PORT, OUT_PORT)}
    wrong = [(p, k, v, got[p].get(k) if isinstance(got[p], dict) else None)
             for (p, k), v in want.items()
             if not isinstance(got[p], dict) or got[p].get(k) != v]
    if wrong:
        p, k, v, g = wrong[0]
        r.fail("port_counters() reads what the traffic did",
               f"port {p} {k}: you read {g}, the switch counted {v} ({len(wrong)} value(s) "
               "wrong). rx and drops are FabricIngress counters, tx is FabricEgress; each "
               "cell has .packets and .bytes.")
    else:
        r.ok(f"port_counters(): port {IN_PORT} received {want[(IN_PORT, 'rx_packets')]} and "
             f"dropped {want[(IN_PORT, 'drop_packets')]}, port {OUT_PORT} sent "
             f"{want[(OUT_PORT, 'tx_packets')]} - packets and bytes right")


def _true_bins(conn: Any, port: int) -> list[int]:
    """``port``'s queue-depth bins as the checker reads them (one indexed Read)."""
    first = qdepth_hist_index(port, 0)
    got = [0] * QDEPTH_BINS
    for e in conn.read(*[counter_entry(conn.p4info, QDEPTH_HIST_COUNTER, first + b)
                         for b in range(QDEPTH_BINS)]):
        got[e.counter_entry.index.index - first] = e.counter_entry.data.packet_count
    return got


# (before, after, deepest): a deep bin counted before the interval does not count in it
DEEPEST_CASES = (([9, 0, 0, 4] + [0] * 12, [15, 2, 0, 4] + [0] * 12, 4),
                 ([3] + [0] * 15, [3] + [0] * 15, 0),
                 ([0] * 15 + [1], [5] + [0] * 14 + [2], 60))


def check_queue(r: Report, sw: LabSwitch, fab: Fabric, mod: ModuleType) -> None:
    """Step 2: the student's bins against the cells, deepest_queue() on known cases, then a
    real queue built by a burst (p4sim) measured as the difference of two readings."""
    conn = sw.connection
    before = mod.queue_depth_bins(conn, OUT_PORT)
    truth_before = _true_bins(conn, OUT_PORT)
    bins_ok = r.expect(
        isinstance(before, (list, tuple)) and list(before) == truth_before,
        f"queue_depth_bins() reads the {QDEPTH_BINS} bins of port {OUT_PORT} "
        f"({sum(truth_before)} packets so far)",
        f"the switch's bins are {truth_before}, you read {before!r}: the cell of bin b of "
        f"port p is p * {QDEPTH_BINS} + b in {QDEPTH_HIST_COUNTER}; return the .packets of "
        "each, bin 0 first")
    wrong = [(b, a, want, mod.deepest_queue(list(b), list(a))) for b, a, want in DEEPEST_CASES]
    wrong = [w for w in wrong if w[3] != w[2]]
    if wrong:
        b, a, want, got = wrong[0]
        r.fail("deepest_queue() looks only at the bins that grew between the readings",
               f"before {b}, after {a}: the bins that grew are "
               f"{[i for i in range(len(a)) if a[i] > b[i]]}, so the deepest queue is {want}; "
               f"you returned {got!r}. Subtract bin by bin and take the highest bin that "
               f"went up, times {QDEPTH_BIN_PKTS}")
    else:
        r.ok("deepest_queue() looks only at the bins that grew between the readings")
    if not bins_ok or wrong:
        return
    ctl = sw.control()          # the target's own runtime: p4sim control API / BMv2 Thrift
    try:
        ctl.set_queue_rate(SLOW_QUEUE_PPS, port=OUT_PORT)
        for frame in _frames(fab, Traffic((BURST, 150), (0, 0), (0, 0))):
            sw.send(IN_PORT, frame)
        sw.receive_all(QUIET_S)
    finally:
        ctl.set_queue_rate(0, port=OUT_PORT)
        ctl.close()
    what = f"a burst of {BURST} packets into a {SLOW_QUEUE_PPS} pkt/s queue"
    wait_until(lambda: sum(_true_bins(conn, OUT_PORT)) >= sum(truth_before) + BURST)
    truth_after = _true_bins(conn, OUT_PORT)
    grew = [a - b for a, b in zip(truth_after, truth_before)]
    real = qdepth_floor(grew)
    r.note(f"{what} on port {OUT_PORT}: the bins grew by {grew}, deepest queue {real} packets")
    after = mod.queue_depth_bins(conn, OUT_PORT)
    got = mod.deepest_queue(list(before), list(after))
    r.expect(list(after) == truth_after and got == real,
             f"deepest_queue(before, after) measures the burst: {real} packets",
             f"your bins after the burst {after!r} (the switch's: {truth_after}), your "
             f"deepest queue {got!r} (should be {real})")


def check_digests(r: Report, sw: LabSwitch, fab: Fabric, plan: SwitchPlan,
                  mod: ModuleType) -> None:
    """Step 3: sampling 1-in-1 on port 2; every sent flow comes back as a digest."""
    conn = sw.connection
    mod.start_sampling(conn, OUT_PORT, 1)
    entries = conn.read_table("FabricIngress.sampling.config")
    if not r.expect(len(entries) == 1, "start_sampling() writes one sampling.config entry",
                    f"the table has {len(entries)} entries: insert one entry matching "
                    "standard_metadata.egress_spec = port with action sample(one_in_n)"):
        return
    src_mac = next(n.mac for h in fab.hosts for n in h.nics if n.leaf_port == IN_PORT
                   and n.leaf == LEAF)
    for sport in SAMPLE_SPORTS:
        sw.send(IN_PORT, udp_frame("10.0.0.1", "10.0.0.2", sport, eth_src=src_mac,
                                   eth_dst=fab.switch(LEAF).ports[IN_PORT].mac, length=300))
    sw.receive_all(QUIET_S)
    samples: Any = mod.collect_samples(conn, 1.0)
    if not isinstance(samples, list) or not all(isinstance(s, dict) for s in samples):
        r.fail("collect_samples() returns a list of dicts", f"got {samples!r}")
        return
    sports = sorted(s.get("src_port", -1) for s in samples)
    fields_ok = all(s.get("switch_id") == plan.switch_id and s.get("egress_port") == OUT_PORT
                    and s.get("ingress_port") == IN_PORT and s.get("packet_length") == 300
                    for s in samples)
    r.expect(sports == list(SAMPLE_SPORTS) and fields_ok,
             f"collect_samples(): {len(SAMPLE_SPORTS)} digests, one per packet, with the "
             "right 5-tuple, ports, switch id and length",
             f"expected source ports {list(SAMPLE_SPORTS)}, got {sports}: keep calling "
             "get_digest(idle_s) until it returns None and add every dict of .data")


def check(files_dir: Path, target: str) -> Report:
    """Counters, queue-depth histogram, digests: the student's readings against the truth."""
    r = Report(TITLE)
    mod = load_student_module(files_dir / FILES[0])
    fab = fabric()
    with LabSwitch(PROGRAM, lab=LAB, ports=sorted(fab.switch(LEAF).ports), target=target) as sw:
        r.note(sw.banner())
        plan = program_leaf(sw, fab, LEAF)
        for step in (check_counters, check_queue):
            try:
                step(r, sw, fab, mod)
            except Exception as exc:     # the student's code may raise anything
                r.fail(f"{step.__name__[6:]}: your function ran",
                       describe_exception(files_dir / FILES[0], exc))
        try:
            check_digests(r, sw, fab, plan, mod)
        except Exception as exc:
            r.fail("digests: your functions ran", describe_exception(files_dir / FILES[0], exc))
    return r


def run(files_dir: Path, target: str) -> int:
    """Send the known traffic, print the student's readings, offer p4runtime-shell."""
    mod = load_student_module(files_dir / FILES[0])
    fab = fabric()
    with LabSwitch(PROGRAM, lab=LAB, ports=sorted(fab.switch(LEAF).ports), target=target) as sw:
        print(sw.banner())
        program_leaf(sw, fab, LEAF)
        traffic = Traffic()
        for frame in _frames(fab, traffic):
            sw.send(IN_PORT, frame)
        sw.receive_all(QUIET_S)
        print(f"sent from port {IN_PORT}: {traffic.to_neighbour[0]} to 10.0.0.2, "
              f"{traffic.to_nowhere[0]} to 192.168.0.1 (no route), "
              f"{traffic.to_fabric[0]} to 10.1.0.1 (uplinks)")
        for port in sorted(fab.switch(LEAF).ports):
            print(f"  port {port}: {mod.port_counters(sw.connection, port)}")
        bins = mod.queue_depth_bins(sw.connection, OUT_PORT)
        print(f"  queue-depth bins of port {OUT_PORT}: {bins}")
        print(f"  deepest queue on port {OUT_PORT} since the switch started: "
              f"{mod.deepest_queue([0] * len(bins), bins)} packets")
        tls = sw.client_tls               # --tls: the shell presents the same certificate
        ssl = (f" --ssl --cacert {tls.ca_cert} --cert {tls.cert} --private-key {tls.key}"
               if tls is not None else "")
        print("\nthe same with p4runtime-shell (another terminal, while this switch runs; it has "
              "its own environment, .venv-shell, which `make run` here made):\n"
              f"  .venv-shell/bin/python -m p4runtime_sh --grpc-addr {sw.grpc_addr} --device-id 0 "
              f"--election-id 0,2{ssl}\n"
              "  P4Runtime sh >>> ce = CounterEntry('FabricIngress.telemetry.rx'); ce.index = 1\n"
              "  P4Runtime sh >>> for c in ce.read(): print(c.data.packet_count)\n"
              "  P4Runtime sh >>> h = CounterEntry('FabricEgress.telemetry.qdepth_hist'); "
              f"h.index = {OUT_PORT} * 16 + 1\n"
              "  P4Runtime sh >>> for c in h.read(): print(c.data.packet_count)")
        if sys.stdin.isatty():
            input("\npress Enter to stop the switch ")
    return 0
