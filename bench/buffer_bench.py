"""Static vs dynamic PFC/ECN thresholds of ``p4src/fabric.p4`` on p4sim, with the
testbed's settings (:class:`controller.fabric.qos.PfcConfig` / ``EcnConfig`` and
:data:`p4src.buffermodel.DEFAULT_DYNAMIC`), 1 KiB RoCE frames (priority 3).

The switch runs in two halves (``run_ingress`` / ``run_egress``), the bench being the
traffic manager: N senders send round-robin into one egress port and nothing leaves
until the first PAUSE; then the queue drains in order. Every PAUSE and every mark the
switch decides deterministically is checked against
:class:`p4src.buffermodel.SharedBufferModel` (a mismatch raises ``BenchCheckError``).

Figures (packets are 1 KiB frames):

* ``thresholds.pause_pkts.{static,dynamic}.n{1,4,8}`` — packets each of N senders had
  sent when the first PAUSE left (static: the XOFF of 32 whatever N; dynamic: the
  alpha rule, alpha 1/4 of 2048 cells of 128 B: ~51 alone, 32 with 4, ~21 with 8).
* ``thresholds.queue_pkts_at_pause.{static,dynamic}.n{1,4,8}`` — the egress queue then.
* ``thresholds.ecn_marks.{static,dynamic}.n{1,4,8}`` — CE marks when that queue drains
  (RED: the switch's random draw; the count varies from run to run).

Example::

    >>> from bench.results import BenchConfig
    >>> f = bench_thresholds(BenchConfig(), senders=(1,))   # doctest: +SKIP
    >>> f["thresholds.pause_pkts.dynamic.n1"].value          # doctest: +SKIP
    52.0
"""
from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any, Optional

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure
from controller.fabric.qos import EcnConfig, PfcConfig
from p4sim.engine import load_program
from p4sim.stf import parse_stf
from p4sim.v1model.stf_commands import StfTarget
from p4sim.v1model.switch import QueueMeta, V1ModelSwitch
from p4src.buffermodel import (BUFFER_ACTION, BUFFER_TABLE, DEFAULT_DYNAMIC, DynamicThresholds,
                               SharedBufferModel)

REPO = Path(__file__).resolve().parent.parent
FABRIC_P4 = REPO / "p4src" / "fabric.p4"
OUT_PORT = 9
FRAME_BYTES = 1024
PRIO, DSCP, ECT0, CE = 3, 26, 2, 3
MAX_PKTS = 200


def _entries(dyn: Optional[DynamicThresholds]) -> str:
    """STF commands: host 10.0.0.p behind port p (1..9), DSCP 26 -> priority 3, PAUSE
    clone sessions, and the thresholds on every port: static (``dyn`` None) or dynamic."""
    pfc, ecn = PfcConfig(), EcnConfig()
    out = ["setdefault FabricIngress.switch_info.config FabricIngress.switch_info.set_switch(switch_id:11, role:0, ecmp_seed:1)",
           f"add FabricIngress.qos.dscp_to_priority hdr.ipv4.dscp:{DSCP} FabricIngress.qos.set_priority(prio:{PRIO})"]
    for p in range(1, OUT_PORT + 1):
        out += [f"add FabricIngress.forwarding.routes hdr.ipv4.dst_addr:0x0a0000{p:02x} FabricIngress.forwarding.set_nexthop(nexthop_id:{p})",
                f"add FabricIngress.forwarding.nexthops meta.nexthop_id:{p} FabricIngress.forwarding.route_to(port:{p}, src_mac:0x020000000b{p:02x}, dst_mac:0x0000000000{p:02x})",
                f"mirroring_add {100 + p} {p}"]
        if dyn is None:
            out += [f"add FabricIngress.pfc.thresholds standard_metadata.ingress_port:{p} FabricIngress.pfc.set_thresholds(xoff_pkts:{pfc.xoff_pkts}, xon_pkts:{pfc.xon_pkts}, pause_quanta:{pfc.pause_quanta})",
                    f"add FabricEgress.ecn.thresholds standard_metadata.egress_port:{p} FabricEgress.ecn.set_ecn_red(kmin_pkts:{ecn.kmin_pkts}, kmax_pkts:{ecn.kmax_pkts}, pmax_per_255:{ecn.pmax_per_255})"]
        else:
            out += [f"add FabricIngress.pfc.thresholds standard_metadata.ingress_port:{p} FabricIngress.pfc.set_dynamic_thresholds(pause_quanta:{dyn.pause_quanta})",
                    f"add FabricEgress.ecn.thresholds standard_metadata.egress_port:{p} FabricEgress.ecn.set_ecn_dynamic()"]
    if dyn is not None:
        params = ", ".join(f"{k}:{v}" for k, v in dyn.buffer.table_params().items())
        out.append(f"setdefault {BUFFER_TABLE} {BUFFER_ACTION}({params})")
        for prio, a in dyn.pfc.items():
            ps = ", ".join(f"{k}:{v}" for k, v in a.table_params().items())
            out.append(f"add FabricIngress.pfc.alpha meta.priority:{prio} FabricIngress.pfc.set_pfc_alpha({ps})")
        for prio, e in dyn.ecn.items():
            ps = ", ".join(f"{k}:{v}" for k, v in e.table_params().items())
            out.append(f"add FabricEgress.ecn.alpha meta.priority:{prio} FabricEgress.ecn.set_ecn_alpha({ps})")
    return "\n".join(out) + "\n"


