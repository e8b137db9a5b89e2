"""The frames campaign: random and mutated Ethernet frames (:mod:`fuzz.frame_gen`) into
port 1 of a live ``python -m p4sim switch`` running ``p4src/fabric.p4`` over veth pairs
(:mod:`fuzz.veths`; root), with a valid probe after every batch.

The switch is programmed as a minimal leaf: ``10.0.1.0/24`` → port 1 (host 1),
``10.0.2.0/24`` → port 2 (host 2), each port's MAC, ARP answered for ``10.0.1.254``.

Checked (a :class:`~fuzz.report.Finding` otherwise):

* ``crash`` — the switch process lives after every batch;
* ``probe_lost`` — after every batch a valid RoCEv2 probe ``10.0.1.1 → 10.0.2.1`` sent
  into port 1 comes out of port 2 within :data:`PROBE_TIMEOUT_S` (the ingress is FIFO, so
  the probe also shows the batch was processed);
* ``counters`` — at every checkpoint (each :data:`CHECK_EVERY` batches and at the end,
  once the switch has drained), over the frames since the last one (Δ):
  (1) wire → port: Δ kernel ``rx_packets`` of the switch's veth end = Δ frames the port
  read + Δ frames the kernel dropped for it (``rx_dropped``) + Δ frames the kernel
  counted and then freed before any packet socket saw them, for each port: a frame
  with an 802.1Q/802.1ad EtherType and fewer than 20 bytes (``skb_vlan_untag`` cannot
  pull the tag; measured, :func:`dropped_by_kernel`; BMv2's ports never see them either);
  (2) port → pipeline: Σ Δ frames read = Σ Δ ``FabricIngress.telemetry.rx`` (read over
  P4Runtime) + Δ PFC frames the port MAC consumed: every frame read enters the P4
  ingress exactly once, or is a PFC frame;
  (3) pipeline → wire: Σ Δ ``FabricEgress.telemetry.tx`` (ports 1, 2 and the CPU port)
  = Σ Δ frames the ports sent + Δ transmit errors + Δ PacketIns + Δ frames for a port
  with no interface: every frame egress counted left the switch;
  (4) conservation: Σ Δ rx − Σ Δ ``telemetry.drops`` − Δ frames the P4 parser took as
  PFC (dropped there, not counted as drops; predicted from the frames sent) = Σ Δ tx +
  Δ egress-queue drops: with no multicast, clone or PFC thresholds configured a frame
  is dropped or sent once (an equality when the kernel dropped nothing, ≤ otherwise);
  (5) the switch counted no internal error (``errors``).
* ``traceback`` — no Python traceback on the switch's stderr.

Frames the kernel refuses to send (larger than the veth MTU allows) are counted
(``refused_by_kernel``), not sent.

>>> pfc_in_pipeline(bytes(12) + bytes.fromhex("8808") + bytes(20))
True
"""
from __future__ import annotations

import random
import select
import socket
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from controller.p4rt import SwitchConnection
from fuzz.frame_gen import (GATEWAY_IP, HOST1_IP, HOST1_MAC, HOST2_IP, HOST2_MAC, SWITCH_MAC,
                            fuzz_frame, roce_frame, variants)
from fuzz.report import CampaignResult, Progress
from fuzz.switch import SwitchProcess, compile_fabric, scratch_dir
from fuzz.veths import VethPairs, kernel_counter
from p4sim.control_api import ControlClient
from p4sim.switchd.pfc import parse_pfc

DRAWN_PER_BATCH = 16
VARIANTS = 7
"""Each drawn frame is sent with this many :func:`fuzz.frame_gen.variants`."""
PROBE_TIMEOUT_S = 10.0
DRAIN_TIMEOUT_S = 60.0
CHECK_EVERY = 20
SIZES = {"small": 20_000, "full": 1_000_000}
PORT2_MAC = bytes.fromhex("020000010002")
PFC_HEADER_BYTES = 20
P4_COUNTERS = {"rx": "FabricIngress.telemetry.rx", "drops": "FabricIngress.telemetry.drops",
               "tx": "FabricEgress.telemetry.tx"}
CPU_PORT = 255


class SwitchDied(Exception):
    """The switch process exited during the campaign."""


