"""fabric.p4's data-plane alarms and elephants, run by p4sim with a clock the test sets:
every alarm digest equals what :class:`p4src.alarmmodel.PortAlarmModel` predicts for the
same packets (levels up at once, down at window ends with hysteresis and hold, the
report carried by the deciding packet's own copy when the CPU clone session exists, by
the next packet to the port without it), and the heavy hitters of a known
traffic mix are found exactly (reason 1 once per window, reason 2 after the port's alarm
rises); one digest per packet.

The PTF tests (tests/ptf/fabric/alarms.py) check the same on a live switch, p4sim or BMv2.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Optional

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4sim import engine
from p4sim.stf import parse_stf
from p4sim.v1model.stf_commands import StfTarget
from p4sim.v1model.switch import V1ModelSwitch
from p4src.alarmmodel import (ALARM_DIGEST, ELEPHANT_ALARMED, ELEPHANT_CROSSED, ELEPHANT_DIGEST,
                              AlarmLevels, AlarmReport, ElephantConfig, PortAlarmModel,
                              alarm_report, elephant_report)

FABRIC = Path(__file__).resolve().parents[2] / "p4src" / "fabric.p4"
SWITCH_ID = 11
OUT_PORT = 2
CPU_SESSION = 255       # define.p4: the clone session of the CPU port
CPU_PORT = 255
ALARM_FIELDS = ("switch_id", "port", "level", "prev_level", "marks", "pkts", "window_us",
                "max_qdepth", "seq")
ELEPHANT_FIELDS = ("switch_id", "port", "src_addr", "dst_addr", "protocol", "src_port",
                   "dst_port", "reason", "level", "packets", "window_us")

SETUP = f"""
setdefault FabricIngress.switch_info.config FabricIngress.switch_info.set_switch(switch_id:{SWITCH_ID}, role:0, ecmp_seed:1)
add FabricIngress.forwarding.routes hdr.ipv4.dst_addr:0x0a000102 FabricIngress.forwarding.set_nexthop(nexthop_id:2)
add FabricIngress.forwarding.nexthops meta.nexthop_id:2 FabricIngress.forwarding.route_to(port:{OUT_PORT}, src_mac:0x020000000b02, dst_mac:0x000000000002)
add FabricEgress.ecn.thresholds standard_metadata.egress_port:{OUT_PORT} FabricEgress.ecn.set_ecn_threshold(kmin_pkts:0)
"""


class Rig:
    """A fresh fabric switch on p4sim whose clock reads ``self.now_us``; ``copy`` adds the
    CPU clone session, as the controller writes it (an alarm report then rides on its
    own copy)."""

    def __init__(self, entries: str, copy: bool = False) -> None:
        self.program = engine.load_program(str(FABRIC), trace=False)
        self.now_us = 1000
        self.switch = V1ModelSwitch(self.program, clock=lambda: self.now_us)
        target = StfTarget(self.program)
        if copy:
            entries += f"mirroring_add {CPU_SESSION} {CPU_PORT}\n"
        for cmd in parse_stf(SETUP + entries):
            target.execute(cmd)
        for name in (ALARM_DIGEST, ELEPHANT_DIGEST, "flow_sample_t"):
            self.program.state.digests.set_config(name, max_list_size=1)

    def send(self, marked: bool = False, sport: int = 49152, src: str = "10.0.1.1") -> None:
        """One UDP packet from port 1 to port 2 (ECT(0) is marked CE there, Not-ECT never)."""
        frame = (Ether(dst="02:00:00:00:0b:01", src="00:00:00:00:00:01")
                 / IP(src=src, dst="10.0.1.2", tos=2 if marked else 0)
                 / UDP(sport=sport, dport=4791) / bytes(16))
        out = self.switch.process_packet(1, bytes(frame))
        assert [p for p, _ in out] == [OUT_PORT], out

    def digests(self) -> list[tuple[str, dict[str, int]]]:
        """Every digest since the last call, in order, as (name, fields)."""
        out = []
        for dl in self.program.state.digests.drain():
            fields = ALARM_FIELDS if dl.digest_name == ALARM_DIGEST else (
                ELEPHANT_FIELDS if dl.digest_name == ELEPHANT_DIGEST else ())
            for values in dl.values:
                out.append((dl.digest_name, dict(zip(fields, values))))
        return out


def alarm_entry(levels: AlarmLevels) -> str:
    params = ", ".join(f"{k}:{v}" for k, v in levels.table_params().items())
    return (f"add FabricEgress.alarms.config standard_metadata.egress_port:{OUT_PORT} "
            f"FabricEgress.alarms.set_alarm_levels({params})\n")


def elephant_entry(cfg: ElephantConfig) -> str:
    params = ", ".join(f"{k}:{v}" for k, v in cfg.table_params().items())
    return (f"add FabricIngress.elephants.config standard_metadata.egress_spec:{OUT_PORT} "
            f"FabricIngress.elephants.track({params})\n")


def run_alarm_pattern(levels: AlarmLevels, pattern: list[tuple[int, bool]], copy: bool = False
                      ) -> tuple[list[AlarmReport], list[AlarmReport]]:
    """Send (time step, marked) packets; the digests the switch sent and the ones the model
    predicts (a report made by packet n's egress is carried by its copy with ``copy``, by
    packet n+1's ingress without). Each packet's digests are checked as it is sent: a
    report must come with the packet that carries it, not later."""
    rig = Rig(alarm_entry(levels), copy=copy)
    model = PortAlarmModel(levels)
    want: list[AlarmReport] = []
    got: list[AlarmReport] = []
    pending: Optional[AlarmReport] = None
    for n, (step, marked) in enumerate(pattern):
        rig.now_us += step
        if pending is not None:
            want.append(pending)
            pending = None
        rig.send(marked)
        pending = model.packet(rig.now_us, marked) or pending
        if copy and pending is not None:
            want.append(pending)
            pending = None
        for name, fields in rig.digests():
            assert name == ALARM_DIGEST
            sw, port, rep = alarm_report(fields)
            assert (sw, port) == (SWITCH_ID, OUT_PORT)
            got.append(rep)
        assert len(got) == len(want), f"packet {n}: {len(got)} reports sent, {len(want)} due"
    return got, want


@pytest.mark.parametrize("copy", [False, True], ids=["next_packet", "copy"])
def test_levels_up_and_down_through_each_level(copy: bool) -> None:
    levels = AlarmLevels(window_us=10_000, hold_us=0, min_pkts=10)
    pattern: list[tuple[int, bool]] = []
    # window 1: 100 packets, 2 marks at the end -> 2 % >= 1 %: NOTICE; then 6 more marks
    # (8/106 = 7.5 %: WARNING), then 30 more (38/136 = 27.9 %: CRITICAL)
    pattern += [(10, False)] * 98 + [(10, True)] * 2 + [(10, True)] * 6 + [(10, True)] * 30
    # window 2 (opens 10 ms after window 1): 7 % -> below CRITICAL's 10 %: WARNING
    pattern += [(10_000, False)] + [(10, False)] * 92 + [(10, True)] * 7
    # window 3: 2 % -> below WARNING's 2.5 %: NOTICE; window 4: 0 -> CLEAR
    pattern += [(10_000, False)] + [(10, False)] * 97 + [(10, True)] * 2
    pattern += [(10_000, False)] + [(10, False)] * 20
    pattern += [(10_000, False)] * 2
    got, want = run_alarm_pattern(levels, pattern, copy)
    assert got == want
    assert [(r.prev_level, r.level) for r in got] == [(0, 1), (1, 2), (2, 3), (3, 2), (2, 1),
                                                      (1, 0)]
    assert [r.seq for r in got] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("marks,level", [(1, 1), (5, 2), (20, 3), (4, 1), (19, 2)])
def test_raise_thresholds_are_inclusive(marks: int, level: int) -> None:
    """Exactly at a raise threshold (marks * 1000 == pm * pkts) the level is reached."""
    levels = AlarmLevels(window_us=1_000_000, hold_us=0, min_pkts=100)
    pattern = [(10, False)] * (100 - marks) + [(10, True)] * marks + [(10, False)]
    got, want = run_alarm_pattern(levels, pattern)
    assert got == want
    assert [(r.level, r.marks, r.pkts) for r in got] == [(level, marks, 100)]


def test_hold_and_min_pkts() -> None:
    """A level held less than hold_us does not fall; a window with fewer than min_pkts
    packets neither raises nor holds a level."""
    levels = AlarmLevels(window_us=1_000, hold_us=5_000, min_pkts=4)
    pattern = [(10, True)] * 3                  # 3 < min_pkts: nothing
    pattern += [(10, True)]                     # 4/4: CRITICAL
    pattern += [(1_000, False)] * 3             # windows of 1 packet: rate 0, but held < 5 ms
    pattern += [(3_000, False)] * 2             # held 5 ms+: CLEAR
    got, want = run_alarm_pattern(levels, pattern)
    assert got == want
    assert [(r.prev_level, r.level) for r in got] == [(0, 3), (3, 0)]


def test_after_an_idle_window_the_level_falls_and_rises_again() -> None:
    """Traffic stops at CRITICAL; the first packet after a whole idle window closes the old
    window as idle (rate 0): CLEAR, so the next collision is reported from CLEAR up."""
    levels = AlarmLevels(window_us=10_000, hold_us=0, min_pkts=10)
    pattern = [(10, False)] * 10 + [(10, True)] * 5          # 1/11: WARNING; 4/14: CRITICAL
    pattern += [(50_000, False)]                             # idle 50 ms: closes as idle
    pattern += [(10, False)] * 9 + [(10, True)] * 2 + [(10, False)]   # 2/11 in the new window
    got, want = run_alarm_pattern(levels, pattern)
    assert got == want
    assert [(r.prev_level, r.level) for r in got] == [(0, 2), (2, 3), (3, 0), (0, 2)]


@pytest.mark.parametrize("copy", [False, True], ids=["next_packet", "copy"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_traffic_matches_the_model(seed: int, copy: bool) -> None:
    rng = random.Random(seed)
    levels = AlarmLevels(window_us=2_000, hold_us=1_000, min_pkts=5)
    pattern = []
    p_mark = 0.0
    for _ in range(600):
        if rng.random() < 0.02:
            p_mark = rng.choice([0.0, 0.008, 0.03, 0.08, 0.3, 0.9])
        pattern.append((rng.choice([5, 20, 80, 400, 2_500]), rng.random() < p_mark))
    got, want = run_alarm_pattern(levels, pattern, copy)
    assert got == want
    assert len(got) >= 4, "the pattern should move the level several times"


def test_the_copy_carries_the_report_at_once_and_nothing_else_sees_it() -> None:
    """With the CPU clone session, the packet that raises the level sends the report
    through its copy (cloned in egress, recirculated, dropped in ingress): no next packet
    is needed, no frame leaves on the CPU port (``send`` checks the outputs), and the
    copy is in no counter: received, transmitted, dropped."""
    levels = AlarmLevels(window_us=1_000_000, hold_us=0, min_pkts=10)
    rig = Rig(alarm_entry(levels), copy=True)
    for _ in range(9):
        rig.now_us += 10
        rig.send()
    assert rig.digests() == []
    rig.now_us += 10
    rig.send(marked=True)                     # 1/10 marks: WARNING, at once
    got = rig.digests()
    assert [n for n, _ in got] == [ALARM_DIGEST]
    sw, port, rep = alarm_report(got[0][1])
    assert (sw, port, rep.prev_level, rep.level, rep.marks, rep.pkts, rep.seq) == (
        SWITCH_ID, OUT_PORT, 0, 2, 1, 10, 1)
    rig.now_us += 10
    rig.send()                                # sent once: the next packet carries nothing
    assert rig.digests() == []
    counters = rig.program.state.counters
    assert counters["FabricIngress.telemetry.rx"].read(1)[0] == 11
    assert sum(counters["FabricIngress.telemetry.rx"].read(p)[0] for p in range(512)) == 11
    assert counters["FabricEgress.telemetry.tx"].read(OUT_PORT)[0] == 11
    assert counters["FabricEgress.telemetry.tx"].read(CPU_PORT)[0] == 0
    assert sum(counters["FabricIngress.telemetry.drops"].read(p)[0] for p in range(512)) == 0


def test_without_the_clone_session_the_next_packet_carries_the_report() -> None:
    levels = AlarmLevels(window_us=1_000_000, hold_us=0, min_pkts=10)
    rig = Rig(alarm_entry(levels))
    for i in range(10):
        rig.now_us += 10
        rig.send(marked=i == 9)
    assert rig.digests() == []
    rig.now_us += 10
    rig.send()
    assert [n for n, _ in rig.digests()] == [ALARM_DIGEST]


def test_a_port_without_configuration_reports_nothing() -> None:
    rig = Rig("")
    for _ in range(50):
        rig.now_us += 10
        rig.send(marked=True)
    assert rig.digests() == []


def test_elephants_of_a_known_mix_exactly() -> None:
    rig = Rig(elephant_entry(ElephantConfig(threshold_pkts=5, window_us=1_000_000)))
    counts = {50001: 8, 50002: 5, 50003: 4, 50004: 1}
    order = [sp for sp, n in counts.items() for _ in range(n)]
    random.Random(4).shuffle(order)
    for sp in order:
        rig.now_us += 100
        rig.send(sport=sp)
    found = [elephant_report(f) for name, f in rig.digests() if name == ELEPHANT_DIGEST]
    assert sorted(r.src_port for r in found) == [50001, 50002]
    for r in found:
        assert (r.switch_id, r.port, r.reason, r.level, r.packets) == (
            SWITCH_ID, OUT_PORT, ELEPHANT_CROSSED, 0, 5)
        assert (r.src_addr, r.dst_addr, r.protocol, r.dst_port) == (0x0A000101, 0x0A000102,
                                                                    17, 4791)
        assert 0 < r.window_us < 1_000_000


def test_window_ends_and_the_flow_is_counted_again() -> None:
    rig = Rig(elephant_entry(ElephantConfig(threshold_pkts=3, window_us=10_000)))
    for _ in range(5):
        rig.now_us += 1_000
        rig.send(sport=50001)
    rig.now_us += 10_000                     # the window (opened 5 ms ago... 15 ms) ends
    for _ in range(3):
        rig.now_us += 1_000
        rig.send(sport=50001)
    found = [elephant_report(f) for _, f in rig.digests()]
    assert [(r.reason, r.packets, r.window_us) for r in found] == [
        (ELEPHANT_CROSSED, 3, 2_000), (ELEPHANT_CROSSED, 3, 2_000)]


def test_elephants_reported_again_when_their_port_is_alarmed() -> None:
    levels = AlarmLevels(window_us=1_000_000, hold_us=0, min_pkts=10)
    rig = Rig(alarm_entry(levels) + elephant_entry(ElephantConfig(3, 1_000_000)))
    for i in range(12):                       # two elephants, unmarked: reason 1 each
        rig.now_us += 100
        rig.send(sport=50001 + i % 2)
    first = rig.digests()
    assert sorted((f["src_port"], f["reason"]) for _, f in first) == [
        (50001, ELEPHANT_CROSSED), (50002, ELEPHANT_CROSSED)]
    rig.now_us += 100
    rig.send(marked=True, sport=50001)        # 1/13 marks: WARNING, reported by the next packet
    rig.now_us += 100
    rig.send(sport=50002)                     # carries the alarm: no elephant digest
    rig.now_us += 100
    rig.send(sport=50002)                     # reports 50002 again (reason 2)
    rig.now_us += 100
    rig.send(sport=50001)                     # and 50001
    rig.now_us += 100
    rig.send(sport=50001)                     # once per alarm: nothing more
    got = rig.digests()
    assert [n for n, _ in got] == [ALARM_DIGEST, ELEPHANT_DIGEST, ELEPHANT_DIGEST]
    assert (got[0][1]["level"], got[0][1]["marks"], got[0][1]["pkts"]) == (2, 1, 13)
    again = [elephant_report(f) for _, f in got[1:]]
    assert [(r.src_port, r.reason, r.level, r.packets) for r in again] == [
        (50002, ELEPHANT_ALARMED, 2, 8), (50001, ELEPHANT_ALARMED, 2, 8)]


def test_with_the_copy_the_next_packet_of_each_elephant_reports_it_again() -> None:
    """The copy carries the alarm, so no packet gives way to it: the very next packet of
    each elephant of the alarmed port reports it (reason 2)."""
    levels = AlarmLevels(window_us=1_000_000, hold_us=0, min_pkts=10)
    rig = Rig(alarm_entry(levels) + elephant_entry(ElephantConfig(3, 1_000_000)), copy=True)
    for i in range(12):
        rig.now_us += 100
        rig.send(sport=50001 + i % 2)
    assert len(rig.digests()) == 2            # reason 1, each
    rig.now_us += 100
    rig.send(marked=True, sport=50001)        # 1/13 marks: WARNING, sent by the copy
    assert [n for n, _ in rig.digests()] == [ALARM_DIGEST]
    for sp in (50002, 50001, 50002):
        rig.now_us += 100
        rig.send(sport=sp)
    again = [elephant_report(f) for _, f in rig.digests()]
    assert [(r.src_port, r.reason, r.level, r.packets) for r in again] == [
        (50002, ELEPHANT_ALARMED, 2, 7), (50001, ELEPHANT_ALARMED, 2, 8)]


def test_an_alarm_before_the_threshold_reports_the_flows_with_alarm_min_pkts() -> None:
    """A collision of new flows: the port's alarm rises while no flow has reached
    ``threshold_pkts``; every flow with ``alarm_min_pkts`` in its window is reported with
    its next packet (once), a flow with fewer when it gets there, none as an elephant."""
    levels = AlarmLevels(window_us=1_000_000, hold_us=0, min_pkts=10)
    rig = Rig(alarm_entry(levels) + elephant_entry(ElephantConfig(50, 1_000_000, alarm_min_pkts=4)))
    for sp, n in ((50001, 6), (50002, 5), (50003, 1)):     # 12 packets, none at 50
        for _ in range(n):
            rig.now_us += 100
            rig.send(sport=sp)
    assert rig.digests() == []
    rig.now_us += 100
    rig.send(marked=True, sport=50001)        # 1/13 marks: WARNING
    rig.now_us += 100
    rig.send(sport=50003)                     # carries the alarm report (50003: 2 packets)
    for sp in (50003, 50002, 50001, 50003, 50001, 50002):
        rig.now_us += 100
        rig.send(sport=sp)                    # 50003 reaches 4 at its second send here
    got = rig.digests()
    assert [n for n, _ in got] == [ALARM_DIGEST] + [ELEPHANT_DIGEST] * 3
    assert (got[0][1]["level"], got[0][1]["marks"], got[0][1]["pkts"]) == (2, 1, 13)
    again = [elephant_report(f) for _, f in got[1:]]
    assert [(r.src_port, r.reason, r.level, r.packets) for r in again] == [
        (50002, ELEPHANT_ALARMED, 2, 6), (50001, ELEPHANT_ALARMED, 2, 8),
        (50003, ELEPHANT_ALARMED, 2, 4)]
    assert all(r.window_us > 0 and r.rate_pps > 0 for r in again)


def test_one_digest_per_packet_the_sample_gives_way() -> None:
    rig = Rig(elephant_entry(ElephantConfig(2, 1_000_000)) +
              f"add FabricIngress.sampling.config standard_metadata.egress_spec:{OUT_PORT} "
              "FabricIngress.sampling.sample(one_in_n:1)\n")
    for _ in range(3):
        rig.now_us += 100
        rig.send(sport=50001)
    names = [n for n, _ in rig.digests()]
    assert names == ["flow_sample_t", ELEPHANT_DIGEST, "flow_sample_t"]
