"""The IPv4 source guard of the fabric plan (``p4src/include/control/source_guard.p4``):
which leaf ports are guarded and which source addresses each may send.

A host holding a real testbed certificate could otherwise send frames with another host's
IPv4 source (sec-audit5, live: 40 of 40 spoofed frames delivered) and with them forge its
victim's peer's ACK/NAK/CNP, fill a receiver with flows from made-up sources, or feed
GOR's samples with a victim's 5-tuple. Real fabrics stop this at the access port (IP
source guard, strict uRPF on the ToR's host ports); so does this plan:

* every switch port whose peer is not a switch (a leaf's host port) is guarded:
  ``FabricIngress.source_guard.ports`` ``guard_port()``;
* on it, the address of every NIC cabled to that port is allowed:
  ``FabricIngress.source_guard.sources`` ``(port, NIC address)`` ``allow()``. A dual-port
  NIC has one address and two ports (``topo.model.NicInfo.ports``): it is allowed on both
  of its leaf ports (each on its own leaf), and only there.

Every source a legitimate host sends with is its NIC's address on that NIC's own ports:
the kernel's traffic (``testbed.net.host_commands``: one address per NIC, routes per rail
through that NIC only, no default route), the NIC emulator's QPs and their replies
(``host.nic``: the flow's own addresses), the monitor's probes (``monitor.prober``: the
probing NIC's address, on each port of a dual-port NIC). GOR's link probes and every
other packet_out skip the ingress pipeline, ARP and PFC frames are not IPv4: none of them
meets the guard. FORNAX runs on its own testbed of SmartNICs (``testbed.vpcnet``), whose
program checks its VMs' sources itself (``Decision.spoofed``); no fabric switch is on
its path.

Example::

    >>> from topo.model import build_fabric
    >>> fab = build_fabric()
    >>> leaf = next(s for s in fab.switches if s.name == "b0r0l0")
    >>> [(e.table.rsplit(".", 1)[1], dict(e.match)) for e in guard_entries(leaf, fab)][:3]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('ports', {'standard_metadata.ingress_port': 1}),
     ('sources', {'standard_metadata.ingress_port': 1, 'hdr.ipv4.src_addr': '10.0.0.1'}),
     ('ports', {'standard_metadata.ingress_port': 2})]
"""
from __future__ import annotations

import ipaddress
from typing import Container, Iterable, Mapping, Sequence

from controller.fabric.entries import Entry
from controller.fabric.topology import FabricLike, NicLike, SwitchLike, nic_attachments

T_GUARD_PORTS = "FabricIngress.source_guard.ports"
T_GUARD_SOURCES = "FabricIngress.source_guard.sources"
GUARD_PORT_ACTION = "FabricIngress.source_guard.guard_port"
ALLOW_ACTION = "FabricIngress.source_guard.allow"
GUARD_DROPS_COUNTER = "FabricIngress.source_guard.drops"
"""Packets and bytes the guard dropped, by ingress port (the monitor exports it)."""


def guard_port_entry(port: int) -> Entry:
    """``source_guard.ports``: ingress ``port`` is guarded.

    >>> guard_port_entry(3).action
    'FabricIngress.source_guard.guard_port'
    """
    return Entry(T_GUARD_PORTS, {"standard_metadata.ingress_port": port}, GUARD_PORT_ACTION, {})


def allow_entry(port: int, src_ip: str) -> Entry:
    """``source_guard.sources``: IPv4 source ``src_ip`` may enter on ``port``.

    >>> allow_entry(1, "10.0.0.1").match["hdr.ipv4.src_addr"]
    '10.0.0.1'
    """
    return Entry(T_GUARD_SOURCES, {"standard_metadata.ingress_port": port,
                                   "hdr.ipv4.src_addr": src_ip}, ALLOW_ACTION, {})


def guarded_sources(sw: SwitchLike, switch_names: Container[str],
                    attached: Iterable[tuple[NicLike, int]]) -> dict[int, list[str]]:
    """Every guarded port of ``sw`` (its ports whose peer is not in ``switch_names``) →
    the IPv4 sources allowed on it: the addresses of the NICs ``attached`` there
    (``(NIC, leaf port)`` pairs of this switch, the planner's index), sorted; empty for a
    host port no NIC is cabled to (nothing IPv4 enters there). No scan of the fabric."""
    out: dict[int, list[str]] = {p: [] for p, info in sorted(sw.ports.items())
                                 if info.peer_node not in switch_names}
    for nic, port in attached:
        if port in out and nic.ip not in out[port]:
            out[port].append(nic.ip)
    for ips in out.values():
        ips.sort(key=lambda ip: int(ipaddress.IPv4Address(ip)))
    return out


def allowed_sources(sw: SwitchLike, fabric: FabricLike) -> dict[int, list[str]]:
    """:func:`guarded_sources` of ``sw`` in ``fabric`` (scans the fabric's NICs: for one
    switch; the planner uses its own index).

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> fab = build_fabric(FabricSpec(blocks=1, rails=1, ports_per_nic=2, leaves_per_rail=2))
    >>> [allowed_sources(s, fab) for s in fab.switches if s.role == "leaf"]
    [{1: ['10.0.0.1'], 2: ['10.0.0.2']}, {1: ['10.0.0.1'], 2: ['10.0.0.2']}]
    """
    attached = [(nic, port) for h in fabric.hosts for nic in h.nics
                for leaf, port in nic_attachments(nic) if leaf == sw.name]
    return guarded_sources(sw, {s.name for s in fabric.switches}, attached)


def entries_of(sources: Mapping[int, Sequence[str]]) -> list[Entry]:
    """The guard's entries for ``sources`` (guarded port → allowed addresses): for each
    port in port order its ``ports`` entry, then one ``sources`` entry per address.

    >>> [e.table.rsplit(".", 1)[1] for e in entries_of({4: ["10.0.0.9"], 5: []})]
    ['ports', 'sources', 'ports']
    """
    out: list[Entry] = []
    for port in sorted(sources):
        out.append(guard_port_entry(port))
        out.extend(allow_entry(port, ip) for ip in sources[port])
    return out


def guard_entries(sw: SwitchLike, fabric: FabricLike) -> list[Entry]:
    """The guard's entries of ``sw`` (:func:`entries_of` its :func:`allowed_sources`).
    A switch with no host port (a spine, a core) gets none."""
    return entries_of(allowed_sources(sw, fabric))


__all__ = ["ALLOW_ACTION", "GUARD_DROPS_COUNTER", "GUARD_PORT_ACTION", "T_GUARD_PORTS",
           "T_GUARD_SOURCES", "allow_entry", "allowed_sources", "entries_of", "guard_entries",
           "guard_port_entry", "guarded_sources"]
