"""The loop split of ``gor.fast_loop`` (:mod:`bench.gor_fast_bench`): a moved flow's first
packet found in a switch capture by its new 5-tuple (not by an older packet, not by
another port or address), and the three legs of the loop taken from a decision log."""
from __future__ import annotations

from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from bench.gor_fast_bench import first_flow_ts, loop_legs


def _pkt(src: str, dst: str, sport: int, ts: float) -> Ether:
    p = Ether() / IP(src=src, dst=dst) / UDP(sport=sport, dport=4791)
    p.time = ts
    return p


def test_first_packet_of_the_new_five_tuple(tmp_path: Path) -> None:
    pcap = tmp_path / "b0r0l0-eth4_out.pcap"
    wrpcap(str(pcap), [_pkt("10.0.0.1", "10.1.0.1", 50000, 99.0),      # before the order
                       _pkt("10.0.0.1", "10.1.0.1", 49152, 100.01),    # the old port
                       _pkt("10.0.0.2", "10.1.0.1", 50000, 100.02),    # another source
                       _pkt("10.0.0.1", "10.1.0.1", 50000, 100.05),
                       _pkt("10.0.0.1", "10.1.0.1", 50000, 100.07)])
    ts = first_flow_ts(pcap, "10.0.0.1", "10.1.0.1", 50000, since=100.0)
    assert ts is not None and abs(ts - 100.05) < 1e-6
    assert first_flow_ts(pcap, "10.0.0.1", "10.1.0.1", 50001, since=100.0) is None
    assert first_flow_ts(tmp_path / "missing.pcap", "10.0.0.1", "10.1.0.1", 50000, 0.0) is None


def test_the_legs_belong_to_the_move_confirmed_last() -> None:
    ev = [{"event": "alarm_raised", "ts": 10.0},
          {"event": "order_sent", "order_id": "move-1", "ts": 10.002},
          {"event": "order_sent", "order_id": "move-2", "ts": 10.004},
          {"event": "order_confirmed", "order_id": "move-2", "ts": 10.050},
          {"event": "order_confirmed", "order_id": "move-1", "ts": 10.080}]
    wires = {"move-1": 10.070, "move-2": 10.040}
    legs = loop_legs(ev, lambda sent: wires[sent["order_id"]])
    assert legs == {"order": 2.0, "wire": 68.0, "confirm": 10.0}
    assert sum(legs.values()) == 80.0                    # the story's loop_s, in ms
    assert loop_legs(ev, lambda sent: None) is None      # no packet captured: not split
    assert loop_legs(ev[:3], lambda sent: 10.01) is None  # nothing confirmed
