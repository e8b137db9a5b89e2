"""The NIC emulator's native hot loop (host.nic.native, ``host/nic/c/nicfast.c``) against
the Python path, on the same inputs: frames and counters byte for byte.

* ``SenderQP.poll_into`` (frames made in C) against ``poll_batch`` on twin QPs fed the
  same ACKs, NAKs, CNPs, PAUSE, source-port move and clock: paced and windowed, unpaced
  with more frames than one C fill makes, one-packet messages, PSNs wrapping, a RETH
  address wrapping at 2^64.
* The C parse and ICRC check of received frames against ``parse_roce``/``verify_icrc``
  over good, CE-marked, VLAN, PFC, truncated and byte-flipped frames.
* The CRC against ``zlib.crc32``; a full queue refuses the same frames as ``MmsgSender``;
  a frame larger than an arena slot still goes out.
* No compiler: the Python path runs and says why once.
* A sender's wait-and-send loop in C (``NicPort.run``'s bursts) in real time: the wire is
  the twin Python QPs' frames byte for byte, the pacer's rate holds, far fewer steps.
* The burst's replies and DCQCN in C against the Python state machines (the reference):
  the reaction point's operations on random sequences (every word equal), and one QP's
  instants of a burst (its ACKs, CNPs, stale and foreign replies, NAKs left to Python)
  against ``on_frame`` + ``poll_batch`` on a twin: the same frames, PSNs, rates,
  retransmissions and reports.
* On a veth pair (root): the C receive leaves out the host's own transmissions.

(The ports over a lossy, CE-marking cable, native against Python: test_nic_batch.py.)
"""
from __future__ import annotations

import logging
import os
import random
import socket
import threading
import zlib
from pathlib import Path
from typing import Iterator

import pytest

from host.nic import native
from host.nic.dcqcn import DcqcnParams
from host.nic.frames import (OP_CNP, FlowSpec, FrameTemplate, RoceInfo, aeth_bytes,
                             build_cnp, parse_roce, set_ce, verify_icrc)
from host.nic.io import DatagramIO, NicPort, PacketSocket
from host.nic.mmsg import BATCH, MmsgSender
from host.nic.pfc import PfcState, build_pause
from host.nic.qp import Receiver, SenderQP
from host.nic.dcqcn import ReactionPoint
from host.nic.rc import AETH_ACK, AETH_NAK_PSN_SEQ, RcParams
from p4sim import cbuild

from nic_twins import FLOW, give_events, reply, reply_frame, scripted_events
from veths import veth_pairs

pytestmark = pytest.mark.skipif(not native.native_status()[0], reason="no native hot loop (no gcc)")




def _twins(**kw: object) -> tuple[SenderQP, SenderQP, PfcState, PfcState]:
    pfc_a, pfc_b = PfcState(1e8), PfcState(1e8)
    one = SenderQP(FLOW, **kw)        # type: ignore[arg-type]
    two = SenderQP(FLOW, **kw)        # type: ignore[arg-type]
    one.pfc, two.pfc = pfc_a, pfc_b
    two.attach_native(native.NativeQP(native.nic_lib()))  # type: ignore[arg-type]
    return one, two, pfc_a, pfc_b


