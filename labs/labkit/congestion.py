"""Building a queue on purpose, for checks that need congestion (p4sim only).

A lab cannot rely on timing to make a queue build. :class:`QueueHold` makes it exact: an
802.1Qbb PAUSE sent *into* a switch port stops that port's egress queue of one priority
(p4sim's MAC honours PAUSE; the port's line rate is lowered so that 65535 quanta last
half a minute), so a burst sent meanwhile sees queue depths 0, 1, 2, … exactly. Leaving
the ``with`` block sends the RESUME (quanta 0) and restores the line rate. BMv2 has no
PFC: there the hold raises :class:`LabError` and the lab says the part is p4sim-only.

Example::

    >>> with QueueHold(sw, port=2, priority=0):                       # doctest: +SKIP
    ...     for f in burst: sw.send(1, f)
    ...     wait_until(lambda: queue_depth(sw, 2) == len(burst), 5, "the burst queued")
"""
from __future__ import annotations

import time
from typing import Any, Callable

from host.nic.pfc import build_pause
from labs.labkit.build import LabError
from labs.labkit.switch import LabSwitch
from p4sim.switchd.control import ControlClient

HOLD_LINE_RATE_GBPS = 0.001     # 65535 quanta x 512 bit times = 33.5 s at 1 Mb/s
NORMAL_LINE_RATE_GBPS = 10.0
PEER_MAC = "02:00:00:aa:00:fe"
POLL_S = 0.01


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll ``condition`` until it holds; :class:`LabError` naming ``what`` after
    ``timeout_s`` (a bounded readiness probe, not a fixed wait)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise LabError(f"timed out after {timeout_s:.0f} s waiting for: {what}")
        time.sleep(POLL_S)


def control(sw: LabSwitch) -> ControlClient:
    """p4sim's control API of ``sw`` (queue rates, line rate, queue stats)."""
    if not sw.control_addr:
        raise LabError("this part needs p4sim's queue control API (not available on BMv2)")
    return ControlClient(sw.control_addr)


def queue_state(sw: LabSwitch, port: int, priority: int = 0) -> dict[str, Any]:
    """p4sim's stats of one egress queue (``depth``, ``paused``, ``rate_pps`` …)."""
    with control(sw) as ctl:
        return dict(ctl.queue_stats(port)[port]["queues"][priority])


class QueueHold:
    """Hold the egress queue (``port``, ``priority``) of a p4sim lab switch (see module)."""

    def __init__(self, sw: LabSwitch, port: int, priority: int = 0,
                 timeout_s: float = 5.0) -> None:
        self.sw, self.port, self.priority, self.timeout_s = sw, port, priority, timeout_s

    def __enter__(self) -> "QueueHold":
        with control(self.sw) as ctl:
            ctl.set_line_rate(HOLD_LINE_RATE_GBPS, port=self.port)
        self.sw.send(self.port, build_pause(PEER_MAC, {self.priority: 0xFFFF}))
        wait_until(lambda: bool(queue_state(self.sw, self.port, self.priority)["paused"]),
                   self.timeout_s, f"port {self.port} priority {self.priority} to pause")
        return self

    def depth(self) -> int:
        """Packets waiting in the held queue now."""
        return int(queue_state(self.sw, self.port, self.priority)["depth"])

    def __exit__(self, *exc: object) -> None:
        self.sw.send(self.port, build_pause(PEER_MAC, {self.priority: 0}))
        with control(self.sw) as ctl:
            ctl.set_line_rate(NORMAL_LINE_RATE_GBPS, port=self.port)
