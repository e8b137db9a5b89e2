"""Dual-homing after a failure: reach a dual-port NIC through the leaf it still has.

A dual-port NIC is reached by the spines through an ECMP group over *both* leaves of its
pair (:mod:`controller.fabric.plan`). When one attachment dies — the NIC port, its cable,
or the whole leaf (a dead ToR loses every attachment it held) — the NIC moves its own QPs
to the surviving port (:mod:`host.nic.bond`), but the spines still hash half of the
traffic *to* the NIC onto the leaf that can no longer deliver it: replies (RC ACKs, CNPs)
to the NIC and new flows towards it would be lost. The fabric's side of the failover is
therefore, for every NIC that lost an attachment:

* on every spine, a ``/32`` of the NIC to the surviving leaf (the longest prefix wins
  over the pair's subnet route): its next hop when one link leads there, else the first
  link (a spine with parallel links to one leaf would need a group of its own: not built
  here, the shipped dual-port specs have one link per spine and leaf);
* on the leaf that lost it (when it still runs), the NIC's ``/32`` to the leaf's uplink
  group: what is still in flight goes back up to a spine, which now sends it to the
  surviving leaf.

:func:`failover_updates` gives these as P4Runtime updates per switch (``INSERT`` for a new
route, ``MODIFY`` for a route the plan already has); :func:`restore_updates` the updates
that put the plan back once the attachments are up. Nothing here touches a switch:
``controller.fabric_setup.FabricProgrammer.write_updates`` writes them.

Example::

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> fab = build_fabric(FabricSpec(blocks=2, servers_per_block=1, rails=1,
    ...                               ports_per_nic=2, leaves_per_rail=2))
    >>> ups = failover_updates(fab, {("b0r0l1", 1)})
    >>> [(kind, e.match["hdr.ipv4.dst_addr"], e.params) for kind, e in ups["s0"]]
    [('INSERT', '10.0.0.1/32', {'nexthop_id': 1})]
    >>> [(kind, e.params) for kind, e in ups["b0r0l1"]]
    [('MODIFY', {'group_id': 1})]
"""
from __future__ import annotations

from typing import Collection, Optional

from controller.fabric.ecmp import LEAF_UPLINK_GROUP, spine_links
from controller.fabric.entries import Entry, T_ROUTES, route_entry
from controller.fabric.plan import plan_fabric
from controller.fabric.topology import FabricLike, nic_attachments

Update = tuple[str, Entry]          # ("INSERT" | "MODIFY" | "DELETE", entry)


def _route_prefixes(plan_entries: list[Entry]) -> dict[str, Entry]:
    return {e.match["hdr.ipv4.dst_addr"]: e for e in plan_entries if e.table == T_ROUTES}


def affected_nics(fabric: FabricLike,
                  dead: Collection[tuple[str, int]]) -> list[tuple[object, list[str], list[str]]]:
    """Every NIC with an attachment ``(leaf, leaf port)`` in ``dead``: ``(nic, dead leaves,
    surviving leaves)``, NIC address order (a NIC with no surviving leaf is listed with
    an empty list: nothing can reach it)."""
    out = []
    for host in fabric.hosts:
        for nic in host.nics:
            att = nic_attachments(nic)
            gone = [leaf for leaf, port in att if (leaf, port) in dead]
            if gone:
                out.append((nic, gone, [leaf for leaf, port in att if (leaf, port) not in dead]))
    return sorted(out, key=lambda t: tuple(int(x) for x in t[0].ip.split(".")))  # type: ignore[attr-defined]


def failover_updates(fabric: FabricLike, dead: Collection[tuple[str, int]],
                     dead_switches: Collection[str] = ()) -> dict[str, list[Update]]:
    """Switch → the route updates that reach every NIC of ``dead`` attachments through
    its surviving leaf (module docstring); ``dead_switches`` (a dead leaf) get none.
    ``ValueError`` when a NIC has no surviving attachment."""
    plans = plan_fabric(fabric)
    by_name = {s.name: s for s in fabric.switches}
    out: dict[str, list[Update]] = {}
    for nic, gone, alive in affected_nics(fabric, dead):
        ip = nic.ip  # type: ignore[attr-defined]
        if not alive:
            raise ValueError(f"NIC {ip}: every attachment is down; no leaf can reach it")
        prefix = f"{ip}/32"
        for sw in fabric.switches:
            if sw.name in dead_switches:
                continue
            have = _route_prefixes(plans[sw.name].entries)
            if sw.role == "spine":
                links = spine_links(sw, by_name, frozenset())
                port: Optional[int] = next((links[l][0] for l in alive if l in links), None)
                if port is None:
                    continue
                entry = route_entry(prefix, nexthop=port)
            elif sw.name in gone:
                entry = route_entry(prefix, group=LEAF_UPLINK_GROUP)
            else:
                continue
            out.setdefault(sw.name, []).append(("MODIFY" if prefix in have else "INSERT", entry))
    return out


def restore_updates(fabric: FabricLike, dead: Collection[tuple[str, int]],
                    dead_switches: Collection[str] = ()) -> dict[str, list[Update]]:
    """The updates that undo :func:`failover_updates` for the same failure: the plan's
    route back where it had one (``MODIFY``), the added ``/32`` deleted elsewhere."""
    plans = plan_fabric(fabric)
    out: dict[str, list[Update]] = {}
    for name, updates in failover_updates(fabric, dead, dead_switches).items():
        have = _route_prefixes(plans[name].entries)
        for kind, entry in updates:
            prefix = entry.match["hdr.ipv4.dst_addr"]
            out.setdefault(name, []).append(("MODIFY", have[prefix]) if kind == "MODIFY"
                                            else ("DELETE", entry))
    return out


__all__ = ["Update", "affected_nics", "failover_updates", "restore_updates"]