CASES = {
    "paced, window 24": dict(message_bytes=4096, mtu=1024, messages=150, dcqcn=DcqcnParams.scaled(2000.0),
                             rc=RcParams(retry_timeout_s=0.05, window_pkts=24)),
    "paced, no window": dict(message_bytes=4096, mtu=1024, messages=150, dcqcn=DcqcnParams.scaled(2000.0),
                             rc=RcParams(retry_timeout_s=0.05)),
    "unpaced, 100 a step": dict(message_bytes=65536, mtu=1024, messages=30, rate_limit=False,
                                rc=RcParams(retry_timeout_s=0.05)),
    "one-packet messages, PSN and VA wrap": dict(message_bytes=700, mtu=1024, messages=3000,
                                                 start_psn=0xFFFFF0, base_va=(1 << 64) - 1400,
                                                 dcqcn=DcqcnParams.scaled(5000.0), rkey=0xFFFFFFFF,
                                                 rc=RcParams(retry_timeout_s=0.05, window_pkts=40)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_poll_into_makes_the_frames_and_counters_of_poll_batch(case: str) -> None:
    one, two, pfc_a, pfc_b = _twins(**CASES[case])
    lib = native.nic_lib()
    assert lib is not None
    tx = native.NativeTx(lib)
    limit = 100 if "100" in case else 16
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    b.setblocking(False)
    made = 0
    for step in range(400):
        now = step * 0.004
        give_events(scripted_events(step, one, cnp_steps=(30, 31, 90, 200)), ((one, pfc_a), (two, pfc_b)), now)
        python = one.poll_batch(now, limit)
        n = two.poll_into(now, limit, tx)
        assert n == len(python)
        assert tx.frames() == python, f"step {step}"
        tx.flush(a.fileno())               # (the frames were compared above)
        while True:
            try:
                b.recv(65535)
            except BlockingIOError:
                break
        made += n
        assert two.report(now) == one.report(now), f"step {step}"
        assert (two.next_at, two.rc.deadline_s, two.rp.rate_pps, list(two.rc._ackreqs)) == \
            (one.next_at, one.rc.deadline_s, one.rp.rate_pps, list(one.rc._ackreqs))
    assert made > 300
    assert one.counters.timeouts or one.counters.naks_received
    assert one.counters.cnps_received and one.counters.pause_blocked_s > 0


def _good_frames() -> Iterator[bytes]:
    flows = [FLOW, FlowSpec("02:00:00:00:00:03", "02:00:00:00:01:01", "10.0.0.3", "10.1.0.1", 50000, 0xABCDEF)]
    for flow in flows:
        for op, size in ((6, 1024), (7, 1024), (8, 13), (10, 1), (7, 4096)):
            t = FrameTemplate.data(flow, op, size, payload_byte=op)
            for psn in (0, 5, 0xFFFFFF):
                yield t.frame(psn, ackreq=psn == 5, ext=b"\x01" * 16 if op in (6, 10) else b"")
        yield FrameTemplate.ack(flow).frame(9, ext=aeth_bytes(AETH_NAK_PSN_SEQ, 3))
        yield build_cnp(flow)


def _frames() -> Iterator[bytes]:
    """Good frames, then each CE-marked, 802.1Q-tagged, cut short and with a bit flipped."""
    rng = random.Random(32)
    yield build_pause("02:00:00:00:09:09", {3: 3000})
    yield bytes(60)
    for f in _good_frames():
        yield f
        yield set_ce(f)
        yield f[:12] + b"\x81\x00\x00\x05" + f[12:]            # 802.1Q tagged
        for cut in (20, 53, 58, 59, len(f) - 1):
            yield f[:cut]
        for _ in range(3):
            g = bytearray(f)
            g[rng.randrange(len(g))] ^= 1 << rng.randrange(8)
            yield bytes(g)


def test_the_c_parse_and_icrc_check_are_parse_roce_and_verify_icrc() -> None:
    lib = native.nic_lib()
    assert lib is not None
    rx = native.NativeRx(lib, names=False)
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    frames = list(_frames())
    assert len(frames) > 100
    seen = 0
    for i in range(0, len(frames), 40):
        chunk = frames[i:i + 40]
        for f in chunk:
            a.send(f)
        got = rx.recv(b.fileno(), 64, 1)
        assert got == len(chunk)
        for k, f in enumerate(chunk):
            r = rx.rec[k * native.R_WORDS:(k + 1) * native.R_WORDS]
            off, ln = r[native.R_OFF], r[native.R_LEN]
            assert bytes(rx.mv[off:off + ln]) == f
            info = parse_roce(f)
            assert (r[native.R_KIND] == native.KIND_PFC) == (f[12:14] == b"\x88\x08"), f.hex()
            if info is None:
                assert r[native.R_KIND] != native.KIND_ROCE, f.hex()
                continue
            seen += 1
            l3, ext = r[native.R_L3], r[native.R_EXT_AT]
            mine = RoceInfo(f[6:12], f[0:6], f[l3 + 12:l3 + 16], f[l3 + 16:l3 + 20], r[native.R_DSCP],
                            r[native.R_ECN], r[native.R_SPORT], r[native.R_OPCODE], bool(r[native.R_BECN]),
                            r[native.R_DQPN], bool(r[native.R_ACKREQ]), r[native.R_PSN], r[native.R_PAYLOAD],
                            f[ext:ext + r[native.R_EXT_LEN]])
            assert r[native.R_KIND] == native.KIND_ROCE and mine == info, f.hex()
            assert bool(r[native.R_ICRC_OK]) == verify_icrc(f), f.hex()
    assert seen > 60
    rx.close()


def test_the_crc_is_zlibs() -> None:
    lib = native.nic_lib()
    assert lib is not None
    rng = random.Random(7)
    for n in (0, 1, 7, 8, 9, 63, 1024, 1500):
        data = bytes(rng.randrange(256) for _ in range(n))
        for start in (0, 0xFFFFFFFF, rng.randrange(1 << 32)):
            assert lib.nicc_crc32(start, data, n) == zlib.crc32(data, start)


def test_a_full_queue_refuses_the_frames_mmsg_sender_refuses() -> None:
    lib = native.nic_lib()
    assert lib is not None
    results = []
    for use_c in (False, True):
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        a.setblocking(False)
        frames = [i.to_bytes(4, "big") for i in range(2000)]
        if use_c:
            tx, refused = native.NativeTx(lib), 0
            for k in range(0, len(frames), tx.slots):
                for f in frames[k:k + tx.slots]:
                    assert tx.push(f)
                refused += tx.flush(a.fileno())
        else:
            refused = sum(MmsgSender(a).send(frames[k:k + BATCH]) for k in range(0, 2000, BATCH))
        b.setblocking(False)
        queued = []
        while True:
            try:
                queued.append(int.from_bytes(b.recv(16), "big"))
            except BlockingIOError:
                break
        assert refused > 0 and refused + len(queued) == 2000
        results.append((refused, queued))
        a.close()
        b.close()
    assert results[0] == results[1]


def test_a_frame_larger_than_a_slot_still_goes_out() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    for s in (a, b):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    port = NicPort(DatagramIO(a), line_rate_bps=1e8, native=True)
    assert port.native
    big = b"\x02" * (native.SLOT_BYTES + 100)
    for f in (b"\x01" * 60, big, b"\x03" * 60):
        port._push(f)
    port._flush_native()
    b.setblocking(False)
    assert [b.recv(65535) for _ in range(3)] == [b"\x01" * 60, big, b"\x03" * 60]
    assert port.tx_frames == 3


def test_a_qp_whose_frames_exceed_a_slot_stays_on_the_python_path() -> None:
    """A data frame larger than an arena slot (an MTU over ~16 KB) is never built in C:
    the template is refused (before: nicc_qp_fill wrote it past the slot, a heap
    overflow), and a port keeps such a QP's frames in Python, byte for byte."""
    lib = native.nic_lib()
    assert lib is not None
    big = dict(message_bytes=40000, mtu=20000, messages=1, rate_limit=False)
    with pytest.raises(ValueError, match="exceeds the native arena"):
        SenderQP(FLOW, **big).attach_native(native.NativeQP(lib))      # type: ignore[arg-type]
    one = SenderQP(FLOW, **big)                                          # type: ignore[arg-type]
    assert one.native_frame_bytes() == len(one.poll_batch(0.0, 1)[0]) > native.SLOT_BYTES
    for first in (None, dict(message_bytes=2048, mtu=1024, messages=1, rate_limit=False)):
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        for s in (a, b):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        port = NicPort(DatagramIO(a), line_rate_bps=1e8, native=True)
        twins = []
        for kw in (first, big):
            if kw is not None:
                port.add_sender(SenderQP(FLOW, **kw))                    # type: ignore[arg-type]
                twins.append(SenderQP(FLOW, **kw))                       # type: ignore[arg-type]
        assert not port.native and "mtu 20000" in port.native_reason
        assert all(qp._native is None for qp in port.senders)
        port.step(0.0)
        b.setblocking(False)
        want = [f for t in twins for f in t.poll_batch(0.0, port.tx_burst)]
        assert [b.recv(65535) for _ in range(len(want))] == want and len(want) == (2 if first is None else 4)
        a.close()
        b.close()


def test_without_a_compiler_the_python_path_runs_said_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("CC", "/nonexistent/no-such-cc")
    monkeypatch.setenv("P4SIM_NATIVE_CACHE", str(tmp_path))
    monkeypatch.setattr(native, "_LIB", None)
    monkeypatch.setattr(native, "_REASON", None)
    cbuild._compiler_version.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="host.nic.native"):
            pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM) for _ in range(3)]
            ports = [NicPort(DatagramIO(a), line_rate_bps=1e8, native=True) for a, _b in pairs]
        assert not any(p.native for p in ports)
        said = [r.getMessage() for r in caplog.records if "native hot loop" in r.getMessage()]
        assert len(said) == 1 and "no-such-cc" in said[0], said
        qp = ports[0].add_sender(SenderQP(FLOW, message_bytes=2048, mtu=1024, messages=1, rate_limit=False))
        assert ports[0].step(0.0) == 2 and qp.counters.sent_pkts == 2      # the Python path sends
    finally:
        cbuild._compiler_version.cache_clear()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a veth pair, AF_PACKET)")
