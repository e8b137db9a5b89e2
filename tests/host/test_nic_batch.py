"""The NIC emulator's batches (issue 32) against its per-frame path: same frames, same order,
nothing lost, same counters.

* ``SenderQP.poll_batch(now, n)`` against ``poll(now)`` called until None, on twin QPs fed
  the same ACKs, NAKs, CNPs, PAUSEs and clock (rate-limited, windowed, with retry
  timeouts, a source port change): the frames and every counter equal at every step.
* ``NicPort`` with ``batch_io`` (``recvmmsg``/``sendmmsg``, ``poll_batch``) against
  ``batch_io=False``: sender and receiver over a lossy, ECN-marking in-process cable on
  the same fake clock, stepped every 5 ms (several frames per QP per step): the same
  wire, frame for frame, and the same reports.
* ``MmsgSender``/``MmsgReceiver``: many batches through a socket pair keep the order and
  lose nothing; a full receive queue refuses frames, each counted once.
* ``PacketSocket.recv_many`` on a veth pair (root): every frame in order, our own
  transmissions (``PACKET_OUTGOING``) left out as ``recv`` does.
"""
from __future__ import annotations

import os
import socket
from typing import Optional

import pytest

from host.nic.dcqcn import DcqcnParams
from host.nic.frames import ECN_CE, OP_RC_ACK, FlowSpec, FrameTemplate, parse_roce, set_ce
from host.nic.io import DatagramIO, NicPort, PacketSocket
from host.nic.mmsg import BATCH, MmsgReceiver, MmsgSender
from host.nic.native import native_status
from host.nic.pfc import PfcState, build_pause
from host.nic.qp import Receiver, SenderQP
from host.nic.rc import RcParams

from nic_twins import FLOW, give_events, reply, scripted_events
from veths import veth_pairs



def _qp(pfc: PfcState, window: Optional[int] = 24) -> SenderQP:
    qp = SenderQP(FLOW, message_bytes=4096, mtu=1024, messages=150,
                  dcqcn=DcqcnParams.scaled(2000.0),
                  rc=RcParams(retry_timeout_s=0.05, window_pkts=window))
    qp.pfc = pfc
    return qp




@pytest.mark.parametrize("window", [None, 24])
def test_poll_batch_gives_the_frames_and_counters_of_polling_one_by_one(window: Optional[int]) -> None:
    pfc_a, pfc_b = PfcState(1e8), PfcState(1e8)
    one, many = _qp(pfc_a, window), _qp(pfc_b, window)
    batches = 0
    for step in range(400):
        now = step * 0.004                          # 4 ms: ~8 frames due per step
        # the same events to both: an ACK now and then, a NAK, CNPs, a PAUSE, a port change
        give_events(scripted_events(step, one), ((one, pfc_a), (many, pfc_b)), now)
        singles = []
        while len(singles) < 16:
            frame = one.poll(now)
            if frame is None:
                break
            singles.append(frame)
        batch = many.poll_batch(now, 16)
        batches += len(batch) > 1
        assert batch == singles, f"step {step}"
        assert many.report(now) == one.report(now), f"step {step}"
        assert (many.next_at, many.rc.deadline_s, many.rp.rate_pps) == \
            (one.next_at, one.rc.deadline_s, one.rp.rate_pps)
    assert batches > 30                  # batches of several frames were compared
    assert one.counters.timeouts and one.counters.naks_received and one.counters.cnps_received
    assert one.counters.pause_blocked_s > 0


