"""Data-plane alarms and elephants on a live switch (p4sim or BMv2): the alarm digests
at each level and back, with the marks and packets of the window that decided each; the
heavy hitters of a known traffic mix found exactly; elephants told again when their port
is alarmed.

Marks are made exactly: port 2 marks every ECT packet (``set_ecn_threshold(0)``) and
never a Not-ECT one, so the test chooses which packets count as marks. Packets are sent
one at a time, each after the one before has left port 2, so the egress of packet n has
run before the ingress of packet n+1. A report made by packet n is sent by n's copy
(cloned to the CPU session, recirculated) or by n+1's ingress, whichever comes first:
once, either way, with the same fields. The falling half needs
time windows to end: the test waits for a window's end on its own clock (a wait on the
feature's time base, not a readiness guess) with a margin, and checks that it sent each
window's packets well inside the window.
"""
from __future__ import annotations

import time
from dataclasses import replace

import ptf.testutils as tu
from scapy.layers.inet import UDP

from fabric_base import CPU_PORT, LEAF_ID, FabricTest, host_ip, udp_packet
from p4src.alarmmodel import (ALARM_ACTION, ALARM_DIGEST, ALARM_TABLE, ELEPHANT_ACTION,
                              ELEPHANT_ALARMED, ELEPHANT_CROSSED, ELEPHANT_DIGEST,
                              ELEPHANT_TABLE, AlarmLevels, AlarmReport, ElephantConfig,
                              PortAlarmModel, alarm_report, elephant_report)
from queues import poll_ip

OUT_PORT = 2
LONG_WINDOW_US = 60_000_000
SHORT_WINDOW_US = 2_000_000
MARGIN_S = 0.2


class AlarmTest(FabricTest):
    def setUp(self) -> None:
        FabricTest.setUp(self)
        self.leaf_config()
        self.sw.insert(self.sw.table_entry("FabricEgress.ecn.thresholds",
                                           {"egress_port": OUT_PORT},
                                           "FabricEgress.ecn.set_ecn_threshold",
                                           {"kmin_pkts": 0}))
        for name in (ALARM_DIGEST, ELEPHANT_DIGEST):
            self.sw.enable_digest(name, max_list_size=1)
        self.next_ip_id = 1

    def levels(self, levels: AlarmLevels, modify: bool = False) -> None:
        entry = self.sw.table_entry(ALARM_TABLE, {"egress_port": OUT_PORT}, ALARM_ACTION,
                                    levels.table_params())
        (self.sw.modify if modify else self.sw.insert)(entry)

    def elephants(self, cfg: ElephantConfig) -> None:
        self.sw.insert(self.sw.table_entry(ELEPHANT_TABLE, {"egress_spec": OUT_PORT},
                                           ELEPHANT_ACTION, cfg.table_params()))

    def send(self, marked: bool = False, sport: int = 49152) -> None:
        """One packet from host 1 to host 2, returned once it has left port 2."""
        pkt = udp_packet(host_ip(1), host_ip(2), sport=sport, ecn=2 if marked else 0)
        ip_id = self.next_ip_id
        self.next_ip_id += 1
        pkt["IP"].id = ip_id
        tu.send_packet(self, 1, pkt)
        got = poll_ip(self, OUT_PORT, 5,
                      lambda p: UDP in p and p[UDP].sport == sport and p["IP"].id == ip_id)
        self.assertIsNotNone(got, f"packet {ip_id} (sport {sport}) did not leave port 2")

    def digests(self, want: int, timeout_s: float = 3.0) -> list[tuple[str, dict[str, int]]]:
        """The next ``want`` digests (name, fields), or fewer after ``timeout_s``; then
        anything else that arrives within a short grace, so extra digests are seen."""
        out: list[tuple[str, dict[str, int]]] = []
        deadline = time.monotonic() + timeout_s
        while len(out) < want and time.monotonic() < deadline:
            dl = self.sw.get_digest(max(0.05, deadline - time.monotonic()))
            if dl is not None:
                out.extend((dl.name.split(".")[-1], d) for d in dl.data)
        while (dl := self.sw.get_digest(0.3)) is not None:
            out.extend((dl.name.split(".")[-1], d) for d in dl.data)
        return out

    def alarms(self, want: int) -> list[AlarmReport]:
        """The next alarm digests of port 2 (nothing else may arrive)."""
        out = []
        for name, fields in self.digests(want):
            self.assertEqual(name, ALARM_DIGEST)
            sw, port, rep = alarm_report(fields)
            self.assertEqual((sw, port), (LEAF_ID, OUT_PORT))
            out.append(rep)
        return out


