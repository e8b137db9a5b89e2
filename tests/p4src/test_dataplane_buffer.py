"""fabric.p4's shared buffer and dynamic thresholds on p4sim, against
:class:`p4src.buffermodel.SharedBufferModel`.

The switch runs in two halves (``run_ingress`` / ``run_egress``) so that the test holds
packets in the egress queues as long as it likes: an arrival is admitted into the
program's counts, a departure takes it out. Every PAUSE, RESUME and CE mark the switch
makes is compared with the model's, event by event:

* a port alone on the switch queues deep before it pauses; four ports in incast pause
  each after far fewer packets (the threshold falls with the free buffer), while the
  static XOFF pauses every port after the same count;
* the same queue is marked more when the rest of the buffer is busy;
* random sequences of arrivals and departures (ports, priorities, lengths, ECT) agree
  exactly, for several alphas and cell sizes.

The PTF test ``tests/ptf/fabric/buffer.py`` checks the arithmetic on a live switch.
"""
from __future__ import annotations

import random
from collections import deque
from pathlib import Path
from typing import Optional

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4sim import engine
from p4sim.stf import parse_stf
from p4sim.v1model.stf_commands import StfTarget
from p4sim.native import compiler_status, make_switch
from p4sim.v1model.switch import EgressWork
from p4src.buffermodel import (BUFFER_ACTION, BUFFER_TABLE, ECN_ALPHA_ACTION, ECN_ALPHA_TABLE,
                               ECN_DYNAMIC_ACTION, ECN_TABLE, PFC_ALPHA_ACTION, PFC_ALPHA_TABLE,
                               PFC_DYNAMIC_ACTION, PFC_TABLE, Arrival, DynamicThresholds,
                               EcnAlpha, PfcAlpha, SharedBuffer, SharedBufferModel)

FABRIC = Path(__file__).resolve().parents[2] / "p4src" / "fabric.p4"
PORTS = (1, 2, 3, 4, 5, 6)
DSCP_PRIO = {26: 3, 48: 6, 0: 0}       # priority 0: the qos table's miss
ECT0, NOT_ECT, CE = 2, 0, 3


def _params(p: dict[str, int]) -> str:
    return ", ".join(f"{k}:{v}" for k, v in p.items())


def setup_entries(cfg: DynamicThresholds, pfc_ports: tuple[int, ...] = PORTS,
                  ecn_ports: tuple[int, ...] = PORTS, static_xoff: Optional[int] = None) -> str:
    """STF commands: host 10.0.0.p behind port p, DSCP 26 -> 3, 48 -> 6, the shared
    buffer, dynamic PFC / ECN on the given ports (static XOFF instead with
    ``static_xoff``), a clone session per port for PAUSE/RESUME."""
    out = ["setdefault FabricIngress.switch_info.config FabricIngress.switch_info.set_switch(switch_id:11, role:0, ecmp_seed:1)"]
    for p in PORTS:
        out.append(f"add FabricIngress.forwarding.routes hdr.ipv4.dst_addr:0x0a0000{p:02x} "
                   f"FabricIngress.forwarding.set_nexthop(nexthop_id:{p})")
        out.append(f"add FabricIngress.forwarding.nexthops meta.nexthop_id:{p} "
                   f"FabricIngress.forwarding.route_to(port:{p}, src_mac:0x020000000b{p:02x}, dst_mac:0x0000000000{p:02x})")
        out.append(f"add FabricEgress.port_macs standard_metadata.egress_port:{p} FabricEgress.set_port_mac(mac:0x020000000b{p:02x})")
        out.append(f"mirroring_add {100 + p} {p}")
    for dscp, prio in DSCP_PRIO.items():
        if dscp:
            out.append(f"add FabricIngress.qos.dscp_to_priority hdr.ipv4.dscp:{dscp} FabricIngress.qos.set_priority(prio:{prio})")
    out.append(f"setdefault {BUFFER_TABLE} {BUFFER_ACTION}({_params(cfg.buffer.table_params())})")
    for p in pfc_ports:
        if static_xoff is not None:
            out.append(f"add {PFC_TABLE} standard_metadata.ingress_port:{p} FabricIngress.pfc.set_thresholds("
                       f"xoff_pkts:{static_xoff}, xon_pkts:{static_xoff // 2}, pause_quanta:{cfg.pause_quanta})")
        else:
            out.append(f"add {PFC_TABLE} standard_metadata.ingress_port:{p} {PFC_DYNAMIC_ACTION}(pause_quanta:{cfg.pause_quanta})")
    for p in ecn_ports:
        out.append(f"add {ECN_TABLE} standard_metadata.egress_port:{p} {ECN_DYNAMIC_ACTION}()")
    for prio, a in cfg.pfc.items():
        out.append(f"add {PFC_ALPHA_TABLE} meta.priority:{prio} {PFC_ALPHA_ACTION}({_params(a.table_params())})")
    for prio, e in cfg.ecn.items():
        out.append(f"add {ECN_ALPHA_TABLE} meta.priority:{prio} {ECN_ALPHA_ACTION}({_params(e.table_params())})")
    return "\n".join(out) + "\n"