class Cable:
    """Sender port ⇄ cable ⇄ receiver port on a fake clock; the cable drops every 9th data
    frame and marks every 5th with CE (CNPs, DCQCN cuts), and records the wire."""

    def __init__(self, batch_io: bool, native: bool = False, deliver: bool = True) -> None:
        a_nic, self.a_sw = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        b_nic, self.b_sw = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        for s in (a_nic, b_nic, self.a_sw, self.b_sw):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            s.setblocking(False)
        self.delivered: list[tuple[int, int]] = []
        self.rx = Receiver(on_deliver=(lambda info: self.delivered.append((info.dqpn, info.psn))) if deliver else None)
        self.tx_port = NicPort(DatagramIO(a_nic), line_rate_bps=1e8, batch_io=batch_io, native=native)
        for i in range(3):
            flow = FlowSpec(FLOW.src_mac, FLOW.dst_mac, FLOW.src_ip, FLOW.dst_ip, 49152 + i, 7 + i)
            self.tx_port.add_sender(SenderQP(flow, message_bytes=4096, mtu=1024, messages=40,
                                             dcqcn=DcqcnParams.scaled(1500.0),
                                             rc=RcParams(retry_timeout_s=0.2)))
        self.rx_port = NicPort(DatagramIO(b_nic), line_rate_bps=1e8, receiver=self.rx,
                               batch_io=batch_io, native=native)
        self.wire: list[tuple[str, bytes]] = []
        self.data_seen = 0
        self.sent_per_step: list[int] = []

    def _relay(self, src: socket.socket, dst: socket.socket, kind: str) -> None:
        while True:
            try:
                frame = src.recv(65535)
            except BlockingIOError:
                return
            self.wire.append((kind, frame))
            if kind == "data":
                self.data_seen += 1
                if self.data_seen % 9 == 0:
                    continue
                if self.data_seen % 5 == 0:
                    frame = set_ce(frame)
            dst.send(frame)

    def run(self, steps: int, dt: float) -> None:
        for i in range(steps):
            t = i * dt
            if i == 100:          # a PAUSE from the switch: the senders hold priority 3
                self.a_sw.send(build_pause("02:00:00:00:09:09", {3: 3000}))
            self.sent_per_step.append(self.tx_port.step(t))
            self._relay(self.a_sw, self.b_sw, "data")
            self.rx_port.step(t)
            self._relay(self.b_sw, self.a_sw, "reply")


def test_batched_port_puts_the_same_wire_and_counters_as_the_per_frame_port() -> None:
    runs = {}
    for batch_io in (False, True):
        cable = Cable(batch_io)
        cable.run(steps=700, dt=0.005)
        runs[batch_io] = cable
    per_frame, batched = runs[False], runs[True]
    assert batched.wire == per_frame.wire                  # frame for frame, in order
    assert batched.delivered == per_frame.delivered
    assert batched.tx_port.report(3.5) == per_frame.tx_port.report(3.5)
    assert batched.rx_port.report(3.5) == per_frame.rx_port.report(3.5)
    # the run did what it claims: losses repaired, CNPs, a pause, every message delivered
    flows = {f["qpn"]: f for f in batched.rx.report()}
    assert all(f["naks_sent"] > 0 and f["cnps_sent"] > 0 for f in flows.values())
    assert batched.tx_port.rx_pfc == 1
    assert all(qp.done and not qp.errored for qp in batched.tx_port.senders)
    for qpn in (7, 8, 9):
        psns = [psn for q, psn in batched.delivered if q == qpn]
        assert psns == list(range(160)), f"qp {qpn}: every PSN once, in order"
    # the batches really were batches: several data frames per sender step
    busy = [n for n in batched.sent_per_step if n]
    assert sum(busy) / len(busy) > 2 and max(busy) >= 9


@pytest.mark.skipif(not native_status()[0], reason="no native hot loop (no gcc)")
def test_native_port_puts_the_same_wire_and_counters_as_the_python_port() -> None:
    """The native hot loop (host.nic.native) against the Python batches: the same cable,
    clock, losses, CE marks and PAUSE; the wire byte for byte and every counter."""
    runs = {}
    for native in (False, True):
        cable = Cable(True, native=native)
        assert cable.tx_port.native == native and cable.rx_port.native == native
        cable.run(steps=700, dt=0.005)
        runs[native] = cable
    python, native_ = runs[False], runs[True]
    assert native_.rx_port.rx_native_accepted == 0          # an on_deliver: every frame to Python
    assert len(native_.wire) == len(python.wire)
    for i, (a, b) in enumerate(zip(native_.wire, python.wire)):
        assert a == b, f"wire frame {i}"
    assert native_.delivered == python.delivered
    assert native_.tx_port.report(3.5) == python.tx_port.report(3.5)
    assert native_.rx_port.report(3.5) == python.rx_port.report(3.5)
    flows = {f["qpn"]: f for f in native_.rx.report()}
    assert all(f["naks_sent"] > 0 and f["cnps_sent"] > 0 for f in flows.values())
    assert native_.tx_port.rx_pfc == 1
    assert all(qp.done and not qp.errored for qp in native_.tx_port.senders)


