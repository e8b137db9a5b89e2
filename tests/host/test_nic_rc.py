"""RC reliability over an in-process loopback pair: go-back-N, NAKs, retry timeouts, QP error.

Sender port ⇄ lossy "cable" ⇄ receiver port over two socket pairs and a fake clock; the
cable drops chosen frames (every Nth data frame, a burst, the last frame, ACKs). Every run
checks that the receiver delivered every packet exactly once and in PSN order.
"""
from __future__ import annotations

import socket
from typing import Callable, Optional

import pytest

from host.nic.frames import OP_RC_ACK, FlowSpec, RoceInfo, parse_roce
from host.nic.io import DatagramIO, NicPort
from host.nic.qp import Receiver, SenderQP
from host.nic.rc import QP_ERROR, RcParams, Requester, Responder

FLOW = FlowSpec("02:00:00:00:00:01", "02:00:00:00:01:01", "10.0.0.1", "10.1.0.1", 49152, 7)
Drop = Callable[[RoceInfo, int], bool]   # (frame, how many of its kind passed before) -> drop?


class Loopback:
    """Two NIC ports joined by a cable that drops what ``drop_data``/``drop_reply`` say."""

    def __init__(self, qp: SenderQP, drop_data: Optional[Drop] = None,
                 drop_reply: Optional[Drop] = None) -> None:
        a_nic, self.a_sw = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        b_nic, self.b_sw = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        for s in (a_nic, b_nic, self.a_sw, self.b_sw):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        self.qp = qp
        self.delivered: list[int] = []
        self.rx = Receiver(on_deliver=lambda info: self.delivered.append(info.psn))
        self.tx_port = NicPort(DatagramIO(a_nic), line_rate_bps=1e8)
        self.tx_port.add_sender(qp)
        self.rx_port = NicPort(DatagramIO(b_nic), line_rate_bps=1e8, receiver=self.rx)
        self.drops = {"data": drop_data, "reply": drop_reply}
        self.seen = {"data": 0, "reply": 0}
        self.dropped: list[tuple[str, int, int]] = []    # (kind, opcode, psn)
        self.a_sw.setblocking(False)
        self.b_sw.setblocking(False)

    def _relay(self, src: socket.socket, dst: socket.socket, kind: str) -> None:
        drop = self.drops[kind]
        while True:
            try:
                frame = src.recv(65535)
            except BlockingIOError:
                return
            info = parse_roce(frame)
            if drop is not None and info is not None and drop(info, self.seen[kind]):
                self.dropped.append((kind, info.opcode, info.psn))
            else:
                dst.send(frame)
            self.seen[kind] += 1

    def run(self, until_s: float, dt: float = 0.001) -> float:
        """Step both ports every ``dt`` until the sender is done or ``until_s``; the time."""
        t = 0.0
        while t < until_s and not self.qp.done:
            self.tx_port.step(t)
            self._relay(self.a_sw, self.b_sw, "data")
            self.rx_port.step(t)
            self._relay(self.b_sw, self.a_sw, "reply")
            t += dt
        self.tx_port.step(t)
        return t

    def flow(self) -> dict[str, object]:
        (flow,) = self.rx.report()
        return flow


def sender(messages: int = 10, pkts_per_msg: int = 4, rate_pps: Optional[float] = None,
           **rc: float) -> SenderQP:
    from host.nic.dcqcn import DcqcnParams
    return SenderQP(FLOW, message_bytes=1024 * pkts_per_msg, mtu=1024, messages=messages,
                    dcqcn=DcqcnParams(line_rate_pps=rate_pps or 1000.0),
                    rate_limit=rate_pps is not None,
                    rc=RcParams(**rc))  # type: ignore[arg-type]


def assert_all_delivered_in_order(lb: Loopback, total: int, messages: int) -> None:
    assert lb.delivered == list(range(total))               # every PSN once, in order
    flow = lb.flow()
    assert flow["recv_payload_bytes"] == total * 1024 and flow["messages_received"] == messages
    assert flow["expected_psn"] == total
    assert lb.qp.done and lb.qp.counters.acked_messages == messages
    assert lb.qp.rc.outstanding == 0 and lb.qp.report(0.0)["qp_state"] == "RTS"


def test_every_7th_data_frame_dropped() -> None:
    lb = Loopback(sender(messages=10, rate_pps=1000.0, retry_timeout_s=0.05),
                  drop_data=lambda info, n: n % 7 == 6)
    lb.run(5.0)
    assert_all_delivered_in_order(lb, 40, 10)
    c, flow = lb.qp.counters, lb.flow()
    lost = len(lb.dropped)
    assert lost >= 40 // 7
    assert c.sent_pkts == 40 + c.retransmitted_pkts and c.retransmitted_pkts >= lost
    assert flow["recv_pkts"] == c.sent_pkts - lost             # the wire lost only those
    assert flow["naks_sent"] == c.naks_received > 0
    assert flow["recv_pkts"] == 40 + flow["duplicate_pkts"] + flow["out_of_sequence_pkts"] \
        + flow["naks_sent"]


def test_burst_loss_recovered_by_one_nak_and_go_back_n() -> None:
    burst = set(range(10, 20))
    first_time = set(burst)

    def drop(info: RoceInfo, _n: int) -> bool:
        if info.psn in first_time:
            first_time.discard(info.psn)
            return True
        return False

    lb = Loopback(sender(messages=8, pkts_per_msg=4, retry_timeout_s=10.0), drop_data=drop)
    lb.run(1.0)
    assert_all_delivered_in_order(lb, 32, 8)
    flow, c = lb.flow(), lb.qp.counters
    # unpaced: all 32 leave in one step; the first packet after the burst (PSN 20) is NAKed,
    # PSNs 21..31 dropped; the sender goes back to PSN 10 and sends 10..31 again
    assert flow["naks_sent"] == 1 and flow["lost_pkts"] == 10
    assert flow["out_of_sequence_pkts"] == 11
    assert c.naks_received == 1 and c.timeouts == 0 and c.retransmitted_pkts == 22