class Lockstep:
    """The switch's port 2 and :class:`PortAlarmModel` fed the same packets. The model runs
    on a logical clock: 1 µs per packet inside a window, a whole window between the
    windows the test separates in real time (it checks that its real timing agrees)."""

    def __init__(self, test: AlarmTest, levels: AlarmLevels) -> None:
        self.test, self.model = test, PortAlarmModel(levels)
        self.now_us = 1
        self.want: list[AlarmReport] = []

    def send(self, pattern: list[bool], new_window_us: int = 0) -> None:
        self.now_us += new_window_us
        for marked in pattern:
            self.now_us += 1
            self.test.send(marked)
            report = self.model.packet(self.now_us, marked)
            if report is not None:                # its copy sends it, or the next packet
                self.want.append(report)

    def check(self) -> list[AlarmReport]:
        """The digests since the last check equal the model's, except ``window_us`` (real
        microseconds on the switch, logical ones in the model: it must be positive where
        the model's is); returns them."""
        want, self.want = self.want, []
        got = self.test.alarms(len(want))
        self.test.assertEqual([replace(r, window_us=0) for r in got],
                              [replace(r, window_us=0) for r in want])
        for g, w in zip(got, want):
            self.test.assertEqual(g.window_us > 0, w.window_us > 0, f"window_us of {g}")
        return got


class AlarmLevelsUpAndDown(AlarmTest):
    """NOTICE, WARNING, CRITICAL as the window's mark rate reaches 1 %, 5 %, 20 %; then
    2 s windows of 7 %, 2 % and 0 % marks bring it down one level at a time. Every
    digest (levels, marks and packets of the deciding window, sequence) equals
    p4src.alarmmodel's prediction."""

    def window(self, run: Lockstep, start_s: float, pattern: list[bool]) -> float:
        """Wait until the window that began at ``start_s`` has ended, then send ``pattern``
        (its first packet closes the old window); returns the new window's start."""
        delay = start_s + SHORT_WINDOW_US / 1e6 + MARGIN_S - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        began = time.monotonic()
        run.send(pattern, new_window_us=SHORT_WINDOW_US)
        self.assertLess(time.monotonic() - began, SHORT_WINDOW_US / 1e6 - MARGIN_S,
                        "a window's packets took too long to send for this test's timing")
        return began

    def runTest(self) -> None:
        long = AlarmLevels(window_us=LONG_WINDOW_US, hold_us=0, min_pkts=10)
        self.levels(long)
        run = Lockstep(self, long)
        began = time.monotonic()
        run.send([False] * 98 + [True] * 2 + [False])    # 2/100: NOTICE
        run.send([True] * 6 + [False])                   # 6/105: WARNING
        run.send([True] * 30 + [False])                  # 25/125: CRITICAL
        ups = run.check()
        self.assertLess(time.monotonic() - began, LONG_WINDOW_US / 1e6 / 2)

        # 2 s windows from now on: the first packet closes the long window (still
        # CRITICAL), then each window decides the next level
        short = AlarmLevels(window_us=SHORT_WINDOW_US, hold_us=0, min_pkts=10)
        self.levels(short, modify=True)
        run.model.levels = short
        start = self.window(run, began, [False] * 13 + [True])     # 1/14 = 7 %
        start = self.window(run, start, [False] * 44 + [True])     # closes 7 %: WARNING
        start = self.window(run, start, [False] * 12)              # closes 1/45: NOTICE
        self.window(run, start, [False] * 2)                       # closes 0/12: CLEAR
        downs = run.check()
        self.assertEqual([(r.prev_level, r.level) for r in ups + downs],
                         [(0, 1), (1, 2), (2, 3), (3, 2), (2, 1), (1, 0)])
        self.assertEqual([r.seq for r in ups + downs], [1, 2, 3, 4, 5, 6])


class AlarmReportNeedsNoNextPacket(AlarmTest):
    """The packet that raises the level sends the report through its copy: with no packet
    after it, the digest still arrives, and the copy leaves no trace (no PacketIn, no
    frame on any port, not in the CPU port's transmit counter)."""

    def runTest(self) -> None:
        self.levels(AlarmLevels(window_us=LONG_WINDOW_US, hold_us=0, min_pkts=10))
        tx_cpu = self.read_counter("FabricEgress.telemetry.tx", CPU_PORT)
        for _ in range(9):
            self.send(marked=False)
        self.send(marked=True)                    # 1/10: WARNING, and nothing after it
        got = self.alarms(1)
        self.assertEqual([(r.prev_level, r.level, r.marks, r.pkts, r.seq) for r in got],
                         [(0, 2, 1, 10, 1)])
        self.assertIsNone(self.sw.get_packet_in(0.3))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.read_counter("FabricEgress.telemetry.tx", CPU_PORT), tx_cpu)


