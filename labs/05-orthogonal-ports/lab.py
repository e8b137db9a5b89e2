"""Lab 05 plugin, hash-orthogonal source ports: the student's ``choose_source_ports()``
(``ports.py``) picks the UDP source ports of 8 RoCEv2 flows leaving one leaf; the checker
sends those flows through a real leaf switch (``p4src/fabric.p4`` on p4sim or BMv2,
programmed by ``controller.fabric_setup`` for a leaf with 8 uplinks), sees which uplink
each flow leaves on and reads the per-port ``FabricEgress.telemetry.tx`` counters, then
does the same with random source ports for comparison.

Example::

    $ make -C labs/05-orthogonal-ports check
"""
from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from labs.labkit import LabSwitch, Report
from labs.labkit.fabric import FABRIC_PROGRAM, program_leaf
from labs.labkit.packets import udp_fields, udp_frame
from labs.labkit.student import describe_exception, load_student_module
from p4src.hashmodel import SwitchHashModel, member_index
from topo.model import Fabric, build_fabric
from topo.spec import FabricSpec

TITLE = "Hash-orthogonal source ports: 8 flows on 8 uplinks (TCCL)"
FILES = ("ports.py",)

PROGRAM = FABRIC_PROGRAM
LEAF = "b0r0l0"
GROUP = 1
N_FLOWS = 8
PKTS_PER_FLOW = 10
FRAME_BYTES = 200
PORT_RANGE = (49152, 65535)
RANDOM_SEED = 8
QUIET_S = 0.5
TX = "FabricEgress.telemetry.tx"


class Sent(NamedTuple):
    """What one set of flows did on the switch: uplink port seen per flow, tx per uplink."""

    seen_port: list[int | None]
    tx_pkts: dict[int, int]


def fabric() -> Fabric:
    """Two blocks, one rail, eight spines: leaf b0r0l0 has hosts on ports 1, 2 and eight
    uplinks on ports 3..10 (ECMP group 1, members s0..s7)."""
    return build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1, spines=8))