def test_native_receive_on_a_veth_leaves_out_our_own_transmissions() -> None:
    with veth_pairs(f"nn{os.getpid() % 100000}", 1) as [(a, b)]:
        sender, beside, receiver = PacketSocket(a), PacketSocket(a), PacketSocket(b)
        rx_port = NicPort(receiver, line_rate_bps=1e8, receiver=Receiver(), native=True)
        beside_port = NicPort(beside, line_rate_bps=1e8, receiver=Receiver(), native=True)
        assert rx_port.native and beside_port.native
        t = FrameTemplate.data(FLOW, 10, 64)
        frames = [t.frame(i, ext=bytes(16)) for i in range(200)]
        assert sender.send_many(frames) == 0
        for _ in range(1000):
            rx_port.step(0.0)
            flows = rx_port.receiver.report() if rx_port.receiver else []
            if flows and flows[0]["recv_pkts"] >= len(frames):
                break
        assert rx_port.receiver is not None
        flow = rx_port.receiver.report()[0]
        assert flow["recv_pkts"] == 200 and flow["messages_received"] == 200 and flow["bad_icrc"] == 0
        beside_port.step(0.0)
        assert beside_port.receiver is not None and beside_port.receiver.report() == []
        for s in (sender, beside, receiver):
            s.close()