def test_last_frame_lost_recovered_by_retry_timeout() -> None:
    passed = {"tail": False}

    def drop_tail_once(info: RoceInfo, _n: int) -> bool:
        if info.psn == 11 and not passed["tail"]:
            passed["tail"] = True
            return True
        return False

    lb = Loopback(sender(messages=3, retry_timeout_s=0.02), drop_data=drop_tail_once)
    t = lb.run(1.0)
    assert_all_delivered_in_order(lb, 12, 3)
    c = lb.qp.counters
    assert c.timeouts == 1 and c.retransmitted_pkts == 1 and c.naks_received == 0
    assert lb.flow()["naks_sent"] == 0
    assert 0.02 <= t < 0.1            # recovered on the timer, not before it


def test_lost_acks_repaired_by_duplicate_ack() -> None:
    lb = Loopback(sender(messages=2, retry_timeout_s=0.02),
                  drop_reply=lambda info, n: info.opcode == OP_RC_ACK and n < 1)
    lb.run(1.0)
    assert_all_delivered_in_order(lb, 8, 2)
    flow, c = lb.flow(), lb.qp.counters
    assert c.timeouts == 1 and c.retransmitted_pkts == 8
    assert flow["duplicate_pkts"] == 8 and flow["acks_sent"] == 2   # coalesced: one per burst


def test_receiver_silent_puts_qp_in_error_after_retries() -> None:
    lb = Loopback(sender(messages=2, retry_timeout_s=0.01, retry_count=3),
                  drop_data=lambda info, n: True)
    t = lb.run(2.0)
    qp = lb.qp
    assert qp.done and qp.errored and lb.delivered == []
    assert qp.counters.timeouts == 4 and qp.counters.sent_pkts == 8 * 4
    report = lb.tx_port.report(t)
    (flow,) = report["flows"]
    assert flow["qp_state"] == QP_ERROR and "retry count exceeded" in str(flow["qp_error"])
    assert flow["timeouts"] == 4 and flow["retransmitted_pkts"] == 24
    assert report["qp_errors"] == 1
    assert qp.poll(t + 1.0) is None and qp.wait_s(t + 1.0) == float("inf")


def test_go_back_n_is_what_recovers_a_middle_loss() -> None:
    """A mid-stream loss with the retry timer out of reach: only go-back-N on the NAK can
    deliver the data. The same run with a requester that resends only the NAKed packet
    (selective repeat against an in-order responder) must fail."""

    class ResendOnlyNaked(Requester):
        resume_at = -1

        def on_nak(self, psn: int, now: float) -> None:
            seq = self.seq_of(psn)
            if self.acked_seq <= seq < self.high_seq:
                self._progress(seq)
                self.resume_at, self.next_seq = self.high_seq, seq   # that packet only

        def on_sent(self, seq: int, ackreq: bool, now: float) -> None:
            super().on_sent(seq, ackreq, now)
            if self.resume_at > self.next_seq:                       # then new data again
                self.next_seq, self.resume_at = self.resume_at, -1

    def run(requester: Optional[type[Requester]]) -> Loopback:
        once = {5}
        qp = sender(messages=4, retry_timeout_s=100.0)
        if requester is not None:
            qp.rc = requester(qp.rc.params)
        lb = Loopback(qp, drop_data=lambda info, n: info.psn in once and not once.discard(info.psn))
        lb.run(0.5)
        return lb

    lb = run(None)
    assert_all_delivered_in_order(lb, 16, 4)
    assert lb.qp.counters.timeouts == 0 and lb.qp.counters.retransmitted_pkts == 11
    broken = run(ResendOnlyNaked)
    assert broken.delivered == list(range(6)) and not broken.qp.done
    assert broken.qp.counters.retransmitted_pkts == 1


def test_window_bounds_outstanding_packets() -> None:
    qp = sender(messages=4, window_pkts=5)
    sent = [qp.poll(0.0) for _ in range(8)]
    assert sum(f is not None for f in sent) == 5 and qp.rc.outstanding == 5
    assert parse_roce(sent[4]).ackreq                      # the window-filling packet asks
    lb = Loopback(sender(messages=4, window_pkts=5))
    lb.run(1.0)
    assert_all_delivered_in_order(lb, 16, 4)


def test_requester_and_responder_edge_cases() -> None:
    r = Requester(RcParams(retry_count=1))
    for seq in range(4):
        r.on_sent(seq, seq == 3, now=0.0)
    assert r.on_ack(0xFFFFFF, 0.0) == 0 and r.on_ack(7, 0.0) == 0      # stale, unsent
    r.on_nak(0, 0.1)                                        # no progress: retry 1
    assert (r.next_seq, r.retries, r.state) == (0, 1, "RTS")
    r.on_nak(0, 0.2)                                        # retry 2 > retry_count
    assert r.state == QP_ERROR and "NAK" in r.error and not r.window_open()
    f = Requester()
    f.on_sent(0, True, 0.0)
    f.on_fatal_nak(0x62)
    assert f.state == QP_ERROR and "0x62" in f.error
    resp = Responder(expected_psn=0xFFFFFF)
    assert [resp.on_data(p, True, False) for p in (0xFFFFFF, 1, 2, 0, 1)] == \
        ["accept", "nak", "out_of_sequence", "accept", "accept"]
    assert resp.msn == 3 and resp.take_ack() is None       # nothing asked for an ACK
    with pytest.raises(ValueError):
        RcParams(window_pkts=0)