def flows_of(fab: Fabric) -> list[tuple[str, str]]:
    """8 flows from the leaf's two servers to the two servers of block 1 (two QPs a pair)."""
    src = [n.ip for h in fab.hosts for n in h.nics if n.leaf == LEAF]
    dst = [n.ip for h in fab.hosts for n in h.nics if n.leaf != LEAF]
    return [(src[i % len(src)], dst[i // len(src) % len(dst)]) for i in range(N_FLOWS)]


def send_flows(sw: LabSwitch, fab: Fabric, flows: Sequence[tuple[str, str]],
               ports: Sequence[int], uplinks: Sequence[int]) -> Sent:
    """Send ``PKTS_PER_FLOW`` frames of every flow from its server's port; the uplink each
    flow left on, and the tx packet counter delta of every uplink."""
    conn = sw.connection
    before = {p: conn.read_counter(TX, p)[p].packets for p in uplinks}
    leaf = fab.switch(LEAF)
    nic_of = {n.ip: n for h in fab.hosts for n in h.nics}
    for _ in range(PKTS_PER_FLOW):
        for (src, dst), sport in zip(flows, ports):
            nic = nic_of[src]
            sw.send(nic.leaf_port, udp_frame(src, dst, sport, eth_src=nic.mac,
                                             eth_dst=leaf.ports[nic.leaf_port].mac,
                                             length=FRAME_BYTES))
    seen: dict[tuple[str, str, int], int] = {}
    for port, frame in sw.receive_all(QUIET_S):
        f = udp_fields(frame)
        if f is not None:
            seen.setdefault((f.src, f.dst, f.sport), port)
    after = {p: conn.read_counter(TX, p)[p].packets for p in uplinks}
    return Sent([seen.get((s, d, p)) for (s, d), p in zip(flows, ports)],
                {p: after[p] - before[p] for p in uplinks})


def spread(tx_pkts: dict[int, int]) -> tuple[float, float]:
    """(max, mean) flows per uplink from packet counts."""
    per = [v / PKTS_PER_FLOW for v in tx_pkts.values()]
    return max(per), sum(per) / len(per)


def random_ports(flows: Sequence[tuple[str, str]]) -> list[int]:
    """What a NIC without TCCL does: random ports in the dynamic range (fixed seed)."""
    rng = random.Random(RANDOM_SEED)
    return [rng.randint(*PORT_RANGE) for _ in flows]


def validate(r: Report, ports: Any, flows: Sequence[tuple[str, str]]) -> bool:
    """The student's answer is one distinct, in-range port per flow."""
    if not isinstance(ports, list) or len(ports) != len(flows) or \
            not all(isinstance(p, int) for p in ports):
        r.fail("choose_source_ports() returns one port per flow",
               f"expected a list of {len(flows)} ints, got {ports!r}")
        return False
    bad = [p for p in ports if not PORT_RANGE[0] <= p <= PORT_RANGE[1]]
    if bad:
        r.fail("every source port is in the dynamic range 49152-65535",
               f"port {bad[0]} is outside it: search the table from PORT_RANGE[0] only")
        return False
    keys = [(s, d, p) for (s, d), p in zip(flows, ports)]
    if len(set(keys)) != len(keys):
        r.fail("two flows of the same server pair get different ports",
               "two of your flows have the same (src, dst, sport): they would be one flow. "
               "Skip ports this pair already uses.")
        return False
    r.ok(f"{len(ports)} distinct source ports in 49152-65535")
    return True


def check(files_dir: Path, target: str) -> Report:
    """Solve the ports, send the flows through the leaf, judge the spread."""
    r = Report(TITLE)
    fab = fabric()
    flows = flows_of(fab)
    mod = load_student_module(files_dir / FILES[0])
    ports_by_leaf = sorted(fab.switch(LEAF).ports)
    with LabSwitch(PROGRAM, lab="05-orthogonal-ports", ports=ports_by_leaf, target=target) as sw:
        plan = program_leaf(sw, fab, LEAF)
        model: SwitchHashModel = plan.hash_model()
        uplinks = list(plan.groups[GROUP].ports)
        r.note(sw.banner())
        r.note(f"leaf {LEAF}: seed {model.seed:#010x}, {model.algorithm}, "
               f"uplinks {uplinks} (members {', '.join(plan.groups[GROUP].members)})")
        try:
            ports = mod.choose_source_ports(model, GROUP, flows)
        except Exception as exc:
            r.fail("choose_source_ports() runs",
                   "it raised " + describe_exception(files_dir / FILES[0], exc))
            return r
        if not validate(r, ports, flows):
            return r
        mine = send_flows(sw, fab, flows, ports, uplinks)
        rand = send_flows(sw, fab, flows, random_ports(flows), uplinks)
    judge(r, model, flows, ports, mine, rand, uplinks)
    return r


def judge(r: Report, model: SwitchHashModel, flows: Sequence[tuple[str, str]],
          ports: Sequence[int], mine: Sent, rand: Sent, uplinks: Sequence[int]) -> None:
    """Model agreement, distinct uplinks, counters; max/mean for random vs student."""
    predicted = [uplinks[member_index(model, GROUP, s, d, 17, p, 4791) - model.group(GROUP).base]
                 for (s, d), p in zip(flows, ports)]
    lost = [i for i, p in enumerate(mine.seen_port) if p is None]
    r.expect(not lost, "every flow came out of the leaf",
             f"flow {lost[0] if lost else ''} never left the switch: see build/labs/"
             "05-orthogonal-ports/switch.log")
    r.expect(list(mine.seen_port) == predicted,
             "each flow left on the uplink the published hash model predicts",
             f"switch ports {mine.seen_port}, model {predicted}: the switch and "
             "p4src/hashmodel.py disagree (a lab bug: please report it)")
    used = Counter(p for p in mine.seen_port if p is not None)
    fair = math.ceil(len(flows) / len(uplinks))
    worst, n = used.most_common(1)[0] if used else (0, 0)
    together = [i for i, p in enumerate(mine.seen_port) if p == worst]
    r.expect(n <= fair, f"the {len(flows)} flows use {len(used)} different uplinks "
             f"(at most {fair} flow per uplink)",
             f"flows {together} ({', '.join(f'sport {ports[i]}' for i in together)}) all left "
             f"on port {worst}; {len(uplinks) - len(used)} uplinks carry nothing. For flow i "
             "pick a port whose member index (port_to_member_table) is base + i % size.")
    mx, mean = spread(mine.tx_pkts)
    rmx, rmean = spread(rand.tx_pkts)
    r.note(f"FabricEgress.telemetry.tx per uplink, {PKTS_PER_FLOW} packets a flow: "
           f"your ports {[mine.tx_pkts[p] for p in uplinks]} (max/mean {mx / mean:.2f}); "
           f"random ports {[rand.tx_pkts[p] for p in uplinks]} (max/mean {rmx / rmean:.2f})")
    r.expect(mx <= fair, "the switch's own tx counters show every uplink equally loaded",
             f"the busiest uplink sent {mx:g} flows' worth of packets, a fair share is {fair}")


def run(files_dir: Path, target: str) -> int:
    """Send random ports then the student's ports; print flows per uplink for each."""
    fab = fabric()
    flows = flows_of(fab)
    mod = load_student_module(files_dir / FILES[0])
    with LabSwitch(PROGRAM, lab="05-orthogonal-ports", ports=sorted(fab.switch(LEAF).ports),
                   target=target) as sw:
        print(sw.banner())
        plan = program_leaf(sw, fab, LEAF)
        uplinks = list(plan.groups[GROUP].ports)
        members = plan.groups[GROUP].members
        ports = mod.choose_source_ports(plan.hash_model(), GROUP, flows)
        for label, chosen in (("random ports", random_ports(flows)), ("your ports", ports)):
            sent = send_flows(sw, fab, flows, chosen, uplinks)
            mx, mean = spread(sent.tx_pkts)
            print(f"\n{label}: " + ", ".join(f"{s}->{d}:{p}" for (s, d), p in zip(flows, chosen)))
            for port, member in zip(uplinks, members):
                n = sent.tx_pkts[port] / PKTS_PER_FLOW
                print(f"  uplink port {port:2d} (to {member}): {'#' * round(n):8s} {n:g} flows")
            print(f"  max {mx:g} / mean {mean:g} flows per uplink = {mx / mean:.2f}")
    return 0
