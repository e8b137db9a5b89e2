"""The simulator's view of a fabric: numbered directed links with capacities, NIC tables,
the published ECMP hash model of the fabric as programmed, and failed links or spines.

A *directed link* is named by its sending end, the same key GOR's telemetry uses
(``controller.gor.paths.LinkState``): ``(switch, egress port)`` for switch ports and
``(host, rail)`` for a server NIC's transmit direction. Tiers (:data:`TIERS`):

* ``nic_up`` (server NIC → leaf), ``leaf_down`` (leaf → server NIC),
* ``leaf_up`` (leaf → spine), ``spine_down`` (spine → leaf),
* ``nvlink`` (one per GPU: its NVSwitch port, for same-server transfers),
* ``bundle_up`` / ``bundle_down``: every live uplink of a leaf (every live spine link into
  a leaf) pooled into one link, used only by the ideal bound.

The hash model is ``controller.fabric.fabric_hash_model`` over the live links: the one
rule the controller programs the switches with (failed links simply leave the groups, as
if the fabric were planned without them; a spine that lost every link to a leaf makes the
other leaves route that leaf's prefixes to a detour group, :mod:`sim.detours`). A leaf's
first ECMP hop is a *group row*: ``group_up[row]`` its member links, rows ``0 ..
leaves-1`` the leaves' uplink groups (``leaf_up``), detour rows after them;
:meth:`SimFabric.leaf_group` gives the row of a (source leaf, destination leaf).

Example::

    >>> from topo.model import build_fabric
    >>> sf = SimFabric.build(build_fabric())
    >>> sf.tier_name(sf.link_index[("b0r0l0", 3)]), float(sf.capacity_Bps[sf.link_index[("b0s0", 0)]])
    ('leaf_up', 12500000000.0)
    >>> sf.hash_model.switch("b0r0l0").groups[1].members
    ('s0', 's1')
    >>> cut = SimFabric.build(build_fabric(), ["b0r0l0:4"])              # b0r0l0 <-> s1
    >>> b1, b0 = cut.leaf_names.index("b1r0l0"), cut.leaf_names.index("b0r0l0")
    >>> row = int(cut.leaf_group(np.array([b1]), np.array([b0]))[0])
    >>> int(cut.group_id[row]), [cut.link_keys[l] for l in cut.group_up[row, :cut.group_up_n[row]]]
    (2, [('b1r0l0', 3)])
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Iterable, Optional

import numpy as np

from controller.fabric import fabric_hash_model
from p4src.hashmodel import FabricHashModel
from sim.detours import RouteSplitError, leaf_route_table
from topo.model import Fabric, SwitchInfo

TIERS = ("nic_up", "leaf_down", "leaf_up", "spine_down", "nvlink", "bundle_up", "bundle_down")
TIER = {name: i for i, name in enumerate(TIERS)}
LEAF_UPLINK_GROUP = 1
NVLINK_BYTES_PER_S = 200e9          # host.tccl.planner DEFAULT_TIERS: 200 GB/s per GPU

LinkKey = tuple[str, int]


class SimInputError(ValueError):
    """Bad simulator input (unknown field, impossible placement, unknown failed link ...);
    the message names the field or object and why."""


@dataclass(slots=True)
class SimFabric:
    """A fabric numbered for vectorised simulation (build with :meth:`build`).

    ``nic_*`` arrays are indexed by NIC id ``host_index * rails + rail``; ``leaf_up``
    is ``(leaves, max uplinks)`` link ids of each leaf's live uplink group members in
    member order (``-1`` padding, count in ``leaf_up_n``); ``spine_down`` is ``(spines,
    leaves, max parallel)`` live link ids in the spine group's member order.
    """

    fabric: Fabric
    hash_model: FabricHashModel
    link_keys: list[LinkKey]
    link_index: dict[LinkKey, int]
    capacity_Bps: np.ndarray
    tier: np.ndarray
    down: frozenset[LinkKey]
    leaf_names: list[str]
    spine_names: list[str]
    rails: int
    nic_ip: np.ndarray            # uint32
    nic_leaf: np.ndarray          # leaf number
    nic_up: np.ndarray            # link id NIC -> leaf
    nic_down: np.ndarray          # link id leaf -> NIC
    nic_nvlink: np.ndarray        # link id of the GPU's NVLink port
    leaf_up: np.ndarray
    leaf_up_n: np.ndarray
    leaf_seed: np.ndarray         # uint32
    leaf_crc32: np.ndarray        # bool: leaf hashes with crc32
    spine_down: np.ndarray
    spine_down_n: np.ndarray
    spine_seed: np.ndarray
    spine_crc32: np.ndarray
    link_spine: np.ndarray        # leaf_up link -> spine number (-1 otherwise)
    leaf_bundle_up: np.ndarray    # leaf -> its bundle_up link id
    leaf_bundle_down: np.ndarray  # leaf -> its bundle_down link id
    group_up: np.ndarray          # (rows, max members) link ids of every leaf group
    group_up_n: np.ndarray        # members per row
    group_id: np.ndarray          # the row's group id on its leaf
    group_leaf: np.ndarray        # the row's leaf number
    leaf_route: Optional[np.ndarray]   # (leaves, leaves) row, None: every row = source leaf
    host_index: dict[str, int] = field(default_factory=dict)

    # ---------------------------------------------------------------- building
    @classmethod
    def build(cls, fabric: Fabric, failed: Iterable[str] = ()) -> "SimFabric":
        """Number ``fabric``; ``failed`` names cables or spines that are down:
        ``"s3"`` (a whole spine) or ``"b0r0l0:129"`` (the cable at that switch port).

        ``SimInputError`` for an unknown switch, port or a port that is not a fabric link.
        """
        down = _failed_links(fabric, failed)
        keys: list[LinkKey] = []
        cap: list[float] = []
        tier: list[int] = []

        def add(key: LinkKey, gbps_or_Bps: float, t: str) -> int:
            keys.append(key)
            cap.append(gbps_or_Bps)
            tier.append(TIER[t])
            return len(keys) - 1

        R = fabric.spec.rails
        leaves = fabric.leaves
        spines = fabric.spines
        leaf_no = {s.name: i for i, s in enumerate(leaves)}
        spine_no = {s.name: i for i, s in enumerate(spines)}
        n_nics = len(fabric.hosts) * R
        nic_ip = np.zeros(n_nics, np.uint32)
        nic_leaf = np.full(n_nics, -1, np.int64)
        nic_up = np.full(n_nics, -1, np.int64)
        nic_down = np.full(n_nics, -1, np.int64)
        nic_nv = np.full(n_nics, -1, np.int64)
        host_index: dict[str, int] = {}
        for hi, h in enumerate(fabric.hosts):
            host_index[h.name] = hi
            for nic in h.nics:
                i = hi * R + nic.rail
                nic_ip[i] = int(ipaddress.IPv4Address(nic.ip))
                nic_leaf[i] = leaf_no[nic.leaf]
                nic_up[i] = add((h.name, nic.rail), nic.gbps * 1e9 / 8, "nic_up")
                nic_nv[i] = add((h.name, -1 - nic.rail), NVLINK_BYTES_PER_S, "nvlink")
        port_link: dict[LinkKey, int] = {}
        for sw in fabric.switches:
            for p, info in sorted(sw.ports.items()):
                t = {"host": "leaf_down", "uplink": "leaf_up", "downlink": "spine_down"}[info.kind]
                port_link[(sw.name, p)] = add((sw.name, p), info.gbps * 1e9 / 8, t)
                if info.kind == "host":
                    hi = host_index[info.peer_node]
                    nic_down[hi * R + info.peer_port] = port_link[(sw.name, p)]
        capacity = np.asarray(cap, dtype=np.float64)
        for key in down:
            capacity[port_link[key]] = 0.0
        model = fabric_hash_model(fabric, down)

        link_spine = np.full(len(keys) + 2 * len(leaves), -1, np.int64)
        max_up = max((m.groups[LEAF_UPLINK_GROUP].size for n, m in model.switches.items()
                      if n in leaf_no and LEAF_UPLINK_GROUP in m.groups), default=1)
        leaf_up = np.full((len(leaves), max_up), -1, np.int64)
        leaf_up_n = np.zeros(len(leaves), np.int64)
        leaf_seed = np.zeros(len(leaves), np.uint32)
        leaf_crc32 = np.zeros(len(leaves), bool)
        bundle_up = np.zeros(len(leaves), np.int64)
        bundle_down = np.zeros(len(leaves), np.int64)
        for li, sw in enumerate(leaves):
            m = model.switch(sw.name)
            leaf_seed[li], leaf_crc32[li] = m.seed, m.algorithm == "crc32"
            g = m.groups.get(LEAF_UPLINK_GROUP)
            live_up = 0.0
            if g is not None:
                leaf_up_n[li] = g.size
                for j, member in enumerate(g.members):
                    lid = port_link[(sw.name, member_port(sw, member))]
                    leaf_up[li, j] = lid
                    link_spine[lid] = spine_no[member.partition("#")[0]]
                    live_up += capacity[lid]
            bundle_up[li] = add((sw.name, -1), live_up, "bundle_up")
        group_up, group_up_n, group_id, group_leaf, leaf_route = _leaf_groups(
            model, leaves, port_link, leaf_up, leaf_up_n, nic_ip, nic_leaf)
        spine_links: dict[tuple[int, int], list[int]] = {}
        for si, sw in enumerate(spines):
            for p, info in sorted(sw.ports.items()):
                if info.kind == "downlink" and (sw.name, p) not in down:
                    spine_links.setdefault((si, leaf_no[info.peer_node]), []).append(port_link[(sw.name, p)])
        into_leaf = np.zeros(len(leaves))
        for (si, li), lids in spine_links.items():
            into_leaf[li] += sum(capacity[l] for l in lids)
        for li, sw in enumerate(leaves):
            bundle_down[li] = add((sw.name, -2), float(into_leaf[li]), "bundle_down")
        max_par = max((len(v) for v in spine_links.values()), default=1)
        spine_down = np.full((len(spines), len(leaves), max_par), -1, np.int64)
        spine_down_n = np.zeros((len(spines), len(leaves)), np.int64)
        spine_seed = np.zeros(len(spines), np.uint32)
        spine_crc32 = np.zeros(len(spines), bool)
        for si, sw in enumerate(spines):
            m = model.switch(sw.name)
            spine_seed[si], spine_crc32[si] = m.seed, m.algorithm == "crc32"
        for (si, li), lids in spine_links.items():
            # group member order = port order (fabric_setup.ecmp_groups), lids are in port order
            spine_down[si, li, :len(lids)] = lids
            spine_down_n[si, li] = len(lids)
        capacity = np.asarray(cap, dtype=np.float64)
        for key in down:
            capacity[port_link[key]] = 0.0
        return cls(fabric, model, keys, {k: i for i, k in enumerate(keys)}, capacity,
                   np.asarray(tier, np.int8), frozenset(down), [s.name for s in leaves],
                   [s.name for s in spines], R, nic_ip, nic_leaf, nic_up, nic_down, nic_nv,
                   leaf_up, leaf_up_n, leaf_seed, leaf_crc32, spine_down, spine_down_n,
                   spine_seed, spine_crc32, link_spine[:len(keys)], bundle_up, bundle_down,
                   group_up, group_up_n, group_id, group_leaf, leaf_route, host_index)

    # ---------------------------------------------------------------- lookups
    @property
    def num_links(self) -> int:
        """Number of directed links (every tier)."""
        return len(self.link_keys)

    def tier_name(self, link_id: int) -> str:
        """The tier of one link: ``"leaf_up"``, ``"nvlink"`` ..."""
        return TIERS[int(self.tier[link_id])]

    def set_link_rate(self, link_Bps: float) -> None:
        """Every live NIC, leaf and spine link at ``link_Bps`` (the testbed's effective
        rate), pooled bundles recomputed; NVLink unchanged."""
        phys = np.isin(self.tier, [TIER[t] for t in ("nic_up", "leaf_down", "leaf_up", "spine_down")])
        self.capacity_Bps[phys & (self.capacity_Bps > 0)] = link_Bps
        for li in range(len(self.leaf_names)):
            ups = self.leaf_up[li, :self.leaf_up_n[li]]
            self.capacity_Bps[self.leaf_bundle_up[li]] = self.capacity_Bps[ups].sum()
            downs = self.spine_down[:, li, :]
            self.capacity_Bps[self.leaf_bundle_down[li]] = self.capacity_Bps[downs[downs >= 0]].sum()

    def leaf_group(self, src_leaf: np.ndarray, dst_leaf: np.ndarray) -> np.ndarray:
        """The group row (of ``group_up``) each flow from ``src_leaf`` to ``dst_leaf``
        hashes in at its source leaf: ``route_group(leaf, dst, LEAF_UPLINK_GROUP)``; the
        source leaf's number itself (its uplink group) when no leaf has a detour."""
        if self.leaf_route is None:
            return np.asarray(src_leaf, np.int64)
        return self.leaf_route[src_leaf, dst_leaf]

    def nic_id(self, host: str, rail: int) -> int:
        """NIC id of ``host``'s NIC on ``rail``; ``SimInputError`` for an unknown one."""
        if host not in self.host_index or not 0 <= rail < self.rails:
            raise SimInputError(f"no NIC {host}:{rail} in this fabric")
        return self.host_index[host] * self.rails + rail


