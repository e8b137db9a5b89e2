"""The cluster numbered for vectorised simulation: every pod's links, the core's links, the
seeds and addresses of every pod, and the hash model extended to the third tier.

A pod is numbered once (``sim.topology.SimFabric`` of the pod spec: it *is* pod 0, the
pod plan) and the other pods reuse its numbering with an offset: link ``l`` of pod p is
``p·L + l`` (``L`` links per pod). After the pods come the core tier's directed links:

* ``spine_up`` (spine k of pod p → a core of plane k): ``(p, k, m)``, m the member index
  in the spine's core group (core ``m // J``, its ``m % J``-th parallel link; J =
  ``links_per_core``);
* ``core_down`` (core c of plane k → spine k of pod q): ``(k, c, q, i)``, i the member
  index in the core's group towards pod q;
* ``pod_up`` / ``pod_down``: a pod's core uplinks (the core's links into a pod) pooled,
  for the ideal bound only.

**Hash model, third tier.** A spine's *core group* (id :data:`SPINE_CORE_GROUP`, members
its core uplinks in core order, then port order) is its rule for every destination
outside its pod, as a leaf's uplink group is for destinations off the leaf; core c of
plane k has one group per pod q (id ``q + 1``, its parallel links to spine k of pod q,
port order) chosen by the destination's pod (third octet // rails, the address plan).
Member selection is ``p4src.hashmodel``'s formula (``H % size``) over the default field
list with the switch's own seed and CRC: :func:`switch_model` gives the
``SwitchHashModel`` of any cluster switch (tests compare the vectorised routes with
``p4src.hashmodel.predict_member`` on it).

Example::

    >>> from sim.cluster.spec import cluster_from_dict
    >>> sc = SimCluster.build(cluster_from_dict({"pod": {"blocks": 2, "servers_per_block": 2,
    ...     "rails": 2, "spines": 2}, "pods": 2, "cores_per_plane": 2, "spine_core_uplinks": 4}))
    >>> r = sc.route(np.array([0]), np.array([0]), np.array([1]), np.array([0]), np.array([49152]))
    >>> [sc.tier_name(int(l)) for l in r[0]]
    ['nic_up', 'leaf_up', 'spine_up', 'core_down', 'spine_down', 'leaf_down']
    >>> sc.address(1, 0)
    '10.0.2.1'
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace

import numpy as np

from p4src.hashmodel import PORTS_FIRST_FIELDS, FabricHashModel, GroupModel, SwitchHashModel
from sim.cluster.spec import ClusterSpec, core_name, pod_switch_name
from sim.routing import PORTS_FIRST_COLUMNS, ROCE_DPORT, crc_rows, messages
from sim.topology import LEAF_UPLINK_GROUP, TIERS, SimFabric, SimInputError, member_port
from topo.model import build_fabric, ecmp_seed_for, link_ports

CLUSTER_TIERS = TIERS + ("spine_up", "core_down", "pod_up", "pod_down")
CTIER = {name: i for i, name in enumerate(CLUSTER_TIERS)}
SPINE_CORE_GROUP = 4096
HOPS = 6


@dataclass(slots=True)
class SimCluster:
    """A numbered cluster (build with :meth:`build`); arrays in the module docstring's order.

    ``nic_ip`` is ``(pods, pod NICs)``; ``leaf_seed``/``spine_seed`` ``(pods, leaves or
    spines)``; ``core_seed`` ``(planes, cores_per_plane)``.
    """

    spec: ClusterSpec
    pod: SimFabric
    pod_links: int
    capacity_Bps: np.ndarray
    tier: np.ndarray
    nic_ip: np.ndarray
    leaf_seed: np.ndarray
    spine_seed: np.ndarray
    core_seed: np.ndarray
    spine_up_base: int
    core_down_base: int
    pod_up_base: int
    pod_down_base: int

    @classmethod
    def build(cls, spec: ClusterSpec, pod: "SimFabric | None" = None) -> "SimCluster":
        """Number ``spec``'s cluster (``pod``: an already built ``SimFabric`` of its pod spec)."""
        sf = pod if pod is not None else SimFabric.build(build_fabric(spec.pod))
        if sf.spine_down.shape[1] != len(sf.leaf_names) or (sf.leaf_up_n == 0).any():
            raise SimInputError("cluster: pod: every leaf needs its uplinks (no failed links in a cluster)")
        P, S, U, J, C = spec.pods, len(sf.spine_names), spec.spine_core_uplinks, spec.links_per_core, \
            spec.cores_per_plane
        L = sf.num_links
        su, cd = P * L, P * L + P * S * U
        pu = cd + S * C * P * J
        pd = pu + P
        core_Bps = spec.core_link_gbps * 1e9 / 8
        cap = np.concatenate([np.tile(sf.capacity_Bps, P), np.full(P * S * U + S * C * P * J, core_Bps),
                              np.full(2 * P, S * U * core_Bps)])
        tier = np.concatenate([np.tile(sf.tier.astype(np.int8), P),
                               np.full(P * S * U, CTIER["spine_up"], np.int8),
                               np.full(S * C * P * J, CTIER["core_down"], np.int8),
                               np.full(P, CTIER["pod_up"], np.int8), np.full(P, CTIER["pod_down"], np.int8)])
        shift = (np.arange(P, dtype=np.uint32) * np.uint32(spec.pod.rails)) << np.uint32(8)
        nic_ip = sf.nic_ip[None, :] + shift[:, None]
        salt = spec.ecmp_seed

        def seeds(names: list[str], own: np.ndarray) -> np.ndarray:
            out = np.empty((P, len(names)), np.uint32)
            out[0] = own
            for p in range(1, P):
                out[p] = [ecmp_seed_for(pod_switch_name(p, n), salt) for n in names]
            return out

        core_seed = np.array([[ecmp_seed_for(core_name(k, j), salt) for j in range(C)] for k in range(S)],
                             np.uint32).reshape(S, C)
        return cls(spec, sf, L, cap, tier, nic_ip, seeds(sf.leaf_names, sf.leaf_seed),
                   seeds(sf.spine_names, sf.spine_seed), core_seed, su, cd, pu, pd)

    # ---------------------------------------------------------------- lookups
    @property
    def num_links(self) -> int:
        """Directed links of the cluster (every pod, the core, the ideal bundles)."""
        return len(self.capacity_Bps)

    def tier_name(self, link_id: int) -> str:
        """The tier of a link: ``"spine_up"``, ``"core_down"``, ``"leaf_up"`` ..."""
        return CLUSTER_TIERS[int(self.tier[link_id])]

    def address(self, pod: int, nic: int) -> str:
        """The address of NIC id ``nic`` (the pod's numbering) of ``pod``."""
        return str(ipaddress.IPv4Address(int(self.nic_ip[pod, nic])))

    def spine_up(self, pod: np.ndarray, spine: np.ndarray, member: np.ndarray) -> np.ndarray:
        """Link ids of spine → core links (member of the spine's core group)."""
        S, U = len(self.pod.spine_names), self.spec.spine_core_uplinks
        return self.spine_up_base + (pod * S + spine) * U + member

    def core_down(self, plane: np.ndarray, core: np.ndarray, pod: np.ndarray, member: np.ndarray) -> np.ndarray:
        """Link ids of core → spine links (member of the core's group towards ``pod``)."""
        C, P, J = self.spec.cores_per_plane, self.spec.pods, self.spec.links_per_core
        return self.core_down_base + ((plane * C + core) * P + pod) * J + member

    def pod_view(self, pod: int) -> SimFabric:
        """Pod ``pod`` as a ``SimFabric`` of its own: the pod's numbering (pod-local link
        ids and switch names) with that pod's addresses and seeds, in the arrays and in
        the hash model (what ``sim.policies.run_phase`` and GOR's ``PathEngine`` read)."""
        if pod == 0:
            return self.pod
        sf = self.pod
        seed = {**dict(zip(sf.leaf_names, self.leaf_seed[pod].tolist())),
                **dict(zip(sf.spine_names, self.spine_seed[pod].tolist()))}
        model = FabricHashModel({n: replace(m, seed=int(seed.get(n, m.seed)), groups=dict(m.groups))
                                 for n, m in sf.hash_model.switches.items()})
        return replace(sf, hash_model=model, nic_ip=self.nic_ip[pod].copy(), leaf_seed=self.leaf_seed[pod].copy(),
                       spine_seed=self.spine_seed[pod].copy(), capacity_Bps=sf.capacity_Bps.copy())

    # ---------------------------------------------------------------- routing
    def hashes(self, seed: np.ndarray, crc32: "np.ndarray | bool", src_ip: np.ndarray, dst_ip: np.ndarray,
               sport: np.ndarray, ports_first: bool = False) -> np.ndarray:
        """``H`` of the default field list for every flow (UDP to RoCEv2's port), or of the
        ports-first list (a core's groups, a spine's groups down to its leaves: the live
        fabric's ``select_member_ports_first``, ``controller.fabric.ecmp.ports_first_group``)."""
        n = len(src_ip)
        msg = messages(seed, src_ip, dst_ip, sport, np.full(n, ROCE_DPORT))
        if ports_first:
            msg = msg[:, PORTS_FIRST_COLUMNS]
        return crc_rows(msg, np.broadcast_to(np.asarray(crc32, bool), (n,)))

    def route(self, src_pod: np.ndarray, src_nic: np.ndarray, dst_pod: np.ndarray, dst_nic: np.ndarray,
              sport: np.ndarray) -> np.ndarray:
        """``(flows, 6)`` link ids of flows between NICs of *different* pods: NIC → leaf →
        (leaf's uplink group) spine k → (its core group) core of plane k → (the core's group
        for the destination pod) spine k of that pod → (its group or link to the leaf) leaf → NIC."""
        sf = self.pod
        sp, dp = np.asarray(src_pod, np.int64), np.asarray(dst_pod, np.int64)
        s, d = np.asarray(src_nic, np.int64), np.asarray(dst_nic, np.int64)
        if (sp == dp).any():
            raise SimInputError("cluster route: flows inside one pod are routed by the pod (sim.routing)")
        src_ip, dst_ip = self.nic_ip[sp, s], self.nic_ip[dp, d]
        sport = np.asarray(sport, np.int64)
        L = self.pod_links
        lf, dlf = sf.nic_leaf[s], sf.nic_leaf[d]
        h = self.hashes(self.leaf_seed[sp, lf], sf.leaf_crc32[lf], src_ip, dst_ip, sport)
        a = (h % sf.leaf_up_n[lf].astype(np.uint32)).astype(np.int64)
        up = sf.leaf_up[lf, a]
        k = sf.link_spine[up]
        U, J = self.spec.spine_core_uplinks, self.spec.links_per_core
        h = self.hashes(self.spine_seed[sp, k], sf.spine_crc32[k], src_ip, dst_ip, sport)
        m = (h % np.uint32(U)).astype(np.int64)
        c = m // J
        h = self.hashes(self.core_seed[k, c], self.spec.core_hash == "crc32", src_ip, dst_ip, sport, True)
        i = (h % np.uint32(J)).astype(np.int64)
        nd = sf.spine_down_n[k, dlf]
        j = np.zeros(len(s), np.int64)
        multi = nd > 1
        if multi.any():
            h = self.hashes(self.spine_seed[dp[multi], k[multi]], sf.spine_crc32[k[multi]], src_ip[multi],
                            dst_ip[multi], sport[multi], True)
            j[multi] = (h % nd[multi].astype(np.uint32)).astype(np.int64)
        links = np.empty((len(s), HOPS), np.int64)
        links[:, 0] = sp * L + sf.nic_up[s]
        links[:, 1] = sp * L + up
        links[:, 2] = self.spine_up(sp, k, m)
        links[:, 3] = self.core_down(k, c, dp, i)
        links[:, 4] = dp * L + sf.spine_down[k, dlf, j]
        links[:, 5] = dp * L + sf.nic_down[d]
        return links

    def ideal(self, src_pod: np.ndarray, src_nic: np.ndarray, dst_pod: np.ndarray,
              dst_nic: np.ndarray) -> np.ndarray:
        """The ideal bound's links: the source leaf's pooled uplinks, the source pod's pooled
        core uplinks, the core's pooled links into the destination pod, the destination
        leaf's pooled spine links (perfectly balanced fluid routing on every tier)."""
        sf, L = self.pod, self.pod_links
        sp, dp = np.asarray(src_pod, np.int64), np.asarray(dst_pod, np.int64)
        s, d = np.asarray(src_nic, np.int64), np.asarray(dst_nic, np.int64)
        return np.stack([sp * L + sf.nic_up[s], sp * L + sf.leaf_bundle_up[sf.nic_leaf[s]],
                         self.pod_up_base + sp, self.pod_down_base + dp,
                         dp * L + sf.leaf_bundle_down[sf.nic_leaf[d]], dp * L + sf.nic_down[d]], axis=1)

    # ---------------------------------------------------------------- hash model
    def switch_model(self, name: str) -> SwitchHashModel:
        """The published hash model of one cluster switch: a pod leaf or spine (``b0r0l0``,
        ``p3.s17``) with its pod's seed (a spine with its core group added), or a core
        (``c5.1``) with one group per pod. ``SimInputError`` for an unknown name."""
        sf, spec = self.pod, self.spec
        if name.startswith("c") and "." in name:
            k_text, _, j_text = name[1:].partition(".")
            k, j = int(k_text), int(j_text)
            if not (0 <= k < spec.planes and 0 <= j < spec.cores_per_plane):
                raise SimInputError(f"cluster: no core switch {name!r}")
            J = spec.links_per_core
            ports = link_ports(spec.pods * J)
            groups = {q + 1: GroupModel(0, [f"{pod_switch_name(q, sf.spine_names[k])}#{ports[q * J + i]}"
                                            for i in range(J)], PORTS_FIRST_FIELDS) for q in range(spec.pods)}
            return SwitchHashModel(name, spec.core_hash, seed=int(self.core_seed[k, j]), groups=groups)
        pod, local = 0, name
        if name.startswith("p") and "." in name:
            pod_text, _, local = name[1:].partition(".")
            pod = int(pod_text)
        if not 0 <= pod < spec.pods:
            raise SimInputError(f"cluster: no pod {pod} (pods: {spec.pods})")
        base = sf.hash_model.switch(local)
        if local in sf.leaf_names:
            seed = int(self.leaf_seed[pod, sf.leaf_names.index(local)])
            return SwitchHashModel(name, base.algorithm, base.fields, seed, dict(base.groups))
        k = sf.spine_names.index(local)
        groups = {gid: replace(g, fields=PORTS_FIRST_FIELDS) for gid, g in base.groups.items()}
        ports = self._spine_core_ports()
        groups[SPINE_CORE_GROUP] = GroupModel(0, [f"{core_name(k, m // spec.links_per_core)}#{ports[m]}"
                                                  for m in range(spec.spine_core_uplinks)])
        return SwitchHashModel(name, base.algorithm, base.fields, int(self.spine_seed[pod, k]), groups)

    def _spine_core_ports(self) -> list[int]:
        """A spine's core uplink ports: after its pod downlinks (v1model reserved ports skipped)."""
        spine = self.pod.fabric.spines[0]
        last = max(spine.ports) if spine.ports else 0
        return link_ports(self.spec.spine_core_uplinks, last + 1)


def leaf_uplink_member(sc: SimCluster, leaf: int, link_id: int) -> str:
    """The hash-model member name of a pod link in its leaf's uplink group (tests)."""
    sw = sc.pod.fabric.leaves[leaf]
    members = sc.pod.hash_model.switch(sw.name).group(LEAF_UPLINK_GROUP).members
    key = sc.pod.link_keys[link_id % sc.pod_links]
    return next(x for x in members if member_port(sw, x) == key[1])


__all__ = ["CLUSTER_TIERS", "CTIER", "HOPS", "SPINE_CORE_GROUP", "SimCluster", "leaf_uplink_member"]