class AlarmOnlyWhereConfigured(AlarmTest):
    """Marks on a port without an alarm entry report nothing."""

    def runTest(self) -> None:
        for _ in range(30):
            self.send(marked=True)
        self.assertEqual(self.digests(0, timeout_s=0.5), [])


class ElephantsOfAKnownMix(AlarmTest):
    """Threshold 5 packets: of flows sending 8, 5, 4 and 1 packets, exactly the first two
    are reported, each once, with its 5-tuple."""

    def runTest(self) -> None:
        self.elephants(ElephantConfig(threshold_pkts=5, window_us=LONG_WINDOW_US))
        counts = {50001: 8, 50002: 5, 50003: 4, 50004: 1}
        order = [50001, 50002, 50003, 50001, 50004, 50002, 50003, 50001, 50002, 50003,
                 50001, 50002, 50003, 50001, 50002, 50001, 50001, 50001]
        self.assertEqual(sorted(order), sorted(sp for sp, n in counts.items()
                                               for _ in range(n)))
        for sp in order:
            self.send(sport=sp)
        found = [elephant_report(f) for _, f in self.digests(2)]
        self.assertEqual(sorted(r.src_port for r in found), [50001, 50002])
        for r in found:
            self.assertEqual((r.switch_id, r.port, r.reason, r.level, r.packets),
                             (LEAF_ID, OUT_PORT, ELEPHANT_CROSSED, 0, 5))
            self.assertEqual((r.src_addr, r.dst_addr, r.protocol, r.dst_port),
                             (0x0A000001, 0x0A000002, 17, 4791))


class ElephantsAgainWhenAlarmed(AlarmTest):
    """After WARNING on the port (its report sent by the deciding packet's copy: the test
    waits for it), the next packet of each elephant reports it again (reason 2) with its
    count; once per alarm."""

    def runTest(self) -> None:
        self.levels(AlarmLevels(window_us=LONG_WINDOW_US, hold_us=0, min_pkts=10))
        self.elephants(ElephantConfig(threshold_pkts=3, window_us=LONG_WINDOW_US))
        for i in range(12):
            self.send(sport=50001 + i % 2)
        first = self.digests(2)
        self.assertEqual(sorted((f["src_port"], f["reason"]) for _, f in first),
                         [(50001, ELEPHANT_CROSSED), (50002, ELEPHANT_CROSSED)])
        self.send(marked=True, sport=50001)    # 1/13: WARNING
        alarm = self.alarms(1)
        self.assertEqual([(r.level, r.marks, r.pkts) for r in alarm], [(2, 1, 13)])
        self.send(sport=50002)                 # 50002 again
        self.send(sport=50001)                 # 50001 again
        self.send(sport=50002)                 # nothing more
        self.send(sport=50001)
        got = self.digests(2)
        self.assertEqual([n for n, _ in got], [ELEPHANT_DIGEST, ELEPHANT_DIGEST])
        again = [elephant_report(f) for _, f in got]
        self.assertEqual([(r.src_port, r.reason, r.level, r.packets) for r in again],
                         [(50002, ELEPHANT_ALARMED, 2, 7), (50001, ELEPHANT_ALARMED, 2, 8)])


class ElephantsBeforeTheirThresholdWhenAlarmed(AlarmTest):
    """A collision of new flows: WARNING comes while no flow has reached the threshold
    (50); each flow with ``alarm_min_pkts`` (4) in its window is reported (reason 2) by its
    next packet, one with fewer once it has 4; once per alarm. (The test waits for the
    alarm's digest, which the deciding packet's copy sends, before the next packet.)"""

    def runTest(self) -> None:
        self.levels(AlarmLevels(window_us=LONG_WINDOW_US, hold_us=0, min_pkts=10))
        self.elephants(ElephantConfig(threshold_pkts=50, window_us=LONG_WINDOW_US,
                                      alarm_min_pkts=4))
        for sp in [50001] * 6 + [50002] * 5 + [50003]:
            self.send(sport=sp)
        self.assertEqual(self.digests(0, timeout_s=0.5), [])
        self.send(marked=True, sport=50001)    # 1/13: WARNING
        self.assertEqual([r.level for r in self.alarms(1)], [2])
        self.send(sport=50003)                 # 50003: 2 packets, not reported
        for sp in (50003, 50002, 50001, 50003, 50001, 50002):
            self.send(sport=sp)                # 50003 reaches 4 at its second send here
        got = self.digests(3)
        self.assertEqual([n for n, _ in got], [ELEPHANT_DIGEST] * 3)
        again = [elephant_report(f) for _, f in got]
        self.assertEqual([(r.src_port, r.reason, r.level, r.packets) for r in again],
                         [(50002, ELEPHANT_ALARMED, 2, 6), (50001, ELEPHANT_ALARMED, 2, 8),
                          (50003, ELEPHANT_ALARMED, 2, 4)])
