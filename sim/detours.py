"""The leaves' first-hop ECMP groups at scale: which group of the source leaf a flow to a
destination leaf hashes in, once the leaves route some prefixes to detour groups.

A leaf sends a packet to the group of its longest published route containing the
destination address (``p4src.hashmodel.route_group``), its uplink group
(``LEAF_UPLINK_GROUP``) when no route is published. Routes exist only on leaves of a fabric
where some spine lost every link to some leaf (``controller.fabric.detours``): the other
leaves route that leaf's prefixes to a *detour group* of their uplinks whose spine still
reaches it. The simulator numbers every such group as a *row* of ``SimFabric.group_up``
(rows ``0 .. leaves-1`` are the leaves' uplink groups, detour rows follow) and looks the
row of a flow up in a ``(source leaf, destination leaf)`` table built here once: the
prefixes of a detour are a leaf's own subnets or NIC addresses, so every NIC of a
destination leaf falls under the same route (checked; a route splitting a leaf's NICs is
refused with :class:`~sim.topology.SimInputError`). With no route on any leaf there is no
table (``None``): a flow's row is its source leaf, at no cost.

Example::

    >>> from p4src.hashmodel import RouteModel, SwitchHashModel, FabricHashModel
    >>> m = FabricHashModel({"l0": SwitchHashModel("l0", routes=(RouteModel("10.0.1.0/24", 2),)),
    ...                      "l1": SwitchHashModel("l1")})
    >>> ips = np.array([0x0A000005, 0x0A000105], np.uint32)           # 10.0.0.5 on l0, 10.0.1.5 on l1
    >>> leaf_route_table(m, ["l0", "l1"], ips, np.array([0, 1]), {(0, 2): 2}).tolist()
    [[0, 2], [1, 1]]
    >>> leaf_route_table(FabricHashModel({"l0": SwitchHashModel("l0")}), ["l0"], ips[:1],
    ...                  np.array([0]), {}) is None
    True
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from p4src.hashmodel import FabricHashModel, RouteModel

NO_ROUTE = -1


class RouteSplitError(ValueError):
    """A leaf's route covers only some NICs of a destination leaf (the simulator routes
    per destination leaf)."""


def nic_route_groups(routes: Sequence[RouteModel], nic_ip: np.ndarray) -> np.ndarray:
    """The group of the longest route containing each NIC address, :data:`NO_ROUTE` where
    none does (``route_group`` for every NIC at once).

        >>> nic_route_groups((RouteModel("10.0.0.0/8", 1), RouteModel("10.0.1.0/24", 2)),
        ...                  np.array([0x0A000105, 0x0A000005, 0x0B000001], np.uint32)).tolist()
        [2, 1, -1]
    """
    ip = np.asarray(nic_ip, np.uint32)
    out = np.full(len(ip), NO_ROUTE, np.int64)
    for r in sorted(routes, key=lambda r: r.network.prefixlen):      # longer prefixes win
        net = r.network
        out[(ip & np.uint32(int(net.netmask))) == np.uint32(int(net.network_address))] = r.group_id
    return out


def dst_leaf_groups(routes: Sequence[RouteModel], nic_ip: np.ndarray, nic_leaf: np.ndarray,
                    n_leaves: int) -> np.ndarray:
    """``(n_leaves,)``: the group the routes send each destination leaf's NICs to,
    :data:`NO_ROUTE` for none (or a leaf without NICs); :class:`RouteSplitError` when the
    NICs of one leaf fall under different routes.

        >>> dst_leaf_groups((RouteModel("10.0.1.0/24", 2),), np.array([0x0A000005, 0x0A000105], np.uint32),
        ...                 np.array([0, 1]), 3).tolist()
        [-1, 2, -1]
    """
    g = nic_route_groups(routes, nic_ip)
    big = np.iinfo(np.int64).max
    lo = np.full(n_leaves, big, np.int64)
    hi = np.full(n_leaves, NO_ROUTE, np.int64)
    np.minimum.at(lo, nic_leaf, g)
    np.maximum.at(hi, nic_leaf, g)
    has = lo != big
    split = np.flatnonzero(has & (lo != hi))
    if len(split):
        raise RouteSplitError(f"routes {[r.prefix for r in routes]} split the NICs of leaf number "
                              f"{int(split[0])} over several groups")
    return np.where(has, lo, NO_ROUTE)


def leaf_route_table(model: FabricHashModel, leaf_names: Sequence[str], nic_ip: np.ndarray,
                     nic_leaf: np.ndarray, row_of: Mapping[tuple[int, int], int]) -> Optional[np.ndarray]:
    """``(leaves, leaves)`` first-hop group row per (source leaf, destination leaf), or
    ``None`` when no leaf publishes a route. ``row_of[(leaf number, group id)]``: the row
    of a leaf's routed group; unrouted destinations (and routes to the uplink group) keep
    the source leaf's own row (its number). Leaves sharing one list of routes share one
    look-up over the NICs."""
    routed = [(li, model.switch(name).routes) for li, name in enumerate(leaf_names)
              if model.switch(name).routes]
    if not routed:
        return None
    n = len(leaf_names)
    table = np.tile(np.arange(n, dtype=np.int64)[:, None], (1, n))
    by_routes: dict[tuple[RouteModel, ...], np.ndarray] = {}
    for li, routes in routed:
        if routes not in by_routes:
            try:
                by_routes[routes] = dst_leaf_groups(routes, nic_ip, nic_leaf, n)
            except RouteSplitError as exc:
                raise RouteSplitError(f"leaf {leaf_names[li]}: {exc}") from None
        groups = by_routes[routes]
        for gid in np.unique(groups[groups != NO_ROUTE]).tolist():
            if (li, gid) in row_of:
                table[li, groups == gid] = row_of[(li, gid)]
    return table


__all__ = ["NO_ROUTE", "RouteSplitError", "dst_leaf_groups", "leaf_route_table", "nic_route_groups"]
