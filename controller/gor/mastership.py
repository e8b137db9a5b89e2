"""GOR and its mastership of each switch: who is primary, said in the metrics and handed to
the switch recovery.

The P4Runtime client (:class:`controller.p4rt.SwitchConnection`) follows the switch's
arbitration updates after it became primary: when the switch names another primary (a
second controller with a higher election id, or — on BMv2, which checks no names — any
client its CA trusts) ``is_primary`` turns False and ``mastership_lost_to`` holds that
client's election id. :func:`mastership_problem` turns that into the reason the
recovery (:mod:`controller.gor.recovery`) logs with ``switch_lost``: GOR stops acting on
the switch (a lost switch carries no new path) and reconnects with its own election id on
every pass, which succeeds once the other client has gone (the switch's primary is the
live stream with the highest election id), then checks and re-programs it
(``switch_back``). :class:`MastershipCollector` adds to GOR's metrics:

* ``gor_switch_primary{switch}`` (gauge) — 1 while GOR's connection is the primary;
* ``gor_mastership_lost_total{switch}`` (counter) — times the switch named another primary.

>>> class Conn:
...     is_primary, mastership_lost_to, mastership_losses, election_id = False, 11, 1, None
>>> mastership_problem(Conn())
'mastership lost: election id 11 is primary now'
>>> col = MastershipCollector(lambda: {"s0": Conn()})
>>> [(m.name, m.samples[0].value) for m in col.collect()]
[('gor_switch_primary', 0.0), ('gor_mastership_lost', 1.0)]
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterator, Mapping, Optional

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


def mastership_problem(conn: Any) -> Optional[str]:
    """Why GOR is not the primary on ``conn`` (None while it is, or when the connection
    does not say)."""
    if conn is None or getattr(conn, "is_primary", True) is not False:
        return None
    if getattr(conn, "stream_alive", True) is False:
        return None                          # a closed stream is the recovery's other case
    other = getattr(conn, "mastership_lost_to", None)
    return "mastership lost: " + (f"election id {other} is primary now" if other is not None
                                  else "the switch named another primary")


class MastershipCollector(Collector):
    """The two series of the module docstring, from the connections ``connections()``
    returns at each scrape; losses are summed over the connections a switch has had."""

    def __init__(self, connections: Callable[[], Mapping[str, Any]]) -> None:
        self._connections = connections
        self._lock = threading.Lock()
        self._past: dict[str, int] = {}               # losses of connections replaced since
        self._seen: dict[str, tuple[int, int]] = {}   # switch → (id(conn), its losses)

    def collect(self) -> Iterator[Metric]:
        primary = GaugeMetricFamily("gor_switch_primary", "1 while GOR is the switch's primary "
                                    "P4Runtime client.", labels=["switch"])
        lost = CounterMetricFamily("gor_mastership_lost", "Times the switch named another "
                                   "primary than GOR.", labels=["switch"])
        with self._lock:
            for sw, conn in sorted(dict(self._connections()).items()):
                losses = int(getattr(conn, "mastership_losses", 0) or 0)
                was = self._seen.get(sw)
                if was is not None and was[0] != id(conn):
                    self._past[sw] = self._past.get(sw, 0) + was[1]
                self._seen[sw] = (id(conn), losses)
                ok = bool(getattr(conn, "is_primary", False)) and getattr(conn, "stream_alive", True)
                primary.add_metric([sw], 1.0 if ok else 0.0)
                lost.add_metric([sw], float(self._past.get(sw, 0) + losses))
        yield primary
        yield lost


def attach_collector(metrics: Any, connections: Callable[[], Mapping[str, Any]]) -> None:
    """Register a :class:`MastershipCollector` on GOR's metrics registry, once per
    metrics object (a restarted GOR keeps its metrics)."""
    registry = getattr(metrics, "registry", None)
    if registry is None or getattr(metrics, "_mastership_attached", False):
        return
    registry.register(MastershipCollector(connections))
    metrics._mastership_attached = True


__all__ = ["MastershipCollector", "attach_collector", "mastership_problem"]
