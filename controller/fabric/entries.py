"""Table entries of the fabric plan by name: the :class:`Entry` record, the names of the
``p4src/fabric.p4`` tables the plan writes, and builders for the forwarding entries
(switch info, ECMP algorithm, next hops, routes, proxy ARP, port MACs).

Names are P4Info names; :class:`controller.fabric_setup.FabricProgrammer` turns each
:class:`Entry` into a P4Runtime ``TableEntry`` on the switch's own P4Info.

Example::

    >>> route_entry("10.0.0.0/8", group=1).action
    'FabricIngress.forwarding.set_ecmp_group'
    >>> nexthop_entry(3, "00:00:00:00:01:03", "00:00:00:00:02:01").match
    {'meta.nexthop_id': 3}
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional

if TYPE_CHECKING:
    from controller.p4rt.codec import Value

T_SWITCH = "FabricIngress.switch_info.config"
T_ALGORITHM = "FabricIngress.ecmp.algorithm"
T_ARP = "FabricIngress.arp.arp_proxy"
T_QOS = "FabricIngress.qos.dscp_to_priority"
T_ROUTES = "FabricIngress.forwarding.routes"
T_NEXTHOPS = "FabricIngress.forwarding.nexthops"
T_GROUPS = "FabricIngress.ecmp.groups"
T_MEMBERS = "FabricIngress.ecmp.members"
T_PORT_MACS = "FabricEgress.port_macs"
T_ECN = "FabricEgress.ecn.thresholds"
T_PFC = "FabricIngress.pfc.thresholds"


@dataclass(frozen=True, slots=True)
class Entry:
    """One table entry by names: ``Entry(T_ROUTES, {"hdr.ipv4.dst_addr": "10.0.0.1/32"},
    "FabricIngress.forwarding.set_nexthop", {"nexthop_id": 1})``; ``default=True`` modifies
    the table's default entry."""

    table: str
    match: Mapping[str, Any]
    action: str
    params: Mapping[str, Value]
    default: bool = False


def switch_info_entry(switch_id: int, role_code: int, seed: int) -> Entry:
    """The default ``set_switch(switch_id, role, seed)`` of ``switch_info.config``.

    >>> switch_info_entry(200, 1, 7).default
    True
    """
    return Entry(T_SWITCH, {}, "FabricIngress.switch_info.set_switch",
                 {"switch_id": switch_id, "role": role_code, "ecmp_seed": seed}, default=True)


def algorithm_entry(algorithm: str) -> Entry:
    """The default action of ``ecmp.algorithm``: ``use_crc16`` or ``use_crc32``.

    >>> algorithm_entry("crc16").action
    'FabricIngress.ecmp.use_crc16'
    """
    return Entry(T_ALGORITHM, {}, f"FabricIngress.ecmp.use_{algorithm}", {}, default=True)


def nexthop_entry(port: int, src_mac: str, dst_mac: str) -> Entry:
    """Next hop **id = port number**: ``route_to(port, own port MAC, peer MAC)``."""
    return Entry(T_NEXTHOPS, {"meta.nexthop_id": port}, "FabricIngress.forwarding.route_to",
                 {"port": port, "src_mac": src_mac, "dst_mac": dst_mac})


def route_entry(prefix: str, nexthop: Optional[int] = None,
                group: Optional[int] = None) -> Entry:
    """A route of ``prefix`` to ECMP group ``group`` when given, else to next hop
    ``nexthop`` (0 when neither).

    >>> route_entry("10.0.0.1/32", nexthop=1).params
    {'nexthop_id': 1}
    """
    if group is not None:
        return Entry(T_ROUTES, {"hdr.ipv4.dst_addr": prefix},
                     "FabricIngress.forwarding.set_ecmp_group", {"group_id": group})
    return Entry(T_ROUTES, {"hdr.ipv4.dst_addr": prefix}, "FabricIngress.forwarding.set_nexthop",
                 {"nexthop_id": nexthop if nexthop is not None else 0})


def drop_route_entry(prefix: str) -> Entry:
    """A route of ``prefix`` that drops (``forwarding.drop``): a leaf's own subnet, whose
    every address that is not one of its NICs' ``/32``s is nobody's.

    >>> drop_route_entry("10.0.0.0/24").action
    'FabricIngress.forwarding.drop'
    """
    return Entry(T_ROUTES, {"hdr.ipv4.dst_addr": prefix}, "FabricIngress.forwarding.drop", {})


def arp_entry(target_ip: str, router_mac: str) -> Entry:
    """Proxy ARP: an ARP request for ``target_ip`` is answered with ``router_mac``."""
    return Entry(T_ARP, {"hdr.arp.target_proto_addr": target_ip},
                 "FabricIngress.arp.arp_reply", {"mac": router_mac})


def port_mac_entry(port: int, mac: str) -> Entry:
    """``FabricEgress.port_macs``: egress ``port`` → its own MAC."""
    return Entry(T_PORT_MACS, {"standard_metadata.egress_port": port},
                 "FabricEgress.set_port_mac", {"mac": mac})


__all__ = [
    "Entry", "T_ALGORITHM", "T_ARP", "T_ECN", "T_GROUPS", "T_MEMBERS", "T_NEXTHOPS", "T_PFC",
    "T_PORT_MACS", "T_QOS", "T_ROUTES", "T_SWITCH", "algorithm_entry", "arp_entry",
    "nexthop_entry", "port_mac_entry", "route_entry", "switch_info_entry",
]
