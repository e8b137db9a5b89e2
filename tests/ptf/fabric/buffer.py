"""Dynamic (shared-buffer) thresholds on a live switch, p4sim or BMv2, against
:class:`p4src.buffermodel.SharedBufferModel` (p4src/README.md, "Dynamic thresholds").

* Single packets (nothing else queued): the ECN watermark and the PFC XOFF/XON come from
  alpha × free cells: with a small pool a priority whose alpha is 1/8 is marked and
  paused (then resumed) by one packet, one whose alpha is 1/2 or 8 is not.
* A queue that builds (port 2 drained slowly through the target's own runtime, after a
  primer packet has left, as ``queues.py`` does): six packets from one port leave its
  priority group unpaused; the same six per port from two ports at once pause both —
  the threshold fell with the free buffer. Which groups are paused is read from the
  program's registers through the target's runtime (BMv2's P4Runtime reads no register)
  and must be the model's; the RESUMEs follow when the queue drains and the pool is
  empty again.
"""
from __future__ import annotations

import time
from typing import Any

import ptf.testutils as tu
from scapy.layers.inet import IP, UDP

from fabric_base import FabricTest, host_ip, udp_packet
from p4src.buffermodel import (BUFFER_ACTION, BUFFER_TABLE, DynamicThresholds, EcnAlpha,
                               PfcAlpha, SharedBuffer, SharedBufferModel)
from queues import SLOW_RATE_PPS, poll_ip

OUT_PORT = 2
LENGTH = 100                     # udp_packet's default: 2 cells of 64 bytes
DSCP_PRIO = {26: 3, 0: 0}        # DSCP 0 misses the qos table: priority 0


