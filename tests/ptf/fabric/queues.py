"""Building an egress queue on purpose, the same way on p4sim and BMv2 (test helper).

Both targets fix a packet's departure time when it is enqueued, ``max(now, previous
departure + 1/rate)`` (BMv2's rate-limited queueing logic; p4sim's traffic manager does
the same). So with the queue of a port drained at ``rate_pps`` through the target's own
runtime (:mod:`testbed.control`), a *primer* packet leaves at once, and every packet that
arrives within ``1/rate_pps`` after it waits behind the ones before it: a burst sent
right after the primer is seen leaving sees queue depths 0, 1, 2, … exactly (BMv2's
``enq_qdepth`` is the depth before the push). The burst then drains at ``rate_pps``.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Optional

import ptf.testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

SLOW_RATE_PPS = 4
"""0.25 s between departures: the burst has a quarter of a second to queue (it takes
2-3 ms a packet to send; the labs' SlowQueue gives 0.2 s), and a burst of 8 drains in 2 s."""


def poll_ip(test: Any, port: int, timeout_s: float,
            match: Callable[[Ether], bool]) -> Optional[Ether]:
    """The next IPv4 frame out of ``port`` for which ``match`` holds, within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        res = tu.dp_poll(test, device_number=0, port_number=port,
                         timeout=max(0.05, min(0.5, deadline - time.monotonic())))
        if isinstance(res, test.dataplane.PollSuccess):
            pkt = Ether(res.packet)
            if IP in pkt and match(pkt):
                return pkt
    return None


def send_after_primer(test: Any, ctl: Any, in_port: int, out_port: int, primer: Ether,
                      burst: list[Ether], rate_pps: int = SLOW_RATE_PPS) -> list[Ether]:
    """Drain ``out_port`` at ``rate_pps``, send ``primer`` into ``in_port`` and wait until it
    leaves ``out_port``, then send ``burst``; returns the burst as received, in order
    (the queue rate is back to unlimited on return)."""
    ctl.set_queue_rate(rate_pps, port=out_port)
    try:
        tu.send_packet(test, in_port, primer)
        first = poll_ip(test, out_port, 5,
                        lambda p: UDP in p and p[UDP].sport == primer[UDP].sport)
        test.assertIsNotNone(first, "the primer packet did not leave")
        sports = {p[UDP].sport for p in burst}
        for pkt in burst:
            tu.send_packet(test, in_port, pkt)
        got: list[Ether] = []
        deadline = time.monotonic() + 5 + len(burst) / rate_pps
        while len(got) < len(burst) and time.monotonic() < deadline:
            pkt = poll_ip(test, out_port, deadline - time.monotonic(),
                          lambda p: UDP in p and p[UDP].sport in sports)
            if pkt is not None:
                got.append(pkt)
        test.assertEqual(len(got), len(burst), "packets of the burst lost")
        return got
    finally:
        ctl.set_queue_rate(0, port=out_port)