def dropped_by_kernel(frame: bytes) -> bool:
    """True for a frame the receiving veth counts in ``rx_packets`` but the kernel frees
    before packet sockets see it: a VLAN EtherType (0x8100, 0x88a8) at bytes 12-13 with
    fewer than 6 bytes after the Ethernet header.

    >>> tag = bytes(12) + bytes.fromhex("8100")
    >>> dropped_by_kernel(tag + bytes(5)), dropped_by_kernel(tag + bytes(6))
    (True, False)
    """
    return 14 <= len(frame) < 20 and frame[12:14] in (b"\x81\x00", b"\x88\xa8")


def pfc_in_pipeline(frame: bytes) -> bool:
    """True when the P4 parser extracts a PFC header from ``frame`` (EtherType 0x8808
    with the whole header present) and the port MAC did not consume it first."""
    if len(frame) < 14 + PFC_HEADER_BYTES or frame[12:14] != b"\x88\x08":
        return False
    return parse_pfc(frame) is None


@dataclass(slots=True)
class Reading:
    """Every counter of the accounting at one instant (see the module docstring)."""

    kernel_rx: dict[int, int]
    kernel_freed: int
    ports: dict[int, dict[str, int]]
    stats: dict[str, int]
    p4: dict[str, dict[int, int]]


class FramesRig:
    """Veths, the switch, its P4Runtime connection, its control API and the host
    sockets of one campaign."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.veths = VethPairs(2).create()
        try:
            (self.sw1, self.host1), (self.sw2, self.host2) = self.veths.names
            build = compile_fabric(work)
            self.stderr = work / "switch.stderr"
            self.switch = SwitchProcess(
                ["--no-p4", "-i", f"1@{self.sw1}", "-i", f"2@{self.sw2}", "--device-id", "0",
                 "--control-port", "0", "--log-level", "off", "--",
                 "--cpu-port", str(CPU_PORT), "--grpc-server-addr", "127.0.0.1:0"],
                log_path=self.stderr)
            self.conn = SwitchConnection(self.switch.grpc_addr, device_id=0, election_id=(0, 1),
                                         timeout_s=30)
            self.conn.push_pipeline(str(build.p4info), str(build.config))
            self.ctl = ControlClient(self.switch.control_addr, timeout_s=30)
            self.program()
            self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            self.tx.bind((self.host1, 0))
            self.rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
            self.rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            self.rx.bind((self.host2, 0))
        except BaseException:
            self.close()
            raise
        self.probe_seq = 0
        self.kernel_freed = 0
        """Frames sent into port 1 that :func:`dropped_by_kernel` (cumulative)."""

    def program(self) -> None:
        """The minimal leaf of the module docstring."""
        c = self.conn
        for port, mac, host_mac, prefix in ((1, SWITCH_MAC, HOST1_MAC, "10.0.1.0/24"),
                                            (2, PORT2_MAC, HOST2_MAC, "10.0.2.0/24")):
            c.insert(c.table_entry("FabricEgress.port_macs", {"egress_port": port},
                                   "FabricEgress.set_port_mac", {"mac": mac}),
                     c.table_entry("FabricIngress.forwarding.nexthops", {"meta.nexthop_id": port},
                                   "FabricIngress.forwarding.route_to",
                                   {"port": port, "src_mac": mac, "dst_mac": host_mac}),
                     c.table_entry("FabricIngress.forwarding.routes", {"hdr.ipv4.dst_addr": prefix},
                                   "FabricIngress.forwarding.set_nexthop", {"nexthop_id": port}))
        c.insert(c.table_entry("FabricIngress.arp.arp_proxy",
                               {"hdr.arp.target_proto_addr": GATEWAY_IP},
                               "FabricIngress.arp.arp_reply", {"mac": SWITCH_MAC}))

    # ------------------------------------------------------------ traffic
    def send(self, frames: list[bytes], result: CampaignResult) -> list[bytes]:
        """Send each frame into port 1; the frames the kernel took."""
        sent = []
        for f in frames:
            try:
                self.tx.send(f)
                sent.append(f)
                self.kernel_freed += dropped_by_kernel(f)
            except OSError:
                result.count("refused_by_kernel")
        return sent

    def probe(self) -> bool:
        """Send a valid probe; True when it comes out of port 2 in time."""
        self.probe_seq += 1
        marker = b"FZPROBE" + struct.pack("!Q", self.probe_seq)
        self.tx.send(roce_frame(SWITCH_MAC, HOST1_MAC, HOST1_IP, HOST2_IP, sport=49152,
                                payload=marker))
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([self.rx], [], [], left)[0]:
                break
            while select.select([self.rx], [], [], 0)[0]:
                if self.rx.recv(65536).endswith(marker):
                    return True
        return False

    # ------------------------------------------------------------ accounting
    def reading(self) -> Reading:
        """All counters now (after draining: call :meth:`drained` first)."""
        ports = self.ctl.port_counters()
        p4 = {k: {p: cells[p].packets for p in (1, 2, CPU_PORT)}
              for k, name in P4_COUNTERS.items()
              for cells in [self.conn.read_counter(name)]}
        return Reading({1: kernel_counter(self.sw1, "rx_packets"), 2: kernel_counter(self.sw2, "rx_packets")},
                       self.kernel_freed, {p: ports[p] for p in (1, 2)}, self.ctl.switch_stats(), p4)

    def stable_reading(self, timeout_s: float = DRAIN_TIMEOUT_S) -> Optional[Reading]:
        """A reading equal to the one taken just before it (no frame between the pipeline
        and the wire, or between the port and the pipeline, while the counters are read
        one after the other); None if none within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        last = self.reading()
        while time.monotonic() < deadline:
            now = self.reading()
            if now == last:
                return now
            last = now
        return None

    def drained(self) -> bool:
        """Wait (bounded) until every frame that reached a port was read or dropped and
        the ingress buffer and every egress queue are empty; drops queued PacketIns."""
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while time.monotonic() < deadline:
            while not self.conn.packets.empty():
                self.conn.packets.get_nowait()
            ports, stats, queues = self.ctl.port_counters(), self.ctl.switch_stats(), self.ctl.queue_stats()
            freed = {1: self.kernel_freed, 2: 0}
            if all(kernel_counter(iface, "rx_packets") == ports[p]["rx_frames"] + ports[p].get("rx_dropped", 0)
                   + freed[p] for p, iface in ((1, self.sw1), (2, self.sw2))) and \
                    stats.get("ingress_buffer_depth", 0) == 0 and \
                    all(q.get("depth", 0) == 0 for q in queues.values()):
                return True
            select.select([self.rx], [], [], 0.05)      # bounded wait for the next look
        return False

    def close(self) -> None:
        """Close sockets and connections, stop the switch, delete the veths."""
        for name in ("tx", "rx", "conn", "ctl", "switch"):
            obj = getattr(self, name, None)
            if obj is not None:
                try:
                    obj.close() if name != "switch" else obj.stop()
                except Exception:  # noqa: BLE001 - tearing down: keep going
                    pass
        self.veths.delete()