class DynamicBase(FabricTest):
    def configure(self, cfg: DynamicThresholds, ports: tuple[int, ...]) -> None:
        self.leaf_config()
        sw = self.sw
        sw.modify(sw.table_entry(BUFFER_TABLE, None, BUFFER_ACTION, cfg.buffer.table_params(),
                                 is_default=True))
        sw.insert(sw.table_entry("FabricIngress.qos.dscp_to_priority", {"hdr.ipv4.dscp": 26},
                                 "FabricIngress.qos.set_priority", {"prio": 3}))
        for p in ports:
            sw.insert(sw.table_entry("FabricIngress.pfc.thresholds", {"ingress_port": p},
                                     "FabricIngress.pfc.set_dynamic_thresholds",
                                     {"pause_quanta": cfg.pause_quanta}))
        sw.insert(sw.table_entry("FabricEgress.ecn.thresholds", {"egress_port": OUT_PORT},
                                 "FabricEgress.ecn.set_ecn_dynamic", {}))
        for prio, a in cfg.pfc.items():
            sw.insert(sw.table_entry("FabricIngress.pfc.alpha", {"meta.priority": prio},
                                     "FabricIngress.pfc.set_pfc_alpha", a.table_params()))
        for prio, e in cfg.ecn.items():
            sw.insert(sw.table_entry("FabricEgress.ecn.alpha", {"meta.priority": prio},
                                     "FabricEgress.ecn.set_ecn_alpha", e.table_params()))

    def pfc_frames(self, port: int, timeout_s: float) -> list[int]:
        """Pause times of the PFC frames out of ``port`` within ``timeout_s`` (0 = RESUME)."""
        out = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            res = tu.dp_poll(self, device_number=0, port_number=port, timeout=0.2)
            if isinstance(res, self.dataplane.PollSuccess) and res.packet[12:14] == b"\x88\x08":
                cev = int.from_bytes(res.packet[16:18], "big")
                prio = cev.bit_length() - 1
                out.append(int.from_bytes(res.packet[18 + 2 * prio:20 + 2 * prio], "big"))
        return out

    def wait_empty(self, ctl: Any, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while ctl.register_read("FabricIngress.buffer.used", 0) != 0:
            self.assertLess(time.monotonic(), deadline, "the shared buffer did not empty")
            time.sleep(0.1)


class DynamicSinglePackets(DynamicBase):
    def runTest(self) -> None:
        ctl = self.control()
        # 10 cells: a 2-cell packet leaves free = 8; alpha 1/8 -> threshold 1 (marked,
        # paused), alpha 1/2 -> 4 and alpha 8 -> 64 (neither)
        cfg = DynamicThresholds(SharedBuffer(10, 6),
                                {3: PfcAlpha("1/8", xon_cells=2, xon_offset_cells=0),
                                 0: PfcAlpha(8)},
                                {3: EcnAlpha("1/8", "1/8", 0), 0: EcnAlpha("1/2", "1/2", 0)})
        self.configure(cfg, (1,))
        model = SharedBufferModel(cfg, {1}, {OUT_PORT})
        try:
            for i, dscp in enumerate((26, 0, 26)):
                pkt = udp_packet(host_ip(1), host_ip(OUT_PORT), sport=42000 + i, dscp=dscp, ecn=2)
                tu.send_packet(self, 1, pkt)
                got = poll_ip(self, OUT_PORT, 3, lambda p: p[UDP].sport == 42000 + i)
                self.assertIsNotNone(got, f"packet {i} did not leave")
                arrival = model.arrive(1, OUT_PORT, DSCP_PRIO[dscp], len(pkt))
                departure = model.depart(arrival)
                self.assertEqual(got[IP].tos & 3, 3 if departure.marked else 2, f"packet {i} ECN")
                want = ([cfg.pause_quanta] if arrival.pause else []) + ([0] if departure.resume else [])
                self.assertEqual(self.pfc_frames(1, 1.0), want, f"packet {i} PAUSE/RESUME")
                self.wait_empty(ctl)
            self.assertEqual(self.read_counter("FabricEgress.ecn.marks", OUT_PORT)[0], 2)
        finally:
            ctl.close()


class DynamicIncastPausesEarlier(DynamicBase):
    def burst(self, ctl: Any, cfg: DynamicThresholds, senders: tuple[int, ...], per_sender: int,
              base: int) -> dict[int, int]:
        """After a primer has left, ``per_sender`` packets from each sender (interleaved)
        to the slowly drained port 2; the paused register of each sender's group, checked
        against the model; then the queue drains at full rate."""
        model = SharedBufferModel(cfg, set(senders), {OUT_PORT})
        ctl.set_queue_rate(SLOW_RATE_PPS, port=OUT_PORT)
        try:
            primer = udp_packet(host_ip(1), host_ip(OUT_PORT), sport=base, dscp=26)
            tu.send_packet(self, 1, primer)
            self.assertIsNotNone(poll_ip(self, OUT_PORT, 5, lambda p: p[UDP].sport == base),
                                 "the primer did not leave")
            # at once: the next departure is 1 / SLOW_RATE_PPS after the primer's (the
            # primer, 2 cells of a 64-cell pool with alpha 1/4, pauses nothing)
            sport = base + 1
            for _ in range(per_sender):
                for s in senders:
                    pkt = udp_packet(host_ip(s), host_ip(OUT_PORT), sport=sport, dscp=26)
                    tu.send_packet(self, s, pkt)
                    model.arrive(s, OUT_PORT, 3, len(pkt))
                    sport += 1
            deadline = time.monotonic() + 5        # every packet of the burst through ingress
            while ctl.register_read("FabricIngress.buffer.used", 0) != model.used:
                self.assertLess(time.monotonic(), deadline, "the burst was not counted")
                time.sleep(0.05)
            paused = {s: ctl.register_read("FabricIngress.pfc.paused", s * 8 + 3) for s in senders}
            want = {s: int(model.paused.get(s * 8 + 3, False)) for s in senders}
            self.assertEqual(paused, want, f"paused groups, senders {senders}")
            self.assertEqual(ctl.register_read("FabricIngress.buffer.used", 0), model.used)
        finally:
            ctl.set_queue_rate(0, port=OUT_PORT)
        self.wait_empty(ctl)
        for s in senders:
            self.assertEqual(ctl.register_read("FabricIngress.pfc.paused", s * 8 + 3), 0,
                             f"group of port {s} not resumed")
        return paused

    def runTest(self) -> None:
        ctl = self.control()
        # 64 cells of 64 bytes, PFC alpha 1/4: alone a group pauses at 7 packets (14 >=
        # (64 - 14) / 4); two groups in incast at 6 each (12 >= (64 - 24) / 4)
        cfg = DynamicThresholds(SharedBuffer(64, 6), {3: PfcAlpha("1/4", xon_offset_cells=4)}, {})
        self.configure(cfg, (1, 3))
        try:
            self.assertEqual(self.burst(ctl, cfg, (1,), 6, 43000), {1: 0})
            self.assertEqual(self.burst(ctl, cfg, (1, 3), 6, 43100), {1: 1, 3: 1})
        finally:
            ctl.close()
