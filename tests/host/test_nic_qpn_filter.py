"""A sender-only NIC port's kernel filter (``host.nic.io.qpn_filter``, issue 32).

* The filter program, run by a small classic-BPF interpreter here, drops only frames a
  sender-only :class:`NicPort` ignores: for each frame of a corpus (ACKs, NAKs and CNPs to
  its QPs and to others, data frames, a monitor probe, PAUSE, 802.1Q, IP options, short
  and garbage frames), a dropped frame leaves a port that read it in the state of a twin
  that did not (same reports but ``rx_frames``/``rx_other``, nothing sent); the port's own
  ACKs and CNPs pass.
* The kernel agrees with the interpreter: the same corpus sent on ``lo`` reaches a filtered
  ``PacketSocket`` exactly where the interpreter accepts it (root: CAP_NET_RAW).
* ``NicPort.add_sender`` filters a packet socket only when the port runs no receiver.
"""
from __future__ import annotations

import select
import socket
import struct
from typing import Optional

import pytest

from host.nic.frames import (OP_RC_WRITE_FIRST, OP_RC_WRITE_ONLY, FlowSpec, FrameTemplate,
                             aeth_bytes, build_cnp)
from host.nic.io import DatagramIO, NicPort, PacketSocket, qpn_filter
from host.nic.pfc import build_pause
from host.nic.qp import Receiver, SenderQP
from host.nic.rc import AETH_ACK, AETH_NAK_PSN_SEQ
from monitor.probeframe import ProbeTemplate

OURS = (256, 257)
SRC = FlowSpec("02:00:00:00:00:01", "02:00:00:00:01:01", "10.0.0.1", "10.1.0.1", 49152, 256)


def bpf_run(prog: bytes, pkt: bytes) -> int:
    """Classic BPF (the opcodes :func:`qpn_filter` uses) on ``pkt``: bytes accepted, 0 dropped."""
    insns = [struct.unpack_from("=HBBI", prog, i) for i in range(0, len(prog), 8)]
    a = x = pc = 0
    while True:
        code, jt, jf, k = insns[pc]
        pc += 1
        if code in (0x28, 0x30, 0x20, 0x48, 0x40):            # ld{h,b,w} [k] / [x+k]
            at = k + (x if code & 0x40 else 0)
            size = {0x28: 2, 0x48: 2, 0x30: 1, 0x20: 4, 0x40: 4}[code]
            if at + size > len(pkt):
                return 0                                       # out of bounds: the packet is dropped
            a = int.from_bytes(pkt[at:at + size], "big")
        elif code == 0xB1:                                     # ldxb 4*([k]&0xf)
            if k >= len(pkt):
                return 0
            x = 4 * (pkt[k] & 0x0F)
        elif code == 0x54:
            a &= k
        elif code == 0x15:
            pc += jt if a == k else jf
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"opcode {code:#x} not interpreted")


def back_flow(qpn: int, dst_ip: str = "10.0.0.1") -> FlowSpec:
    """The receiver's replies to a sender QP ``qpn``."""
    return FlowSpec(SRC.dst_mac, SRC.src_mac, "10.1.0.1", dst_ip, 49152, qpn)


def with_ip_options(frame: bytes) -> bytes:
    """``frame`` with 4 bytes of IP options (IHL 6): the UDP header moves."""
    b = bytearray(frame[:14 + 20] + b"\x01\x01\x01\x00" + frame[14 + 20:])
    b[14] = 0x46
    struct.pack_into("!H", b, 16, struct.unpack_from("!H", b, 16)[0] + 4)
    return bytes(b)


def vlan(frame: bytes) -> bytes:
    return frame[:12] + b"\x81\x00\x00\x03" + frame[12:]


def corpus() -> dict[str, bytes]:
    frames: dict[str, bytes] = {}
    for q in (256, 257, 258, 0x10100, 0xFFFF01):
        ack = FrameTemplate.ack(back_flow(q)).frame(5, ext=aeth_bytes(AETH_ACK, 2))
        frames[f"ack-{q}"] = ack
        frames[f"nak-{q}"] = FrameTemplate.ack(back_flow(q)).frame(5, ext=aeth_bytes(AETH_NAK_PSN_SEQ, 2))
        frames[f"cnp-{q}"] = build_cnp(back_flow(q))
        frames[f"ack-ipopt-{q}"] = with_ip_options(ack)
        frames[f"ack-vlan-{q}"] = vlan(ack)
        frames[f"data-{q}"] = FrameTemplate.data(back_flow(q), OP_RC_WRITE_ONLY, 64).frame(3)
    frames["data-first-258"] = FrameTemplate.data(back_flow(258), OP_RC_WRITE_FIRST, 1024).frame(0)
    frames["probe"] = ProbeTemplate("02:00:00:00:01:00", "06:00:00:00:00:01", "10.1.0.1",
                                    "10.0.0.1", 49152).frame(plan_id=1, path_index=0, seq=1, send_ns=5)
    frames["pause"] = build_pause("02:00:00:00:01:01", {3: 100})
    frames["zeros-60"] = bytes(60)
    frames["ipv4-tcp"] = frames["ack-258"][:23] + b"\x06" + frames["ack-258"][24:]
    frames["udp-other-port"] = frames["ack-258"][:36] + b"\x12\xb8" + frames["ack-258"][38:]
    frames["short-ipv4-30"] = frames["ack-258"][:30]
    frames["short-roce-44"] = frames["ack-258"][:44]
    frames["short-12"] = frames["ack-258"][:12]
    return frames