def check_accounting(before: Reading, after: Reading, pfc_pipeline: int) -> list[str]:
    """The violated equations (1)-(5) of the module docstring, each as a sentence."""
    d = lambda f: f(after) - f(before)  # noqa: E731
    out = []
    for p in (1, 2):
        k, r, dr = d(lambda x: x.kernel_rx[p]), d(lambda x: x.ports[p]["rx_frames"]), \
            d(lambda x: x.ports[p].get("rx_dropped", 0))
        freed = d(lambda x: x.kernel_freed) if p == 1 else 0
        if k != r + dr + freed:
            diff = {key: after.ports[p][key] - before.ports[p].get(key, 0) for key in after.ports[p]
                    if isinstance(after.ports[p][key], int) and not isinstance(after.ports[p][key], bool)}
            out.append(f"(1) port {p}: {k} frames reached it, {r} read + {dr} dropped + {freed} freed "
                       f"by the kernel ({diff})")
    read = sum(d(lambda x, p=p: x.ports[p]["rx_frames"]) for p in (1, 2))
    p4rx = sum(d(lambda x, p=p: x.p4["rx"][p]) for p in (1, 2))
    pfc = d(lambda x: x.stats.get("pfc_frames", 0))
    if read != p4rx + pfc:
        out.append(f"(2) {read} frames read, {p4rx} counted by telemetry.rx + {pfc} PFC frames")
    p4tx = sum(d(lambda x, p=p: x.p4["tx"][p]) for p in (1, 2, CPU_PORT))
    sent = sum(d(lambda x, p=p: x.ports[p]["tx_frames"] + x.ports[p].get("tx_errors", 0)) for p in (1, 2))
    pin, noport = d(lambda x: x.stats.get("packet_in", 0)), d(lambda x: x.stats.get("no_port", 0))
    if p4tx != sent + pin + noport:
        out.append(f"(3) telemetry.tx counted {p4tx}, ports sent {sent} + {pin} PacketIns + "
                   f"{noport} to no port")
    drops = sum(d(lambda x, p=p: x.p4["drops"][p]) for p in (1, 2))
    tm = d(lambda x: x.stats.get("tm_drops", 0))
    kernel_drops = sum(d(lambda x, p=p: x.ports[p].get("rx_dropped", 0)) for p in (1, 2))
    left, right = p4rx - drops - pfc_pipeline, p4tx + tm
    if (left != right) if kernel_drops == 0 else (left < right):
        out.append(f"(4) {p4rx} in - {drops} dropped - {pfc_pipeline} PFC in the parser = {left}, "
                   f"but {p4tx} out + {tm} queue drops = {right}")
    if d(lambda x: x.stats.get("errors", 0)):
        out.append(f"(5) {d(lambda x: x.stats.get('errors', 0))} internal errors")
    return out


