"""Control-plane policing of the fabric plan (``p4src/include/control/arp.p4``): the rate
at which each switch port may send ARP punts (PacketIns, reason ``PUNT_ARP``) to the
controller.

A leaf answers a host's ARP requests for its gateway and its neighbours in the data plane
(proxy ARP, :mod:`controller.fabric.plan`) and punts every other ARP packet (a miss, a
reply, a gratuitous ARP). A compromised host sending ARP at line rate made every one a
PacketIn: on p4sim (sec-punt-s46, b1s1, 500,000 gratuitous replies in 3.2 s) the leaf
spent a core on them, its PacketIn backlog took 8.9 s to drain after the flood, GOR's
sample digests (same stream) were held up for as long (21 arrived in 14 s instead of
~100 a second) and a ping across the leaf's other ports went from 0.6 to 156 ms on
average. Real switches police punted traffic (CoPP); so does the plan:

* every port of every switch gets ``FabricIngress.arp.punt_meter[port]`` (a packets
  meter, MeterEntry MODIFY: BMv2 writes meter cells only by index) at
  :data:`DEFAULT_ARP_PUNT`; over it an ARP punt is dropped before the CPU port and counted
  in ``FabricIngress.arp.punt_drops[port]``. A switch port never sends ARP legitimately,
  so it gets the same bound as a host port.

The rate: a legitimate host's ARP for its gateway or a neighbour never reaches the
controller (answered by the leaf), so what a host legitimately punts is rare: a
gratuitous ARP when an address comes up, a request for an address outside the fabric.
Linux resolving a neighbour sends at most ``mcast_solicit`` (3) broadcast requests, one
per ``retrans_time_ms`` (1000 ms) (arp(7), the man-pages project: both defaults; the
testbed's kernel has them in /proc/sys/net/ipv4/neigh/default/). SONiC polices the whole
switch's ARP and ND trap group at 600 packets/s, burst 600 (sonic-buildimage
files/image_config/copp/copp_cfg.j2, ``queue4_group2``, sr_tcm, red_action drop).
:data:`DEFAULT_ARP_PUNT` gives each port 100 packets/s, burst 100: 33 neighbours a second
resolved through the controller by one host, and six host ports together at SONiC's
whole-switch bound.

The meter is a two-rate three-colour marker (v1model ``meter``); the plan writes
``pir = cir`` and ``pburst = cburst`` and the program drops YELLOW and RED alike, so it
is a single rate with a burst.

Example::

    >>> [(m.meter.rsplit(".", 1)[1], m.index, m.cir) for m in punt_meters([1, 2])]
    [('punt_meter', 1, 100), ('punt_meter', 2, 100)]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

ARP_PUNT_METER = "FabricIngress.arp.punt_meter"
"""The ARP punts' meter, one cell per ingress port (packets)."""
ARP_PUNT_DROPS_COUNTER = "FabricIngress.arp.punt_drops"
"""ARP punts the meter dropped, by ingress port (packets)."""


@dataclass(frozen=True, slots=True)
class PuntPolicer:
    """One port's bound on punts: ``rate_pps`` packets per second, ``burst_packets`` at
    once (both > 0).

    >>> PuntPolicer(100, 100)
    PuntPolicer(rate_pps=100, burst_packets=100)
    >>> PuntPolicer(0, 10)
    Traceback (most recent call last):
    ...
    ValueError: rate_pps: 0 (must be > 0)
    """

    rate_pps: int
    burst_packets: int

    def __post_init__(self) -> None:
        for name in ("rate_pps", "burst_packets"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name}: {value!r} (must be > 0)")


DEFAULT_ARP_PUNT = PuntPolicer(rate_pps=100, burst_packets=100)
"""Each port's ARP punt bound (module docstring: Linux's neighbour solicitation, SONiC's
CoPP default for ARP)."""


@dataclass(frozen=True, slots=True)
class MeterSetting:
    """One cell of an indexed meter and its P4Runtime ``MeterConfig`` (rates in units per
    second, bursts in units; written with MODIFY).

    >>> MeterSetting(ARP_PUNT_METER, 3, 100, 100, 100, 100).index
    3
    """

    meter: str
    index: int
    cir: int
    cburst: int
    pir: int
    pburst: int


def punt_meter_setting(port: int, policer: PuntPolicer = DEFAULT_ARP_PUNT) -> MeterSetting:
    """``arp.punt_meter[port]`` at ``policer`` (``pir = cir``, ``pburst = cburst``).

    >>> punt_meter_setting(2, PuntPolicer(10, 20))
    MeterSetting(meter='FabricIngress.arp.punt_meter', index=2, cir=10, cburst=20, pir=10, pburst=20)
    """
    return MeterSetting(ARP_PUNT_METER, port, policer.rate_pps, policer.burst_packets,
                        policer.rate_pps, policer.burst_packets)


def punt_meters(ports: Iterable[int], policer: PuntPolicer = DEFAULT_ARP_PUNT) -> list[MeterSetting]:
    """The ARP punt meter of every port in ``ports`` (port order), at ``policer``."""
    return [punt_meter_setting(p, policer) for p in sorted(ports)]


__all__ = ["ARP_PUNT_DROPS_COUNTER", "ARP_PUNT_METER", "DEFAULT_ARP_PUNT", "MeterSetting",
           "PuntPolicer", "punt_meter_setting", "punt_meters"]