def sender_port() -> tuple[NicPort, DatagramIO]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    port = NicPort(DatagramIO(a), line_rate_bps=1e8)
    for q in OURS:
        port.add_sender(SenderQP(FlowSpec(SRC.src_mac, SRC.dst_mac, SRC.src_ip, SRC.dst_ip, 49152, q),
                                 message_bytes=1024, mtu=1024, messages=4, rate_limit=False))
    return port, DatagramIO(b)


def state(port: NicPort, now: float) -> dict[str, object]:
    rep = port.report(now)
    return {k: v for k, v in rep.items() if k not in ("rx_frames", "rx_other")}


def drain(io: DatagramIO) -> list[bytes]:
    out = []
    while True:
        f: Optional[bytes] = io.recv()
        if f is None:
            return out
        out.append(f)


def test_filter_drops_only_frames_a_sender_only_port_ignores() -> None:
    prog = qpn_filter(OURS)
    dropped = []
    for name, frame in corpus().items():
        if bpf_run(prog, frame):
            continue
        dropped.append(name)
        fed, fed_peer = sender_port()
        twin, twin_peer = sender_port()
        for port in (fed, twin):
            port.step(0.0)                         # both send their first frames
        drain(fed_peer), drain(twin_peer)
        fed_peer.send(frame)
        fed.step(0.001)
        twin.step(0.001)
        assert state(fed, 0.001) == state(twin, 0.001), name
        assert (fed.rx_frames, fed.rx_other) == (twin.rx_frames + 1, twin.rx_other + 1), name
        assert drain(fed_peer) == drain(twin_peer), name
    for q in OURS:                                 # the port's own replies all pass
        for kind in ("ack", "nak", "cnp", "ack-ipopt", "ack-vlan"):
            assert f"{kind}-{q}" not in dropped
    for kind in ("ack", "nak", "cnp", "ack-ipopt", "data"):  # the others' are dropped
        assert f"{kind}-258" in dropped and f"{kind}-{0x10100}" in dropped
    assert {"probe", "short-ipv4-30", "short-roce-44"} <= set(dropped)
    assert not {"pause", "zeros-60", "ipv4-tcp", "udp-other-port"} & set(dropped)


@pytest.mark.skipif(not hasattr(socket, "AF_PACKET"), reason="needs AF_PACKET")
def test_kernel_runs_the_filter_as_the_interpreter_does() -> None:
    try:
        tx, rx = PacketSocket("lo"), PacketSocket("lo")
    except PermissionError:
        pytest.skip("needs CAP_NET_RAW")
    try:
        assert rx.accept_only_qpns(OURS), rx.filter_reason
        prog = qpn_filter(OURS)
        # lo takes whole headers; a tagged frame reaches the filter and the socket with its
        # tag in PACKET_AUXDATA (the same bytes as the untagged one: judged as that)
        frames = {n: f for n, f in corpus().items() if len(f) >= 14 and "vlan" not in n}
        sentinel = FrameTemplate.ack(back_flow(256)).frame(0xABCDE, ext=aeth_bytes(AETH_ACK, 9))
        for f in frames.values():
            assert tx.send(f)
        assert tx.send(sentinel)
        got: set[bytes] = set()
        while sentinel not in got:
            if not select.select([rx.sock], [], [], 2.0)[0]:
                raise AssertionError(f"the sentinel did not arrive; got {len(got)} frames")
            got.update(rx.recv_many(64))
        want = {n for n, f in frames.items() if bpf_run(prog, f)}
        seen = {n for n, f in frames.items() if f in got}
        assert seen == want, (sorted(seen - want), sorted(want - seen))
    finally:
        tx.close()
        rx.close()


class FakeLink(DatagramIO):
    def __init__(self) -> None:
        super().__init__(socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0])
        self.asked: list[tuple[int, ...]] = []

    def accept_only_qpns(self, qpns: list[int]) -> bool:
        self.asked.append(tuple(qpns))
        return True


def test_add_sender_filters_only_a_port_without_receiver() -> None:
    link = FakeLink()
    port = NicPort(link, line_rate_bps=1e8)
    for q in OURS:
        port.add_sender(SenderQP(FlowSpec(SRC.src_mac, SRC.dst_mac, SRC.src_ip, SRC.dst_ip, 49152, q),
                                 message_bytes=1024, mtu=1024, messages=1))
    assert link.asked == [(256,), (256, 257)]
    both = FakeLink()
    port = NicPort(both, line_rate_bps=1e8, receiver=Receiver())
    port.add_sender(SenderQP(SRC, message_bytes=1024, mtu=1024, messages=1))
    assert both.asked == []


def test_filter_refuses_too_many_qps() -> None:
    with pytest.raises(ValueError, match="at most 200"):
        qpn_filter(range(201))
