"""GOR elephants: flow table from flow_sample_t digests, rates, aging, Top-N, bad digests."""
from __future__ import annotations

import ipaddress

from controller.gor.decisions import FlowKey
from controller.gor.elephants import FlowSample, FlowTable

NAMES = {1: "b0r0l0", 201: "s1"}


def digest(sport: int, length: int = 1000, switch_id: int = 1, egress: int = 3,
           src: str = "10.0.0.1", dst: str = "10.1.0.1") -> list[int]:
    return [switch_id, int(ipaddress.IPv4Address(src)), int(ipaddress.IPv4Address(dst)), 17, sport,
            4791, 1, egress, 7, length]


def test_rate_estimate_and_ranking() -> None:
    t = FlowTable(NAMES, one_in_n=100, window_s=1.0)
    for i in range(10):                       # flow A: 10 samples of 1000 B
        t.add(digest(50000), 0.05 * i)
    for i in range(4):                        # flow B: 4 samples of 1500 B
        t.add(digest(50001, 1500), 0.05 * i)
    t.add(digest(50002, egress=4), 0.1)        # another link
    top = t.top(10, ("b0r0l0", 3), t_s=0.5)
    assert [e.flow.sport for e in top] == [50000, 50001]
    assert top[0].rate_bps == 10 * 1000 * 8 * 100 / 1.0
    assert top[1].rate_bps == 4 * 1500 * 8 * 100
    assert t.top(1, ("b0r0l0", 3), 0.5)[0].flow == FlowKey("10.0.0.1", "10.1.0.1", 17, 50000, 4791)
    assert {e.flow.sport for e in t.top(10, None, 0.5)} == {50000, 50001, 50002}


def test_per_link_sampling_ratio_and_window() -> None:
    t = FlowTable(NAMES, one_in_n=100, window_s=1.0)
    t.set_sampling(("b0r0l0", 3), 10)
    t.add(digest(50000), 0.0)
    t.add(digest(50000), 0.9)
    assert t.rate_bps(FlowKey("10.0.0.1", "10.1.0.1", 17, 50000, 4791), ("b0r0l0", 3), 1.0) == 2 * 8000 * 10
    # the sample at t=0 leaves the window
    assert t.rate_bps(FlowKey("10.0.0.1", "10.1.0.1", 17, 50000, 4791), ("b0r0l0", 3), 1.5) == 8000 * 10


def test_aging() -> None:
    t = FlowTable(NAMES, max_age_s=2.0)
    t.add(digest(50000), 0.0)
    t.add(digest(50001), 3.0)
    assert t.age(4.0) == 1
    assert len(t) == 1 and t.top(5, None, 4.0)[0].flow.sport == 50001


def test_malformed_samples_counted_and_ignored() -> None:
    t = FlowTable(NAMES)
    bad = [digest(50000)[:-1],                       # a field missing
           digest(50000, switch_id=99),              # unknown switch
           digest(50000, egress=600),                # does not fit bit<9>
           digest(50000, length=0),                  # empty packet
           {"switch_id": 1},                         # named fields, incomplete
           [1, -1, 2, 17, 1, 2, 3, 4, 5, 6]]         # negative
    for d in bad:
        assert t.add(d, 0.0) is None
    assert t.malformed == len(bad) and len(t) == 0
    assert t.add(digest(50000), 0.0) is not None and len(t) == 1


def test_named_digest_fields() -> None:
    names = ["switch_id", "src_addr", "dst_addr", "protocol", "src_port", "dst_port", "ingress_port",
             "egress_port", "qdepth", "packet_length"]
    s = FlowSample.from_digest(dict(zip(names, digest(1234))))
    assert s.flow.sport == 1234 and s.egress_port == 3
