"""Data-plane monitoring entries of the fabric plan: the ECN alarm levels
(``FabricEgress.alarms.config``) and the heavy-hitter thresholds
(``FabricIngress.elephants.config``) of every switch-to-switch port.

The parameters and their meaning are :mod:`p4src.alarmmodel`'s (the contract of
``include/control/alarms.p4`` and ``elephants.p4``). Defaults, chosen for the fabric's
links whatever their speed:

* alarms: GOR's thresholds (NOTICE 1 % / 0.5 %, WARNING 5 % / 2.5 %, CRITICAL 20 % /
  10 % of packets marked) over windows of 100 ms that must hold 10 packets, a level held
  500 ms before it may fall (GOR's ``min_hold_s``);
* elephants: a flow that sends 20 packets within 500 ms of its first (40 packets/s on the
  testbed's emulated links, whose elephants send ~60/s: known ~0.33 s after it starts,
  its rate measured over 19 gaps; scale ``threshold_pkts`` with the link rate on real
  ones). Each elephant is reported about twice a second, and again when its port's
  alarm rises (``alarm_min_pkts`` 21: the elephants past the threshold only). A lower
  ``alarm_min_pkts`` reports younger flows at the alarm too, but then a round can run
  before the polls have measured the other uplinks' load: a leaf-restart story in CI
  moved three flows onto an uplink that looked idle and was not (bench/README.md).

Example::

    >>> alarm_entry(5, DEFAULT_ALARM_LEVELS).params["warning_pm"]
    50
    >>> elephant_entry(5, DEFAULT_ELEPHANTS).match
    {'standard_metadata.egress_spec': 5}
"""
from __future__ import annotations

from p4src.alarmmodel import (ALARM_ACTION, ALARM_TABLE, ELEPHANT_ACTION, ELEPHANT_TABLE,
                              AlarmLevels, ElephantConfig)

from controller.fabric.entries import Entry

DEFAULT_ALARM_LEVELS = AlarmLevels(window_us=100_000, hold_us=500_000, min_pkts=10)
DEFAULT_ELEPHANTS = ElephantConfig(threshold_pkts=20, window_us=500_000, alarm_min_pkts=21)


def alarm_entry(port: int, levels: AlarmLevels) -> Entry:
    """``FabricEgress.alarms.config`` of egress ``port``."""
    return Entry(ALARM_TABLE, {"standard_metadata.egress_port": port}, ALARM_ACTION,
                 levels.table_params())


def elephant_entry(port: int, cfg: ElephantConfig) -> Entry:
    """``FabricIngress.elephants.config`` of egress ``port``."""
    return Entry(ELEPHANT_TABLE, {"standard_metadata.egress_spec": port}, ELEPHANT_ACTION,
                 cfg.table_params())


__all__ = ["DEFAULT_ALARM_LEVELS", "DEFAULT_ELEPHANTS", "alarm_entry", "elephant_entry"]
