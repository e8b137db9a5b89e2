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

  On a faster link :func:`elephants_for_rate` scales the threshold with the link's rate
  (an elephant is a flow of at least :data:`ELEPHANT_SHARE` of it), so that a reported
  rate is measured over a tenth of a second or more whatever the speed: 20 packets of a
  3,000 packets/s flow span under 7 ms, and the testbed's switches, descheduled for a few
  milliseconds on a busy machine, then hand a burst of them on within microseconds
  (issue 32, branch i32-loop: reported rates of 5 to 45 times the uplink's capacity at
  3,000 packets/s per elephant, each one a decision round).

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
ELEPHANT_SHARE = 0.05
"""The smallest share of its link a flow must send, over the elephant window, to count
as an elephant once :func:`elephants_for_rate` scales the threshold (below it the
default's 20 packets rule: 40 packets/s, ~12 % of the old testbed's 343-packet/s uplinks)."""


def elephants_for_rate(link_rate_pps: float, base: ElephantConfig = DEFAULT_ELEPHANTS,
                       share: float = ELEPHANT_SHARE) -> ElephantConfig:
    """``base`` with ``threshold_pkts`` raised to ``share`` of what a link draining
    ``link_rate_pps`` carries in the elephant window (never below ``base``'s), and
    ``alarm_min_pkts`` one above it as in :data:`DEFAULT_ELEPHANTS` (the elephants past
    the threshold only). A flow's reported rate is then measured over at least
    ``threshold_pkts - 1`` gaps: 428 at 17,143 packets/s, 142 ms of a 3,000 packets/s flow.

    >>> elephants_for_rate(343) == DEFAULT_ELEPHANTS
    True
    >>> elephants_for_rate(17143).table_params()
    {'threshold_pkts': 429, 'window_us': 500000, 'alarm_min_pkts': 430}
    >>> elephants_for_rate(-1)
    Traceback (most recent call last):
    ValueError: elephants: link rate -1 packets/s is not positive
    """
    if not link_rate_pps > 0 or not 0 < share <= 1:
        raise ValueError(f"elephants: link rate {link_rate_pps:g} packets/s is not positive"
                         if not link_rate_pps > 0 else f"elephants: share {share:g} is outside (0, 1]")
    pkts = max(base.threshold_pkts, round(link_rate_pps * base.window_us / 1e6 * share))
    if pkts == base.threshold_pkts:
        return base
    return ElephantConfig(threshold_pkts=pkts, window_us=base.window_us,
                          alarm_min_pkts=max(base.alarm_min_pkts, pkts + 1))


def alarm_entry(port: int, levels: AlarmLevels) -> Entry:
    """``FabricEgress.alarms.config`` of egress ``port``."""
    return Entry(ALARM_TABLE, {"standard_metadata.egress_port": port}, ALARM_ACTION,
                 levels.table_params())


def elephant_entry(port: int, cfg: ElephantConfig) -> Entry:
    """``FabricIngress.elephants.config`` of egress ``port``."""
    return Entry(ELEPHANT_TABLE, {"standard_metadata.egress_spec": port}, ELEPHANT_ACTION,
                 cfg.table_params())


__all__ = ["DEFAULT_ALARM_LEVELS", "DEFAULT_ELEPHANTS", "ELEPHANT_SHARE", "alarm_entry", "elephant_entry",
           "elephants_for_rate"]