@pytest.mark.skipif(not native_status()[0], reason="no native hot loop (no gcc)")
def test_native_receive_accepts_in_c_and_keeps_the_python_wire_and_counters() -> None:
    """No ``on_deliver``: the native receiver accepts in-order data frames in C
    (nicc_rx_fast), CE-marked ones too (their CNPs decided in C by the notification
    point's rule, sent at the frame's place), and leaves the rest (gaps, duplicates, new
    flows) to Python; a batch accepted whole has its CNPs and coalesced ACKs made in C too
    (nicc_rx_replies). The wire and every counter are the Python port's."""
    runs = {}
    for native in (False, True):
        cable = Cable(True, native=native, deliver=False)
        cable.run(steps=700, dt=0.005)
        runs[native] = cable
    python, native_ = runs[False], runs[True]
    assert native_.rx_port.rx_native_accepted > 200 and native_.rx_port.rx_native_ce > 20
    assert native_.rx_port.rx_batches_in_c > 100 and native_.rx_port.tx_replies_in_c > 60
    assert native_.wire == python.wire
    assert native_.tx_port.report(3.5) == python.tx_port.report(3.5)
    assert native_.rx_port.report(3.5) == python.rx_port.report(3.5)
    flows = native_.rx.report()
    assert all(f["naks_sent"] > 0 and f["cnps_sent"] > 0 and f["messages_received"] == 40 for f in flows)


def test_mmsg_keeps_the_order_and_loses_nothing_across_batches() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    for s in (a, b):
        s.setblocking(False)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    tx, rx = MmsgSender(a), MmsgReceiver(b)
    got: list[bytes] = []
    total = 0
    for round_ in range(12):
        frames = [f"{total + i:06d}".encode() * (1 + i % 50) for i in range(3 * BATCH // 2 + round_)]
        total += len(frames)
        assert tx.send(frames) == 0
        while True:
            batch = rx.recv(BATCH)
            if not batch:
                break
            got.extend(f for f, _kind in batch)
    assert len(got) == total
    assert [int(f[:6]) for f in got] == list(range(total))


def test_a_full_queue_refuses_each_frame_once_as_send_would() -> None:
    results = []
    for batched in (False, True):
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        io = DatagramIO(a)
        frames = [i.to_bytes(4, "big") for i in range(2000)]
        if batched:
            refused = io.send_many(frames)
        else:
            refused = sum(1 for f in frames if not io.send(f))
        b.setblocking(False)
        queued = []
        while True:
            try:
                queued.append(int.from_bytes(b.recv(16), "big"))
            except BlockingIOError:
                break
        assert refused > 0 and refused + len(queued) == 2000
        assert queued == sorted(queued)
        assert io.tx_dropped == refused
        results.append((refused, len(queued)))
        a.close()
        b.close()
    assert results[0] == results[1]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a veth pair, AF_PACKET)")
def test_packet_socket_recv_many_reads_every_frame_in_order_and_leaves_out_our_own() -> None:
    with veth_pairs(f"nb{os.getpid() % 100000}", 1) as [(a, b)]:
        sender, beside, receiver = PacketSocket(a), PacketSocket(a), PacketSocket(b)
        head = bytes.fromhex("020000000b02020000000b01") + b"\x88\xb5"
        frames = [(head + i.to_bytes(4, "big")).ljust(60, b"\x00") for i in range(300)]
        assert sender.send_many(frames) == 0
        got: list[bytes] = []
        for _ in range(1000):
            got.extend(f for f in receiver.recv_many(BATCH) if f[12:14] == b"\x88\xb5")
            if len(got) >= len(frames):
                break
        assert got == frames
        assert [f for f in beside.recv_many(BATCH) if f[12:14] == b"\x88\xb5"] == []
        for s in (sender, beside, receiver):
            s.close()


def test_ce_marked_frames_are_what_the_cable_marks() -> None:
    """The cable's CE marking is seen by the receiver (guards the test above)."""
    frame = FrameTemplate.data(FLOW, 7, 64).frame(0)
    info = parse_roce(set_ce(frame))
    assert info is not None and info.ecn == ECN_CE and info.opcode != OP_RC_ACK
