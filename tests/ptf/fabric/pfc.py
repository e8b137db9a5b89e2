"""PFC modelled in P4, on p4sim and BMv2: a PAUSE (exact 802.1Qbb frame) out of the
ingress port when its (port, priority) occupancy reaches XOFF, the RESUME (time 0) when it
falls to XON; received PFC frames counted per (port, priority) and never forwarded.

Generation needs a queue that builds: the test drains port 2 slowly through the target's
own runtime (p4sim's control API, BMv2's Thrift ``set_queue_rate``), and reads the
occupancy and paused registers through the same runtime (``register_read``: BMv2's
P4Runtime has no register reads). Reception works on both; on p4sim the harness starts
the switch with ``--pfc-passthrough`` so that PFC frames reach the P4 parser as they do
on BMv2 (p4sim's MAC consumes them otherwise).
"""
from __future__ import annotations

import struct
import time
from typing import Optional

import ptf.testutils as tu

from fabric_base import FabricTest, host_ip, port_mac, udp_packet
from queues import SLOW_RATE_PPS

PFC_DST = bytes.fromhex("0180c2000001")
XOFF, XON, QUANTA = 4, 2, 0x1234
DSCP, PRIO = 26, 3
BURST = 8


def pfc_frame(src_mac: str, prio_times: dict[int, int]) -> bytes:
    """A 60-byte 802.1Qbb PAUSE: class-enable bits and pause times per priority."""
    cev = sum(1 << p for p in prio_times)
    times = [prio_times.get(p, 0) for p in range(8)]
    body = PFC_DST + bytes.fromhex(src_mac.replace(":", "")) + struct.pack(
        "!HHH8H", 0x8808, 0x0101, cev, *times)
    return body + bytes(60 - len(body))


class PfcPauseAndResume(FabricTest):
    def next_pfc(self, port: int, timeout_s: float) -> Optional[bytes]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            res = tu.dp_poll(self, device_number=0, port_number=port, timeout=0.5)
            if isinstance(res, self.dataplane.PollSuccess) and res.packet[12:14] == b"\x88\x08":
                return bytes(res.packet)
        return None

    def runTest(self) -> None:
        ctl = self.control()
        self.leaf_config()
        self.sw.insert(
            self.sw.table_entry("FabricIngress.qos.dscp_to_priority", {"hdr.ipv4.dscp": DSCP},
                                "FabricIngress.qos.set_priority", {"prio": PRIO}),
            self.sw.table_entry("FabricIngress.pfc.thresholds", {"ingress_port": 1},
                                "FabricIngress.pfc.set_thresholds",
                                {"xoff_pkts": XOFF, "xon_pkts": XON, "pause_quanta": QUANTA}))
        cell = 8 + PRIO                          # (ingress port 1, priority PRIO)
        # Port 2 drains BURST packets at SLOW_RATE_PPS: the occupancy of (1, PRIO) builds
        # past XOFF at once and falls to XON a few departures later.
        ctl.set_queue_rate(SLOW_RATE_PPS, port=2)
        try:
            for i in range(BURST):
                tu.send_packet(self, 1, udp_packet(host_ip(1), host_ip(2), sport=41000 + i,
                                                   dscp=DSCP))
            mac1 = port_mac(self.switch_id, 1)
            pause = self.next_pfc(1, 3)
            self.assertEqual(pause, pfc_frame(mac1, {PRIO: QUANTA}), "PAUSE frame")
            self.assertEqual(ctl.register_read("FabricIngress.pfc.paused", cell), 1)
            resume = self.next_pfc(1, 5 + BURST / SLOW_RATE_PPS)
            self.assertEqual(resume, pfc_frame(mac1, {PRIO: 0}), "RESUME frame")
            self.assertIsNone(self.next_pfc(1, 0.5), "more than one PAUSE/RESUME")
            self.assertEqual(self.read_counter("FabricEgress.telemetry.pfc_tx", 1)[0], 2)
            deadline = time.monotonic() + 5 + BURST / SLOW_RATE_PPS
            while ctl.register_read("FabricIngress.pfc.occupancy", cell) != 0:
                self.assertLess(time.monotonic(), deadline, "the occupancy did not fall to 0")
                time.sleep(0.1)
            self.assertEqual(ctl.register_read("FabricIngress.pfc.paused", cell), 0)
        finally:
            ctl.set_queue_rate(0, port=2)
            ctl.close()


class PfcReceivedCountedNotForwarded(FabricTest):
    def runTest(self) -> None:
        self.leaf_config()
        frame = pfc_frame("02:00:00:aa:00:03", {3: 1, 5: 1})
        tu.send_packet(self, 3, frame)
        tu.send_packet(self, 3, frame)
        tu.verify_no_other_packets(self)
        for prio, want in ((3, 2), (5, 2), (4, 0)):
            got = self.wait_counter("FabricIngress.pfc.rx_frames", 3 * 8 + prio, want)[0]
            self.assertEqual(got, want, f"rx_frames[3*8+{prio}]")