def test_a_senders_native_bursts_keep_pacing_and_make_the_python_frames() -> None:
    """``NicPort.run`` on the native path waits and sends in C between Python's steps
    (host.nic.native.NativeBurst): two QPs paced at 400 pps each for 0.5 s of real time
    against a receiver answering every ACK request. The wire is, byte for byte, what twin
    Python QPs make; the rate is the pacer's; far fewer Python steps than frames."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    for s in (a, b):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    port = NicPort(DatagramIO(a), line_rate_bps=1e8, native=True)
    twins = []
    for i in range(2):
        flow = FlowSpec(FLOW.src_mac, FLOW.dst_mac, FLOW.src_ip, FLOW.dst_ip, 49152 + i, 7 + i)
        kw = dict(message_bytes=4096, mtu=1024, messages=50, dcqcn=DcqcnParams.scaled(400.0))
        port.add_sender(SenderQP(flow, **kw))                            # type: ignore[arg-type]
        twins.append(SenderQP(flow, rate_limit=False, **kw))             # type: ignore[arg-type]
    assert port.native
    rx = Receiver()
    wire: dict[int, list[bytes]] = {7: [], 8: []}
    done = threading.Event()

    def answer() -> None:
        b.settimeout(0.05)
        while not done.is_set():
            try:
                frame = b.recv(65535)
            except socket.timeout:
                continue
            info = parse_roce(frame)
            assert info is not None
            wire[info.dqpn].append(frame)
            rx.on_frame(frame, 0.0, info)
            for ack in rx.flush_acks():
                b.send(ack)

    t = threading.Thread(target=answer)
    t.start()
    try:
        elapsed = port.run(5.0)
    finally:
        done.set()
        t.join()
    assert all(qp.done and not qp.errored for qp in port.senders)
    for twin in twins:
        assert wire[twin.sqpn] == [twin.poll(0.0) for _ in range(200)]
    # 200 frames a QP at 400 pps: 0.5 s at the least (the pacer holds); no upper bound on
    # the wall clock (a loaded machine is late, not wrong: speed is make bench's)
    assert elapsed > 0.4
    assert port.tx_frames == 400 and port.steps < 200
    assert port.rx_burst_taken > 0                  # ACKs taken in the burst, without a Python step
    assert [qp.counters.sent_pkts for qp in port.senders] == [200, 200]


def test_a_burst_does_not_wait_for_the_dcqcn_timers_they_run_in_c() -> None:
    """DCQCN's timers run in the burst (nicc_burst), so after a rate cut the burst still
    lasts until the retry timer; its state goes to C and comes back unchanged."""
    port = NicPort(DatagramIO(socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]), line_rate_bps=1e8,
                   native=True)
    qp = port.add_sender(SenderQP(FLOW, message_bytes=4096, mtu=1024, dcqcn=DcqcnParams.scaled(1000.0)))
    qp.poll_into(0.0, 1, port._ntx)                               # type: ignore[arg-type]
    assert qp.burst_begin(0.0) == 0.0 + 2.0                       # the retry timer only
    qp.on_frame(reply(OP_CNP, 0), 0.001)                         # rate cut: the rate timer counts
    before = repr(qp.rp)
    assert qp.burst_begin(0.001) == 0.001 + 2.0 and qp.rp._next_rate < 0.01
    qp.burst_end()
    assert repr(qp.rp) == before


def _rp_words(nq: native.NativeQP) -> tuple[object, ...]:
    w, s = nq.rp, nq.s
    return (w[native.RP_RATE], w[native.RP_TARGET], w[native.RP_ALPHA], w[native.RP_NOW], w[native.RP_NEXT_ALPHA],
            w[native.RP_NEXT_RATE], w[native.RP_LAST_DEC], s[native.S_RP_TIMER_ROUNDS], s[native.S_RP_BYTE_ROUNDS],
            s[native.S_RP_CNPS], s[native.S_RP_DECREASES], s[native.S_RP_PKTS])


def _rp_fields(rp: ReactionPoint) -> tuple[object, ...]:
    return (rp.rate_pps, rp.target_pps, rp.alpha, rp._now, rp._next_alpha, rp._next_rate, rp._last_decrease,
            rp.timer_rounds, rp.byte_rounds, rp.cnps, rp.decreases, rp._pkts)


@pytest.mark.parametrize("params", [DcqcnParams.scaled(3000.0), DcqcnParams(line_rate_pps=1000.0, min_rate_pps=400.0),
                                    DcqcnParams.scaled(5000.0, min_decrease_interval_s=0.004, byte_counter_pkts=7)])
def test_the_c_reaction_point_is_dcqcns(params: DcqcnParams) -> None:
    """nicc_rp_op against dcqcn.ReactionPoint on 4,000 random operations (advance, packets
    sent, CNPs; times with gaps from 0 to several timer periods, some going back): every
    word equal after each, the doubles bit for bit."""
    lib = native.nic_lib()
    assert lib is not None
    qp = SenderQP(FLOW, dcqcn=params)
    qp.attach_native(native.NativeQP(lib))
    nq = qp._native
    assert nq is not None
    py = ReactionPoint(params)
    qp._rp_to_native()
    rng = random.Random(47)
    now, cut, byte_rounds, timer_rounds = 0.0, False, 0, 0
    for i in range(4000):
        now = max(0.0, now + rng.choice((0.0, 1e-4, 7e-4, 0.003, 0.0055, 0.02, 0.3, -0.001)))
        op = rng.choice((native.RP_OP_ADVANCE, native.RP_OP_SENT, native.RP_OP_SENT, native.RP_OP_CNP))
        k = rng.choice((1, 3, 64, 250))
        if op == native.RP_OP_ADVANCE:
            py.advance(now)
        elif op == native.RP_OP_SENT:
            py.on_sent(now, k)
        else:
            py.on_cnp(now)
            cut = True
        nq.rp_op(op, now, k)
        assert _rp_words(nq) == _rp_fields(py), f"op {i}"
        byte_rounds, timer_rounds = max(byte_rounds, py.byte_rounds), max(timer_rounds, py.timer_rounds)
    assert cut and byte_rounds > 5 and timer_rounds > 5 and py.decreases


def test_a_burst_takes_acks_and_cnps_as_on_frame_and_poll_batch() -> None:
    """One QP's burst, instant by instant (nicc_qp_instant: what nicc_burst does at each
    wake-up), against a twin on the Python path (``on_frame`` for each reply, then
    ``poll_batch``), 4 ms apart, paced with a window: cumulative ACKs (some stale),
    CNPs, a CNP and an ACK from another host (left to Python), NAKs (left to Python: the
    burst ends, Python takes them and the next step's frames, a new burst begins), the
    retry timer (a burst ends at its deadline). After every instant the frames, the PSNs,
    DCQCN's words and the retransmissions are the twin's; at each burst's end the reports."""
    lib = native.nic_lib()
    assert lib is not None
    kw = dict(message_bytes=4096, mtu=1024, messages=250, dcqcn=DcqcnParams.scaled(2000.0),
              rc=RcParams(retry_timeout_s=0.05, window_pkts=48))
    one, two, pfc_a, pfc_b = _twins(**kw)
    nq = two._native
    assert nq is not None
    tx, rx = native.NativeTx(lib), native.NativeRx(lib, names=False)
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    sink_a, sink_b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    sink_b.setblocking(False)
    limit, in_burst, deadline = 16, False, 0.0
    taken_in_c = python_turns = bursts = 0

    def drain() -> None:
        tx.flush(sink_a.fileno())
        while True:
            try:
                sink_b.recv(65535)
            except BlockingIOError:
                break

    for step in range(600):
        now = step * 0.004
        replies: list[bytes] = []
        if step % 3 == 2 and one.rc.high_seq:
            behind = 1 if one.rc.high_seq >= 1000 else 5             # the last message: all of it
            replies.append(reply_frame(AETH_ACK, one.rc.psn(max(0, one.rc.high_seq - behind)), one.rc.high_seq // 4))
        if step % 17 == 5:
            replies.append(reply_frame(AETH_ACK, one.rc.psn(max(0, one.rc.acked_seq - 3)), 1))   # stale
        if step in (20, 21, 80, 81, 82, 150, 151, 300):
            replies.append(reply_frame(OP_CNP, 0))
        if step == 110:
            replies.append(reply_frame(OP_CNP, 0, src_ip="10.9.9.9"))                         # not the peer's
        if step == 130:
            replies.append(reply_frame(AETH_ACK, one.rc.psn(one.rc.high_seq - 1), 60, src_ip="10.9.9.9"))
        if step in (60, 200) and one.rc.high_seq > one.rc.acked_seq + 3:
            replies.append(reply_frame(AETH_NAK_PSN_SEQ, one.rc.psn(one.rc.acked_seq + 2)))
            replies.append(reply_frame(AETH_ACK, one.rc.psn(one.rc.acked_seq + 1)))
        if 240 <= step < 280:
            replies = []                                        # silence: the retry timer fires
        for f in replies:
            one.on_frame(f, now)
        want = one.poll_batch(now, limit)
        if in_burst and (now >= deadline or nq.s[native.S_OUT_ACKREQS] + limit > native.ACK_CAP):
            two.burst_end()
            in_burst = False
        if not in_burst:
            deadline = two.burst_begin(now)
            in_burst = not nq.s[native.S_SKIP]
            bursts += in_burst
            if not in_burst:
                two.burst_end()
        taken, python = 0, True
        if in_burst:
            for f in replies:
                a.send(f)
            got = rx.recv(b.fileno(), 64, 1) if replies else 0
            assert got == len(replies)
            taken, made, python = nq.instant(tx, rx, got, limit, now)
            taken_in_c += taken
            if not python:
                assert tx.frames() == want, f"step {step}"
                assert made == len(want)
        if python:                                             # Python's step, as NicPort's
            if in_burst:
                two.burst_end()
                in_burst = False
                python_turns += 1
            for f in replies[taken:]:
                two.on_frame(f, now)
            two.poll_into(now, limit, tx)
            assert tx.frames() == want, f"step {step}"
        drain()
        s = nq.s
        if in_burst:
            assert (s[native.S_NEXT], s[native.S_HIGH], s[native.S_ACKED]) == \
                (one.rc.next_seq, one.rc.high_seq, one.rc.acked_seq), f"step {step}"
            assert _rp_words(nq) == _rp_fields(one.rp), f"step {step}"
            assert two.rc.retransmitted_pkts + s[native.S_OUT_RETX] == one.rc.retransmitted_pkts
        else:
            assert two.report(now) == one.report(now), f"step {step}"
            assert two.rc.deadline_s == one.rc.deadline_s and list(two.rc._ackreqs) == list(one.rc._ackreqs)
    if in_burst:
        two.burst_end()
    assert two.report(now) == one.report(now)
    assert one.done and not one.errored, one.rc.error
    assert one.counters.naks_received == 2 and one.counters.timeouts and one.counters.cnps_received == 8
    assert one.rc.retransmitted_pkts and one.rp.decreases
    assert taken_in_c > 100 and python_turns >= 4 and bursts < 60, (taken_in_c, python_turns, bursts)


def _receiver_wire(native_: bool, frames: list[bytes]) -> tuple[list[bytes], list[dict[str, object]], NicPort]:
    """``frames`` through a receiver port on a socketpair (the first 8 stepped alone, so
    the flows exist; the rest written at once and read in 64-frame batches) by
    :meth:`NicPort.run` (native: its receiver burst); the replies in order, the report."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    for s in (a, b):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 23)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
    rcv = Receiver(cnp_interval_s=0.0, local_ips=frozenset({bytes([10, 1, 0, 1])}))
    port = NicPort(DatagramIO(a), line_rate_bps=1e9, receiver=rcv, native=native_)
    assert port.native == native_
    for f in frames[:8]:
        b.send(f)
    port.step(0.0)
    for f in frames[8:]:
        b.send(f)
    port.run(0.5, stop=lambda: port.rx_frames >= len(frames))
    b.setblocking(False)
    wire = []
    while True:
        try:
            wire.append(b.recv(65535))
        except BlockingIOError:
            break
    timed = {"first_s", "last_s", "elapsed_s", "goodput_mbps", "goodput_pps"}
    report = [{k: v for k, v in f.items() if k not in timed} for f in rcv.report()]
    a.close(), b.close()
    return wire, report, port


def test_a_receiver_burst_answers_as_the_python_receiver() -> None:
    """The receiver's burst in C (nicc_rx_burst: wait, read, accept, CNPs and coalesced
    ACKs made from the flows' templates, send) against the Python receiver on the same
    frames in the same 64-frame batches: four flows (one starting late), CE marks (a CNP
    for each: interval 0), a lost frame (a NAK, then out-of-sequence frames, for Python)
    and a duplicate. The replies byte for byte and in order, and every counter, are the
    Python path's; most batches were answered in the burst, without a Python step."""
    flows = [FlowSpec("02:00:00:00:00:01", "02:00:00:00:01:01", f"10.0.0.{1 + i % 2}", "10.1.0.1",
                      49152 + i, 7 + i) for i in range(4)]
    tpls = {op: [FrameTemplate.data(f, op, 512) for f in flows] for op in (0x06, 0x07, 0x08)}
    def frame(i: int, seq: int, ce: bool) -> bytes:
        op = (0x06, 0x07, 0x07, 0x08)[seq % 4]            # 4-packet messages, an ACK request at the end
        f = tpls[op][i].frame(seq, ackreq=op == 0x08, ext=bytes(16) if op == 0x06 else b"")
        return set_ce(f) if ce else f

    psn = [0, 0, 0, 0]
    lost = -1
    frames: list[bytes] = []
    for k in range(1600):
        i = k % 4 if k >= 400 else k % 3                 # flow 3 starts at frame 400
        seq = psn[i]
        psn[i] += 1
        if k == 900:                                      # lost: a NAK, then Python till the resend
            lost = seq
            continue
        if k == 1000:                                     # go-back-N from the lost frame
            frames.extend(frame(0, s, False) for s in range(lost, psn[0] - 1))
        frames.append(frame(i, seq, k % 7 == 3))
        if k == 1201:
            frames.append(frames[-1])                     # a duplicate
    python_wire, python_report, _ = _receiver_wire(False, frames)
    wire, report, port = _receiver_wire(True, frames)
    assert len(wire) == len(python_wire)
    for n, (x, y) in enumerate(zip(wire, python_wire)):
        assert x == y, f"reply {n}"
    assert report == python_report
    by_qpn = {f["qpn"]: f for f in report}
    assert by_qpn[7]["naks_sent"] and by_qpn[7]["out_of_sequence_pkts"] and by_qpn[8]["duplicate_pkts"]
    assert all(f["cnps_sent"] and f["messages_received"] > 60 for f in report)
    assert port.rx_batches_in_c >= 15 and port.tx_replies_in_c > 200
    assert port.steps < len(frames) // 64, "batches were answered in the burst, not in steps"