class Rig:
    """fabric.p4 on p4sim, eight priority queues, the test as traffic manager; ``engine``
    python or native (the switch process's default path)."""

    def __init__(self, entries: str, engine_name: str = "python") -> None:
        self.program = engine.load_program(str(FABRIC), trace=False)
        self.switch = make_switch(self.program, engine=engine_name, priority_queues=8)
        target = StfTarget(self.program)
        for cmd in parse_stf(entries):
            target.execute(cmd)
        self.queues: dict[tuple[int, int], deque[EgressWork]] = {}
        self.pauses: list[tuple[int, int, int]] = []     # (port, priority, quanta); 0 = RESUME

    def _pfc_frames(self, frames: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        rest = []
        for port, data in frames:
            if data[12:14] == b"\x88\x08":
                cev = int.from_bytes(data[16:18], "big")
                prio = cev.bit_length() - 1
                assert cev == 1 << prio, data.hex()
                quanta = int.from_bytes(data[18 + 2 * prio:20 + 2 * prio], "big")
                self.pauses.append((port, prio, quanta))
            else:
                rest.append((port, data))
        return rest

    def arrive(self, in_port: int, out_port: int, dscp: int = 26, ecn: int = ECT0,
               length: int = 256) -> None:
        """A UDP frame of ``length`` bytes from ``in_port`` to the host behind
        ``out_port``; it waits in its queue until :meth:`depart`."""
        frame = bytes(Ether(dst="02:00:00:00:0b:01", src="00:00:00:00:00:01")
                      / IP(src=f"10.0.0.{in_port}", dst=f"10.0.0.{out_port}", tos=dscp << 2 | ecn)
                      / UDP(sport=49152, dport=4791))
        frame += bytes(length - len(frame))
        work = self.switch.run_ingress(in_port, frame)
        normal = [w for w in work if w.port == out_port]
        clones = [w for w in work if w.port != out_port]
        assert len(normal) == 1, work
        for w in clones:                       # a PAUSE leaves at once (its own queue)
            assert self._pfc_frames(self.switch.run_egress(w).frames) == []
        self.queues.setdefault((out_port, normal[0].priority), deque()).append(normal[0])

    def depart(self, out_port: int, prio: int) -> int:
        """The head of queue (out_port, prio) leaves; returns its ECN field."""
        res = self.switch.run_egress(self.queues[(out_port, prio)].popleft())
        frames = self._pfc_frames(res.frames)
        for w in res.work:                     # a RESUME (E2E clone)
            assert self._pfc_frames(self.switch.run_egress(w).frames) == []
        assert [p for p, _ in frames] == [out_port], frames
        return frames[0][1][15] & 3


class Pair:
    """The rig and the model side by side; every event is compared."""

    def __init__(self, cfg: DynamicThresholds, pfc_ports: tuple[int, ...] = PORTS,
                 ecn_ports: tuple[int, ...] = PORTS, engine_name: str = "python") -> None:
        self.cfg = cfg
        self.rig = Rig(setup_entries(cfg, pfc_ports, ecn_ports), engine_name)
        self.model = SharedBufferModel(cfg, set(pfc_ports), set(ecn_ports))
        self.held: dict[tuple[int, int], deque[tuple[Arrival, int]]] = {}
        self.marks = 0
        self.events = 0

    def arrive(self, in_port: int, out_port: int, dscp: int = 26, ecn: int = ECT0,
               length: int = 256) -> Arrival:
        prio = DSCP_PRIO[dscp]
        before = len(self.rig.pauses)
        self.rig.arrive(in_port, out_port, dscp, ecn, length)
        a = self.model.arrive(in_port, out_port, prio, length)
        want = [(in_port, prio, self.cfg.pause_quanta)] if a.pause else []
        assert self.rig.pauses[before:] == want, f"event {self.events}: arrival {a}"
        self.held.setdefault((out_port, prio), deque()).append((a, ecn))
        self.events += 1
        return a

    def depart(self, out_port: int, prio: int) -> bool:
        before = len(self.rig.pauses)
        a, ecn = self.held[(out_port, prio)].popleft()
        got_ecn = self.rig.depart(out_port, prio)
        d = self.model.depart(a, ect=ecn in (1, 2))
        assert d.marked is not None, "tests use deterministic marking (pmax 0 or kmin == kmax)"
        want_ecn = CE if d.marked else ecn
        assert got_ecn == want_ecn, f"event {self.events}: departure {d}"
        want = [(a.ingress_port, prio, 0)] if d.resume else []
        assert self.rig.pauses[before:] == want, f"event {self.events}: departure {d}"
        self.marks += bool(d.marked)
        self.events += 1
        return bool(d.marked)

    def queued(self) -> list[tuple[int, int]]:
        return [k for k, q in self.held.items() if q]


def first_pause(pair: Pair, senders: tuple[int, ...], out_port: int, limit: int = 400) -> int:
    """Round-robin arrivals from ``senders`` to ``out_port`` (nothing leaves) until the
    first PAUSE; the packets each sender had sent by then."""
    for n in range(1, limit + 1):
        for s in senders:
            if pair.arrive(s, out_port).pause:
                return n
    raise AssertionError("no PAUSE")


def test_a_lone_port_queues_deep_and_incast_pauses_early() -> None:
    """B = 1000 cells of 64 bytes, 256-byte frames (4 cells), PFC alpha 1: alone, a
    priority group pauses at 4g >= 1000 - 4g, 125 packets; four in incast at
    4g >= 1000 - 16g, 50 packets each. With the static XOFF of 32 packets both pause at
    32: a static threshold cannot tell the two apart."""
    cfg = DynamicThresholds(SharedBuffer(1000, 6), {3: PfcAlpha(1)}, {})
    assert first_pause(Pair(cfg), (1,), 6) == 125
    assert first_pause(Pair(cfg), (1, 2, 3, 4), 6) == 50
    for senders in ((1,), (1, 2, 3, 4)):
        rig = Rig(setup_entries(cfg, static_xoff=32))
        n = 0
        while not rig.pauses:
            n += 1
            for s in senders:
                rig.arrive(s, 6)
        assert n == 32


def test_resume_follows_the_free_buffer() -> None:
    """After the incast pause, the groups drain; each RESUME comes when its group is at
    most max(xon, XOFF - offset) with XOFF computed from the buffer then free."""
    cfg = DynamicThresholds(SharedBuffer(1000, 6), {3: PfcAlpha(1, xon_offset_cells=40)}, {})
    pair = Pair(cfg)
    first_pause(pair, (1, 2, 3, 4), 6)
    for _ in range(60):                  # every sender pauses on its next packets
        for s in (1, 2, 3, 4):
            pair.arrive(s, 6)
    assert {p for p, _, q in pair.rig.pauses if q} == {1, 2, 3, 4}
    while pair.queued():
        pair.depart(6, 3)
    assert sorted(p for p, _, q in pair.rig.pauses if q == 0) == [1, 2, 3, 4]


def test_the_marking_watermark_falls_when_the_buffer_is_busy() -> None:
    """ECN kmin = kmax = free/4 (step marking), 4-cell packets. A 60-packet queue alone
    on the switch (240 cells) is marked while q >= (1000 - q)/4, q >= 200 cells: 11
    packets; with 600 cells held by two other queues (ports 4 and 5), while
    q >= (400 - q)/4, q >= 80: 41 packets."""
    cfg = DynamicThresholds(SharedBuffer(1000, 6), {}, {3: EcnAlpha("1/4", "1/4", 0)})

    def marks(busy: bool) -> int:
        pair = Pair(cfg)
        if busy:
            for _ in range(75):
                pair.arrive(1, 4)
                pair.arrive(2, 5)
        for _ in range(60):
            pair.arrive(3, 6)
        return sum(pair.depart(6, 3) for _ in range(60))

    assert (marks(False), marks(True)) == (11, 41)


@pytest.mark.parametrize("seed,engine_name", [(1, "python"), (2, "python"), (3, "python"),
                                              (1, "native")])
def test_random_sequences_match_the_model(seed: int, engine_name: str) -> None:
    ok, why = compiler_status()
    if engine_name == "native" and not ok:
        pytest.skip(f"native engine unavailable: {why}")
    rng = random.Random(seed)
    cfg = DynamicThresholds(
        SharedBuffer(rng.choice([300, 800, 2000]), rng.choice([0, 6, 7])),
        {3: PfcAlpha(rng.choice(["1/8", "1/2", 1, 2]), xon_cells=rng.choice([0, 8]),
                     xon_offset_cells=rng.choice([0, 16, 64]))},
        {3: EcnAlpha(rng.choice(["1/16", "1/4"]), rng.choice(["1/2", 1]), 0),
         6: EcnAlpha("1/8", "1/8", 0)},
        pause_quanta=rng.choice([0xFFFF, 100]))
    pair = Pair(cfg, pfc_ports=(1, 2, 3, 4), ecn_ports=(5, 6), engine_name=engine_name)
    scale = 1 << cfg.buffer.cell_bytes_log2
    for step in range(320):               # bursts (few departures) and drains, in turn
        queued = pair.queued()
        if queued and rng.random() < (0.15 if step // 80 % 2 == 0 else 0.85):
            pair.depart(*rng.choice(queued))
        else:
            out = rng.choice((4, 5, 6))
            pair.arrive(rng.choice([p for p in (1, 2, 3, 4) if p != out]), out,
                        rng.choice((26, 26, 48, 0)), rng.choice((ECT0, ECT0, NOT_ECT, 1)),
                        rng.randrange(60, 1500 if scale > 1 else 400))
    while pair.queued():
        pair.depart(*rng.choice(pair.queued()))
    assert pair.model.used == 0
    assert any(q for _, _, q in pair.rig.pauses) and pair.marks > 0, \
        "the sequence should pause and mark"
    assert len(pair.rig.pauses) % 2 == 0, "every PAUSE is resumed once the buffer drained"