def run_frames(seed_value: int, frames: int, *, work_dir: Optional[Path] = None,
               size: str = "custom") -> CampaignResult:
    """At least ``frames`` fuzz frames sent into the switch (whole batches; frames the
    kernel refuses do not count) from ``seed_value``; the result."""
    work = work_dir or scratch_dir("fuzz-frames-")
    result = CampaignResult("frames", seed=seed_value, size=size)
    rig = FramesRig(work)
    state: dict[str, Any] = {"batch": 0, "sent": 0, "pfc": 0, "stderr_seen": 0, "last": []}
    per_batch = DRAWN_PER_BATCH * (1 + VARIANTS)
    batches = max(1, -(-int(frames * 1.2) // per_batch))   # room for frames the kernel refuses
    progress = Progress("frames", frames)

    def check(index: int) -> None:
        if not rig.drained():
            result.add_finding("counters", "the switch did not drain", index=index)
        after = rig.stable_reading()
        if after is None:
            result.add_finding("counters", "the counters did not settle", index=index)
            after = rig.reading()
        for problem in check_accounting(state["reading"], after, state["pfc"]):
            result.add_finding("counters", "the counters do not add up", index=index, message=problem,
                               detail={"last_batch_hex": [f[:256].hex() for f in state["last"]]})
        state["reading"], state["pfc"] = after, 0
        result.count("checkpoints")

    def alive(index: int, drawn: list[bytes]) -> None:
        with open(rig.stderr, "rb") as f:
            f.seek(state["stderr_seen"])
            new = f.read()
        state["stderr_seen"] += len(new)
        if b"Traceback" in new:
            result.add_finding("traceback", "the switch logged a Python traceback", index=index,
                               message=new.decode(errors="replace")[-1500:])
        if not rig.switch.alive():
            result.add_finding("crash", f"the switch exited (status {rig.switch.proc.poll()})",
                               index=index, detail={"drawn_frames_hex": [f[:256].hex() for f in drawn]})
            raise SwitchDied()

    @seed(seed_value)
    @settings(max_examples=batches, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(fuzz_frame(), min_size=DRAWN_PER_BATCH, max_size=DRAWN_PER_BATCH),
           st.randoms(use_true_random=True))
    def drive(drawn: list[bytes], rng: random.Random) -> None:
        if state["sent"] >= frames:
            return
        state["batch"] += 1
        batch = [v for f in drawn for v in (f, *variants(f, rng, VARIANTS))]
        sent = rig.send(batch, result)
        state["last"] = sent
        state["sent"] += len(sent)
        progress.update(state["sent"])
        state["pfc"] += sum(map(pfc_in_pipeline, sent))
        alive(state["batch"], drawn)
        if not rig.probe():
            result.add_finding("probe_lost", "a valid probe did not come out of port 2",
                               index=state["batch"],
                               detail={"drawn_frames_hex": [f[:256].hex() for f in drawn]})
        result.count("probes")
        alive(state["batch"], drawn)
        if state["batch"] % CHECK_EVERY == 0:
            check(state["batch"])

    try:
        rig.drained()
        state["reading"] = rig.stable_reading() or rig.reading()
        t0 = time.monotonic()
        try:
            drive()
        except SwitchDied:
            pass
        elapsed = time.monotonic() - t0
        if rig.switch.alive():
            check(state["batch"])
        result.count("switch_alive_at_end", int(rig.switch.alive()))
        result.count("batches", state["batch"])
    finally:
        rig.close()
    result.notes.append(f"veths {rig.veths.names} (deleted); switch stderr: {rig.stderr}")
    return result.finish(state["sent"], elapsed, "frames")
