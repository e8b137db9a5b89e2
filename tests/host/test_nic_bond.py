"""The dual-port NIC (host.nic.bond): the tx-port hash, per-QP binding, link monitoring and
failover of RC QPs with nothing lost.

Two bonded NICs are joined port to port by two in-process "cables" (socket pairs) on a
fake clock; a cable can be cut (its carrier off, every frame on it lost) as a dead NIC port
or ToR would be. No Mininet: ~1 s.
"""
from __future__ import annotations

import socket
import struct
from typing import Optional

import pytest

from host.nic.bond import (MIIMON_S, BondedIO, FlowKey, LinkMonitor, TxAffinity, l34_hash,
                           parse_lag_ports)
from host.nic.dcqcn import DcqcnParams
from host.nic.frames import FlowSpec
from host.nic.io import DatagramIO, NicPort
from host.nic.qp import Receiver, SenderQP
from host.nic.rc import RcParams

SRC, DST = "10.0.0.1", "10.1.0.1"


def kernel_l34(src: str, dst: str, sport: int, dport: int, slaves: int) -> int:
    """bond_xmit_hash for layer3+4 as the kernel computes it on x86-64, written again
    from the kernel's C (u32 loads of the packet's bytes, little endian) to check the
    module's version, which works from integers."""
    ports, = struct.unpack("<I", struct.pack("!HH", sport, dport))
    saddr, = struct.unpack("<I", socket.inet_aton(src))
    daddr, = struct.unpack("<I", socket.inet_aton(dst))
    h = ports ^ daddr ^ saddr
    h ^= h >> 16
    h ^= h >> 8
    return (h >> 1) % slaves


def test_l34_hash_is_the_kernels() -> None:
    for sport in range(0, 65536, 97):
        for src, dst in ((SRC, DST), ("10.0.0.2", "10.1.0.1"), ("10.3.1.7", "10.0.1.200")):
            key = FlowKey.of(src, dst, sport)
            assert TxAffinity().port_of(key) == kernel_l34(src, dst, sport, 4791, 2)
            assert l34_hash(key.src_ip, key.dst_ip, sport, 4791) % 3 == \
                kernel_l34(src, dst, sport, 4791, 3)


def test_source_ports_spread_over_both_ports_and_the_low_bit_is_dropped() -> None:
    aff = TxAffinity()
    ports = [aff.port_of(FlowKey.of(SRC, DST, s)) for s in range(49152, 49152 + 1024)]
    assert ports.count(0) == ports.count(1) == 512
    # the '>> 1' of b5f862180d70: consecutive even/odd source ports land on one port
    assert all(ports[i] == ports[i + 1] for i in range(0, 1024, 2))


def test_binding_overrides_the_hash_and_is_checked() -> None:
    aff = TxAffinity()
    key = FlowKey.of(SRC, DST, 49152)
    other = 1 - aff.port_of(key)
    aff.bind(key, other)
    assert aff.port_of(key) == other
    with pytest.raises(ValueError, match="ports 0..1"):
        aff.bind(key, 2)
    with pytest.raises(ValueError, match="tx policy"):
        TxAffinity(policy="layer2")
    assert parse_lag_ports("-,1", 2) == [None, 1]
    with pytest.raises(ValueError, match="2 entries for 3 QPs"):
        parse_lag_ports("0,1", 3)


def test_round_robin_policy_alternates_in_creation_order() -> None:
    aff = TxAffinity(policy="rr")
    assert [aff.port_of(FlowKey.of(SRC, DST, s)) for s in (7, 3, 9, 7, 1)] == [0, 1, 0, 0, 1]


def test_link_monitor_downdelay_and_updelay() -> None:
    carrier = [True]
    mon = LinkMonitor([lambda: carrier[0]], miimon_s=0.1, downdelay_s=0.2, updelay_s=0.1)
    mon.poll(0.0)
    carrier[0] = False
    seen = [(t, mon.poll(t), mon.up[0]) for t in (0.05, 0.1, 0.2, 0.3)]
    # ticks at 0.1 (carrier off seen), 0.2, 0.3 (off for 0.2 s: down)
    assert seen == [(0.05, False, True), (0.1, False, True), (0.2, False, True), (0.3, True, False)]
    carrier[0] = True
    assert (mon.poll(0.4), mon.poll(0.5), mon.up[0]) == (False, True, True)
    assert [e[2] for e in mon.events] == ["down", "up"]
    with pytest.raises(ValueError, match="miimon"):
        LinkMonitor([lambda: True], miimon_s=0)


class Cable:
    """A cable between port i of NIC a and port i of NIC b: a socket pair per end and a
    relay that loses everything while the cable is cut."""

    def __init__(self) -> None:
        self.a, self.a_sw = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.b, self.b_sw = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        for s in (self.a, self.b, self.a_sw, self.b_sw):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            s.setblocking(False)
        self.up = True
        self.carried = 0

    def relay(self) -> None:
        for src, dst in ((self.a_sw, self.b_sw), (self.b_sw, self.a_sw)):
            while True:
                try:
                    frame = src.recv(65535)
                except BlockingIOError:
                    break
                if self.up:
                    dst.send(frame)
                    self.carried += 1