def _leaf_groups(model: FabricHashModel, leaves: list[SwitchInfo], port_link: dict[LinkKey, int],
                 leaf_up: np.ndarray, leaf_up_n: np.ndarray, nic_ip: np.ndarray, nic_leaf: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """Group rows of every leaf (uplink groups, then the groups the leaves' routes name)
    and the (source leaf, destination leaf) row table (:mod:`sim.detours`)."""
    n = len(leaves)
    ids = np.full(n, LEAF_UPLINK_GROUP, np.int64)
    own = np.arange(n, dtype=np.int64)
    extra: list[tuple[int, int, list[int]]] = []        # (leaf, group id, member links)
    row_of: dict[tuple[int, int], int] = {}
    for li, sw in enumerate(leaves):
        m = model.switch(sw.name)
        routed = sorted({r.group_id for r in m.routes} - {LEAF_UPLINK_GROUP})
        if not routed:
            continue
        # a link has the same member name in every group of the leaf: map the names once
        uplinks = m.groups.get(LEAF_UPLINK_GROUP)
        link_of = {x: int(leaf_up[li, j]) for j, x in enumerate(uplinks.members)} if uplinks else {}
        for gid in routed:
            row_of[(li, gid)] = n + len(extra)
            extra.append((li, gid, [link_of[x] if x in link_of else port_link[(sw.name, member_port(sw, x))]
                                    for x in m.group(gid).members]))
    if not extra:
        return leaf_up, leaf_up_n, ids, own, None
    width = max(leaf_up.shape[1], max(len(x[2]) for x in extra))
    group_up = np.full((n + len(extra), width), -1, np.int64)
    group_up[:n, :leaf_up.shape[1]] = leaf_up
    for row, (_, _, lids) in enumerate(extra, start=n):
        group_up[row, :len(lids)] = lids
    group_up_n = np.concatenate([leaf_up_n, [len(x[2]) for x in extra]]).astype(np.int64)
    ids = np.concatenate([ids, [x[1] for x in extra]]).astype(np.int64)
    own = np.concatenate([own, [x[0] for x in extra]]).astype(np.int64)
    try:
        table = leaf_route_table(model, [sw.name for sw in leaves], nic_ip, nic_leaf, row_of)
    except RouteSplitError as exc:
        raise SimInputError(f"hash model: {exc}") from None
    return group_up, group_up_n, ids, own, table


def member_port(sw: object, member: str) -> int:
    """The egress port of a hash-model member name on switch ``sw`` (``"s0"`` or ``"s0#5"``)."""
    name, sep, port = member.partition("#")
    if sep:
        return int(port)
    return next(p for p, info in sorted(sw.ports.items()) if info.peer_node == name)  # type: ignore[attr-defined]


def _failed_links(fabric: Fabric, failed: Iterable[str]) -> set[LinkKey]:
    """Both directions of every failed cable (a spine: all of its cables)."""
    down: set[LinkKey] = set()
    names = {s.name: s for s in fabric.switches}
    for item in failed:
        if not isinstance(item, str):
            raise SimInputError(f"failed: {item!r} is not a spine name or 'switch:port'")
        name, sep, port_text = item.partition(":")
        sw = names.get(name)
        if sw is None:
            raise SimInputError(f"failed: unknown switch {name!r}")
        if not sep:
            if sw.role != "spine":
                raise SimInputError(f"failed: {name} is a leaf; fail one of its cables as '{name}:PORT'")
            ports = [p for p, i in sw.ports.items() if i.kind == "downlink"]
        else:
            try:
                ports = [int(port_text)]
            except ValueError:
                raise SimInputError(f"failed: {item!r}: port must be a number") from None
            info = sw.ports.get(ports[0])
            if info is None or info.kind not in ("uplink", "downlink"):
                raise SimInputError(f"failed: {item!r} is not a leaf-spine cable of {name}")
        for p in ports:
            info = sw.ports[p]
            down.add((sw.name, p))
            down.add((info.peer_node, info.peer_port))
    return down


__all__ = ["LEAF_UPLINK_GROUP", "LinkKey", "NVLINK_BYTES_PER_S", "SimFabric", "SimInputError",
           "TIER", "TIERS", "member_port"]