def _frame(src_port: int, seq: int) -> bytes:
    """A 1 KiB ECT(0) RoCE frame from host ``src_port`` to the host behind OUT_PORT."""
    eth = bytes.fromhex("020000000b01") + bytes.fromhex("0000000000%02x" % src_port) + b"\x08\x00"
    total = FRAME_BYTES - 14
    ip = bytearray(bytes.fromhex("4500") + total.to_bytes(2, "big") + seq.to_bytes(2, "big")
                   + bytes.fromhex("00004011") + b"\x00\x00" + bytes([10, 0, 0, src_port])
                   + bytes([10, 0, 0, OUT_PORT]))
    ip[1] = DSCP << 2 | ECT0
    csum = sum(int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2))
    while csum >> 16:
        csum = (csum & 0xFFFF) + (csum >> 16)
    ip[10:12] = (~csum & 0xFFFF).to_bytes(2, "big")
    udp = (49152 + seq % 1000).to_bytes(2, "big") + (4791).to_bytes(2, "big") \
        + (total - 20).to_bytes(2, "big") + b"\x00\x00"
    return eth + bytes(ip) + udp + bytes(total - 28)


def incast(dyn: Optional[DynamicThresholds], senders: int) -> tuple[int, int, int]:
    """(packets per sender at the first PAUSE, queue then, CE marks as it drains)."""
    program = load_program(str(FABRIC_P4), trace=False)
    switch = V1ModelSwitch(program, priority_queues=8)
    target = StfTarget(program)
    for cmd in parse_stf(_entries(dyn)):
        target.execute(cmd)
    model = SharedBufferModel(dyn) if dyn is not None else None
    queue: deque[tuple[Any, Any, int]] = deque()   # (work, model arrival, enq_qdepth)
    paused_at = 0
    for n in range(1, MAX_PKTS + 1):
        for s in range(1, senders + 1):
            work = switch.run_ingress(s, _frame(s, n))
            pause = any(w.port == s for w in work)
            arrival = model.arrive(s, OUT_PORT, PRIO, FRAME_BYTES) if model else None
            if arrival is not None and arrival.pause != pause:
                raise BenchCheckError(f"PAUSE of port {s} at packet {n}: switch {pause}, "
                                      f"model {arrival.pause}")
            queue.extend((w, arrival, len(queue)) for w in work if w.port == OUT_PORT)
            for w in work:
                if w.port == s:
                    switch.run_egress(w)
            if pause and not paused_at:
                paused_at = n
        if paused_at:
            break
    if not paused_at:
        raise BenchCheckError(f"no PAUSE within {MAX_PKTS} packets per sender")
    depth, marks = len(queue), 0
    while queue:
        w, arrival, enq_qdepth = queue.popleft()
        res = switch.run_egress(w, QueueMeta(enq_timestamp=0, enq_qdepth=enq_qdepth,
                                             deq_qdepth=len(queue)))
        for extra in res.work:
            switch.run_egress(extra)
        (frame,) = [f for p, f in res.frames if p == OUT_PORT]
        marked = frame[15] & 3 == CE
        if model is not None:
            want = model.depart(arrival).marked
            if want is not None and want != marked:
                raise BenchCheckError(f"mark of a packet: switch {marked}, model {want}")
        marks += marked
    return paused_at, depth, marks


def bench_thresholds(config: BenchConfig, senders: tuple[int, ...] = (1, 4, 8)) -> dict[str, Figure]:
    """The figures of the module docstring (``config`` is unused: counts, not times)."""
    out: dict[str, Figure] = {}
    for mode, dyn in (("static", None), ("dynamic", DEFAULT_DYNAMIC)):
        for n in senders:
            pause, depth, marks = incast(dyn, n)
            out[f"thresholds.pause_pkts.{mode}.n{n}"] = Figure(float(pause), "packets")
            out[f"thresholds.queue_pkts_at_pause.{mode}.n{n}"] = Figure(float(depth), "packets")
            out[f"thresholds.ecn_marks.{mode}.n{n}"] = Figure(float(marks), "packets")
    return out


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("incast", "thresholds", bench_thresholds),
)

__all__ = ["BENCHMARKS", "bench_thresholds", "incast"]