class DualPortPair:
    """Sender NIC (QPs on sports) ⇄ two cables ⇄ receiver NIC, both bonded."""

    def __init__(self, sports: list[int], messages: int, lag: Optional[dict[int, int]] = None,
                 miimon_s: float = MIIMON_S) -> None:
        self.cables = [Cable(), Cable()]
        self.now = 0.0
        clock = lambda: self.now  # noqa: E731
        self.delivered: dict[int, list[int]] = {}

        def bond(side: str) -> BondedIO:
            mon = LinkMonitor([lambda c=c: c.up for c in self.cables], miimon_s=miimon_s)
            return BondedIO([DatagramIO(getattr(c, side)) for c in self.cables], TxAffinity(),
                            mon, clock=clock)

        self.tx_bond, self.rx_bond = bond("a"), bond("b")
        for sport, port in (lag or {}).items():
            self.tx_bond.affinity.bind(FlowKey.of(SRC, DST, sport), port)
        self.rx = Receiver(on_deliver=lambda i: self.delivered.setdefault(i.dqpn, []).append(i.psn))
        self.tx = NicPort(self.tx_bond, line_rate_bps=1e8)
        self.qps = []
        for i, sport in enumerate(sports):
            flow = FlowSpec("02:00:00:00:00:01", "02:00:00:00:01:01", SRC, DST, sport, 7 + i)
            self.qps.append(self.tx.add_sender(SenderQP(
                flow, message_bytes=4096, mtu=1024, messages=messages,
                dcqcn=DcqcnParams(line_rate_pps=200.0), rate_limit=True,
                rc=RcParams(retry_timeout_s=0.05, retry_count=7))))
        self.rxp = NicPort(self.rx_bond, line_rate_bps=1e8, receiver=self.rx)

    def run(self, until_s: float, cut: Optional[tuple[float, int]] = None,
            dt: float = 0.001) -> None:
        while self.now < until_s and not all(q.done for q in self.qps):
            if cut is not None and self.now >= cut[0]:
                self.cables[cut[1]].up = False
            self.tx.step(self.now)
            for c in self.cables:
                c.relay()
            self.rxp.step(self.now)
            for c in self.cables:
                c.relay()
            self.now += dt


def test_qps_use_both_ports_by_hash_and_by_binding() -> None:
    sports = [49152, 49154]                      # hashed to ports 0 and 1
    pair = DualPortPair(sports, messages=5)
    pair.run(2.0)
    assert all(q.done for q in pair.qps)
    report = pair.tx_bond.report()
    assert [q["port"] for q in report["qps"]] == [0, 1] and report["moves"] == 0
    assert all(n > 0 for n in report["tx_frames"])
    bound = DualPortPair(sports, messages=5, lag={49152: 1})   # both on port 1 now
    bound.run(2.0)
    assert [q["port"] for q in bound.tx_bond.report()["qps"]] == [1, 1]
    assert bound.tx_bond.tx_frames[0] == 0


@pytest.mark.parametrize("miimon_s", [0.1, 0.02])
def test_a_cut_port_moves_its_qps_after_miimon_and_nothing_is_lost(miimon_s: float) -> None:
    sports = [49152, 49153, 49154, 49155]        # 2 QPs per port
    messages = 40
    pair = DualPortPair(sports, messages=messages, miimon_s=miimon_s)
    cut_at = 0.3
    pair.run(10.0, cut=(cut_at, 1))
    for i, q in enumerate(pair.qps):             # every QP finished, none in error
        assert q.done and q.report(pair.now)["qp_state"] == "RTS", q.report(pair.now)
        assert pair.delivered[7 + i] == list(range(messages * 4))   # every PSN once, in order
    rep = pair.tx_bond.report()
    assert rep["up"] == [True, False] and rep["moves"] == 2
    down_at = rep["events"][0]["t"]
    assert cut_at <= down_at <= cut_at + miimon_s + 0.002      # one miimon (+ one loop step)
    assert all(q["port"] == 0 for q in rep["qps"]) and [q["affinity"] for q in rep["qps"]] == [0, 0, 1, 1]
    assert pair.rx_bond.report()["up"] == [True, False]        # the receiver's ACKs moved too


def test_cli_refuses_a_bad_dual_port_setting(capsys: pytest.CaptureFixture[str]) -> None:
    from host.nic.cli import main
    base = ["send", "--dst-mac", "02:00:00:00:00:01", "--src-ip", SRC, "--dst-ip", DST,
            "--sport", "49152,49153", "--hold-port", "0", "--duration-s", "0"]
    assert main(base + ["--iface", "a-eth0,a-eth0p1,a-eth0p2"]) == 2
    assert "3 interfaces; a NIC has one or two ports" in capsys.readouterr().err
    assert main(base + ["--iface", "a-eth0,a-eth0p1", "--dst-mac", "1,2,3"]) == 2
    assert "--dst-mac: one MAC, or one per port" in capsys.readouterr().err


def test_a_qp_whose_acks_arrive_on_the_other_port_still_completes() -> None:
    """The sender transmits on its bound port 0 only, while the receiver's bond sends every
    ACK/NAK/CNP of that QP back by port 1 (the destination spine hashing it to the other
    leaf): the sender's bond must hand them to the QP, which then completes."""
    sport = 49152
    assert TxAffinity().port_of(FlowKey.of(SRC, DST, sport)) == 0
    pair = DualPortPair([sport], messages=20, lag={sport: 0})
    pair.rx_bond.affinity.bind(FlowKey.of(DST, SRC, sport), 1)   # the reverse 5-tuple
    pair.run(5.0)
    (qp,) = pair.qps
    assert qp.done and qp.report(pair.now)["qp_state"] == "RTS", qp.report(pair.now)
    assert pair.delivered[7] == list(range(20 * 4))
    assert pair.tx_bond.tx_frames[1] == 0 and pair.tx_bond.tx_frames[0] > 0
    assert pair.tx_bond.rx_frames[0] == 0 and pair.tx_bond.rx_frames[1] > 0
    assert pair.rx_bond.tx_frames[0] == 0
