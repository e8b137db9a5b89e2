"""QoS, ECN and PFC configuration of the fabric plan: the DSCP → priority map, the ECN
marking and PFC thresholds written on every port, and their table entries.

Defaults: RoCE data (DSCP 26) → priority 3, CNP (DSCP 48) → priority 6; ECN RED between
8 and 32 packets with pmax 51/255 ≈ 20 %; PFC XOFF at 32, XON at 16 packets, pause
65535 quanta.

Example::

    >>> ecn_entry(3, EcnConfig(kmin_pkts=10, kmax_pkts=None)).action
    'FabricEgress.ecn.set_ecn_threshold'
    >>> pfc_entry(3, PfcConfig()).params["xoff_pkts"]
    32
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from controller.fabric.entries import T_ECN, T_PFC, T_QOS, Entry

DSCP_TO_PRIORITY: dict[int, int] = {26: 3, 48: 6}
"""RoCE data (DSCP 26, AF31) → priority 3; CNP (DSCP 48, CS6) → priority 6."""


@dataclass(frozen=True, slots=True)
class EcnConfig:
    """ECN marking on every egress port: RED between ``kmin_pkts`` and ``kmax_pkts`` with
    ``pmax_per_255`` at ``kmax``; ``kmax_pkts=None`` marks every packet from ``kmin_pkts``.

    >>> EcnConfig().kmin_pkts, EcnConfig(kmin_pkts=10, kmax_pkts=None).kmax_pkts
    (8, None)
    """

    kmin_pkts: int = 8
    kmax_pkts: Optional[int] = 32
    pmax_per_255: int = 51


@dataclass(frozen=True, slots=True)
class PfcConfig:
    """PFC on every ingress port: PAUSE when the port's packets in the switch reach
    ``xoff_pkts``, RESUME at ``xon_pkts``, pausing for ``pause_quanta`` (512 bit times each).

    >>> PfcConfig().xoff_pkts > PfcConfig().xon_pkts
    True
    """

    xoff_pkts: int = 32
    xon_pkts: int = 16
    pause_quanta: int = 0xFFFF


def qos_entries() -> list[Entry]:
    """``qos.dscp_to_priority``: one entry per :data:`DSCP_TO_PRIORITY` item, by DSCP.

    >>> [e.params["prio"] for e in qos_entries()]
    [3, 6]
    """
    return [Entry(T_QOS, {"hdr.ipv4.dscp": dscp}, "FabricIngress.qos.set_priority",
                  {"prio": prio})
            for dscp, prio in sorted(DSCP_TO_PRIORITY.items())]


def ecn_entry(port: int, ecn: EcnConfig) -> Entry:
    """``FabricEgress.ecn.thresholds`` of egress ``port``: RED, or a plain threshold when
    ``ecn.kmax_pkts`` is None."""
    match = {"standard_metadata.egress_port": port}
    if ecn.kmax_pkts is None:
        return Entry(T_ECN, match, "FabricEgress.ecn.set_ecn_threshold",
                     {"kmin_pkts": ecn.kmin_pkts})
    return Entry(T_ECN, match, "FabricEgress.ecn.set_ecn_red",
                 {"kmin_pkts": ecn.kmin_pkts, "kmax_pkts": ecn.kmax_pkts,
                  "pmax_per_255": ecn.pmax_per_255})


def pfc_entry(port: int, pfc: PfcConfig) -> Entry:
    """``FabricIngress.pfc.thresholds`` of ingress ``port``."""
    return Entry(T_PFC, {"standard_metadata.ingress_port": port},
                 "FabricIngress.pfc.set_thresholds",
                 {"xoff_pkts": pfc.xoff_pkts, "xon_pkts": pfc.xon_pkts,
                  "pause_quanta": pfc.pause_quanta})


__all__ = ["DSCP_TO_PRIORITY", "EcnConfig", "PfcConfig", "ecn_entry", "pfc_entry", "qos_entries"]
