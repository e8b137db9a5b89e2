"""Building a queue on purpose, for checks that need congestion — the same way on p4sim
and BMv2.

A lab cannot rely on timing to make a queue build. :class:`SlowQueue` makes it exact with
what both targets have: the egress queue of one port (and priority) drains at
``rate_pps`` through the switch's own runtime (:meth:`LabSwitch.control`: p4sim's control
API, BMv2's Thrift ``set_queue_rate``). Both fix a packet's departure time when it is
enqueued, ``max(now, previous departure + 1/rate)``, so once a *primer* packet has left,
every packet that arrives within ``1/rate_pps`` waits behind the ones before it: a burst
sent at once sees queue depths 0, 1, 2, … exactly, then drains at ``rate_pps``. Leaving
the ``with`` block sets the rate back to unlimited (packets already queued keep their
departure times: :meth:`SlowQueue.drain_s` says how long they take).

Example::

    >>> with SlowQueue(sw, port=2, primer=frame, primer_port=1) as q:   # doctest: +SKIP
    ...     for f in burst: sw.send(1, f)
    ...     out = [sw.receive(2, q.gap_s * 3) for _ in burst]
"""
from __future__ import annotations

import time
from typing import Callable, Optional

from labs.labkit.build import LabError
from labs.labkit.switch import LabSwitch

SLOW_RATE_PPS = 5       # 0.2 s between departures: ample for a burst to queue, fast to drain
POLL_S = 0.01


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll ``condition`` until it holds; :class:`LabError` naming ``what`` after
    ``timeout_s`` (a bounded readiness probe, not a fixed wait)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise LabError(f"timed out after {timeout_s:.0f} s waiting for: {what}")
        time.sleep(POLL_S)


class SlowQueue:
    """Drain (``port``, ``priority``) of a lab switch at ``rate_pps`` (see the module).

    ``primer`` (a frame the lab's program forwards to ``port``, sent into
    ``primer_port``) is sent on entry and awaited on ``port``, so that the next packets
    queue behind each other from depth 0; without it the first packet of a burst leaves
    at once.
    """

    def __init__(self, sw: LabSwitch, port: int, priority: Optional[int] = None, *,
                 rate_pps: int = SLOW_RATE_PPS, primer: Optional[bytes] = None,
                 primer_port: int = 1, timeout_s: float = 5.0) -> None:
        self.sw, self.port, self.priority, self.rate_pps = sw, port, priority, rate_pps
        self.primer, self.primer_port, self.timeout_s = primer, primer_port, timeout_s

    @property
    def gap_s(self) -> float:
        """Seconds between two departures of the slow queue."""
        return 1.0 / self.rate_pps

    def drain_s(self, packets: int) -> float:
        """How long ``packets`` queued packets take to leave."""
        return packets * self.gap_s

    def _set(self, rate_pps: int) -> None:
        ctl = self.sw.control()
        try:
            ctl.set_queue_rate(rate_pps, port=self.port, priority=self.priority)
        finally:
            ctl.close()

    def __enter__(self) -> "SlowQueue":
        self._set(self.rate_pps)
        if self.primer is not None:
            self.sw.send(self.primer_port, self.primer)
            if self.sw.receive(self.port, self.timeout_s) is None:
                self._set(0)
                raise LabError(f"the primer packet did not leave port {self.port} within "
                               f"{self.timeout_s:.0f} s: is the port forwarded to?")
        return self

    def __exit__(self, *exc: object) -> None:
        self._set(0)
