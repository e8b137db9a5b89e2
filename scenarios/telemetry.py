"""Fabric telemetry for the testbed: the controller's poller (:mod:`controller.telemetry.poller`)
seen from ``topo``, so scenarios and reports poll the switches exactly as GOR does.

The controller owns switch polling (counters, the queue-depth histogram, utilisation from
counter deltas, stale switches, counter resets); this module only re-exports it under the
names the testbed has always used. What is testbed-specific stays in the testbed's own
modules: which queue rates shape the links (``scenarios.common``) and how a run is reported
(``scenarios.report``).

>>> from scenarios.telemetry import PortReading, delta
>>> delta(PortReading(100, 64000, 0, 3), PortReading(300, 192000, 5, 20)).tx_pkts
200
"""
from __future__ import annotations

from controller.telemetry.poller import (ECN_COUNTER, QDEPTH_HIST_COUNTER, TX_COUNTER, LinkId,
                                      LinkSample, PolledLink, PortReading, Reader,
                                      TelemetryPoller, TelemetrySeries, delta, fabric_links,
                                      p4rt_reader, utilisation)

__all__ = [
    "ECN_COUNTER", "LinkId", "LinkSample", "PolledLink", "PortReading", "QDEPTH_HIST_COUNTER",
    "Reader", "TX_COUNTER", "TelemetryPoller", "TelemetrySeries", "delta", "fabric_links",
    "p4rt_reader", "utilisation",
]
